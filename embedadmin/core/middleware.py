"""Keeps API paths JSON all the way down: unknown URLs, unhandled errors, Django's own rejections."""

from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.contrib.auth import middleware as django_auth
from django.contrib.messages import middleware as django_messages
from django.contrib.messages.storage import default_storage
from django.contrib.sessions import middleware as django_sessions
from django.core.exceptions import SuspiciousOperation
from django.core.signals import got_request_exception
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.middleware import clickjacking as django_clickjacking
from django.middleware import common as django_common
from django.middleware import csrf as django_csrf
from django.middleware import security as django_security
from django.utils.deprecation import MiddlewareMixin
from django.utils.functional import SimpleLazyObject, empty
from whitenoise.middleware import WhiteNoiseMiddleware

from embedadmin.core.error_shapes import is_scim_path
from embedadmin.core.errors import DATABASE_UNAVAILABLE, client_error, database_unavailable, json_error, retry_headers

logger = logging.getLogger(__name__)

# "/d/" is the per-deployment form of the Core Data API: /d/{deploymentId}{CUBEJS_BASE_PATH}/v1/...
API_PREFIXES = ("/api/", "/cubejs-api/", "/d/", "/livez", "/readyz")


def is_api_path(path: str) -> bool:
    """Whether ``path`` belongs to an API (its errors are JSON, never a page): SCIM's roots among them."""
    base = getattr(settings, "CUBEJS_BASE_PATH", "/cubejs-api").rstrip("/") + "/"
    return path.startswith(API_PREFIXES) or path.startswith(base) or is_scim_path(path)


