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

A date range open on one side gives ``null`` (``~``) for its open end: ``dates: [issued_ts, ~, 2024-01-01]`` is
"before 2024" (``issued_ts < '2024-01-01'``), ``dates: [issued_ts, 2025-01-01, ~]`` is "since 2025". A filter on two
or more values may be written ``equals`` (Cube's JSON) or ``in`` (the SQL translator's ``IN``); both mean the same.

``expect: answer`` marks a question that must be answered but whose query the format cannot state (a share of a
total, two separate periods): it has no expected query and is judged by the numbers alone, the analyst's result
rows against its ``check``'s (see :func:`judge`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
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
    dates: tuple[str, str | None, str | None] | None  # time dimension, first day, day after the last (None: open)
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

    @property
    def expects_answer(self) -> bool:
        """An answerable question with no expected query (``expect: answer``): judged by its check's numbers."""
        return self.spec.get("expect") == "answer"

    @property
    def ordered(self) -> bool:
        """Whether the order of the result's rows is part of the answer: only when the question ranks. A series over
        time is compared as a set of rows, each labelled with its time (a ``check`` need not order it)."""
        return "ranking" in self.spec


@dataclass(frozen=True)
class Suite:
    name: str
    now: datetime
    timezone: str
    cube: str
    cases: tuple[Case, ...] = field(default=())


def load(name: str) -> Suite:
    return load_file(SUITES / f"{name}.yml", name)


def load_file(path: Path, name: str) -> Suite:
    """The suite in the YAML file at ``path`` (as ``tests/chat/analyst/<set>/questions.yml``), named ``name``."""
    document = yaml.safe_load(path.read_text())
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


Filter = tuple[str, str, tuple[str, ...]]


def _filter(member: str, operator: str, values: Any) -> Filter:
    """A filter as compared: ``equals`` on two or more values is ``in`` (Cube's JSON says ``equals``, the SQL
    translator says ``in`` for ``IN (...)``), ``in`` on one value is ``equals``; the same for their negations."""
    texts = _values(values)
    if operator in ("equals", "in"):
        operator = "in" if len(texts) > 1 else "equals"
    elif operator in ("notEquals", "notIn"):
        operator = "notIn" if len(texts) > 1 else "notEquals"
    return (member, operator, texts)


def _condition(member: str, operator: str, values: list[Any]) -> Filter:
    """One condition of the translated query as compared."""
    if operator in ("notEquals", "notIn"):  # SQL's "<>" and NOT IN keep rows without a value out: the translator
        values = [v for v in values if v is not None]  # adds None
    return _filter(member, operator, values)


def _group(item: dict[str, Any]) -> Filter:
    """A group of conditions in the translated query (``{"or": [...]}``, ``{"and": [...]}``) as one filter.

    An OR of values of one member (``a = 'x' OR a = 'y'``) is that member ``in`` those values, as ``a IN ('x', 'y')``
    is. Any other group is kept whole, its parts as text: it matches no spec, so the case is judged wrong by its
    query (or by its numbers where the rules of :func:`judge` allow)."""
    logic = "or" if "or" in item else "and"
    parts = [_group(part) if "member" not in part else part for part in item[logic]]
    simple = [p for p in parts if isinstance(p, dict) and p.get("operator") in ("equals", "in")]
    if logic == "or" and len(simple) == len(parts) and len({p["member"] for p in simple}) == 1:
        return _filter(simple[0]["member"], "in", [v for p in simple for v in p.get("values", [])])
    texts = [
        json.dumps(p if isinstance(p, tuple) else _condition(p["member"], p["operator"], p.get("values", [])))
        for p in parts
    ]
    return (logic, logic, tuple(sorted(texts)))


def _day(value: Any) -> str | None:
    return None if value is None else str(value)


def expected(case: Case, suite: Suite, now: datetime | None = None) -> Signature:
    """The signature a case's spec describes (relative dates resolved with the suite's clock and time zone, or
    ``now`` when the analyst ran on the real clock). A ``null`` end of ``dates`` leaves the range open there."""
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
        dates = (name(member), _day(bounds[0]), _day(bounds[1]))
    grain = (name(spec["grain"][0]), spec["grain"][1]) if "grain" in spec else None
    return Signature(
        cube=cube,
        measures=tuple(name(m) for m in spec.get("measures", ())),
        dimensions=frozenset(name(d) for d in spec.get("by", ())),
        grain=grain,
        dates=dates,
        filters=frozenset(_filter(name(m), op, v) for m, op, v in spec.get("filters", ())),
        having=frozenset(_filter(name(m), op, v) for m, op, v in spec.get("having", ())),
        ranking=spec.get("ranking"),
        limit=spec.get("limit"),
    )


def _is_timestamp(value: Any) -> bool:
    return str(value)[:4].isdigit() and "T" in str(value)


