"""BigQuery projects, through the official ``google-cloud-bigquery`` client.

``bigquery://project/dataset``: ``project`` runs (and is billed for) the query jobs; the tables a model names
without a dataset are read from ``dataset`` (a model may also name ``other_project.dataset.table``). Query options:
``location`` (``EU``, ``us-central1``...), ``credentials_file`` (the path of a service account's JSON key) or
``credentials_base64`` (the key itself, base64-encoded); without either the client uses Application Default
Credentials. ``maximum_bytes_billed`` refuses a job that would bill more; ``request_timeout`` (seconds, 30 by
default) bounds each HTTP request. BigQuery has no read-only job: give the service account the BigQuery Data
Viewer and Job User roles only.

Each statement is a query job with the session time zone UTC (the ``time_zone`` connection property), a job
timeout (``job_timeout_ms``) of the statement's timeout, standard SQL, and the dataset as default dataset. A
:class:`~.base.CancelScope` (or the timeout, if BigQuery has not stopped the job first) cancels the job.

SQL: BigQuery's dialect (backquoted names); parameters are named query parameters ``@p1``, ``@p2``... typed from
their values (``ScalarQueryParameter``: ``INT64``, ``NUMERIC``, ``FLOAT64``, ``BOOL``, ``STRING``...), bound by
BigQuery. :data:`WRITER` renders wall-clock time of the query time zone as ``DATETIME(ts, 'Zone')``, truncation as
``DATETIME_TRUNC`` (weeks from Monday, ``ISOWEEK``), epoch seconds as ``UNIX_MICROS``, custom granularities with
``DATETIME_ADD``, ``LIKE`` without ``ESCAPE`` (BigQuery's escape character is the backslash already).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Sequence
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from sqlglot import exp
from sqlglot.dialects.bigquery import BigQuery

from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.sources import warehouses
from embedadmin.semantic.sources.base import CancelScope, DataSourceUnavailable, QueryCancelled, QueryResult

logger = logging.getLogger(__name__)

DIALECT = "bigquery"
SCHEMES = ("bigquery",)
APPROX_COUNT_DISTINCT = True  # count_distinct_approx measures are the warehouse's approximate count
_OPTIONS = frozenset({"location", "credentials_file", "credentials_base64", "maximum_bytes_billed", "request_timeout"})
_SCOPES = ("https://www.googleapis.com/auth/bigquery",)

# BigQuery's field types -> value type.
_TYPES = {
    **dict.fromkeys(("INTEGER", "INT64"), "integer"),
    **dict.fromkeys(("NUMERIC", "BIGNUMERIC", "DECIMAL", "BIGDECIMAL"), "decimal"),
    **dict.fromkeys(("FLOAT", "FLOAT64"), "float"),
    "STRING": "string",
    **dict.fromkeys(("BOOLEAN", "BOOL"), "boolean"),
    "TIMESTAMP": "timestamptz",
    "DATETIME": "timestamp",
    "DATE": "date",
    "TIME": "time",
    "INTERVAL": "interval",
    "JSON": "json",
    "BYTES": "binary",
}
# NUMERIC holds 29 digits before the point and 9 after; BIGNUMERIC the rest of what a filter value may be.
_NUMERIC_DIGITS = 29
_NUMERIC_SCALE = 9
_CALENDAR_UNITS = frozenset({"WEEK", "MONTH", "QUARTER", "YEAR"})


def parameter_type(value: Any) -> str:
    """The BigQuery type of a bound value."""
    if isinstance(value, bool):
        return "BOOL"
    if isinstance(value, int):
        return "INT64" if -(2**63) <= value < 2**63 else "BIGNUMERIC"
    if isinstance(value, float):
        return "FLOAT64"
    if isinstance(value, Decimal):
        _, digits, exponent = value.as_tuple()
        assert isinstance(exponent, int)
        scale = max(0, -exponent)
        whole = max(0, len(digits) + exponent)
        return "NUMERIC" if scale <= _NUMERIC_SCALE and whole <= _NUMERIC_DIGITS else "BIGNUMERIC"
    if isinstance(value, datetime):
        return "TIMESTAMP" if value.tzinfo is not None else "DATETIME"
    if isinstance(value, date):
        return "DATE"
    if isinstance(value, time):
        return "TIME"
    if isinstance(value, bytes):
        return "BYTES"
    return "STRING"  # text, and NULL (a NULL needs a type; every NULL this server binds is compared as text)


class _Generator(BigQuery.Generator):  # type: ignore[misc,valid-type]
    TRANSFORMS = warehouses.without_transforms(
        BigQuery.Generator.TRANSFORMS,
        exp.Parameter,
        exp.AtTimeZone,
        exp.TimestampTrunc,
        exp.Extract,
        exp.Interval,
        exp.Add,
        exp.Sub,
        exp.Escape,
    )

    def parameter_sql(self, expression: exp.Parameter) -> str:
        return f"@p{warehouses.parameter_number(expression)}"

    def attimezone_sql(self, expression: exp.AtTimeZone) -> str:
        if not warehouses.is_local_time(expression):
            return str(super().attimezone_sql(expression))
        # DATETIME(timestamp, zone): the wall-clock time of the instant in that zone.
        return f"DATETIME({self.sql(expression, 'this')}, {self.sql(expression, 'zone')})"

    def timestamptrunc_sql(self, expression: exp.TimestampTrunc) -> str:
        # This server truncates wall-clock times (DATETIME); a week starts on Monday, as in Cube.
        unit = expression.args["unit"].name.upper()
        return f"DATETIME_TRUNC({self.sql(expression, 'this')}, {'ISOWEEK' if unit == 'WEEK' else unit})"

    def extract_sql(self, expression: exp.Extract) -> str:
        if expression.this.name.upper() != "EPOCH":
            return str(super().extract_sql(expression))
        # Seconds since 1970 of a wall-clock time, read as UTC (both sides of a difference are).
        return f"UNIX_MICROS(CAST({self.sql(expression, 'expression')} AS TIMESTAMP)) / 1000000"

    def interval_sql(self, expression: exp.Interval) -> str:
        amount = warehouses.local_text(expression.this)
        unit = expression.args.get("unit")
        if amount is not None and unit is not None and amount.lstrip("-").isdigit():
            return f"INTERVAL {int(amount)} {unit.name.upper()}"  # BigQuery's interval takes a number
        return str(super().interval_sql(expression))

    def add_sql(self, expression: exp.Add) -> str:
        step = warehouses.interval_step_sql(self, expression, "DATETIME_ADD({origin}, INTERVAL {count} {unit})")
        return step or self._calendar_step(expression, "DATETIME_ADD") or str(super().add_sql(expression))

    def sub_sql(self, expression: exp.Sub) -> str:
        return self._calendar_step(expression, "DATETIME_SUB") or str(super().sub_sql(expression))

    def _calendar_step(self, expression: exp.Add | exp.Sub, function: str) -> str | None:
        """A stored time moved by weeks, months, quarters or years (a time shift): BigQuery's TIMESTAMP arithmetic
        stops at days, so the step is taken on its DATETIME in UTC (as Cube does). The rolling windows' series
        (``series.date_from``/``date_to``) are DATETIMEs already and keep the operator."""
        interval = expression.expression
        if not isinstance(interval, exp.Interval) or interval.args.get("unit") is None:
            return None
        unit = interval.args["unit"].name.upper()
        this = expression.this
        if unit not in _CALENDAR_UNITS or (isinstance(this, exp.Column) and this.table == "series"):
            return None
        moved = f"{function}(CAST({self.sql(this)} AS DATETIME), {self.sql(interval)})"
        return f"CAST({moved} AS TIMESTAMP)"

    def escape_sql(self, expression: exp.Escape) -> str:
        if warehouses.local_text(expression.expression) == "\\":
            return str(self.sql(expression, "this"))  # BigQuery's LIKE has no ESCAPE clause; "\" is its escape
        return str(super().escape_sql(expression))


class BigQueryWriter(BigQuery):
    """BigQuery's sqlglot dialect, rendering this server's queries as BigQuery runs them."""

    Generator = _Generator


WRITER = BigQueryWriter


class BigQuerySource(warehouses.DriverSource):
    """A BigQuery project; one client (thread-safe), one query job per statement. Its connect arguments are the
    settings of :func:`settings_for` (the client's arguments, the default dataset, the job limits)."""

    dialect = DIALECT
    KIND = "BigQuery"

    def __init__(self, settings: dict[str, Any], driver: Any) -> None:
        super().__init__(settings, driver)
        self._settings = settings
        self._client: Any = None

    def connect(self, **changes: Any) -> Any:
        """A new client of the project."""
        try:
            return self._driver.Client(**{**self._settings["client"], **changes})
        except Exception as exc:  # no credentials found, an unreadable key
            logger.warning("BigQuery data source unavailable: %s", type(exc).__name__)
            raise DataSourceUnavailable("Data source is unavailable: its credentials cannot be used") from None

    @property
    def request_timeout(self) -> float:
        return float(self._settings["request_timeout"])

    def _get_client(self) -> Any:
        if self._client is None:
            self._client = self.connect()
        return self._client

    def job_config(self, params: Sequence[Any], timeout_s: float) -> Any:
        """The query job's configuration: parameters, time zone, timeout, default dataset."""
        bigquery = self._driver
        config = bigquery.QueryJobConfig(
            query_parameters=[
                bigquery.ScalarQueryParameter(f"p{i}", parameter_type(value), value)
                for i, value in enumerate(params, start=1)
            ],
            use_legacy_sql=False,
            job_timeout_ms=max(1000, round(timeout_s * 1000)),
            connection_properties=[bigquery.ConnectionProperty("time_zone", "UTC")],
            labels={"client": "embedadmin"},
        )
        if self._settings.get("dataset"):
            config.default_dataset = self._settings["dataset"]
        if self._settings.get("maximum_bytes_billed"):
            config.maximum_bytes_billed = self._settings["maximum_bytes_billed"]
        return config

    def execute(
        self, sql: str, params: Sequence[Any], *, timeout_s: float, cancel: CancelScope | None = None
    ) -> QueryResult:
        client = self._get_client()
        request_timeout = self._settings["request_timeout"]
        try:
            job = client.query(sql, job_config=self.job_config(params, timeout_s), timeout=request_timeout)
        except Exception as exc:
            raise error_for(exc, timeout_s) from None
        try:
            with warehouses.stoppable(timeout_s, cancel, job.cancel) as stops:
                try:
                    # The job's own timeout stops it on the server; this wait outlasts it a little.
                    result = job.result(timeout=timeout_s + request_timeout)
                    schema = list(result.schema or [])
                    rows = [tuple(row.values()) for row in result]
                except Exception as exc:
                    raise stops.error(timeout_s) or error_for(exc, timeout_s) from None
        except QueryCancelled:
            job.cancel()  # a scope cancelled before the job was submitted
            raise
        return QueryResult(
            columns=[field.name for field in schema],
            types=[_TYPES.get(str(field.field_type).upper(), "other") for field in schema],
            rows=rows,
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def error_for(exc: Exception, timeout_s: float) -> DataSourceError:
    """The error a caller sees: BigQuery's reason for a refused statement (never the request URL or a key)."""
    from concurrent.futures import TimeoutError as WaitTimeout

    code = getattr(exc, "code", None)
    errors = getattr(exc, "errors", None) or []
    reason = errors[0].get("reason") if errors and isinstance(errors[0], dict) else None
    if isinstance(exc, WaitTimeout) or reason == "timeout":
        return QueryTimeout(timeout_s)
    if reason == "stopped":
        return QueryCancelled()
    kind = type(exc).__module__
    if (
        code in (401, 403, 429)
        or (isinstance(code, int) and code >= 500)
        or kind.startswith(("google.auth", "requests"))
    ):
        logger.warning("BigQuery data source unavailable: %s %s", type(exc).__name__, code)
        return DataSourceUnavailable("Data source is unavailable")
    if isinstance(exc, OSError):
        logger.warning("BigQuery data source unavailable: %s", type(exc).__name__)
        return DataSourceUnavailable("Data source is unavailable")
    message = errors[0].get("message") if errors and isinstance(errors[0], dict) else None
    if not message:
        logger.warning("BigQuery query failed: %s", type(exc).__name__)
    return DataSourceError(str(message).splitlines()[0] if message else "Query failed")


def _credentials(options: dict[str, str], driver_credentials: Any) -> Any:
    if "credentials_file" in options and "credentials_base64" in options:
        raise DataSourceError("BigQuery URL has both credentials_file and credentials_base64: use one")
    try:
        if "credentials_file" in options:
            return driver_credentials.Credentials.from_service_account_file(options["credentials_file"], scopes=_SCOPES)
        if "credentials_base64" in options:
            info = json.loads(base64.b64decode(options["credentials_base64"], validate=True))
            return driver_credentials.Credentials.from_service_account_info(info, scopes=_SCOPES)
    except (OSError, ValueError, binascii.Error, KeyError):
        # The key's content is never part of the message.
        raise DataSourceError("BigQuery service account key cannot be read") from None
    return None


def settings_for(url: str, driver_credentials: Any) -> dict[str, Any]:
    """The client's arguments and the job settings for a ``bigquery:`` URL."""
    parts = urlsplit(url)
    options = warehouses.url_options(parts.query, _OPTIONS, "BigQuery")
    if parts.username or parts.password:
        raise DataSourceError("BigQuery URL carries no user or password: use credentials_file or credentials_base64")
    project = parts.hostname
    if not project:
        raise DataSourceError("BigQuery URL names no project: bigquery://project/dataset")
    path = warehouses.path_parts(parts.path)
    if len(path) > 1:
        raise DataSourceError("BigQuery URL path is /dataset")
    client: dict[str, Any] = {"project": project, "credentials": _credentials(options, driver_credentials)}
    if options.get("location"):
        client["location"] = options["location"]
    settings: dict[str, Any] = {
        "client": client,
        "dataset": f"{project}.{path[0]}" if path else None,
        "request_timeout": warehouses.number(options, "request_timeout", 30.0),
    }
    if "maximum_bytes_billed" in options:
        settings["maximum_bytes_billed"] = int(warehouses.number(options, "maximum_bytes_billed", 1))
    return settings


def open_source(url: str) -> BigQuerySource:
    """The source a ``bigquery:`` URL names."""
    driver = warehouses.import_driver("google.cloud.bigquery", "google-cloud-bigquery", "BigQuery")
    service_account = warehouses.import_driver("google.oauth2.service_account", "google-cloud-bigquery", "BigQuery")
    return BigQuerySource(settings_for(url, service_account), driver)
