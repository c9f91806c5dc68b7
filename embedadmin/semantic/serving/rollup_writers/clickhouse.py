"""Rollup tables in a ClickHouse data source (a server, or chDB in process). ClickHouse's schema is a database: the
deployment's rollup schema is a database of the server (created by the first build when the user may), read by the
query path as ``database.table``.

ClickHouse's DDL is not transactional: a table is ``CREATE TABLE ... ENGINE = MergeTree ORDER BY ... AS SELECT`` of
the build statement (typed by the server; ordered by the columns of the rollup's first ``indexes`` entry, else
``tuple()``: MergeTree's sorting key is ClickHouse's one index), measured from ``system.parts`` (rows, bytes on
disk); a build that fails or is stopped drops it (a build that lost its lease has its running statement stopped
by ``KILL QUERY``, found by the session's ``log_comment``, as the query path's cancel). The statements run through
a client of the build's own (a source of the URL opened for it, never the query path's), with the query path's
settings (UTC, outer joins giving NULLs) except ``readonly``, and ``max_execution_time`` the build's time limit.
Marked by ``ALTER TABLE ... MODIFY COMMENT``; dropped with ``SYNC`` (the files go at once, not after the Atomic
database's delay).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from embedadmin.semantic.serving.rollup_source import Ddl, StatementWriter
from embedadmin.semantic.sources import clickhouse

MAX_IDENTIFIER = 255  # a table is a directory: the file system's limit on a name


class ClickHouseSession:
    """A build's client: statements with the build's settings, parameters bound by the server."""

    def __init__(self, source: clickhouse.ClickHouseSource, client: Any, timeout_s: float) -> None:
        self._source = source
        self._client = client
        self._timeout_s = timeout_s
        self._token = uuid.uuid4().hex  # every statement of the session carries it: KILL QUERY finds them by it
        self._settings = {
            "session_timezone": "UTC",
            "join_use_nulls": 1,
            "max_execution_time": timeout_s,
            "timeout_overflow_mode": "throw",
            "log_comment": self._token,
        }

    def run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        from clickhouse_connect.driver.exceptions import Error as ClickHouseError

        text, values = clickhouse.bind(sql, params)
        try:
            if not text.lstrip().upper().startswith("SELECT"):
                self._client.command(text, parameters=values or None, settings=self._settings)
                return [], []
            result = self._client.query(text, parameters=values or None, settings=self._settings)
        except ClickHouseError as exc:
            raise clickhouse.error_for(exc, self._timeout_s) from None
        return list(result.column_names), [tuple(row) for row in result.result_rows]

    def interrupt(self) -> None:
        """``KILL QUERY`` of the session's running statement (the build's lease lost), as the query path's cancel."""
        self._source.kill(self._token)


class ClickHouseRollupWriter(StatementWriter):
    """Writes rollup tables into a database of a ClickHouse server, through a client of the build's own."""

    dialect = "clickhouse"
    ddl = Ddl("clickhouse")
    KIND = "ClickHouse"

    def __init__(self, url: str) -> None:
        self._url = url

    @contextlib.contextmanager
    def session(self, timeout_s: float) -> Iterator[ClickHouseSession]:
        source = clickhouse.open_source(self._url)  # a source of its own: its clients are the build's
        try:
            with source.client() as client:
                yield ClickHouseSession(source, client, timeout_s)
        finally:
            source.close()

    def table_options(self, indexes: Sequence[Sequence[str]]) -> str:
        if not indexes:
            return "ENGINE = MergeTree ORDER BY tuple()"
        key = ", ".join(self.ddl.identifier(c) for c in indexes[0])
        # The rollup's dimensions are Nullable where the source's columns are.
        return f"ENGINE = MergeTree ORDER BY ({key}) SETTINGS allow_nullable_key = 1"

    def measured(self, session: Any, schema: str, table: str, answer: list[tuple[Any, ...]]) -> tuple[int, int]:
        _, found = session.run(
            "SELECT sum(rows), sum(bytes_on_disk) FROM system.parts WHERE database = {p1:_} AND table = {p2:_} "
            "AND active",
            [schema, table],
        )
        rows, size = found[0] if found else (0, 0)
        return int(rows or 0), int(size or 0)

    def listed(self, session: Any, schema: str) -> list[tuple[str, str | None]]:
        _, found = session.run("SELECT name, comment FROM system.tables WHERE database = {p1:_}", [schema])
        return [(str(name), comment) for name, comment in found]

    def comment_statement(self, schema: str, table: str, text: str) -> str:
        return f"ALTER TABLE {self.ddl.table(schema, table)} MODIFY COMMENT {self.ddl.literal(text)}"

    def drop_statement(self, schema: str, table: str) -> str:
        return f"{self.ddl.drop_table(schema, table)} SYNC"


def open_writer(url: str) -> ClickHouseRollupWriter:
    return ClickHouseRollupWriter(url)
