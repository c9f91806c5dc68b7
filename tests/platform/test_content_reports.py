"""Platform API reports: create (validated against the deployment's model), list, read, update, delete, upsert by
publicId; versions, write-once publicIds, isolation and bad input."""

from __future__ import annotations

import json

import pytest

from embedadmin.accounts.services import deployment_create
from embedadmin.dashboards.models import Report
from tests.dashboards import support
from tests.dashboards.support import (
    REVENUE_QUERY,
    REVENUE_VEGA,
    base,
    capture,
    content_rows,
    count_writes,
    create_report,
    create_workbook,
    error,
    ok,
    put_json,
)
from tests.platform.support import BAD_PAGE_QUERIES

# The fixtures of tests/dashboards/support.py, here too.
fresh_models = support.fresh_models
globex_modelled = support.globex_modelled
modelled = support.modelled


def test_create_stores_the_query_as_a_string_and_generates_a_public_id(api, modelled):
    report = create_report(api, modelled, title="Revenue by month")

    assert json.loads(report["jsonQuery"]) == REVENUE_QUERY
    assert len(report["publicId"]) == 12
    assert report["publicId"].isalnum()
    assert (report["version"], report["source"], report["title"]) == (1, "PLAYGROUND", "Revenue by month")
    assert report["meta"] == {"visualization": REVENUE_VEGA}
    assert ok(api.get(f"{base(modelled)}/reports/{report['id']}", **modelled.platform_headers)) == report


def test_create_takes_the_query_as_a_string_verbatim(api, modelled):
    text = json.dumps(REVENUE_QUERY, indent=2)
    report = create_report(api, modelled, jsonQuery=text, publicId="Revenue00001")
    assert report["jsonQuery"] == text
    assert report["publicId"] == "Revenue00001"


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"jsonQuery": {"measures": ["sales.nope"]}}, "jsonQuery.measures[0]: member 'sales.nope' does not exist"),
        ({"jsonQuery": {"measures": ["sales.status"]}}, "'sales.status' is a dimension, not a measure"),
        ({"jsonQuery": {"dimensions": ["sales.total_amount"]}}, "is a measure, not a dimension"),
        ({"jsonQuery": {"measures": ["sales.order_count"], "segments": ["sales.nope"]}}, "jsonQuery.segments[0]"),
        (
            {"jsonQuery": {"measures": ["sales.order_count"], "timeDimensions": [{"dimension": "sales.status"}]}},
            "is not a time dimension",
        ),
        (
            {
                "jsonQuery": {
                    "measures": ["sales.order_count"],
                    "timeDimensions": [{"dimension": "sales.created_at", "granularity": "fortnight"}],
                }
            },
            "'fortnight' is not a granularity",
        ),
        (
            {
                "jsonQuery": {
                    "measures": ["sales.order_count"],
                    "filters": [
                        {
                            "or": [
                                {"member": "sales.status", "operator": "equals", "values": ["x"]},
                                {"and": [{"member": "sales.ghost", "operator": "set"}]},
                            ]
                        }
                    ],
                }
            },
            "jsonQuery.filters[0].or[1].and[0].member: member 'sales.ghost' does not exist",
        ),
        ({"jsonQuery": {"measures": ["sales.order_count"], "order": {"sales.ghost": "asc"}}}, "jsonQuery.order"),
        ({"jsonQuery": {"measures": ["sales.order_count"], "colour": 1}}, "jsonQuery: unknown keys: colour"),
        ({"jsonQuery": "{not json"}, "jsonQuery: not valid JSON"),
        ({"jsonQuery": [1, 2]}, "jsonQuery: must be a JSON object"),
        ({"meta": {"visualization": {"kind": "pie"}}}, "meta.visualization.kind: must be one of"),
        ({"meta": {"visualization": {"kind": "vega", "spec": "line"}}}, "meta.visualization.spec: must be a Vega-Lite"),
        (
            {"meta": {"visualization": {"kind": "vega", "spec": {"mark": "bar", "data": {"values": []}}}}},
            "meta.visualization.spec.data: a spec must not carry 'data'",
        ),
        (
            {"meta": {"visualization": {"kind": "vega", "spec": {"layer": [{"datasets": {}}]}}}},
            "'datasets'",
        ),
        (
            {"meta": {"visualization": {"kind": "vega", "spec": {"mark": {"type": "image", "url": "x.png"}}}}},
            "must not name URLs",
        ),
        (
            {"meta": {"visualization": {"kind": "vega", "spec": {"usermeta": {"src": "https://evil.example/x"}}}}},
            "must not name URLs",
        ),
        (
            {"meta": {"visualization": {"kind": "vega", "spec": {"encoding": {"x": {"field": "sales.status"}}}}}},
            "encoding.x.field: 'sales.status' is not a member of the report's query",
        ),
        ({"meta": {"visualization": {"kind": "table", "columns": ["sales.status"]}}}, "columns: 'sales.status' is not"),
        (
            {"meta": {"visualization": {"kind": "kpi", "measure": "sales.order_count"}}},
            "is not a measure of the report's",
        ),
        ({"meta": {"visualization": {"kind": "text", "text": 5}}}, "meta.visualization.text: must be a string"),
    ],
)
def test_a_bad_report_is_400_naming_the_field_and_nothing_is_stored(api, modelled, fields, fragment):
    body = {"name": "Bad", "jsonQuery": REVENUE_QUERY, "meta": {"visualization": REVENUE_VEGA}, **fields}
    message = error(api.post_json(f"{base(modelled)}/reports", body, **modelled.platform_headers), 400)
    assert fragment in message
    assert Report.objects.count() == 0


