"""``/v1/meta``: every field of Cube's meta format, visibility, views, folders and access policies."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from embedadmin.semantic import QueryContext, load_model, meta
from tests.semantic.conftest import FIXTURES, shop_model

CATALOG = FIXTURES / "catalog"

ITEMS_META = {
    "name": "items",
    "type": "cube",
    "title": "Items",
    "isVisible": True,
    "public": True,
    "measures": [
        {
            "name": "items.total_price",
            "title": "Items Total Price",
            "shortTitle": "Total Price",
            "format": {"type": "custom-numeric", "value": "(,.2~f", "alias": "accounting"},
            "formatDescription": {"name": "accounting", "specifier": "(,.2~f"},
            "cumulativeTotal": False,
            "cumulative": False,
            "type": "number",
            "aggType": "sum",
            "drillMembers": [],
            "drillMembersGrouped": {"measures": [], "dimensions": []},
            "isVisible": True,
            "public": True,
        },
        {
            "name": "items.margin",
            "title": "Items Average margin",
            "description": "Gross margin",
            "shortTitle": "Average margin",
            "format": {"type": "custom-numeric", "value": ".1~%", "alias": "percent_1"},
            "formatDescription": {"name": "percent_1", "specifier": ".1~%"},
            "cumulativeTotal": False,
            "cumulative": False,
            "type": "number",
            "aggType": "avg",
            "drillMembers": [],
            "drillMembersGrouped": {"measures": [], "dimensions": []},
            "meta": {"unit": "ratio"},
            "isVisible": True,
            "public": True,
        },
        {
            "name": "items.discount_share",
            "title": "Items Discount Share",
            "shortTitle": "Discount Share",
            "format": {"type": "custom-numeric", "value": "$,.2f"},
            "formatDescription": {"name": "custom", "specifier": "$,.2f"},
            "cumulativeTotal": False,
            "cumulative": False,
            "type": "number",
            "aggType": "avg",
            "drillMembers": [],
            "drillMembersGrouped": {"measures": [], "dimensions": []},
            "isVisible": True,
            "public": True,
        },
        {
            "name": "items.distinct_skus",
            "title": "Items Distinct Skus",
            "shortTitle": "Distinct Skus",
            "formatDescription": {"name": "number", "specifier": ",.2~f"},
            "cumulativeTotal": False,
            "cumulative": False,
            "type": "number",
            "aggType": "countDistinctApprox",
            "drillMembers": [],
            "drillMembersGrouped": {"measures": [], "dimensions": []},
            "isVisible": True,
            "public": True,
        },
        {
            "name": "items.last_added",
            "title": "Items Last Added",
            "shortTitle": "Last Added",
            "cumulativeTotal": False,
            "cumulative": False,
            "type": "time",
            "aggType": "time",
            "drillMembers": [],
            "drillMembersGrouped": {"measures": [], "dimensions": []},
            "isVisible": True,
            "public": True,
        },
        {
            "name": "items.any_in_stock",
            "title": "Items Any in Stock",
            "shortTitle": "Any in Stock",
            "cumulativeTotal": False,
            "cumulative": False,
            "type": "boolean",
            "aggType": "boolean",
            "drillMembers": [],
            "drillMembersGrouped": {"measures": [], "dimensions": []},
            "isVisible": True,
            "public": True,
        },
        {
            "name": "items.names",
            "title": "Items Names",
            "shortTitle": "Names",
            "cumulativeTotal": False,
            "cumulative": False,
            "type": "string",
            "aggType": "string",
            "drillMembers": [],
            "drillMembersGrouped": {"measures": [], "dimensions": []},
            "isVisible": True,
            "public": True,
        },
    ],
    "dimensions": [
        {
            "name": "items.sku_id",
            "title": "Items Sku ID",
            "type": "string",
            "shortTitle": "Sku ID",
            "suggestFilterValues": True,
            "format": "link",
            "isVisible": True,
            "public": True,
            "primaryKey": False,
            "order": "desc",
        },
        {
            "name": "items.name",
            "title": "Items Name",
            "type": "string",
            "shortTitle": "Name",
            "suggestFilterValues": True,
            "format": {"type": "link", "label": "Open item"},
            "isVisible": True,
            "public": True,
            "primaryKey": False,
            "key": "items.sku_id",
        },
        {
            "name": "items.image",
            "title": "Items Image",
            "type": "string",
            "shortTitle": "Image",
            "suggestFilterValues": True,
            "format": "imageUrl",
            "isVisible": True,
            "public": True,
            "primaryKey": False,
        },
        {
            "name": "items.price",
            "title": "Items Price",
            "type": "number",
            "shortTitle": "Price",
            "suggestFilterValues": True,
            "format": "currency",
            "formatDescription": {"name": "currency", "specifier": "$,.2~f", "currency": "EUR"},
            "currency": "EUR",
            "isVisible": True,
            "public": True,
            "primaryKey": False,
        },
        {
            "name": "items.weight",
            "title": "Items Weight",
            "type": "number",
            "shortTitle": "Weight",
            "suggestFilterValues": True,
            "format": {"type": "custom-numeric", "value": ".3s"},
            "formatDescription": {"name": "custom", "specifier": ".3s"},
            "isVisible": True,
            "public": True,
            "primaryKey": False,
        },
        {
            "name": "items.stock",
            "title": "Items Stock",
            "type": "number",
            "shortTitle": "Stock",
            "suggestFilterValues": True,
            "format": {"type": "custom-numeric", "value": ",.0f", "alias": "number_0"},
            "formatDescription": {"name": "number_0", "specifier": ",.0f"},
            "isVisible": True,
            "public": True,
            "primaryKey": False,
        },
        {
            "name": "items.added_at",
            "title": "Items Added at",
            "type": "time",
            "shortTitle": "Added at",
            "suggestFilterValues": True,
            "format": {"type": "custom-time", "value": "%Y-%m-%d"},
            "isVisible": True,
            "public": True,
            "primaryKey": False,
        },
        {
            "name": "items.location",
            "title": "Items Location",
            "type": "geo",
            "shortTitle": "Location",
            "suggestFilterValues": True,
            "isVisible": True,
            "public": True,
            "primaryKey": False,
        },
        {
            "name": "items.in_stock",
            "title": "Items In Stock",
            "type": "boolean",
            "shortTitle": "In Stock",
            "suggestFilterValues": True,
            "isVisible": True,
            "public": True,
            "primaryKey": False,
        },
    ],
    "segments": [
        {"name": "items.cheap", "title": "Items Bargains", "shortTitle": "Bargains", "isVisible": True, "public": True}
    ],
    "hierarchies": [],
    "folders": [
        {"name": "Money", "members": ["items.price", "items.margin", "items.discount_share", "items.total_price"]}
    ],
    "nestedFolders": [
        {
            "name": "Money",
            "members": [
                "items.price",
                {"name": "Ratios", "members": ["items.margin", "items.discount_share"]},
                "items.total_price",
            ],
        }
    ],
}


def catalog() -> Any:
    return load_model(CATALOG, dialect="duckdb", check_interval=0).require()


def by_name(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {cube["name"]: cube for cube in body["cubes"]}


def test_every_field_of_a_cube_with_all_formats_and_member_types() -> None:
    body = meta(catalog(), QueryContext())

    # The primary key (public by default: no), the explicitly hidden members and the non-public cube are left out.
    assert [cube["name"] for cube in body["cubes"]] == ["items"]
    assert body["cubes"][0] == ITEMS_META
    assert body["compilerId"] == catalog().compiler_id


def test_cube_fields_titles_hierarchies_and_connected_components() -> None:
    cubes = by_name(meta(shop_model("duckdb"), QueryContext(groups=["admin"])))

    users = cubes["users"]
    assert {k: users[k] for k in ("name", "type", "title", "isVisible", "public", "description", "meta")} == {
        "name": "users",
        "type": "cube",
        "title": "Customers",
        "isVisible": True,
        "public": True,
        "description": "People who placed orders",
        "meta": {"owner": "growth"},
    }
    assert users["measures"][0]["title"] == "Customers Count"
    assert [d["name"] for d in users["dimensions"]] == [
        "users.name",
        "users.country",
        "users.city",
        "users.created_at",
        "users.tier",
    ]
    assert users["hierarchies"] == [
        {"name": "users.location", "title": "User Location", "levels": ["users.country", "users.city"], "public": True}
    ]
    assert {name: cube.get("connectedComponent") for name, cube in cubes.items()} == {
        "line_items": 1,
        "products": 1,
        "orders": 1,
        "users": 1,
        "orders_view": None,
    }
    assert "joins" not in users


def test_custom_granularities_in_meta() -> None:
    orders = by_name(meta(shop_model("duckdb"), QueryContext()))["orders"]
    created_at = next(d for d in orders["dimensions"] if d["name"] == "orders.created_at")

    assert created_at["granularities"] == [
        {"name": "fiscal_year", "title": "Fiscal Year", "interval": "1 year", "offset": "3 months"},
        {"name": "sunday_week", "title": "Sunday Week", "interval": "1 week", "offset": "-1 day"},
        {"name": "half_year", "title": "Half Year", "interval": "6 months", "origin": "2020-01-01"},
    ]
    count = next(m for m in orders["measures"] if m["name"] == "orders.count")
    assert count["drillMembersGrouped"] == {
        "measures": [],
        "dimensions": ["orders.id", "orders.status", "users.city"],
    }


def test_view_members_carry_alias_member_folders_and_hierarchies() -> None:
    view = by_name(meta(shop_model("duckdb"), QueryContext(groups=["admin"])))["orders_view"]

    assert view["type"] == "view"
    assert "connectedComponent" not in view
    revenue = next(m for m in view["measures"] if m["name"] == "orders_view.revenue")
    assert revenue == {
        "name": "orders_view.revenue",
        "title": "Orders View Total Revenue",
        "shortTitle": "Total Revenue",
        "format": {"type": "custom-numeric", "value": "$,.2~f", "alias": "currency_2"},
        "formatDescription": {"name": "currency_2", "specifier": "$,.2~f", "currency": "USD"},
        "currency": "USD",
        "cumulativeTotal": False,
        "cumulative": False,
        "type": "number",
        "aggType": "sum",
        "drillMembers": [],
        "drillMembersGrouped": {"measures": [], "dimensions": []},
        "aliasMember": "orders.revenue",
        "isVisible": True,
        "public": True,
    }
    count = next(m for m in view["measures"] if m["name"] == "orders_view.count")
    # drill members follow into the view when the view includes them
    assert count["drillMembers"] == ["orders_view.status", "orders_view.users_city"]
    users_id = next(d for d in view["dimensions"] if d["name"] == "orders_view.users_id")
    assert (users_id["aliasMember"], users_id["primaryKey"], users_id["title"]) == (
        "users.id",
        False,
        "Orders View Users ID",
    )
    assert view["folders"] == [
        {
            "name": "Basics",
            "members": [
                "orders_view.status",
                "orders_view.count",
                "orders_view.users_city",
                "orders_view.users_country",
            ],
        }
    ]
    assert view["nestedFolders"] == [
        {
            "name": "Basics",
            "members": [
                "orders_view.status",
                "orders_view.count",
                {"name": "Customer", "members": ["orders_view.users_city", "orders_view.users_country"]},
            ],
        }
    ]
    assert view["hierarchies"] == [
        {
            "name": "orders_view.users_location",
            "title": "User Location",
            "levels": ["orders_view.users_country", "orders_view.users_city"],
            "aliasMember": "users.location",
            "public": True,
        }
    ]


def test_extended_meta_lists_joins_and_sql() -> None:
    cubes = by_name(meta(shop_model("duckdb"), QueryContext(groups=["admin"]), extended=True))

    assert cubes["orders"]["joins"] == [
        {"name": "users", "relationship": "belongsTo", "sql": "{CUBE}.user_id = {users.id}"},
        {"name": "line_items", "relationship": "hasMany", "sql": "{CUBE}.id = {line_items.order_id}"},
    ]
    assert cubes["orders"]["sqlTable"] == "orders"
    assert cubes["products"]["sql"] == "SELECT id, name, category, price FROM products"
    assert "joins" not in cubes["orders_view"]
    assert "joins" not in by_name(meta(shop_model("duckdb"), QueryContext()))["orders"]


def test_only_views() -> None:
    body = meta(shop_model("duckdb"), QueryContext(groups=["admin"]), only_views=True)

    assert [cube["name"] for cube in body["cubes"]] == ["orders_view"]


def test_meta_is_built_once_per_model_and_stays_fast() -> None:
    model = shop_model("duckdb")
    first = meta(model, QueryContext())
    started = time.perf_counter()
    for _ in range(50):
        again = meta(model, QueryContext())
    per_call = (time.perf_counter() - started) / 50

    assert again == first
    assert again["cubes"][0] is first["cubes"][0]  # shared, not rebuilt
    assert per_call < 0.002


def test_meta_of_a_200_cube_model_takes_under_10_ms(tmp_path: Path) -> None:
    for index in range(200):
        (tmp_path / f"cube_{index}.yml").write_text(
            f"cubes:\n  - name: cube_{index}\n    sql_table: t_{index}\n    dimensions:\n"
            + "".join(f"      - name: d_{d}\n        sql: d_{d}\n        type: string\n" for d in range(10))
            + "    measures:\n"
            + "".join(f"      - name: m_{d}\n        sql: m_{d}\n        type: sum\n" for d in range(10))
        )
    model = load_model(tmp_path, dialect="duckdb", check_interval=0).require()
    meta(model, QueryContext())  # the first call builds the shared per-model JSON

    timings = []
    for _ in range(20):
        started = time.perf_counter()
        body = meta(model, QueryContext())
        timings.append(time.perf_counter() - started)

    assert len(body["cubes"]) == 200
    assert sorted(timings)[len(timings) // 2] < 0.010


@pytest.mark.parametrize(
    ("ctx", "visible_view_members"),
    [
        (QueryContext(), 11),
        (QueryContext(groups=["admin"]), 11),
    ],
)
def test_a_matching_policy_without_member_level_shows_every_member(
    ctx: QueryContext, visible_view_members: int
) -> None:
    view = by_name(meta(shop_model("duckdb"), ctx))["orders_view"]

    assert len(view["measures"]) + len(view["dimensions"]) + len(view["segments"]) == visible_view_members
