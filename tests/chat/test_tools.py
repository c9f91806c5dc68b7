"""The tools of spec 2.17 over the demo model: ``serviceMeta`` ranks what the user may see, ``serviceSqlApi`` runs
semantic SQL with the user's context (policies and row filters apply) and answers every field of the spec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from embedadmin.accounts.services import deployment_configure, duckdb_url
from embedadmin.chat.tools import ToolContext, default_tools
from embedadmin.semantic.context import QueryContext
from tests.chat.analyst.clinic import dataset as clinic
from tests.conftest import Cast
from tests.semantic.http_support import DEMO_MODEL, demo_duckdb, duck_rows, fresh_semantic_state

__all__ = ["demo_duckdb", "fresh_semantic_state"]  # fixtures used here and by providers/test_builtin

ADMIN = QueryContext(groups=["admin"])
FRANCE = QueryContext(groups=["regional"], user_attributes={"country": "France"})
OUTSIDER = QueryContext(groups=["guests"])


@pytest.fixture
def demo_deployment(acme: Cast, demo_duckdb: Path, fresh_semantic_state: None) -> Cast:
    """acme's deployment serving the demo model on the 2,000-order demo dataset."""
    deployment_configure(deployment=acme.deployment, model_dir=str(DEMO_MODEL), data_source_url=duckdb_url(demo_duckdb))
    return acme


def call(cast: Cast, name: str, arguments: dict[str, Any], ctx: QueryContext = ADMIN, **extra: Any) -> dict[str, Any]:
    """Run a tool as the runtime does; its JSON result parsed."""
    context = ToolContext(account_id=cast.account.pk, deployment_id=cast.deployment.pk, query_context=ctx, **extra)
    return json.loads(default_tools().call(context, name, arguments))


def member_names(result: dict[str, Any]) -> list[str]:
    return [member["name"] for cube in result["cubes"] for member in cube["members"]]


@pytest.mark.django_db
def test_service_meta_ranks_cubes_and_members_by_the_search(demo_deployment):
    result = call(demo_deployment, "serviceMeta", {"searchQuery": "GMV by product categories"})

    assert result["searchQuery"] == "GMV by product categories"
    # The products cube and the catalogue are named by the search ("product"); "users" matches nothing.
    ranked = ["products", "product_catalog", "sales", "orders", "line_items"]
    assert [cube["name"] for cube in result["cubes"]] == ranked
    sales = result["cubes"][2]
    assert {key: sales[key] for key in ("name", "type", "title")} == {"name": "sales", "type": "view", "title": "Sales"}
    # "GMV" is a synonym of the order value; "product categories" the product category (plural folded).
    assert [m["name"] for m in sales["members"][:2]] == ["sales.product_category", "sales.total_amount"]
    assert sales["members"][1] == {
        "name": "sales.total_amount",
        "title": "Sales Order value",
        "shortTitle": "Order value",
        "description": "Sum of order amounts, all statuses included.",
        "type": "number",
        "aggType": "sum",
        "meta": {"synonyms": ["gross merchandise value", "GMV", "order value"]},
        "format": "currency",
        "currency": "USD",
        "aliasMember": "orders.total_amount",
    }
    status = next(m for m in sales["members"] if m["name"] == "sales.status")
    assert status == {
        "name": "sales.status",
        "title": "Sales Status",
        "shortTitle": "Status",
        "description": "completed, shipped, processing, cancelled or returned.",
        "type": "string",
        "meta": {"synonyms": ["state", "order status", "fulfilment status"]},
        "aliasMember": "orders.status",
    }
    known = {"name", "title", "shortTitle", "description", "type", "aggType", "meta", "format", "currency"}
    known.add("granularities")
    known.add("aliasMember")
    assert all(set(m) <= known for m in sales["members"])
    created = next(m for m in sales["members"] if m["name"] == "sales.created_at")
    assert [g["name"] for g in created["granularities"]] == ["fiscal_year", "fiscal_quarter", "sunday_week"]


