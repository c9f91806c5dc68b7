"""Generate-session request rules (spec 4.2): identity, embed tenant, creator mode gates, profile,
settings, the request envelope and the response."""

from __future__ import annotations

import hashlib
import re

import pytest
from django.contrib.auth import get_user_model

from embedadmin.accounts import services as accounts
from embedadmin.directory.models import EmbedTenant, ExternalUser, Group
from embedadmin.embedding.models import EmbedSession
from tests.embedding.support import GENERATE_URL, directory_counts

TENANT_NAME_INVALID = "embedTenantName: must be 5 to 36 characters: a-z, 0-9 and '-', starting with a letter"


def _assert_rejected(response, status: int, message: str) -> None:
    assert response.status_code == status
    assert response.json() == {"error": message}


# --- the request envelope -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "{bad",
            "Invalid JSON body: JSON parse error - Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        ),
        ("[1, 2]", "Invalid data. Expected a dictionary, but got list."),
        ('"alice"', "Invalid data. Expected a dictionary, but got str."),
        ('{"externalId": "alice"}', "deploymentId: This field is required."),
    ],
)
def test_a_body_that_is_not_a_request_is_400(api, acme, body, message):
    # when
    response = api.post_json(GENERATE_URL, body, **acme.api_key_headers)

    # then
    _assert_rejected(response, 400, message)
    assert directory_counts(acme.account)["sessions"] == 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"deploymentId": "1"}, "deploymentId: Must be an integer."),
        ({"deploymentId": True}, "deploymentId: Must be an integer."),
        ({"externalID": "bob"}, "Unknown fields: externalID"),
        ({"externalId": 5}, "externalId: Not a valid string."),
        ({"email": "nope"}, "email: Enter a valid email address."),
        ({"email": 1}, "email: Not a valid string."),
        # A valid address longer than the stored column (254) is refused, not a database error.
        (
            {"email": "a" * 60 + "@" + ".".join(["b" * 60] * 4) + ".com"},
            "email: Ensure this field has no more than 254 characters.",
        ),
        ({"creatorMode": "true"}, "creatorMode: Must be a boolean."),
        ({"securityContext": [1]}, "securityContext: Must be a JSON object."),
        ({"groups": "sales"}, 'groups: Expected a list of items but got type "str".'),
        ({"groups": [1]}, "groups.0: Not a valid string."),
        ({"userAttributes": [{"name": "region"}]}, "userAttributes.0.value: This field is required."),
        ({"settings": {"showChat": True}}, "settings: Unknown fields: showChat"),
    ],
)
def test_a_malformed_field_is_400_and_writes_nothing(generate, acme, fields, message):
    # given
    before = directory_counts(acme.account)

    # when
    response = generate(acme, **{"externalId": "alice", **fields})

    # then
    _assert_rejected(response, 400, message)
    assert directory_counts(acme.account) == before


@pytest.mark.parametrize("where", ['{"tenantId": 1e400}', '{"ids": [1, -1e999]}'])
def test_a_security_context_number_beyond_a_double_is_named_as_such(api, acme, where):
    body = f'{{"deploymentId": {acme.deployment.pk}, "externalId": "alice", "securityContext": {where}}}'
    before = directory_counts(acme.account)

    response = api.post_json(GENERATE_URL, body, **acme.api_key_headers)

    _assert_rejected(
        response, 400, "securityContext: Must not contain a number beyond a double's range (such as 1e400)."
    )
    assert directory_counts(acme.account) == before


# --- externalId / internalId ----------------------------------------------------------------------------


@pytest.mark.parametrize("identity", [{}, {"externalId": "alice", "internalId": "acme-admin"}])
def test_exactly_one_of_external_id_or_internal_id(generate, acme, identity):
    # when
    response = generate(acme, **identity)

    # then
    _assert_rejected(response, 400, "Exactly one of externalId or internalId is required")
    assert directory_counts(acme.account)["sessions"] == 0


def test_external_id_is_trimmed_and_lowercased(generate, embed_claims, acme):
    # when
    claims = embed_claims(acme, externalId="  Alice@Example.COM \t")

    # then
    user = ExternalUser.objects.get(account=acme.account)
    assert user.external_id == "alice@example.com"
    assert claims["sub"] == "alice@example.com"
    assert claims["embed"]["externalId"] == "alice@example.com"


def test_the_same_external_id_in_another_spelling_is_the_same_user(new_session, acme):
    # when
    new_session(acme, externalId="Alice")
    new_session(acme, externalId=" alice ")

    # then
    assert list(ExternalUser.objects.filter(account=acme.account).values_list("external_id", flat=True)) == ["alice"]
    assert directory_counts(acme.account)["external_user_counter"] == 1


