"""Query filters as SQL conditions. Every value a caller sent becomes a bound parameter (``$1``, ``$2``...).

Operator semantics follow Cube's ``BaseFilter``: ``equals`` with several values is ``IN``; ``notEquals``
keeps NULL rows unless ``null`` is one of the values; ``contains``/``startsWith``/``endsWith`` are
case-insensitive ``ILIKE`` (the value's own ``%``, ``_`` and ``\\`` match literally); date operators compare
the stored column with the query-time-zone bounds converted to UTC instants.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo

from sqlglot import exp

from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.model import DATE_OPERATORS
from embedadmin.semantic.query.dates import format_local, local_to_utc, pad_end, pad_start
from embedadmin.semantic.query.normalized import Contradiction, FilterCondition, FilterGroup, FilterNode
from embedadmin.semantic.sql.expressions import TIMESTAMPTZ, all_of, any_of, wrap

_INTEGER = re.compile(r"^[-+]?\d{1,18}$")
_DECIMAL = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")
_LIKE_SPECIAL = re.compile(r"([\\%_])")
_NEGATIVE_LIKE = {"notContains": "contains", "notStartsWith": "startsWith", "notEndsWith": "endsWith"}
_LIKE = ("contains", "startsWith", "endsWith")
# Operators whose values are bound as the member's type (typed_value); the others bind text or dates.
TYPED_OPERATORS = ("equals", "notEquals", "in", "notIn", "gt", "gte", "lt", "lte")
# The largest power of ten (either way) a number filter value may have: DuckDB binds a decimal beyond a double's
# range as a double (1e-400 would become 0), so both databases read the same number only within it.
MAX_EXPONENT = 300
# The spellings of a boolean, bound as Python booleans; "1" and "0" stay text, which each database reads as the
# column's type (a boolean, or the integer column a boolean dimension may stand for).
_BOOLEAN_WORDS: dict[str, bool | str] = {"true": True, "t": True, "yes": True, "on": True, "1": "1"}
_BOOLEAN_WORDS |= {"false": False, "f": False, "no": False, "off": False, "0": "0"}


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a bound value came from: value ``index`` of the query's filter leaf ``leaf`` (depth-first order
    over ``NormalizedQuery.filters``), turned into the bound value by ``bound_value(how, arg, ...)``."""

    leaf: int
    index: int
    how: str
    arg: str


class Parameters:
    """The bound values of one statement, in ``$n`` order, with the :class:`Origin` of each that came
    from a filter value of the query itself (None for the others: policies, date ranges, model values).

    ``leaves`` maps ``id(leaf)`` of the query's own filter leaves to their depth-first position.
    """

    def __init__(self, leaves: dict[int, int] | None = None) -> None:
        self.values: list[Any] = []
        self.origins: list[Origin | None] = []
        self.leaves = leaves or {}

    def add(self, value: Any, origin: Origin | None = None) -> exp.Expression:
        self.values.append(value)
        self.origins.append(origin)
        return exp.Parameter(this=exp.Literal.number(len(self.values)))


def typed_value(value: str, member_type: str) -> Any:
    """The Python value to bind for a filter value of a member of ``member_type``: a number or a boolean for
    those types (a value that is neither is the client's error, 400, not the data source's), else the text."""
    if member_type == "number":
        text = value.strip()
        if _INTEGER.match(text):
            return int(text)
        number = None
        if _DECIMAL.match(text):
            with contextlib.suppress(InvalidOperation):
                number = Decimal(text)
        if number is None:
            raise QueryError(f"Invalid filter value '{value}': a number is expected")
        if abs(number.adjusted()) > MAX_EXPONENT:
            raise QueryError(f"Invalid filter value '{value}': the number is out of range")
        return number
    if member_type == "boolean":
        known = _BOOLEAN_WORDS.get(value.strip().lower())
        if known is None:
            raise QueryError(f"Invalid filter value '{value}': a boolean is expected (true or false)")
        return known
    return value


