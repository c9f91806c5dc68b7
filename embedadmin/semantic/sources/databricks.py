"""Databricks SQL warehouses, through the official ``databricks-sql-connector`` driver.

``databricks://token:<personal access token>@<server hostname>/<catalog>[/<schema>]?http_path=/sql/1.0/warehouses/<id>``
(the hostname and HTTP path are on the warehouse's "Connection details" tab). The token may instead be the
``access_token`` option (an OAuth access token, or a personal one) with no user in the URL. Query options:
``http_path`` (required), ``access_token``, ``socket_timeout`` (seconds, 30 by default).

Sessions are opened with the time zone UTC (``TIMEZONE``) and ANSI mode, the connector's telemetry off, and a
few are kept idle between statements. Each statement runs with ``STATEMENT_TIMEOUT`` set to its timeout (a ``SET``
when it differs from the session's); a :class:`~.base.CancelScope` (or the timeout, if the warehouse has not stopped
it first) cancels it with ``cursor.cancel()``. Databricks has no read-only session: use a token of a principal
granted only ``SELECT`` (and ``USE CATALOG``/``USE SCHEMA``).

SQL: Databricks' dialect (backquoted names); parameters are named parameter markers ``:p1``, ``:p2``..., bound by
the warehouse (the connector's native parameters). :data:`WRITER` renders epoch seconds as ``UNIX_MICROS`` and the
buckets of custom granularities with ``TIMESTAMPADD``; wall-clock time of the query time zone is sqlglot's own
``from_utc_timestamp``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlglot import exp
from sqlglot.dialects.databricks import Databricks

from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.sources import warehouses
from embedadmin.semantic.sources.base import CancelScope, DataSourceUnavailable, QueryResult

logger = logging.getLogger(__name__)

DIALECT = "databricks"
SCHEMES = ("databricks",)
APPROX_COUNT_DISTINCT = True  # count_distinct_approx measures are the warehouse's approximate count
_OPTIONS = frozenset({"http_path", "access_token", "socket_timeout"})

# Databricks' type names (lowercase, without parameters) -> value type.
_TYPES = {
    **dict.fromkeys(("tinyint", "smallint", "int", "integer", "bigint", "byte", "short", "long"), "integer"),
    "decimal": "decimal",
    **dict.fromkeys(("float", "double", "real"), "float"),
    **dict.fromkeys(("string", "varchar", "char"), "string"),
    "boolean": "boolean",
    "timestamp": "timestamp",  # read in the session time zone, UTC
    "timestamp_ntz": "timestamp",
    "date": "date",
    "interval": "interval",
    **dict.fromkeys(("array", "map", "struct"), "json"),
    "binary": "binary",
}


def value_type(type_name: str) -> str:
    return _TYPES.get(type_name.split("(", 1)[0].strip().lower(), "other")


class _Generator(Databricks.Generator):  # type: ignore[misc,valid-type]
    TRANSFORMS = warehouses.without_transforms(Databricks.Generator.TRANSFORMS, exp.Parameter, exp.Extract, exp.Add)

    def parameter_sql(self, expression: exp.Parameter) -> str:
        return f":p{warehouses.parameter_number(expression)}"

    def extract_sql(self, expression: exp.Extract) -> str:
        if expression.this.name.upper() != "EPOCH":
            return str(super().extract_sql(expression))
        # Seconds since 1970 of a timestamp in the session time zone (UTC), with its fraction.
        return f"UNIX_MICROS({self.sql(expression, 'expression')}) / 1000000"

    def add_sql(self, expression: exp.Add) -> str:
        step = warehouses.interval_step_sql(self, expression, "TIMESTAMPADD({unit}, {count}, {origin})")
        return step or str(super().add_sql(expression))


class DatabricksWriter(Databricks):
    """Databricks' sqlglot dialect, rendering this server's queries as a Databricks SQL warehouse runs them."""

    Generator = _Generator


WRITER = DatabricksWriter
# A session's time limit in whole seconds (``{seconds}``), set by the query path and the rollup writer alike.
SET_TIMEOUT = "SET STATEMENT_TIMEOUT = {seconds}"


class DatabricksSource(warehouses.SessionSource):
    """A Databricks SQL warehouse; sessions kept idle between statements."""

    dialect = DIALECT
    KIND = "Databricks"

    def driver_errors(self) -> Any:
        return self._driver.exc.Error

    def error_for(self, exc: Exception, timeout_s: float) -> DataSourceError:
        return error_for(exc, timeout_s)

    def execute(
        self, sql: str, params: Sequence[Any], *, timeout_s: float, cancel: CancelScope | None = None
    ) -> QueryResult:
        session = self.statement_session(timeout_s, SET_TIMEOUT)
        with session as (lease, cursor), warehouses.stoppable(timeout_s, cancel, cursor.cancel) as stops:
            try:
                cursor.execute(sql, warehouses.named(params))
                rows = [tuple(row) for row in cursor.fetchall()]
                description = cursor.description or []
            except self._driver.exc.Error:
                stopped = stops.error(timeout_s)
                if stopped is not None:
                    lease.kept_on_error = True
                    raise stopped from None
                raise
        return QueryResult(
            columns=[column[0] for column in description],
            types=[value_type(str(column[1])) for column in description],
            rows=rows,
        )


def error_for(exc: Exception, timeout_s: float) -> DataSourceError:
    """The error a caller sees: the warehouse's message for a refused statement (never the host or token)."""
    message = str(getattr(exc, "message", None) or "").strip()
    if "TIMEOUT" in message.upper() and "STATEMENT" in message.upper():
        return QueryTimeout(timeout_s)
    if type(exc).__name__ == "ServerOperationError" and message:
        return DataSourceError(message.splitlines()[0])
    logger.warning("Databricks data source unavailable: %s", type(exc).__name__)
    return DataSourceUnavailable("Data source is unavailable")


