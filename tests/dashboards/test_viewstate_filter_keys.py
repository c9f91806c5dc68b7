"""A report filter may name its member with ``member`` or with Cube's older ``dimension`` key, at any depth of
``and``/``or`` groups: viewstate reads both the same (the members a query uses, FIELD switches, the controls that
apply to a tile, the member formats of a view)."""

from __future__ import annotations

import json

import pytest

from embedadmin.dashboards import viewstate
from embedadmin.dashboards.models import ReportSnapshot
from tests.embedding.dashboard_support import CONFIG


def _state(*params: tuple[str, str]) -> viewstate.ViewState:
    return viewstate.parse_url(CONFIG, list(params), timezone="UTC").state


def _f(member: str, value: object) -> tuple[str, str]:
    return f"f_{member}", json.dumps(value)


@pytest.mark.parametrize(
    ("filters", "members"),
    [
        ([{"dimension": "sales.status", "operator": "equals", "values": ["completed"]}], ["sales.status"]),
        ([{"member": "sales.status", "operator": "equals", "values": ["completed"]}], ["sales.status"]),
        (
            [
                {
                    "or": [
                        {"dimension": "sales.status", "operator": "set"},
                        {
                            "and": [
                                {"dimension": "users.city", "operator": "set"},
                                {"member": "users.age", "operator": "set"},
                            ]
                        },
                    ]
                },
                {"dimension": "orders.count", "operator": "gt", "values": ["3"]},
            ],
            ["sales.status", "users.city", "users.age", "orders.count"],
        ),
        # the same member under both keys is counted once; a group or a non-string name is no member
        (
            [
                {"dimension": "sales.status", "operator": "set"},
                {"and": [{"member": "sales.status", "operator": "notSet"}]},
                {"dimension": 42, "operator": "set"},
                {"or": []},
            ],
            ["sales.status"],
        ),
    ],
)
def test_query_members_reads_member_and_dimension_filters_at_any_depth(filters, members):
    query = {"measures": ["sales.count"], "filters": filters}
    assert viewstate.query_members(query) == ["sales.count", *members]


def test_a_control_applies_to_a_tile_whose_only_use_of_its_cube_is_a_dimension_keyed_filter():
    # given: a tile of products, narrowed by a sales member named with "dimension" inside an "or" group
    condition = {"or": [{"dimension": "sales.status", "operator": "equals", "values": ["completed"]}]}
    query = {"measures": ["products.count"], "filters": [condition]}

    # when
    composed = viewstate.compose_query(CONFIG, query, _state(_f("sales.users_country", {"value": "France"})))

    # then: the sales cube's country control narrows it too
    assert composed["filters"] == [
        condition,
        {"member": "sales.users_country", "operator": "equals", "values": ["France"]},
    ]


def test_a_field_switch_renames_a_dimension_keyed_filter_and_keeps_its_key():
    # given: a filter on the FIELD control's member, named with "dimension", nested in an "and" group
    query = {
        "measures": ["sales.total_amount"],
        "filters": [
            {"and": [{"dimension": "sales.total_amount", "operator": "gt", "values": ["5"]}]},
            {"member": "sales.total_amount", "operator": "lt", "values": ["50"]},
        ],
    }

    # when
    composed = viewstate.compose_query(CONFIG, query, _state(("ms_sales.total_amount", "sales.order_count")))

    # then
    assert composed["measures"] == ["sales.order_count"]
    assert composed["filters"] == [
        {"and": [{"dimension": "sales.order_count", "operator": "gt", "values": ["5"]}]},
        {"member": "sales.order_count", "operator": "lt", "values": ["50"]},
    ]
    assert query["filters"][0]["and"][0]["dimension"] == "sales.total_amount"  # the report's query is not changed


def test_a_view_describes_the_member_of_a_dimension_keyed_filter():
    # given: a table report filtered by a member named with "dimension"
    snapshot = ReportSnapshot(
        kind=ReportSnapshot.Kind.TABLE,
        name="Orders",
        title="Orders",
        spec={},
        json_query={
            "measures": ["sales.order_count"],
            "filters": [{"or": [{"dimension": "sales.status", "operator": "equals", "values": ["completed"]}]}],
        },
    )
    members = {
        "sales.order_count": {"name": "sales.order_count", "title": "Orders", "type": "number"},
        "sales.status": {"name": "sales.status", "title": "Status", "type": "string"},
    }

    # when
    view = viewstate.compose_view(config=CONFIG, snapshot_for=lambda _config: snapshot, state=_state(), members=members)

    # then
    tile = next(w for w in view["widgets"] if w["id"] == "revenue")
    assert tile["members"] == {
        "sales.order_count": {"title": "Orders", "type": "number"},
        "sales.status": {"title": "Status", "type": "string"},
    }
