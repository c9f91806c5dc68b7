"""A semantic SQL statement as the Cube JSON query it means (what ``/v1/convert-query`` shows).

The SQL is parsed with sqlglot (PostgreSQL syntax, as Cube's SQL API speaks) into a syntax tree, and only
the subset below is translated; everything else is refused with a :class:`QueryError`, so neither the
caller's SQL nor any table or function the model does not define can reach a database:

- one ``SELECT`` from one cube or view (``FROM orders [AS o]``), or cubes joined by ``CROSS JOIN`` /
  ``JOIN ... ON a.__cubeJoinField = b.__cubeJoinField`` (the model's joins are used);
- select items: dimensions, ``*``, ``MEASURE(m)``, aggregate functions matching the measure type,
  ``DATE_TRUNC('<granularity>', <time dimension>)``, each with an optional alias;
- ``WHERE`` and ``HAVING`` (see :mod:`.filters`), ``GROUP BY`` and ``ORDER BY`` by expression,
  alias or position, ``LIMIT``/``OFFSET``, ``DISTINCT``;
- an aggregated statement (GROUP BY, an aggregate or HAVING) must group by every non-aggregated column;
  a statement without any is an ungrouped query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from embedadmin.core.fields import MAX_BIGINT
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.cubesql.filters import Conditions, Filter, conjuncts
from embedadmin.semantic.cubesql.terms import JOIN_FIELD, NON_AGGREGATE, Scope, Term, sql_text, unsupported
from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.model import CompiledModel, Measure
from embedadmin.semantic.query.dates import canonical_timezone, format_local, resolve_timezone

MAX_SQL_LENGTH = 100_000
_CLAUSES = frozenset({"expressions", "from_", "from", "joins", "where", "group", "having", "order", "limit", "offset"})
_JOIN_ARGS = frozenset({"this", "kind", "side", "on"})
_JOIN_HINT = (
    "Joins are supported as CROSS JOIN or JOIN ... ON a.__cubeJoinField = b.__cubeJoinField (the model's joins "
    "are used); a view is the recommended way to query several cubes"
)


@dataclass(frozen=True, slots=True)
class Output:
    """One column of the statement's result: its name and what it stands for."""

    name: str
    term: Term


@dataclass(frozen=True, slots=True)
class Translation:
    """The Cube JSON query of a statement and its output columns in SELECT order."""

    query: dict[str, Any]
    outputs: tuple[Output, ...]


def parse_statement(sql: str) -> exp.Select:
    """The one ``SELECT`` statement in ``sql``; anything else (DDL, DML, several statements) refused."""
    if not isinstance(sql, str) or not sql.strip():
        raise QueryError("Invalid query format: the SQL query is empty")
    if len(sql) > MAX_SQL_LENGTH:
        raise QueryError(f"The SQL query is longer than {MAX_SQL_LENGTH} characters")
    try:
        statements = [s for s in sqlglot.parse(sql, read="postgres") if s is not None]
    except (ParseError, TokenError) as exc:
        raise QueryError(f"SQL parse error: {_parse_problem(exc)}") from None
    except RecursionError:
        raise QueryError("The SQL query is nested too deeply") from None
    if not statements:
        raise QueryError("Invalid query format: the SQL query is empty")
    if len(statements) > 1:
        raise QueryError("Only one SQL statement is allowed")
    statement = statements[0]
    if not isinstance(statement, exp.Select):
        kind = statement.name if isinstance(statement, exp.Command) else statement.key
        raise QueryError(f"Only SELECT statements are supported, got {kind.upper()}")
    return statement


def _parse_problem(exc: ParseError | TokenError) -> str:
    """sqlglot's first complaint without its internal object dumps, and where it is."""
    errors = getattr(exc, "errors", None) or [{"description": str(exc).splitlines()[0]}]
    first = errors[0]
    text = str(first.get("description") or "invalid SQL")
    if "<" in text:
        text = re.sub(r"\s+(but got|for)$", "", text.split("<", 1)[0].rstrip(" :"))
    if first.get("line"):
        text += f" (line {first['line']}, column {first.get('col')})"
    return text


def translate(
    model: CompiledModel,
    select: exp.Select,
    ctx: QueryContext,
    *,
    timezone: str = "UTC",
    now: datetime | None = None,
    row_limit: int,
) -> Translation:
    """The Cube JSON query ``select`` means, for ``ctx`` (hidden tables and columns do not exist)."""
    try:
        return _Statement(model, ctx, select, timezone, now).translate(row_limit)
    except RecursionError:
        raise QueryError("The SQL query is nested too deeply") from None


