"""Keeps API paths JSON all the way down: unknown URLs, unhandled errors, Django's own rejections."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from embedadmin.core.errors import ApiError, json_error

logger = logging.getLogger(__name__)

API_PREFIXES = ("/api/", "/cubejs-api/", "/livez", "/readyz")


def is_api_path(path: str) -> bool:
    base = getattr(settings, "CUBEJS_BASE_PATH", "/cubejs-api").rstrip("/") + "/"
    return path.startswith(API_PREFIXES) or path.startswith(base)


class ApiErrorMiddleware:
    """Replaces HTML error pages with ``{"error": ...}`` for API paths.

    DRF views render their own errors; this catches what happens outside them: a URL that matches no
    route, a method Django itself refuses, a body Django cannot read, and any exception a plain
    Django view lets escape.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            is_api_path(request.path)
            and response.status_code >= 400
            and not response.get("Content-Type", "").startswith("application/")
        ):
            return json_error(_status_message(response.status_code), response.status_code)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_api_path(request.path):
            return None
        if isinstance(exception, ApiError):
            return json_error(exception.message, exception.status)
        logger.exception("Unhandled error on %s", request.path, exc_info=exception)
        return json_error("Internal server error", 500)


def _status_message(status: int) -> str:
    return {
        400: "Bad request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not found",
        405: "Method not allowed",
        413: "Request body too large",
    }.get(status, "Internal server error" if status >= 500 else "Request failed")
