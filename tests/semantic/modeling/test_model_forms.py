"""Forms real Cube model folders use, with Cube 1.7.43's semantics: member SQL in the data source's dialect,
view join paths Cube checks only for cube names, ``.jinja`` files, an empty segment ``sql``, and views that define
their own members (Cube's legacy form). Results are compared with SQL written by hand on the shop data."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from embedadmin.semantic import QueryContext, QueryError, load_model, meta, plan_queries
from embedadmin.semantic.modeling.model import CompiledModel
from tests.semantic.conftest import NOW, run_query
from tests.semantic.databases import Executor

ORDERS_AND_USERS = """
cubes:
  - name: orders
    sql_table: orders
    joins:
      - name: users
        sql: "{CUBE}.user_id = {users.id}"
        relationship: many_to_one
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
      - name: status
        sql: status
        type: string
      - name: created_at
        sql: created_at
        type: time
    measures:
      - name: count
        type: count
      - name: revenue
        sql: amount
        type: sum
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
      - name: city
        sql: city
        type: string
    measures:
      - name: count
        type: count
"""


def write(root: Path, relative: str, text: str) -> None:
    path = root / "model" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))


def compiled(root: Path, dialect: str = "duckdb") -> CompiledModel:
    version = load_model(root / "model", dialect=dialect, check_interval=0)
    assert version.error is None, version.error.message
    return version.require()


def problems(root: Path, dialect: str = "duckdb") -> list[str]:
    version = load_model(root / "model", dialect=dialect, check_interval=0)
    assert version.model is None, "the model compiled"
    assert version.error is not None
    return [str(p) for p in version.error.problems]


def _value(value: Any) -> Any:
    """A cell as text, numbers compared as numbers (the API answers them as strings, drivers as numbers)."""
    if value is None:
        return ""
    try:
        return f"{float(value):.6f}"
    except (TypeError, ValueError):
        return str(value)


def rows(executor: Executor, model: CompiledModel, query: dict[str, Any], ctx: QueryContext | None = None) -> list:
    body = run_query(executor, query, ctx, model=model)
    keys = [*query.get("dimensions", []), *query.get("measures", [])]
    return sorted(tuple(_value(row[k]) for k in keys) for row in body["data"])


def expected(executor: Executor, sql: str) -> list:
    return sorted(tuple(_value(v) for v in row) for row in executor.run(sql)[1])


EXECUTORS = ["duck", pytest.param("pg", marks=pytest.mark.postgres)]


# --- member SQL in the data source's dialect ------------------------------------------------------------------------

BACKTICKS = """
cubes:
  - name: sales
    sql_table: "`shop`.`orders`"
    dimensions:
      - name: id
        sql: "{CUBE}.`id`"
        type: number
        primary_key: true
      - name: tax_a
        sql: "{CUBE}.`taxA`"
        type: number
    measures:
      - name: tax
        sql: "{CUBE}.`taxA`"
        type: sum
