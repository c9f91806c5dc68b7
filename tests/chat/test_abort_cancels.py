"""An abort stops the statement the run's tool call is running in the data source: a ``pg_sleep`` cube of a tiny
model on PostgreSQL is gone from ``pg_stat_activity`` within 1 s of the abort, and another request waiting on the
same query is not failed by the abort: it takes the query over and gets its rows."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from embedadmin.accounts import services as accounts
from embedadmin.chat.models import Run
from embedadmin.chat.providers.base import ContentDelta
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.serving.services import semantic_cubesql
from embedadmin.semantic.sources.registry import close_data_sources
from tests.asgi_server import admin_rows, database_url_for_subprocess
from tests.chat.conftest import SESSION, LiveStream
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_MODEL = """cubes:
  - name: slow_orders
    sql: "SELECT 1 AS id, pg_sleep({seconds}) AS slept"
    measures:
      - name: count
        type: count
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
"""
SLOW_SQL = "SELECT MEASURE(count) FROM slow_orders"


class AsksTheSlowQuery:
    """An agent that writes a line, then asks ``serviceSqlApi`` the slow query."""

    async def stream(self, request):
        yield ContentDelta("Counting")
        await request.call_tool("serviceSqlApi", {"sqlQuery": SLOW_SQL})
        yield ContentDelta(" done")


@pytest.fixture
def slow_source(acme, tmp_path: Path, on_postgres):
    """Account A's deployment on a model of one cube whose read sleeps (``configure(seconds)``), on PostgreSQL."""

    def configure(seconds: float) -> str:
        """Serve the model whose read sleeps ``seconds`` (a value no other test uses: it names the statement)."""
        model = tmp_path / f"model-{seconds}"
        (model / "cubes").mkdir(parents=True)
        (model / "cubes" / "slow_orders.yml").write_text(SLOW_MODEL.format(seconds=seconds))
        url = database_url_for_subprocess()
        accounts.deployment_configure(deployment=acme.deployment, model_dir=str(model), data_source_url=url)
        return f"pg_sleep({seconds})"

    yield configure
    close_data_sources()


def _sleeping(statement: str) -> list[str]:
    """The statements running in the test database that contain ``statement``."""
    rows = admin_rows(
        "SELECT query FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' "
        "AND pid <> pg_backend_pid() AND strpos(lower(query), lower(%s)) > 0",
        [statement],
    )
    return [row[0] for row in rows]


def test_abort_cancels_the_running_statement_in_postgresql(chat, runtime, slow_source):
    name = slow_source(30.25)
    runtime.provider_for = lambda agent: AsksTheSlowQuery()

    async def scenario():
        live = LiveStream(await chat.apost(chat.stream_url, {"input": "how many?", "sessionSettings": SESSION}))
        chat_id = (await live.next())["state"]["chatId"]
        await live.until(lambda line: line.get("toolCall") is not None)
        await asyncio.to_thread(wait_until, lambda: _sleeping(name), "the statement runs", every=0.02)
        aborted_at = time.monotonic()
        aborted = await chat.apost(chat.abort_url, {"chatId": chat_id, "sessionSettings": SESSION})
        gone = await asyncio.to_thread(wait_until, lambda: not _sleeping(name), "the statement ends", every=0.02)
        lines = await live.rest(timeout=5)
        return aborted, gone, time.monotonic() - aborted_at, lines

    aborted, gone, ended, lines = asyncio.run(scenario())
    assert runtime.wait_idle(timeout=5), "the tool call's thread still waits on its statement"

    assert aborted.status_code == 204
    assert gone < 1.0, f"the statement ran on {gone:.2f} s after the abort"
    assert ended < 5
    assert [line["id"] for line in lines][-3:] == ["__state__", "__aborted__", "__usage__"]
    assert Run.objects.get().status == "aborted"


def test_a_request_waiting_on_the_aborted_query_takes_it_over(chat, runtime, slow_source, acme):
    """The chat run started the query and another caller waits on it (same query, same context): the abort stops
    the chat's statement, and the other caller runs the query itself and gets its row."""
    name = slow_source(2.25)
    runtime.provider_for = lambda agent: AsksTheSlowQuery()
    other: dict[str, object] = {}

    def waiting_caller(ctx: QueryContext) -> None:
        try:
            other["rows"] = semantic_cubesql(deployment=acme.deployment, ctx=ctx, sql=SLOW_SQL).rows
        except Exception as exc:
            other["error"] = exc

    async def scenario():
        live = LiveStream(await chat.apost(chat.stream_url, {"input": "how many?", "sessionSettings": SESSION}))
        chat_id = (await live.next())["state"]["chatId"]
        await live.until(lambda line: line.get("toolCall") is not None)
        await asyncio.to_thread(wait_until, lambda: _sleeping(name), "the statement runs", every=0.02)
        run = await asyncio.to_thread(lambda: Run.objects.get())
        context = run.query_context
        ctx = QueryContext(
            security_context=context.get("securityContext") or {},
            groups=list(context.get("groups") or []),
            user_attributes=context.get("userAttributes") or {},
        )
        caller = threading.Thread(target=waiting_caller, args=(ctx,))
        caller.start()
        await asyncio.sleep(0.3)  # it waits on the chat's job
        await chat.apost(chat.abort_url, {"chatId": chat_id, "sessionSettings": SESSION})
        await live.rest(timeout=5)
        await asyncio.to_thread(caller.join, 15)

    asyncio.run(scenario())
    assert runtime.wait_idle(timeout=5)

    assert "error" not in other, other.get("error")
    assert other["rows"] is not None
    assert Run.objects.get().status == "aborted"
