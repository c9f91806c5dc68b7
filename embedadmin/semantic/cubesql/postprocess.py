"""Post-processing: a ``SELECT`` over one semantic subquery, computed on the subquery's rows.

Cube's SQL API answers ``SELECT ... FROM (SELECT ... MEASURE(m) ... FROM cube GROUP BY ...) AS t`` by running the
inner statement as a Cube query and computing the outer one on its result. So does this module: the inner statement
is translated and compiled like any other (:mod:`.translate`: access policies, row filters, bound parameters), and
the outer statement, parsed into a syntax tree, is checked here against a small grammar and evaluated in Python on
the inner rows. Nothing of the outer statement reaches a database.

The outer grammar:

- select items: columns of the subquery (by name), numeric and string literals, ``TIMESTAMP``/``DATE`` literals,
  ``+ - * /``, ``CASE WHEN ... THEN ... [ELSE ...] END``, ``NULLIF``, ``COALESCE``, ``ROUND``, ``ABS``, and the
  aggregates ``SUM``, ``AVG``, ``MIN``, ``MAX``, ``COUNT(*)``, ``COUNT([DISTINCT] x)`` (not nested), each with an
  optional alias;
- conditions: ``= <> < <= > >=``, ``IN (...)``, ``BETWEEN``, ``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT``, with
  SQL's three-valued logic;
- ``WHERE``, ``GROUP BY`` (by position, alias or expression), ``ORDER BY`` (the same, ``ASC``/``DESC``, nulls last
  ascending as PostgreSQL sorts), ``LIMIT``, ``OFFSET``.

Numbers are computed exactly (``Decimal``); ``x / 0`` is an error, as in PostgreSQL (``NULLIF(x, 0)`` avoids it).
The inner result is read whole: a subquery that reaches the SQL API's row limit is refused rather than computed
on a part of its rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, DivisionByZero, InvalidOperation, localcontext
from typing import Any

from sqlglot import exp

from embedadmin.semantic.cubesql.terms import sql_text
from embedadmin.semantic.errors import QueryError

_CLAUSES = frozenset({"expressions", "from_", "from", "where", "group", "order", "limit", "offset"})
_AGGREGATES: dict[type[exp.Expr], str] = {
    exp.Sum: "SUM",
    exp.Avg: "AVG",
    exp.Min: "MIN",
    exp.Max: "MAX",
    exp.Count: "COUNT",
}
_COMPARISONS: dict[type[exp.Expr], Callable[[Any, Any], bool]] = {
    exp.EQ: lambda a, b: a == b,
    exp.NEQ: lambda a, b: a != b,
    exp.GT: lambda a, b: a > b,
    exp.GTE: lambda a, b: a >= b,
    exp.LT: lambda a, b: a < b,
    exp.LTE: lambda a, b: a <= b,
}
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div)
_NUMBER_TYPES = frozenset({"Double", "Int64"})
_PRECISION = 38
MAX_WORK = 5_000_000  # rows x expression terms a post-processing query may compute
Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class OuterColumn:
    """One column of the outer statement: its name, its SQL API column type and its expression."""

    name: str
    column_type: str
    expression: exp.Expr


def inner_statement(select: exp.Select) -> exp.Select | None:
    """The subquery of ``SELECT ... FROM (<subquery>) [AS t]``; None when ``select`` reads a cube or view."""
    source = select.args.get("from_") or select.args.get("from")
    if source is None or not isinstance(source.this, exp.Subquery):
        return None
    subquery = source.this
    if select.args.get("joins"):
        raise QueryError("A post-processing query reads one subquery: JOIN is not supported around it")
    extras = [key for key, value in subquery.args.items() if value and key not in ("this", "alias")]
    alias = subquery.args.get("alias")
    inner = subquery.this
    if extras or (alias is not None and alias.columns) or not isinstance(inner, exp.Select):
        shown = sql_text(inner)
        raise QueryError(f"Only one SELECT can be post-processed: FROM (SELECT ...) [AS alias], got {shown}")  # noqa: S608 (a message)
    return inner


class PostProcess:
    """The outer statement of a post-processing query, checked against the inner statement's columns
    (``inputs``: name -> column type) and evaluated on its rows with :meth:`rows`."""

    def __init__(self, select: exp.Select, inputs: Sequence[tuple[str, str]]) -> None:
        for key, value in select.args.items():
            if value and key not in _CLAUSES:
                shown = "DISTINCT" if key == "distinct" else key.rstrip("_").upper()
                raise QueryError(f"Unsupported clause in a post-processing query: {shown}")
        self.types: dict[str, str] = {}
        for name, column_type in inputs:
            if name.lower() in self.types:
                raise QueryError(f"The subquery has two columns named '{name}': give each an alias")
            self.types[name.lower()] = column_type
        self.columns = tuple(self._select_item(item) for item in select.expressions)
        where = select.args.get("where")
        self.where = where.this if where is not None else None
        if self.where is not None:
            self._check(self.where, aggregates=False)
        group = select.args.get("group")
        self.group = tuple(self._reference(e, "GROUP BY") for e in group.expressions) if group is not None else ()
        for expression in self.group:
            self._check(expression, aggregates=False)
        self.aggregated = bool(self.group) or any(_has_aggregate(c.expression) for c in self.columns)
        order = select.args.get("order")
        ordered = order.expressions if order is not None else ()
        self.order = tuple(
            (self._reference(o.this, "ORDER BY", outputs_first=True), bool(o.args.get("desc")), _nulls_first(o))
            for o in ordered
        )
        for expression, _, _ in self.order:
            self._check(expression, aggregates=self.aggregated)
        if self.aggregated:
            keys = {_key(e) for e in self.group}
            for expression in [*(c.expression for c in self.columns), *(e for e, _, _ in self.order)]:
                _grouped(expression, keys)
        self.work = sum(
            len(list(e.walk()))
            for e in [*(c.expression for c in self.columns), *self.group, *(e for e, _, _ in self.order)]
        ) + (len(list(self.where.walk())) if self.where is not None else 0)
        self.limit = _count(select.args.get("limit"), "LIMIT")
        self.offset = _count(select.args.get("offset"), "OFFSET") or 0

    # -- checking -----------------------------------------------------------------------------------

    def _select_item(self, item: exp.Expr) -> OuterColumn:
        expression, name = (item.this, item.alias) if isinstance(item, exp.Alias) else (item, "")
        if isinstance(expression, exp.Star):
            raise QueryError("SELECT * is not supported in a post-processing query: name the columns")
        self._check(expression, aggregates=True)
        return OuterColumn(name or _column_name(expression), self._type(expression), expression)

    def _reference(self, node: exp.Expr, clause: str, *, outputs_first: bool = False) -> exp.Expr:
        """A GROUP BY / ORDER BY item: a select item's position or alias, else an expression. A name that is both an
        alias and a column of the subquery is the alias in ORDER BY, the column in GROUP BY (PostgreSQL's rules)."""
        if isinstance(node, exp.Literal) and not node.is_string:
            position = int(Decimal(node.this)) if node.this.isdigit() else 0
            if not 1 <= position <= len(self.columns):
                raise QueryError(f"{clause} position {node.this} is not in the select list")
            return self.columns[position - 1].expression
        plain = isinstance(node, exp.Column) and not node.table
        if plain and (outputs_first or node.name.lower() not in self.types):
            for column in self.columns:
                if column.name.lower() == node.name.lower():
                    return column.expression
        return node

    def _check(self, node: exp.Expr, *, aggregates: bool, inside: bool = False) -> None:
        """Refuse every node outside the grammar (and an aggregate where none may be, or inside another)."""
        if isinstance(node, exp.Column):
            if node.name.lower() not in self.types or isinstance(node.this, exp.Star):
                raise QueryError(f"Column '{sql_text(node)}' is not a column of the subquery")
            return
        if type(node) in _AGGREGATES:
            if not aggregates or inside:
                raise QueryError(f"Aggregate {sql_text(node)} is not allowed here")
            argument = node.this
            if isinstance(argument, exp.Distinct):
                if not isinstance(node, exp.Count) or len(argument.expressions) != 1:
                    raise QueryError(f"DISTINCT is supported in COUNT(DISTINCT x) only, got {sql_text(node)}")
                argument = argument.expressions[0]
            if isinstance(argument, exp.Star):
                if not isinstance(node, exp.Count):
                    raise QueryError(f"{sql_text(node)} is not supported")
                return
            self._check(argument, aggregates=aggregates, inside=True)
            return
        children: list[exp.Expr]
        if isinstance(node, exp.Literal | exp.Null | exp.Boolean):
            return
        if isinstance(node, exp.Cast):
            if not isinstance(node.this, exp.Literal) or not node.this.is_string or _cast_kind(node) is None:
                raise QueryError(f"Only TIMESTAMP '...' and DATE '...' literals are cast, got {sql_text(node)}")
            return
        if isinstance(node, (*_ARITHMETIC, *_COMPARISONS, exp.And, exp.Or)):
            children = [node.this, node.expression]
        elif isinstance(node, exp.Paren | exp.Neg | exp.Not | exp.Abs):
            children = [node.this]
        elif isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise QueryError(f"IS is supported as IS [NOT] NULL only, got {sql_text(node)}")
            children = [node.this]
        elif isinstance(node, exp.In):
            if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
                raise QueryError("IN takes a list of values in a post-processing query")
            children = [node.this, *node.expressions]
        elif isinstance(node, exp.Between):
            if node.args.get("symmetric"):
                raise QueryError("BETWEEN SYMMETRIC is not supported in a post-processing query")
            children = [node.this, node.args["low"], node.args["high"]]
        elif isinstance(node, exp.Nullif):
            children = [node.this, node.expression]
        elif isinstance(node, exp.Coalesce):
            children = [node.this, *node.expressions]
        elif isinstance(node, exp.Round):
            if node.args.get("decimals") is not None and not _is_integer(node.args["decimals"]):
                raise QueryError(f"ROUND takes a whole number of decimals, got {sql_text(node)}")
            children = [node.this]
        elif isinstance(node, exp.Case):
            if node.this is not None:
                raise QueryError("CASE is supported as CASE WHEN <condition> THEN ... END")
            children = [part for case in node.args["ifs"] for part in (case.this, case.args["true"])]
            if node.args.get("default") is not None:
                children.append(node.args["default"])
        else:
            raise QueryError(f"Unsupported expression in a post-processing query: {sql_text(node)}")
        for child in children:
            self._check(child, aggregates=aggregates, inside=inside)

    def _type(self, node: exp.Expr) -> str:
        """The SQL API column type of an expression (``Double`` for computed numbers)."""
        if isinstance(node, exp.Column):
            return self.types[node.name.lower()]
        if isinstance(node, exp.Count):
            return "Int64"
        if isinstance(node, exp.Min | exp.Max | exp.Paren | exp.Abs | exp.Nullif | exp.Coalesce):
            inner = self._type(node.this)
            return "Double" if isinstance(node, exp.Abs) and inner == "Int64" else inner
        if isinstance(node, exp.Case):
            return self._type(node.args["ifs"][0].args["true"])
        if isinstance(node, exp.Literal):
            return "String" if node.is_string else "Double"
        if isinstance(node, exp.Cast):
            return "Timestamp"
        if isinstance(node, (*_COMPARISONS, exp.And, exp.Or, exp.Not, exp.Is, exp.In, exp.Between, exp.Boolean)):
            return "Boolean"
        return "Double"

    # -- evaluation ---------------------------------------------------------------------------------

    def rows(self, inner: Iterable[Sequence[Any]], names: Sequence[str], *, complete: bool) -> list[list[Any]]:
        """The outer statement's rows, computed on ``inner`` (rows of the subquery's columns ``names``).
        ``complete`` False: the subquery reached the row limit, and its result is refused."""
        if not complete:
            raise QueryError(
                "The subquery returned as many rows as the SQL API's row limit, so its result may be cut: "
                "aggregate or filter it inside the subquery"
            )
        keys = [n.lower() for n in names]
        # A Double column's whole numbers are doubles (their division does not truncate), as the SQL API types them.
        doubled = [self.types.get(key) == "Double" for key in keys]
        read = [
            {k: Decimal(v) if d and type(v) is int else v for k, v, d in zip(keys, row, doubled, strict=True)}
            for row in inner
        ]
        if len(read) * self.work > MAX_WORK:
            raise QueryError(
                f"The post-processing query is too large to compute ({len(read)} rows x {self.work} terms): "
                "aggregate inside the subquery or write fewer terms"
            )
        with localcontext() as context:
            context.prec = _PRECISION
            context.traps[DivisionByZero] = True
            context.traps[InvalidOperation] = True
            try:
                computed = self._rows(read)
            except DivisionByZero:
                raise QueryError("division by zero") from None
            except (ArithmeticError, ValueError):
                raise QueryError("The post-processing query computed a number out of range or invalid") from None
            except TypeError:
                raise QueryError("The post-processing query compares or sorts values of different types") from None
            except RecursionError:
                raise QueryError("The SQL query is nested too deeply") from None
        for row in computed:
            for value, column in zip(row, self.columns, strict=True):
                if not _fits(value, column.column_type):
                    raise QueryError(f"Column '{column.name}' mixes values of different types (its branches differ)")
        doubles = [c.column_type == "Double" for c in self.columns]
        # A computed number is a double, as Cube's SQL API (DataFusion) returns it.
        return [[_double(v) if d else v for v, d in zip(row, doubles, strict=True)] for row in computed]

    def _rows(self, inner: list[Row]) -> list[list[Any]]:
        if self.where is not None:
            inner = [row for row in inner if _truth(self.where, row, None) is True]
        if not self.aggregated:
            scopes: list[tuple[Row, list[Row] | None]] = [(row, None) for row in inner]
        else:
            groups: dict[tuple[Any, ...], list[Row]] = {}
            for row in inner:
                groups.setdefault(tuple(_hashable(_value(e, row, None)) for e in self.group), []).append(row)
            if not self.group and not groups:
                groups[()] = []  # an aggregate over no rows is one row (SUM NULL, COUNT 0)
            scopes = [(members[0] if members else {}, members) for members in groups.values()]
        for expression, descending, nulls_first in reversed(self.order):  # stable: the last key first
            valued = [(_value(expression, *scope), scope) for scope in scopes]
            present = [(v, scope) for v, scope in valued if v is not None]
            present.sort(key=lambda pair: _comparable(pair[0]), reverse=descending)
            missing = [scope for v, scope in valued if v is None]
            ordered = [scope for _, scope in present]
            scopes = [*missing, *ordered] if nulls_first else [*ordered, *missing]
        rows = [[_value(c.expression, row, members) for c in self.columns] for row, members in scopes]
        end = None if self.limit is None else self.offset + self.limit
        return rows[self.offset : end]


# -- values ----------------------------------------------------------------------------------------------


def _value(node: exp.Expr, row: Row, group: list[Row] | None) -> Any:
    """``node``'s value on ``row`` (aggregates over ``group``, the rows of the row's group)."""
    if isinstance(node, exp.Column):
        return row.get(node.name.lower())
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else _literal_number(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Cast):
        return _cast(node)
    if type(node) in _AGGREGATES:
        return _aggregate(node, group or [])
    if isinstance(node, exp.Paren):
        return _value(node.this, row, group)
    if isinstance(node, exp.Neg):
        number = _numeric(_value(node.this, row, group))
        return None if number is None else -number
    if isinstance(node, exp.Abs):
        number = _numeric(_value(node.this, row, group))
        return None if number is None else abs(number)
    if isinstance(node, _ARITHMETIC):
        left, right = _numeric(_value(node.this, row, group)), _numeric(_value(node.expression, row, group))
        if left is None or right is None:
            return None
        if isinstance(node, exp.Add):
            return left + right
        if isinstance(node, exp.Sub):
            return left - right
        if isinstance(node, exp.Mul):
            return left * right
        if isinstance(left, int) and isinstance(right, int):  # integer division truncates, as in PostgreSQL
            if right == 0:
                raise DivisionByZero
            quotient = abs(left) // abs(right)
            return quotient if (left >= 0) == (right > 0) else -quotient
        return Decimal(left) / Decimal(right)
    if isinstance(node, exp.Nullif):
        first = _value(node.this, row, group)
        return None if _compare(first, _value(node.expression, row, group), exp.EQ) else first
    if isinstance(node, exp.Coalesce):
        for part in (node.this, *node.expressions):
            found = _value(part, row, group)
            if found is not None:
                return found
        return None
    if isinstance(node, exp.Round):
        number = _numeric(_value(node.this, row, group))
        places = int(_value(node.args["decimals"], row, group)) if node.args.get("decimals") is not None else 0
        if number is None:
            return None
        return Decimal(number).quantize(Decimal(1).scaleb(-places), rounding="ROUND_HALF_UP")
    if isinstance(node, exp.Case):
        for case in node.args["ifs"]:
            if _truth(case.this, row, group) is True:
                return _value(case.args["true"], row, group)
        default = node.args.get("default")
        return _value(default, row, group) if default is not None else None
    return _truth(node, row, group)


def _truth(node: exp.Expr, row: Row, group: list[Row] | None) -> bool | None:
    """A condition's value in SQL's three-valued logic (None: unknown)."""
    if isinstance(node, exp.Paren):
        return _truth(node.this, row, group)
    if isinstance(node, exp.And | exp.Or):
        left, right = _truth(node.this, row, group), _truth(node.expression, row, group)
        if isinstance(node, exp.And):
            return False if False in (left, right) else None if None in (left, right) else True
        return True if True in (left, right) else None if None in (left, right) else False
    if isinstance(node, exp.Not):
        inner = _truth(node.this, row, group)
        return None if inner is None else not inner
    if isinstance(node, exp.Is):
        return (_value(node.this, row, group) is None) != bool(node.args.get("negate"))
    if type(node) in _COMPARISONS:
        return _compare(_value(node.this, row, group), _value(node.expression, row, group), type(node))
    if isinstance(node, exp.In):
        left = _value(node.this, row, group)
        found = [_compare(left, _value(v, row, group), exp.EQ) for v in node.expressions]
        return True if True in found else None if None in found else False
    if isinstance(node, exp.Between):  # BETWEEN SYMMETRIC is refused by _check
        left = _value(node.this, row, group)
        low = _compare(left, _value(node.args["low"], row, group), exp.GTE)
        high = _compare(left, _value(node.args["high"], row, group), exp.LTE)
        return False if False in (low, high) else None if None in (low, high) else True
    value = _value(node, row, group)
    if value is None or isinstance(value, bool):
        return value
    raise QueryError(f"A condition must be true or false, got {sql_text(node)}")


def _aggregate(node: exp.Expr, group: list[Row]) -> Any:
    argument = node.this
    distinct = isinstance(argument, exp.Distinct)
    if distinct:
        argument = argument.expressions[0]
    if isinstance(argument, exp.Star):
        return len(group)
    values = [v for v in (_value(argument, row, None) for row in group) if v is not None]
    if isinstance(node, exp.Count):
        return len({_hashable(v) for v in values}) if distinct else len(values)
    if not values:
        return None
    if isinstance(node, exp.Min | exp.Max):
        pick = min if isinstance(node, exp.Min) else max
        return pick(values, key=_comparable)
    numbers = [n for n in (_numeric(v) for v in values) if n is not None]
    total = sum(numbers, Decimal(0))
    return total / len(numbers) if isinstance(node, exp.Avg) else total


def _compare(left: Any, right: Any, kind: type[exp.Expr]) -> bool | None:
    if left is None or right is None:
        return None
    left, right = _comparable(left), _comparable(right)
    if isinstance(left, datetime) != isinstance(right, datetime):
        left, right = _as_time(left), _as_time(right)
    elif _family(left) != _family(right):
        raise QueryError(f"Cannot compare {left!r} with {right!r}")
    return _COMPARISONS[kind](left, right)


def _family(value: Any) -> str:
    return "boolean" if isinstance(value, bool) else "text" if isinstance(value, str) else "number"


def _comparable(value: Any) -> Any:
    if isinstance(value, bool | str):
        return value
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    return _numeric(value)


def _as_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).replace(tzinfo=None)
        except ValueError:
            pass
    raise QueryError(f"Cannot compare {value!r} with a time")


