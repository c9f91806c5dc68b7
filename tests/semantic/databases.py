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
from urllib.parse import urlsplit

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


class MySQLExecutor:
    """The shop dataset in a MariaDB (or MySQL) database, queried through the ``mysql://`` data source itself.

    The statements the compiler writes for MySQL (every one quotes its names with backticks) run on MariaDB. The
    tests' hand-written reference SQL is written for PostgreSQL and DuckDB (``FILTER``, ``date_trunc``,
    ``generate_series``...; never a backtick): it runs on ``reference``, the same dataset in PostgreSQL, so a test
    comparing the two compares MariaDB's answer with PostgreSQL's."""

    dialect = "mysql"

    def __init__(self, url: str, reference: Executor) -> None:
        from embedadmin.semantic.sources.mysql import open_source

        self.url = url
        self.source = open_source(url)
        self.reference = reference

    def run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        if "`" not in sql:
            return self.reference.run(sql, params)
        result = self.source.execute(sql, list(params), timeout_s=30)
        return result.columns, result.rows


def mysql_url(database: str | None = None) -> str:
    """``TEST_MYSQL_URL`` (scripts/test-services.sh), naming ``database`` instead of its own when given."""
    url = os.environ.get("TEST_MYSQL_URL", "mysql://embedadmin:embedadmin@127.0.0.1:3307/embedadmin")
    if database is None:
        return url
    return f"{url.rsplit('/', 1)[0]}/{database}"


@contextmanager
def mysql_database(tables: dict[str, tuple[str, list[tuple[Any, ...]]]]) -> Iterator[str]:
    """A fresh database (``embedadmin_<hex>``, binary collation: comparisons and order by code point, as in the
    PostgreSQL test database) holding ``tables`` (name -> (MySQL column list, rows)); its URL. Dropped afterwards."""
    import pymysql

    base = mysql_url()
    name = f"{base.rsplit('/', 1)[1]}_{uuid.uuid4().hex[:10]}"
    parts = urlsplit(base)
    admin = pymysql.connect(
        host=parts.hostname,
        port=parts.port or 3306,
        user=parts.username,
        password=parts.password or "",
        autocommit=True,
        charset="utf8mb4",
    )
    try:
        with admin.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
            cursor.execute(f"USE `{name}`")
            for table, (columns, rows) in tables.items():
                cursor.execute(f"CREATE TABLE `{table}` ({columns})")
                if rows:
                    marks = ", ".join("%s" for _ in rows[0])
                    cursor.executemany(f"INSERT INTO `{table}` VALUES ({marks})", rows)
        yield mysql_url(name)
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
        admin.close()


def mysql_columns(columns: str) -> str:
    """The dataset's column list in MySQL's types (naive UTC times as DATETIME with microseconds)."""
    return columns.replace("VARCHAR", "VARCHAR(255)").replace("TIMESTAMP", "DATETIME(6)")


@contextmanager
def mysql_shop(reference: Executor) -> Iterator[MySQLExecutor]:
    """The dataset in a fresh MariaDB database (dropped afterwards); hand-written SQL runs on ``reference``."""
    tables = {table: (mysql_columns(columns), ROWS[table]) for table, columns in SCHEMA.items()}
    with mysql_database(tables) as url:
        executor = MySQLExecutor(url, reference)
        try:
            yield executor
        finally:
            executor.source.close()
