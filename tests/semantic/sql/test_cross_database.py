"""One suite of queries through ``/v1/load`` on DuckDB and on PostgreSQL, each answer compared with SQL written
by hand for that database.

The demo dataset (2,000 orders) is generated into DuckDB and copied value for value into a dedicated schema of
the test database by ``demo/generate.py``'s ``load_postgres``. The PostgreSQL deployment serves a copy of the demo
model whose ``sql_table``s name that schema.
"""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from django.db import connection

from demo.generate import load_postgres
from embedadmin.accounts.services import deployment_configure
from tests.asgi_server import database_url_for_subprocess
from tests.schemas import qualified_model
from tests.semantic.http_support import DEMO_MODEL, CoreApi, core, demo_duckdb, duck_rows, fresh_semantic_state  # noqa: F401


@dataclass(frozen=True)
class Case:
    """A Cube query and the SQL that answers it, with ``{t}`` before each table name (the schema, if any)."""

    query: dict[str, Any]
    sql: str
    claims: dict[str, Any] | None = None


YEAR_2024 = ["2024-01-01", "2024-12-31"]
CASES = {
    "count-by-status": Case(
        {"measures": ["orders.count"], "dimensions": ["orders.status"], "order": {"orders.status": "asc"}},
        "SELECT status, count(*) FROM {t}orders GROUP BY 1 ORDER BY 1",
    ),
    "amounts-by-month": Case(
        {
            "measures": ["orders.total_amount", "orders.completed_amount"],
            "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month", "dateRange": YEAR_2024}],
        },
        "SELECT date_trunc('month', created_at), sum(amount), sum(CASE WHEN status = 'completed' THEN amount END) "
        "FROM {t}orders WHERE created_at >= '2024-01-01' AND created_at < '2025-01-01' GROUP BY 1 ORDER BY 1",
    ),
    "users-in-countries": Case(
        {
            "measures": ["users.count"],
            "dimensions": ["users.country"],
            "filters": [{"member": "users.country", "operator": "equals", "values": ["Germany", "France"]}],
            "order": [["users.country", "asc"]],
        },
        "SELECT country, count(*) FROM {t}users WHERE country IN ('Germany', 'France') GROUP BY 1 ORDER BY 1",
    ),
    "revenue-by-category": Case(
        {
            "measures": ["line_items.revenue", "line_items.units_sold"],
            "dimensions": ["products.category"],
            "order": {"products.category": "asc"},
        },
        "SELECT p.category, sum(li.quantity * li.price), sum(li.quantity) FROM {t}line_items li "
        "JOIN {t}products p ON p.id = li.product_id GROUP BY 1 ORDER BY 1",
    ),
    "cities-starting-with-b": Case(
        {
            "measures": ["orders.count"],
            "dimensions": ["users.city"],
            "filters": [{"member": "users.city", "operator": "startsWith", "values": ["b"]}],
            "order": {"users.city": "asc"},
        },
        "SELECT u.city, count(*) FROM {t}orders o JOIN {t}users u ON u.id = o.user_id "
        "WHERE lower(u.city) LIKE 'b%' GROUP BY 1 ORDER BY 1",
    ),
    "average-by-size": Case(
        {"measures": ["orders.average_order_value"], "dimensions": ["orders.size"], "order": {"orders.size": "asc"}},
        "SELECT CASE WHEN amount < 50 THEN 'Small' WHEN amount < 250 THEN 'Medium' ELSE 'Large' END, avg(amount) "
        "FROM {t}orders GROUP BY 1 ORDER BY 1",
    ),
    "customers-by-year": Case(
        {
            "measures": ["orders.customers"],
            "timeDimensions": [{"dimension": "orders.created_at", "granularity": "year"}],
        },
        "SELECT date_trunc('year', created_at), count(DISTINCT user_id) FROM {t}orders GROUP BY 1 ORDER BY 1",
    ),
    "high-value-segment": Case(
        {"measures": ["orders.count"], "segments": ["orders.high_value", "orders.completed"]},
        "SELECT count(*) FROM {t}orders WHERE amount >= 500 AND status = 'completed'",
    ),
    "ungrouped-biggest": Case(
        {
            "dimensions": ["orders.id", "orders.amount"],
            "filters": [{"member": "orders.amount", "operator": "gte", "values": ["900"]}],
            "order": {"orders.id": "asc"},
            "limit": 5,
            "ungrouped": True,
        },
        "SELECT id, amount FROM {t}orders WHERE amount >= 900 ORDER BY id LIMIT 5",
    ),
    "regional-view-with-policy": Case(
        {"measures": ["sales.order_count", "sales.total_amount"], "dimensions": ["sales.users_country"]},
        "SELECT u.country, count(*), sum(o.amount) FROM {t}orders o JOIN {t}users u ON u.id = o.user_id "
        "WHERE u.country = 'France' GROUP BY 1",
        claims={"groups": ["regional"], "userAttributes": {"country": "France"}},
    ),
}


