"""Access policies as a matrix: callers (groups x security context x user attributes) against what they
see in meta and which rows their queries read, on DuckDB and PostgreSQL. Every gap fails closed."""

from __future__ import annotations

from typing import Any

import pytest

from embedadmin.semantic import QueryContext, QueryError, load_model, meta, plan_queries
from tests.semantic.conftest import FIXTURES, run_query
from tests.semantic.databases import Executor

SECURE = FIXTURES / "secure"


def secure_model(dialect: str = "duckdb") -> Any:
    return load_model(SECURE, dialect=dialect, check_interval=0).require()


def visible(ctx: QueryContext) -> dict[str, list[str]]:
    body = meta(secure_model(), ctx)
    return {
        cube["name"]: sorted(m["name"] for m in [*cube["measures"], *cube["dimensions"], *cube["segments"]])
        for cube in body["cubes"]
    }


NOBODY = QueryContext()
READER = QueryContext(security_context={"statuses": ["completed", "shipped"]})
MANAGER = QueryContext(security_context={"statuses": ["completed"], "min_amount": 100}, groups=["manager"])
ADMIN = QueryContext(groups=["admin"])
AUDITOR = QueryContext(security_context={"is_full_time": True}, groups=["auditor"])
PART_TIME_AUDITOR = QueryContext(security_context={"is_full_time": False}, groups=["auditor"])
ANALYST_DE = QueryContext(groups=["analyst"], user_attributes={"country": "DE"})
ANALYST_EU = QueryContext(groups=["analyst"], user_attributes={"country": ["DE", "FR"]})
ANALYST_NOWHERE = QueryContext(groups=["analyst"])

ORDERS_BASIC = ["secure_orders.count", "secure_orders.status"]
ORDERS_ALL = ["secure_orders.amount", "secure_orders.count", "secure_orders.revenue", "secure_orders.status"]
VIEW = ["secure_view.count", "secure_view.revenue", "secure_view.status"]
USERS = ["secure_users.count", "secure_users.country", "secure_users.name"]

META_MATRIX = [
    ("nobody", NOBODY, {"secure_orders": ORDERS_BASIC, "secure_view": VIEW}),
    ("reader", READER, {"secure_orders": ORDERS_BASIC, "secure_view": VIEW}),
    ("manager", MANAGER, {"secure_orders": sorted([*ORDERS_BASIC, "secure_orders.revenue"]), "secure_view": VIEW}),
    ("admin", ADMIN, {"secure_orders": ORDERS_ALL, "secure_view": VIEW}),
    ("full-time auditor", AUDITOR, {"secure_orders": ORDERS_ALL, "secure_view": VIEW}),
    ("part-time auditor", PART_TIME_AUDITOR, {"secure_orders": ORDERS_BASIC, "secure_view": VIEW}),
    ("analyst", ANALYST_DE, {"secure_orders": ORDERS_BASIC, "secure_users": USERS, "secure_view": VIEW}),
]


@pytest.mark.parametrize(("name", "ctx", "expected"), META_MATRIX, ids=[m[0] for m in META_MATRIX])
def test_meta_shows_what_policies_grant(name: str, ctx: QueryContext, expected: dict[str, list[str]]) -> None:
    assert visible(ctx) == expected, name


ROW_MATRIX = [
    # caller, query, expected data
    ("nobody: missing context value reads nothing", NOBODY, {"measures": ["secure_orders.count"]}, "0"),
    ("reader: status list from the context", READER, {"measures": ["secure_orders.count"]}, "8"),
    ("manager: union of two policies", MANAGER, {"measures": ["secure_orders.revenue"]}, "645"),
    ("admin: no row level", ADMIN, {"measures": ["secure_orders.count"]}, "10"),
    ("full-time auditor: allow_all", AUDITOR, {"measures": ["secure_orders.count"]}, "10"),
    ("part-time auditor: condition false", PART_TIME_AUDITOR, {"measures": ["secure_orders.count"]}, "0"),
    ("analyst: user attribute", ANALYST_DE, {"measures": ["secure_users.count"]}, "2"),
    ("analyst: array attribute", ANALYST_EU, {"measures": ["secure_users.count"]}, "3"),
    ("analyst: missing attribute", ANALYST_NOWHERE, {"measures": ["secure_users.count"]}, "0"),
    (
        "view: view filter and cube filter both apply",
        QueryContext(security_context={"statuses": ["completed", "cancelled"]}),
        {"measures": ["secure_view.count"]},
        "6",
    ),
    ("view: cube row filter kept, member level skipped", NOBODY, {"measures": ["secure_view.revenue"]}, None),
    ("view: admin reads all but cancelled", ADMIN, {"measures": ["secure_view.count"]}, "9"),
]


