"""Rollup tables in a schema of the Snowflake database the data source URL names, through
``snowflake-connector-python`` on a session of the build's own (the URL's warehouse and role; a role that may
``CREATE TABLE`` in the rollup schema), its time limit ``STATEMENT_TIMEOUT_IN_SECONDS``. ``CREATE TABLE ... AS
SELECT`` of the build statement (Snowflake writes it whole; a build that fails or is stopped drops it); rows and bytes
from ``information_schema.tables`` (``row_count``, ``bytes``). No indexes: Snowflake has none (a rollup's
``indexes`` are ignored; its micro-partitions are pruned by their own statistics). Marked by ``COMMENT ON TABLE``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from embedadmin.semantic.errors import DataSourceError
from embedadmin.semantic.serving.rollup_source import Ddl, StatementWriter
from embedadmin.semantic.serving.rollup_writers.warehouses import (
    DriverSession,
    driver_session,
    whole_number,
)
from embedadmin.semantic.sources import snowflake
from embedadmin.semantic.sources.warehouses import positional, timeout_seconds

MAX_IDENTIFIER = 255


class SnowflakeRollupWriter(StatementWriter):
    dialect = "snowflake"
    ddl = Ddl("snowflake")
    KIND = "Snowflake"

    def __init__(self, url: str) -> None:
        self._source = snowflake.open_source(url)
        if not self._source.connect_args.get("database"):
            raise DataSourceError("Snowflake URL names no database: rollups live in a schema of the URL's database")

    def session(self, timeout_s: float) -> contextlib.AbstractContextManager[DriverSession]:
        return driver_session(
            self._source.connect(),
            errors=self._source.driver_errors(),
            mapped=lambda exc: snowflake.error_for(exc, timeout_s),
            bind=positional,
            first=snowflake.SET_TIMEOUT.format(seconds=timeout_seconds(timeout_s)),
        )

    def measured(self, session: Any, schema: str, table: str, answer: list[tuple[Any, ...]]) -> tuple[int, int]:
        _, found = session.run(
            "SELECT row_count, bytes FROM information_schema.tables WHERE table_schema = :1 AND table_name = :2",
            [schema, table],
        )
        rows, size = found[0] if found else (0, 0)
        return whole_number(rows), whole_number(size)

    def listed(self, session: Any, schema: str) -> list[tuple[str, str | None]]:
        _, found = session.run(
            "SELECT table_name, comment FROM information_schema.tables WHERE table_schema = :1", [schema]
        )
        return [(str(name), comment) for name, comment in found]


def open_writer(url: str) -> SnowflakeRollupWriter:
    return SnowflakeRollupWriter(url)
