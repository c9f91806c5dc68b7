"""A chat run's lease runs on the database's clock (issue 24): its heartbeat is written as the database's now, and
whether it is stale is judged by the database, so an application server whose clock runs ahead cannot take a live
run for dead (and fail it, or start another in its thread), and one whose clock runs behind still recovers a run
whose process died. On SQLite and PostgreSQL alike."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.db.models import Q
from django.utils import timezone

from embedadmin.chat import selectors, services
from embedadmin.chat.models import Run, ThreadEvent
from embedadmin.chat.services import runs, users
from tests.chat.conftest import SESSION
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

SKEW = dt.timedelta(seconds=60)


def _running_run(chat) -> tuple[str, Run]:
    """A thread whose second run is running, its heartbeat just written by the database (no process executes it:
    only the clocks decide whether it is alive)."""
    first = chat.ask()
    run = Run.objects.create(
        thread=Run.objects.get().thread,
        message_id="1700000000019-message",
        input="still thinking",
        first_seq=11,
        heartbeat_at=timezone.now() - dt.timedelta(days=1),  # overwritten below, by the database's clock
        started_at=timezone.now(),
        worker="elsewhere:1",
    )
    assert services.run_heartbeat(run=run) is False  # alive, no abort requested
    return first.chat_id, run


def _server_clock(monkeypatch, offset: dt.timedelta) -> None:
    """This application server's clock, ``offset`` away from the database's."""
    real_now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real_now() + offset)


def _until_the_database_finds_it_stale(run: Run) -> None:
    """Wait until the run's heartbeat is older than the lease by the database's clock (real time: the test cannot
    move the database's clock, only this server's)."""
    wait_until(
        lambda: run.pk in {pk for pk, _ in selectors.stale_runs(stale_after=runs.STALE_AFTER)},
        "the database finds the run's heartbeat stale",
        every=0.1,
    )


def _seconds_past(moment: dt.datetime) -> float:
    """How long ago ``moment`` was by this server's clock."""
    return (timezone.now() - moment).total_seconds()


def test_a_live_run_is_not_stale_when_this_servers_clock_runs_a_minute_ahead(chat, monkeypatch):
    # given: a run whose heartbeat the database wrote just now, a lease of 30 s, and this server a minute ahead
    monkeypatch.setattr(runs, "STALE_AFTER", dt.timedelta(seconds=30))
    chat_id, run = _running_run(chat)
    _server_clock(monkeypatch, SKEW)
    run.refresh_from_db()
    assert _seconds_past(run.heartbeat_at) >= 59  # by this server's clock, twice the lease ago

    # when: everything that could take it for dead looks at it
    failed_by_sweep = services.runs_fail_stale()
    failed_directly = services.run_fail_if_stale(run_id=run.pk, thread_id=run.thread_id)
    another_message = chat.stream({"input": "hi", "chatId": chat_id, "sessionSettings": SESSION})
    resubscribe = chat.stream({"chatId": chat_id, "sessionSettings": SESSION})
    status, heartbeat = selectors.run_health(run_id=run.pk)
    looks_stale = services.heartbeat_stale(heartbeat, timezone.now())  # a tailing response's poll

    # then: it is alive
    assert (failed_by_sweep, failed_directly, looks_stale) == (0, False, False)
    assert another_message.status == 409
    assert another_message.lines == [{"error": "Streaming for thread is in progress"}]
    assert resubscribe.lines[0]["state"]["isStreaming"] is True
    run.refresh_from_db()
    assert (status, run.status, run.finished_at) == ("running", "running", None)
    assert not ThreadEvent.objects.filter(run=run).exists()


def test_an_abort_does_not_end_a_live_run_when_this_servers_clock_runs_ahead(chat, monkeypatch):
    # given
    monkeypatch.setattr(runs, "STALE_AFTER", dt.timedelta(seconds=30))
    chat_id, run = _running_run(chat)
    _server_clock(monkeypatch, SKEW)

    # when
    response = chat.abort({"chatId": chat_id, "sessionSettings": SESSION})

    # then: the abort is asked of its process (recorded and published), which ends it; it is not ended here
    assert response.status == 204
    run.refresh_from_db()
    assert (run.status, run.abort_requested) == ("running", True)


