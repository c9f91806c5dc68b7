"""The data model of a deployment through the Platform API: list and read its files, upload (JSON and multipart)
validated by compiling, refused paths, ``replace``, and another account's deployment."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from embedadmin.accounts.selectors import deployment_signing_secret
from embedadmin.accounts.services import deployment_configure
from tests.dashboards.support import DEMO_MODEL, fresh_models  # noqa: F401
from tests.platform.support import db_rows
from tests.tokens import sign_token

WIDGETS = """cubes:
  - name: widgets
    sql_table: widgets
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
    measures:
      - name: count
        type: count
"""

BROKEN = """cubes:
  - name: gadgets
    sql_table: gadgets
    measures:
      - name: count
        type: count
      - name: total
        sql: amount
        type: no_such_type
"""


@pytest.fixture
def model(acme, tmp_path, fresh_models) -> Path:  # noqa: F811
    """acme's deployment serving a copy of the demo model."""
    root = tmp_path / "model"
    shutil.copytree(DEMO_MODEL, root)
    deployment_configure(deployment=acme.deployment, model_dir=str(root))
    return root


def _base(cast) -> str:
    return f"/build/api/v1/deployments/{cast.deployment.pk}"


def _upload(api, cast, files, **extra):
    body = {"files": [{"path": p, "content": c} for p, c in files.items()], **extra}
    return api.post_json(f"{_base(cast)}/data-model", body, **cast.platform_headers)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _cubes(api, cast) -> list[str]:
    token = sign_token(deployment_signing_secret(deployment=cast.deployment), ttl_s=600, groups=["admin"])
    response = api.get(f"/d/{cast.deployment.pk}/cubejs-api/v1/meta", HTTP_AUTHORIZATION=token)
    assert response.status_code == 200, response.content
    return sorted(cube["name"] for cube in response.json()["cubes"])


def test_list_names_every_model_file_by_path(api, acme, model):
    # when
    response = api.get(f"{_base(acme)}/files", **acme.platform_headers)

    # then
    assert response.status_code == 200, response.content
    body = response.json()
    paths = [item["path"] for item in body["items"]]
    assert paths == sorted(paths)
    assert {"cubes/orders.yml", "cubes/products.yml", "views/sales.yml"} <= set(paths)
    orders = next(item for item in body["items"] if item["path"] == "cubes/orders.yml")
    assert set(orders) == {"path", "size", "updatedAt"}
    assert orders["size"] == (model / "cubes" / "orders.yml").stat().st_size
    assert orders["updatedAt"].endswith("Z")


def test_read_answers_the_files_content(api, acme, model):
    response = api.get(f"{_base(acme)}/files/cubes/orders.yml", **acme.platform_headers)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["path"] == "cubes/orders.yml"
    assert body["content"] == (model / "cubes" / "orders.yml").read_text(encoding="utf-8")
    assert body["size"] == len((model / "cubes" / "orders.yml").read_bytes())


GADGETS_JS = """cube(`gadgets`, {
  sqlTable: `gadgets`,
  dimensions: { id: { sql: `id`, type: `number`, primaryKey: true } },
  measures: { count: { type: `count` } },
});
"""


def test_a_javascript_model_file_is_uploaded_and_compiled(api, acme, model):
    # when
    response = _upload(api, acme, {"cubes/gadgets.js": GADGETS_JS})

    # then
    assert response.status_code == 200, response.content
    assert "gadgets" in response.json()["entities"]
    assert "gadgets" in _cubes(api, acme)


def test_a_javascript_file_that_throws_is_refused_naming_its_line(api, acme, model):
    # when
    response = _upload(api, acme, {"cubes/broken.js": "cube(`broken`, {});\nthrow new Error(`no`);\n"})

    # then
    assert response.status_code == 400
    assert "cubes/broken.js:2: Error: no" in response.json()["error"]
    assert not (model / "cubes" / "broken.js").exists()


def test_reading_a_missing_file_is_404(api, acme, model):
    response = api.get(f"{_base(acme)}/files/cubes/nothing.yml", **acme.platform_headers)
    assert response.status_code == 404


