"""The dashboard editor's server side: what the page offers (the deployment's reports and members, the operators the
validation allows), saving through ``workbook_dashboard_set`` (a refusal names its widget and writes nothing),
publishing through the panel's publish, the comparison in words, and an account administrator kept to their own
account's workbooks. The editor in a browser: ``test_dashboard_editor_browser.py``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from embedadmin.accounts import services as accounts
from embedadmin.accounts.services import deployment_configure, deployment_create
from embedadmin.audit.models import AuditEntry
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards.models import Dashboard, Workbook
from embedadmin.panel.admin.editor import EDITOR_CSP
from embedadmin.semantic.modeling.model import OPERATORS_BY_TYPE
from embedadmin.semantic.modeling.references import PREDEFINED_GRANULARITIES
from tests.embed_assets.support import STATIC, AssetParser, static_path
from tests.panel.conftest import DEMO_MODEL, DashboardRows, admin_url

pytestmark = [pytest.mark.postgres, pytest.mark.usefixtures("on_postgres")]

NEVER_CACHED = "max-age=0, no-cache, no-store, must-revalidate, private"
REPO = Path(__file__).resolve().parents[2]


def editor_url(workbook: Workbook, call: str = "") -> str:
    return f"/admin/dashboards/workbook/{workbook.pk}/dashboard-editor/{call}"


def post_json(client: Client, url: str, body) -> object:
    data = body if isinstance(body, bytes) else json.dumps(body)
    return client.post(url, data=data, content_type="application/json")


def stored_draft(workbook: Workbook) -> dict:
    return Workbook.objects.get(pk=workbook.pk).dashboard_draft


def panel_entries(account, action: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(account=account, action=action, via="panel"))


def country_filter(**config) -> dict:
    return {
        "id": "country",
        "type": "FILTER",
        "position": {"x": 0, "y": 3, "w": 3, "h": 1},
        "config": {"member": "sales.users_country", "label": "Country", "operators": ["equals"], **config},
    }


def grain_control() -> dict:
    return {
        "id": "grain",
        "type": "TIME_GRAIN",
        "position": {"x": 3, "y": 3, "w": 2, "h": 1},
        "config": {
            "member": "sales.created_at",
            "label": "Grain",
            "grains": ["month", "quarter"],
            "defaultGrain": "month",
        },
    }


def built_draft(rows: DashboardRows, *extra: dict) -> dict:
    draft = json.loads(json.dumps(rows.workbook.dashboard_draft))
    draft["widgets"] += list(extra)
    return draft


# --- the page --------------------------------------------------------------------------------------------------


def test_editor_offers_the_deployments_reports_members_and_operators(
    acme_admin: Client, acme_dashboard: DashboardRows, globex_dashboard: DashboardRows
):
    response = acme_admin.get(editor_url(acme_dashboard.workbook))

    assert response.status_code == 200
    assert response["Content-Security-Policy"] == EDITOR_CSP
    assert response["Cache-Control"] == NEVER_CACHED
    editor = response.context["editor"]
    assert editor["draft"] == acme_dashboard.workbook.dashboard_draft
    assert editor["draftSaved"] is True
    assert editor["reports"] == [
        {
            "id": acme_dashboard.report.pk,
            "publicId": acme_dashboard.report.public_id,
            "name": "Revenue acme",
            "title": "",
            "kind": "KPI",
            "workbook": "Sales acme",
        }
    ]  # globex's report is not offered
    assert editor["operatorWords"]["notEquals"] == "is not"
    entities = {e["name"]: e for e in editor["entities"]}
    assert [e["name"] for e in editor["entities"]][:2] == ["product_catalog", "sales"]  # views first
    members = {m["name"]: m for m in entities["sales"]["members"]}
    assert members["sales.users_country"] == {
        "name": "sales.users_country",
        "title": "Country",
        "entity": "Sales",
        "kind": "dimension",
        "type": "string",
        "operators": list(OPERATORS_BY_TYPE["string"]),
    }
    assert members["sales.total_amount"]["kind"] == "measure"
    assert "operators" not in members["sales.total_amount"]  # a filter control names a dimension
    assert members["sales.created_at"]["operators"] == ["inDateRange"]  # a date range
    assert members["sales.users_age"]["operators"] == list(OPERATORS_BY_TYPE["number"])
    grains = [g["name"] for g in members["sales.created_at"]["grains"]]
    assert grains == [*PREDEFINED_GRANULARITIES, "fiscal_year", "fiscal_quarter", "sunday_week"]
    assert {"name": "fiscal_year", "title": "Fiscal year"} in members["sales.created_at"]["grains"]
    # Hidden members are not offered (line_items.id is not public).
    assert "line_items.id" not in {m["name"] for m in entities["line_items"]["members"]}
    assert editor["published"]["versionNumber"] == 1
    assert editor["urls"]["save"] == editor_url(acme_dashboard.workbook, "draft/")


def test_editor_page_runs_its_own_files_only(acme_admin: Client, acme_dashboard: DashboardRows):
    html = acme_admin.get(editor_url(acme_dashboard.workbook)).content.decode()
    parser = AssetParser()
    parser.feed(html)

    assert parser.inline_scripts == 0  # the editor's data is a JSON block
    assert parser.style_elements == 0
    assert parser.style_attributes == []
    assert parser.handler_attributes == []
    assert "/static/vendor/gridstack.min.js" in parser.scripts
    assert "/static/panel/editor.js" in parser.scripts
    assert "/static/vendor/gridstack.min.css" in parser.stylesheets
    assert '<script id="editor-data" type="application/json">' in html


def test_a_workbook_without_a_draft_opens_on_an_empty_grid(acme_admin: Client, acme_rows, demo_model_state):
    deployment_configure(deployment=acme_rows.cast.deployment, model_dir=str(DEMO_MODEL))
    workbook = dashboards.workbook_create(deployment=acme_rows.cast.deployment, changes={"name": "Fresh"})

    editor = acme_admin.get(editor_url(workbook)).context["editor"]

    assert editor["draft"] == {"title": "Fresh", "layout": {"cols": 12, "rowHeight": 80}, "widgets": []}
    assert editor["draftSaved"] is False
    assert editor["published"] is None


def test_a_deployment_without_a_model_offers_reports_and_text_only(acme_admin: Client, acme_rows):
    workbook = dashboards.workbook_create(deployment=acme_rows.cast.deployment, changes={"name": "No model"})

    response = acme_admin.get(editor_url(workbook))

    assert response.status_code == 200
    editor = response.context["editor"]
    assert editor["entities"] == []
    assert (
        editor["modelError"]
        == f"Deployment {acme_rows.cast.deployment.pk} has no data model: set one with configure_deployment"
    )


def test_workbook_page_summarises_the_draft_and_links_the_editor(acme_admin: Client, acme_dashboard: DashboardRows):
    html = acme_admin.get(admin_url("workbook", "change", acme_dashboard.workbook)).content.decode()

    assert "&quot;title&quot;" not in html  # no JSON
    assert f'href="{editor_url(acme_dashboard.workbook)}"' in html
    assert "<strong>Sales overview acme</strong>: 2 widget(s) on 12 columns, rows of 80 px." in html
    assert (
        "<tr><td>Revenue acme</td><td>report</td><td>Revenue acme (KPI)</td>"
        "<td>column 1, row 1, 6 columns wide, 3 rows high</td></tr>"
    ) in html
    assert (
        "<tr><td>Hello</td><td>text</td><td>“Hello”</td><td>column 7, row 1, 6 columns wide, 2 rows high</td></tr>"
        in html
    )


def test_dashboard_page_links_the_editor_of_its_workbook(acme_admin: Client, acme_dashboard: DashboardRows):
    html = acme_admin.get(admin_url("dashboard", "change", acme_dashboard.dashboard)).content.decode()

    assert f'href="{editor_url(acme_dashboard.workbook)}" class="panel-edit-dashboard-link">Edit dashboard</a>' in html


# --- save ------------------------------------------------------------------------------------------------------


def test_save_stores_the_draft_through_the_service_and_audits_it(
    acme_admin: Client, acme_dashboard: DashboardRows, monkeypatch
):
    calls = []
    real = dashboards.workbook_dashboard_set
    monkeypatch.setattr(dashboards, "workbook_dashboard_set", lambda **kw: calls.append(kw) or real(**kw))
    draft = built_draft(acme_dashboard, country_filter(), grain_control())

    response = post_json(acme_admin, editor_url(acme_dashboard.workbook, "draft/"), {"draft": draft})

    assert response.status_code == 200, response.content
    assert response.json() == {"draft": draft, "message": "Draft saved."}
    assert stored_draft(acme_dashboard.workbook) == draft
    assert [c["workbook"].pk for c in calls] == [acme_dashboard.workbook.pk]
    [entry] = panel_entries(acme_dashboard.cast.account, "dashboard.update")
    assert (entry.resource_type, entry.resource_id, entry.details) == (
        "dashboard",
        str(acme_dashboard.workbook.pk),
        {"widgets": 4},
    )
    assert entry.actor_label == acme_dashboard.cast.created.admin_username


def test_a_refused_draft_names_its_widget_and_writes_nothing(acme_admin: Client, acme_dashboard: DashboardRows):
    before = stored_draft(acme_dashboard.workbook)
    draft = built_draft(acme_dashboard, country_filter(operators=["gt"]))

    response = post_json(acme_admin, editor_url(acme_dashboard.workbook, "draft/"), {"draft": draft})

    assert response.status_code == 400
    assert response.json() == {
        "error": "operator 'gt' is not valid for 'sales.users_country' (string); use equals, notEquals, contains, "
        "notContains, startsWith, notStartsWith, endsWith, notEndsWith, set, notSet",
        "widgetId": "country",
    }
    assert stored_draft(acme_dashboard.workbook) == before
    assert panel_entries(acme_dashboard.cast.account, "dashboard.update") == []


def test_a_refusal_about_the_whole_draft_names_no_widget(acme_admin: Client, acme_dashboard: DashboardRows):
    draft = {**built_draft(acme_dashboard), "layout": {"cols": 0}}

    response = post_json(acme_admin, editor_url(acme_dashboard.workbook, "draft/"), {"draft": draft})

    assert response.status_code == 400
    assert response.json() == {"error": "dashboardDraft.layout.cols: must be a positive integer", "widgetId": None}


def test_a_draft_naming_a_report_of_another_deployment_is_refused(
    acme_admin: Client, acme_dashboard: DashboardRows, globex_dashboard: DashboardRows
):
    other, _ = deployment_create(account=acme_dashboard.cast.account, name="Staging", slug="staging")
    deployment_configure(deployment=other, model_dir=str(DEMO_MODEL))
    staging_report = dashboards.report_create(
        deployment=other,
        fields={"name": "Staging revenue", "json_query": json.dumps({"measures": ["sales.total_amount"]})},
    )
    before = stored_draft(acme_dashboard.workbook)

    for report in (staging_report, globex_dashboard.report):
        chart = {"id": "stolen", "type": "CHART", "position": {"x": 0, "y": 5, "w": 4, "h": 2}}
        draft = built_draft(acme_dashboard, {**chart, "config": {"reportId": report.pk}})
        response = post_json(acme_admin, editor_url(acme_dashboard.workbook, "draft/"), {"draft": draft})

        assert response.status_code == 400
        assert response.json() == {
            "error": f"report {report.pk} does not exist in this deployment",
            "widgetId": "stolen",
        }
    assert stored_draft(acme_dashboard.workbook) == before
    assert panel_entries(acme_dashboard.cast.account, "dashboard.update") == []


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (
            b"{not json",
            400,
            "Invalid JSON body: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ),
        (b"[]", 400, "The body must be a JSON object"),
        ({}, 400, "draft: required"),
        ({"draft": "a dashboard"}, 400, "dashboardDraft: must be an object"),
        ({"draft": {"widgets": []}, "publish": True}, 400, "Unknown fields: publish"),
        ({"draft": {"widgets": [{"type": "CHART\x00"}]}}, 400, "The body must not contain NUL characters"),
    ],
)
def test_bad_bodies_are_json_errors_that_change_nothing(
    acme_admin: Client, acme_dashboard: DashboardRows, body, status, error
):
    before = stored_draft(acme_dashboard.workbook)

    response = post_json(acme_admin, editor_url(acme_dashboard.workbook, "draft/"), body)

    assert response.status_code == status
    assert response.json()["error"] == error
    assert stored_draft(acme_dashboard.workbook) == before


@pytest.mark.parametrize("call", ["draft/", "publish/", "compare/"])
def test_the_editors_calls_take_post_only(acme_admin: Client, acme_dashboard: DashboardRows, call):
    response = acme_admin.get(editor_url(acme_dashboard.workbook, call))

    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.json() == {"error": "Method not allowed: use POST"}


# --- publish ---------------------------------------------------------------------------------------------------


def test_publish_uses_the_panels_publish(acme_admin: Client, acme_dashboard: DashboardRows, monkeypatch):
    calls = []
    real = dashboards.workbook_publish
    monkeypatch.setattr(dashboards, "workbook_publish", lambda **kw: calls.append(kw) or real(**kw))
    dashboards.workbook_dashboard_set(
        workbook=acme_dashboard.workbook, draft=built_draft(acme_dashboard, country_filter())
    )

    response = post_json(acme_admin, editor_url(acme_dashboard.workbook, "publish/"), {})

    assert response.status_code == 200, response.content
    dashboard = Dashboard.objects.get(pk=acme_dashboard.dashboard.pk)
    body = response.json()
    assert body["message"] == f"Published Sales overview acme: version 2 (publicId {dashboard.public_id})."
    assert body["published"]["versionNumber"] == 2
    assert body["published"]["publishedBy"] == acme_dashboard.cast.created.admin_username
    assert dashboard.version_number == 2
    assert [c["published_by"] for c in calls] == [acme_dashboard.cast.created.admin_username]
    [entry] = panel_entries(acme_dashboard.cast.account, "workbook.publish")
    assert entry.details == {"version": 2}


def test_a_refused_publish_is_a_json_error(acme_admin: Client, acme_rows, demo_model_state):
    deployment_configure(deployment=acme_rows.cast.deployment, model_dir=str(DEMO_MODEL))
    workbook = dashboards.workbook_create(deployment=acme_rows.cast.deployment, changes={"name": "Empty"})

    response = post_json(acme_admin, editor_url(workbook, "publish/"), {})

    assert response.status_code == 400
    assert response.json() == {"error": f"Workbook {workbook.pk} has no dashboard draft to publish"}
    assert not Dashboard.objects.filter(workbook=workbook).exists()
    assert panel_entries(acme_rows.cast.account, "workbook.publish") == []


# --- compare ---------------------------------------------------------------------------------------------------


def compare(client: Client, workbook: Workbook, draft: dict) -> dict:
    response = post_json(client, editor_url(workbook, "compare/"), {"draft": draft})
    assert response.status_code == 200, response.content
    return response.json()


def test_compare_says_in_words_what_publishing_would_change(acme_admin: Client, acme_dashboard: DashboardRows):
    draft = built_draft(acme_dashboard, country_filter(operators=["equals", "notEquals"], multiple=False))
    revenue, intro = draft["widgets"][0], draft["widgets"][1]
    revenue["position"] = {"x": 2, "y": 1, "w": 8, "h": 3}
    revenue["config"]["title"] = "Turnover"
    draft["widgets"].remove(intro)
    draft["title"] = "Sales at a glance"
    dashboards.report_update(
        report=acme_dashboard.report,
        fields={"meta": {"visualization": {"kind": "table", "columns": ["sales.total_amount"]}}},
    )

    answer = compare(acme_admin, acme_dashboard.workbook, draft)

    assert answer["published"]["versionNumber"] == 1
    assert [(d["change"], d["text"], d["widgetId"]) for d in answer["differences"]] == [
        ("dashboard", "Dashboard retitled “Sales overview acme” → “Sales at a glance”", None),
        ("moved", "Report “Turnover” moved from column 1, row 1 to column 3, row 2", "revenue"),
        (
            "resized",
            "Report “Turnover” resized from 6 columns wide, 3 rows high to 8 columns wide, 3 rows high",
            "revenue",
        ),
        ("retitled", "Report “Revenue acme” retitled “Turnover”", "revenue"),
        ("report-edited", "Report “Revenue acme” was edited since publish (version 1 → 2)", "revenue"),
        ("added", "Filter “Country” added at column 1, row 4, 3 columns wide, 1 row high", "country"),
        ("removed", "Text “Hello” removed (was at column 7, row 1, 6 columns wide, 2 rows high)", "intro"),
    ]


def test_compare_names_changed_settings_and_reports(acme_admin: Client, acme_dashboard: DashboardRows):
    other = dashboards.report_create(
        deployment=acme_dashboard.cast.deployment,
        fields={"name": "Orders acme", "json_query": json.dumps({"measures": ["sales.order_count"]})},
    )
    published = built_draft(acme_dashboard, country_filter(), grain_control())
    dashboards.workbook_dashboard_set(workbook=acme_dashboard.workbook, draft=published)
    dashboards.workbook_publish(workbook=acme_dashboard.workbook)
    draft = json.loads(json.dumps(published))
    draft["widgets"][0]["config"]["reportId"] = other.pk
    draft["widgets"][2]["config"].update(
        operators=["equals", "notEquals"], defaultValue={"operator": "equals", "values": ["France"]}
    )
    draft["widgets"][3]["config"].update(grains=["week", "month"], defaultGrain="week")

    answer = compare(acme_admin, acme_dashboard.workbook, draft)

    assert [(d["change"], d["text"]) for d in answer["differences"]] == [
        ("report", "Report “Orders acme” shows “Orders acme” instead of “Revenue acme”"),
        ("settings", "Filter “Country”: default: none → equals France; operators: equals → equals, is not"),
        ("settings", "Grain “Grain”: default grain: month → week; grains: month, quarter → week, month"),
    ]


def test_an_unchanged_draft_has_no_differences(acme_admin: Client, acme_dashboard: DashboardRows):
    assert compare(acme_admin, acme_dashboard.workbook, stored_draft(acme_dashboard.workbook))["differences"] == []


def test_before_the_first_publish_every_widget_is_new(acme_admin: Client, acme_rows, demo_model_state):
    from tests.panel.conftest import make_dashboard

    rows = make_dashboard(acme_rows.cast, publish=False)

    answer = compare(acme_admin, rows.workbook, stored_draft(rows.workbook))

    assert answer["published"] is None
    assert [d["text"] for d in answer["differences"]] == [
        "Report “Revenue acme” added at column 1, row 1, 6 columns wide, 3 rows high",
        "Text “Hello” added at column 7, row 1, 6 columns wide, 2 rows high",
    ]


# --- another account's workbook ----------------------------------------------------------------------------------


@pytest.mark.parametrize("call", ["draft/", "publish/", "compare/"])
def test_another_accounts_workbook_cannot_be_saved_published_or_compared(
    acme_admin: Client, acme_dashboard: DashboardRows, globex_dashboard: DashboardRows, call
):
    target = globex_dashboard.workbook
    before = stored_draft(target)

    response = post_json(
        acme_admin, editor_url(target, call), {"draft": built_draft(globex_dashboard, grain_control())}
    )

    assert response.status_code == 404
    assert response.json() == {"error": "No such workbook"}
    assert stored_draft(target) == before
    assert Dashboard.objects.get(pk=globex_dashboard.dashboard.pk).version_number == 1
    assert not AuditEntry.objects.filter(account=globex_dashboard.cast.account, via="panel").exists()


def test_another_accounts_editor_does_not_open(acme_admin: Client, acme_dashboard, globex_dashboard: DashboardRows):
    response = acme_admin.get(editor_url(globex_dashboard.workbook))

    assert response.status_code == 404
    assert "globex" not in response.content.decode()


def test_an_unknown_workbook_is_missing_alike(acme_admin: Client, acme_dashboard: DashboardRows):
    assert acme_admin.get("/admin/dashboards/workbook/999999999/dashboard-editor/").status_code == 404
    response = post_json(acme_admin, "/admin/dashboards/workbook/not-a-number/dashboard-editor/draft/", {"draft": {}})
    assert (response.status_code, response.json()) == (404, {"error": "No such workbook"})


def test_only_panel_users_reach_the_editor(acme_dashboard: DashboardRows):
    anonymous = Client()

    page = anonymous.get(editor_url(acme_dashboard.workbook))
    save = post_json(anonymous, editor_url(acme_dashboard.workbook, "draft/"), {"draft": {}})

    assert page.status_code == 302
    assert page["Location"].startswith("/admin/login/")
    assert save.status_code == 302
    assert stored_draft(acme_dashboard.workbook) == acme_dashboard.workbook.dashboard_draft


def test_an_internal_user_who_is_not_an_account_admin_cannot_save(acme_dashboard: DashboardRows):
    user = accounts.internal_user_create(account=acme_dashboard.cast.account, username="acme-staff", email="")
    get_user_model().objects.filter(pk=user.pk).update(is_staff=True)
    client = Client()
    client.force_login(user)
    before = stored_draft(acme_dashboard.workbook)

    page = client.get(editor_url(acme_dashboard.workbook))
    save = post_json(client, editor_url(acme_dashboard.workbook, "draft/"), {"draft": {"widgets": []}})

    assert page.status_code == 302
    assert save.status_code == 302
    assert save["Location"].startswith("/admin/login/")
    assert stored_draft(acme_dashboard.workbook) == before


def test_a_superuser_edits_any_accounts_draft(superuser: Client, globex_dashboard: DashboardRows):
    draft = built_draft(globex_dashboard, grain_control())

    response = post_json(superuser, editor_url(globex_dashboard.workbook, "draft/"), {"draft": draft})

    assert response.status_code == 200
    assert stored_draft(globex_dashboard.workbook) == draft


# --- what the page weighs ----------------------------------------------------------------------------------------

EDITOR_BUDGET_BYTES = 64 * 1024


def test_the_editors_own_javascript_and_css_stay_small():
    template = (REPO / "templates" / "panel" / "dashboard_editor.html").read_text()
    parser = AssetParser()
    parser.feed(template)
    assets = [static_path(reference) for reference in parser.scripts + parser.stylesheets]
    assert {path.relative_to(STATIC).as_posix() for path in assets} == {
        "vendor/gridstack.min.js",
        "vendor/gridstack.min.css",
        "panel/editor.js",
        "panel/editor.css",
    }
    sizes = {path.name: len(gzip.compress(path.read_bytes(), compresslevel=9)) for path in assets}
    assert sum(sizes.values()) <= EDITOR_BUDGET_BYTES, sizes
