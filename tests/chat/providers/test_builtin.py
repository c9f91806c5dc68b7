"""The built-in analyst answers questions about the demo dataset end to end through the stream endpoint; the
numbers in its answers are checked against hand-written SQL on the same DuckDB file."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.chat.test_tools import demo_deployment
from tests.semantic.http_support import demo_duckdb, duck_rows, fresh_semantic_state

__all__ = ["demo_deployment", "demo_duckdb", "fresh_semantic_state"]  # fixtures

pytestmark = pytest.mark.django_db(transaction=True)

ADMIN = {"externalId": "ann", "groups": ["admin"]}
ORDERS_USERS = "orders o JOIN users u ON u.id = o.user_id"
LINES_PRODUCTS = "line_items li JOIN products p ON p.id = li.product_id"
YEAR_2024 = "created_at >= DATE '2024-01-01' AND created_at < DATE '2025-01-01'"


def money(value: Any) -> str:
    return f"{Decimal(str(value)):,.2f}"


def listing(title: str, rows: list[tuple[Any, ...]], show: Any) -> str:
    return "\n".join([f"{title}:", *(f"- {label}: {show(value)}" for label, value in rows)])


def expected_answers(path: Path) -> dict[str, str]:
    """Each question with its answer, the numbers from hand-written SQL on the raw tables."""
    last_year = datetime.now(UTC).year - 1
    [[revenue]] = duck_rows(path, "SELECT sum(quantity * price) FROM line_items")
    [[orders_2024]] = duck_rows(path, f"SELECT count(*) FROM orders WHERE {YEAR_2024}")
    [[france]] = duck_rows(path, f"SELECT count(*) FROM {ORDERS_USERS} WHERE u.country = 'France'")
    [[completed]] = duck_rows(path, "SELECT sum(amount) FROM orders WHERE status = 'completed'")
    [[average]] = duck_rows(path, f"SELECT avg(amount) FROM orders WHERE year(created_at) = {last_year}")
    by_category = duck_rows(
        path, f"SELECT p.category, sum(li.quantity * li.price) AS r FROM {LINES_PRODUCTS} GROUP BY 1 ORDER BY 2 DESC"
    )
    top_products = duck_rows(
        path, f"SELECT p.name, sum(li.quantity * li.price) FROM {LINES_PRODUCTS} GROUP BY 1 ORDER BY 2 DESC LIMIT 5"
    )
    monthly = duck_rows(
        path, f"SELECT strftime(created_at, '%Y-%m'), count(*) FROM orders WHERE {YEAR_2024} GROUP BY 1 ORDER BY 1"
    )
    quarterly = duck_rows(
        path,
        "SELECT year(o.created_at) || '-Q' || quarter(o.created_at), sum(li.quantity * li.price) "
        "FROM line_items li JOIN orders o ON o.id = li.order_id "
        "WHERE o.created_at >= DATE '2024-01-01' AND o.created_at < DATE '2025-01-01' GROUP BY 1 ORDER BY 1",
    )
    germany = duck_rows(
        path,
        "SELECT p.category, sum(li.quantity) FROM line_items li JOIN products p ON p.id = li.product_id "
        "JOIN orders o ON o.id = li.order_id JOIN users u ON u.id = o.user_id WHERE u.country = 'Germany' "
        "GROUP BY 1 ORDER BY 2 DESC, 1",
    )
    return {
        "What is the total revenue?": f"Revenue is {money(revenue)}.",
        "How many orders were placed in 2024?": f"Orders in 2024 is {orders_2024:,}.",
        "How many orders in France?": f"Orders in France is {france:,}.",
        "Order value for status completed": f"Order value with status completed is {money(completed)}.",
        "Average order value last year": f"Average order value in {last_year} is {money(average)}.",
        "Revenue by product category": listing("Revenue by product category", by_category, money),
        "Top 5 products by revenue": listing("Revenue by product", top_products, money),
        "Monthly order count in 2024": listing("Orders by month in 2024", monthly, lambda n: f"{n:,}"),
        "Quarterly revenue in 2024": listing("Revenue by quarter in 2024", quarterly, money),
        "Units sold by category in Germany": listing(
            "Units sold by product category in Germany", germany, lambda n: f"{n:,}"
        ),
    }


QUESTIONS = [
    "What is the total revenue?",
    "How many orders were placed in 2024?",
    "How many orders in France?",
    "Order value for status completed",
    "Average order value last year",
    "Revenue by product category",
    "Top 5 products by revenue",
    "Monthly order count in 2024",
    "Quarterly revenue in 2024",
    "Units sold by category in Germany",
]


def final_answer(result) -> dict[str, Any]:
    finals = [line for line in result.lines if line.get("graphPath", [""])[0] == "final"]
    assert len(finals) == 1
    return finals[0]


def tool_calls(result) -> list[dict[str, Any]]:
    return [line["toolCall"] for line in result.lines if "result" in line.get("toolCall", {})]


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_analyst_answers_with_the_numbers_of_the_data(demo_deployment, demo_duckdb, chat, question):
    result = chat.ask(question, sessionSettings=ADMIN)

    answer = final_answer(result)
    assert answer["content"] == expected_answers(demo_duckdb)[question]
    calls = tool_calls(result)
    assert [call["name"] for call in calls] == ["serviceMeta", "serviceSqlApi"]
    sql_input = json.loads(calls[1]["input"])
    assert sql_input["userRequest"] == question
    assert "error" not in json.loads(calls[1]["result"])
    assert answer["thinking"] == f"Searching the data model for: {question}"
    deltas = [line for line in result.lines if line.get("isDelta") and line.get("content")]
    assert "".join(d["content"] for d in deltas) == answer["content"]
    assert 1 < len(deltas) <= 3


def test_the_analyst_queries_the_view_when_one_has_the_members(demo_deployment, chat):
    result = chat.ask("How many orders in France?", sessionSettings=ADMIN)

    sql = json.loads(tool_calls(result)[1]["input"])["sqlQuery"]
    assert sql == "SELECT MEASURE(order_count) FROM sales WHERE users_country = 'France'"


def test_a_regional_manager_gets_the_numbers_of_their_country_only(demo_deployment, demo_duckdb, chat):
    from embedadmin.directory.services import AttributeDefinitionInput, attribute_definition_create

    attribute_definition_create(
        account=demo_deployment.account, embed_tenant=None, data=AttributeDefinitionInput(name="country", type="string")
    )
    session = {"externalId": "remy", "groups": ["regional"], "userAttributes": [{"name": "country", "value": "France"}]}

    result = chat.ask("How many orders by country?", sessionSettings=session)

    [[france]] = duck_rows(demo_duckdb, f"SELECT count(*) FROM {ORDERS_USERS} WHERE u.country = 'France'")
    assert final_answer(result)["content"] == f"Orders by users country:\n- France: {france:,}"


def test_an_unanswerable_question_gets_what_the_analyst_can_answer_about(demo_deployment, chat):
    result = chat.ask("What's the weather like tomorrow?", sessionSettings=ADMIN)

    assert [call["name"] for call in tool_calls(result)] == ["serviceMeta"]
    assert final_answer(result)["content"] == (
        "I can't answer that from the data model. I can answer about measures such as Orders, Order value, "
        "Completed order value, Average order value, Buying customers, by dimensions such as users email, status, "
        "ordered at, delivered at, order size."
    )


def test_with_a_token_the_agent_queries_with_the_tokens_groups_and_attributes(demo_deployment, demo_duckdb, chat):
    chat.enable_token_auth()
    secret = demo_deployment.created.deployment_api_secret
    claims = {"sub": "Remy", "groups": ["regional"], "userAttributes": {"country": "France"}}

    # sessionSettings claiming admin are ignored with a token: the token says who asks.
    result = chat.stream(
        {"input": "How many orders by country?", "sessionSettings": ADMIN}, headers=chat.token_header(secret, **claims)
    )

    [[france]] = duck_rows(demo_duckdb, f"SELECT count(*) FROM {ORDERS_USERS} WHERE u.country = 'France'")
    assert final_answer(result)["content"] == f"Orders by users country:\n- France: {france:,}"
    outsider = chat.token_header(secret, **{**claims, "sub": "gus", "groups": ["guests"]})
    denied = chat.stream({"input": "How many orders by country?"}, headers=outsider)
    # A guest is denied the sales view (the demo's plain cubes stay readable, as its description says).
    assert "users country" not in final_answer(denied)["content"]
    seen = [
        cube["name"]
        for line in denied.lines
        if line.get("toolCall", {}).get("name") == "serviceMeta" and "result" in line["toolCall"]
        for cube in json.loads(line["toolCall"]["result"])["cubes"]
    ]
    assert seen
    assert "sales" not in seen


def test_with_a_token_only_the_threads_owner_may_abort_it(demo_deployment, chat):
    chat.enable_token_auth()
    secret = demo_deployment.created.deployment_api_secret
    owner = chat.token_header(secret, sub="owner", groups=["admin"])
    other = chat.token_header(secret, sub="other", groups=["admin"])
    asked = chat.stream({"input": "How many orders?"}, headers=owner)
    chat_id = asked.lines[0]["state"]["chatId"]
    chat.stream({"input": "How many orders?"}, headers=other)  # "other" exists as a chat user too

    assert chat.abort({"chatId": chat_id}, headers=other).status == 403
    assert chat.abort({"chatId": chat_id}, headers=owner).status == 204
