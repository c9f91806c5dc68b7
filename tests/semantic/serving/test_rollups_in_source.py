"""Rollups kept in the data source itself (a deployment's pre-aggregations schema), on real PostgreSQL, MariaDB and
ClickHouse (chDB; a database is the schema on the last two): built into new tables of that schema through a build
connection of their own, swapped by the pointer row, answering ``/v1/load`` on the source exactly as the source does,
a stopped or failed build leaving no table, a stalled or killed build's table dropped by the build taking its lease
over, replaced tables marked then collected, the query path never writing and the build never using the query
path's read-only source. The warehouses' writers: ``test_rollup_writers_warehouses.py``.
"""

# ruff: noqa: F811  (fixtures imported from other test modules are redefined as test arguments, as pytest wants)

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from embedadmin.accounts.selectors import deployment_data_source_url
from embedadmin.accounts.services import TenantDataSources, deployment_configure
from embedadmin.audit.models import AuditEntry
from embedadmin.semantic.errors import DataSourceError
from embedadmin.semantic.models import PreAggregationPartition
from embedadmin.semantic.serving import pre_aggregations
from embedadmin.semantic.serving.pre_aggregations import (
    pre_aggregation_partition_build,
    pre_aggregations_collect_garbage,
    pre_aggregations_status,
)
from embedadmin.semantic.serving.rollup_source import UNREFERENCED
from embedadmin.semantic.serving.rollup_store import BuildStopped
from embedadmin.semantic.serving.rollup_writers import postgres as postgres_writer
from embedadmin.semantic.serving.rollup_writers import source_tables
from embedadmin.semantic.sources.postgres import PostgresSource
from embedadmin.semantic.tasks import serve
from tests.asgi_server import database_url_for_subprocess
from tests.schemas import qualified_model
from tests.semantic.http_support import (  # noqa: F401
    DEMO_MODEL,
    CoreApi,
    core,
    demo_duckdb,
    fresh_semantic_state,
)
from tests.semantic.rollup_homes import HOMES, Home, mysql_demo, new_home  # noqa: F401
from tests.semantic.rollup_support import build_rollups, model_with_rollups
from tests.semantic.serving.test_pre_aggregations import (
    ANSWERED_BY,
    STATUS_ONLY,
    keys_of,
    load,
    same_rows,
    store,  # noqa: F401
    used,
)
from tests.semantic.sql.test_clickhouse_queries import clickhouse_demo  # noqa: F401
from tests.semantic.sql.test_cross_database import CASES, _api_value, _value, postgres_demo  # noqa: F401
from tests.waiting import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def rollup_schema(postgres_demo) -> Any:
    """A fresh schema name for this test's rollups, dropped afterwards."""
    url, _ = postgres_demo
    schema = f"rollups_{uuid.uuid4().hex[:8]}"
    yield schema
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=HOMES)
def home(request, postgres_demo) -> Any:
    """A data source that holds rollups, with the demo dataset and a fresh rollup schema (dropped afterwards)."""
    found = new_home(request.param, request)
    yield found
    found.drop_schema()


def rollups_in_source(core: CoreApi, tmp_path: Path, postgres_demo, schema: str, rollups: dict[str, str] | None = None):
    """The deployment on the PostgreSQL copy of the demo data, its rollups kept in ``schema`` of it."""
    url, data_schema = postgres_demo
    return rollups_in(core, tmp_path, Home("postgres", url, data_schema, schema), rollups)


def _built_once_the_lease_is_stale(partition: Any) -> list[str]:
    """What an heir's build of ``partition`` answers, tried until it is not "busy" (the stale lease taken over)."""
    outcomes: list[str] = []
    wait_until(
        lambda: (
            outcomes.append(pre_aggregation_partition_build(partition_id=partition.pk, serve=serve, worker="heir"))
            or outcomes[-1] != "busy"
        ),
        "the stale lease taken over",
        timeout=30,
        every=0.2,
    )
    return outcomes


def rollups_in(
    core: CoreApi,
    tmp_path: Path,
    home: Home,
    rollups: dict[str, str] | None = None,
    edit: Callable[[Path], object] | None = None,
) -> str:
    """The deployment on ``home``'s demo data, its rollups kept in ``home``'s rollup schema (``edit``: a change to the
    model's folder before it is configured)."""
    plain = qualified_model(DEMO_MODEL, tmp_path / "plain", home.data_schema)
    model = model_with_rollups(tmp_path / "model", source=plain, rollups=rollups)
    if edit is not None:
        edit(model)
    deployment_configure(
        deployment=core.cast.deployment,
        model_dir=str(model),
        data_source_url=home.url,
        pre_aggregations_schema=home.schema,
    )
    core.cast.deployment.refresh_from_db()
    return home.url


