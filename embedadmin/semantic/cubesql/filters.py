"""``WHERE`` and ``HAVING`` of a semantic SQL statement as Cube query filters.

Every condition becomes a filter the semantic layer already compiles (with bound parameters), chosen so the
result matches what the SQL means, NULLs included: ``x <> v`` is ``notEquals [v, null]`` (Cube's
``notEquals`` alone keeps NULL rows), ``NOT (a OR b)`` is pushed down with De Morgan (exact in SQL's
three-valued logic), ``ILIKE '%v%'`` is ``contains``. What has no exact equivalent is refused: ``LIKE`` with
letters (case-sensitive, while Cube matches case-insensitively), ``_`` wildcards, comparisons with NULL,
two columns compared with each other. Segments are boolean columns: ``WHERE is_completed`` (or
``IS TRUE``), in the top-level ``AND`` only.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from dateutil.relativedelta import relativedelta
from sqlglot import exp

from embedadmin.semantic.cubesql.terms import Term, sql_text
from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.intervals import parse_interval
from embedadmin.semantic.query.dates import format_local, local_now, pad_start
from embedadmin.semantic.query.values import NUMBER_TEXT

Filter = dict[str, Any]
Operand = Callable[[exp.Expr], Term]
# comparison -> (operator, operator when negated)
_COMPARISONS: dict[type[exp.Expr], tuple[str, str]] = {
    exp.EQ: ("equals", "notEquals"),
    exp.NEQ: ("notEquals", "equals"),
    exp.GT: ("gt", "lte"),
    exp.GTE: ("gte", "lt"),
    exp.LT: ("lt", "gte"),
    exp.LTE: ("lte", "gt"),
}
# ``5 < x`` is ``x > 5``
_MIRRORED: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
}
_PATTERN_OPERATORS = {
    (True, True): "contains",
    (True, False): "endsWith",
    (False, True): "startsWith",
}
_NEGATED = {
    "equals": "notEquals",
    "in": "notIn",
    "contains": "notContains",
    "startsWith": "notStartsWith",
    "endsWith": "notEndsWith",
}


def _leaf(term: Term, operator: str, values: list[str | None] | None = None) -> Filter:
    body: Filter = {"member": term.name, "operator": operator}
    if values is not None:
        # Cube's negative operators keep NULL rows unless null is a value; SQL's never match NULL.
        body["values"] = [*values, None] if operator in _NEGATED.values() else values
    return body


def conjuncts(node: exp.Expr) -> list[exp.Expr]:
    """The parts of a top-level ``a AND b AND c``."""
    return operands(node, exp.And)


def operands(node: exp.Expr, kind: type[exp.Connector]) -> list[exp.Expr]:
    """The operands of ``a OR b OR c`` (or AND), flattened through parentheses; iterative, as generated SQL
    can chain thousands of them."""
    found: list[exp.Expr] = []
    stack = [node]
    while stack:
        current = stack.pop()
        while isinstance(current, exp.Paren):
            current = current.this
        if isinstance(current, kind):
            stack.extend((current.expression, current.this))
        else:
            found.append(current)
    return found


class Conditions:
    """Translates one clause's conditions; ``operand`` resolves (and checks) the column side of each test."""

    def __init__(self, operand: Operand, clause: str, zone: ZoneInfo, now: datetime | None) -> None:
        self.operand = operand
        self.clause = clause
        self.zone = zone
        self.now = now

    def condition(self, node: exp.Expr, negated: bool = False) -> Filter:
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Not):
            return self.condition(node.this, not negated)
        if node.args.get("negate") and not isinstance(node, exp.Like | exp.ILike):
            negated = not negated  # ``IS NOT NULL``, ``NOT IN`` and the like, written as one node
        if isinstance(node, exp.And | exp.Or):
            kind = "and" if isinstance(node, exp.And) != negated else "or"
            items = [self.condition(part, negated) for part in operands(node, type(node))]
            return {kind: items}
        if type(node) in _COMPARISONS:
            return self.comparison(node, negated)
        if isinstance(node, exp.In):
            return self.membership(node, negated)
        if isinstance(node, exp.Is):
            return self.is_test(node, negated)
        if isinstance(node, exp.Between):
            return self.between(node, negated)
        if isinstance(node, exp.Like | exp.ILike | exp.Escape):
            return self.pattern(node, negated)
        if isinstance(node, exp.Column):
            term = self.boolean_operand(node)
            return _leaf(term, "equals", ["false" if negated else "true"])
        raise QueryError(f"Unsupported condition in {self.clause}: {sql_text(node)}")

    # -- operands -----------------------------------------------------------------------------------

    def boolean_operand(self, node: exp.Expr) -> Term:
        term = self.operand(node)
        if term.value_type != "boolean":
            raise QueryError(f"'{term.name}' is not a boolean column: compare it with a value")
        return term

    def column_and_value(self, node: exp.Binary) -> tuple[Term, exp.Expr, bool]:
        """(column term, value node, swapped) of a binary test with a column on one side."""
        left, right = node.this, node.expression
        swapped = _is_value(left) and not _is_value(right)
        if swapped:
            left, right = right, left
        if _is_value(left) or not _is_value(right):
            raise QueryError(
                f"Conditions compare one column with values: {sql_text(node)} is not supported in {self.clause}"
            )
        return self.operand(left), right, swapped

    def value(self, node: exp.Expr, term: Term) -> str:
        """A literal as a filter value, checked against the column's type; NULL refused."""
        text = self.literal(node)
        if text is None:
            raise QueryError(f"Comparing '{term.name}' with NULL never matches: use IS NULL or IS NOT NULL")
        value_type = term.value_type
        if value_type == "time":
            return pad_start(text, self.zone)
        if value_type == "number" and not NUMBER_TEXT.match(text.strip()):
            raise QueryError(f"'{text}' is not a number, as '{term.name}' needs")
        if value_type == "boolean" and text.lower() not in ("true", "false"):
            raise QueryError(f"'{text}' is not a boolean, as '{term.name}' needs")
        return text.lower() if value_type == "boolean" else text

    def literal(self, node: exp.Expr) -> str | None:
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.Boolean):
            return "true" if node.this else "false"
        if isinstance(node, exp.Literal):
            return node.this
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
            return f"-{node.this.this}"
        if isinstance(node, exp.Cast) and _is_value(node.this):
            return self.literal(node.this)
        moment = self.moment(node)
        if moment is not None:
            return format_local(moment)
        raise QueryError(f"Only literal values can be compared with columns, got {sql_text(node)}")

    def moment(self, node: exp.Expr) -> datetime | None:
        """``NOW()``, ``CURRENT_DATE``, ``CURRENT_TIMESTAMP``, and those +/- ``INTERVAL '...'``, in the query zone."""
        if isinstance(node, exp.CurrentTimestamp):
            return local_now(self.now, self.zone)
        if isinstance(node, exp.CurrentDate):
            return local_now(self.now, self.zone).replace(hour=0, minute=0, second=0, microsecond=0)
        if isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval):
            start = self.moment(node.this)
            if start is None:
                return None
            shift = _interval(node.expression)
            try:
                return start + shift if isinstance(node, exp.Add) else start - shift
            except (OverflowError, ValueError):  # beyond the years 1-9999
                raise QueryError(f"Date out of range: {sql_text(node)}") from None
        return None

    # -- tests --------------------------------------------------------------------------------------

    def comparison(self, node: exp.Expr, negated: bool) -> Filter:
        assert isinstance(node, exp.Binary)
        term, value, swapped = self.column_and_value(node)
        kind = _MIRRORED.get(type(node), type(node)) if swapped else type(node)
        operator = _COMPARISONS[kind][1 if negated else 0]
        return _leaf(term, operator, [self.value(value, term)])

    def membership(self, node: exp.In, negated: bool) -> Filter:
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            raise QueryError(f"Subqueries are not supported in {self.clause}")
        term = self.operand(node.this)
        values: list[str | None] = [self.value(item, term) for item in node.expressions]
        return _leaf(term, "notIn" if negated else "in", values)

    def is_test(self, node: exp.Is, negated: bool) -> Filter:
        target = node.expression
        if isinstance(target, exp.Null):
            return _leaf(self.operand(node.this), "set" if negated else "notSet")
        if isinstance(target, exp.Boolean):
            term = self.boolean_operand(node.this)
            value = "true" if target.this else "false"
            # IS NOT TRUE keeps NULL rows: Cube's notEquals without null in its values does the same.
            return {"member": term.name, "operator": "notEquals" if negated else "equals", "values": [value]}
        raise QueryError(f"Unsupported condition in {self.clause}: {sql_text(node)}")

    def between(self, node: exp.Between, negated: bool) -> Filter:
        if node.args.get("symmetric"):
            raise QueryError("BETWEEN SYMMETRIC is not supported")
        term = self.operand(node.this)
        low, high = self.value(node.args["low"], term), self.value(node.args["high"], term)
        if negated:
            return {"or": [_leaf(term, "lt", [low]), _leaf(term, "gt", [high])]}
        return {"and": [_leaf(term, "gte", [low]), _leaf(term, "lte", [high])]}

    def pattern(self, node: exp.Expr, negated: bool) -> Filter:
        """``[NOT] LIKE/ILIKE '<pattern>'`` as contains/startsWith/endsWith (or equals for a LIKE without ``%``)."""
        if isinstance(node, exp.Escape):
            escape = self.literal(node.expression)
            if escape != "\\":
                raise QueryError("LIKE ... ESCAPE is supported with '\\' only")
            node = node.this
        if not isinstance(node, exp.Like | exp.ILike):
            raise QueryError(f"Unsupported condition in {self.clause}: {sql_text(node)}")
        negated = negated != bool(node.args.get("negate"))
        term = self.operand(node.this)
        if term.value_type != "string":
            raise QueryError(f"LIKE and ILIKE need a string column, but '{term.name}' is {term.value_type}")
        pattern = self.literal(node.expression)
        if pattern is None:
            raise QueryError(f"Comparing '{term.name}' with NULL never matches: use IS NULL or IS NOT NULL")
        leading, text, trailing = _split_pattern(pattern)
        insensitive = isinstance(node, exp.ILike)
        if not leading and not trailing:
            if insensitive:
                raise QueryError("ILIKE without % is a case-insensitive equality, which is not supported: use =")
            return _leaf(term, "notEquals" if negated else "equals", [text])
        if not insensitive and text.lower() != text.upper():
            raise QueryError(
                "LIKE is case-sensitive and the semantic layer matches patterns case-insensitively: use ILIKE"
            )
        operator = _PATTERN_OPERATORS[(leading, trailing)]
        return _leaf(term, _NEGATED[operator] if negated else operator, [text])


