"""Helpers of the semantic SQL tests: run a statement end to end (plan, execute, JSON lines) and run
hand-written SQL on the same data with its values written the way the SQL API writes them."""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from embedadmin.semantic import QueryContext
from embedadmin.semantic.cubesql.plan import cubesql_lines, cubesql_plan
from embedadmin.semantic.modeling.model import CompiledModel

from .conftest import NOW, shop_model
from .databases import Executor

ADMIN = QueryContext(groups=["admin"])


def run_sql(
    executor: Executor,
    sql: str,
    ctx: QueryContext = ADMIN,
    *,
    model: CompiledModel | None = None,
    chunk_size: int = 1000,
    **options: Any,
) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """(schema, rows) of a semantic SQL statement, read back from its JSON lines."""
    plan = cubesql_plan(model or shop_model(executor.dialect), sql, ctx, now=NOW, **options)
    _, rows = executor.run(plan.compiled.sql, plan.compiled.params)
    lines = [json.loads(line) for line in cubesql_lines(plan, plan.finished(rows), chunk_size=chunk_size)]
    return lines[0]["schema"], [row for line in lines[1:] for row in line["data"]]


def data(executor: Executor, sql: str, ctx: QueryContext = ADMIN, **options: Any) -> list[list[Any]]:
    return run_sql(executor, sql, ctx, **options)[1]


def _text(value: Any) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%dT%H:%M:%S}.{value.microsecond // 1000:03d}"
    if isinstance(value, date):
        return f"{value.isoformat()}T00:00:00.000"
    return str(value)


def direct(executor: Executor, sql: str) -> list[list[Any]]:
    """Hand-written SQL on the raw tables, values as text (timestamps as the SQL API writes them)."""
    _, rows = executor.run(sql)
    return [[_text(value) for value in row] for row in rows]


def numeric(rows: list[list[Any]]) -> list[list[Any]]:
    """Rows with number strings read as numbers rounded to 6 places, so ``75.0000`` and ``75`` compare equal."""

    def read(value: Any) -> Any:
        if isinstance(value, str):
            try:
                return round(Decimal(value), 6)
            except ArithmeticError:
                return value
        return value

    return [[read(value) for value in row] for row in rows]
