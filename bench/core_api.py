"""Benchmark: the Core Data API beside Cube 1.7.43, on the same model, data and queries, in one run.

The demo dataset (100k orders) is generated into a DuckDB file; our server (gunicorn, one uvicorn worker, the
application database on PostgreSQL) and Cube (``../shared/cube-peer/``, installed once with its ``setup.sh``;
``bench/cube_peer.py`` starts it on a copy of the same file) serve the demo model. Every figure is a ratio to Cube
measured in the same run; the direct SQL (our compiled statement run on the DuckDB file in this process) is the
floor both stand on.

- miss: ``/v1/load`` with a new ``orders.amount`` threshold on every request (each request compiles and runs a
  query). Sequential and interleaved: step i sends the direct statement, our request on both URL forms
  (``/d/{id}/cubejs-api/v1`` and ``/cubejs-api/v1`` with ``DEFAULT_DEPLOYMENT_ID``) and Cube's, in an order that
  changes with i (each step follows each other equally often), so all meet the same phase of this noisy VM.
  Added latency = p50 minus the direct SQL's p50.
- hit: one query repeated (a cached result), interleaved the same way.
- meta: ``/v1/meta`` of the demo model; then, with Cube restarted on it, of a generated 200-cube model.
- throughput: closed loop at ``--clients`` clients with ``wrk`` (a C load generator, so that the client does not
  take the CPU the servers need), ours and Cube's alternating, misses and hits.

Each sequential measurement is repeated ``--repeats`` times; a ratio is printed as the median of the repetitions'
ratios with their range.

    .venv/bin/python bench/core_api.py [--orders 100000] [--requests 300] [--repeats 5] [--clients 16] [--json]

It needs the Cube peer (``../shared/cube-peer/setup.sh ../cube-peer-run``) and ``wrk``; ``make bench`` installs both.

Targets (issue 14), as ratios to Cube: a miss <= 0.5x and its added latency <= 0.5x Cube's; a hit <= 0.25x;
``/v1/meta`` <= 1.0x; throughput >= 3x Cube's on misses and >= 10x on hits, with one worker.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import duckdb
import jwt
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _harness import (
    ROOT,
    Connection,
    RunResult,
    StealMonitor,
    bench_database_url,
    json_body,
    manage,
    pct,
    print_steal,
    server_env,
    start_server,
    wrk_run,
)
from cube_peer import CubePeer, DuckDBSource, available

from demo.generate import generate

DEMO_MODEL = ROOT / "demo" / "model"
ADMIN = {"sub": "bench", "groups": ["admin"]}
Request = tuple[str, str, dict[str, str], bytes]
Target = tuple[int, Callable[[int], Request]]  # a port, and request i


def miss_query(value: int) -> dict[str, Any]:
    """A dashboard tile's query; a different amount threshold per request keeps every cache out."""
    threshold = f"{(value % 50_000) / 100:.2f}"
    return {
        "measures": ["orders.count", "orders.total_amount"],
        "dimensions": ["orders.status"],
        "filters": [{"member": "orders.amount", "operator": "gt", "values": [threshold]}],
    }


HIT_QUERY = {
    "measures": ["orders.count"],
    "dimensions": ["orders.status"],
    "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month", "dateRange": "last 12 months"}],
}


def write_wide_model(directory: Path, cubes: int = 200) -> None:
    """A model of ``cubes`` cubes (8 dimensions, 6 measures, a join each) over the demo's orders table."""
    (directory / "cubes").mkdir(parents=True)
    for n in range(cubes):
        join = (
            f'\n    joins:\n      - name: cube_{n - 1}\n        sql: "{{CUBE}}.id = {{cube_{n - 1}}}.id"\n'
            "        relationship: one_to_one\n"
            if n
            else "\n"
        )
        dims = "".join(
            f"      - name: dim_{k}\n        sql: status\n        type: string\n        title: Dimension {k}\n"
            for k in range(6)
        )
        (directory / "cubes" / f"cube_{n}.yml").write_text(
            f"cubes:\n  - name: cube_{n}\n    sql_table: orders\n    description: Generated cube {n}\n{join}"
            "    dimensions:\n"
            "      - name: id\n        sql: id\n        type: number\n        primary_key: true\n"
            "      - name: created_at\n        sql: created_at\n        type: time\n"
            f"{dims}"
            "    measures:\n"
            "      - name: count\n        type: count\n"
            "      - name: total\n        sql: amount\n        type: sum\n        format: currency\n"
            "      - name: average\n        sql: amount\n        type: avg\n"
            "      - name: biggest\n        sql: amount\n        type: max\n"
            "      - name: smallest\n        sql: amount\n        type: min\n"
            "      - name: buyers\n        sql: user_id\n        type: count_distinct\n"
        )


