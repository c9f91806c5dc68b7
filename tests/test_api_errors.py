"""No input makes an API path answer 500 or HTML: every error is JSON, ``{"error": "..."}`` (SCIM adds its
schema fields), with a 4xx status that says what was wrong."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from django.test import Client

from tests.conftest import Cast
from tests.platform.support import (
    GENERATE_URL,
    REVOKE_URL,
    SCIM_ERROR_SCHEMA,
    SCIM_GROUPS_URL,
    TENANT_SETTINGS_URL,
    USER_ATTRIBUTES_URL,
    USERS_URL,
    db_rows,
)


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    auth: str  # "key", "platform" or "none"

    @property
    def scim(self) -> bool:
        return self.path.startswith("/api/scim/")

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.path}"


WRITE_ENDPOINTS = [
    Endpoint("post", GENERATE_URL, "key"),
    Endpoint("post", "/api/v1/embed/session/token", "none"),
    Endpoint("post", REVOKE_URL, "key"),
    Endpoint("patch", TENANT_SETTINGS_URL, "platform"),
    Endpoint("post", USER_ATTRIBUTES_URL, "platform"),
    Endpoint("patch", USER_ATTRIBUTES_URL + "/{attribute}", "platform"),
    Endpoint("post", USERS_URL, "platform"),
    Endpoint("post", SCIM_GROUPS_URL, "platform"),
]


def _headers(cast: Cast, auth: str) -> dict[str, str]:
    return {"key": cast.api_key_headers, "platform": cast.platform_headers, "none": {}}[auth]


@pytest.fixture
def attribute_id(api, acme) -> int:
    response = api.post_json(USER_ATTRIBUTES_URL, {"name": "region", "type": "string"}, **acme.platform_headers)
    return response.json()["id"]


def _send(api, acme: Cast, endpoint: Endpoint, attribute_id: int, data: bytes | str, content_type: str):
    path = endpoint.path.format(attribute=attribute_id)
    return api.generic(endpoint.method.upper(), path, data, content_type, **_headers(acme, endpoint.auth))


def assert_error(response, status: int, message: str | None = None) -> None:
    """A JSON error envelope of ``status``: exactly ``{"error": message}`` (any non-empty message when
    None); on SCIM paths exactly RFC 7644's Error, the message its ``detail``."""
    assert response.status_code == status, response.content
    body = response.json()
    if response["Content-Type"] == "application/scim+json":
        assert body.pop("schemas") == [SCIM_ERROR_SCHEMA]
        assert body.pop("status") == str(status)
        body.pop("scimType", None)
        assert set(body) == {"detail"}  # and no other member
        body = {"error": body["detail"]}
    else:
        assert response["Content-Type"] == "application/json"
    assert set(body) == {"error"}
    assert isinstance(body["error"], str)
    assert body["error"]
    if message is not None:
        assert body["error"] == message


def _nested(depth: int) -> str:
    return '{"deploymentId": 1, "externalId": "a", "securityContext": {"x": ' + "[" * depth + "]" * depth + "}}"


PARSE_ERROR = "Invalid JSON body: JSON parse error - "

UNPARSABLE = [
    ("malformed", b'{"deploymentId": ', PARSE_ERROR + "Expecting value: line 1 column 18 (char 17)"),
    ("trailing garbage", b'{"a": 1} x', PARSE_ERROR + "Extra data: line 1 column 10 (char 9)"),
    ("single quotes", b"{'a': 1}", PARSE_ERROR + "Expecting property name enclosed in double quotes: "
     "line 1 column 2 (char 1)"),
    ("NaN", b'{"deploymentId": NaN}', PARSE_ERROR + "Out of range float values are not JSON compliant: 'NaN'"),
    ("non-UTF-8", b'{"a": "\xff\xfe"}', PARSE_ERROR + "'utf-8' codec can't decode byte 0xff in position 7: "
     "invalid start byte"),
    ("deeply nested array", ("[" * 100_000 + "]" * 100_000).encode(), "Invalid JSON body: nested too deeply"),
    ("deeply nested field", _nested(50_000).encode(), "Invalid JSON body: nested too deeply"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "data", "message"), UNPARSABLE, ids=[u[0] for u in UNPARSABLE])
@pytest.mark.parametrize("endpoint", WRITE_ENDPOINTS, ids=str)
def test_an_unparsable_body_is_400(api, acme, attribute_id, endpoint, label, data, message):
    # given
    before = db_rows()

    # when
    response = _send(api, acme, endpoint, attribute_id, data, "application/json")

    # then
    assert_error(response, 400, message)
    assert db_rows() == before