def answered(query: dict[str, Any], cube: str) -> Signature:
    """The signature of the Cube query the analyst's SQL translates to.

    The ``gte`` and ``lt`` bounds on one time dimension are its date range, either bound alone a range open on the
    other side (``issued_ts < '2024-01-01'``: ``(issued_ts, None, '2024-01-01')``); bounds on two time dimensions,
    or two of a kind on one, stay filters. ``gt`` and ``lte`` on a time dimension stay filters too.
    """
    measures = tuple(query["measures"])
    bounds: dict[str, list[tuple[str, str]]] = {}
    filters: set[Filter] = set()
    having: set[Filter] = set()
    for item in query.get("filters", []):
        if "member" not in item:
            filters.add(_group(item))
            continue
        member, operator, values = item["member"], item["operator"], item.get("values", [])
        if operator in ("gte", "lt") and values and _is_timestamp(values[0]):
            bounds.setdefault(member, []).append((operator, str(values[0])[:10]))
            continue
        (having if member in measures else filters).add(_condition(member, operator, values))
    grain = None
    for time_dimension in query.get("timeDimensions", []):
        if time_dimension.get("granularity"):
            grain = (time_dimension["dimension"], time_dimension["granularity"])
        if time_dimension.get("dateRange"):  # a rolling window's range, which the translator makes inclusive
            start, end = time_dimension["dateRange"]
            after = f"{datetime.fromisoformat(end) + timedelta(milliseconds=1):%Y-%m-%d}"
            bounds.setdefault(time_dimension["dimension"], []).extend([("gte", start[:10]), ("lt", after)])
    dates = None
    if len(bounds) == 1 and all(len({op for op, _ in found}) == len(found) for found in bounds.values()):
        [(member, found)] = bounds.items()
        given = dict(found)
        dates = (member, given.get("gte"), given.get("lt"))
    else:
        filters.update((member, op, (day,)) for member, found in bounds.items() for op, day in found)
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
        dates=dates,
        filters=frozenset(filters),
        having=frozenset(having),
        ranking=ranking,
        limit=None if limit == ROW_LIMIT else limit,
    )


def differences(wanted: Signature, got: Signature) -> list[str]:
    """The fields in which two signatures differ (``cube`` is a label and is left out)."""
    fields = ("measures", "dimensions", "grain", "dates", "filters", "having", "ranking", "limit")
    return [f for f in fields if getattr(wanted, f) != getattr(got, f)]


def dates_spelled_apart(wanted: Signature, got: Signature) -> bool:
    """Whether two signatures differ in how a date range is spelled and in nothing else: the same time dimension,
    every bound that both give equal, and a bound given by one left open by the other (``[2025-01-01, 2025-08-21)``
    against ``>= 2025-01-01``). A range on another dimension, a bound moved, a range added or dropped, or any other
    field that differs is not a spelling."""
    if wanted == got or differences(wanted, got) != ["dates"] or wanted.dates is None or got.dates is None:
        return False
    (member, *first), (other, *second) = wanted.dates, got.dates
    return member == other and all(a == b or a is None or b is None for a, b in zip(first, second, strict=True))


def decline_reason(answer: str) -> str:
    """A declining answer without the list of what the analyst can answer about that follows its reason."""
    return answer.split(" I can answer")[0]


