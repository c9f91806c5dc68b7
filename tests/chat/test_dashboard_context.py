"""stream-chat-state's ``context``: the dashboard the chat panel is on and its filters. Validated (400, never a 500),
stored with the run (a resend with another context is refused like one with another input), applied by the
built-in analyst through the Core Data API with the viewer's own policies (a filter never widens what they see),
and given to an OpenAI-compatible model as a system note."""

from __future__ import annotations

import json
from typing import Any

import pytest

from embedadmin.chat import services
from embedadmin.chat.models import Run, Thread, ThreadEvent
from embedadmin.chat.providers.base import ContextFilter
from embedadmin.chat.providers.openai import SYSTEM_PROMPT, dashboard_note, reader_note
from embedadmin.directory.services import AttributeDefinitionInput, attribute_definition_create, group_create
from embedadmin.embedding import services as embedding
from embedadmin.embedding.serializers import generate_session_input
from tests.chat.conftest import SESSION, Chat
from tests.chat.providers.fake_openai import FakeOpenAI, answer
from tests.chat.test_tools import demo_deployment
from tests.conftest import Cast
from tests.semantic.http_support import demo_duckdb, duck_rows, fresh_semantic_state

__all__ = ["demo_deployment", "demo_duckdb", "fresh_semantic_state"]  # fixtures

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGE_ID = "1790000000000-message"
ORDERS_USERS = "orders o JOIN users u ON u.id = o.user_id"
FILTERS = [
    {"member": "sales.status", "operator": "equals", "values": ["completed"]},
    {"member": "sales.created_at", "operator": "inDateRange", "values": ["2025-01-01", "2025-06-30"]},
]
CONTEXT = {"dashboard": {"publicId": "SalesOvervw1", "filters": FILTERS}}


def embed_header(cast: Cast, **fields: Any) -> dict[str, str]:
    """``Authorization: Embed-Token`` of a redeemed embed session for ``fields`` (as the embedded page holds)."""
    for name in fields.get("groups", []):
        if not cast.account.groups.filter(name=name).exists():
            group_create(account=cast.account, embed_tenant=None, name=name)
    data = generate_session_input({"deploymentId": cast.deployment.pk, **fields})
    session_id = embedding.session_generate(account=cast.account, deployment=cast.deployment, data=data)
    return {"Authorization": f"Embed-Token {embedding.session_exchange(session_id=session_id).token}"}


def regional_viewer(cast: Cast, country: str) -> dict[str, str]:
    attribute_definition_create(
        account=cast.account, embed_tenant=None, data=AttributeDefinitionInput(name="country", type="string")
    )
    return embed_header(
        cast, externalId="remy", groups=["regional"], userAttributes=[{"name": "country", "value": country}]
    )


def final_content(result) -> str:
    [final] = [line for line in result.lines if line.get("graphPath", [""])[0] == "final"]
    return final["content"]


def sql_query(result) -> str:
    calls = [line["toolCall"] for line in result.lines if "result" in line.get("toolCall", {})]
    assert [call["name"] for call in calls] == ["serviceMeta", "serviceSqlApi"]
    assert "error" not in json.loads(calls[1]["result"])
    return json.loads(calls[1]["input"])["sqlQuery"]


def _filter(**changes: Any) -> dict[str, Any]:
    return {**FILTERS[0], **changes}


