"""The embed page and its gates: GET /embed/dashboard/{publicId}?session= (docs/dashboards.md, reference R4, R5, R9)."""

# ruff: noqa: F401, F811
from __future__ import annotations

import datetime as dt

import pytest
from django.core import signing

from embedadmin.accounts import services as accounts
from embedadmin.core.errors import Forbidden, NotFound
from embedadmin.dashboards.access import NOT_FOUND, embed_dashboard
from embedadmin.dashboards.models import Dashboard
from embedadmin.embedding.pages import GRANT_SALT

# Fixtures of the embedding tests,: imported so pytest registers them here (hence F401, F811 above).
from tests.embedding.conftest import exchange, generate, new_session, patch_tenant_settings
from tests.embedding.dashboard_support import bootstrap_of, page_url, published_dashboard
from tests.embedding.support import decode_embed_token

EMBED_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
    "font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
)


def _claims(new_session, exchange, cast, **fields):
    token = exchange(new_session(cast, **fields)).json()["token"]
    return decode_embed_token(token, secret=cast.created.deployment_api_secret)


# --- the gates, one function (dashboards.access.embed_dashboard) --------------------------------------------


@pytest.mark.parametrize(
    ("dashboard", "viewer_tenant", "outcome"),
    [
        ({}, "tenant-a", "ok"),  # published, embeddable, shared with all embed users
        ({"share": "tenant-a"}, "tenant-a", "ok"),  # shared with the viewer's tenant
        ({"share": "tenant-b"}, "tenant-a", 404),  # shared with another tenant: looks missing
        ({"share": None}, "tenant-a", 404),  # shared with nobody
        ({"share": "tenant-a"}, None, 404),  # a viewer in no tenant sees only all-embed-users shares
        ({"status": Dashboard.Status.DRAFT}, "tenant-a", 404),  # never published
        ({"status": Dashboard.Status.ARCHIVED, "version_number": 0}, "tenant-a", 404),
        ({"allow_embed": False}, "tenant-a", 403),  # published but not embeddable
        ({"allow_embed": False, "share": None}, "tenant-a", 403),  # allowEmbed is checked before the share
    ],
)
def test_each_gate_in_order(new_session, exchange, acme, dashboard, viewer_tenant, outcome):
    # given
    published_dashboard(acme, **dashboard)
    fields = {"embedTenantName": viewer_tenant} if viewer_tenant else {}
    claims = _claims(new_session, exchange, acme, externalId="alice", **fields)

    # when / then
    if outcome == "ok":
        embedded = embed_dashboard(claims=claims, public_id="SalesOverv01")
        assert embedded.version.number == 1
        assert [s.name for s in embedded.snapshots] == ["Revenue by month", "Revenue by country"]
    else:
        with pytest.raises(NotFound if outcome == 404 else Forbidden) as raised:
            embed_dashboard(claims=claims, public_id="SalesOverv01")
        assert raised.value.message == (NOT_FOUND if outcome == 404 else "This dashboard may not be embedded")


def test_another_accounts_or_deployments_dashboard_looks_exactly_like_a_missing_one(
    new_session, exchange, acme, globex
):
    # given: the same publicId does not exist for acme; globex's dashboard exists, and one in acme's other deployment
    published_dashboard(globex, public_id="GlobexDash01")
    other, _ = accounts.deployment_create(account=acme.account, name="other", slug="other")
    published_dashboard(acme, public_id="OtherDeplo01", deployment=other)
    claims = _claims(new_session, exchange, acme, externalId="alice")

    # when
    errors = []
    for public_id in ("GlobexDash01", "OtherDeplo01", "NoSuchDash01"):
        with pytest.raises(NotFound) as raised:
            embed_dashboard(claims=claims, public_id=public_id)
        errors.append((raised.value.status, raised.value.message))

    # then
    assert errors == [(404, NOT_FOUND)] * 3


# --- the page -----------------------------------------------------------------------------------------------


