"""The OpenAPI document of every HTTP API (``GET /api/v1/spec``) and its browsable reference (``/api/docs``).

The DRF views (Platform API, embedding, SCIM) are described by drf-spectacular from their code: each method's
``@extend_schema`` names the serializer it validates its body with, its answers (the shapes beside the code that
builds them, and the errors it raises, declared with :func:`error`) and its query parameters; the helpers they share
are below. ``tests/test_openapi.py`` generates the document and fails on any warning of the generator (a view it
cannot describe) and on any answer without a body. The plain Django views (the Core Data API in
``semantic/serving/views.py``, the Chat API, the embed pages and the embed view/export endpoints) are not DRF views,
so :func:`postprocess` merges an explicit fragment for each, written from their code and ``docs/core-data-api.md`` /
``docs/chat-api.md``; ``tests/test_openapi.py`` resolves every fragment path against the URLconf, so a route that
moves fails the test instead of drifting. ``tests/test_schemathesis.py`` calls every operation and checks each
answer against this document."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerFieldExtension,
    OpenApiViewExtension,
)
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from drf_spectacular.views import SpectacularJSONAPIView
from rest_framework import serializers

from embedadmin.core.pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE

# --- security schemes ---------------------------------------------------------------------------------------

API_KEY_SCHEME = {
    "type": "apiKey",
    "in": "header",
    "name": "Authorization",
    "description": "An account API key: `Authorization: Api-Key <key>`.",
}
PLATFORM_TOKEN_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "A platform token: `Authorization: Bearer <platform token>`.",
}


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "embedadmin.accounts.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return API_KEY_SCHEME


class PlatformTokenScheme(OpenApiAuthenticationExtension):
    target_class = "embedadmin.accounts.authentication.PlatformTokenAuthentication"
    name = "PlatformToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return PLATFORM_TOKEN_SCHEME


class ApiKeyOrPlatformTokenScheme(OpenApiAuthenticationExtension):
    """``ApiKeyOrBearerAuthentication`` (the embed-tenant admin API): an admin API key or a platform token, as two
    alternatives of the operation's ``security`` (either one, not both). The two schemes are the ones above
    (:func:`postprocess` makes sure both are defined): this class registers none of its own, which drf-spectacular
    would see as a second, different component of the same name."""

    target_class = "embedadmin.accounts.authentication.ApiKeyOrBearerAuthentication"
    name: list[str] = []

    def get_security_requirement(self, auto_schema: Any) -> list[dict[str, list[Any]]]:
        return [{"ApiKey": []}, {"PlatformToken": []}]

    def get_security_definition(self, auto_schema: Any) -> list[dict[str, Any]]:
        return []


EMBED_TOKEN_SCHEME = {
    "type": "apiKey",
    "in": "header",
    "name": "Authorization",
    "description": "An embed token from `POST /api/v1/embed/session/token`: `Authorization: Embed-Token <token>`.",
}
EMBED_BEARER_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "bearerFormat": "JWT",
    "description": "An embed token as a bearer token (`GET /api/v1/embed/session/context`).",
}
CORE_JWT_SCHEME = {
    "type": "apiKey",
    "in": "header",
    "name": "Authorization",
    "description": (
        "A deployment JWT (HS256 with a deployment API secret, or RS256/ES256 from its JWKS), raw or as "
        "`Bearer <JWT>`; `X-Cube-Authorization` wins when both are sent."
    ),
}
CHAT_SERVICE_TOKEN_SCHEME = {
    "type": "apiKey",
    "in": "header",
    "name": "X-Service-Auth-Token",
    "description": "A deployment JWT, when the deployment has chat token auth.",
}

# --- shared schemas -------------------------------------------------------------------------------------------

ERROR = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
SCIM_ERROR = {
    "type": "object",
    "properties": {
        "schemas": {"type": "array", "items": {"type": "string"}},
        "status": {"type": "string"},
        "detail": {"type": "string"},
        "scimType": {"type": "string"},
    },
    "required": ["schemas", "status"],
}
ANY_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}
# The statuses any API operation may answer besides its own: the shared error shape (embedadmin/core/errors.py).
ERROR_STATUSES = {
    "400": "Invalid input",
    "401": "Missing or invalid credential",
    "403": "The credential may not do this",
    "404": "Not found (or not the caller's)",
    "405": "Method not allowed",
    "413": "Body too large",
    "415": "Unsupported media type",
    "429": "Too many requests",
    "503": "Temporarily unavailable",
}


def _json(schema: dict[str, Any], media: str = "application/json") -> dict[str, Any]:
    return {media: {"schema": schema}}


def _errors(media: str = "application/json", schema: dict[str, Any] = ERROR) -> dict[str, Any]:
    return {code: {"description": text, "content": _json(schema, media)} for code, text in ERROR_STATUSES.items()}


# --- what the DRF views declare in their @extend_schema ------------------------------------------------------


def error(description: str) -> OpenApiResponse:
    """An error answer an operation gives, with why; :func:`postprocess` gives it the shared error body
    (``{"error": ...}``, or SCIM's Error under ``/api/scim/``)."""
    return OpenApiResponse(description=description)


INVALID = error("Invalid input: a field of the body or a parameter (the message names it)")
PAGE_PARAMETERS = [
    OpenApiParameter(
        "first",
        {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
        description=f"Page size, 1 to {MAX_PAGE_SIZE} (default {DEFAULT_PAGE_SIZE})",
    ),
    OpenApiParameter("after", str, description="The `endCursor` of the previous page"),
]
PAGE_INFO = inline_serializer(
    "PageInfo",
    {
        "hasNextPage": serializers.BooleanField(),
        "endCursor": serializers.CharField(allow_null=True, help_text="null on an empty page"),
    },
)


def nullable(shape: serializers.Serializer[Any]) -> serializers.Serializer[Any]:
    """The named shape ``shape`` (an ``inline_serializer``) as a field that may be null: one component still."""
    return type(shape)(allow_null=True)


def optional(shape: serializers.Serializer[Any]) -> serializers.Serializer[Any]:
    """The named shape ``shape`` as a field that may be left out."""
    return type(shape)(required=False)


def list_of(shape: serializers.Serializer[Any]) -> serializers.BaseSerializer[Any]:
    """A response that is a list (a JSON array) of the named shape ``shape``."""
    return type(shape)(many=True)


def many(shape: serializers.BaseSerializer[Any], **kwargs: Any) -> serializers.ListField:
    """A list of the named shape ``shape`` (a field of its own: a list binds its child)."""
    return serializers.ListField(child=type(shape)(), **kwargs)


# EmbedTheme (reference 1.8; accounts.services.embed_theme_check): tenant settings and generate-session take it.
EMBED_THEME = inline_serializer(
    "EmbedTheme",
    {
        "primaryColor": serializers.CharField(required=False, help_text="#rgb, #rgba, #rrggbb or #rrggbbaa"),
        "font": serializers.CharField(required=False, help_text="A CSS font-family list"),
        "analyticsChat": inline_serializer(
            "EmbedThemeAnalyticsChat",
            {
                "backgroundColor": serializers.CharField(required=False),
                "chatInput": inline_serializer(
                    "EmbedThemeChatInput",
                    {
                        "backgroundColor": serializers.CharField(required=False),
                        "borderColor": serializers.CharField(required=False),
                    },
                    required=False,
                ),
            },
            required=False,
        ),
        "chat": inline_serializer(
            "EmbedThemeChat", {"inputColor": serializers.CharField(required=False)}, required=False
        ),
    },
)


def whole(serializer_class: type[serializers.Serializer[Any]]) -> serializers.Serializer[Any]:
    """``serializer_class`` as the body of a PATCH that validates it whole (the view does not pass
    ``partial=True``): drf-spectacular would document every field of a PATCH body as optional."""

    class Whole(serializer_class):  # type: ignore[valid-type,misc]
        @property
        def partial(self) -> bool:
            return False

        @partial.setter
        def partial(self, value: bool) -> None:
            pass

    Whole.__name__ = Whole.__qualname__ = serializer_class.__name__  # the component keeps the serializer's name
    Whole.__doc__ = serializer_class.__doc__
    return Whole()


def page_of(
    name: str, item: serializers.BaseSerializer[Any], *, data: bool = False, count: bool = False, **extra: Any
) -> serializers.Serializer[Any]:
    """A keyset page of ``item`` (``core/pagination.py``): ``{items, pageInfo}``; with Cube's deprecated ``data``
    (the items again, or every item for a list assembled in memory) and ``count`` (every match)."""
    fields: dict[str, Any] = {"items": many(item), "pageInfo": PAGE_INFO}
    if data:
        fields["data"] = many(item, help_text="Deprecated (Cube's): the items again")
    if count:
        fields["count"] = serializers.IntegerField(help_text="How many items match, on every page")
    fields.update(extra)
    return inline_serializer(name, fields)


class EmbedThemeFieldSchema(OpenApiSerializerFieldExtension):
    """generate-session's ``embedTheme`` (a field of its own that checks the theme): the EmbedTheme shape."""

    target_class = "embedadmin.embedding.serializers.EmbedThemeField"

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        return auto_schema.resolve_serializer(EMBED_THEME, direction).ref


class ApiKeyCurrentViewSchema(OpenApiViewExtension):
    """``GET /api/v1/api-keys/current`` (``accounts/views.py``): its answer, described from here."""

    target_class = "embedadmin.accounts.views.ApiKeyCurrentView"

    def view_replacement(self) -> type:
        answer = inline_serializer(
            "ApiKeyCurrent",
            {
                "accountName": serializers.CharField(),
                "kind": serializers.CharField(help_text="admin or personal"),
                "prefix": serializers.CharField(),
                "deploymentIds": serializers.ListField(
                    child=serializers.IntegerField(),
                    allow_null=True,
                    help_text="The deployments a scoped key may act on; null: every deployment of the account",
                ),
            },
        )

        @extend_schema_view(get=extend_schema(responses={200: answer}))
        class Described(self.target_class):  # type: ignore[name-defined]
            pass

        return Described


# --- fragments of the plain Django views ----------------------------------------------------------------------

CORE_QUERY_BODY = {
    "type": "object",
    "properties": {
        "query": {
            "description": "A Cube query (object), an array of them, or one as a JSON string",
            "oneOf": [{"type": "object"}, {"type": "array", "items": {"type": "object"}}, {"type": "string"}],
        },
        "queryType": {"type": "string", "enum": ["multi"]},
        "cache": {"type": "string"},
    },
}
CORE_QUERY_PARAMS = [
    {"name": "query", "in": "query", "required": False, "schema": {"type": "string"}, "description": "JSON query"},
    {"name": "queryType", "in": "query", "required": False, "schema": {"type": "string"}},
    {"name": "cache", "in": "query", "required": False, "schema": {"type": "string"}},
]
CORE_SECURITY: list[dict[str, list[str]]] = [{"CoreJWT": []}]


def _core_operation(summary: str, *, tag: str, body: bool, params: list[dict[str, Any]] | None = None) -> dict:
    responses: dict[str, Any] = {"200": {"description": summary, "content": _json(ANY_OBJECT)}}
    responses.update(_errors())
    responses["500"] = {"description": "The data source failed (its safe message)", "content": _json(ERROR)}
    operation: dict[str, Any] = {"tags": [tag], "summary": summary, "security": CORE_SECURITY, "responses": responses}
    if body:
        operation["requestBody"] = {"required": False, "content": _json(CORE_QUERY_BODY)}
    if params:
        operation["parameters"] = params
    return operation


def core_data_api_paths(prefix: str, *, tag: str) -> dict[str, dict[str, Any]]:
    """``{base_path}/v1/...`` of ``docs/core-data-api.md`` under ``prefix`` (``""`` or ``/d/{deploymentId}``)."""
    base = prefix + "/" + settings.CUBEJS_BASE_PATH.strip("/") + "/v1"
    query = "query results (Cube /v1/load)"
    meta_params = [
        {"name": "extended", "in": "query", "required": False, "schema": {"type": "string"}},
        {"name": "onlyViews", "in": "query", "required": False, "schema": {"type": "string"}},
    ]
    cubesql_body = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    cubesql = _core_operation("semantic SQL, answered in JSON lines", tag=tag, body=False)
    cubesql["requestBody"] = {"required": True, "content": _json(cubesql_body)}
    cubesql["responses"]["200"] = {
        "description": 'JSON lines: a {"schema"} line, then {"data"} lines',
        "content": {"application/json": {"schema": {"type": "string"}}},
    }
    paths = {
        f"{base}/meta": {
            "get": _core_operation("cubes and views the caller may see", tag=tag, body=False, params=meta_params)
        },
        f"{base}/load": {
            "get": _core_operation(query, tag=tag, body=False, params=CORE_QUERY_PARAMS),
            "post": _core_operation(query, tag=tag, body=True),
        },
        f"{base}/subscribe": {
            "get": _core_operation(query, tag=tag, body=False, params=CORE_QUERY_PARAMS),
            "post": _core_operation(query, tag=tag, body=True),
        },
        f"{base}/sql": {
            "get": _core_operation("the SQL a query compiles to", tag=tag, body=False, params=CORE_QUERY_PARAMS),
            "post": _core_operation("the SQL a query compiles to", tag=tag, body=True),
        },
        f"{base}/dry-run": {
            "get": _core_operation("the normalized query, not run", tag=tag, body=False, params=CORE_QUERY_PARAMS),
            "post": _core_operation("the normalized query, not run", tag=tag, body=True),
        },
        f"{base}/cubesql": {"post": cubesql},
    }
    if prefix:
        parameter = {"name": "deploymentId", "in": "path", "required": True, "schema": {"type": "integer"}}
        for item in paths.values():
            for operation in item.values():
                operation["parameters"] = [parameter, *operation.get("parameters", [])]
    return paths


def _path_params(*names: str) -> list[dict[str, Any]]:
    return [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}} for name in names]