def _with_filters(*filters: Any) -> dict[str, Any]:
    return {"dashboard": {"publicId": "SalesOvervw1", "filters": list(filters)}}


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ("SalesOvervw1", "context: Invalid data. Expected a dictionary, but got str."),
        (None, "context: This field may not be null."),
        ({"dashboard": {"publicId": "SalesOvervw1"}, "page": 1}, "context: Unknown fields: page"),
        ({"dashboard": []}, "context.dashboard: Invalid data. Expected a dictionary, but got list."),
        ({"dashboard": {"filters": []}}, "context.dashboard.publicId: This field is required."),
        ({"dashboard": {"publicId": "short"}}, "context.dashboard.publicId: must be 12 letters or digits"),
        ({"dashboard": {"publicId": "SalesOvervw-"}}, "context.dashboard.publicId: must be 12 letters or digits"),
        ({"dashboard": {"publicId": 123456789012}}, "context.dashboard.publicId: Not a valid string."),
        (
            {"dashboard": {"publicId": "SalesOvervw1", "title": "Sales"}},
            "context.dashboard: Unknown fields: title",
        ),
        (
            {"dashboard": {"publicId": "SalesOvervw1", "filters": {"member": "sales.status"}}},
            'context.dashboard.filters: Expected a list of items but got type "dict".',
        ),
        (
            _with_filters(*[FILTERS[0]] * 51),
            "context.dashboard.filters: Ensure this field has no more than 50 elements.",
        ),
        (
            _with_filters("sales.status"),
            "context.dashboard.filters.0: Invalid data. Expected a dictionary, but got str.",
        ),
        (
            _with_filters(_filter(member="status")),
            "context.dashboard.filters.0.member: must be '<cube or view>.<member>'",
        ),
        (
            _with_filters(_filter(member="sales.status; DROP")),
            "context.dashboard.filters.0.member: must be '<cube or view>.<member>'",
        ),
        (
            _with_filters(_filter(member="s." + "m" * 254)),
            "context.dashboard.filters.0.member: Ensure this field has no more than 255 characters.",
        ),
        (
            _with_filters(_filter(operator="measureFilter")),
            'context.dashboard.filters.0.operator: "measureFilter" is not a valid choice.',
        ),
        (
            _with_filters(_filter(operator=["equals"])),
            "context.dashboard.filters.0.operator: \"['equals']\" is not a valid choice.",
        ),
        (
            _with_filters(_filter(values="completed")),
            'context.dashboard.filters.0.values: Expected a list of items but got type "str".',
        ),
        (_with_filters(_filter(values=[1])), "context.dashboard.filters.0.values.0: Not a valid string."),
        (_with_filters(_filter(values=[None])), "context.dashboard.filters.0.values.0: This field may not be null."),
        (
            _with_filters(_filter(values=["x" * 1001])),
            "context.dashboard.filters.0.values.0: Ensure this field has no more than 1000 characters.",
        ),
        (
            _with_filters(_filter(values=["x"] * 101)),
            "context.dashboard.filters.0.values: Ensure this field has no more than 100 elements.",
        ),
        (_with_filters(_filter(values=[])), "context.dashboard.filters.0: values: equals needs at least one value"),
        (
            _with_filters({"member": "sales.status", "operator": "equals"}),
            "context.dashboard.filters.0: values: equals needs at least one value",
        ),
        (_with_filters(_filter(extra=True)), "context.dashboard.filters.0: Unknown fields: extra"),
        (_with_filters({"operator": "set"}), "context.dashboard.filters.0.member: This field is required."),
    ],
)
def test_a_malformed_context_is_a_400_that_says_what_is_wrong(chat, context, message):
    result = chat.stream({"input": "How many orders?", "sessionSettings": SESSION, "context": context})

    assert result.status == 400
    assert result.lines == [{"error": message}]
    assert Thread.objects.count() == 0


def test_the_context_is_stored_with_the_run_in_one_form(chat):
    # given: a set filter without values, and one with an empty string among its values
    filters = [
        {"values": ["completed", ""], "operator": "notEquals", "member": "sales.status"},
        {"member": "sales.completed_at", "operator": "notSet"},
    ]

    # when
    with_context = chat.stream(
        {
            "input": "q",
            "sessionSettings": SESSION,
            "context": {"dashboard": {"filters": filters, "publicId": "ab12CD34ef56"}},
        }
    )
    empty = chat.stream({"input": "q", "sessionSettings": SESSION, "context": {}})
    without = chat.stream({"input": "q", "sessionSettings": SESSION})

    # then
    assert [r.status for r in (with_context, empty, without)] == [200] * 3
    assert [run.context for run in Run.objects.order_by("id")] == [
        {
            "dashboard": {
                "publicId": "ab12CD34ef56",
                "filters": [
                    {"member": "sales.status", "operator": "notEquals", "values": ["completed", ""]},
                    {"member": "sales.completed_at", "operator": "notSet", "values": []},
                ],
            }
        },
        {},
        {},
    ]