@pytest.mark.parametrize(
    "visualization",
    [
        {"kind": "table", "columns": ["sales.created_at", "sales.total_amount"]},
        {"kind": "table"},
        {"kind": "kpi", "measure": "sales.total_amount"},
        {"kind": "text", "text": "Hello"},
        {
            "kind": "vega",
            "spec": {"mark": "bar", "encoding": {"x": {"field": "sales.created_at.month", "type": "temporal"}}},
        },
    ],
)
def test_each_visualization_kind_is_accepted(api, modelled, visualization):
    report = create_report(api, modelled, meta={"visualization": visualization})
    assert report["meta"]["visualization"] == visualization


def test_a_deployment_without_a_model_is_400(api, acme):
    body = {"name": "R", "jsonQuery": REVENUE_QUERY}
    message = error(api.post_json(f"{base(acme)}/reports", body, **acme.platform_headers), 400)
    assert message == f"Deployment {acme.deployment.pk} has no data model: set one with configure_deployment"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "name: This field is required."),
        ({"name": 1}, "name"),
        ({"name": "R", "publicId": "short"}, "publicId must be 12 characters"),
        ({"name": "R", "source": "EMAIL"}, "source"),
        ({"name": "R", "workbookId": 99999}, "workbookId: workbook 99999 not found"),
        ({"name": "R", "extra": 1}, "Unknown fields: extra"),
        ({"name": "R", "meta": "x"}, "meta"),
        ({"name": "R", "jsonQuery": "\u0000"}, "NUL"),
        ([], "Expected a dictionary"),
    ],
)
def test_create_refuses_bad_bodies(api, modelled, body, fragment):
    message = error(api.post_json(f"{base(modelled)}/reports", body, **modelled.platform_headers), 400)
    assert fragment in message
    assert Report.objects.count() == 0


def test_duplicate_public_id_in_the_account_is_409(api, modelled):
    create_report(api, modelled, publicId="Revenue00001")
    response = api.post_json(
        f"{base(modelled)}/reports", {"name": "Again", "publicId": "Revenue00001"}, **modelled.platform_headers
    )
    assert "already exists" in error(response, 409)


def test_update_bumps_the_version_on_content_only_and_public_id_is_write_once(api, modelled):
    report = create_report(api, modelled, publicId="Revenue00001")
    workbook = create_workbook(api, modelled)
    url = f"{base(modelled)}/reports/{report['id']}"

    moved = ok(put_json(api, url, {"workbookId": workbook["id"]}, **modelled.platform_headers))
    assert (moved["workbookId"], moved["version"]) == (workbook["id"], 1)
    renamed = ok(put_json(api, url, {"title": "New title", "publicId": "Revenue00001"}, **modelled.platform_headers))
    assert (renamed["title"], renamed["version"]) == ("New title", 2)
    same = ok(put_json(api, url, {"title": "New title"}, **modelled.platform_headers))
    assert same["version"] == 2

    message = error(put_json(api, url, {"publicId": "Another00001"}, **modelled.platform_headers), 400)
    assert "cannot change" in message
    bad_query = {"jsonQuery": {"measures": ["sales.nope"]}}
    assert "sales.nope" in error(put_json(api, url, bad_query, **modelled.platform_headers), 400)
    assert Report.objects.get(pk=report["id"]).public_id == "Revenue00001"
    assert Report.objects.get(pk=report["id"]).version == 2