def tables_in(url: str, schema: str) -> set[str]:
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r'",
            [schema],
        ).fetchall()
    return {name for (name,) in rows}


def pg_rows(postgres_demo: tuple[str, str], case: Any) -> list[tuple[Any, ...]]:
    """A case's hand-written SQL on the PostgreSQL copy of the demo data (every home holds the same rows)."""
    url, schema = postgres_demo
    with psycopg.connect(url, options="-c TimeZone=UTC") as connection:
        return connection.execute(case.sql.format(t=f'"{schema}".')).fetchall()


def test_every_oracle_query_shape_answers_from_rollups_in_the_source_as_the_source_does(
    core, store, settings, tmp_path, postgres_demo, home
):
    # given: the demo model with rollups, kept in a schema of the source, built
    rollups_in(core, tmp_path, home)
    outcomes = build_rollups(core.cast.deployment)
    assert outcomes
    assert set(outcomes.values()) == {"built"}
    rows = PreAggregationPartition.objects.filter(deployment=core.cast.deployment)
    assert {r.schema for r in rows} == {home.schema}
    assert {r.table for r in rows} <= home.tables()
    assert all(r.rows and r.rows > 0 and r.bytes and r.bytes > 0 for r in rows)
    assert not list(Path(store).glob("**/*.duckdb"))  # nothing in the DuckDB store

    for name, case in CASES.items():
        token = core.token(**case.claims) if case.claims else core.token()

        # when: asked with the rollups, then of the data source alone
        from_rollups = load(core, case.query, token)
        settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": False}
        from_source = load(core, case.query, token)
        settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": True}

        # then: the same rows, from the rollup's table in the source's schema; as PostgreSQL's hand-written SQL
        assert used(from_rollups) == ANSWERED_BY[name], name
        assert used(from_source) is None
        assert same_rows(from_rollups["data"], from_source["data"]), name
        assert from_rollups["annotation"] == from_source["annotation"]
        if ANSWERED_BY[name] is not None:
            (entry,) = from_rollups["usedPreAggregations"].values()
            assert entry["targetTableName"].startswith(f"{home.schema}.r{core.cast.deployment.pk}_"), name
        got = [tuple(_api_value(row[k]) for k in keys_of(case.query)) for row in from_rollups["data"]]
        expected = [tuple(_value(v) for v in row) for row in pg_rows(postgres_demo, case)]
        assert got == expected, name


def test_a_calculated_measure_that_divides_runs_in_the_sources_dialect(core, store, settings, tmp_path, home):
    # given: completion_rate = 1.0 * completed_count / NULLIF(count, 0) in a rollup kept in the source
    rates = {
        "orders": """
    pre_aggregations:
      - name: rates
        measures: [count, completed_count, completion_rate]
        dimensions: [status]
"""
    }
    rollups_in(core, tmp_path, home, rollups=rates)
    build_rollups(core.cast.deployment)
    query = {
        "measures": ["orders.completion_rate", "orders.count"],
        "dimensions": ["orders.status"],
        "order": {"orders.status": "asc"},
    }

    # when
    from_rollup = load(core, query, core.token())
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": False}
    from_source = load(core, query, core.token())

    # then: answered from the rollup (in the store it is not: DuckDB's arithmetic), equal to the source's
    assert used(from_rollup) == "orders.rates"
    assert from_rollup["data"] == from_source["data"]


def test_the_sql_endpoint_shows_the_statement_on_the_sources_tables(core, store, tmp_path, home):
    # given
    rollups_in(core, tmp_path, home)
    build_rollups(core.cast.deployment)
    (row,) = PreAggregationPartition.objects.filter(pre_aggregation="orders.main")

    # when
    body = core.post("sql", {"query": {"measures": ["orders.count"], "dimensions": ["orders.status"]}}).json()["sql"]

    # then: the source's SQL on the partition's table in the schema
    ddl = home.ddl
    assert f"FROM {ddl.table(home.schema, row.table)} AS {ddl.identifier('orders__main')}" in body["sql"][0]
    assert f"SUM({ddl.identifier('orders__main')}.{ddl.identifier('orders__count')})" in body["sql"][0]
    (described,) = body["preAggregations"]
    assert described["preAggregationId"] == "orders.main"
    assert described["targetTableName"] == f"{home.schema}.{row.table}"
    assert described["external"] is False  # Cube's word for "in the source database"


