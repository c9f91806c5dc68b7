"""DRF authentication for ``Authorization: Api-Key <key>`` and ``Authorization: Bearer <token>``.

A missing, malformed, unknown or revoked credential is 401; what a valid credential may do is decided
by the permission classes below and by the views (403).
"""

from __future__ import annotations

from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from embedadmin.accounts.selectors import (
    ApiKeyCaller,
    PlatformCaller,
    api_key_authenticate,
    platform_token_authenticate,
)


def credential_of(header: str, scheme: str) -> str | None:
    """The credential of an ``Authorization: <scheme> <credential>`` header, or None when it is not one."""
    given_scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    # Credentials we mint are printable ASCII; anything else cannot be one (and a NUL must not reach
    # the database lookup).
    if given_scheme.lower() != scheme.lower() or not value or not (value.isascii() and value.isprintable()):
        return None
    return value


def _credential(request: Request, scheme: str) -> str:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header:
        raise NotAuthenticated(f"Missing Authorization header: expected '{scheme} <credential>'")
    value = credential_of(header, scheme)
    if value is None:
        raise AuthenticationFailed(f"Authorization header must be '{scheme} <credential>'")
    return value


class ApiKeyRequest(Request):
    """The type of a request authenticated by :class:`ApiKeyAuthentication`, for the views' annotations."""

    # The stubs type request.user as the user model; the authentication class sets an ApiKeyCaller.
    user: ApiKeyCaller  # type: ignore[assignment]


class PlatformRequest(Request):
    """The type of a request authenticated by :class:`PlatformTokenAuthentication`, for the views' annotations."""

    # The stubs type request.user as the user model; the authentication class sets a PlatformCaller.
    user: PlatformCaller  # type: ignore[assignment]


class ApiKeyAuthentication(BaseAuthentication):
    """Authenticates an account API key; ``request.user`` becomes an :class:`ApiKeyCaller`."""

    scheme = "Api-Key"

    def authenticate(self, request: Request) -> tuple[ApiKeyCaller, None]:
        caller = api_key_authenticate(_credential(request, self.scheme))
        if caller is None:
            raise AuthenticationFailed("Invalid or revoked API key")
        return caller, None

    def authenticate_header(self, request: Request) -> str:
        return self.scheme


class PlatformTokenAuthentication(BaseAuthentication):
    """Authenticates a platform token; ``request.user`` becomes a :class:`PlatformCaller`."""

    scheme = "Bearer"

    def authenticate(self, request: Request) -> tuple[PlatformCaller, None]:
        caller = platform_token_authenticate(_credential(request, self.scheme))
        if caller is None:
            raise AuthenticationFailed("Invalid or revoked token")
        return caller, None

    def authenticate_header(self, request: Request) -> str:
        return self.scheme


class ApiKeyOrBearerAuthentication(BaseAuthentication):
    """``Api-Key <admin key>`` (spec 4.3) or ``Bearer <platform token>``, chosen by the header's scheme."""

    def authenticate(self, request: Request) -> tuple[ApiKeyCaller | PlatformCaller, None]:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            raise NotAuthenticated("Missing Authorization header: expected 'Bearer <token>' or 'Api-Key <key>'")
        if header.strip().lower().startswith("bearer"):
            return PlatformTokenAuthentication().authenticate(request)
        return ApiKeyAuthentication().authenticate(request)

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"


class IsAdminApiKey(BasePermission):
    """Only admin keys; a personal key is refused with 403."""

    message = "This endpoint requires an admin API key; personal API keys are not allowed"

    def has_permission(self, request: Request, view) -> bool:
        return isinstance(request.user, ApiKeyCaller) and request.user.is_admin


class IsAdminApiKeyOrPlatformCaller(BasePermission):
    """An admin API key (a personal key is refused with 403) or a platform token."""

    message = IsAdminApiKey.message

    def has_permission(self, request: Request, view) -> bool:
        return isinstance(request.user, PlatformCaller) or (
            isinstance(request.user, ApiKeyCaller) and request.user.is_admin
        )


class IsPlatformCaller(BasePermission):
    def has_permission(self, request: Request, view) -> bool:
        return isinstance(request.user, PlatformCaller)
