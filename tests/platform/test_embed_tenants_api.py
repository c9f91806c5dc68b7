"""/api/v1/embed-tenants with a Platform API Bearer token: Cube's shapes (reference 2.6), groups with members,
provisioning embed users one by one and in bulk (partial success, 429 at the user cap), cascade delete."""

from __future__ import annotations

import pytest

from embedadmin.accounts.models import TenantSettings
from embedadmin.directory.models import EmbedTenant, ExternalUser, Group, GroupMembership
from tests.platform.support import EMBED_TENANTS_URL, db_rows, define_in_tenant, mint_ok, tenant_path


def _provision(api, cast, tenant, **body):
    return api.post_json(tenant_path(tenant, "user"), body, **cast.platform_headers)


def _group(api, cast, tenant, name="analysts", **extra):
    response = api.post_json(tenant_path(tenant, "groups"), {"name": name, **extra}, **cast.platform_headers)
    assert response.status_code == 201, response.content
    return response.json()


def test_bearer_list_answers_cubes_embed_tenant_shape_with_user_counts(api, acme, globex):
    # given
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    mint_ok(api, acme, externalId="u2", embedTenantName="north-eu")
    mint_ok(api, acme, externalId="u3", embedTenantName="south-us")
    mint_ok(api, globex, externalId="g", embedTenantName="globex-only")

    # when
    response = api.get(f"{EMBED_TENANTS_URL}?search=north", **acme.platform_headers)

    # then
    tenant = EmbedTenant.objects.get(account=acme.account, name="north-eu")
    assert response.status_code == 200
    assert response.json() == {
        "items": [
            {
                "id": tenant.pk,
                "name": "north-eu",
                "displayName": "north-eu",
                "userCount": 2,
                "createdAt": tenant.created_at.isoformat().replace("+00:00", "Z"),
            }
        ],
        "pageInfo": {"hasNextPage": False, "endCursor": response.json()["pageInfo"]["endCursor"]},
    }


def test_api_key_callers_keep_the_spec_4_3_shape(api, acme):
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    body = api.get(EMBED_TENANTS_URL, **acme.api_key_headers).json()
    assert set(body["items"][0]) == {"id", "name", "createdAt"}


def test_group_create_get_patch_and_delete(api, acme):
    # given
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")

    # when
    created = _group(api, acme, "north-eu", description="Reads sales")
    url = tenant_path("north-eu", "groups", created["id"])
    patched = api.patch_json(url, {"description": "Reads everything"}, **acme.platform_headers)
    fetched = api.get(url, **acme.platform_headers)
    deleted = api.delete(url, **acme.platform_headers)

    # then
    assert created == {"id": created["id"], "name": "analysts", "description": "Reads sales", "userCount": 0}
    assert patched.status_code == 200
    assert fetched.json() == {**created, "description": "Reads everything"}
    assert deleted.status_code == 204
    assert not Group.objects.filter(pk=created["id"]).exists()


@pytest.mark.parametrize(
    ("body", "message_part"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "system:admins"}, "system:"),
        ({"name": "ok", "description": "d" * 501}, "description"),
        ({"name": "ok", "extra": 1}, "extra"),
        ([], "JSON object"),
    ],
)
def test_an_invalid_group_is_400_and_nothing_changes(api, acme, body, message_part):
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    before = db_rows()
    response = api.post_json(tenant_path("north-eu", "groups"), body, **acme.platform_headers)
    assert response.status_code == 400
    assert message_part in str(response.json())
    assert db_rows() == before


def test_patch_changes_the_description_only(api, acme):
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    group = _group(api, acme, "north-eu")
    before = db_rows()
    response = api.patch_json(
        tenant_path("north-eu", "groups", group["id"]), {"name": "renamed"}, **acme.platform_headers
    )
    assert response.status_code == 400
    assert db_rows() == before


