"""Snowflake accounts, through the official ``snowflake-connector-python`` driver.

``snowflake://user[:password]@account/database[/schema]?warehouse=WH&role=ROLE`` where ``account`` is the account
identifier (``myorg-myaccount``, or a locator such as ``xy12345.eu-central-1``). Query options: ``warehouse``,
``role`` (a role granted only ``SELECT`` makes the source read-only: Snowflake has no read-only session),
``authenticator`` (``snowflake`` with a password by default; ``snowflake_jwt`` with ``private_key_file`` and
``private_key_password`` for key-pair authentication; ``oauth`` or ``programmatic_access_token`` with ``token``),
``login_timeout`` (seconds, 30 by default).

Sessions are opened with the time zone UTC, Monday weeks (``WEEK_START = 1``), ``TIMESTAMP`` meaning
``TIMESTAMP_NTZ``, and a few are kept idle between statements. Each statement runs with
``STATEMENT_TIMEOUT_IN_SECONDS`` set to its timeout (an ``ALTER SESSION`` when it differs from the session's), is
submitted asynchronously so its query id is known at once, and a :class:`~.base.CancelScope` (or the timeout, if
the server has not stopped it first) aborts it by that id.

SQL: Snowflake's dialect; parameters ``:1``, ``:2``... (``paramstyle="numeric"``), bound by the server. :data:`WRITER`
renders wall-clock time of the query time zone as ``CONVERT_TIMEZONE`` cast to ``TIMESTAMP_NTZ`` and the buckets of
custom granularities with ``DATEADD`` (Snowflake does not multiply intervals).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlglot import exp
from sqlglot.dialects.snowflake import Snowflake

from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.sources import warehouses
from embedadmin.semantic.sources.base import CancelScope, DataSourceUnavailable, QueryResult

logger = logging.getLogger(__name__)

DIALECT = "snowflake"
SCHEMES = ("snowflake",)
APPROX_COUNT_DISTINCT = True  # count_distinct_approx measures are the warehouse's approximate count
_OPTIONS = frozenset(
    {"warehouse", "role", "authenticator", "token", "private_key_file", "private_key_password", "login_timeout"}
)
_AUTHENTICATORS = frozenset({"snowflake", "snowflake_jwt", "oauth", "programmatic_access_token"})
# Snowflake's error numbers: the statement ran past STATEMENT_TIMEOUT_IN_SECONDS; it was cancelled.
_TIMED_OUT = 630
_CANCELLED = 604

# Snowflake's type names (the driver's FIELD_ID_TO_NAME) -> value type; FIXED depends on its scale.
_TYPES = {
    "REAL": "float",
    "TEXT": "string",
    "BOOLEAN": "boolean",
    "DATE": "date",
    "TIME": "time",
    "TIMESTAMP_NTZ": "timestamp",
    "TIMESTAMP_LTZ": "timestamptz",
    "TIMESTAMP_TZ": "timestamptz",
    "TIMESTAMP": "timestamp",
    **dict.fromkeys(("VARIANT", "OBJECT", "ARRAY"), "json"),
    "BINARY": "binary",
}


def value_type(type_name: str, scale: int | None) -> str:
    if type_name == "FIXED":
        return "integer" if not scale else "decimal"
    return _TYPES.get(type_name, "other")


class _Generator(Snowflake.Generator):  # type: ignore[misc,valid-type]
    TRANSFORMS = warehouses.without_transforms(Snowflake.Generator.TRANSFORMS, exp.Parameter, exp.AtTimeZone, exp.Add)

    TYPE_MAPPING = {
        **Snowflake.Generator.TYPE_MAPPING,
        exp.DataType.Type.TIMESTAMP: "TIMESTAMP_NTZ",
        exp.DataType.Type.TIMESTAMPTZ: "TIMESTAMP_TZ",
    }

    def parameter_sql(self, expression: exp.Parameter) -> str:
        return f":{warehouses.parameter_number(expression)}"

    def attimezone_sql(self, expression: exp.AtTimeZone) -> str:
        if not warehouses.is_local_time(expression):
            return str(super().attimezone_sql(expression))
        # CONVERT_TIMEZONE(zone, TIMESTAMP_TZ) keeps the instant in that zone; NTZ keeps its wall-clock time.
        zone, instant = self.sql(expression, "zone"), self.sql(expression, "this")
        return f"CAST(CONVERT_TIMEZONE({zone}, {instant}) AS TIMESTAMP_NTZ)"

    def add_sql(self, expression: exp.Add) -> str:
        step = warehouses.interval_step_sql(self, expression, "DATEADD({unit}, {count}, {origin})")
        return step or str(super().add_sql(expression))


class SnowflakeWriter(Snowflake):
    """Snowflake's sqlglot dialect, rendering this server's queries as Snowflake runs them."""

    Generator = _Generator


WRITER = SnowflakeWriter
# A session's time limit in whole seconds (``{seconds}``), set by the query path and the rollup writer alike.
SET_TIMEOUT = "ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = {seconds}"


class SnowflakeSource(warehouses.SessionSource):
    """A Snowflake account; sessions kept idle between statements."""

    dialect = DIALECT
    KIND = "Snowflake"

    def driver_errors(self) -> Any:
        return self._driver.errors.Error

    def error_for(self, exc: Exception, timeout_s: float) -> DataSourceError:
        return error_for(exc, timeout_s)

    def execute(
        self, sql: str, params: Sequence[Any], *, timeout_s: float, cancel: CancelScope | None = None
    ) -> QueryResult:
        with self.statement_session(timeout_s, SET_TIMEOUT) as (lease, cursor):
            query: dict[str, str | None] = {"id": None}

            def stop() -> None:
                if query["id"] is not None:
                    lease.connection.cursor().abort_query(query["id"])

            with warehouses.stoppable(timeout_s, cancel, stop) as stops:
                try:
                    query["id"] = cursor.execute_async(sql, list(params))["queryId"]
                    if stops.cancelled.is_set() or stops.timed_out.is_set():  # stopped before the id was known
                        stop()
                    cursor.get_results_from_sfqid(query["id"])
                    rows = [tuple(row) for row in cursor.fetchall()]
                    description = cursor.description or []
                except self._driver.errors.Error as exc:
                    stopped = stops.error(timeout_s)
                    if stopped is not None or getattr(exc, "errno", None) in (_TIMED_OUT, _CANCELLED):
                        lease.kept_on_error = True
                        raise stopped or error_for(exc, timeout_s) from None
                    raise
        return QueryResult(
            # PEP 249 description items: (name, type_code, display_size, internal_size, precision, scale, null_ok)
            columns=[column[0] for column in description],
            types=[value_type(_type_name(self._driver, column[1]), column[5]) for column in description],
            rows=rows,
        )


def _type_name(driver: Any, type_code: Any) -> str:
    names = getattr(driver.constants, "FIELD_ID_TO_NAME", {})
    return str(names.get(type_code, type_code)).upper()


def _errno(exc: Exception) -> int:
    errno = getattr(exc, "errno", -1)
    return errno if isinstance(errno, int) else -1


def error_for(exc: Exception, timeout_s: float) -> DataSourceError:
    """The error a caller sees: Snowflake's own message for a refused statement (it names no credential)."""
    errno = _errno(exc)
    if errno == _TIMED_OUT:
        return QueryTimeout(timeout_s)
    if errno == _CANCELLED:
        from embedadmin.semantic.sources.base import QueryCancelled

        return QueryCancelled()
    kind = type(exc).__name__
    if kind in ("OperationalError", "InterfaceError") or errno in range(250000, 260000):
        # The connector's own errors (25xxxx: the connection, the network, the login)
        logger.warning("Snowflake data source unavailable: %s %s", kind, errno)
        return DataSourceUnavailable("Data source is unavailable")
    message = str(getattr(exc, "raw_msg", "") or "").strip()
    return DataSourceError(message.splitlines()[0] if message else "Query failed")


