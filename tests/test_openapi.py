"""GET /api/v1/spec (OpenAPI 3.1, generated from the code) and the browsable reference at /api/docs."""

from __future__ import annotations

import re

import pytest
from django.urls import resolve
from drf_spectacular.validation import validate_schema

from embedadmin.platform import openapi
from embedadmin.platform.scim.views import NotFoundView
from embedadmin.semantic.serving.views import not_found_view
from tests.embed_assets.support import AssetParser, static_path

pytestmark = pytest.mark.django_db

SAMPLE = {"deploymentId": "7", "publicId": "Dash1", "accountName": "acme", "agentId": "agent1"}


def _concrete(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda match: SAMPLE.get(match.group(1), "1"), path)


@pytest.fixture(scope="module")
def spec(django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        response = Client().get("/api/v1/spec")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/")
    return response.json()


def test_spec_is_a_valid_openapi_31_document(spec):
    assert spec["openapi"] == "3.1.0"
    validate_schema(spec)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/users",
        "/api/v1/tenant/settings",
        "/api/v1/embed/generate-session",
        "/api/v1/embed/session/token",
        "/api/v1/embed/session/revoke",
        "/api/v1/embed/dashboard/{publicId}/view",
        "/api/v1/embed/dashboard/{publicId}/export",
        "/embed/dashboard/{publicId}",
        "/embed/chat",
        "/cubejs-api/v1/meta",
        "/cubejs-api/v1/load",
        "/cubejs-api/v1/sql",
        "/cubejs-api/v1/dry-run",
        "/cubejs-api/v1/cubesql",
        "/d/{deploymentId}/cubejs-api/v1/load",
        "/api/v1/public/{accountName}/agents/{agentId}/chat/stream-chat-state",
        "/api/v1/public/{accountName}/agents/{agentId}/chat/abort",
        "/api/scim/v2/Users",
        "/api/scim/v2/Groups/{group_id}",
    ],
)
def test_every_api_is_described(spec, path):
    assert path in spec["paths"]


def test_security_schemes(spec):
    schemes = spec["components"]["securitySchemes"]
    assert {"ApiKey", "PlatformToken", "EmbedToken", "CoreJWT"} <= set(schemes)
    assert spec["paths"]["/api/v1/users"]["get"]["security"] == [{"PlatformToken": []}]
    assert spec["paths"]["/api/v1/embed/generate-session"]["post"]["security"] == [{"ApiKey": []}]


@pytest.mark.parametrize("path", sorted(openapi.fragment_paths()))
def test_each_hand_written_fragment_is_a_route_of_the_urlconf(path):
    # The plain Django views are described by hand: each path must resolve to a real view (not a catch-all 404),
    # so a route that moves or disappears fails here instead of drifting from the spec.
    match = resolve(_concrete(path))
    assert match.func is not not_found_view
    assert getattr(match.func, "view_class", None) is not NotFoundView


def test_every_generated_path_is_a_route_of_the_urlconf(spec):
    for path in spec["paths"]:
        match = resolve(_concrete(path))
        assert match.func is not not_found_view, path
        assert getattr(match.func, "view_class", None) is not NotFoundView, path


def test_docs_page_is_served_with_own_assets_under_a_strict_csp(client):
    response = client.get("/api/docs")
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert "unsafe-eval" not in csp
    parser = AssetParser()
    parser.feed((openapi.settings.BASE_DIR / "templates" / "api_docs.html").read_text())
    assert parser.inline_scripts == 0
    assert parser.style_elements == 0
    assert parser.style_attributes == []
    assets = [static_path(reference) for reference in parser.scripts + parser.stylesheets]
    assert {path.name for path in assets} == {"swagger-ui-dist.min.js", "swagger-ui-dist.min.css", "init.js"}
    for path in assets:
        assert path.is_file()
    for asset in ("/static/vendor/swagger-ui-dist.min.js", "/static/api_docs/init.js"):
        assert asset in response.content.decode()
