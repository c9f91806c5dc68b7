"""The panel's report builder on the server: its page, and its endpoints (a chart type's visualization, the preview
run as a viewer, filter values, save, add to dashboard). Answers are compared with SQL on the demo data; saves with
what the Platform API reads back; refusals change nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from embedadmin.accounts.services import duckdb_url
from embedadmin.audit.models import AuditEntry
from embedadmin.dashboards.charts import chart_visualization
from embedadmin.dashboards.models import Report, Workbook
from embedadmin.directory import services as directory
from embedadmin.directory.models import ExternalUser
from embedadmin.embedding import services as embedding
from tests.dashboards.support import content_rows
from tests.panel.conftest import AccountRows, DashboardRows, make_dashboard
from tests.semantic.http_support import duck_rows

COUNTRY_TOTALS = {
    "measures": ["sales.total_amount"],
    "dimensions": ["sales.users_country"],
    "order": {"sales.users_country": "asc"},
}
FRANCE = {"externalId": "preview-fr", "groups": "regional", "attributes": "country=France"}
ADMIN = {"externalId": "preview-admin", "groups": "admin"}
TABLE = chart_visualization(query=COUNTRY_TOTALS, chart_type="table").visualization


def endpoint(rows: DashboardRows | AccountRows, name: str) -> str:
    return f"/admin/dashboards/report/builder/{rows.cast.deployment.pk}/{name}/"


def post(client: Client, url: str, body: Any):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, data=data, content_type="application/json")


def viewers_of(cast) -> None:
    """The demo model's viewers: a regional group (rows of their own country) and an admin group (every row)."""
    for name in ("regional", "admin"):
        directory.group_create(account=cast.account, embed_tenant=None, name=name)
    directory.attribute_definition_create(
        account=cast.account, embed_tenant=None, data=directory.AttributeDefinitionInput(name="country", type="string")
    )


@pytest.fixture
def built(acme_rows: AccountRows, demo_model_state, demo_dataset) -> DashboardRows:
    """acme's deployment on the demo model and data, a workbook with a draft, and the demo's viewer groups."""
    content = make_dashboard(acme_rows.cast, publish=False, data_source_url=duckdb_url(demo_dataset))
    viewers_of(acme_rows.cast)
    return content


def country_totals(dataset, where: str = "") -> list[tuple[str, float]]:
    sql = (
        "SELECT u.country, SUM(o.amount) FROM orders o JOIN users u ON u.id = o.user_id "
        f"{where} GROUP BY u.country ORDER BY u.country"
    )
    return [(country, float(total)) for country, total in duck_rows(dataset, sql)]


# --- the page ------------------------------------------------------------------------------------------------


def test_the_page_offers_the_deployments_model_with_every_field_labelled(acme_admin: Client, built: DashboardRows):
    response = acme_admin.get("/admin/dashboards/report/builder/")

    assert response.status_code == 200
    assert response["Content-Security-Policy"].startswith("default-src 'self'; script-src 'self'; style-src 'self'")
    page = response.content.decode()
    for control, label in [
        ("b-entity", "Cube or view"),
        ("b-measures", "Measures"),
        ("b-dimensions", "Dimensions"),
        ("b-time", "Time dimension"),
        ("b-grain", "Granularity"),
        ("b-range", "Date range"),
        ("b-order", "Order"),
        ("b-limit", "Limit"),
        ("b-chart", "Chart type"),
    ]:
        assert f'<label for="{control}">{label}</label>' in page
    assert '<legend id="b-filters-legend">Filters</legend>' in page
    for button in ("Run", "Save report", "Add to dashboard"):
        assert f">{button}</button>" in page
    assert "<script>" not in page
    assert " style=" not in page
    bootstrap = response.context["bootstrap"]
    views = {entry["name"]: entry for entry in bootstrap["catalog"]}
    sales = views["sales"]
    assert {m["name"] for m in sales["measures"]} >= {"sales.total_amount", "sales.order_count"}
    assert {
        "name": "fiscal_quarter",
        "title": "Fiscal quarter",
        "interval": "3 months",
        "origin": "2023-04-01",
    } in next(d for d in sales["dimensions"] if d["name"] == "sales.created_at")["granularities"]
    assert bootstrap["operators"]["time"][0] == "inDateRange"
    assert bootstrap["operatorWords"]["notEquals"] == "is not"
    assert [w["name"] for w in bootstrap["workbooks"]] == ["Sales acme"]
    assert [v["label"] for v in bootstrap["viewers"]] == ["viewer-acme (shop-acme)"]
    assert bootstrap["report"] is None