def connect_arguments(url: str) -> dict[str, Any]:
    """The arguments of ``snowflake.connector.connect`` for a ``snowflake:`` URL."""
    parts = urlsplit(url)
    options = warehouses.url_options(parts.query, _OPTIONS, "Snowflake")
    account = parts.hostname
    if not account:
        raise DataSourceError("Snowflake URL names no account: snowflake://user@account/database/schema")
    user = unquote(parts.username) if parts.username else None
    if not user:
        raise DataSourceError("Snowflake URL names no user: snowflake://user@account/database/schema")
    path = warehouses.path_parts(parts.path)
    if len(path) > 2:
        raise DataSourceError("Snowflake URL path is /database or /database/schema")
    authenticator = options.get("authenticator", "snowflake").lower()
    if authenticator not in _AUTHENTICATORS:
        raise DataSourceError(f"Snowflake URL option authenticator must be one of {', '.join(sorted(_AUTHENTICATORS))}")
    args: dict[str, Any] = {
        "account": account,
        "user": user,
        "authenticator": authenticator,
        "application": "embedadmin",
        "paramstyle": "numeric",
        "timezone": "UTC",
        "login_timeout": int(warehouses.number(options, "login_timeout", 30.0)),
        "session_parameters": {
            "TIMEZONE": "UTC",
            "WEEK_START": 1,
            "TIMESTAMP_TYPE_MAPPING": "TIMESTAMP_NTZ",
            "QUERY_TAG": "embedadmin",
        },
    }
    if parts.password is not None:
        args["password"] = unquote(parts.password)
    if authenticator == "snowflake" and "password" not in args:
        raise DataSourceError("Snowflake URL has no password (or name another authenticator)")
    if authenticator == "snowflake_jwt":
        if "private_key_file" not in options:
            raise DataSourceError("Snowflake key-pair authentication needs the private_key_file option")
        args["private_key_file"] = options["private_key_file"]
        if "private_key_password" in options:
            args["private_key_password"] = options["private_key_password"]
    if authenticator in ("oauth", "programmatic_access_token"):
        if not options.get("token"):
            raise DataSourceError(f"Snowflake {authenticator} authentication needs the token option")
        args["token"] = options["token"]
    if path:
        args["database"] = path[0]
    if len(path) == 2:
        args["schema"] = path[1]
    for name in ("warehouse", "role"):
        if options.get(name):
            args[name] = options[name]
    return args


def open_source(url: str) -> SnowflakeSource:
    """The source a ``snowflake:`` URL names."""
    driver = warehouses.import_driver("snowflake.connector", "snowflake-connector-python", "Snowflake")
    warehouses.import_driver("snowflake.connector.constants", "snowflake-connector-python", "Snowflake")
    return SnowflakeSource(connect_arguments(url), driver)
