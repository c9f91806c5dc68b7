"""How every API writes a moment: ISO 8601 in UTC with ``Z`` (``2026-11-29T08:48:36.120000Z``)."""

from __future__ import annotations

import datetime as dt
from typing import overload


@overload
def iso_time(value: dt.datetime) -> str: ...
@overload
def iso_time(value: dt.datetime | None) -> str | None: ...


def iso_time(value: dt.datetime | None) -> str | None:
    """``value`` in UTC, ISO 8601 with ``Z``; ``None`` stays ``None``. A naive moment is taken as UTC (the database
    stores UTC)."""
    if value is None:
        return None
    moment = value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    return moment.isoformat().replace("+00:00", "Z")