def test_the_page_redeems_the_session_and_carries_the_bootstrap(api, new_session, patch_tenant_settings, acme):
    # given
    published_dashboard(acme)
    patch_tenant_settings(acme, embedAllowedOrigins=["http://127.0.0.1:4100"])
    session_id = new_session(
        acme, externalId="alice", embedTenantName="tenant-a", settings={"locale": "fr-FR", "allowExport": True}
    )

    # when
    response = api.get(page_url("SalesOverv01", session_id, showDashboardTitle="false"))

    # then
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    assert response["Referrer-Policy"] == "no-referrer"
    assert "X-Frame-Options" not in response
    assert response["Content-Security-Policy"] == f"{EMBED_CSP} http://127.0.0.1:4100"
    boot = bootstrap_of(response)
    claims = decode_embed_token(boot["token"], secret=acme.created.deployment_api_secret)
    expires = dt.datetime.fromisoformat(boot["tokenExpiresAt"])
    assert int(expires.timestamp()) == claims["exp"]
    assert dt.datetime.fromisoformat(boot["renewAt"]) == expires - dt.timedelta(hours=1)
    assert {k: boot[k] for k in ("surface", "publicId", "title", "deploymentId", "embedTenant", "versionNumber")} == {
        "surface": "dashboard",
        "publicId": "SalesOverv01",
        "title": "Sales overview",
        "deploymentId": acme.deployment.pk,
        "embedTenant": "tenant-a",
        "versionNumber": 1,
    }
    assert boot["coreApiBase"] == f"/d/{acme.deployment.pk}/cubejs-api/v1"
    assert boot["endpoints"] == {
        "token": "/api/v1/embed/session/token",
        "view": "/api/v1/embed/dashboard/SalesOverv01/view",
        "export": "/api/v1/embed/dashboard/SalesOverv01/export",
    }
    # no agent in this deployment: no chat panel, whatever the settings say
    assert boot["settings"] == {
        "showDashboardChat": False,
        "allowAi": True,
        "allowExport": True,
        "locale": "fr-FR",
        "timezone": "UTC",
        "embedTheme": {},
    }
    assert boot["flags"] == {
        "allowExport": True,
        "showDashboardHeader": True,
        "showDashboardTitle": False,
        "showDashboardExportMenu": True,
    }
    assert boot["hostOrigins"] == ["http://127.0.0.1:4100"]
    grant = signing.loads(boot["grant"], salt=GRANT_SALT)
    assert grant == {
        "p": "SalesOverv01",
        "d": acme.deployment.pk,
        "s": "alice",
        "j": claims["jti"],
        # what the URL let through (it turned the title off), not what the session allows
        "u": {
            "allowExport": True,
            "showDashboardHeader": True,
            "showDashboardTitle": False,
            "showDashboardExportMenu": True,
        },
    }
    assert [w["id"] for w in boot["view"]["widgets"]] == ["revenue", "by-country", "intro"]
    assert [c["id"] for c in boot["view"]["controls"]] == ["country", "period", "grain", "measure"]


def test_session_id_is_accepted_as_the_parameter_name_too(api, new_session, acme):
    # given
    published_dashboard(acme)
    session_id = new_session(acme, externalId="alice")

    # when
    response = api.get(f"/embed/dashboard/SalesOverv01?sessionId={session_id}")

    # then
    assert response.status_code == 200
    assert bootstrap_of(response)["publicId"] == "SalesOverv01"


def test_reloading_with_a_used_session_shows_session_expired_and_no_data(api, new_session, patch_tenant_settings, acme):
    # given
    published_dashboard(acme)
    patch_tenant_settings(acme, embedAllowedOrigins=["https://app.acme.test"])
    session_id = new_session(acme, externalId="alice")
    first = api.get(page_url("SalesOverv01", session_id))

    # when
    again = api.get(page_url("SalesOverv01", session_id))

    # then
    assert first.status_code == 200
    assert again.status_code == 401
    html = again.content.decode()
    assert "This session has expired" in html
    assert "embed-bootstrap" not in html
    assert "token" not in html
    # the session is gone, so nothing of the account is known: framed by this site only, like an unknown publicId
    assert again["Content-Security-Policy"] == EMBED_CSP
    assert again["Cache-Control"] == "no-store"
    assert "X-Frame-Options" not in again


@pytest.mark.parametrize("query", ["", "?session=", "?session=not-a-session", "?sessionId=%00"])
def test_no_or_an_unknown_session_is_a_401_page(api, acme, query):
    # given
    published_dashboard(acme)

    # when
    response = api.get(f"/embed/dashboard/SalesOverv01{query}")

    # then
    assert response.status_code == 401
    assert "This session has expired" in response.content.decode()