def _numeric(value: Any) -> int | Decimal | None:
    """A number as computed here: integers stay integers (their division truncates), others are decimals."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise QueryError(f"Not a number: {value!r}")
    return value if isinstance(value, int | Decimal) else Decimal(str(value))


def _double(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value


@functools.lru_cache(maxsize=4096)
def _literal_number(text: str) -> int | Decimal:
    """A numeric literal: ``2`` an integer, ``2.0`` or ``1e3`` a decimal (read once, not per row)."""
    return int(text) if text.isdigit() else Decimal(text)


def _fits(value: Any, column_type: str) -> bool:
    """Whether a computed value is of its column's type (a CASE whose branches differ is refused)."""
    if value is None:
        return True
    if column_type == "Timestamp":
        return isinstance(value, date)
    if column_type in _NUMBER_TYPES:
        return isinstance(value, int | float | Decimal) and not isinstance(value, bool)
    if column_type == "Boolean":
        return isinstance(value, bool)
    return isinstance(value, str)


def _cast_kind(node: exp.Cast) -> str | None:
    kind = node.to.this
    if kind in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.DATETIME):
        return "timestamp"
    return "date" if kind == exp.DataType.Type.DATE else None


def _cast(node: exp.Cast) -> datetime:
    try:
        return datetime.fromisoformat(node.this.this).replace(tzinfo=None)
    except ValueError:
        raise QueryError(f"Invalid time literal: {sql_text(node)}") from None


