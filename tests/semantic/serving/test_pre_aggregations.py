"""Rollup pre-aggregations served: built into the store from DuckDB and PostgreSQL, answering ``/v1/load`` exactly as
the data source does (every query shape of the cross-database oracle suite), shown by ``/v1/sql``, refreshed by their
``refresh_key``, and rebuilt under a lease that a build killed mid-way leaves to the next worker while readers keep the
old table.
"""

# ruff: noqa: F811  (fixtures imported from other test modules are redefined as test arguments, as pytest wants)

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from django.db import connection as db_connection

from embedadmin.accounts.models import Deployment
from embedadmin.accounts.services import TenantDataSources, deployment_configure, deployment_create, duckdb_url
from embedadmin.accounts.services.credentials import CREDENTIALS
from embedadmin.core import credentials
from embedadmin.semantic import tasks
from embedadmin.semantic.models import PreAggregationPartition
from embedadmin.semantic.serving import pre_aggregations
from embedadmin.semantic.serving.pre_aggregations import (
    pre_aggregation_partition_build,
    pre_aggregations_rebuild,
    pre_aggregations_refresh,
    pre_aggregations_status,
)
from embedadmin.semantic.serving.rollup_store import close_rollup_sources, remove_unreferenced
from embedadmin.semantic.tasks import serve
from tests.asgi_server import database_url_for_subprocess
from tests.schemas import qualified_model
from tests.semantic.http_support import (  # noqa: F401
    DEMO_MODEL,
    CoreApi,
    core,
    demo_duckdb,
    duck_rows,
    fresh_semantic_state,
)
from tests.semantic.rollup_support import build_rollups, model_with_rollups
from tests.semantic.sql.test_cross_database import CASES, _api_value, _value, postgres_demo  # noqa: F401
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
STATUS_ONLY = {
    "orders": """
    pre_aggregations:
      - name: status_only
        measures: [count]
        dimensions: [status]
"""
}
REPO = Path(__file__).resolve().parents[3]

# The rollup each oracle query shape is answered from (None: the data source answers it).
ANSWERED_BY = {
    "count-by-status": "orders.main",
    "amounts-by-month": "orders.main",
    "users-in-countries": "users.by_country",
    "revenue-by-category": "line_items.by_category",
    "cities-starting-with-b": "orders.main",
    "average-by-size": "orders.by_size",
    "customers-by-year": "orders.customers_yearly",
    "high-value-segment": "orders.main",
    "ungrouped-biggest": None,
    "regional-view-with-policy": "orders.main",
}


@pytest.fixture
def store(settings, tmp_path) -> Path:
    """The pre-aggregation store of this test, switched on."""
    directory = tmp_path / "store"
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "DIR": directory, "ENABLED": True}
    yield directory
    close_rollup_sources()


def load(core: CoreApi, query: dict[str, Any], token: str) -> dict[str, Any]:
    return core.load(query, token=token, cache="no-cache")


def used(body: dict[str, Any]) -> str | None:
    entries = body.get("usedPreAggregations")
    if not entries:
        return None
    (entry,) = entries.values()
    return entry["preAggregationId"]


def same_value(a: Any, b: Any) -> bool:
    """Equal; a number written with a fraction or an exponent (a float aggregate, which DuckDB sums in another order
    on another plan) within 1e-9 relative."""
    if a == b:
        return True
    if not (isinstance(a, str) and isinstance(b, str) and any(c in a + b for c in ".eE")):
        return False
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return abs(x - y) <= 1e-9 * max(abs(x), abs(y))


