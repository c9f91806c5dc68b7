"""Rollups kept in the data source itself: the second home of a deployment's pre-aggregations (Cube's
``CUBEJS_PRE_AGGREGATIONS_SCHEMA``), beside the DuckDB store of :mod:`.rollup_store`.

A deployment whose ``pre_aggregations_schema`` is set (:class:`RollupHome`) has each built partition as a table of
that schema of its data source (a database on MySQL and ClickHouse, a dataset on BigQuery), named
``r<deployment>_<cube>__<rollup>_<partition>_<structure>_<build>`` (:data:`MAX_IDENTIFIER` characters at most, unique
per build). A build writes a new table through a connection of its own that may write (the writer of the source's
dialect, :mod:`.rollup_writers`; never the query path's pool, whose transactions are read only); only once the table
is complete does the partition's pointer row swap to it (:mod:`.pre_aggregations`). A reader sees the old table or
the new one: a table no row names is never read. PostgreSQL writes the table in one transaction; where DDL is not
transactional (MySQL, ClickHouse, the warehouses) the table is created from the build statement in one
``CREATE TABLE ... AS SELECT`` and a build that fails or is stopped drops what it wrote (:func:`written_whole`).

The garbage collection drops the tables no row names any more: a replaced table, or one a killed build wrote but never
swapped in, marked first (a table comment with the time it was found unreferenced) and dropped once the grace period
has passed since (:func:`collect_unreferenced`); a build taking a dead build's lease over drops the table that build
was writing at once.

Queries a rollup answers run on the data source, through its ordinary read-only source, rendered in its dialect
(:func:`embedadmin.semantic.sql.rollups.rollup_model` over these tables). Why the build writes with the same URL on a
connection of its own: ADR 0018.

What is common to every dialect lives here: the statements rendered with sqlglot in the source's dialect
(:class:`Ddl`), what a writer does (:class:`SourceTables`), the build of a table where DDL is not transactional
(:class:`StatementWriter`) and the mark-then-drop collection. What differs (the driver, the session, sizes, the
comment statement, indexes) is in each dialect's module of :mod:`.rollup_writers`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlglot import exp

from embedadmin.accounts.models import Deployment
from embedadmin.semantic.errors import DataSourceError
from embedadmin.semantic.serving.rollup_store import BuildStopped, WrittenPartition
from embedadmin.semantic.sources.base import CancelScope, QueryCancelled, cancellable
from embedadmin.semantic.sources.registry import writer

logger = logging.getLogger(__name__)

# The longest table name a build makes: PostgreSQL's limit, the shortest of the sources that hold rollups (MySQL 64,
# ClickHouse and the warehouses more: each writer module says its own, MAX_IDENTIFIER).
MAX_IDENTIFIER = 63
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


def _identifier(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


@dataclass(frozen=True)
class Ddl:
    """The statements that build and drop a rollup table in a source's dialect."""

    dialect: str

    def render(self, tree: exp.Expr) -> str:
        return tree.sql(dialect=writer(self.dialect))

    def create_schema(self, schema: str) -> str:
        """``CREATE SCHEMA IF NOT EXISTS`` (ClickHouse: ``CREATE DATABASE``; MySQL's schema is a database too)."""
        schema_name = exp.Table(this=_identifier(schema))
        return self.render(exp.Create(this=schema_name, kind="SCHEMA", exists=True))

    def create_table(self, schema: str, table: str, columns: Sequence[str], types: Sequence[str]) -> str:
        """``CREATE TABLE`` with ``types`` as the source spelled them (PostgreSQL's ``format_type``: exact)."""
        definitions = ", ".join(f"{self.identifier(name)} {kind}" for name, kind in zip(columns, types, strict=True))
        return f"CREATE TABLE {self.table(schema, table)} ({definitions})"

    def table(self, schema: str, table: str) -> str:
        """``schema.table``, quoted."""
        return self.render(_table(schema, table))

    def identifier(self, name: str) -> str:
        return self.render(_identifier(name))

    def literal(self, text: str) -> str:
        """A string literal (a table comment)."""
        return self.render(exp.Literal.string(text))

    def insert_select(self, schema: str, table: str, build_sql: str) -> str:
        """``INSERT INTO schema.table SELECT * FROM (<build statement>) AS b``: the build statement as it is
        rendered (its parameters stay bound)."""
        into = self.table(schema, table)
        return f"INSERT INTO {into} SELECT * FROM ({build_sql}) AS {self._alias()}"  # noqa: S608 (compiled, quoted)

    def create_table_as(
        self, schema: str, table: str, build_sql: str, columns: Sequence[str], *, options: str = ""
    ) -> str:
        """``CREATE TABLE schema.table [options] AS SELECT b.c1, ... FROM (<build statement>) AS b``: the table is
        the build statement's rows, its columns typed by the source, named and ordered as the rollup's (a build
        statement whose columns are named otherwise fails here, never fills the wrong column). The sources whose DDL
        is not transactional; their drivers bind the build statement's parameters inside it."""
        into = self.table(schema, table)
        listed = ", ".join(self.render(exp.column(_identifier(c), table=_identifier("b"))) for c in columns)
        tail = f" {options}" if options else ""
        return f"CREATE TABLE {into}{tail} AS SELECT {listed} FROM ({build_sql}) AS {self._alias()}"  # noqa: S608

    def described(self, build_sql: str) -> str:
        """The build statement's columns without its rows (``LIMIT 0``)."""
        return f"SELECT * FROM ({build_sql}) AS {self._alias()} LIMIT 0"  # noqa: S608 (a compiled build statement)

    def create_index(self, schema: str, table: str, columns: Sequence[str]) -> str:
        listed = ", ".join(self.identifier(c) for c in columns)
        return f"CREATE INDEX ON {self.table(schema, table)} ({listed})"

    def drop_table(self, schema: str, table: str) -> str:
        return self.render(exp.Drop(tables=[_table(schema, table)], kind="TABLE", exists=True))

    def _alias(self) -> str:
        return self.identifier("b")


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
        cancel: CancelScope | None = None,
    ) -> WrittenPartition: ...

    def drop(self, schema: str, tables: Sequence[str]) -> None: ...

    def unreferenced(
        self, schema: str, prefix: str, referenced: Callable[[], set[str]], *, older_than_s: float
    ) -> int: ...