def check_typed_values(member: str, member_type: str, values: tuple[str | None, ...]) -> None:
    """Refuse (400, naming ``member``) a value :func:`typed_value` cannot bind for a member of this type."""
    for value in values:
        if value is not None:
            try:
                typed_value(value, member_type)
            except QueryError as exc:
                raise QueryError(f"{exc.message} for {member}") from None


def instant_text(local: str, zone: ZoneInfo) -> str:
    """A local timestamp of ``zone`` as the UTC instant bound for it (``...Z``)."""
    utc = local_to_utc(local, zone)
    return f"{format_local(utc)}Z"


def bound_value(how: str, arg: str, value: str | None, zone: ZoneInfo) -> Any:
    """The value bound for a filter value: ``typed`` as a member of type ``arg``; ``start``/``end`` as the
    first/last instant of a local date or time; ``like`` as the pattern of operator ``arg``."""
    if how == "typed":
        return typed_value(value, arg) if value is not None else None
    if how == "start":
        return instant_text(pad_start(str(value), zone), zone)
    if how == "end":
        return instant_text(pad_end(str(value), zone), zone)
    escaped = _LIKE_SPECIAL.sub(r"\\\1", str(value))
    return {"contains": f"%{escaped}%", "startsWith": f"{escaped}%", "endsWith": f"%{escaped}"}[arg]