def test_a_saved_report_opens_with_its_query_visualization_and_chart_type(acme_admin: Client, built: DashboardRows):
    response = acme_admin.get(f"/admin/dashboards/report/{built.report.pk}/builder/")

    assert response.status_code == 200
    report = response.context["bootstrap"]["report"]
    assert report["query"] == {"measures": ["sales.total_amount"]}
    assert (report["chartType"], report["exact"]) == ("kpi", True)
    assert report["visualization"] == {"kind": "kpi", "measure": "sales.total_amount"}


def test_the_report_pages_link_to_the_builder(acme_admin: Client, built: DashboardRows):
    listing = acme_admin.get("/admin/dashboards/report/").content.decode()
    page = acme_admin.get(f"/admin/dashboards/report/{built.report.pk}/change/").content.decode()

    assert 'href="/admin/dashboards/report/builder/" class="addlink" id="panel-new-report">New report</a>' in listing
    assert f'href="/admin/dashboards/report/{built.report.pk}/builder/">Edit in builder</a>' in listing
    assert f'href="/admin/dashboards/report/{built.report.pk}/builder/" id="panel-edit-in-builder"' in page


# --- chart type -> visualization ----------------------------------------------------------------------------


def test_the_visualization_of_a_chart_type_comes_from_charts_py(acme_admin: Client, built: DashboardRows):
    query = {"measures": ["sales.revenue", "sales.units_sold"], "dimensions": ["sales.product_category"]}

    response = post(acme_admin, endpoint(built, "visualization"), {"query": query, "chartType": "bar_horizontal"})

    assert response.status_code == 200
    assert response.json() == {
        "visualization": chart_visualization(query=query, chart_type="bar_horizontal").visualization,
        "notes": [
            "This chart draws Revenue; the other measures are not drawn (a table or a pivot table shows them all)."
        ],
    }
    refused = post(acme_admin, endpoint(built, "visualization"), {"query": {"measures": []}, "chartType": "line"})
    assert refused.status_code == 400
    assert refused.json() == {"error": "chartType: a Line chart needs a measure", "field": "chartType"}


# --- the preview, as a viewer --------------------------------------------------------------------------------


def test_the_preview_runs_as_the_viewer_so_their_row_policy_applies(
    acme_admin: Client, built: DashboardRows, demo_dataset
):
    body = {"query": COUNTRY_TOTALS, "visualization": TABLE, "title": "By country"}

    as_france = post(acme_admin, endpoint(built, "preview"), {**body, "viewer": FRANCE}).json()
    as_admin = post(acme_admin, endpoint(built, "preview"), {**body, "viewer": ADMIN}).json()

    france = [(row["sales.users_country"], float(row["sales.total_amount"])) for row in as_france["data"]]
    assert france == pytest.approx(country_totals(demo_dataset, "WHERE u.country = 'France'"))
    every = [(row["sales.users_country"], float(row["sales.total_amount"])) for row in as_admin["data"]]
    assert every == pytest.approx(country_totals(demo_dataset))
    assert len(every) > 1
    assert (as_france["rowCount"], as_france["viewer"]) == (1, "preview-fr")
    assert isinstance(as_france["durationMs"], int)
    assert as_france["durationMs"] >= 0
    # The tile as the embed page composes it: columns with their result keys, member formats, the viewer's zone.
    widget = as_france["widget"]
    assert widget["kind"] == "table"
    assert [(c["member"], c["key"]) for c in widget["columns"]] == [
        ("sales.users_country", "sales.users_country"),
        ("sales.total_amount", "sales.total_amount"),
    ]
    assert widget["members"]["sales.total_amount"]["format"] == "currency"
    assert widget["query"]["timezone"] == "UTC"


