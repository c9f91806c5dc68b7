"""Every SCIM error is RFC 7644 3.12's Error and nothing more (``schemas``, ``status`` as a string, ``scimType`` when
there is one, ``detail``) in ``application/scim+json``, on both roots (``/api/scim/v2`` and the ``/scim/v2`` alias),
wherever it is raised: in a SCIM view, in DRF before the view runs (401, 405), in the middleware (unknown URLs, NUL
in the URL, the body Django refuses) and with the database down (503). What the server refuses before the
application (414, 431, 400, 413) is in ``tests/test_input_limits.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import OperationalError

from embedadmin.core.error_shapes import error_shape, is_scim_path, scim_error_body
from embedadmin.core.errors import RETRY_AFTER_SECONDS
from embedadmin.core.http_server import json_refusal, target_path
from embedadmin.platform.scim import views as scim_views
from tests.core.test_database_outage import app_database, pooled_wrapper
from tests.platform.support import SCIM_ERROR_SCHEMA, db_rows

ROOTS = ["/api/scim/v2", "/scim/v2"]
SCIM_JSON = "application/scim+json"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"


def assert_scim_error(response: Any, status: int, detail: str, scim_type: str | None = None) -> None:
    """``response`` is exactly the Error of ``status`` with ``detail`` (and ``scimType``), as SCIM's media type."""
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == SCIM_JSON
    expected = {"schemas": [SCIM_ERROR_SCHEMA], "status": str(status), "detail": detail}
    if scim_type:
        expected["scimType"] = scim_type
    assert response.json() == expected


# --- the rule ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "scim"),
    [
        ("/api/scim/v2/Users", True),
        ("/scim/v2/Users/12", True),
        ("/scim/v2", True),
        ("/scim", True),
        ("/api/scim", True),
        ("/scim/v1/Users", True),  # under the root, no endpoint: still answered as SCIM
        ("/scimx/v2/Users", False),
        ("/api/scimx", False),
        ("/api/v1/users", False),
        ("/livez", False),
        ("", False),
    ],
)
def test_a_scim_request_is_one_under_a_scim_root(path, scim):
    assert is_scim_path(path) is scim
    assert error_shape(path, 404, "Not found") == (
        ("application/scim+json", {"schemas": [SCIM_ERROR_SCHEMA], "status": "404", "detail": "Not found"})
        if scim
        else ("application/json", {"error": "Not found"})
    )


def test_the_error_body_holds_the_rfc_members_only():
    assert scim_error_body(409, "taken", "uniqueness") == {
        "schemas": [SCIM_ERROR_SCHEMA],
        "status": "409",
        "scimType": "uniqueness",
        "detail": "taken",
    }


@pytest.mark.parametrize(
    ("target", "path"),
    [
        (b"/scim/v2/Users?filter=x", "/scim/v2/Users"),
        (b"/%73cim/v2/Users", "/scim/v2/Users"),  # decoded, as the application sees it
        (b"http://host.example/api/scim/v2/Groups", "/api/scim/v2/Groups"),  # absolute form
        (b"/scim/v2/Users?q=" + b"a" * 100, "/scim/v2/Users"),
        (b"/scim/v2/Us", "/scim/v2/Us"),  # cut short
        (b"", ""),
        (b"http://[::1/x", ""),  # not a URL
    ],
)
def test_the_server_reads_the_path_of_a_target_as_the_application_would(target, path):
    assert target_path(target) == path


def test_a_refusal_of_the_server_on_a_scim_path_is_a_scim_error():
    answer = json_refusal(431, "Request headers too large", "/scim/v2/Users")

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert b"\r\ncontent-type: application/scim+json\r\n" in head
    assert json.loads(body) == {
        "schemas": [SCIM_ERROR_SCHEMA],
        "status": "431",
        "detail": "Request headers too large",
    }


# --- through the application -------------------------------------------------------------------------------


@pytest.mark.parametrize("root", ROOTS)
def test_a_request_without_credentials_is_a_scim_401(api, acme, root):
    response = api.get(f"{root}/Users")

    assert_scim_error(response, 401, "Missing Authorization header: expected 'Bearer <token>'")
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("rest", ["/Nowhere", "/Users/1/extra", "/"])
def test_an_unknown_scim_url_is_a_scim_404(api, acme, root, rest):
    response = api.get(f"{root}{rest}", **acme.platform_headers)

    assert_scim_error(response, 404, "Not found")


