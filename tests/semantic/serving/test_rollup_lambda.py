"""originalSql and rollupLambda pre-aggregations served (``docs/pre-aggregations.md``), on DuckDB and PostgreSQL.

A lambda's answer is its rollups' rows re-aggregated with the source's rows after where those end: orders added after
the build are in it, and it equals the data source's answer exactly. A rollup with ``use_original_sql_pre_aggregations``
is built from its cubes' originalSql tables in the store, not from the source.
"""

# ruff: noqa: F811  (fixtures imported from other test modules are redefined as test arguments, as pytest wants)

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest
from django.db import connection

from demo.generate import load_postgres
from embedadmin.accounts.services import deployment_configure, duckdb_url
from embedadmin.semantic.models import PreAggregationPartition
from embedadmin.semantic.serving.pre_aggregations import (
    pre_aggregation_partition_build,
    pre_aggregations_rebuild,
    pre_aggregations_status,
)
from embedadmin.semantic.serving.rollup_store import close_rollup_sources
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
from tests.semantic.rollup_support import build_rollups, model_with_rollups
from tests.semantic.serving.test_pre_aggregations import same_rows

pytestmark = pytest.mark.django_db(transaction=True)

LAMBDA = {
    "orders": """
    pre_aggregations:
      - name: recent
        type: rollup_lambda
        union_with_source_data: true
        rollups: [CUBE.batch]
      - name: batch
        measures: [count, total_amount, completed_count]
        dimensions: [status, users.country]
        time_dimension: created_at
        granularity: day
        partition_granularity: month
"""
}
# Two rollups: whole years up to the last one (2025 is not whole when built), then the months of 2025; the source
# after those.
TWO_ROLLUPS = {
    "orders": """
    pre_aggregations:
      - name: recent
        type: rollupLambda
        union_with_source_data: true
        rollups: [orders.yearly, orders.monthly]
      - name: yearly
        measures: [count, total_amount]
        dimensions: [status]
        time_dimension: created_at
        granularity: day
        partition_granularity: year
      - name: monthly
        measures: [count, total_amount]
        dimensions: [status]
        time_dimension: created_at
        granularity: day
        partition_granularity: month
        build_range_start: {sql: "SELECT '2025-01-01'"}
"""
}
ORIGINAL = {
    "orders": """
    pre_aggregations:
      - name: base
        type: original_sql
      - name: by_status
        measures: [count, total_amount]
        dimensions: [status]
        time_dimension: created_at
        granularity: month
        use_original_sql_pre_aggregations: true
      - name: by_country
        measures: [count]
        dimensions: [users.country]
        use_original_sql_pre_aggregations: true
""",
}
# Orders after the last one of the demo data (2025-12-30 22:15): the same day, the next, and two later months.
ADDED = [
    (9_000_001, "completed", "120.50", "2025-12-30 23:00:00"),
    (9_000_002, "shipped", "75.25", "2025-12-31 10:30:00"),
    (9_000_003, "completed", "300.00", "2026-01-15 08:00:00"),
    (9_000_004, "returned", "19.99", "2026-02-03 17:45:00"),
]
QUERIES = {
    "by status and month": {
        "measures": ["orders.count", "orders.total_amount"],
        "dimensions": ["orders.status"],
        "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month"}],
        "order": {"orders.created_at": "asc", "orders.status": "asc"},
    },
    "completed by country": {
        "measures": ["orders.count", "orders.completed_count"],
        "dimensions": ["users.country"],
        "filters": [{"member": "orders.status", "operator": "equals", "values": ["completed"]}],
        "order": {"users.country": "asc"},
    },
    "a range into the future by day": {
        "measures": ["orders.count"],
        "timeDimensions": [
            {"dimension": "orders.created_at", "granularity": "day", "dateRange": ["2025-12-01", "2026-03-31"]}
        ],
        "order": {"orders.created_at": "asc"},
    },
    "a range that ends before the rollup does": {
        "measures": ["orders.total_amount"],
        "dimensions": ["orders.status"],
        "timeDimensions": [{"dimension": "orders.created_at", "dateRange": ["2024-01-01", "2024-12-31"]}],
        "order": {"orders.status": "asc"},
    },
    "a measure filter on the whole groups": {
        "measures": ["orders.count"],
        "dimensions": ["orders.status"],
        "filters": [{"member": "orders.count", "operator": "gt", "values": ["380"]}],
        "order": {"orders.status": "asc"},
    },
}


