"""Fixtures of the semantic-layer tests: the shop model compiled per dialect, and the shop data in DuckDB
and PostgreSQL, with a helper that runs a Cube query end to end (plan, execute, shape)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from embedadmin.semantic import QueryContext, QueryOutcome, clear_models, load_model, load_response, plan_queries
from embedadmin.semantic.errors import DataSourceError, QueryError
from embedadmin.semantic.modeling.model import CompiledModel

from .clickhouse_support import HAND_WRITTEN_SQL_CLICKHOUSE_CANNOT_RUN, chdb_directory, click  # noqa: F401
from .databases import DuckDBExecutor, Executor, MySQLExecutor, PostgresExecutor, mysql_shop, postgres_shop

FIXTURES = Path(__file__).parent / "fixtures"
SHOP = FIXTURES / "shop"
# A fixed "now" for relative dates and custom-granularity origins: Wednesday 2024-07-31 10:30 UTC.
NOW = datetime(2024, 7, 31, 10, 30, tzinfo=UTC)

Runner = Callable[..., dict[str, Any]]


@pytest.fixture(autouse=True)
def _fresh_models() -> Iterator[None]:
    clear_models()
    yield
    clear_models()


def shop_model(dialect: str) -> CompiledModel:
    return load_model(SHOP, dialect=dialect, check_interval=0).require()


@pytest.fixture(scope="session")
def duck() -> DuckDBExecutor:
    return DuckDBExecutor()


@pytest.fixture(scope="session")
def pg() -> Iterator[PostgresExecutor]:
    with postgres_shop() as executor:
        yield executor


def run_query(
    executor: Executor, query: Any, ctx: QueryContext | None = None, *, multi: bool = False, model: Any = None
) -> dict[str, Any]:
    """Plan, execute and shape ``query`` on ``executor``: the ``/v1/load`` body."""
    compiled_model = model or shop_model(executor.dialect)
    caller = ctx or QueryContext()
    plan = plan_queries(compiled_model, query, caller, now=NOW)
    outcomes = []
    for compiled in plan.queries:
        _, rows = executor.run(compiled.sql, compiled.params)
        total = executor.run(compiled.total_sql, compiled.params)[1][0][0] if compiled.total_sql else None
        outcomes.append(QueryOutcome(rows=rows, total=total))
    return load_response(compiled_model, plan, outcomes, multi=multi, db_type=executor.dialect)


@pytest.fixture(scope="session")
def maria(pg: PostgresExecutor) -> Iterator[MySQLExecutor]:
    """The dataset in MariaDB (TEST_MYSQL_URL), queried through the mysql:// data source; the tests' hand-written
    reference SQL runs on PostgreSQL (``MySQLExecutor``)."""
    with mysql_shop(pg) as executor:
        yield executor


@pytest.fixture
def run_duck(duck: DuckDBExecutor) -> Runner:
    return lambda query, ctx=None, **kw: run_query(duck, query, ctx, **kw)


_EXECUTORS = {"duckdb": "duck", "postgres": "pg", "mysql": "maria", "clickhouse": "click"}


@pytest.fixture(params=list(_EXECUTORS))
def executor(request: pytest.FixtureRequest) -> Executor:
    """Each test using this runs on each database: DuckDB, PostgreSQL, MariaDB, ClickHouse (chDB)."""
    return request.getfixturevalue(_EXECUTORS[request.param])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The ClickHouse runs of tests whose hand-written expected SQL ClickHouse cannot run (clickhouse_support.py
    # says why); tests/semantic/sql/test_clickhouse_queries.py compares those queries with PostgreSQL's answers.
    for item in items:
        reason = HAND_WRITTEN_SQL_CLICKHOUSE_CANNOT_RUN.get(item.name)
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True, raises=(DataSourceError, QueryError)))
