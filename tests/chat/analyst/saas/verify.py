"""Verify the saas suite (questions.yml) without the analyst: the frozen hash, every `check` SQL on a freshly
generated DuckDB file, and, for each case with an expected query (and each of its `or` alternatives), the rows the
semantic layer returns for that query against the rows of its `check`.

Run from the repository root (nothing here is collected by pytest)::

    EMBEDADMIN_ALLOW_DEV_SECRET=true .venv/bin/python tests/chat/analyst/saas/verify.py
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import yaml

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[3]))

from embedadmin.semantic import QueryContext, load_model, plan_queries  # noqa: E402
from tests.chat.analyst import suite  # noqa: E402
from tests.chat.analyst.saas import dataset  # noqa: E402

QUESTIONS = HERE / "questions.yml"


def frozen_ok(text: bytes) -> bool:
    first, _, rest = text.partition(b"\n")
    return first.decode() == f"# frozen: sha256 {hashlib.sha256(rest).hexdigest()}"


def cube_query(spec: dict[str, Any], case: suite.Case, the_suite: suite.Suite) -> dict[str, Any]:
    """The Cube query a case's spec means (dimensions in `by` order, relative dates read with the suite's clock)."""
    signature = suite.expected(suite.Case(case.question, spec), the_suite)
    cube = spec.get("cube", the_suite.cube)

    def name(member: str) -> str:
        return member if "." in member else f"{cube}.{member}"

    query: dict[str, Any] = {
        "measures": list(signature.measures),
        "dimensions": [name(d) for d in spec.get("by", ())],
        "timeDimensions": [],
        "filters": [
            {"member": name(m), "operator": op, "values": [suite._text(v) for v in values]}
            for m, op, values in [*spec.get("filters", ()), *spec.get("having", ())]
        ],
    }
    dates = None
    if signature.dates:
        last = date.fromisoformat(signature.dates[2]) - timedelta(days=1)
        dates = (signature.dates[0], [signature.dates[1], last.isoformat()])
    if signature.grain:
        entry: dict[str, Any] = {"dimension": signature.grain[0], "granularity": signature.grain[1]}
        if dates and dates[0] == signature.grain[0]:
            entry["dateRange"] = dates[1]
            dates = None
        query["timeDimensions"].append(entry)
    if dates:
        query["timeDimensions"].append({"dimension": dates[0], "dateRange": dates[1]})
    if signature.ranking:
        query["order"] = [[signature.measures[0], signature.ranking]]
    if signature.limit:
        query["limit"] = signature.limit
    return query


def main() -> int:
    text = QUESTIONS.read_bytes()
    document = yaml.safe_load(text)
    now = document["now"]
    now = now if isinstance(now, datetime) else datetime.fromisoformat(str(now))
    cases = tuple(suite.Case(e["q"], e, tuple(e.get("after", ()))) for e in document["cases"])
    the_suite = suite.Suite("saas", now.astimezone(UTC), document.get("timezone", "UTC"), document["cube"], cases)
    model = load_model(str(dataset.MODEL), dialect="duckdb").require()
    questions = {c.question for c in cases}
    problems = []
    if not frozen_ok(text):
        problems.append("the `# frozen: sha256` line does not match the file's content below it")
    checks = compared = 0
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "saas.duckdb"
        dataset.write_duckdb(path)
        with duckdb.connect(str(path), read_only=True) as connection:
            for case in cases:
                missing = [a for a in case.after if a not in questions]
                if missing:
                    problems.append(f"{case.question!r}: `after` names no case: {missing}")
                if case.declines:
                    if case.check:
                        problems.append(f"{case.question!r}: a declined case has a check")
                    continue
                if not case.check:
                    problems.append(f"{case.question!r}: no check")
                    continue
                rows = connection.execute(case.check.replace("{t}", "")).fetchall()
                checks += 1
                if not rows or all(v is None for row in rows for v in row):
                    problems.append(f"{case.question!r}: the check returns nothing")
                    continue
                print(f"{case.question}\n    check: {rows[:6]}{' ...' if len(rows) > 6 else ''}")
                if case.spec.get("expect") == "answer":
                    continue
                for spec in [case.spec, *case.spec.get("or", ())]:
                    query = cube_query(spec, case, the_suite)
                    plan = plan_queries(model, query, QueryContext(groups=["admin"]), now=the_suite.now)
                    compiled = plan.queries[0]
                    got = connection.execute(compiled.sql, list(compiled.params)).fetchall()
                    compared += 1
                    if not suite.rows_equal(got, rows, ordered=bool(spec.get("ranking") or spec.get("grain"))):
                        problems.append(f"{case.question!r}: the model's rows {got[:6]} differ from the check's")
    declines = sum(c.declines for c in cases)
    print(f"\n{len(cases)} cases, {declines} declines, {checks} checks run, {compared} expected queries compared")
    for problem in problems:
        print("PROBLEM:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
