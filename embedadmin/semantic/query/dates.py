"""Time zones and date ranges as Cube's gateway reads them (``date-parser.js``, ``resolveDateRange``).

Ranges come out as two local timestamps in the query time zone, ``YYYY-MM-DDTHH:mm:ss.SSS`` without a zone;
a bare date starts at ``T00:00:00.000`` and ends at ``T23:59:59.999``. Relative phrases:

- ``today``, ``yesterday``, ``tomorrow``;
- ``this|last|next <unit>`` (units second..year; weeks are ISO weeks starting Monday);
- ``last N <units>`` (the N whole units before the current one) and ``next N <units>`` (the N after it);
- ``from <point> to <point>``, where a point is ``now``, ``today``, ``yesterday``, ``tomorrow``,
  ``N <units> ago``, ``N <units> from now``, ``in N <units>`` or an ISO date/date-time; the range is widened
  to whole days, or whole hours/minutes/seconds when the phrase names that unit;
- a single point alone (``3 days ago``, ``2024-05-01``) is that whole day (or unit).

Unlike Cube, ``from 7 days ago to today`` is read as written (Cube's parser matches ``today`` first).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from dateutil.relativedelta import relativedelta

from embedadmin.semantic.errors import QueryError

UNITS = ("second", "minute", "hour", "day", "week", "month", "quarter", "year")
# The relative ranges a person picks a date range from (a dashboard's date range control, the panel's report builder
# and dashboard editor), in the order they are offered, each with its label: phrases this parser reads, so a range
# picked is a range the Core Data API resolves. The pages get them from the server, never a list of their own.
DATE_RANGE_PRESETS: tuple[tuple[str, str], ...] = (
    ("today", "Today"),
    ("yesterday", "Yesterday"),
    ("this week", "This week"),
    ("last week", "Last week"),
    ("last 7 days", "Last 7 days"),
    ("last 30 days", "Last 30 days"),
    ("last 90 days", "Last 90 days"),
    ("this month", "This month"),
    ("last month", "Last month"),
    ("this quarter", "This quarter"),
    ("last quarter", "Last quarter"),
    ("last 12 months", "Last 12 months"),
    ("this year", "This year"),
    ("last year", "Last year"),
)
UTC_ZONE = ZoneInfo("UTC")
_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UNIT_PATTERN = "|".join(UNITS)
_THIS_LAST_NEXT = re.compile(rf"(this|last|next)\s+({_UNIT_PATTERN})")
_LAST_NEXT_N = re.compile(rf"(last|next)\s+(\d+)\s+({_UNIT_PATTERN})")
_FROM_TO = re.compile(r"^from\s+(.{1,50}?)\s+to\s+(.{1,50})$")
_AGO = re.compile(rf"^(\d+|an?)\s+({_UNIT_PATTERN})s?\s+ago$")
_FROM_NOW = re.compile(rf"^(?:(\d+|an?)\s+({_UNIT_PATTERN})s?\s+from\s+now|in\s+(\d+|an?)\s+({_UNIT_PATTERN})s?)$")


@lru_cache(maxsize=1)
def _zones_by_lower_name() -> dict[str, str]:
    return {name.lower(): name for name in available_timezones()}


def resolve_timezone(name: object) -> ZoneInfo:
    """The IANA zone ``name`` (case-insensitive); QueryError with Cube's message otherwise."""
    if not isinstance(name, str):
        raise QueryError(f'"timezone" must be a valid IANA time zone, got "{name}"')
    return _zone(name)


@lru_cache(maxsize=512)
def _zone(name: str) -> ZoneInfo:
    canonical = _zones_by_lower_name().get(name.lower())
    if canonical is None:
        raise QueryError(f'"timezone" must be a valid IANA time zone, got "{name}"')
    try:
        return ZoneInfo(canonical)
    except (ZoneInfoNotFoundError, ValueError):
        raise QueryError(f'"timezone" must be a valid IANA time zone, got "{name}"') from None


def canonical_timezone(name: object) -> str:
    return str(resolve_timezone(name).key)


