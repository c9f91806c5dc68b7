"""Dates and grains in a question: ranges resolved to local days with the viewer's time zone and a clock.

Absolute: ``in March 2024``, ``on 2024-03-05``, ``between January and March 2024``, ``in 2024 Q1``, ``in 2024``.
Relative, in Cube's vocabulary: ``last year``, ``this month``, ``last 7 days``, ``yesterday``, ``today``.
Grains: ``per month``, ``monthly``, ``weekly``, ``by quarter`` and the model's custom granularities.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from embedadmin.chat.providers.analyst.words import Token
from embedadmin.semantic.query.dates import parse_relative_range

MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
UNITS = {"day": "day", "week": "week", "month": "month", "quarter": "quarter", "year": "year"}
GRAIN_ADJECTIVES = {
    "daily": "day",
    "weekly": "week",
    "monthly": "month",
    "quarterly": "quarter",
    "yearly": "year",
    "annual": "year",
    "annually": "year",
}
RELATIVE_LEADS = {"this": "this", "current": "this", "last": "last", "previous": "last", "past": "last"}
RANGE_PREPOSITIONS = frozenset(
    {"in", "during", "for", "on", "of", "over", "within", "the", "between", "from", "across"}
)
QUARTER = re.compile(r"^q([1-4])$")
HALF = re.compile(r"^h([12])$")
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
# Month abbreviations that are also English words: a month only next to a preposition or a year.
SHORT_WORDS = frozenset({"may", "mar", "jan", "jun", "oct", "dec", "sept", "sep"})
YEAR = re.compile(r"^(19|20)\d\d$")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TO_WORDS = ("to", "through", "until", "till", "thru")


@dataclass(frozen=True)
class DateRange:
    """Local days ``[start, end)``."""

    start: date
    end: date


@dataclass(frozen=True)
class Found:
    """A date range or a grain the question names, and the token positions that name it."""

    positions: frozenset[int]
    date_range: DateRange | None = None
    grain: str | None = None
    yearless: bool = False  # a month, quarter or half named without its year


def _month_range(year: int, month: int) -> tuple[date, date]:
    start = date(year, month, 1)
    return start, date(year + (month == 12), month % 12 + 1, 1)


def _relative(phrase: str, zone: ZoneInfo, now: datetime) -> DateRange:
    start, end = parse_relative_range(phrase, zone, now)
    return DateRange(date.fromisoformat(start[:10]), date.fromisoformat(end[:10]) + timedelta(days=1))


def find_dates(tokens: Sequence[Token], *, zone: ZoneInfo, now: datetime, taken: set[int]) -> list[Found]:
    """Every date range the question names, in order, each with the positions it takes (added to ``taken``)."""
    found: list[Found] = []
    words = [t.lower for t in tokens]
    i = 0

    def free(*positions: int) -> bool:
        return all(0 <= p < len(words) and p not in taken for p in positions)

    today = now.astimezone(zone).date()

    def period(year: int | None, kind: str, number: int) -> tuple[DateRange, bool]:
        """The period in ``year``; with no year written, the latest one that has begun ("Q4" in August 2025 is
        Q4 2024: the one the data can hold), marked yearless so that a follow-up can take the thread's year."""
        range_for = PERIODS[kind]
        if year is not None:
            return range_for(year, number), False
        this_year = range_for(today.year, number)
        return (this_year if this_year.start <= today else range_for(today.year - 1, number)), True

    def take(positions: range | list[int], date_range: DateRange, yearless: bool = False) -> None:
        spot = set(positions)
        lead = min(spot) - 1
        while lead >= 0 and words[lead] in RANGE_PREPOSITIONS and lead not in taken:
            spot.add(lead)
            lead -= 1
        taken.update(spot)
        found.append(Found(frozenset(spot), date_range=date_range, yearless=yearless))

    while i < len(words):
        if not free(i):
            i += 1
            continue
        word = words[i]
        following = words[i + 1] if i + 1 < len(words) else ""
        # between <month> and <month> <year>, between <date> and <date>
        if word in ("between", "from") and free(i + 1, i + 2, i + 3):
            span = _between(words, i, zone, connectors=("and",) if word == "between" else TO_WORDS)
            if span is not None:
                end_index, date_range = span
                take(range(i, end_index), date_range)
                i = end_index
                continue
        if word in ("today", "yesterday"):
            take([i], _relative(word, zone, now))
        elif word in RELATIVE_LEADS and UNITS.get(following.rstrip("s")) and free(i + 1):
            unit = UNITS[following.rstrip("s")]
            take([i, i + 1], _relative(f"{RELATIVE_LEADS[word]} {unit}", zone, now))
            i += 2
            continue
        elif (
            word in ("last", "past", "previous")
            and following.isdigit()
            and i + 2 < len(words)
            and UNITS.get(words[i + 2].rstrip("s"))
            and free(i + 1, i + 2)
        ):
            unit = UNITS[words[i + 2].rstrip("s")]
            take([i, i + 1, i + 2], _relative(f"last {int(following)} {unit}s", zone, now))
            i += 3
            continue
        elif ISO_DATE.match(word):
            day = date.fromisoformat(word)
            take([i], DateRange(day, day + timedelta(days=1)))
        elif word in MONTHS and (word not in SHORT_WORDS or _dated(words, i)):
            year, used = _year_after(words, i, free)
            month = MONTHS[word]
            take([i, *used], *period(year, "month", month))
            i += 1 + len(used)
            continue
        elif word in ORDINALS and following == "quarter" and free(i + 1):
            year, used = _year_after(words, i + 1, free)
            take([i, i + 1, *used], *period(year, "quarter", ORDINALS[word]))
            i += 2 + len(used)
            continue
        elif word in ("first", "second") and following == "half" and free(i + 1):
            year, used = _year_after(words, i + 1, free)
            take([i, i + 1, *used], *period(year, "half", 1 if word == "first" else 2))
            i += 2 + len(used)
            continue
        elif (half := HALF.match(word)) is not None:
            year, used = _year_after(words, i, free)
            take([i, *used], *period(year, "half", int(half.group(1))))
            i += 1 + len(used)
            continue
        elif (quarter := QUARTER.match(word)) is not None:
            year, used = _year_after(words, i, free)
            take([i, *used], *period(year, "quarter", int(quarter.group(1))))
            i += 1 + len(used)
            continue
        elif YEAR.match(word) and free(i + 1) and (quarter := QUARTER.match(following)) is not None:
            take([i, i + 1], _quarter(int(word), int(quarter.group(1))))
            i += 2
            continue
        elif YEAR.match(word) and _year_like(words, i):
            year = int(word)
            said = (
                [i - 2, i - 1, i] if i >= 2 and words[i - 2 : i] == ["calendar", "year"] and free(i - 2, i - 1) else [i]
            )
            take(said, DateRange(date(year, 1, 1), date(year + 1, 1, 1)))
        i += 1
    return _joined(found, words, taken)


