"""JavaScript model files: Cube's model API in the QuickJS sandbox, compiled by the same compiler as YAML.

Each feature of the JavaScript API, its refusals (file, line and feature named), the sandbox's limits, JavaScript
and YAML files in one folder, and the demo model written as JavaScript (``fixtures/demo_js``) giving the same
``/v1/meta``, SQL and results as the YAML demo model.
"""

from __future__ import annotations

import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from demo.generate import generate
from embedadmin.semantic import ModelError, QueryContext, load_model, plan_queries
from embedadmin.semantic.modeling.compiler import compile_model
from embedadmin.semantic.modeling.files import list_model_files, read_model_files
from embedadmin.semantic.modeling.js_models import DEFAULT_LIMITS, SandboxLimits, rewrite_modules
from embedadmin.semantic.modeling.model import CompiledModel, CubeSqlReference, MemberReference
from embedadmin.semantic.results.meta import meta

REPO = Path(__file__).resolve().parents[3]
DEMO_YAML = REPO / "demo" / "model"
DEMO_JS = Path(__file__).resolve().parents[1] / "fixtures" / "demo_js"
NOW = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)

USERS_YAML = """
cubes:
  - name: users
    sql_table: public.users
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
      - name: name
        sql: name
        type: string
"""

ORDERS_JS = """
cube(`orders`, {
  sqlTable: `public.orders`,
  joins: {
    users: { relationship: `belongsTo`, sql: `${CUBE}.user_id = ${users.id}` },
  },
  measures: {
    count: { type: `count`, drillMembers: [id, users.name] },
    revenue: { sql: () => `${CUBE}.amount`, type: `sum`, shown: false },
  },
  dimensions: {
    id: { sql: `id`, type: `number`, primaryKey: true },
    status: { sql: `status`, type: `string` },
  },
});
"""


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def compiled(root: Path) -> CompiledModel:
    return load_model(root, dialect="duckdb", check_interval=0).require()


def problems_of(root: Path, limits: SandboxLimits = DEFAULT_LIMITS) -> list[str]:
    files = read_model_files(root, list_model_files(root))
    with pytest.raises(ModelError) as caught:
        compile_model(files, root=root, dialect="duckdb", js_limits=limits)
    return [str(problem) for problem in caught.value.problems]


# --- the API --------------------------------------------------------------------------------------------------------


def test_a_javascript_cube_compiles_to_what_its_yaml_would(tmp_path: Path) -> None:
    write(tmp_path, "cubes/orders.js", ORDERS_JS)
    write(tmp_path, "cubes/users.yml", USERS_YAML)

    model = compiled(tmp_path)

    orders = model.entities["orders"]
    assert orders.sql_table == "public.orders"
    assert list(orders.measures) == ["count", "revenue"]
    assert list(orders.dimensions) == ["id", "status"]
    assert orders.measures["count"].drill_members == ("orders.id", "users.name")
    assert orders.measures["revenue"].sql.text == "{CUBE}.amount"
    assert orders.measures["revenue"].display.public is False
    assert orders.dimensions["id"].primary_key is True
    assert orders.joins[0].target == "users"
    assert orders.joins[0].sql.text == "{CUBE}.user_id = {users.id}"
    # lines of the file the members are written on, for errors
    assert orders.location.file.endswith("cubes/orders.js")
    assert orders.location.line == 1
    assert orders.measures["revenue"].location.line == 8
    assert orders.dimensions["status"].location.line == 12


def test_reference_forms_and_member_functions_by_parameter_name(tmp_path: Path) -> None:
    write(tmp_path, "users.yml", USERS_YAML)
    write(
        tmp_path,
        "orders.js",
        """
        cube(`orders`, {
          sql: (CUBE) => `SELECT * FROM public.orders`,
          joins: { users: { relationship: `many_to_one`, sql: `${CUBE}.user_id = ${users}.id` } },
          dimensions: {
            id: { sql: `id`, type: `number`, primaryKey: true },
            buyer: { sql: `${CUBE.users.name}`, type: `string` },
            buyer_plain: { sql(users) { return `${users.name}`; }, type: `string` },
            upper_status: { sql: function (CUBE) { return `upper(${CUBE}.status)`; }, type: `string` },
          },
        });
        cube(`big_orders`, {
          sql: `SELECT * FROM ${orders.sql()} AS o WHERE o.amount > 100`,
          dimensions: { id: { sql: `id`, type: `number`, primaryKey: true } },
        });
        """,
    )

    model = compiled(tmp_path)

    orders = model.entities["orders"]
    through_cube = orders.dimensions["buyer"].sql.member_refs()[0]
    assert through_cube == MemberReference(cube="users", member="name", path=("orders", "users"), kind="dimension")
    assert orders.dimensions["buyer_plain"].sql.member_refs()[0].path == ()
    assert orders.dimensions["upper_status"].sql.text == "upper({CUBE}.status)"
    assert orders.joins[0].sql.text == "{CUBE}.user_id = {users}.id"
    assert list(model.entities["big_orders"].sql.refs.values()) == [CubeSqlReference("orders")]


