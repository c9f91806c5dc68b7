"""Platform API dashboards: the draft (validated), publish (versions and frozen report snapshots), embed access
(reference 1.7) and ``GET|PATCH /api/v1/embed/dashboard/{publicId}``; isolation."""

from __future__ import annotations

import pytest

from embedadmin.dashboards import selectors
from embedadmin.dashboards.access import EmbeddedDashboard
from embedadmin.dashboards.models import Dashboard, DashboardVersion, EmbedAccess, ReportSnapshot
from embedadmin.directory.services import embed_tenant_get_or_create
from tests.dashboards import support
from tests.dashboards.support import (
    REVENUE_QUERY,
    base,
    capture,
    chart,
    content_rows,
    count_writes,
    create_report,
    create_workbook,
    draft_with,
    error,
    ok,
    publish,
    put_json,
    set_draft,
)

FILTER = {
    "id": "country",
    "type": "FILTER",
    "position": {"x": 0, "y": 0, "w": 3, "h": 1},
    "config": {
        "member": "sales.users_country",
        "label": "Country",
        "multiple": True,
        "operators": ["equals", "notEquals"],
    },
}
PERIOD = {
    "id": "period",
    "type": "FILTER",
    "position": {"x": 3, "y": 0, "w": 3, "h": 1},
    "config": {"member": "sales.created_at", "operators": ["inDateRange"], "defaultValue": "last 12 months"},
}
GRAIN = {
    "id": "grain",
    "type": "TIME_GRAIN",
    "position": {"x": 6, "y": 0, "w": 2, "h": 1},
    "config": {"member": "sales.created_at", "grains": ["week", "month", "fiscal_year"], "defaultGrain": "month"},
}
FIELD = {
    "id": "measure",
    "type": "FIELD",
    "position": {"x": 8, "y": 0, "w": 2, "h": 1},
    "config": {"member": "sales.total_amount", "alternatives": ["sales.total_amount", "sales.order_count"]},
}
TEXT = {"id": "intro", "type": "TEXT", "position": {"x": 10, "y": 0, "w": 2, "h": 2}, "config": {"text": "Hello"}}

# The fixtures of tests/dashboards/support.py, here too.
fresh_models = support.fresh_models
globex_modelled = support.globex_modelled
modelled = support.modelled


@pytest.fixture
def book(api, modelled):
    """A workbook with one report and a valid draft naming it."""
    report = create_report(api, modelled, publicId="Revenue00001")
    workbook = create_workbook(api, modelled)
    ok(
        set_draft(
            api,
            modelled,
            workbook["id"],
            draft_with(chart("revenue", report["id"]), FILTER, PERIOD, GRAIN, FIELD, TEXT),
        )
    )
    return {"workbook": workbook, "report": report}


def test_draft_is_stored_and_returned_with_the_published_config(api, modelled):
    report = create_report(api, modelled)
    workbook = create_workbook(api, modelled)
    draft = draft_with(chart("revenue", report["id"]), FILTER, PERIOD, GRAIN, FIELD, TEXT)

    answer = ok(set_draft(api, modelled, workbook["id"], draft))

    assert answer == {"dashboardDraft": draft, "dashboardPublished": None}
    assert (
        ok(api.get(f"{base(modelled)}/workbooks/{workbook['id']}", **modelled.platform_headers))["dashboardDraft"]
        == draft
    )


def test_draft_widgets_without_ids_get_one_and_report_public_ids_become_ids(api, modelled):
    report = create_report(api, modelled, publicId="Revenue00001")
    workbook = create_workbook(api, modelled)
    draft = draft_with(
        {"type": "CHART", "position": {"x": 0, "y": 0, "w": 6, "h": 4}, "config": {"reportPublicId": "Revenue00001"}},
        {"type": "TEXT", "position": {"x": 6, "y": 0, "w": 6, "h": 4}, "config": {"text": "x"}},
        {"id": "chart-2", "type": "TEXT", "position": {"x": 0, "y": 4, "w": 6, "h": 4}},
    )

    stored = ok(set_draft(api, modelled, workbook["id"], draft))["dashboardDraft"]

    assert [w["id"] for w in stored["widgets"]] == ["chart-1", "text-1", "chart-2"]
    assert stored["widgets"][0]["config"] == {"reportId": report["id"]}


