"""Benchmark: Platform API lists at 10,000 rows, and SCIM user provisioning (issue 18).

One account on a fresh PostgreSQL bench database, 2 web processes (gunicorn with uvicorn workers) sharing Redis.

Lists: 10,000 rows of each of four resources are seeded in bulk by a Django script (``manage shell -c``; no
management command): external users of one embed tenant, tenant-wide user attribute definitions, workbooks of the
deployment, and audit log entries (``GET /api/v1/audit-log``, newest first). The account's ``external_user_count``
is raised by the number inserted, as the product's upsert would have. For each list, the first page (``first=50``)
and a deep page (page ``--deep``, reached by following ``after`` cursors) are read through HTTP with a platform
token, one request at a time after a warm-up, interleaved with the same statements run directly with psycopg on the
bench database. The direct statements are the ones the view's own code issues for that page (captured by the seed
script running the selector and ``core.pagination.paginate`` under ``CaptureQueriesContext``: the keyset page query
and, where the list answers a ``count``, the count), so the ratio HTTP / direct is what the web tier
(authentication, the request cycle, serialization) adds to the list's data work.

SCIM: ``--scim-users`` users created (``POST /api/scim/v2/Users``) then deactivated (``PATCH`` ``active: false``)
by ``--clients`` concurrent keep-alive clients, on a second account with 3 tenant-wide attribute definitions; then
``--scim-users-seeded`` more on the seeded account, whose 10,000 definitions every SCIM request reads to build its
User schema. Rates and p50/p90 latencies, against the closed-loop rate of the no-op ``GET /livez`` over the same
number of clients in the same run.

    .venv/bin/python bench/platform_api.py    # [--rounds 200] [--deep 100] [--scim-users 1000] [--clients 4] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

import psycopg
import uvloop
from _harness import (
    Connection,
    StealMonitor,
    bench_database_url,
    json_body,
    manage,
    pct,
    run_load,
    server_env,
    start_server,
)

# Run by ``manage shell -c`` with the bench env; its parameters come in BENCH_SEED (JSON), its answer is the line
# after the SEED marker.
SEED_SCRIPT = r"""
import json, os
from django.db import connection, transaction
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from embedadmin.accounts.models import Deployment, TenantSettings
from embedadmin.audit import selectors as audit_selectors
from embedadmin.audit.models import AuditEntry
from embedadmin.core.pagination import paginate
from embedadmin.dashboards import selectors as dashboard_selectors
from embedadmin.dashboards.models import Workbook
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory.models import AttributeDefinition, EmbedTenant, ExternalUser

p = json.loads(os.environ["BENCH_SEED"])
n, deep, tenant_name = p["rows"], p["deep"], p["tenant"]
deployment = Deployment.objects.select_related("account").get(pk=p["deploymentId"])
account = deployment.account
with transaction.atomic():
    tenant = EmbedTenant.objects.create(account=account, name=tenant_name)
    ExternalUser.objects.bulk_create(
        [ExternalUser(account=account, embed_tenant=tenant, external_id=f"user-{i:05d}@example.com",
                      email=f"user-{i:05d}@example.com", display_name=f"User {i}") for i in range(n)],
        batch_size=2000,
    )
    # What the product's upsert keeps: the account's count of external users (and a cap above it).
    TenantSettings.objects.filter(account=account).update(
        external_user_count=F("external_user_count") + n, max_external_users=1_000_000
    )
    AttributeDefinition.objects.bulk_create(
        [AttributeDefinition(account=account, embed_tenant=None, name=f"attr_{i:05d}",
                             type=("string", "number", "string_array")[i % 3]) for i in range(n)],
        batch_size=2000,
    )
    Workbook.objects.bulk_create(
        [Workbook(account=account, deployment=deployment, name=f"Workbook {i}", meta={"i": i}) for i in range(n)],
        batch_size=2000,
    )
    AuditEntry.objects.bulk_create(
        [AuditEntry(account=account, actor_kind="platform_token", actor_id="1", actor_label="bench (abcd…)",
                    via="platform_api", action=("deployment.update", "api_key.create", "scim_user.update")[i % 3],
                    resource_type=("deployment", "api_key", "scim_user")[i % 3], resource_id=str(i),
                    details={"status": 200, "fields": ["name"]}, ip="203.0.113.7", user_agent="bench")
         for i in range(n)],
        batch_size=2000,
    )
connection.cursor().execute("ANALYZE")

def users():
    qs = directory_selectors.embed_tenant_users(account=account, embed_tenant=tenant)
    return qs, dict(order=("external_id", "id"), types=(str, int)), False

