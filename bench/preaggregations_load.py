"""Benchmark: concurrent viewers of the demo's six-tile dashboard, each with a filter value of its own, on our server
(two web workers) with rollup pre-aggregations and without, beside Cube 1.7.43 on the same model without
pre-aggregations, in one run.

The dataset is the single-viewer bench's (``bench/preaggregations.py``: ``demo/generate.py`` under
``var/bench/preaggregations/``, 10M orders by default), read in place (every reader opens it read-only; Cube reads
a copy, see ``bench/cube_peer.py``). One deployment (application database on PostgreSQL, result cache and query
jobs in Redis, as two web processes need them shared) serves that bench's model with its four rollups
(:func:`preaggregations.model_with_rollups`), built through the services the Celery tasks call
(:func:`preaggregations.build`). Three servers then run side by side on the same data:

- ``with rollups``: gunicorn, two uvicorn workers, ``PRE_AGGREGATIONS_ENABLED=true``;
- ``without rollups``: the same deployment, database and files, ``PRE_AGGREGATIONS_ENABLED=false`` (its own Redis
  database, so neither server can take the other's query jobs);
- ``Cube``: Cube 1.7.43 (``../shared/cube-peer``), the demo model without pre-aggregations, ``CUBEJS_CONCURRENCY``
  16 (our two workers run 8 queries each).

Viewers (``--viewers``, 50): the first nine are the dashboard's regional managers, one per country (group
``regional``, user attribute ``country``: the sales view's row policy filters on it); the others are
administrators, each with a set of two or three countries of its own in the dashboard's Country filter
(``sales.users_country equals [...]``). Country is the one member every rollup holds; no two viewers send the same
query, so no viewer's answer serves another's. A regional manager's six tiles are all answered from rollups; for a
viewer of several countries, two of them are not (:data:`EXACT_ONLY`: the average order and the top cities, whose
rollups can only be read grouped as they are) and run on the data source, as they would for such a viewer in
production. Dashboard times are also reported for each kind of viewer.

Every request asks ``cache: "no-cache"`` (both servers read it as Cube does): the query runs on each request, so a
viewer's second dashboard is a cache miss like its first. Distinct filter values alone would make only the first
round miss; ``no-cache`` keeps every round a miss without inventing filter values no dashboard offers. A
``Continue wait`` answer is asked again, as Cube's client does; the tile's time runs from the first request to its
answer, and the waits are counted.

1. Guard (untimed; warms every server): one round of every viewer's six tiles against each server; each answer
   is compared with Cube's (rows equal, numbers within 1e-9 relative); ours with rollups must name
   ``usedPreAggregations`` exactly for the tiles :func:`from_rollup` expects, ours without never. A mismatch is
   printed and ends the run. Every answer of the timed runs is compared with the same reference too.
2. One viewer (the regional manager for Germany), the six tiles one at a time, ``--repeats`` times, the three
   servers interleaved (the order rotating per step): p50/p95 per tile and for the page (its six tiles in a row).
3. Load: each server in turn (``--load-runs`` times, the order rotating), every viewer loads the dashboard (its six
   tiles at once, on six keep-alive connections, as a browser does) again and again for ``--seconds`` (at least
   once each). Throughput (dashboards/s and tiles/s, until the last dashboard is answered), p50/p95 per tile and
   per dashboard (its slowest tile); the ratios without/with and to Cube.

    .venv/bin/python bench/preaggregations_load.py [--orders 10000000] [--viewers 50] [--seconds 30] \\
        [--repeats 5] [--load-runs 1] [--json]

It needs PostgreSQL and Redis (``eval "$(bash scripts/test-services.sh)"``) and the Cube peer
(``../shared/cube-peer/setup.sh ../cube-peer-run``; ``CUBE_PEER_DIR`` names another install).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import preaggregations
from _harness import (
    ROOT,
    Connection,
    Server,
    StealMonitor,
    bench_database_url,
    json_body,
    pct,
    server_env,
    start_server,
)
from cube_peer import CubePeer, DuckDBSource, available

from demo.generate import CITIES

WORK = preaggregations.WORK / "load"
DEMO_MODEL = ROOT / "demo" / "model"
COUNTRIES = sorted({country for _, country in CITIES})
# Tiles whose rollup answers only a query grouped as it is (a non-additive measure is matched exactly): the average
# order (orders.average_order holds an average per country) and the top cities (orders.city_tiles counts orders
# across the line-items join, a distinct count).
EXACT_ONLY = ("average-order", "top-cities")
SINGLE_VIEWER = "regional Germany"  # the single-viewer bench's viewer
OURS_WITH, OURS_WITHOUT, CUBE = "ours, with rollups", "ours, without rollups", "Cube 1.7.43"
TILE_NAMES = {
    "revenue": "revenue (KPI)",
    "orders": "orders (KPI)",
    "average-order": "average order (KPI)",
    "revenue-over-time": "revenue over time",
    "revenue-by-category": "revenue by category",
    "top-cities": "top cities",
}


class RunFailed(SystemExit):
    """A wrong answer or an error: the run's figures would mean nothing."""


