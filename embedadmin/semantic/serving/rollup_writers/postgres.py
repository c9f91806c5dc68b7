"""Rollup tables in a schema of a PostgreSQL data source: written in one transaction (PostgreSQL's DDL is
transactional), so a table exists complete or not at all; typed exactly as the build statement's columns
(``format_type``), indexed (``CREATE INDEX`` per ``indexes`` entry) and analysed; sizes from
``pg_total_relation_size``; marked by ``COMMENT ON TABLE``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.serving.rollup_source import Ddl, collect_unreferenced, stopped_by
from embedadmin.semantic.serving.rollup_store import BuildStopped, WrittenPartition
from embedadmin.semantic.sources.base import CancelScope, DataSourceUnavailable
from embedadmin.semantic.sources.postgres import libpq_conninfo

logger = logging.getLogger(__name__)

MAX_IDENTIFIER = 63  # NAMEDATALEN - 1


def _message(exc: psycopg.Error, default: str) -> str:
    primary = exc.diag.message_primary if getattr(exc, "diag", None) else None
    return primary or default


class PostgresRollupWriter:
    """Writes rollup tables into a schema of a PostgreSQL data source, through a connection opened for the build
    (autocommit off where it writes: one transaction per table), never one of the query path's read-only pool."""

    dialect = "postgres"
    ddl = Ddl("postgres")

    def __init__(self, url: str) -> None:
        self._conninfo, _pool = libpq_conninfo(url)

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(
                self._conninfo,
                autocommit=True,
                cursor_factory=psycopg.RawCursor,
                options="-c TimeZone=UTC",
                connect_timeout=10,
            )
        except psycopg.OperationalError as exc:
            logger.warning("PostgreSQL data source unavailable for a rollup build: %s", exc)
            raise DataSourceUnavailable("Data source is unavailable") from None

    def write(
        self,
        *,
        schema: str,
        table: str,
        sql: str,
        params: Sequence[Any],
        columns: Sequence[str],
        indexes: Sequence[Sequence[str]],
        timeout_s: float,
        keep_going: Callable[[], bool],
        cancel: CancelScope | None = None,
    ) -> WrittenPartition:
        """Create ``schema.table`` (``columns``, typed as the build statement's), fill it from ``sql`` and index it
        in one transaction: it exists complete or not at all. ``keep_going()`` False before the commit rolls it
        back (:class:`BuildStopped`); so does ``cancel`` cancelled (the build's lease lost), which stops the running
        statement by a cancel request."""
        ddl = self.ddl
        committed = False
        try:
            with self._connect() as connection:
                found = connection.execute("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]).fetchone()
                if found is None:
                    connection.execute(ddl.create_schema(schema))
                with (
                    stopped_by(cancel, connection.cancel_safe),
                    connection.transaction(),
                    connection.cursor() as cursor,
                ):
                    cursor.execute(f"SET LOCAL statement_timeout = {max(1, round(timeout_s * 1000))}")
                    cursor.execute(ddl.described(sql), list(params))
                    result = cursor.pgresult
                    assert result is not None
                    if result.nfields != len(columns):
                        raise DataSourceError("the build statement's columns do not match the rollup's")
                    oids = [result.ftype(i) for i in range(result.nfields)]
                    mods = [result.fmod(i) for i in range(result.nfields)]
                    cursor.execute(
                        "SELECT format_type(t, m) FROM unnest($1::oid[], $2::int[]) WITH ORDINALITY AS c(t, m, n) "
                        "ORDER BY n",
                        [oids, mods],
                    )
                    types = [row[0] for row in cursor.fetchall()]
                    cursor.execute(ddl.create_table(schema, table, columns, types))
                    cursor.execute(ddl.insert_select(schema, table, sql), list(params))
                    rows = max(cursor.rowcount, 0)
                    for indexed in indexes:
                        cursor.execute(ddl.create_index(schema, table, indexed))
                    cursor.execute(f"ANALYZE {ddl.table(schema, table)}")
                    if not keep_going():
                        raise BuildStopped()
                committed = True
                size = connection.execute(
                    "SELECT pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = "
                    "c.relnamespace WHERE n.nspname = $1 AND c.relname = $2",
                    [schema, table],
                ).fetchone()
        except BuildStopped:
            # A scope cancelled while the transaction committed leaves the table written: it is dropped too.
            if committed or (cancel is not None and cancel.cancelled):
                self.drop(schema, [table])
            raise
        except psycopg.errors.QueryCanceled:
            raise QueryTimeout(timeout_s) from None
        except psycopg.OperationalError as exc:
            logger.warning("PostgreSQL data source failed during a rollup build: %s", exc)
            raise DataSourceUnavailable("Data source is unavailable") from None
        except psycopg.Error as exc:
            raise DataSourceError(_message(exc, "Rollup build failed")) from None
        return WrittenPartition(file=table, rows=rows, bytes=int(size[0]) if size else 0)

    def drop(self, schema: str, tables: Sequence[str]) -> None:
        """Drop ``tables`` of ``schema`` that exist (waiting at most 5 s for the queries reading one)."""
        if not tables:
            return
        try:
            with self._connect() as connection:
                connection.execute("SET lock_timeout = '5s'")
                for table in tables:
                    connection.execute(self.ddl.drop_table(schema, table))
        except psycopg.Error as exc:
            raise DataSourceError(_message(exc, "Dropping a rollup table failed")) from None

    def unreferenced(self, schema: str, prefix: str, referenced: Callable[[], set[str]], *, older_than_s: float) -> int:
        """Drop the tables of ``schema`` named with ``prefix`` that ``referenced()`` (asked once they are listed) does
        not hold and that were found unreferenced at least ``older_than_s`` ago; mark those found for the first time
        (:func:`collect_unreferenced`). Returns how many dropped."""
        pattern = prefix.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%") + "%"
        try:
            with self._connect() as connection:
                found = connection.execute(
                    "SELECT c.relname, obj_description(c.oid, 'pg_class') FROM pg_class c JOIN pg_namespace n ON "
                    "n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname LIKE $2",
                    [schema, pattern],
                ).fetchall()
                connection.execute("SET lock_timeout = '5s'")
                return collect_unreferenced(
                    found,
                    referenced,
                    older_than_s=older_than_s,
                    mark=lambda name, note: connection.execute(
                        f"COMMENT ON TABLE {self.ddl.table(schema, name)} IS {self.ddl.literal(note)}"
                    ),
                    drop=lambda name: connection.execute(self.ddl.drop_table(schema, name)),
                )
        except psycopg.Error as exc:
            logger.warning("rollup tables of schema %s not collected: %s", schema, exc)
            return 0


def open_writer(url: str) -> PostgresRollupWriter:
    return PostgresRollupWriter(url)