def test_an_external_user_previews_as_they_are(
    acme_admin: Client, built: DashboardRows, acme_rows: AccountRows, demo_dataset
):
    cast = built.cast
    embedding.session_generate(
        account=cast.account,
        deployment=cast.deployment,
        data=embedding.GenerateSessionInput(
            deployment_id=cast.deployment.pk,
            external_id="anna",
            embed_tenant_name="northwind",
            groups=["regional"],
            user_attributes=[("country", "Germany")],
        ),
    )
    anna = ExternalUser.objects.get(account=cast.account, external_id="anna")
    body = {"query": COUNTRY_TOTALS, "visualization": TABLE}

    as_anna = post(acme_admin, endpoint(built, "preview"), {**body, "viewer": {"externalUser": anna.pk}})
    # viewer-acme is in a group the demo's policies do not name: the view is denied to them, as in their embed.
    as_denied = post(
        acme_admin, endpoint(built, "preview"), {**body, "viewer": {"externalUser": acme_rows.external_user.pk}}
    )

    germany = [(row["sales.users_country"], float(row["sales.total_amount"])) for row in as_anna.json()["data"]]
    assert germany == pytest.approx(country_totals(demo_dataset, "WHERE u.country = 'Germany'"))
    assert as_anna.json()["viewer"] == "anna"
    assert as_denied.status_code == 403
    assert as_denied.json() == {
        "error": "Access denied: 'sales.total_amount' is not granted to this viewer",
        "field": None,
    }


def test_a_chart_preview_carries_the_render_ready_spec(acme_admin: Client, built: DashboardRows):
    query = {
        "measures": ["sales.order_count"],
        "timeDimensions": [{"dimension": "sales.created_at", "granularity": "month"}],
    }
    line = chart_visualization(query=query, chart_type="line").visualization

    answer = post(
        acme_admin, endpoint(built, "preview"), {"query": query, "visualization": line, "viewer": ADMIN}
    ).json()

    spec = answer["widget"]["spec"]
    assert spec["data"]["name"] == "table"
    assert spec["encoding"]["x"]["field"] == "sales\\.created_at\\.month"
    assert answer["data"][0].keys() >= {"sales.created_at.month", "sales.order_count"}


def test_a_pivot_preview_carries_its_rows_columns_values_and_totals(
    acme_admin: Client, built: DashboardRows, demo_dataset
):
    query = {"measures": ["sales.order_count"], "dimensions": ["sales.users_country", "sales.status"]}
    pivot = chart_visualization(query=query, chart_type="pivot").visualization

    answer = post(
        acme_admin, endpoint(built, "preview"), {"query": query, "visualization": pivot, "viewer": FRANCE}
    ).json()

    assert answer["widget"]["kind"] == "pivot"
    spec = answer["widget"]["spec"]
    named = {part: [column["member"] for column in spec[part]] for part in ("rows", "columns", "values")}
    assert named == {"rows": ["sales.users_country"], "columns": ["sales.status"], "values": ["sales.order_count"]}
    assert {row["sales.users_country"] for row in answer["data"]} == {"France"}
    # Its totals are queried as the same viewer (the composition's queries), not added up in the page.
    sql = "SELECT COUNT(*) FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = 'France'"
    (france,) = duck_rows(demo_dataset, sql)[0]
    assert [int(row["sales.order_count"]) for row in answer["totals"]["grand"]] == [france]
    assert [int(row["sales.order_count"]) for row in answer["totals"]["rows"]] == [france]
    by_status = {row["sales.status"]: int(row["sales.order_count"]) for row in answer["totals"]["columns"]}
    assert sum(by_status.values()) == france