def test_a_partitioned_rollup_is_read_as_a_union_of_its_tables(core, store, tmp_path, home):
    # given
    rollups_in(core, tmp_path, home)
    build_rollups(core.cast.deployment)
    partitions = PreAggregationPartition.objects.filter(pre_aggregation="orders.revenue_by_category")
    query = {"measures": ["sales.revenue"], "dimensions": ["sales.product_category"]}

    # when
    body = core.post("sql", {"query": query}).json()["sql"]

    # then
    assert sorted(p.partition for p in partitions) == ["2023", "2024", "2025"]
    assert body["sql"][0].count("UNION ALL") == 2
    for partition in partitions:
        assert home.ddl.table(home.schema, partition.table) in body["sql"][0]


class Recorded:
    """The statements the query path's PostgreSQL source ran, and the build connections opened."""

    def __init__(self, monkeypatch) -> None:
        self.queries: list[str] = []
        self.build_connections = 0
        execute = PostgresSource.execute
        connect = postgres_writer.PostgresRollupWriter._connect

        def recording_execute(source, sql, params, **kwargs):
            self.queries.append(sql)
            return execute(source, sql, params, **kwargs)

        def recording_connect(writer):
            self.build_connections += 1
            return connect(writer)

        monkeypatch.setattr(PostgresSource, "execute", recording_execute)
        monkeypatch.setattr(postgres_writer.PostgresRollupWriter, "_connect", recording_connect)


def test_builds_write_through_their_own_connection_and_queries_never_write(
    core, store, tmp_path, postgres_demo, rollup_schema, monkeypatch
):
    # given
    url = rollups_in_source(core, tmp_path, postgres_demo, rollup_schema, rollups=STATUS_ONLY)
    recorded = Recorded(monkeypatch)

    # when: the rollup is built
    build_rollups(core.cast.deployment)

    # then: its table was written through the build's connection; nothing went through the query path's source
    assert recorded.build_connections >= 1
    assert not [q for q in recorded.queries if q.lstrip().upper().startswith(("CREATE", "INSERT", "DROP"))]

    # when: a viewer's query is answered from the rollup
    recorded.queries.clear()
    opened = recorded.build_connections
    body = load(core, {"measures": ["orders.count"], "dimensions": ["orders.status"]}, core.token())

    # then: through the query path's read-only source, reading the table; no build connection opened
    assert used(body) == "orders.status_only"
    assert recorded.build_connections == opened
    assert any(rollup_schema in q for q in recorded.queries)
    # and that source's transactions are read only: a write through it is refused by PostgreSQL
    (row,) = PreAggregationPartition.objects.filter(deployment=core.cast.deployment)
    from embedadmin.semantic.sources.registry import get_data_source

    with pytest.raises(Exception, match="read-only transaction"):
        get_data_source(url).execute(f'DELETE FROM "{rollup_schema}"."{row.table}"', [], timeout_s=5)


def _completed(core: CoreApi) -> tuple[int, str | None, str | None]:
    body = load(
        core,
        {
            "measures": ["orders.count"],
            "filters": [{"member": "orders.status", "operator": "equals", "values": ["completed"]}],
        },
        core.token(),
    )
    entries = body.get("usedPreAggregations") or {}
    table = next(iter(entries.values()))["targetTableName"] if entries else None
    return int(body["data"][0]["orders.count"]), used(body), table


def writer_class(home: Home) -> type:
    """The class of ``home``'s rollup writer (what a test holds or stops mid-build)."""
    return type(source_tables(home.url))


