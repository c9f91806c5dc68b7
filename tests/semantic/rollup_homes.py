"""The data sources that hold rollups live in the tests: PostgreSQL, MariaDB and ClickHouse (chDB), each with the demo
dataset and a fresh rollup schema (a database on MariaDB and ClickHouse), as one :class:`Home` the tests of
``tests/semantic/serving/test_rollups_in_source.py`` are parametrized over."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import duckdb
import psycopg
import pytest

from demo.generate import TABLES
from embedadmin.semantic.serving.rollup_source import Ddl
from tests.semantic.databases import mysql_database, mysql_url

HOMES = ["postgres", "mariadb", "clickhouse"]
DIALECTS = {"postgres": "postgres", "mariadb": "mysql", "clickhouse": "clickhouse"}
_MYSQL_TYPES = {"BIGINT": "BIGINT", "INTEGER": "INTEGER", "VARCHAR": "VARCHAR(255)", "TIMESTAMP": "DATETIME(6)"}


@dataclass
class Home:
    """A data source with the demo dataset (``data_schema``) and a rollup schema of its own (``schema``)."""

    kind: str  # postgres | mariadb | clickhouse
    url: str
    data_schema: str
    schema: str
    chdb_directory: Path | None = None

    @property
    def dialect(self) -> str:
        return DIALECTS[self.kind]

    @property
    def ddl(self) -> Ddl:
        return Ddl(self.dialect)

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        """A statement run as the database's administrator (not through the data source)."""
        if self.kind == "postgres":
            with psycopg.connect(self.url, autocommit=True) as connection:
                cursor = connection.execute(sql)
                return cursor.fetchall() if cursor.description else []
        if self.kind == "mariadb":
            with _maria() as connection, connection.cursor() as cursor:
                cursor.execute(sql)
                return list(cursor.fetchall()) if cursor.description else []
        import clickhouse_connect

        client = clickhouse_connect.get_client(interface="chdb", path=str(self.chdb_directory))
        try:
            if sql.lstrip().upper().startswith("SELECT"):
                return [tuple(row) for row in client.query(sql).result_rows]
            client.command(sql)
            return []
        finally:
            client.close()

    def tables(self) -> set[str]:
        """The tables of the rollup schema."""
        if self.kind == "postgres":
            sql = (
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                f"WHERE n.nspname = '{self.schema}' AND c.relkind = 'r'"
            )
        elif self.kind == "mariadb":
            sql = f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{self.schema}'"
        else:
            sql = f"SELECT name FROM system.tables WHERE database = '{self.schema}'"
        return {str(name) for (name,) in self.run(sql)}

    def comment(self, table: str) -> str:
        if self.kind == "postgres":
            sql = f"SELECT obj_description('\"{self.schema}\".\"{table}\"'::regclass, 'pg_class')"
        elif self.kind == "mariadb":
            sql = (
                "SELECT table_comment FROM information_schema.tables "
                f"WHERE table_schema = '{self.schema}' AND table_name = '{table}'"
            )
        else:
            sql = f"SELECT comment FROM system.tables WHERE database = '{self.schema}' AND name = '{table}'"
        found = self.run(sql)
        return str(found[0][0] or "") if found else ""

    def orders(self) -> str:
        return self.ddl.table(self.data_schema, "orders")

    def add_completed_orders(self, how_many: int) -> None:
        self.run(
            f"INSERT INTO {self.orders()} (id, user_id, status, amount, item_count, created_at, completed_at) "
            "SELECT id + 1000000, user_id, 'completed', amount, item_count, created_at, completed_at "
            f"FROM {self.orders()} ORDER BY id LIMIT {int(how_many)}"
        )

    def remove_added_orders(self) -> None:
        if self.kind == "clickhouse":
            self.run(f"ALTER TABLE {self.orders()} DELETE WHERE id >= 1000000 SETTINGS mutations_sync = 2")
        else:
            self.run(f"DELETE FROM {self.orders()} WHERE id >= 1000000")

    def drop_schema(self) -> None:
        if self.kind == "postgres":
            self.run(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
        elif self.kind == "mariadb":
            self.run(f"DROP DATABASE IF EXISTS `{self.schema}`")
        else:
            self.run(f'DROP DATABASE IF EXISTS "{self.schema}" SYNC')


def _maria() -> Any:
    import pymysql

    parts = urlsplit(mysql_url())
    return pymysql.connect(
        host=parts.hostname, port=parts.port, user=parts.username, password=parts.password or "", autocommit=True
    )


@pytest.fixture(scope="module")
def mysql_demo(demo_duckdb: Path) -> Iterator[str]:
    """The demo dataset copied value for value into a fresh MariaDB database (TEST_MYSQL_URL); its URL."""
    tables = {}
    with duckdb.connect(str(demo_duckdb), read_only=True) as source:
        for table, columns in TABLES.items():
            spec = ", ".join(
                f"`{name}` {_MYSQL_TYPES.get(kind, kind)}{' PRIMARY KEY' if name == 'id' else ''}"
                for name, kind in columns
            )
            tables[table] = (spec, source.execute(f"SELECT * FROM {table}").fetchall())
    with mysql_database(tables) as url:
        yield url


def new_home(kind: str, request: pytest.FixtureRequest) -> Home:
    """A :class:`Home` of ``kind`` with a fresh rollup schema (dropped by the caller)."""
    tag = uuid.uuid4().hex[:8]
    if kind == "postgres":
        url, data_schema = request.getfixturevalue("postgres_demo")
        return Home(kind, url, data_schema, f"rollups_{tag}")
    if kind == "mariadb":
        url = request.getfixturevalue("mysql_demo")
        # The test user may create the databases named embedadmin_* (scripts/test-services.sh).
        return Home(kind, url, url.rsplit("/", 1)[1], f"embedadmin_rollups_{tag}")
    url = request.getfixturevalue("clickhouse_demo")
    directory = request.getfixturevalue("chdb_directory")
    return Home(kind, url, "demo", f"rollups_{tag}", chdb_directory=directory)