def test_a_revoked_session_is_a_401_page(api, new_session, acme):
    # given
    published_dashboard(acme)
    session_id = new_session(acme, externalId="alice")
    api.post_json("/api/v1/embed/session/revoke", {"sessionId": session_id}, **acme.api_key_headers)

    # when
    response = api.get(page_url("SalesOverv01", session_id))

    # then
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("dashboard", "status", "title"),
    [
        ({"allow_embed": False}, 403, "This dashboard cannot be shown here"),
        ({"share": "tenant-b"}, 404, "Dashboard not found"),
        ({"status": Dashboard.Status.DRAFT}, 404, "Dashboard not found"),
    ],
)
def test_a_gate_failure_is_an_error_page_framed_by_the_viewers_account(
    api, new_session, patch_tenant_settings, acme, dashboard, status, title
):
    # given
    published_dashboard(acme, **dashboard)
    patch_tenant_settings(acme, embedAllowedOrigins=["https://app.acme.test"])
    session_id = new_session(acme, externalId="alice", embedTenantName="tenant-a")

    # when
    response = api.get(page_url("SalesOverv01", session_id))

    # then
    assert response.status_code == status
    assert title in response.content.decode()
    assert "embed-bootstrap" not in response.content.decode()
    assert response["Content-Security-Policy"] == f"{EMBED_CSP} https://app.acme.test"


def test_another_accounts_dashboard_page_is_the_same_404_as_a_missing_one(api, new_session, acme, globex):
    # given
    published_dashboard(globex, public_id="GlobexDash01")

    # when
    theirs = api.get(page_url("GlobexDash01", new_session(acme, externalId="alice")))
    missing = api.get(page_url("NoSuchDash01", new_session(acme, externalId="alice")))

    # then
    assert (theirs.status_code, theirs.content) == (missing.status_code, missing.content) == (404, missing.content)
    assert theirs["Content-Security-Policy"] == missing["Content-Security-Policy"]


def test_pages_outside_embed_keep_x_frame_options_deny(api, db):
    # when
    response = api.get("/admin/login/")

    # then
    assert response["X-Frame-Options"] == "DENY"
    assert "Content-Security-Policy" not in response


def test_an_error_page_of_an_unknown_dashboard_is_framed_by_self_only(api, db):
    # when
    response = api.get("/embed/dashboard/NoSuchDash01?session=abc")

    # then
    assert response.status_code == 401
    assert response["Content-Security-Policy"] == EMBED_CSP


# --- the standalone chat page -------------------------------------------------------------------------------


def test_the_chat_page_is_refused_when_ai_is_not_allowed(api, new_session, acme):
    # given
    session_id = new_session(acme, externalId="alice", settings={"allowAi": False, "showDashboardChat": True})

    # when
    response = api.get(f"/embed/chat?sessionId={session_id}")

    # then
    assert response.status_code == 403
    assert "AI chat is not allowed for this embed session" in response.content.decode()
    assert response["Content-Security-Policy"].startswith("default-src 'self'")


def test_the_chat_page_ignores_show_dashboard_chat(api, new_session, acme):
    # given: an agent of the deployment, and a session that hides the dashboard chat
    from embedadmin.chat import services as chat

    agent = chat.agent_create(account=acme.account, deployment=acme.deployment, name="Analyst")
    session_id = new_session(acme, externalId="alice", settings={"showDashboardChat": False})

    # when
    response = api.get(f"/embed/chat?sessionId={session_id}")

    # then
    assert response.status_code == 200
    boot = bootstrap_of(response)
    assert boot["surface"] == "chat"
    assert boot["endpoints"]["chat"] == f"/api/v1/public/acme/agents/{agent.public_id}/chat/stream-chat-state"
    assert boot["settings"]["showDashboardChat"] is False
    assert boot["settings"]["allowAi"] is True


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("[" * 200_000, id="nested past the recursion limit"),
        pytest.param('{"values": ["' + "x" * 20_000 + '"]}', id="longer than any filter"),
        pytest.param("{not json", id="not JSON"),
    ],
)
def test_an_unusable_f_parameter_is_ignored_and_the_page_renders(api, new_session, acme, value):
    # given
    published_dashboard(acme)
    session_id = new_session(acme, externalId="alice")

    # when
    response = api.get(page_url("SalesOverv01", session_id, **{"f_sales.users_country": value}))

    # then: the page, with no filter from it (not a server error after the session was spent)
    assert response.status_code == 200
    assert bootstrap_of(response)["view"]["state"]["filters"] == {}
