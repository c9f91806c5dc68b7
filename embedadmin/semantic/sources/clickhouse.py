"""ClickHouse: a server over HTTP, or the embedded engine (chDB), both through clickhouse-connect.

``clickhouse://user:password@host:8123/database`` talks to a server over HTTP (``clickhouses://``, port 8443 by
default, over HTTPS); ``chdb:///relative/dir`` or ``chdb:////abs/dir`` opens a chDB data directory in this process
(the package ``chdb`` must be installed; one chDB directory per process, a limit of the engine). Query options:
``pool_max_size`` (clients kept, default 8; a chDB client runs one query at a time), ``pool_timeout`` (seconds a query
waits for a free client, default 10), ``connect_timeout`` (seconds, HTTP only, default 10) and ``verify`` (``false``
skips the server certificate check, HTTPS only).

Every query is sent with the settings that make it answer as the other sources do and change nothing:
``readonly=2`` (no write, no DDL; the query cannot lift it), ``session_timezone='UTC'``, ``join_use_nulls=1`` (an
outer join's missing side is NULL, not the type's default), ``max_execution_time`` (the timeout; a watchdog kills the
query if the server runs past it) and ``log_comment`` set to a token of the query: a :class:`~.base.CancelScope`
(and the watchdog) sends ``KILL QUERY WHERE Settings['log_comment'] = ...`` on another client.

Parameters are bound by the server: :data:`WRITER` renders ``$n`` as ``{pn:_}``, and :meth:`ClickHouseSource.execute`
writes each placeholder's type from the Python type of its value (``{p1:String}``, ``{p2:Int64}``...); the values
go to the server as ``param_pn``, never into the SQL text.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import queue
import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.conf import settings
from sqlglot import exp
from sqlglot.dialects.clickhouse import ClickHouse
from sqlglot.generators.clickhouse import ClickHouseGenerator

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

DIALECT = "clickhouse"
SCHEMES = ("clickhouse", "clickhouses", "chdb")
# count_distinct_approx measures are uniq(x), ClickHouse's approximate count (Cube's countDistinctApprox there)
APPROX_COUNT_DISTINCT = True
_URL_OPTIONS = frozenset({"pool_max_size", "pool_timeout", "connect_timeout", "verify"})

# The settings of every query (the timeout and the cancel token are added per query).
QUERY_SETTINGS: dict[str, Any] = {"readonly": 2, "session_timezone": "UTC", "join_use_nulls": 1}
# Seconds past its timeout before the watchdog kills a query the server has not stopped itself.
_KILL_GRACE_S = 1.0

# ClickHouse error codes (ErrorCodes.cpp) that say what happened.
_TIMEOUT_EXCEEDED = 159
_QUERY_WAS_CANCELLED = 394
_READONLY = 164
_UNAVAILABLE_CODES = frozenset(
    {
        202,  # TOO_MANY_SIMULTANEOUS_QUERIES
        209,  # SOCKET_TIMEOUT
        210,  # NETWORK_ERROR
        242,  # TABLE_IS_READ_ONLY
        425,  # SYSTEM_ERROR
    }
)


# ---------------------------------------------------------------------------------------------------------------
# Rendering: what sqlglot's ClickHouse generator writes differently from what the query compiler means.


_PLACEHOLDER = re.compile(r"\{p(\d+):_\}")
_TRUNC_FUNCTIONS = {
    "second": "toStartOfSecond",
    "minute": "toStartOfMinute",
    "hour": "toStartOfHour",
    "day": "toStartOfDay",
    "week": "toMonday",  # Cube's weeks start on Monday
    "month": "toStartOfMonth",
    "quarter": "toStartOfQuarter",
    "year": "toStartOfYear",
}
# Timestamps are microsecond instants in UTC, as PostgreSQL's and DuckDB's: DateTime (seconds) would drop the fraction.
_TIMESTAMP = "DateTime64(6, 'UTC')"


_TIMESTAMP_TYPES = (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.DATETIME)
_INTERVAL_UNITS = {
    "second": "Second",
    "minute": "Minute",
    "hour": "Hour",
    "day": "Day",
    "week": "Week",
    "month": "Month",
    "quarter": "Quarter",
    "year": "Year",
}


def _conjuncts(condition: exp.Expr) -> list[exp.Expr]:
    condition = condition.unnest()
    if isinstance(condition, exp.And):
        return [*_conjuncts(condition.this), *_conjuncts(condition.expression)]
    return [condition]


def _integral(node: exp.Expr) -> bool:
    node = node.unnest()
    if isinstance(node, exp.Literal):
        return node.is_int
    if isinstance(node, exp.Cast):
        return node.to.is_type(*exp.DataType.INTEGER_TYPES)
    return False


def _disjuncts(condition: exp.Expr) -> list[exp.Expr]:
    condition = condition.unnest()
    if isinstance(condition, exp.Or):
        return [*_disjuncts(condition.this), *_disjuncts(condition.expression)]
    return [condition]


def _repeated_in_aggregates(join: exp.Join, on: exp.Expr) -> bool:
    """Whether the join's condition ``on`` can be left out: every aggregate of the join's select counts only rows
    whose condition implies ``on`` (``CASE WHEN <one of on's alternatives AND more> THEN ...``), and the select does
    not group by the joined rows."""
    select = join.parent
    if not isinstance(select, exp.Select) or not select.args.get("group"):
        return False
    joined = join.alias_or_name
    for key in select.args["group"].expressions:
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.name) <= len(select.expressions):
            key = select.expressions[int(key.name) - 1]
        if any(column.table == joined for column in key.find_all(exp.Column)):
            # Grouped by the joined rows: without the condition, groups of rows outside every bucket would appear.
            return False
    options = [set(_conjuncts(option)) for option in _disjuncts(on)]
    aggregates = [node for column in select.expressions for node in column.find_all(exp.AggFunc)]
    if not aggregates:
        return False
    for aggregate in aggregates:
        case = aggregate.this.unnest() if isinstance(aggregate.this, exp.Expr) else None
        if not isinstance(case, exp.Case) or case.args.get("default") is not None:
            return False
        for branch in case.args.get("ifs") or []:
            terms = set(_conjuncts(branch.this))
            if not any(option <= terms for option in options):  # the branch's condition implies the join's
                return False
    return True


class ClickHouseWriter(ClickHouse):
    """sqlglot's ClickHouse dialect with the corrections this server's queries need (see :class:`Generator`)."""

    class Generator(ClickHouseGenerator):
        """Renders the query compiler's dialect-neutral tree so ClickHouse answers as PostgreSQL does:

        - ``$n`` parameters as ``{pn:_}`` placeholders (the source writes the type of each from its value);
        - local time (``CAST(x AS TIMESTAMPTZ) AT TIME ZONE 'Zone'``) as the wall time of the zone, still a UTC
          ``DateTime64``: the instant plus the zone's offset at that instant (``timeZoneOffset``), PostgreSQL's
          ``timestamp without time zone``;
        - timestamps (``TIMESTAMP``/``TIMESTAMPTZ`` casts) as ``DateTime64(6, 'UTC')``, never second-precision
          ``DateTime``;
        - ``TIMESTAMP_TRUNC`` per granularity (``toStartOfQuarter``, ``toMonday``...) back to a ``DateTime64``, where
          ``dateTrunc`` gives a ``Date`` for some units;
        - an ``ORDER BY ... DESC`` whose NULL order the tree leaves open as PostgreSQL's (NULLS FIRST), where
          ClickHouse puts NULLs last in both directions;
        - PostgreSQL's ``/`` between integer literals or integer casts as ``intDiv``.
        """

        def parameter_sql(self, expression: exp.Parameter) -> str:
            return f"{{p{self.sql(expression, 'this')}:_}}"

        def attimezone_sql(self, expression: exp.AtTimeZone) -> str:
            this = self.sql(expression, "this")
            zone = self.sql(expression, "zone")
            return f"addSeconds({this}, timeZoneOffset(toTimeZone({this}, {zone})))"

        def datatype_sql(self, expression: exp.DataType) -> str:
            if expression.this in _TIMESTAMP_TYPES and not expression.expressions:
                # Nullable as the stock generator makes a cast's type: CAST(NULL AS DateTime64(...)) fails.
                return _TIMESTAMP if expression.args.get("nullable") is False else f"Nullable({_TIMESTAMP})"
            return super().datatype_sql(expression)

        def mul_sql(self, expression: exp.Mul) -> str:
            # INTERVAL '1' MONTH * n (custom granularities) is toIntervalMonth(1 * n): ClickHouse does not multiply
            # an interval.
            for interval, factor in (
                (expression.this, expression.expression),
                (expression.expression, expression.this),
            ):
                if isinstance(interval, exp.Interval) and interval.unit is not None:
                    unit = interval.text("unit").lower().rstrip("s")
                    if unit in _INTERVAL_UNITS:
                        count = interval.this
                        if isinstance(count, exp.Literal) and count.is_string:  # INTERVAL '1' MONTH
                            count = exp.Literal.number(count.name)
                        return self.func(f"toInterval{_INTERVAL_UNITS[unit]}", exp.Mul(this=count, expression=factor))
            return super().mul_sql(expression)

        def extract_sql(self, expression: exp.Extract) -> str:
            if expression.text("this").lower() == "epoch":
                # Seconds since 1970 with the microseconds, as PostgreSQL's EXTRACT(EPOCH FROM ...).
                moment = self.sql(exp.cast(expression.expression, exp.DataType.build("timestamp")))
                return f"(toUnixTimestamp64Micro({moment}) / 1000000)"
            return super().extract_sql(expression)

        def join_sql(self, expression: exp.Join, join_op: str | None = None) -> str:
            on = expression.args.get("on")
            if on is not None and not any(isinstance(node, (exp.EQ, exp.NullSafeEQ)) for node in _conjuncts(on)):
                # ClickHouse joins on at least one equality. A join on ranges (rolling windows: a bucket's rows) is
                # answered the same without its condition when every aggregate of the select filters on the same
                # condition (CASE WHEN <condition> THEN ...), which is how the compiler writes rolling windows.
                if not _repeated_in_aggregates(expression, on):
                    raise QueryError(
                        "ClickHouse cannot answer this query: it joins rows on a range of times (a rolling window "
                        "measure grouped by a dimension), and ClickHouse joins only on equalities"
                    )
                expression = expression.copy()
                expression.set("on", exp.true())
            return super().join_sql(expression, join_op)

        def timestamptrunc_sql(self, expression: exp.DateTrunc | exp.TimestampTrunc) -> str:
            unit = expression.text("unit").lower() or "day"
            function = _TRUNC_FUNCTIONS.get(unit)
            if function is None:
                raise QueryError(f"ClickHouse cannot truncate a time to {unit!r}")
            # The value is cast first: a column of type Date or DateTime truncates the same way.
            moment = self.sql(exp.cast(expression.this, exp.DataType.build("timestamp")))
            return f"toDateTime64({function}({moment}), 6, 'UTC')"

        def ordered_sql(self, expression: exp.Ordered) -> str:
            if expression.args.get("desc") and expression.args.get("nulls_first") is None:
                expression = expression.copy()
                expression.set("nulls_first", True)
            return super().ordered_sql(expression)

        def div_sql(self, expression: exp.Div) -> str:
            # A division read from PostgreSQL's SQL (typed) is an integer division when both sides are integers;
            # ClickHouse's / always gives a Float64. The sides known to be integers here are integer literals and
            # casts to an integer type; any other division stays /.
            if expression.args.get("typed") and _integral(expression.this) and _integral(expression.expression):
                return self.func("intDiv", expression.this, expression.expression)
            return super().div_sql(expression)


WRITER = ClickHouseWriter


def _type_of(value: Any) -> str:
    """The ClickHouse type a parameter's value is bound as."""
    if value is None:
        return "Nullable(String)"
    if isinstance(value, bool):
        return "Bool"
    if isinstance(value, int):
        return "Int64" if -(2**63) <= value < 2**63 else "Int256"
    if isinstance(value, float):
        return "Float64"
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        scale = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        return f"Decimal(76, {min(scale, 76)})"
    if isinstance(value, str):
        return "String"
    if isinstance(value, dt.datetime):
        return _TIMESTAMP
    if isinstance(value, dt.date):
        return "Date32"
    raise DataSourceError(f"A {type(value).__name__} value cannot be a ClickHouse query parameter")


def bind(sql: str, params: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """``sql`` with each ``{pn:_}`` placeholder typed from its value, and the values by name. Every parameter must
    have a placeholder: clickhouse-connect formats values into the SQL text itself when it finds none."""
    values = list(params)
    used: set[int] = set()

    def typed(match: re.Match[str]) -> str:
        index = int(match.group(1))
        if not 1 <= index <= len(values):
            raise DataSourceError(f"Query parameter ${index} has no value")
        used.add(index)
        return f"{{p{index}:{_type_of(values[index - 1])}}}"

    text = _PLACEHOLDER.sub(typed, sql)
    if len(used) != len(values):
        raise DataSourceError("Query parameters and placeholders do not match")
    return text, {f"p{index}": values[index - 1] for index in sorted(used)}


# ---------------------------------------------------------------------------------------------------------------
# Values and types.


def _unwrap(type_name: str) -> str:
    """``Nullable(LowCardinality(String))`` -> ``String``."""
    name = type_name.strip()
    while True:
        for wrapper in ("Nullable(", "LowCardinality("):
            if name.startswith(wrapper) and name.endswith(")"):
                name = name[len(wrapper) : -1].strip()
                break
        else:
            return name


_VALUE_TYPES = {
    **dict.fromkeys(
        (
            *(f"Int{bits}" for bits in (8, 16, 32, 64, 128, 256)),
            *(f"UInt{bits}" for bits in (8, 16, 32, 64, 128, 256)),
        ),
        "integer",
    ),
    **dict.fromkeys(("Float32", "Float64", "BFloat16"), "float"),
    **dict.fromkeys(("Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256"), "decimal"),
    **dict.fromkeys(("String", "FixedString", "UUID", "Enum8", "Enum16", "IPv4", "IPv6"), "string"),
    "Bool": "boolean",
    **dict.fromkeys(("DateTime", "DateTime32", "DateTime64"), "timestamp"),
    **dict.fromkeys(("Date", "Date32"), "date"),
    **dict.fromkeys(("Time", "Time64"), "time"),
    **dict.fromkeys(("JSON", "Object"), "json"),
}


def value_type(type_name: str) -> str:
    """The value type (:data:`~.base.VALUE_TYPES`) of a ClickHouse type such as ``Nullable(Decimal(18, 2))``,
    ``LowCardinality(String)`` or ``DateTime64(3, 'Europe/Berlin')``."""
    name = _unwrap(type_name)
    if name.startswith("Interval"):
        return "interval"
    return _VALUE_TYPES.get(name.split("(", 1)[0].strip(), "other")


def _plain(value: Any) -> Any:
    """A value as the other sources give it: an aware time (a column with a zone of its own) as its UTC wall time,
    as PostgreSQL gives a ``timestamptz`` in a UTC session."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


# ---------------------------------------------------------------------------------------------------------------
# The source.


def _error_text(message: str) -> str:
    """A ClickHouse error as callers see it: what went wrong, without the SQL it quotes or the server's version."""
    text = message.strip()
    text = re.sub(r"^.*?DB::Exception:\s*", "", text, count=1, flags=re.DOTALL)
    text = re.split(r"(?:: While processing |: In scope |\s*\(version \d)", text, maxsplit=1)[0]
    text = re.sub(r"\s*\([A-Z_]+\)\s*$", "", text.strip())
    first = text.splitlines()[0].strip() if text.strip() else ""
    return first[:500] or "Query failed"


class ClickHouseSource:
    """A ClickHouse server (HTTP) or a chDB directory; a pool of clickhouse-connect clients, read-only queries with
    a server-side timeout, killed by token on cancel."""

    dialect = DIALECT

    def __init__(
        self,
        connect: dict[str, Any],
        *,
        embedded: bool,
        pool_max_size: int = 8,
        pool_timeout_s: float = 10.0,
    ) -> None:
        self._connect = connect
        self.embedded = embedded
        self._pool_timeout_s = pool_timeout_s
        self._lock = threading.Lock()
        self._idle: queue.LifoQueue[Any] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(pool_max_size)
        self._clients: list[Any] = []
        self._killer: Any | None = None
        self._closed = False

    def _new_client(self) -> Any:
        import clickhouse_connect
        from clickhouse_connect.driver.exceptions import Error as ClickHouseError
        from clickhouse_connect.driver.exceptions import ProgrammingError

        try:
            client = clickhouse_connect.get_client(**self._connect)
        except ImportError:
            raise DataSourceError("chDB is not installed on this server (pip install chdb)") from None
        except ProgrammingError as exc:  # chDB: another data directory is open in this process
            logger.warning("cannot open the chDB data source: %s", exc)
            raise DataSourceError("Data source cannot be opened: chDB opens one data directory per process") from None
        except ClickHouseError as exc:
            logger.warning("ClickHouse data source unavailable: %s", exc)
            if _code(exc) == 516:  # AUTHENTICATION_FAILED: the URL is wrong, not the server
                raise DataSourceError("Data source refused the credentials") from None
            raise DataSourceUnavailable("Data source is unavailable") from None
        with self._lock:
            self._clients.append(client)
        return client

    @contextlib.contextmanager
    def client(self) -> Iterator[Any]:
        """A clickhouse-connect client of this source's pool for the block (the settings of what it runs are the
        caller's: the query path sends :data:`QUERY_SETTINGS` with each query)."""
        if not self._slots.acquire(timeout=self._pool_timeout_s):
            raise DataSourceUnavailable("Data source is busy: no connection became free in time")
        client = None
        broken = False
        try:
            try:
                client = self._idle.get_nowait()
            except queue.Empty:
                client = self._new_client()
            yield client
        except DataSourceUnavailable:
            broken = True
            raise
        finally:
            if client is not None:
                if broken:
                    self._drop(client)
                else:
                    self._idle.put(client)
            self._slots.release()

    def _drop(self, client: Any) -> None:
        with self._lock:
            if client in self._clients:
                self._clients.remove(client)
        with contextlib.suppress(Exception):
            client.close()

    def kill(self, token: str) -> None:
        """Stop the query sent with ``token`` (from the watchdog or a cancel thread, never the query's own; a rollup
        writer's interrupt too)."""
        with self._lock:
            killer = self._killer
        if killer is None:
            killer = self._new_client()
            with self._lock:
                self._killer = killer
        killer.command(
            "KILL QUERY WHERE Settings['log_comment'] = {token:String} ASYNC",
            parameters={"token": token},
        )

    def execute(
        self, sql: str, params: Sequence[Any], *, timeout_s: float, cancel: CancelScope | None = None
    ) -> QueryResult:
        from clickhouse_connect.driver.exceptions import Error as ClickHouseError

        text, values = bind(sql, params)
        token = uuid.uuid4().hex
        query_settings = {
            **QUERY_SETTINGS,
            "max_execution_time": timeout_s,
            "timeout_overflow_mode": "throw",
            "log_comment": token,
        }
        timed_out = threading.Event()

        def on_deadline() -> None:
            timed_out.set()
            self.kill(token)

        with self.client() as client:
            alarm = watchdog.call_later(timeout_s + _KILL_GRACE_S, on_deadline)
            cancelled = threading.Event()
            try:
                with cancellable(cancel, lambda: self.kill(token)) as cancelled:
                    result = client.query(text, parameters=values or None, settings=query_settings)
                    columns = [(n, t.name) for n, t in zip(result.column_names, result.column_types, strict=True)]
                    if not columns:
                        # chDB gives a result without rows no columns: the statement's are asked for (a rollup's
                        # empty partition, a lambda's source part with no rows still need their names and types).
                        described = client.query(
                            f"DESCRIBE TABLE ({text})", parameters=values or None, settings=query_settings
                        )
                        columns = [(str(row[0]), str(row[1])) for row in described.result_rows]
            except ClickHouseError as exc:
                if timed_out.is_set():
                    raise QueryTimeout(timeout_s) from None
                if cancelled.is_set():
                    raise QueryCancelled() from None
                if _code(exc) == _READONLY:
                    raise DataSourceError("Data source is read-only: the query tried to change it") from None
                raise error_for(exc, timeout_s) from None
            finally:
                watchdog.cancel(alarm)
        return QueryResult(
            columns=[name for name, _ in columns],
            types=[value_type(kind) for _, kind in columns],
            rows=[tuple(_plain(value) for value in row) for row in result.result_rows],
        )

    def close(self) -> None:
        with self._lock:
            clients = list(self._clients)
            if self._killer is not None:
                clients.append(self._killer)
            self._clients.clear()
            self._killer = None
        while True:
            try:
                self._idle.get_nowait()
            except queue.Empty:
                break
        for client in clients:
            with contextlib.suppress(Exception):
                client.close()


def error_for(exc: Exception, timeout_s: float) -> DataSourceError:
    """What a caller sees of a failed statement: a timeout, a statement stopped on the server, an outage, or what the
    server refused (its message, without the SQL it quotes)."""
    from clickhouse_connect.driver.exceptions import OperationalError

    code = _code(exc)
    if code == _TIMEOUT_EXCEEDED:
        return QueryTimeout(timeout_s)
    if code == _QUERY_WAS_CANCELLED:
        return DataSourceError("Query was stopped on the server")
    if code in _UNAVAILABLE_CODES or (isinstance(exc, OperationalError) and code is None):
        logger.warning("ClickHouse data source unavailable: %s", exc)
        return DataSourceUnavailable("Data source is unavailable")
    return DataSourceError(_error_text(str(exc)))


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "code", None)
    if isinstance(code, int):
        return code
    match = re.search(r"Code: (\d+)", str(exc))
    return int(match.group(1)) if match else None


def _number(options: dict[str, str], name: str, default: str, kind: type[int] | type[float]) -> Any:
    try:
        return kind(options.pop(name, default))
    except ValueError:
        raise DataSourceError(f"{name} must be a number") from None


def open_source(url: str) -> ClickHouseSource:
    """The source a ``clickhouse:``, ``clickhouses:`` or ``chdb:`` URL names."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    options = dict(parse_qsl(parts.query))
    unknown = sorted(set(options) - _URL_OPTIONS)
    if unknown:
        raise DataSourceError(f"Unsupported ClickHouse URL option: {', '.join(unknown)}")
    pool_max_size = _number(options, "pool_max_size", "8", int)
    pool_timeout_s = _number(options, "pool_timeout", "10", float)
    if pool_max_size < 1:
        raise DataSourceError("pool_max_size must be at least 1")
    common = {"query_limit": 0, "tz_mode": "schema"}
    if scheme == "chdb":
        if options:
            raise DataSourceError(f"Unsupported chDB URL option: {', '.join(sorted(options))}")
        raw_path = unquote(parts.netloc + parts.path)
        if not raw_path.strip("/"):
            raise DataSourceError("Data source URL names no chDB directory")
        # chdb:///relative -> "/relative"; chdb:////abs -> "//abs" (the DATABASE_URL convention, as duckdb:).
        path = Path(raw_path[1:]) if raw_path.startswith("//") else Path(settings.BASE_DIR) / raw_path.lstrip("/")
        connect = {"interface": "chdb", "path": str(path.resolve()), **common}
        return ClickHouseSource(connect, embedded=True, pool_max_size=pool_max_size, pool_timeout_s=pool_timeout_s)
    if not parts.hostname:
        raise DataSourceError("Data source URL names no ClickHouse host")
    secure = scheme == "clickhouses"
    try:
        port = parts.port or (8443 if secure else 8123)
    except ValueError:
        raise DataSourceError("Data source URL has an invalid port") from None
    connect = {
        "interface": "https" if secure else "http",
        "host": parts.hostname,
        "port": port,
        "username": unquote(parts.username or "default"),
        "password": unquote(parts.password or ""),
        "database": unquote(parts.path.lstrip("/")) or None,
        "connect_timeout": _number(options, "connect_timeout", "10", float),
        "autogenerate_session_id": False,  # no server session: one client serves many threads
        **common,
    }
    if "verify" in options:
        connect["verify"] = options.pop("verify").lower() not in ("false", "0", "no")
    return ClickHouseSource(connect, embedded=False, pool_max_size=pool_max_size, pool_timeout_s=pool_timeout_s)