def same_rows(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """The same rows in the same order: integers, decimals and text exactly, floats within 1e-9 relative."""
    return len(a) == len(b) and all(
        x.keys() == y.keys() and all(same_value(x[k], y[k]) for k in x) for x, y in zip(a, b, strict=True)
    )


def keys_of(query: dict[str, Any]) -> list[str]:
    keys = [*query.get("dimensions", [])]
    keys += [f"{td['dimension']}.{td['granularity']}" for td in query.get("timeDimensions", [])]
    return keys + query.get("measures", [])


@pytest.mark.parametrize("database", ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_every_oracle_query_shape_answers_as_the_data_source_does(database, core, store, settings, tmp_path, request):
    # given: the demo model with rollups, on DuckDB or on a PostgreSQL copy of the same data, rollups built
    if database == "postgres":
        url, schema = request.getfixturevalue("postgres_demo")
        model = model_with_rollups(tmp_path / "model", source=qualified_model(DEMO_MODEL, tmp_path / "plain", schema))
        deployment_configure(deployment=core.cast.deployment, model_dir=str(model), data_source_url=url)
    else:
        model = model_with_rollups(tmp_path / "model")
        deployment_configure(deployment=core.cast.deployment, model_dir=str(model))
    outcomes = build_rollups(core.cast.deployment)
    assert outcomes
    assert set(outcomes.values()) == {"built"}

    for name, case in CASES.items():
        token = core.token(**case.claims) if case.claims else core.token()

        # when: asked with the rollups, then of the data source alone
        from_rollups = load(core, case.query, token)
        settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": False}
        from_source = load(core, case.query, token)
        settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": True}

        # then: the same rows, from the rollup expected, and as the hand-written SQL says
        assert used(from_rollups) == ANSWERED_BY[name], name
        assert used(from_source) is None
        assert same_rows(from_rollups["data"], from_source["data"]), name
        assert from_rollups["annotation"] == from_source["annotation"]
        assert from_rollups["query"] == from_source["query"]
        if database == "duckdb":
            expected = [tuple(_value(v) for v in row) for row in duck_rows(core.dataset, case.sql.format(t=""))]
            got = [tuple(_api_value(row[k]) for k in keys_of(case.query)) for row in from_rollups["data"]]
            assert got == expected, name


def test_the_sql_endpoint_shows_the_statement_on_the_rollup(core, store, tmp_path):
    # given
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model_with_rollups(tmp_path / "model")))
    build_rollups(core.cast.deployment)
    query = {"measures": ["orders.count"], "dimensions": ["orders.status"]}

    # when
    body = core.post("sql", {"query": query}).json()["sql"]

    # then
    assert body["sql"][0].startswith('SELECT "orders__main"."orders__status"')
    assert 'FROM "orders__main" AS "orders__main"' in body["sql"][0]
    assert 'COALESCE(SUM("orders__main"."orders__count"), 0)' in body["sql"][0]
    (described,) = body["preAggregations"]
    assert described["preAggregationId"] == "orders.main"
    assert described["tableName"] == "orders__main"
    assert described["type"] == "rollup"
    assert body["aliasNameToMember"] == {
        "orders__main__orders__status": "orders.status",
        "orders__main__orders__count": "orders.count",
    }


def test_a_viewer_whose_policy_member_is_outside_the_rollup_reads_the_source(core, store, tmp_path):
    # given: only a rollup without users.country is built
    rollups = STATUS_ONLY
    deployment_configure(
        deployment=core.cast.deployment, model_dir=str(model_with_rollups(tmp_path / "model", rollups=rollups))
    )
    build_rollups(core.cast.deployment)
    query = {"measures": ["sales.order_count"], "dimensions": ["sales.status"]}

    # when
    admin = load(core, query, core.token())
    regional = load(core, query, core.token(groups=["regional"], userAttributes={"country": "France"}))

    # then: the administrator reads the rollup; the regional viewer the source, restricted to France
    assert used(admin) == "orders.status_only"
    assert used(regional) is None
    ((expected,),) = duck_rows(
        core.dataset, "SELECT count(*) FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = 'France'"
    )
    assert sum(int(row["sales.order_count"]) for row in regional["data"]) == expected
    assert sum(int(row["sales.order_count"]) for row in admin["data"]) > expected


def test_a_tenant_with_its_own_data_source_never_reads_a_rollup_built_from_another(core, store, tmp_path):
    # given a rollup built from the deployment's data source, which the administrator's load reads,
    deployment_configure(
        deployment=core.cast.deployment, model_dir=str(model_with_rollups(tmp_path / "model", rollups=STATUS_ONLY))
    )
    build_rollups(core.cast.deployment)
    query = {"measures": ["orders.count"], "dimensions": ["orders.status"]}
    assert used(load(core, query, core.token())) == "orders.status_only"
    # and tenant "a" whose own database holds half of those orders,
    own = _copy_dataset(core, tmp_path)
    with duckdb.connect(str(own)) as connection:
        connection.execute("DELETE FROM orders WHERE id % 2 = 0")
    deployment_configure(
        deployment=core.cast.deployment, tenant_data_sources=TenantDataSources("tenant", {"a": duckdb_url(own)})
    )

    # when tenant a's caller loads the query the rollup answers for the deployment's source,
    body = load(core, query, core.token(tenant="a"))

    # then its own database answers, never the rollup of another source's rows.
    assert used(body) is None
    expected = dict(duck_rows(own, "SELECT status, count(*) FROM orders GROUP BY status"))
    assert {row["orders.status"]: int(row["orders.count"]) for row in body["data"]} == expected


