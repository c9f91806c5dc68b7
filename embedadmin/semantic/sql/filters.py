"""Query filters as SQL conditions. Every value a caller sent becomes a bound parameter (``$1``, ``$2``...).

Operator semantics follow Cube's ``BaseFilter``: ``equals`` with several values is ``IN``; ``notEquals``
keeps NULL rows unless ``null`` is one of the values; ``contains``/``startsWith``/``endsWith`` are
case-insensitive ``ILIKE`` (the value's own ``%``, ``_`` and ``\\`` match literally); date operators compare
the stored column with the query-time-zone bounds converted to UTC instants.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from sqlglot import exp

from embedadmin.semantic.modeling.model import DATE_OPERATORS
from embedadmin.semantic.query.dates import format_local, local_to_utc, pad_end, pad_start
from embedadmin.semantic.query.normalized import Contradiction, FilterCondition, FilterGroup, FilterNode
from embedadmin.semantic.query.values import typed_value
from embedadmin.semantic.sql.expressions import TIMESTAMPTZ, all_of, any_of, wrap

_LIKE_SPECIAL = re.compile(r"([\\%_])")
_NEGATIVE_LIKE = {"notContains": "contains", "notStartsWith": "startsWith", "notEndsWith": "endsWith"}
_LIKE = ("contains", "startsWith", "endsWith")


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

    def add(self, value: Any, origin: Origin | None = None) -> exp.Expr:
        self.values.append(value)
        self.origins.append(origin)
        return exp.Parameter(this=exp.Literal.number(len(self.values)))


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
        member_sql: Callable[[str], exp.Expr],
        member_type: Callable[[str], str],
        measure_filter: Callable[[str], exp.Expr],
    ) -> None:
        self.params = params
        self.zone = zone
        self.member_sql = member_sql
        self.member_type = member_type
        self.measure_filter = measure_filter
        self._leaf: int | None = None  # the query filter leaf being compiled, if it is one

    def _bind(self, index: int, how: str, arg: str, value: str | None) -> exp.Expr:
        """Bind filter value ``index`` of the current leaf (see :func:`bound_value`), recording its origin."""
        origin = Origin(self._leaf, index, how, arg) if self._leaf is not None else None
        return self.params.add(bound_value(how, arg, value, self.zone), origin)

    def condition(self, node: FilterNode) -> exp.Expr:
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

    def leaf(self, node: FilterCondition) -> exp.Expr:
        outer, self._leaf = self._leaf, self.params.leaves.get(id(node))
        try:
            return self._leaf_condition(node)
        finally:
            self._leaf = outer

    def _leaf_condition(self, node: FilterCondition) -> exp.Expr:
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

    def arguments(self, node: FilterCondition) -> list[Callable[[], exp.Expr]]:
        """A condition's values as Cube passes them to a ``FILTER_PARAMS`` function (``filterParams``), each bound
        when called: a date operator's bounds as UTC instants (text), the others' values as the member's type (a
        pattern operator's value as written)."""
        values = node.values or ()
        operator = node.operator
        kind = self.member_type(node.member)

        def bind(index: int, how: str, arg: str) -> Callable[[], exp.Expr]:
            def bound() -> exp.Expr:
                outer, self._leaf = self._leaf, self.params.leaves.get(id(node))
                try:
                    return self._bind(index, how, arg, values[index])
                finally:
                    self._leaf = outer

            return bound

        if operator in DATE_OPERATORS:
            last = len(values) - 1 if operator != "onTheDate" else 0
            if operator in ("inDateRange", "notInDateRange", "onTheDate"):
                return [bind(0, "start", ""), bind(last, "end", "")]
            how = "start" if operator in ("beforeDate", "afterOrOnDate") else "end"
            return [bind(0 if how == "start" else last, how, "")]
        if kind == "time":
            return [bind(i, "start", "") if v is not None else bind(i, "typed", kind) for i, v in enumerate(values)]
        typed = "string" if operator in (*_LIKE, *_NEGATIVE_LIKE) else kind
        return [bind(i, "typed", typed) for i in range(len(values))]

    def value(self, value: str | None, kind: str, index: int) -> exp.Expr:
        if kind == "time" and value is not None:
            return self._instant(index, "start", value)
        return self._bind(index, "typed", kind, value)

    def _instant(self, index: int, how: str, value: str | None) -> exp.Expr:
        return exp.Cast(this=self._bind(index, how, "", value), to=TIMESTAMPTZ.copy())

    def instant(self, local: str) -> exp.Expr:
        """A local timestamp of the query time zone as a ``timestamptz`` parameter (UTC)."""
        return exp.Cast(this=self.params.add(instant_text(local, self.zone)), to=TIMESTAMPTZ.copy())

    def membership(self, column: exp.Expr, values: tuple[str | None, ...], kind: str, *, negated: bool) -> exp.Expr:
        present = [(i, v) for i, v in enumerate(values) if v is not None]
        has_null = len(present) != len(values)
        test: exp.Expr | None = None
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
        self, column: exp.Expr, member_type: str, kind: str, values: tuple[str | None, ...], *, negated: bool
    ) -> exp.Expr:
        text = column if member_type == "string" else exp.Cast(this=column, to=exp.DataType.build("text"))
        tests: list[exp.Expr] = []
        has_null = any(v is None for v in values)
        for index, value in enumerate(values):
            if value is None:
                continue
            test: exp.Expr = exp.Escape(
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

    def date_condition(self, operator: str, column: exp.Expr, values: tuple[str | None, ...]) -> exp.Expr:
        last = 1 if len(values) > 1 and operator != "onTheDate" else 0

        def start() -> exp.Expr:
            return self._instant(0, "start", values[0])

        def end() -> exp.Expr:
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
