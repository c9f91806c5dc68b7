"""Internal users (/api/v1/users) and deployments (/api/v1/deployments/) of the Platform API."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from embedadmin.accounts import services as accounts
from embedadmin.core.pagination import encode_cursor
from tests.platform.support import BAD_CURSOR, BAD_PAGE_QUERIES, DEPLOYMENTS_URL, USERS_URL, db_rows, mint, walk_pages


def _user_item(username: str, *, email: str = "", is_admin: bool = False) -> dict:
    user = get_user_model().objects.get(username=username)
    return {"id": user.pk, "username": username, "email": email, "isAdmin": is_admin, "isActive": True}


def test_create_makes_an_internal_user_of_the_account(api, acme):
    # when
    response = api.post_json(USERS_URL, {"username": "ann", "email": "ann@acme.test"}, **acme.platform_headers)

    # then
    assert response.status_code == 201
    assert response.json() == _user_item("ann", email="ann@acme.test")
    user = get_user_model().objects.get(username="ann")
    assert user.membership.account == acme.account
    assert not user.has_usable_password()


def test_a_created_user_is_usable_as_internal_id_in_generate_session(api, acme):
    # given
    api.post_json(USERS_URL, {"username": "ann", "email": "ann@acme.test"}, **acme.platform_headers)

    # when
    response = mint(api, acme, internalId="ann")

    # then
    assert response.status_code == 200


def test_create_an_admin_user(api, acme):
    # when
    response = api.post_json(USERS_URL, {"username": "boss", "isAdmin": True}, **acme.platform_headers)

    # then
    assert response.status_code == 201
    assert response.json() == _user_item("boss", is_admin=True)


@pytest.mark.parametrize("owner", ["acme", "globex"])
def test_a_duplicate_username_is_409_in_any_account(api, acme, globex, owner):
    # given: usernames are unique install-wide
    cast = {"acme": acme, "globex": globex}[owner]
    api.post_json(USERS_URL, {"username": "ann"}, **cast.platform_headers)
    before = db_rows()

    # when
    response = api.post_json(USERS_URL, {"username": "ann", "email": "x@acme.test"}, **acme.platform_headers)

    # then
    assert response.status_code == 409
    assert response.json() == {"error": "A user named 'ann' already exists"}
    assert db_rows() == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "username: This field is required."),
        ({"username": ""}, "username: This field may not be blank."),
        ({"username": "   "}, "username: This field may not be blank."),
        ({"username": 7}, "username: Not a valid string."),
        (
            {"username": "has space"},
            "username: Enter a valid username. This value may contain only letters, numbers, and @/./+/-/_ characters.",
        ),
        ({"username": "u" * 151}, "username: Ensure this field has no more than 150 characters."),
        ({"username": "ann", "email": "not-an-email"}, "email: Enter a valid email address."),
        ({"username": "ann", "email": 1}, "email: Not a valid string."),
        (
            {"username": "ann", "email": "a" * 60 + "@" + ".".join(["b" * 60] * 4) + ".com"},  # 308 characters
            "email: Ensure this field has no more than 254 characters.",
        ),
        ({"username": "ann", "isAdmin": "yes"}, "isAdmin: Must be a boolean."),
        ({"username": "ann", "password": "x"}, "Unknown fields: password"),
    ],
)
def test_an_invalid_user_is_400_and_writes_nothing(api, acme, body, message):
    # given
    before = db_rows()

    # when
    response = api.post_json(USERS_URL, body, **acme.platform_headers)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert db_rows() == before


def test_list_pages_through_the_accounts_internal_users_only(api, acme, globex):
    # given
    for username in ["u1", "u2", "u3"]:
        api.post_json(USERS_URL, {"username": username}, **acme.platform_headers)
    api.post_json(USERS_URL, {"username": "g1"}, **globex.platform_headers)

    # when
    pages = walk_pages(api, USERS_URL, first=2, headers=acme.platform_headers)

    # then: the account's admin (created with it) first, in id order
    assert pages == [
        [_user_item("acme-admin", is_admin=True), _user_item("u1")],
        [_user_item("u2"), _user_item("u3")],
    ]


def test_deployments_lists_id_and_name_of_the_accounts_deployments(api, acme, globex):
    # given
    second, _ = accounts.deployment_create(account=acme.account, name="Staging", slug="staging")
    third, _ = accounts.deployment_create(account=acme.account, name="Prod EU", slug="prod-eu")

    # when
    pages = walk_pages(api, DEPLOYMENTS_URL, first=2, headers=acme.platform_headers)

    # then
    assert pages == [
        [
            {"id": acme.deployment.pk, "name": "acme default", "slug": "default"},
            {"id": second.pk, "name": "Staging", "slug": "staging"},
        ],
        [{"id": third.pk, "name": "Prod EU", "slug": "prod-eu"}],
    ]


@pytest.mark.parametrize("path", [DEPLOYMENTS_URL, DEPLOYMENTS_URL.rstrip("/")])
def test_deployments_answers_with_and_without_the_trailing_slash(api, acme, path):
    # when
    response = api.get(path, **acme.platform_headers)

    # then
    assert response.status_code == 200
    assert response.json() == {
        "items": [{"id": acme.deployment.pk, "name": "acme default", "slug": "default"}],
        "pageInfo": {"hasNextPage": False, "endCursor": encode_cursor([acme.deployment.pk])},
    }


@pytest.mark.parametrize(
    ("query", "message"),
    [
        *BAD_PAGE_QUERIES,
        ("after=WyJ4Il0", BAD_CURSOR),  # ["x"]: a string where the id is an int
        ("after=WzEsMl0", BAD_CURSOR),  # [1,2]: too many values
    ],
)
@pytest.mark.parametrize("url", [DEPLOYMENTS_URL, USERS_URL])
def test_a_bad_first_or_after_is_400(api, acme, url, query, message):
    # when
    response = api.get(f"{url}?{query}", **acme.platform_headers)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": message}