@pytest.mark.parametrize(
    ("body", "status", "message", "field"),
    [
        ({"query": "{not json", "visualization": TABLE, "viewer": ADMIN}, 400, "jsonQuery: not valid JSON", "query"),
        (
            {"query": COUNTRY_TOTALS, "visualization": "[", "viewer": ADMIN},
            400,
            "meta.visualization: not valid JSON",
            "visualization",
        ),
        (
            {"query": {"measures": ["sales.nope"]}, "visualization": TABLE, "viewer": ADMIN},
            400,
            "jsonQuery.measures[0]: member 'sales.nope' does not exist in the data model",
            "query",
        ),
        (
            {"query": COUNTRY_TOTALS, "visualization": TABLE, "viewer": {}},
            400,
            "Preview as: Pick an external user",
            "viewer",
        ),
        (
            {"query": COUNTRY_TOTALS, "visualization": TABLE, "viewer": {"externalId": "x", "groups": "nope"}},
            400,
            "Preview as:",
            "viewer",
        ),
        (
            {"query": COUNTRY_TOTALS, "visualization": TABLE, "viewer": ADMIN, "extra": 1},
            400,
            "Unknown fields: extra",
            None,
        ),
        ({"query": {}, "visualization": {"kind": "table"}, "viewer": ADMIN}, 400, "jsonQuery: pick a measure", "query"),
    ],
)
def test_a_bad_preview_is_a_clear_error(acme_admin: Client, built: DashboardRows, body, status, message, field):
    response = post(acme_admin, endpoint(built, "preview"), body)

    assert response.status_code == status
    assert response.json()["error"].startswith(message)
    assert response.json()["field"] == field


# --- filter values ---------------------------------------------------------------------------------------------


def test_filter_values_are_the_viewers(acme_admin: Client, built: DashboardRows, demo_dataset):
    url = endpoint(built, "values")

    as_france = post(acme_admin, url, {"member": "sales.users_country", "viewer": FRANCE}).json()
    as_admin = post(acme_admin, url, {"member": "sales.users_country", "viewer": ADMIN}).json()
    searched = post(acme_admin, url, {"member": "sales.users_country", "viewer": ADMIN, "search": "ger"}).json()

    assert as_france == {"values": ["France"], "truncated": False}
    every = [c for (c,) in duck_rows(demo_dataset, "SELECT DISTINCT country FROM users ORDER BY country")]
    assert as_admin["values"] == every
    assert searched["values"] == [c for c in every if "ger" in c.lower()]
    refused = post(acme_admin, url, {"member": "sales.total_amount", "viewer": ADMIN})
    assert refused.status_code == 400
    assert refused.json()["error"] == "member: 'sales.total_amount' is not a dimension of the data model"


# --- save ------------------------------------------------------------------------------------------------------


def test_saving_writes_the_report_the_platform_api_reads(acme_admin: Client, built: DashboardRows, api):
    cast = built.cast
    pie = chart_visualization(query=COUNTRY_TOTALS, chart_type="pie").visualization

    response = post(
        acme_admin,
        endpoint(built, "save"),
        {"name": "Revenue by country", "jsonQuery": COUNTRY_TOTALS, "visualization": pie},
    )

    assert response.status_code == 200, response.content
    saved = response.json()["report"]
    report = Report.objects.get(pk=saved["id"])
    assert (report.deployment_id, report.account_id, report.version) == (cast.deployment.pk, cast.account.pk, 1)
    read = api.get(f"/api/v1/deployments/{cast.deployment.pk}/reports/{report.pk}", **cast.platform_headers).json()
    assert json.loads(read["jsonQuery"]) == COUNTRY_TOTALS
    assert read["meta"] == {"visualization": pie}
    assert (read["name"], read["publicId"]) == ("Revenue by country", saved["publicId"])
    entry = AuditEntry.objects.get(account=cast.account, resource_type="report", resource_id=str(report.pk))
    assert (entry.action, entry.via, entry.actor_label) == ("report.create", "panel", cast.created.admin_username)


