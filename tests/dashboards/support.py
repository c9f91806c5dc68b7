"""Helpers of the dashboards and Platform API content tests: a deployment serving the demo model, URLs, bodies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from embedadmin.accounts.services import deployment_configure
from embedadmin.semantic import clear_models
from tests.conftest import Cast, JsonClient

REPO = Path(__file__).resolve().parents[2]
DEMO_MODEL = REPO / "demo" / "model"

REVENUE_QUERY = {
    "measures": ["sales.total_amount"],
    "timeDimensions": [{"dimension": "sales.created_at", "granularity": "month"}],
}
REVENUE_VEGA = {
    "kind": "vega",
    "spec": {
        "mark": "line",
        "encoding": {
            "x": {"field": "sales.created_at", "type": "temporal"},
            "y": {"field": "sales.total_amount", "type": "quantitative"},
        },
    },
}


@pytest.fixture
def fresh_models() -> Iterator[None]:
    clear_models()
    yield
    clear_models()


@pytest.fixture
def modelled(acme: Cast, fresh_models: None) -> Cast:
    """acme, its deployment serving the demo model (no data source: nothing here runs a query)."""
    deployment_configure(deployment=acme.deployment, model_dir=str(DEMO_MODEL))
    return acme


@pytest.fixture
def globex_modelled(globex: Cast, fresh_models: None) -> Cast:
    deployment_configure(deployment=globex.deployment, model_dir=str(DEMO_MODEL))
    return globex


def base(cast: Cast, deployment_id: int | None = None) -> str:
    return f"/api/v1/deployments/{deployment_id or cast.deployment.pk}"


def put_json(api: JsonClient, path: str, body: Any, **extra: Any):
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return api.put(path, data=data, content_type="application/json", **extra)


def ok(response, status: int = 200) -> Any:
    assert response.status_code == status, response.content
    return response.json() if response.content else None


def error(response, status: int) -> str:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    return body["error"]


def create_report(api: JsonClient, cast: Cast, **fields: Any) -> dict[str, Any]:
    body = {"name": "Revenue", "jsonQuery": REVENUE_QUERY, "meta": {"visualization": REVENUE_VEGA}, **fields}
    return ok(api.post_json(f"{base(cast)}/reports", body, **cast.platform_headers), 201)


def create_workbook(api: JsonClient, cast: Cast, **fields: Any) -> dict[str, Any]:
    return ok(api.post_json(f"{base(cast)}/workbooks", {"name": "Sales", **fields}, **cast.platform_headers), 201)


def chart(widget_id: str, report_id: int, x: int = 0) -> dict[str, Any]:
    return {
        "id": widget_id,
        "type": "CHART",
        "position": {"x": x, "y": 1, "w": 6, "h": 4},
        "config": {"reportId": report_id},
    }


def draft_with(*widgets: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"title": "Sales overview", "layout": {"cols": 12, "rowHeight": 80}, "widgets": list(widgets), **extra}


def set_draft(api: JsonClient, cast: Cast, workbook_id: int, draft: dict[str, Any]):
    return put_json(
        api, f"{base(cast)}/workbooks/{workbook_id}/dashboard", {"dashboardDraft": draft}, **cast.platform_headers
    )


def publish(api: JsonClient, cast: Cast, workbook_id: int, body: dict[str, Any] | None = None):
    return api.post_json(f"{base(cast)}/workbooks/{workbook_id}/publish", body or {}, **cast.platform_headers)


def count_writes(queries: CaptureQueriesContext) -> int:
    """Writes to the content's tables: the audit entry an API call records (one per call, checked by the audit
    tests) is not a change of content."""
    return sum(
        1
        for q in queries.captured_queries
        if q["sql"].lstrip()[:6].upper() in ("INSERT", "UPDATE", "DELETE") and "audit_auditentry" not in q["sql"]
    )


def capture() -> CaptureQueriesContext:
    return CaptureQueriesContext(connection)


def content_rows() -> dict[str, list[dict[str, Any]]]:
    """Every row of the dashboards app and the directory's embed tenants, by table, in primary-key order."""
    from django.apps import apps

    models = list(apps.get_app_config("dashboards").get_models())
    return {m._meta.db_table: list(m.objects.order_by("pk").values()) for m in models}
