"""Rollup tables in a dataset of the BigQuery project the data source URL names (BigQuery's schema is a dataset;
created in the URL's ``location`` by the first build when the service account may), through
``google-cloud-bigquery`` on a client of the build's own: each statement a query job with the source's job settings
(its time limit ``job_timeout_ms``, standard SQL, UTC, named parameters ``@p1``...). ``CREATE TABLE ... AS SELECT``
of the build statement (a job writes its table whole; a build that fails or is stopped drops it); rows and bytes
from the dataset's ``__TABLES__``. No indexes: BigQuery has none (a rollup's ``indexes`` are ignored). Marked by
the table's ``description`` option (``ALTER TABLE ... SET OPTIONS``), listed from the dataset's
``INFORMATION_SCHEMA``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from embedadmin.semantic.serving.rollup_source import Ddl, StatementWriter
from embedadmin.semantic.serving.rollup_writers.warehouses import whole_number
from embedadmin.semantic.sources import bigquery

MAX_IDENTIFIER = 1024


class BigQuerySession:
    """A build's client: one query job per statement, waited for."""

    def __init__(self, source: bigquery.BigQuerySource, timeout_s: float) -> None:
        self._source = source
        self._client = source.connect()
        self._timeout_s = timeout_s
        self._job: Any = None

    def run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        source = self._source
        try:
            job = self._client.query(
                sql, job_config=source.job_config(params, self._timeout_s), timeout=source.request_timeout
            )
            self._job = job
            result = job.result(timeout=self._timeout_s + source.request_timeout)
            schema = list(getattr(result, "schema", None) or [])
            rows = [tuple(row.values()) for row in result] if schema else []
        except Exception as exc:
            raise bigquery.error_for(exc, self._timeout_s) from None
        finally:
            self._job = None
        return [field.name for field in schema], rows

    def interrupt(self) -> None:
        job = self._job
        if job is not None:
            job.cancel()

    def close(self) -> None:
        self._client.close()


class BigQueryRollupWriter(StatementWriter):
    dialect = "bigquery"
    ddl = Ddl("bigquery")
    KIND = "BigQuery"

    def __init__(self, url: str) -> None:
        self._source = bigquery.open_source(url)

    @contextlib.contextmanager
    def session(self, timeout_s: float) -> Iterator[BigQuerySession]:
        session = BigQuerySession(self._source, timeout_s)
        try:
            yield session
        finally:
            with contextlib.suppress(Exception):
                session.close()

    def ensure_schema(self, session: Any, schema: str) -> None:
        location = self._source._settings["client"].get("location")
        # A dataset is created where the data is: a job reads and writes in one location.
        options = f" OPTIONS (location = {self.ddl.literal(location)})" if location else ""
        session.run(f"{self.ddl.create_schema(schema)}{options}")

    def measured(self, session: Any, schema: str, table: str, answer: list[tuple[Any, ...]]) -> tuple[int, int]:
        _, found = session.run(
            f"SELECT row_count, size_bytes FROM {self.ddl.identifier(schema)}.__TABLES__ WHERE table_id = @p1",  # noqa: S608
            [table],
        )
        rows, size = found[0] if found else (0, 0)
        return whole_number(rows), whole_number(size)

    def listed(self, session: Any, schema: str) -> list[tuple[str, str | None]]:
        dataset = self.ddl.identifier(schema)
        _, found = session.run(
            f"SELECT t.table_name, o.option_value FROM {dataset}.INFORMATION_SCHEMA.TABLES AS t "  # noqa: S608
            f"LEFT JOIN {dataset}.INFORMATION_SCHEMA.TABLE_OPTIONS AS o ON o.table_name = t.table_name "
            "AND o.option_name = 'description'"
        )
        return [(str(name), description) for name, description in found]

    def comment_statement(self, schema: str, table: str, text: str) -> str:
        return f"ALTER TABLE {self.ddl.table(schema, table)} SET OPTIONS (description = {self.ddl.literal(text)})"


def open_writer(url: str) -> BigQueryRollupWriter:
    return BigQueryRollupWriter(url)
