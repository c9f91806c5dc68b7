# ruff: noqa: F401, F811  (fixtures imported from http_support are used as test arguments, as pytest wants)
"""Input limits (issue 17, listed in docs/api-notes.md): filter values and members per request, JSON depth, body
size, request-line and header size. Each is refused with a JSON 4xx naming the problem, before any work: through
Django's test client for the APIs, and through the shipped server process for what the server reads first. Under
the SCIM roots the refusal is SCIM's Error (issue 24), from the server's protocol as from the ASGI entry."""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from bench._harness import raw_request
from embedadmin.core.fields import loads_json
from embedadmin.core.wsgi_bridge import refuse_oversized
from tests.asgi_server import uvicorn_server
from tests.conftest import JsonClient
from tests.platform.support import GENERATE_URL, SCIM_ERROR_SCHEMA, USER_ATTRIBUTES_URL
from tests.semantic.http_support import CoreApi, core, demo_duckdb, fresh_semantic_state

HTTP = "embedadmin.core.http_server:HttpToolsProtocol"


def _filtered(count: int, offset: int = 0) -> dict[str, Any]:
    return {
        "measures": ["orders.count"],
        "filters": [
            {"member": "orders.status", "operator": "equals", "values": [f"v{offset + i}" for i in range(count)]}
        ],
    }


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _error(response: Any) -> str:
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    return response.json()["error"]


# --- filter values and members ---------------------------------------------------------------------------------


def test_filter_values_up_to_the_limit_are_answered(core: CoreApi, settings):
    settings.LIMITS = {**settings.LIMITS, "MAX_FILTER_VALUES": 10_000}

    body = core.load(_filtered(10_000))

    assert [int(row["orders.count"]) for row in body["data"]] == [0]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_more_filter_values_than_the_limit_is_a_400_naming_it(core: CoreApi, method: str):
    query = _filtered(70_000)

    response = core.post("load", {"query": query}) if method == "POST" else core.get("load", {"query": query})

    assert response.status_code == 400  # (the test client has no request-line limit: the server's is tested below)
    assert _error(response) == (
        "Invalid query format: a request may hold at most 10000 filter values (this one holds 70000)"
    )


def test_filter_values_count_across_nested_groups_and_every_query_of_a_request(core: CoreApi, settings):
    settings.LIMITS = {**settings.LIMITS, "MAX_FILTER_VALUES": 100}
    leaf = {"member": "orders.status", "operator": "equals", "values": [f"v{i}" for i in range(30)]}
    nested = {"measures": ["orders.count"], "filters": [{"or": [leaf, {"and": [leaf]}]}]}  # 60 values

    assert core.post("load", {"query": nested}).status_code == 200
    blended = [
        {**nested, "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month"}]} for _ in range(2)
    ]
    response = core.post("load", {"query": blended})

    assert response.status_code == 400
    assert "at most 100 filter values (this one holds 120)" in _error(response)


def test_more_members_than_the_limit_is_a_400(core: CoreApi):
    query = {"measures": ["orders.count"] * 3000}

    response = core.post("load", {"query": query})

    assert response.status_code == 400
    assert _error(response) == "Invalid query format: a request may name at most 1000 members (this one names 3000)"


@pytest.mark.parametrize("endpoint", ["sql", "dry-run"])
def test_the_other_query_endpoints_apply_the_same_limits(core: CoreApi, endpoint: str):
    response = core.post(endpoint, {"query": _filtered(70_000)})

    assert response.status_code == 400
    assert "at most 10000 filter values" in _error(response)


# --- JSON depth -------------------------------------------------------------------------------------------------


def test_loads_json_refuses_nesting_beyond_the_limit_however_deep():
    assert loads_json(_nested(64)) == json.loads(_nested(64))
    for depth in (65, 900, 100_000):
        with pytest.raises(ValueError, match="nested too deeply"):
            loads_json(_nested(depth))


@pytest.mark.parametrize("depth", [65, 100_000])
def test_deep_json_is_a_400_on_the_core_api_body_and_query_parameter(core: CoreApi, depth: int):
    query = '{"measures": ["orders.count"], "filters": ' + _nested(depth) + "}"
    body = ('{"query": ' + query + "}").encode()

    posted = core.client.post(f"{core.base}/load", body, content_type="application/json", **core.headers(core.token()))
    got = core.client.get(f"{core.base}/load", {"query": query}, **core.headers(core.token()))

    assert posted.status_code == 400
    assert _error(posted) == "Invalid JSON body: nested too deeply"
    assert got.status_code == 400
    assert _error(got).startswith("Unable to decode query param as JSON, error: nested too deeply")


