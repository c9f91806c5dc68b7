"""The view and export endpoints of an embedded dashboard, on the demo model and data: the gates and the grant
again on every call, the URL grammar never widening what the viewer sees, the CSV export, and revocation."""

# ruff: noqa: F401, F811
from __future__ import annotations

import csv
import io

import pytest

# Fixtures of other test packages,: imported so pytest registers them here (hence F401, F811 above).
from tests.embedding.conftest import (
    exchange,
    generate,
    new_session,
    patch_tenant_settings,
    tenant_attribute,
    tenant_group,
)
from tests.embedding.dashboard_support import bootstrap_of, embed_headers, page_url, published_dashboard
from tests.semantic.http_support import core, demo_duckdb, duck_rows, fresh_semantic_state

VIEW = "/api/v1/embed/dashboard/SalesOverv01/view"
EXPORT = "/api/v1/embed/dashboard/SalesOverv01/export"


@pytest.fixture
def countries(core) -> tuple[str, str]:
    rows = duck_rows(core.dataset, "SELECT country FROM users GROUP BY country ORDER BY count(*) DESC LIMIT 2")
    return rows[0][0], rows[1][0]


@pytest.fixture
def regional(api, core, new_session, tenant_attribute, tenant_group, countries):
    """Open the embed as a regional manager of the first country; returns a function of the session's settings
    and the URL parameters."""
    published_dashboard(core.cast)
    tenant_attribute(core.cast, "country", "string")
    tenant_group(core.cast, "regional")

    def open_page(session_settings: dict | None = None, **params: str) -> dict:
        session_id = new_session(
            core.cast,
            externalId="rita",
            embedTenantName="tenant-a",
            groups=["regional"],
            userAttributes=[{"name": "country", "value": countries[0]}],
            **({"settings": session_settings} if session_settings is not None else {}),
        )
        response = api.get(page_url("SalesOverv01", session_id, **params))
        assert response.status_code == 200, response.content
        return {**bootstrap_of(response), "_sessionId": session_id}

    return open_page


def _tile(boot: dict, widget_id: str) -> dict:
    return next(w for w in boot["view"]["widgets"] if w["id"] == widget_id)


def _load(api, boot: dict, query: dict) -> list[dict]:
    response = api.post_json(f"{boot['coreApiBase']}/load", {"query": query}, HTTP_AUTHORIZATION=boot["token"])
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_tiles_load_only_the_viewers_rows(api, core, regional, countries):
    # given
    boot = regional()

    # when
    rows = _load(api, boot, _tile(boot, "by-country")["query"])

    # then: the access policy's row filter, through the Core Data API with the page's token
    expected = duck_rows(
        core.dataset,
        "SELECT sum(o.amount) FROM orders o JOIN users u ON u.id = o.user_id WHERE u.country = ?",
        [countries[0]],
    )
    assert [row["sales.users_country"] for row in rows] == [countries[0]]
    assert float(rows[0]["sales.total_amount"]) == pytest.approx(float(expected[0][0]))


def test_an_f_parameter_cannot_reveal_another_countrys_rows(api, regional, countries):
    # given: the URL asks for the other country
    boot = regional(**{"f_sales.users_country": f'{{"value":"{countries[1]}"}}'})
    query = _tile(boot, "by-country")["query"]

    # when
    rows = _load(api, boot, query)

    # then: the filter was added (an AND), the policy's filter still applies: no rows, not the other country's
    assert {"member": "sales.users_country", "operator": "equals", "values": [countries[1]]} in query["filters"]
    assert rows == []
    assert boot["view"]["filterUrlParameters"] == [f'f_sales.users_country={{"values":["{countries[1]}"]}}']
    # and the dashboard's chat is told the same filter
    assert boot["view"]["contextFilters"] == [
        {"member": "sales.users_country", "operator": "equals", "values": [countries[1]]}
    ]


