"""Cube's official JavaScript client (``@cubejs-client/core`` 1.7.43 from npm) against the live server.

``tests/js/cube_client_check.mjs`` runs ``meta()``, ``load()`` then ``tablePivot()`` / ``chartPivot()`` /
``tableColumns()``, ``sql()`` and a bad query, and prints what it saw as JSON; the answers are compared with the
same SQL run directly on the DuckDB file.
"""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from embedadmin.accounts.services import deployment_configure, duckdb_url
from tests.semantic.http_support import DEMO_MODEL, demo_duckdb, duck_rows, fresh_semantic_state  # noqa: F401
from tests.tokens import sign_token

JS_DIR = Path(__file__).resolve().parents[2] / "js"
QUERY = {
    "measures": ["orders.count"],
    "timeDimensions": [
        {"dimension": "orders.created_at", "granularity": "day", "dateRange": ["2023-03-01", "2023-03-14"]}
    ],
    "filters": [{"member": "orders.status", "operator": "equals", "values": ["completed"]}],
}
DAILY_COMPLETED_SQL = """
    SELECT date_trunc('day', created_at)::DATE AS day, count(*) FROM orders
    WHERE status = 'completed' AND created_at >= '2023-03-01' AND created_at < '2023-03-15'
    GROUP BY 1 ORDER BY 1
"""


def _node_modules() -> None:
    if not (JS_DIR / "node_modules" / "@cubejs-client" / "core").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=JS_DIR, check=True, timeout=300)


@pytest.fixture
def client_run(transactional_db, live_server, acme, demo_duckdb, fresh_semantic_state) -> dict[str, Any]:
    """What the JS client saw, querying acme's deployment on the demo data through the live server."""
    deployment_configure(deployment=acme.deployment, model_dir=str(DEMO_MODEL), data_source_url=duckdb_url(demo_duckdb))
    _node_modules()
    token = sign_token(acme.created.deployment_api_secret, groups=["admin"])
    env = {
        **os.environ,
        "CUBE_API_URL": f"{live_server.url}/d/{acme.deployment.pk}/cubejs-api/v1",
        "CUBE_TOKEN": token,
        "CUBE_QUERY": json.dumps(QUERY),
    }
    node = shutil.which("node")
    assert node is not None, "node (Node.js 20) is needed for this test"
    result = subprocess.run(
        [node, "cube_client_check.mjs"], cwd=JS_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_official_client_reads_meta_data_pivots_and_sql(client_run, demo_duckdb):
    seen = client_run
    assert "fatal" not in seen, seen.get("fatal")
    daily = {
        f"{day.isoformat()}T00:00:00.000": str(count) for day, count in duck_rows(demo_duckdb, DAILY_COMPLETED_SQL)
    }
    days = [f"{(date(2023, 3, 1) + timedelta(days=n)).isoformat()}T00:00:00.000" for n in range(14)]

    # meta(): every cube and view of the demo model
    assert seen["metaCubes"] == [
        {"name": "line_items", "type": "cube"},
        {"name": "orders", "type": "cube"},
        {"name": "products", "type": "cube"},
        {"name": "users", "type": "cube"},
        {"name": "product_catalog", "type": "view"},
        {"name": "sales", "type": "view"},
    ]
    assert "orders.count" in seen["metaMembers"]

    # load(): the days with completed orders, as the database counts them (both time keys, as Cube)
    assert seen["rawData"] == [
        {"orders.created_at.day": day, "orders.created_at": day, "orders.count": count} for day, count in daily.items()
    ]
    assert 0 < len(daily) < 14  # some days without orders, for the zero-filling below

    # tablePivot(): every day of the range; the client fills the missing ones with 0
    assert seen["tablePivot"] == [{"orders.created_at.day": day, "orders.count": daily.get(day, 0)} for day in days]

    # chartPivot(): every day of the range, the missing ones zero-filled
    assert [point["x"] for point in seen["chartPivot"]] == days
    assert [point["orders.count"] for point in seen["chartPivot"]] == [int(daily.get(day, 0)) for day in days]

    # tableColumns(): names and types from the annotation
    assert seen["tableColumns"] == [
        {"key": "orders.created_at.day", "type": "time"},
        {"key": "orders.count", "type": "number"},
    ]

    # sql(): the statement the query compiles to, with its bound parameters as placeholders
    assert seen["sql"].startswith("SELECT DATE_TRUNC('DAY', ")
    assert seen["sql"].endswith(" GROUP BY 1 ORDER BY 1 ASC LIMIT 10000")
    assert '("orders".status = $1)' in seen["sql"]

    # a bad query surfaces the server's error
    assert seen["badQueryError"] == "Cube 'NoSuchCube' not found for path 'NoSuchCube.count'"
