"""Benchmark: the built-in analyst's question suites (tests/chat/analyst/suites) through the Chat API on the ASGI
server, each answer judged as the suite test judges it, and its time to the final answer against the plain
``/v1/load`` of the same query.

For each suite (the demo shop and the clinic, each on its DuckDB dataset) every question is asked on a new thread
(a follow-up after its earlier questions, on the same thread). The SQL the analyst ran (its ``serviceSqlApi`` tool
call) is read back into a Cube query by the Core Data API's translator and compared with the suite's expected
query; that Cube query is then sent to ``/v1/load`` of the same deployment. Both are timed on a second pass, after a
first that warms the model, the connections and the result cache, so the ratio is what the analyst adds (the
model search, value lookups, reading, the stream) to the query it runs. The questions run on the real clock: the
suite's relative dates are resolved with it.

    .venv/bin/python bench/analyst.py [--json]

Targets (issue 15): on each suite at least 90% of the answerable questions answered right, 0 wrong.

The blind sets (``tests/chat/analyst/{saas,tpch,web}``, each questions file) are measured by the blind runner, in
process on each set's fixed clock (their relative dates and checks are written for it, which a server on the real
clock would not keep): right / declined / wrong per model and set, and each answered question's time asked again
against the plain ``/v1/load`` of its query (the Core Data API's service, same viewer, second of two)::

    eval "$(bash scripts/test-services.sh)"
    EMBEDADMIN_ALLOW_DEV_SECRET=true .venv/bin/python bench/analyst.py --blind fresh3.yml [--blind-json 'o/{set}.json']
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jwt
from _harness import ROOT, Connection, bench_database_url, json_body, manage, server_env, start_server
from chat import is_final, stream
from chat import pct as ms

from demo.generate import DEFAULT_SEED, generate
from tests.chat.analyst import suite as suites
from tests.chat.analyst.clinic import dataset as clinic

SESSION = {"externalId": "bench", "groups": ["admin"]}
TARGET = 0.9


async def ask(port: int, path: str, headers: dict[str, str], question: str, after: tuple[str, ...]) -> tuple[Any, ...]:
    """Ask ``question`` on a new thread after ``after``: the SQL the analyst ran (None: it declined), the answer's
    text, and the seconds to the final answer of ``question`` itself."""
    chat_id = None
    for before in after:
        body: dict[str, Any] = {"input": before, "sessionSettings": SESSION}
        if chat_id:
            body["chatId"] = chat_id
        _, _, _, lines, _ = await stream(port, path, headers, body)
        chat_id = lines[0]["state"]["chatId"]
    body = {"input": question, "sessionSettings": SESSION, **({"chatId": chat_id} if chat_id else {})}
    status, _first, final, lines, _end = await stream(port, path, headers, body)
    if status != 200:
        raise SystemExit(f"{question}: HTTP {status}")
    sql = None
    for line in lines:
        call = line.get("toolCall") or {}
        if call.get("name") == "serviceSqlApi" and "result" in call:
            result = json.loads(call["result"])
            if "error" in result:
                raise SystemExit(f"{question}: the query failed: {result['error']}")
            sql = json.loads(call["input"])["sqlQuery"]
    answer = "".join(line.get("content", "") for line in lines if is_final(line))
    return sql, answer, final


async def load(port: int, base: str, token: str, query: dict[str, Any]) -> float:
    """Seconds to answer ``query`` with ``/v1/load`` on a new connection, as each chat stream is asked."""
    connection = Connection(port)
    headers = {"Authorization": token, "Content-Type": "application/json"}
    started = time.perf_counter()
    status, body = await connection.request("POST", f"{base}/load", headers, json_body({"query": query}))
    elapsed = time.perf_counter() - started
    connection.close()
    if status != 200:
        raise SystemExit(f"/v1/load {query}: {status} {body[:300]!r}")
    return elapsed


def run_suite(name: str, port: int, deployment: dict[str, Any], agent: dict[str, Any], model_dir: Path) -> dict:
    from embedadmin.semantic import load_model

    suite = suites.load(name)
    model = load_model(model_dir, dialect="duckdb").require()
    path = f"/api/v1/public/{deployment['account']}/agents/{agent['agentId']}/chat/stream-chat-state"
    headers = {"Authorization": f"Api-Key {deployment['apiKey']}", "Content-Type": "application/json"}
    base = f"/d/{deployment['deploymentId']}/cubejs-api/v1"
    now = int(time.time())
    token = jwt.encode({**SESSION, "iat": now, "exp": now + 7200}, deployment["deploymentApiSecret"], algorithm="HS256")

    async def passes() -> list[tuple[Any, ...]]:
        for case in suite.cases:  # warm-up: model, connections, result cache
            sql, _, _ = await ask(port, path, headers, case.question, case.after)
            verdict = suites.judge(case, suite, model, sql, now=datetime.now(UTC))
            if verdict.query is not None:
                await load(port, base, token, verdict.query)
        measured = []
        for case in suite.cases:
            sql, answer, final = await ask(port, path, headers, case.question, case.after)
            verdict = suites.judge(case, suite, model, sql, suites.decline_reason(answer), now=datetime.now(UTC))
            plain = await load(port, base, token, verdict.query) if verdict.query is not None else None
            measured.append((case, verdict, final, plain))
        return measured

    measured = asyncio.run(passes())
    answerable = [(c, v) for c, v, _, _ in measured if not c.declines]
    unanswerable = [(c, v) for c, v, _, _ in measured if c.declines]
    right = sum(v.outcome == "right" for _, v in answerable)
    declined = [(c, v) for c, v in answerable if v.outcome == "declined"]
    wrong = [(c, v) for c, v, _, _ in measured if v.outcome == "wrong"]
    finals = [f for c, v, f, p in measured if p is not None]
    plains = [p for c, v, f, p in measured if p is not None]
    figures = {
        "questions": len(measured),
        "answerable": len(answerable),
        "right": right,
        "right_share": right / len(answerable),
        "declined": len(declined),
        "wrong": len(wrong),
        "unanswerable": len(unanswerable),
        "unanswerable_declined": sum(v.outcome == "right" for _, v in unanswerable),
        "answer_p50_ms": ms(finals, 0.5),
        "load_p50_ms": ms(plains, 0.5),
    }
    figures["ratio"] = figures["answer_p50_ms"] / figures["load_p50_ms"]
    met = figures["right_share"] >= TARGET and not wrong
    print(f"\n{name} suite: {len(measured)} questions ({len(answerable)} answerable, {len(unanswerable)} not)")
    print(
        f"  answerable: right {right} ({figures['right_share']:.1%}), declined {len(declined)}, "
        f"wrong {len([1 for c, _ in wrong if not c.declines])}"
    )
    print(f"  not answerable by the model: declined {figures['unanswerable_declined']}/{len(unanswerable)}")
    for case, verdict in declined:
        print(f"    declined: {case.question!r}: {verdict.detail}")
    for case, verdict in wrong:
        print(f"    WRONG: {case.question!r}: {verdict.detail}")
    print(
        f"  time to the final answer p50 {figures['answer_p50_ms']:.1f} ms (p90 {ms(finals, 0.9):.1f}); "
        f"plain /v1/load of the same query p50 {figures['load_p50_ms']:.1f} ms (p90 {ms(plains, 0.9):.1f}); "
        f"ratio {figures['ratio']:.1f}x"
    )
    print(f"  target (>= 90% of answerable right, 0 wrong): {'met' if met else 'NOT met'}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=4097)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object at the end")
    parser.add_argument("--blind", metavar="QUESTIONS", help="the blind sets' questions file to measure instead")
    parser.add_argument("--blind-json", help="with --blind: write each set's results here ('{set}' in the path)")
    args = parser.parse_args()
    if args.blind:
        from tests.chat.analyst import blind

        extra = ["--json", args.blind_json] if args.blind_json else []
        raise SystemExit(blind.main(["--questions", args.blind, "--timing", *extra]))

    scratch = Path(tempfile.mkdtemp(prefix="bench-analyst-"))
    datasets = {"demo": scratch / "demo.duckdb", "clinic": scratch / "clinic.duckdb"}
    generate(datasets["demo"], orders=2000, seed=DEFAULT_SEED)  # the test suite's dataset
    clinic.write_duckdb(datasets["clinic"])
    models = {"demo": ROOT / "demo" / "model", "clinic": clinic.MODEL}

    env = server_env(bench_database_url("embedadmin_bench_analyst"))
    manage(env, "migrate", "--noinput", "-v0")
    deployments, agents = {}, {}
    for name in ("demo", "clinic"):
        account = f"bench-analyst-{name}"
        created = json.loads(manage(env, "create_account", account, "--json"))
        created["account"] = account
        deployment = str(created["deploymentId"])
        source = f"duckdb:///{datasets[name]}"
        manage(env, "configure_deployment", deployment, "--model-dir", str(models[name]), "--data-source", source)
        agent = manage(env, "create_agent", "--account", account, "--deployment", deployment, "--json")
        deployments[name], agents[name] = created, json.loads(agent)

    os.environ.update(env)
    import django

    django.setup()  # the bench reads the analyst's SQL with the Core Data API's translator

    server = start_server(env, port=args.port, workers=1)
    figures = {}
    try:
        for name in ("demo", "clinic"):
            figures[name] = run_suite(name, args.port, deployments[name], agents[name], models[name])
    finally:
        server.stop()
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