def balanced_orders(n: int) -> list[list[int]]:
    """Orders of ``n`` steps in which each step comes at each position, and right after each other step, equally
    often (a Williams design: ``n`` orders for an even ``n``, ``2n`` for an odd one)."""
    offsets = [0]
    for k in range(1, n):
        offsets.append((k + 1) // 2 if k % 2 else n - k // 2)
    orders = [[(row + offset) % n for offset in offsets] for row in range(n)]
    return orders if n % 2 == 0 else orders + [order[::-1] for order in orders]


def interleaved(
    label: str, count: int, targets: dict[str, Target], direct: tuple[Path, list[tuple[str, list[Any]]]] | None = None
) -> dict[str, list[float]]:
    """``count`` rounds, one request at a time: in round i, request i to each target (and the direct statement i
    when ``direct`` is given, as step ``"direct SQL"``) in a balanced order. Each step's latencies in ms."""
    steps: list[str] = [*targets, *(["direct SQL"] if direct else [])]
    latencies: dict[str, list[float]] = {step: [] for step in steps}
    orders = balanced_orders(len(steps))
    cursor = None
    if direct is not None:
        cursor = duckdb.connect(str(direct[0]), read_only=True)
        cursor.execute("SET TimeZone = 'UTC'")

    async def rounds() -> None:
        connections = {name: Connection(port) for name, (port, _make) in targets.items()}
        try:
            for i in range(count):
                for step in (steps[k] for k in orders[i % len(orders)]):
                    started = time.perf_counter()
                    if step == "direct SQL":
                        assert cursor is not None
                        assert direct is not None
                        cursor.execute(*direct[1][i])
                        cursor.fetchall()
                    else:
                        method, path, headers, body = targets[step][1](i)
                        status, answer = await connections[step].request(method, path, headers, body)
                        if status != 200 or answer.startswith(b'{"error"'):
                            raise SystemExit(f"{label}: {step} answered {status}: {answer[:300]!r}")
                    latencies[step].append((time.perf_counter() - started) * 1000)
        finally:
            for connection in connections.values():
                connection.close()

    uvloop.run(rounds())
    if cursor is not None:
        cursor.close()
    return latencies


def http(port: int, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=body or None, method=method, headers=headers
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}x [{min(values):.2f}-{max(values):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=300, help="requests per target in each repetition")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--clients", type=int, default=16, help="clients in the throughput runs")
    parser.add_argument("--throughput-seconds", type=float, default=6.0, help="length of each closed-loop run")
    parser.add_argument("--port", type=int, default=4098)
    parser.add_argument("--cube-port", type=int, default=4100)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object at the end")
    args = parser.parse_args()
    ok, reason = available()
    if not ok:
        raise SystemExit(reason)

    scratch = Path(tempfile.mkdtemp(prefix="bench-core-api-"))
    dataset = scratch / "demo.duckdb"
    generate(dataset, orders=args.orders)
    wide_model = scratch / "wide-model"
    write_wide_model(wide_model)

    env = server_env(bench_database_url("embedadmin_bench_core"), CONTINUE_WAIT_SECONDS="30")
    manage(env, "migrate", "--noinput", "-v0")
    shop = json.loads(manage(env, "create_account", "bench-shop", "--json"))
    wide = json.loads(manage(env, "create_account", "bench-wide", "--json"))
    source = f"duckdb:///{dataset}"
    for created, model in ((shop, DEMO_MODEL), (wide, wide_model)):
        manage(
            env,
            "configure_deployment",
            str(created["deploymentId"]),
            "--model-dir",
            str(model),
            "--data-source",
            source,
        )
    env["DEFAULT_DEPLOYMENT_ID"] = str(shop["deploymentId"])

    def our_token(secret: str) -> str:
        now = int(time.time())
        return jwt.encode({**ADMIN, "iat": now, "exp": now + 7200}, secret, algorithm="HS256")

    forms = {"ours /d/{id}": f"/d/{shop['deploymentId']}/cubejs-api/v1", "ours /cubejs-api": "/cubejs-api/v1"}
    ours_auth = {"Authorization": our_token(shop["deploymentApiSecret"]), "Content-Type": "application/json"}
    wide_auth = {"Authorization": our_token(wide["deploymentApiSecret"])}

    def load(base: str, auth: dict[str, str], query: dict[str, Any]) -> Request:
        return "POST", f"{base}/load", auth, json_body({"query": query, "queryType": "multi"})

    figures: dict[str, Any] = {"repeats": args.repeats, "requests": args.requests}
    runs: list[RunResult] = []
    server = start_server(env, port=args.port, workers=1)
    cube = CubePeer(
        model_dir=DEMO_MODEL, source=DuckDBSource(dataset), port=args.cube_port, env={"CUBEJS_CONCURRENCY": "8"}
    )
    try:
        cube.start()
        cube_auth = {"Authorization": cube.token(ADMIN), "Content-Type": "application/json"}
        targets_of: dict[str, tuple[int, str, dict[str, str]]] = {
            name: (args.port, base, ours_auth) for name, base in forms.items()
        }
        targets_of["Cube"] = (args.cube_port, "/cubejs-api/v1", cube_auth)
        stride = len(targets_of) + 1  # one slot per target, and one for the direct statements

        # The same numbers from both, or nothing here means anything.
        ours = http(args.port, *load(forms["ours /d/{id}"], ours_auth, miss_query(6_500)))
        theirs = http(args.cube_port, *load("/cubejs-api/v1", cube_auth, miss_query(6_500)))
        agree = sorted(map(json.dumps, ours["results"][0]["data"])) == sorted(
            map(json.dumps, theirs["results"][0]["data"])
        )
        print(f"answers agree: {agree}")
        if not agree:
            raise SystemExit(f"ours {ours['results'][0]['data']} != Cube's {theirs['results'][0]['data']}")

        def miss_targets(first: int) -> dict[str, Target]:
            """Request i of slot s asks threshold first + i * stride + s: no two requests share a query."""
            return {
                name: (port, lambda i, b=base, a=auth, s=slot: load(b, a, miss_query(first + i * stride + s)))
                for slot, (name, (port, base, auth)) in enumerate(targets_of.items())
            }

        def statements(first: int, count: int) -> list[tuple[str, list[Any]]]:
            """The direct baseline: our SQL (from /v1/sql) of the last slot's thresholds, which no request asks, so
            that compiling them here favours none of the requests."""
            out = []
            for i in range(count):
                query = json.dumps(miss_query(first + i * stride + stride - 1))
                body = http(args.port, "GET", f"{forms['ours /d/{id}']}/sql?" + urlencode({"query": query}), ours_auth)
                sql, params = body["sql"]["sql"]
                out.append((sql, params))
            return out

        fixed = {
            name: (port, lambda _i, b=base, a=auth: load(b, a, HIT_QUERY))
            for name, (port, base, auth) in targets_of.items()
        }
        metas = {
            name: (port, lambda _i, b=base, a=auth: ("GET", f"{b}/meta", a, b""))
            for name, (port, base, auth) in targets_of.items()
        }
        interleaved("warm-up", 100, miss_targets(6_000))
        interleaved("warm-up", 50, fixed)
        interleaved("warm-up", 50, metas)

        sequential: dict[str, dict[str, list[float]]] = {"miss": {}, "hit": {}, "meta": {}}
        with StealMonitor() as steal:
            for repeat in range(args.repeats):
                first = repeat * args.requests * stride
                for kind, targets, direct in (
                    ("miss", miss_targets(first), (dataset, statements(first, args.requests))),
                    ("hit", fixed, None),
                    ("meta", metas, None),
                ):
                    latencies = interleaved(kind, args.requests, targets, direct)
                    for step, values in latencies.items():
                        sequential[kind].setdefault(step, []).append(pct(values, 0.5))
        figures["sequential_p50_ms"] = sequential
        figures["sequential_steal_pct"] = round(steal.mean * 100, 1)

        # Closed loop with wrk (C): the Python load generator would need a core of its own at these rates.
        throughput: dict[str, dict[str, list[float]]] = {"miss": {}, "hit": {}}
        miss_template = json.dumps(
            {
                "query": {**miss_query(0), "filters": [{**miss_query(0)["filters"][0], "values": ["{N}"]}]},
                "queryType": "multi",
            }
        )
        hit_body = json.dumps({"query": HIT_QUERY, "queryType": "multi"})
        runs_done = 0
        for kind in ("miss", "hit"):
            for repeat in range(3):
                for name in (*forms, "Cube"):
                    port, base, auth = targets_of[name]
                    # Thresholds no other request asks: the sequential runs take 0-6,000, the warm-up 6,000-6,400.
                    first = 7_000 + runs_done * 4_700
                    runs_done += 1
                    result = wrk_run(
                        f"{name} {kind} {args.clients} clients #{repeat + 1}",
                        port=port,
                        method="POST",
                        path=f"{base}/load",
                        headers=auth,
                        body=miss_template if kind == "miss" else hit_body,
                        first=first,
                        clients=args.clients,
                        seconds=args.throughput_seconds,
                    )
                    runs.append(result)
                    if result.errors:
                        raise SystemExit(f"{result.label}: {result.errors} errors")
                    if kind == "miss" and result.requests > 4_700:
                        raise SystemExit(f"{result.label}: more than 4,700 requests would repeat thresholds")
                    throughput[kind].setdefault(name, []).append(result.rate)
        figures["throughput_rps"] = throughput
        cube.stop()

        # /v1/meta of a 200-cube model: Cube restarted on it.
        # A port of its own: the first peer's port may still be held a moment after it stopped.
        cube = CubePeer(model_dir=wide_model, source=DuckDBSource(dataset), port=args.cube_port + 1)
        cube.start()
        wide_cube_auth = {"Authorization": cube.token(ADMIN)}
        wide_targets: dict[str, Target] = {
            "ours /d/{id}": (
                args.port,
                lambda _i: ("GET", f"/d/{wide['deploymentId']}/cubejs-api/v1/meta", wide_auth, b""),
            ),
            "Cube": (
                cube.port,
                lambda _i: ("GET", "/cubejs-api/v1/meta", wide_cube_auth, b""),
            ),
        }
        interleaved("warm-up", 20, wide_targets)
        wide_meta: dict[str, list[float]] = {}
        for _ in range(args.repeats):
            for step, values in interleaved("meta 200 cubes", max(30, args.requests // 5), wide_targets).items():
                wide_meta.setdefault(step, []).append(pct(values, 0.5))
        figures["meta_200_cubes_p50_ms"] = wide_meta
    finally:
        cube.stop()
        server.stop()

    report(figures, sequential, throughput, wide_meta, args)
    print_steal(runs, indent="  ")
    if args.json:
        print(json.dumps(figures))


def report(
    figures: dict[str, Any],
    sequential: dict[str, dict[str, list[float]]],
    throughput: dict[str, dict[str, list[float]]],
    wide_meta: dict[str, list[float]],
    args: argparse.Namespace,
) -> None:
    """Each figure, then each ratio to Cube: the median of the repetitions' ratios and their range."""
    print(
        f"\nCore Data API beside Cube 1.7.43: {args.orders} orders (DuckDB), one worker each; {args.repeats} "
        f"repetitions of {args.requests} sequential requests per target (steal {figures['sequential_steal_pct']}%)"
    )
    ours = [name for name in sequential["miss"] if name.startswith("ours")]
    for kind in ("miss", "hit", "meta"):
        line = ", ".join(f"{name} {statistics.median(v):.2f} ms" for name, v in sequential[kind].items())
        print(f"  {kind:<5} p50 (median of repetitions): {line}")
    print("  meta 200 cubes p50: " + ", ".join(f"{n} {statistics.median(v):.2f} ms" for n, v in wide_meta.items()))
    for kind in ("miss", "hit"):
        line = ", ".join(f"{name} {statistics.median(v):.0f}" for name, v in throughput[kind].items())
        print(f"  {kind:<5} throughput, {args.clients} clients (req/s, median of 3): {line}")

    def ratios(kind: str, name: str) -> list[float]:
        return [a / b for a, b in zip(sequential[kind][name], sequential[kind]["Cube"], strict=True)]

    def added(name: str) -> list[float]:
        miss, direct = sequential["miss"], sequential["miss"]["direct SQL"]
        return [(a - d) / (c - d) for a, c, d in zip(miss[name], miss["Cube"], direct, strict=True)]

    checks: list[tuple[str, list[float], str, float]] = []
    for name in ours:
        checks += [
            (f"miss, {name}", ratios("miss", name), "<=", 0.5),
            (f"miss added latency over the direct SQL, {name}", added(name), "<=", 0.5),
            (f"hit, {name}", ratios("hit", name), "<=", 0.25),
            (f"meta (demo model), {name}", ratios("meta", name), "<=", 1.0),
        ]
    checks.append(
        (
            "meta (200 cubes), ours /d/{id}",
            [a / b for a, b in zip(wide_meta["ours /d/{id}"], wide_meta["Cube"], strict=True)],
            "<=",
            1.0,
        )
    )
    for kind, target in (("misses", 3.0), ("hits", 10.0)):
        for name in ours:
            values = [
                a / b
                for a, b in zip(
                    throughput[kind[:-2] if kind == "misses" else "hit"][name],
                    throughput[kind[:-2] if kind == "misses" else "hit"]["Cube"],
                    strict=True,
                )
            ]
            checks.append((f"throughput {kind}, {args.clients} clients, {name}", values, ">=", target))
    print("  ratios to Cube (median [range] over repetitions) against the targets:")
    figures["ratios"] = {}
    for label, values, sense, target in checks:
        median = statistics.median(values)
        met = median <= target if sense == "<=" else median >= target
        figures["ratios"][label] = {
            "median": round(median, 3),
            "min": round(min(values), 3),
            "max": round(max(values), 3),
            "target": f"{sense} {target}",
            "met": met,
        }
        print(f"    {label:<62} {spread(values):<22} target {sense} {target:<5} {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
