"""Tenant isolation of the panel, as a matrix: acme's administrator against globex's rows.

Given both accounts with a row of every kind, acme's administrator sees only acme's rows, cannot
open, change or delete globex's, is offered only acme's objects in forms, and cannot reach globex's
rows through actions or forged form values. A superuser sees both; other users see nothing.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import ApiKey
from embedadmin.directory.models import ExternalUser, Group
from embedadmin.embedding.models import EmbedSession
from tests.panel.conftest import AccountRows, admin_url

PANEL_MODELS = [
    "account",
    "deployment",
    "apikey",
    "platformtoken",
    "user",
    "embedtenant",
    "externaluser",
    "group",
    "attributedefinition",
    "embedsession",
    "workbook",
    "dashboard",
    "report",
    "folder",
]
DELETABLE_MODELS = ["externaluser", "group", "attributedefinition"]


@pytest.fixture
def rows(acme_rows: AccountRows, globex_rows: AccountRows, demo_model_state) -> tuple[AccountRows, AccountRows]:
    return acme_rows.with_dashboard(), globex_rows.with_dashboard()


@pytest.mark.parametrize("model_name", PANEL_MODELS)
@pytest.mark.parametrize("viewer", ["acme", "globex"])
def test_account_admin_changelist_lists_exactly_their_accounts_rows(login, rows, model_name: str, viewer: str):
    own, other = rows if viewer == "acme" else rows[::-1]
    client = login(own.cast.created.admin_username, own.cast.created.admin_password)

    response = client.get(admin_url(model_name))

    assert response.status_code == 200
    assert set(response.context["cl"].queryset.values_list("pk", flat=True)) == {own.of(model_name).pk}
    # Nothing on the page (rows, filters, header) names the other account or its objects.
    assert other.cast.account.name.encode() not in response.content


@pytest.mark.parametrize("model_name", PANEL_MODELS)
def test_superuser_changelist_lists_both_accounts(superuser: Client, rows, model_name: str):
    acme, globex = rows

    response = superuser.get(admin_url(model_name))

    assert response.status_code == 200
    expected = {acme.of(model_name).pk, globex.of(model_name).pk}
    if model_name == "user":
        expected.add(get_user_model().objects.get(username="operator").pk)
    assert set(response.context["cl"].queryset.values_list("pk", flat=True)) == expected


@pytest.mark.parametrize("model_name", PANEL_MODELS)
@pytest.mark.parametrize("view", ["change", "history"])
def test_account_admin_cannot_open_other_accounts_row(acme_admin: Client, rows, model_name: str, view: str):
    _acme, globex = rows

    response = acme_admin.get(admin_url(model_name, view, globex.of(model_name)))

    # Django admin's answer for an object that does not exist: back to the index with a message.
    assert response.status_code == 302
    assert response["Location"] == "/admin/"


@pytest.mark.parametrize("model_name", PANEL_MODELS)
def test_account_admin_can_open_own_row(acme_admin: Client, rows, model_name: str):
    acme, _globex = rows

    response = acme_admin.get(admin_url(model_name, "change", acme.of(model_name)))

    assert response.status_code == 200
    assert b"globex" not in response.content


@pytest.mark.parametrize("model_name", DELETABLE_MODELS)
def test_account_admin_cannot_delete_other_accounts_row(acme_admin: Client, rows, model_name: str):
    _acme, globex = rows
    target = globex.of(model_name)

    response = acme_admin.post(admin_url(model_name, "delete", target), {"post": "yes"})

    assert response.status_code == 302
    assert response["Location"] == "/admin/"
    assert type(target).objects.filter(pk=target.pk).exists()


def test_account_admin_cannot_change_other_accounts_tenant_settings(acme_admin: Client, rows):
    _acme, globex = rows
    account = globex.cast.account

    response = acme_admin.post(
        admin_url("account", "change", account),
        {
            "tenant_settings-TOTAL_FORMS": "1",
            "tenant_settings-INITIAL_FORMS": "1",
            "tenant_settings-0-id": account.tenant_settings.pk,
            "tenant_settings-0-account": account.pk,
            "tenant_settings-0-max_external_users": "5",
        },
    )

    assert response.status_code == 302
    assert response["Location"] == "/admin/"
    account.tenant_settings.refresh_from_db()
    assert account.tenant_settings.max_external_users == 10_000


def form_choices(response, field: str) -> set:
    return set(response.context["adminform"].form.fields[field].queryset.values_list("pk", flat=True))


def test_api_key_form_offers_only_own_account_deployments_and_users(acme_admin: Client, rows):
    acme, _globex = rows
    member = accounts.internal_user_create(account=acme.cast.account, username="acme-member", email="")

    response = acme_admin.get(admin_url("apikey", "add"))

    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form_choices(response, "account") == {acme.cast.account.pk}
    assert form.fields["account"].disabled is True
    assert form_choices(response, "deployments") == {acme.cast.deployment.pk}
    assert form_choices(response, "owner") == {acme.admin_user.pk, member.pk}
    assert b"globex" not in response.content


@pytest.mark.parametrize("model_name", ["group", "attributedefinition"])
def test_catalog_forms_offer_only_own_embed_tenants(acme_admin: Client, rows, model_name: str):
    acme, _globex = rows

    response = acme_admin.get(admin_url(model_name, "add"))

    assert response.status_code == 200
    assert form_choices(response, "account") == {acme.cast.account.pk}
    assert form_choices(response, "embed_tenant") == {acme.embed_tenant.pk}


@pytest.mark.parametrize("model_name", ["deployment", "platformtoken", "user"])
def test_add_forms_fix_the_account_to_the_admins_own(acme_admin: Client, rows, model_name: str):
    acme, _globex = rows

    response = acme_admin.get(admin_url(model_name, "add"))

    assert response.status_code == 200
    assert form_choices(response, "account") == {acme.cast.account.pk}
    assert response.context["adminform"].form.fields["account"].disabled is True


def test_forged_other_account_deployment_is_refused(acme_admin: Client, rows):
    _acme, globex = rows
    keys_before = ApiKey.objects.count()

    response = acme_admin.post(
        admin_url("apikey", "add"), {"name": "forged", "deployments": [globex.cast.deployment.pk]}
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["deployments"] == [
        f"Select a valid choice. {globex.cast.deployment.pk} is not one of the available choices."
    ]
    assert ApiKey.objects.count() == keys_before


def test_forged_other_account_id_is_ignored_for_the_fixed_account(acme_admin: Client, rows):
    acme, globex = rows

    response = acme_admin.post(admin_url("group", "add"), {"account": globex.cast.account.pk, "name": "forgers"})

    assert response.status_code == 302
    group = Group.objects.get(name="forgers")
    assert group.account == acme.cast.account


def test_superuser_cannot_combine_two_accounts_objects(superuser: Client, rows):
    acme, globex = rows

    response = superuser.post(
        admin_url("apikey", "add"),
        {"account": acme.cast.account.pk, "name": "mixed", "deployments": [globex.cast.deployment.pk]},
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["deployments"] == ["Choose from account acme only."]
    assert not ApiKey.objects.filter(name="mixed").exists()


def test_revoke_action_ignores_other_accounts_keys(acme_admin: Client, rows):
    _acme, globex = rows

    response = acme_admin.post(
        admin_url("apikey"), {"action": "revoke_selected", "_selected_action": [globex.api_key.pk]}
    )

    assert response.status_code == 302
    globex.api_key.refresh_from_db()
    assert globex.api_key.revoked_at is None


def test_mint_action_ignores_other_accounts_users(acme_admin: Client, rows):
    _acme, globex = rows
    sessions_before = EmbedSession.objects.count()

    response = acme_admin.post(
        admin_url("externaluser"),
        {
            "action": "mint_embed_session",
            "_selected_action": [globex.external_user.pk],
            "mint": "1",
            "deployment": globex.cast.deployment.pk,
        },
    )

    assert response.status_code == 302
    assert EmbedSession.objects.count() == sessions_before


def test_bulk_delete_ignores_other_accounts_rows(acme_admin: Client, rows):
    _acme, globex = rows

    response = acme_admin.post(
        admin_url("externaluser"),
        {"action": "delete_selected", "_selected_action": [globex.external_user.pk], "post": "yes"},
    )

    assert response.status_code == 302
    assert ExternalUser.objects.filter(pk=globex.external_user.pk).exists()


def test_account_admin_cannot_make_anyone_superuser(acme_admin: Client, rows):
    acme, _globex = rows
    user = acme.admin_user

    response = acme_admin.post(
        admin_url("user", "change", user),
        {
            "username": user.username,
            "email": "admin@acme.example",
            "is_active": "on",
            "is_staff": "on",
            "is_superuser": "on",
            "membership-TOTAL_FORMS": "1",
            "membership-INITIAL_FORMS": "1",
            "membership-MIN_NUM_FORMS": "0",
            "membership-MAX_NUM_FORMS": "1",
            "membership-0-id": user.membership.pk,
            "membership-0-user": user.pk,
            "membership-0-is_admin": "on",
        },
    )

    assert response.status_code == 302
    user.refresh_from_db()
    assert (user.email, user.is_superuser) == ("admin@acme.example", False)


def test_account_admin_cannot_create_accounts(acme_admin: Client, rows):
    response = acme_admin.get(admin_url("account", "add"))

    assert response.status_code == 403


@pytest.mark.parametrize("model_name", ["embedtenant", "externaluser", "embedsession"])
def test_directory_rows_are_not_added_by_hand(acme_admin: Client, rows, model_name: str):
    response = acme_admin.get(admin_url(model_name, "add"))

    assert response.status_code == 403


def test_account_admin_cannot_see_a_superuser_member_of_their_account(acme_admin: Client, rows):
    acme, _globex = rows
    boss = get_user_model().objects.create_superuser("boss", "", "boss-password-1")
    acme.cast.account.memberships.create(user=boss, is_admin=False)

    listing = acme_admin.get(admin_url("user"))
    response = acme_admin.get(admin_url("user", "password", boss))

    assert set(listing.context["cl"].queryset.values_list("pk", flat=True)) == {acme.admin_user.pk}
    assert response.status_code == 404


@pytest.mark.parametrize("is_staff", [False, True])
def test_internal_user_who_is_not_account_admin_cannot_log_in(acme, is_staff: bool):
    user = accounts.internal_user_create(
        account=acme.account, username="acme-member", email="", password="member-password-1"
    )
    get_user_model().objects.filter(pk=user.pk).update(is_staff=is_staff)
    client = Client()

    response = client.post("/admin/login/", {"username": "acme-member", "password": "member-password-1"})

    assert response.status_code == 200
    assert response.context["form"].errors["__all__"] == [
        (
            "This account may not use the admin panel: ask an administrator of your account."
            if is_staff
            else "Please enter the correct username and password for a staff account. "
            "Note that both fields may be case-sensitive."
        )
    ]


@pytest.mark.parametrize("model_name", PANEL_MODELS)
def test_staff_member_without_admin_flag_gets_nothing(acme, rows, model_name: str):
    user = accounts.internal_user_create(account=acme.account, username="acme-staff", email="")
    get_user_model().objects.filter(pk=user.pk).update(is_staff=True)
    client = Client()
    client.force_login(user)

    response = client.get(admin_url(model_name))

    assert response.status_code == 302
    assert response["Location"] == f"/admin/login/?next={admin_url(model_name)}"


def test_anonymous_is_sent_to_login(db):
    response = Client().get("/admin/")

    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/admin/"
