"""Real JavaScript model folders answer queries as Cube 1.7.43 answers them, on the same synthetic rows.

Each ``tests/semantic/fixtures/cube_corpus/<folder>/cube_queries.json`` (written by
``tools/cube_peer_queries.py``) holds the tables a folder's cubes read, the seed their rows are made from, and a few
queries with the rows Cube 1.7.43 answered on that data. Here the same rows are built in DuckDB from the seed
(``tools/synthetic_data.py``), the folder is compiled by this server's compiler, and each query runs through the
load path ``/v1/load`` runs (``plan_queries``, the SQL on the data source, ``load_response``). The rows must equal
Cube's: as a list where the query has an ``order``, else as a multiset; numbers compared as decimals, exactly unless
the member's value is a float (an average, a ratio), then to a relative 1e-9.

A disagreement this server keeps on purpose is listed in ``KNOWN_DIFFERENCES`` with the reason, and asserted to
still differ (once it agrees, the test fails until it is taken out of the list).
"""

from __future__ import annotations

import importlib.util
import json
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import duckdb
import pytest

from embedadmin.semantic import QueryContext, QueryOutcome, load_model, load_response, plan_queries

CORPUS = Path(__file__).resolve().parent / "fixtures" / "cube_corpus"
FOLDERS = sorted(p.parent.name for p in CORPUS.glob("*/cube_queries.json"))
FLOAT_TYPES = ("avg", "number")

# (folder, query index) -> why this server answers otherwise than Cube 1.7.43.
KNOWN_DIFFERENCES: dict[tuple[str, int], str] = {}


def _synthetic_data() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cube_corpus_synthetic_data", CORPUS / "tools" / "synthetic_data.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def recorded(folder: str) -> dict[str, Any]:
    answers: dict[str, Any] = json.loads((CORPUS / folder / "cube_queries.json").read_text())
    return answers


@cache
def database(folder: str) -> duckdb.DuckDBPyConnection:
    """The folder's synthetic rows in an in-memory DuckDB, made from the recorded tables and seed."""
    answers = recorded(folder)
    connection = duckdb.connect(":memory:")
    connection.execute("SET TimeZone = 'UTC'")

    def execute(sql: str, rows: list[tuple[Any, ...]] | None) -> None:
        if rows:
            connection.executemany(sql, rows)
        else:
            connection.execute(sql)

    _synthetic_data().fill(execute, answers["tables"], seed=answers["seed"], rows=answers["rows_per_table"])
    return connection


def cases() -> list[Any]:
    return [
        pytest.param(folder, index, id=f"{folder}-{index}")
        for folder in FOLDERS
        for index in range(len(recorded(folder)["queries"]))
    ]


def ours(folder: str, query: dict[str, Any]) -> list[dict[str, Any]]:
    answers = recorded(folder)
    ctx = QueryContext(security_context=answers["security_context"])
    version = load_model(
        CORPUS / folder / "model", dialect="duckdb", check_interval=0, security_context=answers["security_context"]
    )
    model = version.require()
    plan = plan_queries(model, query, ctx)
    cursor = database(folder).cursor()
    outcomes = []
    for compiled in plan.queries:
        rows = cursor.execute(compiled.sql, list(compiled.params)).fetchall()
        outcomes.append(QueryOutcome(rows=rows))
    body = load_response(model, plan, outcomes, multi=False, db_type="duckdb")
    data: list[dict[str, Any]] = body["data"]
    return data


def float_members(folder: str, query: dict[str, Any]) -> set[str]:
    """The query's measures whose values are floats (an average, a ratio computed by a ``number`` measure)."""
    answers = recorded(folder)
    model = load_model(
        CORPUS / folder / "model", dialect="duckdb", check_interval=0, security_context=answers["security_context"]
    ).require()
    out = set()
    for name in query.get("measures", []):
        cube, member = name.split(".", 1)
        if model.entities[cube].measures[member].type in FLOAT_TYPES:
            out.add(name)
    return out


def same_value(mine: Any, cube: Any, *, floating: bool) -> bool:
    if mine == cube or (mine is None) != (cube is None):
        return mine == cube
    try:
        a, b = Decimal(str(mine)), Decimal(str(cube))
    except InvalidOperation:
        return str(mine) == str(cube)
    if floating:
        return abs(a - b) <= Decimal("1e-9") * max(abs(a), abs(b), Decimal(1))
    return a == b


def same_rows(mine: list[dict[str, Any]], cube: list[dict[str, Any]], *, ordered: bool, floats: set[str]) -> bool:
    if len(mine) != len(cube):
        return False

    def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
        return a.keys() == b.keys() and all(same_value(a[k], b[k], floating=k in floats) for k in b)

    if ordered:
        return all(same(a, b) for a, b in zip(mine, cube, strict=True))
    left = list(mine)
    for row in cube:
        match = next((i for i, candidate in enumerate(left) if same(candidate, row)), None)
        if match is None:
            return False
        left.pop(match)
    return True


def test_the_corpus_queries_cover_the_javascript_folders() -> None:
    # Every recorded answer comes from Cube 1.7.43, and each folder has a few queries Cube answered.
    assert len(FOLDERS) >= 10
    for folder in FOLDERS:
        answers = recorded(folder)
        assert answers["cube_version"] == "1.7.43"
        assert 3 <= len(answers["queries"]) <= 5, folder
        assert all("rows" in q for q in answers["queries"]), f"{folder}: Cube refused a recorded query"


@pytest.mark.parametrize(("folder", "index"), cases())
def test_a_corpus_query_answers_as_cube_does(folder: str, index: int) -> None:
    answer = recorded(folder)["queries"][index]
    query = answer["query"]

    mine = ours(folder, query)

    agrees = same_rows(mine, answer["rows"], ordered=bool(query.get("order")), floats=float_members(folder, query))
    if (folder, index) in KNOWN_DIFFERENCES:
        assert not agrees, (
            f"agrees with Cube now: remove it from KNOWN_DIFFERENCES ({KNOWN_DIFFERENCES[folder, index]})"
        )
        return
    assert agrees, f"{json.dumps(query)}\n  embedadmin: {mine[:8]}\n  Cube:       {answer['rows'][:8]}"
