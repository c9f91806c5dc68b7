"""Embed-tenant admin (spec 4.3): list tenants, their groups and attributes; delete groups and attributes.

Tenants, groups and attributes come into being through creator-mode generate-session, as in production.
Policy under test: a group with members, or an attribute users hold values for, is not deleted (400,
nothing changes) until generate-session has cleared the memberships or values.
"""

from __future__ import annotations

import pytest

from embedadmin.accounts import services as accounts
from embedadmin.directory.models import AttributeDefinition, EmbedTenant, Group
from tests.platform.support import (
    BAD_CURSOR,
    BAD_PAGE_QUERIES,
    EMBED_TENANTS_URL,
    db_rows,
    define_in_tenant,
    mint_ok,
    names,
    tenant_path,
    walk_pages,
)


def _tenant_item(name: str, cast) -> dict:
    tenant = EmbedTenant.objects.get(account=cast.account, name=name)
    return {"id": tenant.pk, "name": name, "createdAt": tenant.created_at.isoformat().replace("+00:00", "Z")}


def _group_item(group: Group, member_count: int) -> dict:
    return {
        "id": group.pk,
        "name": group.name,
        "description": group.description,
        "memberCount": member_count,
        "createdAt": group.created_at.isoformat().replace("+00:00", "Z"),
    }


def _attribute_item(definition: AttributeDefinition) -> dict:
    return {
        "id": definition.pk,
        "name": definition.name,
        "type": definition.type,
        "displayName": definition.display_name,
        "defaultValue": definition.default_value,
        "description": definition.description,
    }


TENANT_NAMES = ["north-eu", "acme-west", "south-us", "acme-east", "central", "beta-acme", "zeta-one"]


def test_list_walks_every_tenant_exactly_once_in_name_order(api, acme, globex):
    # given: tenants of globex are never listed for acme
    for name in TENANT_NAMES:
        mint_ok(api, acme, externalId=f"user-{name}", embedTenantName=name)
    mint_ok(api, globex, externalId="g", embedTenantName="globex-only")

    # when
    pages = walk_pages(api, EMBED_TENANTS_URL, first=3, headers=acme.api_key_headers)

    # then
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [item for page in pages for item in page] == [_tenant_item(n, acme) for n in sorted(TENANT_NAMES)]


@pytest.mark.parametrize(
    ("search", "expected"),
    [
        ("acme", ["acme-east", "acme-west", "beta-acme"]),
        ("ACME", ["acme-east", "acme-west", "beta-acme"]),
        ("  Acme ", ["acme-east", "acme-west", "beta-acme"]),
        ("-e", ["acme-east", "north-eu"]),
        ("nothing", []),
        ("", sorted(TENANT_NAMES)),
    ],
)
def test_search_is_a_case_insensitive_substring_match(api, acme, search, expected):
    # given
    for name in TENANT_NAMES:
        mint_ok(api, acme, externalId=f"user-{name}", embedTenantName=name)

    # when
    response = api.get(EMBED_TENANTS_URL, {"search": search}, **acme.api_key_headers)

    # then
    assert response.status_code == 200
    assert names(response.json()["items"]) == expected


def test_search_pages_like_the_plain_list(api, acme):
    # given
    for name in TENANT_NAMES:
        mint_ok(api, acme, externalId=f"user-{name}", embedTenantName=name)

    # when
    pages = walk_pages(api, f"{EMBED_TENANTS_URL}?search=acme", first=2, headers=acme.api_key_headers)

    # then
    assert [names(page) for page in pages] == [["acme-east", "acme-west"], ["beta-acme"]]


def test_groups_list_walks_the_tenants_groups_newest_first_with_member_counts(api, acme):
    # given: two tenants with their own groups; alice and bob join two groups of tenant-one
    group_names = [f"group-{i}" for i in range(7)]
    define_in_tenant(api, acme, "tenant-one", groups=group_names)
    define_in_tenant(api, acme, "tenant-two", groups=["group-0", "elsewhere"])
    for viewer in ["alice", "bob"]:
        mint_ok(api, acme, externalId=viewer, creatorMode=True, embedTenantName="tenant-one", groups=["group-2"])
    mint_ok(api, acme, externalId="carol", creatorMode=True, embedTenantName="tenant-one", groups=["group-5"])

    # when
    pages = walk_pages(api, tenant_path("tenant-one", "groups"), first=3, headers=acme.api_key_headers)

    # then
    groups = Group.objects.filter(embed_tenant__name="tenant-one").order_by("-id")
    counts = {"group-2": 2, "group-5": 1}
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [item for page in pages for item in page] == [_group_item(g, counts.get(g.name, 0)) for g in groups]


