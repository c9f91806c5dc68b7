"""GET /api/v1/spec (OpenAPI 3.1, generated from the code) and the browsable reference at /api/docs."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.urls import resolve
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

from embedadmin.core.edge.declarations import declared
from embedadmin.platform import openapi
from embedadmin.platform.scim.views import NotFoundView
from embedadmin.semantic.serving.views import not_found_view
from tests.embed_assets.support import AssetParser, static_path

pytestmark = pytest.mark.django_db

SAMPLE = {"deployment_id": "7", "public_id": "Dash1", "account_name": "acme", "agent_id": "agent1"}


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
        "/api/v1/embed/dashboard/{public_id}/view",
        "/api/v1/embed/dashboard/{public_id}/export",
        "/embed/dashboard/{public_id}",
        "/embed/chat",
        "/cubejs-api/v1/meta",
        "/cubejs-api/v1/load",
        "/cubejs-api/v1/sql",
        "/cubejs-api/v1/dry-run",
        "/cubejs-api/v1/cubesql",
        "/d/{deployment_id}/cubejs-api/v1/load",
        "/api/v1/public/{account_name}/agents/{agent_id}/chat/stream-chat-state",
        "/api/v1/public/{account_name}/agents/{agent_id}/chat/abort",
        "/api/scim/v2/Users",
        "/api/scim/v2/Groups/{group_id}",
    ],
)
def test_every_api_is_described(spec, path):
    assert path in spec["paths"]


def test_every_ref_is_a_reference(spec):
    """A "$ref" key is read by every OpenAPI tool as a reference to resolve, wherever it stands (a property named
    "$ref" made Swagger UI stop rendering the page at the first operation holding one)."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "$ref" and not (isinstance(value, str) and value.startswith("#/")):
                    found.append("/".join(path))
                walk(value, [*path, key])
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, [*path, str(i)])

    walk(spec, [])
    assert found == []


def test_a_shape_that_extends_another_lists_the_others_fields_too(spec):
    schemas = spec["components"]["schemas"]
    for extended, base, own in (
        ("ApiKeyCreated", "ApiKey", "key"),
        ("PlatformTokenCreated", "PlatformToken", "token"),
        ("ModelFileContent", "ModelFile", "content"),
    ):
        assert set(schemas[extended]["properties"]) == {*schemas[base]["properties"], own}


def test_security_schemes(spec):
    schemes = spec["components"]["securitySchemes"]
    assert {"ApiKey", "PlatformToken", "EmbedToken", "EmbedBearer", "CoreJWT", "ChatServiceToken"} <= set(schemes)
    assert spec["paths"]["/api/v1/users"]["get"]["security"] == [{"PlatformToken": []}]
    assert spec["paths"]["/api/v1/embed/generate-session"]["post"]["security"] == [{"ApiKey": []}]
    assert spec["paths"]["/api/v1/embed/session/context"]["get"]["security"] == [{"EmbedBearer": []}]
    # No credential: the sessionId is one.
    assert spec["paths"]["/api/v1/embed/session/token"]["post"].get("security", []) == []


def test_every_security_requirement_names_a_defined_scheme(spec):
    schemes = set(spec["components"]["securitySchemes"])
    for path, method, operation in _operations(spec):
        for requirement in operation.get("security", []):
            assert set(requirement) <= schemes, (method, path, requirement)


def test_the_embed_tenant_api_takes_an_api_key_or_a_platform_token(spec):
    # ApiKeyOrBearerAuthentication: two alternatives, either one (not both at once, not none).
    operations = [
        (path, method, op) for path, method, op in _operations(spec) if path.startswith("/api/v1/embed-tenants")
    ]
    assert len(operations) >= 14
    for path, method, operation in operations:
        assert operation["security"] == [{"ApiKey": []}, {"PlatformToken": []}], (method, path)


def _operations(spec):
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method in {"get", "put", "post", "patch", "delete"}:
                yield path, method, operation


def test_the_schema_is_generated_without_a_warning():
    # A DRF view without @extend_schema (drf-spectacular cannot guess its serializer), a response or parameter it
    # cannot resolve, two components of one name, colliding operation ids: each is a warning or an error of the
    # generator, and each fails here. `manage.py spectacular --validate --fail-on-warn` says the same.
    GENERATOR_STATS.reset()
    SchemaGenerator().get_schema(request=None, public=True)
    problems = [*GENERATOR_STATS._warn_cache, *GENERATOR_STATS._error_cache]
    GENERATOR_STATS.reset()
    assert problems == []


