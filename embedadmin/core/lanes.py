"""What the lanes in front of Django share (ADR 0010, 0011): a small pool of async PostgreSQL connections
(``connection_params``: Django's own), reading a request body so that Django can still be handed the request
whole, the refusal of a repeated credential header (``headers_once``), and bounded memories of pure functions
(``remember``, ``remembered``).

The lanes (``embedding/lane.py``, ``semantic/lane.py``) answer some requests on the event loop and hand
every other one to the application behind them. Django keeps its own pool of sync connections; the lanes'
pool opens on first use, inside the running event loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, MutableMapping
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

LANE_POOL_SIZE = 4
MAX_REMEMBERED = 10_000  # entries in each of a lane's memories


class LanePool:
    """Up to ``size`` autocommit connections, opened lazily."""

    def __init__(self, connection_params: dict[str, Any], *, size: int = LANE_POOL_SIZE) -> None:
        self.params = connection_params
        self.pool = AsyncConnectionPool(
            kwargs={**connection_params, "autocommit": True},
            min_size=1,
            max_size=size,
            open=False,
            timeout=10,
            name="lanes",
        )
        self._opened = False

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection]:
        if not self._opened:
            await self.pool.open()  # idempotent, so two first requests racing here are fine
            self._opened = True
        async with self.pool.connection() as conn:
            yield conn

    async def close(self) -> None:
        await self.pool.close()


def connection_params(settings_dict: dict[str, Any]) -> dict[str, Any]:
    """psycopg connection arguments from Django's database settings (PostgreSQL): Django's own, so every
    libpq option of ``DATABASE_URL`` reaches the lanes too (``prepare_threshold`` included, as Django passes it:
    None never prepares), without its sync cursor class and adapters."""
    from django.db.backends.postgresql.base import DatabaseWrapper

    params = DatabaseWrapper(settings_dict).get_connection_params()
    for name in ("cursor_factory", "context"):
        params.pop(name, None)
    return params


def headers_once(scope: dict[str, Any], names: tuple[bytes, ...]) -> dict[bytes, bytes] | None:
    """The request's headers by name; None when one of ``names`` is repeated (the application behind
    reads the values together, so a lane must leave the request to it)."""
    headers: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        if name in headers and name in names:
            return None
        headers[name] = value
    return headers


async def read_some(receive: Callable, limit: int) -> tuple[bytes, bool]:
    """Read the request body up to about ``limit`` bytes; whether it was all read (a larger body, or a
    client that left, is the application's to handle)."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts), False
        part = message.get("body", b"")
        parts.append(part)
        size += len(part)
        if not message.get("more_body", False):
            return b"".join(parts), True
        if size > limit:
            return b"".join(parts), False


def replay(body: bytes, complete: bool, receive: Callable) -> Callable:
    """A ``receive`` that first gives back what was read, then the rest from the client."""
    sent = False

    async def replayed() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": not complete}
        return await receive()

    return replayed


def remember(memory: MutableMapping[Any, Any], key: Any, value: Any, *, limit: int = MAX_REMEMBERED) -> None:
    """``memory[key] = value``, keeping at most ``limit`` entries (the oldest makes room)."""
    if key not in memory and len(memory) >= limit:
        memory.pop(next(iter(memory)))
    memory[key] = value


def remembered(memory: MutableMapping[Any, Any], key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()`` for ``key``, remembered in ``memory`` (see :func:`remember`)."""
    if key in memory:
        return memory[key]
    value = compute()
    remember(memory, key, value)
    return value
