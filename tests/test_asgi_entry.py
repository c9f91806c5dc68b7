"""The shipped entry point, ``embedadmin.asgi:application`` under uvicorn: request/response endpoints go
through the one-hand-off WSGI bridge and answer exactly as the Django test client sees them."""

from __future__ import annotations

import httpx
import pytest

from tests.asgi_server import uvicorn_server
from tests.embedding.support import GENERATE_URL, TOKEN_URL

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def served(on_postgres):
    with uvicorn_server() as base, httpx.Client(base_url=base, timeout=10) as client:
        yield client


def test_mint_and_exchange_through_the_shipped_server(served, acme):
    key = {"Authorization": f"Api-Key {acme.created.api_key}"}
    body = {"deploymentId": acme.deployment.pk, "externalId": "  Viewer@Example.com "}
    minted = served.post(GENERATE_URL, json=body, headers=key)
    assert minted.status_code == 200, minted.text
    session_id = minted.json()["sessionId"]
    exchanged = served.post(TOKEN_URL, json={"sessionId": session_id})
    assert exchanged.status_code == 200
    assert exchanged.json()["token"]
    again = served.post(TOKEN_URL, json={"sessionId": session_id})
    assert again.status_code == 401
    assert again.headers["content-type"].startswith("application/json")


def test_api_errors_are_json_through_the_shipped_server(served, acme):
    key = {"Authorization": f"Api-Key {acme.created.api_key}", "Content-Type": "application/json"}
    broken = served.post(GENERATE_URL, content=b'{"deploymentId": ', headers=key)
    assert broken.status_code == 400
    assert "error" in broken.json()
    missing = served.get("/api/v1/no-such-endpoint")
    assert missing.status_code == 404
    assert missing.json() == {"error": "Not found"}
    huge = served.post(GENERATE_URL, content=b'{"x": "' + b"a" * (3 * 1024 * 1024) + b'"}', headers=key)
    assert huge.status_code == 413
    assert huge.json() == {"error": "Request body too large"}


def test_pages_are_served_through_the_shipped_server(served):
    login = served.get("/admin/login/")
    assert login.status_code == 200
    assert login.headers["content-type"].startswith("text/html")
    assert "<form" in login.text
