"""``/api/v1/embed-tenants``: embed tenants, their groups and members, provisioning embed users.

One set of views for two credentials: the admin ``Api-Key`` of spec 4.3 and the Platform API's ``Bearer`` token
(Cube's newer Platform API). Every lookup is scoped to the caller's account, so another account's tenant, group
or user is a 404 exactly like one that does not exist.

Where spec 4.3 and Cube's newer shapes differ, an ``Api-Key`` caller keeps spec 4.3's (tenant ``{id, name,
createdAt}``, group ``{id, name, description, memberCount, createdAt}``) and a ``Bearer`` caller gets Cube's
(``EmbedTenant{id, name, displayName, userCount, createdAt}``, ``UserGroupDTO{id, name, description,
userCount}``): see docs/platform-api.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from embedadmin.accounts.authentication import ApiKeyOrBearerAuthentication, IsAdminApiKeyOrPlatformCaller
from embedadmin.accounts.models import Account
from embedadmin.accounts.selectors import ApiKeyCaller, PlatformCaller
from embedadmin.audit.audited_views import AuditedView
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import ApiError, LimitExceeded
from embedadmin.core.fields import MAX_BIGINT, RejectUnknownFieldsMixin, StrictCharField, StrictEmailField
from embedadmin.core.pagination import paginate
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory import services as directory
from embedadmin.directory.contracts import attribute_definition_item
from embedadmin.directory.models import EmbedTenant, ExternalUser, Group
from embedadmin.embedding.serializers import UserProfileSerializer
from embedadmin.platform.attributes import ATTRIBUTE_DEFINITION
from embedadmin.platform.openapi import INVALID, error, many, page_of, page_operation, whole

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    from embedadmin.directory.selectors import GroupCounts, TenantCounts

MAX_BULK_USERS = 100
MAX_GROUP_MEMBERS = 1000


class EmbedTenantView(AuditedView):
    authentication_classes = [ApiKeyOrBearerAuthentication]
    permission_classes = [IsAdminApiKeyOrPlatformCaller]

    def account(self, request: Request) -> Account:
        caller: ApiKeyCaller | PlatformCaller = request.user  # type: ignore[assignment]
        return caller.account

    @staticmethod
    def is_bearer(request: Request) -> bool:
        return isinstance(request.user, PlatformCaller)

    def tenant(self, request: Request, tenant_name: str) -> EmbedTenant:
        return directory_selectors.embed_tenant_for_account(account=self.account(request), name=tenant_name)

    def group(self, request: Request, tenant_name: str, group_id: int) -> Group:
        tenant = self.tenant(request, tenant_name)
        return directory_selectors.group_in_embed_tenant(
            account=self.account(request), embed_tenant=tenant, group_id=group_id
        )


def tenant_item(tenant: WithAnnotations[EmbedTenant, TenantCounts], *, bearer: bool) -> dict[str, Any]:
    if not bearer:  # spec 4.3
        return {"id": tenant.pk, "name": tenant.name, "createdAt": iso_time(tenant.created_at)}
    return {
        "id": tenant.pk,
        "name": tenant.name,
        "displayName": tenant.name,
        "userCount": tenant.user_count,
        "createdAt": iso_time(tenant.created_at),
    }


def group_item(group: WithAnnotations[Group, GroupCounts], *, bearer: bool) -> dict[str, Any]:
    if not bearer:  # spec 4.3
        return {
            "id": group.pk,
            "name": group.name,
            "description": group.description,
            "memberCount": group.member_count,
            "createdAt": iso_time(group.created_at),
        }
    return {"id": group.pk, "name": group.name, "description": group.description, "userCount": group.member_count}


def embed_user_item(user: ExternalUser) -> dict[str, Any]:
    """Cube's ``EmbedUser``: the username is the external id, the first name the profile's display name."""
    return {
        "id": user.pk,
        "username": user.external_id,
        "email": user.email,
        "externalId": user.external_id,
        "firstName": user.display_name,
        "createdAt": iso_time(user.created_at),
        "lastLogin": iso_time(user.last_session_at),
    }


# --- shapes (docs/platform-api.md: an Api-Key caller gets spec 4.3's, a Bearer caller Cube's) -------------

EMBED_TENANT = inline_serializer(
    "EmbedTenant",
    {
        "id": serializers.IntegerField(),
        "name": serializers.CharField(),
        "displayName": serializers.CharField(required=False, help_text="Bearer callers (Cube's shape)"),
        "userCount": serializers.IntegerField(required=False, help_text="Bearer callers (Cube's shape)"),
        "createdAt": serializers.DateTimeField(),
    },
)
EMBED_GROUP = inline_serializer(
    "EmbedTenantGroup",
    {
        "id": serializers.IntegerField(),
        "name": serializers.CharField(),
        "description": serializers.CharField(allow_blank=True),
        "memberCount": serializers.IntegerField(required=False, help_text="Api-Key callers (spec 4.3)"),
        "createdAt": serializers.DateTimeField(required=False, help_text="Api-Key callers (spec 4.3)"),
        "userCount": serializers.IntegerField(required=False, help_text="Bearer callers (Cube's UserGroupDTO)"),
    },
)
EMBED_USER = inline_serializer(
    "EmbedUser",
    {
        "id": serializers.IntegerField(),
        "username": serializers.CharField(help_text="The external id"),
        "email": serializers.CharField(allow_blank=True),
        "externalId": serializers.CharField(),
        "firstName": serializers.CharField(allow_blank=True, help_text="The profile's display name"),
        "createdAt": serializers.DateTimeField(),
        "lastLogin": serializers.DateTimeField(allow_null=True, help_text="The user's last embed session"),
    },
)
EMBED_USER_PAGE = page_of("EmbedUserPage", EMBED_USER)
TENANT_NOT_FOUND = error("No embed tenant with this name in the caller's account")
GROUP_NOT_FOUND = error("No such embed tenant, or no group with this id in it")


class EmbedTenantListView(EmbedTenantView):
    @page_operation(
        page_of("EmbedTenantPage", EMBED_TENANT),
        operation_id="embed_tenants_list",
        filters=[OpenApiParameter("search", str, description="Tenants whose name contains this text")],
    )
    def get(self, request: Request) -> Response:
        search = request.query_params.get("search", "").strip()
        tenants = directory_selectors.embed_tenants_with_counts(account=self.account(request), search=search)
        page = paginate(tenants, params=request.query_params, order=("name", "id"), types=(str, int))
        bearer = self.is_bearer(request)
        return Response(page.as_dict(lambda t: tenant_item(t, bearer=bearer)))


class EmbedTenantDetailView(EmbedTenantView):
    audit_resource = "embed_tenant"

    @extend_schema(
        responses={
            204: None,
            400: error("The tenant name is not in canonical (lowercase) form"),
        }
    )
    def delete(self, request: Request, tenant_name: str) -> Response:
        """Cascade (groups, attribute definitions, the tenant's users); idempotent: an unknown tenant, another
        account's included, is 204 and nothing changes."""
        directory.embed_tenant_delete(account=self.account(request), name=tenant_name)
        return Response(status=204)


# --- groups ----------------------------------------------------------------------------------------------


class GroupCreateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    name = StrictCharField(min_length=1, max_length=100)
    description = StrictCharField(required=False, allow_blank=True, max_length=500, default="")


class GroupUpdateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    description = StrictCharField(allow_blank=True, max_length=500)


class EmbedTenantGroupListView(EmbedTenantView):
    audit_resource = "embed_tenant_group"

    @page_operation(
        OpenApiResponse(page_of("EmbedTenantGroupPage", EMBED_GROUP), description="Newest first"),
        operation_id="embed_tenants_groups_list",
        errors={404: TENANT_NOT_FOUND},
    )
    def get(self, request: Request, tenant_name: str) -> Response:
        tenant = self.tenant(request, tenant_name)
        groups = directory_selectors.embed_tenant_groups(account=self.account(request), embed_tenant=tenant)
        # Newest first, like the rest of the embed-tenant admin API.
        page = paginate(groups, params=request.query_params, order=("id",), types=(int,), descending=True)
        bearer = self.is_bearer(request)
        return Response(page.as_dict(lambda g: group_item(g, bearer=bearer)))

    @extend_schema(
        request=GroupCreateSerializer,
        responses={
            201: EMBED_GROUP,
            400: error("Invalid input, or a reserved name (system:...)"),
            404: TENANT_NOT_FOUND,
            409: error("A group with this name exists in the tenant"),
        },
    )
    def post(self, request: Request, tenant_name: str) -> Response:
        tenant = self.tenant(request, tenant_name)
        serializer = GroupCreateSerializer(data=json_object_body(request, fields=None))
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        group = directory.group_create(
            account=self.account(request), embed_tenant=tenant, name=data["name"], description=data["description"]
        )
        return Response(self._item(request, tenant, group.pk), status=201)

    def _item(self, request: Request, tenant: EmbedTenant, group_id: int) -> dict[str, Any]:
        group = directory_selectors.embed_tenant_groups(account=self.account(request), embed_tenant=tenant).get(
            pk=group_id
        )
        return group_item(group, bearer=self.is_bearer(request))


class EmbedTenantGroupDetailView(EmbedTenantView):
    audit_resource = "embed_tenant_group"

    def _item(self, request: Request, tenant_name: str, group_id: int) -> dict[str, Any]:
        tenant = self.tenant(request, tenant_name)
        groups = directory_selectors.embed_tenant_groups(account=self.account(request), embed_tenant=tenant)
        group = groups.filter(pk=group_id).first()
        if group is None:
            self.group(request, tenant_name, group_id)  # the 404
        assert group is not None
        return group_item(group, bearer=self.is_bearer(request))

    @extend_schema(responses={200: EMBED_GROUP, 404: GROUP_NOT_FOUND})
    def get(self, request: Request, tenant_name: str, group_id: int) -> Response:
        return Response(self._item(request, tenant_name, group_id))

    @extend_schema(
        request=whole(GroupUpdateSerializer), responses={200: EMBED_GROUP, 400: INVALID, 404: GROUP_NOT_FOUND}
    )
    def patch(self, request: Request, tenant_name: str, group_id: int) -> Response:
        group = self.group(request, tenant_name, group_id)
        serializer = GroupUpdateSerializer(data=json_object_body(request, fields=None))
        serializer.is_valid(raise_exception=True)
        directory.group_description_update(group=group, description=serializer.validated_data["description"])
        return Response(self._item(request, tenant_name, group_id))

    @extend_schema(responses={204: None, 400: error("The group still has members"), 404: GROUP_NOT_FOUND})
    def delete(self, request: Request, tenant_name: str, group_id: int) -> Response:
        """A group that still has members is 400 and stays (spec 4.3 and Cube)."""
        directory.group_delete(group=self.group(request, tenant_name, group_id))
        return Response(status=204)


class MemberSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    externalId = StrictCharField(required=False, max_length=255)
    embedUserId = serializers.IntegerField(required=False, min_value=1, max_value=MAX_BIGINT)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("externalId" in attrs) == ("embedUserId" in attrs):
            raise serializers.ValidationError("each member needs exactly one of externalId or embedUserId")
        return attrs


class MembersSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    members = MemberSerializer(many=True, min_length=1, max_length=MAX_GROUP_MEMBERS)  # type: ignore[call-arg]


MEMBERS_ADDED = inline_serializer(
    "GroupMembersAdded",
    {
        "addedMembers": serializers.IntegerField(),
        "unchangedMembers": serializers.IntegerField(help_text="Already members"),
    },
)
MEMBERS_REMOVED = inline_serializer(
    "GroupMembersRemoved",
    {
        "removedMembers": serializers.IntegerField(),
        "unchangedMembers": serializers.IntegerField(help_text="Not members"),
    },
)
MEMBERS_INVALID = error("Invalid members: each needs exactly one of externalId or embedUserId")


class EmbedTenantGroupUsersView(EmbedTenantView):
    audit_resource = "embed_tenant_group_members"
    audit_verbs = {"POST": "add", "DELETE": "remove"}
    audit_id_kwarg = "group_id"

    @page_operation(EMBED_USER_PAGE, operation_id="embed_tenants_groups_users_list", errors={404: GROUP_NOT_FOUND})
    def get(self, request: Request, tenant_name: str, group_id: int) -> Response:
        group = self.group(request, tenant_name, group_id)
        members = directory_selectors.group_external_members(group=group)
        page = paginate(members, params=request.query_params, order=("external_id", "id"), types=(str, int))
        return Response(page.as_dict(embed_user_item))

    def _members(self, request: Request) -> list[ExternalUser]:
        serializer = MembersSerializer(data=json_object_body(request, fields=None))
        serializer.is_valid(raise_exception=True)
        members = serializer.validated_data["members"]
        return directory_selectors.external_users_named(
            account=self.account(request),
            external_ids=[m["externalId"].strip().lower() for m in members if "externalId" in m],
            user_ids=[m["embedUserId"] for m in members if "embedUserId" in m],
        )

    @extend_schema(
        request=MembersSerializer,
        responses={200: MEMBERS_ADDED, 400: MEMBERS_INVALID, 404: GROUP_NOT_FOUND},
    )
    def post(self, request: Request, tenant_name: str, group_id: int) -> Response:
        group = self.group(request, tenant_name, group_id)
        added, unchanged = directory.group_external_members_add(group=group, users=self._members(request))
        return Response({"addedMembers": added, "unchangedMembers": unchanged})

    @extend_schema(
        description="The body is the one of POST (`{members: [...]}`).",
        responses={200: MEMBERS_REMOVED, 400: MEMBERS_INVALID, 404: GROUP_NOT_FOUND},
    )
    def delete(self, request: Request, tenant_name: str, group_id: int) -> Response:
        group = self.group(request, tenant_name, group_id)
        removed, unchanged = directory.group_external_members_remove(group=group, users=self._members(request))
        return Response({"removedMembers": removed, "unchangedMembers": unchanged})


# --- embed users -----------------------------------------------------------------------------------------


class ProvisionEmbedUserSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    externalId = StrictCharField(max_length=255)
    email = StrictEmailField(required=False, allow_blank=True, max_length=254)
    groups = serializers.ListField(child=StrictCharField(max_length=255), required=False, max_length=1000)
    tenantGroups = serializers.ListField(child=StrictCharField(max_length=255), required=False, max_length=1000)
    userProfile = UserProfileSerializer(required=False)

    def validate_externalId(self, value: str) -> str:
        value = value.strip().lower()
        if not value or " " in value:
            raise serializers.ValidationError("must be non-empty, without spaces")
        return value


def provision_input(data: dict[str, Any]) -> directory.EmbedUserInput:
    profile = data.get("userProfile")
    return directory.EmbedUserInput(
        external_id=data["externalId"],
        # Cube: an omitted email becomes {externalId}@cubecloud.dev; ours stays empty (no made-up addresses).
        email=data.get("email"),
        groups=data.get("groups"),
        tenant_groups=data.get("tenantGroups"),
        profile=directory.ProfileInput(display_name=profile.get("displayName"), picture=profile.get("picture"))
        if profile is not None
        else None,
    )


class EmbedTenantUserProvisionView(EmbedTenantView):
    """``POST /{name}/user``: create (201) or update (200) one embed user; 429 at the account's user cap."""

    audit_resource = "embed_user"
    audit_verbs = {"POST": "provision"}

    @extend_schema(
        request=ProvisionEmbedUserSerializer,
        responses={
            200: OpenApiResponse(EMBED_USER, description="Updated"),
            201: OpenApiResponse(EMBED_USER, description="Created"),
            400: error("Invalid input, or an unknown group"),
            404: TENANT_NOT_FOUND,
            429: error("The account's external-user cap is reached"),
        },
    )
    def post(self, request: Request, tenant_name: str) -> Response:
        tenant = self.tenant(request, tenant_name)
        serializer = ProvisionEmbedUserSerializer(data=json_object_body(request, fields=None))
        serializer.is_valid(raise_exception=True)
        user, created = directory.embed_user_provision(
            account=self.account(request), embed_tenant=tenant, data=provision_input(serializer.validated_data)
        )
        return Response(embed_user_item(user), status=201 if created else 200)


class BulkProvisionSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    users = serializers.ListField(child=serializers.JSONField(), min_length=1, max_length=MAX_BULK_USERS)


_FAILURE = inline_serializer(
    "BulkProvisionFailure",
    {
        "externalId": serializers.CharField(allow_null=True),
        "error": inline_serializer(
            "BulkProvisionError", {"status": serializers.IntegerField(), "message": serializers.CharField()}
        ),
    },
)
BULK_PROVISION_REQUEST = inline_serializer(
    "BulkProvision",
    {
        "users": serializers.ListField(
            child=ProvisionEmbedUserSerializer(),
            min_length=1,
            max_length=MAX_BULK_USERS,
            help_text="Each user as POST /{name}/user takes it; one that is not valid fails alone (in failed)",
        )
    },
)
BULK_PROVISION_RESULT = inline_serializer(
    "BulkProvisionResult", {"succeeded": many(EMBED_USER), "failed": many(_FAILURE)}
)


class EmbedTenantUsersView(EmbedTenantView):
    audit_resource = "embed_user"
    audit_verbs = {"POST": "provision"}
    audit_atomic = False  # each user commits on its own, with its entry (audit_record below)

    @page_operation(EMBED_USER_PAGE, operation_id="embed_tenants_users_list", errors={404: TENANT_NOT_FOUND})
    def get(self, request: Request, tenant_name: str) -> Response:
        tenant = self.tenant(request, tenant_name)
        users = directory_selectors.embed_tenant_users(account=self.account(request), embed_tenant=tenant)
        page = paginate(users, params=request.query_params, order=("external_id", "id"), types=(str, int))
        return Response(page.as_dict(embed_user_item))

    @extend_schema(
        request=BULK_PROVISION_REQUEST,
        responses={
            200: OpenApiResponse(BULK_PROVISION_RESULT, description="Any user succeeded, or none hit the cap"),
            400: error("Not {users: [1 to 100 items]}"),
            404: TENANT_NOT_FOUND,
            429: OpenApiResponse(BULK_PROVISION_RESULT, description="Every user failed, one at least on the cap"),
        },
    )
    def post(self, request: Request, tenant_name: str) -> Response:
        """Bulk provisioning, each user in its own transaction: ``{succeeded: [EmbedUser], failed: [{externalId,
        error: {status, message}}]}``. 200 when any succeeded (or none hit the cap), 429 when every user failed
        and at least one of them on the user cap."""
        tenant = self.tenant(request, tenant_name)
        serializer = BulkProvisionSerializer(data=json_object_body(request, fields=None))
        serializer.is_valid(raise_exception=True)
        account = self.account(request)
        succeeded: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        capped = False
        for raw in serializer.validated_data["users"]:
            external_id = raw.get("externalId") if isinstance(raw, dict) else None
            one = ProvisionEmbedUserSerializer(data=raw if isinstance(raw, dict) else {"": raw})
            if not one.is_valid():
                failed.append(_failure(external_id, 400, _first_error(one.errors)))
                continue
            try:
                with transaction.atomic():
                    user, _ = directory.embed_user_provision(
                        account=account, embed_tenant=tenant, data=provision_input(one.validated_data)
                    )
                    self.audit_record(resource_id=str(user.pk), bulk=True)
            except ApiError as exc:
                capped = capped or isinstance(exc, LimitExceeded)
                failed.append(_failure(external_id, exc.status, str(exc)))
                continue
            succeeded.append(embed_user_item(user))
        status = 429 if capped and not succeeded else 200
        return Response({"succeeded": succeeded, "failed": failed}, status=status)


def _failure(external_id: Any, status: int, message: str) -> dict[str, Any]:
    return {
        "externalId": external_id if isinstance(external_id, str) else None,
        "error": {"status": status, "message": message},
    }


def _first_error(errors: Any, prefix: str = "") -> str:
    if isinstance(errors, dict):
        field, detail = next(iter(errors.items()))
        name = "" if field == "non_field_errors" else f"{prefix}{field}"
        return _first_error(detail, f"{name}." if name else "")
    if isinstance(errors, list) and errors:
        return _first_error(errors[0], prefix)
    return f"{prefix.rstrip('.')}: {errors}" if prefix else str(errors)


# --- spec 4.3: an embed tenant's attribute definitions -------------------------------------------------------


class EmbedTenantAttributeListView(EmbedTenantView):
    @page_operation(page_of("EmbedTenantAttributePage", ATTRIBUTE_DEFINITION), errors={404: TENANT_NOT_FOUND})
    def get(self, request: Request, tenant_name: str) -> Response:
        tenant = self.tenant(request, tenant_name)
        definitions = directory_selectors.attribute_definitions_of(account=self.account(request), embed_tenant=tenant)
        page = paginate(definitions, params=request.query_params, order=("name", "id"), types=(str, int))
        return Response(page.as_dict(attribute_definition_item))


class EmbedTenantAttributeDetailView(EmbedTenantView):
    audit_resource = "embed_tenant_attribute"

    @extend_schema(
        responses={
            204: None,
            400: error("Users still have values of this attribute"),
            404: error("No such embed tenant, or no attribute with this id in it"),
        }
    )
    def delete(self, request: Request, tenant_name: str, attribute_id: int) -> Response:
        tenant = self.tenant(request, tenant_name)
        definition = directory_selectors.attribute_definition_of(
            account=self.account(request), embed_tenant=tenant, attribute_id=attribute_id
        )
        directory.attribute_definition_delete(definition=definition)
        return Response(status=204)
