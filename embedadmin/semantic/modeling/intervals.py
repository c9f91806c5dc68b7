"""SQL-style intervals (``"1 year 2 months"``, ``"-1 day"``, ``"7 days"``) as Cube writes them in models."""

from __future__ import annotations

import re

from embedadmin.semantic.modeling.model import Interval

_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
_UNIT_MONTHS = {"month": 1, "quarter": 3, "year": 12}
UNITS = (*_UNIT_SECONDS, *_UNIT_MONTHS)
_PART = re.compile(r"^(-?\d+)\s+([a-z]+?)s?$")


def parse_interval(text: str) -> Interval:
    """Parse ``"<n> <unit> [<n> <unit>...]"``; raises ValueError with a message fit for a model error."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"invalid interval {text!r}")
    tokens = text.strip().lower().split()
    if len(tokens) % 2:
        raise ValueError(f'invalid interval "{text}": expected "<number> <unit>" pairs')
    months = seconds = 0
    parts: list[tuple[str, int]] = []
    for index in range(0, len(tokens), 2):
        match = _PART.match(f"{tokens[index]} {tokens[index + 1]}")
        if not match or match.group(2) not in UNITS:
            raise ValueError(f'invalid interval "{text}": unknown unit "{tokens[index + 1]}"')
        amount, unit = int(match.group(1)), match.group(2)
        parts.append((unit, amount))
        if unit in _UNIT_MONTHS:
            months += amount * _UNIT_MONTHS[unit]
        else:
            seconds += amount * _UNIT_SECONDS[unit]
    return Interval(text=text, months=months, seconds=seconds, parts=tuple(parts))
