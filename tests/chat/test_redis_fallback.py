"""Redis is a fast path, not a dependency of correctness. With a Redis of the test's own (a real
``redis-server`` on a free port, stopped and started within the test): open streams outlive Redis going away
by tailing the database log, go back to Redis when it returns, and send every frame once; a message sent while
Redis is down is answered; publishing never raises and never blocks for long."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from embedadmin.chat.bus import RedisBus, bus_for_settings
from embedadmin.chat.models import Run, ThreadEvent
from tests.chat.conftest import SESSION, Gate, LiveStream, running_runs, tools_with, wait_for
from tests.waiting import wait_until

FALLBACK_POLL_SECONDS = 0.25

pytestmark = pytest.mark.django_db(transaction=True)


class OwnRedis:
    """A ``redis-server`` on a free port that a test may stop and start again (same port)."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        server = shutil.which("redis-server")
        assert server, "redis-server is needed"
        self.process = subprocess.Popen(
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self._accepts, "redis-server accepts connections", every=0.02)

    def _accepts(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
        except OSError:
            return False
        return True

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(5)
            self.process = None


@pytest.fixture
def own_redis(settings) -> Iterator[OwnRedis]:
    redis = OwnRedis()
    redis.start()
    settings.REDIS_URL = redis.url
    try:
        yield redis
    finally:
        redis.stop()


def _bus() -> RedisBus:
    bus = bus_for_settings()
    assert isinstance(bus, RedisBus)
    return bus


def test_publishing_while_redis_is_down_neither_raises_nor_waits(own_redis):
    bus = _bus()
    bus.publish("thread:1", {"kind": "event", "seq": 1})
    own_redis.stop()

    started = time.monotonic()
    for seq in range(2, 200):
        bus.publish("thread:1", {"kind": "event", "seq": seq})
    elapsed = time.monotonic() - started

    assert elapsed < 0.5
    assert bus.publish_failures >= 1
    assert not bus.publishing


def test_a_subscription_outlives_redis_and_returns_to_it(own_redis):
    bus = _bus()

    async def scenario() -> tuple[list[float], bool, dict | None]:
        loop = asyncio.get_running_loop()
        async with bus.subscribe("thread:7") as subscription:
            assert subscription.live  # type: ignore[attr-defined]
            own_redis.stop()
            # while Redis is away, "read the log" comes back every FALLBACK_POLL_SECONDS, never an error
            waits = []
            for _ in range(4):
                started = loop.time()
                assert await subscription.get(timeout=30) is None
                waits.append(loop.time() - started)
            own_redis.start()
            deadline = loop.time() + 5
            while not subscription.live and loop.time() < deadline:  # type: ignore[attr-defined]
                await subscription.get(timeout=30)
            live = subscription.live  # type: ignore[attr-defined]
            wait_until(lambda: time.monotonic() >= bus._skip_until, "the publisher's pause after a failure ends")
            bus.publish("thread:7", {"kind": "event", "seq": 9})
            note = None
            while note is None and loop.time() < deadline:
                note = await subscription.get(timeout=1)
            return waits, live, note

    own_redis_stopped_waits, live, note = asyncio.run(scenario())

    assert all(wait < FALLBACK_POLL_SECONDS + 0.5 for wait in own_redis_stopped_waits)
    assert live
    assert note == {"kind": "event", "seq": 9}


def test_subscribing_while_redis_is_down_tails_and_then_goes_live(own_redis):
    bus = _bus()
    own_redis.stop()

    async def scenario() -> tuple[bool, bool]:
        async with bus.subscribe("thread:8") as subscription:
            down = subscription.live  # type: ignore[attr-defined]
            assert await subscription.get(timeout=30) is None
            own_redis.start()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 5
            while not subscription.live and loop.time() < deadline:  # type: ignore[attr-defined]
                await subscription.get(timeout=30)
            return down, subscription.live  # type: ignore[attr-defined]

    assert asyncio.run(scenario()) == (False, True)


# What uvloop raises for an operation on a transport Redis closed meanwhile (seen in the redis_outage drill: a
# stream subscribing just as Redis came back was cut by it, and a run's subscription left its run unended).
_TRANSPORT_CLOSED = "unable to perform operation on <TCPTransport closed=True reading=False>; the handler is closed"


def test_a_transport_closed_under_a_subscription_is_redis_going_away(own_redis, monkeypatch):
    """The RuntimeError of a closed transport, wherever it comes (subscribing, reading, closing), is Redis being
    away: the subscription tails the log and goes back to Redis, and nothing raises to the stream or the run."""
    from redis.asyncio.client import PubSub

    bus = _bus()

    async def closed(*args, **kwargs):
        raise RuntimeError(_TRANSPORT_CLOSED)

    async def scenario() -> tuple[bool, bool, bool, dict | None]:
        loop = asyncio.get_running_loop()
        with monkeypatch.context() as patched:
            patched.setattr(PubSub, "subscribe", closed)
            async with bus.subscribe("thread:10") as subscription:
                live_after_failed_subscribe = subscription.live  # type: ignore[attr-defined]
        async with bus.subscribe("thread:11") as subscription:
            assert subscription.live  # type: ignore[attr-defined]
            with monkeypatch.context() as patched:
                patched.setattr(PubSub, "get_message", closed)
                patched.setattr(PubSub, "aclose", closed)
                assert await subscription.get(timeout=30) is None
                live_after_failed_read = subscription.live  # type: ignore[attr-defined]
            deadline = loop.time() + 5
            while not subscription.live and loop.time() < deadline:  # type: ignore[attr-defined]
                await subscription.get(timeout=30)
            back = subscription.live  # type: ignore[attr-defined]
            bus.publish("thread:11", {"kind": "event", "seq": 3})
            note = None
            while note is None and loop.time() < deadline:
                note = await subscription.get(timeout=1)
            with monkeypatch.context() as patched:
                patched.setattr(PubSub, "aclose", closed)
                await subscription.close()  # type: ignore[attr-defined]
        return live_after_failed_subscribe, live_after_failed_read, back, note

    assert asyncio.run(scenario()) == (False, False, True, {"kind": "event", "seq": 3})


def _swallowing_get_message(original):
    """``PubSub.get_message`` as the Redis client behaved once under the redis_outage drill: a cancellation that
    arrives during it is lost (the call returns as if nothing happened), though the task stays cancelling."""

    async def get_message(self, *args, **kwargs):
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0.3)
        return await original(self, *args, **kwargs)

    return get_message


