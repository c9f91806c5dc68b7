"""SCIM 2.0 Users (RFC 7643/7644): the account's internal users; revocation on deactivation; recorded Okta and
Entra request sequences; the isolation matrix of Users and Groups."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jwt
import pytest
from django.contrib.auth import get_user_model

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import ApiKey, RevokedToken
from embedadmin.directory import services as directory
from embedadmin.directory.models import Group, InternalAttributeValue
from embedadmin.directory.services import AttributeDefinitionInput
from embedadmin.embedding.models import EmbedSession
from tests.platform.support import SCIM_ERROR_SCHEMA, db_rows, mint_ok

USERS = "/api/scim/v2/Users"
GROUPS = "/api/scim/v2/Groups"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
FIXTURES = Path(__file__).parent / "scim_fixtures"


def _create(api, cast, user_name: str, **fields: Any):
    body = {"schemas": [USER_SCHEMA], "userName": user_name, **fields}
    return api.post_json(USERS, body, **cast.platform_headers)


def _patch(api, cast, path: str, *operations: dict[str, Any]):
    body = {"schemas": [PATCH_SCHEMA], "Operations": list(operations)}
    return api.patch_json(path, body, **cast.platform_headers)


def _error(response) -> tuple[int, str | None]:
    body = response.json()
    assert body["schemas"] == [SCIM_ERROR_SCHEMA]
    assert body["status"] == str(response.status_code)
    return response.status_code, body.get("scimType")


def test_create_is_201_with_location_and_the_resource(api, acme):
    # when
    response = _create(
        api,
        acme,
        "Jane.Doe@example.com",
        name={"givenName": "Jane", "familyName": "Doe"},
        emails=[{"value": "jane@example.com", "primary": True, "type": "work"}],
        externalId="ext-1",
        **{ENTERPRISE: {"department": "Sales", "manager": {"value": "42", "$ref": "https://idp.example/Users/42"}}},
    )

    # then
    body = response.json()
    assert response.status_code == 201, body
    user = get_user_model().objects.get(pk=int(body["id"]))
    assert response.status_code == 201
    assert response["Content-Type"] == "application/scim+json"
    assert response["Location"] == f"http://testserver{USERS}/{user.pk}"
    assert body["userName"] == "Jane.Doe@example.com"
    assert body["active"] is True
    assert body["externalId"] == "ext-1"
    assert body["name"] == {"givenName": "Jane", "familyName": "Doe"}
    assert body["emails"] == [{"value": "jane@example.com", "primary": True, "type": "work"}]
    assert body[ENTERPRISE] == {
        "department": "Sales",
        "manager": {"value": "42", "$ref": "https://idp.example/Users/42"},
    }
    assert body["meta"]["resourceType"] == "User"
    assert "password" not in body
    assert (user.username, user.email, user.first_name, user.last_name) == (
        "Jane.Doe@example.com",
        "jane@example.com",
        "Jane",
        "Doe",
    )
    assert user.membership.account == acme.account


@pytest.mark.parametrize("taken", ["jane@example.com", "JANE@EXAMPLE.COM", "Jane@Example.com"])
def test_a_user_name_taken_in_any_case_is_409_uniqueness_and_writes_nothing(api, acme, taken):
    # given
    assert _create(api, acme, "jane@example.com").status_code == 201
    before = db_rows()

    # when
    response = _create(api, acme, taken)

    # then
    assert _error(response) == (409, "uniqueness")
    assert db_rows() == before


def test_renaming_onto_a_taken_name_in_another_case_is_409(api, acme):
    # given
    _create(api, acme, "ann@example.com")
    bob = _create(api, acme, "bob@example.com").json()

    # when
    response = _patch(
        api, acme, f"{USERS}/{bob['id']}", {"op": "replace", "path": "userName", "value": "ANN@example.com"}
    )

    # then
    assert _error(response) == (409, "uniqueness")


@pytest.mark.parametrize(
    ("body", "scim_type"),
    [
        ({"schemas": [USER_SCHEMA]}, "invalidValue"),  # userName is required
        ({"schemas": [USER_SCHEMA], "userName": "a", "emails": [{"value": "not-an-email"}]}, "invalidValue"),
        ({"schemas": [USER_SCHEMA], "userName": "has space"}, "invalidValue"),
        ({"schemas": [USER_SCHEMA], "userName": "a", "active": "maybe"}, "invalidValue"),
        ([1, 2], "invalidSyntax"),
    ],
)
def test_an_invalid_user_is_400_and_writes_nothing(api, acme, body, scim_type):
    # given
    before = db_rows()

    # when
    response = api.post_json(USERS, body, **acme.platform_headers)

    # then
    assert _error(response) == (400, scim_type)
    assert db_rows() == before


def test_malformed_json_is_400_invalid_syntax(api, acme):
    response = api.post(USERS, data="{not json", content_type="application/scim+json", **acme.platform_headers)
    assert _error(response) == (400, "invalidSyntax")


@pytest.mark.parametrize(
    ("expression", "picked"),
    [
        ('userName eq "ANN@example.com"', ["ann@example.com"]),
        ('userName ne "ann@example.com"', ["bob@example.com", "cy@other.org"]),
        ('userName co "example"', ["ann@example.com", "bob@example.com"]),
        ('userName sw "b"', ["bob@example.com"]),
        ('userName ew ".org"', ["cy@other.org"]),
        ('userName gt "b"', ["bob@example.com", "cy@other.org"]),
        ('userName le "bob@example.com"', ["ann@example.com", "bob@example.com"]),
        ('externalId eq "e-2"', ["bob@example.com"]),
        ("externalId pr", ["ann@example.com", "bob@example.com"]),
        ('emails.value eq "cy@other.org"', ["cy@other.org"]),
        ('emails[value co "other"]', ["cy@other.org"]),
        ('name.givenName eq "ann"', ["ann@example.com"]),
        ('name.familyName sw "Sm"', ["bob@example.com"]),
        ("active eq false", ["cy@other.org"]),
        ('meta.lastModified gt "2000-01-01T00:00:00Z"', ["ann@example.com", "bob@example.com", "cy@other.org"]),
        ('meta.lastModified lt "2000-01-01T00:00:00Z"', []),
        ('id eq "' + "1" * 5000 + '"', []),  # beyond int()'s 4,300 digits: no row's id, not a 500
        ('(userName sw "a" or userName sw "c") and not (active eq false)', ["ann@example.com"]),
    ],
)
def test_list_filters(api, acme, expression, picked):
    # given
    _create(api, acme, "ann@example.com", externalId="e-1", name={"givenName": "Ann"})
    _create(api, acme, "bob@example.com", externalId="e-2", name={"familyName": "Smith"})
    _create(api, acme, "cy@other.org", emails=[{"value": "cy@other.org", "primary": True}], active=False)
    get_user_model().objects.filter(username="acme-admin").update(is_active=False)  # kept out below
    names_of_admin = {"acme-admin"}

    # when
    response = api.get(USERS, {"filter": expression}, **acme.platform_headers)

    # then
    body = response.json()
    assert response.status_code == 200, body
    found = [r["userName"] for r in body["Resources"] if r["userName"] not in names_of_admin]
    assert found == picked


@pytest.mark.parametrize(
    "expression",
    ['title eq "x"', 'userName eq "unterminated', 'urn:cube:params:1.0:UserAttribute:region eq "x"', "userName zz 1"],
)
def test_an_unsupported_filter_is_400_invalid_filter(api, acme, expression):
    response = api.get(USERS, {"filter": expression}, **acme.platform_headers)
    assert _error(response) == (400, "invalidFilter")


def test_paging_and_attribute_selection(api, acme):
    # given: the account's admin is user 1 of the list
    for name in ("u1", "u2", "u3"):
        _create(api, acme, name, externalId=f"x-{name}")

    # when
    page = api.get(USERS, {"startIndex": "2", "count": "2", "attributes": "userName"}, **acme.platform_headers).json()
    excluded = api.get(USERS, {"excludedAttributes": "externalId,meta", "count": "10"}, **acme.platform_headers).json()
    empty = api.get(USERS, {"count": "-5"}, **acme.platform_headers).json()

    # then
    assert (page["totalResults"], page["startIndex"], page["itemsPerPage"]) == (4, 2, 2)
    assert [set(r) for r in page["Resources"]] == [{"schemas", "id", "userName"}] * 2
    assert [r["userName"] for r in page["Resources"]] == ["u1", "u2"]
    assert all("externalId" not in r and "meta" not in r for r in excluded["Resources"])
    assert (empty["totalResults"], empty["Resources"]) == (4, [])


def test_put_replaces_and_keeps_active_when_left_out(api, acme):
    # given
    created = _create(api, acme, "ann", name={"givenName": "Ann"}, externalId="a", title="Boss").json()

    # when
    response = api.generic(
        "PUT",
        f"{USERS}/{created['id']}",
        json.dumps({"schemas": [USER_SCHEMA], "userName": "ann", "name": {"familyName": "Lee"}}),
        content_type="application/scim+json",
        **acme.platform_headers,
    )

    # then
    body = response.json()
    assert response.status_code == 200
    assert body["name"] == {"familyName": "Lee"}
    assert "title" not in body
    assert "externalId" not in body
    assert body["active"] is True


def test_patch_is_atomic_a_failing_operation_writes_nothing(api, acme):
    # given
    created = _create(api, acme, "ann", name={"givenName": "Ann"}).json()
    before = db_rows()

    # when: the second operation targets a read-only attribute
    response = _patch(
        api,
        acme,
        f"{USERS}/{created['id']}",
        {"op": "replace", "path": "name.givenName", "value": "Zed"},
        {"op": "replace", "path": "id", "value": "7"},
    )

    # then
    assert response.status_code == 400
    assert db_rows() == before


def test_remove_without_a_path_is_400_no_target(api, acme):
    created = _create(api, acme, "ann").json()
    response = _patch(api, acme, f"{USERS}/{created['id']}", {"op": "remove"})
    assert _error(response) == (400, "noTarget")


def test_custom_attributes_map_onto_typed_definitions(api, acme):
    # given
    for name, type_ in (("region", "string"), ("level", "number"), ("tags", "string_array")):
        directory.attribute_definition_create(
            account=acme.account, embed_tenant=None, data=AttributeDefinitionInput(name=name, type=type_)
        )

    # when
    created = _create(
        api,
        acme,
        "ann",
        **{"urn:cube:params:1.0:UserAttribute:region": "emea", "urn:cube:params:1.0:UserAttribute": {"level": 3}},
    )
    patched = _patch(
        api,
        acme,
        f"{USERS}/{created.json()['id']}",
        {"op": "add", "path": "urn:cube:params:1.0:UserAttribute:tags", "value": ["a", "b"]},
    )
    wrong = _patch(
        api,
        acme,
        f"{USERS}/{created.json()['id']}",
        {"op": "replace", "path": "urn:cube:params:1.0:UserAttribute:level", "value": "high"},
    )

    # then
    assert created.status_code == 201, created.json()
    assert patched.json()["urn:cube:params:1.0:UserAttribute"] == {"region": "emea", "level": 3, "tags": ["a", "b"]}
    values = dict(InternalAttributeValue.objects.values_list("definition__name", "value"))
    assert values == {"region": "emea", "level": 3, "tags": ["a", "b"]}
    assert _error(wrong) == (400, "invalidValue")
    schemas = api.get("/api/scim/v2/Schemas", **acme.platform_headers).json()
    assert "urn:cube:params:1.0:UserAttribute" in [s["id"] for s in schemas["Resources"]]


def _deactivate_okta(api, cast, user_id: str):
    return _patch(api, cast, f"{USERS}/{user_id}", {"op": "replace", "value": {"active": False}})


def _deactivate_entra(api, cast, user_id: str):
    return _patch(api, cast, f"{USERS}/{user_id}", {"op": "Replace", "path": "active", "value": "False"})


def _delete(api, cast, user_id: str):
    return api.delete(f"{USERS}/{user_id}", **cast.platform_headers)


@pytest.mark.parametrize("end", [_deactivate_okta, _deactivate_entra, _delete], ids=["okta", "entra", "delete"])
def test_deactivating_or_deleting_revokes_sessions_keys_and_login_at_once(api, acme, end):
    # given: a SCIM user with an embed session (exchanged for a token), an unexchanged one, and a personal key
    user_id = _create(api, acme, "ann").json()["id"]
    user = get_user_model().objects.get(pk=user_id)
    exchanged = mint_ok(api, acme, internalId="ann")
    token = api.post_json("/api/v1/embed/session/token", {"sessionId": exchanged}).json()["token"]
    unexchanged = mint_ok(api, acme, internalId="ann")
    key, _ = accounts.api_key_create(account=acme.account, personal_owner=user)
    assert api.get("/api/v1/api-keys/current", HTTP_AUTHORIZATION=f"Api-Key {key}").status_code == 200

    # when
    response = end(api, acme, user_id)

    # then
    assert response.status_code in (200, 204)
    assert api.post_json("/api/v1/embed/session/token", {"sessionId": unexchanged}).status_code == 401
    assert api.get("/api/v1/api-keys/current", HTTP_AUTHORIZATION=f"Api-Key {key}").status_code == 401
    assert (
        api.post_json(
            "/api/v1/embed/generate-session",
            {"deploymentId": acme.deployment.pk, "internalId": "ann"},
            **acme.api_key_headers,
        ).status_code
        == 400
    )
    jti = jwt.decode(token, options={"verify_signature": False})["jti"]
    assert RevokedToken.objects.filter(jti=jti).exists()
    if end is not _delete:
        user.refresh_from_db()
        assert user.is_active is False
        assert ApiKey.objects.get(owner=user).revoked_at is not None
        assert EmbedSession.objects.filter(internal_user=user, revoked_at__isnull=True).count() == 0
    else:
        assert not get_user_model().objects.filter(pk=user_id).exists()


def _fill(value: Any, saved: dict[str, str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"\{(\w+)\}", lambda m: saved[m.group(1)], value)
    if isinstance(value, list):
        return [_fill(v, saved) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, saved) for k, v in value.items()}
    return value


def _at(body: Any, dotted: str) -> Any:
    """The value at a dotted path (``emails.0.value``); a URN segment is kept whole (``urn:...:User.department``)."""
    if dotted.startswith("urn:"):
        urn, _, leaf = dotted.rpartition(".")
        return (body.get(urn) or {}).get(leaf)
    head, _, rest = dotted.partition(".")
    value = (body[int(head)] if len(body) > int(head) else None) if isinstance(body, list) else body.get(head)
    return _at(value, rest) if rest and value is not None else value


@pytest.mark.parametrize("idp", ["okta", "entra"])
def test_recorded_idp_sequence_replays_green(api, acme, idp):
    # given
    directory.attribute_definition_create(
        account=acme.account, embed_tenant=None, data=AttributeDefinitionInput(name="region", type="string")
    )
    recorded = json.loads((FIXTURES / f"{idp}.json").read_text())
    saved: dict[str, str] = {}

    for number, step in enumerate(recorded["steps"], 1):
        # when
        path = "/api/scim/v2" + _fill(step["path"], saved)
        body = _fill(step.get("body"), saved)
        data = json.dumps(body) if body is not None else ""
        response = api.generic(
            step["method"], path, data, content_type="application/scim+json", **acme.platform_headers
        )

        # then
        assert response.status_code == step["status"], (number, response.content)
        payload = response.json() if response.content else {}
        for name, field in step.get("save", {}).items():
            saved[name] = payload[field]
        for dotted, expected in step.get("expect", {}).items():
            assert _at(payload, dotted) == _fill(expected, saved), (number, dotted, payload)


# --- addresses on special-use domains ------------------------------------------------------------------------


@pytest.mark.parametrize("domain", ["corp.local", "example.test", "corp.internal", "dev.localhost", "x.invalid"])
def test_an_idp_provisions_patches_and_reads_a_user_on_a_special_use_domain(api, acme, domain):
    # given: an identity provider synced from Active Directory, whose users' names and emails are on its own domain
    user_name = f"ad.user@{domain}"

    # when: it creates the user, finds it by userName, changes its work email and display name, reads it back
    created = _create(
        api,
        acme,
        user_name,
        emails=[{"value": user_name, "type": "work", "primary": True}],
        name={"givenName": "Ad", "familyName": "User"},
    )
    user_id = created.json()["id"]
    found = api.get(USERS, {"filter": f'userName eq "{user_name}"'}, **acme.platform_headers)
    patched = _patch(
        api,
        acme,
        f"{USERS}/{user_id}",
        {"op": "replace", "path": 'emails[type eq "work"].value', "value": f"ad.user2@{domain}"},
        {"op": "replace", "path": "displayName", "value": "AD User"},
    )
    read = api.get(f"{USERS}/{user_id}", **acme.platform_headers)

    # then
    assert created.status_code == 201, created.content
    assert created.json()["userName"] == user_name
    assert created.json()["emails"] == [{"value": user_name, "type": "work", "primary": True}]
    assert [r["id"] for r in found.json()["Resources"]] == [user_id]
    assert patched.status_code == 200, patched.content
    assert read.status_code == 200
    assert read.json()["emails"] == [{"value": f"ad.user2@{domain}", "type": "work", "primary": True}]
    assert read.json()["displayName"] == "AD User"
    user = get_user_model().objects.get(pk=int(user_id))
    assert (user.username, user.email) == (user_name, f"ad.user2@{domain}")


@pytest.mark.parametrize(
    "value",
    [
        "not-an-email",
        "a@b@corp.local",
        "@corp.local",
        "ad.user@",
        "ad user@corp.local",
        "ad.user@corp",
        "a" * 250 + "@x.io",
    ],
)
def test_an_address_that_is_not_one_is_400_invalid_value_whatever_its_domain(api, acme, value):
    before = db_rows()

    response = _create(api, acme, "ad.user", emails=[{"value": value}])

    assert _error(response) == (400, "invalidValue")
    assert db_rows() == before


# --- isolation: acme's token on globex's users and groups ------------------------------------------------


@pytest.mark.parametrize(
    ("method", "kind", "body"),
    [
        ("GET", "Users", None),
        ("PUT", "Users", {"schemas": [USER_SCHEMA], "userName": "hijack"}),
        ("PATCH", "Users", {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "value": {"active": False}}]}),
        ("DELETE", "Users", None),
        ("GET", "Groups", None),
        ("PUT", "Groups", {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "x"}),
        (
            "PATCH",
            "Groups",
            {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "value": {"displayName": "x"}}]},
        ),
        ("DELETE", "Groups", None),
    ],
)
def test_another_accounts_users_and_groups_are_404_and_unchanged(api, acme, globex, method, kind, body):
    # given: a globex user and group
    user_id = _create(api, globex, "globex-user").json()["id"]
    group = api.post_json(
        GROUPS,
        {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "g"},
        **globex.platform_headers,
    ).json()
    target = user_id if kind == "Users" else group["id"]
    before = db_rows()

    # when
    data = json.dumps(body) if body is not None else ""
    response = api.generic(
        method, f"/api/scim/v2/{kind}/{target}", data, content_type="application/scim+json", **acme.platform_headers
    )

    # then
    assert _error(response) == (404, None)
    assert db_rows() == before


def test_lists_and_filters_never_show_another_account(api, acme, globex):
    # given
    _create(api, globex, "globex-only")
    api.post_json(
        GROUPS,
        {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "gg"},
        **globex.platform_headers,
    )

    # when
    users = api.get(USERS, {"filter": 'userName eq "globex-only"'}, **acme.platform_headers).json()
    groups = api.get(GROUPS, {"filter": 'displayName eq "gg"'}, **acme.platform_headers).json()

    # then
    assert (users["totalResults"], groups["totalResults"]) == (0, 0)


def test_a_group_cannot_take_another_accounts_user_as_member(api, acme, globex):
    # given
    outsider = _create(api, globex, "outsider").json()["id"]
    group = api.post_json(
        GROUPS,
        {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "g"},
        **acme.platform_headers,
    ).json()
    before = db_rows()

    # when
    response = _patch(
        api, acme, f"{GROUPS}/{group['id']}", {"op": "add", "path": "members", "value": [{"value": outsider}]}
    )

    # then
    assert _error(response) == (400, "invalidValue")
    assert db_rows() == before
    assert not Group.objects.get(pk=group["id"]).internal_members.exists()


# --- discovery and aliases ---------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["/api/scim/v2", "/scim/v2"])
def test_discovery_endpoints_and_the_alias(api, acme, prefix):
    config = api.get(f"{prefix}/ServiceProviderConfig", **acme.platform_headers)
    types = api.get(f"{prefix}/ResourceTypes", **acme.platform_headers).json()
    schemas = api.get(f"{prefix}/Schemas", **acme.platform_headers).json()
    one = api.get(f"{prefix}/Schemas/{USER_SCHEMA}", **acme.platform_headers)
    unknown = api.get(f"{prefix}/Schemas/urn:nope", **acme.platform_headers)
    nowhere = api.get(f"{prefix}/Nowhere", **acme.platform_headers)
    users = api.get(f"{prefix}/Users", **acme.platform_headers).json()

    assert config.status_code == 200
    assert config.json()["patch"] == {"supported": True}
    assert [t["name"] for t in types["Resources"]] == ["User", "Group"]
    assert {s["id"] for s in schemas["Resources"]} >= {USER_SCHEMA, ENTERPRISE}
    assert one.status_code == 200
    assert _error(unknown) == (404, None)
    assert _error(nowhere) == (404, None)
    assert users["Resources"][0]["meta"]["location"].startswith(f"http://testserver{prefix}/Users/")
