"""The demo dataset generator and the demo Cube model that ships with it."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import jinja2
import psycopg
import pytest
import yaml

from demo.generate import CITIES, DEFAULT_SEED, TABLES, generate, load_postgres, table_checksums
from embedadmin.semantic.modeling.files import list_model_files

REPO = Path(__file__).resolve().parents[3]
MODEL_DIR = REPO / "demo" / "model"
POSTGRES_URL = os.environ.get("TEST_DATABASE_URL", "postgresql://embedadmin:embedadmin@127.0.0.1:5432/embedadmin")
SMALL = 3000


@pytest.fixture(scope="module")
def default_dataset(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    generate(path)
    return path


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo-small") / "small.duckdb"
    generate(path, orders=SMALL, seed=7)
    return path


def scalar(path: Path, sql: str) -> Any:
    with duckdb.connect(str(path), read_only=True) as connection:
        return connection.execute(sql).fetchone()[0]


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(path), read_only=True) as connection:
        return connection.execute(sql).fetchall()


# --- determinism ---------------------------------------------------------------------------------------


def test_one_seed_gives_identical_tables_in_process_and_from_the_command_line(tmp_path, small_dataset):
    in_process = tmp_path / "again.duckdb"
    generate(in_process, orders=SMALL, seed=7)
    script = subprocess.run(
        [
            sys.executable,
            str(REPO / "demo" / "generate.py"),
            str(tmp_path / "cli.duckdb"),
            "--orders",
            str(SMALL),
            "--seed",
            "7",
            "--checksums",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    printed = dict(line.split(" ", 1) for line in script.stdout.splitlines()[1:])

    expected = table_checksums(small_dataset)

    assert table_checksums(in_process) == expected
    assert printed == expected
    assert script.stdout.splitlines()[0].startswith(f"wrote {tmp_path / 'cli.duckdb'}: 3000 orders, 600 users, ")


def test_another_seed_changes_every_table(tmp_path, small_dataset):
    other = tmp_path / "other.duckdb"
    generate(other, orders=SMALL, seed=8)

    mine, theirs = table_checksums(small_dataset), table_checksums(other)

    assert all(mine[table] != theirs[table] for table in TABLES)


def test_checksums_see_a_single_changed_value(tmp_path, small_dataset):
    changed = tmp_path / "changed.duckdb"
    changed.write_bytes(small_dataset.read_bytes())
    with duckdb.connect(str(changed)) as connection:
        connection.execute("UPDATE line_items SET quantity = quantity + 1 WHERE id = 17")

    before, after = table_checksums(small_dataset), table_checksums(changed)

    assert [table for table in TABLES if before[table] != after[table]] == ["line_items"]


def test_regenerating_replaces_the_file(tmp_path):
    path = tmp_path / "demo.duckdb"
    generate(path, orders=500, seed=1)

    generate(path, orders=200, seed=1)

    assert scalar(path, "SELECT count(*) FROM orders") == 200
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.duckdb"]


# --- the default dataset -------------------------------------------------------------------------------


def test_default_dataset_sizes(default_dataset):
    counts = {table: scalar(default_dataset, f"SELECT count(*) FROM {table}") for table in TABLES}

    assert DEFAULT_SEED == 20_240_601
    assert counts == {"users": 20_000, "products": 500, "orders": 100_000, "line_items": 214_985}


@pytest.mark.parametrize("table", list(TABLES))
def test_ids_are_dense_and_unique(default_dataset, table):
    count = scalar(default_dataset, f"SELECT count(*) FROM {table}")

    assert rows(default_dataset, f"SELECT min(id), max(id), count(DISTINCT id) FROM {table}") == [(1, count, count)]


@pytest.mark.parametrize(
    ("description", "sql"),
    [
        ("orders of unknown users", "SELECT count(*) FROM orders o ANTI JOIN users u ON u.id = o.user_id"),
        ("items of unknown orders", "SELECT count(*) FROM line_items l ANTI JOIN orders o ON o.id = l.order_id"),
        ("items of unknown products", "SELECT count(*) FROM line_items l ANTI JOIN products p ON p.id = l.product_id"),
        ("orders without items", "SELECT count(*) FROM orders o ANTI JOIN line_items l ON l.order_id = o.id"),
        (
            "orders whose item_count or amount disagree with their items",
            """SELECT count(*) FROM orders o JOIN (SELECT order_id, count(*) AS n, sum(quantity * price) AS total
               FROM line_items GROUP BY order_id) l ON l.order_id = o.id WHERE l.n <> o.item_count
               OR l.total <> o.amount""",
        ),
        (
            "orders placed before the buyer signed up",
            "SELECT count(*) FROM orders o JOIN users u ON u.id = o.user_id WHERE u.created_at > o.created_at",
        ),
        (
            "items timestamped apart from their order",
            "SELECT count(*) FROM line_items l JOIN orders o ON o.id = l.order_id WHERE l.created_at <> o.created_at",
        ),
        (
            "items priced above list or below 70% of it",
            """SELECT count(*) FROM line_items l JOIN products p ON p.id = l.product_id
            WHERE l.price > p.price OR l.price < round(p.price * 0.7, 2)""",
        ),
        (
            "delivery times that disagree with the status",
            """SELECT count(*) FROM orders WHERE (completed_at IS NOT NULL) <> (status IN ('completed', 'returned'))
            OR completed_at <= created_at OR completed_at > created_at + INTERVAL 10 DAY""",
        ),
        ("orders outside 2023-2025", "SELECT count(*) FROM orders WHERE year(created_at) NOT BETWEEN 2023 AND 2025"),
        (
            "users outside their age range or with an odd email",
            "SELECT count(*) FROM users WHERE age NOT BETWEEN 18 AND 79 OR email NOT LIKE '%' || id || '@example.com'",
        ),
        (
            "non-positive prices or quantities",
            "SELECT (SELECT count(*) FROM products WHERE price <= 0) + (SELECT count(*) FROM line_items "
            "WHERE quantity NOT BETWEEN 1 AND 3)",
        ),
    ],
)
def test_referential_integrity_and_consistency(default_dataset, description, sql):
    assert scalar(default_dataset, sql) == 0, description


def test_value_domains(default_dataset):
    def distinct(table: str, column: str) -> set[Any]:
        return {row[0] for row in rows(default_dataset, f"SELECT DISTINCT {column} FROM {table}")}

    assert distinct("orders", "status") == {"completed", "shipped", "processing", "cancelled", "returned"}
    assert distinct("users", "gender") == {"female", "male"}
    assert distinct("users", "country") == {country for _, country in CITIES}
    assert distinct("users", "city") == {city for city, _ in CITIES}
    assert distinct("products", "category") == {
        "Electronics",
        "Clothing",
        "Home & Kitchen",
        "Books",
        "Sports & Outdoors",
        "Beauty",
        "Toys & Games",
        "Grocery",
    }


def test_the_business_grows_year_on_year(default_dataset):
    per_year = rows(default_dataset, "SELECT year(created_at), count(*) FROM orders GROUP BY 1 ORDER BY 1")

    assert [year for year, _ in per_year] == [2023, 2024, 2025]
    assert per_year[0][1] < per_year[1][1] < per_year[2][1]


def test_column_types_are_the_declared_ones(default_dataset):
    for table, columns in TABLES.items():
        described = rows(
            default_dataset,
            f"SELECT column_name, data_type FROM information_schema.columns "
            f"WHERE table_name = '{table}' ORDER BY ordinal_position",
        )
        assert described == [(name, kind.replace(", ", ",")) for name, kind in columns]


# --- PostgreSQL ----------------------------------------------------------------------------------------


@pytest.fixture
def pg_schema() -> Iterator[str]:
    schema = f"demo_test_{uuid.uuid4().hex[:10]}"
    yield schema
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_the_same_dataset_loads_into_postgres_value_for_value(small_dataset, pg_schema):
    counts = load_postgres(small_dataset, POSTGRES_URL, schema=pg_schema)
    load_postgres(small_dataset, POSTGRES_URL, schema=pg_schema)  # a second load replaces the tables

    assert counts == {table: scalar(small_dataset, f"SELECT count(*) FROM {table}") for table in TABLES}
    with psycopg.connect(POSTGRES_URL) as connection:
        for table, columns in TABLES.items():
            names = ", ".join(name for name, _ in columns)
            in_postgres = connection.execute(f"SELECT {names} FROM {pg_schema}.{table} ORDER BY id").fetchall()
            assert in_postgres == rows(small_dataset, f"SELECT {names} FROM {table} ORDER BY id"), table
        foreign_keys = connection.execute(
            "SELECT count(*) FROM information_schema.table_constraints WHERE table_schema = %s "
            "AND constraint_type = 'FOREIGN KEY'",
            [pg_schema],
        ).fetchone()[0]
    assert foreign_keys == 3


def test_schema_names_are_checked_before_use(small_dataset):
    with pytest.raises(ValueError, match="schema must be a plain identifier"):
        load_postgres(small_dataset, POSTGRES_URL, schema='demo"; DROP SCHEMA public; --')


# --- the model -----------------------------------------------------------------------------------------


def load_model() -> dict[str, dict[str, dict[str, Any]]]:
    """Every cube and view of demo/model by name, after Jinja (as the compiler reads the files)."""
    found: dict[str, dict[str, dict[str, Any]]] = {"cubes": {}, "views": {}}
    for path in sorted(MODEL_DIR.rglob("*.yml")):
        if path.relative_to(MODEL_DIR).parts[0] == "dashboards":
            continue  # dashboards as code, not model files (the model reader skips the folder too)
        document = yaml.safe_load(jinja2.Template(path.read_text()).render())
        for kind in ("cubes", "views"):
            for item in document.get(kind, []):
                assert item["name"] not in found["cubes"]
                assert item["name"] not in found["views"]
                found[kind][item["name"]] = item
    return found


MODEL = load_model()
CUBES, VIEWS = MODEL["cubes"], MODEL["views"]
MEMBER_KINDS = ("dimensions", "measures", "segments")


def members(cube: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {member["name"]: member for kind in MEMBER_KINDS for member in cube.get(kind, [])}


def test_the_model_has_the_four_cubes_and_two_views_in_their_folders():
    files = sorted(str(path.relative_to(MODEL_DIR)) for path in MODEL_DIR.rglob("*.yml"))

    assert files == [
        "cubes/line_items.yml",
        "cubes/orders.yml",
        "cubes/products.yml",
        "cubes/users.yml",
        "dashboards/chart-gallery.yml",
        "dashboards/customers.yml",
        "dashboards/sales-overview.yml",
        "views/product_catalog.yml",
        "views/sales.yml",
    ]
    assert sorted(str(path.relative_to(MODEL_DIR)) for path in list_model_files(MODEL_DIR)) == [
        "cubes/line_items.yml",
        "cubes/orders.yml",
        "cubes/products.yml",
        "cubes/users.yml",
        "views/product_catalog.yml",
        "views/sales.yml",
    ]
    assert sorted(CUBES) == ["line_items", "orders", "products", "users"]
    assert sorted(VIEWS) == ["product_catalog", "sales"]


def test_every_cube_reads_a_generated_table_and_its_columns():
    # TABLES is what the generator writes (test_column_types_are_the_declared_ones checks it).
    columns = {table: {name for name, _ in spec} for table, spec in TABLES.items()}
    for name, cube in CUBES.items():
        assert cube["sql_table"] in columns, name
        texts = [(m["name"], m.get("sql", "")) for m in members(cube).values()]
        texts += [(f"join {join['name']}", join["sql"]) for join in cube.get("joins", [])]
        for where, sql in texts:
            if re.fullmatch(r"[a-z_]+", sql):
                assert sql in columns[cube["sql_table"]], f"{name}.{where}"
            for column in re.findall(r"\{CUBE\}\.([a-z_]+)", sql):
                assert column in columns[cube["sql_table"]], f"{name}.{where}"
            for other, column in re.findall(r"\{([a-z_]+)\}\.([a-z_]+)", sql):
                assert column in columns[CUBES[other]["sql_table"]], f"{name}.{where}"


def test_every_reference_in_the_model_resolves():
    for name, cube in CUBES.items():
        own = members(cube)
        texts = [m.get("sql", "") for m in own.values()]
        texts += [w["sql"] for m in own.values() for w in m.get("case", {}).get("when", [])]
        texts += [f["sql"] for m in own.values() for f in m.get("filters", [])]
        texts += [join["sql"] for join in cube.get("joins", [])]
        for text in texts:
            for reference in re.findall(r"\{([A-Za-z_.]+)\}", text):
                parts = reference.split(".")
                if parts == ["CUBE"]:
                    continue
                if len(parts) == 1:  # {member} of this cube, or {cube} followed by a column
                    assert parts[0] in own or parts[0] in CUBES, f"{name}: {{{reference}}}"
                else:
                    assert parts[1] in members(CUBES[parts[0]]), f"{name}: {{{reference}}}"
        for join in cube.get("joins", []):
            assert join["name"] in CUBES
        for member in own.values():
            for drill in member.get("drill_members", []):
                target, _, field = drill.rpartition(".")
                assert field in members(CUBES[target or name]), f"{name}.{member['name']}: {drill}"
        for hierarchy in cube.get("hierarchies", []):
            assert set(hierarchy["levels"]) <= set(own), f"{name}.{hierarchy['name']}"


def view_members(view: dict[str, Any]) -> dict[str, str]:
    """``{view member name: "cube.member"}`` as the view's includes, excludes, prefixes and aliases say."""
    exposed: dict[str, str] = {}
    for entry in view["cubes"]:
        path = entry["join_path"].split(".")
        for left, right in itertools.pairwise(path):
            assert right in {join["name"] for join in CUBES[left].get("joins", [])}, entry["join_path"]
        cube = path[-1]
        available = members(CUBES[cube])
        includes = entry["includes"]
        if includes == "*":
            includes = [
                n for n, m in available.items() if not m.get("primary_key") and n not in entry.get("excludes", [])
            ]
        prefix = f"{entry.get('alias', cube)}_" if entry.get("prefix") else ""
        for item in includes:
            name, alias = (item["name"], item.get("alias")) if isinstance(item, dict) else (item, None)
            assert name in available, f"{view['name']}: {cube}.{name}"
            exposed[alias or prefix + name] = f"{cube}.{name}"
    return exposed


