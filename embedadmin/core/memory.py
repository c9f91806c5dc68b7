"""In-process caches bounded in bytes (issue 17): a worker's memory stays flat however many distinct requests it
serves.

:class:`ByteLRU` is a least-recently-used map whose entries each carry a size, measured cheaply by the caller
(the length of an encoded answer, a rough size of a compiled statement): beyond its budget the least recently
used entries are dropped, and an entry larger than the whole budget is not kept. Every instance registers itself
so that tests and drills can read each cache's byte total next to its budget (:func:`budgets`).

:class:`BoundedLocMemCache` is Django's local-memory cache (the result cache of an install without Redis) bounded
in bytes as well as in entries: its values are pickled, so their length is their size.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.core.cache.backends.locmem import LocMemCache

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

ENTRY_OVERHEAD = 200  # bytes a kept entry costs beyond its measured size (its node, key tuple, record)

_registry: weakref.WeakSet[ByteLRU[Any, Any]] = weakref.WeakSet()


class ByteLRU(Generic[K, V]):
    """At most ``max_bytes`` of entries (sizes as given to :meth:`put`, plus a fixed overhead each), the least
    recently used dropped first; ``max_entries`` caps their number as well. ``overhead`` is added to each size."""

    def __init__(
        self, name: str, max_bytes: int, *, max_entries: int | None = None, overhead: int = ENTRY_OVERHEAD
    ) -> None:
        self.name = name
        self.overhead = overhead
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        _registry.add(self)

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def peek(self, key: K) -> V | None:
        """The value under ``key`` without marking it used."""
        found = self._entries.get(key)  # a dict read is atomic; writers hold the lock
        return None if found is None else found[0]

    def put(self, key: K, value: V, size: int) -> None:
        """Keep ``value`` (of ``size`` bytes) under ``key``; not kept if it alone exceeds the budget."""
        size += self.overhead
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._bytes -= previous[1]
            if size > self.max_bytes:
                return
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes or (
                self.max_entries is not None and len(self._entries) > self.max_entries
            ):
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def pop(self, key: K) -> V | None:
        with self._lock:
            found = self._entries.pop(key, None)
            if found is None:
                return None
            self._bytes -= found[1]
            return found[0]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


def budgets() -> list[tuple[str, int, int, int]]:
    """Every live :class:`ByteLRU`: its name, bytes held, budget and entry count."""
    return sorted((lru.name, lru.held_bytes, lru.max_bytes, len(lru)) for lru in list(_registry))


def rough_size(value: Any) -> int:
    """A cheap estimate of the bytes ``value`` holds: the shallow size of it, of its attributes and of the items
    of its containers one level down (strings and bytes counted whole). Meant for budgets, not accounting."""
    size = sys.getsizeof(value)
    attributes = getattr(value, "__dict__", None)
    children: Iterable[Any] = ()
    if isinstance(value, dict):
        children = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple | set | frozenset):
        children = value
    elif attributes is not None:
        children = attributes.values()
        size += sys.getsizeof(attributes)
    for child in children:
        size += sys.getsizeof(child)
        if isinstance(child, list | tuple | set | frozenset):
            size += sum(sys.getsizeof(item) for item in child)
        elif isinstance(child, dict):
            size += sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in child.items())
    return size


_local_sizes: dict[str, dict[str, int]] = {}
_local_totals: dict[str, list[int]] = {}


class BoundedLocMemCache(LocMemCache):
    """Django's ``LocMemCache`` that also keeps the pickled values it holds under ``LIMITS["LOCAL_CACHE_BYTES"]``
    (``OPTIONS["MAX_BYTES"]`` when given): the least recently used entries are dropped beyond it, and a value
    larger than the whole budget is not kept."""

    # LocMemCache's own state (shared by every instance of one name), which its stubs do not declare.
    _cache: OrderedDict[str, Any]
    _expire_info: dict[str, Any]
    _lock: threading.Lock

    def __init__(self, name: str, params: dict[str, Any]) -> None:
        super().__init__(name, params)
        options = params.get("OPTIONS", {})
        self.max_bytes = int(options.get("MAX_BYTES", settings.LIMITS["LOCAL_CACHE_BYTES"]))
        self._sizes = _local_sizes.setdefault(name, {})
        self._total = _local_totals.setdefault(name, [0])

    @property
    def held_bytes(self) -> int:
        return self._total[0]

    def _set(self, key: str, value: Any, timeout: Any = None) -> None:
        size = len(value) + ENTRY_OVERHEAD + len(key)
        self._forget(key)
        if size > self.max_bytes:
            self._cache.pop(key, None)
            self._expire_info.pop(key, None)
            return
        super()._set(key, value, timeout)  # type: ignore[misc]  # may cull by count (see _cull)
        self._sizes[key] = size
        self._total[0] += size
        while self._total[0] > self.max_bytes and self._cache:
            oldest, _ = self._cache.popitem()  # LocMemCache keeps the most recently used first
            self._expire_info.pop(oldest, None)
            self._forget(oldest)

    def _forget(self, key: str) -> None:
        size = self._sizes.pop(key, None)
        if size is not None:
            self._total[0] -= size

    def _delete(self, key: str) -> bool:
        self._forget(key)
        return bool(super()._delete(key))  # type: ignore[misc]

    def _cull(self) -> None:
        super()._cull()  # type: ignore[misc]
        for gone in [k for k in self._sizes if k not in self._cache]:
            self._forget(gone)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._expire_info.clear()
            self._sizes.clear()
            self._total[0] = 0
