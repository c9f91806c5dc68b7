"""A deployment's "load what compiles": the cubes and views that compile serve, each one that does not is listed with
its fault (and so is whatever uses it); without the switch, any fault refuses the whole model."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from embedadmin.semantic import ModelError, QueryContext, load_model, meta
from embedadmin.semantic.modeling.model import CompilerError

GOOD = """
cubes:
  - name: orders
    sql_table: orders
    joins:
      - name: users
        sql: "{CUBE}.user_id = {users.id}"
        relationship: many_to_one
      - name: broken
        sql: "{CUBE}.id = {broken.order_id}"
        relationship: one_to_many
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
      - name: status
        sql: status
        type: string
    measures:
      - name: count
        type: count
  - name: users
    sql_table: users
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
      - name: country
        sql: country
        type: string
"""
BROKEN = """
cubes:
  - name: broken
    sql_table: line_items
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
      - name: order_id
        sql: order_id
        type: number
    measures:
      - name: n
        type: summ
  - name: uses_broken
    sql_table: products
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
      - name: items
        sql: "{broken.id}"
        type: number
"""
VIEWS = """
views:
  - name: sales
    cubes:
      - join_path: orders
        includes: [status, count]
      - join_path: orders.users
        prefix: true
        includes: [country]
  - name: everything
    cubes:
      - join_path: orders
        includes: [count]
      - join_path: orders.broken
        prefix: true
        includes: [id]
"""


def folder(tmp_path: Path, *, unreadable: bool = True) -> Path:
    root = tmp_path / "model"
    for name, text in (("cubes/good.yml", GOOD), ("cubes/broken.yml", BROKEN), ("views/views.yml", VIEWS)):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    if unreadable:
        (root / "cubes" / "typo.yml").write_text("cubes:\n  - name: x\n   sql_table: t\n")
    return root


def test_without_the_switch_any_fault_refuses_the_model(tmp_path: Path) -> None:
    version = load_model(folder(tmp_path), dialect="duckdb", check_interval=0)

    assert version.model is None
    assert isinstance(version.error, ModelError)
    assert version.error.message.startswith("Model error: model/cubes/typo.yml:3: invalid YAML")


def test_what_compiles_serves_and_the_rest_is_listed_with_its_fault(tmp_path: Path) -> None:
    version = load_model(folder(tmp_path), dialect="duckdb", check_interval=0, partial=True)

    model = version.require()
    assert version.error is None
    assert list(model.entities) == ["orders", "users", "sales"]
    # the join to the cube left out is left out too; orders keeps its other join
    assert [j.target for j in model.entities["orders"].joins] == ["users"]
    assert model.compiler_errors == (
        CompilerError(None, "model/cubes/typo.yml", 3, "", "invalid YAML: did not find expected '-' indicator"),
        CompilerError("broken", "model/cubes/broken.yml", 14, "measure broken.n", 'unknown type "summ"'),
        CompilerError(
            "uses_broken",
            "model/cubes/broken.yml",
            15,
            "cube uses_broken",
            'left out: it uses "broken", which does not compile',
        ),
        CompilerError(
            "orders", "model/cubes/good.yml", 8, "join orders.broken", 'left out: cube "broken" does not compile'
        ),
        CompilerError(
            "everything",
            "model/views/views.yml",
            9,
            "view everything",
            'left out: it uses "broken", which does not compile',
        ),
    )


def test_meta_lists_the_faults_as_compiler_errors_to_api_callers_only(tmp_path: Path) -> None:
    model = load_model(folder(tmp_path), dialect="duckdb", check_interval=0, partial=True).require()

    body = meta(model, QueryContext())
    viewer = meta(model, QueryContext(only_granted=True))

    assert [c["name"] for c in body["cubes"]] == ["orders", "users", "sales"]
    assert body["compilerErrors"][1] == {
        "name": "broken",
        "file": "model/cubes/broken.yml",
        "line": 14,
        "member": "measure broken.n",
        "message": 'unknown type "summ"',
    }
    assert [e["name"] for e in body["compilerErrors"]] == [None, "broken", "uses_broken", "orders", "everything"]
    # an embed viewer reads only what was granted: the faults name cubes they may not see
    assert "compilerErrors" not in viewer


def test_a_model_that_compiles_whole_has_no_compiler_errors(tmp_path: Path) -> None:
    root = tmp_path / "model"
    (root / "cubes").mkdir(parents=True)
    whole = GOOD.replace(
        '      - name: broken\n        sql: "{CUBE}.id = {broken.order_id}"\n        relationship: one_to_many\n', ""
    )
    (root / "cubes" / "good.yml").write_text(textwrap.dedent(whole).lstrip("\n"))

    model = load_model(root, dialect="duckdb", check_interval=0, partial=True).require()

    assert model.compiler_errors == ()
    assert "compilerErrors" not in meta(model, QueryContext())


def test_when_nothing_compiles_the_model_is_refused_even_with_the_switch(tmp_path: Path) -> None:
    root = tmp_path / "model"
    (root / "cubes").mkdir(parents=True)
    (root / "cubes" / "broken.yml").write_text(textwrap.dedent(BROKEN).lstrip("\n"))

    version = load_model(root, dialect="duckdb", check_interval=0, partial=True)

    assert version.model is None
    assert version.error is not None
    assert [str(p) for p in version.error.problems] == [
        'model/cubes/broken.yml:14: measure broken.n: unknown type "summ"',
        'model/cubes/broken.yml:15: cube uses_broken: left out: it uses "broken", which does not compile',
    ]


@pytest.mark.parametrize("partial", [False, True])
def test_each_setting_is_its_own_compiled_model(tmp_path: Path, partial: bool) -> None:
    root = folder(tmp_path, unreadable=False)

    first = load_model(root, dialect="duckdb", check_interval=0, partial=partial)
    other = load_model(root, dialect="duckdb", check_interval=0, partial=not partial)

    assert (first.model is not None) is partial
    assert (other.model is not None) is not partial
