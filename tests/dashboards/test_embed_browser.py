"""The embedded dashboard in real headless Chromium, inside the sample host app (demo/host_app.py) served on
another origin, as a customer's app would show it: the demo dashboards applied from their YAML to acme's
deployment, on the generated demo dataset, for regional viewers of two embed tenants.

What a viewer sees is compared with SQL run directly on the dataset; what the host receives is read from the
messages the host page logged (its ``#events`` list and the iframe's height it set from ``resize``).
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from django.core.management import call_command

from demo.host_app import VIEWERS, EmbedAdmin, make_handler
from embedadmin.accounts.services import deployment_configure, duckdb_url
from embedadmin.dashboards.ascode import apply_for_deployment
from embedadmin.embedding import services as embedding
from embedadmin.embedding.models import EmbedSession
from tests.asgi_server import _free_port
from tests.conftest import Cast
from tests.panel.conftest import BROWSER_ARGS
from tests.semantic.http_support import DEMO_MODEL, demo_duckdb, duck_rows, fresh_semantic_state  # noqa: F401
from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

SALES = "SalesOvervw1"
CUSTOMERS = "CustomerMix1"
TILES = ["revenue", "orders", "average-order", "revenue-over-time", "revenue-by-category", "top-cities"]


@dataclass
class Embed:
    """acme ready to embed, and the sample host app on its own origin."""

    cast: Cast
    base: str  # embedadmin, as the iframe sees it
    host: str  # the host app's origin
    dataset: Path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=BROWSER_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


@pytest.fixture
def embed(live_server, acme: Cast, demo_duckdb: Path, fresh_semantic_state) -> Iterator[Embed]:  # noqa: F811
    port = _free_port()
    host = f"http://127.0.0.1:{port}"
    deployment_configure(deployment=acme.deployment, model_dir=str(DEMO_MODEL), data_source_url=duckdb_url(demo_duckdb))
    call_command("demo_embedding", account=acme.account.name, host_origin=[host])
    call_command("ensure_agent", account=acme.account.name, site_url=live_server.url, stdout=io.StringIO())
    outcomes = apply_for_deployment(acme.deployment)
    assert all(outcome.ok for outcome in outcomes), outcomes
    admin = EmbedAdmin(live_server.url, acme.created.api_key, acme.deployment.pk)
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(admin))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Embed(cast=acme, base=live_server.url, host=host, dataset=demo_duckdb)
    finally:
        server.shutdown()
        server.server_close()


def open_host(page, embed: Embed, viewer: str, dashboard: str = SALES, **params: str) -> Any:
    """The host app's page for ``viewer`` with ``dashboard`` embedded, once the embed says it loaded."""
    extra = "".join(f"&{name}={quote(value)}" for name, value in params.items())
    page.goto(f"{embed.host}/?viewer={viewer}&dashboard={dashboard}{extra}")
    wait_for_event(page, "dashboard-loaded")
    return page.frame_locator("iframe#embed")


def events(page) -> list[tuple[str, dict]]:
    """The embed's messages the host page logged, oldest first."""
    logged = page.evaluate(
        "() => Array.from(document.querySelectorAll('#events li')).map(li => li.textContent).reverse()"
    )
    parsed = []
    for line in logged:
        name, _, payload = line.partition(" ")
        parsed.append((name, json.loads(payload)))
    return parsed


