"""Published dashboards for the embed tests, written with the ORM models (docs/dashboards.md), and helpers to
mint, open and query an embed as a host would."""

from __future__ import annotations

import json
from typing import Any

from embedadmin.dashboards.models import Dashboard, DashboardVersion, EmbedAccess, Report, ReportSnapshot, Workbook
from embedadmin.directory.models import EmbedTenant
from tests.dashboards.support import REVENUE_QUERY, REVENUE_VEGA

BY_COUNTRY_QUERY = {"measures": ["sales.total_amount"], "dimensions": ["sales.users_country"]}
LINE_SPEC = REVENUE_VEGA["spec"]
# Each report of the dashboard: name, query, and its visualization's kind and spec.
REPORTS = [
    ("Revenue by month", REVENUE_QUERY, "vega", LINE_SPEC),
    ("Revenue by country", BY_COUNTRY_QUERY, "table", {}),
]

CONFIG: dict[str, Any] = {
    "title": "Sales overview",
    "description": "Revenue",
    "layout": {"cols": 12, "rowHeight": 80},
    "theme": {},
    "widgets": [
        {"id": "revenue", "type": "CHART", "position": {"x": 0, "y": 1, "w": 8, "h": 4}, "config": {"reportId": None}},
        {
            "id": "by-country",
            "type": "CHART",
            "position": {"x": 8, "y": 1, "w": 4, "h": 4},
            "config": {"reportId": None},
        },
        {"id": "intro", "type": "TEXT", "position": {"x": 0, "y": 5, "w": 4, "h": 2}, "config": {"text": "Hello"}},
        {
            "id": "country",
            "type": "FILTER",
            "position": {"x": 0, "y": 0, "w": 3, "h": 1},
            "config": {
                "member": "sales.users_country",
                "label": "Country",
                "multiple": True,
                "operators": ["equals", "notEquals"],
                "defaultValue": None,
                "visibility": "visible",
            },
        },
        {
            "id": "period",
            "type": "FILTER",
            "position": {"x": 3, "y": 0, "w": 3, "h": 1},
            "config": {
                "member": "sales.created_at",
                "label": "Period",
                "operators": ["inDateRange"],
                "defaultValue": None,
            },
        },
        {
            "id": "grain",
            "type": "TIME_GRAIN",
            "position": {"x": 6, "y": 0, "w": 2, "h": 1},
            "config": {"member": "sales.created_at", "grains": ["week", "month", "quarter"], "defaultGrain": "month"},
        },
        {
            "id": "measure",
            "type": "FIELD",
            "position": {"x": 8, "y": 0, "w": 2, "h": 1},
            "config": {"member": "sales.total_amount", "alternatives": ["sales.total_amount", "sales.order_count"]},
        },
    ],
}


def published_dashboard(
    cast: Any,
    *,
    public_id: str = "SalesOverv01",
    status: str = Dashboard.Status.PUBLISHED,
    version_number: int = 1,
    allow_embed: bool = True,
    share: str | None = "all",
    deployment: Any = None,
) -> Dashboard:
    """A published dashboard of ``cast`` with two charts (revenue by month, revenue by country), shared with all
    embed users (``share="all"``), one embed tenant (its name), or nobody (None)."""
    deployment = deployment or cast.deployment
    account = cast.account
    workbook = Workbook.objects.create(account=account, deployment=deployment, name="Sales", slug=public_id.lower())
    reports = []
    for index, (name, query, kind, spec) in enumerate(REPORTS):
        reports.append(
            Report.objects.create(
                account=account,
                deployment=deployment,
                workbook=workbook,
                public_id=f"{public_id[:10]}R{index}",
                name=name,
                json_query=json.dumps(query),
                meta={"visualization": {"kind": kind, "spec": spec}},
            )
        )
    config = json.loads(json.dumps(CONFIG))
    config["widgets"][0]["config"]["reportId"] = reports[0].pk
    config["widgets"][1]["config"]["reportId"] = reports[1].pk
    dashboard = Dashboard.objects.create(
        account=account,
        deployment=deployment,
        workbook=workbook,
        public_id=public_id,
        status=status,
        allow_embed=allow_embed,
        title="Sales overview",
        version_number=version_number if status == Dashboard.Status.PUBLISHED else 0,
    )
    if dashboard.version_number:
        version = DashboardVersion.objects.create(dashboard=dashboard, number=1, config=config, fingerprint="f" * 64)
        for report, (_name, query, kind, spec) in zip(reports, REPORTS, strict=True):
            ReportSnapshot.objects.create(
                version=version,
                report=report,
                report_public_id=report.public_id,
                report_version=1,
                name=report.name,
                title=report.name,
                kind=kind,
                spec=spec,
                json_query=query,
            )
    if share == "all":
        EmbedAccess.objects.create(account=account, workbook=workbook, embed_tenant=None)
    elif share is not None:
        tenant, _ = EmbedTenant.objects.get_or_create(account=account, name=share)
        EmbedAccess.objects.create(account=account, workbook=workbook, embed_tenant=tenant)
    return dashboard


def page_url(public_id: str, session_id: str, **params: str) -> str:
    from urllib.parse import urlencode

    return f"/embed/dashboard/{public_id}?{urlencode({'session': session_id, **params})}"


def bootstrap_of(response: Any) -> dict[str, Any]:
    """The JSON data block of an embed page."""
    html = response.content.decode()
    start = html.index('<script id="embed-bootstrap" type="application/json">') + len(
        '<script id="embed-bootstrap" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


def embed_headers(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Embed-Token {token}"}
