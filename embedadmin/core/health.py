"""Liveness and readiness probes: JSON, no authentication."""

from __future__ import annotations

import logging
import time

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from embedadmin.core.errors import database_unavailable, retry_headers

logger = logging.getLogger(__name__)

# The probes change nothing, so CSRF does not apply; exempting them lets a wrong method get its 405
# instead of the CSRF middleware's 403.


@csrf_exempt
@require_GET
def livez(request: HttpRequest) -> JsonResponse:
    """The process is up and serving requests."""
    return JsonResponse({"status": "ok"})


@csrf_exempt
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """The process can serve traffic: the application database answers.

    200 ``{"status": "ok", "checks": {"database": "ok"}, "databaseMs": ...}``; else 503 with ``Retry-After`` and
    ``{"status": "unavailable", "checks": {"database": "<why>"}}``, the reason safe to show (no host or user).
    The connection comes from the pool, which checks it before handing it out: after the database comes back
    the probe does not flap on the dead connections the pool still held.
    """
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means not ready
        reason = database_unavailable(exc) or f"error: {type(exc).__name__}"
        logger.warning("not ready: database %s", reason)
        # A connection that failed is not kept for the next probe.
        connection.close_if_unusable_or_obsolete()
        return JsonResponse(
            {"status": "unavailable", "checks": {"database": reason}}, status=503, headers=retry_headers(503)
        )
    elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    return JsonResponse({"status": "ok", "checks": {"database": "ok"}, "databaseMs": elapsed_ms})
