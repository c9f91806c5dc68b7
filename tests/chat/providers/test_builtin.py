"""The built-in analyst end to end through the stream endpoint, on the demo dataset: its numbers checked against
hand-written SQL, what it says it computed, declines, follow-ups on a thread, the viewer's time zone and access
policies. The breadth of questions it understands is in ``tests/chat/analyst/``."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from tests.chat.test_tools import demo_deployment
from tests.semantic.http_support import demo_duckdb, duck_rows, fresh_semantic_state

__all__ = ["demo_deployment", "demo_duckdb", "fresh_semantic_state"]  # fixtures

pytestmark = pytest.mark.django_db(transaction=True)

ADMIN = {"externalId": "ann", "groups": ["admin"]}
ORDERS_USERS = "orders o JOIN users u ON u.id = o.user_id"
LINES_PRODUCTS = "line_items li JOIN products p ON p.id = li.product_id"


def money(value: Any) -> str:
    return f"${Decimal(str(value)):,.2f}"


def final_answer(result) -> dict[str, Any]:
    finals = [line for line in result.lines if line.get("graphPath", [""])[0] == "final"]
    assert len(finals) == 1
    return finals[0]


def tool_calls(result) -> list[dict[str, Any]]:
    return [line["toolCall"] for line in result.lines if "result" in line.get("toolCall", {})]


def sql_input(result) -> dict[str, Any]:
    calls = tool_calls(result)
    assert [call["name"] for call in calls] == ["serviceMeta", "serviceSqlApi"]
    assert "error" not in json.loads(calls[1]["result"])
    return json.loads(calls[1]["input"])


def test_the_answer_states_the_number_and_what_was_computed(demo_deployment, demo_duckdb, chat):
    # "completed in 2024" would be asked back: the status completed, or the completion date in 2024?
    question = "How many orders were shipped in 2024?"

    result = chat.ask(question, sessionSettings=ADMIN)

    [[completed]] = duck_rows(
        demo_duckdb,
        "SELECT count(*) FROM orders WHERE status = 'shipped' "
        "AND created_at >= DATE '2024-01-01' AND created_at < DATE '2025-01-01'",
    )
    computed = (
        "Computed: Orders (count) from Sales, where status is shipped, ordered at from 2024-01-01 to 2024-12-31 "
        "(time zone UTC)."
    )
    answer = final_answer(result)
    assert answer["content"] == f"Orders: {completed:,}.\n{computed}"
    assert sql_input(result) == {
        "sqlQuery": "SELECT MEASURE(order_count) FROM sales WHERE status = 'shipped' "
        "AND created_at >= DATE '2024-01-01' AND created_at < DATE '2025-01-01'",
        "queryTitle": "Orders",
        "description": computed,
        "userRequest": question,
        "timezone": "UTC",
    }
    assert answer["thinking"] == f"Searching the data model for: {question}"
    deltas = [line for line in result.lines if line.get("isDelta") and line.get("content")]
    assert "".join(d["content"] for d in deltas) == answer["content"]


def test_a_grouped_and_ranked_answer_lists_the_rows(demo_deployment, demo_duckdb, chat):
    result = chat.ask("Top 3 categories by revenue", sessionSettings=ADMIN)

    rows = duck_rows(
        demo_duckdb,
        f"SELECT p.category, sum(li.quantity * li.price) FROM {LINES_PRODUCTS} GROUP BY 1 ORDER BY 2 DESC LIMIT 3",
    )
    lines = final_answer(result)["content"].split("\n")
    assert lines[0] == "Revenue by product category:"
    assert lines[1:4] == [f"- {category}: {money(revenue)}" for category, revenue in rows]
    assert lines[4] == (
        "Computed: Revenue (sum) from Sales, by product category, ranked by revenue, highest first, top 3 "
        "(time zone UTC)."
    )


def test_completed_is_a_filter_never_the_count_of_all_orders(demo_deployment, demo_duckdb, chat):
    result = chat.ask("How many orders were completed?", sessionSettings=ADMIN)

    [[completed]] = duck_rows(demo_duckdb, "SELECT count(*) FROM orders WHERE status = 'completed'")
    [[everything]] = duck_rows(demo_duckdb, "SELECT count(*) FROM orders")
    assert completed != everything
    assert final_answer(result)["content"].startswith(f"Orders: {completed:,}.")


def test_an_unplaced_word_is_named_and_nothing_is_queried(demo_deployment, chat):
    result = chat.ask("What's the weather like tomorrow?", sessionSettings=ADMIN)

    assert [call["name"] for call in tool_calls(result)] == ["serviceMeta"]
    content = final_answer(result)["content"]
    assert content.startswith(
        "I did not understand 'weather', 'like', 'tomorrow': no measure, dimension or value of the data model "
        "matches. I can answer about measures such as "
    )


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ("Median order value in 2024", "This needs a median"),
        ("Revenue growth last year", "This needs a growth rate (two periods compared)"),
        ("Revenue per customer", "This asks for a ratio per customers"),
    ],
)
def test_a_calculation_the_model_has_not_is_declined_with_the_reason(demo_deployment, chat, question, reason):
    result = chat.ask(question, sessionSettings=ADMIN)

    assert [call["name"] for call in tool_calls(result)] == ["serviceMeta"]
    assert final_answer(result)["content"].startswith(reason)


def test_a_follow_up_on_the_thread_changes_one_part_of_the_last_question(demo_deployment, demo_duckdb, chat):
    first = chat.ask("How many orders in 2024?", sessionSettings=ADMIN)

    follow_up = chat.ask("and only in France?", sessionSettings=ADMIN, chatId=first.chat_id)
    instead = chat.ask("by country instead", sessionSettings=ADMIN, chatId=first.chat_id)

    in_2024 = "created_at >= DATE '2024-01-01' AND created_at < DATE '2025-01-01'"
    assert sql_input(follow_up)["sqlQuery"] == (
        f"SELECT MEASURE(order_count) FROM sales WHERE users_country = 'France' AND {in_2024}"
    )
    assert sql_input(instead)["sqlQuery"] == (
        f"SELECT users_country, MEASURE(order_count) FROM sales WHERE {in_2024} GROUP BY 1 ORDER BY 1"
    )
    [[france]] = duck_rows(
        demo_duckdb,
        f"SELECT count(*) FROM {ORDERS_USERS} WHERE u.country = 'France' "
        "AND o.created_at >= DATE '2024-01-01' AND o.created_at < DATE '2025-01-01'",
    )
    assert final_answer(follow_up)["content"].startswith(f"Orders: {france:,}.")


def test_dates_are_read_in_the_viewers_time_zone(demo_deployment, demo_duckdb, chat):
    session = {**ADMIN, "securityContext": {"timezone": "Asia/Tokyo"}}

    result = chat.ask("How many orders on 2024-03-05?", sessionSettings=session)

    sent = sql_input(result)
    assert sent["timezone"] == "Asia/Tokyo"
    [[tokyo_day]] = duck_rows(
        demo_duckdb,
        "SELECT count(*) FROM orders WHERE created_at >= TIMESTAMP '2024-03-04 15:00:00' "
        "AND created_at < TIMESTAMP '2024-03-05 15:00:00'",
    )
    assert final_answer(result)["content"].startswith(f"Orders: {tokyo_day:,}.")
    assert final_answer(result)["content"].endswith("(time zone Asia/Tokyo).")


def test_a_regional_manager_gets_the_numbers_of_their_country_only(demo_deployment, demo_duckdb, chat):
    from embedadmin.directory.services import AttributeDefinitionInput, attribute_definition_create

    attribute_definition_create(
        account=demo_deployment.account, embed_tenant=None, data=AttributeDefinitionInput(name="country", type="string")
    )
    session = {"externalId": "remy", "groups": ["regional"], "userAttributes": [{"name": "country", "value": "France"}]}

    result = chat.ask("How many orders by country?", sessionSettings=session)

    [[france]] = duck_rows(demo_duckdb, f"SELECT count(*) FROM {ORDERS_USERS} WHERE u.country = 'France'")
    assert final_answer(result)["content"].split("\n")[:2] == ["Orders by country:", f"- France: {france:,}"]


def test_a_value_the_viewer_may_not_see_is_not_found(demo_deployment, chat):
    from embedadmin.directory.services import AttributeDefinitionInput, attribute_definition_create

    attribute_definition_create(
        account=demo_deployment.account, embed_tenant=None, data=AttributeDefinitionInput(name="country", type="string")
    )
    session = {"externalId": "remy", "groups": ["regional"], "userAttributes": [{"name": "country", "value": "France"}]}

    # Germany's rows are outside this viewer's row filter: the value is looked up with their policies.
    result = chat.ask("How many orders in Germany?", sessionSettings=session)

    assert final_answer(result)["content"].startswith("I did not understand 'Germany'")


def test_with_a_token_the_agent_queries_with_the_tokens_groups_and_attributes(demo_deployment, demo_duckdb, chat):
    chat.enable_token_auth()
    secret = demo_deployment.created.deployment_api_secret
    claims = {"sub": "Remy", "groups": ["regional"], "userAttributes": {"country": "France"}}

    # sessionSettings claiming admin are ignored with a token: the token says who asks.
    result = chat.stream(
        {"input": "How many orders by country?", "sessionSettings": ADMIN}, headers=chat.token_header(secret, **claims)
    )

    [[france]] = duck_rows(demo_duckdb, f"SELECT count(*) FROM {ORDERS_USERS} WHERE u.country = 'France'")
    assert final_answer(result)["content"].split("\n")[:2] == ["Orders by country:", f"- France: {france:,}"]
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
