"""Rollup tables in a MySQL or MariaDB data source. MySQL's schema is a database: the deployment's rollup schema is a
database of the server beside the data's (created by the first build when the URL's user may), read by the query
path as ``database.table``.

MySQL's DDL is not transactional: a table is ``CREATE TABLE ... AS SELECT`` of the build statement (typed by the
server), then indexed (``CREATE INDEX`` per ``indexes`` entry; text columns by their first 191 characters, which
InnoDB's key length takes in utf8mb4), analysed, and measured (``information_schema.tables``: data and index
length; rows as the statement answered); a build that fails or is stopped drops it. The connection is the query
path's session (UTC, its ``sql_mode``, its precision of quotients) but not read only, opened for the build, and reading
at READ COMMITTED (no lock on the source rows the build reads). Its time
limit: MariaDB's ``max_statement_time`` for the session, and on MySQL (whose ``max_execution_time`` limits SELECT
only) ``KILL QUERY`` from the watchdog at the limit; a build that lost its lease has its statement stopped by ``KILL
QUERY`` too (:meth:`MySQLSession.interrupt`). Marked by ``ALTER TABLE ... COMMENT``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any

import pymysql

from embedadmin.semantic.errors import QueryTimeout
from embedadmin.semantic.serving.rollup_source import Ddl, StatementWriter, closing_session
from embedadmin.semantic.sources import mysql
from embedadmin.semantic.sources.base import watchdog

MAX_IDENTIFIER = 64
INDEX_PREFIX = 191  # characters of a text column in an index: 764 bytes in utf8mb4, within InnoDB's 767
_TEXT_TYPES = frozenset({"tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob"})


class MySQLSession:
    """A build's connection: runs one statement at a time, each stopped at the time limit."""

    def __init__(self, connect_kwargs: dict[str, Any], timeout_s: float) -> None:
        self._kwargs = connect_kwargs
        self._timeout_s = timeout_s
        try:
            self._raw = mysql.session(connect_kwargs, read_only=False)
        except pymysql.Error as exc:
            raise mysql.error_for(exc, timeout_s) from None
        self.mariadb = mysql.is_mariadb(self._raw)
        self._thread_id = self._raw.thread_id()
        # READ COMMITTED: the build's CREATE TABLE ... AS SELECT reads the source as a consistent read, taking no lock
        # on the rows it scans (under InnoDB's REPEATABLE READ it would hold them against the application's writes
        # until the build ends).
        self.run("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        if self.mariadb:
            self.run(f"SET SESSION max_statement_time = {timeout_s:.3f}")

    def run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            threading.Thread(target=mysql.kill_late, args=(self._kwargs, self._thread_id), daemon=True).start()

        alarm = watchdog.call_later(self._timeout_s, kill)
        try:
            with self._raw.cursor() as cursor:
                # The writer doubles every literal % of the build statement: the text is always formatted.
                cursor.execute(sql, {f"p{index}": value for index, value in enumerate(params, start=1)})
                if cursor.description is None:  # a statement that answers no rows: how many it wrote
                    return [], [(max(cursor.rowcount, 0),)]
                return [column[0] for column in cursor.description], [tuple(row) for row in cursor.fetchall()]
        except pymysql.Error as exc:
            if killed.is_set():
                raise QueryTimeout(self._timeout_s) from None
            raise mysql.error_for(exc, self._timeout_s) from None
        finally:
            watchdog.cancel(alarm)

    def interrupt(self) -> None:
        """``KILL QUERY`` of the session's thread, from a connection of its own (the build's lease lost)."""
        mysql.kill_query(self._kwargs, self._thread_id)

    def close(self) -> None:
        self._raw.close()


class MySQLRollupWriter(StatementWriter):
    """Writes rollup tables into a database of a MySQL or MariaDB server, through a connection of the build's own."""

    dialect = "mysql"
    ddl = Ddl("mysql")
    KIND = "MySQL"

    def __init__(self, url: str) -> None:
        self._kwargs, _size, _wait = mysql.connect_arguments(url)

    def session(self, timeout_s: float) -> contextlib.AbstractContextManager[MySQLSession]:
        return closing_session(MySQLSession(self._kwargs, timeout_s))

    def ensure_schema(self, session: Any, schema: str) -> None:
        # A user granted a database need not have the right to run CREATE DATABASE, even IF NOT EXISTS.
        _, found = session.run("SELECT 1 FROM information_schema.schemata WHERE schema_name = %(p1)s", [schema])
        if not found:
            session.run(self.ddl.create_schema(schema))

    def index_statements(self, session: Any, schema: str, table: str, indexes: Sequence[Sequence[str]]) -> None:
        if not indexes:
            return
        _, described = session.run(
            "SELECT column_name, data_type, character_maximum_length FROM information_schema.columns "
            "WHERE table_schema = %(p1)s AND table_name = %(p2)s",
            [schema, table],
        )
        long_text = {
            str(name)
            for name, kind, length in described
            if str(kind).lower() in _TEXT_TYPES or (length is not None and int(length) > INDEX_PREFIX)
        }
        for number, columns in enumerate(indexes, start=1):
            listed = ", ".join(
                f"{self.ddl.identifier(c)}({INDEX_PREFIX})" if c in long_text else self.ddl.identifier(c)
                for c in columns
            )
            name = self.ddl.identifier(f"i{number}")
            session.run(f"CREATE INDEX {name} ON {self.ddl.table(schema, table)} ({listed})")

    def measured(self, session: Any, schema: str, table: str, answer: list[tuple[Any, ...]]) -> tuple[int, int]:
        rows = int(answer[0][0]) if answer and answer[0] else 0
        session.run(f"ANALYZE TABLE {self.ddl.table(schema, table)}")
        _, found = session.run(
            "SELECT COALESCE(data_length, 0) + COALESCE(index_length, 0) FROM information_schema.tables "
            "WHERE table_schema = %(p1)s AND table_name = %(p2)s",
            [schema, table],
        )
        return rows, int(found[0][0]) if found else 0

    def listed(self, session: Any, schema: str) -> list[tuple[str, str | None]]:
        _, found = session.run(
            "SELECT table_name, table_comment FROM information_schema.tables WHERE table_schema = %(p1)s", [schema]
        )
        return [(str(name), comment) for name, comment in found]

    def comment_statement(self, schema: str, table: str, text: str) -> str:
        return f"ALTER TABLE {self.ddl.table(schema, table)} COMMENT = {self.ddl.literal(text)}"

    def drop(self, schema: str, tables: Sequence[str]) -> None:
        """Drop ``tables`` of ``schema`` that exist (waiting at most 5 s for the queries reading one)."""
        if not tables:
            return
        with self.session(60.0) as session:
            session.run("SET SESSION lock_wait_timeout = 5")
            for table in tables:
                session.run(self.drop_statement(schema, table))


def open_writer(url: str) -> MySQLRollupWriter:
    return MySQLRollupWriter(url)
