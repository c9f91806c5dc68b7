"""Rollups kept in the data source itself: the second home of a deployment's pre-aggregations (Cube's
``CUBEJS_PRE_AGGREGATIONS_SCHEMA``), beside the DuckDB store of :mod:`.rollup_store`.

A deployment whose ``pre_aggregations_schema`` is set (:class:`RollupHome`) has each built partition as a table of
that schema of its data source, named ``r<deployment>_<cube>__<rollup>_<partition>_<structure>_<build>`` (63
characters at most, unique per build). A build writes a new table through a connection of its own that may write
(:class:`PostgresRollupWriter`, never the query path's pool, whose transactions are read only), in one transaction:
the table is created, filled from the rollup's build statement and indexed, then committed, complete; only then does
the partition's pointer row swap to it (:mod:`.pre_aggregations`). A reader sees the old table or the new one: a
table no row names is never read. The garbage collection drops the tables no row names any more: a replaced table,
or one a killed build committed but never swapped in, marked first (a comment with the time it was found
unreferenced) and dropped once the grace period has passed since; a build taking a dead build's lease over drops the
table that build was writing at once.

Queries a rollup answers run on the data source, through its ordinary read-only source, rendered in its dialect
(:func:`embedadmin.semantic.sql.rollups.rollup_model` over these tables). Why the build writes with the same URL on a
connection of its own: ADR 0018.

The DDL is rendered with sqlglot in the source's dialect (:func:`ddl`), so the statements a warehouse would run are
the same function's output; only PostgreSQL has a writer that runs them (:data:`WRITERS`).
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import psycopg
from sqlglot import exp

from embedadmin.accounts.models import Deployment
from embedadmin.core.data_source_kinds import QUERIED_SCHEMES, holds_rollups
from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.serving.rollup_store import BuildStopped, WrittenPartition
from embedadmin.semantic.sources.base import DataSourceUnavailable
from embedadmin.semantic.sources.postgres import libpq_conninfo
from embedadmin.semantic.sources.registry import writer

logger = logging.getLogger(__name__)

MAX_IDENTIFIER = 63  # PostgreSQL's (and the shortest of the warehouses' that hold rollups)
UNREFERENCED = "embedadmin rollup unreferenced since "
_BUILT_AT = re.compile(re.escape(UNREFERENCED) + r"(\d+)")


@dataclass(frozen=True)
class RollupHome:
    """Where a deployment's rollups live: the DuckDB store (``schema`` empty) or ``schema`` of its data source."""

    schema: str = ""

    @property
    def in_source(self) -> bool:
        return bool(self.schema)

    @property
    def key(self) -> str:
        """What the home adds to a rollup's structure digest: nothing for the store (its digests are as they were)."""
        return f"source:{self.schema}" if self.schema else ""


STORE = RollupHome()


def rollup_home(deployment: Deployment) -> RollupHome:
    return RollupHome(deployment.pre_aggregations_schema)


def table_prefix(deployment_id: int) -> str:
    """The start of every rollup table of a deployment (the garbage collection lists only these)."""
    return f"r{int(deployment_id)}_"


def source_table_name(deployment_id: int, rollup_table: str, partition: str, structure: str, build: str) -> str:
    """A new table's name: the deployment, the rollup (shortened to fit), partition, structure and build."""
    tail = f"_{partition}_{structure[:8]}_{build[:8]}" if partition else f"_{structure[:8]}_{build[:8]}"
    prefix = table_prefix(deployment_id)
    room = MAX_IDENTIFIER - len(prefix) - len(tail)
    name = rollup_table
    if len(name) > room:  # keep it unique among the deployment's rollups: a digest of the whole name
        digest = hashlib.sha256(rollup_table.encode()).hexdigest()[:6]
        name = f"{rollup_table[: room - 7]}_{digest}"
    return f"{prefix}{name}{tail}".lower()


# -- the statements, in the source's dialect ------------------------------------------------------------------------


def _table(schema: str, table: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(table, quoted=True), db=exp.to_identifier(schema, quoted=True))


@dataclass(frozen=True)
class Ddl:
    """The statements that build and drop a rollup table in a source's dialect."""

    dialect: str

    def render(self, tree: exp.Expr) -> str:
        return tree.sql(dialect=writer(self.dialect))

    def create_schema(self, schema: str) -> str:
        schema_name = exp.Table(this=exp.to_identifier(schema, quoted=True))
        return self.render(exp.Create(this=schema_name, kind="SCHEMA", exists=True))

    def create_table(self, schema: str, table: str, columns: Sequence[str], types: Sequence[str]) -> str:
        """``CREATE TABLE`` with ``types`` as the source spelled them (PostgreSQL's ``format_type``: exact)."""
        definitions = ", ".join(
            f"{self.render(exp.to_identifier(name, quoted=True))} {kind}"
            for name, kind in zip(columns, types, strict=True)
        )
        return f"CREATE TABLE {self.render(_table(schema, table))} ({definitions})"

    def insert_select(self, schema: str, table: str, build_sql: str) -> str:
        """``INSERT INTO schema.table SELECT * FROM (<build statement>) AS b``: the build statement as it is
        rendered (its parameters stay bound)."""
        into = self.render(_table(schema, table))
        return f"INSERT INTO {into} SELECT * FROM ({build_sql}) AS {self._alias()}"  # noqa: S608 (compiled, quoted)

    def create_table_as(self, schema: str, table: str, build_sql: str) -> str:
        """``CREATE TABLE schema.table AS SELECT * FROM (<build statement>) AS b`` (warehouses, whose drivers bind
        parameters into any statement)."""
        into = self.render(_table(schema, table))
        return f"CREATE TABLE {into} AS SELECT * FROM ({build_sql}) AS {self._alias()}"  # noqa: S608 (compiled, quoted)

    def described(self, build_sql: str) -> str:
        """The build statement's columns without its rows (``LIMIT 0``)."""
        return f"SELECT * FROM ({build_sql}) AS {self._alias()} LIMIT 0"  # noqa: S608 (a compiled build statement)

    def create_index(self, schema: str, table: str, columns: Sequence[str]) -> str:
        listed = ", ".join(self.render(exp.to_identifier(c, quoted=True)) for c in columns)
        return f"CREATE INDEX ON {self.render(_table(schema, table))} ({listed})"

    def drop_table(self, schema: str, table: str) -> str:
        return self.render(exp.Drop(tables=[_table(schema, table)], kind="TABLE", exists=True))

    def _alias(self) -> str:
        return self.render(exp.to_identifier("b", quoted=True))


