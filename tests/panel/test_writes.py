"""State changes made in the panel: each goes through its service, secrets are shown once, and a
service's refusal is shown to the administrator (a form error or a message), never a server error."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import Account, ApiKey, Deployment, PlatformToken, TenantSettings
from embedadmin.accounts.selectors import deployment_verification_secrets
from embedadmin.core import credentials
from embedadmin.directory import services as directory
from embedadmin.directory.models import AttributeDefinition, ExternalUser, Group
from tests.conftest import Cast, JsonClient
from tests.panel.conftest import AccountRows, admin_url, messages_of, shown_secrets

GENERATE_URL = "/api/v1/embed/generate-session"
TENANT_SETTINGS_URL = "/api/v1/tenant/settings"


def test_new_api_key_is_shown_once_stored_as_digest_and_works(acme_admin: Client, acme: Cast, api: JsonClient):
    response = acme_admin.post(admin_url("apikey", "add"), {"name": "host backend"})

    assert response.status_code == 200
    assert response["Cache-Control"] == "max-age=0, no-cache, no-store, must-revalidate, private"
    plaintext = shown_secrets(response)["API key"]
    key = ApiKey.objects.get(name="host backend")
    assert (key.account, key.kind, key.owner, key.revoked_at) == (acme.account, "admin", None, None)
    assert key.key_digest == credentials.digest(plaintext)
    assert plaintext.startswith(f"eak_{key.prefix}_")
    # Never shown again: not on its page, not in the list.
    assert plaintext.encode() not in acme_admin.get(admin_url("apikey", "change", key)).content
    assert plaintext.encode() not in acme_admin.get(admin_url("apikey")).content
    # And it is a working admin key.
    minted = api.post_json(
        GENERATE_URL,
        {"deploymentId": acme.deployment.pk, "externalId": "from-panel-key"},
        HTTP_AUTHORIZATION=f"Api-Key {plaintext}",
    )
    assert minted.status_code == 200
    assert set(minted.json()) == {"sessionId"}


def test_personal_scoped_api_key(acme_admin: Client, acme: Cast):
    member = accounts.internal_user_create(account=acme.account, username="acme-analyst", email="")

    response = acme_admin.post(
        admin_url("apikey", "add"), {"name": "mine", "owner": member.pk, "deployments": [acme.deployment.pk]}
    )

    assert response.status_code == 200
    key = ApiKey.objects.get(name="mine")
    assert (key.kind, key.owner) == ("personal", member)
    assert list(key.deployments.all()) == [acme.deployment]


def test_revoke_action_revokes_through_the_service(acme_admin: Client, acme: Cast, api: JsonClient):
    key = ApiKey.objects.get(account=acme.account)

    response = acme_admin.post(admin_url("apikey"), {"action": "revoke_selected", "_selected_action": [key.pk]})

    assert response.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert messages_of(response) == [("success", "Revoked 1 API key.")]
    refused = api.post_json(
        GENERATE_URL, {"deploymentId": acme.deployment.pk, "externalId": "x"}, **acme.api_key_headers
    )
    assert refused.status_code == 401


def test_new_platform_token_is_shown_once_and_works(acme_admin: Client, acme: Cast, api: JsonClient):
    response = acme_admin.post(admin_url("platformtoken", "add"), {"name": "terraform"})

    assert response.status_code == 200
    plaintext = shown_secrets(response)["Platform token"]
    token = PlatformToken.objects.get(name="terraform")
    assert token.token_digest == credentials.digest(plaintext)
    assert plaintext.encode() not in acme_admin.get(admin_url("platformtoken", "change", token)).content
    assert api.get(TENANT_SETTINGS_URL, HTTP_AUTHORIZATION=f"Bearer {plaintext}").status_code == 200


def test_revoke_platform_token(acme_admin: Client, acme: Cast, api: JsonClient):
    token = PlatformToken.objects.get(account=acme.account)

    acme_admin.post(admin_url("platformtoken"), {"action": "revoke_selected", "_selected_action": [token.pk]})

    assert api.get(TENANT_SETTINGS_URL, **acme.platform_headers).status_code == 401


def test_new_deployment_shows_its_secret_once(acme_admin: Client, acme: Cast):
    response = acme_admin.post(admin_url("deployment", "add"), {"name": "Staging", "slug": "staging"})

    assert response.status_code == 200
    deployment = Deployment.objects.get(account=acme.account, slug="staging")
    secret = shown_secrets(response)["Deployment API secret"]
    assert deployment_verification_secrets(deployment_id=deployment.pk) == [secret]
    assert f"Deployment ID: {deployment.pk}.".encode() in response.content
    assert secret.encode() not in acme_admin.get(admin_url("deployment", "change", deployment)).content


def test_duplicate_deployment_slug_is_a_form_error(acme_admin: Client, acme: Cast):
    response = acme_admin.post(admin_url("deployment", "add"), {"name": "Again", "slug": "default"})

    assert response.status_code == 200
    assert response.context["adminform"].form.non_field_errors() == [
        "Deployment with this Account and Slug already exists."
    ]
    assert Deployment.objects.filter(account=acme.account).count() == 1


def test_superuser_creates_an_account_and_sees_its_credentials_once(superuser: Client, api: JsonClient):
    response = superuser.post(admin_url("account", "add"), {"name": "initech", "creator_mode": "on"})

    assert response.status_code == 200
    shown = shown_secrets(response)
    assert set(shown) == {
        "Admin API key",
        "Deployment API secret",
        "Platform token",
        "Admin username",
        "Admin password",
    }
    account = Account.objects.get(name="initech")
    assert account.tenant_settings.use_creator_mode is True
    assert shown["Admin username"] == "initech-admin"
    assert api.get(TENANT_SETTINGS_URL, HTTP_AUTHORIZATION=f"Bearer {shown['Platform token']}").status_code == 200
    admin_client = Client()
    assert admin_client.login(username="initech-admin", password=shown["Admin password"])
    assert admin_client.get("/admin/").status_code == 200


def settings_post(cast: Cast, **changes: str | None) -> dict[str, str]:
    """The account page's POST as a browser sends it with the current settings, less ``changes`` (None: the
    checkbox is left unticked)."""
    row = TenantSettings.objects.get(account=cast.account)
    fields = {
        "use_creator_mode": "on" if row.use_creator_mode else None,
        "show_dashboard_chat": "on" if row.show_dashboard_chat else None,
        "allow_ai": "on" if row.allow_ai else None,
        "restrict_data_download": "on" if row.restrict_data_download else None,
        "embed_locale": row.embed_locale,
        "embed_timezone": row.embed_timezone,
        "embed_allowed_origins": "\r\n".join(row.embed_allowed_origins),
        "embed_theme": json.dumps(row.embed_theme),
        "max_external_users": str(row.max_external_users),
        "max_non_ephemeral_chat_users": str(row.max_non_ephemeral_chat_users),
        **changes,
    }
    return {
        "tenant_settings-TOTAL_FORMS": "1",
        "tenant_settings-INITIAL_FORMS": "1",
        "tenant_settings-MIN_NUM_FORMS": "0",
        "tenant_settings-MAX_NUM_FORMS": "1",
        "tenant_settings-0-id": str(row.pk),
        "tenant_settings-0-account": str(cast.account.pk),
        **{f"tenant_settings-0-{name}": value for name, value in fields.items() if value is not None},
        # Fields with a callable default post their initial value too, as the browser does.
        "initial-tenant_settings-0-max_external_users": str(row.max_external_users),
        "initial-tenant_settings-0-max_non_ephemeral_chat_users": str(row.max_non_ephemeral_chat_users),
        "initial-tenant_settings-0-embed_theme": json.dumps(row.embed_theme),
    }


def test_tenant_settings_are_saved_through_the_service(acme_admin: Client, acme: Cast, monkeypatch):
    calls = []
    real_update = accounts.tenant_settings_update

    def spy(**kwargs):
        calls.append(kwargs["changes"])
        return real_update(**kwargs)

    monkeypatch.setattr(accounts, "tenant_settings_update", spy)
    settings_row = acme.account.tenant_settings

    response = acme_admin.post(
        admin_url("account", "change", acme.account),
        settings_post(acme, use_creator_mode="on", max_external_users="25", show_dashboard_chat=None),
    )

    assert response.status_code == 302
    assert calls == [{"showDashboardChat": False, "maxExternalUsers": 25}]
    settings_row.refresh_from_db()
    assert (settings_row.show_dashboard_chat, settings_row.max_external_users) == (False, 25)


def test_internal_user_is_created_through_the_service(acme_admin: Client, acme: Cast):
    response = acme_admin.post(
        admin_url("user", "add"),
        {
            "username": "acme-ops",
            "email": "ops@acme.example",
            "is_admin": "on",
            "usable_password": "true",
            "password1": "a-long-enough-passphrase",
            "password2": "a-long-enough-passphrase",
        },
    )

    user = get_user_model().objects.get(username="acme-ops")
    assert response.status_code == 302
    assert response["Location"] == admin_url("user", "change", user)
    assert (user.membership.account, user.membership.is_admin, user.is_staff) == (acme.account, True, True)
    new_admin = Client()
    assert new_admin.login(username="acme-ops", password="a-long-enough-passphrase")
    assert new_admin.get("/admin/").status_code == 200


def _user_form(client: Client, user) -> dict:
    """The panel's change form of ``user`` as it would be posted back unchanged (inline management forms too)."""
    page = client.get(admin_url("user", "change", user))
    data = {}
    for name, value in page.context["adminform"].form.initial.items():
        if value is None or name in ("password", "last_login", "date_joined"):
            continue
        if isinstance(value, bool):
            if value:
                data[name] = "on"
        else:
            data[name] = value
    for formset in page.context["inline_admin_formsets"]:
        management = formset.formset.management_form
        data.update({management.add_prefix(k): v for k, v in management.initial.items()})
        for form in formset.formset.forms:
            data.update({form.add_prefix(k): v for k, v in form.initial.items() if v is not None and v is not False})
            data.update({form.add_prefix(k): "on" for k, v in form.initial.items() if v is True})
            data[form.add_prefix("id")] = form.instance.pk
    return data


