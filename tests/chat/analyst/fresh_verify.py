"""Verify a fresh question set (``saas/fresh.yml``, ``tpch/fresh.yml``) without the analyst.

Run from the repository root, with the set's file (nothing here is collected by pytest)::

    export EMBEDADMIN_ALLOW_DEV_SECRET=true
    .venv/bin/python tests/chat/analyst/fresh_verify.py tests/chat/analyst/saas/fresh.yml

The dataset is the one of the file's folder (``saas``, ``tpch``: its ``dataset.py`` and ``model/``). It checks

- the ``# frozen: sha256 <hex>`` first line against the SHA-256 of the bytes after it (``--freeze`` rewrites that
  line first: only while the set is written, never after it is frozen);
- the keys of every case (those of ``suite.py``), that ``after`` names earlier questions of the set, and that a
  declined case has no check and every other case has one;
- every ``check`` on a freshly generated DuckDB file (``{t}`` replaced by nothing): not empty, no NULL measure;
- for each case with an expected query (and each of its ``or`` alternatives), the rows the semantic layer returns
  for that query (its signature as :func:`suite.expected` reads it, relative dates with the set's clock) against the
  check's rows (:func:`suite.rows_equal`, in order when the case ranks), and, for a ranking with a limit, no tie at
  the cut-off.

It reads the model, the suite format and the semantic layer only, never the analyst.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import sys
import tempfile
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import duckdb
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from embedadmin.semantic import QueryContext, load_model, plan_queries
from tests.chat.analyst import suite

KEYS = {"q", "measures", "by", "filters", "dates", "grain", "having", "ranking", "limit", "after", "or", "cube"}
KEYS |= {"decline", "expect", "check"}
QUERY_KEYS = {"measures", "by", "filters", "dates", "grain", "having", "ranking", "limit", "cube"}


def frozen_hash(text: bytes) -> tuple[str | None, str]:
    """The hash the first line declares, and the SHA-256 of the bytes after that line."""
    first, _, rest = text.partition(b"\n")
    line = first.decode()
    declared = line.split("sha256", 1)[1].strip() if line.startswith("# frozen: sha256") else None
    return declared, hashlib.sha256(rest).hexdigest()


def freeze(path: Path) -> None:
    """Write the ``# frozen`` line (replacing one already there) for the file's content below it."""
    text = path.read_bytes()
    body = text.partition(b"\n")[2] if text.startswith(b"# frozen: sha256") else text
    path.write_bytes(f"# frozen: sha256 {hashlib.sha256(body).hexdigest()}\n".encode() + body)