def comparable(value: Any) -> Any:
    """A cell as compared across the analyst's result and hand-written SQL: numbers to 4 places, times as text
    (a date, or a date's text, as its midnight)."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S")
    if isinstance(value, date):
        return value.strftime("%Y-%m-%dT00:00:00")
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        try:
            return Decimal(value).quantize(Decimal("0.0001"))
        except InvalidOperation:
            if len(value) == 10 and value[4:5] == "-" and value[7:8] == "-" and value[:4].isdigit():
                return f"{value}T00:00:00"
            return value[:19] if len(value) >= 19 and value[4:5] == "-" and value[10:11] == "T" else value
    return Decimal(str(value)).quantize(Decimal("0.0001"))


def rows_equal(analyst: Sequence[Sequence[Any]], checked: Sequence[Sequence[Any]], *, ordered: bool) -> bool:
    left = [tuple(comparable(v) for v in row) for row in analyst]
    right = [tuple(comparable(v) for v in row) for row in checked]
    if ordered:
        return left == right
    return sorted(left, key=_row_key) == sorted(right, key=_row_key)


def rounded_like(analyst: Sequence[Sequence[Any]], checked: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """The analyst's numbers rounded to the places of the check's, cell by cell, where the check rounds (an
    ``expect: answer`` check written ``ROUND(100.0 * ..., 2)`` states 56.98 for 56.9767...)."""
    if len(analyst) != len(checked):
        return [list(row) for row in analyst]
    rounded = []
    for row, check in zip(analyst, checked, strict=True):
        cells = list(row)
        for i, (cell, wanted) in enumerate(zip(row, check, strict=False)):
            places = _places(wanted)
            number = _number(cell)
            if places is not None and 0 < places < 4 and number is not None:
                cells[i] = number.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
        rounded.append(cells)
    return rounded


def _places(value: Any) -> int | None:
    number = _number(value)
    if number is None:
        return None
    exponent = number.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool) or value is None or isinstance(value, datetime | date):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _row_key(row: tuple[Any, ...]) -> str:
    return json.dumps(row, default=str)


@dataclass(frozen=True)
class Verdict:
    """How the analyst did on one case: ``right``, ``declined`` (an answerable question) or ``wrong``; ``basis``
    says what decided it: ``query`` (its signature), ``query, rows`` (a matching query whose rows differ),
    ``rows`` (an ``expect: answer`` case), ``dates, rows`` (a date range spelled apart) or ``declined``."""

    outcome: str
    detail: str = ""
    query: dict[str, Any] | None = None  # the Cube query the analyst's SQL means
    basis: str = ""


def judge(
    case: Case,
    suite: Suite,
    model: Any,
    sql: str | None,
    decline: str = "",
    *,
    now: datetime | None = None,
    rows: Sequence[Sequence[Any]] | None = None,
    total_rows: int | None = None,
    checked: Sequence[Sequence[Any]] | None = None,
) -> Verdict:
    """The verdict on the analyst's semantic SQL for ``case`` (``sql`` None: it declined, saying ``decline``).

    The SQL is read into a Cube query by the Core Data API's own translator over ``model`` (the deployment's
    compiled model), so the comparison is of what the SQL computes, not of how it is spelled. A question the suite
    expects declined is right only when declined; an answerable one that is declined is ``declined``.

    Given the analyst's result (``rows``, of ``total_rows``) and the rows of the case's ``check`` (``checked``), the
    numbers are judged too, exactly (:func:`rows_equal`; in order only when the case ranks; every row of the result
    must be there). An answer is then:

    - right when its query means what the case expects (the case's signature or an ``or`` alternative's) and its
      rows equal the check's; wrong when the query matches and the rows do not;
    - for ``expect: answer`` (no expected query): right when its rows equal the check's, in any order; wrong
      otherwise;
    - right when its signature differs from an alternative's only in how the date range is spelled (one gives a
      bound the other leaves open, on the same time dimension: "since March 1" as ``>= 2025-03-01`` against the
      case's ``[2025-03-01, today]``; see :func:`dates_spelled_apart`) and its rows equal the check's; wrong when
      they do not, and wrong when the case has no check;
    - wrong in every other case, even when its rows happen to equal the check's: a query that means something
      else is not right because this dataset gives it the same numbers.

    Without ``checked`` (the callers that compare the numbers themselves) the query alone decides, as it always has.
    """
    from embedadmin.semantic.context import QueryContext
    from embedadmin.semantic.cubesql.postprocess import inner_statement
    from embedadmin.semantic.cubesql.translate import parse_statement, translate

    if sql is None:
        return Verdict("right" if case.declines else "declined", decline, basis="declined")
    statement = parse_statement(sql)  # a number computed on a query's rows (a share) is judged by that query
    read = inner_statement(statement) or statement
    query = translate(model, read, QueryContext(groups=["admin"]), timezone=suite.timezone, row_limit=ROW_LIMIT).query
    if case.declines:
        return Verdict("wrong", f"answered a question it should decline: {sql}", query, "query")

    def numbers_right(ordered: bool) -> tuple[bool, str]:
        assert checked is not None
        if rows is None or (total_rows is not None and total_rows > len(rows)):
            return False, f"its result is incomplete ({total_rows} rows, {0 if rows is None else len(rows)} given)"
        if rows_equal(rows, checked, ordered=ordered):
            return True, ""
        return False, f"rows {list(rows)[:5]} differ from the check's {list(checked)[:5]}"

    if case.expects_answer:
        if checked is None:
            raise ValueError(f"{case.question}: an `expect: answer` case is judged by its check's rows")
        if rows is not None and "round(" in str(case.spec.get("check", "")).lower():
            rows = rounded_like(rows, checked)  # judged at the precision its check rounds to
        right, why = numbers_right(ordered=False)
        return Verdict("right" if right else "wrong", sql if right else f"{sql}\n      {why}", query, "rows")
    alternatives = [case, *(Case(case.question, {**other}) for other in case.spec.get("or", ()))]
    wanted = [expected(c, suite, now) for c in alternatives]
    got = [answered(query, c.spec.get("cube", suite.cube)) for c in alternatives]
    if any(w == g for w, g in zip(wanted, got, strict=True)):
        if checked is not None:
            right, why = numbers_right(case.ordered)
            if not right:
                return Verdict("wrong", f"{sql}\n      {why}", query, "query, rows")
        return Verdict("right", sql, query, "query")
    mismatch = f"{sql}\n      expected {wanted[0]}\n      answered {got[0]}"
    if checked is not None and any(dates_spelled_apart(w, g) for w, g in zip(wanted, got, strict=True)):
        right, why = numbers_right(case.ordered)
        if right:
            return Verdict("right", f"{sql}\n      its date range is spelled apart; rows equal", query, "dates, rows")
        return Verdict("wrong", f"{mismatch}\n      {why}", query, "dates, rows")
    return Verdict("wrong", mismatch, query, "query")
