"""Keeps API paths JSON all the way down: unknown URLs, unhandled errors, Django's own rejections."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from embedadmin.core.errors import client_error, json_error

logger = logging.getLogger(__name__)

API_PREFIXES = ("/api/", "/cubejs-api/", "/livez", "/readyz")


def is_api_path(path: str) -> bool:
    base = getattr(settings, "CUBEJS_BASE_PATH", "/cubejs-api").rstrip("/") + "/"
    return path.startswith(API_PREFIXES) or path.startswith(base)


def _has_nul(request: HttpRequest) -> bool:
    """Whether the path or a query parameter carries a NUL character.

    No name or id contains one and PostgreSQL cannot even compare text with it, so such a request is
    refused here, once, instead of failing as a database error in whichever view it reaches.
    """
    if "\x00" in request.path:
        return True
    return any("\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists())


class ApiErrorMiddleware:
    """Replaces HTML error pages with ``{"error": ...}`` for API paths.

    DRF views render their own errors; this catches what happens outside them: a URL that matches no
    route, a method Django itself refuses, a body Django cannot read, and any exception a plain
    Django view lets escape. Under ``/api/scim/`` the body has the SCIM error shape.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_api_path(request.path):
            return self.get_response(request)
        if _has_nul(request):
            return json_error("The URL must not contain NUL characters", 400, path=request.path)
        response = self.get_response(request)
        if response.status_code >= 400 and not response.get("Content-Type", "").startswith("application/"):
            return json_error(_status_message(response.status_code), response.status_code, path=request.path)
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


def _status_message(status: int) -> str:
    return {
        400: "Bad request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not found",
        405: "Method not allowed",
        413: "Request body too large",
    }.get(status, "Internal server error" if status >= 500 else "Request failed")