def test_a_json_upload_is_served_by_the_next_meta_request(api, acme, model):
    # given
    before = _cubes(api, acme)
    assert "widgets" not in before

    # when
    response = _upload(api, acme, {"cubes/widgets.yml": WIDGETS})

    # then
    assert response.status_code == 200, response.content
    assert response.json()["files"] == ["cubes/widgets.yml"]
    assert "widgets" in response.json()["entities"]
    assert (model / "cubes" / "widgets.yml").read_text(encoding="utf-8") == WIDGETS
    assert _cubes(api, acme) == sorted([*before, "widgets"])
    listed = api.get(f"{_base(acme)}/files/cubes/widgets.yml", **acme.platform_headers)
    assert listed.json()["content"] == WIDGETS


def test_a_multipart_upload_is_served_by_the_next_meta_request(api, acme, model):
    # given
    before = _cubes(api, acme)
    upload = SimpleUploadedFile("widgets.yml", WIDGETS.encode(), content_type="application/x-yaml")

    # when
    response = api.post(
        f"{_base(acme)}/data-model", {"cubes/widgets.yml": upload}, format="multipart", **acme.platform_headers
    )

    # then
    assert response.status_code == 200, response.content
    assert (model / "cubes" / "widgets.yml").read_bytes() == WIDGETS.encode()
    assert _cubes(api, acme) == sorted([*before, "widgets"])


def test_a_failing_upload_is_400_with_file_and_line_and_changes_nothing(api, acme, model):
    # given
    before_cubes = _cubes(api, acme)
    before_files = _snapshot(model)
    changed_orders = before_files["cubes/orders.yml"].decode() + "\n# edited\n"

    # when
    response = _upload(api, acme, {"cubes/gadgets.yml": BROKEN, "cubes/orders.yml": changed_orders})

    # then
    assert response.status_code == 400, response.content
    assert response.json() == {
        "error": f'Model error: {model.name}/cubes/gadgets.yml:9: measure gadgets.total: unknown type "no_such_type"'
    }
    assert _snapshot(model) == before_files
    assert _cubes(api, acme) == before_cubes
    assert not [p for p in model.parent.iterdir() if p.name.startswith(f".{model.name}.")]


@pytest.mark.parametrize(
    "path",
    [
        "../escape.yml",
        "cubes/../../escape.yml",
        "/etc/escape.yml",
        ".hidden.yml",
        "cubes/.hidden.yml",
        ".git/config.yml",
        "cubes/widgets.py",
        "cubes/widgets.json",
        "cubes\\widgets.yml",
        "cubes//widgets.yml",
        "",
    ],
)
def test_a_path_outside_the_model_or_not_a_model_file_is_400_and_writes_nothing(api, acme, model, path):
    # given
    files_before = _snapshot(model)
    parent_before = sorted(p.name for p in model.parent.iterdir())
    rows_before = db_rows()

    # when
    response = _upload(api, acme, {path: WIDGETS})

    # then
    assert response.status_code == 400, (path, response.content)
    assert "path" in response.json()["error"]
    assert _snapshot(model) == files_before
    assert sorted(p.name for p in model.parent.iterdir()) == parent_before
    assert db_rows() == rows_before


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("..%2Fescape.yml", "path '../escape.yml': no '..', hidden or empty parts"),
        ("cubes/../cubes/orders.yml", "path 'cubes/../cubes/orders.yml': no '..', hidden or empty parts"),
        (".hidden.yml", "path '.hidden.yml': no '..', hidden or empty parts"),
        ("cubes/orders.txt", "path 'cubes/orders.txt': only model files (.yml, .yaml, .jinja, .js) are accepted"),
    ],
)
def test_reading_a_refused_path_is_400(api, acme, model, path, message):
    response = api.get(f"{_base(acme)}/files/{path}", **acme.platform_headers)
    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith(message)


def test_a_multipart_file_with_a_bad_path_is_400_and_writes_nothing(api, acme, model):
    files_before = _snapshot(model)
    upload = SimpleUploadedFile("x.yml", WIDGETS.encode())
    response = api.post(f"{_base(acme)}/data-model", {"../x.yml": upload}, **acme.platform_headers)
    assert response.status_code == 400, response.content
    assert _snapshot(model) == files_before