"""


@pytest.mark.parametrize("dialect", ["mysql", "bigquery", "databricks", "clickhouse"])
def test_backtick_identifiers_parse_in_the_dialects_that_use_them(tmp_path: Path, dialect: str) -> None:
    write(tmp_path, "cubes/sales.yml", BACKTICKS)

    model = compiled(tmp_path, dialect)

    # The statement is written for the same source: its identifiers quoted as that dialect quotes them.
    plan = plan_queries(model, {"measures": ["sales.tax"], "dimensions": ["sales.tax_a"]}, QueryContext(), now=NOW)
    assert exp.to_identifier("taxA", quoted=True).sql(dialect) in plan.queries[0].sql
    assert model.dialect == dialect


@pytest.mark.parametrize("dialect", ["postgres", "duckdb"])
def test_backticks_are_invalid_sql_where_the_source_does_not_use_them(tmp_path: Path, dialect: str) -> None:
    write(tmp_path, "cubes/sales.yml", BACKTICKS)

    found = problems(tmp_path, dialect)

    assert found == [
        "model/cubes/sales.yml:14: measure sales.tax: invalid SQL '{CUBE}.`taxA`': Invalid expression / Unexpected "
        "token. Line 1, Col: 18.",
        "model/cubes/sales.yml:6: dimension sales.id: invalid SQL '{CUBE}.`id`': Invalid expression / Unexpected "
        "token. Line 1, Col: 16.",
        "model/cubes/sales.yml:10: dimension sales.tax_a: invalid SQL '{CUBE}.`taxA`': Invalid expression / "
        "Unexpected token. Line 1, Col: 18.",
    ]


def test_a_warehouse_dialect_parses_its_own_functions(tmp_path: Path) -> None:
    # given: BigQuery's SAFE_DIVIDE and a Snowflake-only IFF, each in its own source's model
    write(
        tmp_path / "bq",
        "cubes/c.yml",
        """
        cubes:
          - name: c
            sql: SELECT * FROM `project.dataset.orders`
            dimensions:
              - name: ratio
                sql: SAFE_DIVIDE({CUBE}.a, {CUBE}.b)
                type: number
        """,
    )
    write(
        tmp_path / "sf",
        "cubes/c.yml",
        """
        cubes:
          - name: c
            sql_table: DB.SCHEMA.ORDERS
            dimensions:
              - name: big
                sql: IFF({CUBE}.amount > 100, 'big', 'small')
                type: string
        """,
    )

    assert compiled(tmp_path / "bq", "bigquery").entities["c"].dimensions["ratio"].sql is not None
    assert compiled(tmp_path / "sf", "snowflake").entities["c"].dimensions["big"].sql is not None


# --- view join paths: only the cube names are checked ---------------------------------------------------------------


def reverse_view(root: Path) -> None:
    write(root, "cubes/shop.yml", ORDERS_AND_USERS)
    write(
        root,
        "views/customers.yml",
        """
        views:
          - name: customers
            cubes:
              - join_path: users
                includes: [country, count]
              # users declares no join to orders (orders joins users): Cube compiles this and refuses the queries
              # that need the join
              - join_path: users.orders
                prefix: true
                includes: [count]
        """,
    )


def test_a_view_join_path_against_the_joins_direction_compiles(tmp_path: Path) -> None:
    reverse_view(tmp_path)

    model = compiled(tmp_path)

    view = model.entities["customers"]
    assert sorted(view.measures) == ["count", "orders_count"]
    assert view.measures["orders_count"].join_path == ("users", "orders")


def test_a_query_that_needs_a_join_no_cube_declares_is_refused_as_cube_refuses_it(tmp_path: Path) -> None:
    reverse_view(tmp_path)
    model = compiled(tmp_path)

    with pytest.raises(QueryError, match="Can't find join path to join"):
        plan_queries(
            model, {"measures": ["customers.orders_count"], "dimensions": ["customers.country"]}, QueryContext()
        )


@pytest.mark.parametrize("executor_name", EXECUTORS)
def test_members_of_a_view_reached_along_declared_joins_answer(
    tmp_path: Path, executor_name: str, request: pytest.FixtureRequest
) -> None:
    reverse_view(tmp_path)
    executor = request.getfixturevalue(executor_name)
    model = compiled(tmp_path, executor.dialect)

    got = rows(executor, model, {"dimensions": ["customers.country"], "measures": ["customers.count"]})

    assert got == expected(executor, "SELECT country, count(id) FROM users GROUP BY 1")


def test_a_join_path_naming_an_unknown_cube_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "cubes/shop.yml", ORDERS_AND_USERS)
    write(
        tmp_path,
        "views/v.yml",
        "views:\n  - name: v\n    cubes:\n      - join_path: users.nope\n        includes: '*'\n",
    )

    assert problems(tmp_path) == ['model/views/v.yml:4: view v: join_path "users.nope": unknown cube "nope"']


# --- .jinja files ---------------------------------------------------------------------------------------------------


def test_yml_jinja_files_are_rendered_and_compiled(tmp_path: Path) -> None:
    # given: a template with a loop, a .yml.jinja file with no Jinja syntax at all, and a macros file
    write(tmp_path, "macros/helpers.jinja", "{% macro money(column) %}{{ column }} / 100.0{% endmacro %}\n")
    write(
        tmp_path,
        "cubes/orders.yml.jinja",
        """
        {% import "macros/helpers.jinja" as h %}
        cubes:
          - name: orders
            sql_table: orders
            dimensions:
              - name: id
                sql: id
                type: number
                primary_key: true
            measures:
            {%- for status in ["completed", "shipped"] %}
              - name: {{ status }}_revenue
                sql: "{{ h.money('amount') }}"
                type: sum
                filters:
                  - sql: "{CUBE}.status = '{{ status }}'"
            {%- endfor %}
        """,
    )
    write(
        tmp_path,
        "cubes/users.yaml.jinja",
        "cubes:\n  - name: users\n    sql_table: users\n    measures:\n      - name: count\n        type: count\n",
    )

    model = compiled(tmp_path)

    assert sorted(model.entities) == ["orders", "users"]
    assert sorted(model.entities["orders"].measures) == ["completed_revenue", "shipped_revenue"]
    assert model.entities["orders"].measures["shipped_revenue"].sql.text == "amount / 100.0"


def test_a_jinja_file_that_fails_to_render_names_its_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, "cubes/orders.yml.jinja", "cubes:\n  {% for m in dbt_models() %}\n  - {{ m }}\n  {% endfor %}\n")

    assert problems(tmp_path) == ["model/cubes/orders.yml.jinja:2: template error: 'dbt_models' is undefined"]


# --- an empty segment sql -------------------------------------------------------------------------------------------


def empty_segment(root: Path) -> None:
    write(
        root,
        "cubes/shop.yml",
        ORDERS_AND_USERS.replace(
            "    measures:\n      - name: count\n        type: count\n      - name: revenue",
            '    segments:\n      - name: everything\n        sql: ""\n'
            "    measures:\n      - name: count\n        type: count\n      - name: revenue",
            1,
        ),
    )


def test_an_empty_segment_sql_compiles_and_is_listed(tmp_path: Path) -> None:
    empty_segment(tmp_path)

    body = meta(compiled(tmp_path), QueryContext())

    orders = next(c for c in body["cubes"] if c["name"] == "orders")
    assert [s["name"] for s in orders["segments"]] == ["orders.everything"]


@pytest.mark.parametrize("executor_name", EXECUTORS)
def test_an_empty_segment_keeps_every_row(tmp_path: Path, executor_name: str, request: pytest.FixtureRequest) -> None:
    empty_segment(tmp_path)
    executor = request.getfixturevalue(executor_name)
    model = compiled(tmp_path, executor.dialect)

    got = rows(
        executor,
        model,
        {"dimensions": ["orders.status"], "measures": ["orders.revenue"], "segments": ["orders.everything"]},
    )

    assert got == expected(executor, "SELECT status, sum(amount) FROM orders GROUP BY 1")


def test_a_segment_without_sql_is_still_refused(tmp_path: Path) -> None:
    write(tmp_path, "cubes/c.yml", "cubes:\n  - name: c\n    sql_table: t\n    segments:\n      - name: s\n")

    assert problems(tmp_path) == ['model/cubes/c.yml:5: segment c.s: "sql" is required']


# --- views that define their own members (Cube's legacy form) -------------------------------------------------------

OWN_MEMBERS_VIEW = """
views:
  - name: sales
    cubes:
      - join_path: orders
        includes: [status, count, revenue]
      - join_path: orders.users
        prefix: true
        includes: [country]
    measures:
      - name: revenue_per_order
        sql: "{orders.revenue} / NULLIF({orders.count}, 0)"
        type: number
    dimensions:
      - name: city
        sql: "{users.city}"
        type: string
    segments:
      - name: completed
        sql: "{orders.status} = 'completed'"