def test_camel_case_keys_as_cube_javascript_writes_them(tmp_path: Path) -> None:
    write(
        tmp_path,
        "orders.js",
        """
        cube(`orders`, {
          sqlTable: `orders`,
          dataSource: `default`,
          refreshKey: { every: `1 hour` },
          preAggregations: { main: { measures: [CUBE.count], timeDimension: CUBE.created_at, granularity: `day` } },
          measures: {
            count: { type: `count` },
            distinct_users: { sql: `user_id`, type: `countDistinct` },
            weekly: { sql: `amount`, type: `sum`, rollingWindow: { trailing: `7 day` } },
          },
          dimensions: {
            id: { sql: `id`, type: `number`, primaryKey: true, shown: true },
            created_at: {
              sql: `created_at`,
              type: `time`,
              granularities: { fiscal_year: { interval: `1 year`, offset: `3 months` } },
            },
            total: { sql: `${other.total}`, type: `number`, subQuery: true, propagateFiltersToSubQuery: true },
          },
          joins: { other: { relationship: `hasOne`, sql: `${CUBE}.id = ${other.id}` } },
        });
        cube(`other`, {
          sqlTable: `other`,
          measures: { total: { sql: `amount`, type: `sum` } },
          dimensions: { id: { sql: `id`, type: `number`, primaryKey: true } },
        });
        """,
    )

    orders = compiled(tmp_path).entities["orders"]

    assert orders.measures["distinct_users"].type == "count_distinct"
    assert orders.measures["weekly"].rolling_window.trailing == "7 day"
    assert orders.dimensions["id"].display.public is True
    assert list(orders.dimensions["created_at"].granularities) == ["fiscal_year"]
    assert orders.dimensions["total"].sub_query is True
    assert orders.dimensions["total"].propagate_filters_to_sub_query is True
    assert orders.refresh_key.every == "1 hour"


def test_extends_as_cube_has_it(tmp_path: Path) -> None:
    write(
        tmp_path,
        "base.js",
        """
        cube(`base_events`, {
          sqlTable: `events`,
          measures: { count: { type: `count` } },
          dimensions: { id: { sql: `id`, type: `number`, primaryKey: true } },
          accessPolicy: [{ group: `admin` }],
        });
        cube(`page_views`, {
          extends: base_events,
          sql: `SELECT * FROM ${base_events.sql()} AS e WHERE e.kind = 'page'`,
          dimensions: { path: { sql: `path`, type: `string` } },
          accessPolicy: [{ group: `analyst` }],
        });
        cube(`purchases`, { extends: page_views, sqlTable: `purchases` });
        view(`events_view`, { cubes: [{ joinPath: base_events, includes: [`count`] }], title: `Events` });
        view(`more_events`, { extends: events_view, cubes: [{ joinPath: page_views, includes: [`path`] }] });
        """,
    )

    model = compiled(tmp_path)

    page_views = model.entities["page_views"]
    assert page_views.sql_table is None  # its own sql hides the parent's sql_table
    assert page_views.sql is not None
    assert list(page_views.dimensions) == ["id", "path"]
    assert [p.groups for p in page_views.access_policies] == [("admin",), ("analyst",)]
    purchases = model.entities["purchases"]
    assert purchases.sql_table == "purchases"
    assert purchases.sql is None  # and the reverse
    more = model.entities["more_events"]
    assert list(more.measures) == ["count"]
    assert list(more.dimensions) == ["path"]
    assert more.title == "Events"


