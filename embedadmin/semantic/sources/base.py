"""What every data source is: the :class:`DataSource` protocol, its :class:`QueryResult`, the errors that leave a
source (safe to show to API callers), and the two mechanisms sources share: :class:`CancelScope` (stop a running
statement from any thread) and a watchdog thread for timeouts a driver cannot set itself.

Errors: :class:`DataSourceUnavailable` when the source cannot be reached (a server down, restarting or out of
connections): the API answers 503 with ``Retry-After``. :class:`QueryTimeout` and :class:`QueryCancelled` for a
statement stopped by its timeout or by its :class:`CancelScope`; :class:`DataSourceError` for the rest (the source
refused the SQL, a configuration fault).

Parameters: the SQL a source receives was rendered for its dialect by :mod:`.registry`'s writer, so its placeholders
are the ones its driver binds (``$1``, ``$2``... for DuckDB and PostgreSQL); ``params`` are the values in order.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from embedadmin.semantic.errors import DataSourceError, QueryTimeout

logger = logging.getLogger(__name__)

__all__ = [
    "VALUE_TYPES",
    "CancelScope",
    "DataSource",
    "DataSourceError",
    "DataSourceUnavailable",
    "QueryCancelled",
    "QueryResult",
    "QueryTimeout",
    "value_type",
]

# What a column holds, in words that do not depend on the database.
VALUE_TYPES = (
    "integer",
    "decimal",
    "float",
    "string",
    "boolean",
    "timestamp",
    "timestamptz",
    "date",
    "time",
    "interval",
    "json",
    "binary",
    "other",
)

# DuckDB and PostgreSQL type names (lowercase, without parameters) -> value type.
_TYPE_NAMES = {
    **dict.fromkeys(
        (
            "tinyint",
            "smallint",
            "integer",
            "bigint",
            "hugeint",
            "utinyint",
            "usmallint",
            "uinteger",
            "ubigint",
            "uhugeint",
            "int2",
            "int4",
            "int8",
            "oid",
        ),
        "integer",
    ),
    **dict.fromkeys(("decimal", "numeric"), "decimal"),
    **dict.fromkeys(("float", "double", "real", "float4", "float8"), "float"),
    **dict.fromkeys(("varchar", "text", "bpchar", "char", "name", "uuid", "citext", "enum"), "string"),
    **dict.fromkeys(("boolean", "bool"), "boolean"),
    **dict.fromkeys(("timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns"), "timestamp"),
    **dict.fromkeys(("timestamp with time zone", "timestamptz"), "timestamptz"),
    "date": "date",
    **dict.fromkeys(("time", "time with time zone", "timetz"), "time"),
    "interval": "interval",
    **dict.fromkeys(("json", "jsonb"), "json"),
    **dict.fromkeys(("blob", "bytea"), "binary"),
}


@dataclass(frozen=True)
class QueryResult:
    """Rows of one query. ``types`` holds one of :data:`VALUE_TYPES` per column."""

    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]


class DataSourceUnavailable(DataSourceError):
    """The data source cannot be reached right now (server down or restarting, no connection free in time); the
    same query is expected to work later. ``str()`` is safe to show to an API caller."""


class QueryCancelled(DataSourceError):
    """The query was stopped because its :class:`CancelScope` was cancelled."""

    def __init__(self, message: str = "Query was cancelled") -> None:
        super().__init__(message)


class CancelScope:
    """Cancels the data-source statements run under it, from any thread.

    ::

        scope = CancelScope()
        # the thread that runs the query (or a thread it hands the query to):
        source.execute(sql, params, timeout_s=30, cancel=scope)  # raises QueryCancelled once cancelled
        # any other thread, say the one that handles an abort:
        scope.cancel()

    ``cancel()`` returns at once; the statement running under the scope then is stopped in the database
    (PostgreSQL: a cancel request, ``connection.cancel_safe()``; DuckDB: ``connection.interrupt()``), sent from a
    helper thread, and its ``execute`` raises :class:`QueryCancelled` within a second. A statement that starts
    after ``cancel()`` is not run at all. One scope may cover any number of statements, one after the other
    or at once; cancelling twice does nothing more. The connection stays usable: PostgreSQL's goes back to its
    pool, DuckDB's thread cursor is replaced.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._actions: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Stop every statement running under the scope, and any started later. Never blocks."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            actions = list(self._actions.values())
            self._actions.clear()
        if actions:
            threading.Thread(target=_run_actions, args=(actions,), name="datasource-cancel", daemon=True).start()

    def _register(self, action: Callable[[], None]) -> int | None:
        """Run ``action`` on cancel; None (not registered) when the scope is already cancelled."""
        with self._lock:
            if self._cancelled:
                return None
            key = next(self._ids)
            self._actions[key] = action
            return key

    def _unregister(self, key: int) -> None:
        with self._lock:
            self._actions.pop(key, None)