def attributes():
    qs = directory_selectors.attribute_definitions_filtered(account=account, name=None, attribute_type=None)
    return qs, dict(order=("name", "id"), types=(str, int)), True

def workbooks():
    qs = dashboard_selectors.workbooks_of(deployment=deployment, folder_id=None, in_root=False)
    return qs, {}, True

def audit_log():
    qs = audit_selectors.entries_of(account=account, filters=audit_selectors.EntryFilters())
    return qs, dict(descending=True), False

def page_sql(make, params):
    qs, order, counted = make()
    with CaptureQueriesContext(connection) as captured:
        page = paginate(qs, params=params, **order)
        if make is workbooks:
            dashboard_selectors.published_of_many(
                dashboards=[wb.dashboard for wb in page.items if getattr(wb, "dashboard", None) is not None])
        if counted:
            qs.count()
    return page, [q["sql"] for q in captured.captured_queries]

lists = {}
for key, make in (("users", users), ("attributes", attributes), ("workbooks", workbooks), ("audit_log", audit_log)):
    params = {"first": "50"}
    first_page, first_sql = page_sql(make, params)
    page = first_page
    for _ in range(deep - 2):
        params = {"first": "50", "after": page.end_cursor}
        page, _sql = page_sql(make, params)
    after = page.end_cursor
    deep_page, deep_sql = page_sql(make, {"first": "50", "after": after})
    lists[key] = {"first_sql": first_sql, "deep_sql": deep_sql, "deep_after": after,
                  "deep_first_item": deep_page.items[0].pk, "deep_items": len(deep_page.items)}