def folder_members(folders: list[dict[str, Any]]) -> Iterator[str]:
    for folder in folders:
        for item in folder["includes"]:
            if isinstance(item, dict):
                yield from folder_members([item])
            else:
                yield item


def test_views_expose_existing_members_and_their_folders_and_policies_name_view_members():
    for name, view in VIEWS.items():
        exposed = view_members(view)
        assert set(folder_members(view["folders"])) <= set(exposed), name
        for policy in view["access_policy"]:
            level = policy.get("member_level", {})
            for member in level.get("excludes", []) + [m for m in level.get("includes", []) if m != "*"]:
                assert member in exposed, f"{name}: {member}"
            for row_filter in policy.get("row_level", {}).get("filters", []):
                assert row_filter["member"] in exposed


def test_the_sales_view_exposes_prefixed_and_aliased_members():
    exposed = view_members(VIEWS["sales"])

    assert exposed["order_count"] == "orders.count"
    assert exposed["users_country"] == "users.country"
    assert exposed["product_category"] == "products.category"
    assert exposed["revenue"] == "line_items.revenue"
    assert "users_id" not in exposed
    assert [entry["join_path"] for entry in VIEWS["sales"]["cubes"]] == [
        "orders",
        "orders.users",
        "orders.line_items",
        "orders.line_items.products",
    ]


