"""Query validation and normalization: Cube's shapes, messages, defaults and the echoed ``query``."""

from __future__ import annotations

from typing import Any

import pytest

from embedadmin.semantic import Limits, QueryContext, QueryError, QueryLimitError, normalize_query
from tests.semantic.conftest import NOW, shop_model


def normalize(query: Any, **options: Any) -> Any:
    return normalize_query(shop_model("duckdb"), query, QueryContext(groups=["admin"]), now=NOW, **options)


def test_echo_of_a_full_query() -> None:
    query = normalize(
        {
            "measures": ["orders.count"],
            "dimensions": ["orders.status", "orders.created_at.month"],
            "segments": ["orders.finished"],
            "timeDimensions": [{"dimension": "orders.created_at", "dateRange": "last month"}],
            "filters": [
                {"dimension": "orders.amount", "operator": "gt", "values": [10, 2.5, None]},
                {"or": [{"member": "orders.status", "operator": "equals", "values": ["a", True, 3]}]},
            ],
            "order": [["orders.count", "desc"], ["orders.status", "asc"]],
            "limit": 5,
            "offset": 10,
            "total": True,
            "timezone": "europe/berlin",
            "ungrouped": False,
            "responseFormat": "compact",
            "renewQuery": True,
            "cache": "no-cache",
        }
    )

    assert query.to_json() == {
        "measures": ["orders.count"],
        "dimensions": ["orders.status"],
        "timeDimensions": [
            {"dimension": "orders.created_at", "dateRange": ["2024-06-01T00:00:00.000", "2024-06-30T23:59:59.999"]},
            {"dimension": "orders.created_at", "granularity": "month"},
        ],
        "segments": ["orders.finished"],
        "filters": [
            {"member": "orders.amount", "operator": "gt", "values": ["10", "2.5", None]},
            {"or": [{"member": "orders.status", "operator": "equals", "values": ["a", "true", "3"]}]},
        ],
        "limit": 5,
        "rowLimit": 5,
        "offset": 10,
        "total": True,
        "timezone": "Europe/Berlin",
        "order": [{"id": "orders.count", "desc": True}, {"id": "orders.status", "desc": False}],
        "ungrouped": False,
        "responseFormat": "compact",
    }


def test_defaults_limit_timezone_and_minimal_echo() -> None:
    assert normalize({"measures": ["orders.count"]}).to_json() == {
        "measures": ["orders.count"],
        "dimensions": [],
        "timeDimensions": [],
        "filters": [],
        "limit": 10000,
        "rowLimit": 10000,
        "timezone": "UTC",
    }
    assert normalize({"measures": ["orders.count"]}, default_timezone="Asia/Tokyo").timezone == "Asia/Tokyo"
    assert normalize({"measures": ["orders.count"]}, limits=Limits(default=100, maximum=50)).limit == 50


@pytest.mark.parametrize(
    ("query", "order"),
    [
        (
            {
                "measures": ["orders.count"],
                "timeDimensions": [{"dimension": "orders.created_at", "granularity": "day"}],
            },
            [("orders.created_at", False)],
        ),
        ({"measures": ["orders.count"], "dimensions": ["orders.status"]}, [("orders.count", True)]),
        ({"dimensions": ["orders.status", "orders.amount"]}, [("orders.status", False)]),
        ({"measures": ["orders.count"], "order": {}}, []),
        ({"measures": ["orders.count"], "order": []}, []),
        ({"measures": ["orders.count"], "order": {"orders.count": "asc"}}, [("orders.count", False)]),
    ],
)
def test_default_order_rule_and_explicit_order(query: dict[str, Any], order: list[tuple[str, bool]]) -> None:
    assert [(o.id, o.desc) for o in normalize(query).order] == order


def test_limit_above_the_maximum_is_a_400_with_cubes_message() -> None:
    with pytest.raises(QueryLimitError) as raised:
        normalize({"measures": ["orders.count"], "limit": 50001})

    assert (raised.value.status, raised.value.message) == (400, "Error: The query limit has been exceeded.")
    assert normalize({"measures": ["orders.count"], "limit": 50000}).limit == 50000


