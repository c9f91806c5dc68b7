"""The filters of the dashboard a question is asked from, added to the query that answers it.

A filter whose member belongs to the answer's cube or view (by name, or a view member showing that cube member)
is ANDed with what the question asks, written in semantic SQL by the Core Data API's own writer
(:func:`~embedadmin.semantic.cubesql.written.written_filter`, the inverse of the translator that reads the statement
back into Cube filters): values of a string, number or boolean dimension, a comparison of a number or measure
(``HAVING``), a date range of a time dimension resolved in the viewer's time zone (relative ranges such as
``last 12 months`` on the turn's clock). The question's own filter on the same member stays as well, so it can
only narrow further. A filter the answer's cube or view does not have, or that its member cannot take (``contains``
on a number, a date that does not read), is left out and named. The query still runs with the viewer's access
policies: a filter can narrow what they see, never widen it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from embedadmin.chat.providers.analyst.intent import DashboardCondition, Intent
from embedadmin.chat.providers.analyst.model_phrases import Cube, Member
from embedadmin.chat.providers.base import ContextFilter
from embedadmin.semantic.cubesql.written import COMPARISONS, written_filter
from embedadmin.semantic.errors import QueryError

WORDS = {
    "equals": "is",
    "in": "is",
    "notEquals": "is not",
    "notIn": "is not",
    "contains": "contains",
    "notContains": "does not contain",
    "startsWith": "starts with",
    "notStartsWith": "does not start with",
    "endsWith": "ends with",
    "notEndsWith": "does not end with",
    "onTheDate": "on",
    "beforeOrOnDate": "on or before",
    "afterOrOnDate": "on or after",
    "gt": "over",
    "gte": "at least",
    "lt": "under",
    "lte": "at most",
    "set": "is set",
    "notSet": "is not set",
    "beforeDate": "before",
    "afterDate": "after",
}


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
        label = member.title.lower()
        try:
            written = written_filter(
                column=member.column,
                label=label,
                member_type=member.type,
                is_measure=member.is_measure,
                operator=given.operator,
                values=given.values,
                zone=zone,
                now=now,
            )
        except QueryError as exc:
            left_out.append(f"{filter_words(given.member, given)} ({exc.message})")
            continue
        shown = ContextFilter(given.member, given.operator, written.values)
        placed.append(DashboardCondition(member, written.sql, filter_words(label, shown)))
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
