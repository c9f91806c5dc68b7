"""The chat door for embed viewers (issue 22): the dashboard chat and ``/embed/chat`` speak with the viewer's embed
token, so the analyst and every tool it calls read only what the viewer's access policies grant.

The attacks are the ones a curious viewer tried on the demo: Anna (regional, Germany, no personal data) asked for
customer emails and for French customers, and the chat answered from the raw ``users`` cube.
"""

from __future__ import annotations

import json

import pytest

from embedadmin.chat.models import Run
from embedadmin.chat.tools import ToolContext, default_tools
from embedadmin.semantic.serving.routing import viewer_context
from tests.chat.test_dashboard_context import MESSAGE_ID, final_content, regional_viewer
from tests.chat.test_tools import demo_deployment
from tests.semantic.http_support import demo_duckdb, duck_rows, fresh_semantic_state

__all__ = ["demo_deployment", "demo_duckdb", "fresh_semantic_state"]  # fixtures

pytestmark = pytest.mark.django_db(transaction=True)


def _outside_the_grant(dataset) -> list[str]:
    """Strings Anna must never see: other countries' names and customers' emails and names."""
    others = [row[0] for row in duck_rows(dataset, "SELECT DISTINCT country FROM users WHERE country <> 'Germany'")]
    people = duck_rows(dataset, "SELECT email, first_name || ' ' || last_name FROM users ORDER BY id LIMIT 200")
    return [*others, *(email for email, _ in people), *(name for _, name in people)]


def _body_text(result) -> str:
    return json.dumps(result.lines)


@pytest.mark.parametrize(
    "question",
    [
        "customer emails",
        "customer names in France",
        "List the emails of users",
        "How many orders by country?",
        "Show users by country",
        "full names of customers",
    ],
)
def test_the_dashboard_chat_answers_a_regional_viewer_only_within_the_grant(
    demo_deployment, demo_duckdb, chat, question
):
    headers = regional_viewer(demo_deployment, "Germany")

    result = chat.stream({"input": question, "messageId": MESSAGE_ID}, headers=headers)

    assert result.status == 200
    text = _body_text(result)
    # the viewer's own words may be echoed ("I did not understand 'France'"): they are not data
    outside = [value for value in _outside_the_grant(demo_duckdb) if value.lower() not in question.lower()]
    leaked = [value for value in outside if value in text]
    assert leaked == []
    run = Run.objects.get()
    assert run.query_context["securityContext"]["embed"]["deploymentId"] == demo_deployment.deployment.pk


def _viewer_tool_context(cast, *, groups: list[str], country: str) -> ToolContext:
    """The tool context a run of Anna's builds (runtime.RunExecution), through the one rule of who is a viewer."""
    ctx = viewer_context(
        deployment=cast.deployment,
        security_context={"sub": "anna", "embed": {"deploymentId": cast.deployment.pk}},
        groups=groups,
        user_attributes={"country": country},
    )
    return ToolContext(account_id=cast.account.pk, deployment_id=cast.deployment.pk, query_context=ctx)


def _call(context: ToolContext, name: str, arguments: dict) -> dict:
    return json.loads(default_tools().call(context, name, arguments))


def test_service_meta_knows_only_the_granted_views_and_members(demo_deployment):
    context = _viewer_tool_context(demo_deployment, groups=["regional"], country="Germany")

    result = _call(context, "serviceMeta", {"searchQuery": "customer emails"})

    names = {cube["name"] for cube in result["cubes"]}
    members = {member["name"] for cube in result["cubes"] for member in cube["members"]}
    assert names <= {"sales", "product_catalog"}
    assert not {"users.email", "sales.users_email", "sales.users_full_name", "users.full_name"} & members


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT email FROM users",
        "SELECT users_email FROM sales GROUP BY 1",
        "SELECT country, MEASURE(count) FROM users GROUP BY 1",
    ],
)
def test_the_sql_tool_refuses_what_the_viewer_was_not_granted(demo_deployment, demo_duckdb, sql):
    context = _viewer_tool_context(demo_deployment, groups=["regional"], country="Germany")

    result = _call(context, "serviceSqlApi", {"sqlQuery": sql})

    assert "error" in result
    text = json.dumps(result)
    assert [value for value in _outside_the_grant(demo_duckdb) if value in text] == []


def test_the_sql_tool_answers_within_the_row_policy(demo_deployment, demo_duckdb):
    context = _viewer_tool_context(demo_deployment, groups=["regional"], country="Germany")

    result = _call(
        context, "serviceSqlApi", {"sqlQuery": "SELECT users_country, MEASURE(order_count) FROM sales GROUP BY 1"}
    )

    assert "error" not in result, result
    assert "Germany" in json.dumps(result)
    assert [value for value in _outside_the_grant(demo_duckdb) if value in json.dumps(result)] == []


def test_a_dashboard_filter_naming_a_raw_cube_never_widens_the_row_policy(demo_deployment, chat):
    # given: Anna's page sends a filter on the raw users cube for France
    headers = regional_viewer(demo_deployment, "Germany")
    context = {
        "dashboard": {
            "publicId": "SalesOvervw1",
            "filters": [{"member": "users.country", "operator": "equals", "values": ["France"]}],
        }
    }

    # when
    result = chat.stream({"input": "How many orders?", "messageId": MESSAGE_ID, "context": context}, headers=headers)

    # then: the query runs on the granted view, where her policy (Germany) and the filter (France) meet in nothing
    calls = [line["toolCall"] for line in result.lines if "result" in line.get("toolCall", {})]
    queries = [json.loads(call["input"])["sqlQuery"] for call in calls if call["name"] == "serviceSqlApi"]
    assert queries == ["SELECT MEASURE(order_count) FROM sales WHERE users_country = 'France'"]
    assert final_content(result).startswith("Orders: 0.\n")
