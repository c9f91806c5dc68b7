"""The resolution of an embed session's settings: account default x session value (reference 1.5), signed into
the token at exchange, and the validation of the session's settings and embedTheme."""

from __future__ import annotations

import pytest

from embedadmin.accounts.models import TenantSettings
from embedadmin.embedding.services import embed_settings_resolve

OMITTED = object()


@pytest.mark.parametrize(
    ("account_chat", "account_ai", "session_chat", "session_ai", "shown", "ai"),
    [
        # account showDashboardChat on/off, session omitted -> the account's value
        (True, True, OMITTED, OMITTED, True, True),
        (False, True, OMITTED, OMITTED, False, True),
        (True, True, None, True, True, True),
        (False, True, None, True, False, True),
        # session true shows it even when the account hides it
        (True, True, True, OMITTED, True, True),
        (False, True, True, OMITTED, True, True),
        (False, True, True, True, True, True),
        # session false hides it whatever the account says and whatever allowAi says
        (True, True, False, OMITTED, False, True),
        (True, True, False, True, False, True),
        (True, True, False, False, False, False),
        # allowAi false outranks showDashboardChat true
        (True, True, True, False, False, False),
        (False, True, OMITTED, False, False, False),
        # account allowAi off, session showDashboardChat true, allowAi omitted -> no chat (inherits allowAi off)
        (True, False, True, OMITTED, False, False),
        (True, False, OMITTED, OMITTED, False, False),
        # the session may give AI back when the account withholds it by default
        (True, False, OMITTED, True, True, True),
    ],
)
def test_show_dashboard_chat_and_allow_ai_resolution(account_chat, account_ai, session_chat, session_ai, shown, ai):
    # given
    account = TenantSettings(show_dashboard_chat=account_chat, allow_ai=account_ai)
    session = {
        name: value
        for name, value in (("showDashboardChat", session_chat), ("allowAi", session_ai))
        if value is not OMITTED
    }

    # when
    resolved = embed_settings_resolve(account_settings=account, session_settings=session, session_theme={})

    # then
    assert (resolved.show_dashboard_chat, resolved.allow_ai) == (shown, ai)


@pytest.mark.parametrize(
    ("account_export", "session_export", "allowed"),
    [
        (False, OMITTED, False),  # off unless the host or the account says so
        (False, None, False),
        (True, OMITTED, True),
        (True, None, True),
        (False, True, True),  # the session's own value outranks the account's default
        (True, False, False),
        (True, True, True),
        (False, False, False),
    ],
)
def test_allow_export_is_the_sessions_value_else_the_account_default(account_export, session_export, allowed):
    # given
    account = TenantSettings(allow_export=account_export)
    session = {} if session_export is OMITTED else {"allowExport": session_export}

    # when
    resolved = embed_settings_resolve(account_settings=account, session_settings=session, session_theme={})

    # then
    assert resolved.allow_export is allowed
    assert resolved.as_claim()["allowExport"] is allowed


@pytest.mark.parametrize(
    ("account", "session", "expected"),
    [
        ({}, {}, ("en-US", "UTC")),
        ({"embed_locale": "de-DE", "embed_timezone": "Europe/Berlin"}, {}, ("de-DE", "Europe/Berlin")),
        ({"embed_locale": "de-DE"}, {"locale": "fr-FR", "timezone": None}, ("fr-FR", "UTC")),
        ({}, {"timezone": "America/New_York"}, ("en-US", "America/New_York")),
    ],
)
def test_locale_and_timezone_are_the_sessions_else_the_accounts(account, session, expected):
    # when
    resolved = embed_settings_resolve(
        account_settings=TenantSettings(**account), session_settings=session, session_theme={}
    )

    # then
    assert (resolved.locale, resolved.timezone) == expected


def test_the_session_theme_goes_over_the_accounts_key_by_key():
    # given
    account = TenantSettings(
        embed_theme={"primaryColor": "#111111", "font": "Inter", "analyticsChat": {"backgroundColor": "#ffffff"}}
    )
    session = {"primaryColor": "#ff0000", "analyticsChat": {"chatInput": {"borderColor": "#000"}}}

    # when
    resolved = embed_settings_resolve(account_settings=account, session_settings={}, session_theme=session)

    # then
    assert resolved.embed_theme == {
        "primaryColor": "#ff0000",
        "font": "Inter",
        "analyticsChat": {"backgroundColor": "#ffffff", "chatInput": {"borderColor": "#000"}},
    }


def test_the_token_carries_the_resolved_settings(embed_claims, patch_tenant_settings, acme):
    # given
    patch_tenant_settings(
        acme, allowAi=False, locale="de-DE", timezone="Europe/Berlin", embedTheme={"primaryColor": "#123456"}
    )

    # when
    claims = embed_claims(
        acme,
        externalId="alice",
        settings={"showDashboardChat": True, "timezone": "Asia/Tokyo"},
        embedTheme={"font": "Inter"},
    )

    # then
    assert claims["embed"]["settings"] == {
        "showDashboardChat": False,
        "allowAi": False,
        "allowExport": False,
        "locale": "de-DE",
        "timezone": "Asia/Tokyo",
        "embedTheme": {"primaryColor": "#123456", "font": "Inter"},
    }


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"settings": {"allowAi": "yes"}}, "settings.allowAi: Must be a boolean."),
        ({"settings": {"allowExport": "true"}}, "settings.allowExport: Must be a boolean."),
        ({"settings": {"locale": "not a locale"}}, "settings.locale: must be a BCP-47 language tag such as en-US"),
        (
            {"settings": {"timezone": "+05:30"}},
            "settings.timezone: must be an IANA time zone name such as Europe/Paris",
        ),
        ({"settings": {"timezone": 5}}, "settings.timezone: Not a valid string."),
        ({"settings": {"showWorkbookChat": True}}, "settings: Unknown fields: showWorkbookChat"),
        (
            {"embedTheme": {"primaryColor": "blue"}},
            "embedTheme.primaryColor: must be a color #rgb or #rrggbb",
        ),
        ({"embedTheme": {"borderRadius": 4}}, "embedTheme: unknown keys: borderRadius"),
        ({"embedTheme": "dark"}, "embedTheme: must be an object"),
    ],
)
def test_bad_settings_or_theme_are_400(generate, acme, fields, message):
    # when
    response = generate(acme, externalId="alice", **fields)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": message}
