"""``GET /api/v1/deployments/{id}/pre-aggregations`` and ``POST .../pre-aggregations/rebuild`` (issue 28): a
deployment's rollups with their build progress, and a rebuild, audited; another account's token gets 404 and
changes nothing."""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

from pathlib import Path

import pytest

from embedadmin.accounts.services import deployment_configure, duckdb_url
from embedadmin.audit.models import AuditEntry
from embedadmin.semantic.models import PreAggregationPartition
from embedadmin.semantic.serving.rollup_store import close_rollup_sources
from tests.conftest import Cast
from tests.semantic.http_support import CoreApi, core, demo_duckdb, fresh_semantic_state  # noqa: F401
from tests.semantic.rollup_support import build_rollups, model_with_rollups

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def rollups(core: CoreApi, settings, tmp_path: Path) -> CoreApi:
    """acme's deployment serving the demo model with rollups, built, in a store of this test."""
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "DIR": tmp_path / "store", "ENABLED": True}
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model_with_rollups(tmp_path / "model")))
    build_rollups(core.cast.deployment)
    yield core
    close_rollup_sources()


def _url(core: CoreApi, suffix: str = "") -> str:
    return f"/api/v1/deployments/{core.cast.deployment.pk}/pre-aggregations{suffix}"


def test_the_rollups_are_listed_in_definition_order_with_their_build(rollups: CoreApi):
    # when
    response = rollups.client.get(_url(rollups), **rollups.cast.platform_headers)

    # then
    assert response.status_code == 200, response.content
    items = {item["id"]: item for item in response.json()["preAggregations"]}
    assert [i for i in items if i.startswith("orders.")][:2] == ["orders.main", "orders.monthly"]
    main = items["orders.main"]
    assert main["status"] == "built"
    assert main["tableName"] == "orders__main"
    assert main["timeDimension"] == "orders.created_at"
    assert main["granularity"] == "day"
    assert main["segments"] == ["orders.completed", "orders.high_value"]
    assert main["refreshKey"] == {"every": "1 hour", "sql": None, "incremental": False, "updateWindow": None}
    assert main["lastRefreshTime"].endswith("Z")
    (partition,) = main["partitions"]
    assert partition["status"] == "built"
    assert partition["rows"] > 0
    assert partition["bytes"] > 0
    assert partition["error"] is None
    partitioned = items["orders.revenue_by_category"]
    assert [p["partition"] for p in partitioned["partitions"]] == ["2023", "2024", "2025"]
    assert partitioned["refreshKey"]["updateWindow"] == "30 day"


def test_a_rebuild_is_queued_built_and_audited(rollups: CoreApi):
    # given
    before = PreAggregationPartition.objects.get(pre_aggregation="orders.monthly").table

    # when: (the test runs Celery tasks eagerly: the build runs when the request's transaction commits)
    response = rollups.client.post_json(
        _url(rollups, "/rebuild"), {"preAggregationId": "orders.monthly"}, **rollups.cast.platform_headers
    )

    # then
    assert response.status_code == 202, response.content
    assert response.json() == {"queued": 1}
    rebuilt = PreAggregationPartition.objects.get(pre_aggregation="orders.monthly")
    assert rebuilt.status == "built"
    assert rebuilt.table != before
    entry = AuditEntry.objects.get(action="pre_aggregation.rebuild")
    assert entry.resource_id == str(rollups.cast.deployment.pk)
    assert entry.account_id == rollups.cast.account.pk


def test_a_rebuild_of_every_rollup(rollups: CoreApi):
    response = rollups.client.post_json(_url(rollups, "/rebuild"), {}, **rollups.cast.platform_headers)

    assert response.status_code == 202, response.content
    assert response.json()["queued"] == PreAggregationPartition.objects.count()


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"preAggregationId": "orders.nope"}, 404, "Pre-aggregation 'orders.nope' not found"),
        ({"preAggregationId": 7}, 400, "preAggregationId: must be a cube.name"),
        ({"preAggregationId": ""}, 400, "preAggregationId: must be a cube.name"),
        ({"cube": "orders"}, 400, "cube"),
        ([1], 400, ""),
    ],
)
def test_a_rebuild_that_cannot_be_done_is_a_clear_error_and_changes_nothing(rollups: CoreApi, body, status, message):
    response = rollups.client.post_json(_url(rollups, "/rebuild"), body, **rollups.cast.platform_headers)

    assert response.status_code == status, response.content
    assert message in response.json()["error"]
    assert not PreAggregationPartition.objects.exclude(status="built").exists()
    assert not AuditEntry.objects.filter(action="pre_aggregation.rebuild").exists()


def test_another_accounts_token_gets_404_and_changes_nothing(rollups: CoreApi, globex: Cast):
    # when
    listed = rollups.client.get(_url(rollups), **globex.platform_headers)
    rebuilt = rollups.client.post_json(_url(rollups, "/rebuild"), {}, **globex.platform_headers)

    # then
    assert listed.status_code == 404
    assert rebuilt.status_code == 404
    assert listed.json() == {"error": listed.json()["error"]}
    assert not PreAggregationPartition.objects.exclude(status="built").exists()
    assert not AuditEntry.objects.filter(action="pre_aggregation.rebuild").exists()


def test_without_a_token_the_rollups_are_not_shown(rollups: CoreApi):
    assert rollups.client.get(_url(rollups)).status_code in (401, 403)


def test_a_deployment_without_a_model_is_a_400(api, acme: Cast):
    response = api.get(f"/api/v1/deployments/{acme.deployment.pk}/pre-aggregations", **acme.platform_headers)

    assert response.status_code == 400
    assert "has no data model" in response.json()["error"]


def test_a_model_whose_rollup_cannot_be_built_shows_why(core: CoreApi, settings, tmp_path: Path, demo_duckdb):
    # given: a rollup of a cube that joins nothing it names
    rollups = {"products": "\n    pre_aggregations:\n      - name: odd\n        measures: [users.count]\n"}
    model = model_with_rollups(tmp_path / "model", rollups=rollups)
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model), data_source_url=duckdb_url(demo_duckdb))

    # when
    body = core.client.get(_url(core), **core.cast.platform_headers).json()

    # then
    (item,) = body["preAggregations"]
    assert item["status"] == "unusable"
    assert "join path" in item["problem"]
    assert item["partitions"] == []
