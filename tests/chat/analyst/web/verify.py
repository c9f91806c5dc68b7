"""Run every ``check`` of questions.yml on a fresh DuckDB file of the web dataset, and every expected query (the
case's spec, as a Cube query through embedadmin's semantic layer, groups ["admin"]) on the same file; print each
case's rows and whether the expected query's rows equal the check's.

    EMBEDADMIN_ALLOW_DEV_SECRET=true .venv/bin/python tests/chat/analyst/web/verify.py [-v]

Not a test module (nothing here runs in ``make test``); a helper for whoever edits the suite. The hash of the
frozen file is printed too.
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
ROOT = HERE.parents[3]
sys.path[:0] = [str(ROOT), str(HERE)]

import dataset  # noqa: E402

from embedadmin.semantic import QueryContext, load_model, plan_queries  # noqa: E402
from tests.chat.analyst.suite import Case, Suite, expected, rows_equal  # noqa: E402

QUERY_KEYS = ("measures", "by", "dates", "grain", "filters", "having", "ranking", "limit")


def cube_query(case: Case, suite: Suite) -> dict[str, Any]:
    """The Cube query a case's spec describes (its expected signature, relative dates resolved)."""
    sig = expected(case, suite)
    query: dict[str, Any] = {"measures": list(sig.measures), "dimensions": sorted(sig.dimensions)}
    times: dict[str, dict[str, Any]] = {}
    if sig.dates:
        member, first, after = sig.dates
        last = (date.fromisoformat(after) - timedelta(days=1)).isoformat()
        times[member] = {"dimension": member, "dateRange": [first, last]}
    if sig.grain:
        times.setdefault(sig.grain[0], {"dimension": sig.grain[0]})["granularity"] = sig.grain[1]
    query["timeDimensions"] = list(times.values())
    query["filters"] = [
        {"member": m, "operator": op, **({"values": list(v)} if v else {})} for m, op, v in sig.filters | sig.having
    ]
    if sig.ranking:
        query["order"] = {sig.measures[0]: sig.ranking}
    query["limit"] = sig.limit or 50_000
    return query


def run_expected(model: Any, connection: Any, case: Case, suite: Suite) -> list[tuple[Any, ...]]:
    spec = case.spec
    cube = spec.get("cube", suite.cube)
    plan = plan_queries(model, cube_query(case, suite), QueryContext(groups=["admin"]), now=suite.now)
    compiled = plan.queries[0]
    result = connection.execute(compiled.sql, list(compiled.params))
    names = [d[0] for d in result.description]
    wanted = []
    if "grain" in spec:
        wanted.append(f"{cube}__{spec['grain'][0]}_{spec['grain'][1]}")
    wanted += [f"{cube}__{d}" for d in spec.get("by", ())] + [f"{cube}__{m}" for m in spec.get("measures", ())]
    index = [names.index(w) for w in wanted]
    return [tuple(row[i] for i in index) for row in result.fetchall()]


def main() -> int:
    verbose = "-v" in sys.argv
    text = (HERE / "questions.yml").read_bytes()
    first, _, rest = text.partition(b"\n")
    digest = hashlib.sha256(rest).hexdigest()
    frozen = first.decode() == f"# frozen: sha256 {digest}"
    print("frozen line:", first.decode(), "| sha256 of the rest:", digest, "| matches" if frozen else "| DIFFERS")
    document = yaml.safe_load(text)
    now = document["now"] if isinstance(document["now"], datetime) else datetime.fromisoformat(str(document["now"]))
    suite = Suite("web", now.astimezone(UTC), document.get("timezone", "UTC"), document["cube"])
    model = load_model(str(dataset.MODEL), dialect="duckdb").require()
    questions = {entry["q"] for entry in document["cases"]}
    failures = 0
    counts = {"checks": 0, "non-empty": 0, "expected queries": 0, "expected = check": 0, "declines": 0}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "web.duckdb"
        dataset.write_duckdb(path)
        connection = duckdb.connect(str(path), read_only=True)
        for number, entry in enumerate(document["cases"], 1):
            case = Case(entry["q"], entry, tuple(entry.get("after", ())))
            problems = [f"after: {a!r} is no earlier question" for a in case.after if a not in questions]
            if case.declines:
                counts["declines"] += 1
                print(f"{number:2d} DECLINE {case.question}")
                continue
            if not case.check:
                problems.append("no check")
                checked: list[tuple[Any, ...]] = []
            else:
                counts["checks"] += 1
                checked = connection.execute(case.check.replace("{t}", "")).fetchall()
                counts["non-empty"] += bool(checked)
                if not checked or all(v is None for row in checked for v in row):
                    problems.append("check is empty")
            verdict = "answer"
            if entry.get("expect") != "answer":
                counts["expected queries"] += 1
                got = run_expected(model, connection, case, suite)
                same = rows_equal(got, checked, ordered=bool(entry.get("ranking")))
                counts["expected = check"] += same
                verdict = "same" if same else "DIFFERENT"
                if not same:
                    problems.append(f"expected query gives {got[:6]}")
                for other in entry.get("or", ()):
                    alternative = Case(case.question, {**other, "ranking": other.get("ranking")})
                    counts["or specs"] = counts.get("or specs", 0) + 1
                    if not rows_equal(
                        run_expected(model, connection, alternative, suite), checked, ordered=bool(other.get("ranking"))
                    ):
                        problems.append(f"`or` spec {other} gives other rows")
                if entry.get("ranking"):
                    counts["rankings"] = counts.get("rankings", 0) + 1
                    unlimited = Case(case.question, {**entry, "limit": None, "ranking": entry["ranking"]})
                    ranked = [row[-len(entry["measures"])] for row in run_expected(model, connection, unlimited, suite)]
                    edge = ranked[: entry["limit"] + 1]
                    if len(set(edge)) < len(edge):
                        problems.append(f"a tie in the first {entry['limit'] + 1} values: {edge}")
            print(f"{number:2d} {verdict:9s} {case.question}")
            if verbose or problems:
                for row in checked[:8]:
                    print("      ", row)
                if len(checked) > 8:
                    print(f"       ... {len(checked)} rows")
            for problem in problems:
                print("    !!", problem)
            failures += bool(problems)
    print(counts, "failures:", failures)
    return 1 if failures or not frozen else 0


if __name__ == "__main__":
    sys.exit(main())