@pytest.mark.django_db
def test_service_meta_finds_a_view_by_the_names_of_the_cube_its_measures_come_from(acme, tmp_path):
    # The clinic's practice view shows the appointments cube's measures; "bookings" is a synonym of that cube only.
    dataset = tmp_path / "clinic.duckdb"
    clinic.write_duckdb(dataset)
    deployment_configure(deployment=acme.deployment, model_dir=str(clinic.MODEL), data_source_url=duckdb_url(dataset))

    result = call(acme, "serviceMeta", {"searchQuery": "bookings"})

    assert [cube["name"] for cube in result["cubes"]] == ["practice", "appointments"]


@pytest.mark.django_db
def test_service_meta_with_no_match_shows_every_visible_cube_in_model_order(demo_deployment):
    result = call(demo_deployment, "serviceMeta", {"searchQuery": "weather tomorrow"})

    names = ["line_items", "orders", "products", "users", "product_catalog", "sales"]
    assert [cube["name"] for cube in result["cubes"]] == names
    assert member_names(result)[:3] == ["line_items.count", "line_items.revenue", "line_items.units_sold"]


@pytest.mark.django_db
def test_service_meta_hides_members_the_policies_deny(demo_deployment):
    regional = member_names(call(demo_deployment, "serviceMeta", {"searchQuery": "customer name email"}, FRANCE))
    outsider = call(demo_deployment, "serviceMeta", {"searchQuery": "sales revenue price"}, OUTSIDER)

    assert "sales.users_country" in regional
    assert "sales.users_full_name" not in regional
    assert "sales.users_email" not in regional
    assert "sales" not in [cube["name"] for cube in outsider["cubes"]]
    catalog = next(cube for cube in outsider["cubes"] if cube["name"] == "product_catalog")
    assert {m["name"] for m in catalog["members"]}.isdisjoint({"product_catalog.revenue", "product_catalog.price"})


@pytest.mark.django_db
def test_service_sql_api_answers_every_field_with_a_bar_chart(demo_deployment, demo_duckdb):
    arguments = {
        "sqlQuery": "SELECT status, MEASURE(total_amount) FROM sales GROUP BY 1 ORDER BY 1",
        "queryTitle": "Order value by status",
        "description": "Sum of order amounts per status",
        "userRequest": "order value per status",
        "memoryId": "m-1",
    }

    result = call(demo_deployment, "serviceSqlApi", arguments)

    expected = duck_rows(demo_duckdb, "SELECT status, sum(amount) FROM orders GROUP BY 1 ORDER BY 1")
    assert set(result) == {
        "sqlQuery",
        "queryTitle",
        "description",
        "userRequest",
        "schema",
        "annotation",
        "data",
        "totalRows",
        "uuid",
        "vegaSpec",
    }
    assert {key: result[key] for key in ("sqlQuery", "queryTitle", "description", "userRequest")} == {
        key: arguments[key] for key in ("sqlQuery", "queryTitle", "description", "userRequest")
    }
    assert result["schema"] == [
        {"name": "status", "column_type": "String"},
        {"name": "measure(sales.total_amount)", "column_type": "Double"},
    ]
    # What each column is, as people read it and as the embed page formats it.
    assert result["annotation"] == [
        {"title": "Status", "member": "sales.status", "type": "string"},
        {
            "title": "Order value",
            "member": "sales.total_amount",
            "type": "number",
            "format": "currency",
            "currency": "USD",
        },
    ]
    assert [[status, float(amount)] for status, amount in result["data"]] == [[s, float(a)] for s, a in expected]
    assert result["totalRows"] == 5
    assert len(result["uuid"]) == 36
    # Fields name the columns (dots escaped: they would read as a nested path); axes and tooltip carry the titles.
    # Bars across, biggest first, so each status reads across.
    status = {"field": "status", "type": "nominal", "title": "Status"}
    amount = {"field": "measure(sales\\.total_amount)", "type": "quantitative", "title": "Order value"}
    assert json.loads(result["vegaSpec"]) == {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": "Order value by status",
        "mark": {"type": "bar"},
        "encoding": {"y": {**status, "sort": "-x"}, "x": amount, "tooltip": [status, amount]},
    }


