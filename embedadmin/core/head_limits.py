"""The request-head limits (``LIMITS["MAX_REQUEST_LINE_BYTES"]`` and ``LIMITS["MAX_HEADER_BYTES"]``): one rule
for the two places that enforce them, the product's HTTP protocol while the head is read
(:mod:`embedadmin.core.http_server`) and the ASGI entry for any other server (:mod:`embedadmin.core.wsgi_bridge`).

This module imports nothing of Django: gunicorn's master imports the worker class that uses it.
"""

from __future__ import annotations

DEFAULT_MAX_TARGET_BYTES = 48 * 1024
DEFAULT_MAX_HEADER_BYTES = 32 * 1024


class HeadRefused(Exception):
    """A request head beyond a limit: the status and message it is answered with, in the shape the request's path
    takes (:mod:`embedadmin.core.error_shapes`)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def header_bytes(name: bytes, value: bytes) -> int:
    """What one header counts against the limit: its name and value, ``": "`` and CRLF, as on the wire."""
    return len(name) + len(value) + 4


def check_target(size: int, limit: int) -> None:
    """Refuse a request target (path and query string) of ``size`` bytes above ``limit`` with a 414."""
    if size > limit:
        raise HeadRefused(414, f"Request line too long: the path and query string may hold at most {limit} bytes")


def check_headers(size: int, limit: int) -> None:
    """Refuse headers of ``size`` bytes together (see :func:`header_bytes`) above ``limit`` with a 431."""
    if size > limit:
        raise HeadRefused(431, f"Request headers too large: at most {limit} bytes of header names and values")
