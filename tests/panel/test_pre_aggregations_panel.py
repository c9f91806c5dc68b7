"""The deployment page's read-only table of its rollup pre-aggregations (issue 28): each rollup, its status, its
partitions built, rows, size and last refresh, as ``GET /api/v1/deployments/{id}/pre-aggregations`` shows them."""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import html
from pathlib import Path

import pytest
from django.test import Client

from embedadmin.accounts.services import deployment_configure
from embedadmin.semantic.serving.rollup_store import close_rollup_sources
from tests.conftest import Cast
from tests.semantic.http_support import CoreApi, core, demo_duckdb, fresh_semantic_state  # noqa: F401
from tests.semantic.rollup_support import build_rollups, model_with_rollups

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_deployment_page_lists_the_rollups_and_their_builds(
    core: CoreApi, acme_admin: Client, acme: Cast, settings, tmp_path: Path
):
    # given: the demo model with rollups, built
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "DIR": tmp_path / "store"}
    deployment_configure(deployment=acme.deployment, model_dir=str(model_with_rollups(tmp_path / "model")))
    build_rollups(acme.deployment)

    # when
    page = acme_admin.get(f"/admin/accounts/deployment/{acme.deployment.pk}/change/").content.decode()
    close_rollup_sources()

    # then
    assert 'id="panel-deployment-pre-aggregations"' in page
    table = html.unescape(page.split('id="panel-deployment-pre-aggregations"', 1)[1].split("</table>", 1)[0])
    assert "<td>orders.main</td><td>built</td><td>1 of 1</td>" in table
    assert "<td>orders.revenue_by_category</td><td>built</td><td>3 of 3</td>" in table
    assert "<td>users.by_country</td><td>built</td><td>1 of 1</td>" in table
