"""Tenant-wide user attribute definitions: /api/v1/user-attributes (spec 2.16 fields)."""

from __future__ import annotations

import pytest

from embedadmin.directory.models import AttributeDefinition
from tests.platform.support import USER_ATTRIBUTES_URL, db_rows, define_in_tenant, mint_ok, names


def _create(api, cast, **body):
    return api.post_json(USER_ATTRIBUTES_URL, body, **cast.platform_headers)


def _created(api, cast, **body) -> dict:
    response = _create(api, cast, **body)
    assert response.status_code == 201, response.content
    return response.json()


def _url(attribute_id: int) -> str:
    return f"{USER_ATTRIBUTES_URL}/{attribute_id}"


@pytest.mark.parametrize(
    ("type_", "default"), [("string", "emea"), ("number", "5"), ("string_array", '["a", "b"]'), ("number_array", "[1]")]
)
def test_create_stores_every_field_of_the_definition(api, acme, type_, default):
    # when
    response = _create(
        api, acme, name="region", type=type_, displayName="Region", defaultValue=default, description="Sales region"
    )

    # then
    definition = AttributeDefinition.objects.get(account=acme.account)
    assert response.status_code == 201
    assert response.json() == {
        "id": definition.pk,
        "name": "region",
        "type": type_,
        "displayName": "Region",
        "defaultValue": default,
        "description": "Sales region",
    }
    assert definition.embed_tenant_id is None


def test_create_with_only_name_and_type_leaves_the_rest_empty(api, acme):
    # when
    body = _created(api, acme, name="plan", type="string")

    # then
    assert body == {
        "id": body["id"],
        "name": "plan",
        "type": "string",
        "displayName": "",
        "defaultValue": "",
        "description": "",
    }


def test_a_duplicate_name_is_409_and_writes_nothing(api, acme):
    # given
    _created(api, acme, name="region", type="string")
    before = db_rows()

    # when
    response = _create(api, acme, name="region", type="number")

    # then
    assert response.status_code == 409
    assert response.json() == {"error": "A user attribute named 'region' already exists"}
    assert db_rows() == before


def test_the_same_name_in_an_embed_tenant_or_another_account_is_no_conflict(api, acme, globex):
    # given
    define_in_tenant(api, acme, "tenant-one", attributes=[("region", "string")])
    _created(api, globex, name="region", type="string")

    # when
    response = _create(api, acme, name="region", type="string")

    # then
    assert response.status_code == 201


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": "x", "type": "date"}, 'type: "date" is not a valid choice.'),
        ({"name": "x", "type": 1}, 'type: "1" is not a valid choice.'),
        ({"name": "x"}, "type: This field is required."),
        ({"type": "string"}, "name: This field is required."),
        ({"name": "", "type": "string"}, "name: This field may not be blank."),
        ({"name": 5, "type": "string"}, "name: Not a valid string."),
        ({"name": "x" * 256, "type": "string"}, "name: Ensure this field has no more than 255 characters."),
        ({"name": "x", "type": "string", "defaultValue": 5}, "defaultValue: Not a valid string."),
        ({"name": "x", "type": "number", "defaultValue": "five"}, "defaultValue 'five' is not a valid number"),
        ({"name": "x", "type": "number", "defaultValue": "[1]"}, "defaultValue '[1]' is not a valid number"),
        (
            {"name": "x", "type": "string_array", "defaultValue": "[1]"},
            "defaultValue '[1]' is not a valid string_array",
        ),
        ({"name": "x", "type": "number_array", "defaultValue": "1"}, "defaultValue '1' is not a valid number_array"),
        ({"name": "x", "type": "string", "color": "red"}, "Unknown fields: color"),
    ],
)
def test_an_invalid_definition_is_400_and_writes_nothing(api, acme, body, message):
    # given
    before = db_rows()

    # when
    response = api.post_json(USER_ATTRIBUTES_URL, body, **acme.platform_headers)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert db_rows() == before


def test_list_pages_through_the_tenant_wide_definitions_by_name(api, acme):
    # given: an embed tenant's definition is not tenant-wide and must not be listed
    for name in ["delta", "alpha", "echo", "charlie", "bravo"]:
        _created(api, acme, name=name, type="string")
    define_in_tenant(api, acme, "tenant-one", attributes=[("zulu", "number")])

    # when
    pages, after = [], ""
    while True:
        body = api.get(f"{USER_ATTRIBUTES_URL}?first=2{after}", **acme.platform_headers).json()
        pages.append(body["items"])
        if not body["pageInfo"]["hasNextPage"]:
            break
        after = f"&after={body['pageInfo']['endCursor']}"

    # then: Cube's shape, {items, data, count, pageInfo}, with data the items again and count all of them
    assert [names(page) for page in pages] == [["alpha", "bravo"], ["charlie", "delta"], ["echo"]]
    assert set(body) == {"items", "data", "count", "pageInfo"}
    assert (body["data"], body["count"]) == (body["items"], 5)