def _joined(found: list[Found], words: Sequence[str], taken: set[int]) -> list[Found]:
    """Periods that follow one another joined by "and" or "to" ("across 2023 and 2024") as one range."""
    joined: list[Found] = []
    for item in found:
        previous = joined[-1] if joined else None
        if previous is not None and previous.date_range and item.date_range:
            gap = set(range(max(previous.positions) + 1, min(item.positions)))
            if (
                previous.date_range.end == item.date_range.start
                and len(gap) == 1
                and words[min(gap)] in ("and", "to", "through", "until")
            ):
                taken |= gap
                joined[-1] = Found(
                    previous.positions | gap | item.positions,
                    date_range=DateRange(previous.date_range.start, item.date_range.end),
                    yearless=previous.yearless and item.yearless,
                )
                continue
        joined.append(item)
    return joined


def _month(year: int, number: int) -> DateRange:
    return DateRange(*_month_range(year, number))


def _dated(words: Sequence[str], i: int) -> bool:
    """Whether a short month name that is also an English word ("may") stands as a month here."""
    before = words[i - 1] if i else ""
    after = words[i + 1] if i + 1 < len(words) else ""
    return before in ("in", "during", "of", "since", "from", "until") or bool(YEAR.match(after))


def _year_like(words: Sequence[str], i: int) -> bool:
    """A four-digit number that is a year: not a count or an amount ("over 2000 orders")."""
    before = words[i - 1] if i else ""
    return before not in ("over", "above", "under", "below", "than", "least", "most", "top", "$")


