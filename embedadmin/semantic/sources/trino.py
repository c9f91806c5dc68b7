"""Trino (and Starburst) clusters, through the official ``trino`` driver.

``trino://user[:password]@host[:port]/catalog[/schema]``. A password is sent with HTTP basic authentication and
``access_token`` (a JWT) as a bearer token; either implies HTTPS, which ``http_scheme`` can also set (``http`` for a
cluster without authentication, the default without credentials). Query options: ``http_scheme``, ``verify``
(``false``, or the path of a CA bundle), ``access_token``, ``source`` (the client name the cluster sees,
``embedadmin`` by default), ``roles`` (``catalog:role`` pairs separated by commas), ``request_timeout`` (seconds per
HTTP request, 30 by default).

Each statement runs with the session time zone UTC and the session property ``query_max_run_time`` set to its
timeout, so the cluster itself stops a statement past it; a :class:`~.base.CancelScope` (and the timeout, if the
cluster has not stopped it first) cancels it with ``cursor.cancel()`` (an HTTP DELETE of the query). Trino has no
read-only session: name a user whose access control grants only ``SELECT``.

SQL: Trino's dialect (double-quoted names); parameters ``?``, bound by the driver (``EXECUTE IMMEDIATE ... USING``
on Trino 418 and later, a prepared statement before). :data:`WRITER` renders what the stock dialect gets wrong for
this server's queries: wall-clock time of the query time zone as ``CAST(x AT TIME ZONE 'Zone' AS TIMESTAMP)``,
instants bound as ISO 8601 text through ``from_iso8601_timestamp``, timestamp literals with a space before the
time, and ``?`` in the statement's parameter order.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlglot import exp
from sqlglot.dialects.trino import Trino

from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.sources import warehouses
from embedadmin.semantic.sources.base import CancelScope, DataSourceUnavailable, QueryResult

logger = logging.getLogger(__name__)

DIALECT = "trino"
SCHEMES = ("trino",)
APPROX_COUNT_DISTINCT = True  # count_distinct_approx measures are the warehouse's approximate count
_OPTIONS = frozenset({"http_scheme", "verify", "access_token", "source", "roles", "request_timeout"})

# Trino type names (lowercase, without parameters) -> value type.
_TYPES = {
    **dict.fromkeys(("tinyint", "smallint", "integer", "bigint"), "integer"),
    "decimal": "decimal",
    **dict.fromkeys(("real", "double"), "float"),
    **dict.fromkeys(("varchar", "char", "uuid", "ipaddress"), "string"),
    "boolean": "boolean",
    "timestamp": "timestamp",
    "timestamp with time zone": "timestamptz",
    "date": "date",
    **dict.fromkeys(("time", "time with time zone"), "time"),
    **dict.fromkeys(("interval day to second", "interval year to month"), "interval"),
    "json": "json",
    "varbinary": "binary",
}


def value_type(type_name: str) -> str:
    """``timestamp(3) with time zone`` -> ``timestamptz``, ``decimal(18,2)`` -> ``decimal``..."""
    name = type_name.lower()
    while "(" in name:  # drop every parenthesised parameter, which may sit before " with time zone"
        start = name.index("(")
        end = name.find(")", start)
        name = name[:start] + (name[end + 1 :] if end >= 0 else "")
    return _TYPES.get(name.strip(), "other")


class _Generator(Trino.Generator):  # type: ignore[misc,valid-type]
    TRANSFORMS = warehouses.without_transforms(Trino.Generator.TRANSFORMS, exp.Parameter, exp.AtTimeZone, exp.Cast)

    def parameter_sql(self, expression: exp.Parameter) -> str:
        # ``?`` binds by position: the statement's $1..$n must come in that order, each once (the compiler numbers
        # them as it writes the tree). A statement that does not is refused rather than bound to the wrong values.
        number = warehouses.parameter_number(expression)
        expected = getattr(self, "_next_parameter", 1)
        if number != expected:
            raise DataSourceError("This query cannot be sent to Trino: its parameters are out of order")
        self._next_parameter = expected + 1
        return "?"

    def attimezone_sql(self, expression: exp.AtTimeZone) -> str:
        if not warehouses.is_local_time(expression):
            return str(super().attimezone_sql(expression))
        # AT TIME ZONE keeps the instant and names the zone; the cast to TIMESTAMP keeps its wall-clock time.
        return f"CAST({self.sql(expression, 'this')} AT TIME ZONE {self.sql(expression, 'zone')} AS TIMESTAMP)"

    def cast_sql(self, expression: exp.Cast, safe_prefix: str | None = None) -> str:
        if warehouses.is_instant_parameter(expression):
            # Trino's cast from text wants "2024-01-01 00:00:00.000 UTC"; the bound text is ISO 8601.
            return f"FROM_ISO8601_TIMESTAMP({self.sql(expression, 'this')})"
        text = warehouses.local_text(expression.this)
        if text is not None and expression.to.is_type(exp.DataType.Type.TIMESTAMP) and "T" in text:
            return f"TIMESTAMP {self.sql(exp.Literal.string(text.replace('T', ' ')))}"
        return str(super().cast_sql(expression, safe_prefix))


class TrinoWriter(Trino):
    """Trino's sqlglot dialect, rendering this server's queries as Trino runs them."""

    Generator = _Generator


WRITER = TrinoWriter


class TrinoSource(warehouses.DriverSource):
    """A Trino cluster; one HTTP connection per statement (the driver's connections are cheap)."""

    dialect = DIALECT
    KIND = "Trino"

    def connect(self, **changes: Any) -> Any:
        return warehouses.connected(
            self._driver.dbapi.connect, {**self._connect_args, **changes}, self.driver_errors(), self.KIND
        )

    def driver_errors(self) -> Any:
        return self._driver.exceptions.TrinoConnectionError

    def session_properties(self, timeout_s: float) -> dict[str, Any]:
        """The session properties of a statement: the URL's, and its time limit (``query_max_run_time``)."""
        seconds = warehouses.timeout_seconds(timeout_s)
        return {**self._connect_args.get("session_properties", {}), "query_max_run_time": f"{seconds}s"}

    def execute(
        self, sql: str, params: Sequence[Any], *, timeout_s: float, cancel: CancelScope | None = None
    ) -> QueryResult:
        connection = self.connect(session_properties=self.session_properties(timeout_s))
        cursor = connection.cursor()
        with warehouses.stoppable(timeout_s, cancel, cursor.cancel) as stops:
            try:
                cursor.execute(sql, warehouses.positional(params))
                rows = [tuple(row) for row in cursor.fetchall()]
                description = cursor.description or []
            except Exception as exc:
                raise stops.error(timeout_s) or error_for(exc, self._driver.exceptions, timeout_s) from None
            finally:
                connection.close()
        return QueryResult(
            columns=[column[0] for column in description],
            types=[value_type(str(column[1])) for column in description],
            rows=rows,
        )

    def close(self) -> None:
        return None


def error_for(exc: Exception, exceptions: Any, timeout_s: float) -> DataSourceError:
    """The error a caller sees for a failed Trino statement (the cluster's message for a refused query, never
    the URL or credentials)."""
    if isinstance(exc, exceptions.TrinoQueryError):
        if exc.error_name == "EXCEEDED_TIME_LIMIT":
            return QueryTimeout(timeout_s)
        if exc.error_type == "USER_ERROR":
            return DataSourceError(exc.message or "Query failed")
        logger.warning("Trino query failed: %s %s", exc.error_name, exc.message)
        return DataSourceError(f"Trino could not run the query ({exc.error_name})")
    if isinstance(exc, exceptions.HttpError | exceptions.TrinoAuthError | exceptions.TrinoConnectionError):
        logger.warning("Trino data source unavailable: %s", type(exc).__name__)
        return DataSourceUnavailable("Data source is unavailable")
    if isinstance(exc, OSError) or type(exc).__module__.startswith(("requests", "urllib3")):
        logger.warning("Trino data source unavailable: %s", type(exc).__name__)
        return DataSourceUnavailable("Data source is unavailable")
    logger.warning("Trino query failed: %s", type(exc).__name__)
    return DataSourceError("Query failed")


def connect_arguments(url: str, driver: Any) -> dict[str, Any]:
    """The arguments of ``trino.dbapi.connect`` for a ``trino:`` URL."""
    parts = urlsplit(url)
    options = warehouses.url_options(parts.query, _OPTIONS, "Trino")
    if not parts.hostname:
        raise DataSourceError("Trino URL names no host: trino://user@host:port/catalog/schema")
    path = warehouses.path_parts(parts.path)
    if len(path) > 2:
        raise DataSourceError("Trino URL path is /catalog or /catalog/schema")
    user = unquote(parts.username) if parts.username else None
    if not user:
        raise DataSourceError("Trino URL names no user: trino://user@host:port/catalog/schema")
    password = unquote(parts.password) if parts.password is not None else None
    token = options.get("access_token")
    if password is not None and token:
        raise DataSourceError("Trino URL has both a password and an access_token: use one")
    scheme = options.get("http_scheme", "https" if password is not None or token else "http")
    if scheme not in ("http", "https"):
        raise DataSourceError("Trino URL option http_scheme must be http or https")
    try:
        port = parts.port or (443 if scheme == "https" else 8080)
    except ValueError:
        raise DataSourceError("Trino URL has an invalid port") from None
    args: dict[str, Any] = {
        "host": parts.hostname,
        "port": port,
        "user": user,
        "http_scheme": scheme,
        "source": options.get("source", "embedadmin"),
        "timezone": "UTC",
        "request_timeout": warehouses.number(options, "request_timeout", 30.0),
        "session_properties": {},
    }
    if path:
        args["catalog"] = path[0]
    if len(path) == 2:
        args["schema"] = path[1]
    if "verify" in options:
        verify = options["verify"]
        args["verify"] = verify if verify.lower() not in ("true", "false") else verify.lower() == "true"
    if password is not None:
        args["auth"] = driver.auth.BasicAuthentication(user, password)
    elif token:
        args["auth"] = driver.auth.JWTAuthentication(token)
    if options.get("roles"):
        roles = {}
        for pair in options["roles"].split(","):
            catalog, sep, role = pair.partition(":")
            if not sep or not catalog or not role:
                raise DataSourceError("Trino URL option roles is catalog:role[,catalog:role...]")
            roles[catalog.strip()] = role.strip()
        args["roles"] = roles
    return args


def open_source(url: str) -> TrinoSource:
    """The source a ``trino:`` URL names."""
    driver = warehouses.import_driver("trino", "trino", "Trino")
    for submodule in ("dbapi", "auth", "exceptions"):
        warehouses.import_driver(f"trino.{submodule}", "trino", "Trino")
    return TrinoSource(connect_arguments(url, driver), driver)
