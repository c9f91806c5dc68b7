"""The shipped entry point, ``embedadmin.asgi:application`` under uvicorn: request/response endpoints go
through the one-hand-off WSGI bridge and answer exactly as the Django test client sees them."""

from __future__ import annotations

import os
import subprocess
import sys

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


# Every API family and the panel: no path answers a request for a host outside ALLOWED_HOSTS.
EVERY_FAMILY = [
    ("POST", GENERATE_URL),
    ("POST", TOKEN_URL),
    ("GET", "/api/v1/embed-tenants"),
    ("POST", "/d/{deployment}/cubejs-api/v1/load"),
    ("GET", "/d/{deployment}/cubejs-api/v1/meta"),
    ("POST", "/cubejs-api/v1/load"),
    ("POST", "/api/v1/public/acme/agents/1/chat/stream-chat-state"),
    ("POST", "/api/v1/public/acme/agents/1/chat/abort"),
    ("GET", "/api/v1/deployments/"),
    ("GET", "/api/scim/v2/Groups"),
    ("GET", "/admin/"),
    ("GET", "/readyz"),
]


def test_a_host_outside_allowed_hosts_is_400_on_every_api_family(served, acme):
    api_key, platform = f"Api-Key {acme.created.api_key}", f"Bearer {acme.created.platform_token}"
    body = {"deploymentId": acme.deployment.pk, "externalId": "viewer", "query": {"measures": ["orders.count"]}}
    answers = {}
    for method, path in EVERY_FAMILY:
        credential = platform if path.startswith(("/api/v1/deployments", "/api/scim")) else api_key
        response = served.request(
            method,
            path.format(deployment=acme.deployment.pk),
            json=body if method == "POST" else None,
            headers={"Host": "evil.example.com", "Authorization": credential},
        )
        if path.startswith("/admin/"):
            answers[path] = (response.status_code, "page")
        elif path.startswith("/api/scim"):
            answers[path] = (response.status_code, response.json()["detail"])
        else:
            answers[path] = (response.status_code, response.json()["error"])

    assert answers == {path: (400, "page" if path.startswith("/admin/") else "Bad request") for _, path in EVERY_FAMILY}


WARM_PROBE = """
import sys
import embedadmin.asgi
loaded = set(sys.modules)
from django.urls import get_resolver
from django.urls.resolvers import URLResolver


def views(resolver):
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from views(pattern)
        else:
            yield pattern.callback.__module__


every = set(views(get_resolver()))
print(len(every), sorted(every - loaded))
"""


def test_loading_the_application_imports_every_view_before_a_worker_accepts():
    """gunicorn's worker accepts connections once the application is loaded: a worker that imported the views at its
    first request (seconds of CPU) kept the requests it accepted waiting, while a worker replacing a killed one."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "embedadmin.settings", "EMBEDADMIN_ALLOW_DEV_SECRET": "true"}
    probe = subprocess.run(
        [sys.executable, "-c", WARM_PROBE], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    views, not_loaded = probe.stdout.split(" ", 1)
    assert int(views) > 20
    assert not_loaded.strip() == "[]"
