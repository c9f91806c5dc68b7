"""Notifications between the process running a chat run and the responses tailing its thread.

A run publishes each frame it appends (and abort requests are published to the run) on the thread's
channel. With ``REDIS_URL`` set the channel is Redis pub/sub, so a resubscribe or an abort reaching
another web process works; without it, an in-process fan-out serves the single process of the
embedded install. Notifications are only a fast path: the database log is the truth, and a subscriber
that sees a gap (or nothing for a while) reads the log. Redis being away is no error: a publish that
fails is dropped, and a subscription whose connection is lost answers "read the log" every
``FALLBACK_POLL_SECONDS`` until it has subscribed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

import redis
import redis.asyncio as aioredis
from django.conf import settings
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry as SyncRetry

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "embedadmin:chat:"
# While Redis is away: how often a subscriber answers (its caller reads the database log), and how often
# publishers and subscribers try Redis again; once back, how long a subscriber keeps reading the log often.
FALLBACK_POLL_SECONDS = 0.25
RETRY_SECONDS = 0.5
GRACE_SECONDS = 1.5
CONNECT_TIMEOUT_SECONDS = 1.0
# The longest single read of a live subscription (a read that times out sends nothing to Redis): a cancellation the
# client lost is honoured within it (see _honour_cancellation).
READ_SLICE_SECONDS = 1.0
# One retry without backoff (a pooled connection found dead after a restart), never redis-py's default of
# three retries with exponential backoff, which held every frame of a run for seconds while Redis was down.
_SYNC_OPTIONS: dict[str, Any] = {
    "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS,
    "socket_timeout": 5.0,
    "retry": SyncRetry(NoBackoff(), 1),
}
_ASYNC_OPTIONS: dict[str, Any] = {
    "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS,
    "retry": AsyncRetry(NoBackoff(), 0),  # a lost pub/sub connection is ours to notice and redo
}

Notification = dict[str, Any]

# What a Redis connection going away raises. Besides redis-py's errors and the socket's: under uvloop, an
# operation on a transport closed meanwhile (Redis stopped as a subscription was being made, read or closed)
# raises RuntimeError ("unable to perform operation on <TCPTransport closed=True>"); it means the same.
_CONNECTION_LOST = (RedisError, OSError, TimeoutError, RuntimeError)


def _honour_cancellation() -> None:
    """Raise ``CancelledError`` when the current task was asked to stop and the request is still pending.

    redis-py's asyncio client can lose a cancellation: under the redis_outage drill, a run's abort watcher cancelled
    while its subscription was being made (Redis just back) saw the subscription complete as if nothing had
    happened, its task still ``cancelling()``, and went on reading 60 s at a time, so the run never ended. Which of
    the client's handlers drops it was not found; a subscription therefore asks before each wait and after
    subscribing, so a lost cancellation costs at most one ``READ_SLICE_SECONDS`` read."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def thread_channel(thread_id: int) -> str:
    return f"thread:{thread_id}"


class Subscription(Protocol):
    async def get(self, timeout: float) -> Notification | None:
        """The next notification, or None when ``timeout`` seconds pass without one, or sooner when
        notifications may have been missed (the bus is away): the caller then reads the log."""


class EventBus(Protocol):
    def publish(self, channel: str, payload: Notification) -> None:
        """Send to every current subscriber of ``channel``; callable from any thread."""

    def subscribe(self, channel: str) -> AbstractAsyncContextManager[Subscription]:
        """Receive what is published on ``channel`` from the moment the context is entered."""


