"""Platform API v1: deployments, their environments, tokens, env variables and data model; regions; API keys and
platform tokens as resources; and the 501 of the resources whose semantics Cube does not publish.

Thin adapters over ``embedadmin.accounts`` services and selectors (and :mod:`embedadmin.platform.data_model` for
model uploads). Every lookup is scoped to the caller's account: another account's deployment, key or token is 404.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from embedadmin.accounts import selectors
from embedadmin.accounts import services as accounts
from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import ApiKey, Deployment, IssuedToken, PlatformToken
from embedadmin.accounts.tokens import deployment_token_sign
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import BadRequest, NotFound
from embedadmin.core.pagination import decode_cursor, encode_cursor, paginate, parse_first
from embedadmin.core.parsers import JSONBodyParser
from embedadmin.platform import data_model
from embedadmin.platform.openapi import INVALID, PAGE_PARAMETERS, error, many, page_of, whole
from embedadmin.platform.views import PlatformView
from embedadmin.semantic.serving.auth import API_SCOPES_CLAIM

PRODUCTION = "production"
SECRET_NAME_PARTS = ("PASS", "SECRET", "TOKEN", "KEY", "CREDENTIAL")


def _int_in(body: Mapping[str, Any], name: str, low: int, high: int, default: int) -> int:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadRequest(f"{name}: must be an integer between {low} and {high}")
    return value


def _text(body: Mapping[str, Any], name: str, *, max_length: int = 200, required: bool = False) -> str | None:
    if name not in body:
        if required:
            raise BadRequest(f"{name}: this field is required")
        return None
    value = body[name]
    if not isinstance(value, str) or not value.strip() or len(value) > max_length:
        raise BadRequest(f"{name}: must be a non-empty string of at most {max_length} characters")
    return value.strip()


def page_of_list(
    items: list[Any], *, params: Mapping[str, str], key: Callable[[Any], str], serialize: Callable[[Any], Any]
) -> dict[str, Any]:
    """Cursor pagination (``first``, ``after``) over a list assembled in memory and sorted by the unique ``key``;
    with Cube's deprecated ``data``: the whole list."""
    first = parse_first(params.get("first"))
    after = params.get("after")
    ordered = sorted(items, key=key)
    rest = ordered
    if after:
        (last,) = decode_cursor(after, types=(str,))
        rest = [item for item in ordered if key(item) > last]
    page = rest[:first]
    return {
        "items": [serialize(item) for item in page],
        "data": [serialize(item) for item in ordered],
        "pageInfo": {
            "hasNextPage": len(rest) > first,
            "endCursor": encode_cursor([key(page[-1])]) if page else None,
        },
    }


# --- shapes --------------------------------------------------------------------------------------------------

OPEN_TO_EMBED_HELP = (
    "Unsafe. Embed viewers read only the cubes and views whose access policy grants them; true opens every cube "
    "and view without an access policy to every embed viewer of this deployment, as Cube does for any token"
)
DEPLOYMENT = inline_serializer(
    "Deployment",
    {
        "id": serializers.IntegerField(),
        "name": serializers.CharField(),
        "slug": serializers.CharField(),
        "createdAt": serializers.DateTimeField(),
        "updatedAt": serializers.DateTimeField(),
        "openToEmbedWithoutPolicy": serializers.BooleanField(help_text=OPEN_TO_EMBED_HELP),
    },
)
DEPLOYMENT_CREATE = inline_serializer(
    "DeploymentCreate",
    {
        "name": serializers.CharField(max_length=200),
        "slug": serializers.CharField(required=False, max_length=63, help_text="Made from the name when left out"),
    },
)
DEPLOYMENT_CHANGES = inline_serializer(
    "DeploymentChanges",
    {
        "name": serializers.CharField(required=False, max_length=200),
        "slug": serializers.CharField(required=False, max_length=63),
        "openToEmbedWithoutPolicy": serializers.BooleanField(required=False, help_text=OPEN_TO_EMBED_HELP),
    },
)
DEPLOYMENT_NOT_FOUND = error("No deployment with this id in the caller's account")
SLUG_TAKEN = error("Another deployment of the account has this slug")
BODY_INVALID = error("Not a JSON object, an unknown field, a NUL character or an invalid value")
# The lists assembled in memory (environments, env variables, regions, model files): a page of them, and Cube's
# deprecated ``data`` with every item.
_IN_MEMORY_PAGE = {"data": True}
_PAGINATION = inline_serializer(
    "OffsetPagination",
    {
        "offset": serializers.IntegerField(),
        "limit": serializers.IntegerField(),
        "total": serializers.IntegerField(),
    },
)

