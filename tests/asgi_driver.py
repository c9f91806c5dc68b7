"""Drive an ASGI application in process as a server would, for one request: the tests of the lanes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
