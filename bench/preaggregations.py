"""Benchmark: the demo dashboard's tiles with and without rollup pre-aggregations, against the direct SQL on the
rollup tables (the floor), at 1M and 10M orders (100M with ``--orders 100000000``), in one run.

For each size the demo dataset is generated with DuckDB SQL (``demo/generate.py``) once under
``var/bench/preaggregations/`` and reused; a deployment (the embedded default: SQLite application database, DuckDB data
source) serves the demo model with four rollups made for the sales-overview dashboard (appended to a copy of the
model, :data:`ROLLUPS`), built through the same services the Celery tasks call (build time, rows and size per
partition are printed). Then, as the dashboard's regional viewer (row policy ``users_country = Germany``), each of the
dashboard's six tile queries is asked through ``semantic_load`` (the Core Data API without HTTP) with
``cache: no-cache`` (a cache miss: the statement runs every time):

- without rollups (``PRE_AGGREGATIONS["ENABLED"]`` off: the data source answers),
- with rollups (the rewritten statement on the pre-aggregation store),
- floor: the rewritten statement run directly on the store's DuckDB connection, without the API.

The rollup and the floor are interleaved (the two in turn first), then the source is timed on its own (a 100M-row
scan leaves the CPU caches cold for whatever runs next), each ``--repeats`` times per tile;
p50/p95 per tile and for the whole page (the six tiles one after the other) are printed with the ratios
``with/floor``, ``without/with`` and, per tile, ``with at the largest size / with at the smallest``. Then 1% more
orders are appended and the incremental refresh (only the partitions the update window reaches) is timed.

    .venv/bin/python bench/preaggregations.py [--orders 1000000 10000000] [--repeats 15] [--json]

Goal (issue 28): with rollups, tile p50 at 100M rows within 1.5x of the floor and within 2x of the same tile at 1M.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WORK = ROOT / "var" / "bench" / "preaggregations"

ROLLUPS = """
    pre_aggregations:
      - name: main
        measures: [count, total_amount, completed_amount]
        dimensions: [status, users.country, users.city]
        time_dimension: created_at
        granularity: day
        partition_granularity: year
        refresh_key:
          every: 1 hour
          incremental: true
          update_window: 7 day
      - name: revenue
        measures: [line_items.revenue, line_items.units_sold]
        dimensions: [products.category, users.country]
        time_dimension: created_at
        granularity: day
        partition_granularity: year
        refresh_key:
          every: 1 hour
          incremental: true
          update_window: 7 day
      - name: city_tiles
        measures: [count, line_items.revenue]
        dimensions: [users.city, users.country]
      - name: average_order
        measures: [average_order_value]
        dimensions: [users.country]
