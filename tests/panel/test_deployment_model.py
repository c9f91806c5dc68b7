"""The deployment page shows what its data model serves and which files are broken."""

import shutil
from pathlib import Path

from embedadmin.accounts import services as accounts
from embedadmin.semantic import clear_models
from embedadmin.semantic.modeling import registry

from .conftest import admin_url

DEMO_MODEL = Path(__file__).resolve().parents[2] / "demo" / "model"


def test_the_deployment_page_reports_the_serving_model_and_a_broken_file_with_its_line(
    acme, acme_admin, tmp_path, monkeypatch
):
    # given: the demo model, configured on acme's deployment
    model_dir = tmp_path / "model"
    shutil.copytree(DEMO_MODEL, model_dir)
    accounts.deployment_configure(deployment=acme.deployment, model_dir=str(model_dir))
    clear_models()

    page = acme_admin.get(admin_url("deployment", "change", acme.deployment)).content.decode()
    assert "serving " in page
    assert "Broken files" not in page

    # when: a file breaks (a measure of an unknown type on line 5)
    broken = model_dir / "cubes" / "broken.yml"
    broken.write_text(
        "cubes:\n  - name: broken\n    sql_table: orders\n    measures:\n      - name: n\n        type: summ\n"
    )
    # and the registry's next look at the files is due (it looks at most once a second)
    monkeypatch.setattr(registry._registry, "check_interval", 0)

    # then: the page names the file and line, and the last good model still serves
    page = acme_admin.get(admin_url("deployment", "change", acme.deployment)).content.decode()
    assert "Broken files" in page
    assert "broken.yml:" in page
    assert "summ" in page
    assert "serving " in page


def test_a_deployment_without_a_model_says_how_to_configure_one(acme, acme_admin):
    page = acme_admin.get(admin_url("deployment", "change", acme.deployment)).content.decode()
    assert "configure_deployment" in page
