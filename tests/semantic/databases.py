"""Tiny executors for the tests: the shop dataset in an in-memory DuckDB or a PostgreSQL schema.

Production code runs SQL through ``embedadmin.semantic.sources``; tests use the drivers directly so a
failure points at the SQL, not at the data-source layer. Both sessions run in UTC, as the data sources do.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import duckdb
import psycopg

from .dataset import ROWS, SCHEMA


class Executor(Protocol):
    dialect: str

    def run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]: ...


class DuckDBExecutor:
    dialect = "duckdb"

    def __init__(self) -> None:
        self.connection = duckdb.connect(":memory:")
        self.connection.execute("SET TimeZone = 'UTC'")
        for table, columns in SCHEMA.items():
            self.connection.execute(f"CREATE TABLE {table} ({columns})")
            rows = ROWS[table]
            marks = ", ".join("?" for _ in rows[0])
            self.connection.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)

    def run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        cursor = self.connection.cursor()
        cursor.execute(sql, list(params))
        columns = [d[0] for d in cursor.description]
        return columns, cursor.fetchall()


class PostgresExecutor:
    dialect = "postgres"

    def __init__(self, connection: psycopg.Connection, schema: str) -> None:
        self.connection = connection
        self.schema = schema

    def run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        with self.connection.cursor() as cursor:
            cursor.execute(sql, list(params) or None)
            columns = [d.name for d in cursor.description]
            return columns, cursor.fetchall()


@contextmanager
def postgres_shop() -> Iterator[PostgresExecutor]:
    """The dataset in a fresh schema of the test database (dropped afterwards)."""
    url = os.environ.get("TEST_DATABASE_URL", "postgresql://embedadmin:embedadmin@127.0.0.1:5432/embedadmin")
    schema = f"semantic_{uuid.uuid4().hex[:10]}"
    connection = psycopg.connect(url, autocommit=True, cursor_factory=psycopg.RawCursor, options="-c TimeZone=UTC")
    try:
        connection.execute(f"CREATE SCHEMA {schema}")
        connection.execute(f"SET search_path TO {schema}")
        for table, columns in SCHEMA.items():
            connection.execute(f"CREATE TABLE {table} ({columns.replace('VARCHAR', 'TEXT')})")
            rows = ROWS[table]
            marks = ", ".join(f"${i + 1}" for i in range(len(rows[0])))
            with connection.cursor() as cursor:
                cursor.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        yield PostgresExecutor(connection, schema)
    finally:
        connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        connection.close()