"""


def test_a_view_may_define_members_that_use_cube_members(tmp_path: Path) -> None:
    write(tmp_path, "cubes/shop.yml", ORDERS_AND_USERS)
    write(tmp_path, "views/sales.yml", OWN_MEMBERS_VIEW)

    body = meta(compiled(tmp_path), QueryContext())

    sales = next(c for c in body["cubes"] if c["name"] == "sales")
    assert [m["name"] for m in sales["measures"]] == ["sales.count", "sales.revenue", "sales.revenue_per_order"]
    assert [d["name"] for d in sales["dimensions"]] == ["sales.status", "sales.users_country", "sales.city"]
    assert [s["name"] for s in sales["segments"]] == ["sales.completed"]


@pytest.mark.parametrize("executor_name", EXECUTORS)
def test_a_views_own_members_answer_as_the_sql_they_stand_for(
    tmp_path: Path, executor_name: str, request: pytest.FixtureRequest
) -> None:
    write(tmp_path, "cubes/shop.yml", ORDERS_AND_USERS)
    write(tmp_path, "views/sales.yml", OWN_MEMBERS_VIEW)
    executor = request.getfixturevalue(executor_name)
    model = compiled(tmp_path, executor.dialect)

    got = rows(
        executor,
        model,
        {
            "dimensions": ["sales.city"],
            "measures": ["sales.count", "sales.revenue_per_order"],
            "segments": ["sales.completed"],
        },
    )

    assert got == expected(
        executor,
        "SELECT u.city, count(o.id), sum(o.amount) / NULLIF(count(o.id), 0) "
        "FROM orders o LEFT JOIN users u ON o.user_id = u.id WHERE o.status = 'completed' GROUP BY 1",
    )


@pytest.mark.parametrize("executor_name", EXECUTORS)
def test_row_filters_of_a_cube_a_views_own_member_reads_apply(
    tmp_path: Path, executor_name: str, request: pytest.FixtureRequest
) -> None:
    # given: users restricted to the viewer's country; the view's own dimension reads users.city
    write(
        tmp_path,
        "cubes/shop.yml",
        ORDERS_AND_USERS
        + """
    access_policy:
      - group: "*"
        row_level:
          filters:
            - member: country
              operator: equals
              values: ["{ securityContext.country }"]