@pytest.mark.parametrize(
    "other",
    [
        _with_filters(FILTERS[0]),
        _with_filters(*reversed(FILTERS)),
        {"dashboard": {"publicId": "Customers001", "filters": FILTERS}},
        {},
        None,
    ],
)
def test_a_resent_message_id_with_another_context_is_400_and_writes_nothing(chat, other):
    # given
    body = {"input": "q", "messageId": MESSAGE_ID, "sessionSettings": SESSION, "context": CONTEXT}
    first = chat.stream(body)
    events = ThreadEvent.objects.count()
    resent = {**body, "chatId": first.chat_id, "context": other}
    if other is None:
        del resent["context"]

    # when
    response = chat.post(chat.stream_url, resent)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": f"messageId {MESSAGE_ID} was already sent in this thread with another context"}
    assert (Run.objects.count(), ThreadEvent.objects.count()) == (1, events)


def test_a_resent_message_id_with_the_same_context_replays_the_run(chat):
    body = {"input": "q", "messageId": MESSAGE_ID, "sessionSettings": SESSION, "context": CONTEXT}
    first = chat.stream(body)

    again = chat.stream({**body, "chatId": first.chat_id})

    assert again.lines[1:] == first.lines[1:]
    assert Run.objects.count() == 1


def test_the_panels_request_answers_within_the_dashboards_filters(demo_deployment, demo_duckdb, chat):
    # given: an embedded viewer on the Sales overview, as the chat panel sends it
    headers = embed_header(demo_deployment, externalId="ann", groups=["admin"])
    body = {"input": "How many orders?", "messageId": MESSAGE_ID, "context": CONTEXT}

    # when
    result = chat.stream(body, headers=headers)

    # then
    assert result.status == 200
    assert sql_query(result) == (
        "SELECT MEASURE(order_count) FROM sales WHERE status = 'completed' "
        "AND created_at >= DATE '2025-01-01' AND created_at < DATE '2025-07-01'"
    )
    [[orders]] = duck_rows(
        demo_duckdb,
        "SELECT count(*) FROM orders WHERE status = 'completed' "
        "AND created_at >= TIMESTAMP '2025-01-01' AND created_at < TIMESTAMP '2025-07-01'",
    )
    assert final_content(result) == (
        f"Orders: {orders:,}.\nComputed: Orders (count) from Sales, within the dashboard's filters: status is "
        "completed, ordered at from 2025-01-01 to 2025-06-30 (time zone UTC)."
    )


def test_a_follow_up_on_the_thread_is_answered_within_its_own_requests_filters(demo_deployment, demo_duckdb, chat):
    headers = embed_header(demo_deployment, externalId="ann", groups=["admin"])
    first = chat.stream({"input": "How many orders in 2024?", "context": _with_filters(FILTERS[0])}, headers=headers)

    # the viewer changed the dashboard's status filter before asking again
    shipped = _with_filters(_filter(values=["shipped"]))
    follow_up = chat.stream(
        {"input": "and only in France?", "chatId": first.chat_id, "context": shipped}, headers=headers
    )

    assert sql_query(follow_up) == (
        "SELECT MEASURE(order_count) FROM sales WHERE users_country = 'France' "
        "AND created_at >= DATE '2024-01-01' AND created_at < DATE '2025-01-01' AND status = 'shipped'"
    )
    [[orders]] = duck_rows(
        demo_duckdb,
        f"SELECT count(*) FROM {ORDERS_USERS} WHERE u.country = 'France' AND o.status = 'shipped' "
        "AND o.created_at >= TIMESTAMP '2024-01-01' AND o.created_at < TIMESTAMP '2025-01-01'",
    )
    assert final_content(follow_up).startswith(f"Orders: {orders:,}.\n")


