"""The built-in analyst's question suites (``suites/*.yml``), each run on DuckDB and on PostgreSQL.

Every question goes through the provider as a chat turn does: ``serviceMeta`` and ``serviceSqlApi`` called through
the real tools on a real deployment, values looked up in the data with the viewer's policies, follow-ups with the
thread's earlier questions as history, the suite's fixed clock. The SQL it runs is read back into a Cube query and
compared with the case's expected query; a case with ``check`` SQL also has its numbers compared with that SQL run
directly on the raw tables. The test fails on any wrong answer and when fewer than 90% of the answerable questions
are answered right; declines are counted and listed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import connection

from demo.generate import load_postgres
from embedadmin.accounts.services import deployment_configure, duckdb_url
from embedadmin.chat.providers.base import CancelToken, ContentDelta, ProviderRequest
from embedadmin.chat.providers.builtin import analyst_stream
from embedadmin.chat.tools import ToolContext, date_always_set, default_tools, dimension_values
from embedadmin.semantic import load_model
from embedadmin.semantic.context import QueryContext
from tests.asgi_server import database_url_for_subprocess
from tests.chat.analyst import suite as suites
from tests.chat.analyst.clinic import dataset as clinic
from tests.conftest import Cast
from tests.schemas import qualified_model
from tests.semantic.http_support import DEMO_MODEL, demo_duckdb, duck_rows, fresh_semantic_state

__all__ = ["demo_duckdb", "fresh_semantic_state"]  # fixtures

pytestmark = pytest.mark.django_db(transaction=True)

TARGET = 0.9  # of the answerable questions, answered right
VIEWER = QueryContext(groups=["admin"])


@dataclass(frozen=True)
class Data:
    """A suite's dataset on one database: its model directory, data source URL and a raw SQL runner."""

    suite: str
    model: Path
    url: str
    run: Callable[[str], list[tuple[Any, ...]]]
    dialect: str


@dataclass(frozen=True)
class Turn:
    """What the analyst did with one question: the SQL it ran (None: it declined), its rows, its words."""

    sql: str | None
    rows: list[list[Any]]
    total_rows: int
    answer: str


@pytest.fixture(scope="session")
def clinic_duckdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("clinic") / "clinic.duckdb"
    clinic.write_duckdb(path)
    return path


@pytest.fixture(scope="module")
def postgres_url(django_db_setup: None, django_db_blocker: Any) -> str:
    with django_db_blocker.unblock():
        assert connection.vendor == "postgresql", "this test needs PostgreSQL (TEST_DATABASE_URL)"
        return database_url_for_subprocess()


@pytest.fixture(scope="module")
def postgres_schemas(postgres_url: str, demo_duckdb: Path, clinic_duckdb: Path) -> Iterator[dict[str, str]]:
    """The demo and clinic datasets, each in a schema of the test database (dropped afterwards)."""
    schemas = {"demo": f"demo_{uuid.uuid4().hex[:10]}", "clinic": f"clinic_{uuid.uuid4().hex[:10]}"}
    load_postgres(demo_duckdb, postgres_url, schema=schemas["demo"])
    clinic_tables = {"tables": clinic.TABLES, "foreign_keys": clinic.FOREIGN_KEYS}
    load_postgres(clinic_duckdb, postgres_url, schema=schemas["clinic"], **clinic_tables)
    yield schemas
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        for schema in schemas.values():
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


MODELS = {"demo": DEMO_MODEL, "clinic": clinic.MODEL}