def test_a_partitioned_rollup_is_built_per_partition_and_read_as_one_table(core, store, tmp_path):
    # given
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model_with_rollups(tmp_path / "model")))
    build_rollups(core.cast.deployment)
    query = {
        "measures": ["sales.revenue"],
        "dimensions": ["sales.product_category"],
        "order": {"sales.revenue": "desc"},
    }

    # when
    body = load(core, query, core.token())

    # then: one partition per year of data (the demo's orders span 2023-2025), one table read
    partitions = PreAggregationPartition.objects.filter(pre_aggregation="orders.revenue_by_category")
    assert sorted(p.partition for p in partitions) == ["2023", "2024", "2025"]
    assert all(p.status == "built" and p.rows and p.table for p in partitions)
    assert used(body) == "orders.revenue_by_category"
    (status,) = [
        s
        for s in pre_aggregations_status(deployment=core.cast.deployment, serve=serve)
        if s.rollup.id == "orders.revenue_by_category"
    ]
    assert status.status == "built"
    assert len(status.partitions) == 3


def _copy_dataset(core: CoreApi, tmp_path: Path) -> Path:
    copy = tmp_path / "data" / "demo.duckdb"
    copy.parent.mkdir()
    shutil.copyfile(core.dataset, copy)
    return copy


def _add_orders(path: Path, how_many: int) -> None:
    """Append orders to a copy of the dataset and put it in place of ``path`` (the data source reopens it)."""
    fresh = path.with_name("next.duckdb")
    shutil.copyfile(path, fresh)
    with duckdb.connect(str(fresh)) as writer:
        writer.execute(
            "INSERT INTO orders SELECT id + 1000000, user_id, 'completed', amount, item_count, created_at, "
            "completed_at FROM orders ORDER BY id LIMIT ?",
            [how_many],
        )
    os.replace(fresh, path)


def _completed(core: CoreApi) -> tuple[int, str | None]:
    body = load(
        core,
        {
            "measures": ["orders.count"],
            "filters": [{"member": "orders.status", "operator": "equals", "values": ["completed"]}],
        },
        core.token(),
    )
    return int(body["data"][0]["orders.count"]), used(body)


BLOCKED_BUILD = """
import sys, time
import django
django.setup()
from embedadmin.semantic.serving import pre_aggregations, rollup_store
from embedadmin.semantic.tasks import serve

def stuck(**kwargs):
    print("writing", flush=True)
    time.sleep(3600)  # killed here, mid-build, its lease held

pre_aggregations.write_partition = stuck
print(pre_aggregations.pre_aggregation_partition_build(partition_id=int(sys.argv[1]), serve=serve, worker="doomed"))
"""


