"""The HTTP protocol the product is served with: uvicorn's, refusing oversized requests with JSON.

uvicorn's httptools protocol (its default) takes headers of any size, and a request target of 64 KiB or more
fails its URL parser with a plain-text 400; its h11 protocol refuses a head above 16 KiB the same way. This
protocol refuses, while the request head is still being read:

- a request target (path and query string) longer than ``LIMITS["MAX_REQUEST_LINE_BYTES"]`` with a JSON 414,
- headers larger than ``LIMITS["MAX_HEADER_BYTES"]`` together with a JSON 431,

and answers any other request the parser cannot read with a JSON 400 instead of plain text. Each refusal has the
shape :mod:`embedadmin.core.error_shapes` gives the request's path as far as it was read: SCIM's Error under the
SCIM roots, ``{"error": ...}`` elsewhere (h11 reports no path with its parse errors: its 400 is the latter). The
application
enforces the same limits at its entry (:mod:`embedadmin.core.wsgi_bridge`), for any other server; both apply
the one rule of :mod:`embedadmin.core.head_limits`.

Serve with it: ``uvicorn embedadmin.asgi:application --http embedadmin.core.http_server:HttpToolsProtocol``, or
under gunicorn ``-k embedadmin.core.http_server.UvicornWorker`` (``make run``, ``docker/Dockerfile`` and
``bench/_harness.py`` do). With ``--http h11`` use ``--h11-max-incomplete-event-size`` above both limits (the
worker class sets 1 MiB), so that the application sees an oversized head and refuses it with JSON.

This module imports no Django at import time: gunicorn's master imports the worker class.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote, urlsplit

from uvicorn.protocols.http.h11_impl import H11Protocol as _H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _HttpToolsProtocol
from uvicorn_worker import UvicornWorker as _UvicornWorker  # type: ignore[import-untyped]

from embedadmin.core.error_shapes import error_shape
from embedadmin.core.head_limits import (
    DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_MAX_TARGET_BYTES,
    HeadRefused,
    check_headers,
    check_target,
    header_bytes,
)

H11_MAX_INCOMPLETE_EVENT_SIZE = 1024 * 1024
INVALID_REQUEST = "Invalid HTTP request"


def _limits() -> tuple[int, int]:
    """The request-target and header limits of the settings (the defaults before Django is set up)."""
    try:
        from django.conf import settings

        limits = settings.LIMITS
        return int(limits["MAX_REQUEST_LINE_BYTES"]), int(limits["MAX_HEADER_BYTES"])
    except Exception:  # settings not configured (a bare server): the defaults
        return DEFAULT_MAX_TARGET_BYTES, DEFAULT_MAX_HEADER_BYTES


def target_path(target: bytes) -> str:
    """The decoded path of a request target (origin or absolute form, perhaps cut short), as the application would
    see it; "" when it has none."""
    try:
        return unquote(urlsplit(target.decode("latin1")).path, encoding="utf-8", errors="replace")
    except ValueError:  # not a URL at all (an invalid IPv6 host in an absolute form)
        return ""


def json_refusal(status: int, message: str, path: str = "") -> bytes:
    """A complete HTTP/1.1 error response that closes the connection, in the shape ``path`` takes
    (:func:`embedadmin.core.error_shapes.error_shape`)."""
    media_type, shape = error_shape(path, status, message)
    body = json.dumps(shape).encode()
    phrase = HTTPStatus(status).phrase
    head = (
        f"HTTP/1.1 {status} {phrase}\r\ncontent-type: {media_type}\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("latin1") + body


class HttpToolsProtocol(_HttpToolsProtocol):
    """uvicorn's httptools protocol with the request-head limits of the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._max_target, self._max_headers = _limits()
        self._header_bytes = 0
        self._refusal: HeadRefused | None = None
        self._target = b""  # the target of the request being read (its refusal's shape depends on its path)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._target = b""

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._target = self.url
        # Raised inside the parser's callback: httptools stops parsing and uvicorn answers a 400, which
        # send_400_response turns into the refusal.
        try:
            check_target(len(self.url), self._max_target)
        except HeadRefused as refused:
            self._refusal = refused
            raise

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += header_bytes(name, value)
        try:
            check_headers(self._header_bytes, self._max_headers)
        except HeadRefused as refused:
            self._refusal = refused
            raise
        super().on_header(name, value)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._target = b""  # what the parser refuses next belongs to another request

    def send_400_response(self, msg: str) -> None:
        refusal, self._refusal = self._refusal, None
        status, message = (refusal.status, refusal.message) if refusal else (400, INVALID_REQUEST)
        self.transport.write(json_refusal(status, message, target_path(self._target)))
        self.transport.close()


class H11Protocol(_H11Protocol):
    """uvicorn's h11 protocol answering a request it cannot read with a JSON 400 (set its incomplete-event size
    above the limits, so that the application refuses an oversized head with a JSON 414 or 431)."""

    def send_400_response(self, msg: str) -> None:
        self.transport.write(json_refusal(400, INVALID_REQUEST))
        self.transport.close()


class UvicornWorker(_UvicornWorker):
    """gunicorn's uvicorn worker (``-k embedadmin.core.http_server.UvicornWorker``) serving with
    :class:`HttpToolsProtocol`."""

    CONFIG_KWARGS: dict[str, Any] = {
        "loop": "auto",
        "http": "embedadmin.core.http_server:HttpToolsProtocol",
        "h11_max_incomplete_event_size": H11_MAX_INCOMPLETE_EVENT_SIZE,
    }