def test_deactivating_a_user_in_the_panel_revokes_its_sessions_and_keys(acme_admin: Client, acme: Cast, api):
    ann = accounts.internal_user_create(account=acme.account, username="ann", email="", is_admin=False)
    _plaintext, key = accounts.api_key_create(account=acme.account, name="ann's", personal_owner=ann)
    session = api.post_json(
        GENERATE_URL, {"deploymentId": acme.deployment.pk, "internalId": "ann"}, **acme.api_key_headers
    ).json()["sessionId"]
    data = _user_form(acme_admin, ann)
    data.pop("is_active")

    response = acme_admin.post(admin_url("user", "change", ann), data)

    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response
    ann.refresh_from_db()
    key.refresh_from_db()
    assert ann.is_active is False
    assert key.revoked_at is not None
    assert api.post_json("/api/v1/embed/session/token", {"sessionId": session}).status_code == 401


def test_renaming_a_user_onto_a_taken_name_in_another_case_is_refused(acme_admin: Client, acme: Cast):
    accounts.internal_user_create(account=acme.account, username="Ann", email="", is_admin=False)
    bob = accounts.internal_user_create(account=acme.account, username="bob", email="", is_admin=False)
    data = {**_user_form(acme_admin, bob), "username": "ANN"}

    response = acme_admin.post(admin_url("user", "change", bob), data)

    assert response.status_code == 200
    assert "already exists" in str(response.context["adminform"].form.non_field_errors())
    bob.refresh_from_db()
    assert bob.username == "bob"