class FilterCompiler:
    """Turns filter trees into conditions; ``member_sql`` gives the expression a member name stands for."""

    def __init__(
        self,
        params: Parameters,
        zone: ZoneInfo,
        member_sql: Callable[[str], exp.Expression],
        member_type: Callable[[str], str],
        measure_filter: Callable[[str], exp.Expression],
    ) -> None:
        self.params = params
        self.zone = zone
        self.member_sql = member_sql
        self.member_type = member_type
        self.measure_filter = measure_filter
        self._leaf: int | None = None  # the query filter leaf being compiled, if it is one

    def _bind(self, index: int, how: str, arg: str, value: str | None) -> exp.Expression:
        """Bind filter value ``index`` of the current leaf (see :func:`bound_value`), recording its origin."""
        origin = Origin(self._leaf, index, how, arg) if self._leaf is not None else None
        return self.params.add(bound_value(how, arg, value, self.zone), origin)

    def condition(self, node: FilterNode) -> exp.Expression:
        if isinstance(node, Contradiction):
            return exp.EQ(this=exp.Literal.number(1), expression=exp.Literal.number(0))
        if isinstance(node, FilterGroup):
            parts = [wrap(self.condition(item)) for item in node.items]
            if not parts:
                return exp.true() if node.kind == "and" else exp.false()
            if len(parts) == 1:
                return parts[0]
            return all_of(*parts) if node.kind == "and" else exp.Paren(this=any_of(*parts))
        return exp.Paren(this=self.leaf(node))

    def leaf(self, node: FilterCondition) -> exp.Expression:
        outer, self._leaf = self._leaf, self.params.leaves.get(id(node))
        try:
            return self._leaf_condition(node)
        finally:
            self._leaf = outer

    def _leaf_condition(self, node: FilterCondition) -> exp.Expression:
        operator = node.operator
        if operator == "measureFilter":
            return self.measure_filter(node.member)
        column = wrap(self.member_sql(node.member))
        kind = self.member_type(node.member)
        values = node.values or ()
        if operator == "set":
            return exp.Not(this=exp.Is(this=column, expression=exp.Null()))
        if operator == "notSet":
            return exp.Is(this=column, expression=exp.Null())
        if operator in DATE_OPERATORS:
            return self.date_condition(operator, column, values)
        if operator in ("gt", "gte", "lt", "lte"):
            comparison = {"gt": exp.GT, "gte": exp.GTE, "lt": exp.LT, "lte": exp.LTE}[operator]
            return comparison(this=column, expression=self.value(values[0], kind, 0))
        if operator in ("equals", "in"):
            return self.membership(column, values, kind, negated=False)
        if operator in ("notEquals", "notIn"):
            return self.membership(column, values, kind, negated=True)
        if operator in _LIKE:
            return self.like(column, kind, operator, values, negated=False)
        return self.like(column, kind, _NEGATIVE_LIKE[operator], values, negated=True)

    def value(self, value: str | None, kind: str, index: int) -> exp.Expression:
        if kind == "time" and value is not None:
            return self._instant(index, "start", value)
        return self._bind(index, "typed", kind, value)

    def _instant(self, index: int, how: str, value: str | None) -> exp.Expression:
        return exp.Cast(this=self._bind(index, how, "", value), to=TIMESTAMPTZ.copy())

    def instant(self, local: str) -> exp.Expression:
        """A local timestamp of the query time zone as a ``timestamptz`` parameter (UTC)."""
        return exp.Cast(this=self.params.add(instant_text(local, self.zone)), to=TIMESTAMPTZ.copy())

    def membership(
        self, column: exp.Expression, values: tuple[str | None, ...], kind: str, *, negated: bool
    ) -> exp.Expression:
        present = [(i, v) for i, v in enumerate(values) if v is not None]
        has_null = len(present) != len(values)
        test: exp.Expression | None = None
        if len(present) == 1:
            comparison = exp.NEQ if negated else exp.EQ
            test = comparison(this=column, expression=self.value(present[0][1], kind, present[0][0]))
        elif present:
            test = exp.In(this=column, expressions=[self.value(v, kind, i) for i, v in present])
            if negated:
                test = exp.Not(this=test)
        null_test = exp.Is(this=column.copy(), expression=exp.Null())
        if negated:
            if has_null:
                not_null = exp.Not(this=null_test)
                return not_null if test is None else all_of(test, not_null)
            return any_of(test, null_test) if test is not None else exp.true()
        if has_null:
            return null_test if test is None else any_of(test, null_test)
        return test if test is not None else exp.false()

    def like(
        self, column: exp.Expression, member_type: str, kind: str, values: tuple[str | None, ...], *, negated: bool
    ) -> exp.Expression:
        text = column if member_type == "string" else exp.Cast(this=column, to=exp.DataType.build("text"))
        tests: list[exp.Expression] = []
        has_null = any(v is None for v in values)
        for index, value in enumerate(values):
            if value is None:
                continue
            test: exp.Expression = exp.Escape(
                this=exp.ILike(this=text.copy(), expression=self._bind(index, "like", kind, value)),
                expression=exp.Literal.string("\\"),
            )
            tests.append(exp.Not(this=test) if negated else test)
        null_test = exp.Is(this=column.copy(), expression=exp.Null())
        if negated:
            combined = all_of(*tests) if tests else exp.true()
            if has_null:
                return all_of(combined, exp.Not(this=null_test))
            return any_of(exp.Paren(this=combined), null_test)
        combined = any_of(*tests) if tests else exp.false()
        return any_of(combined, null_test) if has_null else combined

    def date_condition(self, operator: str, column: exp.Expression, values: tuple[str | None, ...]) -> exp.Expression:
        last = 1 if len(values) > 1 and operator != "onTheDate" else 0

        def start() -> exp.Expression:
            return self._instant(0, "start", values[0])

        def end() -> exp.Expression:
            return self._instant(last, "end", values[last])

        if operator in ("inDateRange", "onTheDate"):
            return all_of(exp.GTE(this=column, expression=start()), exp.LTE(this=column.copy(), expression=end()))
        if operator == "notInDateRange":
            return any_of(exp.LT(this=column, expression=start()), exp.GT(this=column.copy(), expression=end()))
        comparison, bound = {
            "beforeDate": (exp.LT, start),
            "beforeOrOnDate": (exp.LTE, end),
            "afterDate": (exp.GT, end),
            "afterOrOnDate": (exp.GTE, start),
        }[operator]
        return comparison(this=column, expression=bound())