@dataclass(frozen=True)
class Viewer:
    """A dashboard viewer: its token's claims, and the dashboard filter it has set (none for a regional manager,
    whose row policy is its filter)."""

    name: str
    claims: dict[str, Any]
    filters: list[dict[str, Any]]


def make_viewers(count: int) -> list[Viewer]:
    """``count`` viewers, no two asking the same query: one regional manager per country, then administrators
    with a distinct set of two (then three) countries in the Country filter."""
    viewers = [
        Viewer(
            f"regional {country}",
            {"sub": f"regional-{country}", "groups": ["regional"], "userAttributes": {"country": country}},
            [],
        )
        for country in COUNTRIES
    ]
    for size in range(2, len(COUNTRIES) + 1):
        for countries in itertools.combinations(COUNTRIES, size):
            viewers.append(
                Viewer(
                    "admin " + " + ".join(countries),
                    {"sub": "admin-" + "-".join(countries), "groups": ["admin"]},
                    [{"member": "sales.users_country", "operator": "equals", "values": list(countries)}],
                )
            )
    if count > len(viewers):
        raise SystemExit(f"at most {len(viewers)} distinct viewers")
    return viewers[:count]


def from_rollup(viewer: Viewer, tile: str) -> bool:
    """Whether a server with rollups answers ``tile`` for ``viewer`` from one: every tile of a regional manager (one
    country: its row policy is an equals filter on one value, which matches a rollup grouped by country exactly); for
    a viewer who picked several countries, all but the two whose rollup would have to be aggregated again over
    countries and cannot be (:data:`EXACT_ONLY`)."""
    return not (tile in EXACT_ONLY and any(len(f["values"]) > 1 for f in viewer.filters))


def viewer_kind(viewer: Viewer) -> str:
    return "several countries" if viewer.filters else "regional (one country)"


def viewer_query(query: dict[str, Any], viewer: Viewer) -> dict[str, Any]:
    return {**query, "filters": [*query.get("filters", []), *viewer.filters]} if viewer.filters else query


@dataclass
class Target:
    """A server under load: where its ``/v1/load`` is and how it signs a viewer's token."""

    name: str
    port: int
    path: str
    tokens: dict[str, str] = field(default_factory=dict)  # viewer name -> Authorization header