def test_group_is_created_through_the_service(acme_admin: Client, acme_rows: AccountRows):
    response = acme_admin.post(
        admin_url("group", "add"), {"name": "store managers", "embed_tenant": acme_rows.embed_tenant.pk}
    )

    assert response.status_code == 302
    group = Group.objects.get(name="store managers")
    assert (group.account, group.embed_tenant) == (acme_rows.cast.account, acme_rows.embed_tenant)


def test_reserved_group_name_refused_by_the_service_is_a_form_error(acme_admin: Client, acme: Cast):
    response = acme_admin.post(admin_url("group", "add"), {"name": "system:all"})

    assert response.status_code == 200
    assert response.context["adminform"].form.non_field_errors() == ["Group names starting with 'system:' are reserved"]
    assert not Group.objects.filter(name="system:all").exists()


def test_deleting_a_group_with_members_shows_the_services_refusal(acme_admin: Client, acme_rows: AccountRows):
    group = acme_rows.group
    url = admin_url("group", "delete", group)

    response = acme_admin.post(url, {"post": "yes"})

    assert response.status_code == 302
    assert response["Location"] == url
    assert messages_of(response) == [("error", f"Group {group.name!r} still has 1 member(s); remove them first")]
    assert Group.objects.filter(pk=group.pk).exists()


