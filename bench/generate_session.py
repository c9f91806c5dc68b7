"""Benchmark: POST /api/v1/embed/generate-session on the ASGI server over PostgreSQL.

Each request upserts an external user with 3 typed attributes and 2 groups and stores a session.
The baseline, measured in the same run and server, is GET /api/v1/api-keys/current: an
authenticated request that does no work beyond the API-key lookup.

    make bench            # or: .venv/bin/python bench/generate_session.py [--clients 16] [--requests 6000]

Targets (issue 2, 2-core machine): >= 300 sessions/s and p99 <= 50 ms at 16 concurrent clients.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import bench_database_url, json_body, manage, run_load, server_env, start_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--users", type=int, default=2000, help="distinct external users in the steady-state phase")
    parser.add_argument("--workers", type=int, default=4, help="ASGI worker processes")
    parser.add_argument("--threads", type=int, default=2, help="request threads per process (WEB_THREADS)")
    parser.add_argument("--port", type=int, default=4099)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object at the end")
    args = parser.parse_args()

    env = server_env(bench_database_url(), WEB_THREADS=str(args.threads))
    manage(env, "migrate", "--noinput", "-v0")
    created = json.loads(manage(env, "create_account", "bench", "--json"))
    platform = {"Authorization": f"Bearer {created['platformToken']}", "Content-Type": "application/json"}
    api_key = {"Authorization": f"Api-Key {created['apiKey']}", "Content-Type": "application/json"}

    server = start_server(env, port=args.port, workers=args.workers)
    try:
        # Catalog: 3 typed attributes and 2 groups, created through the Platform API.
        setup = [
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
                expect=201,
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

        # Warm up connections, caches and the database.
        run_load("warm-up", port=args.port, clients=args.clients, total=500, make=noop)
        run_load(
            "warm-up",
            port=args.port,
            clients=args.clients,
            total=args.users,
            make=lambda i: session_request(i, prefix="steady", modulo=args.users),
        )

        baseline = run_load(
            "baseline: authenticated no-op", port=args.port, clients=args.clients, total=args.requests, make=noop
        )
        steady = run_load(
            "generate-session (existing users)",
            port=args.port,
            clients=args.clients,
            total=args.requests,
            make=lambda i: session_request(i, prefix="steady", modulo=args.users),
        )
        fresh = run_load(
            "generate-session (new users)",
            port=args.port,
            clients=args.clients,
            total=min(args.requests, 4000),
            make=lambda i: session_request(i, prefix="fresh", modulo=None),
        )
    finally:
        server.stop()

    print(
        f"\ngenerate-session benchmark: {args.clients} clients, {args.workers} ASGI workers x {args.threads} threads,"
        " PostgreSQL"
    )
    for result in (baseline, steady, fresh):
        print("  " + result.line())
    for result in (steady, fresh):
        print(
            f"  ratio {result.label} / baseline: throughput {result.rate / baseline.rate:.2f}x, "
            f"p50 {result.pct(0.5) / baseline.pct(0.5):.2f}x"
        )
    ok = all(r.rate >= 300 and r.pct(0.99) <= 50 and r.errors == 0 for r in (steady, fresh))
    print(f"  target (>= 300 sessions/s, p99 <= 50 ms, no errors): {'met' if ok else 'NOT met'}")
    if args.json:
        print(json.dumps({"baseline": baseline.as_dict(), "steady": steady.as_dict(), "fresh": fresh.as_dict()}))


if __name__ == "__main__":
    main()