def test_attributes_list_walks_the_tenants_definitions_by_name(api, acme, globex):
    # given
    attributes = [("region", "string"), ("limit", "number"), ("tags", "string_array"), ("ids", "number_array")]
    define_in_tenant(
        api,
        acme,
        "tenant-one",
        attributes=attributes,
        userAttributes=[{"name": "region", "value": "emea"}],
    )
    define_in_tenant(api, acme, "tenant-two", attributes=[("other", "string")])
    define_in_tenant(api, globex, "tenant-one", attributes=[("globex-attr", "string")])

    # when
    pages = walk_pages(api, tenant_path("tenant-one", "user-attributes"), first=3, headers=acme.api_key_headers)

    # then
    expected = AttributeDefinition.objects.filter(account=acme.account, embed_tenant__name="tenant-one")
    assert [names(page) for page in pages] == [["ids", "limit", "region"], ["tags"]]
    assert [item for page in pages for item in page] == [_attribute_item(d) for d in expected.order_by("name")]


def test_the_tenant_name_in_the_path_is_case_insensitive(api, acme):
    # given
    define_in_tenant(api, acme, "tenant-one", groups=["g"])

    # when
    response = api.get(tenant_path("Tenant-ONE", "groups"), **acme.api_key_headers)

    # then
    assert response.status_code == 200
    assert names(response.json()["items"]) == ["g"]


@pytest.mark.parametrize("kind", ["groups", "user-attributes"])
def test_an_empty_tenant_lists_nothing(api, acme, kind):
    # given
    mint_ok(api, acme, externalId="alice", embedTenantName="tenant-one")

    # when
    response = api.get(tenant_path("tenant-one", kind), **acme.api_key_headers)

    # then
    assert response.status_code == 200
    assert response.json() == {"items": [], "pageInfo": {"hasNextPage": False, "endCursor": None}}


LIST_URLS = [EMBED_TENANTS_URL, tenant_path("tenant-one", "groups"), tenant_path("tenant-one", "user-attributes")]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        *BAD_PAGE_QUERIES,
        ("after=WyJhXHUwMDAwIiwxXQ", BAD_CURSOR),  # ["a\u0000",1]: a NUL never reaches SQL
        ("after=W251bGwsMV0", BAD_CURSOR),  # [null,1]
        ("after=WzEsMl0", BAD_CURSOR),  # [1,2]: a number where a name goes, or too many values
    ],
)
@pytest.mark.parametrize("url", LIST_URLS)
def test_a_bad_first_or_cursor_is_400(api, acme, url, query, message):
    # given
    define_in_tenant(api, acme, "tenant-one", groups=["g"], attributes=[("a", "string")])

    # when
    response = api.get(f"{url}?{query}", **acme.api_key_headers)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": message}


def test_deleting_a_group_with_members_is_400_until_generate_session_clears_them(api, acme):
    # given
    define_in_tenant(api, acme, "tenant-one", groups=["sales", "ops"])
    for viewer in ["alice", "bob"]:
        mint_ok(api, acme, externalId=viewer, creatorMode=True, embedTenantName="tenant-one", groups=["sales", "ops"])
    sales = Group.objects.get(embed_tenant__name="tenant-one", name="sales")
    before = db_rows()

    # when
    refused = api.delete(tenant_path("tenant-one", "groups", sales.pk), **acme.api_key_headers)

    # then
    assert refused.status_code == 400
    assert refused.json() == {"error": "Group 'sales' still has 2 member(s); remove them first"}
    assert db_rows() == before

    # when: groups [] clears each viewer's memberships in the tenant
    for viewer in ["alice", "bob"]:
        mint_ok(api, acme, externalId=viewer, creatorMode=True, embedTenantName="tenant-one", groups=[])
    deleted = api.delete(tenant_path("tenant-one", "groups", sales.pk), **acme.api_key_headers)

    # then
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert list(Group.objects.filter(embed_tenant__name="tenant-one").values_list("name", flat=True)) == ["ops"]


def test_deleting_an_attribute_with_values_is_400_until_generate_session_clears_them(api, acme):
    # given
    define_in_tenant(
        api, acme, "tenant-one", attributes=[("region", "string")], userAttributes=[{"name": "region", "value": "eu"}]
    )
    region = AttributeDefinition.objects.get(embed_tenant__name="tenant-one", name="region")
    before = db_rows()

    # when
    refused = api.delete(tenant_path("tenant-one", "user-attributes", region.pk), **acme.api_key_headers)

    # then
    assert refused.status_code == 400
    assert refused.json() == {"error": "User attribute 'region' still has values for 1 user(s); clear them first"}
    assert db_rows() == before

    # when: a null value clears it
    mint_ok(
        api,
        acme,
        externalId="definer",
        creatorMode=True,
        embedTenantName="tenant-one",
        userAttributes=[{"name": "region", "value": None}],
    )
    deleted = api.delete(tenant_path("tenant-one", "user-attributes", region.pk), **acme.api_key_headers)

    # then
    assert deleted.status_code == 204
    assert not AttributeDefinition.objects.filter(pk=region.pk).exists()