@pytest.mark.parametrize(
    ("grain", "time_unit"),
    [("month", "yearmonth"), ("quarter", "yearquarter"), ("week", None)],
)
@pytest.mark.django_db
def test_a_time_chart_is_titled_by_the_member_and_its_grain(demo_deployment, grain, time_unit):
    sql = f"SELECT DATE_TRUNC('{grain}', created_at), MEASURE(revenue) FROM sales GROUP BY 1 ORDER BY 1"

    result = call(demo_deployment, "serviceSqlApi", {"sqlQuery": sql, "queryTitle": "Revenue"})

    assert result["annotation"][0] == {
        "title": f"Ordered at ({grain})",
        "member": "sales.created_at",
        "type": "time",
        "granularity": grain,
    }
    assert result["annotation"][1]["title"] == "Revenue"
    encoding = json.loads(result["vegaSpec"])["encoding"]
    # The time unit makes any Vega-Lite renderer label the axis for the grain (weeks: Cube's start on Monday).
    assert encoding["x"].get("timeUnit") == time_unit
    assert encoding["x"]["title"] == f"Ordered at ({grain})"
    assert encoding["x"]["field"] == f"date_trunc('{grain}', sales\\.created_at)"
    assert [t["title"] for t in encoding["tooltip"]] == [f"Ordered at ({grain})", "Revenue"]


@pytest.mark.django_db
def test_columns_read_as_the_model_titles_them_never_as_a_prefixed_name(demo_deployment):
    sql = (
        "SELECT users_city, DATE_TRUNC('fiscal_year', created_at), MEASURE(order_count), MEASURE(completion_rate) "
        "FROM sales GROUP BY 1, 2"
    )

    result = call(demo_deployment, "serviceSqlApi", {"sqlQuery": sql})

    # users_city is the users cube's city, included with a prefix and no title: "City", not "Users City"; a custom
    # granularity by its title; Orders by the title the view gives the count; a percent keeps its format.
    assert result["annotation"] == [
        {"title": "City", "member": "sales.users_city", "type": "string"},
        {
            "title": "Ordered at (Fiscal year)",
            "member": "sales.created_at",
            "type": "time",
            "granularity": "fiscal_year",
        },
        {"title": "Orders", "member": "sales.order_count", "type": "number"},
        {"title": "Completion rate", "member": "sales.completion_rate", "type": "number", "format": "percent"},
    ]
    assert result["vegaSpec"] == ""  # no chart fits four columns


@pytest.mark.django_db
def test_a_computed_column_is_titled_from_its_name(demo_deployment):
    inner = "SELECT status AS s, MEASURE(total_amount) AS value FROM sales GROUP BY 1"
    sql = f"SELECT 100.0 * SUM(CASE WHEN s = 'completed' THEN value END) / SUM(value) AS share FROM ({inner}) AS t"

    result = call(demo_deployment, "serviceSqlApi", {"sqlQuery": sql})

    assert result["annotation"] == [{"title": "Share", "type": "number"}]


@pytest.mark.django_db
def test_a_given_spec_is_titled_where_it_names_a_column(demo_deployment):
    given = {
        "mark": "bar",
        "encoding": {
            "x": {"field": "users_country", "type": "nominal"},
            "y": {"field": "measure(sales.total_amount)", "type": "quantitative", "title": "Money"},
            "color": {"field": "elsewhere", "type": "nominal"},
        },
    }
    sql = "SELECT users_country, MEASURE(total_amount) FROM sales GROUP BY 1"

    result = call(demo_deployment, "serviceSqlApi", {"sqlQuery": sql, "vegaSpec": json.dumps(given)})

    encoding = json.loads(result["vegaSpec"])["encoding"]
    assert encoding["x"] == {"field": "users_country", "type": "nominal", "title": "Country"}
    # A title the spec gives stays; a field that names no column is left as it is.
    assert encoding["y"] == {"field": "measure(sales\\.total_amount)", "type": "quantitative", "title": "Money"}
    assert encoding["color"] == {"field": "elsewhere", "type": "nominal"}
    assert [t["title"] for t in encoding["tooltip"]] == ["Country", "Money"]