def test_extends_in_yaml_drops_the_parents_sql_table_too(tmp_path: Path) -> None:
    cubes = """
        cubes:
          - name: parent
            sql_table: events
            dimensions:
              - {name: id, sql: id, type: number, primary_key: true}
          - name: child
            extends: parent
            sql: SELECT * FROM events WHERE kind = 'x'
        """
    write(tmp_path, "cubes.yml", cubes)
    assert compiled(tmp_path).entities["child"].sql_table is None

    write(
        tmp_path,
        "views.yml",
        "views:\n  - name: v\n    extends: parent\n    cubes: [{join_path: child, includes: '*'}]\n",
    )

    assert problems_of(tmp_path) == [f"{tmp_path.name}/views.yml:3: view v: a view can only extend a view"]


def test_yaml_view_over_javascript_cube_and_javascript_view_over_yaml_cube(tmp_path: Path) -> None:
    write(tmp_path, "cubes/orders.js", ORDERS_JS)
    write(tmp_path, "cubes/users.yml", USERS_YAML)
    write(
        tmp_path,
        "views/orders_view.yml",
        """
        views:
          - name: orders_view
            cubes:
              - join_path: orders
                includes: [count, status]
              - join_path: orders.users
                prefix: true
                includes: [name]
        """,
    )
    write(
        tmp_path,
        "views/people.js",
        "view(`people`, { cubes: [{ join_path: users, includes: `*` }, { join_path: users, includes: [] }] });\n",
    )

    model = compiled(tmp_path)

    assert list(model.entities["orders_view"].dimensions) == ["status", "users_name"]
    assert model.entities["orders_view"].dimensions["users_name"].alias_member == "users.name"
    assert list(model.entities["people"].dimensions) == ["id", "name"]


def test_require_import_and_export_of_the_folders_files(tmp_path: Path) -> None:
    write(
        tmp_path,
        "shared/money.js",
        """
        export const money = { format: `currency`, currency: `USD` };
        export function id() { return { sql: `id`, type: `number`, primaryKey: true }; }
        """,
    )
    write(tmp_path, "helpers.js", "module.exports = { table: (name) => `public.${name}` };\n")
    write(tmp_path, "cubes/defaults.js", "export default { type: `sum` };\n")
    write(
        tmp_path,
        "cubes/orders.js",
        """
        import { money as usd, id } from '../shared/money';
        import defaults from './defaults';
        const { table } = require('./helpers');  // Cube: from the folder's root
        cube(`orders`, {
          sqlTable: table(`orders`),
          measures: { total: { ...defaults, sql: `amount`, ...usd }, n: { ...require('./defaults'), sql: `n` } },
          dimensions: { id: id() },
        });
        """,
    )

    orders = compiled(tmp_path).entities["orders"]

    assert orders.sql_table == "public.orders"
    assert orders.measures["total"].type == "sum"
    assert orders.measures["total"].currency == "USD"


def test_rewriting_import_and_export_keeps_every_line_where_it_was() -> None:
    source = "import {\n  a,\n  b as c\n} from './x';\nexport const d = 1;\nexport { d as e };\nd;\n"

    rewritten = rewrite_modules(source)

    assert rewritten.splitlines()[:7] == [
        'const {   a,   b: c } = require("./x");',
        "",
        "",
        "",
        "const d = 1;",
        "addExport({e: d});",
        "d;",
    ]
    assert rewritten.endswith(";addExport({d});")


def test_async_module_honours_what_it_computes_without_waiting(tmp_path: Path) -> None:
    write(
        tmp_path,
        "dynamic.js",
        """
        asyncModule(async () => {
          const tables = await Promise.resolve([`a`, `b`]);
          tables.forEach((name) => cube(name, {
            sqlTable: name,
            dimensions: { id: { sql: `id`, type: `number`, primaryKey: true } },
          }));
        });
        """,
    )

    assert list(compiled(tmp_path).entities) == ["a", "b"]


def test_async_module_waiting_for_what_the_sandbox_lacks_is_refused(tmp_path: Path) -> None:
    write(
        tmp_path,
        "dynamic.js",
        """
        cube(`fixed`, { sqlTable: `t`, dimensions: { id: { sql: `id`, type: `number` } } });
        asyncModule(async () => {
          await new Promise(() => {});
        });
        asyncModule(async () => {
          throw new Error(`no schema service`);
        });
        """,
    )

    problems = problems_of(tmp_path)

    name = tmp_path.name
    assert problems[0].startswith(f"{name}/dynamic.js:2: asyncModule(): its promise is still pending")
    assert problems[1] == f"{name}/dynamic.js:6: Error: no schema service"


