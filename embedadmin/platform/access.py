"""``GET /api/v1/deployments/{deploymentId}/access``: who can read what. For one embed viewer, every cube and view
of the deployment's model: whether they may read it (and why not), the members they may read, and the row filters
with their values filled in.

The viewer is an existing external user of the caller's account (``externalId``, as they are: their groups and
attribute values, optionally within another embed tenant), or one described by an embed tenant, groups and
attribute values (``embedTenant``, ``groups``, ``attributes``), with an optional ``securityContext``. Their query
context is built as their real embed token's is: the claims a read-only generate-session would store for them
(groups and attributes resolved in the account's tenant-wide catalog, defaults filled in), made into the token's
payload by ``embedding.services.embed_token_claims``, then ``semantic.serving.routing.viewer_context``; each entity is
then judged by ``semantic.serving.services.semantic_grants``, the decision ``/v1/meta`` and every query make.
Nothing is written: no external user is made or changed, no session is minted.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import Deployment
from embedadmin.core.errors import BadRequest, NotFound
from embedadmin.core.fields import contains_nul, has_lone_surrogate, has_non_finite, loads_json
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory.models import ExternalUser
from embedadmin.embedding.viewers import EmbedViewer, embed_viewer_grants, embed_viewer_resolve
from embedadmin.platform.openapi import error
from embedadmin.platform.platform_view import PlatformView
from embedadmin.semantic.query.normalized import Contradiction, FilterCondition, FilterNode
from embedadmin.semantic.results.grants import EntityGrant

MAX_PARAMETER_LENGTH = 1000
MAX_GROUPS = 1000


def _text(params: Any, name: str) -> str | None:
    raw = params.get(name)
    if raw is None:
        return None
    text = str(raw)
    if "\x00" in text or has_lone_surrogate(text) or len(text) > MAX_PARAMETER_LENGTH:
        raise BadRequest(f"{name}: not a valid value")
    return text


def _groups(params: Any) -> list[str]:
    names: list[str] = []
    for raw in params.getlist("groups"):
        for name in str(raw).split(","):
            if "\x00" in name or has_lone_surrogate(name) or len(name) > MAX_PARAMETER_LENGTH:
                raise BadRequest("groups: not a valid group name")
            if name.strip():
                names.append(name.strip())
    if len(names) > MAX_GROUPS:
        raise BadRequest(f"groups: at most {MAX_GROUPS}")
    return names


def _json_object(params: Any, name: str, expected: str) -> dict[str, Any] | None:
    raw = params.get(name)
    if raw in (None, ""):
        return None
    try:
        value = loads_json(str(raw))
    except ValueError:
        raise BadRequest(f"{name}: not valid JSON (expected {expected})") from None
    if not isinstance(value, dict):
        raise BadRequest(f"{name}: expected {expected}")
    if contains_nul(value) or has_non_finite(value):
        raise BadRequest(f"{name}: not a valid value")
    return value


def _viewer(request: PlatformRequest, deployment: Deployment) -> EmbedViewer:
    params = request.query_params
    account = request.user.account
    external_id = _text(params, "externalId")
    tenant_name = _text(params, "embedTenant")
    groups = _groups(params)
    attributes = _json_object(params, "attributes", "an object of attribute name -> value")
    security_context = _json_object(params, "securityContext", "an object") or {}
    external_user = None
    if external_id is not None:
        if groups or attributes:
            raise BadRequest("externalId names a viewer as they are: leave out groups and attributes")
        external_user = ExternalUser.objects.filter(account=account, external_id=external_id).first()
        if external_user is None:
            raise NotFound(f"External user {external_id!r} not found")
    embed_tenant = external_user.embed_tenant if external_user is not None else None
    if tenant_name is not None:
        embed_tenant = directory_selectors.embed_tenant_by_name(account=account, name=tenant_name)
        if embed_tenant is None:
            raise NotFound(f"Embed tenant {tenant_name!r} not found")
    return embed_viewer_resolve(
        account=account,
        deployment=deployment,
        external_user=external_user,
        embed_tenant=embed_tenant,
        group_names=groups,
        attribute_values=list((attributes or {}).items()),
        security_context=security_context,
    )


def filter_item(node: FilterNode) -> dict[str, Any]:
    """A row filter as the API shows it: ``{member, operator, values}``, ``{and: [...]}``/``{or: [...]}``, or
    ``{noRows: why}`` for a filter no row meets (a value the viewer lacks)."""
    if isinstance(node, FilterCondition):
        return {"member": node.member, "operator": node.operator, "values": list(node.values or ())}
    if isinstance(node, Contradiction):
        return {"noRows": node.reason}
    return {node.kind: [filter_item(item) for item in node.items]}


def entity_item(grant: EntityGrant) -> dict[str, Any]:
    item: dict[str, Any] = {
        "name": grant.name,
        "title": grant.title,
        "type": grant.type,
        "access": "granted" if grant.granted else "denied",
    }
    if grant.reason is not None:
        item["reason"] = grant.reason
    item["members"] = [{"name": m.name, "title": m.title, "kind": m.kind} for m in grant.members]
    item["rowFilters"] = [filter_item(node) for node in grant.row_filters]
    item["allRows"] = grant.all_rows
    return item


def viewer_item(viewer: EmbedViewer) -> dict[str, Any]:
    item: dict[str, Any] = {}
    if viewer.external_id is not None:
        item["externalId"] = viewer.external_id
    if viewer.embed_tenant is not None:
        item["embedTenant"] = viewer.embed_tenant
    item["groups"] = viewer.groups
    item["userAttributes"] = viewer.user_attributes
    if viewer.security_context:
        item["securityContext"] = viewer.security_context
    return item


ACCESS = inline_serializer(
    "DeploymentAccess",
    {
        "viewer": inline_serializer(
            "AccessViewer",
            {
                "externalId": serializers.CharField(required=False),
                "embedTenant": serializers.CharField(required=False),
                "groups": serializers.ListField(child=serializers.CharField()),
                "userAttributes": serializers.DictField(help_text="Typed values, defaults filled in"),
                "securityContext": serializers.DictField(required=False),
            },
        ),
        "openToEmbedWithoutPolicy": serializers.BooleanField(
            help_text="The deployment opens cubes and views without an access policy to embed viewers"
        ),
        "entities": serializers.ListField(
            child=inline_serializer(
                "EntityAccess",
                {
                    "name": serializers.CharField(),
                    "title": serializers.CharField(),
                    "type": serializers.CharField(help_text="cube or view"),
                    "access": serializers.CharField(help_text="granted or denied"),
                    "reason": serializers.CharField(
                        required=False, help_text="Why it is denied, or why it is open without an access policy"
                    ),
                    "members": serializers.ListField(
                        child=inline_serializer(
                            "GrantedMember",
                            {
                                "name": serializers.CharField(),
                                "title": serializers.CharField(),
                                "kind": serializers.CharField(help_text="measure, dimension or segment"),
                            },
                        )
                    ),
                    "rowFilters": serializers.ListField(
                        child=serializers.DictField(),
                        help_text="ANDed; each {member, operator, values}, {and: [...]}, {or: [...]}, or "
                        "{noRows: why} (a value the viewer lacks: no row is read)",
                    ),
                    "allRows": serializers.BooleanField(),
                },
            )
        ),
    },
)


class DeploymentAccessView(PlatformView):
    """``GET /api/v1/deployments/{deploymentId}/access?externalId=...`` or ``?embedTenant&groups&attributes``."""

    @extend_schema(
        parameters=[
            OpenApiParameter("externalId", str, description="An existing external user of the account, as they are"),
            OpenApiParameter(
                "embedTenant", str, description="The embed tenant of the session (an external user's own by default)"
            ),
            OpenApiParameter(
                "groups",
                {"type": "array", "items": {"type": "string"}},
                explode=True,
                description="Tenant-wide group names, repeated or comma-separated (not with externalId)",
            ),
            OpenApiParameter(
                "attributes",
                OpenApiTypes.STR,
                description='A JSON object of tenant-wide attribute name -> typed value, {"country": "Germany"} '
                "(not with externalId); the others get their defaults",
            ),
            OpenApiParameter(
                "securityContext", OpenApiTypes.STR, description="A JSON object: the session's securityContext"
            ),
        ],
        responses={
            200: ACCESS,
            400: error(
                "A parameter that is not valid, malformed JSON, an unknown group or attribute, a value of the wrong "
                "type, externalId with groups or attributes, or a deployment without a data model"
            ),
            404: error("No such deployment, external user or embed tenant in the caller's account"),
        },
    )
    def get(self, request: PlatformRequest, deployment_id: int) -> Response:
        deployment = self.deployment(request, deployment_id)
        viewer = _viewer(request, deployment)
        grants = embed_viewer_grants(deployment=deployment, viewer=viewer)
        return Response(
            {
                "viewer": viewer_item(viewer),
                "openToEmbedWithoutPolicy": deployment.open_to_embed_without_policy,
                "entities": [entity_item(grant) for grant in grants],
            }
        )