CHAT_BODY = {
    "type": "object",
    "description": "See docs/chat-api.md: chatId, messages, sessionSettings, dashboard context.",
    "additionalProperties": True,
}
JSONRPC_ERROR = {
    "type": "object",
    "properties": {"jsonrpc": {"type": "string"}, "error": {"type": "object"}},
    "required": ["error"],
}


def chat_paths() -> dict[str, dict[str, Any]]:
    base = "/api/v1/public/{accountName}/agents/{agentId}/chat"
    security: list[dict[str, list[str]]] = [{"ApiKey": []}, {"ChatServiceToken": []}, {"EmbedToken": []}]
    params = _path_params("accountName", "agentId")
    stream_responses = {
        "200": {
            "description": "The chat state as a stream of JSON lines, or a JSON-RPC error object (authentication)",
            "content": {"application/json": {"schema": {}}},
        },
        **_errors(),
    }
    abort_responses = {
        "204": {"description": "Aborted"},
        "200": {"description": "A JSON-RPC error object (authentication)", "content": _json(JSONRPC_ERROR)},
        **_errors(),
    }
    return {
        f"{base}/stream-chat-state": {
            "post": {
                "tags": ["Chat API"],
                "summary": "Ask the agent; the answer streams as JSON lines",
                "parameters": params,
                "security": security,
                "requestBody": {"required": True, "content": _json(CHAT_BODY)},
                "responses": stream_responses,
            }
        },
        f"{base}/abort": {
            "post": {
                "tags": ["Chat API"],
                "summary": "Abort the running answer of a chat",
                "parameters": params,
                "security": security,
                "requestBody": {
                    "required": True,
                    "content": _json(
                        {  # chat/serializers.py AbortSerializer (unknown fields are 400)
                            "type": "object",
                            "properties": {
                                "chatId": {"type": "string", "minLength": 1, "maxLength": 64},
                                "sessionSettings": {
                                    "type": "object",
                                    "description": "Whose chat, with an API key: externalId or internalId",
                                    "properties": {
                                        "externalId": {"type": "string", "maxLength": 255},
                                        "internalId": {"type": "string", "maxLength": 254},
                                    },
                                    "additionalProperties": False,
                                },
                            },
                            "required": ["chatId"],
                            "additionalProperties": False,
                        }
                    ),
                },
                "responses": abort_responses,
            }
        },
    }