def test_list_filters_searches_and_paginates(api, modelled):
    workbook = create_workbook(api, modelled)
    a = create_report(api, modelled, name="Revenue by month", workbookId=workbook["id"])
    b = create_report(api, modelled, name="Orders", title="Monthly revenue")
    c = create_report(api, modelled, name="Customers")
    url = f"{base(modelled)}/reports"

    everything = ok(api.get(f"{url}?first=2", **modelled.platform_headers))
    assert [r["id"] for r in everything["items"]] == [a["id"], b["id"]]
    assert (everything["count"], everything["data"]) == (3, everything["items"])
    rest = ok(api.get(f"{url}?after={everything['pageInfo']['endCursor']}", **modelled.platform_headers))
    assert [r["id"] for r in rest["items"]] == [c["id"]]
    in_workbook = ok(api.get(f"{url}?workbookId={workbook['id']}", **modelled.platform_headers))
    assert [r["id"] for r in in_workbook["items"]] == [a["id"]]
    found = ok(api.get(f"{url}?search=REVENUE", **modelled.platform_headers))
    assert [r["id"] for r in found["items"]] == [a["id"], b["id"]]
    assert "workbookId" in error(api.get(f"{url}?workbookId=x", **modelled.platform_headers), 400)


@pytest.mark.parametrize(("query", "message"), BAD_PAGE_QUERIES)
def test_list_refuses_bad_pages(api, modelled, query, message):
    assert error(api.get(f"{base(modelled)}/reports?{query}", **modelled.platform_headers), 400) == message


def test_delete_is_204(api, modelled):
    report = create_report(api, modelled)
    url = f"{base(modelled)}/reports/{report['id']}"
    assert api.delete(url, **modelled.platform_headers).status_code == 204
    assert api.get(url, **modelled.platform_headers).status_code == 404


def test_upsert_by_public_id_creates_updates_and_twice_writes_nothing(api, modelled):
    url = f"{base(modelled)}/reports/by-public-id/Revenue00001"
    body = {"name": "Revenue", "jsonQuery": REVENUE_QUERY, "meta": {"visualization": REVENUE_VEGA}, "source": "D3"}
    created = ok(put_json(api, url, body, **modelled.platform_headers))
    assert (created["publicId"], created["source"], created["version"]) == ("Revenue00001", "D3", 1)

    with capture() as queries:
        again = ok(put_json(api, url, body, **modelled.platform_headers))
    assert count_writes(queries) == 0
    assert again == created

    updated = ok(put_json(api, url, {**body, "name": "Revenue 2", "source": "EXCEL"}, **modelled.platform_headers))
    assert (updated["id"], updated["name"], updated["version"]) == (created["id"], "Revenue 2", 2)
    assert updated["source"] == "D3"  # create-only


def test_upsert_by_public_id_of_another_deployment_of_the_account_is_409(api, modelled):
    other, _ = deployment_create(account=modelled.account, name="second", slug="second")
    ok(put_json(api, f"{base(modelled)}/reports/by-public-id/Revenue00001", {"name": "R"}, **modelled.platform_headers))
    before = content_rows()

    response = put_json(
        api, f"{base(modelled, other.pk)}/reports/by-public-id/Revenue00001", {"name": "R"}, **modelled.platform_headers
    )

    assert "another deployment" in error(response, 409)
    assert content_rows() == before


def test_upsert_refuses_a_bad_public_id_and_a_create_without_name(api, modelled):
    headers = modelled.platform_headers
    assert "publicId must be" in error(
        put_json(api, f"{base(modelled)}/reports/by-public-id/bad", {"name": "R"}, **headers), 400
    )
    assert "name is required" in error(
        put_json(api, f"{base(modelled)}/reports/by-public-id/Revenue00001", {}, **headers), 400
    )


def test_another_accounts_reports_are_404_and_unchanged(api, modelled, globex_modelled):
    theirs = create_report(api, globex_modelled, publicId="Theirs000001")
    before = content_rows()
    headers = modelled.platform_headers
    their_base = f"{base(globex_modelled)}/reports"
    calls = [
        api.get(their_base, **headers),
        api.post_json(their_base, {"name": "x"}, **headers),
        api.get(f"{their_base}/{theirs['id']}", **headers),
        put_json(api, f"{their_base}/{theirs['id']}", {"name": "x"}, **headers),
        api.delete(f"{their_base}/{theirs['id']}", **headers),
        put_json(api, f"{their_base}/by-public-id/Theirs000001", {"name": "x"}, **headers),
        api.get(f"{base(modelled)}/reports/{theirs['id']}", **headers),
        put_json(api, f"{base(modelled)}/reports/{theirs['id']}", {"name": "x"}, **headers),
        api.delete(f"{base(modelled)}/reports/{theirs['id']}", **headers),
    ]
    assert [r.status_code for r in calls] == [404] * len(calls)
    assert content_rows() == before
    # The publicId is per account: acme may use the same one in its own deployment.
    mine = ok(put_json(api, f"{base(modelled)}/reports/by-public-id/Theirs000001", {"name": "mine"}, **headers))
    assert mine["id"] != theirs["id"]