class _Statement:
    def __init__(
        self, model: CompiledModel, ctx: QueryContext, select: exp.Select, timezone: str, now: datetime | None
    ) -> None:
        self.select = select
        self.scope = Scope(model, ctx)
        self.timezone = canonical_timezone(timezone)
        self.zone = resolve_timezone(self.timezone)
        self.now = now
        self.outputs: list[Output] = []
        self.grouped_keys: set[str] = set()
        self.aggregated = False

    def translate(self, row_limit: int) -> Translation:
        select = self.select
        self.check_clauses()
        self.tables()
        self.select_items()
        order = [self.order_item(item) for item in (select.args.get("order") or exp.Order()).expressions]
        having = select.args.get("having")
        self.aggregated = (
            bool(select.args.get("group"))
            or having is not None
            or any(o.term.aggregated for o in self.outputs)
            or any(term.aggregated for term, _ in order)
        )
        query: dict[str, Any] = self.members(self.columns([term for term, _ in order]))
        filters, segments = self.where()
        if self.rolling(query["measures"]):
            filters = _move_date_range(query["timeDimensions"], filters)
        if having is not None:
            conditions = Conditions(self.having_operand, "HAVING", self.zone, self.now)
            filters.extend(conditions.condition(part) for part in conjuncts(having.this))
        query.update(
            {
                "segments": segments,
                "filters": filters,
                "order": [[term.key, "desc" if desc else "asc"] for term, desc in order],
                "limit": min(_count(select.args.get("limit"), "LIMIT", row_limit), row_limit),
                "timezone": self.timezone,
            }
        )
        offset = _count(select.args.get("offset"), "OFFSET", 0)
        if offset:
            query["offset"] = offset
        if not self.aggregated:
            query["ungrouped"] = True
        if len(self.scope.sources) > 1:
            query["joinHints"] = [[s.entity.name] for s in self.scope.sources]
        return Translation(query, tuple(self.outputs))

    def check_clauses(self) -> None:
        for key, value in self.select.args.items():
            if key == "distinct" and value and value.args.get("on"):
                raise QueryError("Unsupported clause in the SQL API: DISTINCT ON")
            if value and key not in _CLAUSES and key != "distinct":
                raise QueryError(f"Unsupported clause in the SQL API: {key.rstrip('_').upper()}")

    def columns(self, ordered: list[Term]) -> list[Term]:
        """What the query must compute: grouped columns and aggregates, or (ungrouped) every column; the
        SQL's rule that an aggregated statement groups by every plain column is checked here."""
        group = self.group_terms()
        if self.select.args.get("distinct"):
            group = self.distinct(group)
        selected = [o.term for o in self.outputs]
        if not self.aggregated:
            return [*selected, *ordered]
        self.grouped_keys = {t.key for t in group}
        for term in [*selected, *ordered]:
            if not term.aggregated and term.key not in self.grouped_keys:
                raise QueryError(NON_AGGREGATE)
        return [*group, *(t for t in [*selected, *ordered] if t.aggregated)]

    # -- FROM ---------------------------------------------------------------------------------------

    def tables(self) -> None:
        source = self.select.args.get("from_") or self.select.args.get("from")
        if source is None:
            raise QueryError("FROM a cube or view is required")
        self.scope.add_table(source.this)
        for join in self.select.args.get("joins") or ():
            extras = [key for key, value in join.args.items() if value and key not in _JOIN_ARGS]
            kind, side = (join.args.get("kind") or "").upper(), (join.args.get("side") or "").upper()
            if extras or kind not in ("", "CROSS", "INNER") or side not in ("", "LEFT"):
                raise QueryError(_JOIN_HINT)
            added = self.scope.add_table(join.this)
            on = join.args.get("on")
            if on is not None and not self.join_condition(on, added.alias):
                raise QueryError(_JOIN_HINT)
            if kind == "CROSS" and on is not None:
                raise QueryError(_JOIN_HINT)
        if len(self.scope.sources) > 1 and any(s.entity.is_view for s in self.scope.sources):
            raise QueryError("Views can't be joined with other tables: query one view that has all the members")

    def join_condition(self, on: exp.Expr, added: str) -> bool:
        """Whether ``on`` is ``<earlier table>.__cubeJoinField = <added table>.__cubeJoinField``."""
        while isinstance(on, exp.Paren):
            on = on.this
        if not isinstance(on, exp.EQ):
            return False
        sides = [on.this, on.expression]
        if not all(isinstance(s, exp.Column) and s.name.lower() == JOIN_FIELD and s.table for s in sides):
            return False
        tables = {self.scope.source(s.table).alias.lower() for s in sides}
        return len(tables) == 2 and added.lower() in tables

    # -- SELECT -------------------------------------------------------------------------------------

    def select_items(self) -> None:
        for item in self.select.expressions:
            node = item.this if isinstance(item, exp.Alias) else item
            if isinstance(node, exp.Star) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star)):
                if isinstance(item, exp.Alias):
                    raise QueryError("* can't have an alias")
                self.outputs.extend(Output(name, term) for name, term in self.scope.star(node))
                continue
            term = self.scope.term(node, "SELECT")
            name = item.alias if isinstance(item, exp.Alias) else self.scope.output_name(node, term)
            self.outputs.append(Output(name, term))

    def reference(self, node: exp.Expr, clause: str) -> Term:
        """A GROUP BY / ORDER BY / HAVING item: a select position, a select alias (first, as BI tools mean
        ``GROUP BY month`` for ``DATE_TRUNC('month', created_at) AS month``) or an expression."""
        if isinstance(node, exp.Literal) and not node.is_string:
            position = int(node.this) if node.this.isdigit() else 0
            if not 1 <= position <= len(self.outputs):
                raise QueryError(f"{clause} position {node.this} is not in select list")
            return self.outputs[position - 1].term
        alias = self.alias_term(node)
        if alias is not None and not (clause == "GROUP BY" and alias.aggregated):
            return alias
        return self.scope.term(node, clause)

    def alias_term(self, node: exp.Expr) -> Term | None:
        if not isinstance(node, exp.Column) or node.table or isinstance(node.this, exp.Star):
            return None
        matches = [o.term for o in self.outputs if o.name == node.name]
        if not matches:
            matches = [o.term for o in self.outputs if o.name.lower() == node.name.lower()]
        if len({t.key for t in matches}) > 1:
            raise QueryError(f"Column reference '{node.name}' is ambiguous")
        return matches[0] if matches else None

    def order_item(self, node: exp.Expr) -> tuple[Term, bool]:
        if not isinstance(node, exp.Ordered):
            raise unsupported(node, "ORDER BY")
        term = self.reference(node.this, "ORDER BY")
        return term, bool(node.args.get("desc"))

    def group_terms(self) -> list[Term]:
        group = self.select.args.get("group")
        if group is None:
            return []
        for key, value in group.args.items():
            if value and key != "expressions":
                raise QueryError(f"GROUP BY {key.upper()} is not supported")
        terms = []
        for node in group.expressions:
            term = self.reference(node, "GROUP BY")
            if term.aggregated:
                raise QueryError(f"Aggregate functions are not allowed in GROUP BY: {sql_text(node)}")
            terms.append(term)
        return terms

    def distinct(self, group: list[Term]) -> list[Term]:
        """``SELECT DISTINCT``: groups by the selected columns (a no-op when they are all grouped already)."""
        selected = [o.term for o in self.outputs if not o.term.aggregated]
        if not self.aggregated:
            self.aggregated = True
            return selected
        if {t.key for t in group} <= {t.key for t in selected}:
            return group
        raise QueryError("SELECT DISTINCT with GROUP BY must select every GROUP BY column")

    def members(self, columns: list[Term]) -> dict[str, Any]:
        """measures, dimensions and timeDimensions of the query, each once, in order of first use."""
        unique = list({t.key: t for t in columns}.values())
        return {
            "measures": [t.name for t in unique if isinstance(t.member, Measure)],
            "dimensions": [t.name for t in unique if t.kind == "dimension" and not t.granularity],
            "timeDimensions": [{"dimension": t.name, "granularity": t.granularity} for t in unique if t.granularity],
        }

    def rolling(self, measures: list[str]) -> bool:
        """Whether a measure has a rolling window (it needs its time dimension's ``dateRange``)."""
        members = self.scope.model.members
        for name in measures:
            member = members[name]
            origin = members.get(member.alias_member) if member.alias_member else member
            if any(isinstance(m, Measure) and m.rolling_window is not None for m in (member, origin)):
                return True
        return False

    # -- WHERE / HAVING -----------------------------------------------------------------------------

    def where(self) -> tuple[list[Filter], list[str]]:
        where = self.select.args.get("where")
        if where is None:
            return [], []
        conditions = Conditions(self.where_operand, "WHERE", self.zone, self.now)
        filters: list[Filter] = []
        segments: list[str] = []
        for part in conjuncts(where.this):
            segment = self.segment(part)
            if segment is not None:
                segments.append(segment)
                continue
            condition = conditions.condition(part)
            filters.extend(condition.get("and", [condition]))  # BETWEEN: two bounds
        return filters, list(dict.fromkeys(segments))

    def segment(self, node: exp.Expr) -> str | None:
        """``seg``, ``seg IS TRUE`` or ``seg = TRUE`` at the top level of WHERE: the segment's name."""
        column: exp.Expr | None = node
        if isinstance(node, exp.Is | exp.EQ) and not node.args.get("negate"):
            value = node.expression
            column = node.this if isinstance(value, exp.Boolean) and value.this else None
        if not isinstance(column, exp.Column) or isinstance(column.this, exp.Star):
            return None
        member = self.scope.column(column)
        return member.full_name if member.kind == "segment" else None

    def where_operand(self, node: exp.Expr) -> Term:
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Column):
            member = self.scope.column(node)
            if member.kind == "segment":
                raise QueryError(
                    f"Segment '{member.full_name}' can only be used as WHERE {node.name} (or {node.name} IS TRUE), "
                    "combined with AND"
                )
            if isinstance(member, Measure):
                raise QueryError(f"Measures can't be filtered in WHERE: use HAVING MEASURE({node.name}) ...")
            return Term(member)
        if isinstance(node, exp.AggFunc) or (isinstance(node, exp.Anonymous) and node.name.lower() == "measure"):
            raise QueryError("Aggregate functions are not allowed in WHERE: use HAVING")
        term = self.scope.term(node, "WHERE")
        if term.granularity:
            raise QueryError("DATE_TRUNC is not supported in WHERE: compare the time dimension itself")
        return term

    def having_operand(self, node: exp.Expr) -> Term:
        term = self.reference(node, "HAVING")
        if term.granularity or (not term.aggregated and term.key not in self.grouped_keys):
            raise QueryError(NON_AGGREGATE)
        return term


