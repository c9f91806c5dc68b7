"""GET/PATCH /api/v1/tenant/settings: flat keys, validated all or nothing."""

from __future__ import annotations

import pytest

from embedadmin.accounts.models import TenantSettings
from tests.platform.support import TENANT_SETTINGS_URL, db_rows

DEFAULTS = {
    "useCreatorMode": True,
    "showDashboardChat": True,
    "allowAi": True,
    "allowExport": False,
    "locale": "en-US",
    "timezone": "UTC",
    "restrictDataDownload": False,
    "embedAllowedOrigins": [],
    "embedTheme": {},
    "maxExternalUsers": 10_000,
    "maxNonEphemeralChatUsers": 10_000,
    "externalUserCount": 0,
    "nonEphemeralChatUserCount": 0,
}


def test_get_returns_the_flat_settings_of_the_callers_account(api, acme, globex):
    # given: globex differs, so a leak would show
    TenantSettings.objects.filter(account=globex.account).update(max_external_users=7, show_dashboard_chat=False)

    # when
    response = api.get(TENANT_SETTINGS_URL, **acme.platform_headers)

    # then
    assert response.status_code == 200
    assert response.json() == DEFAULTS


def test_an_account_created_without_creator_mode_has_the_flag_off(api, make_account):
    # given
    initech = make_account("initech", creator_mode=False)

    # when
    response = api.get(TENANT_SETTINGS_URL, **initech.platform_headers)

    # then
    assert response.json() == {**DEFAULTS, "useCreatorMode": False}


def test_patch_changes_only_the_keys_sent_and_returns_the_result(api, acme):
    # when
    response = api.patch_json(
        TENANT_SETTINGS_URL, {"showDashboardChat": False, "maxExternalUsers": 25}, **acme.platform_headers
    )

    # then
    expected = {**DEFAULTS, "showDashboardChat": False, "maxExternalUsers": 25}
    assert response.status_code == 200
    assert response.json() == expected
    assert api.get(TENANT_SETTINGS_URL, **acme.platform_headers).json() == expected


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"useCreatorMode": "true"}, "useCreatorMode: must be a boolean"),
        ({"showDashboardChat": 1}, "showDashboardChat: must be a boolean"),
        ({"showDashboardChat": None}, "showDashboardChat: must be a boolean"),
        ({"maxExternalUsers": -1}, "maxExternalUsers: must be a non-negative integer"),
        ({"maxExternalUsers": 1.5}, "maxExternalUsers: must be a non-negative integer"),
        ({"maxExternalUsers": "10"}, "maxExternalUsers: must be a non-negative integer"),
        ({"maxExternalUsers": True}, "maxExternalUsers: must be a non-negative integer"),
        ({"maxExternalUsers": 2**31}, "maxExternalUsers: must be a non-negative integer"),
        ({"maxNonEphemeralChatUsers": -5}, "maxNonEphemeralChatUsers: must be a non-negative integer"),
        ({"maxExternalUsers": 5, "externalUserCount": 0}, "Unknown settings: externalUserCount"),
        ({"usecreatormode": True}, "Unknown settings: usecreatormode"),
        ({"allowAi": None}, "allowAi: must be a boolean"),
        ({"allowExport": "yes"}, "allowExport: must be a boolean"),
        ({"restrictDataDownload": "yes"}, "restrictDataDownload: must be a boolean"),
        ({"locale": "english please"}, "locale: must be a BCP-47 language tag such as en-US"),
        ({"locale": ""}, "locale: must be a BCP-47 language tag such as en-US"),
        ({"timezone": "+05:30"}, "timezone: must be an IANA time zone name such as Europe/Paris"),
        ({"timezone": "Mars/Olympus"}, "timezone: must be an IANA time zone name such as Europe/Paris"),
        ({"embedAllowedOrigins": "https://app.acme.test"}, "embedAllowedOrigins: must be a list of at most 50 origins"),
        (
            {"embedAllowedOrigins": ["https://app.acme.test/path"]},
            "embedAllowedOrigins[0]: must be an origin scheme://host[:port] (http or https, no path), "
            "got 'https://app.acme.test/path'",
        ),
        (
            {"embedAllowedOrigins": ["*"]},
            "embedAllowedOrigins[0]: must be an origin scheme://host[:port] (http or https, no path), got '*'",
        ),
        (
            {"embedAllowedOrigins": ["javascript://x"]},
            "embedAllowedOrigins[0]: must be an origin scheme://host[:port] (http or https, no path), "
            "got 'javascript://x'",
        ),
        ({"embedTheme": {"primaryColor": "red"}}, "embedTheme.primaryColor: must be a color #rgb or #rrggbb"),
        ({"embedTheme": {"logo": "x"}}, "embedTheme: unknown keys: logo"),
        (
            {"embedTheme": {"analyticsChat": {"chatInput": {"glow": "#fff"}}}},
            "embedTheme.analyticsChat.chatInput: unknown keys: glow",
        ),
        (
            {"embedTheme": {"font": "Inter; } body { x"}},
            "embedTheme.font: must be a font family list (letters, digits, spaces, quotes, commas)",
        ),
        ({"embedTheme": []}, "embedTheme: must be an object"),
        # the valid key is not applied when another one in the same request is wrong
        ({"showDashboardChat": False, "maxExternalUsers": -1}, "maxExternalUsers: must be a non-negative integer"),
    ],
)
def test_a_wrong_type_negative_or_unknown_key_is_400_and_nothing_changes(api, acme, changes, message):
    # given
    before = db_rows()

    # when
    response = api.patch_json(TENANT_SETTINGS_URL, changes, **acme.platform_headers)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert db_rows() == before


