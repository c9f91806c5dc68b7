"""Rollup tables in a schema of the Databricks catalog the data source URL names, through ``databricks-sql-connector``
on a session of the build's own (a token whose principal may ``CREATE TABLE`` in the rollup schema), its time limit
``STATEMENT_TIMEOUT``. ``CREATE TABLE ... AS SELECT`` of the build statement (a Delta table, written whole; a build
that fails or is stopped drops it); rows as the statement answers (``num_inserted_rows``), bytes from ``DESCRIBE
DETAIL`` (``sizeInBytes``). No indexes: Delta tables have none (a rollup's ``indexes`` are ignored; data skipping
uses the files' statistics). Marked by ``COMMENT ON TABLE``, listed from ``information_schema.tables``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from embedadmin.semantic.serving.rollup_source import Ddl, StatementWriter
from embedadmin.semantic.serving.rollup_writers.warehouses import (
    DriverSession,
    column,
    driver_session,
    whole_number,
)
from embedadmin.semantic.sources import databricks
from embedadmin.semantic.sources.warehouses import named, timeout_seconds

MAX_IDENTIFIER = 255


class DatabricksRollupWriter(StatementWriter):
    dialect = "databricks"
    ddl = Ddl("databricks")
    KIND = "Databricks"

    def __init__(self, url: str) -> None:
        self._source = databricks.open_source(url)

    def session(self, timeout_s: float) -> contextlib.AbstractContextManager[DriverSession]:
        return driver_session(
            self._source.connect(),
            errors=self._source.driver_errors(),
            mapped=lambda exc: databricks.error_for(exc, timeout_s),
            bind=named,
            first=databricks.SET_TIMEOUT.format(seconds=timeout_seconds(timeout_s)),
            stop=lambda cursor: cursor.cancel(),
        )

    def measured(self, session: Any, schema: str, table: str, answer: list[tuple[Any, ...]]) -> tuple[int, int]:
        rows = whole_number(answer[0][-1]) if answer and answer[0] else 0
        columns, detail = session.run(f"DESCRIBE DETAIL {self.ddl.table(schema, table)}")
        return rows, whole_number(column(columns, detail, "sizeInBytes"))

    def listed(self, session: Any, schema: str) -> list[tuple[str, str | None]]:
        _, found = session.run(
            "SELECT table_name, comment FROM information_schema.tables WHERE table_schema = :p1", [schema]
        )
        return [(str(name), comment) for name, comment in found]


def open_writer(url: str) -> DatabricksRollupWriter:
    return DatabricksRollupWriter(url)