def _move_date_range(time_dimensions: list[dict[str, Any]], filters: list[Filter]) -> list[Filter]:
    """Top-level lower and upper bounds on a time dimension with a granularity become its ``dateRange``
    (inclusive, to the millisecond: ``< x`` ends 1 ms before ``x``), as rolling windows need; the filters
    left over are returned."""
    for td in time_dimensions:
        lower = [f for f in filters if f.get("member") == td["dimension"] and f["operator"] in ("gte", "gt")]
        upper = [f for f in filters if f.get("member") == td["dimension"] and f["operator"] in ("lte", "lt")]
        if len(lower) != 1 or len(upper) != 1:
            continue
        start = _shifted(lower[0]["values"][0], 1 if lower[0]["operator"] == "gt" else 0)
        end = _shifted(upper[0]["values"][0], -1 if upper[0]["operator"] == "lt" else 0)
        td["dateRange"] = [start, end]
        filters = [f for f in filters if f is not lower[0] and f is not upper[0]]
    return filters


def _shifted(local: str, milliseconds: int) -> str:
    return format_local(datetime.fromisoformat(local) + timedelta(milliseconds=milliseconds))


def _count(node: exp.Expr | None, clause: str, default: int) -> int:
    """The number of a ``LIMIT``/``OFFSET`` clause (``LIMIT ALL``: the default)."""
    if node is None:
        return default
    value = node.args.get("expression") if isinstance(node, exp.Limit | exp.Offset) else None
    if isinstance(value, exp.Var) and value.name.upper() == "ALL" and clause == "LIMIT":
        return default
    if not isinstance(value, exp.Literal) or value.is_string or not value.this.isascii() or not value.this.isdigit():
        raise QueryError(f"{clause} takes a non-negative integer")
    if len(value.this) > 19 or int(value.this) > MAX_BIGINT:
        raise QueryError(f"{clause} takes an integer of at most {MAX_BIGINT}")
    return int(value.this)