# --- deployments ---------------------------------------------------------------------------------------------


def deployment_item(deployment: Deployment) -> dict[str, Any]:
    return {
        "id": deployment.pk,
        "name": deployment.name,
        "slug": deployment.slug,
        "createdAt": iso_time(deployment.created_at),
        "updatedAt": iso_time(deployment.updated_at),
        "openToEmbedWithoutPolicy": deployment.open_to_embed_without_policy,
    }


class DeploymentCreateView(PlatformView):
    """``POST /build/api/v1/deployments`` ``{name, slug?}``: a deployment with a new HS256 signing secret (as the
    account bootstrap makes one). The slug defaults to one made from the name; the secret is not answered (it signs
    the tokens ``POST /api/v1/deployments/{id}/token`` issues)."""

    audit_via = "build_api"
    audit_resource = "deployment"

    @extend_schema(request=DEPLOYMENT_CREATE, responses={201: DEPLOYMENT, 400: BODY_INVALID, 409: SLUG_TAKEN})
    def post(self, request: PlatformRequest) -> Response:
        body = json_object_body(request, fields=("name", "slug"))
        name = _text(body, "name", required=True)
        assert name is not None
        slug = _text(body, "slug", max_length=63) or data_model.slug_of(name)
        deployment, _secret = accounts.deployment_create(account=request.user.account, name=name, slug=slug)
        return Response(deployment_item(deployment), status=201)