print("SEED")
print(json.dumps({"accountId": account.pk, "lists": lists}))
"""


async def _timed(conn: Connection, path: str, headers: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    status, body = await conn.request("GET", path, headers)
    elapsed = (time.perf_counter() - started) * 1000
    if status != 200:
        raise SystemExit(f"GET {path}: {status} {body[:300]!r}")
    return elapsed, body


def _direct(db: psycopg.Connection, statements: list[str]) -> float:
    started = time.perf_counter()
    for sql in statements:
        db.execute(sql).fetchall()
    return (time.perf_counter() - started) * 1000


async def measure_lists(
    port: int, headers: dict[str, str], db: psycopg.Connection, cases: list[dict[str, Any]], rounds: int, warm: int
) -> None:
    """Sequential: each round sends every case's HTTP request and runs its direct statements, in an order that
    alternates with the round (HTTP first on even rounds, direct first on odd) so neither always follows the other."""
    conn = Connection(port)
    try:
        for i in range(warm + rounds):
            for case in cases:
                if i % 2 == 0:
                    http, body = await _timed(conn, case["path"], headers)
                    direct = _direct(db, case["sql"])
                else:
                    direct = _direct(db, case["sql"])
                    http, body = await _timed(conn, case["path"], headers)
                if i == 0:
                    items = json.loads(body)["items"]
                    if len(items) != 50 or (case["check_id"] is not None and int(items[0]["id"]) != case["check_id"]):
                        raise SystemExit(f"{case['label']}: unexpected page ({len(items)} items)")
                    case["bytes"] = len(body)
                if i >= warm:
                    case["http"].append(http)
                    case["direct"].append(direct)
    finally:
        conn.close()


async def scim_phase(
    port: int, headers: dict[str, str], clients: int, make: Any, total: int, expect: int
) -> tuple[float, list[float], list[Any], int]:
    """Closed loop over ``clients`` keep-alive connections; returns seconds, latencies (ms), the answers' ids and
    the number of unexpected statuses."""
    counter = iter(range(total))
    latencies: list[float] = []
    ids: list[Any] = [None] * total
    errors = 0

    async def client() -> None:
        nonlocal errors
        conn = Connection(port)
        try:
            for i in counter:
                method, path, body = make(i)
                started = time.perf_counter()
                status, answer = await conn.request(method, path, headers, body)
                latencies.append((time.perf_counter() - started) * 1000)
                if status != expect:
                    errors += 1
                    if errors <= 3:
                        print(f"  {method} {path}: {status} {answer[:200]!r}", file=sys.stderr)
                    continue
                ids[i] = json.loads(answer)["id"]
        finally:
            conn.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return time.perf_counter() - started, latencies, ids, errors


def scim_runs(port: int, headers: dict[str, str], clients: int, count: int, prefix: str) -> list[tuple]:
    """Create ``count`` users, then deactivate them: (label, requests, seconds, latencies, errors) of each."""

    def create(i: int) -> tuple[str, str, bytes]:
        body = {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "userName": f"{prefix}-{i:05d}@example.com",
            "name": {"givenName": "Scim", "familyName": f"User {i}"},
            "emails": [{"value": f"{prefix}-{i:05d}@example.com", "primary": True, "type": "work"}],
            "active": True,
        }
        return "POST", "/api/scim/v2/Users", json_body(body)

    c_s, c_lat, ids, c_err = uvloop.run(scim_phase(port, headers, clients, create, count, 201))
    live = [i for i in ids if i is not None]

    def deactivate(i: int) -> tuple[str, str, bytes]:
        body = {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "replace", "path": "active", "value": False}],
        }
        return "PATCH", f"/api/scim/v2/Users/{live[i]}", json_body(body)

    d_s, d_lat, _ids, d_err = uvloop.run(scim_phase(port, headers, clients, deactivate, len(live), 200))
    return [
        ("create POST /Users", count, c_s, c_lat, c_err),
        ("deactivate PATCH active false", len(live), d_s, d_lat, d_err),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000, help="rows seeded per list")
    parser.add_argument("--deep", type=int, default=100, help="the deep page's number (first=50 each)")
    parser.add_argument("--rounds", type=int, default=200, help="measured sequential rounds per list page")
    parser.add_argument("--warm", type=int, default=30, help="warm-up rounds")
    parser.add_argument("--scim-users", type=int, default=1000)
    parser.add_argument(
        "--scim-users-seeded", type=int, default=40, help="SCIM users on the seeded account (10,000 definitions)"
    )
    parser.add_argument("--clients", type=int, default=4, help="concurrent SCIM clients (and for the no-op)")
    parser.add_argument("--workers", type=int, default=2, help="ASGI worker processes")
    parser.add_argument("--threads", type=int, default=2, help="request threads per process (WEB_THREADS)")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/12", help="REDIS_URL ('' for local memory)")
    parser.add_argument("--port", type=int, default=4097)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object at the end")
    args = parser.parse_args()
    if args.deep * 50 > args.rows:
        raise SystemExit("--deep * 50 must not exceed --rows")

    database_url = bench_database_url("embedadmin_bench_platform")
    env = server_env(database_url, WEB_THREADS=str(args.threads), REDIS_URL=args.redis)
    manage(env, "migrate", "--noinput", "-v0")
    created = json.loads(manage(env, "create_account", "bench", "--json"))
    tenant = "bench-tenant"
    started = time.perf_counter()
    seed_env = dict(env, BENCH_SEED=json.dumps({**created, "rows": args.rows, "deep": args.deep, "tenant": tenant}))
    seed = json.loads(manage(seed_env, "shell", "-c", SEED_SCRIPT).split("SEED\n", 1)[1])
    seed_seconds = time.perf_counter() - started
    print(f"seeded 4 x {args.rows:,} rows in {seed_seconds:.1f} s")

    platform = {"Authorization": f"Bearer {created['platformToken']}"}
    scim_headers = {**platform, "Content-Type": "application/scim+json"}
    paths = {
        "users": f"/api/v1/embed-tenants/{tenant}/users",
        "attributes": "/api/v1/user-attributes",
        "workbooks": f"/api/v1/deployments/{created['deploymentId']}/workbooks",
        "audit_log": "/api/v1/audit-log",
    }
    cases: list[dict[str, Any]] = []
    for key, path in paths.items():
        data = seed["lists"][key]
        for page, sql, query, check in (
            ("first", data["first_sql"], "?first=50", None),
            (f"page {args.deep}", data["deep_sql"], f"?first=50&after={data['deep_after']}", data["deep_first_item"]),
        ):
            cases.append(
                {
                    "label": f"{key} {page}",
                    "path": path + query,
                    "sql": sql,
                    "check_id": check,
                    "http": [],
                    "direct": [],
                }
            )

    server = start_server(env, port=args.port, workers=args.workers)
    report: dict[str, Any] = {"rows": args.rows, "deep_page": args.deep, "seed_seconds": round(seed_seconds, 1)}
    try:
        with psycopg.connect(database_url) as db, StealMonitor() as list_steal:
            db.autocommit = True
            uvloop.run(measure_lists(args.port, platform, db, cases, args.rounds, args.warm))
        print(f"\nLists at {args.rows:,} rows, first=50, {args.rounds} sequential rounds (ms; ratio = HTTP / direct):")
        print(f"  {'list, page':<22} {'HTTP p50':>9} {'p90':>7} {'direct p50':>11} {'p90':>7} {'ratio p50':>10}  stmts")
        report["lists"] = []
        for case in cases:
            h50, h90 = pct(case["http"], 0.5), pct(case["http"], 0.9)
            d50, d90 = pct(case["direct"], 0.5), pct(case["direct"], 0.9)
            print(
                f"  {case['label']:<22} {h50:9.2f} {h90:7.2f} {d50:11.2f} {d90:7.2f} {h50 / d50:9.1f}x"
                f"  {len(case['sql'])}"
            )
            report["lists"].append(
                {
                    "list": case["label"],
                    "http_p50_ms": round(h50, 2),
                    "http_p90_ms": round(h90, 2),
                    "direct_p50_ms": round(d50, 2),
                    "direct_p90_ms": round(d90, 2),
                    "ratio_p50": round(h50 / d50, 1),
                    "added_p50_ms": round(h50 - d50, 2),
                    "statements": len(case["sql"]),
                    "bytes": case.get("bytes"),
                }
            )
        print(f"  steal {list_steal.mean * 100:.0f}% (peak {list_steal.peak * 100:.0f}%)")

        # SCIM: baseline first, then create, then deactivate.
        run_load("warm-up", port=args.port, clients=args.clients, total=500, make=lambda _i: ("GET", "/livez", {}, b""))
        noop = run_load(
            "no-op GET /livez",
            port=args.port,
            clients=args.clients,
            total=3000,
            make=lambda _i: ("GET", "/livez", {}, b""),
        )

        # SCIM on a second account of the same database with 3 attribute definitions (the clean case), then on the
        # seeded account, whose 10,000 tenant-wide definitions every SCIM request reads and builds its schema from.
        clean = json.loads(manage(env, "create_account", "bench-scim", "--json"))
        clean_headers = {"Authorization": f"Bearer {clean['platformToken']}", "Content-Type": "application/scim+json"}
        for name, kind in (("country", "string"), ("level", "number"), ("regions", "string_array")):
            setup = run_load(
                "setup",
                port=args.port,
                clients=1,
                total=1,
                make=lambda _i, n=name, k=kind: (
                    "POST",
                    "/api/v1/user-attributes",
                    {**clean_headers, "Content-Type": "application/json"},
                    json_body({"name": n, "type": k}),
                ),
                expect=201,
            )
            if setup.errors:
                raise SystemExit("attribute definition setup failed")
        print(f"\nSCIM, {args.clients} concurrent clients (closed loop; ratio = rate / the no-op's rate):")
        line = (
            f"  {'no-op GET /livez':<48} {noop.rate:8.1f}/s   p50 {noop.pct(0.5):8.2f} ms   p90 {noop.pct(0.9):8.2f} ms"
        )
        print(line)
        report["scim"] = [
            {
                "run": "no-op GET /livez",
                "requests": noop.requests,
                "rate_per_s": round(noop.rate, 1),
                "p50_ms": round(noop.pct(0.5), 2),
                "p90_ms": round(noop.pct(0.9), 2),
                "errors": noop.errors,
            }
        ]
        with StealMonitor() as scim_steal:
            for account_label, headers, count, prefix in (
                ("3 definitions", clean_headers, args.scim_users, "scim"),
                (f"{args.rows:,} definitions", scim_headers, args.scim_users_seeded, "seeded"),
            ):
                if count <= 0:
                    continue
                for run in scim_runs(args.port, headers, args.clients, count, prefix):
                    label, n, seconds, latencies, errors = run
                    rate = n / seconds
                    label = f"{label}, {account_label}"
                    print(
                        f"  {label:<48} {rate:8.1f}/s   p50 {pct(latencies, 0.5):8.2f} ms"
                        f"   p90 {pct(latencies, 0.9):8.2f} ms   {rate / noop.rate:6.4f}x   errors {errors}/{n}"
                    )
                    report["scim"].append(
                        {
                            "run": label,
                            "requests": n,
                            "rate_per_s": round(rate, 1),
                            "p50_ms": round(pct(latencies, 0.5), 2),
                            "p90_ms": round(pct(latencies, 0.9), 2),
                            "ratio_to_noop_rate": round(rate / noop.rate, 4),
                            "errors": errors,
                        }
                    )
        print(f"  steal {scim_steal.mean * 100:.0f}% (peak {scim_steal.peak * 100:.0f}%)")
        report["steal_pct"] = {"lists": round(list_steal.mean * 100, 1), "scim": round(scim_steal.mean * 100, 1)}
    finally:
        server.stop()
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
