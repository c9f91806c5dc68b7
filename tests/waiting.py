"""Waiting for something to happen, in one place: tests wait on the condition, never for a guessed time.

``wait_until(condition, "what it is")`` polls ``condition`` until it is true and returns how long that took. The
timeout is a stop-loss for a condition that never comes, not a judgement of speed: it is generous, so that a busy
two-core machine never fails a test that waits. A test that judges speed asserts on the returned time itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable

STOP_LOSS_S = 60.0


def wait_until(
    condition: Callable[[], object], what: str = "the condition", *, timeout: float = STOP_LOSS_S, every: float = 0.01
) -> float:
    """Poll ``condition`` every ``every`` seconds until it is truthy; the seconds waited. Fails the test, naming
    ``what``, when ``timeout`` passes first."""
    started = time.monotonic()
    deadline = started + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never happened within {timeout:g} s: {what}"
        time.sleep(every)
    return time.monotonic() - started
