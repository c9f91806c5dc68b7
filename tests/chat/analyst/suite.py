"""Question suites of the built-in analyst: files of question -> expected query (and, for some, numbers from
hand-written SQL on the raw tables), run in process against a real deployment (``test_suites.py``) and through a
server (``bench/analyst.py``).

A suite file (YAML) gives the clock and time zone its relative dates are read with, the default cube, and cases::

    - q: How many orders were completed in 2024?
      measures: [order_count]
      filters: [[status, equals, [completed]]]
      dates: [created_at, 2024-01-01, 2025-01-01]   # or [created_at, last year]: resolved with the suite's clock
      check: SELECT count(*) FROM {t}orders WHERE status = 'completed' AND ...
    - q: What's the weather tomorrow?
      decline: true

Other keys: ``or`` (other specs that compute the same numbers, as through another view), ``cube``, ``by``
(dimensions), ``grain`` ([time dimension, granularity]), ``having``, ``ranking`` (``desc``/``asc``), ``limit``,
``after`` (questions asked before on the same thread). The analyst's semantic SQL is read into a Cube query by the
Core Data API's own translator, and both are compared as :class:`Signature`s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import yaml

from embedadmin.semantic.query.dates import resolve_date_range

SUITES = Path(__file__).parent / "suites"
ROW_LIMIT = 50_000


@dataclass(frozen=True)
class Signature:
    """What a query computes, independent of how its SQL is spelled."""

    cube: str
    measures: tuple[str, ...]
    dimensions: frozenset[str]
    grain: tuple[str, str] | None
    dates: tuple[str, str, str] | None  # time dimension, first day, day after the last
    filters: frozenset[tuple[str, str, tuple[str, ...]]]
    having: frozenset[tuple[str, str, tuple[str, ...]]]
    ranking: str | None
    limit: int | None


@dataclass(frozen=True)
class Case:
    question: str
    spec: dict[str, Any]
    after: tuple[str, ...] = ()

    @property
    def declines(self) -> bool:
        return bool(self.spec.get("decline"))

    @property
    def check(self) -> str | None:
        return self.spec.get("check")


@dataclass(frozen=True)
class Suite:
    name: str
    now: datetime
    timezone: str
    cube: str
    cases: tuple[Case, ...] = field(default=())


def load(name: str) -> Suite:
    document = yaml.safe_load((SUITES / f"{name}.yml").read_text())
    now = document["now"]
    now = now if isinstance(now, datetime) else datetime.fromisoformat(str(now))
    cases = tuple(
        Case(question=entry["q"], spec=entry, after=tuple(entry.get("after", ()))) for entry in document["cases"]
    )
    return Suite(name, now.astimezone(UTC), document.get("timezone", "UTC"), document["cube"], cases)


def _values(values: Any) -> tuple[str, ...]:
    listed = values if isinstance(values, list) else [values]
    return tuple(sorted(_text(v) for v in listed))


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    return format(number.normalize(), "f") if number == number.to_integral_value() else str(number)


def expected(case: Case, suite: Suite, now: datetime | None = None) -> Signature:
    """The signature a case's spec describes (relative dates resolved with the suite's clock and time zone, or
    ``now`` when the analyst ran on the real clock)."""
    spec = case.spec
    cube = spec.get("cube", suite.cube)

    def name(member: str) -> str:
        return member if "." in member else f"{cube}.{member}"

    dates = None
    if "dates" in spec:
        member, *bounds = spec["dates"]
        if len(bounds) == 1:
            start, end = resolve_date_range(bounds[0], ZoneInfo(suite.timezone), now or suite.now)
            last = date.fromisoformat(end[:10])
            bounds = [start[:10], (last + timedelta(days=1)).isoformat()]
        dates = (name(member), str(bounds[0]), str(bounds[1]))
    grain = (name(spec["grain"][0]), spec["grain"][1]) if "grain" in spec else None
    return Signature(
        cube=cube,
        measures=tuple(name(m) for m in spec.get("measures", ())),
        dimensions=frozenset(name(d) for d in spec.get("by", ())),
        grain=grain,
        dates=dates,
        filters=frozenset((name(m), op, _values(v)) for m, op, v in spec.get("filters", ())),
        having=frozenset((name(m), op, _values(v)) for m, op, v in spec.get("having", ())),
        ranking=spec.get("ranking"),
        limit=spec.get("limit"),
    )


def answered(query: dict[str, Any], cube: str) -> Signature:
    """The signature of the Cube query the analyst's SQL translates to."""
    measures = tuple(query["measures"])
    dates: list[str] = []
    time_member = ""
    filters: set[tuple[str, str, tuple[str, ...]]] = set()
    having: set[tuple[str, str, tuple[str, ...]]] = set()
    for item in query.get("filters", []):
        member, operator, values = item["member"], item["operator"], item.get("values", [])
        if operator in ("gte", "lt") and str(values[0])[:4].isdigit() and "T" in str(values[0]):
            time_member = member
            dates.append(str(values[0])[:10])
            continue
        if operator == "notEquals":  # SQL's "<>" keeps its rows without a value out: the translator adds None
            values = [v for v in values if v is not None]
        (having if member in measures else filters).add((member, operator, _values(values)))
    grain = None
    for time_dimension in query.get("timeDimensions", []):
        if time_dimension.get("granularity"):
            grain = (time_dimension["dimension"], time_dimension["granularity"])
    ranking = None
    order = query.get("order") or []
    if order and order[0][0] in measures:
        ranking = order[0][1]
    limit = query.get("limit")
    return Signature(
        cube=cube,
        measures=measures,
        dimensions=frozenset(query.get("dimensions", [])),
        grain=grain,
        dates=(time_member, *sorted(dates)) if len(dates) == 2 else None,  # type: ignore[arg-type]
        filters=frozenset(filters),
        having=frozenset(having),
        ranking=ranking,
        limit=None if limit == ROW_LIMIT else limit,
    )