def test_deleting_an_unused_group_and_attribute_is_204(api, acme):
    # given
    define_in_tenant(api, acme, "tenant-one", groups=["g"], attributes=[("a", "number")])
    group = Group.objects.get(name="g")
    definition = AttributeDefinition.objects.get(name="a")

    # when
    responses = [
        api.delete(tenant_path("tenant-one", "groups", group.pk), **acme.api_key_headers),
        api.delete(tenant_path("tenant-one", "user-attributes", definition.pk), **acme.api_key_headers),
    ]

    # then
    assert [r.status_code for r in responses] == [204, 204]
    assert (Group.objects.count(), AttributeDefinition.objects.count()) == (0, 0)


@pytest.mark.parametrize(("kind", "label"), [("groups", "Group"), ("user-attributes", "User attribute")])
def test_an_id_outside_the_tenant_is_404_and_deletes_nothing(api, acme, kind, label):
    # given: the same names in tenant-two and tenant-wide; only tenant-one is addressed
    define_in_tenant(api, acme, "tenant-one", groups=["g"], attributes=[("a", "string")])
    define_in_tenant(api, acme, "tenant-two", groups=["g"], attributes=[("a", "string")])
    api.post_json("/api/scim/v2/Groups", {"displayName": "g"}, **acme.platform_headers)
    api.post_json("/api/v1/user-attributes", {"name": "a", "type": "string"}, **acme.platform_headers)
    model = Group if kind == "groups" else AttributeDefinition
    outside = [row.pk for row in model.objects.exclude(embed_tenant__name="tenant-one")]
    before = db_rows()

    for row_id in [*outside, 999999]:
        # when
        response = api.delete(tenant_path("tenant-one", kind, row_id), **acme.api_key_headers)

        # then
        assert response.status_code == 404
        assert response.json() == {"error": f"{label} {row_id} not found in embed tenant tenant-one"}
    beyond_a_bigint = api.delete(tenant_path("tenant-one", kind, 10**30), **acme.api_key_headers)
    assert (beyond_a_bigint.status_code, beyond_a_bigint.json()) == (404, {"error": "Not found"})  # no route takes it
    assert len(outside) == 2
    assert db_rows() == before


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", tenant_path("no-such-tenant", "groups")),
        ("get", tenant_path("no-such-tenant", "user-attributes")),
        ("delete", tenant_path("no-such-tenant", "groups", 1)),
        ("delete", tenant_path("no-such-tenant", "user-attributes", 1)),
    ],
)
def test_an_unknown_tenant_is_404(api, acme, method, path):
    # when
    response = getattr(api, method)(path, **acme.api_key_headers)

    # then
    assert response.status_code == 404
    assert response.json() == {"error": "Embed tenant 'no-such-tenant' not found"}


ALL_ENDPOINTS = [
    ("get", EMBED_TENANTS_URL),
    ("get", tenant_path("tenant-one", "groups")),
    ("delete", tenant_path("tenant-one", "groups", "{group}")),
    ("get", tenant_path("tenant-one", "user-attributes")),
    ("delete", tenant_path("tenant-one", "user-attributes", "{attribute}")),
]


def _credential(cast, kind: str) -> dict[str, str]:
    if kind == "personal":
        owner = cast.account.memberships.get().user
        key, _ = accounts.api_key_create(account=cast.account, personal_owner=owner)
        return {"HTTP_AUTHORIZATION": f"Api-Key {key}"}
    if kind == "revoked":
        key, row = accounts.api_key_create(account=cast.account)
        accounts.api_key_revoke(key=row)
        return {"HTTP_AUTHORIZATION": f"Api-Key {key}"}
    if kind == "basic":
        return {"HTTP_AUTHORIZATION": "Basic dXNlcjpwdw=="}
    return {}


@pytest.mark.parametrize(
    ("kind", "status", "message"),
    [
        ("personal", 403, "This endpoint requires an admin API key; personal API keys are not allowed"),
        ("revoked", 401, "Invalid or revoked API key"),
        ("basic", 401, "Authorization header must be 'Api-Key <key>' or 'Bearer <token>'"),
        ("none", 401, "Missing Authorization header: expected 'Api-Key <key>' or 'Bearer <token>'"),
    ],
)
# A platform token (Bearer) is accepted on these routes too: tests/platform/test_embed_tenants_api.py.
@pytest.mark.parametrize(("method", "path"), ALL_ENDPOINTS)
def test_only_an_admin_api_key_or_a_platform_token_is_accepted(api, acme, kind, status, message, method, path):
    # given
    define_in_tenant(api, acme, "tenant-one", groups=["g"], attributes=[("a", "string")])
    url = path.format(group=Group.objects.get().pk, attribute=AttributeDefinition.objects.get().pk)
    headers = _credential(acme, kind)
    before = db_rows()

    # when
    response = getattr(api, method)(url, **headers)

    # then
    assert response.status_code == status
    assert response.json() == {"error": message}
    assert db_rows() == before
