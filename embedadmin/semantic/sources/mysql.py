"""MySQL and MariaDB databases.

``mysql://user:password@host:port/database`` (``mariadb://`` too; port 3306 by default). Query options:
``pool_max_size`` (connections kept per URL, default 10), ``pool_timeout`` (seconds to wait for a free connection,
default 10), ``connect_timeout`` (seconds, default 10), ``charset`` (default ``utf8mb4``), and TLS: ``ssl=true``
(encrypt, verify the server against the system's certificate authorities), ``ssl_ca``, ``ssl_cert``, ``ssl_key``
(file paths), ``ssl_verify_cert`` and ``ssl_verify_identity`` (``true``/``false``). Any other option is refused.

The driver is PyMySQL (pure Python: it installs from PyPI on any machine, with no client library or compiler).
Each connection runs in UTC (``SET time_zone = '+00:00'``) with a fixed ``sql_mode`` (no ``ANSI_QUOTES``,
``PIPES_AS_CONCAT``, ``NO_BACKSLASH_ESCAPES`` or ``ONLY_FULL_GROUP_BY`` from the server's defaults: the SQL this
server writes is read the same on every server). Every query runs in ``START TRANSACTION READ ONLY``, one
statement at a time (the driver never enables multi-statements). Its time limit is the server's: MariaDB's
``SET STATEMENT max_statement_time=<s> FOR <query>``; MySQL's session ``max_execution_time`` (SELECT statements).
A watchdog sends ``KILL QUERY`` a little after the limit, should the server not stop the statement itself. A
:class:`~.base.CancelScope` sends ``KILL QUERY <connection id>`` on a connection of its own. A connection that was
interrupted, or that fails, is closed rather than returned to the pool; a pooled connection is pinged before use,
so a restarted server costs no query.

SQL: sqlglot's MySQL dialect, corrected by :data:`WRITER` (parameters the driver binds as ``%(pN)s`` with every
other ``%`` doubled; ``AT TIME ZONE`` as ``CONVERT_TZ``, which needs the server's time zone tables for a named zone;
truncation to every granularity, weeks starting on Monday; NULLs ordered as PostgreSQL does; ``VALUES`` lists as
``UNION ALL``).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import re
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pymysql
from pymysql.constants import ER, FIELD_TYPE
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import ErrorLevel, UnsupportedError
from sqlglot.generators.mysql import MySQLGenerator

from embedadmin.semantic.errors import DataSourceError, QueryError, QueryTimeout
from embedadmin.semantic.sources.base import (
    CancelScope,
    DataSourceUnavailable,
    QueryCancelled,
    QueryResult,
    cancellable,
    watchdog,
)

logger = logging.getLogger(__name__)

DIALECT = "mysql"
SCHEMES = ("mysql", "mariadb")

# Modes the SQL below is written for, present on MySQL 5.7/8 and MariaDB 10.x.
_SQL_MODE = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
# How long after its time limit a statement the server did not stop is killed by the watchdog.
_KILL_GRACE_S = 2.0
_URL_OPTIONS = frozenset(
    {
        "pool_max_size",
        "pool_timeout",
        "connect_timeout",
        "charset",
        "ssl",
        "ssl_ca",
        "ssl_cert",
        "ssl_key",
        "ssl_verify_cert",
        "ssl_verify_identity",
    }
)
# What a statement may start with: the SQL the writer renders (SELECT ..., WITH ... SELECT ..., (SELECT ...) UNION).
_READ_STATEMENT = re.compile(r"\s*\(*\s*(?:SELECT|WITH)\b", re.IGNORECASE)
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

# Client errors: the server cannot be reached or went away.
_UNAVAILABLE_CODES = {
    2002,  # CR_CONNECTION_ERROR
    2003,  # CR_CONN_HOST_ERROR
    2005,  # CR_UNKNOWN_HOST
    2006,  # CR_SERVER_GONE_ERROR
    2013,  # CR_SERVER_LOST
    ER.CON_COUNT_ERROR,  # too many connections
    ER.SERVER_SHUTDOWN,
    1927,  # ER_CONNECTION_KILLED (MariaDB)
}
_TIMEOUT_CODES = {1969, 3024}  # MariaDB ER_STATEMENT_TIMEOUT, MySQL ER_QUERY_TIMEOUT
_INTERRUPTED = ER.QUERY_INTERRUPTED  # 1317: KILL QUERY

# PyMySQL's column type codes -> value types (base.VALUE_TYPES). A string type with the binary character set is
# binary data; TINYINT is an integer, as MySQL's booleans are.
_FIELD_TYPES = {
    **dict.fromkeys(
        (FIELD_TYPE.TINY, FIELD_TYPE.SHORT, FIELD_TYPE.LONG, FIELD_TYPE.LONGLONG, FIELD_TYPE.INT24, FIELD_TYPE.YEAR),
        "integer",
    ),
    **dict.fromkeys((FIELD_TYPE.DECIMAL, FIELD_TYPE.NEWDECIMAL), "decimal"),
    **dict.fromkeys((FIELD_TYPE.FLOAT, FIELD_TYPE.DOUBLE), "float"),
    **dict.fromkeys((FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP), "timestamp"),
    **dict.fromkeys((FIELD_TYPE.DATE, FIELD_TYPE.NEWDATE), "date"),
    FIELD_TYPE.TIME: "time",
    FIELD_TYPE.JSON: "json",
    FIELD_TYPE.BIT: "binary",
    FIELD_TYPE.GEOMETRY: "binary",
    **dict.fromkeys(
        (
            FIELD_TYPE.VARCHAR,
            FIELD_TYPE.VAR_STRING,
            FIELD_TYPE.STRING,
            FIELD_TYPE.ENUM,
            FIELD_TYPE.SET,
            FIELD_TYPE.TINY_BLOB,
            FIELD_TYPE.MEDIUM_BLOB,
            FIELD_TYPE.LONG_BLOB,
            FIELD_TYPE.BLOB,
        ),
        "string",
    ),
}


def column_value_type(type_code: int, rows: Sequence[Sequence[Any]], index: int) -> str:
    """The value type of result column ``index`` (its type code in ``cursor.description``). MySQL gives binary and
    text strings the same codes: the driver reads the ones in the binary character set as bytes."""
    kind = _FIELD_TYPES.get(type_code, "other")
    if kind == "string" and any(isinstance(row[index], bytes) for row in rows):
        return "binary"
    return kind


class _Connection:
    """A pooled connection and what is known of its server."""

    def __init__(self, raw: pymysql.connections.Connection, mariadb: bool) -> None:
        self.raw = raw
        self.mariadb = mariadb
        self.thread_id = raw.thread_id()


class MySQLSource:
    """A MySQL or MariaDB database behind a bounded pool of PyMySQL connections; read-only transactions, a time
    limit per statement, cancel by ``KILL QUERY``."""

    dialect = DIALECT

    def __init__(self, connect_kwargs: dict[str, Any], *, max_size: int = 10, pool_timeout_s: float = 10.0) -> None:
        self._connect_kwargs = connect_kwargs
        self._pool_timeout_s = pool_timeout_s
        self._idle: queue.LifoQueue[_Connection] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(max_size)
        self._closed = False
        self._zones: set[str] = set()  # named time zones the server was seen to know

    # -- connections --------------------------------------------------------------------------------

    def _connect(self) -> _Connection:
        raw = session(self._connect_kwargs, read_only=True)
        return _Connection(raw, is_mariadb(raw))

    def _checkout(self) -> _Connection:
        if not self._slots.acquire(timeout=self._pool_timeout_s):
            raise DataSourceUnavailable("Data source is busy: no connection became free in time")
        try:
            while True:
                try:
                    connection = self._idle.get_nowait()
                except queue.Empty:
                    return self._connect()
                try:
                    connection.raw.ping(reconnect=False)
                    return connection
                except pymysql.Error:
                    _close_quietly(connection)  # a server restarted since: try the next, or a new one
        except BaseException:
            self._slots.release()
            raise

    def _checkin(self, connection: _Connection, *, reuse: bool) -> None:
        try:
            if reuse and not self._closed:
                self._idle.put(connection)
            else:
                _close_quietly(connection)
        finally:
            self._slots.release()

    def _check_zones(self, connection: _Connection, sql: str) -> None:
        """Refuse a statement whose named time zone the server does not know: ``CONVERT_TZ`` would answer NULL
        for every row (MySQL and MariaDB know named zones only once their time zone tables are loaded)."""
        for zone in set(_NAMED_ZONES.findall(sql)) - self._zones:
            with connection.raw.cursor() as cursor:
                cursor.execute("SELECT CONVERT_TZ('2000-01-01 00:00:00', '+00:00', %s) IS NOT NULL", (zone,))
                row = cursor.fetchone()
            if not row or not row[0]:
                raise DataSourceError(
                    f"The MySQL server does not know the time zone '{zone}': load its time zone tables "
                    "(mysql_tzinfo_to_sql /usr/share/zoneinfo | mysql mysql)"
                )
            self._zones.add(zone)

    def _kill(self, connection: _Connection) -> None:
        kill_query(self._connect_kwargs, connection.thread_id)

    def _kill_late(self, connection: _Connection) -> None:
        kill_late(self._connect_kwargs, connection.thread_id)

    # -- queries ------------------------------------------------------------------------------------

    def execute(
        self, sql: str, params: Sequence[Any], *, timeout_s: float, cancel: CancelScope | None = None
    ) -> QueryResult:
        if not _READ_STATEMENT.match(sql):
            raise DataSourceError("Only SELECT statements run on a data source")
        connection = self._unavailable_on_error(self._checkout)
        reuse = False
        cancelled = threading.Event()
        killed_late = threading.Event()
        bound = {f"p{index}": value for index, value in enumerate(params, start=1)}
        try:
            self._check_zones(connection, sql)
            # MariaDB limits the one statement; MySQL's limit is a session variable, set below.
            statement = f"SET STATEMENT max_statement_time={timeout_s:.3f} FOR {sql}" if connection.mariadb else sql

            def watchdog_kill() -> None:
                # On a thread of its own: connecting may take seconds, and the watchdog serves every source.
                killed_late.set()
                threading.Thread(target=self._kill_late, args=(connection,), name="mysql-kill", daemon=True).start()

            with connection.raw.cursor() as cursor:
                if not connection.mariadb:
                    cursor.execute(f"SET SESSION max_execution_time = {max(1, round(timeout_s * 1000))}")
                cursor.execute("START TRANSACTION READ ONLY")
                alarm = watchdog.call_later(timeout_s + _KILL_GRACE_S, watchdog_kill)
                try:
                    with cancellable(cancel, lambda: self._kill(connection)) as cancelled:
                        # Always formatted (an empty mapping too): the writer doubles every literal %.
                        cursor.execute(statement, bound)
                        rows = list(cursor.fetchall())
                finally:
                    watchdog.cancel(alarm)
                description = list(cursor.description or ())
                connection.raw.rollback()
            reuse = not (cancelled.is_set() or killed_late.is_set())
            # A statement may end normally under KILL QUERY (SLEEP() answers 1): its rows are not the answer.
            if cancelled.is_set():
                raise QueryCancelled()
            if killed_late.is_set():
                raise QueryTimeout(timeout_s)
        except pymysql.Error as exc:
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
            if cancelled.is_set() and code == _INTERRUPTED:
                raise QueryCancelled() from None
            if code in _TIMEOUT_CODES or (killed_late.is_set() and code == _INTERRUPTED):
                raise QueryTimeout(timeout_s) from None
            if cancelled.is_set():
                raise QueryCancelled() from None
            failure = error_for(exc, timeout_s)
            if not isinstance(failure, DataSourceUnavailable):
                # A statement the server refused: its connection stays good (the transaction is rolled back).
                reuse = _rolled_back(connection)
            raise failure from None
        finally:
            self._checkin(connection, reuse=reuse)
        return QueryResult(
            columns=[column[0] for column in description],
            types=[column_value_type(int(column[1]), rows, index) for index, column in enumerate(description)],
            rows=[tuple(row) for row in rows],
        )

    @staticmethod
    def _unavailable_on_error(action: Any) -> _Connection:
        try:
            connection: _Connection = action()
        except pymysql.err.OperationalError as exc:
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
            logger.warning("MySQL data source unavailable: %s", exc)
            if code in (ER.ACCESS_DENIED_ERROR, ER.BAD_DB_ERROR, ER.DBACCESS_DENIED_ERROR):
                # A configuration fault, not an outage: retrying will not help.
                raise DataSourceError(
                    "Data source refused the connection: check the URL's user, password and database"
                ) from None
            raise DataSourceUnavailable("Data source is unavailable") from None
        except pymysql.Error as exc:
            logger.warning("MySQL data source unavailable: %s", exc)
            raise DataSourceUnavailable("Data source is unavailable") from None
        return connection

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                connection = self._idle.get_nowait()
            except queue.Empty:
                return
            _close_quietly(connection)


def _close_quietly(connection: _Connection) -> None:
    # Already closed, or the socket is gone: the driver closes the socket either way.
    with contextlib.suppress(Exception):
        connection.raw.close()


def _rolled_back(connection: _Connection) -> bool:
    """Roll back after a refused statement; whether the connection can be used again."""
    try:
        connection.raw.rollback()
    except pymysql.Error:
        return False
    return True


def _flag(options: dict[str, str], name: str) -> bool | None:
    value = options.pop(name, None)
    if value is None:
        return None
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise DataSourceError(f"{name} must be true or false")


def _seconds(options: dict[str, str], name: str, default: float) -> float:
    try:
        value = float(options.pop(name, default))
    except ValueError:
        raise DataSourceError(f"{name} must be a number of seconds") from None
    if not 0 < value <= 3600:
        raise DataSourceError(f"{name} must be between 0 and 3600 seconds")
    return value


def session(connect_kwargs: dict[str, Any], *, read_only: bool) -> pymysql.connections.Connection:
    """A new connection in the session every statement of this server runs in: UTC, a fixed ``sql_mode``,
    PostgreSQL's precision of quotients; ``read_only``: every transaction of it READ ONLY (the query path's).
    A rollup build's connection is the same session, able to write (``serving/rollup_writers/mysql.py``)."""
    raw = pymysql.connect(**connect_kwargs)
    try:
        with raw.cursor() as cursor:
            cursor.execute("SET time_zone = '+00:00'")
            if read_only:
                # Every transaction of the session is READ ONLY, including the one after a statement that commits
                # implicitly (DDL ends a START TRANSACTION READ ONLY before it runs; this default still refuses it).
                cursor.execute("SET SESSION TRANSACTION READ ONLY")
            cursor.execute(f"SET SESSION sql_mode = '{_SQL_MODE}'")
            # Quotients (AVG, /) keep 16 more digits than their operands, not 4: PostgreSQL's precision.
            cursor.execute("SET SESSION div_precision_increment = 16")
    except BaseException:
        raw.close()
        raise
    return raw