def _year_after(words: Sequence[str], i: int, free: Callable[..., bool]) -> tuple[int | None, list[int]]:
    """The year written right after position ``i`` (``March 2024``, ``Q1 of 2024``) and its positions; None and
    no position when none is."""
    if free(i + 1) and YEAR.match(words[i + 1]):
        return int(words[i + 1]), [i + 1]
    if free(i + 1, i + 2) and words[i + 1] == "of" and YEAR.match(words[i + 2]):
        return int(words[i + 2]), [i + 1, i + 2]
    return None, []


def _quarter(year: int, number: int) -> DateRange:
    start = date(year, 3 * number - 2, 1)
    end = date(year + (number == 4), (3 * number) % 12 + 1, 1)
    return DateRange(start, end)


def _half(year: int, number: int) -> DateRange:
    start = date(year, 1 if number == 1 else 7, 1)
    end = date(year, 7, 1) if number == 1 else date(year + 1, 1, 1)
    return DateRange(start, end)


PERIODS: dict[str, Callable[[int, int], DateRange]] = {"month": _month, "quarter": _quarter, "half": _half}


def _between(
    words: Sequence[str], i: int, zone: ZoneInfo, *, connectors: Sequence[str]
) -> tuple[int, DateRange] | None:
    """``between January and March 2024``, ``from January through June 2025`` or ``between 2024-01-01 and
    2024-03-31``: the end position, the range."""
    found = [words.index(c, i + 2) for c in connectors if c in words[i + 2 :]]
    if not found:
        return None
    and_at = min(found)
    first, second = words[i + 1 : and_at], words[and_at + 1 : and_at + 3]
    if len(first) == 1 and ISO_DATE.match(first[0]) and second and ISO_DATE.match(second[0]):
        start, last = date.fromisoformat(first[0]), date.fromisoformat(second[0])
        return and_at + 2, DateRange(start, last + timedelta(days=1))
    if first and first[0] in MONTHS and second and second[0] in MONTHS:
        year_words = [w for w in (*first[1:], *second[1:]) if YEAR.match(w)]
        if not year_words:
            return None
        year = int(year_words[-1])
        start_year = int(first[1]) if len(first) > 1 and YEAR.match(first[1]) else year
        start, _ = _month_range(start_year, MONTHS[first[0]])
        _, end = _month_range(year, MONTHS[second[0]])
        end_index = and_at + 1 + len([w for w in second if w in MONTHS or YEAR.match(w)])
        return end_index, DateRange(start, end)
    return None


def find_grain(tokens: Sequence[Token], *, taken: set[int], custom: dict[tuple[str, ...], str]) -> Found | None:
    """The grain a question asks for (``per month``, ``monthly``, ``by fiscal quarter``), with its positions."""
    words = [t.lower for t in tokens]
    stems = [t.stem for t in tokens]
    for i, word in enumerate(words):
        if i in taken:
            continue
        unit = UNITS.get(word)
        if unit and words[i + 1 : i + 3] == ["by", word]:
            return Found(frozenset({i, i + 1, i + 2}), grain=unit)  # "month by month"
        lead = words[i - 1] if i else ""
        led = lead in ("by", "per", "each", "every") or (lead in ("a", "over") and (i - 1) not in taken)
        for phrase, name in sorted(custom.items(), key=lambda item: -len(item[0])):
            spot = range(i, i + len(phrase))
            if led and tuple(stems[i : i + len(phrase)]) == phrase and all(p not in taken for p in spot):
                positions = frozenset({i - 1, *range(i, i + len(phrase))})
                return Found(positions, grain=name)
        if word in GRAIN_ADJECTIVES:
            return Found(frozenset({i}), grain=GRAIN_ADJECTIVES[word])
        unit = UNITS.get(word.rstrip("s"))
        if unit and led:
            return Found(frozenset({i - 1, i}), grain=unit)
    return None
