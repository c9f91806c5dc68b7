"""Attack: probing publicIds through the embed page's error page (issue 22).

Without a usable session nothing about an account is known from the request, so the page that says so must be
the same, byte for byte and header for header, for a publicId that exists (with allowed origins the account set)
and for one that does not: else anyone can test whether a publicId exists and read whose origins frame it.
"""

from __future__ import annotations

import datetime as dt

import pytest

from embedadmin.embedding.models import EmbedSession
from tests.embedding.dashboard_support import page_url, published_dashboard

ACME_ORIGIN = "https://app.acme.test"
GLOBEX_ORIGIN = "https://portal.globex.test"


def _session_of(kind: str, *, api, cast, new_session) -> str | None:
    """A sessionId that cannot be used, of each kind a viewer or a prober may hold (None: no parameter)."""
    if kind == "missing":
        return None
    if kind == "empty":
        return ""
    if kind == "made-up":
        return "not-a-session-at-all"
    session_id = new_session(cast, externalId="alice")
    if kind == "used":
        assert api.get(page_url("SalesOverv01", session_id)).status_code == 200
    elif kind == "revoked":
        revoked = api.post_json("/api/v1/embed/session/revoke", {"sessionId": session_id}, **cast.api_key_headers)
        assert revoked.status_code == 204
    elif kind == "expired":
        EmbedSession.objects.filter(account=cast.account).update(expires_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    return session_id


def _get(api, public_id: str, session_id: str | None):
    url = f"/embed/dashboard/{public_id}" if session_id is None else page_url(public_id, session_id)
    return api.get(url)


def _shown(response) -> tuple[int, bytes, dict[str, str]]:
    return response.status_code, response.content, dict(response.headers)


@pytest.mark.parametrize("kind", ["missing", "empty", "made-up", "used", "revoked", "expired"])
def test_the_error_page_is_the_same_for_a_known_and_an_unknown_public_id(
    api, acme, globex, new_session, patch_tenant_settings, kind
):
    # given: two accounts' dashboards, each account with its own allowed origins
    published_dashboard(acme)
    published_dashboard(globex, public_id="GlobexDash01")
    patch_tenant_settings(acme, embedAllowedOrigins=[ACME_ORIGIN])
    patch_tenant_settings(globex, embedAllowedOrigins=[GLOBEX_ORIGIN])
    session_id = _session_of(kind, api=api, cast=acme, new_session=new_session)

    # when
    known = _get(api, "SalesOverv01", session_id)
    other_account = _get(api, "GlobexDash01", session_id)
    unknown = _get(api, "NoSuchDash01", session_id)

    # then: one page for all three, which names no account's origin
    assert known.status_code == 401
    assert _shown(known) == _shown(unknown)
    assert _shown(other_account) == _shown(unknown)
    for response in (known, other_account, unknown):
        page = response.content.decode() + repr(dict(response.headers))
        assert ACME_ORIGIN not in page
        assert GLOBEX_ORIGIN not in page
        assert "SalesOverv01" not in page
        assert "embed-bootstrap" not in page


def test_the_chat_pages_error_page_is_the_dashboards(api, acme):
    # given: no usable session, for the standalone chat and for a dashboard
    chat = api.get("/embed/chat?sessionId=not-a-session-at-all")
    dashboard = api.get("/embed/dashboard/NoSuchDash01?session=not-a-session-at-all")

    # then
    assert _shown(chat) == _shown(dashboard)