def _has_nul(request: HttpRequest) -> bool:
    """Whether the path or a query parameter carries a NUL character.

    No name or id contains one and PostgreSQL cannot even compare text with it, so such a request is
    refused here, once, instead of failing as a database error in whichever view it reaches.
    """
    if "\x00" in request.path:
        return True
    return any("\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists())


class ApiErrorMiddleware(MiddlewareMixin):
    """Replaces HTML error pages with ``{"error": ...}`` for API paths.

    DRF views render their own errors; this catches what happens outside them: a URL that matches no
    route, a method Django itself refuses, a body Django cannot read, and any exception a plain
    Django view lets escape. Under the SCIM roots (``/api/scim/``, ``/scim/``) the body has SCIM's error shape
    (:mod:`embedadmin.core.error_shapes`).

    It is the outermost middleware, so that its ``process_response`` also sees what the others answer
    themselves (Django's 400 page for a ``Host`` header that ``ALLOWED_HOSTS`` refuses).

    A database that cannot be reached is a 503 with ``Retry-After`` wherever it surfaces: in a view (DRF's
    handler and :meth:`process_exception` map it), in another middleware (Django turns that into a 500 page,
    which :func:`_note_unavailable` marked), or in a view that renders its own 503 without the header.

    Built on ``MiddlewareMixin`` so it runs natively in both sync and async mode: under ASGI a
    sync-only middleware makes Django hop threads around it on every request.
    """

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        if not is_api_path(request.path):
            return None
        try:
            if _has_nul(request):
                return json_error("The URL must not contain NUL characters", 400, path=request.path)
        except SuspiciousOperation as exc:  # more query parameters than DATA_UPLOAD_MAX_NUMBER_FIELDS
            return self.process_exception(request, exc)
        return None

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if response.status_code == 500 and getattr(request, _UNAVAILABLE_MARK, None) and is_api_path(request.path):
            # A middleware met the database down; Django rendered it as its 500 page.
            response = json_error(DATABASE_UNAVAILABLE, 503, path=request.path)
        if response.status_code == 503 and not response.has_header("Retry-After") and is_api_path(request.path):
            for name, value in retry_headers(503).items():
                response[name] = value
        if (
            response.status_code >= 400
            and is_api_path(request.path)
            and not response.get("Content-Type", "").startswith("application/")
        ):
            replaced = json_error(_status_message(response.status_code), response.status_code, path=request.path)
            # What the other middleware set (security headers, Allow, Vary, cookies) stays on the answer.
            for name, value in response.items():
                if name.lower() not in ("content-type", "content-length"):
                    replaced[name] = value
            replaced.cookies = response.cookies
            return replaced
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_api_path(request.path):
            return None
        known = client_error(exception)
        if known is not None:
            status, message = known
            return json_error(message, status, path=request.path)
        logger.exception("Unhandled error on %s", request.path, exc_info=exception)
        return json_error("Internal server error", 500, path=request.path)


_UNAVAILABLE_MARK = "_embedadmin_database_unavailable"


@receiver(got_request_exception, dispatch_uid="embedadmin.core.middleware.note_unavailable")
def _note_unavailable(sender: object, request: HttpRequest | None = None, **kwargs: object) -> None:
    """Django sends this, inside its ``except`` block, for an exception it is about to render as its 500 page:
    remember on the request when it was the database being down, for :class:`ApiErrorMiddleware`."""
    exc = sys.exc_info()[1]
    if request is not None and exc is not None and database_unavailable(exc) is not None:
        setattr(request, _UNAVAILABLE_MARK, True)


def _status_message(status: int) -> str:
    return {
        400: "Bad request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not found",
        405: "Method not allowed",
        413: "Request body too large",
        503: "Service unavailable; retry later",
    }.get(status, "Internal server error" if status >= 500 else "Request failed")


# --- one thread hop per request under ASGI ------------------------------------------------------------
#
# Django runs an async-capable middleware in async mode under ASGI, and ``MiddlewareMixin`` then calls
# each of its sync hooks through its own ``sync_to_async`` hop: with the standard stack that is about
# eighteen thread hand-offs per request (ADR 0009). When every
# middleware is sync-only, Django adapts the whole chain once and the request runs in one worker
# thread. Async streaming responses (the Chat API) still stream: the handler iterates them itself.


def _sync_only(middleware: type) -> type:
    return type(middleware.__name__, (middleware,), {"async_capable": False, "__module__": __name__})


SecurityMiddleware = _sync_only(django_security.SecurityMiddleware)
StaticFilesMiddleware = _sync_only(WhiteNoiseMiddleware)
SessionMiddleware = _sync_only(django_sessions.SessionMiddleware)
CommonMiddleware = _sync_only(django_common.CommonMiddleware)
CsrfViewMiddleware = _sync_only(django_csrf.CsrfViewMiddleware)
AuthenticationMiddleware = _sync_only(django_auth.AuthenticationMiddleware)


class _LazyMessageMiddleware(django_messages.MessageMiddleware):
    """Django's message middleware, building a request's message storage (a cookie signer among other things)
    only when something reads or adds a message: the panel does, the APIs never do."""

    def process_request(self, request: HttpRequest) -> None:
        request._messages = SimpleLazyObject(lambda: default_storage(request))  # type: ignore[attr-defined]

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        messages = getattr(request, "_messages", None)
        if isinstance(messages, SimpleLazyObject) and messages._wrapped is empty:
            return response  # never used: nothing to store
        return super().process_response(request, response)


MessageMiddleware = _sync_only(_LazyMessageMiddleware)


# --- framing: only the embed pages, only by the account's allowed origins ------------------------------------

EMBED_PREFIX = "/embed/"
# The embed pages run no inline script or style and load nothing from elsewhere (assets are served by us).
EMBED_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
    "font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'"
)


def embed_content_security_policy(frame_ancestors: list[str]) -> str:
    """The CSP of an ``/embed/*`` answer: :data:`EMBED_CSP` and ``frame-ancestors 'self'`` plus ``frame_ancestors``
    (origins, already checked by the tenant settings' rules)."""
    ancestors = " ".join(["'self'", *(origin for origin in frame_ancestors if origin != "'self'")])
    return f"{EMBED_CSP}; frame-ancestors {ancestors}"


class _EmbedFramingMiddleware(django_clickjacking.XFrameOptionsMiddleware):
    """``X-Frame-Options: DENY`` everywhere except under ``/embed/``, which instead answers with the embed CSP.

    There ``frame-ancestors`` lists the origins the view put on ``response.embed_frame_ancestors`` (the account's
    allowed origins; none when the view could not tell the account): only those pages may frame it.
    """

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if not request.path.startswith(EMBED_PREFIX):
            return super().process_response(request, response)
        origins = getattr(response, "embed_frame_ancestors", None) or []
        response["Content-Security-Policy"] = embed_content_security_policy(list(origins))
        if "X-Frame-Options" in response:
            del response["X-Frame-Options"]
        return response


XFrameOptionsMiddleware = _sync_only(_EmbedFramingMiddleware)
ApiErrorMiddleware.async_capable = False
