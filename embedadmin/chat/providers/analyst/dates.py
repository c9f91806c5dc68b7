"""Dates and grains in a question: ranges resolved to local days with the viewer's time zone and a clock.

Absolute: ``in March 2024``, ``on 2024-03-05``, ``on March 5, 2024``, ``between January and March 2024``,
``from June 1 to June 7, 2025``, ``aug 1-7``, ``in 2024 Q1``, ``in 2024``. Open on one side: ``since April 1, 2025``,
``after 2023``, ``before 2024``, ``until March 2025``, ``by the end of June``. Relative, in Cube's vocabulary:
``last year``, ``this month``, ``last 7 days``, ``yesterday``, ``today``.
Grains: ``per month``, ``monthly``, ``weekly``, ``by quarter`` and the model's custom granularities.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

from embedadmin.chat.providers.analyst.question_words import Token
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
DAY_SPAN = re.compile(r"(\d{1,2})-(\d{1,2})")  # "aug 1-7": days of one month
TO_WORDS = ("to", "through", "until", "till", "thru")
# Words joining two periods that share a year written after the second ("Q1 and Q2 2024").
PERIOD_JOINERS = frozenset({"and", "or", "vs", "versus", "with", "against", "to", "through"})
DAY_SUFFIXES = frozenset({"st", "nd", "rd", "th"})
# Words before a day that make a short month name that is also an English word ("may") a month: "on May 5".
DAY_LEADS = frozenset({"on", "to", "and", "before", "after", "through", "between", "by", "till"})
# A word before a period that opens the range on one side: from the period's first day, after its last day,
# before its first day, up to its last day.
EDGES = frozenset({"end", "start", "beginning"})  # "since the start of 2025", "until the end of June"
OPEN_MARKERS = {"since": "from", "after": "after", "before": "before", "until": "until", "till": "until"}
# Words that open a range only before an edge of a period: "by the end of March", "up to the end of 2023".
EDGE_MARKERS = {"by": "until", "to": "until", "through": "until", "thru": "until"}


@dataclass(frozen=True)
class DateRange:
    """Local days ``[start, end)``; ``None`` leaves the range open on that side ("since 2024", "before 2024")."""

    start: date | None
    end: date | None


def period_grain(first: DateRange, second: DateRange) -> tuple[str, DateRange, DateRange] | None:
    """The grain two periods are each one whole unit of ("2023 vs 2024": year; "Q1 2024 and Q1 2025": quarter), with
    the two in order; None when they are not two separate whole days, months, quarters or years of one grain."""
    if None in (first.start, first.end, second.start, second.end):
        return None
    earlier, later = sorted((first, second), key=lambda p: p.start or date.min)
    assert earlier.end is not None
    assert later.start is not None
    if earlier.end > later.start:
        return None  # overlapping: no row for each
    for grain in ("day", "month", "quarter", "year"):
        if _whole(earlier, grain) and _whole(later, grain):
            return grain, earlier, later
    return None


def _whole(period: DateRange, grain: str) -> bool:
    """Whether ``period`` is exactly one ``grain`` (a calendar month, quarter, year, or a day)."""
    start, end = period.start, period.end
    assert start is not None
    assert end is not None
    if grain == "day":
        return end == start + timedelta(days=1)
    months = {"month": 1, "quarter": 3, "year": 12}[grain]
    aligned = start.day == 1 and (start.month - 1) % months == 0
    later = start.month - 1 + months
    return aligned and end == date(start.year + later // 12, later % 12 + 1, 1)


def two_whole(period: DateRange) -> tuple[str, DateRange, DateRange] | None:
    """``period`` as two whole consecutive units of one grain ("2023 and 2024" read as one range: two years), in
    :func:`period_grain`'s form; None when it is not."""
    start, end = period.start, period.end
    if start is None or end is None:
        return None
    for grain, months in (("month", 1), ("quarter", 3), ("year", 12)):
        later = start.month - 1 + months
        middle = date(start.year + later // 12, later % 12 + 1, 1) if start.day == 1 else None
        if middle is not None and _whole(DateRange(start, middle), grain) and _whole(DateRange(middle, end), grain):
            return grain, DateRange(start, middle), DateRange(middle, end)
    return None


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
        begun = this_year.start is not None and this_year.start <= today
        return (this_year if begun else range_for(today.year - 1, number)), True

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
            span = _between(words, i, zone, connectors=("and",) if word == "between" else TO_WORDS, today=today)
            if span is not None:
                end_index, date_range = span
                take(range(i, end_index), date_range)
                i = end_index
                continue
        if word in MONTHS and any(c in words[i + 1 :] for c in TO_WORDS):
            # "June 1 to June 15, 2025" with no "from": one range, never its two ends as two days
            span = _between(words, i - 1, zone, connectors=TO_WORDS, today=today)
            if span is not None and free(*range(i, span[0])):
                take(range(i, span[0]), span[1])
                i = span[0]
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
        elif word in MONTHS and (days := _day_span(words, i + 1)) is not None and free(i + 1):
            # "aug 1-7", "March 3-16 2025": the days from the first to the last, both included (with no year, those
            # of the latest year whose first day has begun)
            year, used = _year_after(words, i + 1, free)
            if not _valid(year, MONTHS[word], days[0]):
                i += 1
                continue
            first_day, yearless = _day(year, MONTHS[word], days[0], today)
            assert first_day.start is not None
            if _valid(first_day.start.year, MONTHS[word], days[1]):
                last = date(first_day.start.year, MONTHS[word], days[1])
                take([i, i + 1, *used], DateRange(first_day.start, last + timedelta(days=1)), yearless)
                i += 2 + len(used)
                continue
        elif (day_found := _day_at(words, i, free)) is not None:
            (month, number, year), used = day_found
            take(used, *_day(year, month, number, today))
            i = max(used) + 1
            continue
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
    return _sharing_years([_opened(item, words, taken) for item in _joined(found, words, taken)], words)


def _opened(item: Found, words: Sequence[str], taken: set[int]) -> Found:
    """A period after "since", "after", "before" or "until" as the range it opens ("since 2024": from 2024 on)."""
    lead = min(item.positions) - 1
    edge = set()
    if lead >= 0 and words[lead] in EDGES and lead not in taken:  # "until the end of June 2023": until June 2023
        edge = {lead}
        lead -= 1
        if lead >= 0 and words[lead] == "the" and lead not in taken:
            edge.add(lead)
            lead -= 1
    markers = OPEN_MARKERS | (EDGE_MARKERS if edge else {})
    if item.date_range is None or lead < 0 or lead in taken or words[lead] not in markers:
        return item
    start, end = item.date_range.start, item.date_range.end
    side = markers[words[lead]]
    edge_word = next((words[p] for p in edge if words[p] in EDGES), "")
    if edge_word == "end":  # "before the end of 2024": up to its last day; "since the end of 2024": after it
        side = {"before": "until", "from": "after"}.get(side, side)
    elif edge_word:  # "until the start of 2025": before it; "after the beginning of March": from it
        side = {"until": "before", "after": "from"}.get(side, side)
    opened = {
        "from": DateRange(start, None),
        "after": DateRange(end, None),
        "before": DateRange(None, start),
        "until": DateRange(None, end),
    }[side]
    taken.update({lead, *edge})
    return Found(item.positions | {lead, *edge}, date_range=opened, yearless=item.yearless)


def _day_number(words: Sequence[str], i: int) -> tuple[int, list[int]] | None:
    """A day of the month at ``i`` ("5", "5th", "5 th") and its positions."""
    if i >= len(words) or not words[i].isdigit() or not 1 <= int(words[i]) <= 31:
        return None
    if i + 1 < len(words) and words[i + 1] in DAY_SUFFIXES:
        return int(words[i]), [i, i + 1]
    return int(words[i]), [i]


def _day_at(
    words: Sequence[str], i: int, free: Callable[..., bool]
) -> tuple[tuple[int, int, int | None], list[int]] | None:
    """A day written ``March 5``, ``March 5th, 2025``, ``5 March 2025`` or ``the 5th of March`` at ``i``: (month,
    day, year or None) and its positions."""
    short = words[i] in SHORT_WORDS and not (_dated(words, i) or (i and words[i - 1] in DAY_LEADS))
    if words[i] in MONTHS and not short and (number := _day_number(words, i + 1)) is not None and free(*number[1]):
        day, used = number
        year, year_used = _year_after(words, used[-1], free)
        if not _valid(year, MONTHS[words[i]], day):
            return None
        return (MONTHS[words[i]], day, year), [i, *used, *year_used]
    if (number := _day_number(words, i)) is not None:
        day, used = number
        at = used[-1] + 1
        if at < len(words) and words[at] == "of":
            at += 1
        if at < len(words) and words[at] in MONTHS and free(*range(i, at + 1)):
            year, year_used = _year_after(words, at, free)
            if _valid(year, MONTHS[words[at]], day):
                return (MONTHS[words[at]], day, year), [*range(i, at + 1), *year_used]
    return None


def _day_span(words: Sequence[str], i: int) -> tuple[int, int] | None:
    """Two days of one month written as a span at ``i`` ("1-7"), the first before the last; None when not."""
    found = DAY_SPAN.fullmatch(words[i]) if i < len(words) else None
    if found is None:
        return None
    first, last = int(found.group(1)), int(found.group(2))
    return (first, last) if 1 <= first < last <= 31 else None


def _valid(year: int | None, month: int, day: int) -> bool:
    """Whether the day exists (in its year, or in some year when none is written: February 29)."""
    try:
        date(2000 if year is None else year, month, day)
    except ValueError:
        return False
    return True


def _day(year: int | None, month: int, number: int, today: date) -> tuple[DateRange, bool]:
    """One day; with no year written, the latest one that has begun (and exists), marked yearless."""
    if year is not None:
        day = date(year, month, number)
        return DateRange(day, day + timedelta(days=1)), False
    for back in range(8):
        if _valid(today.year - back, month, number) and (day := date(today.year - back, month, number)) <= today:
            return DateRange(day, day + timedelta(days=1)), True
    raise AssertionError("a valid day recurs within 8 years")  # pragma: no cover


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


def _sharing_years(found: list[Found], words: Sequence[str]) -> list[Found]:
    """A period without its year joined to the next one that has a year ("Q1 and Q2 2024", "June vs July 2025")
    is of that year, not the latest one begun."""
    shared = sorted(found, key=lambda f: min(f.positions))
    for index in range(len(shared) - 2, -1, -1):
        first, second = shared[index], shared[index + 1]
        between = words[max(first.positions) + 1 : min(second.positions)]
        period, year = first.date_range, second.date_range
        if not first.yearless or second.yearless or not between or not set(between) <= PERIOD_JOINERS:
            continue
        if period is None or period.start is None or period.end is None or year is None or year.start is None:
            continue
        shift = year.start.year - period.start.year
        try:
            start, end = (
                period.start.replace(year=period.start.year + shift),
                period.end.replace(year=period.end.year + shift),
            )
        except ValueError:  # February 29th in another year
            continue
        shared[index] = replace(first, date_range=DateRange(start, end), yearless=False)
    return shared


def unread_range(found: Sequence[Found], words: Sequence[str]) -> bool:
    """Whether two single days stand joined by "to" (or "through", "until"): a range :func:`find_dates` could not
    read ("June 15 to June 1"), never to be answered as its two ends."""
    days = sorted((f for f in found if _one_day(f.date_range)), key=lambda f: min(f.positions))
    for first, second in pairwise(days):
        between = words[max(first.positions) + 1 : min(second.positions)]
        if between and set(between) <= set(TO_WORDS):
            return True
    return False


def _one_day(period: DateRange | None) -> bool:
    if period is None or period.start is None or period.end is None:
        return False
    return period.end - period.start == timedelta(days=1)


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
    words: Sequence[str], i: int, zone: ZoneInfo, *, connectors: Sequence[str], today: date | None = None
) -> tuple[int, DateRange] | None:
    """``between January and March 2024``, ``from June 1 to June 7, 2025``, ``between 2022 and 2024`` or ``between
    2024-01-01 and 2024-03-31``: the end position and the range from the first period's first day to the second's
    last. A year written only after the second period is the first's too; with no year at all, the latest year in
    which the range has begun by ``today`` ("from June 1 to June 15" in August 2025: 2025), as for a period without
    its year (without ``today``, no range)."""
    found = [words.index(c, i + 2) for c in connectors if c in words[i + 2 :]]
    if not found:
        return None
    and_at = min(found)
    first = _endpoint(words, i + 1)
    second = _endpoint(words, and_at + 1)
    if first is None or second is None or first[0] != and_at:
        return None
    (_, first_kind, first_year, first_parts), (end_index, second_kind, second_year, second_parts) = first, second
    if second_kind == "day" and first_kind == "day" and not second_parts[0] and first_parts[0]:
        second_parts = (first_parts[0], second_parts[1])  # "from June 1 to 7, 2025": the second day is June's
    year = second_year or first_year
    if year is None and today is not None:
        try:
            begun = _endpoint_range(first_kind, today.year, first_parts).start
        except ValueError:
            return None
        year = today.year if begun is not None and begun <= today else today.year - 1
    if year is None:
        return None
    start_year = first_year or year
    try:
        start = _endpoint_range(first_kind, start_year, first_parts).start
        last = _endpoint_range(second_kind, year, second_parts).end
    except ValueError:
        return None
    if start is None or last is None or start >= last:
        return None
    return end_index, DateRange(start, last)