def is_mariadb(raw: pymysql.connections.Connection) -> bool:
    return "mariadb" in raw.get_server_info().lower()


def kill_query(connect_kwargs: dict[str, Any], thread_id: int) -> None:
    """Stop the statement the connection ``thread_id`` runs, from a connection of its own."""
    killer = pymysql.connect(**{**connect_kwargs, "connect_timeout": 5, "read_timeout": 5})
    try:
        with killer.cursor() as cursor:
            cursor.execute(f"KILL QUERY {int(thread_id)}")
    finally:
        killer.close()


def kill_late(connect_kwargs: dict[str, Any], thread_id: int) -> None:
    """:func:`kill_query` for a statement past its time limit (from the watchdog: a failure is logged)."""
    try:
        kill_query(connect_kwargs, thread_id)
    except Exception:
        logger.warning("killing a MySQL statement past its time limit failed", exc_info=True)


def error_for(exc: pymysql.Error, timeout_s: float) -> DataSourceError:
    """What a caller sees of a failed statement that was not cancelled: a timeout, an outage, or the server's
    message for a statement it refused."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
    if code in _TIMEOUT_CODES:
        return QueryTimeout(timeout_s)
    if code in _UNAVAILABLE_CODES or isinstance(exc, pymysql.err.InterfaceError):
        logger.warning("MySQL data source unavailable: %s", exc)
        return DataSourceUnavailable("Data source is unavailable")
    message = exc.args[1] if len(exc.args) > 1 else str(exc)
    return DataSourceError(str(message) or "Query failed")


def open_source(url: str) -> MySQLSource:
    """The source a ``mysql:`` or ``mariadb:`` URL names."""
    kwargs, max_size, pool_timeout_s = connect_arguments(url)
    return MySQLSource(kwargs, max_size=max_size, pool_timeout_s=pool_timeout_s)


def connect_arguments(url: str) -> tuple[dict[str, Any], int, float]:
    """PyMySQL's ``connect`` arguments for a ``mysql:`` or ``mariadb:`` URL, the pool's size and its wait."""
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query))
    unknown = sorted(set(options) - _URL_OPTIONS)
    if unknown:
        raise DataSourceError(f"Unsupported MySQL URL option: {', '.join(unknown)}")
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not database or "/" in database:
        raise DataSourceError("A MySQL data source URL names a host and a database: mysql://user:password@host/db")
    try:
        port = parts.port or 3306
        max_size = int(options.pop("pool_max_size", "10"))
    except ValueError:
        raise DataSourceError("The port and pool_max_size must be integers") from None
    if not 1 <= max_size <= 1000:
        raise DataSourceError("pool_max_size must be between 1 and 1000")
    pool_timeout_s = _seconds(options, "pool_timeout", 10)
    kwargs: dict[str, Any] = {
        "host": parts.hostname,
        "port": port,
        "user": unquote(parts.username or ""),
        "password": unquote(parts.password or ""),
        "database": database,
        "charset": options.pop("charset", "utf8mb4"),
        "connect_timeout": _seconds(options, "connect_timeout", 10),
        "autocommit": True,
        # No CLIENT.MULTI_STATEMENTS (PyMySQL's default): one statement per call, a query cannot carry a second.
    }
    ssl = _flag(options, "ssl")
    verify_cert = _flag(options, "ssl_verify_cert")
    verify_identity = _flag(options, "ssl_verify_identity")
    files = {name: options.pop(name) for name in ("ssl_ca", "ssl_cert", "ssl_key") if name in options}
    if ssl or files:
        kwargs["ssl"] = {"ca": files["ssl_ca"]} if "ssl_ca" in files else {}
        if "ssl_cert" in files:
            kwargs["ssl_cert"] = files["ssl_cert"]
        if "ssl_key" in files:
            kwargs["ssl_key"] = files["ssl_key"]
        if "ssl_ca" in files:
            kwargs["ssl_ca"] = files["ssl_ca"]
        kwargs["ssl_verify_cert"] = True if verify_cert is None else verify_cert
        kwargs["ssl_verify_identity"] = True if verify_identity is None else verify_identity
    return kwargs, max_size, pool_timeout_s


# -- the SQL writer ------------------------------------------------------------------------------------

# A placeholder while the statement is written: NUL never appears in SQL this server writes.
_PARAMETER_MARK = "\x00{}\x00"
_PARAMETER_MARKS = re.compile("\x00(\\d+)\x00")
# The zone of a CONVERT_TZ call the writer rendered (its first argument may hold any SQL, its last two never do).
_NAMED_ZONES = re.compile(r"CONVERT_TZ\(.*?, '\+00:00', '([^'\\]+)'\)")
_UTC_NAMES = frozenset({"UTC", "ETC/UTC", "GMT", "ETC/GMT", "+00:00"})
_TIMESTAMP_TYPES = (exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ, exp.DType.TIMESTAMPLTZ, exp.DType.DATETIME)
# DATE_FORMAT patterns that truncate a DATETIME (the rest of the units are computed below).
_TRUNC_FORMATS = {
    "SECOND": "%Y-%m-%d %H:%i:%s",
    "MINUTE": "%Y-%m-%d %H:%i:00",
    "HOUR": "%Y-%m-%d %H:00:00",
    "DAY": "%Y-%m-%d",
    "MONTH": "%Y-%m-01",
    "YEAR": "%Y-01-01",
}


class MySQLWriter(MySQL):
    """sqlglot's MySQL dialect with the corrections the queries of this server need on MySQL 8 and MariaDB 10.5+."""

    class Generator(MySQLGenerator):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # Whatever MySQL cannot say is refused, never dropped from the statement.
            kwargs["unsupported_level"] = ErrorLevel.RAISE
            super().__init__(*args, **kwargs)

        def generate(self, expression: exp.Expr, copy: bool = True) -> str:
            try:
                text = super().generate(expression, copy=copy)
            except UnsupportedError as exc:
                raise QueryError(f"This query cannot run on MySQL: {exc}") from None
            if "\x00" in _PARAMETER_MARKS.sub("", text):
                raise QueryError("This query cannot run on MySQL: its SQL holds a NUL character")
            # The driver formats the statement with its parameters (pyformat): a literal % is written %%.
            return _PARAMETER_MARKS.sub(r"%(p\1)s", text.replace("%", "%%"))

        def parameter_sql(self, expression: exp.Parameter) -> str:
            return _PARAMETER_MARK.format(int(expression.name))

        def attimezone_sql(self, expression: exp.AtTimeZone) -> str:
            # A UTC instant (the session is UTC) as wall-clock time of the zone; UTC's wall clock is the instant.
            zone = expression.args["zone"]
            if isinstance(zone, exp.Literal) and zone.is_string and zone.name.upper() in _UTC_NAMES:
                return self.sql(expression, "this")
            return self.func("CONVERT_TZ", expression.this, exp.Literal.string("+00:00"), zone)

        def cast_sql(self, expression: exp.Cast, safe_prefix: str | None = None) -> str:
            to = expression.to
            if to.this in _TIMESTAMP_TYPES:
                value = expression.this
                if isinstance(value, exp.Parameter):
                    # Instants are bound as text ending in Z (UTC), which MySQL does not read.
                    value = exp.Trim(this=value, expression=exp.Literal.string("Z"), position="TRAILING")
                return f"CAST({self.sql(value)} AS DATETIME(6))"
            if to.this in (exp.DType.DECIMAL, exp.DType.BIGDECIMAL) and not to.expressions:
                # MySQL's bare DECIMAL is DECIMAL(10, 0): it would drop every fraction.
                return f"CAST({self.sql(expression.this)} AS DECIMAL(65, 10))"
            return super().cast_sql(expression, safe_prefix)

        def extract_sql(self, expression: exp.Extract) -> str:
            if expression.name.lower() == "epoch":
                # Seconds since 1970 of a naive UTC time, before 1970 and after 2038 too (UNIX_TIMESTAMP is not).
                value = self.sql(expression.expression)
                return f"(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {value}) / 1000000)"
            return super().extract_sql(expression)

        def timestamptrunc_sql(self, expression: exp.TimestampTrunc) -> str:
            unit = expression.text("unit").upper()
            value = self.sql(expression, "this")
            if unit in _TRUNC_FORMATS:
                return f"CAST(DATE_FORMAT({value}, '{_TRUNC_FORMATS[unit]}') AS DATETIME(6))"
            if unit == "WEEK":  # ISO weeks: Monday (WEEKDAY 0) starts the week, as in Cube
                return f"CAST(DATE_SUB(DATE({value}), INTERVAL WEEKDAY({value}) DAY) AS DATETIME(6))"
            if unit == "QUARTER":
                return f"CAST(MAKEDATE(YEAR({value}), 1) + INTERVAL (QUARTER({value}) * 3 - 3) MONTH AS DATETIME(6))"
            raise QueryError(f"This query cannot run on MySQL: no truncation to {unit.lower()}")

        def add_sql(self, expression: exp.Add) -> str:
            return self._moved(expression, "DATE_ADD") or super().add_sql(expression)

        def sub_sql(self, expression: exp.Sub) -> str:
            return self._moved(expression, "DATE_SUB") or super().sub_sql(expression)

        def _moved(self, expression: exp.Binary, function: str) -> str | None:
            """``time + INTERVAL '1' MONTH * n`` (MySQL cannot multiply an interval) as ``DATE_ADD(time, INTERVAL
            (n) MONTH)``; a plain interval stays ``time + INTERVAL '1' MONTH``."""
            step = expression.expression
            if not isinstance(step, exp.Mul):
                return None
            interval, count = step.this, step.expression
            if not isinstance(interval, exp.Interval):
                interval, count = count, interval
            if not isinstance(interval, exp.Interval) or not interval.this.is_string:
                return None
            amount = int(interval.this.name)
            unit = interval.text("unit").upper()
            times = self.sql(count) if amount == 1 else f"{amount} * {self.sql(count)}"
            return f"{function}({self.sql(expression, 'this')}, INTERVAL ({times}) {unit})"

        def ordered_sql(self, expression: exp.Ordered) -> str:
            """NULLs sort where the tree says (``nulls_first``; without it, last: sqlglot's reading, which the
            PostgreSQL and DuckDB writers spell out), not where MySQL puts them (NULL is its smallest value: first
            ascending, last descending). An ORDER BY position sorts its select item, named by alias where MySQL
            allows it."""
            desc = bool(expression.args.get("desc"))
            want_first = bool(expression.args.get("nulls_first"))
            order = f"{self.sql(expression, 'this')}{' DESC' if desc else ''}"
            if want_first != desc:  # MySQL's own order: NULLs first ascending, last descending
                return order
            return f"{self._ordered_target(expression)} IS NULL{' DESC' if want_first else ''}, {order}"

        def _ordered_target(self, expression: exp.Ordered) -> str:
            """What an ORDER BY item sorts: a position names its select item (by alias where it has one)."""
            this = expression.this
            select = expression.find_ancestor(exp.Window, exp.AggFunc, exp.Select)
            if this.is_int and isinstance(select, exp.Select):
                position = int(this.name)
                items = select.expressions
                if 1 <= position <= len(items):
                    item = items[position - 1]
                    value = item.this if isinstance(item, exp.Alias) else item
                    if isinstance(item, exp.Alias) and value.find(exp.AggFunc, exp.Window) is None:
                        return self.sql(exp.column(item.args["alias"].copy()))
                    # MySQL reads no alias of an aggregate inside an ORDER BY expression: the aggregate itself.
                    return self.sql(value)
            return self.sql(this)

        def values_sql(self, expression: exp.Values, values_as_table: bool = True) -> str:
            """``(VALUES (a, b), ...) AS t(x, y)`` as ``(SELECT a AS x, b AS y UNION ALL SELECT ...) AS t``:
            MariaDB names no columns of a VALUES list."""
            alias = expression.args.get("alias")
            columns = alias.columns if alias is not None else []
            if not columns:
                return super().values_sql(expression, values_as_table)
            rows = []
            for index, row in enumerate(expression.expressions):
                cells = row.expressions if isinstance(row, exp.Tuple) else [row]
                if index == 0:
                    named = zip(cells, columns, strict=True)
                    rows.append("SELECT " + ", ".join(f"{self.sql(cell)} AS {self.sql(name)}" for cell, name in named))
                else:
                    rows.append("SELECT " + ", ".join(self.sql(cell) for cell in cells))
            return f"({' UNION ALL '.join(rows)}) AS {self.sql(alias, 'this')}"


WRITER = MySQLWriter