class DeploymentDetailView(PlatformView):
    """``GET|PATCH|DELETE /api/v1/deployments/{id}``. DELETE removes the deployment **with all its content**
    (cascade: workbooks, reports, folders, dashboards, chat agents, embed sessions, signing secrets, env variables,
    issued-token records); tokens it signed stop verifying at once. Its model directory on disk is kept."""

    audit_resource = "deployment"

    @extend_schema(responses={200: DEPLOYMENT, 404: DEPLOYMENT_NOT_FOUND})
    def get(self, request: PlatformRequest, deployment_id: str) -> Response:
        return Response(deployment_item(self.deployment(request, deployment_id)))

    @extend_schema(
        request=DEPLOYMENT_CHANGES,
        responses={200: DEPLOYMENT, 400: BODY_INVALID, 404: DEPLOYMENT_NOT_FOUND, 409: SLUG_TAKEN},
    )
    def patch(self, request: PlatformRequest, deployment_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        body = json_object_body(request, fields=("name", "slug", "openToEmbedWithoutPolicy"))
        open_to_embed = body.get("openToEmbedWithoutPolicy")
        if open_to_embed is not None and not isinstance(open_to_embed, bool):
            raise BadRequest("openToEmbedWithoutPolicy: must be true or false")
        deployment = accounts.deployment_update(
            deployment=deployment, name=_text(body, "name"), slug=_text(body, "slug", max_length=63)
        )
        if open_to_embed is not None:
            deployment = accounts.deployment_configure(
                deployment=deployment, open_to_embed_without_policy=open_to_embed
            )
        return Response(deployment_item(deployment))

    put = patch

    @extend_schema(responses={204: None, 404: DEPLOYMENT_NOT_FOUND})
    def delete(self, request: PlatformRequest, deployment_id: str) -> Response:
        accounts.deployment_delete(deployment=self.deployment(request, deployment_id))
        return Response(status=204)


def deployment_token_claims(caller_token: PlatformToken) -> dict[str, Any]:
    """The security context of a deployment token: the platform token that asked for it, and no groups (so no
    group-gated access policy grants it anything a plain token would not get)."""
    return {"sub": f"platform:{caller_token.prefix}", "groups": []}


def _issue(
    request: PlatformRequest,
    deployment: Deployment,
    *,
    kind: str,
    security_context: dict[str, Any],
    expires_in: int,
    environment: str = "",
    scopes: list[str] | None = None,
) -> tuple[str, IssuedToken]:
    """Sign a Core Data API token for ``deployment`` with its newest secret and record it (not the token)."""
    now = timezone.now().replace(microsecond=0)
    expires_at = now + dt.timedelta(seconds=expires_in)
    jti = uuid.uuid4().hex
    claims = {**security_context, "jti": jti}
    if kind == IssuedToken.Kind.META_SYNC:  # "scoped specifically to metadata endpoints": /v1/meta only
        claims[API_SCOPES_CLAIM] = ["meta"]
    token = deployment_token_sign(deployment=deployment, claims=claims, expires_at=expires_at)
    record = accounts.issued_token_record(
        deployment=deployment,
        kind=kind,
        environment=environment,
        jti=jti,
        security_context=security_context,
        scopes=scopes,
        issued_by=request.user.token,
        created_at=now,
        expires_at=expires_at,
    )
    return token, record


class DeploymentTokenView(PlatformView):
    """``POST /api/v1/deployments/{id}/token`` ``{expiresIn: 60..86400 (default 86400)}`` -> ``{cubeApiToken}``:
    an HS256 Core Data API token with :func:`deployment_token_claims` as its security context."""

    audit_resource = "deployment_token"
    audit_verbs = {"POST": "issue"}
    audit_id_kwarg = "deployment_id"

    @extend_schema(
        request=inline_serializer(
            "DeploymentTokenRequest",
            {"expiresIn": serializers.IntegerField(required=False, min_value=60, max_value=86400)},
        ),
        responses={
            200: inline_serializer("DeploymentToken", {"cubeApiToken": serializers.CharField()}),
            400: BODY_INVALID,
            404: DEPLOYMENT_NOT_FOUND,
        },
    )
    def post(self, request: PlatformRequest, deployment_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        body = json_object_body(request, fields=("expiresIn",))
        expires_in = _int_in(body, "expiresIn", 60, 86400, 86400)
        token, _ = _issue(
            request,
            deployment,
            kind=IssuedToken.Kind.DEPLOYMENT,
            security_context=deployment_token_claims(request.user.token),
            expires_in=expires_in,
        )
        return Response({"cubeApiToken": token})


# --- environments --------------------------------------------------------------------------------------------


def _environment(deployment: Deployment, environment_id: str) -> str:
    if environment_id != PRODUCTION:
        raise NotFound(f"Environment {environment_id} not found in deployment {deployment.pk}")
    return environment_id


ENVIRONMENT = inline_serializer(
    "Environment",
    {
        "id": serializers.CharField(),
        "type": serializers.CharField(help_text="production"),
        "branch": serializers.CharField(allow_null=True),
        "user": serializers.CharField(allow_null=True),
        "api_credentials": many(
            inline_serializer(
                "EnvironmentApiCredentials",
                {
                    "type": serializers.CharField(help_text="rest"),
                    "version": serializers.CharField(),
                    "url": serializers.CharField(help_text="The deployment's Core Data API URL"),
                    "host": serializers.CharField(allow_null=True),
                    "port": serializers.IntegerField(allow_null=True),
                    "database": serializers.CharField(allow_null=True),
                },
            )
        ),
    },
)


class EnvironmentListView(PlatformView):
    """``GET /api/v1/deployments/{id}/environments``: this install runs one environment per deployment,
    ``production``, whose REST credentials are the deployment's Core Data API URL."""

    @extend_schema(
        parameters=[
            OpenApiParameter("type", str, enum=["production", "staging", "development"]),
            *PAGE_PARAMETERS,
        ],
        responses={
            200: page_of("EnvironmentPage", ENVIRONMENT, **_IN_MEMORY_PAGE, pagination=_PAGINATION),
            400: INVALID,
            404: DEPLOYMENT_NOT_FOUND,
        },
    )
    def get(self, request: PlatformRequest, deployment_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        wanted = request.query_params.get("type")
        if wanted is not None and wanted not in ("production", "staging", "development"):
            raise BadRequest("type: must be production, staging or development")
        url = request.build_absolute_uri(f"/d/{deployment.pk}{settings.CUBEJS_BASE_PATH}/v1")
        environment = {
            "id": PRODUCTION,
            "type": PRODUCTION,
            "branch": None,
            "user": None,
            "api_credentials": [
                {"type": "rest", "version": "v1", "url": url, "host": None, "port": None, "database": None}
            ],
        }
        items = [environment] if wanted in (None, PRODUCTION) else []
        body = page_of_list(items, params=request.query_params, key=lambda e: e["id"], serialize=lambda e: e)
        body["pagination"] = {"offset": 0, "limit": len(items), "total": len(items)}
        return Response(body)


ISSUED_TOKEN = inline_serializer(
    "IssuedToken",
    {
        "token": serializers.CharField(allow_null=True, help_text="The token when it is issued; null when listed"),
        "jti": serializers.CharField(),
        "security_context": serializers.JSONField(help_text="The token's payload (a JSON object)"),
        "scopes": serializers.ListField(child=serializers.CharField(), allow_null=True),
        "created_at": serializers.DateTimeField(),
        "expires_at": serializers.DateTimeField(),
    },
)
ENVIRONMENT_NOT_FOUND = error("No such deployment in the caller's account, or an environment other than production")


def issued_token_item(record: IssuedToken) -> dict[str, Any]:
    """A listed token: its claims and lifetime. ``token`` is null: a token is shown once, when it is issued."""
    return {
        "token": None,
        "jti": record.jti,
        "security_context": record.security_context,
        "scopes": record.scopes,
        "created_at": iso_time(record.created_at),
        "expires_at": iso_time(record.expires_at),
    }


class EnvironmentTokensView(PlatformView):
    """``GET|POST /api/v1/deployments/{id}/environments/{envId}/tokens`` (and ``.../tokens-for-meta-sync``).

    POST ``{security_context* (object), expires_in 1..3600 (default 3600), scopes [string]}`` ->
    ``{data: {token, security_context, created_at, expires_at}}``: a Core Data API token whose payload is the
    security context, signed with the deployment's secret. The token is shown once; GET lists the unexpired tokens
    issued (``token`` null). ``scopes`` are recorded and listed; a meta-sync token may use ``/v1/meta`` only (its
    ``embedadmin:apiScopes`` claim; other Core Data API endpoints answer 403 ``API scope is missing: data``)."""

    audit_resource = "environment_token"
    audit_verbs = {"POST": "issue"}
    audit_id_kwarg = "environment_id"

    kind = IssuedToken.Kind.ENVIRONMENT

    @extend_schema(
        parameters=PAGE_PARAMETERS,
        responses={
            200: OpenApiResponse(
                page_of("IssuedTokenPage", ISSUED_TOKEN, data=True, pagination=_PAGINATION),
                description="The unexpired tokens issued, newest first",
            ),
            400: INVALID,
            404: ENVIRONMENT_NOT_FOUND,
        },
    )
    def get(self, request: PlatformRequest, deployment_id: str, environment_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        environment = _environment(deployment, environment_id)
        rows = selectors.issued_tokens_of(deployment=deployment, kind=self.kind, environment=environment)
        page = paginate(rows, params=request.query_params, descending=True)
        body = page.as_dict(issued_token_item)
        body["data"] = body["items"]
        body["pagination"] = {"offset": 0, "limit": len(body["items"]), "total": rows.count()}
        return Response(body)

    @extend_schema(
        request=inline_serializer(
            "EnvironmentTokenRequest",
            {
                "security_context": serializers.DictField(help_text="The token's payload; exp, iat, nbf, jti are not"),
                "expires_in": serializers.IntegerField(required=False, min_value=1, max_value=3600),
                "scopes": serializers.ListField(
                    child=serializers.CharField(min_length=1, max_length=100), required=False
                ),
            },
        ),
        responses={
            201: inline_serializer("EnvironmentTokenIssued", {"data": ISSUED_TOKEN}),
            400: BODY_INVALID,
            404: ENVIRONMENT_NOT_FOUND,
        },
    )
    def post(self, request: PlatformRequest, deployment_id: str, environment_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        environment = _environment(deployment, environment_id)
        body = json_object_body(request, fields=("security_context", "expires_in", "scopes"))
        context = body.get("security_context")
        if not isinstance(context, dict):
            raise BadRequest("security_context: must be a JSON object")
        reserved = sorted(set(context) & {"exp", "iat", "nbf", "jti"})
        if reserved:
            raise BadRequest(f"security_context: {', '.join(reserved)} are set by the server")
        expires_in = _int_in(body, "expires_in", 1, 3600, 3600)
        scopes = body.get("scopes", [])
        if not isinstance(scopes, list) or not all(isinstance(s, str) and 0 < len(s) <= 100 for s in scopes):
            raise BadRequest("scopes: must be a list of strings")
        token, record = _issue(
            request,
            deployment,
            kind=self.kind,
            environment=environment,
            security_context=context,
            expires_in=expires_in,
            scopes=scopes,
        )
        return Response({"data": {**issued_token_item(record), "token": token}}, status=201)


class EnvironmentMetaSyncTokensView(EnvironmentTokensView):
    kind = IssuedToken.Kind.META_SYNC


# --- env variables -------------------------------------------------------------------------------------------


def env_variable_is_secret(name: str) -> bool:
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


ENV_VARIABLE = inline_serializer(
    "EnvVariable",
    {"name": serializers.CharField(), "value": serializers.CharField(help_text="[ENCRYPTED] for a secret's")},
)
ENV_VARIABLES = page_of("EnvVariablePage", ENV_VARIABLE, **_IN_MEMORY_PAGE)
ENV_VARIABLES_PUT = inline_serializer(
    "EnvVariables",
    {
        "env_variables": many(
            inline_serializer(
                "EnvVariableInput",
                {
                    "name": serializers.RegexField(r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=255),
                    "value": serializers.CharField(max_length=32768, allow_blank=True),
                },
            )
        )
    },
)


class EnvVariablesView(PlatformView):
    """``GET|PUT /api/v1/deployments/{id}/env-vars``: stored encrypted; values of names containing PASS, SECRET,
    TOKEN, KEY or CREDENTIAL are answered ``[ENCRYPTED]``. PUT ``{env_variables: [{name, value}]}`` upserts by
    name (others keep their values) and answers the list. Nothing in this install reads them yet."""

    audit_resource = "env_variables"
    audit_verbs = {"PUT": "upsert", "PATCH": "upsert"}
    audit_id_kwarg = "deployment_id"

    def _list(self, request: PlatformRequest, deployment: Deployment) -> Response:
        rows = list(selectors.env_variables_of(deployment=deployment))

        def item(row: Any) -> dict[str, str]:
            if env_variable_is_secret(row.name):
                return {"name": row.name, "value": accounts.ENCRYPTED_PLACEHOLDER}
            return {"name": row.name, "value": selectors.env_variable_value(variable=row)}

        return Response(page_of_list(rows, params=request.query_params, key=lambda r: r.name, serialize=item))

    @extend_schema(parameters=PAGE_PARAMETERS, responses={200: ENV_VARIABLES, 400: INVALID, 404: DEPLOYMENT_NOT_FOUND})
    def get(self, request: PlatformRequest, deployment_id: str) -> Response:
        return self._list(request, self.deployment(request, deployment_id))

    @extend_schema(
        request=whole(type(ENV_VARIABLES_PUT)),
        parameters=PAGE_PARAMETERS,
        responses={200: ENV_VARIABLES, 400: BODY_INVALID, 404: DEPLOYMENT_NOT_FOUND},
    )
    def put(self, request: PlatformRequest, deployment_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        body = json_object_body(request, fields=("env_variables",))
        given = body.get("env_variables")
        if not isinstance(given, list):
            raise BadRequest("env_variables: must be a list of {name, value}")
        variables: list[tuple[str, str]] = []
        for index, entry in enumerate(given):
            if not isinstance(entry, dict) or set(entry) != {"name", "value"}:
                raise BadRequest(f"env_variables[{index}]: must be an object {{name, value}}")
            name, value = entry["name"], entry["value"]
            if not isinstance(name, str) or not 0 < len(name) <= 255:
                raise BadRequest(f"env_variables[{index}].name: must be a string of 1 to 255 characters")
            if not isinstance(value, str) or len(value) > 32_768:
                raise BadRequest(f"env_variables[{index}].value: must be a string of at most 32768 characters")
            variables.append((name, value))
        accounts.env_variables_set(deployment=deployment, variables=variables)
        return self._list(request, deployment)

    patch = put


# --- regions -------------------------------------------------------------------------------------------------


class RegionListView(PlatformView):
    """``GET /api/v1/regions``: this install is one region, named by the ``PLATFORM_REGION`` setting
    (default ``local``)."""

    @extend_schema(
        operation_id="regions_list",
        parameters=PAGE_PARAMETERS,
        responses={
            200: page_of(
                "RegionPage",
                inline_serializer(
                    "Region",
                    {
                        "id": serializers.CharField(),
                        "name": serializers.CharField(),
                        "title": serializers.CharField(),
                        "provider": serializers.CharField(),
                        "isPublic": serializers.BooleanField(),
                        "isDedicated": serializers.BooleanField(),
                        "isHybrid": serializers.BooleanField(),
                        "useAiEngineer": serializers.BooleanField(),
                    },
                ),
                **_IN_MEMORY_PAGE,
            ),
            400: INVALID,
        },
    )
    def get(self, request: PlatformRequest) -> Response:
        name = getattr(settings, "PLATFORM_REGION", "local")
        region = {
            "id": name,
            "name": name,
            "title": name,
            "provider": "self-hosted",
            "isPublic": False,
            "isDedicated": True,
            "isHybrid": False,
            "useAiEngineer": False,
        }
        return Response(page_of_list([region], params=request.query_params, key=lambda r: r["id"], serialize=dict))


# --- data model ----------------------------------------------------------------------------------------------


# Fields shared by two shapes: each inline_serializer gets its own dict (DRF takes the fields out of the dict a
# serializer class is made from, which left the second shape with only its own field).
MODEL_FILE_FIELDS: dict[str, serializers.Field] = {
    "path": serializers.CharField(help_text="Relative to the model directory"),
    "size": serializers.IntegerField(help_text="Bytes"),
    "updatedAt": serializers.DateTimeField(),
}
MODEL_FILE = inline_serializer("ModelFile", dict(MODEL_FILE_FIELDS))


class ModelFileListView(PlatformView):
    """``GET /build/api/v1/deployments/{id}/files``: the deployment's model files (YAML and Jinja), by path."""

    @extend_schema(
        operation_id="build_api_v1_deployments_files_list",
        parameters=PAGE_PARAMETERS,
        responses={
            200: page_of("ModelFilePage", MODEL_FILE, **_IN_MEMORY_PAGE),
            400: INVALID,
            404: DEPLOYMENT_NOT_FOUND,
        },
    )
    def get(self, request: PlatformRequest, deployment_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        files = data_model.model_files_of(deployment)
        return Response(page_of_list(files, params=request.query_params, key=lambda f: f.path, serialize=dict))


class ModelFileView(PlatformView):
    """``GET /build/api/v1/deployments/{id}/files/{path}``: one model file, ``{path, size, updatedAt, content}``."""

    @extend_schema(
        responses={
            200: inline_serializer(
                "ModelFileContent", {**MODEL_FILE_FIELDS, "content": serializers.CharField(allow_blank=True)}
            ),
            400: error("Not a relative path of a model file (.yml, .yaml, .jinja)"),
            404: error("No such deployment in the caller's account, or no such file in its model"),
        }
    )
    def get(self, request: PlatformRequest, deployment_id: str, file_path: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        return Response(data_model.model_file_read(deployment, file_path))


class DataModelUploadView(PlatformView):
    """``POST /build/api/v1/deployments/{id}/data-model``: JSON ``{files: [{path, content}], replace?}`` or a
    multipart form whose file fields are named by their path. Compiled as a whole before anything is written
    (400 with the compiler's ``file:line`` message when it fails); then swapped into the model directory at once."""

    audit_via = "build_api"
    audit_resource = "data_model"
    audit_verbs = {"POST": "upload"}
    audit_id_kwarg = "deployment_id"

    parser_classes = [JSONBodyParser, MultiPartParser]

    @extend_schema(
        request={
            "application/json": inline_serializer(
                "DataModelUpload",
                {
                    "files": many(
                        inline_serializer(
                            "DataModelFile",
                            {
                                "path": serializers.CharField(max_length=500, help_text="A .yml, .yaml or .jinja path"),
                                "content": serializers.CharField(allow_blank=True),
                            },
                        ),
                        min_length=1,
                        max_length=data_model.MAX_FILES,
                    ),
                    "replace": serializers.BooleanField(
                        required=False, help_text="true: the upload replaces every other model file"
                    ),
                },
            ),
            "multipart/form-data": {
                "type": "object",
                "description": "One file field per model file, named by its path",
                "additionalProperties": {"type": "string", "format": "binary"},
            },
        },
        responses={
            200: inline_serializer(
                "DataModelUploaded",
                {
                    "files": serializers.ListField(child=serializers.CharField(), help_text="The paths written"),
                    "entities": serializers.ListField(child=serializers.CharField(), help_text="Cubes and views"),
                },
            ),
            400: error("Invalid files, or a model that does not compile (the compiler's file:line message)"),
            404: DEPLOYMENT_NOT_FOUND,
        },
    )
    def post(self, request: PlatformRequest, deployment_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        files, replace = data_model.upload_of(request)
        result = data_model.model_upload(deployment, files, replace=replace)
        return Response(result)


# --- API keys and platform tokens ----------------------------------------------------------------------------


API_KEY_FIELDS: dict[str, serializers.Field] = {
    "id": serializers.IntegerField(),
    "name": serializers.CharField(allow_blank=True),
    "kind": serializers.ChoiceField(choices=ApiKey.Kind.values),
    "prefix": serializers.CharField(),
    "ownerId": serializers.IntegerField(allow_null=True, help_text="A personal key's internal user"),
    "deploymentIds": serializers.ListField(
        child=serializers.IntegerField(), help_text="The only deployments the key may act on; empty: all"
    ),
    "createdAt": serializers.DateTimeField(),
    "revokedAt": serializers.DateTimeField(allow_null=True),
}
API_KEY = inline_serializer("ApiKey", dict(API_KEY_FIELDS))
API_KEY_NOT_FOUND = error("No API key with this id in the caller's account")


def api_key_item(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.pk,
        "name": key.name,
        "kind": key.kind,
        "prefix": key.prefix,
        "ownerId": key.owner_id,
        "deploymentIds": sorted(d.pk for d in key.deployments.all()),
        "createdAt": iso_time(key.created_at),
        "revokedAt": iso_time(key.revoked_at),
    }


class ApiKeyListView(PlatformView):
    """``GET|POST /api/v1/api-keys``. POST ``{name?, kind? admin|personal, ownerId? (personal), deploymentIds?}``
    answers the key once in ``key``; a key with ``deploymentIds`` may act on those deployments only."""

    audit_resource = "api_key"

    @extend_schema(
        operation_id="api_keys_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_of("ApiKeyPage", API_KEY), 400: INVALID},
    )
    def get(self, request: PlatformRequest) -> Response:
        page = paginate(selectors.api_keys_of(account=request.user.account), params=request.query_params)
        return Response(page.as_dict(api_key_item))

    @extend_schema(
        request=inline_serializer(
            "ApiKeyCreate",
            {
                "name": serializers.CharField(required=False, max_length=200),
                "kind": serializers.ChoiceField(choices=ApiKey.Kind.values, required=False, help_text="admin"),
                "ownerId": serializers.IntegerField(required=False, help_text="A personal key's internal user"),
                "deploymentIds": serializers.ListField(child=serializers.IntegerField(), required=False),
            },
        ),
        responses={
            201: OpenApiResponse(
                inline_serializer(
                    "ApiKeyCreated", {**API_KEY_FIELDS, "key": serializers.CharField(help_text="Shown this once")}
                ),
                description="Created: the key is in this answer only",
            ),
            400: BODY_INVALID,
            404: error("No such owner or deployment in the caller's account"),
        },
    )
    def post(self, request: PlatformRequest) -> Response:
        body = json_object_body(request, fields=("name", "kind", "ownerId", "deploymentIds"))
        name = _text(body, "name") or ""
        kind = body.get("kind", ApiKey.Kind.ADMIN)
        if kind not in ApiKey.Kind.values:
            raise BadRequest("kind: must be admin or personal")
        owner = None
        if kind == ApiKey.Kind.PERSONAL:
            if "ownerId" not in body:
                raise BadRequest("ownerId: a personal key needs its owner, an internal user of the account")
            owner = selectors.internal_user_of(account=request.user.account, user_id=body["ownerId"])
        elif "ownerId" in body:
            raise BadRequest("ownerId: only a personal key has an owner")
        ids = body.get("deploymentIds", [])
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise BadRequest("deploymentIds: must be a list of deployment ids")
        for deployment_id in ids:
            self.deployment(request, deployment_id)
        plaintext, key = accounts.api_key_create(
            account=request.user.account, name=name, personal_owner=owner, deployment_ids=ids
        )
        return Response({**api_key_item(key), "key": plaintext}, status=201)


class ApiKeyDetailView(PlatformView):
    """``GET /api/v1/api-keys/{id}``; ``DELETE`` revokes the key (204; it stays listed with ``revokedAt``)."""

    audit_resource = "api_key"
    audit_verbs = {"DELETE": "revoke"}

    @extend_schema(responses={200: API_KEY, 404: API_KEY_NOT_FOUND})
    def get(self, request: PlatformRequest, key_id: str) -> Response:
        return Response(api_key_item(selectors.api_key_of(account=request.user.account, key_id=key_id)))

    @extend_schema(responses={204: None, 404: API_KEY_NOT_FOUND})
    def delete(self, request: PlatformRequest, key_id: str) -> Response:
        accounts.api_key_revoke(key=selectors.api_key_of(account=request.user.account, key_id=key_id))
        return Response(status=204)


PLATFORM_TOKEN_FIELDS: dict[str, serializers.Field] = {
    "id": serializers.IntegerField(),
    "name": serializers.CharField(allow_blank=True),
    "prefix": serializers.CharField(),
    "createdAt": serializers.DateTimeField(),
    "revokedAt": serializers.DateTimeField(allow_null=True),
}
PLATFORM_TOKEN = inline_serializer("PlatformToken", dict(PLATFORM_TOKEN_FIELDS))
PLATFORM_TOKEN_NOT_FOUND = error("No platform token with this id in the caller's account")


def platform_token_item(token: PlatformToken) -> dict[str, Any]:
    return {
        "id": token.pk,
        "name": token.name,
        "prefix": token.prefix,
        "createdAt": iso_time(token.created_at),
        "revokedAt": iso_time(token.revoked_at),
    }


class PlatformTokenListView(PlatformView):
    """``GET|POST /api/v1/platform-tokens``; POST ``{name?}`` answers the token once in ``token``."""

    audit_resource = "platform_token"

    @extend_schema(
        operation_id="platform_tokens_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_of("PlatformTokenPage", PLATFORM_TOKEN), 400: INVALID},
    )
    def get(self, request: PlatformRequest) -> Response:
        page = paginate(selectors.platform_tokens_of(account=request.user.account), params=request.query_params)
        return Response(page.as_dict(platform_token_item))

    @extend_schema(
        request=inline_serializer(
            "PlatformTokenCreate", {"name": serializers.CharField(required=False, max_length=200)}
        ),
        responses={
            201: OpenApiResponse(
                inline_serializer(
                    "PlatformTokenCreated",
                    {**PLATFORM_TOKEN_FIELDS, "token": serializers.CharField(help_text="Shown this once")},
                ),
                description="Created: the token is in this answer only",
            ),
            400: BODY_INVALID,
        },
    )
    def post(self, request: PlatformRequest) -> Response:
        body = json_object_body(request, fields=("name",))
        plaintext, token = accounts.platform_token_create(account=request.user.account, name=_text(body, "name") or "")
        return Response({**platform_token_item(token), "token": plaintext}, status=201)


class PlatformTokenDetailView(PlatformView):
    """``GET /api/v1/platform-tokens/{id}``; ``DELETE`` revokes it (204), the caller's own token included."""

    audit_resource = "platform_token"
    audit_verbs = {"DELETE": "revoke"}

    @extend_schema(responses={200: PLATFORM_TOKEN, 404: PLATFORM_TOKEN_NOT_FOUND})
    def get(self, request: PlatformRequest, token_id: str) -> Response:
        token = selectors.platform_token_of(account=request.user.account, token_id=token_id)
        return Response(platform_token_item(token))

    @extend_schema(responses={204: None, 404: PLATFORM_TOKEN_NOT_FOUND})
    def delete(self, request: PlatformRequest, token_id: str) -> Response:
        token = selectors.platform_token_of(account=request.user.account, token_id=token_id)
        accounts.platform_token_revoke(token=token)
        return Response(status=204)


# --- resources whose semantics are not published ------------------------------------------------------------


class NotImplementedView(PlatformView):
    """501 for a resource Cube names but whose semantics it does not publish (``resource`` says which). A
    deployment-scoped one answers 404 first for a deployment that is not the caller's."""

    audit_exempt = dict.fromkeys(("POST", "PUT", "PATCH", "DELETE"), "answers 501 and changes nothing")

    resource = ""

    def _answer(self, request: PlatformRequest, *args: Any, **kwargs: Any) -> Response:
        if "deployment_id" in kwargs:
            self.deployment(request, kwargs["deployment_id"])
        message = f"{self.resource} is not implemented: its semantics are not published by Cube, so this install "
        message += "does not guess them"
        return Response({"error": message}, status=501)

    get = post = put = patch = delete = head = _answer
    options = _answer  # type: ignore[assignment]  # DRF types options() with Request; ours narrows it
