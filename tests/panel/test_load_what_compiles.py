"""The deployment page switches "load what compiles" and lists what its model leaves out."""

import shutil
from pathlib import Path

from django.test import Client

from embedadmin.accounts import services as accounts
from embedadmin.semantic import clear_models
from tests.conftest import Cast

from .conftest import admin_url

DEMO_MODEL = Path(__file__).resolve().parents[2] / "demo" / "model"
BROKEN = "cubes:\n  - name: broken\n    sql_table: orders\n    measures:\n      - name: n\n        type: summ\n"


def test_the_switch_is_set_on_the_deployment_page_of_its_own_account_only(acme_admin: Client, acme: Cast, globex: Cast):
    deployment = acme.deployment
    page = acme_admin.get(admin_url("deployment", "change", deployment))
    assert b'name="load_partial_model"' in page.content

    response = acme_admin.post(admin_url("deployment", "change", deployment), {"load_partial_model": "on"})

    assert response.status_code == 302
    deployment.refresh_from_db()
    assert deployment.load_partial_model is True
    refused = acme_admin.post(admin_url("deployment", "change", globex.deployment), {"load_partial_model": "on"})
    assert (refused.status_code, refused["Location"]) == (302, "/admin/")
    globex.deployment.refresh_from_db()
    assert globex.deployment.load_partial_model is False


def test_the_page_lists_the_cubes_left_out_with_their_line(acme_admin: Client, acme: Cast, tmp_path: Path):
    model_dir = tmp_path / "model"
    shutil.copytree(DEMO_MODEL, model_dir)
    (model_dir / "cubes" / "broken.yml").write_text(BROKEN)
    accounts.deployment_configure(deployment=acme.deployment, model_dir=str(model_dir), load_partial_model=True)
    clear_models()

    page = acme_admin.get(admin_url("deployment", "change", acme.deployment)).content.decode()

    assert "serving 6 cubes and views" in page
    assert (
        'id="panel-deployment-left-out">model/cubes/broken.yml:6: measure broken.n: unknown type &quot;summ&quot;'
        in page
    )
    assert "Broken files" not in page
