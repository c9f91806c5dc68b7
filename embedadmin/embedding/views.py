"""HTTP edge of embedding: generate-session, token exchange, revoke, session context, embed-tenant admin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from embedadmin.accounts.authentication import ApiKeyAuthentication, ApiKeyRequest, IsAdminApiKey
from embedadmin.accounts.tokens import TokenInvalid
from embedadmin.core.errors import Unauthorized
from embedadmin.core.pagination import paginate
from embedadmin.dashboards.access import embed_token_verify
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory import services as directory
from embedadmin.directory.contracts import attribute_definition_item
from embedadmin.directory.models import EmbedTenant, Group
from embedadmin.embedding import services
from embedadmin.embedding.serializers import SessionIdSerializer, generate_session_input

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    from embedadmin.directory.selectors import GroupCounts


class AdminApiKeyView(APIView):
    """Base for endpoints that require an admin ``Api-Key``; ``request.user`` is the caller."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsAdminApiKey]


class GenerateSessionView(AdminApiKeyView):
    def post(self, request: ApiKeyRequest) -> Response:
        data = generate_session_input(request.data)
        session_id = services.session_generate_for_key(caller=request.user, data=data)
        return Response({"sessionId": session_id})


class SessionTokenView(APIView):
    """Unauthenticated: the sessionId itself is the credential."""

    def post(self, request: Request) -> Response:
        serializer = SessionIdSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        exchanged = services.session_exchange(session_id=serializer.validated_data["sessionId"])
        # renewAt: when a page that swapped this token in place should announce it expiring (one rule, services).
        return Response(
            {
                "token": exchanged.token,
                "expiresAt": exchanged.expires_at.isoformat().replace("+00:00", "Z"),
                "renewAt": services.renew_at(exchanged.expires_at).isoformat().replace("+00:00", "Z"),
            }
        )


class SessionRevokeView(AdminApiKeyView):
    def post(self, request: ApiKeyRequest) -> Response:
        serializer = SessionIdSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        services.session_revoke(caller=request.user, session_id=serializer.validated_data["sessionId"])
        return Response(status=204)


class SessionContextView(APIView):
    """What an embed token grants: ``Authorization: Bearer <embed token>``. A revoked, expired or
    forged token is 401 (verified as every embed endpoint verifies one: ``dashboards.access.embed_token_verify``);
    this is how an embed page checks its token is still good."""

    def get(self, request: Request) -> Response:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("Authorization header must be 'Bearer <embed token>'")
        try:
            caller = embed_token_verify(token=token)
        except TokenInvalid as exc:
            raise Unauthorized(str(exc)) from None
        return Response(caller.claims)


# --- embed-tenant admin (spec 4.3) ---------------------------------------------------------------------


def _tenant_item(tenant: EmbedTenant) -> dict:
    return {"id": tenant.pk, "name": tenant.name, "createdAt": tenant.created_at.isoformat()}


def _group_item(group: WithAnnotations[Group, GroupCounts]) -> dict:
    return {
        "id": group.pk,
        "name": group.name,
        "description": group.description,
        "memberCount": group.member_count,
        "createdAt": group.created_at.isoformat(),
    }


class EmbedTenantListView(AdminApiKeyView):
    def get(self, request: ApiKeyRequest) -> Response:
        search = request.query_params.get("search", "").strip()
        tenants = directory_selectors.embed_tenants_of(account=request.user.account, search=search)
        page = paginate(tenants, params=request.query_params, order=("name", "id"), types=(str, int))
        return Response(page.as_dict(_tenant_item))


class EmbedTenantScopedView(AdminApiKeyView):
    """Base of the per-tenant admin endpoints: the tenant is looked up within the caller's account, so
    another account's tenant is a 404 exactly like one that does not exist.

    Deleting a group that still has members, or an attribute definition that users still have values
    for, is refused with 400 and changes nothing (the directory services' policy): the viewers' access
    would otherwise change silently. Clear the memberships or values with generate-session first.
    """

    def tenant(self, request: ApiKeyRequest, tenant_name: str) -> EmbedTenant:
        return directory_selectors.embed_tenant_for_account(account=request.user.account, name=tenant_name)


class EmbedTenantGroupListView(EmbedTenantScopedView):
    def get(self, request: ApiKeyRequest, tenant_name: str) -> Response:
        tenant = self.tenant(request, tenant_name)
        groups = directory_selectors.embed_tenant_groups(account=request.user.account, embed_tenant=tenant)
        # Newest first, like the rest of the embed-tenant admin API.
        page = paginate(groups, params=request.query_params, order=("id",), types=(int,), descending=True)
        return Response(page.as_dict(_group_item))


class EmbedTenantGroupDetailView(EmbedTenantScopedView):
    def delete(self, request: ApiKeyRequest, tenant_name: str, group_id: int) -> Response:
        tenant = self.tenant(request, tenant_name)
        group = directory_selectors.group_in_embed_tenant(
            account=request.user.account, embed_tenant=tenant, group_id=group_id
        )
        directory.group_delete(group=group)
        return Response(status=204)


class EmbedTenantAttributeListView(EmbedTenantScopedView):
    def get(self, request: ApiKeyRequest, tenant_name: str) -> Response:
        tenant = self.tenant(request, tenant_name)
        definitions = directory_selectors.attribute_definitions_of(account=request.user.account, embed_tenant=tenant)
        page = paginate(definitions, params=request.query_params, order=("name", "id"), types=(str, int))
        return Response(page.as_dict(attribute_definition_item))


class EmbedTenantAttributeDetailView(EmbedTenantScopedView):
    def delete(self, request: ApiKeyRequest, tenant_name: str, attribute_id: int) -> Response:
        tenant = self.tenant(request, tenant_name)
        definition = directory_selectors.attribute_definition_of(
            account=request.user.account, embed_tenant=tenant, attribute_id=attribute_id
        )
        directory.attribute_definition_delete(definition=definition)
        return Response(status=204)