class _LocalSubscription:
    """A queue on the subscriber's event loop, fed from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[Notification] = asyncio.Queue()

    def deliver(self, payload: Notification) -> None:
        with contextlib.suppress(RuntimeError):  # the subscriber's loop has closed
            self._loop.call_soon_threadsafe(self._queue.put_nowait, payload)

    async def get(self, timeout: float) -> Notification | None:
        # Not asyncio.wait_for: on Python 3.11 it swallows a cancellation that arrives together with an
        # item (the item is returned instead), and a run's watcher, cancelled as its own final frame
        # lands, would then wait forever and the run would never end.
        try:
            async with asyncio.timeout(timeout):
                return await self._queue.get()
        except TimeoutError:
            return None


class InProcessBus:
    """Fan-out within one process (the embedded install)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: dict[str, set[_LocalSubscription]] = {}

    def publish(self, channel: str, payload: Notification) -> None:
        with self._lock:
            subscribers = list(self._subscribers.get(channel, ()))
        for subscriber in subscribers:
            subscriber.deliver(payload)

    @asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[Subscription]:
        subscription = _LocalSubscription(asyncio.get_running_loop())
        with self._lock:
            self._subscribers.setdefault(channel, set()).add(subscription)
        try:
            yield subscription
        finally:
            with self._lock:
                subscribers = self._subscribers.get(channel, set())
                subscribers.discard(subscription)
                if not subscribers:
                    self._subscribers.pop(channel, None)


class _RedisSubscription:
    """A subscription that outlives Redis: while its connection is away it answers None at least every
    ``FALLBACK_POLL_SECONDS`` (the caller reads the database log), tries to subscribe again every
    ``RETRY_SECONDS``, and after it is back keeps answering early for ``GRACE_SECONDS`` (publishers may still
    be skipping Redis, and what was published while it was away is only in the log)."""

    def __init__(self, bus: RedisBus, channel: str) -> None:
        self._bus = bus
        self._channel = CHANNEL_PREFIX + channel
        self._client: aioredis.Redis | None = None
        self._pubsub: aioredis.client.PubSub | None = None
        self._next_attempt = 0.0
        self._grace_until = 0.0
        self._down_since: float | None = None

    @property
    def live(self) -> bool:
        """Whether notifications arrive through Redis now (False: the caller is on the database log)."""
        return self._pubsub is not None

    async def open(self) -> None:
        if not await self._connect():
            self._fell_back(asyncio.get_running_loop().time(), "could not subscribe")

    async def _connect(self) -> bool:
        client = aioredis.Redis.from_url(self._bus.url, **_ASYNC_OPTIONS)
        pubsub = client.pubsub()
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_SECONDS):
                await pubsub.subscribe(self._channel)
                # Wait for the confirmation: from then on nothing published on the channel is missed.
                while (await pubsub.get_message(timeout=CONNECT_TIMEOUT_SECONDS) or {}).get("type") != "subscribe":
                    pass
        except _CONNECTION_LOST:
            await _close_quietly(pubsub, client)
            return False
        self._client, self._pubsub = client, pubsub  # closed by close(), also when the next line raises
        _honour_cancellation()
        return True

    def _fell_back(self, now: float, why: str) -> None:
        self._next_attempt = now + RETRY_SECONDS
        if self._down_since is None:
            self._down_since = now
            self._bus.subscriptions_fell_back += 1
            # INFO: one line per subscription; the publisher's WARNING says once per process that Redis is away.
            logger.info("chat bus: %s %s; tailing the database log until Redis is back", why, self._channel)

    def _back_from_log(self, now: float) -> float:
        """End a stretch on the database log: its seconds, added to the bus's ``fallback_seconds``."""
        assert self._down_since is not None
        fallback = now - self._down_since
        self._bus.fallback_seconds += fallback
        self._down_since = None
        return fallback

    async def _drop(self, now: float) -> None:
        pubsub, client = self._pubsub, self._client
        self._pubsub = self._client = None
        if pubsub is not None and client is not None:
            await _close_quietly(pubsub, client)
        self._fell_back(now, "lost the Redis connection of")

    async def get(self, timeout: float) -> Notification | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            _honour_cancellation()
            now = loop.time()
            remaining = deadline - now
            if remaining <= 0:
                return None
            if self._pubsub is None:
                if now >= self._next_attempt:
                    if await self._connect():
                        fallback = self._back_from_log(loop.time())
                        self._grace_until = loop.time() + GRACE_SECONDS
                        logger.info(
                            "chat bus: %s is back on Redis after %.2f s on the database log", self._channel, fallback
                        )
                        return None  # what was published meanwhile is only in the log: read it
                    self._fell_back(loop.time(), "could not subscribe")
                await asyncio.sleep(min(remaining, FALLBACK_POLL_SECONDS))
                return None
            early = now < self._grace_until
            wait = min(remaining, FALLBACK_POLL_SECONDS if early else READ_SLICE_SECONDS)
            try:
                message = await self._pubsub.get_message(ignore_subscribe_messages=True, timeout=wait)
            except _CONNECTION_LOST:
                await self._drop(loop.time())
                return None
            if message is not None and message.get("type") == "message":
                return dict(json.loads(message["data"]))
            if early and loop.time() - now >= wait:
                return None

    async def close(self) -> None:
        if self._pubsub is not None and self._client is not None:
            await _close_quietly(self._pubsub, self._client)
        self._pubsub = self._client = None
        if self._down_since is not None:
            fallback = self._back_from_log(asyncio.get_running_loop().time())
            logger.info("chat bus: %s ended after %.2f s on the database log", self._channel, fallback)