def test_a_reader_during_a_rebuild_sees_the_old_table_until_the_new_one_is_swapped_in(
    core, store, tmp_path, home, monkeypatch
):
    # given: a built rollup, then 25 more completed orders in the source
    rollups_in(core, tmp_path, home, rollups=STATUS_ONLY)
    build_rollups(core.cast.deployment)
    before, answered_by, old_table = _completed(core)
    assert answered_by == "orders.status_only"
    home.add_completed_orders(25)
    try:
        # and a rebuild held once its rows are written (PostgreSQL: before its transaction commits)
        inserted, release = threading.Event(), threading.Event()
        kind = writer_class(home)
        write = kind.write

        def held_write(writer, **kwargs):
            keep_going = kwargs.pop("keep_going")
            calls: list[int] = []

            def wait_then_go() -> bool:
                calls.append(1)
                if len(calls) == (1 if home.kind == "postgres" else 2):  # the check after the table is written
                    inserted.set()
                    assert release.wait(60)
                return keep_going()

            return write(writer, keep_going=wait_then_go, **kwargs)

        monkeypatch.setattr(kind, "write", held_write)
        (row,) = PreAggregationPartition.objects.filter(deployment=core.cast.deployment)
        outcome: list[str] = []
        builder = threading.Thread(
            target=lambda: outcome.append(pre_aggregation_partition_build(partition_id=row.pk, serve=serve))
        )
        builder.start()
        try:
            assert inserted.wait(60)

            # when: a reader reads meanwhile
            during = _completed(core)
            row.refresh_from_db()
            building = row.building_table

            # then: the old table, whole; the new one is named by no row a reader reads (on PostgreSQL not even
            # visible outside its transaction)
            assert during == (before, "orders.status_only", old_table)
            assert building
            assert (building in home.tables()) is (home.kind != "postgres")
        finally:
            release.set()
            builder.join(60)

        # when the build swaps, the reader reads the new table, with the new orders
        assert outcome == ["built"]
        after = _completed(core)
        assert after[:2] == (before + 25, "orders.status_only")
        assert after[2] == f"{home.schema}.{building}"
        assert building in home.tables()
    finally:
        home.remove_added_orders()


@pytest.mark.parametrize("stop", ["stopped", "failed"])
def test_a_stopped_or_failed_build_leaves_no_table(core, store, tmp_path, home, stop):
    # given: the writer of the home, a build statement of the source's dialect
    writer = source_tables(home.url)
    table = f"r{core.cast.deployment.pk}_scratch_{stop}"
    answers = iter([True] * (0 if home.kind == "postgres" else 1) + [False])
    arguments = {
        "schema": home.schema,
        "table": table,
        "sql": f"SELECT status AS orders__status, COUNT(*) AS orders__count FROM {home.orders()} GROUP BY status",
        "params": [],
        "columns": ["orders__status", "orders__count"],
        "timeout_s": 30,
    }

    # when: the lease is lost once the table is written (PostgreSQL: before it commits), or an index cannot be made
    if stop == "stopped":
        with pytest.raises(BuildStopped):
            writer.write(**arguments, indexes=[], keep_going=lambda: next(answers))
    else:
        with pytest.raises(DataSourceError):
            writer.write(**arguments, indexes=[["no_such_column"]], keep_going=lambda: True)

    # then: nothing of it is left in the schema
    assert table not in home.tables()


def test_a_stalled_builds_table_is_dropped_by_the_build_taking_its_lease_over_and_replaced_tables_are_collected(
    core, store, settings, tmp_path, home, monkeypatch
):
    # given: a built rollup in the source
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "LEASE_STALE_SECONDS": 2.0, "FILE_GRACE_SECONDS": 0}
    rollups_in(core, tmp_path, home, rollups=STATUS_ONLY)
    build_rollups(core.cast.deployment)
    (partition,) = PreAggregationPartition.objects.filter(deployment=core.cast.deployment)
    old_table = partition.table
    before = _completed(core)

    # and a worker that writes its new table, then stalls before swapping it in, its heartbeat stopped
    heartbeat = pre_aggregations._Heartbeat._run
    monkeypatch.setattr(
        pre_aggregations._Heartbeat, "_run", lambda beat: None if beat.worker == "doomed" else heartbeat(beat)
    )
    kind = writer_class(home)
    write = kind.write
    written, release = threading.Event(), threading.Event()

    def written_then_stalled(writer, **kwargs):
        done = write(writer, **kwargs)
        if threading.current_thread().name == "doomed":
            written.set()
            assert release.wait(60)
        return done

    monkeypatch.setattr(kind, "write", written_then_stalled)
    doomed: list[str] = []
    stalled = threading.Thread(
        target=lambda: doomed.append(
            pre_aggregation_partition_build(partition_id=partition.pk, serve=serve, worker="doomed")
        ),
        name="doomed",
    )
    stalled.start()
    try:
        assert written.wait(60)

        # then: the orphan exists, named on the row under the stalled worker's lease; readers read the old table
        partition.refresh_from_db()
        orphan = partition.building_table
        assert (partition.lease_owner, partition.table) == ("doomed", old_table)
        assert orphan in home.tables()
        assert _completed(core) == before

        # when: the lease goes stale, the next build takes it over
        outcomes = _built_once_the_lease_is_stale(partition)
    finally:
        release.set()
        stalled.join(60)

    # then: the orphan is dropped, the new table swapped in; the stalled worker's late swap is refused
    assert outcomes[-1] == "built"
    assert doomed == ["lost"]
    partition.refresh_from_db()
    assert (partition.status, partition.lease_owner, partition.building_table) == ("built", "", "")
    assert orphan not in home.tables()
    assert partition.table not in (old_table, orphan)
    assert _completed(core)[2] == f"{home.schema}.{partition.table}"

    # when: the garbage collection runs twice (the first marks the replaced table, the next drops it)
    assert pre_aggregations_collect_garbage(deployment=core.cast.deployment, serve=serve) == 0
    assert old_table in home.tables()
    assert home.comment(old_table).startswith("embedadmin rollup unreferenced since ")
    dropped = pre_aggregations_collect_garbage(deployment=core.cast.deployment, serve=serve)

    # then: only the current table is left
    assert dropped == 1
    assert home.tables() == {partition.table}


