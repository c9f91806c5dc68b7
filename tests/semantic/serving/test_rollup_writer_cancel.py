"""A rollup build in the data source that lost its lease has its running statement stopped on the source: the writer,
given the build heartbeat's cancel scope, stops its ``CREATE TABLE ... AS SELECT`` (PostgreSQL: a cancel request;
MariaDB: ``KILL QUERY``) once the scope is cancelled, raises :class:`BuildStopped` and leaves no table."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from embedadmin.semantic.serving.rollup_store import BuildStopped
from embedadmin.semantic.serving.rollup_writers import source_tables
from embedadmin.semantic.sources.base import CancelScope
from tests.asgi_server import database_url_for_subprocess
from tests.semantic.rollup_homes import _maria, mysql_url
from tests.waiting import wait_until

MARKER = "embedadmin_cancel_marker"


@pytest.fixture
def postgres_url(django_db_setup: Any, django_db_blocker: Any) -> str:
    with django_db_blocker.unblock():
        return database_url_for_subprocess()


def _postgres_running(url: str) -> Callable[[], int]:
    def count() -> int:
        with psycopg.connect(url, autocommit=True) as admin:
            found = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s "
                "AND pid <> pg_backend_pid()",
                [f"%{MARKER}%"],
            ).fetchone()
            return int(found[0]) if found else 0

    return count


def _postgres_tables(url: str, schema: str) -> list[str]:
    with psycopg.connect(url, autocommit=True) as admin:
        return [row[0] for row in admin.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", [schema])]


def _maria_running() -> int:
    with _maria() as admin, admin.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE %s AND id <> CONNECTION_ID()",
            [f"%{MARKER}%"],
        )
        return int(cursor.fetchone()[0])


def _maria_tables(schema: str) -> list[str]:
    with _maria() as admin, admin.cursor() as cursor:
        cursor.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", [schema])
        return [str(row[0]) for row in cursor.fetchall()]


def _build_cancelled(url: str, schema: str, sql: str, running: Callable[[], int]) -> list[BaseException]:
    """Write a table of ``sql`` (a statement that sleeps 600 s) with a scope cancelled once the statement runs on the
    server; the error the build ended in."""
    writer = source_tables(url)
    scope = CancelScope()
    ended: list[BaseException] = []

    def build() -> None:
        try:
            writer.write(
                schema=schema,
                table="r1_cancelled",
                sql=sql,
                params=[],
                columns=["v"],
                indexes=[],
                timeout_s=900,
                keep_going=lambda: True,
                cancel=scope,
            )
        except BaseException as exc:
            ended.append(exc)

    thread = threading.Thread(target=build, daemon=True)
    thread.start()
    wait_until(lambda: running() > 0, timeout=20)
    scope.cancel()
    thread.join(timeout=25)  # the statement sleeps 600 s: an end before that is the cancel's
    assert not thread.is_alive()
    return ended


@pytest.mark.postgres
def test_a_postgres_build_whose_lease_is_lost_stops_its_statement_and_leaves_no_table(postgres_url):
    schema = f"rollups_{uuid.uuid4().hex[:8]}"
    try:
        ended = _build_cancelled(
            postgres_url,
            schema,
            f"SELECT 1 AS v FROM pg_sleep(600) AS {MARKER}",
            _postgres_running(postgres_url),
        )
        assert [type(exc) for exc in ended] == [BuildStopped]
        assert _postgres_running(postgres_url)() == 0
        assert _postgres_tables(postgres_url, schema) == []
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_mariadb_build_whose_lease_is_lost_stops_its_statement_and_leaves_no_table():
    schema = f"embedadmin_cancel_{uuid.uuid4().hex[:8]}"
    url = mysql_url()
    try:
        ended = _build_cancelled(
            url, schema, f"SELECT SLEEP(600) AS v FROM (SELECT 1 AS {MARKER}) AS s", _maria_running
        )
        assert [type(exc) for exc in ended] == [BuildStopped]
        assert _maria_running() == 0
        assert _maria_tables(schema) == []
    finally:
        with _maria() as admin, admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {schema}")
