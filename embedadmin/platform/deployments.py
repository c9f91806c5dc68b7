"""Platform API v1, the account's deployments: ``GET /api/v1/deployments``, ``POST /build/api/v1/deployments``,
``GET|PATCH|PUT|DELETE /api/v1/deployments/{id}`` and ``POST /api/v1/deployments/{id}/token`` (a Core Data API
token, signed and recorded by :func:`deployment_token_issue`, which the environments' tokens share).

Thin adapters over ``embedadmin.accounts`` services and selectors. Every lookup is scoped to the caller's account:
another account's deployment is 404.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts import selectors
from embedadmin.accounts import services as accounts
from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import Deployment, IssuedToken, PlatformToken
from embedadmin.accounts.tokens import deployment_token_sign
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import BadRequest
from embedadmin.core.pagination import paginate
from embedadmin.platform import data_model
from embedadmin.platform.openapi import error, page_of, page_operation
from embedadmin.platform.platform_view import BODY_INVALID, DEPLOYMENT_NOT_FOUND, PlatformView, body_int, body_text
from embedadmin.semantic.serving.auth import API_SCOPES_CLAIM

DEPLOYMENT_SUMMARY = inline_serializer(
    "DeploymentSummary",
    {"id": serializers.IntegerField(), "name": serializers.CharField(), "slug": serializers.CharField()},
)
COMPILE_CONTEXT_KEYS_HELP = (
    "The security-context fields whose values select a compiled model (Cube's contextToAppId): the model is compiled "
    "once per distinct set of values, with COMPILE_CONTEXT.securityContext holding just these fields. A caller whose "
    "security context lacks one is refused (403). [] turns it off"
)
TENANT_DATA_SOURCES_HELP = (
    "The security-context field whose value selects the data source (Cube's driverFactory), and each value's URL "
    "(one kind of source; passwords shown as ***, send them in full). A caller without the field or with a value "
    "not listed is refused (403). null turns it off"
)


def tenant_data_sources_schema(**options: Any) -> serializers.Serializer:
    return inline_serializer(
        "TenantDataSources",
        {
            "field": serializers.CharField(help_text="A security-context field (a dotted path into a nested claim)"),
            "sources": serializers.DictField(child=serializers.CharField(), help_text="value -> data source URL"),
        },
        allow_null=True,
        help_text=TENANT_DATA_SOURCES_HELP,
        **options,
    )


OPEN_TO_EMBED_HELP = (
    "Unsafe. Embed viewers read only the cubes and views whose access policy grants them; true opens every cube "
    "and view without an access policy to every embed viewer of this deployment, as Cube does for any token"
)
LOAD_WHAT_COMPILES_HELP = (
    "false (the default): any fault in the data model refuses the whole model. true: the cubes and views that "
    "compile serve, and /v1/meta lists the others with their errors in compilerErrors"
)
PRE_AGGREGATION_STORAGE_HELP = (
    "Where the deployment's rollup pre-aggregations live (Cube's CUBEJS_PRE_AGGREGATIONS_SCHEMA): store (the "
    "default: the deployment's DuckDB store) or source, with schema, a schema of the data source itself (PostgreSQL, "
    "MySQL/MariaDB and ClickHouse, where it is a database, Trino, Snowflake, Databricks, BigQuery, where it is a "
    "dataset; builds create it and write their tables there, queries a rollup answers then run on the source)"
)


def pre_aggregation_storage_schema(**options: Any) -> serializers.Serializer:
    return inline_serializer(
        "PreAggregationStorage",
        {
            "location": serializers.ChoiceField(choices=["store", "source"]),
            "schema": serializers.CharField(
                allow_null=True, required=False, help_text="with location source: the schema (lower-case identifier)"
            ),
        },
        help_text=PRE_AGGREGATION_STORAGE_HELP,
        **options,
    )


def pre_aggregation_storage_input(value: Any) -> str:
    """``preAggregationStorage`` as sent, as the schema the service stores (``""``: the store); else 400."""
    if not isinstance(value, dict) or set(value) - {"location", "schema"}:
        raise BadRequest("preAggregationStorage: must be an object {location, schema}")
    location, schema = value.get("location"), value.get("schema")
    if location == "store":
        if schema not in (None, ""):
            raise BadRequest("preAggregationStorage.schema: only with location source")
        return ""
    if location != "source":
        raise BadRequest("preAggregationStorage.location: must be store or source")
    if not isinstance(schema, str) or not schema:
        raise BadRequest("preAggregationStorage.schema: location source needs a schema name")
    return schema


def pre_aggregation_storage_item(deployment: Deployment) -> dict[str, Any]:
    schema = deployment.pre_aggregations_schema
    return {"location": "source", "schema": schema} if schema else {"location": "store", "schema": None}


DEPLOYMENT = inline_serializer(
    "Deployment",
    {
        "id": serializers.IntegerField(),
        "name": serializers.CharField(),
        "slug": serializers.CharField(),
        "createdAt": serializers.DateTimeField(),
        "updatedAt": serializers.DateTimeField(),
        "openToEmbedWithoutPolicy": serializers.BooleanField(help_text=OPEN_TO_EMBED_HELP),
        "compileContextKeys": serializers.ListField(child=serializers.CharField(), help_text=COMPILE_CONTEXT_KEYS_HELP),
        "tenantDataSources": tenant_data_sources_schema(),
        "loadWhatCompiles": serializers.BooleanField(help_text=LOAD_WHAT_COMPILES_HELP),
        "preAggregationStorage": pre_aggregation_storage_schema(),
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
        "compileContextKeys": serializers.ListField(
            child=serializers.CharField(), required=False, help_text=COMPILE_CONTEXT_KEYS_HELP
        ),
        "tenantDataSources": tenant_data_sources_schema(required=False),
        "loadWhatCompiles": serializers.BooleanField(required=False, help_text=LOAD_WHAT_COMPILES_HELP),
        "preAggregationStorage": pre_aggregation_storage_schema(required=False),
    },
)
SLUG_TAKEN = error("Another deployment of the account has this slug")


def deployment_item(deployment: Deployment) -> dict[str, Any]:
    return {
        "id": deployment.pk,
        "name": deployment.name,
        "slug": deployment.slug,
        "createdAt": iso_time(deployment.created_at),
        "updatedAt": iso_time(deployment.updated_at),
        "openToEmbedWithoutPolicy": deployment.open_to_embed_without_policy,
        "compileContextKeys": list(deployment.compile_context_keys),
        "tenantDataSources": selectors.deployment_tenant_data_sources_shown(deployment=deployment),
        "loadWhatCompiles": deployment.load_partial_model,
        "preAggregationStorage": pre_aggregation_storage_item(deployment),
    }


def tenant_data_sources_input(value: Any) -> accounts.TenantDataSources:
    """``tenantDataSources`` as sent: ``null`` (none) or ``{field, sources: {value: url}}``; else 400."""
    if value is None:
        return accounts.TenantDataSources()
    if not isinstance(value, dict) or set(value) - {"field", "sources"}:
        raise BadRequest("tenantDataSources: must be null or an object {field, sources}")
    sources = value.get("sources")
    if not isinstance(sources, dict):
        raise BadRequest("tenantDataSources.sources: must be an object of values and data source URLs")
    return accounts.TenantDataSources(field=value.get("field", ""), sources=sources)


class DeploymentListView(PlatformView):
    @page_operation(page_of("DeploymentSummaryPage", DEPLOYMENT_SUMMARY), operation_id="deployments_list")
    def get(self, request: PlatformRequest) -> Response:
        deployments = selectors.deployments_of(account=request.user.account)
        page = paginate(deployments, params=request.query_params)
        return Response(page.as_dict(lambda d: {"id": d.pk, "name": d.name, "slug": d.slug}))


class DeploymentCreateView(PlatformView):
    """``POST /build/api/v1/deployments`` ``{name, slug?}``: a deployment with a new HS256 signing secret (as the
    account bootstrap makes one). The slug defaults to one made from the name; the secret is not answered (it signs
    the tokens ``POST /api/v1/deployments/{id}/token`` issues)."""

    audit_via = "build_api"
    audit_resource = "deployment"

    @extend_schema(request=DEPLOYMENT_CREATE, responses={201: DEPLOYMENT, 400: BODY_INVALID, 409: SLUG_TAKEN})
    def post(self, request: PlatformRequest) -> Response:
        body = json_object_body(request, fields=("name", "slug"))
        name = body_text(body, "name", required=True)
        assert name is not None
        slug = body_text(body, "slug", max_length=63) or data_model.slug_of(name)
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
        body = json_object_body(
            request,
            fields=(
                "name",
                "slug",
                "openToEmbedWithoutPolicy",
                "compileContextKeys",
                "tenantDataSources",
                "loadWhatCompiles",
                "preAggregationStorage",
            ),
        )
        open_to_embed = body.get("openToEmbedWithoutPolicy")
        if open_to_embed is not None and not isinstance(open_to_embed, bool):
            raise BadRequest("openToEmbedWithoutPolicy: must be true or false")
        partial = body.get("loadWhatCompiles")
        if "loadWhatCompiles" in body and not isinstance(partial, bool):
            raise BadRequest("loadWhatCompiles: must be true or false")
        keys = body.get("compileContextKeys")
        tenant_sources = tenant_data_sources_input(body["tenantDataSources"]) if "tenantDataSources" in body else None
        storage = body.get("preAggregationStorage")
        rollup_schema = pre_aggregation_storage_input(storage) if "preAggregationStorage" in body else None
        with transaction.atomic():  # all the changes, or none (a bad setting after a rename leaves the name)
            deployment = accounts.deployment_update(
                deployment=deployment, name=body_text(body, "name"), slug=body_text(body, "slug", max_length=63)
            )
            if any(setting is not None for setting in (open_to_embed, keys, tenant_sources, partial, rollup_schema)):
                deployment = accounts.deployment_configure(
                    deployment=deployment,
                    open_to_embed_without_policy=open_to_embed,
                    compile_context_keys=keys,
                    tenant_data_sources=tenant_sources,
                    load_partial_model=partial,
                    pre_aggregations_schema=rollup_schema,
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


def deployment_token_issue(
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
        expires_in = body_int(body, "expiresIn", 60, 86400, 86400)
        token, _ = deployment_token_issue(
            request,
            deployment,
            kind=IssuedToken.Kind.DEPLOYMENT,
            security_context=deployment_token_claims(request.user.token),
            expires_in=expires_in,
        )
        return Response({"cubeApiToken": token})