KILLED_BUILD = """
import sys, time
import django
django.setup()
from embedadmin.semantic.serving import pre_aggregations
from embedadmin.semantic.serving.rollup_writers import postgres
from embedadmin.semantic.tasks import serve

write = postgres.PostgresRollupWriter.write

def written_then_stuck(writer, **kwargs):
    done = write(writer, **kwargs)  # the table is committed, complete
    print("written", done.file, flush=True)
    time.sleep(3600)  # killed here, before the swap, its lease held

postgres.PostgresRollupWriter.write = written_then_stuck
pre_aggregations.pre_aggregation_partition_build(partition_id=int(sys.argv[1]), serve=serve, worker="doomed")
"""


def test_a_killed_builds_table_is_dropped_by_the_build_taking_its_lease_over_and_replaced_tables_are_collected(
    core, store, settings, tmp_path, postgres_demo, rollup_schema
):
    # given: a built rollup in the source
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "LEASE_STALE_SECONDS": 2.0, "FILE_GRACE_SECONDS": 0}
    url, _ = postgres_demo
    rollups_in_source(core, tmp_path, postgres_demo, rollup_schema, rollups=STATUS_ONLY)
    build_rollups(core.cast.deployment)
    (partition,) = PreAggregationPartition.objects.filter(deployment=core.cast.deployment)
    old_table = partition.table
    before = _completed(core)

    # when: a worker process commits its new table and is killed before swapping it in
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_BUILD, str(partition.pk)],
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
        line = child.stdout.readline().split()
        assert line[0] == "written"
        orphan = line[1]
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()

    # then: the orphan exists, named on the row under the dead worker's lease; readers read the old table
    partition.refresh_from_db()
    assert (partition.lease_owner, partition.table, partition.building_table) == ("doomed", old_table, orphan)
    assert orphan in tables_in(url, rollup_schema)
    assert _completed(core) == before

    # when: the lease goes stale, the next build takes it over
    outcomes = _built_once_the_lease_is_stale(partition)

    # then: the orphan is dropped, the new table swapped in
    assert outcomes[-1] == "built"
    partition.refresh_from_db()
    assert (partition.status, partition.lease_owner, partition.building_table) == ("built", "", "")
    assert orphan not in tables_in(url, rollup_schema)
    assert partition.table not in (old_table, orphan)
    assert _completed(core)[2] == f"{rollup_schema}.{partition.table}"

    # when: the garbage collection runs twice (the first marks the replaced table, the next drops it)
    pre_aggregations_collect_garbage(deployment=core.cast.deployment, serve=serve)
    assert old_table in tables_in(url, rollup_schema)
    dropped = pre_aggregations_collect_garbage(deployment=core.cast.deployment, serve=serve)

    # then: only the current table is left
    assert dropped == 1
    assert tables_in(url, rollup_schema) == {partition.table}


