"""PostgreSQL databases.

``postgresql://user:password@host:port/db`` (``postgres://`` too). Query options ``pool_min_size`` and
``pool_max_size`` size the connection pool (one per URL), ``pool_timeout`` (seconds, default 10) bounds the wait for a
connection (a server that is down answers 503 after it); any other option goes to libpq. Every query runs in a
read-only transaction with ``statement_timeout`` set for it, as a prepared statement, so it cannot smuggle a second
command (such as ``COMMIT; DROP ...``). The pool checks a connection before it hands it out
(:class:`~embedadmin.core.pgpool.CheckedConnectionPool`): after the server restarts, no query meets a dead connection;
a connection that breaks during a query is discarded, never handed to the next one. A :class:`~.base.CancelScope`
sends a cancel request on its own connection (``connection.cancel_safe()``).

SQL: PostgreSQL's dialect; parameters ``$1``, ``$2``... bound server-side.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import psycopg_pool

from embedadmin.core.pgpool import CheckedConnectionPool, is_unavailable_error, unavailable_reason
from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.sources.base import (
    CancelScope,
    DataSourceUnavailable,
    QueryCancelled,
    QueryResult,
    cancellable,
    value_type,
)

logger = logging.getLogger(__name__)

DIALECT = "postgres"
SCHEMES = ("postgresql", "postgres")


class PostgresSource:
    """A PostgreSQL database behind a psycopg pool; read-only transactions with a statement timeout."""

    dialect = DIALECT

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
                    cancellable(cancel, cancel_query) as cancelled,
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


POOL_OPTIONS = ("pool_min_size", "pool_max_size", "pool_timeout")


def libpq_conninfo(url: str) -> tuple[str, dict[str, str]]:
    """A ``postgresql:`` URL as libpq's connection string, and the pool's own options (:data:`POOL_OPTIONS`) it
    carried, which libpq does not know."""
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query))
    pool = {name: options.pop(name) for name in POOL_OPTIONS if name in options}
    return urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(options), "")), pool


def open_source(url: str) -> PostgresSource:
    """The source a ``postgresql:`` URL names."""
    conninfo, options = libpq_conninfo(url)
    try:
        min_size = int(options.get("pool_min_size", "1"))
        max_size = int(options.get("pool_max_size", "10"))
    except ValueError:
        raise DataSourceError("pool_min_size and pool_max_size must be integers") from None
    try:
        pool_timeout_s = float(options.get("pool_timeout", "10"))
    except ValueError:
        raise DataSourceError("pool_timeout must be a number of seconds") from None
    if not 0 <= min_size <= max_size or max_size < 1:
        raise DataSourceError("Pool sizes must satisfy 0 <= pool_min_size <= pool_max_size, pool_max_size >= 1")
    return PostgresSource(conninfo, min_size=min_size, max_size=max_size, pool_timeout_s=pool_timeout_s)
