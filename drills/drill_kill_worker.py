"""``kill -9`` of a web worker (gunicorn, 2 uvicorn workers) in three moments. (a) During a slow ``/v1/load`` (a
4 s ``pg_sleep`` cube of a tiny model on the PostgreSQL tenant) that clients on both workers ask at once, each
repeating after Continue wait as a Cube client does: the worker running the query is killed; expected: the job is
taken over by the surviving worker within 2 s of the kill (its statement appears in ``pg_stat_activity``) and the
clients get data then plus the query's own 4 s, not 60 s of Continue wait. (b) During a chat run (the built-in
analyst's tool call on the slow cube): the worker executing the run is killed; expected: the thread accepts a new
message within 5 s, and its state holds no message left in process (the killed run's partial answer and tool call
are closed, with its error frame). (c) During minting by 16 concurrent clients: expected: only requests in flight
on the killed worker are lost (at most 16), every returned session is stored exactly once, and the account's
external-user counter equals its external users.

Each kill comes once the drill has seen what it waits for (the slow statement running with every client's request
sent; the run's tool call in process; 300 sessions minted), and minting goes on until 300 more are minted after the
kill, not for fixed times; the waits give up only at stop-losses scaled by the machine's pace."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
import threading
import time
from typing import Any

import psycopg

from drills._cluster import (
    ROOT,
    Cluster,
    ClusterFactory,
    Connection,
    Drill,
    contention,
    json_body,
    socket_inodes,
    tcp_inodes,
    wait_for,
)

BUDGET_SECONDS = 240
SLEEP_S = 4
CLIENTS = 4  # Cube clients repeating the slow query
MINTERS = 16
MINTED_BEFORE_KILL = 300  # sessions minted before the kill (about 1 s on the idle machine)
MINTED_AFTER_KILL = 300  # and after it, before the minters stop
SLOW_MODEL = f"""cubes:
  - name: slow_orders
    title: Slow orders
    description: Orders read slowly (each read sleeps {SLEEP_S} s in PostgreSQL).
    sql: "SELECT 1 AS id, 'slow' AS status, pg_sleep({SLEEP_S}) AS slept"
    measures:
      - name: count
        title: Number of slow orders
        type: count
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
      - name: status
        sql: status
        type: string