@pytest.mark.django_db
def test_service_sql_api_caps_data_at_100_rows_and_counts_them_all(demo_deployment, demo_duckdb):
    sql = "SELECT DATE_TRUNC('day', created_at), MEASURE(order_count) FROM sales GROUP BY 1 ORDER BY 1"

    result = call(demo_deployment, "serviceSqlApi", {"sqlQuery": sql, "queryTitle": "Orders per day"})

    days = duck_rows(
        demo_duckdb, "SELECT date_trunc('day', created_at) AS d, count(*) FROM orders GROUP BY 1 ORDER BY 1"
    )
    assert result["totalRows"] == len(days) > 100
    assert len(result["data"]) == 100
    assert [int(count) for _, count in result["data"]] == [count for _, count in days[:100]]
    spec = json.loads(result["vegaSpec"])
    assert "data" not in spec
    assert spec["mark"] == {"type": "line", "point": True}
    assert spec["encoding"]["x"]["type"] == "temporal"


@pytest.mark.django_db
def test_service_sql_api_keeps_a_given_spec_without_its_data_and_draws_nothing_when_no_chart_fits(demo_deployment):
    given = {"mark": "point", "data": {"values": [{"a": 1}]}, "encoding": {}}
    sql = "SELECT status, size, MEASURE(order_count) FROM sales GROUP BY 1, 2"

    with_spec = call(demo_deployment, "serviceSqlApi", {"sqlQuery": sql, "vegaSpec": json.dumps(given)})
    without = call(demo_deployment, "serviceSqlApi", {"sqlQuery": sql})

    assert json.loads(with_spec["vegaSpec"]) == {"mark": "point", "encoding": {}}
    assert without["vegaSpec"] == ""
    assert without["totalRows"] == 15


@pytest.mark.django_db
def test_service_sql_api_applies_the_row_filter_of_the_users_country(demo_deployment, demo_duckdb):
    sql = "SELECT users_country, MEASURE(order_count), MEASURE(total_amount) FROM sales GROUP BY 1"

    result = call(demo_deployment, "serviceSqlApi", {"sqlQuery": sql}, FRANCE)

    [(orders, amount)] = duck_rows(
        demo_duckdb,
        "SELECT count(*), sum(o.amount) FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = 'France'",
    )
    assert [[country, int(n), float(a)] for country, n, a in result["data"]] == [["France", orders, float(amount)]]
    assert result["totalRows"] == 1


@pytest.mark.parametrize(
    ("arguments", "ctx", "extra", "error"),
    [
        ({"sqlQuery": "SELECT users_email FROM sales"}, FRANCE, {}, "users_email"),
        ({"sqlQuery": "SELECT MEASURE(order_count) FROM sales"}, OUTSIDER, {}, "sales"),
        ({"sqlQuery": "SELEC nonsense"}, ADMIN, {}, ""),
        ({"sqlQuery": "SELECT MEASURE(nope) FROM sales"}, ADMIN, {}, "nope"),
        ({"sqlQuery": ""}, ADMIN, {}, "sqlQuery is required"),
        ({"sqlQuery": "SELECT 1", "vegaSpec": "not json"}, ADMIN, {}, ""),
        (
            {"sqlQuery": "SELECT MEASURE(order_count) FROM sales"},
            ADMIN,
            {"branch_name": "dev", "is_default_branch": False},
            "Branch 'dev' is not found",
        ),
    ],
    ids=["denied-member", "denied-view", "bad-sql", "unknown-member", "empty-sql", "bad-spec", "unknown-branch"],
)
@pytest.mark.django_db
def test_a_failing_sql_call_is_an_error_result(demo_deployment, arguments, ctx, extra, error):
    result = call(demo_deployment, "serviceSqlApi", arguments, ctx, **extra)

    assert list(result) == ["error"]
    assert error in result["error"]


@pytest.mark.django_db(transaction=True)
def test_a_tool_error_inside_a_stream_lets_the_stream_finish(demo_deployment, chat):
    result = chat.ask("How many orders?", activeBranchName="dev")

    calls = [line["toolCall"] for line in result.lines if "toolCall" in line]
    tool_results = [json.loads(call["result"]) for call in calls if "result" in call]
    assert result.ids[-2:] == ["__state__", "__usage__"]
    error = f"Branch 'dev' is not found on deployment {demo_deployment.deployment.pk}"
    assert tool_results == [{"error": error}]
    assert result.lines[-3]["graphPath"][0] == "final"
    assert result.lines[-3]["content"] == f"I could not search the data model: {error}"
