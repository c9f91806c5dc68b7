"""The built-in analyst with the filters of the dashboard a question is asked from (``analyst/context.py``), on the
demo dataset through the real tools: each filter is ANDed into the query the question means, as its member's type
reads it, and the numbers equal hand-written SQL on the raw tables; what it cannot apply is left out and named."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from embedadmin.chat.providers.base import CancelToken, ContentDelta, ContextFilter, ProviderRequest
from embedadmin.chat.providers.builtin import analyst_stream
from embedadmin.chat.tools import ToolContext, default_tools, dimension_values
from embedadmin.semantic.context import QueryContext
from tests.chat.test_tools import demo_deployment
from tests.conftest import Cast
from tests.semantic.http_support import demo_duckdb, duck_rows, fresh_semantic_state

__all__ = ["demo_deployment", "demo_duckdb", "fresh_semantic_state"]  # fixtures

pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2025, 7, 15, 12, 0, tzinfo=UTC)  # the turn's clock, for relative ranges
ORDERS_USERS = "orders o JOIN users u ON u.id = o.user_id"


@dataclass(frozen=True)
class Turn:
    answer: str
    sql: str | None  # the serviceSqlApi call's SQL; None when nothing was queried
    description: str
    rows: list[list[Any]]


def ask(
    cast: Cast,
    question: str,
    *filters: tuple[str, str, Sequence[str]],
    groups: Sequence[str] = ("admin",),
    timezone: str = "UTC",
    only_granted: bool = False,
    locale: str = "en-US",
) -> Turn:
    """One turn of the built-in analyst from dashboard SalesOvervw1 with ``filters``, through the real tools
    (``only_granted``: as an embed viewer, who reads only what a policy grants)."""
    viewer = QueryContext(groups=list(groups), only_granted=only_granted)
    context = ToolContext(account_id=cast.account.pk, deployment_id=cast.deployment.pk, query_context=viewer)
    tools = default_tools()
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    async def call_tool(name: str, arguments: dict[str, Any]) -> str:
        result = await sync_to_async(tools.call)(context, name, arguments)
        calls.append((name, arguments, json.loads(result)))
        return result

    async def lookup(cube: str, dimension: str, candidates: Sequence[str]) -> list[str]:
        return await sync_to_async(dimension_values)(context, cube, dimension, candidates)

    async def turn() -> str:
        request = ProviderRequest(
            question=question,
            history=[],
            tool_specs=tools.specs(),
            call_tool=call_tool,
            cancel=CancelToken(),
            timezone=timezone,
            locale=locale,
            lookup_values=lookup,
            dashboard="SalesOvervw1",
            context_filters=[ContextFilter(member, operator, tuple(values)) for member, operator, values in filters],
        )
        return "".join([e.text async for e in analyst_stream(request, now=NOW) if isinstance(e, ContentDelta)])

    answer = async_to_sync(turn)()
    ran = [(arguments, result) for name, arguments, result in calls if name == "serviceSqlApi"]
    if not ran:
        return Turn(answer, None, "", [])
    [(arguments, result)] = ran
    assert "error" not in result, result["error"]
    return Turn(answer, arguments["sqlQuery"], arguments["description"], result["data"])


def count_of(demo_duckdb, where: str, tables: str = ORDERS_USERS) -> int:
    [[count]] = duck_rows(demo_duckdb, f"SELECT count(*) FROM {tables} WHERE {where}")
    return int(count)


def test_the_dashboards_filters_narrow_the_query_and_the_computed_sentence_says_so(demo_deployment, demo_duckdb):
    # given: the dashboard shows completed orders of the first half of 2025
    filters = [
        ("sales.status", "equals", ["completed"]),
        ("sales.created_at", "inDateRange", ["2025-01-01", "2025-06-30"]),
    ]

    # when
    turn = ask(demo_deployment, "What is revenue by month?", *filters)

    # then
    assert turn.sql == (
        "SELECT DATE_TRUNC('month', created_at), MEASURE(revenue) FROM sales WHERE status = 'completed' "
        "AND created_at >= DATE '2025-01-01' AND created_at < DATE '2025-07-01' GROUP BY 1 ORDER BY 1"
    )
    expected = duck_rows(
        demo_duckdb,
        "SELECT strftime(date_trunc('month', o.created_at), '%Y-%m'), sum(li.quantity * li.price) "
        "FROM line_items li JOIN orders o ON o.id = li.order_id WHERE o.status = 'completed' "
        "AND o.created_at >= TIMESTAMP '2025-01-01' AND o.created_at < TIMESTAMP '2025-07-01' GROUP BY 1 ORDER BY 1",
    )
    assert len(expected) == 6
    assert [(row[0][:7], Decimal(row[1])) for row in turn.rows] == [(m, Decimal(v)) for m, v in expected]
    computed = (
        "Computed: Revenue (sum) from Sales, by month of ordered at, within the dashboard's filters: status is "
        "completed, ordered at from 2025-01-01 to 2025-06-30 (time zone UTC)."
    )
    assert turn.description == computed
    lines = turn.answer.split("\n")
    assert lines[0] == "Revenue by month:"
    assert expected[0][0] == "2025-01"
    assert lines[1] == f"- Jan 2025: ${Decimal(expected[0][1]):,.2f}"  # a month as the charts label it
    assert lines[-1] == computed


def test_without_filters_the_query_is_the_questions_alone(demo_deployment, demo_duckdb):
    turn = ask(demo_deployment, "How many orders?")

    assert turn.sql == "SELECT MEASURE(order_count) FROM sales"
    assert turn.answer == (
        f"Orders: {count_of(demo_duckdb, 'TRUE'):,}.\nComputed: Orders (count) from Sales (time zone UTC)."
    )


def test_the_questions_own_filter_on_the_same_member_narrows_further(demo_deployment, demo_duckdb):
    # given: the dashboard shows the first half of 2024, the question asks for all of 2024
    dated = ask(
        demo_deployment, "How many orders in 2024?", ("sales.created_at", "inDateRange", ["2024-01-01", "2024-06-30"])
    )
    # and: the dashboard shows completed and shipped orders, the question asks for completed ones
    valued = ask(demo_deployment, "How many completed orders?", ("sales.status", "equals", ["completed", "shipped"]))

    # then: both apply
    assert dated.sql == (
        "SELECT MEASURE(order_count) FROM sales WHERE created_at >= DATE '2024-01-01' AND created_at < DATE "
        "'2025-01-01' AND created_at >= DATE '2024-01-01' AND created_at < DATE '2024-07-01'"
    )
    half = count_of(demo_duckdb, "o.created_at >= TIMESTAMP '2024-01-01' AND o.created_at < TIMESTAMP '2024-07-01'")
    assert dated.answer.startswith(f"Orders: {half:,}.\n")
    assert valued.sql == (
        "SELECT MEASURE(order_count) FROM sales WHERE status = 'completed' AND status IN ('completed', 'shipped')"
    )
    completed = count_of(demo_duckdb, "o.status = 'completed'")
    assert valued.answer.startswith(f"Orders: {completed:,}.\n")
    assert valued.answer.endswith(
        "where status is completed, within the dashboard's filters: status is completed or shipped (time zone UTC)."
    )


@pytest.mark.parametrize(
    ("given", "test", "raw", "words"),
    [
        (
            ("sales.status", "notEquals", ["completed", "cancelled"]),
            "(status NOT IN ('completed', 'cancelled') OR status IS NULL)",
            "o.status NOT IN ('completed', 'cancelled') OR o.status IS NULL",
            "status is not completed or cancelled",
        ),
        (
            ("sales.users_city", "contains", ["ber", "lon"]),
            "(users_city ILIKE '%ber%' OR users_city ILIKE '%lon%')",
            "u.city ILIKE '%ber%' OR u.city ILIKE '%lon%'",
            "city contains ber or lon",
        ),
        (
            ("sales.users_city", "notContains", ["o"]),
            "(users_city NOT ILIKE '%o%' OR users_city IS NULL)",
            "u.city NOT ILIKE '%o%' OR u.city IS NULL",
            "city does not contain o",
        ),
        (
            ("sales.users_country", "startsWith", ["united"]),
            "users_country ILIKE 'united%'",
            "u.country ILIKE 'united%'",
            "country starts with united",
        ),
        (
            ("sales.users_country", "endsWith", ["Kingdom"]),
            "users_country ILIKE '%Kingdom'",
            "u.country ILIKE '%kingdom'",
            "country ends with Kingdom",
        ),
        (("sales.users_age", "gte", ["60"]), "users_age >= 60", "u.age >= 60", "age at least 60"),
        (("sales.users_age", "lt", ["25.5"]), "users_age < 25.5", "u.age < 25.5", "age under 25.5"),
        (
            ("sales.users_age", "equals", ["30", "31"]),
            "users_age IN (30, 31)",
            "u.age IN (30, 31)",
            "age is 30 or 31",
        ),
        (
            ("sales.completed_at", "notSet", []),
            "completed_at IS NULL",
            "o.completed_at IS NULL",
            "delivered at is not set",
        ),
        (
            ("sales.completed_at", "set", []),
            "completed_at IS NOT NULL",
            "o.completed_at IS NOT NULL",
            "delivered at is set",
        ),
        (
            ("sales.created_at", "beforeDate", ["2024-01-01"]),
            "created_at < DATE '2024-01-01'",
            "o.created_at < TIMESTAMP '2024-01-01'",
            "ordered at before 2024-01-01",
        ),
        (
            ("sales.created_at", "afterDate", ["2024-12-30"]),
            "created_at >= DATE '2024-12-31'",
            "o.created_at >= TIMESTAMP '2024-12-31'",
            "ordered at after 2024-12-30",
        ),
        (
            ("sales.created_at", "notInDateRange", ["2024-01-01", "2024-12-31"]),
            "(created_at < DATE '2024-01-01' OR created_at >= DATE '2025-01-01')",
            "o.created_at < TIMESTAMP '2024-01-01' OR o.created_at >= TIMESTAMP '2025-01-01'",
            "ordered at outside 2024-01-01 to 2024-12-31",
        ),
        (
            # relative, on the turn's clock (2025-07-15): the twelve whole months before this one
            ("sales.created_at", "inDateRange", ["last 12 months"]),
            "created_at >= DATE '2024-07-01' AND created_at < DATE '2025-07-01'",
            "o.created_at >= TIMESTAMP '2024-07-01' AND o.created_at < TIMESTAMP '2025-07-01'",
            "ordered at from 2024-07-01 to 2025-06-30",
        ),
        (
            ("sales.created_at", "inDateRange", ["2024-01-01T10:00:00", "2024-01-31T12:00:00.000"]),
            "created_at >= TIMESTAMP '2024-01-01 10:00:00.000' AND created_at < TIMESTAMP '2024-01-31 12:00:00.001'",
            "o.created_at >= TIMESTAMP '2024-01-01 10:00:00' AND o.created_at <= TIMESTAMP '2024-01-31 12:00:00'",
            "ordered at from 2024-01-01 10:00:00.000 to 2024-01-31 12:00:00.000",
        ),
    ],
)
def test_each_operator_reads_as_its_members_type(demo_deployment, demo_duckdb, given, test, raw, words):
    # when
    turn = ask(demo_deployment, "How many orders?", given)

    # then
    assert turn.sql == f"SELECT MEASURE(order_count) FROM sales WHERE {test}"
    expected = count_of(demo_duckdb, raw)
    assert 0 < expected < count_of(demo_duckdb, "TRUE")
    assert turn.answer == (
        f"Orders: {expected:,}.\nComputed: Orders (count) from Sales, within the dashboard's filters: {words} "
        "(time zone UTC)."
    )


def test_a_date_range_is_read_in_the_viewers_time_zone(demo_deployment, demo_duckdb):
    turn = ask(
        demo_deployment, "How many orders?", ("sales.created_at", "inDateRange", ["2024-03-05"]), timezone="Asia/Tokyo"
    )

    assert turn.sql == (
        "SELECT MEASURE(order_count) FROM sales "
        "WHERE created_at >= DATE '2024-03-05' AND created_at < DATE '2024-03-06'"
    )
    tokyo_day = count_of(
        demo_duckdb,
        "o.created_at >= TIMESTAMP '2024-03-04 15:00:00' AND o.created_at < TIMESTAMP '2024-03-05 15:00:00'",
    )
    assert turn.answer == (
        f"Orders: {tokyo_day:,}.\nComputed: Orders (count) from Sales, within the dashboard's filters: ordered at "
        "from 2024-03-05 to 2024-03-05 (time zone Asia/Tokyo)."
    )


def test_a_filter_on_a_measure_tests_its_aggregate_per_group(demo_deployment, demo_duckdb):
    # given: a threshold between the countries' order values
    totals = duck_rows(demo_duckdb, f"SELECT u.country, sum(o.amount) FROM {ORDERS_USERS} GROUP BY 1 ORDER BY 2")
    threshold = int((totals[len(totals) // 2][1] + totals[len(totals) // 2 - 1][1]) / 2)

    # when
    turn = ask(demo_deployment, "How many orders by country?", ("sales.total_amount", "gt", [str(threshold)]))

    # then
    assert turn.sql == (
        "SELECT users_country, MEASURE(order_count) FROM sales GROUP BY 1 "
        f"HAVING MEASURE(total_amount) > {threshold} ORDER BY 1"
    )
    expected = duck_rows(
        demo_duckdb,
        f"SELECT u.country, count(*) FROM {ORDERS_USERS} GROUP BY 1 HAVING sum(o.amount) > {threshold} ORDER BY 1",
    )
    assert 0 < len(expected) < len(totals)
    assert [(country, int(count)) for country, count in turn.rows] == [(c, int(n)) for c, n in expected]


def test_a_filter_on_the_cube_member_a_view_member_shows_applies_to_the_view_member(demo_deployment, demo_duckdb):
    turn = ask(demo_deployment, "How many orders?", ("orders.status", "equals", ["cancelled"]))

    assert turn.sql == "SELECT MEASURE(order_count) FROM sales WHERE status = 'cancelled'"
    cancelled = count_of(demo_duckdb, "o.status = 'cancelled'")
    assert turn.answer.startswith(f"Orders: {cancelled:,}.\n")


def test_filters_the_answers_view_does_not_have_or_cannot_take_are_left_out_and_named(demo_deployment, demo_duckdb):
    # when
    turn = ask(
        demo_deployment,
        "How many orders?",
        ("sales.status", "equals", ["returned"]),
        ("customers.segment", "equals", ["smb"]),
        ("sales.users_age", "contains", ["3"]),
        ("sales.users_city", "gt", ["5"]),
        ("sales.created_at", "inDateRange", ["the day after never"]),
        ("sales.created_at", "equals", ["2024-01-01"]),
    )

    # then: only the status applies
    returned = count_of(demo_duckdb, "o.status = 'returned'")
    assert turn.sql == "SELECT MEASURE(order_count) FROM sales WHERE status = 'returned'"
    assert turn.answer == (
        f"Orders: {returned:,}.\n"
        "Computed: Orders (count) from Sales, within the dashboard's filters: status is returned (time zone UTC). "
        "Left out of the dashboard's filters: customers.segment is smb (Sales has no such member); "
        "sales.users_age contains 3 (contains applies to text, and age is a number); "
        "sales.users_city over 5 (gt compares numbers, and city is text); "
        "sales.created_at from the day after never (its dates could not be read); "
        "sales.created_at is 2024-01-01 (equals does not apply to a date)."
    )


def test_a_question_answered_from_another_cube_leaves_the_views_filters_out(demo_deployment, demo_duckdb):
    # given: a guest may not read the sales view, so orders are counted from the orders cube
    filters = [("orders.is_completed", "equals", ["true"]), ("sales.users_country", "equals", ["France"])]

    # when
    turn = ask(demo_deployment, "How many orders?", *filters, groups=["guests"])

    # then
    completed = count_of(demo_duckdb, "o.status = 'completed'")
    assert turn.sql == "SELECT MEASURE(count) FROM orders WHERE is_completed = TRUE"
    assert turn.answer == (
        f"Orders: {completed:,}.\n"
        "Computed: Orders (count) from Orders, within the dashboard's filters: completed is true (time zone UTC). "
        "Left out of the dashboard's filters: sales.users_country is France (Orders has no such member)."
    )


def test_wildcards_in_a_value_are_matched_as_written(demo_deployment):
    # "%" would match every city as a LIKE pattern; as a value, no city contains it
    turn = ask(demo_deployment, "How many orders?", ("sales.users_city", "contains", ["%", "a_b\\"]))

    assert turn.sql == (
        "SELECT MEASURE(order_count) FROM sales WHERE (users_city ILIKE '%\\%%' OR users_city ILIKE '%a\\_b\\\\%')"
    )
    assert turn.answer.startswith("Orders: 0.\n")


def test_a_value_with_a_quote_stays_one_value(demo_deployment):
    turn = ask(demo_deployment, "How many orders?", ("sales.status", "equals", ["x' OR 'a'='a"]))

    assert turn.sql == "SELECT MEASURE(order_count) FROM sales WHERE status = 'x'' OR ''a''=''a'"
    assert turn.answer.startswith("Orders: 0.\n")


def test_a_declined_question_queries_nothing_whatever_the_filters(demo_deployment):
    turn = ask(demo_deployment, "What's the weather like tomorrow?", ("sales.status", "equals", ["completed"]))

    assert turn.sql is None
    assert turn.answer.startswith("I did not understand 'weather'")
