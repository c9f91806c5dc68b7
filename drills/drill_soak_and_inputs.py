"""Soak and hostile inputs (issue 17). (a) A soak of distinct large queries against the 2-worker gunicorn: after a
warm-up that reaches every worker (by its CPU time), ``SOAK_QUERIES`` (5,000) ``/v1/load`` POSTs, each with several
hundred filter values that differ every time and one of 60 shapes (members, operators, number of values), on the
PostgreSQL tenant; each worker's RSS must grow by less than 50 MB. (b) Hostile inputs on generate-session,
``/v1/load`` (GET and POST) and the Platform API: 70,000 filter values, thousands of members, JSON nested 100,000
deep, a 20 MB body, a 100 KB request line and 100 KB of headers; every refusal must be a JSON 4xx (no 500, no plain
text), and the workers keep serving.

The web server runs with the product's worker class (``embedadmin.core.http_server.UvicornWorker``, as
``docker/Dockerfile`` does), which refuses oversized request heads with JSON."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from bench._harness import raw_request
from drills import _cluster
from drills._cluster import Cluster, ClusterFactory, Drill, LoadResult, load

BUDGET_SECONDS = 300
SOAK_QUERIES = 5_000
WARMUP_QUERIES = 600  # at least; then in batches of WARMUP_BATCH on new connections until every worker is warm
WARMUP_BATCH = 150
WARMUP_MAX_BATCHES = 20  # a stop-loss counted in progress (3,000 queries), not in seconds
WARMUP_CPU_SECONDS_PER_WORKER = 2.0
RSS_GROWTH_LIMIT_MB = 50
PRODUCT_WORKER = "embedadmin.core.http_server.UvicornWorker"

GENERATE = "/api/v1/embed/generate-session"
PLATFORM = "/api/v1/user-attributes"


def _product_worker(command: list[str]) -> list[str]:
    """The harness's gunicorn command with the product's worker class (what docker/Dockerfile runs)."""
    return [PRODUCT_WORKER if part == "uvicorn_worker.UvicornWorker" else part for part in command]


def soak_query(i: int) -> dict[str, Any]:
    """A large query, distinct for every ``i`` (its filter values), of one of 60 shapes."""
    dimensions = [["orders.status"], ["orders.size"], ["orders.status", "orders.size"], []][i % 4]
    count = 300 + i % 5
    return {
        "measures": [["orders.count"], ["orders.count", "orders.total_amount"], ["orders.total_amount"]][i % 3],
        "dimensions": dimensions,
        "filters": [
            {"member": "orders.status", "operator": "notEquals", "values": [f"s{i}-{k}" for k in range(count)]},
            {"member": "orders.amount", "operator": "gt", "values": [f"{i % 997}.5"]},
        ],
        "limit": 1000,
    }


def _head(method: str, path: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin1")


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def hostile_cases(c: Cluster) -> list[tuple[str, str, str, dict[str, str], bytes]]:
    """(label, method, path, headers, body) of every hostile input on every target."""
    tenant = c.tenants["postgres"]
    load_path = f"{tenant.core_base}/load"
    core = {**tenant.core_headers(), "Content-Type": "application/json"}
    key = {**tenant.api_key_headers, "Content-Type": "application/json"}
    platform = tenant.platform_headers
    many_values = {
        "measures": ["orders.count"],
        "filters": [{"member": "orders.status", "operator": "equals", "values": [f"v{k}" for k in range(70_000)]}],
    }
    many_members = {"measures": ["orders.count"] * 3_000, "dimensions": ["orders.status"] * 2_000}
    deep = _nested(100_000)
    huge = b'{"x": "' + b"a" * (20 * 1024 * 1024) + b'"}'
    long_query = "x=" + "a" * 100_000
    big_headers = {f"X-Filler-{k}": "h" * 1000 for k in range(100)}  # 100 KB of headers

    def get_query(query: Any) -> str:
        return f"{load_path}?query={quote(query if isinstance(query, str) else json.dumps(query))}"

    cases: list[tuple[str, str, str, dict[str, str], bytes]] = [
        ("load POST: 70,000 filter values", "POST", load_path, core, json.dumps({"query": many_values}).encode()),
        ("load GET: 70,000 filter values", "GET", get_query(many_values), core, b""),
        ("load POST: 5,000 members", "POST", load_path, core, json.dumps({"query": many_members}).encode()),
        ("load GET: 5,000 members", "GET", get_query(many_members), core, b""),
        ("load POST: JSON 100,000 deep", "POST", load_path, core, ('{"query": ' + deep + "}").encode()),
        ("load GET: JSON 100,000 deep", "GET", get_query(deep), core, b""),
        ("load GET: JSON 2,000 deep", "GET", get_query(_nested(2_000)), core, b""),
        ("generate-session: JSON 100,000 deep", "POST", GENERATE, key, deep.encode()),
        (
            "generate-session: securityContext 100,000 deep",
            "POST",
            GENERATE,
            key,
            ('{"deploymentId": 1, "externalId": "a", "securityContext": ' + deep + "}").encode(),
        ),
        ("platform: JSON 100,000 deep", "POST", PLATFORM, platform, ('{"name": ' + deep + "}").encode()),
        ("load POST: 20 MB body", "POST", load_path, core, huge),
        ("generate-session: 20 MB body", "POST", GENERATE, key, huge),
        ("platform: 20 MB body", "POST", PLATFORM, platform, huge),
    ]
    for label, method, path, headers in (
        ("load GET", "GET", load_path, core),
        ("load POST", "POST", load_path, core),
        ("generate-session", "POST", GENERATE, key),
        ("platform", "POST", PLATFORM, platform),
    ):
        body = b"{}" if method == "POST" else b""
        cases.append((f"{label}: 100 KB request line", method, f"{path}?{long_query}", headers, body))
        cases.append((f"{label}: 100 KB of headers", method, path, {**headers, **big_headers}, body))
    return cases


def run(cluster: ClusterFactory) -> Drill:
    drill = Drill("soak_and_inputs")
    original = _cluster.Cluster._gunicorn_command
    _cluster.Cluster._gunicorn_command = lambda self: _product_worker(original(self))  # type: ignore[method-assign]
    try:
        with cluster(postgres_data=True, celery=False, beat=False) as c:
            _soak(c, drill)
            _hostile(c, drill)
    finally:
        _cluster.Cluster._gunicorn_command = original  # type: ignore[method-assign]
    return drill


def _soak(c: Cluster, drill: Drill) -> None:
    tenant = c.tenants["postgres"]
    headers = {**tenant.core_headers(), "Content-Type": "application/json"}
    path = f"{tenant.core_base}/load"

    def request(i: int) -> tuple[str, str, dict[str, str], bytes]:
        return "POST", path, headers, json.dumps({"query": soak_query(i)}).encode()

    warm, warm_cpu = _warm_every_worker(c, request)
    before = {pid: kb / 1024 for pid, kb in c.worker_rss_kb().items()}
    started = time.monotonic()
    chunk = SOAK_QUERIES // 5
    failed, timings, steps = 0, [], []
    for part in range(5):  # in five parts, the RSS read after each: growth should flatten as the caches fill
        done = load(c, lambda i, part=part: request(part * chunk + i), chunk, concurrency=4, label=f"soak {part + 1}/5")
        failed += done.failed
        timings.append(done)
        steps.append(sorted(round(kb / 1024) for kb in c.worker_rss_kb().values()))
    after = {pid: kb / 1024 for pid, kb in c.worker_rss_kb().items()}
    growth = {pid: round(after[pid] - before[pid], 1) for pid in after if pid in before}
    drill.figures["soak"] = {
        "queries": SOAK_QUERIES,
        "warmup": warm.total,
        "warmup_cpu_s_per_worker": sorted(warm_cpu.values()),
        "seconds": round(time.monotonic() - started, 1),
        "failed": failed + warm.failed,
        "p50_ms": round(sorted(t.p(0.5) for t in timings)[2], 1),
        "p99_ms": round(max(t.p(0.99) for t in timings), 1),
        "rss_before_mb": sorted(round(v) for v in before.values()),
        "rss_after_mb": sorted(round(v) for v in after.values()),
        "rss_growth_mb": sorted(growth.values()),
        "rss_mb_after_each_fifth": steps,
    }
    drill.expect(f"every soak query answers 200 ({failed + warm.failed} failed)", failed + warm.failed == 0)
    drill.expect(f"the same workers served the whole soak ({len(growth)} of {len(after)})", len(growth) == len(after))
    worst = max(growth.values(), default=0.0)
    drill.expect(
        f"each worker's RSS grew under {RSS_GROWTH_LIMIT_MB} MB over {SOAK_QUERIES} distinct queries "
        f"(at most {worst} MB)",
        bool(growth) and worst < RSS_GROWTH_LIMIT_MB,
    )


def _warm_every_worker(
    c: Cluster, request: Callable[[int], tuple[str, str, dict[str, str], bytes]]
) -> tuple[LoadResult, dict[int, float]]:
    """Warm-up in batches until every worker has served its share: which worker accepts a connection is the
    kernel's choice, and one worker can take nearly all of a batch, leaving the other cold (its caches filling
    during the soak would then read as growth). Each worker's CPU time shows how much of the warm-up it served."""
    start = c.worker_cpu_seconds()
    batches: list[LoadResult] = []
    used: dict[int, float] = {}
    while len(batches) < WARMUP_MAX_BATCHES:
        offset = 1_000_000 + sum(b.total for b in batches)
        batches.append(
            load(c, lambda i, offset=offset: request(offset + i), WARMUP_BATCH, concurrency=4, label="warm-up")
        )
        now = c.worker_cpu_seconds()
        used = {pid: round(now[pid] - start.get(pid, 0.0), 2) for pid in now}
        warm = used and min(used.values()) >= WARMUP_CPU_SECONDS_PER_WORKER
        if warm and sum(b.total for b in batches) >= WARMUP_QUERIES:
            break
    return LoadResult.merge(batches), used


def _hostile(c: Cluster, drill: Drill) -> None:
    answers: dict[str, str] = {}
    bad: list[str] = []
    for label, method, path, headers, body in hostile_cases(c):
        started = time.perf_counter()
        status, answer_headers, payload = raw_request(c.port, _head(method, path, headers, body), body)
        try:
            error = json.loads(payload).get("error") if payload else None
        except ValueError:
            error = None
        is_json = answer_headers.get("content-type", "").startswith("application/json") and error is not None
        answers[label] = (
            f"{status} {(error or payload[:60].decode('latin1'))[:90]} ({time.perf_counter() - started:.2f} s)"
        )
        if not (400 <= status < 500 and is_json):
            bad.append(f"{label}: {status} {payload[:80]!r}")
    drill.figures["hostile"] = answers
    drill.expect(f"every hostile input is refused with a JSON 4xx ({len(bad)} not: {bad[:3]})", not bad)
    alive = c.request("GET", "/livez")
    after = load(c, "load", 50, concurrency=4, tenant="postgres", label="after hostile inputs")
    drill.expect(
        f"the workers keep serving afterwards (/livez {alive.status}, {after.failed} of 50 queries failed)",
        alive.status == 200 and after.failed == 0,
    )
