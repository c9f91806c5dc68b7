"""Cursor paging (``first``, ``after``) of the Platform API lists added for issue 18: env variables, API keys,
platform tokens, an embed tenant's users and a group's members, and user attributes (with ``name``/``type`` filters
and ``count``). A walk with ``first=2`` meets every item exactly once, in order, and nothing of another account;
a bad ``first`` or ``after`` is 400."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from embedadmin.accounts.models import ApiKey, PlatformToken
from embedadmin.directory.models import ExternalUser
from tests.platform.support import (
    API_KEYS_URL,
    BAD_PAGE_QUERIES,
    PLATFORM_TOKENS_URL,
    USER_ATTRIBUTES_URL,
    db_rows,
    mint_ok,
    tenant_path,
)


def _cursor(values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def _walk(api, url: str, headers: dict[str, str], *, first: int = 2) -> tuple[list[dict[str, Any]], list[dict]]:
    """Every item of every page, following ``pageInfo.endCursor``, and the bodies of the pages."""
    items: list[dict[str, Any]] = []
    bodies: list[dict[str, Any]] = []
    after = None
    separator = "&" if "?" in url else "?"
    for _ in range(100):
        query = f"first={first}" + (f"&after={after}" if after else "")
        response = api.get(f"{url}{separator}{query}", **headers)
        assert response.status_code == 200, response.content
        body = response.json()
        bodies.append(body)
        page = body["items"]
        assert len(page) <= first
        items.extend(page)
        if not body["pageInfo"]["hasNextPage"]:
            return items, bodies
        assert len(page) == first
        after = body["pageInfo"]["endCursor"]
        assert after
    raise AssertionError("the walk did not end")


def _put_env(api, cast, variables: list[tuple[str, str]]):
    body = json.dumps({"env_variables": [{"name": n, "value": v} for n, v in variables]})
    url = f"/api/v1/deployments/{cast.deployment.pk}/env-vars"
    response = api.generic("PUT", url, data=body, content_type="application/json", **cast.platform_headers)
    assert response.status_code == 200, response.content
    return url


def _provision(api, cast, tenant: str, external_id: str) -> int:
    response = api.post_json(tenant_path(tenant, "user"), {"externalId": external_id}, **cast.platform_headers)
    assert response.status_code in (200, 201), response.content
    return response.json()["id"]


def _attribute(api, cast, name: str, type_: str) -> int:
    response = api.post_json(USER_ATTRIBUTES_URL, {"name": name, "type": type_}, **cast.platform_headers)
    assert response.status_code == 201, response.content
    return response.json()["id"]


# --- walks ------------------------------------------------------------------------------------------------------


def test_env_vars_walk_by_name(api, acme, globex):
    # given
    variables = [("ZETA", "z"), ("ALPHA", "a"), ("DB_PASSWORD", "p"), ("MIDDLE", "m"), ("BETA", "b")]
    url = _put_env(api, acme, variables)
    _put_env(api, globex, [("GLOBEX_ONLY", "g")])

    # when
    items, bodies = _walk(api, url, acme.platform_headers)

    # then
    assert [item["name"] for item in items] == ["ALPHA", "BETA", "DB_PASSWORD", "MIDDLE", "ZETA"]
    assert {item["name"]: item["value"] for item in items}["DB_PASSWORD"] == "[ENCRYPTED]"
    assert len(bodies) == 3
    assert all(body["data"] == items for body in bodies)  # Cube's deprecated data: the whole list


@pytest.mark.parametrize(
    ("url", "model", "secret"),
    [(API_KEYS_URL, ApiKey, "key"), (PLATFORM_TOKENS_URL, PlatformToken, "token")],
    ids=["api_keys", "platform_tokens"],
)
def test_credentials_walk_by_id(api, acme, globex, url: str, model: type[ApiKey | PlatformToken], secret: str):
    # given
    for index in range(4):
        created = api.post_json(url, {"name": f"{secret}{index}"}, **acme.platform_headers)
        assert created.status_code == 201
    api.post_json(url, {"name": "theirs"}, **globex.platform_headers)
    expected = list(model.objects.filter(account=acme.account).order_by("pk").values_list("pk", flat=True))
    assert len(expected) >= 5

    # when
    items, _ = _walk(api, url, acme.platform_headers)

    # then
    assert [item["id"] for item in items] == expected
    assert all(secret not in item for item in items)


def test_an_embed_tenants_users_walk_by_external_id(api, acme, globex):
    # given
    mint_ok(api, acme, externalId="mint", embedTenantName="north-eu")
    for external_id in ("eve", "bob", "dan", "amy"):
        _provision(api, acme, "north-eu", external_id)
    mint_ok(api, acme, externalId="elsewhere", embedTenantName="south-us")
    mint_ok(api, globex, externalId="globex-user", embedTenantName="north-eu")

    # when
    items, _ = _walk(api, tenant_path("north-eu", "users"), acme.platform_headers)

    # then
    assert [item["username"] for item in items] == ["amy", "bob", "dan", "eve", "mint"]
    ids = [item["id"] for item in items]
    assert len(set(ids)) == len(ids)
    assert set(ExternalUser.objects.filter(pk__in=ids).values_list("account_id", flat=True)) == {acme.account.pk}


def test_a_groups_members_walk_by_external_id(api, acme, globex):
    # given
    mint_ok(api, acme, externalId="outsider", embedTenantName="north-eu")
    for external_id in ("eve", "bob", "dan", "amy", "cat"):
        _provision(api, acme, "north-eu", external_id)
    group = api.post_json(tenant_path("north-eu", "groups"), {"name": "analysts"}, **acme.platform_headers).json()
    members = [{"externalId": e} for e in ("eve", "bob", "dan", "amy", "cat")]
    url = tenant_path("north-eu", "groups", group["id"], "users")
    added = api.post_json(url, {"members": members}, **acme.platform_headers)
    assert added.json() == {"addedMembers": 5, "unchangedMembers": 0}

    # when
    items, _ = _walk(api, url, acme.platform_headers)

    # then
    assert [item["username"] for item in items] == ["amy", "bob", "cat", "dan", "eve"]
    assert api.get(url, **globex.platform_headers).status_code == 404


def test_user_attributes_walk_by_name_with_count_and_filters(api, acme, globex):
    # given
    for name, type_ in [("region", "string"), ("age", "number"), ("teams", "string_array"), ("zone", "string")]:
        _attribute(api, acme, name, type_)
    _attribute(api, acme, "budget", "number")
    _attribute(api, globex, "globex_only", "string")

    # when
    everything, bodies = _walk(api, USER_ATTRIBUTES_URL, acme.platform_headers)
    strings, string_bodies = _walk(api, f"{USER_ATTRIBUTES_URL}?type=string", acme.platform_headers, first=1)
    named = api.get(f"{USER_ATTRIBUTES_URL}?name=zone", **acme.platform_headers).json()

    # then
    assert [item["name"] for item in everything] == ["age", "budget", "region", "teams", "zone"]
    assert all(body["count"] == 5 for body in bodies)
    assert all(body["data"] == body["items"] for body in bodies)
    assert [item["name"] for item in strings] == ["region", "zone"]
    assert all(body["count"] == 2 for body in string_bodies)
    assert [item["name"] for item in named["items"]] == ["zone"]
    assert named["count"] == 1


def test_user_attributes_filters_that_match_nothing(api, acme):
    _attribute(api, acme, "region", "string")
    for query in ("name=regio", "name=region&type=number", "type=number_array"):
        body = api.get(f"{USER_ATTRIBUTES_URL}?{query}", **acme.platform_headers).json()
        assert (body["items"], body["count"], body["pageInfo"]["hasNextPage"]) == ([], 0, False), query


def test_an_unknown_attribute_type_filter_is_400(api, acme):
    response = api.get(f"{USER_ATTRIBUTES_URL}?type=boolean", **acme.platform_headers)
    assert response.status_code == 400
    assert response.json()["error"].startswith("type must be one of ")


# --- bad first / after ----------------------------------------------------------------------------------------


def _env_vars(api, cast) -> str:
    return _put_env(api, cast, [("A", "1"), ("B", "2")])


def _tenant_users(api, cast) -> str:
    mint_ok(api, cast, externalId="u1", embedTenantName="north-eu")
    return tenant_path("north-eu", "users")


def _group_members(api, cast) -> str:
    mint_ok(api, cast, externalId="u1", embedTenantName="north-eu")
    group = api.post_json(tenant_path("north-eu", "groups"), {"name": "g"}, **cast.platform_headers).json()
    url = tenant_path("north-eu", "groups", group["id"], "users")
    api.post_json(url, {"members": [{"externalId": "u1"}]}, **cast.platform_headers)
    return url


def _attributes(api, cast) -> str:
    _attribute(api, cast, "region", "string")
    return USER_ATTRIBUTES_URL


# Each list, how to reach it, and a well-formed cursor of the wrong type for its ordering key.
LISTS: dict[str, tuple[Callable[[Any, Any], str], str]] = {
    "env-vars": (_env_vars, _cursor([1])),
    "api-keys": (lambda api, cast: "/api/v1/api-keys", _cursor(["a"])),
    "platform-tokens": (lambda api, cast: "/api/v1/platform-tokens", _cursor(["a"])),
    "tenant-users": (_tenant_users, _cursor([1, "a"])),
    "group-members": (_group_members, _cursor(["a"])),
    "user-attributes": (_attributes, _cursor([1, 1])),
}


@pytest.mark.parametrize("which", sorted(LISTS))
@pytest.mark.parametrize(("query", "message"), BAD_PAGE_QUERIES)
def test_a_bad_first_or_after_is_400_and_changes_nothing(api, acme, which, query, message):
    url = LISTS[which][0](api, acme)
    before = db_rows()
    separator = "&" if "?" in url else "?"
    response = api.get(f"{url}{separator}{query}", **acme.platform_headers)
    assert response.status_code == 400, (which, query, response.content)
    assert response.json() == {"error": message}
    assert db_rows() == before


@pytest.mark.parametrize("which", sorted(LISTS))
def test_a_cursor_of_the_wrong_type_for_the_ordering_is_400(api, acme, which):
    make, wrong = LISTS[which]
    url = make(api, acme)
    response = api.get(f"{url}?after={wrong}", **acme.platform_headers)
    assert response.status_code == 400, (which, response.content)
    assert response.json() == {"error": "after is not a valid cursor"}


@pytest.mark.parametrize("which", sorted(LISTS))
def test_the_last_pages_cursor_gives_an_empty_page(api, acme, which):
    url = LISTS[which][0](api, acme)
    items, bodies = _walk(api, url, acme.platform_headers, first=500)
    assert items
    response = api.get(f"{url}?after={bodies[-1]['pageInfo']['endCursor']}", **acme.platform_headers)
    assert response.status_code == 200
    assert response.json()["items"] == []
    assert response.json()["pageInfo"] == {"hasNextPage": False, "endCursor": None}
