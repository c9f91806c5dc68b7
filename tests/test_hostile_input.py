# ruff: noqa: F401, F811  (fixtures imported from http_support are used as test arguments, as pytest wants)
"""Inputs that once broke "no input may produce a 500 or an HTML page from an API" (found by fuzzing every
API in session 6): each now gets a JSON 4XX that names the problem, and changes nothing."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from embedadmin.core.fields import UNPAIRED_SURROGATE, has_lone_surrogate, loads_json
from tests.conftest import Cast, JsonClient
from tests.embedding.support import CONTEXT_URL
from tests.platform.support import EMBED_TENANTS_URL, GENERATE_URL, TENANT_SETTINGS_URL, USER_ATTRIBUTES_URL, db_rows
from tests.semantic.http_support import CoreApi, core, demo_duckdb, fresh_semantic_state
from tests.tokens import sign_token

LONE = "\ud800"  # json.dumps writes it as the escape "\ud800", which json.loads reads back unpaired


def _error(response) -> str:
    assert response["Content-Type"].startswith("application/"), response.content[:200]
    body = response.json()
    return body["error"] if "error" in body else body["detail"]  # SCIM's error shape names it detail


# --- Django's own refusals, before any view -----------------------------------------------------------


@pytest.mark.parametrize("path", ["/d/1/cubejs-api/v1/meta", GENERATE_URL, "/api/scim/v2/Groups", "/livez"])
def test_more_query_parameters_than_django_reads_is_a_json_400(api: JsonClient, path: str):
    query = "&".join(f"a{i}=1" for i in range(1001))

    response = api.get(f"{path}?{query}")

    assert response.status_code == 400
    assert _error(response) == "Bad request: too many query parameters"


def test_a_host_header_outside_allowed_hosts_is_a_json_400(api: JsonClient, settings):
    settings.ALLOWED_HOSTS = ["127.0.0.1"]

    response = api.get("/api/v1/deployments/", HTTP_HOST="evil.example.com")

    assert response.status_code == 400
    assert _error(response) == "Bad request"


# --- tokens and ids -----------------------------------------------------------------------------------


def _unsigned(header: dict[str, Any], claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part(header)}.{part(claims)}.sig"


@pytest.mark.parametrize("alg", [["HS256"], {"a": 1}, 5, None])
def test_a_token_whose_algorithm_is_not_a_string_is_403(core: CoreApi, alg):
    token = _unsigned({"alg": alg, "typ": "JWT"}, {"exp": 9999999999})

    response = core.get("meta", token=token)

    assert response.status_code == 403
    assert _error(response) == "Invalid token"


def test_a_token_with_an_unpaired_surrogate_in_a_claim_is_403(core: CoreApi):
    token = sign_token(core.cast.created.deployment_api_secret, sub="ann", jti=LONE, groups=["admin"])

    response = core.post("load", {"query": {"measures": ["orders.count"]}}, token=token)

    assert response.status_code == 403


@pytest.mark.parametrize("deployment_id", [2**63, 10**30])
def test_a_deployment_id_beyond_a_bigint_is_404(core: CoreApi, deployment_id: int):
    response = core.client.get(f"/d/{deployment_id}/cubejs-api/v1/meta", HTTP_AUTHORIZATION=core.token())

    assert response.status_code == 404
    assert _error(response) == f"Deployment {deployment_id} not found"


@pytest.mark.parametrize("deployment_id", [2**63, 10**30, -1])
def test_an_embed_token_naming_a_deployment_beyond_a_bigint_is_401(api: JsonClient, db, deployment_id: int):
    token = _unsigned({"alg": "HS256", "typ": "JWT"}, {"embed": {"deploymentId": deployment_id}})

    response = api.get(CONTEXT_URL, HTTP_AUTHORIZATION=f"Bearer {token}")

    assert response.status_code == 401
    assert _error(response) == "Not an embed token"


# --- Core Data API queries ----------------------------------------------------------------------------

COUNT = {"measures": ["orders.count"]}


def _ranged(date_range: Any, **extra: Any) -> dict[str, Any]:
    return {**COUNT, "timeDimensions": [{"dimension": "orders.created_at", "dateRange": date_range}], **extra}


OFFSET_MAX = 'Invalid query format: "offset" must be less than or equal to 9223372036854775807'
LATEST = {"member": "orders.created_at", "operator": "inDateRange", "values": ["9999-12-30", "9999-12-31"]}


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({**COUNT, "timezone": []}, '"timezone" must be a valid IANA time zone'),
        ({**COUNT, "timezone": {"a": 1}}, '"timezone" must be a valid IANA time zone'),
        ({**COUNT, "offset": 1e20}, OFFSET_MAX),
        ({**COUNT, "offset": 2**63}, OFFSET_MAX),
        (_ranged("last 10000 years"), "Date out of range: 'last 10000 years'"),
        (_ranged("999999 years ago"), "Date out of range: '999999 years ago'"),
        (_ranged("last 99999999999 days"), "Date out of range: 'last 99999999999 days'"),
        (_ranged("from 9999-12-31 to 9999-12-31"), "Date out of range: 'from 9999-12-31 to 9999-12-31'"),
        (_ranged(["0001-01-01T00:00:00+05:00"]), "Date out of range: '0001-01-01T00:00:00+05:00'"),
        (_ranged(["9999-12-31T23:00:00-05:00"]), "Date out of range: '9999-12-31T23:00:00-05:00'"),
        (
            {**COUNT, "timezone": "America/Los_Angeles", "filters": [LATEST]},
            "Date out of range: '9999-12-31T23:59:59.999'",
        ),
        ({"measures": [f"orders.{LONE}"]}, "Invalid JSON body: " + UNPAIRED_SURROGATE),
        ({**COUNT, "timezone": LONE}, "Invalid JSON body: " + UNPAIRED_SURROGATE),
    ],
)
def test_a_query_the_data_cannot_hold_is_a_400(core: CoreApi, query: dict[str, Any], message: str):
    response = core.post("load", {"query": query})

    assert response.status_code == 400, response.content
    assert _error(response).startswith(message)


def test_the_utf8_bytes_of_a_surrogate_in_a_body_are_a_400(core: CoreApi):
    body = b'{"query": {"measures": ["orders.count"], "timezone": "\xed\xa0\x80"}}'

    response = core.post("load", body)

    assert response.status_code == 400
    assert _error(response).startswith("Invalid JSON body: 'utf-8' codec can't decode")


def test_a_get_query_param_with_an_unpaired_surrogate_is_a_400(core: CoreApi):
    response = core.get("load", {"query": {"measures": [f"orders.{LONE}"]}})

    assert response.status_code == 400
    assert _error(response) == f"Unable to decode query param as JSON, error: {UNPAIRED_SURROGATE}"


def test_year_one_is_a_date_like_any_other(core: CoreApi):
    query = {**COUNT, "timeDimensions": [{"dimension": "orders.created_at", "dateRange": ["0001-01-01", "0001-01-02"]}]}

    body = core.load(query)

    assert body["data"] == [{"orders.count": "0"}]
    assert body["query"]["timeDimensions"][0]["dateRange"] == ["0001-01-01T00:00:00.000", "0001-01-02T23:59:59.999"]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT status FROM orders OFFSET 9223372036854775808", "OFFSET takes an integer of at most"),
        ("SELECT status FROM orders WHERE created_at > NOW() - INTERVAL '99999 years'", "Date out of range"),
        ("SELECT status FROM orders WHERE created_at > NOW() - INTERVAL '999999999999 days'", "Can't parse interval"),
        ("SELECT status FROM orders WHERE created_at > '0001-01-01T00:00:00+05:00'", "Date out of range"),
    ],
)
def test_semantic_sql_the_data_cannot_hold_is_a_400(core: CoreApi, sql: str, message: str):
    response = core.post("cubesql", {"query": sql})

    assert response.status_code == 400, response.content
    assert _error(response).startswith(message)


# --- unpaired surrogates in the administration APIs ---------------------------------------------------


def _surrogate_requests(acme: Cast) -> list[tuple[str, str, Any, dict[str, str]]]:
    deployment = acme.deployment.pk
    return [
        ("post", GENERATE_URL, {"deploymentId": deployment, "externalId": "a", f"x{LONE}": 1}, acme.api_key_headers),
        (
            "post",
            GENERATE_URL,
            {"deploymentId": deployment, "externalId": "ann", "securityContext": {"region": LONE}},
            acme.api_key_headers,
        ),
        ("patch", TENANT_SETTINGS_URL, {LONE: 1}, acme.platform_headers),
        ("post", USER_ATTRIBUTES_URL, {"name": "i", "type": LONE}, acme.platform_headers),
        ("post", "/api/v1/users", {"username": LONE, "email": "a@example.com"}, acme.platform_headers),
        ("post", "/api/scim/v2/Groups", {"displayName": LONE}, acme.platform_headers),
    ]


def test_an_unpaired_surrogate_anywhere_in_a_body_is_a_400_and_writes_nothing(api: JsonClient, acme: Cast):
    before = db_rows()

    for method, path, body, headers in _surrogate_requests(acme):
        response = getattr(api, f"{method}_json")(path, body, **headers)

        assert response.status_code == 400, (path, response.content)
        assert UNPAIRED_SURROGATE in _error(response), path
    assert db_rows() == before


def test_a_cursor_holding_an_unpaired_surrogate_or_a_huge_number_is_a_400(api: JsonClient, acme: Cast):
    cursors = [json.dumps([LONE, 1]).encode(), json.dumps(["a", 2**63]).encode(), b'["\xed\xa0\x80", 1]']

    for raw in cursors:
        after = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        response = api.get(EMBED_TENANTS_URL, {"after": after}, **acme.api_key_headers)

        assert response.status_code == 400, raw
        assert _error(response) == "after is not a valid cursor"


def test_an_error_answer_keeps_the_security_headers(api: JsonClient):
    response = api.get("/api/v1/no-such-endpoint")

    assert response.status_code == 404
    assert _error(response) == "Not found"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"


def test_scim_accepts_its_own_media_type(api: JsonClient, acme: Cast):
    response = api.post(
        "/api/scim/v2/Groups",
        data=json.dumps({"displayName": "from-an-idp"}),
        content_type="application/scim+json",
        **acme.platform_headers,
    )

    assert response.status_code == 201, response.content
    assert response.json()["displayName"] == "from-an-idp"


# --- the helpers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ('{"a": "\\ud800"}', True),
        ('{"\\udc00": 1}', True),
        ('["ok", ["\\ud800x"]]', True),
        ('{"a": "\\ud83d\\ude00"}', False),  # a pair: one emoji
        ('{"a": "\\\\ud800"}', False),  # a backslash, then the letters ud800
        ('{"a": "plain"}', False),
    ],
)
def test_loads_json_refuses_only_unpaired_surrogates(text: str, refused: bool):
    if refused:
        with pytest.raises(ValueError, match="unpaired"):
            loads_json(text)
    else:
        assert not has_lone_surrogate(loads_json(text.encode()))
