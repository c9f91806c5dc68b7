"""DRF authentication for ``Authorization: Api-Key <key>`` and ``Authorization: Bearer <token>``, read by the edge
kit's one header reader (:mod:`embedadmin.core.edge.authorization`).

A missing, malformed, unknown or revoked credential is 401; what a valid credential may do is decided
by the permission classes below and by the views (403).
"""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from embedadmin.accounts.selectors import (
    ADMIN_KEY_REQUIRED,
    ApiKeyCaller,
    PlatformCaller,
    api_key_authenticate,
    platform_token_authenticate,
)
from embedadmin.core.edge.authorization import (
    API_KEY,
    PLATFORM_TOKEN,
    CredentialRefused,
    Presented,
    Scheme,
    missing_message,
    presented_credential,
)

Caller = TypeVar("Caller", ApiKeyCaller, PlatformCaller)


def _presented(request: Request, accept: tuple[Scheme, ...]) -> Presented:
    """The credential of the request's ``Authorization`` header, of one of the ``accept`` schemes (401 otherwise)."""
    try:
        presented = presented_credential(request.headers.get("Authorization"), accept=accept)
    except CredentialRefused as exc:
        raise AuthenticationFailed(exc.message) from None
    if presented is None:
        raise NotAuthenticated(missing_message(accept))
    return presented


class ApiKeyRequest(Request):
    """The type of a request authenticated by :class:`ApiKeyAuthentication`, for the views' annotations."""

    # The stubs type request.user as the user model; the authentication class sets an ApiKeyCaller.
    user: ApiKeyCaller  # type: ignore[assignment]


class PlatformRequest(Request):
    """The type of a request authenticated by :class:`PlatformTokenAuthentication`, for the views' annotations."""

    # The stubs type request.user as the user model; the authentication class sets a PlatformCaller.
    user: PlatformCaller  # type: ignore[assignment]


class _SchemeAuthentication(BaseAuthentication, Generic[Caller]):
    """Authenticates the credential of one scheme (:attr:`accepted`) by :meth:`lookup`: 401 with :attr:`refused`
    when no caller has it (unknown or revoked)."""

    accepted: ClassVar[Scheme]
    refused: ClassVar[str]

    @staticmethod
    def lookup(plaintext: str) -> Caller | None:
        raise NotImplementedError

    def authenticate(self, request: Request) -> tuple[Caller, None]:
        return self.caller(_presented(request, (self.accepted,))), None

    @classmethod
    def caller(cls, presented: Presented) -> Caller:
        caller = cls.lookup(presented.value)
        if caller is None:
            raise AuthenticationFailed(cls.refused)
        return caller

    def authenticate_header(self, request: Request) -> str:
        return self.accepted.name


class ApiKeyAuthentication(_SchemeAuthentication[ApiKeyCaller]):
    """Authenticates an account API key; ``request.user`` becomes an :class:`ApiKeyCaller`."""

    accepted = API_KEY
    refused = "Invalid or revoked API key"
    lookup = staticmethod(api_key_authenticate)


class PlatformTokenAuthentication(_SchemeAuthentication[PlatformCaller]):
    """Authenticates a platform token; ``request.user`` becomes a :class:`PlatformCaller`."""

    accepted = PLATFORM_TOKEN
    refused = "Invalid or revoked token"
    lookup = staticmethod(platform_token_authenticate)


class ApiKeyOrBearerAuthentication(BaseAuthentication):
    """``Api-Key <admin key>`` (spec 4.3) or ``Bearer <platform token>``, chosen by the header's scheme."""

    def authenticate(self, request: Request) -> tuple[ApiKeyCaller | PlatformCaller, None]:
        presented = _presented(request, (API_KEY, PLATFORM_TOKEN))
        if presented.scheme is PLATFORM_TOKEN:
            return PlatformTokenAuthentication.caller(presented), None
        return ApiKeyAuthentication.caller(presented), None

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"


class IsAdminApiKey(BasePermission):
    """Only admin keys; a personal key is refused with 403."""

    message = ADMIN_KEY_REQUIRED.format(door="This endpoint")

    def has_permission(self, request: Request, view) -> bool:
        return isinstance(request.user, ApiKeyCaller) and request.user.admin_refusal() is None


class IsAdminApiKeyOrPlatformCaller(BasePermission):
    """An admin API key (a personal key is refused with 403) or a platform token."""

    message = IsAdminApiKey.message

    def has_permission(self, request: Request, view) -> bool:
        return isinstance(request.user, PlatformCaller) or (
            isinstance(request.user, ApiKeyCaller) and request.user.admin_refusal() is None
        )


class IsPlatformCaller(BasePermission):
    def has_permission(self, request: Request, view) -> bool:
        return isinstance(request.user, PlatformCaller)
