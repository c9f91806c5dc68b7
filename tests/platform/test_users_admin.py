"""The Platform API's users admin (``/api/v1/users/{id}``): get, update, deactivate, delete, through the same
services as SCIM; the isolation matrix."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from embedadmin.accounts import services as accounts
from tests.platform.support import USERS_URL, db_rows, mint_ok


@pytest.fixture
def ann(acme):
    return accounts.internal_user_create(account=acme.account, username="ann", email="ann@example.com")


def _item(user, *, is_admin=False, is_active=True, email="ann@example.com"):
    return {
        "id": user.pk,
        "username": user.username,
        "email": email,
        "isAdmin": is_admin,
        "isActive": is_active,
        "role": "admin" if is_admin else "member",
    }


def test_get_one(api, acme, ann):
    response = api.get(f"{USERS_URL}/{ann.pk}", **acme.platform_headers)
    assert response.status_code == 200
    assert response.json() == _item(ann)


@pytest.mark.parametrize(
    ("body", "is_admin", "email"),
    [
        ({"role": "admin"}, True, "ann@example.com"),
        ({"isAdmin": True}, True, "ann@example.com"),
        ({"email": "new@example.com"}, False, "new@example.com"),
        ({"role": "member", "email": ""}, False, ""),
    ],
)
def test_update_email_and_role(api, acme, ann, body, is_admin, email):
    # when
    response = api.patch_json(f"{USERS_URL}/{ann.pk}", body, **acme.platform_headers)

    # then
    ann.refresh_from_db()
    assert response.status_code == 200
    assert response.json() == _item(ann, is_admin=is_admin, email=email)
    assert (ann.membership.is_admin, ann.is_staff, ann.email) == (is_admin, is_admin, email)


@pytest.mark.parametrize(
    "body",
    [
        {"role": "owner"},
        {"isAdmin": "yes"},
        {"email": "nope"},
        {"username": "renamed"},
        {"role": "admin", "isAdmin": False},
        [1],
    ],
)
def test_an_invalid_update_is_400_and_writes_nothing(api, acme, ann, body):
    before = db_rows()
    response = api.patch_json(f"{USERS_URL}/{ann.pk}", body, **acme.platform_headers)
    assert response.status_code == 400
    assert "error" in response.json()
    assert db_rows() == before


@pytest.mark.parametrize("how", ["post", "patch"])
def test_deactivate_revokes_sessions_keys_and_login(api, acme, ann, how):
    # given
    session = mint_ok(api, acme, internalId="ann")
    key, _ = accounts.api_key_create(account=acme.account, personal_owner=ann)

    # when
    if how == "post":
        response = api.post(f"{USERS_URL}/{ann.pk}/deactivate", **acme.platform_headers)
    else:
        response = api.patch_json(f"{USERS_URL}/{ann.pk}", {"isActive": False}, **acme.platform_headers)

    # then
    ann.refresh_from_db()
    assert response.status_code == 200
    assert response.json() == _item(ann, is_active=False)
    assert ann.is_active is False
    assert api.post_json("/api/v1/embed/session/token", {"sessionId": session}).status_code == 401
    assert api.get("/api/v1/api-keys/current", HTTP_AUTHORIZATION=f"Api-Key {key}").status_code == 401


def test_delete_is_204(api, acme, ann):
    session = mint_ok(api, acme, internalId="ann")
    response = api.delete(f"{USERS_URL}/{ann.pk}", **acme.platform_headers)
    assert response.status_code == 204
    assert not get_user_model().objects.filter(pk=ann.pk).exists()
    assert api.post_json("/api/v1/embed/session/token", {"sessionId": session}).status_code == 401
    assert api.get(f"{USERS_URL}/{ann.pk}", **acme.platform_headers).status_code == 404


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("get", "", None),
        ("patch", "", {"role": "admin"}),
        ("delete", "", None),
        ("post", "/deactivate", None),
    ],
)
def test_another_accounts_user_is_404_and_unchanged(api, acme, globex, method, suffix, body):
    # given
    outsider = accounts.internal_user_create(account=globex.account, username="outsider", email="")
    before = db_rows()

    # when
    url = f"{USERS_URL}/{outsider.pk}{suffix}"
    if body is None:
        response = getattr(api, method)(url, **acme.platform_headers)
    else:
        response = api.patch_json(url, body, **acme.platform_headers)

    # then
    assert response.status_code == 404
    assert response.json() == {"error": f"User {outsider.pk} not found"}
    assert db_rows() == before


@pytest.mark.parametrize("user_id", ["999999", "abc", "9" * 30, "-1"])
def test_an_unknown_user_is_404(api, acme, user_id):
    response = api.get(f"{USERS_URL}/{user_id}", **acme.platform_headers)
    assert response.status_code == 404


def test_routes_need_a_platform_token(api, acme, ann):
    assert api.get(f"{USERS_URL}/{ann.pk}").status_code == 401
    assert api.get(f"{USERS_URL}/{ann.pk}", **acme.api_key_headers).status_code == 401
