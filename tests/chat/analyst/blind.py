"""First contact of the built-in analyst with the blind question sets (``saas/``, ``web/``, ``tpch/``).

Not a test (no ``test_`` prefix: pytest does not collect it, ``make test`` does not run it). Run from the repository
root, with PostgreSQL up for Django's test database (``eval "$(bash scripts/test-services.sh)"``)::

    EMBEDADMIN_ALLOW_DEV_SECRET=true .venv/bin/python -m tests.chat.analyst.blind [--set saas|web|tpch]
        [--json out.json | --json 'docs/analyst-first-contact/{set}.json']

For each set it writes the set's DuckDB dataset (``dataset.write_duckdb``), configures a deployment of a fresh
account with the set's model, and asks every question as ``test_suites.py`` does (its ``ask``: the real tools on
the real deployment, the viewer in group ``admin``, follow-ups with their ``after`` questions as the thread's
history, the set's fixed clock and time zone). Each answer is judged by ``suite.judge`` with the analyst's rows and
the ``check`` SQL's rows on the same DuckDB file. It prints per set the answerable questions right / declined /
wrong, the unanswerable ones declined, and every wrong and declined case: the question, what the analyst said (one
line) and its SQL. ``--json`` writes the same with every case in full (one file per set when the path holds
``{set}``), with the commit measured.

Django's test database is created for the run and dropped after it (``TEST_DATABASE_NAME``, default
``test_blind``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.chat.analyst import suite as suites

HERE = Path(__file__).parent
REPO = HERE.parents[2]
SETS = ("saas", "web", "tpch")


def django_setup() -> None:
    """Django with the test settings, before anything of ``embedadmin`` is imported."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    os.environ.setdefault("TEST_DATABASE_NAME", "test_blind")
    os.environ.setdefault("EMBEDADMIN_ALLOW_DEV_SECRET", "true")
    import django

    django.setup()


@contextmanager
def scratch_database() -> Iterator[None]:
    """Django's test database, created (migrated) for the run and dropped after it."""
    from django.test.utils import setup_databases, setup_test_environment, teardown_databases, teardown_test_environment

    setup_test_environment()
    old = setup_databases(verbosity=0, interactive=False)
    try:
        yield
    finally:
        teardown_databases(old, verbosity=0)
        teardown_test_environment()


@contextmanager
def deployed(cast: Any, model: Path, url: str) -> Iterator[Any]:
    """``cast``'s deployment serving ``model`` on ``url``, with no cached model or result from before (as the
    ``fresh_semantic_state`` fixture does); yields the ToolContext of a viewer in group ``admin``."""
    from django.core.cache import cache

    from embedadmin.accounts.services import deployment_configure
    from embedadmin.chat.tools import ToolContext
    from embedadmin.semantic import clear_models
    from embedadmin.semantic.sources.registry import close_data_sources
    from tests.chat.analyst.test_suites import VIEWER

    cache.clear()
    clear_models()
    deployment_configure(deployment=cast.deployment, model_dir=str(model), data_source_url=url)
    try:
        yield ToolContext(account_id=cast.account.pk, deployment_id=cast.deployment.pk, query_context=VIEWER)
    finally:
        cache.clear()
        clear_models()
        close_data_sources()


def frozen(path: Path) -> dict[str, Any]:
    """The ``# frozen: sha256`` line of a questions file and whether it matches the bytes after it."""
    first, _, rest = path.read_bytes().partition(b"\n")
    digest = hashlib.sha256(rest).hexdigest()
    return {"line": first.decode(), "sha256": digest, "ok": first.decode() == f"# frozen: sha256 {digest}"}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def one_line(text: str) -> str:
    return " ".join(text.split())


def _signature(signature: suites.Signature) -> dict[str, Any]:
    fields = asdict(signature)
    for name in ("dimensions", "filters", "having"):
        fields[name] = sorted(fields[name], key=str)
    return fields


def _cells(rows: Any) -> Any:
    return json.loads(json.dumps(rows, default=str)) if rows is not None else None