@pytest.mark.parametrize("external_id", ["", "   ", "\t\n"])
def test_an_external_id_empty_after_trimming_is_400(generate, acme, external_id):
    # when
    response = generate(acme, externalId=external_id)

    # then
    _assert_rejected(response, 400, "externalId: must not be empty")
    assert directory_counts(acme.account)["external_users"] == 0


def test_internal_id_mints_a_session_with_the_internal_users_own_permissions(embed_claims, tenant_group, acme):
    # given: the admin is a member of the tenant-wide "hq" (SCIM membership is not in the API yet)
    tenant_group(acme, "hq")
    tenant_group(acme, "sales")
    Group.objects.get(account=acme.account, name="hq").internal_members.add(
        get_user_model().objects.get(username="acme-admin")
    )

    # when
    claims = embed_claims(acme, internalId="acme-admin")

    # then
    session = EmbedSession.objects.get(account=acme.account)
    assert session.internal_user.username == "acme-admin"
    assert session.external_user is None
    assert (claims["sub"], claims["groups"], claims["userAttributes"]) == ("acme-admin", ["hq"], {})
    assert claims["embed"]["internalId"] == "acme-admin"
    assert ExternalUser.objects.filter(account=acme.account).count() == 0


@pytest.mark.parametrize("username", ["ghost", "globex-admin"])
def test_internal_id_must_name_an_internal_user_of_the_account(generate, acme, globex, username):
    # given: "globex-admin" exists, but in the other account
    before = directory_counts(acme.account)

    # when
    response = generate(acme, internalId=username)

    # then
    _assert_rejected(response, 400, f"internalId: no internal user '{username}' in this account")
    assert directory_counts(acme.account) == before


def test_internal_id_of_a_deactivated_user_is_400(generate, acme):
    # given
    leaver = accounts.internal_user_create(account=acme.account, username="acme-leaver", email="")
    get_user_model().objects.filter(pk=leaver.pk).update(is_active=False)

    # when
    response = generate(acme, internalId="acme-leaver")

    # then
    _assert_rejected(response, 400, "internalId: no internal user 'acme-leaver' in this account")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("groups", []),
        ("userAttributes", []),
        ("groupDefinitions", []),
        ("userAttributeDefinitions", []),
        ("securityContext", {}),
        ("userProfile", {}),
    ],
)
def test_fields_of_external_users_are_refused_with_internal_id(generate, acme, field, value):
    # when
    response = generate(acme, internalId="acme-admin", **{field: value})

    # then
    _assert_rejected(response, 400, f"{field}: not allowed with internalId")
    assert directory_counts(acme.account)["sessions"] == 0


def test_email_is_refused_with_internal_id(generate, acme):
    # when
    response = generate(acme, internalId="acme-admin", email="admin@acme.test")

    # then
    _assert_rejected(response, 400, "email: only allowed with externalId")


def test_email_is_stored_on_the_external_user_and_kept_when_omitted(new_session, acme):
    # when
    new_session(acme, externalId="alice", email="alice@acme.test")
    new_session(acme, externalId="alice")

    # then
    assert ExternalUser.objects.get(account=acme.account).email == "alice@acme.test"


# --- embedTenantName ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["abcde", "a" + "b" * 35, "tenant-1", "a1234", "a-b-c", "t0000"])
def test_a_valid_embed_tenant_name_creates_the_tenant_on_demand(embed_claims, acme, name):
    # when
    claims = embed_claims(acme, externalId="alice", embedTenantName=name)

    # then
    tenant = EmbedTenant.objects.get(account=acme.account)
    assert tenant.name == name
    assert ExternalUser.objects.get(account=acme.account).embed_tenant == tenant
    assert claims["embed"]["embedTenant"] == name


@pytest.mark.parametrize(
    "name",
    [
        "abcd",  # 4 characters
        "a" * 37,  # 37 characters
        "Tenant",  # uppercase
        "1tenant",  # leading digit
        "-tenant",  # leading '-'
        "tenant-",  # trailing '-'
        "ten_ant",
        "ten ant",
        "tenänt",
    ],
)
def test_an_invalid_embed_tenant_name_is_400(generate, acme, name):
    # when
    response = generate(acme, externalId="alice", embedTenantName=name)

    # then
    _assert_rejected(response, 400, TENANT_NAME_INVALID)
    assert directory_counts(acme.account)["embed_tenants"] == 0


