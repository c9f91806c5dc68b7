"""The account's embedding defaults on its panel page: allowed origins, chat and AI, locale, time zone, downloads
and theme. Every change is written by ``accounts.services.tenant_settings_update`` under its API name; a value
the service refuses is an error next to its field and writes nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from embedadmin.accounts import services as accounts
from embedadmin.embedding import services as embedding
from embedadmin.embedding.models import EmbedSession
from tests.conftest import Cast
from tests.panel.conftest import admin_url
from tests.panel.test_writes import settings_post


@pytest.fixture
def update_calls(monkeypatch) -> list[dict]:
    calls: list[dict] = []
    real_update = accounts.tenant_settings_update

    def spy(**kwargs):
        calls.append(kwargs["changes"])
        return real_update(**kwargs)

    monkeypatch.setattr(accounts, "tenant_settings_update", spy)
    return calls


def inline_errors(response) -> dict[str, list[str]]:
    (formset,) = [f for f in response.context["inline_admin_formsets"] if f.formset.prefix == "tenant_settings"]
    return dict(formset.formset.forms[0].errors)


def test_the_account_page_shows_the_embedding_defaults(acme_admin: Client, acme: Cast):
    accounts.tenant_settings_update(
        account=acme.account, changes={"embedAllowedOrigins": ["https://app.acme.example", "http://127.0.0.1:4100"]}
    )

    page = acme_admin.get(admin_url("account", "change", acme.account)).content.decode()

    assert "Embedding defaults" in page
    assert ">\nhttps://app.acme.example\nhttp://127.0.0.1:4100</textarea>" in page
    for field in ("allow_ai", "embed_locale", "embed_timezone", "restrict_data_download", "embed_theme"):
        assert f'name="tenant_settings-0-{field}"' in page


def test_allowed_origins_are_written_one_a_line_through_the_service(acme_admin: Client, acme: Cast, update_calls):
    origins = "https://App.Acme.example\r\n\r\n  http://127.0.0.1:4100  \r\nhttps://app.acme.example\r\n"

    response = acme_admin.post(
        admin_url("account", "change", acme.account), settings_post(acme, embed_allowed_origins=origins)
    )

    assert response.status_code == 302
    # Lowercased and without the repeat, as the service stores them.
    expected = ["https://app.acme.example", "http://127.0.0.1:4100"]
    assert update_calls == [{"embedAllowedOrigins": expected}]
    acme.account.tenant_settings.refresh_from_db()
    assert acme.account.tenant_settings.embed_allowed_origins == expected


def test_unchanged_origins_write_nothing(acme_admin: Client, acme: Cast, update_calls):
    accounts.tenant_settings_update(account=acme.account, changes={"embedAllowedOrigins": ["https://a.example"]})
    update_calls.clear()

    response = acme_admin.post(admin_url("account", "change", acme.account), settings_post(acme))

    assert response.status_code == 302
    assert update_calls == []


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        (
            "embed_allowed_origins",
            "https://ok.example\r\nhttps://app.example/path",
            "embedAllowedOrigins[1]: must be an origin scheme://host[:port] (http or https, no path), "
            "got 'https://app.example/path'",
        ),
        ("embed_locale", "not a locale", "locale: must be a BCP-47 language tag such as en-US"),
        ("embed_timezone", "Mars/Olympus", "timezone: must be an IANA time zone name such as Europe/Paris"),
        ("embed_theme", '{"primaryColor": "red"}', "embedTheme.primaryColor: must be a color #rgb or #rrggbb"),
    ],
)
def test_a_value_the_service_refuses_is_an_error_on_its_field(
    acme_admin: Client, acme: Cast, update_calls, field: str, value: str, error: str
):
    before = acme.account.tenant_settings

    response = acme_admin.post(
        admin_url("account", "change", acme.account),
        settings_post(acme, **{field: value, "max_external_users": "7"}),
    )

    assert response.status_code == 200
    assert inline_errors(response) == {field: [error]}
    assert update_calls == []
    after = type(before).objects.get(pk=before.pk)
    assert (after.max_external_users, getattr(after, field)) == (before.max_external_users, getattr(before, field))


def test_embedding_defaults_are_written_under_their_api_names(acme_admin: Client, acme: Cast, update_calls):
    response = acme_admin.post(
        admin_url("account", "change", acme.account),
        settings_post(
            acme,
            allow_ai=None,
            show_dashboard_chat=None,
            restrict_data_download="on",
            embed_locale="fr-FR",
            embed_timezone="Europe/Paris",
            embed_theme='{"primaryColor": "#7a77ff"}',
        ),
    )

    assert response.status_code == 302
    assert update_calls == [
        {
            "showDashboardChat": False,
            "allowAi": False,
            "locale": "fr-FR",
            "timezone": "Europe/Paris",
            "restrictDataDownload": True,
            "embedTheme": {"primaryColor": "#7a77ff"},
        }
    ]
    row = acme.account.tenant_settings
    row.refresh_from_db()
    assert (row.allow_ai, row.embed_locale, row.embed_timezone, row.restrict_data_download, row.embed_theme) == (
        False,
        "fr-FR",
        "Europe/Paris",
        True,
        {"primaryColor": "#7a77ff"},
    )


def test_other_accounts_origins_cannot_be_set(acme_admin: Client, acme: Cast, globex: Cast, update_calls):
    response = acme_admin.post(
        admin_url("account", "change", globex.account),
        settings_post(globex, embed_allowed_origins="https://evil.example"),
    )

    assert response.status_code == 302
    assert response["Location"] == "/admin/"
    assert update_calls == []
    globex.account.tenant_settings.refresh_from_db()
    assert globex.account.tenant_settings.embed_allowed_origins == []


def test_a_sessions_page_shows_the_settings_its_host_sent(acme_admin: Client, acme: Cast):
    embedding.session_generate(
        account=acme.account,
        deployment=acme.deployment,
        data=embedding.GenerateSessionInput(
            deployment_id=acme.deployment.pk, external_id="v1", settings={"allowAi": False, "locale": "de-DE"}
        ),
    )
    embedding.session_generate(
        account=acme.account,
        deployment=acme.deployment,
        data=embedding.GenerateSessionInput(deployment_id=acme.deployment.pk, external_id="v2"),
    )
    with_settings, without = EmbedSession.objects.filter(account=acme.account).order_by("external_user__external_id")

    shown = acme_admin.get(admin_url("embedsession", "change", with_settings)).content.decode()
    plain = acme_admin.get(admin_url("embedsession", "change", without)).content.decode()

    assert "&quot;allowAi&quot;: false,\n  &quot;locale&quot;: &quot;de-DE&quot;" in shown
    assert "account defaults" in plain
