"""Answers the analyst computes on one query's rows through the Core Data API's post-processing (issue 23): the share
of a measure that a part of it makes up, and the difference of a measure between two periods. On the demo dataset
through the real tools, each number equal to hand-written SQL on the raw tables."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.chat.analyst.test_context_filters import Turn, ask
from tests.chat.test_tools import demo_deployment
from tests.semantic.http_support import demo_duckdb, duck_rows, fresh_semantic_state

__all__ = ["demo_deployment", "demo_duckdb", "fresh_semantic_state"]  # fixtures

pytestmark = pytest.mark.django_db(transaction=True)

REVENUE_ROWS = "line_items li JOIN orders o ON o.id = li.order_id JOIN users u ON u.id = o.user_id"


def _number(value: object) -> Decimal:
    return Decimal(str(value)).quantize(Decimal("0.000001"))


def _only_number(turn: Turn) -> Decimal:
    """The one number an answer computed (one row, one column), as compared."""
    [[value]] = turn.rows
    return _number(value)


def test_the_share_of_a_part_is_computed_on_the_rows_of_the_whole(demo_deployment, demo_duckdb):
    turn = ask(demo_deployment, "What share of 2024 orders were cancelled?")

    [[expected]] = duck_rows(
        demo_duckdb,
        "SELECT 100.0 * count(*) FILTER (WHERE status = 'cancelled') / count(*) FROM orders "
        "WHERE created_at >= TIMESTAMP '2024-01-01' AND created_at < TIMESTAMP '2025-01-01'",
    )
    assert turn.sql is not None
    assert turn.sql.startswith("SELECT 100.0 * COALESCE(SUM(CASE WHEN part_1 = 'cancelled' THEN value END), 0)")
    assert _only_number(turn) == _number(expected)
    assert turn.answer.startswith(f"Share of Orders where status is cancelled: {Decimal(str(expected)):.1f}%.")
    assert "out of all of it" in turn.description


def test_the_whole_a_share_is_of_keeps_its_own_conditions(demo_deployment, demo_duckdb):
    turn = ask(demo_deployment, "What percentage of 2024 orders from women were cancelled?")

    [[expected]] = duck_rows(
        demo_duckdb,
        "SELECT 100.0 * count(*) FILTER (WHERE o.status = 'cancelled') / count(*) FROM orders o JOIN users u "
        "ON u.id = o.user_id WHERE u.gender = 'female' AND o.created_at >= TIMESTAMP '2024-01-01' "
        "AND o.created_at < TIMESTAMP '2025-01-01'",
    )
    assert turn.sql is not None
    assert "WHERE users_gender = 'female'" in turn.sql
    assert _only_number(turn) == _number(expected)


def test_a_share_of_a_part_on_another_cubes_rows_is_declined(demo_deployment):
    turn = ask(demo_deployment, "What share of 2024 revenue came from female customers?")

    assert turn.sql is None  # revenue comes from the lines, the gender from their customers
    assert "only over the fields of its own rows" in turn.answer


def test_a_share_the_model_has_a_percentage_for_is_that_percentage(demo_deployment):
    turn = ask(demo_deployment, "What percentage of orders were completed?")

    assert turn.sql is not None
    assert turn.sql.startswith("SELECT MEASURE(completion_rate) FROM sales")


@pytest.mark.parametrize(
    "question",
    [
        "How many more orders were placed in 2024 than in 2023?",
        "How many fewer orders were placed in 2023 than in 2024?",  # the same difference, the other way round
    ],
)
def test_the_difference_between_two_periods_is_one_number(demo_deployment, demo_duckdb, question):
    turn = ask(demo_deployment, question)

    [[later, earlier]] = duck_rows(
        demo_duckdb,
        "SELECT count(*) FILTER (WHERE year(created_at) = 2024), count(*) FILTER (WHERE year(created_at) = 2023) "
        "FROM orders",
    )
    assert turn.sql is not None
    assert "AS difference FROM (SELECT DATE_TRUNC('year', created_at) AS period" in turn.sql
    assert _only_number(turn) == _number(later - earlier)
    periods = "from 2024-01-01 to 2024-12-31 minus from 2023-01-01 to 2023-12-31"
    assert turn.answer.startswith(f"Orders, {periods}: {later - earlier:,}.")


def test_a_numeric_field_is_averaged_over_its_own_cubes_rows(demo_deployment, demo_duckdb):
    turn = ask(demo_deployment, "What was the average unit price of line items in 2024?")

    [[expected]] = duck_rows(
        demo_duckdb,
        "SELECT avg(li.price) FROM line_items li JOIN orders o ON o.id = li.order_id "
        "WHERE o.created_at >= TIMESTAMP '2024-01-01' AND o.created_at < TIMESTAMP '2025-01-01'",
    )
    assert turn.sql is not None
    assert turn.sql.startswith("SELECT AVG(value) AS avg FROM (SELECT unit_price AS value FROM line_items WHERE")
    assert _only_number(turn) == _number(expected)
    assert "the average of Unit price over its rows from Line items" in turn.description


def test_an_embed_viewer_granted_only_the_view_gets_no_field_aggregate_from_the_cube_behind_it(demo_deployment):
    # The policy grants the view Sales to admins; the cube line_items behind it has no policy of its own, so an embed
    # viewer's serviceMeta never offers it, and the view's rows (a line per order line) are not averaged in its place.
    admin = ask(demo_deployment, "What was the average unit price of line items in 2024?")
    turn = ask(demo_deployment, "What was the average unit price of line items in 2024?", only_granted=True)

    assert admin.sql is not None
    assert "FROM line_items" in admin.sql
    assert turn.sql is None
    assert "Computed:" not in turn.answer
