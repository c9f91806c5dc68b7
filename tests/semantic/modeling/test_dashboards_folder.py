"""A model directory's top-level ``dashboards/`` folder holds dashboards as code: never read as model files, and a
change of it is announced by the registry's ``dashboard_files_changed`` signal (which the dashboards app applies)."""

from __future__ import annotations

import shutil
from pathlib import Path

from embedadmin.semantic import load_model
from embedadmin.semantic.modeling.files import list_dashboard_files, list_model_files
from embedadmin.semantic.modeling.registry import dashboard_files_changed

SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "shop"
# Not a model file: compiled as one it would fail ("workbook" is no model key).
DASHBOARD = "workbook: {slug: sales}\nreports: []\n"


def model_dir(tmp_path: Path) -> Path:
    root = tmp_path / "model"
    shutil.copytree(SHOP, root)
    return root


def test_top_level_dashboards_folder_is_not_model_files(tmp_path: Path) -> None:
    root = model_dir(tmp_path)
    (root / "dashboards").mkdir()
    (root / "dashboards" / "sales.yml").write_text(DASHBOARD)
    (root / "cubes" / "dashboards").mkdir()  # only the top-level folder is special
    nested = root / "cubes" / "dashboards" / "more.yml"
    nested.write_text("cubes: []\n")

    files = list_model_files(root)

    assert root / "dashboards" / "sales.yml" not in files
    assert nested in files
    assert list_dashboard_files(root) == [root / "dashboards" / "sales.yml"]
    version = load_model(root, dialect="duckdb", check_interval=0)
    assert version.error is None
    assert "orders" in version.require().entities


def test_changed_dashboard_files_send_the_signal_once_per_change(tmp_path: Path) -> None:
    root = model_dir(tmp_path)
    received: list[Path] = []

    def receiver(sender, root, **kwargs):
        received.append(root)

    dashboard_files_changed.connect(receiver, dispatch_uid="test-dashboards-folder")
    try:
        load_model(root, dialect="duckdb", check_interval=0)
        assert received == []  # no dashboards files: nothing to announce

        (root / "dashboards").mkdir()
        path = root / "dashboards" / "sales.yml"
        path.write_text(DASHBOARD)
        load_model(root, dialect="duckdb", check_interval=0)
        assert received == [root.resolve()]

        load_model(root, dialect="duckdb", check_interval=0)
        assert received == [root.resolve()]  # unchanged: announced once

        path.write_text(DASHBOARD + "# changed\n")
        load_model(root, dialect="duckdb", check_interval=0)
        assert received == [root.resolve()] * 2
    finally:
        dashboard_files_changed.disconnect(dispatch_uid="test-dashboards-folder")