async def _close_quietly(pubsub: aioredis.client.PubSub, client: aioredis.Redis) -> None:
    with contextlib.suppress(*_CONNECTION_LOST):
        async with asyncio.timeout(CONNECT_TIMEOUT_SECONDS):
            await pubsub.aclose()
    with contextlib.suppress(*_CONNECTION_LOST):
        async with asyncio.timeout(CONNECT_TIMEOUT_SECONDS):
            await client.aclose()


class RedisBus:
    """Redis pub/sub: every web process and worker sees every notification of a channel.

    Redis is only a fast path. A publish that fails is logged and dropped (the frame is in the log already),
    and publishing is skipped for ``RETRY_SECONDS`` before Redis is tried again; a subscription whose
    connection is away tails the log (see :class:`_RedisSubscription`). Nothing here raises because Redis is
    down.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self._client = redis.Redis.from_url(url, **_SYNC_OPTIONS)
        self._lock = threading.Lock()
        self._skip_until = 0.0
        self._down_since: float | None = None
        # Figures of this process (logged, and read by tests and drills).
        self.publish_failures = 0
        self.subscriptions_fell_back = 0
        self.fallback_seconds = 0.0

    @property
    def publishing(self) -> bool:
        """False while publishes are skipped after a failure."""
        return self._down_since is None

    def publish(self, channel: str, payload: Notification) -> None:
        now = time.monotonic()
        if now < self._skip_until:
            return
        try:
            self._client.publish(CHANNEL_PREFIX + channel, json.dumps(payload, separators=(",", ":")))
        except (RedisError, OSError) as exc:
            with self._lock:
                self.publish_failures += 1
                self._skip_until = time.monotonic() + RETRY_SECONDS
                first = self._down_since is None
                if first:
                    self._down_since = now
            if first:
                logger.warning("chat bus: Redis publish failed (%s); subscribers read the database log", exc)
            return
        if self._down_since is not None:
            with self._lock:
                down_since, self._down_since = self._down_since, None
            if down_since is not None:
                logger.warning("chat bus: publishing on Redis again after %.2f s", now - down_since)

    @asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[Subscription]:
        subscription = _RedisSubscription(self, channel)
        try:
            await subscription.open()
            yield subscription
        finally:
            await subscription.close()


_buses: dict[str, EventBus] = {}
_buses_lock = threading.Lock()


def bus_for_settings() -> EventBus:
    """The process's bus: Redis when ``REDIS_URL`` is set, in-process otherwise (one per URL)."""
    url = settings.REDIS_URL
    with _buses_lock:
        bus = _buses.get(url)
        if bus is None:
            bus = _buses[url] = RedisBus(url) if url else InProcessBus()
        return bus
