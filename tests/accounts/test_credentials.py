"""Credentials are stored as digests only, compared in constant time, and never accepted as another kind."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import ApiKey, PlatformToken
from embedadmin.core import credentials
from tests.platform.support import (
    EMBED_TENANTS_URL,
    GENERATE_URL,
    SCIM_GROUPS_URL,
    TENANT_SETTINGS_URL,
    USER_ATTRIBUTES_URL,
    db_rows,
    mint_ok,
)


def _tables_containing(text: str) -> list[str]:
    """Every table of the database (ours, Django's, Celery's) with a row whose text contains ``text``."""
    found = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            if any(text in str(row) for row in cursor.fetchall()):
                found.append(table)
    return found


def test_no_table_holds_a_secret_in_clear(api, acme):
    # given: every kind of secret the product hands out, including a key minted later and a session
    extra_key, _ = accounts.api_key_create(account=acme.account, name="extra")
    session_id = mint_ok(api, acme, externalId="alice")
    created = acme.created
    secrets = [
        created.api_key,
        extra_key,
        created.platform_token,
        created.deployment_api_secret,
        created.admin_password,
        session_id,
    ]

    # then: the check itself can see a value that is stored (the username is)
    assert _tables_containing(created.admin_username) != []
    assert {secret: _tables_containing(secret) for secret in secrets} == {secret: [] for secret in secrets}


def test_keys_and_tokens_are_stored_as_their_sha256_digest(acme):
    # when
    key = ApiKey.objects.get(account=acme.account)
    token = PlatformToken.objects.get(account=acme.account)

    # then
    assert key.key_digest == hashlib.sha256(acme.created.api_key.encode()).hexdigest()
    assert token.token_digest == hashlib.sha256(acme.created.platform_token.encode()).hexdigest()


def test_matches_compares_digests_in_constant_time(monkeypatch):
    # given
    compared: list[tuple[str, str]] = []
    real = credentials.hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(credentials.hmac, "compare_digest", spy)
    minted = credentials.mint("eak")

    # when
    results = [credentials.matches(minted.plaintext, minted.digest), credentials.matches("eak_x", minted.digest)]

    # then
    assert results == [True, False]
    assert compared == [(minted.digest, minted.digest), (credentials.digest("eak_x"), minted.digest)]


API_KEY_ENDPOINTS = [("post", GENERATE_URL), ("get", EMBED_TENANTS_URL)]
PLATFORM_ENDPOINTS = [("get", TENANT_SETTINGS_URL), ("get", USER_ATTRIBUTES_URL), ("get", SCIM_GROUPS_URL)]


def _call(api, method: str, url: str, cast, authorization: str):
    headers = {"HTTP_AUTHORIZATION": authorization}
    if method == "post":
        return api.post_json(url, {"deploymentId": cast.deployment.pk, "externalId": "alice"}, **headers)
    return api.get(url, **headers)


def _error(response) -> str:
    """The message of an error: ``error``, or a SCIM error's ``detail`` (RFC 7644 3.12 has no ``error`` member)."""
    body = response.json()
    return body["detail"] if response["Content-Type"] == "application/scim+json" else body["error"]


@pytest.mark.parametrize(("method", "url"), API_KEY_ENDPOINTS)
def test_a_platform_token_presented_as_an_api_key_is_401(api, acme, method, url):
    # given
    before = db_rows()

    # when
    response = _call(api, method, url, acme, f"Api-Key {acme.created.platform_token}")

    # then
    assert response.status_code == 401
    assert _error(response) == "Invalid or revoked API key"
    assert db_rows() == before


@pytest.mark.parametrize(("method", "url"), PLATFORM_ENDPOINTS)
def test_an_api_key_presented_as_a_platform_token_is_401(api, acme, method, url):
    # when
    response = _call(api, method, url, acme, f"Bearer {acme.created.api_key}")

    # then
    assert response.status_code == 401
    assert _error(response) == "Invalid or revoked token"


@pytest.mark.parametrize(("method", "url"), PLATFORM_ENDPOINTS)
def test_a_revoked_platform_token_is_401_and_a_new_one_works(api, acme, method, url):
    # given
    accounts.platform_token_revoke(token=PlatformToken.objects.get(account=acme.account))
    fresh, _ = accounts.platform_token_create(account=acme.account, name="rotated")

    # when
    revoked = _call(api, method, url, acme, f"Bearer {acme.created.platform_token}")
    replaced = _call(api, method, url, acme, f"Bearer {fresh}")

    # then
    assert (revoked.status_code, _error(revoked)) == (401, "Invalid or revoked token")
    assert replaced.status_code == 200


@pytest.mark.parametrize(("method", "url"), API_KEY_ENDPOINTS)
def test_a_revoked_api_key_is_401_and_other_keys_keep_working(api, acme, method, url):
    # given
    other, _ = accounts.api_key_create(account=acme.account, name="other")
    accounts.api_key_revoke(key=ApiKey.objects.get(account=acme.account, name="initial admin key"))

    # when
    revoked = _call(api, method, url, acme, f"Api-Key {acme.created.api_key}")
    kept = _call(api, method, url, acme, f"Api-Key {other}")

    # then
    assert (revoked.status_code, _error(revoked)) == (401, "Invalid or revoked API key")
    assert kept.status_code == 200


# The embed-tenant API takes an admin API key or a platform token.
NOT_A_CREDENTIAL = "Authorization header must be 'Api-Key <key>' or 'Bearer <token>'"


@pytest.mark.parametrize(
    ("authorization", "message"),
    [
        (
            "Api-Key eak_\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00_secret",
            NOT_A_CREDENTIAL,
        ),
        ("Api-Key eak_0123456789ab_sécret", NOT_A_CREDENTIAL),
        ("Api-Key eak_0123456789ab_" + "x" * 43, "Invalid or revoked API key"),
        ("Api-Key ept_0123456789ab_" + "x" * 43, "Invalid or revoked API key"),
    ],
)
def test_a_malformed_api_key_is_401_before_any_lookup(api, acme, authorization, message):
    # when
    response = _call(api, "get", EMBED_TENANTS_URL, acme, authorization)

    # then
    assert (response.status_code, _error(response)) == (401, message)


def test_the_scheme_is_case_insensitive(api, acme):
    # when
    response = _call(api, "get", EMBED_TENANTS_URL, acme, f"api-key {acme.created.api_key}")

    # then
    assert response.status_code == 200