def embed_paths() -> dict[str, dict[str, Any]]:
    html = {"text/html": {"schema": {"type": "string"}}}
    page_responses = {
        "200": {"description": "The embed page (HTML)", "content": html},
        "400": {"description": "The error page (HTML)", "content": html},
        "401": {"description": "The error page (HTML)", "content": html},
        "403": {"description": "The error page (HTML)", "content": html},
        "404": {"description": "The error page (HTML)", "content": html},
    }
    session = {"name": "session", "in": "query", "required": False, "schema": {"type": "string"}}
    # embedadmin/embedding/pages.py: dashboard_view and dashboard_export (unknown fields are 400).
    view_fields: dict[str, Any] = {
        "grant": {
            "type": "string",
            "maxLength": 4096,
            "description": "The signed grant of the page's bootstrap, bound to the session's token (each view answers"
            " a fresh one for the token in hand; a view also takes the grant of an earlier session of the same"
            " viewer, after a renewal in place)",
        },
        "state": {
            "type": "object",
            "description": "The viewer's state by control id: filters, grains, fields, timezone (docs/dashboards.md)",
        },
        "filterUrlParameter": {
            "type": "string",
            "description": 'f_<member>=<JSON>, as f_orders.status={"value":"paid"}',
        },
        "timezone": {"type": "string", "description": "An IANA time zone name"},
    }
    view_body = {"type": "object", "properties": view_fields, "required": ["grant"], "additionalProperties": False}
    export_body = {
        "type": "object",
        "properties": {
            **view_fields,
            "widgetId": {"type": "string", "minLength": 1, "description": "The tile whose rows to download"},
            "format": {"type": "string", "enum": ["csv"], "description": "csv (PNG is drawn in the page)"},
        },
        "required": ["grant", "widgetId"],
        "additionalProperties": False,
    }
    view = {
        "type": "object",
        "description": "The dashboard's widgets with their queries for the state, a fresh grant for the token in hand"
        " and what the page may do with it",
        "properties": {
            "widgets": {"type": "array", "items": {"type": "object"}},
            "grant": {"type": "string"},
            "flags": {
                "type": "object",
                "description": "allowExport (the session's signed setting, narrowed by the page URL, off when the"
                " account restricts downloads) and the page URL's show... flags",
                "additionalProperties": {"type": "boolean"},
            },
        },
        "required": ["widgets", "grant", "flags"],
    }
    view_responses = {"200": {"description": "The view of the state", "content": _json(view)}}
    view_responses.update(_errors())
    export_responses = {
        "200": {"description": "The tile's rows as CSV", "content": {"text/csv": {"schema": {"type": "string"}}}},
        **_errors(),
    }
    public_id = _path_params("publicId")
    security: list[dict[str, list[str]]] = [{"EmbedToken": []}]
    return {
        "/embed/dashboard/{publicId}": {
            "get": {
                "tags": ["Embed pages"],
                "summary": "The embedded dashboard page (HTML; the iframe's src)",
                "parameters": [*public_id, session],
                "responses": page_responses,
            }
        },
        "/embed/chat": {
            "get": {
                "tags": ["Embed pages"],
                "summary": "The embedded chat page (HTML; the iframe's src)",
                "parameters": [
                    session,
                    {"name": "agent", "in": "query", "required": False, "schema": {"type": "string"}},
                ],
                "responses": page_responses,
            }
        },
        "/api/v1/embed/dashboard/{publicId}/view": {
            "post": {
                "tags": ["Embedding"],
                "summary": "The embedded dashboard's widgets and data for a viewer state",
                "parameters": public_id,
                "security": security,
                "requestBody": {"required": False, "content": _json(view_body)},
                "responses": view_responses,
            }
        },
        "/api/v1/embed/dashboard/{publicId}/export": {
            "post": {
                "tags": ["Embedding"],
                "summary": "Download one widget's rows",
                "parameters": public_id,
                "security": security,
                "requestBody": {"required": True, "content": _json(export_body)},
                "responses": export_responses,
            }
        },
    }


