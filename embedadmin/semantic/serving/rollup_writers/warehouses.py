"""What the warehouses' rollup writers (:mod:`.trino`, :mod:`.snowflake`, :mod:`.bigquery`, :mod:`.databricks`)
share: a build's connection through the warehouse's DB-API driver, opened by the data source module
(``sources/<warehouse>.py``: its URL, connect arguments and error mapping) for the build alone. A build that lost
its lease has its running statement stopped by the driver's cancel, as the query path's: Trino's and Databricks'
``cursor.cancel()``, BigQuery's ``job.cancel()``. Snowflake's writer runs its statements synchronously (no query id
while one runs, which ``abort_query`` needs): its statement runs on to its time limit, then the table is dropped.

No warehouse runs here: these writers are tested by their drivers' ``connect`` replaced with a recorder, the
statements they send snapshot-checked and parsed back by sqlglot in their dialect
(``tests/semantic/serving/test_rollup_writers_warehouses.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from embedadmin.semantic.errors import DataSourceError
from embedadmin.semantic.serving.rollup_source import closing_session


class DriverSession:
    """A build's connection to a warehouse: one cursor per statement, parameters bound by the driver (``bind``
    turns them into what its ``execute`` takes), the driver's ``errors`` mapped by the source module (``mapped``);
    ``stop`` stops the statement a cursor runs (the driver's cancel), None where the writer has none."""

    def __init__(
        self,
        connection: Any,
        *,
        errors: Any,
        mapped: Callable[[Exception], DataSourceError],
        bind: Callable[[Sequence[Any]], Any],
        stop: Callable[[Any], object] | None = None,
    ) -> None:
        self._connection = connection
        self._errors = errors
        self._mapped = mapped
        self._bind = bind
        self._stop = stop
        self._running: Any = None

    def run(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        cursor = self._connection.cursor()
        self._running = cursor
        try:
            cursor.execute(sql, self._bind(params))
            description = cursor.description or []
            rows = [tuple(row) for row in cursor.fetchall()] if description else []
        except self._errors as exc:
            raise self._mapped(exc) from None
        finally:
            self._running = None
            with contextlib.suppress(Exception):
                cursor.close()
        return [column[0] for column in description], rows

    def interrupt(self) -> None:
        cursor = self._running
        if cursor is not None and self._stop is not None:
            self._stop(cursor)

    def close(self) -> None:
        self._connection.close()


@contextlib.contextmanager
def driver_session(
    connection: Any,
    *,
    errors: Any,
    mapped: Callable[[Exception], DataSourceError],
    bind: Callable[[Sequence[Any]], Any],
    first: str = "",
    stop: Callable[[Any], object] | None = None,
) -> Iterator[DriverSession]:
    """A :class:`DriverSession` on ``connection`` for the block, closed after it; ``first``: a statement that sets the
    session up (its time limit) before any other."""
    session = DriverSession(connection, errors=errors, mapped=mapped, bind=bind, stop=stop)
    with closing_session(session):
        if first:
            session.run(first)
        yield session


def column(columns: list[str], rows: list[tuple[Any, ...]], name: str) -> Any:
    """The value of the column ``name`` (case-insensitive) in the first row; None when there is none."""
    lowered = [c.lower() for c in columns]
    if not rows or name.lower() not in lowered:
        return None
    return rows[0][lowered.index(name.lower())]


def whole_number(value: Any) -> int:
    return int(value) if value is not None else 0