def _is_value(node: exp.Expr) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Literal | exp.Null | exp.Boolean | exp.CurrentTimestamp | exp.CurrentDate):
        return True
    if isinstance(node, exp.Neg | exp.Cast):
        return _is_value(node.this)
    if isinstance(node, exp.Add | exp.Sub):
        return isinstance(node.expression, exp.Interval) and _is_value(node.this)
    return False


def _interval(node: exp.Interval) -> relativedelta:
    unit = node.args.get("unit")
    text = f"{node.this.name} {unit.name}" if unit is not None else node.this.name
    try:
        parsed = parse_interval(text.lower())
        return relativedelta(months=parsed.months) + timedelta(seconds=parsed.seconds)
    except (OverflowError, ValueError):  # unreadable, or more days than a timedelta holds
        raise QueryError(f"Can't parse interval '{text}'") from None


def _split_pattern(pattern: str) -> tuple[bool, str, bool]:
    """(leading %, literal text, trailing %) of a LIKE pattern; ``_`` and inner ``%`` refused."""
    tokens: list[str | None] = []  # a literal character, or None for %
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            tokens.append(pattern[index + 1])
            index += 2
            continue
        if char == "_":
            raise QueryError("The '_' wildcard of LIKE is not supported: use % at the start or end")
        tokens.append(None if char == "%" else char)
        index += 1
    leading = bool(tokens) and tokens[0] is None
    while tokens and tokens[0] is None:
        tokens.pop(0)
    trailing = bool(tokens) and tokens[-1] is None
    while tokens and tokens[-1] is None:
        tokens.pop()
    if None in tokens:
        raise QueryError("LIKE patterns may have % at the start or end only")
    return leading, "".join(t for t in tokens if t is not None), trailing or (leading and not tokens)