def test_a_tenant_with_its_own_data_source_never_reads_rollups_built_from_another(
    core, store, tmp_path, postgres_demo, rollup_schema
):
    # given: rollups built in the deployment's source, and tenant a on another source (its own URL)
    url = rollups_in_source(core, tmp_path, postgres_demo, rollup_schema, rollups=STATUS_ONLY)
    build_rollups(core.cast.deployment)
    query = {"measures": ["orders.count"], "dimensions": ["orders.status"]}
    admin = load(core, query, core.token())
    assert used(admin) == "orders.status_only"
    own = f"{url}{'&' if '?' in url else '?'}application_name=tenant_a"
    deployment_configure(deployment=core.cast.deployment, tenant_data_sources=TenantDataSources("tenant", {"a": own}))

    # when
    body = load(core, query, core.token(tenant="a"))

    # then: its own source answers
    assert used(body) is None
    assert body["data"] == admin["data"]


def test_original_sql_and_lambdas_with_source_rows_are_unusable_in_the_source_with_the_reason(
    core, store, tmp_path, postgres_demo, rollup_schema
):
    # given
    rollups = {
        "orders": """
    pre_aggregations:
      - name: recent
        type: rollup_lambda
        union_with_source_data: true
        rollups: [batch]
      - name: batch
        measures: [count]
        dimensions: [status]
        time_dimension: created_at
        granularity: day
        partition_granularity: year
      - name: base
        type: original_sql
"""
    }
    rollups_in_source(core, tmp_path, postgres_demo, rollup_schema, rollups=rollups)

    # when
    statuses = {s.rollup.id: s for s in pre_aggregations_status(deployment=core.cast.deployment, serve=serve)}

    # then
    assert statuses["orders.recent"].status == "unusable"
    assert "union_with_source_data" in (statuses["orders.recent"].problem or "")
    assert statuses["orders.base"].status == "unusable"
    assert "DuckDB store only" in (statuses["orders.base"].problem or "")
    assert statuses["orders.batch"].problem is None


# -- the setting ------------------------------------------------------------------------------------------------------


def test_the_setting_is_answered_patched_and_audited_through_the_platform_api(core, postgres_demo):
    url, _ = postgres_demo
    deployment_configure(deployment=core.cast.deployment, data_source_url=url)
    path = f"/api/v1/deployments/{core.cast.deployment.pk}"
    headers = core.cast.platform_headers

    before = core.client.get(path, **headers).json()
    moved = core.client.patch_json(
        path, {"preAggregationStorage": {"location": "source", "schema": "rollups"}}, **headers
    )
    back = core.client.patch_json(path, {"preAggregationStorage": {"location": "store"}}, **headers)

    assert before["preAggregationStorage"] == {"location": "store", "schema": None}
    assert moved.status_code == 200
    assert moved.json()["preAggregationStorage"] == {"location": "source", "schema": "rollups"}
    assert back.json()["preAggregationStorage"] == {"location": "store", "schema": None}
    entry = AuditEntry.objects.filter(resource_type="deployment", resource_id=str(core.cast.deployment.pk)).latest("id")
    assert entry.details["fields"] == ["preAggregationStorage"]


@pytest.mark.parametrize(
    ("storage", "error"),
    [
        ({"location": "source", "schema": "Rollups"}, "preAggregationStorage.schema: a schema name"),
        ({"location": "source", "schema": "pg_rollups"}, "preAggregationStorage.schema: a schema name"),
        ({"location": "source", "schema": "1rollups"}, "preAggregationStorage.schema: a schema name"),
        ({"location": "source", "schema": 'x"; DROP TABLE orders; --'}, "preAggregationStorage.schema: a schema name"),
        ({"location": "source", "schema": "public"}, "preAggregationStorage.schema: a schema name"),
        ({"location": "source", "schema": "r" * 64}, "preAggregationStorage.schema: a schema name"),
        ({"location": "source", "schema": 5}, "preAggregationStorage.schema: location source needs a schema name"),
        ({"location": "source"}, "preAggregationStorage.schema: location source needs a schema name"),
        ({"location": "store", "schema": "rollups"}, "preAggregationStorage.schema: only with location source"),
        ({"location": "elsewhere"}, "preAggregationStorage.location: must be store or source"),
        ("source", "preAggregationStorage: must be an object {location, schema}"),
        ({"location": "source", "schema": "ok", "extra": 1}, "preAggregationStorage: must be an object"),
    ],
)
def test_a_bad_setting_is_refused_and_changes_nothing(core, postgres_demo, storage, error):
    url, _ = postgres_demo
    deployment_configure(deployment=core.cast.deployment, data_source_url=url)
    path = f"/api/v1/deployments/{core.cast.deployment.pk}"

    response = core.client.patch_json(
        path, {"name": "renamed", "preAggregationStorage": storage}, **core.cast.platform_headers
    )

    assert response.status_code == 400
    assert response.json()["error"].startswith(error)
    core.cast.deployment.refresh_from_db()
    assert core.cast.deployment.pre_aggregations_schema == ""
    assert core.cast.deployment.name != "renamed"


