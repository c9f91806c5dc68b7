"""Compiled statements reused across filter values (``semantic/sql/shapes.py``): a query that differs from a
known one only in its filter values is rebound, and the rebound statement is the one a full compile gives."""

from __future__ import annotations

import copy
import re
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest

from embedadmin.semantic import QueryContext, plan_queries
from embedadmin.semantic.sql import planning as api
from embedadmin.semantic.sql import shapes as sql_shapes
from embedadmin.semantic.sql.builder import compile_query
from tests.semantic.conftest import NOW, shop_model
from tests.semantic.query.test_policies import MANAGER, READER, secure_model
from tests.semantic.sql.test_filters import OPERATORS

_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(.*)$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_TEXT_SUFFIXES = ["", "%", "_x", "\\", "'; DROP TABLE orders; --", "é"]


def _vary(value: Any, k: int) -> Any:
    """Another value of the same kind (null stays null): the ``k``-th variant."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value + k
    match = _DATE.match(value)
    if match:
        day = date.fromisoformat(match.group(1)) + timedelta(days=k)
        return day.isoformat() + match.group(2)
    if _NUMBER.match(value):
        return str(Decimal(value) + k)
    return value + _TEXT_SUFFIXES[k % len(_TEXT_SUFFIXES)] + ("" if k < len(_TEXT_SUFFIXES) else str(k))


def _variant(node: Any, k: int) -> Any:
    node = copy.deepcopy(node)
    if isinstance(node, list):
        return [_variant(item, k) for item in node]
    if isinstance(node, dict):
        if "values" in node:
            node["values"] = [_vary(v, k) for v in node["values"]]
        for group in ("and", "or"):
            if group in node:
                node[group] = [_variant(item, k) for item in node[group]]
    return node


class _Compiles:
    """Counts full compiles through ``api.compile_query``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        monkeypatch.setattr(api, "compile_query", self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.count += 1
        return compile_query(*args, **kwargs)


def _query(filters: list[dict[str, Any]], timezone: str = "UTC") -> dict[str, Any]:
    return {
        "measures": ["orders.count"],
        "dimensions": ["orders.status"],
        "filters": filters,
        "timezone": timezone,
        "order": {"orders.count": "desc"},
    }


def _fresh(model: Any, query: dict[str, Any], ctx: QueryContext) -> Any:
    """The full compile of ``query``: normalized through ``plan_queries``, then compiled with no cache."""
    planned = plan_queries(model, query, ctx, now=NOW).queries[0]
    return compile_query(model, planned.query, ctx, now=NOW)


@pytest.mark.parametrize("timezone", ["UTC", "America/New_York"])
@pytest.mark.parametrize(("name", "filters", "_expected"), OPERATORS, ids=[o[0] for o in OPERATORS])
def test_every_operator_rebinds_to_the_statement_a_full_compile_gives(
    monkeypatch, name, filters, _expected, timezone
) -> None:
    model = shop_model("duckdb")
    ctx = QueryContext()
    compiles = _Compiles(monkeypatch)
    queries = [_query(_variant(filters, k), timezone) for k in range(8)]

    planned = [plan_queries(model, query, ctx, now=NOW).queries[0] for query in queries]

    for query, compiled in zip(queries, planned, strict=True):
        fresh = _fresh(model, query, ctx)
        assert sql_shapes.same_statement(compiled, fresh), name
        assert compiled.query == fresh.query
    distinct = len({repr(p.query) for p in planned})
    # The first two distinct queries of a shape are compiled (the second checks the rebinding); the rest
    # are rebound. Relative dates resolve to the same values here, so those queries are the same query.
    assert compiles.count == min(distinct, 2), name


def test_access_policy_values_stay_those_of_the_caller(monkeypatch) -> None:
    model = secure_model()
    compiles = _Compiles(monkeypatch)

    def query(k: int) -> dict[str, Any]:
        return {
            "measures": ["secure_orders.count"],
            "filters": [{"member": "secure_orders.status", "operator": "notEquals", "values": [f"s{k}"]}],
        }

    for ctx in (READER, MANAGER, READER):
        for k in range(4):
            compiled = plan_queries(model, query(k), ctx, now=NOW).queries[0]
            fresh = _fresh(model, query(k), ctx)
            assert sql_shapes.same_statement(compiled, fresh)
    assert compiles.count == 4  # two per caller: the policies' own values are part of the statement


def test_a_shape_whose_rebinding_differs_is_always_compiled(monkeypatch) -> None:
    model = shop_model("duckdb")
    compiles = _Compiles(monkeypatch)
    monkeypatch.setattr(sql_shapes, "bound_value", lambda how, arg, value, zone: "not the value")

    for k in range(5):
        filters = [{"member": "orders.status", "operator": "equals", "values": [f"status-{k}"]}]
        compiled = plan_queries(model, _query(filters), QueryContext(), now=NOW).queries[0]
        assert compiled.params[0] == f"status-{k}"
    assert compiles.count == 5


def test_a_value_that_binds_nothing_keeps_its_shape_compiled(monkeypatch) -> None:
    """``beforeDate`` reads only its first value: a second one is not bound, so the shape is not rebound."""
    model = shop_model("duckdb")
    compiles = _Compiles(monkeypatch)

    for k in range(4):
        values = ["2024-03-01", f"2024-04-0{k + 1}"]
        filters = [{"member": "orders.created_at", "operator": "beforeDate", "values": values}]
        plan_queries(model, _query(filters), QueryContext(), now=NOW)
    assert compiles.count == 4
