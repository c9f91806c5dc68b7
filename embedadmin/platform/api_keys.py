"""Platform API v1, the account's API keys as a resource: ``GET|POST /api/v1/api-keys`` and ``GET|DELETE
/api/v1/api-keys/{id}`` (a DELETE revokes). Every lookup is scoped to the caller's account: another account's key
is 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts import selectors
from embedadmin.accounts import services as accounts
from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import ApiKey
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import BadRequest
from embedadmin.core.pagination import paginate
from embedadmin.platform.openapi import created_with_secret, error, page_of, page_operation
from embedadmin.platform.platform_view import BODY_INVALID, PlatformView, body_text

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

    @page_operation(page_of("ApiKeyPage", API_KEY), operation_id="api_keys_list")
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
            201: created_with_secret("ApiKeyCreated", API_KEY_FIELDS, "key"),
            400: BODY_INVALID,
            404: error("No such owner or deployment in the caller's account"),
        },
    )
    def post(self, request: PlatformRequest) -> Response:
        body = json_object_body(request, fields=("name", "kind", "ownerId", "deploymentIds"))
        name = body_text(body, "name") or ""
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