def decline_reason(answer: str) -> str:
    """A declining answer without the list of what the analyst can answer about that follows its reason."""
    return answer.split(" I can answer")[0]


def comparable(value: Any) -> Any:
    """A cell as compared across the analyst's result and hand-written SQL: numbers to 4 places, times as text."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S")
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        try:
            return Decimal(value).quantize(Decimal("0.0001"))
        except InvalidOperation:
            return value[:19] if len(value) >= 19 and value[4:5] == "-" and value[10:11] == "T" else value
    return Decimal(str(value)).quantize(Decimal("0.0001"))


def rows_equal(analyst: Sequence[Sequence[Any]], checked: Sequence[Sequence[Any]], *, ordered: bool) -> bool:
    left = [tuple(comparable(v) for v in row) for row in analyst]
    right = [tuple(comparable(v) for v in row) for row in checked]
    if ordered:
        return left == right
    return sorted(left, key=_row_key) == sorted(right, key=_row_key)


def _row_key(row: tuple[Any, ...]) -> str:
    return json.dumps(row, default=str)


@dataclass(frozen=True)
class Verdict:
    """How the analyst did on one case: ``right``, ``declined`` (an answerable question) or ``wrong``."""

    outcome: str
    detail: str = ""
    query: dict[str, Any] | None = None  # the Cube query the analyst's SQL means


def judge(
    case: Case, suite: Suite, model: Any, sql: str | None, decline: str = "", *, now: datetime | None = None
) -> Verdict:
    """The verdict on the analyst's semantic SQL for ``case`` (``sql`` None: it declined, saying ``decline``).

    The SQL is read into a Cube query by the Core Data API's own translator over ``model`` (the deployment's
    compiled model), so the comparison is of what the SQL computes, not of how it is spelled. A question the suite
    expects declined is right only when declined.
    """
    from embedadmin.semantic.context import QueryContext
    from embedadmin.semantic.cubesql.translate import parse_statement, translate

    if sql is None:
        return Verdict("right" if case.declines else "declined", decline)
    query = translate(
        model, parse_statement(sql), QueryContext(groups=["admin"]), timezone=suite.timezone, row_limit=ROW_LIMIT
    ).query
    if case.declines:
        return Verdict("wrong", f"answered a question it should decline: {sql}", query)
    alternatives = [case, *(Case(case.question, {**other}) for other in case.spec.get("or", ()))]
    wanted = [expected(c, suite, now) for c in alternatives]
    got = [answered(query, c.spec.get("cube", suite.cube)) for c in alternatives]
    if not any(w == g for w, g in zip(wanted, got, strict=True)):
        return Verdict("wrong", f"{sql}\n      expected {wanted[0]}\n      answered {got[0]}", query)
    return Verdict("right", sql, query)
