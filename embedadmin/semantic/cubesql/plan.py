"""Semantic SQL (Cube's SQL API, ``POST /v1/cubesql``): plan a statement, then stream its result as JSON lines.

``/v1/cubesql`` (and the chat tool ``serviceSqlApi``)::

    plan = cubesql_plan(model, body["query"], ctx, timezone=body.get("timezone", "UTC"))  # QueryError: 400
    rows = plan.finished(execute(plan.compiled.sql, plan.compiled.params).rows)  # QueryError: 400
    for line in cubesql_lines(plan, rows):                             # '{"schema": ...}\\n', '{"data": ...}\\n'...
        yield line

The statement is translated (:mod:`.translate`) into the Cube JSON query it means, which is then
normalized and compiled exactly as a ``/v1/load`` query: access policies (hidden members, row filters) and
bound parameters apply the same way, and the caller's SQL never reaches the database. A statement over one
subquery (``SELECT ... FROM (SELECT ... FROM cube ...)``) runs its subquery so and computes the outer statement
on the subquery's rows (:mod:`.postprocess`). Values are
serialized as Cube's SQL API does: every non-null, non-boolean value as a string, timestamps as
``YYYY-MM-DDTHH:mm:ss.SSS``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from embedadmin.core.errors import ApiError
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.cubesql.postprocess import PostProcess, inner_statement
from embedadmin.semantic.cubesql.terms import Term
from embedadmin.semantic.cubesql.translate import parse_statement, translate
from embedadmin.semantic.errors import DataSourceError, QueryError
from embedadmin.semantic.modeling.model import CompiledModel, Dimension, Measure
from embedadmin.semantic.query.normalize import Limits
from embedadmin.semantic.query.normalized import MAX_LIMIT
from embedadmin.semantic.results.meta import member_json
from embedadmin.semantic.results.responses import used_pre_aggregations
from embedadmin.semantic.results.shaping import number_text, refresh_time_text, time_text
from embedadmin.semantic.sql.builder import CompiledQuery
from embedadmin.semantic.sql.planning import LoadPlan, plan_queries

logger = logging.getLogger(__name__)

DEFAULT_CHUNK_SIZE = 1000
INTERNAL_ERROR = "Internal Server Error"
_COUNT_TYPES = frozenset({"count", "count_distinct", "count_distinct_approx"})
_DOUBLE_TYPES = frozenset({"sum", "avg", "min", "max", "number"})
_DIMENSION_TYPES = {"time": "Timestamp", "number": "Double", "boolean": "Boolean"}
_MEASURE_TYPES = {"boolean": "Boolean", "time": "Timestamp"}


@dataclass(frozen=True, slots=True)
class CubeSqlColumn:
    """One result column: name (alias) and Cube column type, the member's format and currency, and
    ``index``, where its values sit in the rows of the compiled statement."""

    name: str
    column_type: str
    member: str  # the row key: "orders.count", "orders.created_at.month"
    index: int
    format: Any = None
    currency: str | None = None

    def schema_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"name": self.name, "column_type": self.column_type}
        if self.format is not None:
            body["format"] = self.format
        if self.currency is not None:
            body["currency"] = self.currency
        return body


@dataclass(frozen=True)
class CubeSqlPlan:
    """A planned semantic SQL statement: the Cube query it means, its compiled statement, its columns; for a
    post-processing statement, the outer statement (``post``) and the subquery's columns it reads (``inner``)."""

    query: dict[str, Any]
    load_plan: LoadPlan
    columns: tuple[CubeSqlColumn, ...]
    post: PostProcess | None = None
    inner: tuple[CubeSqlColumn, ...] = ()
    cut_at: int | None = None  # the row limit that caps the subquery (it has no lower LIMIT of its own)

    @property
    def compiled(self) -> CompiledQuery:
        """What to run on the data source (``sql`` with ``params``)."""
        return self.load_plan.queries[0]

    def finished(self, rows: Iterable[Sequence[Any]]) -> Iterable[Sequence[Any]]:
        """The statement's rows from the compiled statement's ``rows``: those rows as they are, or for a
        post-processing statement the outer statement computed on the whole of them (a :class:`QueryError`
        raised here, before any line of the answer is written)."""
        if self.post is None:
            return rows
        read = [[row[c.index] for c in self.inner] for row in rows]
        complete = self.cut_at is None or len(read) < self.cut_at
        return self.post.rows(read, [c.name for c in self.inner], complete=complete)

    def schema(self) -> list[dict[str, Any]]:
        return [column.schema_json() for column in self.columns]


