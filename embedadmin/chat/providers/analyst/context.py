"""The filters of the dashboard a question is asked from, added to the query that answers it.

A filter whose member belongs to the answer's cube or view (by name, or a view member showing that cube member)
is ANDed with what the question asks, as that member's type reads it: values of a string, number or boolean
dimension, a comparison of a number or measure (``HAVING``), a date range of a time dimension resolved in the
viewer's time zone as the analyst's own date ranges are (relative ranges such as ``last 12 months`` on the
turn's clock). The question's own filter on the same member stays as well, so it can only narrow further. A
filter the answer's cube or view does not have, or that its member cannot take (``contains`` on a number, a date
that does not read), is left out and named. The query still runs with the viewer's access policies: a filter
can narrow what they see, never widen it.

Negative operators keep rows without a value (``notEquals``, ``notContains``), as Cube's do and as the dashboard's
tiles show them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from embedadmin.chat.providers.analyst.intent import DashboardCondition, Intent
from embedadmin.chat.providers.analyst.lexicon import Cube, Member
from embedadmin.chat.providers.base import CONTEXT_FILTER_OPERATORS, ContextFilter
from embedadmin.chat.vocabulary import sql_string
from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.query.dates import resolve_date_range
from embedadmin.semantic.query.values import NUMBER_TEXT

COMPARISONS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
WORDS = {
    "equals": "is",
    "notEquals": "is not",
    "contains": "contains",
    "notContains": "does not contain",
    "startsWith": "starts with",
    "endsWith": "ends with",
    "gt": "over",
    "gte": "at least",
    "lt": "under",
    "lte": "at most",
    "set": "is set",
    "notSet": "is not set",
    "beforeDate": "before",
    "afterDate": "after",
}
PATTERNS = {"contains": ("%", "%"), "notContains": ("%", "%"), "startsWith": ("", "%"), "endsWith": ("%", "")}
DATE_OPERATORS = frozenset({"inDateRange", "notInDateRange", "beforeDate", "afterDate"})
DAY_START = "T00:00:00.000"
DAY_END = "T23:59:59.999"


def with_dashboard_filters(
    intent: Intent, filters: Sequence[ContextFilter], *, zone: ZoneInfo, now: datetime
) -> Intent:
    """``intent`` with the dashboard's ``filters`` it can take added, and the words of the others left out."""
    placed: list[DashboardCondition] = []
    left_out: list[str] = []
    for given in filters:
        member = member_of(intent.cube, given.member)
        if member is None:
            left_out.append(f"{filter_words(given.member, given)} ({intent.cube.title} has no such member)")
            continue
        condition = dashboard_condition(member, given, zone=zone, now=now)
        if isinstance(condition, str):
            left_out.append(f"{filter_words(given.member, given)} ({condition})")
        else:
            placed.append(condition)
    return intent.replaced(dashboard_filters=tuple(placed), left_out=tuple(left_out))


def member_of(cube: Cube, name: str) -> Member | None:
    """The member of ``cube`` a filter on ``name`` is about: the member of that name, else the view member showing
    the cube member of that name."""
    return next((m for m in cube.members if m.name == name), None) or next(
        (m for m in cube.members if m.alias == name), None
    )


def filter_words(label: str, given: ContextFilter) -> str:
    """A filter in plain words, its member called ``label``: ``status is completed or shipped``."""
    if given.operator in ("set", "notSet"):
        return f"{label} {WORDS[given.operator]}"
    if given.operator in ("inDateRange", "notInDateRange"):
        shown = " to ".join(given.values)
        return f"{label} {'from' if given.operator == 'inDateRange' else 'outside'} {shown}"
    shown = given.values[0] if given.operator in COMPARISONS and given.values else " or ".join(given.values)
    return f"{label} {WORDS.get(given.operator, given.operator)} {shown}"


def dashboard_condition(
    member: Member, given: ContextFilter, *, zone: ZoneInfo, now: datetime
) -> DashboardCondition | str:
    """The condition ``given`` puts on ``member``, or why the member cannot take it."""
    operator, values = given.operator, given.values
    label = member.title.lower()
    if operator not in CONTEXT_FILTER_OPERATORS:
        return f"{operator} is not a filter operator the analyst knows"
    if not values and operator not in ("set", "notSet"):
        return f"{operator} needs a value"
    if member.is_measure:
        return _measure_condition(member, given, label)
    column = member.column
    if operator in ("set", "notSet"):
        test = f"{column} IS {'NOT ' if operator == 'set' else ''}NULL"
        return DashboardCondition(member, test, filter_words(label, given))
    if member.type == "time":
        if operator not in DATE_OPERATORS:
            return f"{operator} does not apply to a date"
        return _date_condition(member, given, label, zone=zone, now=now)
    if operator in DATE_OPERATORS:
        return f"{operator} applies to dates only"
    if member.type == "string":
        if operator in COMPARISONS:
            return f"{operator} compares numbers, and {label} is text"
        if operator in PATTERNS:
            return _pattern_condition(member, given, label)
        return _membership(member, given, [sql_string(v) for v in values], label)
    if member.type == "number":
        if operator in PATTERNS:
            return f"{operator} applies to text, and {label} is a number"
        if not all(NUMBER_TEXT.match(v.strip()) for v in values):
            return f"{label} is a number"
        if operator in COMPARISONS:
            test = f"{column} {COMPARISONS[operator]} {values[0].strip()}"
            return DashboardCondition(member, test, filter_words(label, given))
        return _membership(member, given, [v.strip() for v in values], label)
    if member.type == "boolean":
        if operator not in ("equals", "notEquals") or not all(v.lower() in ("true", "false") for v in values):
            return f"{label} is true or false"
        literals = sorted({v.upper() for v in values})
        if operator == "equals":
            test = " OR ".join(f"{column} = {v}" for v in literals)
        else:  # IS NOT keeps the rows without a value, as Cube's notEquals does
            test = " AND ".join(f"{column} IS NOT {v}" for v in literals)
        words = filter_words(label, ContextFilter(given.member, operator, tuple(v.lower() for v in literals)))
        return DashboardCondition(member, f"({test})" if len(literals) > 1 else test, words)
    return f"{label} has a type ({member.type or 'unknown'}) dashboard filters do not apply to"