@pytest.mark.parametrize("body", [[], "x", 5, None])
def test_a_body_that_is_not_an_object_is_400(api, acme, body):
    # when
    response = api.patch_json(TENANT_SETTINGS_URL, body, **acme.platform_headers)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": "The body must be a JSON object"}


def test_an_empty_patch_changes_nothing(api, acme):
    # when
    response = api.patch_json(TENANT_SETTINGS_URL, {}, **acme.platform_headers)

    # then
    assert response.status_code == 200
    assert response.json() == DEFAULTS


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_other_methods_are_405(api, acme, method):
    # when
    response = getattr(api, method)(TENANT_SETTINGS_URL, **acme.platform_headers)

    # then
    assert response.status_code == 405
    assert response.json() == {"error": f'Method "{method.upper()}" not allowed.'}


def test_patch_writes_the_embed_defaults_and_normalizes_origins(api, acme, globex):
    # given
    theme = {"primaryColor": "#0055ff", "font": "Inter, sans-serif", "analyticsChat": {"backgroundColor": "#fff"}}

    # when
    response = api.patch_json(
        TENANT_SETTINGS_URL,
        {
            "allowAi": False,
            "allowExport": True,
            "locale": "fr-FR",
            "timezone": "Europe/Paris",
            "restrictDataDownload": True,
            "embedAllowedOrigins": ["https://App.Acme.test", "http://127.0.0.1:4100", "https://app.acme.test"],
            "embedTheme": theme,
        },
        **acme.platform_headers,
    )

    # then
    expected = {
        **DEFAULTS,
        "allowAi": False,
        "allowExport": True,
        "locale": "fr-FR",
        "timezone": "Europe/Paris",
        "restrictDataDownload": True,
        "embedAllowedOrigins": ["https://app.acme.test", "http://127.0.0.1:4100"],
        "embedTheme": theme,
    }
    assert response.status_code == 200, response.content
    assert response.json() == expected
    assert api.get(TENANT_SETTINGS_URL, **acme.platform_headers).json() == expected
    assert api.get(TENANT_SETTINGS_URL, **globex.platform_headers).json() == DEFAULTS


def test_app_config_answers_cubes_shape_with_the_accounts_embedding_defaults(api, acme, globex):
    # given
    api.patch_json(
        TENANT_SETTINGS_URL,
        {
            "showDashboardChat": False,
            "locale": "de-DE",
            "timezone": "Europe/Berlin",
            "restrictDataDownload": True,
            "embedTheme": {"primaryColor": "#112233", "font": "Inter"},
        },
        **acme.platform_headers,
    )

    # when
    mine = api.get("/api/v1/app-config", **acme.platform_headers)
    theirs = api.get("/api/v1/app-config", **globex.platform_headers)
    anonymous = api.get("/api/v1/app-config")

    # then
    assert mine.status_code == 200
    body = mine.json()
    assert body["embedding"] == {
        "allowAi": True,
        "enableDashboardComments": False,
        "locale": "de-DE",
        "showAiWidgets": False,
        "showDashboardChat": False,
        "showWorkbookChat": False,
        "timezone": "Europe/Berlin",
    }
    assert body["restrictDataDownload"] is True
    assert body["appTheme"]["palette"]["accent"] == "#112233"
    assert body["appTheme"]["typography"]["fonts"] == [{"id": "embed", "family": "Inter", "name": "Inter"}]
    assert body["timezoneSettings"] == {"enabled": True, "timezone": "Europe/Berlin", "allowUserOverride": True}
    assert sorted(body) == [
        "appTheme",
        "applyThemeGlobally",
        "creatorMode",
        "embedding",
        "restrictDataDownload",
        "sheetsAgentChatEnabled",
        "sheetsUi",
        "timezoneSettings",
    ]
    assert theirs.json()["embedding"]["showDashboardChat"] is True
    assert theirs.json()["restrictDataDownload"] is False
    assert anonymous.status_code in (401, 403)