def bad(widget, **draft_extra):
    return draft_with(widget, **draft_extra)


POS = {"x": 0, "y": 0, "w": 2, "h": 1}


@pytest.mark.parametrize(
    ("draft", "message"),
    [
        (
            bad({"id": "r", "type": "CHART", "position": POS, "config": {"reportId": 99999}}),
            'widgets[0] (id "r"): report 99999 does not exist in this deployment',
        ),
        (
            bad({"id": "r", "type": "CHART", "position": POS, "config": {"reportPublicId": "Nope00000000"}}),
            "widgets[0] (id \"r\"): report 'Nope00000000' does not exist in this deployment",
        ),
        (
            bad({"id": "r", "type": "CHART", "position": POS, "config": {}}),
            'widgets[0] (id "r"): config must name its report',
        ),
        (
            bad({"id": "r", "type": "CHART", "position": POS, "config": {"reportId": "1"}}),
            "config.reportId must be an integer",
        ),
        (bad({"id": "x", "type": "PIE", "position": POS}), 'widgets[0] (id "x"): type must be one of'),
        (bad({"id": "x" * 129, "type": "TEXT", "position": POS}), "widgets[0]: id must be a string of 1 to 128"),
        (bad({"id": "t", "type": "TEXT"}), 'widgets[0] (id "t"): position must be an object'),
        (
            bad({"id": "t", "type": "TEXT", "position": {"x": 0, "y": 0, "w": 0, "h": 1}}),
            "position.w and position.h must be >= 1",
        ),
        (bad({"id": "t", "type": "TEXT", "position": {"x": -1, "y": 0, "w": 1, "h": 1}}), "must be >= 0"),
        (
            bad({"id": "t", "type": "TEXT", "position": {"x": 10, "y": 0, "w": 3, "h": 1}}),
            "position.x + position.w must be <= layout.cols (12)",
        ),
        (
            bad({"id": "t", "type": "TEXT", "position": {"x": 0, "y": 0, "w": 1.5, "h": 1}}),
            "position.w must be an integer",
        ),
        (
            bad({"id": "t", "type": "TEXT", "position": {"x": 0, "y": 0, "w": True, "h": 1}}),
            "position.w must be an integer",
        ),
        (bad({"id": "t", "type": "TEXT", "position": POS, "config": {"text": 1}}), "config.text must be a string"),
        (bad({"id": "t", "type": "TEXT", "position": POS, "extra": 1}), "unknown keys: extra"),
        (
            bad({**FILTER, "config": {"member": "sales.ghost"}}),
            "widgets[0] (id \"country\"): config.member 'sales.ghost' does not exist",
        ),
        (
            bad({**FILTER, "config": {"member": "sales.users_country", "operators": ["gt"]}}),
            "operator 'gt' is not valid for 'sales.users_country' (string)",
        ),
        (bad({**PERIOD, "config": {"member": "sales.created_at", "operators": ["equals"]}}), "use inDateRange"),
        (
            bad({**FILTER, "config": {"member": "sales.users_country", "visibility": "secret"}}),
            "config.visibility must be one of",
        ),
        (bad({**FILTER, "config": {"member": "sales.completed"}}), "is a segment"),
        (
            bad({**GRAIN, "config": {"member": "sales.status", "grains": ["month"]}}),
            "'sales.status' is not a time dimension",
        ),
        (
            bad({**GRAIN, "config": {"member": "sales.created_at", "grains": ["fortnight"]}}),
            "'fortnight' is not a granularity of 'sales.created_at'",
        ),
        (
            bad({**GRAIN, "config": {"member": "sales.created_at", "grains": ["month"], "defaultGrain": "week"}}),
            "defaultGrain 'week' is not one of",
        ),
        (
            bad({**FIELD, "config": {"member": "sales.total_amount", "alternatives": ["sales.ghost"]}}),
            "'sales.ghost' does not exist",
        ),
        (
            bad({**FIELD, "config": {"member": "sales.total_amount", "alternatives": ["sales.status"]}}),
            "alternative 'sales.status' is a dimension",
        ),
        (draft_with(TEXT, TEXT), 'widgets[1] (id "intro"): id is used by another widget'),
        (draft_with(TEXT, layout={"cols": 0}), "layout.cols: must be a positive integer"),
        (draft_with(TEXT, colour="red"), "dashboardDraft: unknown keys: colour"),
        ({"widgets": {}}, "dashboardDraft.widgets: must be a list"),
    ],
)
def test_a_bad_draft_is_400_naming_the_widget_and_nothing_changes(api, book, modelled, draft, message):
    before = content_rows()
    assert message in error(set_draft(api, modelled, book["workbook"]["id"], draft), 400)
    assert content_rows() == before