@pytest.fixture
def data(request: pytest.FixtureRequest, tmp_path: Path) -> Data:
    name, database = request.param
    if database == "duckdb":
        path = request.getfixturevalue("demo_duckdb" if name == "demo" else "clinic_duckdb")
        return Data(name, MODELS[name], duckdb_url(path), lambda sql: duck_rows(path, sql.format(t="")), "duckdb")
    url = request.getfixturevalue("postgres_url")
    schema = request.getfixturevalue("postgres_schemas")[name]
    model = qualified_model(MODELS[name], tmp_path / "model", schema)

    def run(sql: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(url, options="-c TimeZone=UTC") as pg:
            return pg.execute(sql.format(t=f'"{schema}".')).fetchall()

    return Data(name, model, url, run, "postgres")


def ask(context: ToolContext, suite: suites.Suite, question: str, history: list[str]) -> Turn:
    """One chat turn of the built-in analyst, through the real tools, on the suite's clock."""
    tools = default_tools()
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    async def call_tool(name: str, arguments: dict[str, Any]) -> str:
        result = await sync_to_async(tools.call)(context, name, arguments)
        calls.append((name, arguments, json.loads(result)))
        return result

    async def lookup(cube: str, dimension: str, candidates: Any) -> list[str]:
        return await sync_to_async(dimension_values)(context, cube, dimension, candidates)

    async def dates_set(cube: str, measure: str, dimension: str, zero_is_none: bool) -> bool:
        return await sync_to_async(date_always_set)(context, cube, measure, dimension, zero_is_none=zero_is_none)

    async def search(words: str) -> dict[str, Any]:
        return dict(json.loads(await sync_to_async(tools.call)(context, "serviceMeta", {"searchQuery": words})))

    async def turn() -> str:
        request = ProviderRequest(
            question=question,
            history=[{"role": "user", "content": before} for before in history],
            tool_specs=tools.specs(),
            call_tool=call_tool,
            cancel=CancelToken(),
            timezone=suite.timezone,
            lookup_values=lookup,
            dates_always_set=dates_set,
            search_model=search,
        )
        parts = [e.text async for e in analyst_stream(request, now=suite.now) if isinstance(e, ContentDelta)]
        return "".join(parts)

    answer = async_to_sync(turn)()
    ran = [(arguments, result) for name, arguments, result in calls if name == "serviceSqlApi"]
    if not ran:
        return Turn(None, [], 0, answer)
    [(arguments, result)] = ran
    assert "error" not in result, f"{question}: {result.get('error')}"
    return Turn(arguments["sqlQuery"], result["data"], result["totalRows"], answer)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(("demo", "duckdb"), id="demo-duckdb"),
        pytest.param(("demo", "postgres"), id="demo-postgres", marks=pytest.mark.postgres),
        pytest.param(("clinic", "duckdb"), id="clinic-duckdb"),
        pytest.param(("clinic", "postgres"), id="clinic-postgres", marks=pytest.mark.postgres),
    ],
    indirect=True,
)
def test_the_analyst_answers_its_suite_right_or_declines(acme: Cast, data: Data, fresh_semantic_state: None):
    # given
    suite = suites.load(data.suite)
    deployment_configure(deployment=acme.deployment, model_dir=str(data.model), data_source_url=data.url)
    context = ToolContext(account_id=acme.account.pk, deployment_id=acme.deployment.pk, query_context=VIEWER)
    model = load_model(data.model, dialect=data.dialect).require()

    # when
    verdicts: list[tuple[suites.Case, suites.Verdict]] = []
    for case in suite.cases:
        turn = ask(context, suite, case.question, list(case.after))
        verdict = suites.judge(case, suite, model, turn.sql, suites.decline_reason(turn.answer))
        if verdict.outcome == "right" and case.check:
            assert turn.total_rows <= len(turn.rows), f"{case.question}: the check needs every row in the result"
            ordered = "ranking" in case.spec or "grain" in case.spec
            if not suites.rows_equal(turn.rows, data.run(case.check), ordered=ordered):
                detail = f"rows {turn.rows[:5]} differ from the check's {data.run(case.check)[:5]}"
                verdict = suites.Verdict("wrong", detail, verdict.query)
        verdicts.append((case, verdict))

    # then
    wrong = [f"{case.question}: {v.detail}" for case, v in verdicts if v.outcome == "wrong"]
    declined = [f"{case.question}: {v.detail}" for case, v in verdicts if v.outcome == "declined"]
    answerable = [v for case, v in verdicts if not case.declines]
    right = sum(v.outcome == "right" for v in answerable)
    assert wrong == [], "wrong answers:\n" + "\n".join(wrong)
    assert right >= TARGET * len(answerable), f"{right}/{len(answerable)} right; declined:\n" + "\n".join(declined)
    assert all(v.outcome == "right" for case, v in verdicts if case.declines)