def format_local(moment: datetime) -> str:
    """``YYYY-MM-DDTHH:mm:ss.SSS`` (milliseconds truncated, no zone; the year always has four digits)."""
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}"


class DateOutOfRange(ValueError):
    """A date that exists but that a computation on it (a time zone, a range's end) carries beyond the years
    1-9999."""


def out_of_range(value: str) -> QueryError:
    return QueryError(f"Date out of range: '{value}'")


def local_now(now: datetime | None, zone: ZoneInfo) -> datetime:
    """``now`` (default: the current instant) as a naive wall-clock time in ``zone``."""
    instant = now if now is not None else datetime.now(UTC)
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return instant.astimezone(zone).replace(tzinfo=None)


def local_to_utc(local: str, zone: ZoneInfo) -> datetime:
    """A local timestamp of the query time zone as an aware UTC instant (DST-correct)."""
    moment = parse_local(local, zone)
    try:
        return moment.replace(tzinfo=zone).astimezone(UTC)
    except OverflowError:
        raise out_of_range(local) from None


def parse_local(value: str, zone: ZoneInfo | None = None) -> datetime:
    """A ``YYYY-MM-DD[THH:mm[:ss[.SSS]]]`` string as a naive local datetime; ValueError otherwise.

    A timestamp with a zone (``Z``, ``+02:00``) is converted to ``zone``; without ``zone`` it is refused.
    """
    text = value.strip().replace(" ", "T", 1)
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is not None:
        if zone is None:
            raise ValueError(value)
        try:
            moment = moment.astimezone(zone).replace(tzinfo=None)
        except OverflowError:
            raise DateOutOfRange(value) from None
    return moment


