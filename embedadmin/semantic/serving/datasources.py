"""Data sources the Core Data API reads from: a DuckDB file or a PostgreSQL database, named by a URL.

``get_data_source(url)`` returns one shared :class:`DataSource` per URL. ``execute(sql, params,
timeout_s=...)`` runs one statement and returns a :class:`QueryResult`; placeholders are ``$1``,
``$2``, ... in both dialects (DuckDB also accepts ``?``). Only the two exceptions below leave this
module, with messages that are safe to show to API callers.

- ``duckdb:///relative/file.duckdb`` (relative to the project directory) or ``duckdb:////abs/file.duckdb``,
  the convention of ``DATABASE_URL``; ``f"duckdb:///{path}"`` works for both. Query options
  ``threads`` and ``memory_limit`` are passed to DuckDB. The file is opened read-only, once per process,
  with file and network access disabled and the configuration locked, so no query can read
  ``/etc/passwd``, load ``httpfs`` or switch those settings back. Each thread keeps a cursor for its
  queries; a timeout interrupts the query (and retires its cursor). A file that is replaced on disk (a
  regenerated demo) is reopened.
- ``postgresql://user:password@host:port/db`` (``postgres://`` too). Query options ``pool_min_size``
  and ``pool_max_size`` size the connection pool (one per URL), ``pool_timeout`` (seconds, default 10) bounds
  the wait for a connection (a server that is down answers 503 after it); any other option goes to libpq.
  Every query runs in a read-only transaction with ``statement_timeout`` set for it, as a prepared
  statement, so it cannot smuggle a second command (such as ``COMMIT; DROP ...``). The pool checks a
  connection before it hands it out (:class:`~embedadmin.core.pgpool.CheckedConnectionPool`): after the
  server restarts, no query meets a dead connection; a connection that breaks during a query is discarded,
  never handed to the next one.

Errors: :class:`DataSourceUnavailable` when the source cannot be reached (a PostgreSQL server down, restarting
or out of connections): the API answers 503 with ``Retry-After``. A DuckDB file that is not there is a
configuration fault, a :class:`DataSourceError` (500), as is any SQL error.
:class:`QueryTimeout` and :class:`QueryCancelled` for a statement stopped by its timeout or by its
:class:`CancelScope`; :class:`DataSourceError` for the rest (the source refused the SQL).

Cancelling: pass ``cancel=CancelScope()`` to ``execute`` and call ``scope.cancel()`` from any thread (a chat
abort): the statement running is interrupted in the database itself, within a second.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import duckdb
import psycopg
import psycopg_pool
from django.conf import settings

from embedadmin.core.pgpool import CheckedConnectionPool, is_unavailable_error, unavailable_reason
from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.modeling.dialects import DEFAULT_DIALECT, dialect_for

logger = logging.getLogger(__name__)

Dialect = Literal["duckdb", "postgres"]

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

_DUCKDB_URL_OPTIONS = frozenset({"threads", "memory_limit"})


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
def _cancellable(cancel: CancelScope | None, interrupt: Callable[[], None]) -> Iterator[threading.Event]:
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

    dialect: Dialect

    def execute(
        self, sql: str, params: Sequence[Any], *, timeout_s: float, cancel: CancelScope | None = None
    ) -> QueryResult: ...

    def close(self) -> None: ...


def value_type(type_name: str) -> str:
    """The value type of a database type name such as ``DECIMAL(18,2)``, ``int8`` or ``varchar(3)``."""
    base = type_name.split("(", 1)[0].strip().lower()
    return _TYPE_NAMES.get(base, "other")


def _first_line(message: str) -> str:
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


_watchdog = _Watchdog()


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

    dialect: Dialect = "duckdb"

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
        alarm = _watchdog.call_later(timeout_s, interrupt)
        cancelled = threading.Event()
        try:
            with _cancellable(cancel, cancel_query) as cancelled:
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
            raise DataSourceError(_first_line(str(exc))) from None
        finally:
            _watchdog.cancel(alarm)
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


class PostgresSource:
    """A PostgreSQL database behind a psycopg pool; read-only transactions with a statement timeout."""

    dialect: Dialect = "postgres"

    def __init__(self, conninfo: str, *, min_size: int = 1, max_size: int = 10, pool_timeout_s: float = 10.0) -> None:
        # Each connection is checked before use, and one found dead sweeps the others (a restarted server).
        self._pool = CheckedConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            timeout=pool_timeout_s,
            kwargs={"autocommit": True, "cursor_factory": psycopg.RawCursor, "options": "-c TimeZone=UTC"},
            configure=self._configure,
            name="semantic-datasource",
            open=False,
        )
        # Opening waits for nothing: a database that is down fails the first query, not start-up.
        self._pool.open(wait=False)

    @staticmethod
    def _configure(connection: psycopg.Connection) -> None:
        # Transactions this connection begins are READ ONLY.
        connection.read_only = True

    def execute(
        self, sql: str, params: Sequence[Any], *, timeout_s: float, cancel: CancelScope | None = None
    ) -> QueryResult:
        timeout_ms = max(1, round(timeout_s * 1000))
        cancelled = threading.Event()
        try:
            with self._pool.connection() as connection:

                def cancel_query() -> None:
                    # A cancel request on its own connection to the server; the query then fails with QueryCanceled.
                    connection.cancel_safe(timeout=5.0)

                # The transaction ends (rolled back after a cancel) before the connection goes back to the pool.
                with (
                    _cancellable(cancel, cancel_query) as cancelled,
                    connection.transaction(),
                    connection.cursor() as cursor,
                ):
                    cursor.execute(f"SET LOCAL statement_timeout = {timeout_ms}")
                    # A prepared statement holds exactly one command and binds parameters server-side.
                    cursor.execute(sql, list(params), prepare=True)
                    description = cursor.description or []
                    rows = cursor.fetchall()
                    types = [value_type(column.type_display) for column in description]
        except psycopg.errors.QueryCanceled:
            if cancelled.is_set():
                raise QueryCancelled() from None
            raise QueryTimeout(timeout_s) from None
        except psycopg_pool.PoolTimeout as exc:
            if exc.__cause__ is not None:  # no connection could be made (CheckedConnectionPool names the error)
                logger.warning("PostgreSQL data source unavailable: %s", exc)
                raise DataSourceUnavailable("Data source is unavailable") from None
            raise DataSourceUnavailable("Data source is busy: no connection became free in time") from None
        except psycopg.OperationalError as exc:
            if cancelled.is_set():
                raise QueryCancelled() from None
            logger.warning("PostgreSQL data source unavailable (%s): %s", unavailable_reason(exc), exc)
            if is_unavailable_error(exc):
                raise DataSourceUnavailable("Data source is unavailable") from None
            raise DataSourceError("Data source is unavailable") from None
        except psycopg.InterfaceError as exc:  # a connection closed under the query
            logger.warning("PostgreSQL data source unavailable (%s): %s", unavailable_reason(exc), exc)
            raise DataSourceUnavailable("Data source is unavailable") from None
        except psycopg.Error as exc:
            primary = exc.diag.message_primary if exc.diag else None
            raise DataSourceError(primary or "Query failed") from None
        return QueryResult(columns=[column.name for column in description], types=types, rows=rows)

    def close(self) -> None:
        self._pool.close()


def _duckdb_source(url: str) -> DuckDBSource:
    parts = urlsplit(url)
    raw_path = unquote(parts.path)
    if not raw_path.strip("/"):
        raise DataSourceError("Data source URL names no DuckDB file")
    # duckdb:///relative -> "/relative"; duckdb:////abs -> "//abs" (the DATABASE_URL convention).
    path = Path(raw_path[1:]) if raw_path.startswith("//") else Path(settings.BASE_DIR) / raw_path.lstrip("/")
    options = dict(parse_qsl(parts.query))
    unknown = sorted(set(options) - _DUCKDB_URL_OPTIONS)
    if unknown:
        raise DataSourceError(f"Unsupported DuckDB URL option: {', '.join(unknown)}")
    return DuckDBSource(path.resolve(), options=options)


def _postgres_source(url: str) -> PostgresSource:
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query))
    try:
        min_size = int(options.pop("pool_min_size", "1"))
        max_size = int(options.pop("pool_max_size", "10"))
    except ValueError:
        raise DataSourceError("pool_min_size and pool_max_size must be integers") from None
    try:
        pool_timeout_s = float(options.pop("pool_timeout", "10"))
    except ValueError:
        raise DataSourceError("pool_timeout must be a number of seconds") from None
    if not 0 <= min_size <= max_size or max_size < 1:
        raise DataSourceError("Pool sizes must satisfy 0 <= pool_min_size <= pool_max_size, pool_max_size >= 1")
    conninfo = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(options), ""))
    return PostgresSource(conninfo, min_size=min_size, max_size=max_size, pool_timeout_s=pool_timeout_s)


# URL scheme -> how to open it, and the SQL dialect it speaks.
_SCHEMES: dict[str, tuple[Callable[[str], DataSource], Dialect]] = {
    "duckdb": (_duckdb_source, DuckDBSource.dialect),
    "postgresql": (_postgres_source, PostgresSource.dialect),
    "postgres": (_postgres_source, PostgresSource.dialect),
}


def dialect_of(url: str) -> str:
    """The SQL dialect of a data source URL; DuckDB's (the embedded default) when it names no source. A
    warehouse this server cannot query yet (``bigquery://...``, ``mysql://...``: Cube's data source types) gives
    its own dialect, which its model's SQL is parsed in (:mod:`embedadmin.semantic.modeling.dialects`)."""
    scheme = urlsplit(url).scheme.lower()
    known = _SCHEMES.get(scheme)
    if known:
        return known[1]
    return dialect_for(scheme) or DEFAULT_DIALECT


_sources: dict[str, DataSource] = {}
_sources_lock = threading.Lock()


def get_data_source(url: str) -> DataSource:
    """The shared data source for ``url``, created on first use; :class:`DataSourceError` for a bad URL."""
    source = _sources.get(url)
    if source is not None:
        return source
    scheme = urlsplit(url).scheme.lower()
    known = _SCHEMES.get(scheme)
    if known is None:
        if dialect_for(scheme):
            raise DataSourceError(
                f"{scheme} data sources are not queried by this server yet (DuckDB and PostgreSQL are)"
            )
        raise DataSourceError("Unsupported data source URL: use duckdb:///path or postgresql://...")
    factory = known[0]
    with _sources_lock:
        source = _sources.get(url)
        if source is None:
            source = _sources[url] = factory(url)
    return source


def close_data_sources() -> None:
    """Close every shared data source (tests, and process shutdown)."""
    with _sources_lock:
        sources = list(_sources.values())
        _sources.clear()
    for source in sources:
        source.close()