def _run_actions(actions: list[Callable[[], None]]) -> None:
    for action in actions:
        try:
            action()
        except Exception:
            logger.warning("cancelling a data source query failed", exc_info=True)


@contextmanager
def cancellable(cancel: CancelScope | None, interrupt: Callable[[], None]) -> Iterator[threading.Event]:
    """Within the block, ``cancel.cancel()`` calls ``interrupt`` (once, never after the block ends: the
    connection may run another query by then); the event yielded says whether it did. Raises
    :class:`QueryCancelled` without entering the block when the scope is already cancelled."""
    fired = threading.Event()
    if cancel is None:
        yield fired
        return
    guard = threading.Lock()
    live = True

    def action() -> None:
        with guard:
            if live:
                fired.set()
                interrupt()

    key = cancel._register(action)
    if key is None:
        raise QueryCancelled()
    try:
        yield fired
    finally:
        cancel._unregister(key)
        with guard:  # waits for an interrupt being sent: none lands on this connection's next query
            live = False


class DataSource(Protocol):
    """What the semantic layer needs of a database."""

    dialect: str  # the sqlglot dialect its SQL is written in

    def execute(
        self, sql: str, params: Sequence[Any], *, timeout_s: float, cancel: CancelScope | None = None
    ) -> QueryResult: ...

    def close(self) -> None: ...


def value_type(type_name: str) -> str:
    """The value type of a database type name such as ``DECIMAL(18,2)``, ``int8`` or ``varchar(3)``."""
    base = type_name.split("(", 1)[0].strip().lower()
    return _TYPE_NAMES.get(base, "other")


def first_line(message: str) -> str:
    # DuckDB appends a "LINE 1: ..." excerpt with a caret; the first line says what went wrong.
    return message.strip().splitlines()[0] if message.strip() else "Query failed"


def _nothing() -> None:
    return None


@dataclass(order=True)
class _Alarm:
    deadline: float
    seq: int
    action: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


class _Watchdog:
    """One thread that runs actions at deadlines: cheaper than a timer thread per query."""

    def __init__(self) -> None:
        self._heap: list[_Alarm] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def call_later(self, delay_s: float, action: Callable[[], None]) -> _Alarm:
        alarm = _Alarm(time.monotonic() + delay_s, next(self._seq), action)
        with self._cond:
            heapq.heappush(self._heap, alarm)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="datasource-watchdog", daemon=True)
                self._thread.start()
            if self._heap[0] is alarm:  # otherwise the thread wakes at an earlier deadline anyway
                self._cond.notify()
        return alarm

    def cancel(self, alarm: _Alarm) -> None:
        with self._cond:
            alarm.cancelled = True
            # Drop the reference to the cursor now rather than when the deadline comes.
            alarm.action = _nothing

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0].cancelled:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                delay = self._heap[0].deadline - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                alarm = heapq.heappop(self._heap)
            try:
                alarm.action()
            except Exception:
                logger.exception("watchdog action failed")


watchdog = _Watchdog()