def test_the_view_endpoint_composes_a_state(api, regional):
    # given
    boot = regional()

    # when
    response = api.post_json(
        VIEW,
        {"grant": boot["grant"], "state": {"grains": {"grain": "quarter"}, "fields": {"measure": "sales.order_count"}}},
        **embed_headers(boot["token"]),
    )

    # then
    assert response.status_code == 200, response.content
    body = response.json()
    revenue = next(w for w in body["widgets"] if w["id"] == "revenue")
    assert revenue["query"] == {
        "measures": ["sales.order_count"],
        "timeDimensions": [{"dimension": "sales.created_at", "granularity": "quarter"}],
        "timezone": "UTC",
    }
    assert revenue["spec"]["encoding"]["y"]["field"] == "sales\\.order_count"
    assert revenue["members"]["sales.order_count"]["title"]
    assert body["state"] == {
        "filters": {},
        "grains": {"grain": "quarter"},
        "fields": {"measure": "sales.order_count"},
        "timezone": "UTC",
    }
    assert isinstance(body["grant"], str)


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ("not json", 400, "Invalid JSON body: Expecting value: line 1 column 1 (char 0)"),
        ([], 400, "The body must be a JSON object"),
        ({}, 400, "grant: required (the grant of the page's bootstrap)"),
        ({"grant": "forged"}, 403, "grant: invalid"),
        ({"grant": "GRANT", "bogus": 1}, 400, "Unknown fields: bogus"),
        (
            {"grant": "GRANT", "state": {"grains": {"grain": "day"}}},
            400,
            "state.grains.grain: must be one of week, month, quarter",
        ),
        ({"grant": "GRANT", "timezone": "+05:30"}, 400, "timezone: must be an IANA time zone name"),
    ],
)
def test_a_bad_view_request_is_a_json_error(api, regional, body, status, message):
    # given
    boot = regional()
    if isinstance(body, dict) and body.get("grant") == "GRANT":
        body = {**body, "grant": boot["grant"]}

    # when
    response = api.post_json(VIEW, body, **embed_headers(boot["token"]))

    # then
    assert (response.status_code, response.json()) == (status, {"error": message})


def test_the_view_needs_an_embed_token_and_a_grant_for_this_viewer(api, core, regional, new_session):
    # given
    boot = regional()
    other_session = new_session(core.cast, externalId="otto", embedTenantName="tenant-a")
    other = bootstrap_of(api.get(page_url("SalesOverv01", other_session)))

    # when
    no_token = api.post_json(VIEW, {"grant": boot["grant"]})
    bearer = api.post_json(VIEW, {"grant": boot["grant"]}, HTTP_AUTHORIZATION=f"Bearer {boot['token']}")
    someone_elses_grant = api.post_json(VIEW, {"grant": other["grant"]}, **embed_headers(boot["token"]))

    # then
    assert no_token.status_code == bearer.status_code == 401
    assert (someone_elses_grant.status_code, someone_elses_grant.json()) == (
        403,
        {"error": "grant: not for this dashboard and viewer"},
    )


def test_export_is_a_csv_of_the_tile_when_allowed(api, regional, countries):
    # given
    boot = regional({"allowExport": True})

    # when
    response = api.post_json(
        EXPORT, {"grant": boot["grant"], "widgetId": "by-country", "format": "csv"}, **embed_headers(boot["token"])
    )

    # then
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="SalesOverv01-by-country.csv"'
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    # the tile's columns, as the page shows them: their titles, in their order
    assert rows[0] == [column["title"] for column in _tile(boot, "by-country")["columns"]]
    assert rows[0] == ["Country", "Order value"]
    assert [row[0] for row in rows[1:]] == [countries[0]]


def test_export_is_refused_without_allow_export_or_when_the_account_restricts_downloads(
    api, core, regional, patch_tenant_settings
):
    # given
    without = regional(allowExport="true")  # the URL cannot allow what the session does not
    allowed = regional({"allowExport": True})
    body = {"widgetId": "by-country", "format": "csv"}

    # when
    refused = api.post_json(EXPORT, {**body, "grant": without["grant"]}, **embed_headers(without["token"]))
    patch_tenant_settings(core.cast, restrictDataDownload=True)
    restricted = api.post_json(EXPORT, {**body, "grant": allowed["grant"]}, **embed_headers(allowed["token"]))

    # then
    assert (refused.status_code, refused.json()) == (
        403,
        {"error": "Export is not allowed for this embed session"},
    )
    assert (restricted.status_code, restricted.json()) == (
        403,
        {"error": "Data downloads are restricted for this account"},
    )


def test_revoking_the_session_stops_its_queries_at_once(api, core, regional):
    # given: a page whose token has already queried (the Core Data API remembers verified callers)
    page = regional()
    query = _tile(page, "by-country")["query"]
    assert _load(api, page, query)

    # when: the host revokes the session (the revoke path bumps the credentials version every process reads)
    revoked = api.post_json(
        "/api/v1/embed/session/revoke", {"sessionId": page["_sessionId"]}, **core.cast.api_key_headers
    )

    # then
    load = api.post_json(f"{page['coreApiBase']}/load", {"query": query}, HTTP_AUTHORIZATION=page["token"])
    view = api.post_json(VIEW, {"grant": page["grant"]}, **embed_headers(page["token"]))
    assert revoked.status_code == 204
    assert (load.status_code, load.json()) == (403, {"error": "Invalid token"})
    assert (view.status_code, view.json()) == (401, {"error": "Token has been revoked"})
