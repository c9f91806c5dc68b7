"""Where a deployment's rollups live, set on its page in the panel in real headless Chromium: a schema of a
PostgreSQL data source saved through the service, a bad one shown on the form and nothing changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from embedadmin.accounts.services import deployment_configure
from tests.panel.conftest import AccountRows
from tests.panel.test_browser import log_in

pytestmark = pytest.mark.browser
SHOTS = Path(os.environ.get("EMBEDADMIN_SCREENSHOTS", "var/screenshots"))


def test_the_rollup_schema_is_set_on_the_deployment_page(page, live_server, acme_rows: AccountRows):
    # given: acme's deployment on a PostgreSQL data source, its rollups in the store
    cast = acme_rows.cast
    deployment = cast.deployment
    deployment_configure(deployment=deployment, data_source_url="postgresql://reader@db.example/shop")
    log_in(page, live_server.url, cast.created.admin_username, cast.created.admin_password)
    url = f"{live_server.url}/admin/accounts/deployment/{deployment.pk}/change/"
    page.goto(url)
    field = page.get_by_label("Pre-aggregations schema")

    # when: a name that is not a lower-case identifier is saved
    field.fill("Rollups; DROP")
    page.get_by_role("button", name="Save and continue editing").click()

    # then: the form says why, and nothing changed
    page.get_by_text("lower-case identifier").first.wait_for()
    deployment.refresh_from_db()
    assert deployment.pre_aggregations_schema == ""

    # when: a good one is saved
    page.get_by_label("Pre-aggregations schema").fill("rollups")
    page.get_by_role("button", name="Save and continue editing").click()
    page.wait_for_url(url)

    # then: it is stored and shown
    deployment.refresh_from_db()
    assert deployment.pre_aggregations_schema == "rollups"
    assert page.get_by_label("Pre-aggregations schema").input_value() == "rollups"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.get_by_label("Pre-aggregations schema").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "panel-deployment-rollup-schema.png"))