def cube_query(
    spec: dict[str, Any], case: suite.Case, the_suite: suite.Suite, *, extra: int = 0
) -> tuple[dict[str, Any], list[str]]:
    """The Cube query a spec means, and its result keys in a check's column order: the time grain, the ``by``
    dimensions, then the measures."""
    signature = suite.expected(suite.Case(case.question, spec), the_suite)
    cube = signature.cube

    def name(member: str) -> str:
        return member if "." in member else f"{cube}.{member}"

    query: dict[str, Any] = {"measures": list(signature.measures), "timeDimensions": []}
    keys: list[str] = []
    filters = [
        {"member": name(m), "operator": op, "values": [suite._text(v) for v in values]}
        for m, op, values in [*spec.get("filters", ()), *spec.get("having", ())]
    ]
    times: dict[str, dict[str, Any]] = {}
    if signature.grain:
        member, granularity = signature.grain
        times[member] = {"dimension": member, "granularity": granularity}
        keys.append(f"{member}.{granularity}")
    if signature.dates:
        member, start, end = signature.dates
        if start and end:
            last = date.fromisoformat(end) - timedelta(days=1)
            times.setdefault(member, {"dimension": member})["dateRange"] = [start, last.isoformat()]
        elif start:
            filters.append({"member": member, "operator": "afterOrOnDate", "values": [start]})
        elif end:
            filters.append({"member": member, "operator": "beforeDate", "values": [end]})
    query["timeDimensions"] = list(times.values())
    query["dimensions"] = [name(d) for d in spec.get("by", ())]
    keys.extend(query["dimensions"])
    keys.extend(query["measures"])
    query["filters"] = filters
    if signature.ranking:
        query["order"] = [[signature.measures[0], signature.ranking]]
    if signature.limit:
        query["limit"] = signature.limit + extra
    return query, keys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="the set's YAML file, e.g. tests/chat/analyst/saas/fresh.yml")
    parser.add_argument("--freeze", action="store_true", help="rewrite the `# frozen` line first (while writing)")
    args = parser.parse_args()
    path: Path = args.path
    if args.freeze:
        freeze(path)
    name = path.resolve().parent.name
    dataset = importlib.import_module(f"tests.chat.analyst.{name}.dataset")
    text = path.read_bytes()
    declared, actual = frozen_hash(text)
    print(f"frozen: declared {declared}, actual {actual}: {'OK' if declared == actual else 'MISMATCH'}")
    the_suite = suite.load_file(path, name)
    entries = yaml.safe_load(text)["cases"]
    model = load_model(str(dataset.MODEL), dialect="duckdb").require()
    failures = 0 if declared == actual else 1
    checks = compared = 0
    with tempfile.TemporaryDirectory(prefix=f"{name}-fresh-") as scratch:
        db = Path(scratch) / f"{name}.duckdb"
        dataset.write_duckdb(db)
        connection = duckdb.connect(str(db), read_only=True)

        def semantic(query: dict[str, Any], keys: list[str]) -> list[tuple[Any, ...]]:
            plan = plan_queries(model, query, QueryContext(groups=["admin"]), now=the_suite.now)
            compiled = plan.queries[0]
            rows = connection.execute(compiled.sql, list(compiled.params)).fetchall()
            index = {column.key: i for i, column in enumerate(compiled.columns)}
            return [tuple(row[index[k]] for k in keys) for row in rows]

        seen: set[str] = set()
        for number, (case, entry) in enumerate(zip(the_suite.cases, entries, strict=True), start=1):
            problems: list[str] = []
            unknown = set(entry) - KEYS
            if unknown:
                problems.append(f"unknown keys {sorted(unknown)}")
            if case.question in seen:
                problems.append("the same question twice")
            missing = [a for a in case.after if a not in seen]
            if missing:
                problems.append(f"`after` names no earlier question: {missing}")
            seen.add(case.question)
            if case.declines:
                if case.check or set(entry) - {"q", "decline", "after"}:
                    problems.append("a declined case has a check or query keys")
                kind, checked = "DECLINE", []
            elif not case.check:
                problems.append("no check")
                kind, checked = "?", []
            else:
                checked = connection.execute(case.check.replace("{t}", "")).fetchall()
                checks += 1
                if not checked:
                    problems.append("the check returns no rows")
                elif any(row[-1] is None for row in checked):
                    problems.append("a NULL measure in the check's rows")
                if case.expects_answer:
                    kind = "ANSWER "
                    if set(entry) & QUERY_KEYS:
                        problems.append("an `expect: answer` case with query keys")
                else:
                    kind = "QUERY  "
                    for spec in [entry, *entry.get("or", ())]:
                        try:
                            query, keys = cube_query(spec, case, the_suite)
                            got = semantic(query, keys)
                        except Exception as error:  # reported as the case's problem
                            problems.append(f"the expected query fails: {error}")
                            continue
                        compared += 1
                        if not suite.rows_equal(got, checked, ordered=bool(spec.get("ranking"))):
                            problems.append(f"semantic {got[:6]} != check {checked[:6]}")
                        if spec.get("ranking") and spec.get("limit"):
                            wider = semantic(cube_query(spec, case, the_suite, extra=1)[0], keys)
                            cut = spec["limit"]
                            if len(wider) > cut and wider[cut][-1] == wider[cut - 1][-1]:
                                problems.append(f"a tie at the cut-off: {wider[cut - 1 :]}")
            failures += bool(problems)
            shown = checked if len(checked) <= 4 else [*checked[:4], f"... {len(checked)} rows"]
            print(f"{number:2} {kind} {'FAIL' if problems else 'ok  '} {case.question}\n     {shown}")
            for problem in problems:
                print(f"     !! {problem}")
        connection.close()
    declines = sum(c.declines for c in the_suite.cases)
    answers = sum(c.expects_answer for c in the_suite.cases)
    print(
        f"{len(the_suite.cases)} cases ({declines} declines, {answers} `expect: answer`), {checks} checks run, "
        f"{compared} expected queries compared, {failures} failures"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
