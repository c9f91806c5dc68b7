"""The panel in real headless Chromium against the live server: log in, mint a session, use it; publish, share
and preview a dashboard as a viewer."""

from __future__ import annotations

import shutil

import duckdb
import pytest

from embedadmin.accounts.models import ApiKey
from embedadmin.accounts.services import duckdb_url
from embedadmin.directory import services as directory
from embedadmin.embedding.models import EmbedSession
from tests.embedding.support import GENERATE_URL, TOKEN_URL, decode_embed_token
from tests.panel.conftest import AccountRows, make_dashboard

pytestmark = pytest.mark.browser


def log_in(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base_url}/admin/")


def test_account_admin_mints_a_session_that_exchanges_for_a_token(page, live_server, acme_rows: AccountRows):
    cast = acme_rows.cast
    user = acme_rows.external_user

    # Given acme's administrator logged in through the login form,
    log_in(page, live_server.url, cast.created.admin_username, cast.created.admin_password)
    assert page.locator("#site-name").inner_text() == "embedadmin · acme"
    # when they select the viewer among the external users and run "Mint embed session",
    page.get_by_role("link", name="External users").click()
    page.wait_for_url(f"{live_server.url}/admin/directory/externaluser/")
    page.check(f"input[name=_selected_action][value='{user.pk}']")
    page.select_option("select[name=action]", label="Mint embed session")
    page.click("button[name=index]")
    # choose the deployment on the action's own page and submit it,
    page.wait_for_selector("text=Deployment")
    page.check(f"input[name=deployment][value='{cast.deployment.pk}']")
    page.click("input[type=submit][value='Mint session']")
    page.wait_for_selector("h1:has-text('Embed session minted for')")
    session_id = page.locator("code.panel-secret[data-label=sessionId]").inner_text()
    notes = page.locator("ul.panel-notes").inner_text()

    # then the page shows a real sessionId: it exchanges once for an embed token of that viewer.
    assert len(session_id) >= 43
    assert "Single use and valid for 5 minutes" in notes
    exchanged = page.request.post(f"{live_server.url}{TOKEN_URL}", data={"sessionId": session_id})
    assert exchanged.status == 200
    body = exchanged.json()
    assert set(body) == {"token", "expiresAt", "renewAt"}
    claims = decode_embed_token(body["token"], secret=cast.created.deployment_api_secret)
    assert claims["sub"] == user.external_id
    assert claims["embed"]["deploymentId"] == cast.deployment.pk
    again = page.request.post(f"{live_server.url}{TOKEN_URL}", data={"sessionId": session_id})
    assert again.status == 401


def test_new_api_key_is_shown_once_and_mints_sessions(page, live_server, acme_rows: AccountRows):
    cast = acme_rows.cast
    log_in(page, live_server.url, cast.created.admin_username, cast.created.admin_password)

    # Create a key scoped to the deployment through the add form.
    page.goto(f"{live_server.url}/admin/accounts/apikey/add/")
    page.fill("#id_name", "from the browser")
    page.check(f"input[name=deployments][value='{cast.deployment.pk}']")
    page.click("input[type=submit][name=_save]")
    page.wait_for_selector("h1:has-text('API key created')")
    plaintext = page.locator("code.panel-secret[data-label='API key']").inner_text()

    # Shown once: the key's own page does not show it.
    key = ApiKey.objects.get(name="from the browser")
    page.goto(f"{live_server.url}/admin/accounts/apikey/{key.pk}/change/")
    assert plaintext not in page.content()
    assert f"eak_{key.prefix}_…" in page.content()

    # And it works against generate-session.
    minted = page.request.post(
        f"{live_server.url}{GENERATE_URL}",
        data={"deploymentId": cast.deployment.pk, "externalId": "browser-viewer"},
        headers={"Authorization": f"Api-Key {plaintext}"},
    )
    assert minted.status == 200
    assert set(minted.json()) == {"sessionId"}


def test_account_admin_publishes_shares_and_previews_a_dashboard_as_a_viewer(
    page, live_server, acme_rows: AccountRows, demo_model_state, demo_dataset
):
    cast = acme_rows.cast
    # Given acme's workbook with a draft (a KPI of the order value), not yet published, on the demo data,
    content = make_dashboard(cast, publish=False, data_source_url=duckdb_url(demo_dataset))
    directory.group_create(account=cast.account, embed_tenant=None, name="regional")
    directory.attribute_definition_create(
        account=cast.account, embed_tenant=None, data=directory.AttributeDefinitionInput(name="country", type="string")
    )
    base = live_server.url
    log_in(page, base, cast.created.admin_username, cast.created.admin_password)

    # when the administrator publishes it from the workbook's page,
    page.click("text=Workbooks")
    page.click(f"a:text-is('{content.workbook.name}')")
    page.click("a.panel-publish-link")
    page.click("input[type=submit][value=Publish]")
    page.wait_for_selector("li.success:has-text('Published Sales overview acme: version 1')")
    # allows embedding and shares it with all embed users,
    page.click("a.panel-embed-access-link")
    page.click("button[name=allow_embed][value=true]")
    page.wait_for_selector("#panel-allow-embed:has-text('embedding is allowed')")
    page.check("input[name=target][value=all]")
    page.click("button[name=access][value=read]")
    page.wait_for_selector("#panel-shares:has-text('all embed users')")
    # and previews it as a regional viewer of France,
    page.click(f"a:text-is('{content.workbook.name}')")
    page.click("a.panel-preview-link")
    page.fill("#id_external_id", "preview-fr")
    page.fill("#id_embed_tenant", "shop-fr")
    page.fill("#id_groups", "regional")
    page.fill("#id_attributes", "country=France")
    page.click("input[type=submit][value=Preview]")

    # then the embed page shows, in the panel's iframe, the dashboard with that viewer's numbers only.
    frame = page.frame_locator("#panel-preview-frame")
    assert frame.locator("h1.dash-title").inner_text() == "Sales overview acme"
    kpi = frame.locator("p.kpi-value")
    kpi.wait_for()
    expected = duck_sum(
        demo_dataset, "SELECT SUM(o.amount) FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = 'France'"
    )
    assert float(kpi.get_attribute("title")) == pytest.approx(expected)
    assert frame.locator(".tile-error").count() == 0
    # A new tab gets its own session (the iframe's was single use) and shows the same dashboard.
    with page.expect_popup() as popup_info:
        page.click("#panel-preview-open")
    popup = popup_info.value
    popup.wait_for_selector("h1.dash-title")
    assert popup.locator("h1.dash-title").inner_text() == "Sales overview acme"
    assert "session=" not in popup.url  # the page drops it from the address bar
    assert EmbedSession.objects.filter(external_user__external_id="preview-fr").count() == 2


def duck_sum(path, sql: str) -> float:
    """One number by hand-written SQL on a copy of the DuckDB file (the data source keeps the file open)."""
    copy = path.with_name(f"reference-{path.name}")
    if not copy.exists():
        shutil.copyfile(path, copy)
    with duckdb.connect(str(copy), read_only=True) as connection:
        return float(connection.execute(sql).fetchone()[0])
