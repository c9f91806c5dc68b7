"""Members' titles as people read them (``chat/member_titles.py``): the model's short title, and for a view member
titled from the name a cube's prefix gave it, its cube member's title unless that would name two members alike."""

from __future__ import annotations

from typing import Any

from embedadmin.chat.member_titles import reading_titles


def member(name: str, short: str | None, alias: str | None = None, title: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "title": title or f"Sales {short}"}
    if short is not None:
        found["shortTitle"] = short
    if alias is not None:
        found["aliasMember"] = alias
    return found


def test_a_member_reads_as_its_short_title_never_with_the_views_title():
    titles = reading_titles(
        [member("sales.total_amount", "Order value", "orders.total_amount"), member("sales.status", "Status")],
        cube_title="Sales",
    )

    assert titles == {"sales.total_amount": "Order value", "sales.status": "Status"}


def test_without_a_short_title_the_title_loses_the_views_and_without_either_the_name_is_titled():
    titles = reading_titles(
        [member("sales.size", None, title="Sales Order size"), {"name": "sales.completed_at"}], cube_title="Sales"
    )

    assert titles == {"sales.size": "Order size", "sales.completed_at": "Completed at"}


def test_a_prefixed_member_without_a_title_reads_as_its_cube_member():
    titles = reading_titles(
        [
            member("sales.users_city", "Users City", "users.city"),
            member("sales.users_full_name", "Name", "users.full_name"),  # the cube titles it: the view keeps it
            member("sales.order_count", "Order Count", "orders.count"),  # an alias the model chose, not a prefix
            member("sales.product_category", "Product Category", "products.category"),  # prefixed by a join alias
        ],
        cube_title="Sales",
    )

    assert titles == {
        "sales.users_city": "City",
        "sales.users_full_name": "Name",
        "sales.order_count": "Order Count",
        "sales.product_category": "Product Category",
    }


def test_a_cube_members_title_is_not_taken_when_another_member_reads_so():
    titles = reading_titles(
        [
            member("sales.users_name", "Users Name", "users.name"),
            member("sales.products_name", "Products Name", "products.name"),
            member("sales.users_city", "Users City", "users.city"),
            member("sales.city", "City", "stores.city"),
        ],
        cube_title="Sales",
    )

    assert titles == {
        "sales.users_name": "Users Name",
        "sales.products_name": "Products Name",
        "sales.users_city": "Users City",
        "sales.city": "City",
    }