@pytest.mark.parametrize("url", [None, "oracle://scott@db.example/orcl", "duckdb:///var/demo.duckdb"])
def test_a_source_that_cannot_hold_rollups_is_refused(core, url):
    # given: the deployment's DuckDB data source (the core fixture's), or a source with no rollup writer
    if url is not None:
        deployment_configure(deployment=core.cast.deployment, data_source_url=url)
    path = f"/api/v1/deployments/{core.cast.deployment.pk}"

    # when
    response = core.client.patch_json(
        path, {"preAggregationStorage": {"location": "source", "schema": "rollups"}}, **core.cast.platform_headers
    )

    # then
    assert response.status_code == 400
    error = response.json()["error"]
    assert error.startswith("preAggregationStorage: rollups live in the data source only for PostgreSQL, MySQL/MariaDB")
    for scheme in ("postgresql://", "mysql://", "clickhouse://", "chdb://", "bigquery://"):
        assert f"{scheme}," in error, scheme
    core.cast.deployment.refresh_from_db()
    assert core.cast.deployment.pre_aggregations_schema == ""


@pytest.mark.parametrize(
    "url",
    [
        "mysql://reader@db.example/shop",
        "mariadb://reader@db.example/shop",
        "clickhouse://reader@ch.example:8123/shop",
        "chdb:///var/shop",
        "trino://etl@trino.example/hive/shop",
        "snowflake://analyst:pw@myorg-acct/SHOP/PUBLIC",
        "bigquery://my-project/shop",
        "databricks://token:t@host/main?http_path=/sql/1.0/warehouses/a",
    ],
)
def test_mysql_clickhouse_and_the_warehouses_may_hold_rollups(core, url):
    # given: the deployment on that source
    deployment_configure(deployment=core.cast.deployment, data_source_url=url)

    # when
    response = core.client.patch_json(
        f"/api/v1/deployments/{core.cast.deployment.pk}",
        {"preAggregationStorage": {"location": "source", "schema": "rollups"}},
        **core.cast.platform_headers,
    )

    # then
    assert response.status_code == 200, response.content
    assert response.json()["preAggregationStorage"] == {"location": "source", "schema": "rollups"}


def test_configure_deployment_sets_the_schema(core, postgres_demo):
    url, _ = postgres_demo
    out = io.StringIO()

    call_command(
        "configure_deployment",
        str(core.cast.deployment.pk),
        "--data-source",
        url,
        "--pre-aggregations-schema",
        "rollups",
        "--json",
        stdout=out,
    )

    core.cast.deployment.refresh_from_db()
    assert core.cast.deployment.pre_aggregations_schema == "rollups"
    assert json.loads(out.getvalue())["preAggregationStorage"] == {"location": "source", "schema": "rollups"}


def test_the_schema_is_part_of_the_rollups_structure(core, store, tmp_path, postgres_demo, rollup_schema):
    # given: rollups built in one schema
    rollups_in_source(core, tmp_path, postgres_demo, rollup_schema, rollups=STATUS_ONLY)
    build_rollups(core.cast.deployment)
    first = set(PreAggregationPartition.objects.values_list("structure", flat=True))

    # when: the deployment moves them back to the store
    deployment_configure(deployment=core.cast.deployment, pre_aggregations_schema="")
    core.cast.deployment.refresh_from_db()
    body = load(core, {"measures": ["orders.count"], "dimensions": ["orders.status"]}, core.token())

    # then: nothing built for the store yet: the source answers, until the store's partitions are built
    assert used(body) is None
    build_rollups(core.cast.deployment)
    assert set(PreAggregationPartition.objects.values_list("structure", flat=True)) - first
    assert used(load(core, {"measures": ["orders.count"], "dimensions": ["orders.status"]}, core.token()))


def mark(home: Home, table: str, note: str) -> None:
    """Set ``table``'s comment as the garbage collection does."""
    writer = source_tables(home.url)
    statement = getattr(writer, "comment_statement", None)
    if statement is None:  # PostgreSQL
        home.run(f"COMMENT ON TABLE {home.ddl.table(home.schema, table)} IS {home.ddl.literal(note)}")
    else:
        home.run(statement(home.schema, table, note))