class KeptConnection(Connection):
    """A keep-alive connection used as a browser uses one: closed when the server says ``Connection: close``,
    opened anew before a request when it has been idle longer than servers keep one (uvicorn's and Node's 5 s), and
    the request sent once more on a new connection when a kept one turns out closed before any answer came (the
    server closed it as the request went out). ``resent`` counts those."""

    IDLE_S = 4.0

    def __init__(self, port: int) -> None:
        super().__init__(port)
        self.idle_since = 0.0
        self.resent = 0

    async def post(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        if self.writer is not None and time.perf_counter() - self.idle_since > self.IDLE_S:
            self.close()
        kept = self.writer is not None
        try:
            try:
                status, answer_headers, payload = await self.exchange("POST", path, headers, body)
            except (ConnectionError, asyncio.IncompleteReadError):
                self.close()
                if not kept:
                    raise
                self.resent += 1
                status, answer_headers, payload = await self.exchange("POST", path, headers, body)
            if answer_headers.get("connection", "").lower() == "close":
                self.close()
            return status, payload
        finally:
            self.idle_since = time.perf_counter()


@dataclass
class Answer:
    ms: float
    data: list[dict[str, Any]]
    used_pre_aggregations: bool
    waits: int  # Continue wait answers before the rows


async def ask(connection: KeptConnection, target: Target, viewer: Viewer, query: dict[str, Any]) -> Answer:
    """One tile's ``/v1/load`` (``no-cache``), asked again while the server answers ``Continue wait``."""
    body = json_body({"query": viewer_query(query, viewer), "cache": "no-cache"})
    headers = {"Authorization": target.tokens[viewer.name], "Content-Type": "application/json"}
    started = time.perf_counter()
    waits = 0
    while True:
        status, payload = await connection.post(target.path, headers, body)
        try:
            answer = json.loads(payload)
        except ValueError:
            answer = {"error": payload[:300].decode(errors="replace")}
        if status == 200 and answer.get("error") == "Continue wait":
            waits += 1
            continue
        if status != 200 or "error" in answer:
            raise RunFailed(f"{target.name}, {viewer.name}: {status} {str(answer)[:500]}")
        return Answer(
            ms=(time.perf_counter() - started) * 1000,
            data=answer["data"],
            used_pre_aggregations=bool(answer.get("usedPreAggregations")),
            waits=waits,
        )


def check(
    target: Target,
    viewer: Viewer,
    tile: str,
    answer: Answer,
    reference: dict[tuple[str, str], list[dict[str, Any]]] | None,
) -> None:
    """The answer equals Cube's (``reference``), and came from a rollup exactly when :func:`from_rollup` says."""
    expected = target.name == OURS_WITH and from_rollup(viewer, tile)
    if target.name != CUBE and answer.used_pre_aggregations != expected:
        said = "answered from a rollup" if answer.used_pre_aggregations else "not answered from a rollup"
        raise RunFailed(f"{target.name}, {viewer.name}, tile {tile}: {said}")
    if reference is not None:
        expected = reference[(viewer.name, tile)]
        if not preaggregations.same_rows(answer.data, expected):
            raise RunFailed(
                f"MISMATCH {target.name}, {viewer.name}, tile {tile}:\n"
                f"  {target.name}: {answer.data[:5]}\n  Cube 1.7.43: {expected[:5]}"
            )


@dataclass
class LoadRun:
    """One closed-loop run of every viewer against one server."""

    target: str
    seconds: float
    dashboards_ms: list[float]
    by_kind_ms: dict[str, list[float]]  # dashboards of regional managers, and of viewers of several countries
    tiles_ms: dict[str, list[float]]
    waits: int
    resent: int  # requests sent again on a new connection (KeptConnection)
    steal_pct: float

    @property
    def dashboards(self) -> int:
        return len(self.dashboards_ms)

    @property
    def tiles(self) -> int:
        return sum(len(values) for values in self.tiles_ms.values())


def load_run(
    target: Target,
    viewers: list[Viewer],
    queries: dict[str, dict[str, Any]],
    *,
    seconds: float,
    reference: dict[tuple[str, str], list[dict[str, Any]]] | None,
    collect: dict[tuple[str, str], list[dict[str, Any]]] | None = None,
) -> LoadRun:
    """Every viewer loads the dashboard (its tiles at once, one keep-alive connection each) until ``seconds`` have
    passed, at least once. A dashboard's time is its slowest tile's. ``collect`` receives the first answers."""
    dashboards: list[float] = []
    by_kind: dict[str, list[float]] = {kind: [] for kind in sorted({viewer_kind(v) for v in viewers})}
    tiles: dict[str, list[float]] = {tile: [] for tile in queries}
    waits = resent = 0

    async def viewer_loop(viewer: Viewer, deadline: float) -> None:
        nonlocal waits, resent
        connections = {tile: KeptConnection(target.port) for tile in queries}
        try:
            first = True
            while first or time.perf_counter() < deadline:
                started = time.perf_counter()
                answers = await asyncio.gather(
                    *(ask(connections[tile], target, viewer, query) for tile, query in queries.items())
                )
                dashboards.append((time.perf_counter() - started) * 1000)
                by_kind[viewer_kind(viewer)].append(dashboards[-1])
                for tile, answer in zip(queries, answers, strict=True):
                    check(target, viewer, tile, answer, reference)
                    tiles[tile].append(answer.ms)
                    waits += answer.waits
                    if first and collect is not None:
                        collect[(viewer.name, tile)] = answer.data
                first = False
        finally:
            for connection in connections.values():
                resent += connection.resent
                connection.close()

    async def run() -> float:
        started = time.perf_counter()
        await asyncio.gather(*(viewer_loop(viewer, started + seconds) for viewer in viewers))
        return time.perf_counter() - started

    with StealMonitor() as steal:
        elapsed = uvloop.run(run())
    return LoadRun(target.name, elapsed, dashboards, by_kind, tiles, waits, resent, round(steal.mean * 100, 1))


def single_viewer(
    targets: list[Target],
    viewer: Viewer,
    queries: dict[str, dict[str, Any]],
    repeats: int,
    reference: dict[tuple[str, str], list[dict[str, Any]]],
) -> dict[str, dict[str, list[float]]]:
    """Each tile for one viewer, one request at a time, the servers interleaved (the order rotating each step)."""
    times: dict[str, dict[str, list[float]]] = {t.name: {tile: [] for tile in queries} for t in targets}

    async def run() -> None:
        connections = {t.name: KeptConnection(t.port) for t in targets}
        try:
            step = 0
            for _ in range(repeats):
                for tile, query in queries.items():
                    rotation = step % len(targets)
                    for target in targets[rotation:] + targets[:rotation]:
                        answer = await ask(connections[target.name], target, viewer, query)
                        check(target, viewer, tile, answer, reference)
                        times[target.name][tile].append(answer.ms)
                    step += 1
        finally:
            for connection in connections.values():
                connection.close()

    uvloop.run(run())
    return times


def dataset(orders: int) -> Path:
    """The single-viewer bench's dataset of ``orders`` orders: waits while another process is generating it
    (``.demo-N.duckdb.partial``), generates it when absent."""
    path = preaggregations.WORK / f"demo-{orders}.duckdb"
    partial = path.with_name(f".{path.name}.partial")
    announced = False
    while not path.exists() and partial.exists():
        if not announced:
            print(f"  waiting for {path.name}: another process is generating it")
            announced = True
        time.sleep(10)
    return preaggregations.dataset(orders)


def deploy(env: dict[str, str], data: Path) -> tuple[int, str]:
    """In this process, on the servers' database and rollup directory: an account whose deployment serves the
    model with rollups on ``data``, its rollups built. Its id and API secret."""
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    from embedadmin.accounts import services as accounts
    from embedadmin.accounts.services import deployment_configure, duckdb_url

    call_command("migrate", verbosity=0)
    created = accounts.account_create(name=f"bench-load-{int(time.time())}", creator_mode=False)
    model = preaggregations.model_with_rollups(WORK / "model")
    deployment_configure(deployment=created.deployment, model_dir=str(model), data_source_url=duckdb_url(data))
    for row in preaggregations.build(created.deployment):
        print(
            f"    {row['rollup']:<22} {row['partition']:>5} {row['rows']:>9,} rows {row['bytes'] / 1024:>9,.0f} KiB "
            f"{row['build_s']:>7.2f} s"
        )
    from django.db import connections

    connections.close_all()
    return created.deployment.pk, created.deployment_api_secret


def our_token(secret: str, claims: dict[str, Any]) -> str:
    now = int(time.time())
    return jwt.encode({**claims, "iat": now, "exp": now + 6 * 3600}, secret, algorithm="HS256")


def summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(pct(values, 0.5), 1), "p95": round(pct(values, 0.95), 1), "n": len(values)}


