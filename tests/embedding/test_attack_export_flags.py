"""Attack: a viewer widening what the host let them do, through the embed page's URL and its export grant (issue 22).

``allowExport`` is a signed setting of the session (generate-session's ``settings``, else the account's default),
sealed into the embed token; the page's URL may only narrow it, ``restrictDataDownload`` outranks it, and the
export grant belongs to the session's token, not to the viewer. Each test checks both what the page says
(the bootstrap) and what the export endpoint does.
"""

# ruff: noqa: F401, F811
from __future__ import annotations

import pytest

from embedadmin.accounts.models import TenantSettings

# Fixtures of other test packages,: imported so pytest registers them here (hence F401, F811 above).
from tests.embedding.conftest import exchange, generate, new_session, patch_tenant_settings, tenant_group
from tests.embedding.dashboard_support import bootstrap_of, embed_headers, page_url, published_dashboard
from tests.semantic.http_support import core, demo_duckdb, fresh_semantic_state

VIEW = "/api/v1/embed/dashboard/SalesOverv01/view"
EXPORT = "/api/v1/embed/dashboard/SalesOverv01/export"
NOT_ALLOWED = {"error": "Export is not allowed for this embed session"}
RESTRICTED = {"error": "Data downloads are restricted for this account"}


@pytest.fixture
def viewer(core, tenant_group):
    """The generate-session fields of the viewer every test is: one whom the demo's policies grant the sales view."""
    tenant_group(core.cast, "admin")
    return {"externalId": "rita", "groups": ["admin"]}


@pytest.fixture
def open_page(api, core, new_session, viewer):
    """``open_page(session_settings, **url_params)``: the viewer's page of the dashboard; its bootstrap."""
    published_dashboard(core.cast)

    def call(settings: dict | None = None, **params: str) -> dict:
        fields = {"settings": settings} if settings is not None else {}
        session_id = new_session(core.cast, **viewer, **fields)
        response = api.get(page_url("SalesOverv01", session_id, **params))
        assert response.status_code == 200, response.content
        return bootstrap_of(response)

    return call


@pytest.fixture
def renewed_token(core, new_session, exchange, viewer):
    """``renewed_token(settings)``: the token of a NEW session of the same viewer, as the host's renewal mints it
    and the page's ``set-session`` exchanges it."""

    def call(settings: dict | None = None) -> str:
        fields = {"settings": settings} if settings is not None else {}
        response = exchange(new_session(core.cast, **viewer, **fields))
        assert response.status_code == 200, response.content
        return response.json()["token"]

    return call


def _export(api, *, grant: str, token: str):
    body = {"grant": grant, "widgetId": "by-country", "format": "csv"}
    return api.post_json(EXPORT, body, **embed_headers(token))


def _refusal(response) -> tuple[int, dict]:
    return response.status_code, response.json()


def _account_default(core, **fields) -> None:
    TenantSettings.objects.filter(account=core.cast.account).update(**fields)


def test_a_url_allow_export_does_not_open_export_on_a_session_without_it(api, open_page):
    # given: the host did not allow export (nor does the account by default)
    boot = open_page(allowExport="true")

    # when
    response = _export(api, grant=boot["grant"], token=boot["token"])

    # then
    assert boot["flags"]["allowExport"] is False
    assert boot["settings"]["allowExport"] is False
    assert _refusal(response) == (403, NOT_ALLOWED)


def test_a_url_allow_export_false_turns_off_what_the_session_allows(api, open_page):
    # given
    boot = open_page({"allowExport": True}, allowExport="false")

    # when
    response = _export(api, grant=boot["grant"], token=boot["token"])

    # then
    assert boot["flags"]["allowExport"] is False
    assert _refusal(response) == (403, NOT_ALLOWED)


def test_a_session_that_allows_export_exports_without_any_url_parameter(api, open_page):
    # given
    boot = open_page({"allowExport": True})

    # when
    response = _export(api, grant=boot["grant"], token=boot["token"])

    # then
    assert boot["flags"]["allowExport"] is True
    assert response.status_code == 200, response.content


def test_the_account_default_applies_when_the_session_is_silent(api, core, open_page):
    # given
    _account_default(core, allow_export=True)
    silent = open_page()
    null = open_page({"allowExport": None})
    refused = open_page({"allowExport": False})

    # when
    exported = _export(api, grant=silent["grant"], token=silent["token"])
    exported_null = _export(api, grant=null["grant"], token=null["token"])
    not_exported = _export(api, grant=refused["grant"], token=refused["token"])

    # then: the session's own value outranks the account's default
    assert (silent["flags"]["allowExport"], null["flags"]["allowExport"]) == (True, True)
    assert exported.status_code == exported_null.status_code == 200
    assert refused["flags"]["allowExport"] is False
    assert _refusal(not_exported) == (403, NOT_ALLOWED)


