"""Benchmark: POST /api/v1/embed/generate-session on the ASGI server over PostgreSQL, set up at scale: 2 web
processes (gunicorn with uvicorn workers) sharing Redis as their cache.

Each request upserts an external user with 3 typed attributes and 2 groups and stores a session.
The baseline, measured in the same run and server, is GET /api/v1/api-keys/current: an
authenticated request that does no work beyond the API-key lookup (the key is remembered by the process and its
version read from Redis, exactly as generate-session authenticates).

Two kinds of run, each for the baseline, existing users and new users:
- closed loop (16 clients with wrk, a C load generator, each sending as soon as it has its answer): the most the
  server does;
- open loop at the target rate (300 requests/s due on a fixed schedule over 16 connections, each
  latency counted from when its request was due): latency at that load.

    make bench            # or: .venv/bin/python bench/generate_session.py [--clients 16] [--seconds 10]

Targets (issue 14, 2-core machine): >= 300 sessions/s for new users, and at least half the no-op's throughput,
from the closed loop. The open loop at 300/s reports p50/p99 (issue 2 asked p99 <= 50 ms there): in a closed
loop of 16 clients, Little's law makes the mean latency 16 / throughput, so there the p99 mostly restates
throughput.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (
    RunResult,
    bench_database_url,
    json_body,
    manage,
    print_steal,
    run_load,
    run_rate,
    server_env,
    start_server,
    wrk_run,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each closed-loop run")
    parser.add_argument("--users", type=int, default=2000, help="distinct external users in the steady-state phase")
    # One process per core: more processes than cores only add context switches to the tail.
    parser.add_argument("--workers", type=int, default=2, help="ASGI worker processes")
    parser.add_argument(
        "--redis", default="redis://127.0.0.1:6379/14", help="REDIS_URL of the web processes ('' for local memory)"
    )
    parser.add_argument("--threads", type=int, default=2, help="request threads per process (WEB_THREADS)")
    parser.add_argument("--rate", type=float, default=300.0, help="requests/s due in the open-loop runs")
    parser.add_argument("--rate-requests", type=int, default=4500, help="requests in each open-loop run")
    parser.add_argument("--port", type=int, default=4099)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object at the end")
    args = parser.parse_args()

    env = server_env(bench_database_url(), WEB_THREADS=str(args.threads), REDIS_URL=args.redis)
    manage(env, "migrate", "--noinput", "-v0")
    created = json.loads(manage(env, "create_account", "bench", "--json"))
    platform = {"Authorization": f"Bearer {created['platformToken']}", "Content-Type": "application/json"}
    api_key = {"Authorization": f"Api-Key {created['apiKey']}", "Content-Type": "application/json"}

    server = start_server(env, port=args.port, workers=args.workers)
    try:
        # Catalog: 3 typed attributes and 2 groups, created through the Platform API; a cap above the
        # ~12,000 users the runs create (the cap's own cost is still paid: every new user reserves a place).
        setup = [
            ("PATCH", "/api/v1/tenant/settings", {"maxExternalUsers": 1_000_000}),
            ("POST", "/api/v1/user-attributes", {"name": "country", "type": "string"}),
            ("POST", "/api/v1/user-attributes", {"name": "level", "type": "number"}),
            ("POST", "/api/v1/user-attributes", {"name": "regions", "type": "string_array"}),
            ("POST", "/api/scim/v2/Groups", {"displayName": "analysts"}),
            ("POST", "/api/scim/v2/Groups", {"displayName": "emea"}),
        ]
        for i, (method, path, body) in enumerate(setup):
            result = run_load(
                f"setup {i}",
                port=args.port,
                clients=1,
                total=1,
                make=lambda _i, m=method, p=path, b=body: (m, p, platform, json_body(b)),
                expect=200 if method == "PATCH" else 201,
            )
            if result.errors:
                raise SystemExit(f"setup request {method} {path} failed")

        def session_request(i: int, *, prefix: str, modulo: int | None) -> tuple[str, str, dict, bytes]:
            user = i % modulo if modulo else i
            body = {
                "deploymentId": created["deploymentId"],
                "externalId": f"{prefix}-{user}@example.com",
                "userAttributes": [
                    {"name": "country", "value": ["FR", "DE", "US"][i % 3]},
                    {"name": "level", "value": i % 7},
                    {"name": "regions", "value": ["emea", "north"] if i % 2 else ["amer"]},
                ],
                "groups": ["analysts", "emea"],
                "securityContext": {"tenantId": user % 50},
            }
            return "POST", "/api/v1/embed/generate-session", api_key, json_body(body)

        def noop(_i: int) -> tuple[str, str, dict, bytes]:
            return "GET", "/api/v1/api-keys/current", api_key, b""

        def steady_request(i: int) -> tuple[str, str, dict, bytes]:
            return session_request(i, prefix="steady", modulo=args.users)

        # Warm up connections, caches and the database.
        run_load("warm-up", port=args.port, clients=args.clients, total=500, make=noop)
        run_load(
            "warm-up",
            port=args.port,
            clients=args.clients,
            total=args.users,
            make=steady_request,
        )

        # Closed loop with wrk (C): the Python load generator would need a core of its own at the no-op's rate.
        def template(prefix: str) -> str:
            body = json.loads(session_request(0, prefix=prefix, modulo=None)[3])
            body["externalId"] = f"{prefix}-{{N}}@example.com"
            return json.dumps(body)

        closed = {"port": args.port, "clients": args.clients, "seconds": args.seconds, "headers": api_key}
        baseline = wrk_run("baseline: authenticated no-op", method="GET", path="/api/v1/api-keys/current", **closed)
        steady = wrk_run(
            "generate-session (existing users)",
            method="POST",
            path="/api/v1/embed/generate-session",
            body=template("steady"),
            value=f"tostring(n % {args.users})",
            **closed,
        )
        fresh = wrk_run(
            "generate-session (new users)",
            method="POST",
            path="/api/v1/embed/generate-session",
            body=template("fresh"),
            value="tostring(n)",
            **closed,
        )
        at_rate = {"clients": args.clients, "rate": args.rate, "total": args.rate_requests, "port": args.port}
        baseline_rate = run_rate(f"baseline at {args.rate:.0f}/s", make=noop, **at_rate)
        steady_rate = run_rate(
            f"existing users at {args.rate:.0f}/s",
            make=steady_request,
            **at_rate,
        )
        fresh_rate = run_rate(
            f"new users at {args.rate:.0f}/s",
            make=lambda i: session_request(i, prefix="later", modulo=None),
            **at_rate,
        )
    finally:
        server.stop()

    print(
        f"\ngenerate-session benchmark: {args.clients} clients, {args.workers} ASGI workers x {args.threads} threads,"
        f" PostgreSQL, {'Redis' if args.redis else 'local-memory'} cache"
    )
    p50, p99 = ("p50", lambda r: r.pct(0.5)), ("p99", lambda r: r.pct(0.99))
    _report(" closed loop (throughput):", baseline, (steady, fresh), [("throughput", lambda r: r.rate), p50])
    _report(
        f" open loop at {args.rate:.0f} requests/s over {args.clients} connections (latency at that load):",
        baseline_rate,
        (steady_rate, fresh_rate),
        [p50, p99],
    )
    throughput_ok = all(r.rate >= 300 for r in (steady, fresh))
    half_ok = all(r.rate >= baseline.rate / 2 for r in (steady, fresh))
    latency_ok = args.rate >= 300 and all(r.pct(0.99) <= 50 for r in (steady_rate, fresh_rate))
    errors_ok = all(r.errors == 0 for r in (steady, fresh, steady_rate, fresh_rate))
    print(
        f"  targets: >= 300 sessions/s (closed loop) {'met' if throughput_ok else 'NOT met'}; "
        f">= half the no-op's throughput {'met' if half_ok else 'NOT met'}; "
        f"p99 <= 50 ms at 300/s {'met' if latency_ok else 'NOT met'}; no errors {'met' if errors_ok else 'NOT met'}"
    )
    print(
        "  (closed-loop p99, for the record: "
        + ", ".join(f"{r.label} {r.pct(0.99):.1f} ms" for r in (steady, fresh))
        + ")"
    )
    print_steal([baseline, steady, fresh, baseline_rate, steady_rate, fresh_rate])
    if args.json:
        runs = {"baseline": baseline, "steady": steady, "fresh": fresh}
        runs |= {"baseline_rate": baseline_rate, "steady_rate": steady_rate, "fresh_rate": fresh_rate}
        print(json.dumps({name: result.as_dict() for name, result in runs.items()}))


def _report(title: str, baseline: RunResult, runs: tuple[RunResult, ...], ratios: list[tuple[str, Any]]) -> None:
    """A run's lines, then each run's ratios to the baseline."""
    print(title)
    for result in (baseline, *runs):
        print("  " + result.line())
    for result in runs:
        figures = ", ".join(f"{name} {figure(result) / figure(baseline):.2f}x" for name, figure in ratios)
        print(f"  ratio {result.label} / baseline: {figures}")


if __name__ == "__main__":
    main()