def report_single(times: dict[str, dict[str, list[float]]], repeats: int) -> dict[str, Any]:
    names = list(times)
    pages = {name: [sum(tiles[tile][i] for tile in tiles) for i in range(repeats)] for name, tiles in times.items()}
    rows: dict[str, dict[str, dict[str, float]]] = {}
    for tile in [*next(iter(times.values())), "page"]:
        rows[tile] = {name: summary(pages[name] if tile == "page" else times[name][tile]) for name in names}
    print(
        f"\nOne viewer ({SINGLE_VIEWER}), each tile {repeats} times, servers interleaved: p50 (p95) ms, and p50 ratios"
    )
    print(
        f"  {'tile':<24} {'with rollups':>16} {'without rollups':>18} {'Cube':>18}   without/with  with/Cube  "
        "without/Cube"
    )
    for tile, cells in rows.items():
        w, wo, c = cells[OURS_WITH], cells[OURS_WITHOUT], cells[CUBE]
        label = "page (6 tiles in a row)" if tile == "page" else TILE_NAMES.get(tile, tile)
        print(
            f"  {label:<24} {w['p50']:>7.1f} ({w['p95']:>6.1f}) {wo['p50']:>8.1f} ({wo['p95']:>7.1f}) "
            f"{c['p50']:>8.1f} ({c['p95']:>7.1f})   {wo['p50'] / w['p50']:>10.1f}x  {w['p50'] / c['p50']:>8.3f}x  "
            f"{wo['p50'] / c['p50']:>10.2f}x"
        )
    return rows


