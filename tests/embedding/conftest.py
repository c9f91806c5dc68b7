"""Fixtures of the embedding tests: callers of generate-session, exchange and the Platform API.

Everything goes through HTTP, as a host back end and an administrator would; the ``Cast`` fixtures
(``acme``, ``globex``) come from ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.http import HttpResponse

from tests.conftest import Cast, JsonClient
from tests.embedding.support import (
    GENERATE_URL,
    SCIM_GROUPS_URL,
    TENANT_SETTINGS_URL,
    TOKEN_URL,
    USER_ATTRIBUTES_URL,
    decode_embed_token,
)


@pytest.fixture
def generate(api: JsonClient) -> Callable[..., HttpResponse]:
    """``generate(cast, externalId="alice", ...)``: POST generate-session with the cast's admin key.

    ``deploymentId`` defaults to the cast's deployment; ``headers=`` replaces the admin key.
    """

    def call(cast: Cast, *, headers: dict[str, str] | None = None, **fields: Any) -> HttpResponse:
        body = {"deploymentId": cast.deployment.pk, **fields}
        return api.post_json(GENERATE_URL, body, **(cast.api_key_headers if headers is None else headers))

    return call


@pytest.fixture
def new_session(generate) -> Callable[..., str]:
    """``new_session(cast, externalId=...)``: a sessionId of a request that must succeed."""

    def call(cast: Cast, **fields: Any) -> str:
        response = generate(cast, **fields)
        assert response.status_code == 200, response.content
        return response.json()["sessionId"]

    return call


@pytest.fixture
def exchange(api: JsonClient) -> Callable[[str], HttpResponse]:
    """``exchange(session_id)``: POST session/token (no credential: the sessionId is one)."""

    def call(session_id: str) -> HttpResponse:
        return api.post_json(TOKEN_URL, {"sessionId": session_id})

    return call


@pytest.fixture
def embed_claims(new_session, exchange) -> Callable[..., dict[str, Any]]:
    """``embed_claims(cast, externalId=...)``: generate, exchange and verify; the token's payload."""

    def call(cast: Cast, **fields: Any) -> dict[str, Any]:
        response = exchange(new_session(cast, **fields))
        assert response.status_code == 200, response.content
        return decode_embed_token(response.json()["token"], secret=cast.created.deployment_api_secret)

    return call


@pytest.fixture
def patch_tenant_settings(api: JsonClient) -> Callable[..., dict[str, Any]]:
    """``patch_tenant_settings(cast, maxExternalUsers=5)`` through the Platform API."""

    def call(cast: Cast, **changes: Any) -> dict[str, Any]:
        response = api.patch_json(TENANT_SETTINGS_URL, changes, **cast.platform_headers)
        assert response.status_code == 200, response.content
        return response.json()

    return call


@pytest.fixture
def tenant_attribute(api: JsonClient) -> Callable[..., dict[str, Any]]:
    """``tenant_attribute(cast, "region", "string")``: a tenant-wide attribute definition."""

    def call(cast: Cast, name: str, type_: str, **fields: Any) -> dict[str, Any]:
        body = {"name": name, "type": type_, **fields}
        response = api.post_json(USER_ATTRIBUTES_URL, body, **cast.platform_headers)
        assert response.status_code == 201, response.content
        return response.json()

    return call


@pytest.fixture
def tenant_group(api: JsonClient) -> Callable[[Cast, str], dict[str, Any]]:
    """``tenant_group(cast, "sales")``: a tenant-wide group, created through SCIM."""

    def call(cast: Cast, name: str) -> dict[str, Any]:
        response = api.post_json(SCIM_GROUPS_URL, {"displayName": name}, **cast.platform_headers)
        assert response.status_code == 201, response.content
        return response.json()

    return call


@pytest.fixture
def initech(make_account) -> Cast:
    """An account without the ``useCreatorMode`` tenant flag."""
    return make_account("initech", creator_mode=False)
