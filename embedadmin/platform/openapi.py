"""The OpenAPI document of every HTTP API (``GET /api/v1/spec``) and its browsable reference (``/api/docs``).

The DRF views (Platform API, embedding, SCIM) are described by drf-spectacular from their code: each method's
``@extend_schema`` names the serializer it validates its body with, its answers (the shapes beside the code that
builds them, and the errors it raises, declared with :func:`error`) and its query parameters; the helpers they share
are below. ``tests/test_openapi.py`` generates the document and fails on any warning of the generator (a view it
cannot describe) and on any answer without a body. The plain Django views (the Core Data API in
``semantic/serving/views.py``, the Chat API, the embed pages and the embed view/export endpoints) are not DRF views:
each declares its operations beside its code (``core.edge.declarations.declare``), and :func:`postprocess` merges them
at the routes the URLconf serves them at, so a route that moves moves its operations.
``tests/test_schemathesis.py`` calls every operation and checks each answer against this document."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern
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

from embedadmin.core.edge.declarations import Declared, declare, declared
from embedadmin.core.edge.openapi import ERROR, error_responses, json_content
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


def page_operation(
    page: serializers.BaseSerializer[Any] | OpenApiResponse,
    *,
    operation_id: str | None = None,
    filters: Sequence[OpenApiParameter] = (),
    errors: Mapping[int, OpenApiResponse] | None = None,
) -> Any:
    """The ``@extend_schema`` of a GET that answers one page of a list: its ``filters`` then :data:`PAGE_PARAMETERS`;
    ``page`` (a :func:`page_of` shape), a 400 for an invalid parameter, and its other ``errors`` (a 400 of its own
    replaces the default)."""
    return extend_schema(
        operation_id=operation_id,
        parameters=[*filters, *PAGE_PARAMETERS],
        responses={200: page, 400: INVALID, **(errors or {})},
    )


def created_with_secret(name: str, fields: Mapping[str, serializers.Field], secret: str) -> OpenApiResponse:
    """The 201 of a credential's creation: the credential (``fields``) and its plaintext ``secret``, which no other
    answer gives (only a digest is stored)."""
    return OpenApiResponse(
        inline_serializer(name, {**fields, secret: serializers.CharField(help_text="Shown this once")}),
        description=f"Created: the {secret} is in this answer only",
    )


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


# --- the operations of the plain Django views ------------------------------------------------------------------

_CONVERTER_SCHEMAS = {"int": {"type": "integer"}, "id": {"type": "integer"}, "str": {"type": "string"}}
_ROUTE_PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>\w+)>")


def _declared_routes(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, Declared]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _declared_routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern) and isinstance(pattern.pattern, RoutePattern):
            declaration = declared(pattern.callback)
            if declaration is not None and declaration.operations:
                yield prefix + str(pattern.pattern), declaration


def fragment_paths() -> dict[str, dict[str, Any]]:
    """The operations the plain Django views declare beside their code (``core.edge.declarations``: the Core Data
    API, the Chat API, the embed pages and endpoints), at every route that serves them, with the route's path
    parameters."""
    paths: dict[str, dict[str, Any]] = {}
    for route, declaration in _declared_routes(get_resolver().url_patterns):
        parameters = [
            {
                "name": match["name"],
                "in": "path",
                "required": True,
                "schema": _CONVERTER_SCHEMAS.get(match["converter"] or "str", {"type": "string"}),
            }
            for match in _ROUTE_PARAMETER.finditer(route)
        ]
        path = "/" + _ROUTE_PARAMETER.sub(lambda match: "{" + match["name"] + "}", route)
        for method, operation in declaration.operations.items():
            described = copy.deepcopy(operation)
            described["parameters"] = [*parameters, *described.get("parameters", [])]
            paths.setdefault(path, {})[method.lower()] = described
    return paths


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
                    response["content"] = json_content(SCIM_ERROR if scim else ERROR, media)
            for code, response in error_responses(media, SCIM_ERROR if scim else ERROR).items():
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


@declare(operations={})  # the document's reader, not an operation of it
def docs_page(request: HttpRequest) -> HttpResponse:
    """``GET /api/docs``: Swagger UI over ``/api/v1/spec``, every asset served by the product (static/vendor/)."""
    response = render(request, "api_docs.html")
    response["Content-Security-Policy"] = DOCS_CSP
    return response
