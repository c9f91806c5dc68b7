"""Redis stopped and started under chat streams. Ten threads of the built-in analyst agent ask question after
question (two of them also resubscribe to each run while it streams) while Redis is stopped for about 6 s and
started again. Expected: no stream cut or ended without its closing frames (``__state__`` then ``__usage__``);
every answer complete (its final message present) and identical, frame for frame, to the run's database log
replayed afterwards (nothing lost, nothing sent twice); messages sent during the outage answered (or refused with
a JSON 503); no run left running and every thread taking a new message once Redis is back. Figures: streams and
frames per stream, the outage, the time subscriptions spent tailing the database log, the recovery.

The phases end on progress, not on the clock: Redis stops once every thread has had a stream answered; it stays down
at least ``OUTAGE_S`` and until every thread has had a stream started during the outage answered; the threads stop
asking once each has had one started after Redis came back answered. A slow machine makes the drill longer, never
emptier; each phase gives up only at a stop-loss scaled by the machine's pace."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import statistics
import time
from typing import Any

import psycopg

from drills._cluster import Cluster, ClusterFactory, Drill, Stuck

BUDGET_SECONDS = 240
THREADS = 10
RESUBSCRIBING = 2  # threads that also resubscribe to each of their runs while it streams
OUTAGE_S = 6.0  # Redis stays down at least this long (the scenario: subscriptions fall back, publishers pause)
QUESTIONS = ["What is the total revenue?", "How many orders are there?", "What is the revenue by country?"]


def _complete(lines: list[dict[str, Any]]) -> bool:
    return (
        len(lines) >= 3
        and lines[-1].get("id") == "__usage__"
        and lines[-2].get("id") in {"__state__", "__aborted__", "__error__"}
        and any((line.get("graphPath") or [""])[0] == "final" for line in lines)
    )


def _session(k: int) -> dict[str, Any]:
    return {"externalId": f"drill-redis-{k}", "groups": ["admin"]}


async def _scenario(c: Cluster) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    marks: dict[str, float] = {}
    asking = asyncio.Event()
    asking.set()
    streams: list[dict[str, Any]] = []
    chat_ids: dict[int, str] = {}

    async def ask(k: int, i: int) -> None:
        body: dict[str, Any] = {"input": QUESTIONS[i % len(QUESTIONS)], "messageId": f"1700000{k:03d}{i:04d}-message"}
        body["sessionSettings"] = _session(k)
        if k in chat_ids:
            body["chatId"] = chat_ids[k]
        resubscribe: asyncio.Task[Any] | None = None

        def on_line(line: dict[str, Any]) -> None:
            nonlocal resubscribe
            if line.get("id") == "__cutoff__" and k < RESUBSCRIBING and resubscribe is None:
                again = {**body, "chatId": line["state"]["chatId"]}
                resubscribe = asyncio.ensure_future(c.chat_stream(again, timeout=60))

        started = loop.time() - t0
        status, lines, clean = await c.chat_stream(body, on_line=on_line, timeout=60)
        record = {"k": k, "i": i, "body": body, "status": status, "lines": lines, "clean": clean}
        record.update(started=started, ended=loop.time() - t0, resubscribe=None)
        if resubscribe is not None:
            record["resubscribe"] = await resubscribe
        if status == 200 and lines:
            chat_ids[k] = lines[0]["state"]["chatId"]
        streams.append(record)

    async def asker(k: int) -> None:
        i = 0
        while asking.is_set():
            await ask(k, i)
            i += 1

    def answered_since(moment: float) -> int:
        """Threads that have had a stream started at or after ``moment`` (seconds from t0) answered, whatever the
        answer (the expectations judge the answers)."""
        return len({s["k"] for s in streams if s["started"] >= moment})

    def mark(name: str) -> None:
        marks[name] = loop.time() - t0
        print(f"   {name} at {marks[name]:.1f} s, {len(streams)} streams so far", flush=True)

    async def until(condition: Any, what: str) -> None:
        stop_loss = c.stop_loss(60)
        deadline = loop.time() + stop_loss
        while not condition():
            if loop.time() > deadline:
                raise Stuck(f"gave up after {stop_loss:.0f} s waiting for {what}")
            await asyncio.sleep(0.05)

    async def outage() -> None:
        await until(lambda: answered_since(0.0) == THREADS, "a stream answered on every thread")
        mark("stop")
        await loop.run_in_executor(None, c.redis.stop)
        stopped = loop.time() - t0
        await until(
            lambda: loop.time() - t0 - stopped >= OUTAGE_S and answered_since(stopped) == THREADS,
            "a stream sent during the outage answered on every thread",
        )
        marks["down_s"] = await loop.run_in_executor(None, c.redis.start)
        mark("start")
        marks["start_wall"] = time.time()
        await until(lambda: answered_since(marks["start"]) == THREADS, "a stream answered on every thread after")
        mark("asking stopped")
        asking.clear()

    await asyncio.gather(outage(), *(asker(k) for k in range(THREADS)))
    # Redis is back: every thread takes one more message, answered in full.
    probe_started = loop.time()
    await asyncio.gather(*(ask(k, 9000) for k in range(THREADS)))
    marks["probe_s"] = loop.time() - probe_started
    mark("probes answered")
    # Each run's log, replayed (a resend of the same message once it ended), against what was streamed.
    replays = await asyncio.gather(
        *(
            c.chat_stream({**s["body"], "chatId": s["lines"][0]["state"]["chatId"]}, timeout=60)
            for s in streams
            if s["status"] == 200 and s["lines"]
        )
    )
    return {"streams": streams, "marks": marks, "replays": replays}


def _running_runs(c: Cluster) -> int:
    with psycopg.connect(c.postgres.url("embedadmin")) as db:
        row = db.execute("select count(*) from chat_run where status = 'running'").fetchone()
        return int(row[0]) if row else -1


def _running_run_rows(c: Cluster) -> list[str]:
    """What the runs still running look like (for the drill's notes): who executes each, how old its heartbeat is
    by the database's clock, and how many frames it logged."""
    with psycopg.connect(c.postgres.url("embedadmin")) as db:
        rows = db.execute(
            "select r.id, r.worker, extract(epoch from now() - r.started_at),"
            " extract(epoch from now() - r.heartbeat_at),"
            " (select count(*) from chat_threadevent e where e.thread_id = r.thread_id and e.seq >= r.first_seq)"
            " from chat_run r where r.status = 'running'"
        ).fetchall()
    return [
        f"run {run_id} on {worker or '(queued)'}: started {started:.1f} s ago, heartbeat {beat:.1f} s ago, "
        f"{frames} frames"
        for run_id, worker, started, beat, frames in rows
    ]


def run(cluster: ClusterFactory) -> Drill:
    drill = Drill("redis_outage")
    with cluster(env={"LOG_LEVEL": "INFO"}) as c:  # the chat bus says at INFO when it tails the log
        result = asyncio.run(_scenario(c))
        streams, marks = result["streams"], result["marks"]
        ok_streams = [s for s in streams if s["status"] == 200]
        refused = [s for s in streams if s["status"] == 503]
        other = [s for s in streams if s["status"] not in (200, 503)]
        stop, start = marks["stop"], marks["start"]
        open_at_stop = [s for s in ok_streams if s["started"] < stop < s["ended"]]
        sent_during = [s for s in streams if stop <= s["started"] < start]
        cut = [s for s in ok_streams if not s["clean"] or not _complete(s["lines"])]
        resubscribes = [s["resubscribe"] for s in ok_streams if s["resubscribe"] is not None]
        replayed = [s for s in ok_streams if s["lines"]]
        mismatched = [
            s
            for s, (status, lines, _) in zip(replayed, result["replays"], strict=True)
            if status != 200 or lines[1:] != s["lines"][1:]
        ]
        resub_mismatched = [
            s
            for s, (status, lines, _) in zip(replayed, result["replays"], strict=True)
            if s["resubscribe"] is not None and (s["resubscribe"][0] != 200 or s["resubscribe"][1][1:] != lines[1:])
        ]
        probes = [s for s in streams if s["i"] == 9000]
        running = _running_runs(c)
        log = c.log("gunicorn")
        fallbacks = [float(x) for x in re.findall(r"(?:is back on Redis|ended) after ([0-9.]+) s on the database", log)]
        fell_back = len(re.findall(r"tailing the database log until Redis is back", log))
        publish_back = [float(x) for x in re.findall(r"publishing on Redis again after ([0-9.]+) s", log)]
        # The last moment a subscription or a publisher of the web workers went back to Redis, after its start.
        back_at = [
            dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
            for stamp in re.findall(
                r"^(\S+ \S+) \w+ embedadmin\.chat\.bus .*(?:is back on Redis|again after)", log, re.M
            )
        ]
        recovery = max((at - marks["start_wall"] for at in back_at), default=0.0)
        records = re.split(r"\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} )", log)
        tracebacks = sum("Traceback (most recent call last)" in r for r in records)
        chat_tracebacks = sum(
            "Traceback (most recent call last)" in r and " embedadmin.chat" in r.split("\n", 1)[0] for r in records
        )
        frames = [len(s["lines"]) for s in ok_streams]

        drill.figures.update(
            threads=THREADS,
            streams=len(streams),
            answered=len(ok_streams),
            refused_503=len(refused),
            open_at_stop=len(open_at_stop),
            sent_during_outage=len(sent_during),
            resubscribes=len(resubscribes),
            frames_per_stream={"min": min(frames), "median": statistics.median(frames), "max": max(frames)},
            redis_down_s=round(marks["down_s"], 2),
            subscriptions_on_db_fallback=fell_back,
            db_fallback_s={"max": round(max(fallbacks), 2), "median": round(statistics.median(fallbacks), 2)}
            if fallbacks
            else {},
            publishers_back_after_s=[round(x, 2) for x in publish_back],
            recovery_s=round(max(recovery, 0.0), 2),
            probe_round_s=round(marks["probe_s"], 2),
            running_runs_after=running,
            tracebacks_in_web_log=tracebacks,
            chat_tracebacks_in_web_log=chat_tracebacks,
        )
        drill.expect(f"open streams when Redis stopped ({len(open_at_stop)}) and sent during it", len(open_at_stop) > 0)
        drill.expect(f"no stream cut or without closing frames ({len(cut)} of {len(ok_streams)})", not cut)
        drill.expect(f"every refusal is a JSON 503 ({len(refused)} 503, {len(other)} other)", not other)
        drill.expect(
            f"messages sent during the outage answered or refused ({len(sent_during)} sent, "
            f"{sum(s['status'] == 200 for s in sent_during)} answered)",
            len(sent_during) > 0 and all(s["status"] in (200, 503) for s in sent_during),
        )
        drill.expect(
            f"every stream equals its run's log replayed, frame for frame ({len(mismatched)} differ)", not mismatched
        )
        drill.expect(
            f"resubscribes equal the log too ({len(resubscribes)} resubscribes, {len(resub_mismatched)} differ)",
            len(resubscribes) > 0 and not resub_mismatched,
        )
        drill.expect(
            f"every thread takes a new message once Redis is back ({sum(_complete(s['lines']) for s in probes)} "
            f"of {THREADS})",
            len(probes) == THREADS and all(s["status"] == 200 and _complete(s["lines"]) for s in probes),
        )
        drill.expect(f"no run left running ({running})", running == 0)
        for row in _running_run_rows(c) if running else ():
            drill.note(f"left running: {row}")
        drill.expect(f"the streams fell back to the database log ({fell_back} subscriptions)", fell_back > 0)
        drill.expect(f"no traceback logged by the chat app ({chat_tracebacks})", chat_tracebacks == 0)
        if tracebacks:
            drill.note(f"{tracebacks} tracebacks in the web log, none from the chat app (the query cache's warnings)")
    return drill