def fragment_paths() -> dict[str, dict[str, Any]]:
    """Every path the hook adds, with the view each resolves to in the URLconf (tests/test_openapi.py)."""
    return {
        **core_data_api_paths("", tag="Core Data API"),
        **core_data_api_paths("/d/{deploymentId}", tag="Core Data API (deployment in the path)"),
        **chat_paths(),
        **embed_paths(),
    }


# --- hooks ----------------------------------------------------------------------------------------------------


def preprocess(endpoints: list[tuple[str, str, str, Any]], **_: Any) -> list[tuple[str, str, str, Any]]:
    """Drops the aliases (``/scim/v2/`` mirrors ``/api/scim/v2/``; a trailing-slash twin of a path) and the
    catch-all regex routes, which are not operations: SCIM's 404 for any other path (``{rest}``) and the 501s for
    any method and subpath of an unpublished resource (an unnamed group, which drf-spectacular names ``{var}``)."""
    paths = {path for path, *_ in endpoints}
    kept = []
    for path, path_regex, method, callback in endpoints:
        twin = path.endswith("/") and path.rstrip("/") in paths
        if path.startswith("/scim/v2/") or twin or "{rest}" in path or "{var}" in path:
            continue
        kept.append((path, path_regex, method, callback))
    return kept


# Operations whose DELETE takes a body, the one their POST takes (removing what the POST adds).
DELETE_TAKES_POST_BODY = ["/api/v1/embed-tenants/{tenant_name}/groups/{group_id}/users"]