def cubesql_plan(
    model: CompiledModel,
    sql: str,
    ctx: QueryContext,
    *,
    timezone: str = "UTC",
    now: datetime | None = None,
    row_limit: int = MAX_LIMIT,
) -> CubeSqlPlan:
    """Translate and compile one semantic SQL statement for ``ctx``; raises QueryError for what is unsupported.
    ``plan.query`` is the Cube JSON query the statement means (what ``/v1/convert-query`` answers).

    ``LIMIT`` above ``row_limit`` (and a statement without ``LIMIT``) is silently capped at ``row_limit``, as
    Cube caps the SQL API's queries at ``CUBEJS_DB_QUERY_LIMIT``.
    """
    statement = parse_statement(sql)
    inner = inner_statement(statement)
    translation = translate(model, inner or statement, ctx, timezone=timezone, now=now, row_limit=row_limit)
    limits = Limits(default=row_limit, maximum=row_limit)
    try:
        load_plan = plan_queries(model, translation.query, ctx, now=now, default_timezone=timezone, limits=limits)
    except RecursionError:
        raise QueryError("The SQL query has too many conditions") from None
    positions: dict[str, int] = {}
    for index, column in enumerate(load_plan.queries[0].columns):
        positions.setdefault(column.key, index)
    columns = tuple(
        _column(model, output.name, output.term, positions[output.term.key]) for output in translation.outputs
    )
    if inner is None:
        return CubeSqlPlan(translation.query, load_plan, columns)
    try:
        post = PostProcess(statement, [(c.name, c.column_type) for c in columns])
    except RecursionError:
        raise QueryError("The SQL query is nested too deeply") from None
    outer = tuple(CubeSqlColumn(c.name, c.column_type, "", i) for i, c in enumerate(post.columns))
    cut_at = row_limit if translation.query["limit"] >= row_limit else None
    return CubeSqlPlan(translation.query, load_plan, outer, post, columns, cut_at)


def _column(model: CompiledModel, name: str, term: Term, index: int) -> CubeSqlColumn:
    described = member_json(model, term.member)
    return CubeSqlColumn(
        name=name,
        column_type=column_type(term),
        member=term.key,
        index=index,
        format=described.get("format"),
        currency=described.get("currency"),
    )


def column_type(term: Term) -> str:
    """Cube's SQL API column type for a member (``V1CubeMetaMeasureExt::get_sql_type`` and its dimension twin)."""
    member = term.member
    if term.granularity:
        return "Timestamp"
    if isinstance(member, Measure):
        if member.type in _COUNT_TYPES:
            return "Int64"
        if member.type in _DOUBLE_TYPES:
            return "Double"
        return _MEASURE_TYPES.get(member.type, "String")
    if isinstance(member, Dimension):
        return _DIMENSION_TYPES.get(member.type, "String")
    return "Boolean"


def cell(value: Any, column_type: str) -> Any:
    """One value as the SQL API serializes it: strings for everything but NULL and booleans."""
    if value is None or isinstance(value, bool):
        return value
    if column_type == "Boolean" and isinstance(value, int) and value in (0, 1):
        return bool(value)  # a database without a boolean type (MySQL) answers 1 and 0
    if column_type == "Timestamp" or isinstance(value, datetime | date):
        return time_text(value)
    if isinstance(value, str):
        return value
    if isinstance(value, int | float | Decimal):
        return number_text(value)
    return str(value)


def cubesql_rows(plan: CubeSqlPlan, rows: Iterable[Sequence[Any]]) -> Iterator[list[Any]]:
    """The statement's rows (``plan.finished``'s) as the SQL API's output rows."""
    columns = [(c.index, c.column_type) for c in plan.columns]
    for row in rows:
        yield [cell(row[index], kind) for index, kind in columns]


def cubesql_schema_line(plan: CubeSqlPlan, *, last_refresh_time: datetime | None = None) -> str:
    body: dict[str, Any] = {"schema": plan.schema()}
    if last_refresh_time is not None:
        body["lastRefreshTime"] = refresh_time_text(last_refresh_time)
    used = plan.compiled.hints.get("preAggregation")
    if used is not None:
        body["usedPreAggregations"] = used_pre_aggregations(used)
    return _line(body)


def cubesql_error_line(message: str, *, request_id: str | None = None) -> str:
    """The final line of a stream that failed after its first line: ``{"error": ..., "requestId": ...}``."""
    body: dict[str, Any] = {"error": message}
    if request_id is not None:
        body["requestId"] = request_id
    return _line(body)


def cubesql_lines(
    plan: CubeSqlPlan,
    rows: Iterable[Sequence[Any]],
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    last_refresh_time: datetime | None = None,
    request_id: str | None = None,
) -> Iterator[str]:
    """The JSON-lines body: the schema line, then ``{"data": [...]}`` lines of at most ``chunk_size`` rows
    (one ``{"data": []}`` for an empty result). Each line ends with a newline.

    ``rows`` may be lazy: an error raised while reading it (or serializing) ends the stream with an
    ``{"error"}`` line, as Cube does once streaming has begun (internal faults are logged, not shown).
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    yield cubesql_schema_line(plan, last_refresh_time=last_refresh_time)
    try:
        chunk: list[list[Any]] = []
        sent = False
        for row in cubesql_rows(plan, rows):
            chunk.append(row)
            if len(chunk) >= chunk_size:
                yield _line({"data": chunk})
                chunk, sent = [], True
        if chunk or not sent:
            yield _line({"data": chunk})
    except (ApiError, DataSourceError) as exc:
        yield cubesql_error_line(getattr(exc, "message", None) or str(exc), request_id=request_id)
    except Exception:
        logger.exception("cubesql stream failed")
        yield cubesql_error_line(INTERNAL_ERROR, request_id=request_id)


def _line(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n"


__all__ = [
    "CubeSqlColumn",
    "CubeSqlPlan",
    "column_type",
    "cubesql_error_line",
    "cubesql_lines",
    "cubesql_plan",
    "cubesql_rows",
    "cubesql_schema_line",
]