def report_load(runs: list[LoadRun], viewers: int) -> dict[str, Any]:
    by_target: dict[str, list[LoadRun]] = {}
    for run in runs:
        by_target.setdefault(run.target, []).append(run)
    out: dict[str, Any] = {}
    for name, group in by_target.items():
        dashboards = [ms for run in group for ms in run.dashboards_ms]
        by_kind = {kind: [ms for run in group for ms in run.by_kind_ms[kind]] for kind in group[0].by_kind_ms}
        tiles = {tile: [ms for run in group for ms in run.tiles_ms[tile]] for tile in group[0].tiles_ms}
        seconds = sum(run.seconds for run in group)
        out[name] = {
            "dashboards_per_s": round(sum(run.dashboards for run in group) / seconds, 2),
            "tiles_per_s": round(sum(run.tiles for run in group) / seconds, 1),
            "dashboard_ms": summary(dashboards),
            "dashboard_ms_by_viewer": {kind: summary(values) for kind, values in by_kind.items()},
            "tile_ms": {tile: summary(values) for tile, values in tiles.items()},
            "all_tiles_ms": summary([ms for values in tiles.values() for ms in values]),
            "continue_waits": sum(run.waits for run in group),
            "resent": sum(run.resent for run in group),
            "seconds": round(seconds, 1),
            "steal_pct": [run.steal_pct for run in group],
        }
    print(f"\n{viewers} concurrent viewers, each loading the dashboard (6 tiles at once) again and again:")
    print(
        f"  {'server':<24} {'dashboards/s':>12} {'tiles/s':>8} {'dashboard p50 / p95 ms':>24} "
        f"{'tile p50 / p95 ms':>20} {'dashboards':>10} {'waits':>6} {'resent':>6}  steal"
    )
    for name, e in out.items():
        d, t = e["dashboard_ms"], e["all_tiles_ms"]
        print(
            f"  {name:<24} {e['dashboards_per_s']:>12.2f} {e['tiles_per_s']:>8.1f} "
            f"{d['p50']:>11.1f} / {d['p95']:>9.1f} {t['p50']:>9.1f} / {t['p95']:>8.1f} {d['n']:>10} "
            f"{e['continue_waits']:>6} {e['resent']:>6}  {e['steal_pct']}%"
        )
    print("  dashboard p50 / p95 ms by viewer:")
    for kind in next(iter(out.values()))["dashboard_ms_by_viewer"]:
        cells = "   ".join(
            f"{name}: {e['dashboard_ms_by_viewer'][kind]['p50']:.1f} / {e['dashboard_ms_by_viewer'][kind]['p95']:.1f}"
            for name, e in out.items()
        )
        print(f"    {kind:<22} {cells}")
    print("  per tile, p50 / p95 ms:")
    for tile in next(iter(out.values()))["tile_ms"]:
        cells = "   ".join(
            f"{name}: {e['tile_ms'][tile]['p50']:.1f} / {e['tile_ms'][tile]['p95']:.1f}" for name, e in out.items()
        )
        print(f"    {TILE_NAMES.get(tile, tile):<22} {cells}")
    if {OURS_WITH, OURS_WITHOUT, CUBE} <= out.keys():
        w, wo, c = out[OURS_WITH], out[OURS_WITHOUT], out[CUBE]
        ratios = {
            "throughput with/without": w["dashboards_per_s"] / wo["dashboards_per_s"],
            "dashboard p95 without/with": wo["dashboard_ms"]["p95"] / w["dashboard_ms"]["p95"],
            "throughput with/Cube": w["dashboards_per_s"] / c["dashboards_per_s"],
            "throughput without/Cube": wo["dashboards_per_s"] / c["dashboards_per_s"],
            "dashboard p95 with/Cube": w["dashboard_ms"]["p95"] / c["dashboard_ms"]["p95"],
            "dashboard p95 without/Cube": wo["dashboard_ms"]["p95"] / c["dashboard_ms"]["p95"],
        }
        print("  ratios: " + ", ".join(f"{k} {v:.3g}x" for k, v in ratios.items()))
        out["ratios"] = {k: round(v, 4) for k, v in ratios.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=10_000_000, help="orders in the dataset (1M, 10M, 100M...)")
    parser.add_argument("--viewers", type=int, default=50)
    parser.add_argument(
        "--seconds", type=float, default=30.0, help="length of each load run (each viewer once at least)"
    )
    parser.add_argument("--load-runs", type=int, default=1, help="load runs per server, the order rotating")
    parser.add_argument("--repeats", type=int, default=5, help="single-viewer requests per tile and server")
    parser.add_argument("--port", type=int, default=4321, help="ours with rollups; ours without on the next port")
    parser.add_argument("--cube-port", type=int, default=4323)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379", help="Redis; databases 10 and 11 are used")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    ok, reason = available()
    if not ok:
        raise SystemExit(reason)

    print(f"== {args.orders:,} orders, {args.viewers} viewers")
    data = dataset(args.orders)
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    env = server_env(
        bench_database_url("t_bench"),
        EMBEDADMIN_VAR_DIR=str(WORK / "var"),
        PRE_AGGREGATIONS_DIR=str(WORK / "store"),
        REDIS_URL=f"{args.redis}/10",
        QUERY_TIMEOUT_SECONDS="600",
    )
    deployment_id, secret = deploy(env, data)
    viewers = make_viewers(args.viewers)
    queries = preaggregations.tile_queries()
    path = f"/d/{deployment_id}/cubejs-api/v1/load"
    ours = [
        Target(OURS_WITH, args.port, path, {v.name: our_token(secret, v.claims) for v in viewers}),
        Target(OURS_WITHOUT, args.port + 1, path, {v.name: our_token(secret, v.claims) for v in viewers}),
    ]
    servers: list[Server] = []
    # The demo model without its dashboards: Cube reads every YAML file under the model directory, and takes the
    # dashboards' flow-style mappings ("}}") for Jinja, which its JS build cannot render.
    cube_model = WORK / "cube-model"
    shutil.copytree(DEMO_MODEL, cube_model, ignore=shutil.ignore_patterns("dashboards"))
    cube = CubePeer(
        model_dir=cube_model, source=DuckDBSource(data), port=args.cube_port, env={"CUBEJS_CONCURRENCY": "16"}
    )
    figures: dict[str, Any] = {"orders": args.orders, "viewers": args.viewers}
    try:
        servers.append(start_server({**env, "PRE_AGGREGATIONS_ENABLED": "true"}, port=args.port, workers=2))
        servers.append(
            start_server(
                {**env, "PRE_AGGREGATIONS_ENABLED": "false", "REDIS_URL": f"{args.redis}/11"},
                port=args.port + 1,
                workers=2,
            )
        )
        cube.start()
        targets = [
            *ours,
            Target(
                CUBE,
                args.cube_port,
                "/cubejs-api/v1/load",
                {v.name: cube.token(v.claims, ttl=6 * 3600) for v in viewers},
            ),
        ]

        print(f"\nGuard: every viewer's {len(queries)} tiles from each server, compared with Cube's")
        reference: dict[tuple[str, str], list[dict[str, Any]]] = {}
        guard = load_run(targets[2], viewers, queries, seconds=0, reference=None, collect=reference)
        print(f"  {CUBE}: {guard.tiles} answers in {guard.seconds:.1f} s")
        for target in ours:
            guard = load_run(target, viewers, queries, seconds=0, reference=reference)
            print(f"  {target.name}: {guard.tiles} answers in {guard.seconds:.1f} s, all equal to Cube's")

        single = single_viewer(
            targets, next(v for v in viewers if v.name == SINGLE_VIEWER), queries, args.repeats, reference
        )
        runs = []
        for k in range(args.load_runs):
            for target in targets[k % 3 :] + targets[: k % 3]:
                run = load_run(target, viewers, queries, seconds=args.seconds, reference=reference)
                print(
                    f"  load run: {target.name}: {run.dashboards} dashboards in {run.seconds:.1f} s "
                    f"(steal {run.steal_pct}%)"
                )
                runs.append(run)
    finally:
        cube.stop()
        for server in servers:
            server.stop()

    figures["single_viewer"] = report_single(single, args.repeats)
    figures["load"] = report_load(runs, args.viewers)
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
