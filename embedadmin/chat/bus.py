"""Notifications between the process running a chat run and the responses tailing its thread.

A run publishes each frame it appends (and abort requests are published to the run) on the thread's
channel. With ``REDIS_URL`` set the channel is Redis pub/sub, so a resubscribe or an abort reaching
another web process works; without it, an in-process fan-out serves the single process of the
embedded install. Notifications are only a fast path: the database log is the truth, and a subscriber
that sees a gap (or nothing for a while) reads the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

import redis
import redis.asyncio as aioredis
from django.conf import settings

CHANNEL_PREFIX = "embedadmin:chat:"

Notification = dict[str, Any]


def thread_channel(thread_id: int) -> str:
    return f"thread:{thread_id}"


class Subscription(Protocol):
    async def get(self, timeout: float) -> Notification | None:
        """The next notification, or None when ``timeout`` seconds pass without one."""


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
    def __init__(self, pubsub: aioredis.client.PubSub) -> None:
        self._pubsub = pubsub

    async def get(self, timeout: float) -> Notification | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            message = await self._pubsub.get_message(ignore_subscribe_messages=True, timeout=remaining)
            if message is not None and message.get("type") == "message":
                return json.loads(message["data"])


class RedisBus:
    """Redis pub/sub: every web process and worker sees every notification of a channel."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._client = redis.Redis.from_url(url)

    def publish(self, channel: str, payload: Notification) -> None:
        self._client.publish(CHANNEL_PREFIX + channel, json.dumps(payload, separators=(",", ":")))

    @asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[Subscription]:
        client = aioredis.Redis.from_url(self.url)
        pubsub = client.pubsub()
        try:
            await pubsub.subscribe(CHANNEL_PREFIX + channel)
            # Wait for the confirmation: from then on nothing published on the channel is missed.
            while (await pubsub.get_message(timeout=1.0) or {}).get("type") != "subscribe":
                pass
            yield _RedisSubscription(pubsub)
        finally:
            await pubsub.aclose()
            await client.aclose()


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
