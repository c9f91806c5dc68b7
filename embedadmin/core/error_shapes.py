"""The one rule for the shape of an error body, decided by the request's path.

Under the SCIM roots (``/api/scim/`` and its alias ``/scim/``) an error is what RFC 7644 section 3.12 defines and
nothing more: ``schemas`` (the Error URN), ``status`` (the HTTP status as a string), ``scimType`` when there is one
and ``detail``, in ``application/scim+json``. Anywhere else it is the product's ``{"error": "..."}`` in
``application/json`` (STYLE 9).

Every layer that renders an error asks this module: the HTTP protocol refusing a request head while it is read
(:mod:`embedadmin.core.http_server`), the ASGI entry (:mod:`embedadmin.core.wsgi_bridge`), the middleware and the
DRF exception handler (:mod:`embedadmin.core.errors`) and the SCIM views. It imports nothing of Django: gunicorn's
master imports the worker class, and with it this module.
"""

from __future__ import annotations

from typing import Any

SCIM_ROOTS = ("/api/scim/", "/scim/")
SCIM_ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"
SCIM_MEDIA_TYPE = "application/scim+json"
JSON_MEDIA_TYPE = "application/json"


def is_scim_path(path: str) -> bool:
    """Whether a request for ``path`` (decoded, without its query string) is a SCIM request: any path under a SCIM
    root, including one no SCIM endpoint serves, and the roots themselves without their slash."""
    return f"{path}/".startswith(SCIM_ROOTS)


def error_body(message: str) -> dict[str, str]:
    """The product's error body."""
    return {"error": message}


def scim_error_body(status: int, message: str, scim_type: str | None = None) -> dict[str, Any]:
    """An RFC 7644 section 3.12 Error: exactly ``schemas``, ``status`` (a string), ``scimType`` if given, ``detail``."""
    body: dict[str, Any] = {"schemas": [SCIM_ERROR_SCHEMA], "status": str(status)}
    if scim_type:
        body["scimType"] = scim_type
    body["detail"] = message
    return body


def error_shape(path: str, status: int, message: str) -> tuple[str, dict[str, Any]]:
    """The media type and body of the error ``status`` with ``message`` answered to a request for ``path``."""
    if is_scim_path(path):
        return SCIM_MEDIA_TYPE, scim_error_body(status, message)
    return JSON_MEDIA_TYPE, error_body(message)
