"""Model loading and compilation: every construct, every error with file, line and member, and the cache."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from embedadmin.semantic import ModelError, load_model
from embedadmin.semantic.modeling.model import CubeReference, MemberReference
from tests.conftest import run_concurrently
from tests.semantic.conftest import SHOP, shop_model
from tests.waiting import wait_until


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def compile_dir(root: Path, dialect: str = "duckdb"):
    return load_model(root, dialect=dialect, check_interval=0)


def error_of(root: Path) -> ModelError:
    version = compile_dir(root)
    assert version.model is None
    assert version.error is not None
    return version.error


ORDERS = """
cubes:
  - name: orders
    sql_table: public.orders
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
"""


def test_shop_model_compiles_every_construct() -> None:
    model = shop_model("duckdb")

    assert list(model.entities) == ["line_items", "products", "orders", "users", "orders_view"]
    orders = model.entities["orders"]
    assert orders.sql_table == "orders"
    assert orders.primary_keys == ("id",)
    assert [(j.target, j.relationship) for j in orders.joins] == [("users", "belongsTo"), ("line_items", "hasMany")]
    assert orders.measures["revenue"].currency == "USD"
    assert orders.measures["count"].drill_members == ("orders.id", "orders.status", "users.city")
    assert [f.text for f in orders.measures["completed_count"].filters] == ["{CUBE}.status = 'completed'"]
    # Jinja rendered the segment's status list before the YAML was read.
    assert orders.segments["finished"].sql.text == "{CUBE}.status IN ('completed', 'shipped')"
    grains = orders.dimensions["created_at"].granularities
    assert (grains["fiscal_year"].interval.months, grains["fiscal_year"].offset.months) == (12, 3)
    assert (grains["sunday_week"].interval.seconds, grains["sunday_week"].offset.seconds) == (604800, -86400)
    assert grains["half_year"].origin == "2020-01-01"
    assert model.entities["users"].dimensions["tier"].case is not None
    assert model.entities["users"].hierarchies[0].levels == ("users.country", "users.city")
    assert model.entities["products"].sql is not None
    assert model.entities["line_items"].dimensions["order_id"].display.public is False


def test_references_resolve_to_members_and_cube_aliases() -> None:
    model = shop_model("duckdb")
    share = model.entities["orders"].measures["completed_share"].sql
    assert sorted(share.refs.values(), key=repr) == [
        MemberReference("orders", "completed_count", kind="measure"),
        MemberReference("orders", "count", kind="measure"),
    ]
    user_country = model.entities["orders"].dimensions["user_country"].sql
    assert list(user_country.refs.values()) == [MemberReference("users", "country")]
    join = model.entities["orders"].joins[0].sql
    assert set(join.refs.values()) == {CubeReference("orders"), MemberReference("users", "id")}


def test_view_members_alias_cube_members_with_join_paths() -> None:
    view = shop_model("duckdb").entities["orders_view"]

    assert view.is_view
    assert list(view.measures) == ["count", "revenue", "users_count"]
    assert view.measures["revenue"].alias_member == "orders.revenue"
    assert view.measures["revenue"].display.title == "Orders View Total Revenue"
    assert view.dimensions["users_city"].alias_member == "users.city"
    assert view.dimensions["users_city"].join_path == ("orders", "users")
    assert "users_tier" not in view.dimensions  # excluded
    # Primary keys are not carried into views: users.id becomes a plain, public dimension.
    assert view.dimensions["users_id"].primary_key is False
    assert view.dimensions["users_id"].display.public is True
    assert view.segments["users_german"].alias_member == "users.german"
    assert [h.levels for h in view.hierarchies] == [("orders_view.users_country", "orders_view.users_city")]
    assert view.access_policies is not None
    assert len(view.access_policies) == 2


@pytest.mark.parametrize(
    ("spelling", "normalized"),
    [
        ("one_to_one", "hasOne"),
        ("one_to_many", "hasMany"),
        ("many_to_one", "belongsTo"),
        ("has_one", "hasOne"),
        ("has_many", "hasMany"),
        ("belongs_to", "belongsTo"),
        ("hasOne", "hasOne"),
        ("hasMany", "hasMany"),
        ("belongsTo", "belongsTo"),
        ("oneToMany", "hasMany"),
        ("manyToOne", "belongsTo"),
        ("oneToOne", "hasOne"),
    ],
)
def test_every_relationship_spelling(tmp_path: Path, spelling: str, normalized: str) -> None:
    write(
        tmp_path,
        "cubes/orders.yml",
        ORDERS.replace(
            "    dimensions:",
            f"""    joins:
      - name: users
        sql: "{{CUBE}}.user_id = {{users.id}}"
        relationship: {spelling}
    dimensions:""",
            1,
        ),
    )
    write(tmp_path, "cubes/users.yml", ORDERS.replace("orders", "users"))

    model = compile_dir(tmp_path).require()

    assert model.entities["orders"].joins[0].relationship == normalized


def test_camel_case_keys_nested_folders_and_yaml_extension(tmp_path: Path) -> None:
    write(
        tmp_path,
        "deep/nested/orders.yaml",
        """
        cubes:
          - name: orders
            sqlTable: orders
            shown: false
            dimensions:
              - name: id
                sql: id
                type: number
                primaryKey: true
              - name: createdAt
                sql: created_at
                type: time
            measures:
              - name: count
                type: countDistinct
                sql: id
                drillMembers: [createdAt]
        """,
    )

    model = compile_dir(tmp_path).require()

    orders = model.entities["orders"]
    assert orders.public is False
    assert orders.dimensions["id"].primary_key is True
    assert orders.measures["count"].type == "count_distinct"
    assert orders.measures["count"].drill_members == ("orders.createdAt",)


def test_extends_inherits_members_and_overrides_by_name(tmp_path: Path) -> None:
    write(tmp_path, "cubes/orders.yml", ORDERS)
    write(
        tmp_path,
        "cubes/big_orders.yml",
        """
        cubes:
          - name: big_orders
            extends: orders
            sql_table: big_orders
            measures:
              - name: count
                type: count
                title: Big Count
              - name: revenue
                sql: amount
                type: sum
        """,
    )

    model = compile_dir(tmp_path).require()

    child = model.entities["big_orders"]
    assert child.sql_table == "big_orders"
    assert list(child.dimensions) == ["id", "status"]
    assert child.measures["count"].display.short_title == "Big Count"
    assert list(child.measures) == ["count", "revenue"]
    assert child.dimensions["status"].entity == "big_orders"


def test_jinja_macros_import_and_python_like_globals(tmp_path: Path) -> None:
    write(tmp_path, "macros/helpers.jinja", "{% macro money(col) %}{{ col }} / 100.0{% endmacro %}\n")
    write(
        tmp_path,
        "cubes/orders.yml",
        """
        {% import "macros/helpers.jinja" as h %}
        cubes:
          - name: orders
            sql_table: orders
            measures:
        {%- for i in range(1, 4) %}
              - name: amount_{{ i }}
                sql: "{{ h.money('amount_' ~ i) }}"
                type: sum
        {%- endfor %}
              - name: n_{{ len([1, 2]) }}
                type: count
        """,
    )

    model = compile_dir(tmp_path).require()

    measures = model.entities["orders"].measures
    assert list(measures) == ["amount_1", "amount_2", "amount_3", "n_2"]
    assert measures["amount_2"].sql.text == "amount_2 / 100.0"


def test_compiler_id_is_a_stable_hash_of_the_files(tmp_path: Path) -> None:
    write(tmp_path, "cubes/orders.yml", ORDERS)
    first = compile_dir(tmp_path).require().compiler_id

    again = load_model(tmp_path, dialect="postgres", check_interval=0).require().compiler_id

    assert first == again
    assert len(first) == 64


BROKEN = [
    (
        "unknown measure type",
        ORDERS.replace("        type: count\n", "        type: summ\n"),
        'model/cubes/orders.yml:14: measure orders.count: unknown type "summ"',
    ),
    (
        "unknown dimension type",
        ORDERS.replace("type: string", "type: text"),
        'model/cubes/orders.yml:11: dimension orders.status: unknown type "text"',
    ),
    (
        "missing sql",
        ORDERS.replace("        sql: status\n", ""),
        'model/cubes/orders.yml:9: dimension orders.status: "sql" is required',
    ),
    (
        "unknown reference",
        ORDERS.replace("sql: status", 'sql: "{CUBE}.status || {nope}"'),
        "model/cubes/orders.yml:10: dimension orders.status: {nope}: 'orders' has no member 'nope'",
    ),
    (
        "invalid SQL",
        ORDERS.replace("sql: status", 'sql: "status +* ("'),
        "model/cubes/orders.yml:10: dimension orders.status: invalid SQL 'status +* ('",
    ),
    (
        "two statements",
        ORDERS.replace("sql: status", 'sql: "status; DROP TABLE orders"'),
        "model/cubes/orders.yml:10: dimension orders.status: invalid SQL 'status; DROP TABLE orders': expected one",
    ),
    (
        "unknown property",
        ORDERS.replace("        primary_key: true\n", "        primary_key: true\n        primery: 1\n"),
        'model/cubes/orders.yml:9: dimension orders.id: unknown property "primery"',
    ),
    (
        "duplicate member",
        ORDERS.replace("      - name: status", "      - name: id"),
        "model/cubes/orders.yml:9: dimension orders.id: duplicate member name",
    ),
    (
        "invalid YAML",
        ORDERS.replace("    dimensions:", "    dimensions: [", 1),
        "model/cubes/orders.yml:",
    ),
    (
        "duplicate key",
        ORDERS.replace("    sql_table: public.orders\n", "    sql_table: public.orders\n    sql_table: x\n"),
        'model/cubes/orders.yml:4: invalid YAML: duplicate key "sql_table"',
    ),
    (
        "template error",
        "{% for x in %}\n" + ORDERS,
        "model/cubes/orders.yml:1: template error:",
    ),
    (
        "undefined template variable",
        "# {{ nope }}\n" + ORDERS,
        "model/cubes/orders.yml:1: template error: 'nope' is undefined",
    ),
    (
        "templates run sandboxed",
        "# {{ ''.__class__.__mro__ }}\n" + ORDERS,
        "model/cubes/orders.yml:1: template error: access to attribute '__class__' of 'str' object is unsafe.",
    ),
    (
        "templates cannot read files outside the model",
        '{% include "../../../../../../etc/passwd" %}\n' + ORDERS,
        "model/cubes/orders.yml:1: template error: ../../../../../../etc/passwd",
    ),
    (
        "sql_table and sql",
        ORDERS.replace("    sql_table: public.orders\n", "    sql_table: a\n    sql: SELECT 1\n"),
        'model/cubes/orders.yml:2: cube orders: a cube needs exactly one of "sql_table" or "sql"',
    ),
    (
        "bad relationship",
        ORDERS.replace(
            "    dimensions:",
            '    joins:\n      - name: orders\n        sql: "1 = 1"\n        relationship: lots\n    dimensions:',
            1,
        ),
        'model/cubes/orders.yml:7: join orders.orders: unknown relationship "lots"',
    ),
    (
        "join to unknown cube",
        ORDERS.replace(
            "    dimensions:",
            '    joins:\n      - name: nope\n        sql: "1 = 1"\n        relationship: has_many\n    dimensions:',
            1,
        ),
        'model/cubes/orders.yml:5: join orders.nope: join to unknown cube "nope"',
    ),
    (
        "bad granularity interval",
        ORDERS.replace(
            "        type: string\n",
            "        type: string\n      - name: at\n        sql: at\n        type: time\n        granularities:\n"
            "          - name: fortnight\n            interval: 2 fortnights\n",
        ),
        'model/cubes/orders.yml:17: dimension orders.at granularity fortnight: invalid interval "2 fortnights": '
        'unknown unit "fortnights"',
    ),
    (
        "unknown top-level key",
        "cubez: []\n",
        'model/cubes/orders.yml:1: unexpected key "cubez": only "cubes" and "views" are allowed',
    ),
    (
        "member masking is refused, not ignored",
        ORDERS + "    access_policy:\n      - group: '*'\n        member_masking:\n          includes: '*'\n",
        'model/cubes/orders.yml:17: access_policy[0] of orders: "member_masking" is not supported by this server',
    ),
    (
        "policy condition that is not a safe expression",
        ORDERS + "    access_policy:\n      - group: '*'\n        conditions:\n"
        "          - if: \"{ __import__('os').system('id') }\"\n",
        "model/cubes/orders.yml:18: access_policy[0] of orders: "
        "expression \"{ __import__('os').system('id') }\": Call is not allowed",
    ),
    (
        "policy condition on a claim that differs between tokens of one viewer",
        ORDERS + "    access_policy:\n      - group: '*'\n        conditions:\n"
        '          - if: "{ securityContext.exp > 0 }"\n',
        "model/cubes/orders.yml:18: access_policy[0] of orders: "
        "expression '{ securityContext.exp > 0 }': securityContext.exp differs between tokens of one viewer",
    ),
    (
        "policy row filter value from a claim that differs between tokens of one viewer",
        ORDERS + "    access_policy:\n      - group: '*'\n        row_level:\n          filters:\n"
        "            - member: status\n              operator: equals\n"
        "              values: [\"{ securityContext['jti'] }\"]\n",
        "model/cubes/orders.yml:21: access_policy[0] of orders: "
        "expression \" securityContext['jti'] \": securityContext.jti differs between tokens of one viewer",
    ),
    (
        "policy row filter value interpolating the whole security context",
        ORDERS + "    access_policy:\n      - group: '*'\n        row_level:\n          filters:\n"
        "            - member: status\n              operator: equals\n"
        '              values: ["x-{ securityContext }"]\n',
        "model/cubes/orders.yml:21: access_policy[0] of orders: "
        "expression ' securityContext ': name the claim to read (securityContext.x)",
    ),
    (
        "policy row filter on unknown member",
        ORDERS + "    access_policy:\n      - group: '*'\n        row_level:\n          filters:\n"
        "            - member: nope\n              operator: equals\n              values: [1]\n",
        'model/cubes/orders.yml:19: access_policy[0] of orders: unknown member "nope" in row filter',
    ),
]


@pytest.mark.parametrize(("name", "text", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_files_name_file_line_and_member(tmp_path: Path, name: str, text: str, message: str) -> None:
    root = tmp_path / "model"
    write(root, "cubes/orders.yml", text)

    error = error_of(root)

    assert str(error.problems[0]).startswith(message), (name, str(error.problems[0]))
    assert error.status == 400
    assert error.message.startswith("Model error: model/cubes/orders.yml:")


def test_view_errors(tmp_path: Path) -> None:
    root = tmp_path / "model"
    write(root, "cubes/orders.yml", ORDERS)
    write(
        root,
        "views/v.yml",
        """
        views:
          - name: v
            cubes:
              - join_path: orders.users
                includes: "*"
              - join_path: orders
                includes: [count, nope]
        """,
    )

    problems = [str(p) for p in error_of(root).problems]

    assert problems == [
        'model/views/v.yml:4: view v: join_path "orders.users": unknown cube "users"',
    ]


def test_view_duplicate_names_and_unknown_members(tmp_path: Path) -> None:
    root = tmp_path / "model"
    write(root, "cubes/orders.yml", ORDERS)
    write(
        root,
        "views/v.yml",
        """
        views:
          - name: v
            cubes:
              - join_path: orders
                includes: [count, nope]
              - join_path: orders
                includes: [count, {name: status, alias: count}]
        """,
    )

    problems = [str(p) for p in error_of(root).problems]

    # The same member included twice under its name from the same join path is one member (Cube dedupes it);
    # another member under that name is a conflict.
    assert problems == [
        'model/views/v.yml:5: view v: "nope" is not a member of orders',
        'model/views/v.yml:3: view v: member "count" is included twice; use prefix or alias',
    ]


def test_join_needs_primary_keys_for_additive_measures(tmp_path: Path) -> None:
    root = tmp_path / "model"
    write(
        root,
        "cubes/orders.yml",
        ORDERS.replace("        primary_key: true\n", "").replace(
            "    dimensions:",
            '    joins:\n      - name: users\n        sql: "1 = 1"\n        relationship: many_to_one\n    dimensions:',
            1,
        ),
    )
    write(root, "cubes/users.yml", ORDERS.replace("orders", "users"))

    problems = [str(p) for p in error_of(root).problems]

    assert problems == [
        "model/cubes/orders.yml:5: join orders.users: primary key for 'orders' is required when join is defined "
        "in order to make aggregates work properly"
    ]


def test_every_problem_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "model"
    write(root, "cubes/a.yml", ORDERS.replace("type: count", "type: summ"))
    write(root, "cubes/b.yml", ORDERS.replace("orders", "b").replace("type: string", "type: text"))

    error = error_of(root)

    assert [p.file for p in error.problems] == ["model/cubes/a.yml", "model/cubes/b.yml"]
    assert error.message.endswith("(and 1 more)")


def test_names_are_unique_across_cubes_and_views(tmp_path: Path) -> None:
    root = tmp_path / "model"
    write(root, "cubes/a.yml", ORDERS)
    write(
        root, "views/b.yml", "views:\n  - name: orders\n    cubes:\n      - join_path: orders\n        includes: '*'\n"
    )

    assert [str(p) for p in error_of(root).problems] == [
        'model/views/b.yml:2: view orders: a cube or view named "orders" is already defined'
    ]


def test_changed_file_recompiles_and_broken_change_keeps_last_good_model(tmp_path: Path) -> None:
    path = write(tmp_path, "cubes/orders.yml", ORDERS)
    first = compile_dir(tmp_path)
    assert first.error is None
    assert list(first.require().entities["orders"].measures) == ["count"]

    path.write_text(path.read_text() + "      - name: revenue\n        sql: amount\n        type: sum\n")
    second = compile_dir(tmp_path)
    assert second.error is None
    assert list(second.require().entities["orders"].measures) == ["count", "revenue"]
    assert second.model.compiler_id != first.model.compiler_id

    path.write_text(path.read_text().replace("type: sum", "type: summ"))
    third = compile_dir(tmp_path)
    assert third.model is second.model  # the last good model keeps serving
    assert third.error is not None
    assert 'unknown type "summ"' in third.error.message


def test_unchanged_files_are_not_recompiled(tmp_path: Path) -> None:
    path = write(tmp_path, "cubes/orders.yml", ORDERS)
    first = compile_dir(tmp_path).model

    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    touched = compile_dir(tmp_path).model

    assert touched is first  # same content hash: the compiled model is reused


def test_check_interval_throttles_directory_scans(tmp_path: Path) -> None:
    path = write(tmp_path, "cubes/orders.yml", ORDERS)
    first = load_model(tmp_path, dialect="duckdb", check_interval=3600).model
    path.write_text(ORDERS.replace("name: count", "name: total"))

    assert load_model(tmp_path, dialect="duckdb", check_interval=3600).model is first
    assert "total" in load_model(tmp_path, dialect="duckdb", check_interval=0).require().entities["orders"].measures


def test_missing_directory_is_a_model_error(tmp_path: Path) -> None:
    version = load_model(tmp_path / "absent", dialect="duckdb", check_interval=0)

    assert version.model is None
    with pytest.raises(ModelError, match="model directory not found"):
        version.require()


def test_unknown_dialect_is_refused() -> None:
    with pytest.raises(ValueError, match="unsupported dialect"):
        load_model(SHOP, dialect="cobol")


def test_concurrent_first_requests_all_get_the_model_while_it_compiles(tmp_path: Path, monkeypatch) -> None:
    # given: a model whose compile lasts until all eight requests have asked for it, and no check made yet
    from embedadmin.semantic.modeling import registry

    write(tmp_path, "cubes/orders.yml", ORDERS)
    real_compile = registry.compile_model
    asked: list[int] = []

    def slow_compile(*args, **kwargs):
        wait_until(lambda: len(asked) == 8, "every request asks for the model while it compiles")
        return real_compile(*args, **kwargs)

    monkeypatch.setattr(registry, "compile_model", slow_compile)
    fresh = registry.ModelRegistry(check_interval=3600)

    def ask():
        asked.append(1)
        return fresh.get(tmp_path, dialect="duckdb")

    # when: eight requests ask for it at once
    versions = run_concurrently([ask] * 8)

    # then: every one of them is served the compiled model (none an empty version)
    assert len(versions) == 8
    assert all(version.model is not None and version.error is None for version in versions)
    assert "count" in versions[0].require().entities["orders"].measures