def run_set(name: str, cast: Any, questions_file: str = "questions.yml", *, timing: bool = False) -> dict[str, Any]:
    """Every question of the blind set ``name`` (its ``questions_file``) asked once and judged; with ``timing``, each
    answered one asked again and its query loaded twice (``_timed``) once judged."""
    from embedadmin.accounts.services import duckdb_url
    from embedadmin.semantic import load_model
    from tests.chat.analyst.test_suites import ask
    from tests.semantic.http_support import duck_rows

    dataset = importlib.import_module(f"tests.chat.analyst.{name}.dataset")
    questions = HERE / name / questions_file
    suite = suites.load_file(questions, name)
    cases: list[dict[str, Any]] = []
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"{name}.duckdb"
        dataset.write_duckdb(path)
        model = load_model(dataset.MODEL, dialect="duckdb").require()
        with deployed(cast, dataset.MODEL, duckdb_url(path)) as context:
            for case in suite.cases:
                record = _case(case, suite, model, context, lambda sql: duck_rows(path, sql.format(t="")), ask)
                if timing and record["query"] is not None:
                    record.update(_timed(case, suite, context, record["query"], ask))
                cases.append(record)
    answerable = [c for c in cases if c["kind"] != "decline"]
    unanswerable = [c for c in cases if c["kind"] == "decline"]
    timed = [c for c in cases if "answer_ms" in c]
    latency = (
        {
            "timed": len(timed),
            "answer_p50_ms": _p50([c["answer_ms"] for c in timed]),
            "load_p50_ms": _p50([c["load_ms"] for c in timed]),
        }
        if timed
        else {}
    )
    if latency:
        latency["ratio"] = latency["answer_p50_ms"] / latency["load_p50_ms"]
    return {
        **({"latency": latency} if latency else {}),
        "set": name,
        "questions": str(questions.relative_to(REPO)),
        "frozen": frozen(questions),
        "now": suite.now.isoformat(),
        "timezone": suite.timezone,
        "database": "duckdb",
        "started": started.isoformat(timespec="seconds"),
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "figures": {
            "answerable": len(answerable),
            "right": sum(c["outcome"] == "right" for c in answerable),
            "declined": sum(c["outcome"] == "declined" for c in answerable),
            "wrong": sum(c["outcome"] == "wrong" for c in answerable),
            "unanswerable": len(unanswerable),
            "unanswerable_declined": sum(c["outcome"] == "right" for c in unanswerable),
            "right_by_query": sum(c["outcome"] == "right" and c["basis"] == "query" for c in answerable),
            "right_by_rows_expect_answer": sum(c["outcome"] == "right" and c["basis"] == "rows" for c in answerable),
            "right_by_rows_dates_spelled_apart": sum(
                c["outcome"] == "right" and c["basis"] == "dates, rows" for c in answerable
            ),
            "wrong_with_rows_equal_to_check": sum(
                c["outcome"] == "wrong" and bool(c["rows_equal_check"]) for c in answerable
            ),
        },
        "cases": cases,
    }


def _case(case: suites.Case, suite: suites.Suite, model: Any, context: Any, run: Any, ask: Any) -> dict[str, Any]:
    kind = "decline" if case.declines else "answer" if case.expects_answer else "query"
    record: dict[str, Any] = {"question": case.question, "after": list(case.after), "kind": kind}
    checked = run(case.check) if case.check and not case.declines else None
    try:
        turn = ask(context, suite, case.question, list(case.after))
    except (AssertionError, ValueError) as error:  # its SQL failed, or it ran more than one query
        record.update(outcome="wrong", basis="turn failed", detail=str(error), answer="", sql=None, rows=None)
        record.update(total_rows=None, check_rows=_cells(checked), rows_equal_check=None, expected=None)
        record.update(answered=None, differs=None, query=None)
        return record
    verdict = suites.judge(
        case,
        suite,
        model,
        turn.sql,
        suites.decline_reason(turn.answer),
        rows=turn.rows,
        total_rows=turn.total_rows,
        checked=checked,
    )
    record.update(outcome=verdict.outcome, basis=verdict.basis, detail=verdict.detail, answer=turn.answer)
    record["query"] = verdict.query
    record.update(sql=turn.sql, rows=_cells(turn.rows if turn.sql else None), total_rows=turn.total_rows)
    record["check_rows"] = _cells(checked)
    complete = turn.sql is not None and turn.total_rows <= len(turn.rows)
    record["rows_equal_check"] = (
        complete and suites.rows_equal(turn.rows, checked, ordered=case.ordered) if checked is not None else None
    )
    record.update(expected=None, answered=None, differs=None)
    if verdict.query is not None and kind == "query":
        alternatives = [case, *(suites.Case(case.question, {**o}) for o in case.spec.get("or", ()))]
        pairs = [
            (suites.expected(c, suite), suites.answered(verdict.query, c.spec.get("cube", suite.cube)))
            for c in alternatives
        ]
        wanted, got = min(pairs, key=lambda pair: len(suites.differences(*pair)))
        record.update(expected=_signature(wanted), answered=_signature(got), differs=suites.differences(wanted, got))
    return record


def _timed(case: suites.Case, suite: suites.Suite, context: Any, query: dict[str, Any], ask: Any) -> dict[str, float]:
    """The analyst's answer asked again (its lookups, model and result warm, as a dashboard's second viewer finds
    them) and the plain ``/v1/load`` of the query it ran, in the same process (the Core Data API's service, the
    same viewer), second of two: milliseconds each."""
    from embedadmin.accounts.models import Deployment
    from embedadmin.semantic.serving.services import semantic_load

    deployment = Deployment.objects.get(pk=context.deployment_id)
    started = time.perf_counter()
    ask(context, suite, case.question, list(case.after))
    answer_ms = (time.perf_counter() - started) * 1000
    load_ms = 0.0
    for _ in range(2):
        started = time.perf_counter()
        semantic_load(deployment=deployment, ctx=context.query_context, query=query)
        load_ms = (time.perf_counter() - started) * 1000
    return {"answer_ms": answer_ms, "load_ms": load_ms}