def test_a_dashboard_filter_never_widens_what_a_regional_viewer_sees(demo_deployment, demo_duckdb, chat):
    # given: a viewer who may see France only; the dashboard's filter names Germany
    germany = _with_filters({"member": "sales.users_country", "operator": "equals", "values": ["Germany"]})
    admin = embed_header(demo_deployment, externalId="ann", groups=["admin"])
    remy = regional_viewer(demo_deployment, "France")

    # when
    as_admin = chat.stream({"input": "How many orders by country?", "context": germany}, headers=admin)
    as_remy = chat.stream({"input": "How many orders by country?", "context": germany}, headers=remy)
    total = chat.stream({"input": "How many orders?", "context": germany}, headers=remy)

    # then: the admin sees Germany's orders; the regional viewer gets no rows, not Germany's data
    [[in_germany]] = duck_rows(demo_duckdb, f"SELECT count(*) FROM {ORDERS_USERS} WHERE u.country = 'Germany'")
    assert in_germany > 0
    grouped = (
        "SELECT users_country, MEASURE(order_count) FROM sales WHERE users_country = 'Germany' GROUP BY 1 ORDER BY 1"
    )
    assert sql_query(as_admin) == sql_query(as_remy) == grouped
    assert final_content(as_admin).split("\n")[:2] == ["Orders by country:", f"- Germany: {in_germany:,}"]
    computed = (
        "Computed: Orders (count) from Sales, by country, within the dashboard's filters: country is "
        "Germany (time zone UTC)."
    )
    assert final_content(as_remy) == f"No data matches: Orders by country has no rows.\n{computed}"
    assert final_content(total).startswith("Orders: 0.\n")


def test_a_filter_on_a_member_the_viewer_may_not_see_is_left_out_and_said(demo_deployment, demo_duckdb, chat):
    # given: regional viewers may not read customers' e-mail addresses
    remy = regional_viewer(demo_deployment, "France")
    context = _with_filters({"member": "sales.users_email", "operator": "contains", "values": ["@example.com"]})

    # when
    result = chat.stream({"input": "How many orders?", "context": context}, headers=remy)

    # then
    assert sql_query(result) == "SELECT MEASURE(order_count) FROM sales"
    [[france]] = duck_rows(demo_duckdb, f"SELECT count(*) FROM {ORDERS_USERS} WHERE u.country = 'France'")
    assert final_content(result) == (
        f"Orders: {france:,}.\nComputed: Orders (count) from Sales (time zone UTC). Left out of the dashboard's "
        "filters: sales.users_email contains @example.com (Sales has no such member)."
    )


def test_the_openai_compatible_model_is_told_the_dashboard_and_its_filters(acme, runtime):
    with FakeOpenAI() as fake:
        # given
        agent = services.agent_create(
            account=acme.account,
            deployment=acme.deployment,
            name="LLM analyst",
            provider="openai",
            base_url=fake.url,
            model="gpt-test",
            api_key=fake.api_key,
        )
        chat = Chat(agent=agent, api_key=acme.created.api_key)
        fake.script(answer("Done."), answer("Done."))

        # when
        chat.stream({"input": "What is revenue by month?", "sessionSettings": SESSION, "context": CONTEXT})
        chat.stream({"input": "What is revenue by month?", "sessionSettings": SESSION})

    # then
    with_context, without = fake.requests
    note = (
        'The user is looking at dashboard SalesOvervw1 with these filters applied: sales.status equals ["completed"]; '
        'sales.created_at inDateRange ["2025-01-01", "2025-06-30"]. Apply them to every query you run (in WHERE, '
        "or HAVING for a measure; date ranges in the user's time zone) unless the user asks otherwise, and say which "
        "you applied."
    )
    assert with_context.body["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "system", "content": reader_note("en-US", "UTC")},
        {"role": "system", "content": note},
        {"role": "user", "content": "What is revenue by month?"},
    ]
    assert without.body["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "system", "content": reader_note("en-US", "UTC")},
        {"role": "user", "content": "What is revenue by month?"},
    ]


def test_a_dashboard_without_filters_is_said_to_have_none():
    assert dashboard_note("SalesOvervw1", []) == (
        "The user is looking at dashboard SalesOvervw1 with no filters applied; answer over all the data they may "
        "see unless they ask otherwise."
    )
    assert dashboard_note("SalesOvervw1", [ContextFilter("sales.completed_at", "set")]) == (
        "The user is looking at dashboard SalesOvervw1 with these filters applied: sales.completed_at set. Apply them "
        "to every query you run (in WHERE, or HAVING for a measure; date ranges in the user's time zone) unless the "
        "user asks otherwise, and say which you applied."
    )