def test_a_build_killed_mid_way_leaves_readers_on_the_old_table_and_its_lease_is_taken_over(
    core, store, settings, tmp_path, on_postgres
):
    # given: a built rollup, then 25 more completed orders in the source
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "LEASE_STALE_SECONDS": 2.0}
    rollups = STATUS_ONLY
    data = _copy_dataset(core, tmp_path)
    model = model_with_rollups(tmp_path / "model", rollups=rollups)
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model), data_source_url=duckdb_url(data))
    build_rollups(core.cast.deployment)
    before, answered_by = _completed(core)
    assert answered_by == "orders.status_only"
    (partition,) = PreAggregationPartition.objects.filter(deployment=core.cast.deployment)
    old_table = partition.table
    _add_orders(data, 25)

    # when: a worker process starts its rebuild and is killed while writing the new table
    child = subprocess.Popen(
        [sys.executable, "-c", BLOCKED_BUILD, str(partition.pk)],
        cwd=REPO,
        env={
            "DATABASE_URL": database_url_for_subprocess(),
            "EMBEDADMIN_ALLOW_DEV_SECRET": "true",
            "DJANGO_SETTINGS_MODULE": "embedadmin.settings",
            "EMBEDADMIN_VAR_DIR": str(tmp_path / "var"),
            "PRE_AGGREGATIONS_DIR": str(store),
            "REDIS_URL": "",
            "PATH": "/usr/bin:/bin",
        },
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "writing"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()

    # then: the partition still points at the old table, under the dead worker's lease; readers read the old rows
    partition.refresh_from_db()
    assert (partition.status, partition.lease_owner, partition.table) == ("building", "doomed", old_table)
    assert _completed(core) == (before, "orders.status_only")
    assert pre_aggregation_partition_build(partition_id=partition.pk, serve=serve, worker="eager") == "busy"

    # when: the lease goes stale (its heartbeat stopped with the process), the next build takes it over
    deadline = time.monotonic() + 30
    outcome = "busy"
    while outcome == "busy" and time.monotonic() < deadline:
        time.sleep(0.5)
        outcome = pre_aggregation_partition_build(partition_id=partition.pk, serve=serve, worker="heir")

    # then: the new table is swapped in and read, the lease released
    assert outcome == "built"
    partition.refresh_from_db()
    assert (partition.status, partition.lease_owner) == ("built", "")
    assert partition.table != old_table
    assert _completed(core) == (before + 25, "orders.status_only")
    # the old table's file goes once its grace has passed; the current one stays
    assert remove_unreferenced(store / str(core.cast.deployment.pk), lambda: {partition.table}, older_than_s=0) >= 1
    assert (store / str(core.cast.deployment.pk) / partition.table).exists()


def _rows(deployment, rollup: str) -> list[PreAggregationPartition]:
    return list(
        PreAggregationPartition.objects.filter(deployment=deployment, pre_aggregation=rollup).order_by("partition")
    )


def test_refresh_keys_say_when_a_partition_is_rebuilt(core, store, tmp_path):
    # given: every rollup built at 10:00 UTC
    deployment = core.cast.deployment
    deployment_configure(deployment=deployment, model_dir=str(model_with_rollups(tmp_path / "model")))
    build_rollups(deployment)
    built_at = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    PreAggregationPartition.objects.filter(deployment=deployment).update(built_at=built_at, build_started_at=built_at)

    def due(now: datetime) -> set[tuple[str, str]]:
        queued: list[int] = []
        PreAggregationPartition.objects.filter(deployment=deployment).update(status="built", queued_at=None)
        pre_aggregations_refresh(deployment=deployment, serve=serve, enqueue=queued.append, now=now)
        return {(p.pre_aggregation, p.partition) for p in PreAggregationPartition.objects.filter(pk__in=queued)}

    # then: the default refresh_key (every 1 hour) is due in the next hour, not before
    assert ("orders.main", "") not in due(built_at + timedelta(minutes=59))
    assert ("orders.main", "") in due(built_at + timedelta(hours=1))
    # an incremental rollup (every 1 day, update_window 30 day) refreshes only the partitions the window reaches
    later = datetime(2026, 1, 20, tzinfo=UTC)  # 2025 ended within 30 days
    PreAggregationPartition.objects.filter(deployment=deployment).update(
        built_at=later - timedelta(days=2), build_started_at=later - timedelta(days=2)
    )
    refreshed = {partition for rollup, partition in due(later) if rollup == "orders.revenue_by_category"}
    assert refreshed == {"2025"}


def test_a_rebuild_asked_for_queues_every_partition_and_a_refresh_does_not_queue_twice(core, store, tmp_path):
    # given
    deployment = core.cast.deployment
    deployment_configure(deployment=deployment, model_dir=str(model_with_rollups(tmp_path / "model")))
    build_rollups(deployment)
    queued: list[int] = []

    # when
    count = pre_aggregations_rebuild(
        deployment=deployment, serve=serve, enqueue=queued.append, pre_aggregation="orders.revenue_by_category"
    )
    again = pre_aggregations_refresh(deployment=deployment, serve=serve, enqueue=queued.append)

    # then: its three partitions queued once; the built ones are not due again
    assert (count, len(queued), again) == (3, 3, 0)
    assert {p.status for p in _rows(deployment, "orders.revenue_by_category")} == {"queued"}
    assert {pre_aggregation_partition_build(partition_id=pk, serve=serve) for pk in queued} == {"built"}


def test_a_build_that_fails_records_its_error_and_the_source_answers(core, store, tmp_path):
    # given: a rollup whose cube's table is missing from the data source
    rollups = STATUS_ONLY
    model = model_with_rollups(tmp_path / "model", rollups=rollups)
    orders = model / "cubes" / "orders.yml"
    orders.write_text(orders.read_text().replace("sql_table: orders", "sql_table: missing_orders", 1))
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model))
    queued: list[int] = []
    pre_aggregations_refresh(deployment=core.cast.deployment, serve=serve, enqueue=queued.append)

    # when
    outcome = pre_aggregation_partition_build(partition_id=queued[0], serve=serve)

    # then
    assert outcome == "failed"
    (status,) = pre_aggregations_status(deployment=core.cast.deployment, serve=serve)
    assert status.status == "failed"
    assert "missing_orders" in status.partitions[0].error
    assert not status.served


