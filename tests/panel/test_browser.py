"""The panel in real headless Chromium against the live server: log in, mint a session, use it."""

from __future__ import annotations

import pytest

from embedadmin.accounts.models import ApiKey
from tests.embedding.support import GENERATE_URL, TOKEN_URL, decode_embed_token
from tests.panel.conftest import AccountRows

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
    page.click("text=External users")
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
    assert set(body) == {"token", "expiresAt"}
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