def postprocess(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Adds the error responses every operation shares, the schemes DRF cannot see, and the fragments."""
    for path, item in result.get("paths", {}).items():
        scim = path.startswith("/api/scim/")
        media = "application/scim+json" if scim else "application/json"
        for operation in item.values():
            responses = operation.setdefault("responses", {})
            for code, response in responses.items():
                # An error a view declares (error()) has the shared error body. A success without a body is a
                # 204 only: tests/test_openapi.py fails any other that the view left undocumented.
                if code >= "400" and "content" not in response:
                    response["content"] = _json(SCIM_ERROR if scim else ERROR, media)
            for code, response in _errors(media, SCIM_ERROR if scim else ERROR).items():
                responses.setdefault(code, response)
    for path in DELETE_TAKES_POST_BODY:  # drf-spectacular describes no body for a DELETE
        item = result["paths"].get(path, {})
        if "delete" in item and "requestBody" in item.get("post", {}):
            item["delete"]["requestBody"] = item["post"]["requestBody"]
    for path, item in fragment_paths().items():
        for method, operation in item.items():
            words = "".join(ch if ch.isalnum() else "_" for ch in path.replace("{", "").replace("}", ""))
            operation["operationId"] = f"{method}{words}".strip("_")
        result["paths"][path] = item
    schemes = result.setdefault("components", {}).setdefault("securitySchemes", {})
    schemes.update(
        {
            "ApiKey": API_KEY_SCHEME,
            "PlatformToken": PLATFORM_TOKEN_SCHEME,
            "EmbedToken": EMBED_TOKEN_SCHEME,
            "EmbedBearer": EMBED_BEARER_SCHEME,
            "CoreJWT": CORE_JWT_SCHEME,
            "ChatServiceToken": CHAT_SERVICE_TOKEN_SCHEME,
        }
    )
    return result


# --- views ----------------------------------------------------------------------------------------------------


class SpecView(SpectacularJSONAPIView):
    """``GET /api/v1/spec``: the OpenAPI document, generated per request from the code (public, like any docs)."""

    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []


DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def docs_page(request: HttpRequest) -> HttpResponse:
    """``GET /api/docs``: Swagger UI over ``/api/v1/spec``, every asset served by the product (static/vendor/)."""
    response = render(request, "api_docs.html")
    response["Content-Security-Policy"] = DOCS_CSP
    return response