def _p50(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def report(result: dict[str, Any]) -> str:
    """The set's figures and its wrong and declined cases, as printed."""
    f = result["figures"]
    lines = [
        f"== {result['set']}: {result['questions']} (frozen hash {'ok' if result['frozen']['ok'] else 'MISMATCH'}),"
        f" clock {result['now']} {result['timezone']}, {result['database']}",
        f"answerable {f['answerable']}: right {f['right']}, declined {f['declined']}, wrong {f['wrong']}"
        f"  (right by query {f['right_by_query']}, by rows for expect: answer {f['right_by_rows_expect_answer']},"
        f" by rows with the date range spelled apart {f['right_by_rows_dates_spelled_apart']};"
        f" wrong whose rows equal the check's {f['wrong_with_rows_equal_to_check']})",
        f"unanswerable declined {f['unanswerable_declined']}/{f['unanswerable']}",
    ]
    if "latency" in result:
        t = result["latency"]
        lines.append(
            f"answer time p50 {t['answer_p50_ms']:.1f} ms against the plain /v1/load of its query p50 "
            f"{t['load_p50_ms']:.1f} ms ({t['timed']} answered questions, in process): {t['ratio']:.1f}x"
        )
    for title, chosen in (
        ("WRONG", [c for c in result["cases"] if c["outcome"] == "wrong"]),
        ("DECLINED (answerable)", [c for c in result["cases"] if c["outcome"] == "declined"]),
    ):
        lines.append(f"-- {title}: {len(chosen)}")
        for c in chosen:
            after = f" (after {c['after']})" if c["after"] else ""
            lines.append(f"  Q: {c['question']}{after} [{c['kind']}]")
            lines.append(f"     said: {one_line(c['answer'])}")
            lines.append(f"     sql: {one_line(c['sql']) if c['sql'] else '(none)'}")
            if c["outcome"] == "wrong":
                if c["differs"]:
                    lines.append(f"     differs in: {', '.join(c['differs'])}")
                    lines.append(f"     expected: {c['expected']}")
                    lines.append(f"     answered: {c['answered']}")
                if c["check_rows"] is not None:
                    lines.append(f"     rows: {c['rows']}  check: {c['check_rows']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chat.analyst.blind", description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=SETS, action="append", help="a set to run (repeatable; default: all)")
    parser.add_argument("--json", help="write the results here ('{set}' in the path: one file per set)")
    parser.add_argument(
        "--timing", action="store_true", help="also time each answer against the plain /v1/load of its query"
    )
    parser.add_argument(
        "--questions",
        default="questions.yml",
        help="the questions file of each set (default questions.yml; fresh.yml: the fresh sets written after the "
        "first contact, for the sets that have one)",
    )
    args = parser.parse_args(argv)
    names = args.set or list(SETS)
    head = git("rev-parse", "HEAD")
    run = {
        "commit": head,
        "analyst_commit": git("log", "-1", "--format=%H", "--", "embedadmin/chat/"),
        "analyst_providers_commit": git("log", "-1", "--format=%H", "--", "embedadmin/chat/providers/"),
        "embedadmin_changes_not_committed": git("status", "--porcelain", "--", "embedadmin/").splitlines(),
        "command": " ".join(["python -m tests.chat.analyst.blind", *(argv if argv is not None else sys.argv[1:])]),
        "python": platform.python_version(),
    }
    django_setup()
    from embedadmin.accounts import services as accounts
    from tests.conftest import Cast

    results = []
    with scratch_database():
        cast = Cast(accounts.account_create(name="blind", creator_mode=True))
        for name in names:
            if not (HERE / name / args.questions).exists():
                print(f"== {name}: no {args.questions}", flush=True)
                continue
            result = {**run, **run_set(name, cast, args.questions, timing=args.timing)}
            results.append(result)
            print(report(result), flush=True)
    print(f"commit {run['commit']}; analyst (last commit under embedadmin/chat/) {run['analyst_commit']}")
    if run["embedadmin_changes_not_committed"]:
        print("embedadmin/ has changes not committed:", run["embedadmin_changes_not_committed"])
    if args.json:
        if "{set}" in args.json:
            for result in results:
                _write(Path(args.json.replace("{set}", result["set"])), result)
        else:
            _write(Path(args.json), results[0] if len(results) == 1 else {"sets": results})
    return 0


def _write(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