def _hashable(value: Any) -> Any:
    return _comparable(value) if value is not None else None


def _has_aggregate(node: exp.Expr) -> bool:
    return any(type(n) in _AGGREGATES for n in node.walk())


def _key(node: exp.Expr) -> str:
    """An expression as GROUP BY compares it: column names without case, literals as written."""
    copy = node.copy()
    for column in copy.find_all(exp.Column):
        column.set("this", exp.to_identifier(column.name.lower()))
    return copy.sql(dialect="postgres")


def _nulls_first(ordered: exp.Ordered) -> bool:
    """PostgreSQL's default unless written: nulls last ascending, first descending."""
    written = ordered.args.get("nulls_first")
    return bool(ordered.args.get("desc")) if written is None else bool(written)


def _grouped(node: exp.Expr, keys: set[str]) -> None:
    """An aggregated statement's rule: every column outside an aggregate is a GROUP BY expression."""
    if _key(node) in keys or type(node) in _AGGREGATES:
        return
    if isinstance(node, exp.Column):
        raise QueryError(f"Column '{node.name}' must appear in GROUP BY or be used in an aggregate")
    for child in node.iter_expressions():
        _grouped(child, keys)


def _column_name(node: exp.Expr) -> str:
    if isinstance(node, exp.Column):
        return node.name
    if type(node) in _AGGREGATES:
        return _AGGREGATES[type(node)].lower()
    return "?column?"


def _is_integer(node: exp.Expr) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit()


def _count(node: exp.Expr | None, clause: str) -> int | None:
    if node is None:
        return None
    value = node.args.get("expression") or node.this
    if not isinstance(value, exp.Literal) or value.is_string or not value.this.isdigit():
        raise QueryError(f"{clause} must be a whole number")
    return int(value.this)


__all__ = ["OuterColumn", "PostProcess", "inner_statement"]
