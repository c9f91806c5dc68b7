"""Rollup tables in a schema of the Trino catalog the data source URL names (``trino://user@host/catalog``), through
the ``trino`` driver on a connection of the build's own, its time limit the session property
``query_max_run_time``. ``CREATE TABLE ... AS SELECT`` of the build statement (the connector writes it whole; a
build that fails or is stopped drops it); rows as the statement answers, bytes from ``SHOW STATS`` (the sum of the
columns' ``data_size``, 0 where the connector gives none). No indexes: Trino's connectors have none (a rollup's
``indexes`` are ignored). Marked by ``COMMENT ON TABLE``, listed from ``system.metadata.table_comments``.
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
from embedadmin.semantic.sources import trino
from embedadmin.semantic.sources.warehouses import positional

MAX_IDENTIFIER = 128  # the Hive metastore's, the shortest of the common connectors'


class TrinoRollupWriter(StatementWriter):
    dialect = "trino"
    ddl = Ddl("trino")
    KIND = "Trino"

    def __init__(self, url: str) -> None:
        self._source = trino.open_source(url)
        self._catalog = self._source.connect_args.get("catalog")
        if not self._catalog:
            raise DataSourceError("Trino URL names no catalog: rollups live in a schema of the URL's catalog")

    def session(self, timeout_s: float) -> contextlib.AbstractContextManager[DriverSession]:
        source = self._source
        exceptions = source.driver.exceptions
        return driver_session(
            source.connect(session_properties=source.session_properties(timeout_s)),
            errors=Exception,
            mapped=lambda exc: trino.error_for(exc, exceptions, timeout_s),
            bind=positional,
            stop=lambda cursor: cursor.cancel(),
        )

    def measured(self, session: Any, schema: str, table: str, answer: list[tuple[Any, ...]]) -> tuple[int, int]:
        rows = whole_number(answer[0][0]) if answer and answer[0] else 0
        columns, stats = session.run(f"SHOW STATS FOR {self.ddl.table(schema, table)}")
        index = [c.lower() for c in columns].index("data_size") if "data_size" in columns else None
        size = sum(whole_number(row[index]) for row in stats) if index is not None else 0
        return rows, size

    def listed(self, session: Any, schema: str) -> list[tuple[str, str | None]]:
        _, found = session.run(
            "SELECT table_name, comment FROM system.metadata.table_comments WHERE catalog_name = ? AND schema_name = ?",
            [self._catalog, schema],
        )
        return [(str(name), comment) for name, comment in found]


def open_writer(url: str) -> TrinoRollupWriter:
    return TrinoRollupWriter(url)