@pytest.mark.parametrize("endpoint", WRITE_ENDPOINTS, ids=str)
def test_a_body_over_the_upload_limit_is_413(api, acme, attribute_id, endpoint, settings):
    # given
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    data = json.dumps({"deploymentId": acme.deployment.pk, "externalId": "a", "securityContext": {"x": "y" * 2_000}})
    before = db_rows()

    # when
    response = _send(api, acme, endpoint, attribute_id, data, "application/json")

    # then
    assert_error(response, 413, "Request body too large")
    assert db_rows() == before


NOT_AN_OBJECT = [("[]", "list"), ('"x"', "str"), ("5", "int"), ("true", "bool")]


def _not_an_object_message(endpoint: Endpoint, type_name: str) -> str:
    if endpoint.path == TENANT_SETTINGS_URL:
        return "The body must be a JSON object"
    if endpoint.scim:
        return "The body must be a JSON object"
    return f"Invalid data. Expected a dictionary, but got {type_name}."


@pytest.mark.parametrize(("data", "type_name"), NOT_AN_OBJECT, ids=[n[1] for n in NOT_AN_OBJECT])
@pytest.mark.parametrize("endpoint", WRITE_ENDPOINTS, ids=str)
def test_a_json_body_that_is_not_an_object_is_400(api, acme, attribute_id, endpoint, data, type_name):
    # given
    before = db_rows()

    # when
    response = _send(api, acme, endpoint, attribute_id, data, "application/json")

    # then
    assert_error(response, 400, _not_an_object_message(endpoint, type_name))
    assert db_rows() == before


CONTENT_TYPES = [
    ("text/plain", '{"a": 1}'),
    ("application/x-www-form-urlencoded", "a=1"),
    ("multipart/form-data; boundary=xx", "--xx--"),
    ("application/xml", "<a/>"),
]


@pytest.mark.parametrize(("content_type", "data"), CONTENT_TYPES, ids=[c[0] for c in CONTENT_TYPES])
@pytest.mark.parametrize("endpoint", WRITE_ENDPOINTS, ids=str)
def test_a_body_that_is_not_json_is_415(api, acme, attribute_id, endpoint, content_type, data):
    # given
    before = db_rows()

    # when
    response = _send(api, acme, endpoint, attribute_id, data, content_type)

    # then
    assert_error(response, 415, f'Unsupported media type "{content_type}" in request.')
    assert db_rows() == before


@pytest.mark.parametrize(
    ("deployment_id", "status", "message"),
    [
        (10**30, 400, "deploymentId: Ensure this value is less than or equal to 9223372036854775807."),
        (2**63, 400, "deploymentId: Ensure this value is less than or equal to 9223372036854775807."),
        (2**63 - 1, 404, "Deployment 9223372036854775807 not found"),
        (0, 400, "deploymentId: Ensure this value is greater than or equal to 1."),
        (-(10**30), 400, "deploymentId: Ensure this value is greater than or equal to 1."),
        (1.5, 400, "deploymentId: Must be an integer."),
        (1e308, 400, "deploymentId: Must be an integer."),
        ("1", 400, "deploymentId: Must be an integer."),
        (True, 400, "deploymentId: Must be an integer."),
        (None, 400, "deploymentId: This field may not be null."),
    ],
)
def test_an_out_of_range_or_non_integer_deployment_id_is_rejected(api, acme, deployment_id, status, message):
    # given
    before = db_rows()

    # when
    response = api.post_json(GENERATE_URL, {"deploymentId": deployment_id, "externalId": "a"}, **acme.api_key_headers)

    # then
    assert_error(response, status, message)
    assert db_rows() == before


NUL = "\u0000"
NUL_BODIES = [
    (0, {"externalId": "a" + NUL}, "externalId: Null characters are not allowed."),
    (0, {"externalId": "a", "groups": ["g" + NUL]}, "groups.0: Null characters are not allowed."),
    (0, {"externalId": "a", "userAttributes": [{"name": "region" + NUL, "value": "x"}]},
     "userAttributes.0.name: Null characters are not allowed."),
    # the value is a JSON value of any type: refused here or by the database, but never a 500
    (0, {"externalId": "a", "userAttributes": [{"name": "region", "value": "x" + NUL}]}, None),
    (0, {"externalId": "a", "userAttributes": [{"name": "region", "value": ["x" + NUL]}]}, None),
    (0, {"externalId": "a", "securityContext": {"k" + NUL: 1}}, "securityContext: Must not contain NUL characters."),
    (0, {"externalId": "a", "securityContext": {"k": [{"x": NUL}]}},
     "securityContext: Must not contain NUL characters."),
    (0, {"externalId": "a", "userProfile": {"displayName": NUL}},
     "userProfile.displayName: Null characters are not allowed."),
    (1, {"sessionId": NUL}, "sessionId: Null characters are not allowed."),
    (2, {"sessionId": NUL}, "sessionId: Null characters are not allowed."),
    (3, {"maxExternalUsers" + NUL: 1}, "The body must not contain NUL characters"),
    (4, {"name": "x", "type": "string", "description": NUL}, "description: Null characters are not allowed."),
    (5, {"description": NUL}, "description: Null characters are not allowed."),
    (6, {"username": "a" + NUL}, "username: Null characters are not allowed."),
    (7, {"displayName": NUL + "x"}, "displayName must be at most 255 characters, without NUL"),
]  # fmt: skip