def test_compile_context_is_the_servers_read_only(tmp_path: Path) -> None:
    write(
        tmp_path,
        "ok.js",
        """
        const { securityContext } = COMPILE_CONTEXT;
        COMPILE_CONTEXT.securityContext.tenant = `a model cannot set it`;
        cube(`ok`, {
          sqlTable: `t${Object.keys(securityContext).length}_${COMPILE_CONTEXT.security_context.tenant}`,
          dimensions: { id: { sql: `id`, type: `number` } },
        });
        """,
    )
    # as in Cube, a key the compile context lacks reads as undefined
    assert compiled(tmp_path).entities["ok"].sql_table == "t0_undefined"


@pytest.mark.parametrize(
    ("js", "yaml"),
    [
        ("`${SECURITY_CONTEXT.tenant.filter('tenant_id')}`", "\"{SECURITY_CONTEXT.tenant.filter('tenant_id')}\""),
        (
            "`${USER_CONTEXT.tenant.requiredFilter(`tenant_id`)}`",
            "\"{SECURITY_CONTEXT.tenant.requiredFilter('tenant_id')}\"",
        ),
        (
            "`tenant_id = ${SECURITY_CONTEXT.tenant.unsafeValue()}`",
            '"tenant_id = {SECURITY_CONTEXT.tenant.unsafeValue()}"',
        ),
        (
            "() => `${FILTER_PARAMS.orders.id.filter((x) => `${CUBE}.id > ${x} OR \\\"\\\" = ''`)}`",
            '"{FILTER_PARAMS.orders.id.filter(lambda y: f\\"{CUBE}.id > {y} OR \\\\\\"\\\\\\" = \'\'\\")}"',
        ),
        (
            "(FILTER_GROUP, FILTER_PARAMS) => FILTER_GROUP(FILTER_PARAMS.orders.id.filter('id'), "
            "FILTER_PARAMS.orders.id.filter((v) => `id <> ${v}`))",
            "\"{FILTER_GROUP(FILTER_PARAMS.orders.id.filter('id'), "
            "FILTER_PARAMS.orders.id.filter(lambda v: f'id <> {v}'))}\"",
        ),
        ("`${SQL_UTILS.convertTz(`${CUBE}.created_at`)}`", "\"{SQL_UTILS.convertTz('{CUBE}.created_at')}\""),
    ],
)
def test_context_variables_compile_as_their_yaml_form_does(tmp_path: Path, js: str, yaml: str) -> None:
    write(
        tmp_path / "js",
        "orders.js",
        f"""
        cube(`orders`, {{
          sqlTable: `orders`,
          dimensions: {{
            id: {{ sql: `id`, type: `number` }},
            scoped: {{
              sql: {js},
              type: `string`,
            }},
          }},
        }});
        """,
    )
    write(
        tmp_path / "yaml",
        "orders.yml",
        f"""
        cubes:
          - name: orders
            sql_table: orders
            dimensions:
              - name: id
                sql: id
                type: number
              - name: scoped
                sql: {yaml}
                type: string
        """,
    )

    from_js = compiled(tmp_path / "js").entities["orders"].dimensions["scoped"].sql
    from_yaml = compiled(tmp_path / "yaml").entities["orders"].dimensions["scoped"].sql

    assert from_js is not None
    assert from_yaml is not None
    assert from_js.tree.sql() == from_yaml.tree.sql()
    assert [type(r).__name__ for r in from_js.refs.values()] == [type(r).__name__ for r in from_yaml.refs.values()]


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        ("`${SECURITY_CONTEXT.tenant}`", "SECURITY_CONTEXT.tenant: name a claim and call .filter('column')"),
        ("`${SQL_UTILS.timeDimension(`x`)}`", "SQL_UTILS.timeDimension: SQL_UTILS has convertTz(sql) only"),
        ("`${FILTER_GROUP(`x`)}`", "FILTER_GROUP() takes FILTER_PARAMS.cube.member.filter(...) calls only"),
        ("`${FILTER_PARAMS.orders.id}`", "FILTER_PARAMS.orders.id: write FILTER_PARAMS.cube_name.member_name.filter"),
        ("`${FILTER_PARAMS.orders.nope.filter('x')}`", "'orders' has no member 'nope'"),
        ("`FROM ${SECURITY_CONTEXT.tenant.unsafeValue()}.orders`", "cannot be part of a name or of a string literal"),
    ],
)
def test_context_variables_written_wrong_are_refused_by_name(tmp_path: Path, sql: str, refused: str) -> None:
    write(
        tmp_path,
        "orders.js",
        f"""
        cube(`orders`, {{
          sqlTable: `orders`,
          dimensions: {{
            id: {{ sql: `id`, type: `number` }},
            scoped: {{
              sql: {sql},
              type: `string`,
            }},
          }},
        }});
        """,
    )

    problems = problems_of(tmp_path)

    assert len(problems) == 1
    assert problems[0].startswith(f"{tmp_path.name}/orders.js:")
    assert refused in problems[0]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("cube(`a`, {\n  sqlTable: `t`,\n});\nthrow new TypeError(`boom`);\n", "a.js:4: TypeError: boom"),
        ("cube(`a`, {\n  sqlTable: `t`,,\n});\n", "a.js:2: JavaScript SyntaxError: "),
        ("const x = require('fs');\n", 'a.js:1: require("fs"): only model files of this folder can be required'),
        ("require('./../../etc/passwd');\n", 'a.js:1: require("./../../etc/passwd") leaves the model folder'),
        ("require('./missing');\n", 'a.js:1: require("./missing"): no model file missing.js'),
        (
            "const a = 1;\nconst key = process.env.KEY;\n",
            "a.js:2: process is not available: model files run in a sandbox",
        ),
        ("fetch(`http://example.com`);\n", "a.js:1: fetch is not available: model files run in a sandbox"),
        ("import * as fs from 'fs';\n", 'a.js:1: require("fs"): only model files of this folder'),
        ("export * as all from './b';\n", "a.js:1: this form of export is not supported"),
        ("cube(`a`, {\n  sqlTable: `t`,\n  colour: `red`,\n});\n", 'a.js:3: cube a: unknown property "colour"'),
        (
            "cube(`a`, {\n  sqlTable: `t`,\n  measures: {\n    n: { type: `count`, sql: `x`, mask: 1 },\n  },\n});\n",
            'a.js:4: measure a.n: "mask" is not supported by this server',
        ),
    ],
)
def test_a_file_that_fails_is_a_model_error_naming_file_line_and_feature(
    tmp_path: Path, source: str, expected: str
) -> None:
    write(tmp_path, "a.js", source)

    problems = problems_of(tmp_path)

    assert problems[0].startswith(f"{tmp_path.name}/{expected}"), problems