@pytest.mark.parametrize("where", ["subscribing", "reading"])
def test_a_cancellation_the_redis_client_loses_still_stops_the_subscriber(own_redis, monkeypatch, where):
    """In the redis_outage drill a run's abort watcher, cancelled as its run ended while its subscription was being
    made (Redis had just come back), never stopped: the client had lost the cancellation, the subscription went on
    waiting 60 s at a time, and the run stayed running with a live heartbeat. A subscription honours a cancellation
    pending on its task, whatever the client did with it, within a second."""
    from redis.asyncio.client import PubSub

    bus = _bus()
    monkeypatch.setattr(PubSub, "get_message", _swallowing_get_message(PubSub.get_message))

    async def scenario() -> tuple[bool, bool, float]:
        loop = asyncio.get_running_loop()
        subscribed = asyncio.Event()

        async def watcher() -> None:
            async with bus.subscribe("thread:12") as subscription:
                subscribed.set()
                while True:
                    await subscription.get(timeout=60)

        task = asyncio.create_task(watcher())
        if where == "subscribing":
            await asyncio.sleep(0.1)  # inside the confirmation read of the subscription
            assert not subscribed.is_set()
        else:
            await subscribed.wait()
            await asyncio.sleep(0.1)  # inside the first read of get()
        cancelled_at = loop.time()
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=5)
        return bool(done), task.cancelled() if done else False, loop.time() - cancelled_at

    done, cancelled, seconds = asyncio.run(scenario())

    assert done
    assert cancelled
    assert seconds < 2.0


def _replay(chat, body: dict, chat_id: str) -> list[dict]:
    """The run's frames as the log holds them: a resend of the same message once it ended replays it."""
    replay = chat.stream({**body, "chatId": chat_id})
    assert replay.status == 200
    return replay.lines


def test_open_streams_and_resubscribes_outlive_a_redis_outage_without_losing_or_repeating_a_frame(own_redis, chat):
    runtime = chat_runtime = _runtime_of(chat)
    gate = Gate()
    chat_runtime.tools_for = lambda agent: tools_with("serviceMeta", gate)
    body = {"input": "How many orders?", "messageId": "1700000000200-message", "sessionSettings": SESSION}

    async def scenario() -> tuple[list[dict], list[dict], str]:
        first = LiveStream(await chat.apost(chat.stream_url, body))
        chat_id = (await first.next())["state"]["chatId"]
        await first.until(lambda line: line.get("toolCall") is not None)
        await wait_for(gate.entered)
        # when: Redis goes away in the middle of the run, which goes on producing frames meanwhile
        own_redis.stop()
        resubscribed = LiveStream(await chat.apost(chat.stream_url, {**body, "chatId": chat_id}))
        gate.release.set()
        await resubscribed.until(lambda line: line.get("graphPath", [""])[0] == "final", timeout=10)
        own_redis.start()
        return await first.rest(timeout=10), await resubscribed.rest(timeout=10), chat_id

    try:
        first, resubscribed, chat_id = asyncio.run(scenario())
    finally:
        gate.release.set()
        assert runtime.wait_idle(timeout=15)

    # then: both end with the closing frames of a completed run and hold every logged frame once, in order
    logged = _replay(chat, body, chat_id)
    assert [line["id"] for line in first[-2:]] == ["__state__", "__usage__"]
    assert first[1:] == logged[1:]
    assert resubscribed[1:] == logged[1:]
    run = Run.objects.get()
    assert run.status == Run.Status.COMPLETED
    assert len(logged) - 1 == ThreadEvent.objects.filter(run=run).count()
    assert any(line.get("graphPath", [""])[0] == "final" for line in logged)


def test_a_message_sent_while_redis_is_down_is_answered_and_leaves_the_thread_free(own_redis, chat):
    runtime = _runtime_of(chat)
    first = chat.ask("How many orders?")
    assert runtime.wait_idle(timeout=15)
    own_redis.stop()

    # when: a message arrives while Redis is down
    started = time.monotonic()
    during = chat.stream({"input": "And by country?", "chatId": first.chat_id, "sessionSettings": SESSION})
    elapsed = time.monotonic() - started
    assert runtime.wait_idle(timeout=15)

    # then: it is answered in full (from the log), and no run is left running
    assert during.status == 200
    assert during.ids[-2:] == ["__state__", "__usage__"]
    assert any(line.get("graphPath", [""])[0] == "final" for line in during.lines)
    assert elapsed < 5
    assert running_runs() == 0
    assert list(Run.objects.values_list("status", flat=True).order_by("pk")) == [Run.Status.COMPLETED] * 2

    # and once Redis is back the thread takes the next message at once
    own_redis.start()
    after = chat.stream({"input": "Thanks", "chatId": first.chat_id, "sessionSettings": SESSION})
    assert after.status == 200
    assert after.ids[-2:] == ["__state__", "__usage__"]


def _runtime_of(chat):
    from embedadmin.chat.runtime import get_runtime

    runtime = get_runtime()
    assert runtime.bus is _bus()
    return runtime