def unreferenced_note(now: int) -> str:
    """The comment that marks a table found unreferenced at ``now`` (seconds since 1970)."""
    return f"{UNREFERENCED}{now}"


def collect_unreferenced(
    found: Sequence[tuple[str, str | None]],
    referenced: Callable[[], set[str]],
    *,
    older_than_s: float,
    mark: Callable[[str, str], object],
    drop: Callable[[str], object],
) -> int:
    """The garbage collection of one schema: of the tables ``found`` (name, comment; listed before), those
    ``referenced()`` does not hold are marked (``mark(name, note)``) when found for the first time, and dropped
    (``drop(name)``) once ``older_than_s`` has passed since they were marked. Returns how many were dropped.

    ``referenced()`` is asked after the listing: a table swapped in while the schema was listed is in use, never
    marked. A table in use that carries a mark (marked while a build wrote it under a lease that looked dead, then
    swapped in) has its mark cleared (``mark(name, "")``): its grace period starts when it is found unreferenced
    again, never from the old mark."""
    in_use = referenced()
    now = int(time.time())
    dropped = 0
    for name, comment in found:
        since = _BUILT_AT.search(comment or "")  # BigQuery gives its description as a quoted literal
        if name in in_use:
            if since is not None:
                mark(name, "")
            continue
        if since is None:
            mark(name, unreferenced_note(now))
        elif now - int(since.group(1)) >= older_than_s:
            drop(name)
            dropped += 1
    return dropped