@pytest.mark.parametrize(
    "body", [{}, {"dashboardDraft": []}, {"dashboardDraft": {}, "x": 1}, [], {"dashboardDraft": "x"}]
)
def test_draft_body_errors_are_400(api, book, modelled, body):
    url = f"{base(modelled)}/workbooks/{book['workbook']['id']}/dashboard"
    assert put_json(api, url, body, **modelled.platform_headers).status_code == 400


def test_first_publish_creates_the_dashboard_with_snapshots(api, book, modelled):
    dashboard = ok(publish(api, modelled, book["workbook"]["id"], {"title": "Sales", "description": "All of it"}))

    assert set(dashboard) >= {
        "id",
        "publicId",
        "deploymentId",
        "workbookId",
        "status",
        "allowEmbed",
        "config",
        "versionNumber",
        "reportSnapshots",
        "title",
        "description",
    }
    assert len(dashboard["publicId"]) == 12
    assert dashboard["publicId"].isalnum()
    assert (dashboard["status"], dashboard["allowEmbed"], dashboard["versionNumber"]) == ("published", False, 1)
    assert (dashboard["title"], dashboard["description"]) == ("Sales", "All of it")
    draft = ok(api.get(f"{base(modelled)}/workbooks/{book['workbook']['id']}", **modelled.platform_headers))[
        "dashboardDraft"
    ]
    # The frozen config is the draft, each chart naming its report by publicId too (it outlives the report).
    for widget in draft["widgets"]:
        if widget["type"] == "CHART":
            widget["config"]["reportPublicId"] = book["report"]["publicId"]
    assert dashboard["config"] == draft
    [snapshot] = dashboard["reportSnapshots"]
    assert snapshot["reportId"] == book["report"]["id"]
    assert (snapshot["publicId"], snapshot["versionNumber"], snapshot["kind"]) == ("Revenue00001", 1, "vega")
    assert snapshot["jsonQuery"] == REVENUE_QUERY
    assert "data" not in snapshot["spec"]
    assert snapshot["spec"]["mark"] == "line"
    workbook = ok(api.get(f"{base(modelled)}/workbooks/{book['workbook']['id']}", **modelled.platform_headers))
    assert workbook["publishedDashboard"] == dashboard
    assert workbook["dashboardPublished"] == dashboard["config"]


def test_publishing_an_unchanged_draft_keeps_the_version_and_writes_nothing(api, book, modelled):
    first = ok(publish(api, modelled, book["workbook"]["id"]))
    with capture() as queries:
        again = ok(publish(api, modelled, book["workbook"]["id"]))
    assert count_writes(queries) == 0
    assert again == first
    assert DashboardVersion.objects.count() == 1


def test_draft_edits_change_nothing_published_until_republish(api, book, modelled):
    workbook_id = book["workbook"]["id"]
    first = ok(publish(api, modelled, workbook_id))
    edited = draft_with(chart("revenue", book["report"]["id"]), TEXT, title="Edited")
    ok(set_draft(api, modelled, workbook_id, edited))

    answer = ok(api.get(f"{base(modelled)}/workbooks/{workbook_id}", **modelled.platform_headers))
    assert answer["dashboardPublished"] == first["config"]
    assert answer["publishedDashboard"]["versionNumber"] == 1
    published = selectors.published_dashboard(public_id=first["publicId"])
    assert published is not None
    assert published.version.config == first["config"]

    second = ok(publish(api, modelled, workbook_id))
    assert second["versionNumber"] == 2
    assert second["config"]["title"] == "Edited"
    assert second["publicId"] == first["publicId"]


