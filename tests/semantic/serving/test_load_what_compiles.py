"""A deployment's "load what compiles" switch over HTTP, on the demo model and data: off (the default), a model with
one broken cube is refused whole; on, the rest serves (answers equal to SQL on the demo data) and /v1/meta lists the
broken cube in compilerErrors."""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from embedadmin.accounts.services import deployment_configure, duckdb_url
from embedadmin.audit.models import AuditEntry
from tests.semantic.http_support import DEMO_MODEL, CoreApi, demo_duckdb, duck_rows, fresh_semantic_state  # noqa: F401

BROKEN = "cubes:\n  - name: broken\n    sql_table: orders\n    measures:\n      - name: n\n        type: summ\n"


@pytest.fixture
def partial_core(api, acme, demo_duckdb, tmp_path: Path, fresh_semantic_state) -> CoreApi:
    """acme's deployment on a copy of the demo model with one broken cube, the switch off."""
    model = tmp_path / "model"
    shutil.copytree(DEMO_MODEL, model)
    (model / "cubes" / "broken.yml").write_text(BROKEN)
    deployment_configure(deployment=acme.deployment, model_dir=str(model), data_source_url=duckdb_url(demo_duckdb))
    return CoreApi(client=api, cast=acme, dataset=demo_duckdb)


def test_off_a_broken_cube_refuses_the_whole_model(partial_core: CoreApi) -> None:
    response = partial_core.get("meta")

    assert response.status_code == 400
    assert response.json() == {"error": 'Model error: model/cubes/broken.yml:6: measure broken.n: unknown type "summ"'}


def test_on_the_rest_serves_and_meta_lists_what_is_left_out(partial_core: CoreApi) -> None:
    deployment_configure(deployment=partial_core.cast.deployment, load_partial_model=True)

    meta = partial_core.get("meta")
    loaded = partial_core.load({"measures": ["orders.count"], "dimensions": ["orders.status"]})

    assert meta.status_code == 200
    body = meta.json()
    assert sorted(c["name"] for c in body["cubes"]) == [
        "line_items",
        "orders",
        "product_catalog",
        "products",
        "sales",
        "users",
    ]
    assert body["compilerErrors"] == [
        {
            "name": "broken",
            "file": "model/cubes/broken.yml",
            "line": 6,
            "member": "measure broken.n",
            "message": 'unknown type "summ"',
        }
    ]
    rows = duck_rows(partial_core.dataset, "SELECT status, count(*) FROM orders GROUP BY 1")
    assert sorted((r["orders.status"], int(r["orders.count"])) for r in loaded["data"]) == sorted(rows)


def test_a_query_of_the_cube_left_out_names_it(partial_core: CoreApi) -> None:
    deployment_configure(deployment=partial_core.cast.deployment, load_partial_model=True)

    response = partial_core.post("load", {"query": {"measures": ["broken.n"]}})

    assert response.status_code == 400
    assert "broken" in response.json()["error"]


def test_the_switch_is_set_by_configure_deployment(acme) -> None:
    out = io.StringIO()

    call_command("configure_deployment", str(acme.deployment.pk), "--load-what-compiles", "on", "--json", stdout=out)

    acme.deployment.refresh_from_db()
    assert acme.deployment.load_partial_model is True
    assert json.loads(out.getvalue())["loadWhatCompiles"] is True


def test_the_switch_is_set_by_the_platform_api_and_audited(partial_core: CoreApi) -> None:
    url = f"/api/v1/deployments/{partial_core.cast.deployment.pk}"
    headers = partial_core.cast.platform_headers

    before = partial_core.client.get(url, **headers).json()
    switched = partial_core.client.patch_json(url, {"loadWhatCompiles": True}, **headers)
    meta = partial_core.get("meta")

    assert before["loadWhatCompiles"] is False
    assert switched.status_code == 200
    assert switched.json()["loadWhatCompiles"] is True
    assert meta.status_code == 200  # the broken cube no longer refuses the model
    assert [e["name"] for e in meta.json()["compilerErrors"]] == ["broken"]
    deployment_id = str(partial_core.cast.deployment.pk)
    entry = AuditEntry.objects.filter(resource_type="deployment", resource_id=deployment_id).latest("id")
    assert entry.action == "deployment.update"
    assert entry.details["fields"] == ["loadWhatCompiles"]


@pytest.mark.parametrize("value", ["yes", 1, None, [True]])
def test_a_switch_that_is_not_a_boolean_is_refused_and_changes_nothing(partial_core: CoreApi, value) -> None:
    url = f"/api/v1/deployments/{partial_core.cast.deployment.pk}"

    response = partial_core.client.patch_json(
        url, {"name": "renamed", "loadWhatCompiles": value}, **partial_core.cast.platform_headers
    )

    assert response.status_code == 400
    assert response.json() == {"error": "loadWhatCompiles: must be true or false"}
    partial_core.cast.deployment.refresh_from_db()
    assert partial_core.cast.deployment.load_partial_model is False
    assert partial_core.cast.deployment.name != "renamed"
