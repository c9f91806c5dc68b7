"""JavaScript model files, embedadmin against Cube 1.7.43: the same ``/v1/meta`` and ``/v1/load`` answers.

Needs the Cube peer (``../shared/cube-peer/setup.sh <dir>``; CI has no Cube, so this is not a test). It compiles
``bench/js_models/model`` (hand-written JavaScript models: template literals, member functions, a join hint through
``CUBE``, ``extends`` with a child's own ``sql``, ``asyncModule``, ``import`` of a helper file, a view) with
embedadmin's compiler, starts Cube on the same folder and the same DuckDB data, and compares:

- ``/v1/meta``: each cube and view, its type, and each member's name and type (and a measure's ``aggType``);
- ``/v1/load``: the rows of a few queries, values compared as numbers where both read as numbers.

    .venv/bin/python bench/js_models_vs_cube.py [--install ../cube-peer-run] [--port 4150]

Prints each difference and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import urllib.request
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "embedadmin.settings")
os.environ.setdefault("EMBEDADMIN_ALLOW_DEV_SECRET", "true")

import django

django.setup()

import cube_peer  # noqa: E402
import duckdb  # noqa: E402

from demo.generate import generate  # noqa: E402
from embedadmin.semantic import QueryContext, QueryOutcome, load_model, load_response, plan_queries  # noqa: E402
from embedadmin.semantic.results.meta import meta  # noqa: E402

MODEL = Path(__file__).resolve().parent / "js_models" / "model"
QUERIES: list[dict[str, Any]] = [
    {"measures": ["orders.count", "orders.total_amount", "orders.big_share"], "dimensions": ["orders.status"]},
    {"measures": ["orders.count", "orders.customers"], "dimensions": ["orders.size", "orders.customer_country"]},
    {"measures": ["orders.completed_count", "orders.cancelled_count"], "segments": ["orders.completed"]},
    {"measures": ["young_users.count", "young_users.average_age"], "dimensions": ["young_users.gender"]},
    {"measures": ["line_items.revenue", "line_items.units"], "dimensions": ["products.category"]},
    {
        "measures": ["sales.count", "sales.total_amount"],
        "dimensions": ["sales.users_country", "sales.product_category"],
        "timeDimensions": [
            {"dimension": "sales.created_at", "granularity": "year", "dateRange": ["2024-01-01", "2024-12-31"]}
        ],
    },
]


def meta_summary(body: dict[str, Any]) -> dict[str, Any]:
    """Each cube or view: its type and its members' names and types (a measure's aggType too)."""
    summary: dict[str, Any] = {}
    for cube in body["cubes"]:
        summary[cube["name"]] = {
            "type": cube.get("type"),
            "measures": {m["name"]: (m.get("type"), m.get("aggType")) for m in cube.get("measures", [])},
            "dimensions": {d["name"]: d.get("type") for d in cube.get("dimensions", [])},
            "segments": sorted(s["name"] for s in cube.get("segments", [])),
        }
    return summary


def normalized(rows: list[dict[str, Any]]) -> list[tuple[tuple[str, Any], ...]]:
    def value(raw: Any) -> Any:
        if raw is None:
            return None
        try:
            return round(float(Decimal(str(raw))), 6)
        except (InvalidOperation, ValueError):
            return str(raw).replace("T00:00:00.000", "")

    return sorted((tuple(sorted((k, value(v)) for k, v in row.items())) for row in rows), key=repr)


def ours(data: Path) -> tuple[dict[str, Any], list[list[dict[str, Any]]]]:
    model = load_model(MODEL, dialect="duckdb", check_interval=0).require()
    answers = []
    with duckdb.connect(str(data), read_only=True) as connection:
        connection.execute("SET TimeZone = 'UTC'")
        for query in QUERIES:
            plan = plan_queries(model, query, QueryContext())
            outcomes = [QueryOutcome(rows=connection.execute(q.sql, list(q.params)).fetchall()) for q in plan.queries]
            answers.append(load_response(model, plan, outcomes, multi=False, db_type="duckdb")["data"])
    return meta(model, QueryContext()), answers


def request(url: str, token: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": token, "Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=120) as answer:
        result: dict[str, Any] = json.loads(answer.read())
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", type=Path, default=None, help="where setup.sh installed Cube")
    parser.add_argument("--port", type=int, default=4150)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "demo.duckdb"
        generate(data, orders=5000, seed=7)
        our_meta, our_answers = ours(data)
        source = cube_peer.DuckDBSource(data)
        with cube_peer.CubePeer(model_dir=MODEL, source=source, port=args.port, install=args.install) as cube:
            token = cube.token({})
            cube_meta = request(f"{cube.base_url}/meta", token)
            cube_answers = [
                request(f"{cube.base_url}/load", token, {"query": q, "cache": "no-cache"})["data"] for q in QUERIES
            ]
    differences = []
    mine, theirs = meta_summary(our_meta), meta_summary(cube_meta)
    if mine != theirs:
        differences.append(f"/v1/meta differs:\n  embedadmin: {json.dumps(mine)}\n  Cube:       {json.dumps(theirs)}")
    members = sum(len(c["measures"]) + len(c["dimensions"]) for c in theirs.values())
    print(f"/v1/meta: {len(theirs)} cubes and views, {members} measures and dimensions, same: {mine == theirs}")
    for query, our_rows, cube_rows in zip(QUERIES, our_answers, cube_answers, strict=True):
        same = normalized(our_rows) == normalized(cube_rows)
        print(f"/v1/load {json.dumps(query)}: {len(cube_rows)} rows, {'same' if same else 'DIFFERENT'}")
        if not same:
            differences.append(f"{json.dumps(query)}:\n  embedadmin: {our_rows[:5]}\n  Cube:       {cube_rows[:5]}")
    for difference in differences:
        print(difference)
    print("agree" if not differences else f"{len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