def test_a_report_edit_changes_the_snapshot_only_at_republish(api, book, modelled):
    workbook_id, report_id = book["workbook"]["id"], book["report"]["id"]
    first = ok(publish(api, modelled, workbook_id))
    new_query = {
        "measures": ["sales.order_count"],
        "timeDimensions": [{"dimension": "sales.created_at", "granularity": "month"}],
    }
    ok(
        put_json(
            api,
            f"{base(modelled)}/reports/{report_id}",
            {"jsonQuery": new_query, "meta": {"visualization": {"kind": "kpi", "measure": "sales.order_count"}}},
            **modelled.platform_headers,
        )
    )

    still = ok(api.get(f"/api/v1/embed/dashboard/{first['publicId']}", **modelled.platform_headers))
    assert still["reportSnapshots"] == first["reportSnapshots"]

    second = ok(publish(api, modelled, workbook_id))
    [snapshot] = second["reportSnapshots"]
    assert (second["versionNumber"], snapshot["versionNumber"], snapshot["kind"]) == (2, 2, "kpi")
    assert snapshot["jsonQuery"] == new_query
    assert snapshot["spec"] == {"measure": "sales.order_count"}
    # The first version's snapshot is kept as it was.
    assert ReportSnapshot.objects.filter(version__number=1).get().json_query == REVENUE_QUERY


def test_publish_without_a_draft_is_400_and_writes_nothing(api, modelled):
    workbook = create_workbook(api, modelled)
    before = content_rows()
    assert (
        error(publish(api, modelled, workbook["id"]), 400)
        == f"Workbook {workbook['id']} has no dashboard draft to publish"
    )
    assert content_rows() == before


def test_publish_refuses_a_mismatched_workbook_id_and_unknown_fields(api, book, modelled):
    workbook_id = book["workbook"]["id"]
    assert "does not match" in error(publish(api, modelled, workbook_id, {"workbookId": workbook_id + 1}), 400)
    assert "Unknown fields: config" in error(publish(api, modelled, workbook_id, {"config": {}}), 400)
    assert "allowEmbed" in error(publish(api, modelled, workbook_id, {"allowEmbed": "yes"}), 400)
    assert ok(publish(api, modelled, workbook_id, {"workbookId": workbook_id}))["versionNumber"] == 1


def test_publish_after_the_report_was_deleted_is_400(api, book, modelled):
    api.delete(f"{base(modelled)}/reports/{book['report']['id']}", **modelled.platform_headers)
    message = error(publish(api, modelled, book["workbook"]["id"]), 400)
    assert f"report {book['report']['id']} does not exist" in message
    assert Dashboard.objects.count() == 0


def test_a_published_dashboard_keeps_rendering_a_report_deleted_after_the_publish(api, book, modelled):
    dashboard = ok(publish(api, modelled, book["workbook"]["id"]))
    assert (
        api.delete(f"{base(modelled)}/reports/{book['report']['id']}", **modelled.platform_headers).status_code == 204
    )

    published = selectors.published_dashboard(public_id=dashboard["publicId"], deployment_id=modelled.deployment.pk)
    [snapshot] = published.snapshots
    assert snapshot.report_id is None  # the report is gone; its snapshot stays, found by the report's publicId
    embedded = EmbeddedDashboard(dashboard=published.dashboard, version=published.version, snapshots=(snapshot,))
    [chart] = [w for w in published.version.config["widgets"] if w["type"] == "CHART"]
    assert embedded.snapshot_for(chart["config"]) == snapshot


