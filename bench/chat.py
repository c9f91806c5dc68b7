"""Benchmark: the Chat API stream with the built-in analyst on the ASGI server (PostgreSQL, demo DuckDB data).

Measures, over sequential questions, the time to the first NDJSON line and to the final answer (the line whose
``graphPath`` starts with ``final``), then 50 concurrent streams. The baseline, measured in the same run, is a
stream of the same length with no agent: the replay of an answered question (its ``chatId`` and ``messageId``
again), which streams the run's logged frames without running anything.

    .venv/bin/python bench/chat.py [--questions 100] [--concurrent 50]

Targets (issue 4, 2-core machine): first line <= 20 ms p50, built-in answer <= 300 ms p50, 50 concurrent
streams with no error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _harness import ROOT, bench_database_url, manage, server_env, start_server
from _harness import pct as quantile

from demo.generate import generate

QUESTIONS = [
    "What is the total revenue?",
    "How many orders were placed in 2024?",
    "Revenue by product category",
    "Top 5 products by revenue",
    "Monthly order count in 2024",
    "How many orders in France?",
    "Order value for status completed",
    "Average order value last year",
]


async def stream(
    port: int, path: str, headers: dict[str, str], body: dict
) -> tuple[int, float, float, list[dict], float]:
    """POST and read the NDJSON stream: status, seconds to the first line, to the final answer (or the end),
    the lines, and seconds to the end of the stream."""
    payload = json.dumps(body).encode()
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(payload)}", "Connection: close"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    first = final = 0.0
    buffer, lines = b"", []
    while True:
        size_line = await reader.readline()
        if not size_line.strip():
            break
        size = int(size_line.strip(), 16)
        if size == 0:
            break
        buffer += (await reader.readexactly(size + 2))[:-2]
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            message = json.loads(line)
            now = time.perf_counter() - started
            first = first or now
            if is_final(message):
                final = now
            lines.append(message)
    writer.close()
    end = time.perf_counter() - started
    return status, first, final or end, lines, end


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (seconds), in milliseconds."""
    return quantile(values, q) * 1000


def is_final(message: dict) -> bool:
    """Whether a stream line is the agent's final answer."""
    return (message.get("graphPath") or [""])[0] == "final"


async def run(args: argparse.Namespace, port: int, base: str, headers: dict[str, str]) -> None:
    path = f"{base}/stream-chat-state"
    session = {"externalId": "bench", "groups": ["admin"]}
    # Warm up (model compile, connections) and answer one question whose replay is the baseline.
    replayed = {"input": QUESTIONS[0], "messageId": "1700000000000-message", "sessionSettings": session}
    _, _, _, lines, _ = await stream(port, path, headers, replayed)
    replayed["chatId"] = lines[0]["state"]["chatId"]
    for question in QUESTIONS:
        await stream(port, path, headers, {"input": question, "sessionSettings": session})

    baseline_first, baseline_end, first, final, errors = [], [], [], [], 0
    baseline_lines, answer_lines = [], []
    for i in range(args.questions):
        status, f, e, lines, _ = await stream(port, path, headers, replayed)
        baseline_first.append(f)
        baseline_end.append(e)
        baseline_lines.append(len(lines))
        errors += status != 200
        body = {"input": QUESTIONS[i % len(QUESTIONS)], "sessionSettings": session}
        status, f, e, lines, _ = await stream(port, path, headers, body)
        errors += status != 200 or not any(is_final(m) for m in lines)
        first.append(f)
        final.append(e)
        answer_lines.append(len(lines))

    started = time.perf_counter()
    results = await asyncio.gather(
        *(
            stream(port, path, headers, {"input": QUESTIONS[i % len(QUESTIONS)], "sessionSettings": session})
            for i in range(args.concurrent)
        ),
        return_exceptions=True,
    )
    wall = time.perf_counter() - started
    concurrent_errors = sum(
        isinstance(r, BaseException)
        or r[0] != 200
        or not any(is_final(m) for m in r[3])
        or any("error" in json.loads(m["toolCall"].get("result", "{}")) for m in r[3] if "toolCall" in m)
        or any(m.get("type") == "error" for m in r[3])  # the run failed after the answer (e.g. stale recovery)
        for r in results
    )
    stream_ends = [r[4] for r in results if not isinstance(r, BaseException)]
    finals = [r[2] for r in results if not isinstance(r, BaseException)]

    print(f"\nchat benchmark: {args.questions} sequential questions, built-in analyst, {args.workers} ASGI workers")
    print(
        f"  baseline (replay of an answer, no agent, {statistics.median(baseline_lines):.0f} lines): first line p50 "
        f"{pct(baseline_first, 0.5):.1f} ms, p99 {pct(baseline_first, 0.99):.1f} ms; "
        f"end p50 {pct(baseline_end, 0.5):.1f} ms"
    )
    print(
        f"  analyst ({statistics.median(answer_lines):.0f} lines): first line p50 {pct(first, 0.5):.1f} ms, "
        f"p99 {pct(first, 0.99):.1f} ms; "
        f"final answer p50 {pct(final, 0.5):.1f} ms, p99 {pct(final, 0.99):.1f} ms; errors {errors}"
    )
    print(
        f"  ratio analyst / baseline: first line p50 {pct(first, 0.5) / pct(baseline_first, 0.5):.2f}x, "
        f"answer p50 / baseline end p50 {pct(final, 0.5) / pct(baseline_end, 0.5):.2f}x"
    )
    print(
        f"  {args.concurrent} concurrent streams: {concurrent_errors} errors, wall {wall * 1000:.0f} ms, "
        f"final answer p50 {pct(finals, 0.5):.0f} ms, p99 {pct(finals, 0.99):.0f} ms, "
        f"last stream ended at {max(stream_ends) * 1000:.0f} ms"
    )
    ok = pct(first, 0.5) <= 20 and pct(final, 0.5) <= 300 and concurrent_errors == 0 and errors == 0
    print(
        f"  target (first line <= 20 ms p50, answer <= 300 ms p50, 50 concurrent, no error): "
        f"{'met' if ok else 'NOT met'}"
    )
    print(f"  median of sequential answers: {statistics.median(final) * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--concurrent", type=int, default=50)
    parser.add_argument("--orders", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=4098)
    args = parser.parse_args()

    dataset = Path(tempfile.mkdtemp(prefix="chat-bench-")) / "demo.duckdb"
    generate(dataset, orders=args.orders)
    env = server_env(bench_database_url("embedadmin_bench_chat"))
    manage(env, "migrate", "--noinput", "-v0")
    created = json.loads(manage(env, "create_account", "benchchat", "--json"))
    deployment = str(created["deploymentId"])
    model = str(ROOT / "demo" / "model")
    manage(env, "configure_deployment", deployment, "--model-dir", model, "--data-source", f"duckdb:///{dataset}")
    agent = json.loads(manage(env, "create_agent", "--account", "benchchat", "--deployment", deployment, "--json"))
    base = f"/api/v1/public/benchchat/agents/{agent['agentId']}/chat"
    headers = {"Authorization": f"Api-Key {created['apiKey']}", "Content-Type": "application/json"}
    server = start_server(env, port=args.port, workers=args.workers)
    try:
        asyncio.run(run(args, args.port, base, headers))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