"""
SLOW_QUERY = {"measures": ["slow_orders.count"]}


# -- which worker holds a connection --------------------------------------------------------------------------------


def _accepted(c: Cluster) -> int:
    """Connections the web workers hold on the web port (requests accepted, served or waiting)."""
    inodes = tcp_inodes(c.port, established=True)
    return sum(len(socket_inodes(pid) & inodes) for pid in c.worker_pids())


def _worker_with_socket(c: Cluster, local_port: int) -> int | None:
    inodes = tcp_inodes(local_port)
    for pid in c.worker_pids():
        if socket_inodes(pid) & inodes:
            return pid
    return None


def _sleeping(c: Cluster) -> list[tuple[int, float]]:
    """The ``pg_sleep`` statements running in the data database: (client port, started at, Unix time)."""
    with psycopg.connect(c.postgres.url("data"), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT client_port, extract(epoch FROM query_start) FROM pg_stat_activity "
            "WHERE state = 'active' AND query ILIKE '%pg_sleep%' AND pid <> pg_backend_pid()"
        ).fetchall()
    return [(int(port), float(started)) for port, started in rows if port is not None]


def _wait_sleeping(c: Cluster, *, after: float = 0.0, stop_loss: float = 10.0) -> tuple[int, float] | None:
    """The first ``pg_sleep`` statement started after ``after`` (Unix time): its client port and start; None if
    none started within the stop-loss (``stop_loss`` idle seconds, scaled by the pace)."""
    deadline = time.monotonic() + c.stop_loss(stop_loss)
    while time.monotonic() < deadline:
        for port, started in _sleeping(c):
            if started > after:
                return port, started
        time.sleep(0.02)
    return None


def _slow_tenant(c: Cluster) -> None:
    """The PostgreSQL tenant serves a tiny model of one slow cube (an operator's ``configure_deployment``)."""
    model = c.directory / "slow-model"
    (model / "cubes").mkdir(parents=True)
    (model / "cubes" / "slow_orders.yml").write_text(SLOW_MODEL)
    tenant = c.tenants["postgres"]
    command = [sys.executable, "manage.py", "configure_deployment", str(tenant.deployment_id)]
    command += ["--model-dir", str(model), "--data-source", c.postgres.url("data")]
    subprocess.run(command, cwd=ROOT, env=c.env, check=True, capture_output=True, timeout=60)  # noqa: S603 (our own command)


# -- (a) a slow query --------------------------------------------------------------------------------------------------


def _query_takeover(c: Cluster, drill: Drill) -> None:
    tenant = c.tenants["postgres"]
    path = f"{tenant.core_base}/load"
    body = json_body({"query": SLOW_QUERY, "queryType": "multi"})
    outcomes: list[dict[str, Any]] = []
    sent: set[int] = set()  # the clients whose first request is on its way
    events: list[tuple[float, int, str]] = []  # (Unix time, client, what it got): the story of a slow takeover
    lock = threading.Lock()

    async def client(k: int) -> None:
        conn = Connection(c.port, timeout=60)
        waits = failures = 0
        while True:
            sent.add(k)
            response = await conn.request("POST", path, tenant.core_headers(), body)
            payload = response.json() if response.is_json else {}
            events.append(
                (time.time(), k, "Continue wait" if payload.get("error") == "Continue wait" else str(response.status))
            )
            if response.status == 200 and payload.get("error") == "Continue wait":
                waits += 1
                continue
            if response.status == 0:
                failures += 1  # its worker was killed: reconnect and repeat, as a client would
                conn.close()
                conn = Connection(c.port, timeout=60)
                continue
            with lock:
                outcomes.append(
                    {
                        "k": k,
                        "status": response.status,
                        "at": time.time(),
                        "waits": waits,
                        "lost": failures,
                        "rows": payload.get("results", [{}])[0].get("data") if response.status == 200 else payload,
                    }
                )
            conn.close()
            return

    async def clients() -> None:
        await asyncio.gather(*(client(k) for k in range(CLIENTS)))

    runner = threading.Thread(target=asyncio.run, args=(clients(),))
    began = time.time()
    runner.start()
    first = _wait_sleeping(c, after=began - 1)
    assert first is not None, "the slow query did not start"
    wait_for(
        lambda: len(sent) == CLIENTS and _accepted(c) >= CLIENTS,
        what="every client's request accepted by a web worker",
        stop_loss=c.stop_loss(10),
    )
    owner = _worker_with_socket(c, first[0])
    assert owner is not None, "no web worker holds the query's connection"
    c.kill_worker(owner)
    killed = time.time()
    again = _wait_sleeping(c, after=killed)
    runner.join(c.stop_loss(60))
    drill.figures["query_owner_killed"] = owner
    takeover = round(again[1] - killed, 2) if again else None
    data = round(min(o["at"] for o in outcomes) - killed, 2) if outcomes else None
    drill.figures["query_takeover_s"] = takeover
    drill.figures["query_data_after_kill_s"] = data
    drill.figures["query_continue_waits"] = sum(o["waits"] for o in outcomes)
    drill.figures["query_clients_cut_by_the_kill"] = sum(o["lost"] for o in outcomes)
    drill.expect(
        f"the query is taken over within 2 s of the kill ({takeover} s)", takeover is not None and takeover <= 2
    )
    if takeover is None or takeover > 2:
        drill.note(f"clients' answers, seconds from the kill: {[(round(t - killed, 2), k, e) for t, k, e in events]}")
        drill.note(f"first statement {first[1] - killed:.2f} s, again {again[1] - killed if again else None} s")
    ok = [o for o in outcomes if o["status"] == 200 and o["rows"] == [{"slow_orders.count": "1"}]]
    drill.expect(f"every client gets the rows ({len(ok)} of {CLIENTS})", len(ok) == CLIENTS)
    drill.expect(
        f"the first client gets data within the takeover plus the {SLEEP_S} s query ({data} s after the kill)",
        data is not None and data <= 2 + SLEEP_S + 1,
    )


# -- (b) a chat run ---------------------------------------------------------------------------------------------------


def _chat_run(c: Cluster, drill: Drill) -> None:
    session = {"externalId": "drill-kill-chat", "groups": ["admin"]}
    seen: dict[str, Any] = {}

    def on_line(line: dict[str, Any]) -> None:
        if "chatId" in (line.get("state") or {}):
            seen["chat_id"] = line["state"]["chatId"]
        if line.get("toolCall") and line.get("isInProcess") and "killed" not in seen:
            sleeping = _wait_sleeping(c)
            pid = _worker_with_socket(c, sleeping[0]) if sleeping else None
            if pid is not None:
                seen["killed"] = c.kill_worker(pid)
                seen["at"] = time.monotonic()
                seen["wall"] = time.time()

    question = "How many slow orders are there?"
    status, lines, clean = asyncio.run(
        c.chat_stream({"input": question, "sessionSettings": session}, tenant="postgres", on_line=on_line, timeout=30)
    )
    drill.figures["chat_stream_cut"] = not clean
    if "killed" not in seen:
        drill.expect(f"the run reached its tool call (status {status}, {len(lines)} lines)", False)
        return
    chat_id = seen["chat_id"]
    refused = 0
    accepted: list[float] = []  # when the accepted message's stream sent its first line

    def first_line(line: dict[str, Any]) -> None:
        if not accepted:
            accepted.append(time.monotonic())

    attempts: list[tuple[float, float, int, str]] = []  # (sent, answered) s after the kill, status, error
    while True:
        body = {"input": "And how many orders?", "chatId": chat_id, "sessionSettings": session}
        sent = time.monotonic()
        status, answer, _ = asyncio.run(c.chat_stream(body, tenant="postgres", on_line=first_line, timeout=30))
        error = str((answer[0] if answer else {}).get("error", ""))[:60] if status != 200 else ""
        attempts.append((round(sent - seen["at"], 2), round(time.monotonic() - seen["at"], 2), status, error))
        if status != 409 or time.monotonic() - seen["at"] > c.stop_loss(30):
            break
        accepted.clear()
        refused += 1
        time.sleep(0.1)
    drill.figures["chat_attempts_after_kill"] = attempts[-6:]
    accepted_after = round((accepted[0] if accepted else time.monotonic()) - seen["at"], 2)
    drill.figures["chat_thread_free_after_kill_s"] = accepted_after
    drill.figures["chat_messages_refused_meanwhile"] = refused
    # The lease (3 s) and the sweep (every 2 s) free the thread within 5 s; the accepted request's own answer is
    # slower on a busy machine, so the limit scales by the contention measured before the drill.
    scale = contention()
    limit = round(5 * scale, 2)
    drill.expect(
        f"the thread accepts a message within 5 s of the kill, x{scale:.2f} contention: {limit} s ({accepted_after} s)",
        status == 200 and accepted_after <= limit,
    )
    _, state_lines, _ = asyncio.run(c.chat_stream({"chatId": chat_id, "sessionSettings": session}, tenant="postgres"))
    messages = next(line for line in state_lines if line.get("id") == "__state__")["state"]["messages"]
    in_process = [m["id"] for m in messages if m.get("isInProcess")]
    drill.figures["chat_messages_in_thread"] = len(messages)
    drill.expect(f"no message of the thread is left in process ({in_process})", not in_process)
    with psycopg.connect(c.postgres.url("embedadmin"), autocommit=True) as conn:
        runs = conn.execute(
            "SELECT status, worker, extract(epoch FROM heartbeat_at), extract(epoch FROM finished_at) "
            "FROM chat_run ORDER BY id"
        ).fetchall()
        statuses = [row[0] for row in runs]
        drill.figures["chat_killed_run"] = {
            "worker": runs[0][1],
            "last_heartbeat_before_kill_s": round(seen["wall"] - float(runs[0][2]), 2),
            "failed_after_kill_s": round(float(runs[0][3]) - seen["wall"], 2),
        }
        error = conn.execute(
            "SELECT e.message->>'error' FROM chat_threadevent e JOIN chat_run r ON r.id = e.run_id "
            "WHERE r.status = 'failed' AND e.message->>'id' = '__error__'"
        ).fetchone()
    drill.figures["chat_run_statuses"] = statuses
    drill.expect(
        f"the killed run is failed with its error frame ({statuses}, {error})",
        "failed" in statuses and error is not None,
    )


# -- (c) minting ------------------------------------------------------------------------------------------------------


def _minting(c: Cluster, drill: Drill) -> None:
    tenant = c.tenants["duckdb"]
    returned: list[str] = []
    lost: list[str] = []
    other: list[int] = []
    stop = threading.Event()
    counter = iter(range(10**9))

    async def minter() -> None:
        conn = Connection(c.port, timeout=30)
        while not stop.is_set():
            i = next(counter)
            body = json_body({"deploymentId": tenant.deployment_id, "externalId": f"drill-mint-{i}@example.com"})
            response = await conn.request("POST", "/api/v1/embed/generate-session", tenant.api_key_headers, body)
            if response.status == 200:
                returned.append(response.json()["sessionId"])
            elif response.status == 0:
                lost.append(response.error or "")
            else:
                other.append(response.status)
        conn.close()

    async def minters() -> None:
        await asyncio.gather(*(minter() for _ in range(MINTERS)))

    runner = threading.Thread(target=asyncio.run, args=(minters(),))
    runner.start()
    wait_for(lambda: len(returned) >= MINTED_BEFORE_KILL, what="sessions minted", stop_loss=c.stop_loss(30))
    before = len(returned)
    c.kill_worker()
    wait_for(
        lambda: len(returned) >= before + MINTED_AFTER_KILL,
        what="sessions minted after the kill",
        stop_loss=c.stop_loss(30),
    )
    stop.set()
    runner.join(c.stop_loss(60))
    with psycopg.connect(c.postgres.url("embedadmin"), autocommit=True) as conn:
        digests = {
            row[0]: row[1]
            for row in conn.execute(
                "SELECT key_digest, count(*) FROM embedding_embedsession GROUP BY key_digest"
            ).fetchall()
        }
        counted, users = conn.execute(
            "SELECT t.external_user_count, (SELECT count(*) FROM directory_externaluser u WHERE u.account_id = a.id) "
            "FROM accounts_account a JOIN accounts_tenantsettings t ON t.account_id = a.id WHERE a.name = %s",
            [tenant.account],
        ).fetchone()
    stored_once = sum(1 for s in returned if digests.get(hashlib.sha256(s.encode()).hexdigest()) == 1)
    drill.figures["mint_returned"] = len(returned)
    drill.figures["mint_returned_before_kill"] = before
    drill.figures["mint_lost_in_flight"] = len(lost)
    drill.figures["mint_other_statuses"] = other
    drill.figures["mint_counter"] = {"external_user_count": counted, "external_users": users}
    drill.expect(f"only requests in flight are lost ({len(lost)} of at most {MINTERS})", len(lost) <= MINTERS)
    drill.expect(f"no request is refused ({other})", not other)
    drill.expect(
        f"every returned session is stored once ({stored_once} of {len(returned)})", stored_once == len(returned)
    )
    drill.expect(f"the user counter is exact ({counted} counted, {users} users)", counted == users)


def run(cluster: ClusterFactory) -> Drill:
    drill = Drill("kill_worker")
    with cluster(postgres_data=True, env={"CONTINUE_WAIT_SECONDS": "2"}) as c:
        _slow_tenant(c)
        _query_takeover(c, drill)
        drill.figures["query_worker_replaced_s"] = round(c.wait_workers(), 2)
        _chat_run(c, drill)
        drill.figures["chat_worker_replaced_s"] = round(c.wait_workers(), 2)
        _minting(c, drill)
    return drill