def test_publish_uses_the_workbooks_meta_public_id(api, book, modelled):
    url = f"{base(modelled)}/workbooks/{book['workbook']['id']}"
    ok(put_json(api, url, {"meta": {"dashboardPublicId": "SalesOvervw1"}}, **modelled.platform_headers))
    assert ok(publish(api, modelled, book["workbook"]["id"]))["publicId"] == "SalesOvervw1"


def embed_access_url(cast, workbook_id):
    return f"{base(cast)}/workbooks/{workbook_id}/embed-access"


def test_embed_access_shares_with_tenants_and_all_embed_users(api, book, modelled):
    embed_tenant_get_or_create(account=modelled.account, name="acme-corp")
    url = embed_access_url(modelled, book["workbook"]["id"])
    headers = modelled.platform_headers
    nobody = {
        "allowEmbed": False,
        "allEmbedUsers": {"enabled": False, "action": "none", "groupId": None},
        "tenants": [],
    }
    assert ok(api.get(url, **headers)) == nobody

    assert "no published dashboard" in error(put_json(api, url, {"allowEmbed": True}, **headers), 400)
    ok(publish(api, modelled, book["workbook"]["id"]))
    shared = ok(put_json(api, url, {"embedTenantName": "acme-corp", "action": "read", "allowEmbed": True}, **headers))
    share = EmbedAccess.objects.get(embed_tenant__name="acme-corp")
    assert shared == {
        "allowEmbed": True,
        "allEmbedUsers": {"enabled": False, "action": "none", "groupId": None},
        "tenants": [{"embedTenantName": "acme-corp", "groupId": share.pk, "action": "read"}],
    }
    everyone = ok(put_json(api, url, {"allEmbedUsers": True, "action": "read"}, **headers))
    group = EmbedAccess.objects.get(embed_tenant__isnull=True)
    assert everyone["allEmbedUsers"] == {"enabled": True, "action": "read", "groupId": group.pk}
    assert ok(api.get(url, **headers)) == everyone

    with capture() as queries:
        again = ok(put_json(api, url, {"allEmbedUsers": True, "action": "read"}, **headers))
    assert count_writes(queries) == 0
    assert again == everyone

    removed = ok(put_json(api, url, {"embedTenantName": "acme-corp", "action": "none"}, **headers))
    assert removed["tenants"] == []
    assert removed["allEmbedUsers"]["enabled"] is True
    off = ok(put_json(api, url, {"allowEmbed": False}, **headers))
    assert off["allowEmbed"] is False


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({}, 400, "No change"),
        ({"embedTenantName": "acme-corp", "allEmbedUsers": True, "action": "read"}, 400, "exactly one target"),
        ({"embedTenantName": "acme-corp"}, 400, "action (read or none) is required"),
        ({"action": "read"}, 400, "action needs a target"),
        ({"embedTenantName": "acme-corp", "action": "write"}, 400, "action"),
        ({"embedTenantName": "nobody-here", "action": "read"}, 404, "Embed tenant 'nobody-here' not found"),
        ({"allEmbedUsers": "yes", "action": "read"}, 400, "allEmbedUsers"),
        ({"allowEmbed": True, "other": 1}, 400, "Unknown fields: other"),
    ],
)
def test_embed_access_errors_change_nothing(api, book, modelled, body, status, fragment):
    embed_tenant_get_or_create(account=modelled.account, name="acme-corp")
    ok(publish(api, modelled, book["workbook"]["id"]))
    before = content_rows()
    assert fragment in error(
        put_json(api, embed_access_url(modelled, book["workbook"]["id"]), body, **modelled.platform_headers), status
    )
    assert content_rows() == before


def test_embed_access_to_another_accounts_tenant_is_404(api, book, modelled, globex):
    embed_tenant_get_or_create(account=globex.account, name="globex-only")
    response = put_json(
        api,
        embed_access_url(modelled, book["workbook"]["id"]),
        {"embedTenantName": "globex-only", "action": "read"},
        **modelled.platform_headers,
    )
    assert error(response, 404) == "Embed tenant 'globex-only' not found"


