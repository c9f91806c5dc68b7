"""Drive an ASGI application in process as a server would, for one request: the tests of the lanes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def http_scope(method: str, path: str, headers: dict[str, str], query: bytes = b"") -> dict[str, Any]:
    """The ASGI scope of one HTTP/1.1 request from a local client."""
    return {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query,
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "server": ("127.0.0.1", 4000),
        "client": ("127.0.0.1", 5000),
        "scheme": "http",
        "http_version": "1.1",
    }


async def drive(app: Callable, scope: dict[str, Any], chunks: list[bytes]) -> tuple[int, list, bytes]:
    """Send the request body in ``chunks``; the answer's status, headers and body."""
    incoming = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    sent: list[dict] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], sent[0].get("headers", []), b"".join(m.get("body", b"") for m in sent[1:])