def _membership(member: Member, given: ContextFilter, literals: list[str], label: str) -> DashboardCondition:
    column = member.column
    negated = given.operator == "notEquals"
    if len(literals) == 1:
        test = f"{column} {'<>' if negated else '='} {literals[0]}"
    else:
        test = f"{column} {'NOT IN' if negated else 'IN'} ({', '.join(literals)})"
    if negated:  # Cube's notEquals keeps the rows without a value; SQL's <> does not
        test = f"({test} OR {column} IS NULL)"
    return DashboardCondition(member, test, filter_words(label, given))


def _like_text(value: str) -> str:
    """``value`` with LIKE's wildcards and escape character escaped: matched as written."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _pattern_condition(member: Member, given: ContextFilter, label: str) -> DashboardCondition:
    column = member.column
    before, after = PATTERNS[given.operator]
    patterns = [sql_string(f"{before}{_like_text(v)}{after}") for v in given.values]
    if given.operator == "notContains":  # keeps the rows without a value, as Cube's notContains does
        tests = " AND ".join(f"{column} NOT ILIKE {p}" for p in patterns)
        test = f"({tests} OR {column} IS NULL)"
    else:
        tests = " OR ".join(f"{column} ILIKE {p}" for p in patterns)
        test = f"({tests})" if len(patterns) > 1 else tests
    return DashboardCondition(member, test, filter_words(label, given))


def _measure_condition(member: Member, given: ContextFilter, label: str) -> DashboardCondition | str:
    """A filter on a measure, tested on its aggregated value (``HAVING``), as Cube applies a measure filter."""
    operator, values = given.operator, [v.strip() for v in given.values]
    if operator not in (*COMPARISONS, "equals", "notEquals"):
        return f"{operator} does not apply to a measure"
    if not all(NUMBER_TEXT.match(v) for v in values):
        return f"{label} is a number"
    column = f"MEASURE({member.column})"
    if operator in COMPARISONS:
        test = f"{column} {COMPARISONS[operator]} {values[0]}"
    elif operator == "equals":
        test = " OR ".join(f"{column} = {v}" for v in values)
        test = f"({test})" if len(values) > 1 else test
    else:
        test = " AND ".join(f"{column} <> {v}" for v in values)
    return DashboardCondition(member, test, filter_words(label, given))


def _date_condition(
    member: Member, given: ContextFilter, label: str, *, zone: ZoneInfo, now: datetime
) -> DashboardCondition | str:
    """A date filter as local bounds, resolved in the viewer's time zone the way the Core Data API resolves a
    ``dateRange``: whole days as ``DATE`` literals (the end exclusive, as the analyst writes its own ranges)."""
    operator, values = given.operator, given.values
    ranged = operator in ("inDateRange", "notInDateRange")
    if (ranged and len(values) > 2) or (not ranged and len(values) != 1):
        return f"{operator} takes {'one or two dates' if ranged else 'one date'}"
    try:
        start, end = resolve_date_range(values[0] if len(values) == 1 else list(values), zone, now)
    except QueryError:
        return "its dates could not be read"
    column = member.column
    if start > end:
        return "its range ends before it starts"
    try:
        lower, upper = _start_literal(start), _end_literal(end)  # column >= lower, column < upper
    except OverflowError:  # a range ending on the last day of the year 9999
        return "its dates could not be read"
    if operator == "inDateRange":
        test = f"{column} >= {lower} AND {column} < {upper}"
        words = f"{label} from {_shown(start)} to {_shown(end)}"
    elif operator == "notInDateRange":
        test = f"({column} < {lower} OR {column} >= {upper})"
        words = f"{label} outside {_shown(start)} to {_shown(end)}"
    elif operator == "beforeDate":
        test = f"{column} < {lower}"
        words = f"{label} before {_shown(start)}"
    else:  # afterDate: after the end of the day (or instant) given
        test = f"{column} >= {upper}"
        words = f"{label} after {_shown(end)}"
    return DashboardCondition(member, test, words)


def _start_literal(local: str) -> str:
    """A range's first instant as a semantic SQL literal: ``DATE '2025-01-01'`` for a day's start."""
    if local.endswith(DAY_START):
        return f"DATE '{local[:10]}'"
    return f"TIMESTAMP '{local.replace('T', ' ')}'"


def _end_literal(local: str) -> str:
    """The first instant after a range's last one (``23:59:59.999`` of a day: the next day)."""
    if local.endswith(DAY_END):
        return f"DATE '{(date.fromisoformat(local[:10]) + timedelta(days=1)).isoformat()}'"
    after = datetime.fromisoformat(local) + timedelta(milliseconds=1)
    return f"TIMESTAMP '{after.isoformat(sep=' ', timespec='milliseconds')}'"


def _shown(local: str) -> str:
    """A bound in words: the day alone when it is a whole day's start or end."""
    if local.endswith((DAY_START, DAY_END)):
        return local[:10]
    return local.replace("T", " ")[:23]