class Session(Protocol):
    """A build's connection to a source whose DDL is not transactional, as :class:`StatementWriter` uses it."""

    def run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run one statement (its parameters bound by the driver): the columns and rows it answers."""
        ...

    def interrupt(self) -> None:
        """Stop the statement :meth:`run` runs now, from another thread (nothing where the driver has no cancel)."""
        ...


class StatementWriter:
    """A writer for a source whose DDL is not transactional (MySQL, ClickHouse, the warehouses): the table is
    created from the build statement by one ``CREATE TABLE ... AS SELECT`` through a connection of the build's own,
    and dropped again when anything after fails or the build is stopped (:func:`written_whole`). A dialect's module
    says how to open that connection (:meth:`session`), what the table's definition adds (:meth:`table_options`,
    :meth:`index_statements`), how big the table is (:meth:`measured`), which tables a schema holds with their
    comments (:meth:`listed`) and how a comment is set (:meth:`comment_statement`)."""

    ddl: Ddl
    KIND = "data source"

    def session(self, timeout_s: float) -> contextlib.AbstractContextManager[Session]:
        raise NotImplementedError

    def ensure_schema(self, session: Session, schema: str) -> None:
        session.run(self.ddl.create_schema(schema))

    def table_options(self, indexes: Sequence[Sequence[str]]) -> str:
        """What ``CREATE TABLE`` says between the table's name and ``AS`` (ClickHouse's engine)."""
        return ""

    def index_statements(self, session: Session, schema: str, table: str, indexes: Sequence[Sequence[str]]) -> None:
        """Index the written table (a source without indexes ignores ``indexes``: its docs say so)."""

    def measured(self, session: Session, schema: str, table: str, answer: list[tuple[Any, ...]]) -> tuple[int, int]:
        """The table's rows and bytes (``answer``: what ``CREATE TABLE ... AS SELECT`` answered)."""
        raise NotImplementedError

    def listed(self, session: Session, schema: str) -> list[tuple[str, str | None]]:
        """Every table of ``schema`` with its comment."""
        raise NotImplementedError

    def comment_statement(self, schema: str, table: str, text: str) -> str:
        return f"COMMENT ON TABLE {self.ddl.table(schema, table)} IS {self.ddl.literal(text)}"

    def drop_statement(self, schema: str, table: str) -> str:
        return self.ddl.drop_table(schema, table)

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
        """Create ``schema.table`` as the rows of ``sql`` (its columns named ``columns``) and index it; on any failure,
        ``keep_going()`` False once written, or ``cancel`` cancelled (the running statement is stopped in the source:
        :meth:`Session.interrupt`), the table is dropped (:class:`BuildStopped` for the last two)."""
        with self.session(timeout_s) as session:
            self.ensure_schema(session, schema)

            def create() -> tuple[int, int]:
                options = self.table_options(indexes)
                with stopped_by(cancel, session.interrupt):
                    statement = self.ddl.create_table_as(schema, table, sql, columns, options=options)
                    _, answer = session.run(statement, params)
                    self.index_statements(session, schema, table, indexes)
                    return self.measured(session, schema, table, answer)

            rows, size = written_whole(create, lambda: session.run(self.drop_statement(schema, table)), keep_going)
        return WrittenPartition(file=table, rows=rows, bytes=size)

    def drop(self, schema: str, tables: Sequence[str]) -> None:
        """Drop ``tables`` of ``schema`` that exist."""
        if not tables:
            return
        with self.session(60.0) as session:
            for table in tables:
                session.run(self.drop_statement(schema, table))

    def unreferenced(self, schema: str, prefix: str, referenced: Callable[[], set[str]], *, older_than_s: float) -> int:
        """Mark, then drop after ``older_than_s``, the tables of ``schema`` named with ``prefix`` that ``referenced()``
        (asked once they are listed) does not hold (:func:`collect_unreferenced`). Returns how many dropped; a
        failure is logged and retried at the next collection."""
        try:
            with self.session(60.0) as session:
                found = [(name, comment) for name, comment in self.listed(session, schema) if name.startswith(prefix)]
                return collect_unreferenced(
                    found,
                    referenced,
                    older_than_s=older_than_s,
                    mark=lambda name, note: session.run(self.comment_statement(schema, name, note)),
                    drop=lambda name: session.run(self.drop_statement(schema, name)),
                )
        except DataSourceError as exc:
            logger.warning("rollup tables of %s schema %s not collected: %s", self.KIND, schema, exc)
            return 0


def written_whole(
    create: Callable[[], tuple[int, int]], drop: Callable[[], object], keep_going: Callable[[], bool]
) -> tuple[int, int]:
    """``create()`` a table (its rows and bytes) where DDL is not transactional: if it fails, or ``keep_going()``
    says the build lost its lease (:class:`BuildStopped`), ``drop()`` removes what it wrote before the error goes on
    (a dropping that fails is logged: the garbage collection removes the table later, as no row names it)."""
    if not keep_going():
        raise BuildStopped()
    try:
        written = create()
        if not keep_going():
            raise BuildStopped()
    except BaseException:
        try:
            drop()
        except Exception:
            logger.warning("a failed rollup build's table was not dropped", exc_info=True)
        raise
    return written


@contextlib.contextmanager
def stopped_by(cancel: CancelScope | None, interrupt: Callable[[], None]) -> Iterator[None]:
    """Within the block, ``cancel.cancel()`` (the build's lease lost) calls ``interrupt`` to stop the statement
    running on the source; the block then ends in :class:`BuildStopped`, whatever the stopped statement raised (or
    if it ended anyway). A scope cancelled before the block runs nothing of it."""
    try:
        with cancellable(cancel, interrupt) as fired:
            try:
                yield
            except Exception:
                if fired.is_set():
                    raise BuildStopped() from None
                raise
            if fired.is_set():
                raise BuildStopped()
    except QueryCancelled:
        raise BuildStopped() from None


@contextlib.contextmanager
def closing_session(session: Any) -> Iterator[Any]:
    """``session`` for the block, closed after it (quietly: a connection that broke is gone anyway)."""
    try:
        yield session
    finally:
        with contextlib.suppress(Exception):
            session.close()
