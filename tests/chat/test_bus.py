"""The in-process bus: a subscriber waiting for a notification can always be cancelled."""

import asyncio

from embedadmin.chat.bus import InProcessBus


def test_a_cancel_that_arrives_with_a_notification_is_not_lost():
    # given: subscribers waiting on a channel, each cancelled in the same moment a notification lands
    # (a run's watcher is cancelled just as its own final frame is published)
    async def race(rounds: int) -> int:
        bus = InProcessBus()
        lost = 0
        for i in range(rounds):
            async with bus.subscribe("thread:1") as subscription:
                waiting = asyncio.create_task(subscription.get(timeout=60))
                for _ in range(i % 4):
                    await asyncio.sleep(0)
                bus.publish("thread:1", {"kind": "event", "seq": i})
                for _ in range(i % 3):
                    await asyncio.sleep(0)
                if waiting.done():
                    continue
                # when: the waiter is cancelled
                waiting.cancel()
                try:
                    await waiting
                    lost += 1
                except asyncio.CancelledError:
                    pass
        return lost

    # then: every cancellation ends the wait (Python 3.11's wait_for would return the notification)
    assert asyncio.run(race(200)) == 0


def test_a_quiet_channel_times_out_with_none_and_a_published_notification_arrives():
    async def scenario():
        bus = InProcessBus()
        async with bus.subscribe("thread:2") as subscription:
            quiet = await subscription.get(timeout=0.01)
            bus.publish("thread:2", {"kind": "event", "seq": 1})
            return quiet, await subscription.get(timeout=1)

    assert asyncio.run(scenario()) == (None, {"kind": "event", "seq": 1})