"""
VIEWER = {"groups": ["regional"], "userAttributes": {"country": "Germany"}}


def setup_django() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "embedadmin.settings",
            "DATABASE_URL": f"sqlite:///{WORK / 'app.sqlite3'}",
            "EMBEDADMIN_VAR_DIR": str(WORK / "var"),
            "SECRET_KEY": "bench-secret-key-bench-secret-key-bench-secret-key",
            "PRE_AGGREGATIONS_DIR": str(WORK / "store"),
            "LOG_LEVEL": "WARNING",
            "QUERY_TIMEOUT_SECONDS": "600",
            "CONTINUE_WAIT_SECONDS": "600",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def dataset(orders: int) -> Path:
    from demo.generate import generate

    path = WORK / f"demo-{orders}.duckdb"
    if not path.exists():
        started = time.monotonic()
        generate(path, orders=orders)
        print(f"  generated {orders:,} orders in {time.monotonic() - started:.1f} s")
    return path


def tile_queries() -> dict[str, dict[str, Any]]:
    import yaml

    board = yaml.safe_load((ROOT / "demo" / "model" / "dashboards" / "sales-overview.yml").read_text())
    return {report["key"]: report["query"] for report in board["reports"]}


def model_with_rollups(target: Path | None = None) -> Path:
    """The demo model (without its dashboards) with :data:`ROLLUPS` appended to the orders cube, written afresh to
    ``target`` (``WORK/model`` by default; the load bench writes its own, so two benches never share one)."""
    target = target or WORK / "model"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(ROOT / "demo" / "model", target, ignore=shutil.ignore_patterns("dashboards"))
    orders = target / "cubes" / "orders.yml"
    orders.write_text(orders.read_text().rstrip("\n") + "\n" + ROLLUPS)
    return target


def same_value(a: Any, b: Any) -> bool:
    """Equal, numbers within 1e-9 relative: a float aggregate (DuckDB's avg) sums in another order on another plan."""
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return False
    return abs(x - y) <= 1e-9 * max(abs(x), abs(y))


def same_rows(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    return len(a) == len(b) and all(
        x.keys() == y.keys() and all(same_value(x[k], y[k]) for k in x) for x, y in zip(a, b, strict=True)
    )


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def build(deployment: Any) -> list[dict[str, Any]]:
    from embedadmin.semantic.serving.pre_aggregations import (
        pre_aggregation_partition_build,
        pre_aggregations_refresh,
        pre_aggregations_status,
    )
    from embedadmin.semantic.tasks import serve

    timings: dict[int, float] = {}

    def run(partition_id: int) -> None:
        started = time.monotonic()
        outcome = pre_aggregation_partition_build(partition_id=partition_id, serve=serve)
        timings[partition_id] = time.monotonic() - started
        assert outcome == "built", outcome

    started = time.monotonic()
    pre_aggregations_refresh(deployment=deployment, serve=serve, enqueue=run)
    total = time.monotonic() - started
    rows = []
    for status in pre_aggregations_status(deployment=deployment, serve=serve):
        for p in status.partitions:
            rows.append(
                {
                    "rollup": status.rollup.id,
                    "partition": p.partition or "-",
                    "rows": p.rows,
                    "bytes": p.bytes,
                    "build_s": p.build_seconds,
                }
            )
    print(f"  built {len(rows)} partitions in {total:.1f} s (refresh included)")
    return rows


def measure(deployment: Any, repeats: int) -> dict[str, dict[str, list[float]]]:
    from django.conf import settings

    from embedadmin.semantic import QueryContext
    from embedadmin.semantic.serving.pre_aggregations import rollup_read
    from embedadmin.semantic.serving.services import semantic_load, semantic_sql

    ctx = QueryContext(
        security_context={"embed": True, **VIEWER},
        groups=VIEWER["groups"],
        user_attributes=VIEWER["userAttributes"],
        only_granted=True,
    )
    queries = tile_queries()
    times: dict[str, dict[str, list[float]]] = {tile: {"without": [], "with": [], "floor": []} for tile in queries}

    def switch(enabled: bool) -> None:
        settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": enabled}

    def load(query: dict[str, Any]) -> dict[str, Any]:
        return semantic_load(deployment=deployment, ctx=ctx, query=query, cache="no-cache")

    floors = {}
    for tile, query in queries.items():
        switch(True)
        body = load(query)
        assert body.get("usedPreAggregations"), f"tile {tile} is not answered from a rollup"
        switch(False)
        source = load(query)["data"]
        assert same_rows(source, body["data"]), f"tile {tile}: {body['data'][:3]} from the rollup, {source[:3]}"
        switch(True)
        from embedadmin.semantic.serving.services import _plan, plan_on_rollups, served_model

        served = served_model(deployment=deployment, ctx=ctx)
        (compiled,) = plan_on_rollups(served=served, ctx=ctx, plan=_plan(served, ctx, query)).queries
        read = rollup_read(compiled)
        assert read is not None
        floors[tile] = (read[0], compiled.sql, compiled.params)
        assert semantic_sql(deployment=deployment, ctx=ctx, query=query)["sql"]["preAggregations"]
    # The rollup and the floor are interleaved with each other (the two in turn first), the source's runs come after
    # them: at 100M rows a source query scans gigabytes and leaves the CPU caches cold, and with rollups a dashboard's
    # tiles do not follow such scans (they are what the rollups take away), so the rollup and its floor are timed as
    # they run, one after the other, and the source on its own.
    pairs = [("with", "floor"), ("floor", "with")]
    order = [(tile, kind) for step in range(repeats) for tile in queries for kind in pairs[step % 2]]
    order += [(tile, "without") for _ in range(repeats) for tile in queries]
    for tile, kind in order:
        started = time.perf_counter()
        if kind == "floor":
            source, sql, params = floors[tile]
            source.execute(sql, params, timeout_s=600)
        else:
            switch(kind == "with")
            load(queries[tile])
        times[tile][kind].append((time.perf_counter() - started) * 1000)
    switch(True)
    return times


def incremental(deployment: Any, path: Path, orders: int) -> dict[str, Any]:
    """Append 1% more orders dated today (the update window), then refresh: only the last partitions rebuild."""
    import duckdb
    from django.utils import timezone

    from embedadmin.semantic.models import PreAggregationPartition
    from embedadmin.semantic.serving.pre_aggregations import pre_aggregation_partition_build, pre_aggregations_refresh
    from embedadmin.semantic.tasks import serve

    extra = max(1, orders // 100)
    fresh = path.with_name(f".{path.name}.next")
    shutil.copyfile(path, fresh)
    with duckdb.connect(str(fresh)) as writer:
        writer.execute(
            "INSERT INTO orders SELECT id + 1000000000, user_id, status, amount, item_count, "
            "created_at + INTERVAL 1 DAY * (date_diff('day', created_at, now()::timestamp)), completed_at "
            "FROM orders ORDER BY id LIMIT ?",
            [extra],
        )
    os.replace(fresh, path)
    built: list[str] = []

    def run(partition_id: int) -> None:
        assert pre_aggregation_partition_build(partition_id=partition_id, serve=serve) == "built"
        built.append(PreAggregationPartition.objects.get(pk=partition_id).partition)

    later = timezone.now() + timezone.timedelta(hours=1)
    started = time.monotonic()
    pre_aggregations_refresh(deployment=deployment, serve=serve, enqueue=run, now=later)
    return {"appended": extra, "seconds": round(time.monotonic() - started, 2), "partitions": built}


def run_size(orders: int, repeats: int) -> dict[str, Any]:
    from embedadmin.accounts import services as accounts
    from embedadmin.accounts.services import deployment_configure, duckdb_url
    from embedadmin.semantic.serving.rollup_store import close_rollup_sources

    print(f"\n== {orders:,} orders")
    # A copy of the generated dataset: the incremental refresh appends orders to it.
    path = WORK / f"run-{orders}.duckdb"
    shutil.copyfile(dataset(orders), path)
    created = accounts.account_create(name=f"bench-{orders}-{int(time.time())}", creator_mode=False)
    deployment = created.deployment
    deployment_configure(deployment=deployment, model_dir=str(model_with_rollups()), data_source_url=duckdb_url(path))
    partitions = build(deployment)
    for row in partitions:
        print(
            f"    {row['rollup']:<22} {row['partition']:>5} {row['rows']:>9,} rows {row['bytes'] / 1024:>9,.0f} KiB "
            f"{row['build_s']:>7.2f} s"
        )
    times = measure(deployment, repeats)
    refresh = incremental(deployment, path, orders)
    print(
        f"  incremental refresh after +{refresh['appended']:,} orders: {refresh['seconds']} s, "
        f"partitions {refresh['partitions']}"
    )
    close_rollup_sources()
    return {"orders": orders, "partitions": partitions, "times": times, "incremental": refresh}


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    smallest = results[0]
    for result in results:
        rows = {}
        page = {
            kind: [
                sum(t[kind][i] for t in result["times"].values())
                for i in range(len(next(iter(result["times"].values()))[kind]))
            ]
            for kind in ("without", "with", "floor")
        }
        for tile, kinds in [*result["times"].items(), ("(page: 6 tiles)", page)]:
            p50 = {k: statistics.median(v) for k, v in kinds.items()}
            p95 = {k: pct(v, 0.95) for k, v in kinds.items()}
            entry = {
                "p50": p50,
                "p95": p95,
                "with/floor": p50["with"] / p50["floor"],
                "without/with": p50["without"] / p50["with"],
            }
            if result is not smallest and tile in smallest["times"]:
                entry["with/with@smallest"] = p50["with"] / statistics.median(smallest["times"][tile]["with"])
            rows[tile] = entry
        out[str(result["orders"])] = rows
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--orders", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    setup_django()
    results = [run_size(orders, args.repeats) for orders in args.orders]
    table = summary(results)
    for orders, rows in table.items():
        print(
            f"\n{int(orders):,} orders: p50 / p95 ms (without rollups | with rollups | floor)"
            "  with/floor  without/with  with vs smallest"
        )
        for tile, e in rows.items():
            vs = f"{e['with/with@smallest']:.2f}x" if "with/with@smallest" in e else "-"
            print(
                f"  {tile:<20} {e['p50']['without']:8.1f} / {e['p95']['without']:8.1f} | {e['p50']['with']:6.1f} / "
                f"{e['p95']['with']:6.1f} | {e['p50']['floor']:5.1f} / {e['p95']['floor']:5.1f}   "
                f"{e['with/floor']:5.2f}x   {e['without/with']:7.1f}x   {vs}"
            )
    if args.json:
        print(
            json.dumps(
                {"summary": table, "runs": [{k: v for k, v in r.items() if k != "times"} for r in results]}, default=str
            )
        )


if __name__ == "__main__":
    main()
