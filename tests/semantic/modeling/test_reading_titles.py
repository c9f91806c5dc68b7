"""How a member's title reads to a person (``semantic/modeling/reading_titles.py``): the model's short title, and for
a view member titled from the name a cube's prefix gave it, its cube member's title unless that would name two public
members alike; ``/v1/meta`` composed for display carries it as ``readingTitle`` while the wire keeps Cube's titles."""

from __future__ import annotations

import textwrap
from pathlib import Path

from embedadmin.semantic import QueryContext, load_model, meta
from embedadmin.semantic.modeling.model import CompiledModel
from embedadmin.semantic.modeling.reading_titles import reading_titles
from embedadmin.semantic.results.grants import entity_grants
from embedadmin.semantic.results.meta import administrator_meta

MODEL = """
cubes:
  - name: orders
    sql_table: orders
    joins:
      - name: users
        sql: "{CUBE}.user_id = {users}.id"
        relationship: many_to_one
      - name: products
        sql: "{CUBE}.product_id = {products}.id"
        relationship: many_to_one
      - name: stores
        sql: "{CUBE}.store_id = {stores}.id"
        relationship: many_to_one
    dimensions:
      - {name: id, sql: id, type: number, primary_key: true}
      - {name: status, sql: status, type: string}
    measures:
      - {name: count, type: count}
      - {name: total_amount, sql: amount, type: sum, title: Order value}
  - name: users
    sql_table: users
    dimensions:
      - {name: id, sql: id, type: number, primary_key: true}
      - {name: city, sql: city, type: string}
      - {name: name, sql: name, type: string}
      - {name: full_name, sql: full_name, type: string, title: Full name}
      - {name: home_city, sql: home_city, type: string, title: City, public: false}
  - name: products
    sql_table: products
    dimensions:
      - {name: id, sql: id, type: number, primary_key: true}
      - {name: name, sql: name, type: string}
      - {name: category, sql: category, type: string}
  - name: stores
    sql_table: stores
    dimensions:
      - {name: id, sql: id, type: number, primary_key: true}
      - {name: city, sql: city, type: string}

views:
  - name: sales
    cubes:
      - join_path: orders
        includes:
          - status
          - total_amount
          - {name: count, alias: order_count}
      - join_path: orders.users
        prefix: true
        includes: [city, full_name]
      - join_path: orders.products
        prefix: true
        alias: product
        includes: [category]
  - name: by_place
    cubes:
      - join_path: orders
        includes: [count]
      - join_path: orders.users
        prefix: true
        includes: [name, city]
      - join_path: orders.products
        prefix: true
        includes: [name]
      - join_path: orders.stores
        includes: [city]
  - name: by_region
    cubes:
      - join_path: orders
        includes: [count]
      - join_path: orders.stores
        prefix: true
        includes: [city]
      - join_path: orders.users
        includes: [home_city]
  - name: with_hidden
    cubes:
      - join_path: orders
        includes: [count]
      - join_path: orders.stores
        prefix: true
        includes: [city]
    dimensions:
      - {name: hidden_city, sql: "{stores.city}", type: string, title: City, public: false}
"""


def compiled(tmp_path: Path) -> CompiledModel:
    (tmp_path / "model.yml").write_text(textwrap.dedent(MODEL).lstrip("\n"))
    model = load_model(tmp_path, dialect="duckdb", check_interval=0).model
    assert model is not None
    return model


def test_a_member_reads_as_its_short_title_never_with_its_views_title(tmp_path):
    titles = reading_titles(compiled(tmp_path))

    assert titles["sales.total_amount"] == "Order value"  # /v1/meta: "Sales Order value"
    assert titles["sales.status"] == "Status"
    assert titles["orders.count"] == "Count"
    assert titles["sales.order_count"] == "Order Count"  # an alias the model chose, not a prefix


def test_a_prefixed_member_without_a_title_reads_as_its_cube_member(tmp_path):
    titles = reading_titles(compiled(tmp_path))

    assert titles["sales.users_city"] == "City"  # /v1/meta: "Users City"
    assert titles["sales.users_full_name"] == "Full name"  # the cube titles it: the view keeps it
    assert titles["sales.product_category"] == "Product Category"  # prefixed by a join alias: the view's own name


def test_a_cube_members_title_is_not_taken_when_another_public_member_reads_so(tmp_path):
    titles = reading_titles(compiled(tmp_path))

    # users_name and products_name would both read "Name"; users_city would read as the stores' city.
    assert titles["by_place.users_name"] == "Users Name"
    assert titles["by_place.products_name"] == "Products Name"
    assert titles["by_place.users_city"] == "Users City"
    assert titles["by_place.city"] == "City"
    # A member nobody reads (public: false, titled "City") leaves the name to the one people do read.
    assert titles["users.city"] == "City"
    assert titles["users.home_city"] == "City"
    # Included in a view, that member is public there (as in Cube, which copies no visibility into a view): both
    # are read, and the one without a title of its own is told apart.
    assert titles["by_region.stores_city"] == "Stores City"
    assert titles["by_region.home_city"] == "City"
    # A view's own member that is not public leaves the name to the one people read.
    assert titles["with_hidden.stores_city"] == "City"
    assert titles["with_hidden.hidden_city"] == "City"


def test_meta_composed_for_display_carries_the_reading_title_and_the_wire_keeps_cubes_titles(tmp_path):
    model = compiled(tmp_path)

    wire = {m["name"]: m for cube in meta(model, QueryContext())["cubes"] for m in cube["dimensions"]}
    shown = {m["name"]: m for cube in meta(model, QueryContext(), readable=True)["cubes"] for m in cube["dimensions"]}
    administrator = {m["name"]: m for cube in administrator_meta(model)["cubes"] for m in cube["dimensions"]}

    assert wire["sales.users_city"]["title"] == "Sales Users City"
    assert wire["sales.users_city"]["shortTitle"] == "Users City"
    assert "readingTitle" not in wire["sales.users_city"]
    assert shown["sales.users_city"] == {**wire["sales.users_city"], "readingTitle": "City"}
    assert administrator["sales.users_city"]["readingTitle"] == "City"


def test_who_can_read_what_names_members_by_their_reading_titles(tmp_path):
    grants = {grant.name: grant for grant in entity_grants(compiled(tmp_path), QueryContext())}

    titles = {m.name: m.reading_title for m in grants["sales"].members}
    assert titles["sales.users_city"] == "City"
    assert titles["sales.total_amount"] == "Order value"