@pytest.mark.parametrize(("name", "ctx", "query", "expected"), ROW_MATRIX, ids=[m[0] for m in ROW_MATRIX])
def test_rows_are_what_policies_grant(
    executor: Executor, name: str, ctx: QueryContext, query: dict[str, Any], expected: str | None
) -> None:
    body = run_query(executor, query, ctx, model=secure_model(executor.dialect))

    assert [list(row.values()) for row in body["data"]] == [[expected]], name


@pytest.mark.parametrize(
    ("ctx", "member"),
    [
        (NOBODY, "secure_orders.revenue"),  # not granted by the "*" policy's member level
        (MANAGER, "secure_orders.amount"),  # excluded by the manager policy, not granted by "*"
        (NOBODY, "secure_users.count"),  # no matching policy: the whole cube is hidden
    ],
)
def test_members_a_policy_does_not_grant_cannot_be_queried_or_filtered(ctx: QueryContext, member: str) -> None:
    model = secure_model()
    kind = "measures" if member.endswith(("count", "revenue")) else "dimensions"

    with pytest.raises(QueryError, match="You requested hidden member"):
        plan_queries(model, {kind: [member]}, ctx)
    with pytest.raises(QueryError, match="You requested hidden member"):
        plan_queries(
            model,
            {"measures": ["secure_orders.count"], "filters": [{"member": member, "operator": "set"}]},
            ctx,
        )


def test_row_filter_values_are_bound_parameters_not_sql(executor: Executor) -> None:
    hostile = QueryContext(security_context={"statuses": ["completed' OR '1'='1", "x\\' OR 1=1 --"]})

    body = run_query(executor, {"measures": ["secure_orders.count"]}, hostile, model=secure_model(executor.dialect))
    plan = plan_queries(secure_model(executor.dialect), {"measures": ["secure_orders.count"]}, hostile)

    assert body["data"] == [{"secure_orders.count": "0"}]
    assert "OR '1'='1" not in plan.queries[0].sql
    assert plan.queries[0].params == ("completed' OR '1'='1", "x\\' OR 1=1 --")


def test_policy_row_filters_are_not_echoed_in_the_query() -> None:
    plan = plan_queries(secure_model(), {"measures": ["secure_orders.count"]}, READER)

    assert plan.queries[0].query.to_json()["filters"] == []
    assert "IN ($1, $2)" in plan.queries[0].sql


def test_denied_cube_joined_through_a_query_reads_no_rows() -> None:
    plan = plan_queries(secure_model(), {"measures": ["secure_view.count"]}, NOBODY)

    assert "1 = 0" in plan.queries[0].sql


def test_meta_leaves_hidden_members_out_of_hierarchies_and_folders(tmp_path) -> None:
    (tmp_path / "users.yml").write_text(
        """
cubes:
  - name: people
    sql_table: users
    dimensions:
      - {name: id, sql: id, type: number, primary_key: true}
      - {name: country, sql: country, type: string}
      - {name: city, sql: city, type: string}
    measures:
      - {name: count, type: count}
    hierarchies:
      - {name: place, levels: [country, city]}
      - {name: town, levels: [city]}
    folders:
      - name: Where
        includes: [country, city, {name: Inner, includes: [city, count]}]
    access_policy:
      - group: "*"
        member_level:
          includes: [country, count]
"""
    )
    model = load_model(tmp_path, dialect="duckdb", check_interval=0).require()

    people = meta(model, NOBODY)["cubes"][0]

    assert [d["name"] for d in people["dimensions"]] == ["people.country"]
    assert people["hierarchies"] == [{"name": "people.place", "levels": ["people.country"], "public": True}]
    assert people["folders"] == [{"name": "Where", "members": ["people.country", "people.count"]}]
    assert people["nestedFolders"] == [
        {"name": "Where", "members": ["people.country", {"name": "Inner", "members": ["people.count"]}]}
    ]
