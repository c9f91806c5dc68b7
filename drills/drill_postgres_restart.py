"""PostgreSQL restarted under mixed load, then while idle. The database holds both the application's state (Django's
pool in each of the 2 web workers) and the PostgreSQL tenant's data (the data-source pool), so a restart kills every
pooled connection of both. Mixed load: mint sessions (app database), distinct ``/v1/load`` queries on the PostgreSQL
tenant (app database and data source), ``/readyz``.

Expectations: while the database is down, every failed request is a JSON 503 with ``Retry-After`` (never a 500, a
plain-text page or no answer), ``/readyz`` included (its body says why); requests sent 5 s after PostgreSQL is back,
and again later (``DRILL_PG_LATE_SECONDS``, 20 s by default, 60 s for the figures in docs/reliability.md), all
answer 200: no pooled connection is handed out dead. Before the fixes: 24 of 264 failed 5 s after, 30 of 264 60 s
after (``/readyz`` flapping to 503, ``/v1/load`` 500), and a database error during the outage was a 500."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from drills._cluster import Cluster, ClusterFactory, Drill, LoadResult, load

BUDGET_SECONDS = 200
LATE_SECONDS = float(os.environ.get("DRILL_PG_LATE_SECONDS", "20"))
BATCH = 264  # requests per measured batch, as in the measurement
POOL_TIMEOUT_S = 10  # DATABASE_URL's pool_timeout and the data source's default: a request's wait for a connection


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


def _probe_outage(c: Cluster, drill: Drill, make: Callable[[int], Any]) -> dict[str, Any]:
    """With the database stopped: a few requests of each kind at once; each must be a JSON 503 with Retry-After."""
    answers = []
    with ThreadPoolExecutor(6) as pool:
        futures = [
            pool.submit(c.request, method, path, body, headers, POOL_TIMEOUT_S + 20)
            for method, path, headers, body in (make(i) for i in range(6))
        ]
        answers = [f.result() for f in futures]
    kinds = ["session", "load", "readyz"] * 2
    seen = []
    for kind, answer in zip(kinds, answers, strict=True):
        body = answer.json() if answer.is_json else None
        seen.append(
            {
                "kind": kind,
                "status": answer.status,
                "json": answer.is_json,
                "retry_after": answer.headers.get("retry-after"),
                "seconds": round(answer.seconds, 2),
                "body": body if body is not None else answer.body[:120].decode("utf-8", "replace"),
            }
        )
    ok = [s for s in seen if s["status"] == 503 and s["json"] and s["retry_after"]]
    drill.expect(
        f"while PostgreSQL is down every request answers a JSON 503 with Retry-After ({len(ok)} of {len(seen)})",
        len(ok) == len(seen),
    )
    ready = [s for s in seen if s["kind"] == "readyz"]
    drill.expect(
        f"/readyz says why it is not ready ({ready[0]['body'] if ready else None})",
        all(isinstance(s["body"], dict) and s["body"].get("checks", {}).get("database") for s in ready),
    )
    return {"answers": seen, "max_seconds": max(s["seconds"] for s in seen)}


def run(cluster: ClusterFactory) -> Drill:
    drill = Drill("postgres_restart")
    with cluster(postgres_data=True) as c:
        make = mixed(c)
        warm = load(c, make, 300, concurrency=8, label="warm-up")
        drill.figures["warm_up"] = warm.summary()
        drill.expect(f"warm-up: {warm.failed} of {warm.total} failed", warm.failed == 0)

        # --- 1. restarted under load ------------------------------------------------------------------------
        with ThreadPoolExecutor(1) as pool:
            started = time.perf_counter()
            running = pool.submit(load, c, make, 2400, concurrency=8, timeout=POOL_TIMEOUT_S + 20, label="under load")
            time.sleep(1.5)
            down_s = c.postgres.restart(pause=1.0)
            back_at = time.perf_counter() - started
            under = running.result()
        drill.figures["under_load"] = {"down_s": round(down_s, 2), "back_at_s": round(back_at, 2), **under.summary()}
        bad = _bad_failures(under)
        drill.expect(
            f"under load, every failed request is a JSON 503 with Retry-After "
            f"({under.failed} failed of {under.total}, {len(bad)} otherwise)",
            not bad,
        )
        # A request sent during the outage may wait up to the pool timeout; one that ends later was sent after.
        late = [f for f in under.failures if f["at"] > back_at + POOL_TIMEOUT_S + 1]
        drill.expect(f"under load, no request sent after PostgreSQL was back failed ({len(late)})", not late)
        if bad:
            drill.note(f"first failures that were not a JSON 503: {bad[:3]}")

        time.sleep(5)
        after = load(c, make, BATCH, concurrency=8, label="5 s after (under load)")
        drill.figures["under_load_5s_after"] = after.summary()
        drill.expect(f"5 s after the restart under load: {after.failed} of {after.total} failed", after.failed == 0)

        # --- 2. restarted while idle --------------------------------------------------------------------------
        time.sleep(3)  # idle: the pools hold their connections, which the restart kills
        c.postgres.stop()
        drill.figures["outage_probe"] = _probe_outage(c, drill, make)
        drill.figures["idle_down_s"] = round(c.postgres.start() or 0.0, 2)

        time.sleep(5)
        idle_5 = load(c, make, BATCH, concurrency=8, label="5 s after (idle)")
        drill.figures["idle_5s_after"] = idle_5.summary()
        drill.expect(f"5 s after the idle restart: {idle_5.failed} of {idle_5.total} failed", idle_5.failed == 0)

        # --- 3. restarted while idle, measured later: dead connections that sat in the pools all the while ------
        time.sleep(3)
        drill.figures["idle2_down_s"] = round(c.postgres.restart(pause=1.0), 2)
        time.sleep(LATE_SECONDS)
        idle_late = load(c, make, BATCH, concurrency=8, label=f"{LATE_SECONDS:g} s after (idle)")
        drill.figures[f"idle_{LATE_SECONDS:g}s_after"] = idle_late.summary()
        drill.expect(
            f"{LATE_SECONDS:g} s after another idle restart: {idle_late.failed} of {idle_late.total} failed",
            idle_late.failed == 0,
        )
        for result in (warm, under, after, idle_5, idle_late):
            print(result.line(), flush=True)
    return drill