def _endpoint(words: Sequence[str], j: int) -> tuple[int, str, int | None, tuple[int, int]] | None:
    """One end of a "between" range at ``j``: (the position after it, its kind, its year or None, (month, day))."""
    if j >= len(words):
        return None
    word = words[j]
    if ISO_DATE.match(word):
        day = date.fromisoformat(word)
        return j + 1, "day", day.year, (day.month, day.day)
    if YEAR.match(word):
        return j + 1, "year", int(word), (0, 0)
    if word in MONTHS:
        number = _day_number(words, j + 1)
        at = number[1][-1] + 1 if number else j + 1
        year = int(words[at]) if at < len(words) and YEAR.match(words[at]) else None
        after = at + (year is not None)
        return (after, "day", year, (MONTHS[word], number[0])) if number else (after, "month", year, (MONTHS[word], 0))
    number = _day_number(words, j)
    if number is not None:
        at = number[1][-1] + 1
        at += at < len(words) and words[at] == "of"
        if at < len(words) and words[at] in MONTHS:
            year = int(words[at + 1]) if at + 1 < len(words) and YEAR.match(words[at + 1]) else None
            return at + 1 + (year is not None), "day", year, (MONTHS[words[at]], number[0])
        year = int(words[at]) if at < len(words) and YEAR.match(words[at]) else None
        return at + (year is not None), "day", year, (0, number[0])  # "June 1 to 7": the month of the first
    return None


