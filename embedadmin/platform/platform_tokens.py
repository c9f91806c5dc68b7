"""Platform API v1, the account's platform tokens as a resource: ``GET|POST /api/v1/platform-tokens`` and
``GET|DELETE /api/v1/platform-tokens/{id}`` (a DELETE revokes). Every lookup is scoped to the caller's account:
another account's token is 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts import selectors
from embedadmin.accounts import services as accounts
from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import PlatformToken
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.times import iso_time
from embedadmin.core.pagination import paginate
from embedadmin.platform.openapi import created_with_secret, error, page_of, page_operation
from embedadmin.platform.platform_view import BODY_INVALID, PlatformView, body_text

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

    @page_operation(page_of("PlatformTokenPage", PLATFORM_TOKEN), operation_id="platform_tokens_list")
    def get(self, request: PlatformRequest) -> Response:
        page = paginate(selectors.platform_tokens_of(account=request.user.account), params=request.query_params)
        return Response(page.as_dict(platform_token_item))

    @extend_schema(
        request=inline_serializer(
            "PlatformTokenCreate", {"name": serializers.CharField(required=False, max_length=200)}
        ),
        responses={
            201: created_with_secret("PlatformTokenCreated", PLATFORM_TOKEN_FIELDS, "token"),
            400: BODY_INVALID,
        },
    )
    def post(self, request: PlatformRequest) -> Response:
        body = json_object_body(request, fields=("name",))
        plaintext, token = accounts.platform_token_create(
            account=request.user.account, name=body_text(body, "name") or ""
        )
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