def connect_arguments(url: str) -> dict[str, Any]:
    """The arguments of ``databricks.sql.connect`` for a ``databricks:`` URL."""
    parts = urlsplit(url)
    options = warehouses.url_options(parts.query, _OPTIONS, "Databricks")
    if not parts.hostname:
        raise DataSourceError("Databricks URL names no server hostname: databricks://token:<token>@host/catalog")
    http_path = options.get("http_path")
    if not http_path:
        raise DataSourceError("Databricks URL needs the http_path option (the warehouse's HTTP path)")
    token = options.get("access_token")
    if parts.password is not None:
        if token:
            raise DataSourceError("Databricks URL has a token both as password and as access_token: use one")
        if unquote(parts.username or "") != "token":
            raise DataSourceError("Databricks URL carries a personal access token as token:<token>@host")
        token = unquote(parts.password)
    if not token:
        raise DataSourceError("Databricks URL has no token: databricks://token:<token>@host/catalog")
    path = warehouses.path_parts(parts.path)
    if len(path) > 2:
        raise DataSourceError("Databricks URL path is /catalog or /catalog/schema")
    args: dict[str, Any] = {
        "server_hostname": parts.hostname if not parts.port else f"{parts.hostname}:{parts.port}",
        "http_path": http_path,
        "access_token": token,
        "session_configuration": {"TIMEZONE": "UTC", "ANSI_MODE": "true"},
        "user_agent_entry": "embedadmin",
        "enable_telemetry": False,
        "use_inline_params": False,
        "_socket_timeout": warehouses.number(options, "socket_timeout", 30.0),
    }
    if path:
        args["catalog"] = path[0]
    if len(path) == 2:
        args["schema"] = path[1]
    return args


def open_source(url: str) -> DatabricksSource:
    """The source a ``databricks:`` URL names."""
    driver = warehouses.import_driver("databricks.sql", "databricks-sql-connector", "Databricks")
    warehouses.import_driver("databricks.sql.exc", "databricks-sql-connector", "Databricks")
    return DatabricksSource(connect_arguments(url), driver)