@pytest.mark.parametrize("path", ["/scim/v1/Users", "/api/scim/Users", "/scim"])
def test_a_url_under_the_scim_roots_no_route_serves_is_a_scim_404(api, acme, path):
    response = api.get(path, **acme.platform_headers)

    assert_scim_error(response, 404, "Not found")


@pytest.mark.parametrize("root", ROOTS)
def test_a_user_that_does_not_exist_is_a_scim_404(api, acme, root):
    response = api.get(f"{root}/Users/999999", **acme.platform_headers)

    assert_scim_error(response, 404, "User 999999 not found")


@pytest.mark.parametrize("root", ROOTS)
def test_a_method_an_endpoint_does_not_take_is_a_scim_405(api, acme, root):
    before = db_rows()

    response = api.patch_json(f"{root}/Users", {"Operations": []}, **acme.platform_headers)

    assert_scim_error(response, 405, 'Method "PATCH" not allowed.')
    assert "GET" in response["Allow"]
    assert db_rows() == before


@pytest.mark.parametrize("root", ROOTS)
def test_an_invalid_value_is_a_scim_400_with_its_scim_type(api, acme, root):
    body = {"schemas": [USER_SCHEMA], "userName": "a", "emails": [{"value": "not-an-email"}]}

    response = api.post_json(f"{root}/Users", body, **acme.platform_headers)

    assert response.status_code == 400
    assert response.json()["scimType"] == "invalidValue"
    assert set(response.json()) == {"schemas", "status", "scimType", "detail"}


@pytest.mark.parametrize("root", ROOTS)
def test_malformed_json_is_a_scim_400_invalid_syntax(api, acme, root):
    response = api.post(f"{root}/Users", data="{not json", content_type=SCIM_JSON, **acme.platform_headers)

    assert response.status_code == 400
    assert response["Content-Type"] == SCIM_JSON
    assert set(response.json()) == {"schemas", "status", "scimType", "detail"}
    assert response.json()["scimType"] == "invalidSyntax"


@pytest.mark.parametrize("root", ROOTS)
def test_a_nul_in_the_url_is_a_scim_400_from_the_middleware(api, acme, root):
    response = api.get(f"{root}/Users", {"filter": 'userName eq "a\x00"'}, **acme.platform_headers)

    assert_scim_error(response, 400, "The URL must not contain NUL characters")


@pytest.mark.parametrize("root", ROOTS)
def test_a_body_beyond_what_django_reads_is_a_scim_413(api, acme, root, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = {"schemas": [USER_SCHEMA], "userName": "big", "displayName": "x" * 2000}

    response = api.post_json(f"{root}/Users", body, **acme.platform_headers)

    assert_scim_error(response, 413, "Request body too large")


@pytest.mark.parametrize("root", ROOTS)
def test_a_fault_of_the_server_is_a_scim_500(api, acme, root, monkeypatch):
    def broken(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(scim_views.ScimUserListView, "get", broken)

    response = api.get(f"{root}/Users", **acme.platform_headers)

    assert_scim_error(response, 500, "Internal server error")


@pytest.mark.parametrize("root", ROOTS)
def test_the_database_failing_in_a_scim_view_is_a_scim_503_with_retry_after(api, acme, root, monkeypatch):
    def unreachable(**kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(scim_views.accounts_selectors, "internal_users_page", unreachable)

    response = api.get(f"{root}/Users", **acme.platform_headers)

    assert_scim_error(response, 503, "Service unavailable: the database cannot be reached; retry later")
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)


@pytest.mark.parametrize("root", ROOTS)
def test_the_database_down_is_a_scim_503_with_retry_after_on_every_root(on_postgres, api, acme, root):
    # given: acme's credentials made, then the application pointed at a port no PostgreSQL listens on
    with app_database(pooled_wrapper(alias="ea-scim-down", host="127.0.0.1", port="1", timeout=0.5)):
        # when
        response = api.get(f"{root}/Groups", **acme.platform_headers)

    # then
    assert_scim_error(response, 503, "Service unavailable: the database cannot be reached; retry later")
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
