"""A data model upload to a deployment that loads what compiles: accepted when a cube or view compiles, the others
answered as compilerErrors (without the switch the same upload is a 400 and writes nothing)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from embedadmin.accounts.services import deployment_configure
from tests.dashboards.support import DEMO_MODEL, fresh_models  # noqa: F401

WIDGETS = "cubes:\n  - name: widgets\n    sql_table: widgets\n    measures:\n      - name: count\n        type: count\n"
BROKEN = "cubes:\n  - name: gadgets\n    sql_table: gadgets\n    measures:\n      - name: total\n        type: summ\n"


@pytest.fixture
def model(acme, tmp_path, fresh_models) -> Path:  # noqa: F811
    root = tmp_path / "model"
    shutil.copytree(DEMO_MODEL, root)
    deployment_configure(deployment=acme.deployment, model_dir=str(root))
    return root


def upload(api, cast, files: dict[str, str]):
    body = {"files": [{"path": p, "content": c} for p, c in files.items()]}
    return api.post_json(f"/build/api/v1/deployments/{cast.deployment.pk}/data-model", body, **cast.platform_headers)


def test_an_upload_with_a_broken_cube_serves_the_rest_and_names_what_is_left_out(api, acme, model):
    deployment_configure(deployment=acme.deployment, load_partial_model=True)

    response = upload(api, acme, {"cubes/widgets.yml": WIDGETS, "cubes/gadgets.yml": BROKEN})

    assert response.status_code == 200, response.content
    body = response.json()
    assert "widgets" in body["entities"]
    assert "gadgets" not in body["entities"]
    assert body["compilerErrors"] == [
        {
            "name": "gadgets",
            "file": "model/cubes/gadgets.yml",
            "line": 6,
            "member": "measure gadgets.total",
            "message": 'unknown type "summ"',
        }
    ]
    assert (model / "cubes" / "gadgets.yml").read_text() == BROKEN


def test_without_the_switch_the_same_upload_is_refused_and_writes_nothing(api, acme, model):
    response = upload(api, acme, {"cubes/widgets.yml": WIDGETS, "cubes/gadgets.yml": BROKEN})

    assert response.status_code == 400
    assert response.json() == {
        "error": 'Model error: model/cubes/gadgets.yml:6: measure gadgets.total: unknown type "summ"'
    }
    assert not (model / "cubes" / "widgets.yml").exists()