def test_restrict_data_download_outranks_the_session(api, core, open_page, patch_tenant_settings):
    # given
    before = open_page({"allowExport": True})
    patch_tenant_settings(core.cast, restrictDataDownload=True)
    after = open_page({"allowExport": True})

    # when: a page opened before the account restricted downloads, and one opened after
    old_page = _export(api, grant=before["grant"], token=before["token"])
    new_page = _export(api, grant=after["grant"], token=after["token"])

    # then
    assert after["flags"]["allowExport"] is False
    assert _refusal(old_page) == (403, RESTRICTED)
    assert _refusal(new_page) == (403, RESTRICTED)


def test_a_grant_of_a_session_that_allowed_export_does_not_export_with_a_later_sessions_token(
    api, open_page, renewed_token
):
    # given: session A allowed export; the host's renewal mints session B of the same viewer without it
    boot = open_page({"allowExport": True})
    token_b = renewed_token({"allowExport": False})

    # when: A's grant with B's token, then a grant fetched for B's token
    with_a_grant = _export(api, grant=boot["grant"], token=token_b)
    view = api.post_json(VIEW, {"grant": boot["grant"]}, **embed_headers(token_b))
    with_b_grant = _export(api, grant=view.json()["grant"], token=token_b)

    # then
    assert _refusal(with_a_grant) == (403, {"error": "grant: not for this session"})
    assert view.status_code == 200, view.content
    assert view.json()["flags"]["allowExport"] is False
    assert _refusal(with_b_grant) == (403, NOT_ALLOWED)


def test_a_grant_is_bound_to_its_session_even_when_the_later_session_allows_export(api, open_page, renewed_token):
    # given: both sessions allow export
    boot = open_page({"allowExport": True})
    token_b = renewed_token({"allowExport": True})

    # when
    with_a_grant = _export(api, grant=boot["grant"], token=token_b)

    # then: the page must fetch a grant for the token in hand (its next view does)
    assert _refusal(with_a_grant) == (403, {"error": "grant: not for this session"})


def test_renewal_in_place_recomputes_the_flags_from_the_new_sessions_signed_settings(api, open_page, renewed_token):
    # given: session A did not allow export; the host renews with session B, which does
    boot = open_page()
    token_b = renewed_token({"allowExport": True})

    # when: the page's next view with B's token, and an export with the grant it returns
    view = api.post_json(VIEW, {"grant": boot["grant"]}, **embed_headers(token_b))
    exported = _export(api, grant=view.json()["grant"], token=token_b)

    # then
    assert boot["flags"]["allowExport"] is False
    assert view.json()["flags"]["allowExport"] is True
    assert exported.status_code == 200, exported.content


def test_renewal_keeps_the_urls_narrowing(api, open_page, renewed_token):
    # given: the page's URL turned export off; the renewed session allows it
    boot = open_page({"allowExport": True}, allowExport="false", showDashboardTitle="false")
    token_b = renewed_token({"allowExport": True})

    # when
    view = api.post_json(VIEW, {"grant": boot["grant"]}, **embed_headers(token_b))
    exported = _export(api, grant=view.json()["grant"], token=token_b)

    # then: never carried over wider
    assert view.json()["flags"] == {
        "allowExport": False,
        "showDashboardHeader": True,
        "showDashboardTitle": False,
        "showDashboardExportMenu": True,
    }
    assert _refusal(exported) == (403, NOT_ALLOWED)


def test_another_viewers_token_cannot_renew_a_grant(api, core, open_page, new_session, exchange):
    # given
    boot = open_page({"allowExport": True})
    otto = {"externalId": "otto", "groups": ["admin"], "settings": {"allowExport": True}}
    other = exchange(new_session(core.cast, **otto)).json()["token"]

    # when
    view = api.post_json(VIEW, {"grant": boot["grant"]}, **embed_headers(other))

    # then
    assert _refusal(view) == (403, {"error": "grant: not for this dashboard and viewer"})


@pytest.mark.parametrize("value", ["true", 1, "yes"])
def test_generate_session_takes_only_a_boolean_allow_export(generate, core, value):
    # when
    response = generate(core.cast, externalId="rita", settings={"allowExport": value})

    # then
    assert response.status_code == 400
    assert "allowExport" in response.content.decode()
