"""Liveness and readiness probes: JSON, no authentication."""

from __future__ import annotations

import time

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

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
    """The process can serve traffic: the application database answers."""
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means not ready
        return JsonResponse(
            {"status": "unavailable", "checks": {"database": f"error: {type(exc).__name__}"}}, status=503
        )
    elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    return JsonResponse({"status": "ok", "checks": {"database": "ok"}, "databaseMs": elapsed_ms})
