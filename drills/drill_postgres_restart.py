"""PostgreSQL restarted under mixed load, then while idle. The database holds both the application's state (Django's
pool in each of the 2 web workers) and the PostgreSQL tenant's data (the data-source pool), so a restart kills every
pooled connection of both. Mixed load: mint sessions (app database), distinct ``/v1/load`` queries on the PostgreSQL
tenant (app database and data source), ``/readyz``.

Expectations: while the database is down, every failed request is a JSON 503 with ``Retry-After`` (never a 500, a
plain-text page or no answer), ``/readyz`` included (its body says why), and the 503s sent while it is down arrive in
under 200 ms (each pool's breaker answers at once: no wait for the pool timeout); requests recover within a second of
PostgreSQL being back, under load and idle; requests sent 5 s after PostgreSQL is back, and again later
(``DRILL_PG_LATE_SECONDS``, 20 s by default, 60 s for the figures in docs/reliability.md), all answer 200: no pooled
connection is handed out dead. Before the fixes: 24 of 264 failed 5 s after, 30 of 264 60 s after (``/readyz``
flapping to 503, ``/v1/load`` 500), a database error during the outage was a 500, and then (issue 24) each 503 while
down waited the 10 s pool timeout.

The load runs until it has answered enough requests (300 before the restart, 600 after PostgreSQL is back), not for a
fixed time; the delays "5 s after", "idle for 3 s" and the late measurement are the scenario itself."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from drills._cluster import Cluster, ClusterFactory, Drill, LoadResult, Progress, load

BUDGET_SECONDS = 300
LATE_SECONDS = float(os.environ.get("DRILL_PG_LATE_SECONDS", "20"))
BATCH = 264  # requests per measured batch, as in the measurement
POOL_TIMEOUT_S = 10  # DATABASE_URL's pool_timeout and the data source's default: a request's wait for a connection
BEFORE_RESTART = 300  # answers of the load before PostgreSQL is restarted under it
AFTER_RESTART = 600  # answers after PostgreSQL is back before the load stops
AFTER_S = 5.0  # "5 s after": pools that have sat with dead connections, then a batch
IDLE_S = 3.0  # the pools idle (holding their connections) before an idle restart
OUTAGE_503_MS = 200  # a 503 sent while the database is down arrives within this
RECOVERY_S = 1.0  # requests answer 200 again within this of PostgreSQL being back
OUTAGE_REQUESTS = 30  # sent while PostgreSQL is stopped (idle), over 6 clients: sessions, /v1/load, /readyz


def mixed(c: Cluster) -> Callable[[int], Any]:
    """Request ``i`` of the mixed load: a session minted, a distinct /v1/load on PostgreSQL data, /readyz."""

    def make(i: int) -> Any:
        kind = i % 3
        if kind == 0:
            return c.session_request(i, tenant="postgres", external_id=f"pg-drill-{time.time_ns()}-{i}")
        if kind == 1:
            return c.load_request(10_000 + i + int(time.time() * 1000) % 1_000_000, tenant="postgres")
        return ("GET", "/readyz", {}, b"")

    make.__name__ = "mixed"
    return make


def _bad_failures(result: LoadResult) -> list[dict[str, Any]]:
    """Failures that are not a JSON 503 with Retry-After."""
    return [f for f in result.failures if not (f["status"] == 503 and f["json"] and f["retry_after"])]


def _while_down(c: Cluster, drill: Drill, make: Callable[[int], Any]) -> dict[str, Any]:
    """With the database stopped: requests of each kind over 6 clients; each must be a JSON 503 with Retry-After,
    in under OUTAGE_503_MS (the first of each worker finds the database gone, the others meet the open breaker)."""
    down = load(c, make, OUTAGE_REQUESTS, concurrency=6, expect=(), timeout=POOL_TIMEOUT_S + 20, label="while down")
    ok = [f for f in down.failures if f["status"] == 503 and f["json"] and f["retry_after"]]
    slowest = max((f["ms"] for f in down.failures), default=0.0)
    drill.expect(
        f"while PostgreSQL is down every request answers a JSON 503 with Retry-After ({len(ok)} of {down.total})",
        len(ok) == down.total == OUTAGE_REQUESTS,
    )
    drill.expect(
        f"while PostgreSQL is down the 503s arrive in under {OUTAGE_503_MS} ms (slowest {slowest:.0f} ms, "
        f"p50 {down.p(0.5):.0f} ms)",
        0 < slowest < OUTAGE_503_MS,
    )
    ready = [f["body"] for f in down.failures if "checks" in f["body"]]
    drill.expect(
        f"/readyz says why it is not ready ({ready[0] if ready else None})",
        bool(ready) and all('"database"' in body for body in ready),
    )
    print(down.line(), flush=True)
    return {**down.summary(), "max_ms": slowest, "readyz": ready[0] if ready else None}


def _last_failure_after(result: LoadResult, back: float) -> float:
    """Seconds from ``back`` (a ``time.perf_counter()``) to the last failed answer of ``result`` (0 if none after)."""
    return max((result.started + f["at"] - back for f in result.failures), default=0.0)


def _recovery(c: Cluster, make: Callable[[int], Any]) -> tuple[LoadResult, float, float]:
    """Start PostgreSQL under a running load: the load, how long PostgreSQL was down, and how long after it was
    back the last failure came."""
    progress, stop = Progress(), threading.Event()
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(
            load, c, make, 10**6, concurrency=8, timeout=POOL_TIMEOUT_S + 20, progress=progress, stop=stop,
            label="through the start",
        )  # fmt: skip
        progress.wait(6, stop_loss=c.stop_loss(30), what="refused requests before the start")
        down_s = c.postgres.start() or 0.0
        back = time.perf_counter()
        progress.wait(progress.answered + BATCH, stop_loss=c.stop_loss(60), what="requests after the start")
        stop.set()
        result = running.result()
    return result, down_s, max(0.0, _last_failure_after(result, back))


def run(cluster: ClusterFactory) -> Drill:
    drill = Drill("postgres_restart")
    with cluster(postgres_data=True) as c:
        drill.figures["pace"] = round(c.pace, 2)
        make = mixed(c)
        warm = load(c, make, 300, concurrency=8, label="warm-up")
        drill.figures["warm_up"] = warm.summary()
        drill.expect(f"warm-up: {warm.failed} of {warm.total} failed", warm.failed == 0)

        # --- 1. restarted under load ------------------------------------------------------------------------
        progress, stop = Progress(), threading.Event()
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(
                load, c, make, 10**6, concurrency=8, timeout=POOL_TIMEOUT_S + 20, progress=progress, stop=stop,
                label="under load",
            )  # fmt: skip
            progress.wait(BEFORE_RESTART, stop_loss=c.stop_loss(60), what="the load before the restart")
            down_s = c.postgres.restart(pause=1.0)
            back = time.perf_counter()
            progress.wait(progress.answered + AFTER_RESTART, stop_loss=c.stop_loss(60), what="the load after it")
            stop.set()
            under = running.result()
        recovered_s = max(0.0, _last_failure_after(under, back))
        drill.figures["under_load"] = {
            "down_s": round(down_s, 2),
            "back_at_s": round(back - under.started, 2),
            "last_failure_after_back_s": round(recovered_s, 2),
            "max_503_ms": max((f["ms"] for f in under.failures), default=0.0),
            **under.summary(),
        }
        bad = _bad_failures(under)
        drill.expect(
            f"under load, every failed request is a JSON 503 with Retry-After "
            f"({under.failed} failed of {under.total}, {len(bad)} otherwise)",
            not bad,
        )
        drill.expect(
            f"under load, requests recover within {RECOVERY_S:g} s of PostgreSQL being back (the last failure "
            f"{recovered_s:.2f} s after)",
            recovered_s <= RECOVERY_S,
        )
        if bad:
            drill.note(f"first failures that were not a JSON 503: {bad[:3]}")

        time.sleep(AFTER_S)
        after = load(c, make, BATCH, concurrency=8, label="5 s after (under load)")
        drill.figures["under_load_5s_after"] = after.summary()
        drill.expect(f"5 s after the restart under load: {after.failed} of {after.total} failed", after.failed == 0)

        # --- 2. stopped while idle: 503s at once; started under load: recovery ------------------------------------
        time.sleep(IDLE_S)  # idle: the pools hold their connections, which the stop kills
        c.postgres.stop()
        drill.figures["while_down"] = _while_down(c, drill, make)
        through, idle_down_s, recovered_s = _recovery(c, make)
        drill.figures["idle_down_s"] = round(idle_down_s, 2)
        drill.figures["through_the_start"] = {"last_failure_after_back_s": round(recovered_s, 2), **through.summary()}
        drill.expect(
            f"after the idle outage, requests recover within {RECOVERY_S:g} s of PostgreSQL being back (the last "
            f"failure {recovered_s:.2f} s after; {through.failed} of {through.total} failed, "
            f"{len(_bad_failures(through))} not a JSON 503)",
            recovered_s <= RECOVERY_S and not _bad_failures(through),
        )

        time.sleep(AFTER_S)
        idle_5 = load(c, make, BATCH, concurrency=8, label="5 s after (idle)")
        drill.figures["idle_5s_after"] = idle_5.summary()
        drill.expect(f"5 s after the idle restart: {idle_5.failed} of {idle_5.total} failed", idle_5.failed == 0)

        # --- 3. restarted while idle, measured later: dead connections that sat in the pools all the while ------
        time.sleep(IDLE_S)
        drill.figures["idle2_down_s"] = round(c.postgres.restart(pause=1.0), 2)
        time.sleep(LATE_SECONDS)
        idle_late = load(c, make, BATCH, concurrency=8, label=f"{LATE_SECONDS:g} s after (idle)")
        drill.figures[f"idle_{LATE_SECONDS:g}s_after"] = idle_late.summary()
        drill.expect(
            f"{LATE_SECONDS:g} s after another idle restart: {idle_late.failed} of {idle_late.total} failed",
            idle_late.failed == 0,
        )
        for result in (warm, under, after, through, idle_5, idle_late):
            print(result.line(), flush=True)
    return drill