ERRORS = [
    ({"measures": ["orders.count"], "foo": 1}, 'Invalid query format: "foo" is not allowed'),
    ({"measures": "orders.count"}, 'Invalid query format: "measures" must be an array'),
    (
        {"measures": ["count"]},
        'Invalid query format: "measures[0]" with value "count" fails to match the required pattern: '
        "/^[a-zA-Z0-9_]+\\.[a-zA-Z0-9_]+$/",
    ),
    ({"measures": [1]}, 'Invalid query format: "measures[0]" must be a string'),
    ({"measures": ["orders.count"], "limit": "10"}, 'Invalid query format: "limit" must be a number'),
    ({"measures": ["orders.count"], "limit": 1.5}, 'Invalid query format: "limit" must be an integer'),
    ({"measures": ["orders.count"], "limit": True}, 'Invalid query format: "limit" must be a number'),
    ({"measures": ["orders.count"], "offset": -1}, 'Invalid query format: "offset" must be greater than or equal to 0'),
    ({"measures": ["orders.count"], "total": "yes"}, 'Invalid query format: "total" must be a boolean'),
    (
        {"measures": ["orders.count"], "responseFormat": "xml"},
        'Invalid query format: "responseFormat" must be one of [default, compact, columnar]',
    ),
    (
        {"measures": ["orders.count"], "timezone": "Nowhere/Town"},
        '"timezone" must be a valid IANA time zone, got "Nowhere/Town"',
    ),
    (
        {"segments": ["orders.finished"]},
        "Query should contain either measures, dimensions or timeDimensions with granularities in order to be valid",
    ),
    (
        {"timeDimensions": [{"dimension": "orders.created_at"}]},
        "Query should contain either measures, dimensions or timeDimensions with granularities in order to be valid",
    ),
    ({"measures": ["orderz.count"]}, "Cube 'orderz' not found for path 'orderz.count'"),
    ({"measures": ["orders.cnt"]}, "'cnt' not found for path 'orders.cnt'"),
    ({"measures": ["orders.status"]}, "'orders.status' is not a measure"),
    ({"dimensions": ["orders.count"]}, "'orders.count' is not a dimension"),
    ({"measures": ["orders.count"], "segments": ["orders.status"]}, "'orders.status' is not a segment"),
    (
        {"dimensions": ["orders.id"]},
        "You requested hidden member: 'orders.id'. Please make it visible using `shown: true`. Please note primaryKey "
        "fields are `shown: false` by default: https://cube.dev/docs/schema/reference/joins#setting-a-primary-key.",
    ),
    (
        {"measures": ["orders.count"], "timeDimensions": [{"dimension": "orders.status", "granularity": "day"}]},
        "'orders.status' is not a time dimension",
    ),
    (
        {
            "measures": ["orders.count"],
            "timeDimensions": [{"dimension": "orders.created_at", "granularity": "fortnight"}],
        },
        'Granularity "fortnight" does not exist in dimension orders.created_at',
    ),
    (
        {
            "measures": ["orders.count"],
            "timeDimensions": [{"dimension": "orders.created_at", "dateRange": "today", "compareDateRange": ["today"]}],
        },
        'Invalid query format: "timeDimensions[0]" contains a conflict between optional exclusive peers '
        "[dateRange, compareDateRange]",
    ),
    (
        {"measures": ["orders.count"], "timeDimensions": [{"dimension": "orders.created_at", "dateRange": "someday"}]},
        "Can't parse date: 'someday'",
    ),
    (
        {"measures": ["orders.count"], "filters": [{"member": "orders.status", "operator": "like", "values": ["a"]}]},
        'Invalid query format: "filters[0].operator" must be one of [equals, notEquals, contains, notContains, '
        "startsWith, notStartsWith, endsWith, notEndsWith, in, notIn, gt, gte, lt, lte, set, notSet, inDateRange, "
        "notInDateRange, onTheDate, beforeDate, beforeOrOnDate, afterDate, afterOrOnDate, measureFilter]",
    ),
    (
        {"measures": ["orders.count"], "filters": [{"member": "orders.status", "operator": "equals"}]},
        'Invalid query format: "filters[0].values" is required for operator equals',
    ),
    (
        {"measures": ["orders.count"], "filters": [{"member": "orders.status", "operator": "equals", "values": []}]},
        'Invalid query format: "filters[0].values" must contain at least 1 items',
    ),
    (
        {"measures": ["orders.count"], "filters": [{"member": "orders.status", "operator": "equals", "values": [{}]}]},
        'Invalid query format: "filters[0].values[0]" must be a string, number, boolean or null',
    ),
    (
        {
            "measures": ["orders.count"],
            "filters": [{"member": "orders.status", "dimension": "orders.status", "operator": "set"}],
        },
        'Invalid query format: "filters[0]" must contain exactly one of [member, dimension]',
    ),
    (
        {"measures": ["orders.count"], "filters": [{"and": [], "or": []}]},
        'Invalid query format: "filters[0]" must contain exactly one of [and, or] and nothing else',
    ),
    (
        {
            "measures": ["orders.count"],
            "filters": [
                {
                    "or": [
                        {"member": "orders.count", "operator": "gt", "values": ["1"]},
                        {"member": "orders.status", "operator": "set"},
                    ]
                }
            ],
        },
        "You cannot use dimension and measure in same condition",
    ),
    (
        {
            "measures": ["orders.count"],
            "filters": [{"member": "orders.status", "operator": "inDateRange", "values": ["2024-01-01"]}],
        },
        "'orders.status': operator inDateRange needs a time dimension",
    ),
    (
        {"measures": ["orders.count"], "filters": [{"member": "orders.status", "operator": "measureFilter"}]},
        "measureFilter needs a measure, got 'orders.status'",
    ),
    (
        {"measures": ["orders.count"], "order": {"orders.count": "up"}},
        'Invalid query format: "order.orders.count" must be one of [asc, desc]',
    ),
    ({"measures": ["orders.count"], "order": {"orders.nope": "asc"}}, "'nope' not found for path 'orders.nope'"),
    ({"measures": ["orders.count"], "joinHints": [["orders", "nope"]]}, "Unknown cube in joinHints: 'nope'"),
    ("orders.count", 'Invalid query format: "value" must be of type object'),
]


@pytest.mark.parametrize(("query", "message"), ERRORS)
def test_invalid_queries_are_400s_with_cubes_messages(query: Any, message: str) -> None:
    with pytest.raises(QueryError) as raised:
        normalize(query)

    assert raised.value.status == 400
    assert raised.value.message == message


def test_hidden_members_may_be_filtered_on_like_in_cube() -> None:
    query = normalize(
        {"measures": ["orders.count"], "filters": [{"member": "orders.id", "operator": "equals", "values": ["1"]}]}
    )

    assert query.filters[0].to_json() == {"member": "orders.id", "operator": "equals", "values": ["1"]}


def test_duplicate_members_are_kept_once() -> None:
    query = normalize({"measures": ["orders.count", "orders.count"], "dimensions": ["orders.status", "orders.status"]})

    assert (query.measures, query.dimensions) == (("orders.count",), ("orders.status",))