def wait_for_event(page, name: str, *, after: int = 0, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = [payload for event, payload in events(page)[after:] if event == name]
        if seen:
            return seen[-1]
        page.wait_for_timeout(100)
    raise AssertionError(f"no {name} event after #{after}; got {events(page)}")


def _redeemed(embed: Embed) -> int:
    """How many of the account's embed sessions were exchanged for a token."""
    return EmbedSession.objects.filter(account=embed.cast.account, exchanged_at__isnull=False).count()


def session_of(page) -> str:
    """The sessionId the host put in the iframe's address (the embed drops it from its own)."""
    src = page.get_attribute("iframe#embed", "src")
    return parse_qs(urlsplit(src).query)["session"][0]


def kpi(frame, widget: str) -> float:
    """A KPI tile's exact value (the formatted figure's title carries it)."""
    return float(frame.locator(f"[data-widget-id='{widget}'] .kpi-value").get_attribute("title"))


def sql_revenue(embed: Embed, country: str) -> tuple[float, int]:
    [(total, count)] = duck_rows(
        embed.dataset,
        "SELECT sum(o.amount), count(*) FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = ?",
        [country],
    )
    return float(total), int(count)


def test_each_viewer_sees_the_numbers_of_their_own_country_equal_to_sql(page, embed: Embed):
    for key in ("anna", "louis"):
        viewer = VIEWERS[key]
        frame = open_host(page, embed, key)
        total, count = sql_revenue(embed, viewer.country)
        assert kpi(frame, "revenue") == pytest.approx(total, abs=0.01)
        assert kpi(frame, "orders") == count
        # The table's cities are the viewer's country's only.
        cities = frame.locator("[data-widget-id='top-cities'] tbody tr td:first-child").all_inner_texts()
        expected = {
            city for (city,) in duck_rows(embed.dataset, "SELECT city FROM users WHERE country = ?", [viewer.country])
        }
        assert cities
        assert set(cities) <= expected
        assert frame.locator("h1").first.inner_text() == "Sales overview"


def test_events_arrive_in_order_and_resize_sizes_the_frame_to_its_content(page, embed: Embed):
    frame = open_host(page, embed, "anna")
    names = [name for name, _ in events(page)]
    assert names[:2] == ["ready", "view"]
    assert names.index("dashboard-loaded") > names.index("view")
    ready = events(page)[0][1]
    assert ready == {
        "embedTenant": "northwind-traders",
        "deploymentId": embed.cast.deployment.pk,
        "mode": "signed",
        "surface": "dashboard",
        "publicId": SALES,
    }
    loaded = wait_for_event(page, "dashboard-loaded")
    assert loaded["widgetCount"] == len(TILES)
    assert loaded["loadDurationMs"] > 0
    # The host sized the iframe to the content's height: no scrollbar inside the frame.
    resize = wait_for_event(page, "resize")
    frame_height = page.evaluate("() => document.getElementById('embed').getBoundingClientRect().height")
    assert frame_height == pytest.approx(resize["height"], abs=1.5)
    scroll = frame.locator("html").evaluate("el => el.scrollHeight - el.clientHeight")
    assert scroll <= 1
    # A filter is announced with the parameters that give it (the host can put them in its own address).
    count = len(events(page))
    page.evaluate(
        "() => window.embedHost.act('cube:action:set-filter', "
        "{filterUrlParameter: 'f_sales.status=' + JSON.stringify({value: 'completed'})})"
    )
    changed = wait_for_event(page, "filters-changed", after=count)
    assert changed["filterUrlParameters"] == ['f_sales.status={"values":["completed"]}']
    # In a narrow frame the tiles stack: the content grows, the host is told, and the frame follows.
    page.wait_for_timeout(500)
    count = len(events(page))
    page.evaluate("() => { document.getElementById('embed').style.width = '420px'; }")
    taller = wait_for_event(page, "resize", after=count)
    assert taller["height"] > resize["height"] * 1.5, events(page)[count:]
    page.wait_for_timeout(300)
    frame_height = page.evaluate("() => document.getElementById('embed').getBoundingClientRect().height")
    assert frame_height == pytest.approx(events_last(page, "resize")["height"], abs=1.5)


def events_last(page, name: str) -> dict:
    return [payload for event, payload in events(page) if event == name][-1]


def test_f_parameter_cannot_reveal_another_tenants_rows(page, embed: Embed):
    # Anna (Germany) asks, through the URL, for France: the filter narrows, the access policy still applies.
    frame = open_host(page, embed, "anna", **{"f_sales.users_country": json.dumps({"value": "France"})})
    assert frame.locator("[data-widget-id='orders'] .kpi-value").get_attribute("title") == "0"
    assert frame.locator("[data-widget-id='top-cities'] tbody tr").count() == 0
    france_total, _ = sql_revenue(embed, "France")
    assert france_total > 0  # there is data it could have shown


def test_a_used_session_shows_no_data(page, embed: Embed):
    open_host(page, embed, "anna")
    used = session_of(page)
    response = page.goto(f"{embed.base}/embed/dashboard/{SALES}?session={used}")
    assert response.status == 401
    assert "expired" in page.locator("h1").inner_text().lower()
    assert page.locator(".tile").count() == 0
    assert "embed-bootstrap" not in page.content()


def test_revoking_the_session_stops_the_embeds_queries(page, embed: Embed):
    frame = open_host(page, embed, "anna")
    session_id = session_of(page)
    revoked = page.request.post(
        f"{embed.base}/api/v1/embed/session/revoke",
        data={"sessionId": session_id},
        headers={"Authorization": f"Api-Key {embed.cast.created.api_key}"},
    )
    assert revoked.status == 204
    count = len(events(page))
    page.evaluate("() => window.embedHost.act('cube:action:refresh')")
    error = wait_for_event(page, "error", after=count, timeout=10)
    assert error["name"] == "SessionEnded"
    frame.locator("[data-widget-id='revenue'] .tile-ended").wait_for()
    assert frame.locator("[data-widget-id='revenue'] .kpi-value").count() == 0


@pytest.mark.parametrize(
    ("account_default", "session_settings", "shown"),
    [
        (True, {}, True),
        (False, {}, False),
        (False, {"showDashboardChat": True}, True),
        (True, {"showDashboardChat": False}, False),
        (True, {"showDashboardChat": True, "allowAi": False}, False),
        (True, {"allowAi": False}, False),
    ],
)
def test_the_chat_launcher_appears_exactly_when_the_settings_say(
    page, embed: Embed, account_default: bool, session_settings: dict, shown: bool
):
    settings_row = embed.cast.account.tenant_settings
    settings_row.show_dashboard_chat = account_default
    settings_row.save(update_fields=["show_dashboard_chat"])
    session_id = embedding.session_generate(
        account=embed.cast.account,
        deployment=embed.cast.deployment,
        data=embedding.GenerateSessionInput(
            deployment_id=embed.cast.deployment.pk,
            external_id="chat-viewer",
            embed_tenant_name="northwind-traders",
            groups=["regional"],
            user_attributes=[("country", "Germany")],
            settings=session_settings,
        ),
    )
    page.goto(f"{embed.base}/embed/dashboard/{SALES}?session={session_id}")
    page.locator("[data-widget-id='revenue'] .kpi-value").wait_for()
    assert page.locator(".chat-launcher").count() == (1 if shown else 0)


def test_renewal_in_place_keeps_the_tiles_answering(page, embed: Embed, settings):
    # Tokens of 12 seconds, announced as expiring 6 seconds before: the host app answers with a new session.
    settings.EMBEDADMIN = {**settings.EMBEDADMIN, "EMBED_TOKEN_TTL_SECONDS": 12, "EMBED_RENEW_LEAD_SECONDS": 6}
    tokens: list[str] = []
    page.on(
        "request",
        lambda request: (
            tokens.append(request.headers.get("authorization", "")) if request.url.endswith("/v1/load") else None
        ),
    )
    frame = open_host(page, embed, "anna")
    first = kpi(frame, "revenue")
    first_token = tokens[-1]
    count = len(events(page))
    wait_for_event(page, "session-expiring", after=count, timeout=15)
    # The host minted a second session and posted set-session: it is redeemed (not pending any more).
    wait_until(lambda: _redeemed(embed) == 2, "the renewal's session is redeemed", every=0.2)
    # Past the first token's expiry, a refresh still answers, with the new token.
    page.wait_for_timeout(7000)
    count = len(events(page))
    page.evaluate("() => window.embedHost.act('cube:action:refresh')")
    wait_for_event(page, "dashboard-loaded", after=count)
    assert kpi(frame, "revenue") == first
    assert tokens[-1] != first_token
    assert not [name for name, _ in events(page)[count:] if name == "error"]


def test_export_is_what_the_host_signed_into_the_session(page, embed: Embed):
    # The host app's own /?allowExport=true mints the session with export; without it, an embed URL parameter
    # could not add it (the host passes none through).
    without = open_host(page, embed, "anna")
    without.locator("[data-widget-id='top-cities'] .tile-title").wait_for()
    assert without.locator(".tile-menu").count() == 0
    with_export = open_host(page, embed, "anna", allowExport="true")
    assert with_export.locator("[data-widget-id='top-cities'] .tile-menu").count() == 1


def test_renewal_in_place_trades_the_export_grant_for_the_new_sessions(page, embed: Embed, settings):
    # Tokens of 12 seconds: the grant of the first session's page is bound to that session, so exporting past
    # the first token's expiry works only with the grant the page traded for the renewed token.
    settings.EMBEDADMIN = {**settings.EMBEDADMIN, "EMBED_TOKEN_TTL_SECONDS": 12, "EMBED_RENEW_LEAD_SECONDS": 6}
    frame = open_host(page, embed, "anna", allowExport="true")
    count = len(events(page))
    wait_for_event(page, "session-expiring", after=count, timeout=15)
    wait_until(lambda: _redeemed(embed) == 2, "the renewal's session is redeemed", every=0.2)
    page.wait_for_timeout(7000)  # past the first token's expiry
    count = len(events(page))
    frame.locator("[data-widget-id='top-cities'] .tile-menu summary").click()
    frame.locator("[data-widget-id='top-cities'] .menu-item", has_text="Download CSV").click()
    download = wait_for_event(page, "download", after=count)
    assert (download["format"], download["widgetId"]) == ("csv", "top-cities")
    assert download["rowCount"] > 0
    assert not [name for name, _ in events(page)[count:] if name == "error"]


def test_embed_pages_allow_framing_only_by_the_accounts_origins(page, embed: Embed):
    # A session of its own, as the host's back end mints one (the iframe's own is used by now, and a page without
    # a usable session knows no account: it is framed by this site only, tests/embedding/test_attack_error_page.py).
    session_id = page.request.post(f"{embed.host}/session?viewer=anna").json()["sessionId"]
    response = page.request.get(f"{embed.base}/embed/dashboard/{SALES}?session={session_id}")
    assert response.status == 200
    policy = response.headers["content-security-policy"]
    assert f"frame-ancestors 'self' {embed.host}" in policy
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert "unsafe-eval" not in policy
    assert "x-frame-options" not in response.headers
    # Everything else may not be framed at all.
    panel = page.request.get(f"{embed.base}/admin/login/")
    assert panel.headers["x-frame-options"] == "DENY"


def test_the_dashboard_chat_answers_within_the_dashboards_filters(page, embed: Embed, django_db_blocker):
    frame = open_host(page, embed, "anna", **{"f_sales.status": json.dumps({"value": "completed"})})
    count = len(events(page))
    frame.locator(".chat-launcher").click()
    frame.locator("textarea.chat-input").fill("How many orders?")
    # A chat run is answered on a thread of its own, which pytest-django keeps away from the database unless told.
    with django_db_blocker.unblock():
        frame.locator("button.chat-send").click()
        deadline = time.monotonic() + 30
        while not [p for n, p in events(page)[count:] if n == "ai-query" and p["status"] != "submitted"]:
            assert time.monotonic() < deadline, events(page)[count:]
            page.wait_for_timeout(100)
    done = next(p for n, p in events(page)[count:] if n == "ai-query" and p["status"] != "submitted")
    answer = frame.locator(".chat-assistant .chat-answer").last.inner_text()
    assert done["status"] == "completed", answer
    # The agent answered as the viewer (Germany only, by the access policy) within the dashboard's status filter.
    [(expected,)] = duck_rows(
        embed.dataset,
        "SELECT count(*) FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = ? AND o.status = ?",
        ["Germany", "completed"],
    )
    assert f"{expected:,}" in answer
    assert "within the dashboard's filters" in answer
    submitted = [payload for name, payload in events(page)[count:] if name == "ai-query"]
    assert [p["status"] for p in submitted][:1] == ["submitted"]


def test_a_declined_question_offers_buttons_that_ask_what_it_answers(page, embed: Embed, django_db_blocker):
    frame = open_host(page, embed, "anna")
    frame.locator(".chat-launcher").click()

    def ask(submit: Any) -> str:
        count = len([e for e in events(page) if e[0] == "ai-query" and e[1]["status"] != "submitted"])
        with django_db_blocker.unblock():  # the run is answered on a thread of its own
            submit()
            deadline = time.monotonic() + 30
            while len([e for e in events(page) if e[0] == "ai-query" and e[1]["status"] != "submitted"]) == count:
                assert time.monotonic() < deadline, events(page)
                page.wait_for_timeout(100)
        return frame.locator(".chat-assistant .chat-answer").last.inner_text()

    frame.get_by_label("Question").fill("Show revenu by status")
    declined = ask(lambda: frame.get_by_role("button", name="Ask").click())

    assert "I did not understand 'revenu'" in declined
    offered = frame.get_by_role("group", name="Suggested questions").last.get_by_role("button")
    assert offered.all_inner_texts() == ["Show revenue by status"]
    answered = ask(lambda: offered.first.click())
    assert "Computed: Revenue" in answered
    assert "by status" in answered
    assert frame.locator(".chat-user").last.inner_text() == "Show revenue by status"
