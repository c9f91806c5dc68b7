"""What a process remembers of rows that hot paths read on every request, and when it must read them again.

Every Core Data API request needs its deployment, the deployment's signing secrets and whether its token was
revoked; every generate-session needs its API key. A process keeps what it read in a :class:`ProcessMemory`,
tagged with the :class:`SharedVersion` that was current before it read it. The services that change those rows
call :meth:`SharedVersion.bump`: the version moves on in Django's cache as they write and when they commit, so
every process reads again on its next request: local memory in the embedded install (one process), Redis at
scale. A copy is also read again after ``max_age_s``, which bounds how long a write by a process that shares no
cache with this one (a management command beside the embedded server) goes unseen. ADR 0012 says why.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from django.conf import settings
from django.core.cache import BaseCache, caches
from django.db import transaction

from embedadmin.core.logs import ThrottledWarning
from embedadmin.core.memory import ByteLRU, rough_size

logger = logging.getLogger(__name__)

# Every request reads a version: while the cache is down, once per interval is enough to say so.
_unreadable = ThrottledWarning(logger)

V = TypeVar("V")

_per_thread = threading.local()


def thread_cache() -> BaseCache:
    """This thread's instance of Django's default cache: the one ``django.core.cache.cache`` resolves to, without
    the process-wide lock that proxy takes on every call (asgiref's ``Local``), which every request thread would
    otherwise queue on for each read on a hot path."""
    backend: BaseCache | None = getattr(_per_thread, "cache", None)
    if backend is None:
        backend = _per_thread.cache = caches["default"]
    return backend


class SharedVersion:
    """A version of some rows, shared by every process through Django's cache."""

    def __init__(self, name: str) -> None:
        self.key = f"version:{name}"

    def current(self) -> str:
        """The version now. Read it before the rows it guards: a write committed in between then makes the
        copy stale rather than the version. An unreachable cache gives a version no copy has."""
        try:
            backend = thread_cache()
            value = backend.get(self.key)
            if value is None:
                backend.add(self.key, uuid.uuid4().hex, None)
                value = backend.get(self.key)
        except Exception:
            _unreadable.warn("cache unavailable: reading %s afresh", self.key)
            value = None
        return value if isinstance(value, str) else uuid.uuid4().hex

    def bump(self) -> None:
        """Move the version on now, so that no copy read before the caller's write outlives it, and again when
        the caller's transaction commits, so that no copy read before the commit does."""
        self._move_on()
        if transaction.get_connection().in_atomic_block:
            transaction.on_commit(self._move_on)

    def _move_on(self) -> None:
        try:
            thread_cache().set(self.key, uuid.uuid4().hex, None)
        except Exception:
            logger.warning("cache unavailable: %s not moved on", self.key, exc_info=True)


class ProcessMemory(Generic[V]):
    """At most ``max_entries`` values and about ``max_bytes`` of them (by default ``LIMITS["PROCESS_MEMORY_BYTES"]``,
    each value's size estimated by :func:`~embedadmin.core.memory.rough_size` when it is stored), each valid under
    the version it was stored with, for ``max_age_s`` at most (by default ``CREDENTIAL_MEMORY_SECONDS``) and until
    its own ``expires_at`` (Unix time) if it has one. The least recently stored entry makes room."""

    def __init__(
        self, *, max_entries: int = 10_000, max_age_s: float | None = None, max_bytes: int | None = None
    ) -> None:
        self.max_age_s = settings.EMBEDADMIN["CREDENTIAL_MEMORY_SECONDS"] if max_age_s is None else max_age_s
        budget = settings.LIMITS["PROCESS_MEMORY_BYTES"] if max_bytes is None else max_bytes
        self._entries: ByteLRU[Hashable, tuple[V, str, float, float]] = ByteLRU(
            "remembered credentials", budget, max_entries=max_entries
        )

    @property
    def held_bytes(self) -> int:
        return self._entries.held_bytes

    def get(self, key: Hashable, version: str) -> V | None:
        entry = self._entries.peek(key)
        if entry is None:
            return None
        value, stored_version, stored_at, expires_at = entry
        if stored_version != version or time.monotonic() - stored_at >= self.max_age_s or time.time() >= expires_at:
            return None
        return value

    def put(self, key: Hashable, value: V, version: str, *, expires_at: float = float("inf")) -> None:
        size = rough_size(value) + rough_size(key) + len(version)
        self._entries.put(key, (value, version, time.monotonic(), expires_at), size)

    def remembered(
        self,
        key: Hashable,
        version: str,
        read: Callable[[], V | None],
        *,
        expires_at: Callable[[V], float | None] | None = None,
    ) -> V | None:
        """The value under ``version``, else what ``read`` returns (read after the version, so a write committed
        in between leaves the copy stale, never the version), kept unless it is None or ``expires_at`` gives
        None."""
        value = self.get(key, version)
        if value is None:
            value = read()
            until = float("inf") if value is None or expires_at is None else expires_at(value)
            if value is not None and until is not None:
                self.put(key, value, version, expires_at=until)
        return value
