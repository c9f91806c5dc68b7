"""SCIM 2.0 Groups (RFC 7643/7644) over the tenant-wide group catalog."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import PlatformToken
from embedadmin.directory.models import Group
from tests.platform.support import SCIM_ERROR_SCHEMA, SCIM_GROUPS_URL, db_rows, define_in_tenant, mint_ok

GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
SCIM_JSON = "application/scim+json"


def _scim_error(status: int, detail: str, scim_type: str | None = None) -> dict:
    """An RFC 7644 3.12 Error: these members and no other."""
    body = {"schemas": [SCIM_ERROR_SCHEMA], "status": str(status), "detail": detail}
    if scim_type:
        body["scimType"] = scim_type
    return body


def _resource(group: Group, members: list[dict] | None = None) -> dict:
    location = f"http://testserver{SCIM_GROUPS_URL}/{group.pk}"
    resource = {
        "schemas": [GROUP_SCHEMA],
        "id": str(group.pk),
        "displayName": group.name,
        "meta": {
            "resourceType": "Group",
            "created": group.created_at.isoformat().replace("+00:00", "Z"),
            "lastModified": group.updated_at.isoformat().replace("+00:00", "Z"),
            "location": location,
        },
    }
    if members:
        resource["members"] = [{**m, "$ref": f"http://testserver/api/scim/v2/Users/{m['value']}"} for m in members]
    return resource


def _create(api, cast, name: str):
    return api.post_json(SCIM_GROUPS_URL, {"schemas": [GROUP_SCHEMA], "displayName": name}, **cast.platform_headers)


def _make_groups(api, cast, *group_names: str) -> list[Group]:
    for name in group_names:
        assert _create(api, cast, name).status_code == 201
    return list(Group.objects.filter(account=cast.account, name__in=group_names).order_by("id"))


def test_create_is_201_with_the_group_resource(api, acme):
    # when
    response = _create(api, acme, "sales")

    # then
    group = Group.objects.get(account=acme.account)
    assert response.status_code == 201
    assert response["Content-Type"] == SCIM_JSON
    assert response["Location"] == f"http://testserver{SCIM_GROUPS_URL}/{group.pk}"
    assert response.json() == _resource(group)
    assert (group.name, group.embed_tenant_id) == ("sales", None)


def test_a_created_group_is_usable_in_a_read_only_session(api, acme):
    # given
    _create(api, acme, "sales")

    # when
    response = api.post_json(
        "/api/v1/embed/generate-session",
        {"deploymentId": acme.deployment.pk, "externalId": "alice", "groups": ["sales"]},
        **acme.api_key_headers,
    )

    # then
    assert response.status_code == 200


def test_a_duplicate_display_name_is_409_with_the_scim_error_and_writes_nothing(api, acme):
    # given
    _create(api, acme, "sales")
    before = db_rows()

    # when
    response = _create(api, acme, "sales")

    # then
    assert response.status_code == 409
    assert response["Content-Type"] == SCIM_JSON
    assert response.json() == _scim_error(409, "A group named 'sales' already exists", "uniqueness")
    assert db_rows() == before


@pytest.mark.parametrize(
    ("body", "message", "scim_type"),
    [
        ({"schemas": [GROUP_SCHEMA]}, "Field 'displayName' is required but value is missing, null or empty", None),
        ({"schemas": [GROUP_SCHEMA], "displayName": ""}, "Group name must not be empty", None),
        ({"schemas": [GROUP_SCHEMA], "displayName": "   "}, "Group name must not be empty", None),
        ({"schemas": [GROUP_SCHEMA], "displayName": 5}, "Input should be a valid string: displayName", None),
        ({"schemas": [GROUP_SCHEMA], "displayName": ["a"]}, "Input should be a valid string: displayName", None),
        ([{"displayName": "sales"}], "The body must be a JSON object", "invalidSyntax"),
        (
            {"schemas": [GROUP_SCHEMA], "displayName": "g" * 256},
            "displayName must be at most 255 characters, without NUL",
            None,
        ),
    ],
)
def test_an_invalid_group_is_400_invalid_value(api, acme, body, message, scim_type):
    # given
    before = db_rows()

    # when
    response = api.post_json(SCIM_GROUPS_URL, body, **acme.platform_headers)

    # then
    assert response.status_code == 400
    assert response.json() == _scim_error(400, message, scim_type or "invalidValue")
    assert db_rows() == before


def test_a_reserved_system_name_is_400(api, acme):
    # when
    response = _create(api, acme, "system:tenant:x")

    # then
    assert response.status_code == 400
    assert response.json() == _scim_error(400, "Group names starting with 'system:' are reserved", "invalidValue")


def test_list_returns_a_list_response_of_the_tenant_wide_groups_only(api, acme, globex):
    # given: an embed tenant's group and another account's group are not listed
    groups = _make_groups(api, acme, "sales", "support")
    define_in_tenant(api, acme, "tenant-one", groups=["tenant-group"])
    _make_groups(api, globex, "globex-group")

    # when
    response = api.get(SCIM_GROUPS_URL, **acme.platform_headers)

    # then
    assert response.status_code == 200
    assert response["Content-Type"] == SCIM_JSON
    assert response.json() == {
        "schemas": [LIST_SCHEMA],
        "totalResults": 2,
        "startIndex": 1,
        "itemsPerPage": 2,
        "Resources": [_resource(g) for g in groups],
    }


@pytest.mark.parametrize(
    ("query", "start", "picked"),
    [
        ("startIndex=2&count=2", 2, [1, 2]),
        ("startIndex=5&count=2", 5, [4]),
        ("startIndex=6", 6, []),
        ("startIndex=100000000000000000000000000", 100000000000000000000000000, []),
        ("startIndex=0&count=1", 1, [0]),  # below 1 reads as 1 (RFC 7644 3.4.2.4)
        ("startIndex=-3&count=1", 1, [0]),
        ("count=0", 1, []),  # only totalResults
        ("count=-1", 1, []),
        ("count=3", 1, [0, 1, 2]),
    ],
)
def test_list_pages_with_start_index_and_count(api, acme, query, start, picked):
    # given
    groups = _make_groups(api, acme, "g1", "g2", "g3", "g4", "g5")

    # when
    response = api.get(f"{SCIM_GROUPS_URL}?{query}", **acme.platform_headers)

    # then
    assert response.status_code == 200
    assert response.json() == {
        "schemas": [LIST_SCHEMA],
        "totalResults": 5,
        "startIndex": start,
        "itemsPerPage": len(picked),
        "Resources": [_resource(groups[i]) for i in picked],
    }


@pytest.mark.parametrize("query", ["startIndex=x", "startIndex=1.5", "count=many"])
def test_a_non_integer_paging_parameter_is_400(api, acme, query):
    # when
    response = api.get(f"{SCIM_GROUPS_URL}?{query}", **acme.platform_headers)

    # then
    name = query.split("=")[0]
    assert response.status_code == 400
    assert response.json() == _scim_error(400, f"{name} must be an integer", "invalidValue")


@pytest.mark.parametrize(
    ("expression", "picked"),
    [
        ('displayName eq "support"', ["support"]),
        ('displayName  EQ  "support"', ["support"]),
        ('displayName eq "Support"', ["support"]),  # caseExact false (RFC 7643 4.2)
        ('displayName co "s"', ["sales", "support", 'say "hi"']),
        ('displayName sw "sa" or displayName ew "\\"hi\\""', ["sales", 'say "hi"']),
        ('not (displayName eq "sales")', ["support", 'say "hi"']),
        ('displayName eq "say \\"hi\\""', ['say "hi"']),
        ('displayName eq "nobody"', []),
    ],
)
def test_list_filters_by_display_name(api, acme, expression, picked):
    # given
    _make_groups(api, acme, "sales", "support", 'say "hi"')

    # when
    response = api.get(SCIM_GROUPS_URL, {"filter": expression}, **acme.platform_headers)

    # then
    body = response.json()
    assert response.status_code == 200
    assert (body["totalResults"], [r["displayName"] for r in body["Resources"]]) == (len(picked), picked)


@pytest.mark.parametrize(
    ("expression", "detail"),
    [
        ('description eq "x"', "Filtering on 'description' is not supported"),
        ("id eq 1", "value 1 is not valid for attribute 'urn:ietf:params:scim:schemas:core:2.0:Group:id'"),
        ('displayName eq "unterminated', "invalid syntax at column 16"),
    ],
)
def test_an_unsupported_filter_is_400_invalid_filter(api, acme, expression, detail):
    # when
    response = api.get(SCIM_GROUPS_URL, {"filter": expression}, **acme.platform_headers)

    # then
    assert response.status_code == 400
    assert response.json() == _scim_error(400, detail, "invalidFilter")


def test_get_one_returns_the_resource_with_its_internal_members(api, acme):
    # given
    (group,) = _make_groups(api, acme, "sales")
    ann = accounts.internal_user_create(account=acme.account, username="ann", email="")
    group.internal_members.add(ann)

    # when
    response = api.get(f"{SCIM_GROUPS_URL}/{group.pk}", **acme.platform_headers)

    # then
    group.refresh_from_db()
    assert response.status_code == 200
    assert response["Content-Type"] == SCIM_JSON
    assert response.json() == _resource(group, [{"value": str(ann.pk), "display": "ann", "type": "User"}])


@pytest.mark.parametrize("method", ["get", "delete"])
@pytest.mark.parametrize("group_id", ["999999", "abc", "%C2%B2", "9" * 30, "-1"])
def test_an_unknown_group_is_404(api, acme, method, group_id):
    # when
    response = getattr(api, method)(f"{SCIM_GROUPS_URL}/{group_id}", **acme.platform_headers)

    # then
    shown = "²" if group_id == "%C2%B2" else group_id
    assert response.status_code == 404
    assert response["Content-Type"] == SCIM_JSON
    assert response.json() == _scim_error(404, f"Group {shown} not found")


def test_delete_is_204_and_removes_the_group_with_its_internal_memberships(api, acme):
    # given
    (group,) = _make_groups(api, acme, "sales")
    ann = accounts.internal_user_create(account=acme.account, username="ann", email="")
    group.internal_members.add(ann)

    # when
    response = api.delete(f"{SCIM_GROUPS_URL}/{group.pk}", **acme.platform_headers)

    # then
    assert response.status_code == 204
    assert response.content == b""
    assert not Group.objects.filter(pk=group.pk).exists()
    assert get_user_model().objects.filter(pk=ann.pk).exists()
    assert api.get(f"{SCIM_GROUPS_URL}/{group.pk}", **acme.platform_headers).status_code == 404


def test_delete_of_a_group_external_viewers_belong_to_is_400_and_keeps_everything(api, acme):
    # given: a viewer joined through a read-only session, and an internal member
    (group,) = _make_groups(api, acme, "sales")
    ann = accounts.internal_user_create(account=acme.account, username="ann", email="")
    group.internal_members.add(ann)
    mint_ok(api, acme, externalId="alice", groups=["sales"])
    before = db_rows()

    # when
    response = api.delete(f"{SCIM_GROUPS_URL}/{group.pk}", **acme.platform_headers)

    # then: the external viewer blocks it (internal members go with a SCIM delete, so they are not counted)
    assert response.status_code == 400
    assert response.json() == _scim_error(400, "Group 'sales' still has 1 member(s); remove them first", "invalidValue")
    assert db_rows() == before

    # when: the viewer's memberships are cleared
    mint_ok(api, acme, externalId="alice", groups=[])
    deleted = api.delete(f"{SCIM_GROUPS_URL}/{group.pk}", **acme.platform_headers)

    # then
    assert deleted.status_code == 204
    assert not Group.objects.filter(pk=group.pk).exists()


def _revoked_platform_token(cast) -> str:
    accounts.platform_token_revoke(token=PlatformToken.objects.get(account=cast.account))
    return cast.created.platform_token


@pytest.mark.parametrize(
    ("authorization", "detail"),
    [
        (lambda cast: None, "Missing Authorization header: expected 'Bearer <token>'"),
        (lambda cast: f"Api-Key {cast.created.platform_token}", "Authorization header must be 'Bearer <token>'"),
        (lambda cast: f"Bearer {cast.created.api_key}", "Invalid or revoked token"),
        (lambda cast: f"Bearer {cast.created.platform_token}x", "Invalid or revoked token"),
        (lambda cast: f"Bearer {_revoked_platform_token(cast)}", "Invalid or revoked token"),
    ],
)
@pytest.mark.parametrize(("method", "path"), [("get", ""), ("post", ""), ("get", "/1"), ("delete", "/1")])
def test_a_missing_wrong_or_revoked_credential_is_401(api, acme, authorization, detail, method, path):
    # given
    value = authorization(acme)
    headers = {} if value is None else {"HTTP_AUTHORIZATION": value}
    before = db_rows()

    # when
    response = getattr(api, method)(f"{SCIM_GROUPS_URL}{path}", **headers)

    # then
    assert response.status_code == 401
    assert response["Content-Type"] == SCIM_JSON
    assert response["WWW-Authenticate"] == "Bearer"
    assert response.json() == _scim_error(401, detail)
    assert db_rows() == before
