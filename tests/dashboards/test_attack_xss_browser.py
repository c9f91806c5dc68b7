"""The embed page's door for script injection (issue 22), in real headless Chromium: every text a viewer's page shows
that someone else wrote (the dashboard's title and description, a filter's label, a TEXT widget, a tile's title, a
member's title, the data's values, the viewer's own chat input and the answer that echoes it) is shown as text.

The page listens for dialogs (``alert``) and counts elements the payloads would create if they were parsed as HTML.
"""

# ruff: noqa: F811  (the fixtures imported from other test modules are redefined as test arguments, as pytest wants)

from __future__ import annotations

import io
import textwrap
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
from django.core.management import call_command

from embedadmin.accounts.services import deployment_configure, duckdb_url
from embedadmin.dashboards.ascode import apply_for_deployment
from embedadmin.embedding import services as embedding
from tests.conftest import Cast
from tests.dashboards.test_embed_browser import browser, page  # noqa: F401
from tests.semantic.http_support import fresh_semantic_state  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

PUBLIC_ID = "HostileDash1"
PAYLOADS = {
    "title": "<img src=x onerror=alert('title')>",
    "description": "<svg onload=alert('description')></svg>",
    "label": "<img src=x onerror=alert('label')>",
    "text": "<script>alert('text')</script><img src=x onerror=alert('text')>",
    "tile": "<img src=x onerror=alert('tile')>",
    "member": "<img src=x onerror=alert('member')>",
    "value": "<img src=x onerror=alert('value')>",
    "chat": "<img src=x onerror=alert('chat')> notes?",
}


def _model(root: Path) -> Path:
    model = root / "model"
    (model / "cubes").mkdir(parents=True)
    (model / "dashboards").mkdir()
    (model / "cubes" / "notes.yml").write_text(
        textwrap.dedent(
            f"""
            cubes:
              - name: notes
                sql_table: notes
                measures:
                  - {{name: count, type: count}}
                dimensions:
                  - {{name: id, sql: id, type: number, primary_key: true}}
                  - {{name: body, sql: body, type: string, title: "{PAYLOADS["member"]}"}}
            views:
              - name: notes_view
                cubes:
                  - join_path: notes
                    includes: [count, body]
                access_policy:
                  - group: "*"
            """
        )
    )
    (model / "dashboards" / "hostile.yml").write_text(
        textwrap.dedent(
            f"""
            workbook: {{slug: hostile, name: Hostile}}
            reports:
              - key: notes
                name: "{PAYLOADS["tile"]}"
                query: {{measures: [notes_view.count], dimensions: [notes_view.body]}}
                visualization: {{kind: table}}
            dashboard:
              publicId: {PUBLIC_ID}
              title: "{PAYLOADS["title"]}"
              description: "{PAYLOADS["description"]}"
              publish: true
              allowEmbed: true
              embedAccess: {{allEmbedUsers: true}}
              widgets:
                - {{id: body, type: FILTER, position: {{x: 0, y: 0, w: 4, h: 1}},
                   config: {{member: notes_view.body, label: "{PAYLOADS["label"]}", operators: [equals]}}}}
                - {{id: intro, type: TEXT, position: {{x: 4, y: 0, w: 8, h: 1}},
                   config: {{text: "{PAYLOADS["text"]}"}}}}
                - {{id: notes, type: CHART, report: notes, position: {{x: 0, y: 1, w: 12, h: 4}}}}
            """
        )
    )
    return model


@pytest.fixture
def hostile(live_server, acme: Cast, tmp_path: Path, fresh_semantic_state) -> tuple[Cast, str]:
    database = tmp_path / "notes.duckdb"
    with duckdb.connect(str(database)) as connection:
        connection.execute("CREATE TABLE notes (id INTEGER, body VARCHAR)")
        connection.execute("INSERT INTO notes VALUES (1, ?), (2, 'plain')", [PAYLOADS["value"]])
    deployment_configure(
        deployment=acme.deployment, model_dir=str(_model(tmp_path)), data_source_url=duckdb_url(database)
    )
    call_command("ensure_agent", account=acme.account.name, site_url=live_server.url, stdout=io.StringIO())
    outcomes = apply_for_deployment(acme.deployment)
    assert all(outcome.ok for outcome in outcomes), outcomes
    return acme, live_server.url


def _session(cast: Cast) -> str:
    return embedding.session_generate(
        account=cast.account,
        deployment=cast.deployment,
        data=embedding.GenerateSessionInput(
            deployment_id=cast.deployment.pk,
            external_id="mallory",
            settings={"allowAi": True, "showDashboardChat": True},
        ),
    )


def _injected(page: Any) -> int:
    """Elements the payloads would have made had any been parsed as HTML."""
    return page.evaluate("() => document.querySelectorAll(\"img[src='x'], svg[onload], script:not([src])\").length")


def test_nothing_anyone_wrote_runs_as_script_on_the_embed_page(page, hostile, django_db_blocker):
    cast, base = hostile
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    # when: the page renders every hostile text, and the viewer opens the filter and asks the chat
    page.goto(f"{base}/embed/dashboard/{PUBLIC_ID}?session={_session(cast)}")
    page.locator("[data-widget-id='notes'] table").wait_for()
    page.get_by_label(PAYLOADS["label"]).wait_for()
    page.locator(".chat-launcher").click()
    page.get_by_label("Question").fill(PAYLOADS["chat"])
    with django_db_blocker.unblock():
        page.locator("button.chat-send").click()
        deadline = time.monotonic() + 30
        while not page.locator(".chat-assistant .chat-answer").count() or page.locator(".chat-activity").count():
            assert time.monotonic() < deadline, "the chat never answered"
            page.wait_for_timeout(200)
    page.wait_for_timeout(500)

    # then: every payload is on the page as text, none ran, none made an element
    text = page.inner_text("body")
    for name in ("title", "label", "text", "tile", "member", "value"):
        assert PAYLOADS[name] in text, name
    assert PAYLOADS["chat"] in text
    assert dialogs == []
    assert _injected(page) == 0
