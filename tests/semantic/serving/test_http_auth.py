"""Who may query the Core Data API, and what they see: the token matrix, and the embed tokens of sessions minted
through the real generate-session flow, whose groups and user attributes the demo model's access policies read."""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.semantic.http_support import (  # noqa: F401
    CoreApi,
    core,
    demo_duckdb,
    duck_rows,
    embed_token,
    fresh_semantic_state,
)
from tests.tokens import sign_token

COUNT = {"measures": ["orders.count"]}
SALES_COUNT = {"measures": ["sales.order_count"]}
SALES_BY_COUNTRY = {"measures": ["sales.order_count"], "dimensions": ["sales.users_country"]}


def _alg_none(core: CoreApi) -> str:
    return sign_token(None, algorithm="none", ttl_s=60, groups=["admin"])


def _expired(core: CoreApi) -> str:
    return sign_token(core.cast.created.deployment_api_secret, ttl_s=-60, groups=["admin"])


def _bad_signature(core: CoreApi) -> str:
    return sign_token("not-the-deployment-secret-not-the-deployment-secret", groups=["admin"])


def _not_yet_valid(core: CoreApi) -> str:
    return sign_token(core.cast.created.deployment_api_secret, groups=["admin"], nbf=int(time.time()) + 600)


def _hs512(core: CoreApi) -> str:
    return sign_token(core.cast.created.deployment_api_secret, algorithm="HS512", groups=["admin"])


@pytest.mark.parametrize(
    "make_token",
    [_alg_none, _expired, _bad_signature, _not_yet_valid, _hs512, lambda core: "not.a.jwt", lambda core: "garbage"],
    ids=["alg-none", "expired", "bad-signature", "not-yet-valid", "hs512", "three-dots", "garbage"],
)
@pytest.mark.parametrize("endpoint", ["load", "meta", "sql", "dry-run"])
def test_an_invalid_token_is_403_invalid_token(core, make_token: Callable[[CoreApi], str], endpoint):
    response = core.get(endpoint, {"query": COUNT}, token=make_token(core))

    assert response.status_code == 403
    assert response.json() == {"error": "Invalid token"}


@pytest.mark.parametrize("endpoint", ["load", "meta", "sql", "dry-run"])
def test_a_missing_token_is_403(core, endpoint):
    response = core.get(endpoint, {"query": COUNT}, token=None)

    assert response.status_code == 403
    assert response.json() == {"error": "Authorization header isn't set"}


def test_a_token_of_another_deployment_is_403(core, globex):
    # given: a perfectly good token, for globex's deployment
    token = sign_token(globex.created.deployment_api_secret, groups=["admin"])

    # when
    response = core.get("load", {"query": COUNT}, token=token)

    # then
    assert response.status_code == 403
    assert response.json() == {"error": "Invalid token"}


@pytest.mark.parametrize("header", ["HTTP_AUTHORIZATION", "HTTP_X_CUBE_AUTHORIZATION"])
@pytest.mark.parametrize("scheme", ["", "Bearer "])
def test_raw_and_bearer_tokens_in_either_header_are_accepted(core, header, scheme):
    response = core.get("load", {"query": COUNT}, token=None, **{header: scheme + core.token()})

    assert response.status_code == 200
    assert response.json()["data"] == [{"orders.count": "2000"}]


# --- embed tokens from generate-session -----------------------------------------------------------------


def test_a_regional_embed_user_sees_only_the_rows_of_their_country(core, embed_token):
    # given
    token, _ = embed_token(groups=["regional"], country="Germany")

    # when
    body = core.load(SALES_BY_COUNTRY, token=token)

    # then
    expected = duck_rows(
        core.dataset, "SELECT count(*) FROM orders JOIN users ON users.id = orders.user_id WHERE country = 'Germany'"
    )[0][0]
    assert body["data"] == [{"sales.users_country": "Germany", "sales.order_count": str(expected)}]


def test_an_admin_embed_user_sees_every_country(core, embed_token):
    token, _ = embed_token(groups=["admin"])

    body = core.load(SALES_BY_COUNTRY, token=token)

    countries = duck_rows(core.dataset, "SELECT count(DISTINCT country) FROM users")[0][0]
    assert len(body["data"]) == countries


def test_members_a_policy_denies_are_absent_from_meta_and_refused_in_load(core, embed_token):
    # given
    regional, _ = embed_token(groups=["regional"], country="France")
    admin, _ = embed_token(groups=["admin"], external_id="ada@example.com")

    # when
    regional_meta = core.get("meta", token=regional).json()
    admin_meta = core.get("meta", token=admin).json()
    refused = core.get("load", {"query": {"dimensions": ["sales.users_email"]}}, token=regional)

    # then
    def members(meta: dict, view: str) -> set[str]:
        cube = next(c for c in meta["cubes"] if c["name"] == view)
        return {m["name"] for m in cube["measures"] + cube["dimensions"]}

    assert "sales.users_email" in members(admin_meta, "sales")
    assert "sales.users_email" not in members(regional_meta, "sales")
    assert "sales.users_full_name" not in members(regional_meta, "sales")
    assert "sales.users_country" in members(regional_meta, "sales")
    assert "product_catalog.revenue" not in members(regional_meta, "product_catalog")
    assert refused.status_code == 403
    assert refused.json() == {"error": "Access denied: 'sales.users_email' is not granted to this viewer"}


def test_an_embed_user_in_no_granted_group_gets_no_rows_of_the_view(core, embed_token):
    token, _ = embed_token(groups=[], country="Germany")

    response = core.get("load", {"query": SALES_BY_COUNTRY}, token=token)
    meta = core.get("meta", token=token).json()

    assert "sales" not in [c["name"] for c in meta["cubes"]]
    assert response.status_code == 403
    assert response.json() == {"error": "Access denied: 'sales.order_count' is not granted to this viewer"}


def test_a_revoked_embed_token_is_403(core, embed_token):
    # given
    token, session_id = embed_token(groups=["admin"])
    assert core.get("load", {"query": SALES_COUNT}, token=token).status_code == 200

    # when
    revoked = core.client.post_json(
        "/api/v1/embed/session/revoke", {"sessionId": session_id}, **core.cast.api_key_headers
    )
    response = core.get("load", {"query": SALES_COUNT}, token=token)

    # then
    assert revoked.status_code == 204
    assert response.status_code == 403
    assert response.json() == {"error": "Invalid token"}


def test_cubesql_applies_the_embed_users_row_filter_and_hidden_members(core, embed_token):
    # given
    token, _ = embed_token(groups=["regional"], country="Germany")

    # when
    rows = core.post(
        "cubesql", {"query": "SELECT users_country, MEASURE(order_count) FROM sales GROUP BY 1"}, token=token
    )
    hidden = core.post("cubesql", {"query": "SELECT users_email FROM sales GROUP BY 1"}, token=token)

    # then
    expected = duck_rows(
        core.dataset, "SELECT count(*) FROM orders JOIN users ON users.id = orders.user_id WHERE country = 'Germany'"
    )[0][0]
    assert rows.status_code == 200
    assert rows.content.decode().splitlines()[1] == f'{{"data":[["Germany","{expected}"]]}}'
    assert hidden.status_code == 400