def test_bulk_delete_is_all_or_nothing(acme_admin: Client, acme_rows: AccountRows):
    # Deleted first (groups are ordered by name), then rolled back when the second is refused.
    empty = directory.group_create(account=acme_rows.cast.account, embed_tenant=None, name="aaa-empty")
    selected = [empty.pk, acme_rows.group.pk]

    response = acme_admin.post(
        admin_url("group"), {"action": "delete_selected", "_selected_action": selected, "post": "yes"}
    )

    assert response.status_code == 302
    assert messages_of(response) == [
        ("error", f"Group {acme_rows.group.name!r} still has 1 member(s); remove them first")
    ]
    assert Group.objects.filter(pk__in=selected).count() == 2


def test_bad_default_value_refused_by_the_service_is_a_form_error(acme_admin: Client, acme: Cast):
    response = acme_admin.post(
        admin_url("attributedefinition", "add"), {"name": "level", "type": "number", "default_value": "high"}
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.non_field_errors() == ["defaultValue 'high' is not a valid number"]
    # The submitted values are kept for the administrator to correct.
    assert response.context["adminform"].form["name"].value() == "level"
    assert not AttributeDefinition.objects.filter(name="level").exists()


def test_attribute_definition_update_goes_through_the_service(acme_admin: Client, acme_rows: AccountRows):
    definition = acme_rows.attribute

    response = acme_admin.post(
        admin_url("attributedefinition", "change", definition),
        {"display_name": "Sales region", "default_value": "us", "description": ""},
    )

    assert response.status_code == 302
    definition.refresh_from_db()
    assert (definition.display_name, definition.default_value, definition.type) == ("Sales region", "us", "string")


def test_deleting_an_external_user_frees_its_place_under_the_cap(acme_admin: Client, acme_rows: AccountRows):
    user = acme_rows.external_user
    settings_row = TenantSettings.objects.get(account=acme_rows.cast.account)
    assert settings_row.external_user_count == 1

    response = acme_admin.post(admin_url("externaluser", "delete", user), {"post": "yes"})

    assert response.status_code == 302
    assert not ExternalUser.objects.filter(pk=user.pk).exists()
    settings_row.refresh_from_db()
    assert settings_row.external_user_count == 0


@pytest.mark.parametrize("model_name", ["apikey", "platformtoken", "externaluser", "embedsession"])
def test_read_only_rows_cannot_be_changed(acme_admin: Client, acme_rows: AccountRows, model_name: str):
    response = acme_admin.post(admin_url(model_name, "change", acme_rows.of(model_name)), {"name": "renamed"})

    assert response.status_code == 403


def test_session_page_never_shows_the_session_digest(acme_admin: Client, acme_rows: AccountRows):
    session = acme_rows.session

    response = acme_admin.get(admin_url("embedsession", "change", session))

    assert response.status_code == 200
    assert session.key_digest.encode() not in response.content
    assert b"pending" in response.content


def test_chat_token_authentication_is_switched_in_the_panel(acme_admin: Client, acme: Cast, globex: Cast):
    deployment = acme.deployment
    page = acme_admin.get(admin_url("deployment", "change", deployment))
    assert page.status_code == 200
    assert b'name="chat_token_auth"' in page.content
    assert b'name="name"' not in page.content, "only chat token authentication is edited here"

    response = acme_admin.post(
        admin_url("deployment", "change", deployment), {"chat_token_auth": "on", "name": "renamed", "slug": "x"}
    )

    assert response.status_code == 302
    deployment.refresh_from_db()
    assert deployment.chat_token_auth is True
    assert (deployment.name, deployment.slug) == (acme.deployment.name, acme.deployment.slug), "only the flag"
    acme_admin.post(admin_url("deployment", "change", deployment), {})
    deployment.refresh_from_db()
    assert deployment.chat_token_auth is False
    # Another account's deployment is not there to change.
    refused = acme_admin.post(admin_url("deployment", "change", globex.deployment), {"chat_token_auth": "on"})
    assert (refused.status_code, refused["Location"]) == (302, "/admin/")
    globex.deployment.refresh_from_db()
    assert globex.deployment.chat_token_auth is False