def test_saving_again_updates_the_report_and_keeps_its_other_meta(acme_admin: Client, built: DashboardRows):
    report = built.report
    Report.objects.filter(pk=report.pk).update(meta={**report.meta, "note": "kept"})
    line = {"kind": "kpi", "measure": "sales.order_count"}

    response = post(
        acme_admin,
        endpoint(built, "save"),
        {
            "reportId": report.pk,
            "name": "Orders",
            "jsonQuery": '{"measures": ["sales.order_count"]}',
            "visualization": line,
        },
    )

    assert response.status_code == 200, response.content
    report.refresh_from_db()
    assert (report.name, report.version) == ("Orders", 2)
    assert report.json_query == '{"measures": ["sales.order_count"]}'  # the Advanced tab's text, as written
    assert report.meta == {"visualization": line, "note": "kept"}
    assert AuditEntry.objects.filter(action="report.update", resource_id=str(report.pk)).count() == 1


@pytest.mark.parametrize(
    ("body", "message", "field"),
    [
        ({"jsonQuery": '{"measures": [', "visualization": TABLE}, "jsonQuery: not valid JSON", "query"),
        (
            {"jsonQuery": COUNTRY_TOTALS, "visualization": '{"kind": '},
            "meta.visualization: not valid JSON",
            "visualization",
        ),
        (
            {
                "jsonQuery": COUNTRY_TOTALS,
                "visualization": {"kind": "vega", "spec": {"mark": "bar", "data": {"values": []}}},
            },
            "meta.visualization.spec.data: a spec must not carry 'data'",
            "visualization",
        ),
        (
            {"jsonQuery": COUNTRY_TOTALS, "visualization": {"kind": "kpi", "measure": "sales.order_count"}},
            "meta.visualization.measure: 'sales.order_count' is not a measure of the report's query",
            "visualization",
        ),
        ({"jsonQuery": ["sales.total_amount"], "visualization": TABLE}, "jsonQuery: must be a JSON object", "query"),
        ({"name": "", "jsonQuery": COUNTRY_TOTALS, "visualization": TABLE}, "name must be a non-empty string", "name"),
        ({"jsonQuery": COUNTRY_TOTALS, "visualization": TABLE, "reportId": 10**30}, "reportId: report", None),
    ],
)
@pytest.mark.parametrize("existing", [False, True])
def test_a_bad_save_is_a_clear_error_and_writes_nothing(
    acme_admin: Client, built: DashboardRows, body, message, field, existing
):
    given = {"name": "Bad", **body}
    if existing and "reportId" not in given:
        given["reportId"] = built.report.pk
    before = content_rows()
    entries = AuditEntry.objects.count()

    response = post(acme_admin, endpoint(built, "save"), given)

    assert response.status_code in (400, 404)
    assert response.json()["error"].startswith(message)
    assert response.json()["field"] == field
    assert content_rows() == before
    assert AuditEntry.objects.count() == entries


# --- add to dashboard ------------------------------------------------------------------------------------------


def test_add_to_dashboard_puts_the_report_below_the_draft_widgets(acme_admin: Client, built: DashboardRows):
    saved = post(
        acme_admin,
        endpoint(built, "save"),
        {"name": "Revenue by country", "jsonQuery": COUNTRY_TOTALS, "visualization": TABLE},
    ).json()["report"]

    response = post(acme_admin, endpoint(built, "add"), {"reportId": saved["id"], "workbookId": built.workbook.pk})

    assert response.status_code == 200, response.content
    workbook = Workbook.objects.get(pk=built.workbook.pk)
    widgets = workbook.dashboard_draft["widgets"]
    assert [w["id"] for w in widgets] == ["revenue", "intro", "chart-1"]
    assert widgets[-1] == {
        "id": "chart-1",
        "type": "CHART",
        "position": {"x": 0, "y": 3, "w": 6, "h": 4},  # below the revenue tile (y 0, h 3)
        "config": {"reportId": saved["id"]},
    }
    assert response.json()["widgetId"] == "chart-1"
    assert Report.objects.get(pk=saved["id"]).workbook_id == workbook.pk
    actions = list(AuditEntry.objects.filter(via="panel").order_by("id").values_list("action", "resource_id"))
    assert actions[-2:] == [("dashboard.update", str(workbook.pk)), ("report.update", str(saved["id"]))]