@pytest.fixture
def store(settings, tmp_path) -> Iterator[Path]:
    directory = tmp_path / "store"
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "DIR": directory, "ENABLED": True}
    yield directory
    close_rollup_sources()


class Source:
    """A copy of the demo data the test may add orders to: a DuckDB file, or a schema of the PostgreSQL database."""

    def __init__(self, kind: str, demo: Path, tmp_path: Path) -> None:
        self.kind = kind
        if kind == "duckdb":
            self.path = tmp_path / "data" / "demo.duckdb"
            self.path.parent.mkdir()
            shutil.copyfile(demo, self.path)
            self.url = duckdb_url(self.path)
            self.schema = ""
        else:
            assert connection.vendor == "postgresql", "this test needs PostgreSQL (TEST_DATABASE_URL)"
            self.url = database_url_for_subprocess()
            self.schema = f"lambda_{uuid.uuid4().hex[:10]}"
            load_postgres(demo, self.url, schema=self.schema)

    def model(self, tmp_path: Path, rollups: dict[str, str]) -> Path:
        source = DEMO_MODEL if self.kind == "duckdb" else qualified_model(DEMO_MODEL, tmp_path / "plain", self.schema)
        return model_with_rollups(tmp_path / "model", source=source, rollups=rollups)

    def add_orders(self, orders: list[tuple[int, str, str, str]]) -> None:
        rows = [(pk, status, amount, at) for pk, status, amount, at in orders]
        insert = (
            "INSERT INTO {t}orders (id, user_id, status, amount, item_count, created_at) "
            "SELECT ?, min(id), ?, CAST(? AS DECIMAL(12, 2)), 1, CAST(? AS TIMESTAMP) FROM {t}users"
        )
        if self.kind == "duckdb":
            fresh = self.path.with_name("next.duckdb")
            shutil.copyfile(self.path, fresh)
            with duckdb.connect(str(fresh)) as writer:
                writer.executemany(insert.format(t=""), rows)
            os.replace(fresh, self.path)  # the data source reopens a replaced file
        else:
            with (
                psycopg.connect(self.url, autocommit=True, options="-c TimeZone=UTC") as pg,
                pg.cursor() as cursor,
            ):
                cursor.executemany(insert.format(t=f'"{self.schema}".').replace("?", "%s"), rows)

    def drop(self) -> None:
        if self.kind == "postgres":
            with psycopg.connect(self.url, autocommit=True) as pg:
                pg.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def source(request, demo_duckdb, tmp_path, django_db_blocker) -> Iterator[Source]:
    with django_db_blocker.unblock():
        made = Source(request.param, demo_duckdb, tmp_path)
    yield made
    made.drop()


