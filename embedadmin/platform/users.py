"""Platform API v1, the account's internal users: ``GET|POST /api/v1/users``, ``GET|PATCH|PUT|DELETE
/api/v1/users/{id}`` and ``POST /api/v1/users/{id}/deactivate``, through the same services as SCIM and the panel."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts import selectors as accounts_selectors
from embedadmin.accounts import services as accounts
from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.core.fields import RejectUnknownFieldsMixin, StrictBooleanField, StrictCharField, StrictEmailField
from embedadmin.core.pagination import paginate
from embedadmin.embedding import internal_users as user_lifecycle
from embedadmin.platform.openapi import INVALID, error, page_of, page_operation
from embedadmin.platform.platform_view import PlatformView


class InternalUserSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    username = StrictCharField(max_length=150)
    email = StrictEmailField(required=False, allow_blank=True, max_length=254)  # the stored column's length
    isAdmin = StrictBooleanField(required=False, default=False)


def _internal_user_fields(*, role: bool = False) -> dict[str, serializers.Field]:
    """Fresh fields for each shape: ``inline_serializer`` takes the dict it is given as class attributes, and the
    serializer metaclass pops the fields out of it (a shared dict would leave the second shape empty)."""
    fields: dict[str, serializers.Field] = {
        "id": serializers.IntegerField(),
        "username": serializers.CharField(),
        "email": serializers.CharField(allow_blank=True),
        "isAdmin": serializers.BooleanField(),
        "isActive": serializers.BooleanField(),
    }
    if role:
        fields["role"] = serializers.ChoiceField(choices=["admin", "member"])
    return fields


INTERNAL_USER = inline_serializer("InternalUser", _internal_user_fields())
INTERNAL_USER_DETAIL = inline_serializer("InternalUserDetail", _internal_user_fields(role=True))
USER_NOT_FOUND = error("No internal user with this id in the caller's account")
USERNAME_TAKEN = error("A user with this username already exists")


def internal_user_item(user) -> dict[str, Any]:
    return {
        "id": user.pk,
        "username": user.username,
        "email": user.email,
        "isAdmin": user.membership.is_admin,
        "isActive": user.is_active,
    }


class UserListView(PlatformView):
    audit_resource = "user"

    @page_operation(page_of("InternalUserPage", INTERNAL_USER), operation_id="users_list")
    def get(self, request: PlatformRequest) -> Response:
        users = accounts_selectors.internal_users_of(account=request.user.account)
        page = paginate(users, params=request.query_params)
        return Response(page.as_dict(internal_user_item))

    @extend_schema(request=InternalUserSerializer, responses={201: INTERNAL_USER, 400: INVALID, 409: USERNAME_TAKEN})
    def post(self, request: PlatformRequest) -> Response:
        serializer = InternalUserSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user = accounts.internal_user_create(
            account=request.user.account,
            username=data["username"],
            email=data.get("email", ""),
            is_admin=data["isAdmin"],
        )
        return Response(internal_user_item(user), status=201)


class InternalUserUpdateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """``PATCH /api/v1/users/{id}``: email, the role (``role`` admin|member, or ``isAdmin``) and ``isActive``."""

    email = StrictEmailField(required=False, allow_blank=True, max_length=254)
    isAdmin = StrictBooleanField(required=False)
    role = serializers.ChoiceField(choices=["admin", "member"], required=False)
    isActive = StrictBooleanField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "role" in attrs and "isAdmin" in attrs and (attrs["role"] == "admin") != attrs["isAdmin"]:
            raise serializers.ValidationError("role and isAdmin disagree")
        return attrs


def internal_user_detail(user) -> dict[str, Any]:
    return {**internal_user_item(user), "role": "admin" if user.membership.is_admin else "member"}


class UserDetailView(PlatformView):
    """``/api/v1/users/{id}``: get, update (email, role, active) and delete an internal user, through the same
    services as SCIM (a deactivation revokes the user's sessions, tokens and keys at once)."""

    audit_resource = "user"

    def _user(self, request: PlatformRequest, user_id: str):
        return accounts_selectors.internal_user_of(account=request.user.account, user_id=user_id)

    @extend_schema(responses={200: INTERNAL_USER_DETAIL, 404: USER_NOT_FOUND})
    def get(self, request: PlatformRequest, user_id: str) -> Response:
        return Response(internal_user_detail(self._user(request, user_id)))

    @extend_schema(
        request=InternalUserUpdateSerializer,
        responses={200: INTERNAL_USER_DETAIL, 400: INVALID, 404: USER_NOT_FOUND},
    )
    def patch(self, request: PlatformRequest, user_id: str) -> Response:
        user = self._user(request, user_id)
        serializer = InternalUserUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        is_admin = data.get("isAdmin", data["role"] == "admin" if "role" in data else None)
        user_lifecycle.internal_user_save(
            account=request.user.account,
            user=user,
            changes=accounts.InternalUserChanges(
                email=data.get("email"), is_admin=is_admin, is_active=data.get("isActive")
            ),
        )
        return Response(internal_user_detail(self._user(request, user_id)))

    put = patch

    @extend_schema(responses={204: None, 404: USER_NOT_FOUND})
    def delete(self, request: PlatformRequest, user_id: str) -> Response:
        user_lifecycle.internal_user_remove(user=self._user(request, user_id))
        return Response(status=204)


class UserDeactivateView(PlatformView):
    """``POST /api/v1/users/{id}/deactivate``: the same as ``PATCH {"isActive": false}``."""

    audit_resource = "user"
    audit_verbs = {"POST": "deactivate"}

    @extend_schema(request=None, responses={200: INTERNAL_USER_DETAIL, 404: USER_NOT_FOUND})
    def post(self, request: PlatformRequest, user_id: str) -> Response:
        user = accounts_selectors.internal_user_of(account=request.user.account, user_id=user_id)
        user_lifecycle.internal_user_deactivate(account=request.user.account, user=user)
        user = accounts_selectors.internal_user_of(account=request.user.account, user_id=user_id)
        return Response(internal_user_detail(user))