# --- who may use it ----------------------------------------------------------------------------------------------


ENDPOINTS = ["visualization", "preview", "values", "save", "add"]


@pytest.fixture
def both(
    acme_rows: AccountRows, globex_rows: AccountRows, demo_model_state, demo_dataset
) -> tuple[DashboardRows, DashboardRows]:
    acme = make_dashboard(acme_rows.cast, publish=False, data_source_url=duckdb_url(demo_dataset))
    globex = make_dashboard(globex_rows.cast, publish=False, data_source_url=duckdb_url(demo_dataset))
    viewers_of(acme_rows.cast)
    viewers_of(globex_rows.cast)
    return acme, globex


def globex_admin(login, globex: DashboardRows) -> Client:
    return login(globex.cast.created.admin_username, globex.cast.created.admin_password)


@pytest.mark.parametrize("name", ENDPOINTS)
def test_a_panel_user_of_another_account_cannot_use_this_deployment(login, both, name):
    acme, globex = both
    client = globex_admin(login, globex)
    body = {
        "visualization": {"query": COUNTRY_TOTALS, "chartType": "table"},
        "preview": {"query": COUNTRY_TOTALS, "visualization": TABLE, "viewer": ADMIN},
        "values": {"member": "sales.users_country", "viewer": ADMIN},
        "save": {"name": "Stolen", "jsonQuery": COUNTRY_TOTALS, "visualization": TABLE, "reportId": acme.report.pk},
        "add": {"reportId": acme.report.pk, "workbookId": acme.workbook.pk},
    }[name]
    before = content_rows()

    response = post(client, endpoint(acme, name), body)

    assert response.status_code == 404
    assert response.json() == {"error": "Deployment not found", "field": None}
    assert content_rows() == before
    assert not AuditEntry.objects.filter(account=acme.cast.account, via="panel").exists()


def test_their_own_deployment_does_not_reach_this_accounts_reports_workbooks_or_viewers(login, both, acme_rows):
    acme, globex = both
    client = globex_admin(login, globex)
    before = content_rows()

    saved = post(
        client,
        endpoint(globex, "save"),
        {"reportId": acme.report.pk, "name": "Stolen", "jsonQuery": COUNTRY_TOTALS, "visualization": TABLE},
    )
    added = post(client, endpoint(globex, "add"), {"reportId": globex.report.pk, "workbookId": acme.workbook.pk})
    added_theirs = post(client, endpoint(globex, "add"), {"reportId": acme.report.pk, "workbookId": globex.workbook.pk})
    as_acme_viewer = post(
        client,
        endpoint(globex, "preview"),
        {"query": COUNTRY_TOTALS, "visualization": TABLE, "viewer": {"externalUser": acme_rows.external_user.pk}},
    )
    page = client.get(f"/admin/dashboards/report/{acme.report.pk}/builder/")

    assert (saved.status_code, saved.json()["error"]) == (
        404,
        f"reportId: report {acme.report.pk} not found in this deployment",
    )
    assert (added.status_code, added.json()["error"]) == (
        404,
        f"workbookId: workbook {acme.workbook.pk} not found in this deployment",
    )
    assert added_theirs.status_code == 404
    assert as_acme_viewer.status_code == 400
    assert as_acme_viewer.json()["error"].startswith("Preview as: Select a valid choice")
    assert (page.status_code, page["Location"]) == (302, "/admin/")
    assert content_rows() == before


def test_only_post_and_only_panel_users(acme_admin: Client, built: DashboardRows):
    anonymous = Client()

    assert acme_admin.get(endpoint(built, "save")).status_code == 405
    assert post(anonymous, endpoint(built, "save"), {}).status_code == 302  # to the login page
    assert anonymous.get("/admin/dashboards/report/builder/").status_code == 302
