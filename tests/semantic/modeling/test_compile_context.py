"""COMPILE_CONTEXT per compile key: one model per distinct security context, in YAML (Jinja and single braces) and
JavaScript alike; models cached per key in a bounded table, every key compiled again when a file changes; only
identifier-safe values select a model."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from embedadmin.semantic import ModelError, QueryContext, meta, plan_queries
from embedadmin.semantic.modeling.registry import ModelRegistry, compile_key

JINJA = """
cubes:
  - name: orders
    sql_table: "{{ COMPILE_CONTEXT.securityContext.schema }}.orders"
    measures:
      - name: count
        type: count
{% if COMPILE_CONTEXT.security_context.schema == 'gold' %}
      - name: vip_count
        sql: "{CUBE}.tier = '{COMPILE_CONTEXT.securityContext.schema}'"
        type: count
{% endif %}
"""

SINGLE_BRACES = """
cubes:
  - name: orders
    sql_table: "{COMPILE_CONTEXT.securityContext.schema}.orders"
    measures:
      - name: count
        type: count
"""

JAVASCRIPT = """
const { securityContext: { schema } } = COMPILE_CONTEXT;
const extra = schema === `gold` ? { vip_count: { type: `count`, sql: `${CUBE}.tier = 'gold'` } } : {};
cube(`orders`, {
  sqlTable: `${COMPILE_CONTEXT.securityContext.schema}.orders`,
  measures: Object.assign({ count: { type: `count` } }, extra),
});
"""


def write(root: Path, name: str, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


@pytest.mark.parametrize(("name", "text"), [("m.yml", JINJA), ("m.yml", SINGLE_BRACES), ("m.js", JAVASCRIPT)])
def test_each_compile_key_compiles_its_own_model(tmp_path: Path, name: str, text: str) -> None:
    write(tmp_path, name, text)
    registry = ModelRegistry(check_interval=60)

    gold = registry.get(tmp_path, dialect="duckdb", security_context={"schema": "gold"}).require()
    lead = registry.get(tmp_path, dialect="duckdb", security_context={"schema": "lead"}).require()

    sql = [plan_queries(m, {"measures": ["orders.count"]}, QueryContext()).queries[0].sql for m in (gold, lead)]
    assert 'FROM gold.orders AS "orders"' in sql[0]
    assert 'FROM lead.orders AS "orders"' in sql[1]
    assert gold.compiler_id != lead.compiler_id  # caches keyed by it never mix the two
    if name != "m.yml" or text == JINJA:
        members = [[m["name"] for m in meta(x, QueryContext())["cubes"][0]["measures"]] for x in (gold, lead)]
        assert members == [["orders.count", "orders.vip_count"], ["orders.count"]]


def test_a_model_is_compiled_once_per_key_and_the_table_is_bounded(tmp_path: Path) -> None:
    write(tmp_path, "m.js", JAVASCRIPT)
    registry = ModelRegistry(check_interval=60, max_keys=2)

    def model(schema: str) -> object:
        return registry.get(tmp_path, dialect="duckdb", security_context={"schema": schema}).require()

    first = model("a")
    assert model("a") is first  # kept
    second = model("b")
    model("a")
    model("c")  # a third key drops the least recently used: b

    assert model("a") is first
    assert model("b") is not second  # compiled again when its tenant came back


def test_a_file_change_compiles_every_key_again_and_a_broken_file_keeps_each_keys_last_model(tmp_path: Path) -> None:
    path = write(tmp_path, "m.yml", SINGLE_BRACES)
    registry = ModelRegistry(check_interval=0)
    before = {s: registry.get(tmp_path, dialect="duckdb", security_context={"schema": s}).require() for s in "ab"}

    path.write_text(path.read_text().replace("name: count", "name: total"))
    os.utime(path, ns=(time.time_ns() + 5_000_000_000,) * 2)
    after = {s: registry.get(tmp_path, dialect="duckdb", security_context={"schema": s}).require() for s in "ab"}

    assert all("orders.total" in after[s].members and after[s] is not before[s] for s in "ab")
    path.write_text("cubes: [")
    os.utime(path, ns=(time.time_ns() + 10_000_000_000,) * 2)
    broken = registry.get(tmp_path, dialect="duckdb", security_context={"schema": "a"})
    assert broken.model is after["a"]
    assert isinstance(broken.error, ModelError)


@pytest.mark.parametrize(
    "context",
    [
        {"schema": "a; DROP TABLE orders"},
        {"schema": "a.b"},
        {"schema": "it's"},
        {"schema": ""},
        {"schema": 1.5},
        {"schema": ["a"]},
        {"schema": None},
        {"schema": "x" * 101},
        {"nested": {"schema": "a b"}},
    ],
)
def test_only_identifier_safe_values_select_a_model(context: dict) -> None:
    with pytest.raises(ValueError, match="compile key"):
        compile_key(context)


def test_compile_keys_are_canonical() -> None:
    assert compile_key({"b": 1, "a": "x-y_Z"}) == compile_key({"a": "x-y_Z", "b": 1}) == '{"a":"x-y_Z","b":1}'
    assert compile_key(None) == compile_key({}) == "{}"
    assert compile_key({"embed": {"embedTenant": "north", "x": True}}) == '{"embed":{"embedTenant":"north","x":true}}'


def test_a_key_the_compile_context_lacks_is_undefined_in_javascript_and_an_error_in_jinja(tmp_path: Path) -> None:
    write(tmp_path / "js", "m.js", JAVASCRIPT)
    write(tmp_path / "jinja", "m.yml", JINJA)
    write(tmp_path / "braces", "m.yml", SINGLE_BRACES)
    registry = ModelRegistry(check_interval=60)

    javascript = registry.get(tmp_path / "js", dialect="duckdb").require()
    jinja = registry.get(tmp_path / "jinja", dialect="duckdb")
    braces = registry.get(tmp_path / "braces", dialect="duckdb")

    # as in Cube: a model compiled without the key (the administrators' view of it) still compiles in JavaScript
    assert javascript.entities["orders"].sql_table == "undefined.orders"
    assert jinja.error is not None
    assert "'dict object' has no attribute 'schema'" in jinja.error.message
    assert braces.error is not None
    assert "the compile context has no securityContext.schema" in braces.error.message