def test_semantic_sql_is_answered_from_a_rollup_too(core, store, settings, tmp_path):
    # given
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model_with_rollups(tmp_path / "model")))
    build_rollups(core.cast.deployment)
    statement = {"query": "SELECT status, MEASURE(count) FROM orders GROUP BY 1 ORDER BY 1", "cache": "no-cache"}

    def lines() -> list[dict[str, Any]]:
        response = core.post("cubesql", statement)
        assert response.status_code == 200
        return [json.loads(line) for line in response.content.decode().splitlines()]

    # when
    from_rollup = lines()
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": False}
    from_source = lines()

    # then: the same rows; the schema line names the rollup
    (entry,) = from_rollup[0]["usedPreAggregations"].values()
    assert entry["preAggregationId"] == "orders.main"
    assert "usedPreAggregations" not in from_source[0]
    assert from_rollup[0]["schema"] == from_source[0]["schema"]
    assert from_rollup[1:] == from_source[1:]


@pytest.mark.parametrize("fault", ["unusable rollup home", "internal error"])
def test_one_deployments_failure_does_not_stop_the_refresh_of_the_deployments_after_it(
    core, store, tmp_path, caplog, monkeypatch, fault
):
    # given: a deployment whose rollup home's writer cannot be opened (a Trino URL naming no catalog: configured
    # before that was refused, as a deployment whose warehouse driver was uninstalled since) ...
    broken = core.cast.deployment
    deployment_configure(
        deployment=broken,
        model_dir=str(model_with_rollups(tmp_path / "broken", rollups=STATUS_ONLY)),
        data_source_url="trino://analyst@trino.example:8080/hive/shop",
        pre_aggregations_schema="rollups",
    )
    no_catalog = credentials.encrypt_secret("trino://analyst@trino.example:8080")
    Deployment.objects.filter(pk=broken.pk).update(data_source_url_encrypted=no_catalog)
    CREDENTIALS.bump()
    # ... and, after it, one whose rollup is due in the store
    later, _ = deployment_create(account=broken.account, name="Later", slug="later")
    deployment_configure(
        deployment=later,
        model_dir=str(model_with_rollups(tmp_path / "later", rollups=STATUS_ONLY)),
        data_source_url=duckdb_url(core.dataset),
    )
    assert broken.pk < later.pk
    queued: list[int] = []
    monkeypatch.setattr(tasks, "enqueue_build", queued.append)
    message = "Trino URL names no catalog"
    if fault == "internal error":  # a fault of ours while serving the first deployment's model
        message = "a fault of ours"
        served = tasks.serve

        def serve_or_fail(deployment):
            if deployment.pk == broken.pk:
                raise RuntimeError(message)
            return served(deployment)

        monkeypatch.setattr(tasks, "serve", serve_or_fail)

    # when: the periodic task runs
    tasks.refresh_pre_aggregations()

    # then: the second deployment's rollup is queued and builds; the first one's failure is logged with its id
    (row,) = PreAggregationPartition.objects.filter(deployment=later)
    assert row.pk in queued
    assert pre_aggregation_partition_build(partition_id=row.pk, serve=serve) == "built"
    assert any(
        f"deployment {broken.pk}" in r.getMessage() and message in r.getMessage() + str(r.exc_info and r.exc_info[1])
        for r in caplog.records
    )


@pytest.mark.postgres
def test_a_heartbeat_whose_database_connection_breaks_renews_the_lease_on_a_new_one(core, store, settings, tmp_path):
    # given: a partition under a build's lease, renewed every 0.1 s
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "HEARTBEAT_SECONDS": 0.1}
    deployment = core.cast.deployment
    model = model_with_rollups(tmp_path / "model", rollups=STATUS_ONLY)
    deployment_configure(deployment=deployment, model_dir=str(model))
    build_rollups(deployment)
    (row,) = _rows(deployment, "orders.status_only")
    assert pre_aggregations._claim(row.pk, "beating")

    def renewed_after(moment: datetime) -> bool:
        return PreAggregationPartition.objects.get(pk=row.pk).lease_heartbeat_at > moment

    with pre_aggregations._Heartbeat(row.pk, "beating") as heartbeat:
        claimed = PreAggregationPartition.objects.get(pk=row.pk).lease_heartbeat_at
        wait_until(lambda: renewed_after(claimed), "the lease renewed", timeout=30, every=0.05)

        # when: the database ends the heartbeat's connection (every connection of the test database but this one)
        with db_connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            cursor.execute("SELECT clock_timestamp()")
            (ended_at,) = cursor.fetchone()

        # then: the lease is renewed again, on a new connection, and the build goes on
        wait_until(lambda: renewed_after(ended_at), "the lease renewed after the error", timeout=30, every=0.05)
        assert heartbeat.alive()
