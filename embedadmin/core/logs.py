"""A warning that a hot path may meet on every request (a cache that is down) logged at most once an interval."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any


class ThrottledWarning:
    """Logs ``logger.warning`` (with the current traceback) at most once per ``interval_s`` per process; the
    calls in between are counted, and the next report says how many (``; N more failures since the last
    report``), so an outage is visible without flooding the log."""

    def __init__(self, logger: logging.Logger, interval_s: float = 30.0) -> None:
        self.logger = logger
        self.interval_s = interval_s
        self.logged_at = -interval_s
        self.since = 0
        self._lock = threading.Lock()

    def warn(self, message: str, *args: Any) -> None:
        now = time.monotonic()
        with self._lock:
            due = now - self.logged_at >= self.interval_s
            skipped = self.since
            if due:
                self.logged_at, self.since = now, 0
            else:
                self.since = skipped + 1
        if due:
            self.logger.warning(f"{message}; %d more failures since the last report", *args, skipped, exc_info=True)