def start_of(moment: datetime, unit: str) -> datetime:
    if unit == "second":
        return moment.replace(microsecond=0)
    if unit == "minute":
        return moment.replace(second=0, microsecond=0)
    if unit == "hour":
        return moment.replace(minute=0, second=0, microsecond=0)
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "day":
        return day
    if unit == "week":
        return day - timedelta(days=day.weekday())
    if unit == "month":
        return day.replace(day=1)
    if unit == "quarter":
        return day.replace(day=1, month=(day.month - 1) // 3 * 3 + 1)
    return day.replace(day=1, month=1)


def end_of(moment: datetime, unit: str) -> datetime:
    return start_of(moment, unit) + unit_delta(unit, 1) - timedelta(milliseconds=1)


def unit_delta(unit: str, amount: int) -> relativedelta:
    if unit == "quarter":
        return relativedelta(months=3 * amount)
    if unit == "week":
        return relativedelta(weeks=amount)
    units: dict[str, Any] = {f"{unit}s": amount}
    return relativedelta(**units)


def _range(start: datetime, end: datetime) -> tuple[str, str]:
    return format_local(start), format_local(end)


def parse_relative_range(phrase: str, zone: ZoneInfo, now: datetime | None) -> tuple[str, str]:
    """A relative (or single absolute) date phrase as a local range; QueryError when unreadable, or when it
    reaches beyond the years 1-9999 ("last 10000 years")."""
    try:
        return _relative_range(phrase, zone, now)
    except (OverflowError, ValueError):  # datetime and relativedelta arithmetic beyond their range
        raise out_of_range(phrase) from None


def _relative_range(phrase: str, zone: ZoneInfo, now: datetime | None) -> tuple[str, str]:
    text = phrase.strip().lower()
    current = local_now(now, zone)
    match = _FROM_TO.match(text)
    if match:
        unit = next((u for u in ("second", "minute", "hour") if u in text), "day")
        start = _point(match.group(1).strip(), current, phrase, zone)
        end = _point(match.group(2).strip(), current, phrase, zone)
        return _range(start_of(start, unit), end_of(end, unit))
    match = _THIS_LAST_NEXT.search(text)
    if match:
        unit = match.group(2)
        shift = {"this": 0, "last": -1, "next": 1}[match.group(1)]
        moment = current + unit_delta(unit, shift)
        return _range(start_of(moment, unit), end_of(moment, unit))
    match = _LAST_NEXT_N.search(text)
    if match:
        amount, unit = int(match.group(2)), match.group(3)
        if match.group(1) == "last":
            return _range(
                start_of(current + unit_delta(unit, -amount), unit), end_of(current + unit_delta(unit, -1), unit)
            )
        return _range(start_of(current + unit_delta(unit, 1), unit), end_of(current + unit_delta(unit, amount), unit))
    for word, shift in (("today", 0), ("yesterday", -1), ("tomorrow", 1)):
        if word in text:
            day = current + timedelta(days=shift)
            return _range(start_of(day, "day"), end_of(day, "day"))
    unit = next((u for u in ("second", "minute", "hour") if u in text), "day")
    moment = _point(text, current, phrase, zone)
    return _range(start_of(moment, unit), end_of(moment, unit))


def _point(text: str, current: datetime, phrase: str, zone: ZoneInfo) -> datetime:
    """One end of a ``from X to Y`` phrase (chrono-node's common forms)."""
    fixed = {"now": current, "today": current, "yesterday": current - timedelta(days=1)}
    fixed["tomorrow"] = current + timedelta(days=1)
    if text in fixed:
        return fixed[text]
    match = _AGO.match(text)
    if match:
        return current + unit_delta(match.group(2), -_count(match.group(1)))
    match = _FROM_NOW.match(text)
    if match:
        amount, unit = (match.group(1), match.group(2)) if match.group(2) else (match.group(3), match.group(4))
        return current + unit_delta(unit, _count(amount))
    try:
        return parse_local(text.upper(), zone)
    except DateOutOfRange:
        raise out_of_range(phrase) from None
    except ValueError:
        raise QueryError(f"Can't parse date: '{phrase}'") from None


def _count(word: str) -> int:
    return 1 if word in ("a", "an") else int(word)


def pad_start(value: str, zone: ZoneInfo) -> str:
    """A range start as a full local timestamp (a bare date starts at midnight)."""
    return _normalize(value, zone, end=False)


def pad_end(value: str, zone: ZoneInfo) -> str:
    """A range end as a full local timestamp (a bare date ends at 23:59:59.999)."""
    return _normalize(value, zone, end=True)


def _normalize(value: str, zone: ZoneInfo, *, end: bool) -> str:
    if _DATE_ONLY.match(value):
        try:
            date.fromisoformat(value)  # the shape of a date is not one: 2024-13-45
        except ValueError:
            raise QueryError(f"Can't parse date: '{value}'") from None
        return f"{value}T23:59:59.999" if end else f"{value}T00:00:00.000"
    try:
        return format_local(parse_local(value, zone))
    except DateOutOfRange:
        raise out_of_range(value) from None
    except ValueError:
        raise QueryError(f"Can't parse date: '{value}'") from None


def is_absolute(value: str) -> bool:
    try:
        parse_local(value, UTC_ZONE)
    except DateOutOfRange:
        return True  # an absolute date, refused as out of range when it is used
    except ValueError:
        return False
    return True


def resolve_date_range(value: object, zone: ZoneInfo, now: datetime | None) -> tuple[str, str]:
    """A ``dateRange`` (relative string, or one/two absolute dates) as a local ``(start, end)``."""
    if isinstance(value, str):
        if is_absolute(value):
            return pad_start(value, zone), pad_end(value, zone)
        return parse_relative_range(value, zone, now)
    if isinstance(value, list) and 1 <= len(value) <= 2 and all(isinstance(v, str) for v in value):
        return pad_start(value[0], zone), pad_end(value[-1], zone)
    raise QueryError('Invalid query format: "dateRange" must be a string or an array of one or two strings')


def date_range_presets() -> list[dict[str, str]]:
    """:data:`DATE_RANGE_PRESETS` as the pages read them: ``[{"value": "today", "label": "Today"}, ...]``."""
    return [{"value": value, "label": label} for value, label in DATE_RANGE_PRESETS]