def test_members_add_list_remove_and_a_group_with_members_is_not_deleted(api, acme):
    # given
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    mint_ok(api, acme, externalId="u2", embedTenantName="north-eu")
    group = _group(api, acme, "north-eu")
    url = tenant_path("north-eu", "groups", group["id"], "users")
    u2 = ExternalUser.objects.get(external_id="u2")

    # when
    added = api.post_json(url, {"members": [{"externalId": "U1"}, {"embedUserId": u2.pk}]}, **acme.platform_headers)
    again = api.post_json(url, {"members": [{"externalId": "u1"}]}, **acme.platform_headers)
    listed = api.get(url, **acme.platform_headers)
    refused = api.delete(tenant_path("north-eu", "groups", group["id"]), **acme.platform_headers)
    removed = api.generic(
        "DELETE", url, '{"members": [{"externalId": "u1"}]}', "application/json", **acme.platform_headers
    )

    # then
    assert added.json() == {"addedMembers": 2, "unchangedMembers": 0}
    assert again.json() == {"addedMembers": 0, "unchangedMembers": 1}
    assert [u["externalId"] for u in listed.json()["items"]] == ["u1", "u2"]
    assert refused.status_code == 400
    assert removed.json() == {"removedMembers": 1, "unchangedMembers": 0}
    assert list(GroupMembership.objects.values_list("user__external_id", flat=True)) == ["u2"]


@pytest.mark.parametrize(
    "body",
    [
        {"members": []},
        {"members": [{}]},
        {"members": [{"externalId": "u1", "embedUserId": 1}]},
        {"members": [{"externalId": "nobody"}]},
        {"members": [{"externalId": "u1"}] * 1001},
    ],
)
def test_invalid_members_are_400_and_nothing_changes(api, acme, body):
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    group = _group(api, acme, "north-eu")
    before = db_rows()
    response = api.post_json(tenant_path("north-eu", "groups", group["id"], "users"), body, **acme.platform_headers)
    assert response.status_code == 400
    assert db_rows() == before


def test_another_accounts_user_cannot_be_added_as_a_member(api, acme, globex):
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    mint_ok(api, globex, externalId="stranger", embedTenantName="north-eu")
    group = _group(api, acme, "north-eu")
    stranger = ExternalUser.objects.get(external_id="stranger")
    before = db_rows()
    response = api.post_json(
        tenant_path("north-eu", "groups", group["id"], "users"),
        {"members": [{"embedUserId": stranger.pk}]},
        **acme.platform_headers,
    )
    assert response.status_code == 400
    assert db_rows() == before


def test_provision_creates_then_updates_an_embed_user_with_groups(api, acme):
    # given: a tenant-wide group and a tenant group
    define_in_tenant(api, acme, "north-eu", groups=["sales"])
    api.post_json("/api/scim/v2/Groups", {"displayName": "everyone"}, **acme.platform_headers)

    # when
    created = _provision(
        api,
        acme,
        "north-eu",
        externalId="Alice",
        email="alice@acme.test",
        groups=["everyone"],
        tenantGroups=["sales"],
        userProfile={"displayName": "Alice A."},
    )
    updated = _provision(api, acme, "north-eu", externalId="alice", email="alice@new.test")

    # then
    user = ExternalUser.objects.get(account=acme.account, external_id="alice")
    assert created.status_code == 201
    assert created.json() == {
        "id": user.pk,
        "username": "alice",
        "email": "alice@acme.test",
        "externalId": "alice",
        "firstName": "Alice A.",
        "createdAt": user.created_at.isoformat().replace("+00:00", "Z"),
        "lastLogin": None,
    }
    assert updated.status_code == 200
    assert updated.json()["email"] == "alice@new.test"
    assert sorted(user.groups.values_list("name", flat=True)) == ["everyone", "sales"]
    assert TenantSettings.objects.get(account=acme.account).external_user_count == 2  # the definer and alice


def test_provision_with_an_unknown_group_is_400_and_writes_nothing(api, acme):
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    before = db_rows()
    response = _provision(api, acme, "north-eu", externalId="bob", tenantGroups=["nope"])
    assert response.status_code == 400
    assert db_rows() == before


def test_provision_at_the_user_cap_is_429_and_writes_nothing(api, acme):
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    TenantSettings.objects.filter(account=acme.account).update(max_external_users=1)
    before = db_rows()
    response = _provision(api, acme, "north-eu", externalId="bob")
    assert response.status_code == 429
    assert db_rows() == before


def test_bulk_provisions_each_user_alone_with_partial_success(api, acme):
    # given: room for two more users
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    TenantSettings.objects.filter(account=acme.account).update(max_external_users=3)
    users = [{"externalId": "a"}, {"externalId": "b", "tenantGroups": ["nope"]}, {"externalId": "c"}]
    users += [{"externalId": "d"}, {"externalId": 5}]

    # when
    response = api.post_json(tenant_path("north-eu", "users"), {"users": users}, **acme.platform_headers)

    # then
    body = response.json()
    assert response.status_code == 200
    assert [u["externalId"] for u in body["succeeded"]] == ["a", "c"]
    assert [(f["externalId"], f["error"]["status"]) for f in body["failed"]] == [("b", 400), ("d", 429), (None, 400)]
    assert sorted(ExternalUser.objects.values_list("external_id", flat=True)) == ["a", "c", "u1"]
    listed = api.get(tenant_path("north-eu", "users"), **acme.platform_headers).json()
    assert [u["externalId"] for u in listed["items"]] == ["a", "c", "u1"]