def test_embed_tenant_name_defaults_to_the_accounts_own_tenant(embed_claims, acme):
    # when
    claims = embed_claims(acme, externalId="alice")

    # then: no embed tenant is created; the session belongs to the account itself
    assert EmbedTenant.objects.filter(account=acme.account).count() == 0
    assert ExternalUser.objects.get(account=acme.account).embed_tenant is None
    assert claims["embed"]["embedTenant"] is None
    assert claims["embed"]["accountName"] == "acme"


def test_a_user_moves_to_the_embed_tenant_of_its_latest_session(new_session, acme):
    # when
    new_session(acme, externalId="alice", embedTenantName="first-tenant")
    new_session(acme, externalId="alice", embedTenantName="second-tenant")
    new_session(acme, externalId="alice")  # omitted: keeps the last one

    # then
    assert ExternalUser.objects.get(account=acme.account).embed_tenant.name == "second-tenant"


# --- creator mode gates ---------------------------------------------------------------------------------


def test_creator_mode_without_the_tenant_flag_is_403(generate, initech):
    # given
    before = directory_counts(initech.account)

    # when
    response = generate(initech, externalId="alice", creatorMode=True, embedTenantName="tenant-a")

    # then
    _assert_rejected(response, 403, "creatorMode requires the useCreatorMode tenant flag")
    assert directory_counts(initech.account) == before


def test_creator_mode_false_needs_no_flag(embed_claims, initech):
    # when
    claims = embed_claims(initech, externalId="alice", creatorMode=False)

    # then
    assert claims["embed"]["creatorMode"] is False


def test_creator_mode_works_once_the_flag_is_turned_on(embed_claims, patch_tenant_settings, initech):
    # given
    patch_tenant_settings(initech, useCreatorMode=True)

    # when
    claims = embed_claims(initech, externalId="alice", creatorMode=True, embedTenantName="tenant-a")

    # then
    assert claims["embed"]["creatorMode"] is True
    assert EmbedSession.objects.get(account=initech.account).creator_mode is True


DEFINITIONS = {
    "groupDefinitions": [{"name": "editors"}],
    "userAttributeDefinitions": [{"name": "region", "type": "string"}],
}


@pytest.mark.parametrize("field", list(DEFINITIONS))
def test_definitions_require_creator_mode(generate, acme, field):
    # when
    response = generate(acme, externalId="alice", embedTenantName="tenant-a", **{field: DEFINITIONS[field]})

    # then
    _assert_rejected(response, 400, "groupDefinitions and userAttributeDefinitions require creatorMode: true")
    assert directory_counts(acme.account)["groups"] == 0
    assert directory_counts(acme.account)["attribute_definitions"] == 0


@pytest.mark.parametrize("field", list(DEFINITIONS))
def test_definitions_require_embed_tenant_name(generate, acme, field):
    # when
    response = generate(acme, externalId="alice", creatorMode=True, **{field: DEFINITIONS[field]})

    # then
    _assert_rejected(response, 400, "groupDefinitions and userAttributeDefinitions require embedTenantName")
    assert directory_counts(acme.account)["groups"] == 0
    assert directory_counts(acme.account)["attribute_definitions"] == 0


@pytest.mark.parametrize("field", list(DEFINITIONS))
def test_definitions_require_the_tenant_flag(generate, initech, field):
    # when
    response = generate(
        initech, externalId="alice", creatorMode=True, embedTenantName="tenant-a", **{field: DEFINITIONS[field]}
    )

    # then
    _assert_rejected(response, 403, "creatorMode requires the useCreatorMode tenant flag")
    assert directory_counts(initech.account)["attribute_definitions"] == 0


# --- securityContext ------------------------------------------------------------------------------------


def test_security_context_keys_are_top_level_claims(embed_claims, acme):
    # when
    claims = embed_claims(acme, externalId="alice", securityContext={"tenant_id": 42, "regions": ["eu", "us"]})

    # then
    assert claims["tenant_id"] == 42
    assert claims["regions"] == ["eu", "us"]


def test_security_context_may_not_override_reserved_claims(generate, acme):
    # when
    response = generate(acme, externalId="alice", securityContext={"exp": 1, "groups": ["admins"], "ok": True})

    # then
    _assert_rejected(response, 400, "securityContext: reserved claim names not allowed: exp, groups")
    assert directory_counts(acme.account)["external_users"] == 0


