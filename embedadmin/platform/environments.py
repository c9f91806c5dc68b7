"""Platform API v1, a deployment's environments and the tokens issued in them: ``GET
/api/v1/deployments/{id}/environments``, ``GET|POST /api/v1/deployments/{id}/environments/{envId}/tokens`` and
``.../tokens-for-meta-sync``. This install runs one environment per deployment, ``production``; its tokens are
signed and recorded as the deployment's own token is (:func:`embedadmin.platform.deployments.deployment_token_issue`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts import selectors
from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import Deployment, IssuedToken
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import BadRequest, NotFound
from embedadmin.core.pagination import paginate
from embedadmin.platform.deployments import deployment_token_issue
from embedadmin.platform.openapi import error, many, page_of, page_operation
from embedadmin.platform.platform_view import (
    BODY_INVALID,
    DEPLOYMENT_NOT_FOUND,
    IN_MEMORY_PAGE,
    PlatformView,
    body_int,
    page_of_list,
)

PRODUCTION = "production"
_PAGINATION = inline_serializer(
    "OffsetPagination",
    {
        "offset": serializers.IntegerField(),
        "limit": serializers.IntegerField(),
        "total": serializers.IntegerField(),
    },
)


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

    @page_operation(
        page_of("EnvironmentPage", ENVIRONMENT, **IN_MEMORY_PAGE, pagination=_PAGINATION),
        filters=[OpenApiParameter("type", str, enum=["production", "staging", "development"])],
        errors={404: DEPLOYMENT_NOT_FOUND},
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

    @page_operation(
        OpenApiResponse(
            page_of("IssuedTokenPage", ISSUED_TOKEN, data=True, pagination=_PAGINATION),
            description="The unexpired tokens issued, newest first",
        ),
        errors={404: ENVIRONMENT_NOT_FOUND},
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
        expires_in = body_int(body, "expires_in", 1, 3600, 3600)
        scopes = body.get("scopes", [])
        if not isinstance(scopes, list) or not all(isinstance(s, str) and 0 < len(s) <= 100 for s in scopes):
            raise BadRequest("scopes: must be a list of strings")
        token, record = deployment_token_issue(
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