def test_bulk_with_no_room_for_anyone_is_429(api, acme):
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    TenantSettings.objects.filter(account=acme.account).update(max_external_users=1)
    response = api.post_json(
        tenant_path("north-eu", "users"), {"users": [{"externalId": "a"}]}, **acme.platform_headers
    )
    assert response.status_code == 429
    assert response.json()["succeeded"] == []


@pytest.mark.parametrize("body", [{"users": []}, {"users": [{"externalId": "x"}] * 101}, {"people": []}, []])
def test_an_invalid_bulk_is_400_and_writes_nothing(api, acme, body):
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    before = db_rows()
    response = api.post_json(tenant_path("north-eu", "users"), body, **acme.platform_headers)
    assert response.status_code == 400
    assert db_rows() == before


def test_delete_cascades_gives_back_the_users_places_and_is_idempotent(api, acme, globex):
    # given
    define_in_tenant(api, acme, "north-eu", groups=["sales"], attributes=[("region", "string")])
    mint_ok(api, acme, externalId="u2", embedTenantName="south-us")
    mint_ok(api, globex, externalId="g", embedTenantName="north-eu")

    # when
    first = api.delete(tenant_path("north-eu"), **acme.platform_headers)
    second = api.delete(tenant_path("north-eu"), **acme.platform_headers)

    # then
    assert (first.status_code, second.status_code) == (204, 204)
    assert list(EmbedTenant.objects.filter(account=acme.account).values_list("name", flat=True)) == ["south-us"]
    assert list(ExternalUser.objects.filter(account=acme.account).values_list("external_id", flat=True)) == ["u2"]
    assert TenantSettings.objects.get(account=acme.account).external_user_count == 1
    assert EmbedTenant.objects.filter(account=globex.account, name="north-eu").exists()


def test_delete_with_a_non_canonical_name_is_400(api, acme):
    mint_ok(api, acme, externalId="u1", embedTenantName="north-eu")
    before = db_rows()
    response = api.delete(tenant_path("North-EU"), **acme.platform_headers)
    assert response.status_code == 400
    assert db_rows() == before


ROUTES = [
    ("get", "groups", None),
    ("post", "groups", {"name": "x"}),
    ("get", "groups/{group}", None),
    ("patch", "groups/{group}", {"description": "x"}),
    ("delete", "groups/{group}", None),
    ("get", "groups/{group}/users", None),
    ("post", "groups/{group}/users", {"members": [{"externalId": "u1"}]}),
    ("post", "user", {"externalId": "x"}),
    ("get", "users", None),
    ("post", "users", {"users": [{"externalId": "x"}]}),
    ("get", "user-attributes", None),
]


@pytest.mark.parametrize(("method", "rest", "body"), ROUTES)
@pytest.mark.parametrize("headers", ["platform_headers", "api_key_headers"])
def test_another_accounts_tenant_is_404_on_every_route_and_nothing_changes(
    api, acme, globex, method, rest, body, headers
):
    # given: acme's tenant; globex calls it by name (and by acme's group id)
    define_in_tenant(api, acme, "north-eu", groups=["sales"])
    group = Group.objects.get(account=acme.account)
    url = tenant_path("north-eu", rest.format(group=group.pk))
    before = db_rows()

    # when
    if body is None:
        response = getattr(api, method)(url, **getattr(globex, headers))
    else:
        send = api.post_json if method == "post" else api.patch_json
        response = send(url, body, **getattr(globex, headers))

    # then
    assert response.status_code == 404
    assert db_rows() == before


def test_another_accounts_group_is_404_through_a_same_named_own_tenant(api, acme, globex):
    define_in_tenant(api, acme, "north-eu", groups=["sales"])
    mint_ok(api, globex, externalId="g", embedTenantName="north-eu")
    group = Group.objects.get(account=acme.account)
    before = db_rows()
    for method in ("get", "delete"):
        response = getattr(api, method)(tenant_path("north-eu", "groups", group.pk), **globex.platform_headers)
        assert response.status_code == 404
    response = api.get(tenant_path("north-eu", "groups", group.pk, "users"), **globex.platform_headers)
    assert response.status_code == 404
    assert db_rows() == before