def test_get_one_returns_the_definition(api, acme):
    # given
    created = _created(api, acme, name="region", type="string", description="where")

    # when
    response = api.get(_url(created["id"]), **acme.platform_headers)

    # then
    assert response.status_code == 200
    assert response.json() == created


def test_an_embed_tenant_definition_is_not_reachable_here(api, acme):
    # given
    define_in_tenant(api, acme, "tenant-one", attributes=[("region", "string")])
    definition = AttributeDefinition.objects.get(account=acme.account)

    # when
    response = api.get(_url(definition.pk), **acme.platform_headers)

    # then
    assert response.status_code == 404
    assert response.json() == {"error": f"User attribute {definition.pk} not found"}


@pytest.mark.parametrize("method", ["get", "patch", "delete"])
def test_an_unknown_id_is_404(api, acme, method):
    # when
    response = getattr(api, method)(_url(999999), **acme.platform_headers)

    # then
    assert response.status_code == 404
    assert response.json() == {"error": "User attribute 999999 not found"}


def test_patch_updates_the_mutable_fields_it_is_sent(api, acme):
    # given
    created = _created(api, acme, name="limit", type="number", displayName="Limit", description="d")

    # when
    response = api.patch_json(_url(created["id"]), {"defaultValue": "10", "description": ""}, **acme.platform_headers)

    # then
    expected = {**created, "defaultValue": "10", "description": ""}
    assert response.status_code == 200
    assert response.json() == expected
    assert api.get(_url(created["id"]), **acme.platform_headers).json() == expected


def test_patch_with_the_same_type_and_name_is_accepted(api, acme):
    # given
    created = _created(api, acme, name="limit", type="number")

    # when
    response = api.patch_json(
        _url(created["id"]), {"name": "limit", "type": "number", "displayName": "L"}, **acme.platform_headers
    )

    # then
    assert response.status_code == 200
    assert response.json() == {**created, "displayName": "L"}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"type": "string"}, "cannot change type"),
        ({"type": "string", "displayName": "L"}, "cannot change type"),
        ({"name": "other"}, "name cannot be changed: access policies refer to it"),
        ({"defaultValue": "ten"}, "defaultValue 'ten' is not a valid number"),
        ({"type": "text"}, 'type: "text" is not a valid choice.'),
        ({"displayName": 3}, "displayName: Not a valid string."),
        ({"owner": "me"}, "Unknown fields: owner"),
    ],
)
def test_an_invalid_patch_is_400_and_changes_nothing(api, acme, changes, message):
    # given
    created = _created(api, acme, name="limit", type="number", displayName="Limit")
    before = db_rows()

    # when
    response = api.patch_json(_url(created["id"]), changes, **acme.platform_headers)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert db_rows() == before


def test_delete_removes_a_definition_no_user_has_a_value_for(api, acme):
    # given
    created = _created(api, acme, name="region", type="string")

    # when
    response = api.delete(_url(created["id"]), **acme.platform_headers)

    # then
    assert response.status_code == 204
    assert response.content == b""
    assert not AttributeDefinition.objects.filter(pk=created["id"]).exists()


def test_delete_of_a_definition_users_hold_values_for_is_400_until_the_values_are_cleared(api, acme):
    # given: two viewers hold a value (the documented policy: values never vanish silently)
    created = _created(api, acme, name="region", type="string")
    for viewer in ["alice", "bob"]:
        mint_ok(api, acme, externalId=viewer, userAttributes=[{"name": "region", "value": "emea"}])
    before = db_rows()

    # when
    refused = api.delete(_url(created["id"]), **acme.platform_headers)

    # then
    assert refused.status_code == 400
    assert refused.json() == {"error": "User attribute 'region' still has values for 2 user(s); clear them first"}
    assert db_rows() == before

    # when: null clears a value
    for viewer in ["alice", "bob"]:
        mint_ok(api, acme, externalId=viewer, userAttributes=[{"name": "region", "value": None}])
    deleted = api.delete(_url(created["id"]), **acme.platform_headers)

    # then
    assert deleted.status_code == 204
    assert not AttributeDefinition.objects.filter(pk=created["id"]).exists()