def test_embed_dashboard_get_and_patch(api, book, modelled):
    dashboard = ok(publish(api, modelled, book["workbook"]["id"]))
    url = f"/api/v1/embed/dashboard/{dashboard['publicId']}"

    assert ok(api.get(url, **modelled.platform_headers)) == dashboard
    assert ok(api.patch_json(url, {"allowEmbed": True}, **modelled.platform_headers)) == {
        "publicId": dashboard["publicId"],
        "allowEmbed": True,
    }
    assert ok(api.get(url, **modelled.platform_headers))["allowEmbed"] is True
    for body in ({}, {"allowEmbed": "true"}, {"allowEmbed": True, "x": 1}, []):
        assert api.patch_json(url, body, **modelled.platform_headers).status_code == 400
    assert error(api.get("/api/v1/embed/dashboard/Nope00000000", **modelled.platform_headers), 404)


def test_selectors_for_the_embed_page(api, book, modelled):
    tenant = embed_tenant_get_or_create(account=modelled.account, name="acme-corp")
    dashboard = ok(publish(api, modelled, book["workbook"]["id"]))
    workbook_id = book["workbook"]["id"]

    published = selectors.published_dashboard(public_id=dashboard["publicId"], deployment_id=modelled.deployment.pk)
    row, version, snapshots = published
    assert (row.public_id, version.number, [s.report_public_id for s in snapshots]) == (
        dashboard["publicId"],
        1,
        ["Revenue00001"],
    )
    assert (
        selectors.published_dashboard(public_id=dashboard["publicId"], deployment_id=modelled.deployment.pk + 1000)
        is None
    )
    assert selectors.published_dashboard(public_id="Nope00000000") is None
    assert selectors.is_shared_with(workbook_id=workbook_id, embed_tenant_name=tenant.name) is False
    ok(
        put_json(
            api,
            embed_access_url(modelled, workbook_id),
            {"embedTenantName": "acme-corp", "action": "read"},
            **modelled.platform_headers,
        )
    )
    assert selectors.is_shared_with(workbook_id=workbook_id, embed_tenant_name=tenant.name) is True
    assert selectors.is_shared_with(workbook_id=workbook_id, embed_tenant_name=None) is False
    assert selectors.embed_access_of(workbook=row.workbook).tenant_names() == ["acme-corp"]


def test_another_account_cannot_reach_drafts_publish_access_or_public_ids(api, book, modelled, globex_modelled):
    theirs_report = create_report(api, globex_modelled)
    theirs = create_workbook(api, globex_modelled)
    ok(set_draft(api, globex_modelled, theirs["id"], draft_with(chart("r", theirs_report["id"]))))
    their_dashboard = ok(publish(api, globex_modelled, theirs["id"]))
    before = content_rows()
    headers = modelled.platform_headers
    their_wb = f"{base(globex_modelled)}/workbooks/{theirs['id']}"
    via_own = f"{base(modelled)}/workbooks/{theirs['id']}"
    calls = [
        put_json(api, f"{their_wb}/dashboard", {"dashboardDraft": {}}, **headers),
        api.post_json(f"{their_wb}/publish", {}, **headers),
        api.get(f"{their_wb}/embed-access", **headers),
        put_json(api, f"{their_wb}/embed-access", {"allowEmbed": True}, **headers),
        put_json(api, f"{via_own}/dashboard", {"dashboardDraft": {}}, **headers),
        api.post_json(f"{via_own}/publish", {}, **headers),
        api.get(f"{via_own}/embed-access", **headers),
        put_json(api, f"{via_own}/embed-access", {"allowEmbed": True}, **headers),
        api.get(f"/api/v1/embed/dashboard/{their_dashboard['publicId']}", **headers),
        api.patch_json(f"/api/v1/embed/dashboard/{their_dashboard['publicId']}", {"allowEmbed": True}, **headers),
    ]
    assert [r.status_code for r in calls] == [404] * len(calls)
    assert content_rows() == before
    # A draft of acme's naming globex's report is refused as a report this deployment does not have.
    message = error(set_draft(api, modelled, book["workbook"]["id"], draft_with(chart("r", theirs_report["id"]))), 400)
    assert f"report {theirs_report['id']} does not exist in this deployment" in message