@pytest.fixture(scope="module")
def postgres_demo(django_db_setup, django_db_blocker, demo_duckdb) -> Iterator[tuple[str, str]]:
    """(URL of the test database, schema) holding the demo dataset; the schema is dropped afterwards."""
    with django_db_blocker.unblock():
        assert connection.vendor == "postgresql", "this test needs PostgreSQL (TEST_DATABASE_URL)"
        url = database_url_for_subprocess()
    schema = f"demo_{uuid.uuid4().hex[:10]}"
    load_postgres(demo_duckdb, url, schema=schema)
    yield url, schema
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["duckdb", "postgres"])
def database(request, core, tmp_path) -> tuple[CoreApi, Any]:
    """The deployment on one database, and a function running hand-written SQL on it."""
    if request.param == "duckdb":
        return core, lambda sql: duck_rows(core.dataset, sql.format(t=""))
    url, schema = request.getfixturevalue("postgres_demo")
    model = qualified_model(DEMO_MODEL, tmp_path / "model", schema)
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model), data_source_url=url)

    def run(sql: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(url, options="-c TimeZone=UTC") as pg:
            return pg.execute(sql.format(t=f'"{schema}".')).fetchall()

    return core, run


def _value(value: Any) -> Any:
    """A value as compared: numbers as decimals to 6 places (AVG differs in its last digits), times as Cube's text."""
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%dT%H:%M:%S}.000"
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float | Decimal):
        return Decimal(str(value)).quantize(Decimal("0.000001"))
    return value


def _api_value(value: Any) -> Any:
    if isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value):
        return _value(Decimal(value))
    return value


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_load_answers_as_hand_written_sql(database, case: Case):
    # given
    core, run = database
    token = core.token(**case.claims) if case.claims else core.token()

    # when
    body = core.load(case.query, token=token)

    # then
    expected = [tuple(_value(v) for v in row) for row in run(case.sql)]
    keys = [*case.query.get("dimensions", [])]
    keys += [f"{td['dimension']}.{td['granularity']}" for td in case.query.get("timeDimensions", [])]
    keys += case.query.get("measures", [])
    got = [tuple(_api_value(row[key]) for key in keys) for row in body["data"]]
    assert expected, "the case must select some rows"
    assert got == expected


# Filter values the member's type cannot hold: the client's error (400, naming the value), never the data
# source's (500), on either database.
BAD_VALUES = [
    ("orders.amount", "gt", ["abc"], "Invalid filter value 'abc': a number is expected for orders.amount"),
    ("orders.amount", "equals", ["NaN"], "Invalid filter value 'NaN': a number is expected for orders.amount"),
    ("orders.amount", "in", ["1", "Infinity"], "Invalid filter value 'Infinity': a number is expected"),
    ("orders.amount", "lt", ["1e999999"], "Invalid filter value '1e999999': the number is out of range"),
    ("orders.amount", "gt", ["1e-400"], "Invalid filter value '1e-400': the number is out of range"),
    ("orders.count", "gte", ["many"], "Invalid filter value 'many': a number is expected for orders.count"),
    ("orders.is_completed", "equals", ["maybe"], "Invalid filter value 'maybe': a boolean is expected"),
    ("orders.created_at", "equals", ["2024-13-45"], "Can't parse date: '2024-13-45'"),
    ("orders.created_at", "inDateRange", ["2024-02-30", "2024-03-01"], "Can't parse date: '2024-02-30'"),
]


@pytest.mark.parametrize(("member", "operator", "values", "message"), BAD_VALUES)
def test_a_value_the_member_cannot_hold_is_a_400(database, member, operator, values, message):
    core, _ = database
    query = {"measures": ["orders.count"], "filters": [{"member": member, "operator": operator, "values": values}]}

    response = core.post("load", {"query": query})

    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith(message)


@pytest.mark.parametrize(
    ("values", "condition"),
    [
        (["true"], "status = 'completed'"),
        (["1"], "status = 'completed'"),
        (["OFF"], "status <> 'completed'"),
        ([" 0 "], "status <> 'completed'"),
    ],
)
def test_boolean_filter_values_in_any_spelling_both_databases_read(database, values, condition):
    core, run = database
    query = {
        "measures": ["orders.count"],
        "filters": [{"member": "orders.is_completed", "operator": "equals", "values": values}],
    }

    body = core.load(query)

    ((expected,),) = run(f"SELECT count(*) FROM {{t}}orders WHERE {condition}")
    assert body["data"] == [{"orders.count": str(expected)}]