def test_a_table_marked_while_in_flight_then_referenced_then_replaced_is_kept_its_grace_period(
    core, store, settings, tmp_path, home
):
    # given: a built rollup whose table a collection marked an hour ago, while a build was writing it
    rollups_in(core, tmp_path, home, rollups=STATUS_ONLY)
    build_rollups(core.cast.deployment)
    (partition,) = PreAggregationPartition.objects.filter(deployment=core.cast.deployment)
    first = partition.table
    mark(home, first, f"{UNREFERENCED}{int(time.time()) - 3600}")

    # when: a collection finds it referenced
    assert pre_aggregations_collect_garbage(deployment=core.cast.deployment, serve=serve) == 0

    # then: its mark is void, cleared
    assert first in home.tables()
    assert not home.comment(first).startswith(UNREFERENCED)

    # when: a rebuild replaces it, then the collection runs
    replaced_at = int(time.time())
    assert pre_aggregation_partition_build(partition_id=partition.pk, serve=serve) == "built"
    assert pre_aggregations_collect_garbage(deployment=core.cast.deployment, serve=serve) == 0

    # then: it is kept, marked with the time it was found unreferenced (dropped once the grace period has passed)
    assert first in home.tables()
    note = home.comment(first)
    assert note.startswith(UNREFERENCED)
    assert int(note.removeprefix(UNREFERENCED)) >= replaced_at


def test_a_table_swapped_in_while_the_schema_is_collected_is_in_use(core, store, tmp_path, home, monkeypatch):
    # given: a built rollup in the source
    rollups_in(core, tmp_path, home, rollups=STATUS_ONLY)
    build_rollups(core.cast.deployment)
    (partition,) = PreAggregationPartition.objects.filter(deployment=core.cast.deployment)
    first = partition.table

    # and a rebuild that swaps its new table in as the collection starts on the schema
    kind = writer_class(home)
    unreferenced = kind.unreferenced

    def rebuilt_then_collected(writer, *args, **kwargs):
        assert pre_aggregation_partition_build(partition_id=partition.pk, serve=serve) == "built"
        return unreferenced(writer, *args, **kwargs)

    monkeypatch.setattr(kind, "unreferenced", rebuilt_then_collected)

    # when
    pre_aggregations_collect_garbage(deployment=core.cast.deployment, serve=serve)

    # then: the table swapped in is unmarked, the replaced one marked
    partition.refresh_from_db()
    assert partition.table != first
    assert home.tables() == {first, partition.table}
    assert not home.comment(partition.table).startswith(UNREFERENCED)
    assert home.comment(first).startswith(UNREFERENCED)


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("trino://analyst@trino.example:8080", "preAggregationStorage: Trino URL names no catalog"),
        ("snowflake://analyst:pw@myorg-acct", "preAggregationStorage: Snowflake URL names no database"),
    ],
)
def test_a_source_whose_rollup_writer_cannot_be_made_is_refused_and_nothing_changes(core, url, error):
    # given: the deployment on a source of a kind that holds rollups, whose URL does not say where
    deployment_configure(deployment=core.cast.deployment, data_source_url=url)
    path = f"/api/v1/deployments/{core.cast.deployment.pk}"

    # when: its rollups are set to live there (with a rename in the same request)
    response = core.client.patch_json(
        path,
        {"name": "renamed", "preAggregationStorage": {"location": "source", "schema": "rollups"}},
        **core.cast.platform_headers,
    )

    # then
    assert response.status_code == 400
    assert response.json()["error"].startswith(error)
    core.cast.deployment.refresh_from_db()
    assert core.cast.deployment.pre_aggregations_schema == ""
    assert core.cast.deployment.name != "renamed"


def test_a_data_source_whose_rollup_writer_cannot_be_made_is_refused_while_rollups_live_in_it(core):
    # given: rollups kept in a schema of a Trino catalog
    good = "trino://etl@trino.example/hive/shop"
    deployment_configure(deployment=core.cast.deployment, data_source_url=good, pre_aggregations_schema="rollups")

    # when: configure_deployment sets a URL naming no catalog
    with pytest.raises(CommandError, match="Trino URL names no catalog"):
        call_command(
            "configure_deployment", str(core.cast.deployment.pk), "--data-source", "trino://etl@trino.example:8080"
        )

    # then: nothing changed
    core.cast.deployment.refresh_from_db()
    assert deployment_data_source_url(deployment=core.cast.deployment) == good
    assert core.cast.deployment.pre_aggregations_schema == "rollups"
