"""The time zone the built-in analyst reads dates in and buckets times by: the turn's (``context.timezone``, the one
the embed page's tiles query in, which follows the session, the saved view and the host's ``set-timezone``), else the
caller's security context's ``timezone``, else an embed session's own (``embed.settings.timezone``), else UTC. The
answer's last sentence says which."""

from __future__ import annotations

import pytest

from embedadmin.chat.models import Run, Thread
from embedadmin.chat.runtime import viewer_timezone
from embedadmin.directory.services import group_create
from tests.chat.conftest import SESSION
from tests.chat.test_dashboard_context import embed_header, final_content
from tests.chat.test_tools import demo_deployment
from tests.semantic.http_support import demo_duckdb, fresh_semantic_state

__all__ = ["demo_deployment", "demo_duckdb", "fresh_semantic_state"]  # fixtures

pytestmark = pytest.mark.usefixtures("fresh_semantic_state")


@pytest.mark.parametrize(
    ("context", "security_context", "zone"),
    [
        ({"timezone": "Europe/Berlin"}, {}, "Europe/Berlin"),
        # the page's zone over the security context's and the embed session's
        (
            {"timezone": "Asia/Tokyo"},
            {"timezone": "Europe/Paris", "embed": {"settings": {"timezone": "UTC"}}},
            "Asia/Tokyo",
        ),
        ({}, {"timezone": "Europe/Paris", "embed": {"settings": {"timezone": "Asia/Tokyo"}}}, "Europe/Paris"),
        ({}, {"embed": {"settings": {"timezone": "America/New_York"}}}, "America/New_York"),
        (None, None, "UTC"),
        # never anything but a known zone
        ({"timezone": "Mars/Olympus"}, {"timezone": ["x"], "embed": {"settings": {"timezone": 3}}}, "UTC"),
        ({}, {"embed": "Asia/Tokyo"}, "UTC"),
    ],
)
def test_the_viewers_zone_is_the_turns_else_the_contexts_else_the_embed_sessions_else_utc(
    context, security_context, zone
):
    assert viewer_timezone(context, security_context) == zone


def computed_zone(result) -> str:
    last = final_content(result).rstrip().rsplit("(time zone ", 1)[1]
    return last.split(")", 1)[0]


@pytest.mark.django_db(transaction=True)
def test_the_chat_api_reads_dates_in_the_turns_zone_and_keeps_it_with_the_run(demo_deployment, demo_duckdb, chat):
    group_create(account=demo_deployment.account, embed_tenant=None, name="admin")
    analyst = {**SESSION, "groups": ["admin"]}
    berlin = chat.stream(
        {"input": "Revenue by month", "sessionSettings": analyst, "context": {"timezone": "Europe/Berlin"}}
    )
    plain = chat.stream({"input": "Revenue by month", "sessionSettings": analyst})

    assert (computed_zone(berlin), computed_zone(plain)) == ("Europe/Berlin", "UTC")
    assert [run.context for run in Run.objects.order_by("id")] == [{"timezone": "Europe/Berlin"}, {}]


@pytest.mark.django_db(transaction=True)
def test_an_embed_viewer_reads_dates_in_their_sessions_zone_unless_the_page_says_another(
    demo_deployment,
    demo_duckdb,
    chat,
):
    headers = embed_header(demo_deployment, externalId="ann", groups=["admin"], settings={"timezone": "Asia/Tokyo"})

    own = chat.stream({"input": "Revenue by month"}, headers=headers)
    page = chat.stream({"input": "Revenue by month", "context": {"timezone": "America/New_York"}}, headers=headers)

    assert (computed_zone(own), computed_zone(page)) == ("Asia/Tokyo", "America/New_York")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("zone", "message"),
    [
        ("Mars/Olympus", "context.timezone: must be an IANA time zone name such as Europe/Paris"),
        ("", "context.timezone: This field may not be blank."),
        (["UTC"], "context.timezone: Not a valid string."),
        ("x" * 65, "context.timezone: Ensure this field has no more than 64 characters."),
    ],
)
def test_a_zone_that_is_no_iana_name_is_a_400_and_writes_nothing(chat, zone, message):
    result = chat.stream({"input": "Revenue by city", "sessionSettings": SESSION, "context": {"timezone": zone}})

    assert result.status == 400
    assert result.lines == [{"error": message}]
    assert (Thread.objects.count(), Run.objects.count()) == (0, 0)
