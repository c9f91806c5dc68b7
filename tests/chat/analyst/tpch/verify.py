"""Verify the tpch question suite: ``python -m tests.chat.analyst.tpch.verify`` (from the repository root).

Writes the dataset into a temporary DuckDB file, checks the ``# frozen: sha256`` line of ``questions.yml``, runs
every case's ``check`` SQL (``{t}`` replaced by nothing) and fails on an empty result or a NULL cell; for each case
with an expected query, runs that query (and its ``or`` alternatives) through the semantic layer on the same file
and compares its rows with the check's (``suite.rows_equal``), and for ranked cases asserts no tie at the cut-off.
It reads the model, the suite format and the semantic layer only, never the analyst.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import duckdb
import yaml

from embedadmin.semantic import QueryContext, load_model, plan_queries
from tests.chat.analyst.suite import rows_equal
from tests.chat.analyst.tpch.dataset import MODEL, write_duckdb

QUESTIONS = Path(__file__).parent / "questions.yml"
QUERY_KEYS = ("measures", "by", "grain", "dates", "filters", "ranking", "limit")


def frozen_hash(text: str) -> tuple[str | None, str]:
    """The hash the first line declares, and the sha256 of the bytes after that line."""
    first, _, rest = text.partition("\n")
    declared = first.split("sha256", 1)[1].strip() if first.startswith("# frozen: sha256") else None
    return declared, hashlib.sha256(rest.encode()).hexdigest()


def cube_query(spec: dict[str, Any], cube: str, *, extra: int = 0) -> tuple[dict[str, Any], list[str]]:
    """The Cube query a case's spec means, and the result keys in the check's column order."""
    name = lambda m: m if "." in m else f"{cube}.{m}"  # noqa: E731
    query: dict[str, Any] = {"measures": [name(m) for m in spec.get("measures", [])]}
    keys: list[str] = []
    times: dict[str, dict[str, Any]] = {}
    if "grain" in spec:
        member, granularity = spec["grain"]
        times[name(member)] = {"dimension": name(member), "granularity": granularity}
        keys.append(f"{name(member)}.{granularity}")
    if "dates" in spec:
        member, start, end = spec["dates"]
        last = date.fromisoformat(str(end)) - timedelta(days=1)
        times.setdefault(name(member), {"dimension": name(member)})["dateRange"] = [str(start), last.isoformat()]
    if times:
        query["timeDimensions"] = list(times.values())
    if spec.get("by"):
        query["dimensions"] = [name(d) for d in spec["by"]]
        keys.extend(query["dimensions"])
    keys.extend(query["measures"])
    if spec.get("filters"):
        query["filters"] = [
            {"member": name(m), "operator": op, **({"values": [str(v) for v in values]} if values else {})}
            for m, op, values in spec["filters"]
        ]
    if spec.get("ranking"):
        query["order"] = [[query["measures"][0], spec["ranking"]]]
    elif "grain" in spec:
        query["order"] = [[keys[0].rsplit(".", 1)[0], "asc"]]
    if spec.get("limit"):
        query["limit"] = spec["limit"] + extra
    return query, keys


def main() -> int:
    text = QUESTIONS.read_text()
    declared, actual = frozen_hash(text)
    print(f"frozen: declared {declared}, actual {actual}: {'OK' if declared == actual else 'MISMATCH'}")
    document = yaml.safe_load(text)
    model = load_model(str(MODEL), dialect="duckdb").require()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="tpch-verify-") as scratch:
        path = Path(scratch) / "tpch.duckdb"
        started = time.monotonic()
        write_duckdb(path)
        print(f"dataset written in {time.monotonic() - started:.2f} s")
        connection = duckdb.connect(str(path), read_only=True)

        def semantic(query: dict[str, Any], keys: list[str]) -> list[tuple[Any, ...]]:
            compiled = plan_queries(model, query, QueryContext(groups=["admin"])).queries[0]
            rows = connection.execute(compiled.sql, list(compiled.params)).fetchall()
            index = {column.key: i for i, column in enumerate(compiled.columns)}
            return [tuple(row[index[k]] for k in keys) for row in rows]

        checks = compared = 0
        for number, case in enumerate(document["cases"], start=1):
            question, problems = case["q"], []
            if case.get("decline"):
                print(f"{number:2} DECLINE  {question}")
                continue
            if not case.get("check"):
                problems.append("no check SQL")
                checked: list[tuple[Any, ...]] = []
            else:
                checks += 1
                checked = connection.execute(case["check"].replace("{t}", "")).fetchall()
                if not checked:
                    problems.append("empty check result")
                if any(cell is None for row in checked for cell in row[-1:]):
                    problems.append("NULL measure in the check result")
            if case.get("expect") == "answer":
                kind = "ANSWER "
            else:
                kind = "QUERY  "
                cube = case.get("cube", document["cube"])
                for spec in [case, *case.get("or", ())]:
                    spec_cube = spec.get("cube", cube)
                    query, keys = cube_query(spec, spec_cube)
                    got = semantic(query, keys)
                    compared += 1
                    if not rows_equal(got, checked, ordered=bool(spec.get("ranking"))):
                        problems.append(f"semantic {got[:6]} != check {checked[:6]}")
                    if spec.get("ranking") and spec.get("limit"):
                        wider = semantic(cube_query(spec, spec_cube, extra=1)[0], keys)
                        if len(wider) > spec["limit"] and wider[spec["limit"]][-1] == wider[spec["limit"] - 1][-1]:
                            problems.append(f"tie at the cut-off: {wider[-2:]}")
            failures += bool(problems)
            shown = checked if len(checked) <= 3 else [*checked[:3], f"... {len(checked)} rows"]
            print(f"{number:2} {kind} {'FAIL' if problems else 'ok  '} {question}\n     {shown}")
            for problem in problems:
                print(f"     !! {problem}")
        print(f"{checks} checks run, {compared} expected queries compared, {failures} failing cases")
        connection.close()
    return 1 if failures or declared != actual else 0


if __name__ == "__main__":
    sys.exit(main())