@pytest.mark.parametrize(("index", "body", "message"), NUL_BODIES)
def test_a_nul_character_in_the_body_is_400(api, acme, attribute_id, index, body, message):
    # given: generate-session bodies get the caller's deployment
    endpoint = WRITE_ENDPOINTS[index]
    if endpoint.path == GENERATE_URL:
        body = {"deploymentId": acme.deployment.pk, **body}
    before = db_rows()

    # when
    response = _send(api, acme, endpoint, attribute_id, json.dumps(body), "application/json")

    # then
    assert_error(response, 400, message)
    assert db_rows() == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"bogus": 1}, "Unknown fields: bogus"),
        ({"userProfile": {"avatar": "x"}}, "userProfile: Unknown fields: avatar"),
        ({"userAttributes": [{"name": "region", "value": "x", "type": "string"}]},
         "userAttributes.0: Unknown fields: type"),
        ({"settings": {"theme": "dark"}}, "settings: Unknown fields: theme"),
    ],
)  # fmt: skip
def test_an_unknown_field_at_any_level_is_400(api, acme, body, message):
    # when
    response = api.post_json(
        GENERATE_URL, {"deploymentId": acme.deployment.pk, "externalId": "a", **body}, **acme.api_key_headers
    )

    # then
    assert_error(response, 400, message)


# --- routing -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete"])
@pytest.mark.parametrize(
    "path",
    [
        "/api/",
        "/api/v1/nope",
        "/api/v2/embed/generate-session",
        GENERATE_URL + "/",
        "/api/v1/embed-tenants/",
        "/api/v1/embed-tenants/tenant-one/groups/not-a-number",
        "/api/v1/user-attributes/1/values",
        "/api/v1/%ff%fe",
    ],
)
def test_an_unknown_api_url_is_a_json_404(api, acme, path, method):
    # when
    response = getattr(api, method)(path, **acme.api_key_headers)

    # then
    assert_error(response, 404, "Not found")


def test_an_unknown_scim_url_is_a_scim_404(api, acme):
    # when
    response = api.get("/api/scim/v2/Nowhere", **acme.platform_headers)

    # then
    assert response["Content-Type"] == "application/scim+json"
    assert response.json() == {
        "schemas": [SCIM_ERROR_SCHEMA],
        "status": "404",
        "detail": "Not found",
    }


@pytest.mark.parametrize(
    ("method", "path", "auth"),
    [
        ("get", GENERATE_URL, "key"),
        ("delete", REVOKE_URL, "key"),
        ("put", "/api/v1/embed/session/token", "none"),
        ("post", "/api/v1/embed-tenants", "key"),
        ("post", "/api/v1/embed-tenants/tenant-one/groups/1", "key"),
        ("delete", TENANT_SETTINGS_URL, "platform"),
        ("delete", USER_ATTRIBUTES_URL, "platform"),
        ("post", USER_ATTRIBUTES_URL + "/1", "platform"),
        ("delete", USERS_URL, "platform"),
        ("post", "/api/v1/deployments/", "platform"),
        ("patch", SCIM_GROUPS_URL, "platform"),
        ("delete", SCIM_GROUPS_URL, "platform"),
    ],
)
def test_a_wrong_method_is_a_json_405(api, acme, method, path, auth):
    # when
    response = getattr(api, method)(path, **_headers(acme, auth))

    # then
    assert_error(response, 405, f'Method "{method.upper()}" not allowed.')
    assert response["Allow"]


@pytest.mark.parametrize("path", ["/livez", "/readyz"])
@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_a_probe_refuses_other_methods_with_a_json_405_even_under_csrf_checks(db, path, method):
    # when: a real client is subject to CSRF checks, which must not turn the 405 into a 403
    response = getattr(Client(enforce_csrf_checks=True), method)(path)

    # then
    assert_error(response, 405, "Method not allowed")


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/embed-tenants?search=%00",
        "/api/v1/embed-tenants?first=1%00",
        "/api/v1/embed-tenants?%00=1",
        "/api/v1/embed-tenants/ab%00cd/groups",
        "/api/v1/nope%00",
        '/api/scim/v2/Groups?filter=displayName eq "a%00"',
    ],
)
def test_a_nul_character_in_the_url_is_400(api, acme, url):
    # when
    headers = acme.platform_headers if "/scim/" in url else acme.api_key_headers
    response = api.get(url, **headers)

    # then
    assert_error(response, 400, "The URL must not contain NUL characters")