def test_the_model_exercises_the_features_the_engine_supports():
    all_members = [(cube, m) for cube, c in CUBES.items() for kind in MEMBER_KINDS for m in c.get(kind, [])]
    measures = [m for c in CUBES.values() for m in c.get("measures", [])]
    dimensions = [m for c in CUBES.values() for m in c.get("dimensions", [])]
    relationships = {join["relationship"] for c in CUBES.values() for join in c.get("joins", [])}
    created_at = next(d for d in CUBES["orders"]["dimensions"] if d["name"] == "created_at")

    assert {"count", "sum", "avg", "count_distinct", "number"} <= {m["type"] for m in measures}
    assert {"many_to_one", "one_to_many", "belongs_to"} <= relationships
    assert any(m.get("filters") for m in measures)
    assert {m.get("currency") for m in measures} >= {"USD"}
    assert {m.get("format") for m in measures} >= {"currency", "currency_2", "percent", "number_0", "number_1"}
    assert [g["name"] for g in created_at["granularities"]] == ["fiscal_year", "fiscal_quarter", "sunday_week"]
    assert created_at["granularities"][2] == {
        "name": "sunday_week",
        "title": "Week starting Sunday",
        "interval": "1 week",
        "offset": "-1 day",
    }
    assert any("case" in d for d in dimensions)
    assert any(d.get("sub_query") for d in dimensions)
    assert all(c.get("segments") for name, c in CUBES.items() if name in {"orders", "users"})
    assert CUBES["users"]["hierarchies"] == [
        {"name": "location", "title": "Customer location", "levels": ["country", "city"]}
    ]
    assert {"revenue", "sales"} <= set(next(m for m in measures if m["name"] == "revenue")["meta"]["synonyms"])
    assert sum(1 for _, m in all_members if m.get("meta", {}).get("synonyms")) >= 20
    assert all(c.get("title") and c.get("description") for c in [*CUBES.values(), *VIEWS.values()])
    nested = VIEWS["sales"]["folders"][1]["includes"][-1]
    assert nested == {"name": "Demographics", "includes": ["users_gender", "users_age", "users_age_group"]}


def test_the_access_policy_examples():
    sales = {policy["group"]: policy for policy in VIEWS["sales"]["access_policy"]}
    catalog = {policy["group"]: policy for policy in VIEWS["product_catalog"]["access_policy"]}

    assert sorted(sales) == ["admin", "regional"]
    assert sales["admin"] == {"group": "admin", "member_level": {"includes": "*"}}
    assert sales["regional"]["row_level"] == {
        "filters": [{"member": "users_country", "operator": "equals", "values": ["{ userAttributes.country }"]}]
    }
    assert sales["regional"]["member_level"] == {"excludes": ["users_full_name", "users_email"]}
    assert catalog["*"] == {"group": "*", "member_level": {"excludes": ["revenue", "price"]}}
    assert catalog["admin"] == {"group": "admin", "member_level": {"includes": "*"}}