@pytest.mark.django_db
@pytest.mark.parametrize("depth", [65, 100_000])
@pytest.mark.parametrize("path", [GENERATE_URL, USER_ATTRIBUTES_URL])
def test_deep_json_is_a_400_on_generate_session_and_the_platform_api(api: JsonClient, acme, path: str, depth: int):
    body = ('{"deploymentId": 1, "externalId": "a", "securityContext": ' + _nested(depth) + "}").encode()

    headers = (
        {"HTTP_AUTHORIZATION": f"Api-Key {acme.created.api_key}"} if path == GENERATE_URL else acme.platform_headers
    )
    response = api.post(path, body, content_type="application/json", **headers)

    assert response.status_code == 400
    assert _error(response) == "Invalid JSON body: nested too deeply"


# --- request head at the ASGI entry -----------------------------------------------------------------------------


def test_the_asgi_entry_refuses_an_oversized_target_or_headers():
    scope = {"type": "http", "path": "/livez", "raw_path": b"/livez", "query_string": b"", "headers": []}
    assert refuse_oversized(scope, 1024, 1024) is None
    assert refuse_oversized({**scope, "query_string": b"a" * 1100}, 1024, 1024)[0] == 414
    assert refuse_oversized({**scope, "headers": [(b"x-big", b"y" * 1100)]}, 1024, 1024)[0] == 431


# --- through the shipped server process -------------------------------------------------------------------------