def test_fetch_and_process_are_absent_not_just_refused(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.js",
        """
        const globals = [typeof fetch, typeof process, typeof require, typeof setTimeout, typeof WebAssembly];
        cube(`a`, { sqlTable: globals.join(`_`), dimensions: { id: { sql: `id`, type: `number` } } });
        """,
    )

    assert compiled(tmp_path).entities["a"].sql_table == "undefined_undefined_function_undefined_undefined"


# --- limits ---------------------------------------------------------------------------------------------------------

SMALL = SandboxLimits(seconds=1.0, memory_bytes=32 * 1024 * 1024)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("cube(`a`, {});\nwhile (true) {}\n", "ran longer than 1 s and was stopped"),
        ("const rows = [];\nwhile (true) rows.push({ row: rows.length });\n", "used more than 32 MB"),
        ("const s = `x`.repeat(2 ** 28);\n", "used more than 32 MB"),
        # a builtin that never looks at QuickJS's interrupt: the process is stopped from outside
        ("new Array(2 ** 31).join(`abc`);\n", "ran longer than 1 s and was stopped"),
        ("/(a+)+$/.test(`a`.repeat(40) + `b`);\n", "ran longer than 1 s and was stopped"),
        ("function f() { return f(); }\nf();\n", "RangeError: Maximum call stack size exceeded"),
    ],
)
def test_a_model_that_runs_away_is_refused_within_a_bounded_time(tmp_path: Path, source: str, expected: str) -> None:
    write(tmp_path, "a.js", source)
    started = time.monotonic()

    problems = problems_of(tmp_path, SMALL)

    assert time.monotonic() - started < 1.0 + 5.0 + 3.0  # the limit, the grace, a margin for a busy machine
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{tmp_path.name}/a.js")
    assert expected in problems[0]


