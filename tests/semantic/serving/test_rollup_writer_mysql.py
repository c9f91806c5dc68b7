"""A rollup build in a MySQL or MariaDB data source reads the customer's tables as any reader does: its ``CREATE TABLE
... AS SELECT`` takes no lock on the rows it reads, so the application keeps writing them while a build runs (under
InnoDB's default REPEATABLE READ such a statement locks every row it scans until it ends)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from embedadmin.semantic.serving.rollup_writers.mysql import open_writer
from tests.semantic.rollup_homes import _maria, mysql_url

DATABASE = "embedadmin_writer_locks"
ROLLUPS = "embedadmin_writer_locks_rollups"


@pytest.fixture
def source() -> Iterator[str]:
    admin = _maria()
    with admin.cursor() as cursor:
        for name in (DATABASE, ROLLUPS):
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        cursor.execute(f"CREATE DATABASE {DATABASE}")
        cursor.execute(f"CREATE TABLE {DATABASE}.src (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        cursor.execute(f"INSERT INTO {DATABASE}.src VALUES (1, 1), (2, 2), (3, 3), (4, 4)")
    try:
        parts = urlsplit(mysql_url())
        yield parts._replace(path=f"/{DATABASE}").geturl()
    finally:
        with admin.cursor() as cursor:
            for name in (DATABASE, ROLLUPS):
                cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.close()


def test_the_application_writes_the_rows_a_build_is_reading(source):
    writer = open_writer(source)
    written: list = []
    # Four rows at a second each: the build reads the source for about four seconds, longer than the lock wait.
    build = threading.Thread(
        target=lambda: written.append(
            writer.write(
                schema=ROLLUPS,
                table="r1_locks",
                sql=f"SELECT id, v, SLEEP(1) AS s FROM {DATABASE}.src",
                params=[],
                columns=["id", "v", "s"],
                indexes=[],
                timeout_s=30,
                keep_going=lambda: True,
            )
        )
    )
    build.start()
    app = _maria()
    try:
        with app.cursor() as cursor:
            # Once the build's statement runs in the server, the application updates a row it has read.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                cursor.execute("SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE 'CREATE TABLE%'")
                if cursor.fetchone()[0]:
                    break
                time.sleep(0.02)  # polling the server's process list
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
            cursor.execute(f"UPDATE {DATABASE}.src SET v = v + 10 WHERE id = 1")
            assert cursor.rowcount == 1
    finally:
        app.close()
        build.join()

    assert written[0].rows == 4
