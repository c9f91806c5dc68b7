"""One application error type and one renderer for it: every API error body is ``{"error": "..."}``, except under
the SCIM roots, where it is RFC 7644's Error (the rule: :mod:`embedadmin.core.error_shapes`).

Services raise :class:`ApiError` subclasses; the DRF exception handler and the middleware below turn
them (and DRF's own exceptions) into JSON with the right status. Nothing an API returns is HTML.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.db import DataError, InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from embedadmin.core.error_shapes import SCIM_MEDIA_TYPE as SCIM_MEDIA_TYPE
from embedadmin.core.error_shapes import error_body, error_shape
from embedadmin.core.pgpool import is_unavailable_error, unavailable_reason

logger = logging.getLogger(__name__)

# What a 503 tells the client to wait before it retries: a restarted PostgreSQL is back within seconds.
RETRY_AFTER_SECONDS = 5


class ApiError(Exception):
    """An error a client caused or must be told about; ``message`` is shown to the client verbatim."""

    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(ApiError):
    status = 400


class Unauthorized(ApiError):
    status = 401


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class LimitExceeded(ApiError):
    """A per-account quota (such as the external-user cap) would be exceeded."""

    status = 429


def flatten_validation_detail(detail: Any, prefix: str = "") -> list[str]:
    """Turn DRF's nested validation detail into ``field: message`` strings, deepest path first."""
    if isinstance(detail, dict):
        out: list[str] = []
        for key, value in detail.items():
            name = prefix if key == "non_field_errors" else (f"{prefix}.{key}" if prefix else str(key))
            out.extend(flatten_validation_detail(value, name))
        return out
    if isinstance(detail, list):
        out = []
        for index, value in enumerate(detail):
            if isinstance(value, dict | list):
                out.extend(flatten_validation_detail(value, f"{prefix}[{index}]"))
            else:
                out.extend(flatten_validation_detail(value, prefix))
        return out
    text = str(detail)
    return [f"{prefix}: {text}" if prefix else text]


DATABASE_UNAVAILABLE = "Service unavailable: the database cannot be reached; retry later"


def database_unavailable(exc: BaseException) -> str | None:
    """Why the application database could not serve, when ``exc`` says it is down or unreachable (Django's
    ``OperationalError``/``InterfaceError``, psycopg's own errors and pool timeouts); None for anything else.

    Every ``OperationalError`` counts: besides a lost connection or a pool timeout, PostgreSQL raises it for a
    deadlock, a cancelled statement or a lock it could not take, all of which a retry may get past too.
    """
    cause = exc.__cause__ if isinstance(exc, OperationalError | InterfaceError) and exc.__cause__ else exc
    if isinstance(exc, OperationalError | InterfaceError) or is_unavailable_error(cause):
        return unavailable_reason(cause)
    return None


def client_error(exc: BaseException) -> tuple[int, str] | None:
    """Status and message for an exception the request caused, wherever it was raised (a DRF view, a
    plain Django view, reading the body); None when it is a fault of the server. A database that cannot be
    reached is a 503 (:func:`database_unavailable`, logged here): the client should retry, see
    :func:`retry_headers`."""
    if isinstance(exc, ApiError):
        return exc.status, exc.message
    if isinstance(exc, Http404):
        return 404, "Not found"
    if isinstance(exc, PermissionDenied):
        return 403, "Forbidden"
    if isinstance(exc, RequestDataTooBig):
        return 413, "Request body too large"
    if isinstance(exc, TooManyFieldsSent):
        return 400, "Bad request: too many query parameters"
    if isinstance(exc, SuspiciousOperation):  # Django's own refusals of a malformed request
        return 400, "Bad request"
    if isinstance(exc, RecursionError):
        # The stdlib JSON decoder gives up on deeply nested input this way, not with a ValueError.
        return 400, "Invalid JSON body: nested too deeply"
    if isinstance(exc, DataError):
        # A value the database refuses (a NUL character, a number out of range) is the client's input:
        # the atomic block it failed in has rolled back. Logged, as it means a validation is missing.
        logger.warning("Database refused a value: %s", exc)
        return 400, "Invalid request: a value is not acceptable"
    reason = database_unavailable(exc)
    if reason is not None:
        logger.warning("Database unavailable (%s): %s", reason, exc)
        return 503, DATABASE_UNAVAILABLE
    return None


def retry_headers(status: int) -> dict[str, str]:
    """``Retry-After`` for a 503, nothing for any other status."""
    return {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 503 else {}


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF exception handler rendering every failure as ``{"error": ...}``."""
    if isinstance(exc, drf_exceptions.ValidationError):
        return Response(error_body("; ".join(flatten_validation_detail(exc.detail))), status=400)
    if isinstance(exc, drf_exceptions.ParseError):
        return Response(error_body(f"Invalid JSON body: {exc.detail}"), status=400)
    if isinstance(exc, drf_exceptions.APIException):
        headers: dict[str, str] = {}
        auth_header = getattr(exc, "auth_header", None)
        if auth_header:
            headers["WWW-Authenticate"] = auth_header
        wait = getattr(exc, "wait", None)
        if wait:
            headers["Retry-After"] = str(int(wait))
        elif exc.status_code == 503:
            headers.update(retry_headers(503))
        return Response(error_body(str(exc.detail)), status=exc.status_code, headers=headers)
    known = client_error(exc)
    if known is not None:
        status, message = known
        return Response(error_body(message), status=status, headers=retry_headers(status))
    logger.exception("Unhandled error in API view", exc_info=exc)
    return Response(error_body("Internal server error"), status=500)


def json_error(message: str, status: int, *, path: str = "") -> JsonResponse:
    """An error response outside DRF views, in the shape and media type :func:`error_shape` gives ``path`` (SCIM's
    under the SCIM roots). A 503 carries ``Retry-After``."""
    media_type, body = error_shape(path, status, message)
    response = JsonResponse(body, status=status, content_type=media_type)
    for name, value in retry_headers(status).items():
        response[name] = value
    return response