# --- the demo model as JavaScript -----------------------------------------------------------------------------------

VIEWER = QueryContext(groups=["regional"], user_attributes={"country": "Germany"}, only_granted=True)
QUERIES: list[tuple[dict[str, Any], QueryContext]] = [
    (
        {
            "measures": ["orders.count", "orders.total_amount", "orders.completion_rate", "orders.cancelled_count"],
            "dimensions": ["orders.status", "orders.size"],
            "order": {"orders.status": "asc", "orders.size": "asc"},
        },
        QueryContext(),
    ),
    (
        {
            "measures": ["sales.order_count", "sales.revenue"],
            "dimensions": ["sales.product_category", "sales.users_age_group"],
            "timeDimensions": [
                {"dimension": "sales.created_at", "granularity": "fiscal_quarter", "dateRange": "last year"}
            ],
            "order": [["sales.created_at", "asc"], ["sales.product_category", "asc"]],
        },
        QueryContext(groups=["admin"]),
    ),
    (
        {
            "dimensions": ["users.full_name", "users.lifetime_value"],
            "order": {"users.lifetime_value": "desc"},
            "limit": 5,
        },
        QueryContext(),
    ),
    (
        {"measures": ["orders.count", "orders.average_order_value"], "segments": ["orders.high_value"]},
        QueryContext(),
    ),
    (
        {"measures": ["product_catalog.units_sold"], "dimensions": ["product_catalog.price_band"]},
        QueryContext(groups=["viewer"], only_granted=True),
    ),
    ({"measures": ["sales.order_count"], "dimensions": ["sales.users_country", "sales.size"]}, VIEWER),
]


@pytest.fixture(scope="module")
def demo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo-js") / "demo.duckdb"
    generate(path, orders=3000, seed=7)
    return path


def _meta(model: CompiledModel, ctx: QueryContext) -> dict[str, Any]:
    body = meta(model, ctx, extended=not ctx.only_granted)
    body.pop("compilerId")
    return body


@pytest.mark.parametrize("ctx", [QueryContext(), VIEWER, QueryContext(groups=["admin"], only_granted=True)])
def test_the_demo_model_in_javascript_has_the_yaml_ones_meta(ctx: QueryContext) -> None:
    yaml_model = load_model(DEMO_YAML, dialect="duckdb", check_interval=0).require()
    js_model = load_model(DEMO_JS, dialect="duckdb", check_interval=0).require()

    assert _meta(js_model, ctx) == _meta(yaml_model, ctx)
    assert len(_meta(js_model, ctx)["cubes"]) >= 1


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_the_demo_model_in_javascript_compiles_the_same_sql(dialect: str) -> None:
    yaml_model = load_model(DEMO_YAML, dialect=dialect, check_interval=0).require()
    js_model = load_model(DEMO_JS, dialect=dialect, check_interval=0).require()

    for query, ctx in QUERIES:
        from_yaml = plan_queries(yaml_model, query, ctx, now=NOW).queries
        from_js = plan_queries(js_model, query, ctx, now=NOW).queries
        assert [(q.sql, q.params) for q in from_js] == [(q.sql, q.params) for q in from_yaml]


def test_the_demo_model_in_javascript_gives_the_same_results_on_duckdb(demo_data: Path) -> None:
    yaml_model = load_model(DEMO_YAML, dialect="duckdb", check_interval=0).require()
    js_model = load_model(DEMO_JS, dialect="duckdb", check_interval=0).require()

    with duckdb.connect(str(demo_data), read_only=True) as connection:
        connection.execute("SET TimeZone = 'UTC'")
        for query, ctx in QUERIES:
            results = []
            for model in (yaml_model, js_model):
                compiled_query = plan_queries(model, query, ctx, now=NOW).queries[0]
                results.append(connection.execute(compiled_query.sql, list(compiled_query.params)).fetchall())
            assert sorted(results[1], key=repr) == sorted(results[0], key=repr)
            assert results[0], query