def test_without_replace_the_other_files_are_kept(api, acme, model):
    before = _snapshot(model)

    response = _upload(api, acme, {"cubes/widgets.yml": WIDGETS})

    assert response.status_code == 200, response.content
    after = _snapshot(model)
    assert after == {**before, "cubes/widgets.yml": WIDGETS.encode()}


def test_replace_removes_every_other_model_file(api, acme, model):
    # given
    dashboards = {k: v for k, v in _snapshot(model).items() if k.startswith("dashboards/")}
    assert dashboards

    # when
    response = _upload(api, acme, {"cubes/widgets.yml": WIDGETS}, replace=True)

    # then
    assert response.status_code == 200, response.content
    assert response.json()["entities"] == ["widgets"]
    listed = api.get(f"{_base(acme)}/files", **acme.platform_headers).json()["items"]
    assert [item["path"] for item in listed] == ["cubes/widgets.yml"]
    assert not (model / "cubes" / "orders.yml").exists()
    assert _cubes(api, acme) == ["widgets"]


def test_replace_with_a_broken_model_is_400_and_keeps_every_file(api, acme, model):
    before = _snapshot(model)
    response = _upload(api, acme, {"cubes/gadgets.yml": BROKEN}, replace=True)
    assert response.status_code == 400
    assert _snapshot(model) == before


@pytest.mark.parametrize(
    "body",
    [
        [],
        {},
        {"files": []},
        {"files": "x"},
        {"files": [{"path": "cubes/a.yml"}]},
        {"files": [{"path": "cubes/a.yml", "content": 5}]},
        {"files": [{"path": "cubes/a.yml", "content": WIDGETS}], "replace": "true"},
        {"files": [{"path": "cubes/a.yml", "content": WIDGETS}], "other": 1},
        {"files": [{"path": "cubes/a.yml", "content": WIDGETS}, {"path": "cubes/a.yml", "content": WIDGETS}]},
    ],
)
def test_bad_bodies_are_400_and_write_nothing(api, acme, model, body):
    before = _snapshot(model)
    response = api.post_json(f"{_base(acme)}/data-model", body, **acme.platform_headers)
    assert response.status_code == 400, response.content
    assert _snapshot(model) == before


def test_another_accounts_deployment_is_404_on_every_model_route(api, acme, globex, model):
    # given
    files_before = _snapshot(model)
    rows_before = db_rows()
    target = acme.deployment.pk

    # when
    responses = [
        api.get(f"{_base(acme)}/files", **globex.platform_headers),
        api.get(f"{_base(acme)}/files/cubes/orders.yml", **globex.platform_headers),
        api.post_json(
            f"{_base(acme)}/data-model",
            {"files": [{"path": "cubes/widgets.yml", "content": WIDGETS}]},
            **globex.platform_headers,
        ),
    ]

    # then
    for response in responses:
        assert response.status_code == 404, response.content
        assert response.json() == {"error": f"Deployment {target} not found"}
    assert _snapshot(model) == files_before
    assert db_rows() == rows_before


def test_a_multipart_upload_with_replace_true_replaces_the_model(api, acme, model):
    upload = SimpleUploadedFile("widgets.yml", WIDGETS.encode())
    response = api.post(
        f"{_base(acme)}/data-model", {"cubes/widgets.yml": upload, "replace": "true"}, **acme.platform_headers
    )
    assert response.status_code == 200, response.content
    assert response.json()["entities"] == ["widgets"]
    assert not (model / "cubes" / "orders.yml").exists()
    assert _cubes(api, acme) == ["widgets"]


def test_a_multipart_file_that_is_not_utf8_is_400_and_writes_nothing(api, acme, model):
    before = _snapshot(model)
    upload = SimpleUploadedFile("widgets.yml", b"cubes: \xff\xfe\n")
    response = api.post(f"{_base(acme)}/data-model", {"cubes/widgets.yml": upload}, **acme.platform_headers)
    assert response.status_code == 400, response.content
    assert response.json() == {"error": "cubes/widgets.yml: must be UTF-8 text"}
    assert _snapshot(model) == before
