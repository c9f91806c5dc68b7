"""DuckDB files: the embedded default source.

``duckdb:///relative/file.duckdb`` (relative to the project directory) or ``duckdb:////abs/file.duckdb``, the
convention of ``DATABASE_URL``; ``f"duckdb:///{path}"`` works for both. Query options ``threads`` and
``memory_limit`` are passed to DuckDB. The file is opened read-only, once per process, with file and network access
disabled and the configuration locked, so no query can read ``/etc/passwd``, load ``httpfs`` or switch those
settings back. Each thread keeps a cursor for its queries; a timeout interrupts the query (and retires its cursor);
a :class:`~.base.CancelScope` interrupts it too (``connection.interrupt()``). A file that is replaced on disk (a
regenerated demo) is reopened. A file that is not there is a configuration fault, a ``DataSourceError`` (500).

SQL: DuckDB's own dialect; parameters ``$1``, ``$2``... (DuckDB also accepts ``?``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import duckdb
from django.conf import settings

from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.sources.base import (
    CancelScope,
    QueryCancelled,
    QueryResult,
    cancellable,
    first_line,
    value_type,
    watchdog,
)

logger = logging.getLogger(__name__)

DIALECT = "duckdb"
SCHEMES = ("duckdb",)
_URL_OPTIONS = frozenset({"threads", "memory_limit"})


class _Cursor:
    """A thread's DuckDB cursor, kept between its queries (making one costs about a millisecond), and what
    it is running: ``running`` is the token of the current query, read under ``lock`` by the watchdog."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection, parent: duckdb.DuckDBPyConnection) -> None:
        self.cursor = cursor
        self.parent = parent
        self.lock = threading.Lock()
        self.running: object | None = None


class DuckDBSource:
    """A DuckDB file opened read-only; each thread keeps a cursor on it; timeouts interrupt the query."""

    dialect = DIALECT

    def __init__(self, path: Path, *, options: dict[str, str] | None = None) -> None:
        self.path = path
        self._options = dict(options or {})
        self._lock = threading.Lock()
        self._connection: duckdb.DuckDBPyConnection | None = None
        self._file_identity: tuple[int, ...] | None = None
        self._local = threading.local()
        self._cursors: list[_Cursor] = []  # every thread's, to close with the connection

    def _identity(self) -> tuple[int, ...]:
        try:
            stat = self.path.stat()
        except OSError:
            raise DataSourceError("Data source file is not available") from None
        return (stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size)

    def _open(self) -> duckdb.DuckDBPyConnection:
        config: dict[str, Any] = {
            "enable_external_access": False,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
            **self._options,
        }
        try:
            connection = duckdb.connect(str(self.path), read_only=True, config=config)
            # ICU is statically linked but only loaded after connect, so the time zone is set here; the
            # lock comes last and keeps every query from changing any setting, including these.
            connection.execute("SET TimeZone = 'UTC'")
            connection.execute("SET lock_configuration = true")
        except duckdb.Error as exc:
            logger.warning("cannot open DuckDB file %s: %s", self.path, exc)
            raise DataSourceError("Data source cannot be opened") from None
        return connection

    def _parent(self) -> duckdb.DuckDBPyConnection:
        identity = self._identity()
        with self._lock:
            if self._connection is None or identity != self._file_identity:
                if self._connection is not None:
                    # A file replaced on disk: DuckDB caches database instances by path, so the old
                    # connection (and every cursor on it) must be closed before the new file can be opened.
                    self._close_locked()
                self._connection = self._open()
                self._file_identity = identity
            return self._connection

    def _cursor(self) -> _Cursor:
        """This thread's cursor on the current connection (a new one after the file was reopened)."""
        parent = self._parent()
        mine: _Cursor | None = getattr(self._local, "cursor", None)
        if mine is None or mine.parent is not parent:
            with self._lock:
                mine = _Cursor(parent.cursor(), parent)
                self._cursors.append(mine)
            self._local.cursor = mine
        return mine

    def _discard(self, mine: _Cursor) -> None:
        with self._lock:
            if mine in self._cursors:
                self._cursors.remove(mine)
        self._local.cursor = None
        mine.cursor.close()

    def execute(
        self, sql: str, params: Sequence[Any], *, timeout_s: float, cancel: CancelScope | None = None
    ) -> QueryResult:
        mine = self._cursor()
        token = object()
        timed_out = threading.Event()

        def interrupt() -> None:
            with mine.lock:
                if mine.running is token:  # never the thread's next query
                    timed_out.set()
                    mine.cursor.interrupt()

        def cancel_query() -> None:
            with mine.lock:
                if mine.running is token:
                    mine.cursor.interrupt()

        with mine.lock:
            mine.running = token
        alarm = watchdog.call_later(timeout_s, interrupt)
        cancelled = threading.Event()
        try:
            with cancellable(cancel, cancel_query) as cancelled:
                mine.cursor.execute(sql, list(params))
                description = mine.cursor.description or []
                rows = mine.cursor.fetchall()
        except duckdb.InterruptException:
            if timed_out.is_set():
                raise QueryTimeout(timeout_s) from None
            if cancelled.is_set():
                raise QueryCancelled() from None
            raise DataSourceError("Query was interrupted") from None
        except duckdb.Error as exc:
            if cancelled.is_set():  # an interrupt that landed between the statement and its rows
                raise QueryCancelled() from None
            raise DataSourceError(first_line(str(exc))) from None
        finally:
            watchdog.cancel(alarm)
            with mine.lock:
                mine.running = None
            if timed_out.is_set() or cancelled.is_set():
                # An interrupt may land after its query ended: this cursor is not used again.
                self._discard(mine)
        return QueryResult(
            columns=[column[0] for column in description],
            types=[value_type(str(column[1])) for column in description],
            rows=rows,
        )

    def _close_locked(self) -> None:
        """Close every thread's cursor, then the connection. A cursor running a statement (a shutdown, or a test's
        teardown, while a request's query runs) is interrupted first: DuckDB refuses to close a cursor busy with a
        call. One still busy after it is left to its thread, whose statement ends with the interrupt."""
        for mine in self._cursors:
            with mine.lock:
                if mine.running is not None:
                    mine.cursor.interrupt()
            with contextlib.suppress(duckdb.Error):
                mine.cursor.close()
        self._cursors.clear()
        if self._connection is not None:
            with contextlib.suppress(duckdb.Error):
                self._connection.close()
            self._connection = None

    def close(self) -> None:
        with self._lock:
            self._close_locked()


def open_source(url: str) -> DuckDBSource:
    """The source a ``duckdb:`` URL names."""
    parts = urlsplit(url)
    raw_path = unquote(parts.path)
    if not raw_path.strip("/"):
        raise DataSourceError("Data source URL names no DuckDB file")
    # duckdb:///relative -> "/relative"; duckdb:////abs -> "//abs" (the DATABASE_URL convention).
    path = Path(raw_path[1:]) if raw_path.startswith("//") else Path(settings.BASE_DIR) / raw_path.lstrip("/")
    options = dict(parse_qsl(parts.query))
    unknown = sorted(set(options) - _URL_OPTIONS)
    if unknown:
        raise DataSourceError(f"Unsupported DuckDB URL option: {', '.join(unknown)}")
    return DuckDBSource(path.resolve(), options=options)