# -- writing tables -------------------------------------------------------------------------------------------------


class SourceTables(Protocol):
    """What the build and the garbage collection need of a data source that holds rollups."""

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
    ) -> WrittenPartition: ...

    def drop(self, schema: str, tables: Sequence[str]) -> None: ...

    def unreferenced(self, schema: str, prefix: str, referenced: set[str], *, older_than_s: float) -> int: ...


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
    ) -> WrittenPartition:
        """Create ``schema.table`` (``columns``, typed as the build statement's), fill it from ``sql`` and index it
        in one transaction: it exists complete or not at all. ``keep_going()`` False before the commit rolls it
        back (:class:`BuildStopped`)."""
        ddl = self.ddl
        committed = False
        try:
            with self._connect() as connection:
                found = connection.execute("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]).fetchone()
                if found is None:
                    connection.execute(ddl.create_schema(schema))
                with connection.transaction(), connection.cursor() as cursor:
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
                    cursor.execute(f"ANALYZE {ddl.render(_table(schema, table))}")
                    if not keep_going():
                        raise BuildStopped()
                committed = True
                size = connection.execute(
                    "SELECT pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = "
                    "c.relnamespace WHERE n.nspname = $1 AND c.relname = $2",
                    [schema, table],
                ).fetchone()
        except BuildStopped:
            if committed:
                self.drop(schema, [table])
            raise
        except psycopg.errors.QueryCanceled:
            raise QueryTimeout(timeout_s) from None
        except psycopg.OperationalError as exc:
            logger.warning("PostgreSQL data source failed during a rollup build: %s", exc)
            raise DataSourceUnavailable("Data source is unavailable") from None
        except psycopg.Error as exc:
            primary = exc.diag.message_primary if exc.diag else None
            raise DataSourceError(primary or "Rollup build failed") from None
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
            primary = exc.diag.message_primary if getattr(exc, "diag", None) else None
            raise DataSourceError(primary or "Dropping a rollup table failed") from None

    def unreferenced(self, schema: str, prefix: str, referenced: set[str], *, older_than_s: float) -> int:
        """Drop the tables of ``schema`` named with ``prefix`` that ``referenced`` does not hold and that were found
        unreferenced at least ``older_than_s`` ago; mark those found for the first time. Returns how many dropped."""
        pattern = prefix.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%") + "%"
        now = int(time.time())
        dropped = 0
        try:
            with self._connect() as connection:
                found = connection.execute(
                    "SELECT c.relname, obj_description(c.oid, 'pg_class') FROM pg_class c JOIN pg_namespace n ON "
                    "n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname LIKE $2",
                    [schema, pattern],
                ).fetchall()
                connection.execute("SET lock_timeout = '5s'")
                for name, comment in found:
                    if name in referenced:
                        continue
                    since = _BUILT_AT.match(comment or "")
                    qualified = self.ddl.render(_table(schema, name))
                    if since is None:
                        note = exp.Literal.string(f"{UNREFERENCED}{now}").sql(dialect="postgres")
                        connection.execute(f"COMMENT ON TABLE {qualified} IS {note}")
                    elif now - int(since.group(1)) >= older_than_s:
                        connection.execute(self.ddl.drop_table(schema, name))
                        dropped += 1
        except psycopg.Error as exc:
            logger.warning("rollup tables of schema %s not collected: %s", schema, exc)
        return dropped


# The dialect of a source that can hold rollups (core.data_source_kinds.ROLLUP_HOME_DIALECTS) -> its rollup writer.
WRITERS: dict[str, Callable[[str], SourceTables]] = {
    "postgres": PostgresRollupWriter,
}


def source_tables(url: str) -> SourceTables:
    """The writer of rollup tables for a data source URL; :class:`DataSourceError` for a source that cannot hold
    them (its deployment keeps its rollups in the store)."""
    scheme = urlsplit(url).scheme.lower()
    found = WRITERS.get(QUERIED_SCHEMES.get(scheme, "")) if holds_rollups(url) else None
    if found is None:
        raise DataSourceError(
            f"rollups cannot live in a {scheme or 'duckdb'} data source: only PostgreSQL holds them in a schema of "
            "its own (set the deployment's pre-aggregation storage to the store)"
        )
    return found(url)