def answers(core: CoreApi, settings, query: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answer with rollups, then the data source's alone."""
    token = core.token()
    from_rollups = core.load(query, token=token, cache="no-cache")
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": False}
    from_source = core.load(query, token=token, cache="no-cache")
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": True}
    assert "usedPreAggregations" not in from_source
    return from_rollups, from_source


def test_a_lambda_answers_with_the_orders_added_after_its_build_as_the_source_does(
    core, store, settings, source, tmp_path
):
    # given: a lambda over a monthly-partitioned rollup, built
    deployment_configure(
        deployment=core.cast.deployment, model_dir=str(source.model(tmp_path, LAMBDA)), data_source_url=source.url
    )
    assert set(build_rollups(core.cast.deployment).values()) == {"built"}
    (last,) = PreAggregationPartition.objects.filter(pre_aggregation="orders.batch", partition="202512")
    assert last.built_until is not None
    assert last.built_until < last.range_end  # the build stopped at the last order
    before = {name: answers(core, settings, query) for name, query in QUERIES.items()}

    # when: orders are added after the build (the same day as the last one, and later months), nothing rebuilt
    source.add_orders(ADDED)
    after = {name: answers(core, settings, query) for name, query in QUERIES.items()}

    # then: every answer comes from the lambda's rollup and the source's new rows, equal to the source's own
    for name, (from_rollups, from_source) in [*before.items(), *after.items()]:
        (entry,) = from_rollups["usedPreAggregations"].values()
        assert (entry["preAggregationId"], entry["type"], entry["rollupLambdaId"]) == (
            "orders.batch",
            "rollup",
            "orders.recent",
        ), name
        assert same_rows(from_rollups["data"], from_source["data"]), name
    totals = {
        moment: sum(int(row["orders.count"]) for row in answer[0]["data"])
        for moment, answer in (("before", before["by status and month"]), ("after", after["by status and month"]))
    }
    assert totals["after"] == totals["before"] + len(ADDED)
    months = [row["orders.created_at.month"] for row in after["by status and month"][0]["data"]]
    assert {"2026-01-01T00:00:00.000", "2026-02-01T00:00:00.000"} <= set(months)
    assert (
        after["a range that ends before the rollup does"][0]["data"]
        == before["a range that ends before the rollup does"][0]["data"]
    )


def test_a_lambda_of_two_rollups_reads_each_where_the_one_before_ends(core, store, settings, tmp_path, demo_duckdb):
    # given: whole years from one rollup, months from the second half of 2025 from the other, then the source
    made = Source("duckdb", demo_duckdb, tmp_path)
    deployment_configure(
        deployment=core.cast.deployment, model_dir=str(made.model(tmp_path, TWO_ROLLUPS)), data_source_url=made.url
    )
    build_rollups(core.cast.deployment)
    made.add_orders(ADDED)
    query = QUERIES["by status and month"]

    # when
    from_rollups, from_source = answers(core, settings, query)

    # then: 2023 and 2024 from the yearly rollup (its 2025 stops at the last order), 2025 from the monthly one, 2026
    # from the source; the same rows as the source's
    assert sorted(from_rollups["usedPreAggregations"]) == ["orders__monthly", "orders__yearly"]
    assert same_rows(from_rollups["data"], from_source["data"])
    assert sum(int(row["orders.count"]) for row in from_rollups["data"]) == 2_000 + len(ADDED)


def test_the_sql_endpoint_shows_a_lambdas_union_and_its_rollups(core, store, tmp_path, demo_duckdb):
    made = Source("duckdb", demo_duckdb, tmp_path)
    deployment_configure(
        deployment=core.cast.deployment, model_dir=str(made.model(tmp_path, LAMBDA)), data_source_url=made.url
    )
    build_rollups(core.cast.deployment)

    body = core.post("sql", {"query": QUERIES["completed by country"]}).json()["sql"]

    assert 'FROM "orders__recent" UNION ALL SELECT * FROM "lambda_source_rows"' in body["sql"][0]
    (described,) = body["preAggregations"]
    assert (described["preAggregationId"], described["tableName"], described["rollupLambdaId"]) == (
        "orders.batch",
        "orders__batch",
        "orders.recent",
    )


def test_a_rollup_using_original_sql_is_built_from_it_in_the_store(core, store, settings, source, tmp_path):
    # given: the orders cube's SQL materialised (originalSql), rollups built from it
    deployment_configure(
        deployment=core.cast.deployment, model_dir=str(source.model(tmp_path, ORIGINAL)), data_source_url=source.url
    )
    statuses = {s.rollup.id: s for s in pre_aggregations_status(deployment=core.cast.deployment, serve=serve)}
    assert statuses["orders.by_country"].status == "unusable"
    assert "cube users has none" in (statuses["orders.by_country"].problem or "")
    build_rollups(core.cast.deployment)
    statuses = {s.rollup.id: s for s in pre_aggregations_status(deployment=core.cast.deployment, serve=serve)}
    assert (statuses["orders.base"].status, statuses["orders.by_status"].status) == ("built", "built")
    assert statuses["orders.base"].partitions[0].rows == 2_000
    query = {
        "measures": ["orders.count", "orders.total_amount"],
        "dimensions": ["orders.status"],
        "timeDimensions": [{"dimension": "orders.created_at", "granularity": "year"}],
        "order": {"orders.created_at": "asc", "orders.status": "asc"},
    }

    # when
    from_rollup, from_source = answers(core, settings, query)
    plain = {"measures": ["orders.count"], "dimensions": ["orders.size"]}
    not_from_original, _ = answers(core, settings, plain)

    # then: the rollup answers as the source does; a query no rollup matches is the source's, not the originalSql's
    (entry,) = from_rollup["usedPreAggregations"].values()
    assert entry["preAggregationId"] == "orders.by_status"
    assert same_rows(from_rollup["data"], from_source["data"])
    assert "usedPreAggregations" not in not_from_original

    # when: orders are added and only the rollup is rebuilt, it is made from the originalSql table, not the source
    source.add_orders(ADDED)
    queued: list[int] = []
    pre_aggregations_rebuild(
        deployment=core.cast.deployment, serve=serve, enqueue=queued.append, pre_aggregation="orders.by_status"
    )
    assert {pre_aggregation_partition_build(partition_id=pk, serve=serve) for pk in queued} == {"built"}
    stale, fresh = answers(core, settings, query)

    # then
    assert sum(int(row["orders.count"]) for row in stale["data"]) == 2_000
    assert sum(int(row["orders.count"]) for row in fresh["data"]) == 2_000 + len(ADDED)


def test_a_regional_viewer_reads_only_their_countrys_rows_from_the_rollup_and_from_the_fresh_source_rows(
    core, store, settings, source, tmp_path
):
    # given: the lambda built, then orders added (all by the first user, who lives in the United States)
    deployment_configure(
        deployment=core.cast.deployment, model_dir=str(source.model(tmp_path, LAMBDA)), data_source_url=source.url
    )
    assert set(build_rollups(core.cast.deployment).values()) == {"built"}
    query = {
        "measures": ["sales.order_count"],
        "dimensions": ["sales.status"],
        "timeDimensions": [{"dimension": "sales.created_at", "dateRange": ["2025-01-01", "2026-12-31"]}],
    }

    def counted(country: str) -> tuple[int, dict[str, Any]]:
        token = core.token(groups=["regional"], userAttributes={"country": country})
        from_rollups = core.load(query, token=token, cache="no-cache")
        settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": False}
        from_source = core.load(query, token=token, cache="no-cache")
        settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "ENABLED": True}
        assert same_rows(from_rollups["data"], from_source["data"]), country
        return sum(int(row["sales.order_count"]) for row in from_rollups["data"]), from_rollups

    before = {country: counted(country)[0] for country in ("France", "United States")}

    # when
    source.add_orders(ADDED)
    after = {country: counted(country) for country in ("France", "United States")}

    # then: each viewer's answer comes from the lambda and equals the source's under their policy; the new rows
    # reach only the viewer of their country
    for country, (_total, answer) in after.items():
        (entry,) = answer["usedPreAggregations"].values()
        assert entry["rollupLambdaId"] == "orders.recent", country
    assert after["France"][0] == before["France"]
    assert after["United States"][0] == before["United States"] + len(ADDED)
