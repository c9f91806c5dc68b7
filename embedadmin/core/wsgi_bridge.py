"""Serve a WSGI application under ASGI with one thread hand-off per request (ADR 0009).

The request body is read on the event loop, the application runs in a worker thread of a bounded pool,
and its response comes back in one piece when it is small (every JSON answer, every page). A response
larger than ``buffer_bytes`` or produced slowly by a generator is streamed: the first buffer is sent as
soon as it is ready and the rest is pulled from the iterator in further hand-offs, one per buffer.

A Django ``StreamingHttpResponse`` over an async iterator (the Chat API's NDJSON) is iterated on the
event loop instead, each chunk sent as it is produced; a client that disconnects cancels it.

General-purpose bridges hand every ``receive`` and ``send`` across threads (about six hand-offs for a
small request), which costs more CPU than Django's request handling itself (ADR 0009).

``close()`` of the response always runs in a worker thread, where Django's ``request_finished`` signal
releases that thread's database connections. A response that outlives its hand-off (a stream) may be
closed by another thread of the pool, so the thread that ran the view calls ``release`` (Django's
``close_old_connections``) before it takes the next request.

Header names with an underscore are dropped, as Django's ASGI handler and gunicorn drop them: in the
environ ``X_Forwarded_Proto`` would be indistinguishable from ``X-Forwarded-Proto``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, cast

from embedadmin.core.error_shapes import error_shape
from embedadmin.core.head_limits import (
    DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_MAX_TARGET_BYTES,
    HeadRefused,
    check_headers,
    check_target,
    header_bytes,
)

if TYPE_CHECKING:
    from django.http import StreamingHttpResponse

logger = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _BodyTooLarge(Exception):
    pass


class _Disconnected(Exception):
    pass


class _Response:
    """What the application answered, filled in by the worker thread."""

    def __init__(self) -> None:
        self.iterable: Iterable[bytes] = ()
        self.iterator: Iterator[bytes] | None = None
        self.status: int | None = None
        self.headers: list[tuple[bytes, bytes]] = []
        self.async_content: AsyncIterator[bytes] | None = None

    def begin(
        self, app: WSGIApp, environ: dict[str, Any], budget: int, release: Callable[[], None] | None
    ) -> list[bytes]:
        """Call the application and pull its first chunks (WSGI lets it call start_response late).
        ``release`` runs here if the response outlives this call."""
        self.iterable = app(environ, self.start_response)
        if getattr(self.iterable, "is_async", False) and self.status is not None:
            # Django's StreamingHttpResponse over an async iterator: the event loop iterates it.
            response = cast("StreamingHttpResponse", self.iterable)
            self.async_content = cast(AsyncIterator[bytes], response.streaming_content)
            self.iterator = iter(())
            chunks: list[bytes] = []
        else:
            self.iterator = iter(self.iterable)
            chunks = self.pull(budget)
            if self.status is None:
                self.close()
                raise RuntimeError("The WSGI application returned without calling start_response")
        if self.iterator is not None and release is not None:
            release()
        return chunks

    def start_response(self, status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable:
        if exc_info is not None and self.status is not None:
            raise exc_info[1].with_traceback(exc_info[2])
        self.status = int(status.split(" ", 1)[0])
        self.headers = [(name.lower().encode("latin1"), value.encode("latin1")) for name, value in headers]
        return _no_write

    def pull(self, budget: int) -> list[bytes]:
        """The next chunks, up to ``budget`` bytes; closes the response once the iterator is spent."""
        chunks: list[bytes] = []
        size = 0
        iterator = self.iterator
        if iterator is None:
            return chunks
        try:
            for chunk in iterator:
                if chunk:
                    chunks.append(chunk)
                    size += len(chunk)
                    if size >= budget:
                        return chunks
        except BaseException:
            self.close()
            raise
        self.close()
        return chunks

    def close(self) -> None:
        if self.iterator is None:
            return
        self.iterator = None
        close = getattr(self.iterable, "close", None)
        if close is not None:
            close()


def _no_write(_data: bytes) -> None:
    raise RuntimeError("The write() callable of WSGI is not supported; return an iterable instead")


def refuse_oversized(scope: dict[str, Any], max_target_bytes: int, max_header_bytes: int) -> tuple[int, str] | None:
    """The status and message refusing a request whose target or headers exceed the limits
    (:mod:`embedadmin.core.head_limits`), else None."""
    raw_path = scope.get("raw_path") or scope["path"].encode("utf8")
    try:
        check_target(len(raw_path) + 1 + len(scope.get("query_string", b"")), max_target_bytes)
        check_headers(sum(header_bytes(name, value) for name, value in scope.get("headers", ())), max_header_bytes)
    except HeadRefused as refused:
        return refused.status, refused.message
    return None


def build_environ(scope: dict[str, Any], body: bytes) -> dict[str, Any]:
    """The WSGI environ (PEP 3333) for an ASGI HTTP scope and its whole body."""
    script_name = scope.get("root_path", "").encode("utf8").decode("latin1")
    path_info = scope["path"].encode("utf8").decode("latin1")
    if script_name and path_info.startswith(script_name):
        path_info = path_info[len(script_name) :]
    server_name, server_port = scope.get("server") or ("localhost", 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": script_name,
        "PATH_INFO": path_info,
        "QUERY_STRING": scope.get("query_string", b"").decode("latin1"),
        "SERVER_NAME": server_name,
        "SERVER_PORT": str(server_port or 0),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "CONTENT_LENGTH": str(len(body)),
    }
    client = scope.get("client")
    if client:
        environ["REMOTE_ADDR"], port = client[0], client[1]
        environ["REMOTE_PORT"] = str(port)
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin1").lower()
        if name == "content-length" or "_" in name:
            continue  # the body was read whole (its real length is set above); see the module docstring
        key = "CONTENT_TYPE" if name == "content-type" else "HTTP_" + name.upper().replace("-", "_")
        value = raw_value.decode("latin1")
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


class WSGIBridge:
    """An ASGI application that runs ``app`` in a pool of ``threads`` threads, one hand-off a request.

    Request bodies above ``max_body_bytes`` are refused with a JSON 413 before the application runs
    (a body is held in memory; the application may enforce smaller limits, as Django's
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` of 2.5 MB does). Before any of that, a request target (path and query
    string) longer than ``max_target_bytes`` is refused with a JSON 414, and headers larger than
    ``max_header_bytes`` together (names and values) with a JSON 431. ``release`` is called in the
    application's thread when a response outlives the hand-off (see the module docstring).
    """

    def __init__(
        self,
        app: WSGIApp,
        *,
        threads: int,
        max_body_bytes: int = 4 * 1024 * 1024,
        buffer_bytes: int = 256 * 1024,
        release: Callable[[], None] | None = None,
        max_target_bytes: int = DEFAULT_MAX_TARGET_BYTES,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_target_bytes = max_target_bytes
        self.max_header_bytes = max_header_bytes
        self.buffer_bytes = buffer_bytes
        self.release = release
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="wsgi")

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            raise RuntimeError(f"WSGIBridge serves HTTP only, not {scope['type']!r}")
        refused = refuse_oversized(scope, self.max_target_bytes, self.max_header_bytes)
        if refused is not None:
            await _send_error(send, scope, *refused)
            return
        try:
            body = await self._read_body(scope, receive)
        except _Disconnected:
            return
        except _BodyTooLarge:
            await _send_error(send, scope, 413, "Request body too large")
            return
        loop = asyncio.get_running_loop()
        response = _Response()
        try:
            chunks = await loop.run_in_executor(
                self.executor, response.begin, self.app, build_environ(scope, body), self.buffer_bytes, self.release
            )
        except Exception:
            logger.exception("The WSGI application failed on %s", scope["path"])
            await _send_error(send, scope, 500, "Internal server error")
            return
        try:
            await send({"type": "http.response.start", "status": response.status, "headers": response.headers})
            if response.async_content is not None:
                await _until_disconnect(_send_async(response.async_content, send), receive)
            elif response.iterator is None:
                await send({"type": "http.response.body", "body": b"".join(chunks), "more_body": False})
            else:
                await _until_disconnect(self._send_pulled(response, chunks, send), receive)
        finally:
            if response.iterator is not None:  # an async stream, or a pulled one the client left mid-way
                await loop.run_in_executor(self.executor, response.close)

    async def _send_pulled(self, response: _Response, chunks: list[bytes], send: Callable) -> None:
        """Send a large or slow synchronous answer, pulling one buffer per hand-off."""
        loop = asyncio.get_running_loop()
        while response.iterator is not None:
            for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            pulling = loop.run_in_executor(self.executor, response.pull, self.buffer_bytes)
            try:
                chunks = await asyncio.shield(pulling)
            except asyncio.CancelledError:
                # The client left: let the thread finish with the iterator before anyone closes it.
                await asyncio.wait({pulling})
                raise
        await send({"type": "http.response.body", "body": b"".join(chunks), "more_body": False})

    async def _read_body(self, scope: dict[str, Any], receive: Callable) -> bytes:
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                raise _BodyTooLarge
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            part = message.get("body", b"")
            size += len(part)
            if size > self.max_body_bytes:
                raise _BodyTooLarge
            parts.append(part)
            if not message.get("more_body", False):
                return b"".join(parts)


async def _send_async(content: AsyncIterator[bytes], send: Callable) -> None:
    """Send an async stream chunk by chunk as it is produced; close it however this ends."""
    async with contextlib.aclosing(content):  # type: ignore[type-var]
        async for chunk in content:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _until_disconnect(sending: Coroutine[Any, Any, None], receive: Callable) -> None:
    """Run ``sending``; cancel it if the client disconnects first (the ASGI server's ``receive``
    answers ``http.disconnect`` then, once the request body has been read)."""

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    streaming = asyncio.ensure_future(sending)
    watching = asyncio.ensure_future(watch())
    try:
        await asyncio.wait({streaming, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (streaming, watching):
            task.cancel()
        await asyncio.gather(streaming, watching, return_exceptions=True)
    if not streaming.cancelled():
        error = streaming.exception()
        if error is not None:
            raise error


async def _send_error(send: Callable, scope: dict[str, Any], status: int, message: str) -> None:
    """The error answer of a request the application never saw, in the shape its path takes
    (:mod:`embedadmin.core.error_shapes`: SCIM's under the SCIM roots, ``{"error": ...}`` elsewhere)."""
    media_type, body = error_shape(scope["path"], status, message)
    content = json.dumps(body).encode()
    headers = [(b"content-type", media_type.encode()), (b"content-length", str(len(content)).encode())]
    if status in (414, 431):
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content, "more_body": False})