""",
    )
    write(
        tmp_path,
        "views/sales.yml",
        """
        views:
          - name: sales
            cubes:
              - join_path: orders
                includes: [count]
            dimensions:
              - name: city
                sql: "{users.city}"
                type: string
        """,
    )
    executor = request.getfixturevalue(executor_name)
    model = compiled(tmp_path, executor.dialect)
    viewer = QueryContext(security_context={"country": "DE"}, groups=["viewer"])

    got = rows(executor, model, {"dimensions": ["sales.city"], "measures": ["sales.count"]}, viewer)

    assert got == expected(
        executor,
        "SELECT u.city, count(o.id) FROM orders o LEFT JOIN users u ON o.user_id = u.id "
        "WHERE u.country = 'DE' GROUP BY 1",
    )


def test_a_views_own_member_that_reads_a_table_is_refused_as_cube_refuses_it(tmp_path: Path) -> None:
    write(tmp_path, "cubes/shop.yml", ORDERS_AND_USERS)
    write(
        tmp_path,
        "views/v.yml",
        """
        views:
          - name: v
            cubes:
              - join_path: orders
                includes: [count]
            measures:
              - name: total
                sql: amount
                type: sum
            segments:
              - name: mine
                sql: "{CUBE}.user_id = 1"
        """,
    )

    assert problems(tmp_path) == [
        "model/views/v.yml:7: measure v.total: View 'v' defines own member 'v.total'. Please move this member "
        "definition to one of the cubes.",
        "model/views/v.yml:11: segment v.mine: Member 'v.mine' references foreign cubes: v. Please split and move "
        "this definition to corresponding cubes.",
    ]


def test_a_helper_the_folders_python_would_define_is_refused_with_how_to_inline_it(tmp_path: Path) -> None:
    # Cube's globals.py: never run here; the refusal says why and what to write instead.
    write(tmp_path, "globals.py", "from cube import TemplateContext\ntemplate = TemplateContext()\n")
    write(tmp_path, "cubes/orders.yml.jinja", "cubes:\n  {% for m in dbt_models() %}\n  - {{ m }}\n  {% endfor %}\n")

    [problem] = problems(tmp_path)

    assert problem.startswith("model/cubes/orders.yml.jinja:2: template error: 'dbt_models' is undefined (globals.py ")
    assert "never runs" in problem
    assert "Inline what each helper returns" in problem