def _raw(base: str, head: bytes, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Send one raw HTTP/1.1 request to the server at ``base``: the status, headers and body of the answer."""
    port = urlsplit(base).port
    assert port is not None
    return raw_request(port, head, body, timeout=30)


def _json_refusal(answer: tuple[int, dict[str, str], bytes], status: int) -> str:
    code, headers, payload = answer
    assert code == status, payload[:200]
    assert headers["content-type"].startswith("application/json")
    return json.loads(payload)["error"]


def _answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The next answer on a connection: status, headers and body (by its Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, payload = data.partition(b"\r\n\r\n")
    lines = head.decode("latin1").split("\r\n")
    headers = {k.lower(): v for k, _, v in (line.partition(": ") for line in lines[1:])}
    while len(payload) < int(headers["content-length"]):
        payload += sock.recv(65536)
    return int(lines[0].split()[1]), headers, payload


def _scim_refusal(answer: tuple[int, dict[str, str], bytes], status: int) -> str:
    """The ``detail`` of an RFC 7644 Error answered with ``status``: its members and no other, SCIM's media type."""
    code, headers, payload = answer
    assert code == status, payload[:200]
    assert headers["content-type"] == "application/scim+json"
    body = json.loads(payload)
    assert set(body) == {"schemas", "status", "detail"}
    assert (body["schemas"], body["status"]) == ([SCIM_ERROR_SCHEMA], str(status))
    return body["detail"]


SCIM_ROOTS = ["/api/scim/v2", "/scim/v2"]


def _oversized_heads(path: str) -> tuple[bytes, bytes]:
    """A request for ``path`` with a request target above its limit, and one with headers above theirs."""
    long_line = f"GET {path}?filter={'a' * 100_000} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    big_headers = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {'y' * 100_000}\r\nConnection: close\r\n\r\n"
    return long_line.encode(), big_headers.encode()


def _body_above_the_entry_limit(path: str) -> tuple[bytes, bytes]:
    body = b'{"userName": "' + b"a" * (5 * 1024 * 1024) + b'"}'
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/scim+json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    return head, body


@pytest.fixture
def server(on_postgres):
    with uvicorn_server(UVICORN_HTTP=HTTP) as base:
        yield base


@pytest.fixture
def plain_server(on_postgres):
    """The same process without the product's protocol (``uvicorn`` as given, h11 with a raised head limit):
    the ASGI entry still refuses with JSON."""
    with uvicorn_server(UVICORN_HTTP="h11", UVICORN_H11_MAX_INCOMPLETE_EVENT_SIZE=str(1024 * 1024)) as base:
        yield base


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("size", [50_000, 70_000, 100_000, 1_000_000])
def test_a_long_request_line_is_a_json_414_through_the_server(server: str, size: int):
    head = f"GET /livez?q={'a' * size} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()

    message = _json_refusal(_raw(server, head), 414)

    assert message == "Request line too long: the path and query string may hold at most 49152 bytes"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("size", [40_000, 100_000, 2_000_000])
def test_large_headers_are_a_json_431_through_the_server(server: str, size: int):
    head = f"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {'y' * size}\r\nConnection: close\r\n\r\n".encode()

    message = _json_refusal(_raw(server, head), 431)

    assert message == "Request headers too large: at most 32768 bytes of header names and values"


@pytest.mark.django_db(transaction=True)
def test_a_request_just_under_the_limits_is_served(server: str):
    head = (
        f"GET /livez?q={'a' * 40_000} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {'y' * 30_000}\r\nConnection: close\r\n\r\n"
    )
    status, _, payload = _raw(server, head.encode())

    assert status == 200, payload[:200]
    assert json.loads(payload) == {"status": "ok"}


@pytest.mark.django_db(transaction=True)
def test_an_unreadable_request_is_a_json_400_through_the_server(server: str):
    message = _json_refusal(_raw(server, b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n"), 400)

    assert message == "Invalid HTTP request"


@pytest.mark.django_db(transaction=True)
def test_a_20_mb_body_is_a_json_413_through_the_server(server: str):
    body = b'{"x": "' + b"a" * (20 * 1024 * 1024) + b'"}'
    head = (
        f"POST {GENERATE_URL} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()

    message = _json_refusal(_raw(server, head, body), 413)

    assert message == "Request body too large"


@pytest.mark.django_db(transaction=True)
def test_the_asgi_entry_refuses_with_json_under_a_plain_uvicorn_too(plain_server: str):
    long_line = f"GET /livez?q={'a' * 100_000} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    big_headers = f"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {'y' * 100_000}\r\nConnection: close\r\n\r\n"

    assert _json_refusal(_raw(plain_server, long_line.encode()), 414).startswith("Request line too long")
    assert _json_refusal(_raw(plain_server, big_headers.encode()), 431).startswith("Request headers too large")
    with httpx.Client(base_url=plain_server) as client:
        assert client.get("/livez").json() == {"status": "ok"}


@pytest.mark.django_db(transaction=True)
def test_the_server_refuses_a_scim_request_with_a_scim_error(server: str):
    for root in SCIM_ROOTS:
        long_line, big_headers = _oversized_heads(f"{root}/Users")
        unreadable = f"GET {root}/Users HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n".encode()

        assert _scim_refusal(_raw(server, long_line), 414).startswith("Request line too long")
        assert _scim_refusal(_raw(server, big_headers), 431).startswith("Request headers too large")
        assert _scim_refusal(_raw(server, unreadable), 400) == "Invalid HTTP request"
        assert _scim_refusal(_raw(server, *_body_above_the_entry_limit(f"{root}/Users")), 413) == (
            "Request body too large"
        )

    # what the parser refuses after a SCIM request on the same connection, before reading a path, is no SCIM error
    port = urlsplit(server).port
    assert port is not None
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET /scim/v2/Users HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = _answer(sock)
        sock.sendall(b"G\x01T /scim/v2/Users HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        second = _answer(sock)
    assert first[0] == 401
    assert (second[0], second[1]["content-type"], json.loads(second[2])) == (
        400,
        "application/json",
        {"error": "Invalid HTTP request"},
    )


@pytest.mark.django_db(transaction=True)
def test_the_asgi_entry_refuses_a_scim_request_with_a_scim_error_under_a_plain_uvicorn(plain_server: str):
    for root in SCIM_ROOTS:
        long_line, big_headers = _oversized_heads(f"{root}/Users")

        assert _scim_refusal(_raw(plain_server, long_line), 414).startswith("Request line too long")
        assert _scim_refusal(_raw(plain_server, big_headers), 431).startswith("Request headers too large")
        assert _scim_refusal(_raw(plain_server, *_body_above_the_entry_limit(f"{root}/Users")), 413) == (
            "Request body too large"
        )