# --- userProfile ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "picture",
    [
        "ftp://cdn.acme.test/alice.png",
        "/avatars/alice.png",
        "cdn.acme.test/alice.png",
        "javascript:alert(1)",
        "data:image/png;base64,AAAA",
        "http://",
        "https:///alice.png",
        "https://cdn.acme.test/a lice.png",
        "https://cdn.acme.test:99999/alice.png",
    ],
)
def test_a_picture_must_be_an_absolute_http_url(generate, acme, picture):
    # when
    response = generate(acme, externalId="alice", userProfile={"picture": picture})

    # then
    _assert_rejected(response, 400, "userProfile.picture: Must be an absolute http:// or https:// URL.")
    assert directory_counts(acme.account)["external_users"] == 0


@pytest.mark.parametrize("picture", ["http://cdn.acme.test/alice.png", "https://cdn.acme.test:8443/a/b.svg?v=2"])
def test_an_http_picture_is_stored_as_given(new_session, acme, picture):
    # when
    new_session(acme, externalId="alice", userProfile={"picture": picture})

    # then
    assert ExternalUser.objects.get(account=acme.account).picture == picture


def test_user_profile_is_overwritten_property_by_property(new_session, embed_claims, acme):
    # given
    new_session(acme, externalId="alice", userProfile={"displayName": "Alice", "picture": "https://cdn.test/1.png"})

    # when: a later call sends only the picture, and a third sends no profile at all
    new_session(acme, externalId="alice", userProfile={"picture": "https://cdn.test/2.png"})
    claims = embed_claims(acme, externalId="alice")

    # then
    user = ExternalUser.objects.get(account=acme.account)
    assert (user.display_name, user.picture) == ("Alice", "https://cdn.test/2.png")
    assert claims["embed"]["userProfile"] == {"displayName": "Alice", "picture": "https://cdn.test/2.png"}


def test_an_unknown_profile_property_is_400(generate, acme):
    # when
    response = generate(acme, externalId="alice", userProfile={"avatar": "https://cdn.test/1.png"})

    # then
    _assert_rejected(response, 400, "userProfile: Unknown fields: avatar")


# --- settings.showDashboardChat -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "account_default", "stored", "effective"),
    [
        ({}, True, None, True),
        ({}, False, None, False),
        ({"showDashboardChat": None}, False, None, False),
        ({"showDashboardChat": True}, False, True, True),
        ({"showDashboardChat": False}, True, False, False),
        ({"showDashboardChat": True}, True, True, True),
    ],
)
def test_show_dashboard_chat_is_the_sessions_value_else_the_account_default(
    embed_claims, patch_tenant_settings, acme, settings, account_default, stored, effective
):
    # given
    patch_tenant_settings(acme, showDashboardChat=account_default)

    # when
    claims = embed_claims(acme, externalId="alice", settings=settings)

    # then
    assert EmbedSession.objects.get(account=acme.account).show_dashboard_chat is stored
    assert claims["embed"]["settings"]["showDashboardChat"] is effective


def test_show_dashboard_chat_is_on_by_default(embed_claims, acme):
    # when
    claims = embed_claims(acme, externalId="alice")

    # then
    assert claims["embed"]["settings"] == {
        "showDashboardChat": True,
        "allowAi": True,
        "allowExport": False,
        "locale": "en-US",
        "timezone": "UTC",
        "embedTheme": {},
    }


def test_show_dashboard_chat_must_be_a_boolean(generate, acme):
    # when
    response = generate(acme, externalId="alice", settings={"showDashboardChat": "no"})

    # then
    _assert_rejected(response, 400, "settings.showDashboardChat: Must be a boolean.")


# --- the response ---------------------------------------------------------------------------------------


def test_the_response_is_exactly_a_session_id_of_at_least_128_bits(generate, acme):
    # when
    response = generate(acme, externalId="alice")

    # then
    assert response.status_code == 200
    body = response.json()
    assert list(body) == ["sessionId"]
    # 43 url-safe base64 characters carry 258 bits; the service draws 256.
    assert re.fullmatch(r"[A-Za-z0-9_-]{43,}", body["sessionId"])


def test_every_session_id_is_new(new_session, acme):
    # when
    session_ids = {new_session(acme, externalId="alice") for _ in range(5)}

    # then
    assert len(session_ids) == 5
    assert EmbedSession.objects.filter(account=acme.account).count() == 5


def test_only_the_digest_of_the_session_id_is_stored(new_session, acme):
    # when
    session_id = new_session(acme, externalId="alice", securityContext={"k": "v"})

    # then
    row = EmbedSession.objects.filter(account=acme.account).values().get()
    assert row["key_digest"] == hashlib.sha256(session_id.encode()).hexdigest()
    assert not [column for column, value in row.items() if session_id in str(value)]