def test_a_run_is_stale_once_the_databases_time_passes_the_limit_whatever_this_servers_clock(chat, monkeypatch):
    # given: a lease of 1 s, a heartbeat the database wrote, and this server's clock a minute behind (by it, the
    # heartbeat is a minute in the future)
    monkeypatch.setattr(runs, "STALE_AFTER", dt.timedelta(seconds=1))
    chat_id, run = _running_run(chat)
    _server_clock(monkeypatch, -SKEW)
    assert services.runs_fail_stale() == 0

    # when: the database's time passes the limit
    _until_the_database_finds_it_stale(run)
    status, heartbeat = selectors.run_health(run_id=run.pk)
    looks_stale = services.heartbeat_stale(heartbeat, timezone.now())
    failed = services.runs_fail_stale()

    # then: it is failed, with its error frame, and the thread takes messages again
    assert (status, looks_stale, failed) == ("running", True, 1)
    run.refresh_from_db()
    assert run.status == "failed"
    terminal = list(ThreadEvent.objects.filter(run=run).order_by("seq").values_list("message", flat=True))
    assert [frame["id"] for frame in terminal] == ["__state__", "__error__", "__usage__"]
    assert terminal[1]["error"] == "The agent stopped unexpectedly; send the message again"
    assert chat.stream({"input": "hi", "chatId": chat_id, "sessionSettings": SESSION}).status == 200


def test_a_new_message_takes_over_a_thread_whose_run_the_database_finds_stale(chat, monkeypatch):
    # given: a lease of 1 s passed by the database's clock, this server's clock a minute behind
    monkeypatch.setattr(runs, "STALE_AFTER", dt.timedelta(seconds=1))
    chat_id, run = _running_run(chat)
    _server_clock(monkeypatch, -SKEW)
    _until_the_database_finds_it_stale(run)

    # when
    result = chat.stream({"input": "hi", "chatId": chat_id, "sessionSettings": SESSION})

    # then
    assert result.status == 200
    assert result.ids[-1] == "__usage__"
    run.refresh_from_db()
    assert run.status == "failed"


def test_every_moment_of_a_run_is_the_databases_time(chat, monkeypatch):
    # given: this server's clock an hour ahead
    _server_clock(monkeypatch, dt.timedelta(hours=1))

    # when
    done = chat.ask()

    # then: started, heartbeat and finished are the database's (an hour before this server's clock)
    run = Run.objects.get(thread__chat_id=done.chat_id)
    assert run.status == "completed"
    for moment in (run.started_at, run.heartbeat_at, run.finished_at):
        assert 3500 <= _seconds_past(moment) <= 3700, (moment, timezone.now())
    assert run.started_at <= run.heartbeat_at <= run.finished_at


def test_expiring_a_user_waits_for_a_live_run_whatever_this_servers_clock(chat, monkeypatch):
    """Before deleting a user whose run is live, expiry gives the run a moment to end: a run the database finds
    alive is waited for even when this server's clock, a minute ahead, would call its heartbeat stale."""
    # given: a live run (heartbeat by the database just now), a lease of 30 s, this server a minute ahead
    monkeypatch.setattr(runs, "STALE_AFTER", dt.timedelta(seconds=30))
    monkeypatch.setattr(users, "EXPIRY_STREAMS_GRACE_SECONDS", 0.0)
    _chat_id, run = _running_run(chat)
    _server_clock(monkeypatch, SKEW)

    # when: its runs are stopped with a grace of 0.5 s (no process executes it, so it never ends)
    started = time.monotonic()
    users._runs_stop(Q(pk=run.pk), wait_seconds=0.5)
    waited = time.monotonic() - started

    # then: the abort is recorded and the live run was waited for, its full grace
    run.refresh_from_db()
    assert run.abort_requested
    assert waited >= 0.5