# Operations that never succeed, by design (so they declare only errors).
NO_SUCCESS = {("post", "/api/scim/v2/.search")}  # RFC 7644 3.4.3: optional; 501


def test_every_operation_documents_its_own_answers(spec):
    for path, method, operation in _operations(spec):
        responses = operation["responses"]
        successes = [code for code in responses if code.startswith("2")]
        assert successes or (method, path) in NO_SUCCESS, f"{method} {path}: no success response documented"
        for code, response in responses.items():
            if code == "204":
                assert "content" not in response, (method, path, code)
                continue
            # A view whose answer is not declared gets "No response body": every answer but a 204 has one.
            content = response.get("content")
            assert content, f"{method} {path} {code}: no body documented"
            for media, body in content.items():
                assert "schema" in body, (method, path, code, media)
        if method in {"post", "put", "patch"} and (method, path) not in BODILESS:
            assert "requestBody" in operation, f"{method} {path}: no request body documented"


# Writes that take no body.
BODILESS = {("post", "/api/v1/users/{user_id}/deactivate")}


# Error statuses whose body is not the error shape, by design.
ERRORS_OF_THEIR_OWN = {
    # Bulk provisioning answers 429 with every user's failure when all failed, one at least on the user cap.
    ("post", "/api/v1/embed-tenants/{tenant_name}/users", "429"),
}


def test_errors_have_the_error_shape(spec):
    for path, method, operation in _operations(spec):
        for code, response in operation["responses"].items():
            html = "text/html" in response.get("content", {})  # the embed pages' error pages
            if code < "400" or html or (method, path, code) in ERRORS_OF_THEIR_OWN:
                continue
            for media, body in response["content"].items():
                required = body["schema"].get("required", [])
                if path.startswith("/api/scim/"):
                    assert media == "application/scim+json", (method, path, code)
                    assert {"schemas", "status"} <= set(required), (method, path, code)
                else:
                    assert "error" in required or "error" in body["schema"].get("properties", {}), (method, path, code)


def test_list_operations_document_their_page_parameters(spec):
    for path, method, operation in _operations(spec):
        success = operation["responses"].get("200", {}).get("content", {}).get("application/json", {})
        reference = success.get("schema", {}).get("$ref", "")
        if method == "get" and reference.endswith("Page"):
            names = {parameter["name"] for parameter in operation.get("parameters", [])}
            assert {"first", "after"} <= names, (method, path)


def test_a_delete_that_takes_a_body_documents_it(spec):
    # drf-spectacular describes no body for a DELETE; removing group members takes the one adding them takes.
    members = spec["paths"]["/api/v1/embed-tenants/{tenant_name}/groups/{group_id}/users"]
    assert members["delete"]["requestBody"] == members["post"]["requestBody"]


@pytest.mark.parametrize("path", sorted(openapi.fragment_paths()))
def test_each_declared_operation_is_described_at_a_route_of_its_view(path):
    # The plain Django views declare their operations beside their code; the document places them at the routes
    # serving them: each path written back into a URL must reach a view declaring every method described there.
    match = resolve(_concrete(path))
    described = {method.upper() for method in openapi.fragment_paths()[path]}
    declaration = declared(match.func)
    assert declaration is not None
    assert described == set(declaration.operations)


def test_a_declared_operation_names_the_parameters_of_its_route(spec):
    operation = spec["paths"]["/d/{deployment_id}/cubejs-api/v1/load"]["post"]
    assert operation["parameters"][0] == {
        "name": "deployment_id",
        "in": "path",
        "required": True,
        "schema": {"type": "integer"},
    }
    chat = spec["paths"]["/api/v1/public/{account_name}/agents/{agent_id}/chat/abort"]["post"]
    assert [parameter["name"] for parameter in chat["parameters"]] == ["account_name", "agent_id"]


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
    parser.feed((settings.BASE_DIR / "templates" / "api_docs.html").read_text())
    assert parser.inline_scripts == 0
    assert parser.style_elements == 0
    assert parser.style_attributes == []
    assets = [static_path(reference) for reference in parser.scripts + parser.stylesheets]
    assert {path.name for path in assets} == {"swagger-ui-dist.min.js", "swagger-ui-dist.min.css", "init.js"}
    for path in assets:
        assert path.is_file()
    for asset in ("/static/vendor/swagger-ui-dist.min.js", "/static/api_docs/init.js"):
        assert asset in response.content.decode()