def _endpoint_range(kind: str, year: int, parts: tuple[int, int]) -> DateRange:
    month, day = parts
    if kind == "year":
        return DateRange(date(year, 1, 1), date(year + 1, 1, 1))
    if kind == "month":
        return _month(year, month)
    start = date(year, month, day)
    return DateRange(start, start + timedelta(days=1))


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
        # "$5,000 a month": a rate of the amount before it, never a grain
        rate = lead == "a" and i > 1 and any(c.isdigit() for c in words[i - 2])
        led = lead in ("by", "per", "each", "every") or (
            lead in ("a", "over", "which", "what") and (i - 1) not in taken and not rate
        )
        for phrase, name in sorted(custom.items(), key=lambda item: -len(item[0])):
            spot = range(i, i + len(phrase))
            if led and tuple(stems[i : i + len(phrase)]) == phrase and all(p not in taken for p in spot):
                positions = frozenset({i - 1, *range(i, i + len(phrase))})
                return Found(positions, grain=name)
        participle = i + 1 < len(words) and words[i + 1].endswith("ed") and i + 1 not in taken
        if word in GRAIN_ADJECTIVES and not (word.endswith("ly") and participle):
            # "monthly revenue", "monthly invoiced amount" (a name of the model): by month; "annually billed plans":
            # how the plans are billed, never a grain
            return Found(frozenset({i}), grain=GRAIN_ADJECTIVES[word])
        unit = UNITS.get(word.rstrip("s"))
        if unit and led:
            return Found(frozenset({i - 1, i}), grain=unit)
    return None
