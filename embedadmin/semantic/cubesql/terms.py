"""The columns of a semantic SQL statement: which cubes and views it reads and what each expression names.

A :class:`Scope` holds the statement's tables (cubes or views from ``FROM`` and ``JOIN``) and turns the
expressions the SQL API allows into :class:`Term` objects: a member (``status``, ``orders.status``,
``o.status``), a measure aggregated with ``MEASURE()`` or the aggregate function of its type, or a time
dimension truncated with ``DATE_TRUNC``. Anything else is refused with a :class:`QueryError` naming it; the
caller's SQL itself never reaches a database.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar, cast

from sqlglot import exp

from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.errors import AccessDenied, QueryError
from embedadmin.semantic.modeling.model import CompiledModel, Dimension, Entity, Measure, Member
from embedadmin.semantic.modeling.model import value_type as member_value_type
from embedadmin.semantic.modeling.references import PREDEFINED_GRANULARITIES
from embedadmin.semantic.query.access import EntityAccess, entity_access

JOIN_FIELD = "__cubejoinfield"
USER_FIELD = "__user"
AGGREGATION_MISMATCH = "Measure aggregation type doesn't match"
NON_AGGREGATE = "Projection references non-aggregate values"
# Aggregate functions and the measure types each may aggregate (Cube's ``is_same_agg_type``).
_AGGREGATE_TYPES: dict[type[exp.Expr], tuple[str, frozenset[str]]] = {
    exp.Sum: ("SUM", frozenset({"sum", "count", "number"})),
    exp.Avg: ("AVG", frozenset({"avg"})),
    exp.Min: ("MIN", frozenset({"min", "time"})),
    exp.Max: ("MAX", frozenset({"max", "time"})),
}
_COUNT_TYPES = frozenset({"count"})
_COUNT_DISTINCT_TYPES = frozenset({"count_distinct", "count_distinct_approx"})
_TRUNCATIONS = (exp.TimestampTrunc, exp.DateTrunc)
_T = TypeVar("_T")


def sql_text(node: exp.Expr) -> str:
    """A short rendering of a node for error messages."""
    text = node.sql(dialect="postgres")
    return text if len(text) <= 120 else f"{text[:117]}..."


def unsupported(node: exp.Expr, clause: str) -> QueryError:
    if isinstance(node, exp.Func) and not isinstance(node, exp.AggFunc):
        name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
        return QueryError(
            f"Function {name.upper()}() is not supported in {clause}: the SQL API takes columns, MEASURE(), "
            "SUM/COUNT/AVG/MIN/MAX over measures and DATE_TRUNC over time dimensions"
        )
    if isinstance(node, exp.Subquery | exp.Select | exp.Query):
        return QueryError(f"Subqueries are not supported in {clause}")
    return QueryError(f"Unsupported expression in {clause}: {sql_text(node)}")


def find_named(items: Mapping[str, _T], name: str) -> _T | None:
    """``items[name]``, else the one item whose name matches case-insensitively (unquoted SQL names)."""
    found = items.get(name)
    if found is not None:
        return found
    matches = [value for key, value in items.items() if key.lower() == name.lower()]
    return matches[0] if len(matches) == 1 else None


@dataclass(frozen=True, slots=True)
class Term:
    """What one SQL expression stands for: a member, maybe aggregated (measures) or truncated (time)."""

    member: Member
    granularity: str | None = None
    aggregated: bool = False

    @property
    def name(self) -> str:
        return self.member.full_name

    @property
    def key(self) -> str:
        """The row key of its values in the compiled query (``orders.created_at.month`` when truncated)."""
        return f"{self.name}.{self.granularity}" if self.granularity else self.name

    @property
    def kind(self) -> str:
        return self.member.kind

    @property
    def value_type(self) -> str:
        """number, string, time or boolean: how filter values for it are read."""
        return member_value_type(self.member)


@dataclass(frozen=True, slots=True)
class Source:
    """A cube or view in ``FROM``/``JOIN`` and the name its columns are qualified with."""

    alias: str
    entity: Entity


class Scope:
    """The tables of one statement and what the caller may read of them."""

    def __init__(self, model: CompiledModel, ctx: QueryContext) -> None:
        self.model = model
        self.ctx = ctx
        self.sources: list[Source] = []
        self._access: dict[str, EntityAccess] = {}

    # -- tables -------------------------------------------------------------------------------------

    def add_table(self, node: exp.Expr) -> Source:
        """A ``FROM``/``JOIN`` item: a cube or view by name, with an optional alias; nothing else."""
        alias = node.args.get("alias")
        extras = [key for key, value in node.args.items() if value and key not in ("this", "alias")]
        plain = isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier)
        if not plain or extras or (alias is not None and alias.columns):
            shown = "a subquery" if isinstance(node, exp.Subquery) else sql_text(node)
            raise QueryError(f"Only cubes and views can be queried: FROM <cube or view> [AS alias], got {shown}")
        name = node.this.name
        entity = find_named(self.model.entities, name)
        if self.ctx.only_granted and (entity is None or not entity.public or self.access(entity.name).denied):
            raise AccessDenied(f"Access denied: table '{name}' is not granted to this viewer")
        if entity is None or not entity.public or self.access(entity.name).denied:
            raise QueryError(f"Table '{name}' not found: only cubes and views can be queried")
        source = Source(alias.name if alias is not None else name, entity)
        if any(s.alias.lower() == source.alias.lower() for s in self.sources):
            raise QueryError(f"Table name '{source.alias}' specified more than once")
        self.sources.append(source)
        return source

    def source(self, qualifier: str) -> Source:
        for source in self.sources:
            if source.alias.lower() == qualifier.lower():
                return source
        raise QueryError(f"Table '{qualifier}' is not in FROM")

    def access(self, entity: str) -> EntityAccess:
        if entity not in self._access:
            self._access[entity] = entity_access(self.model.entities[entity], self.ctx)
        return self._access[entity]

    # -- columns ------------------------------------------------------------------------------------

    def visible(self, entity: Entity, member: Member) -> bool:
        return member.display.public and self.access(entity.name).member_visible(member.name)

    def lookup(self, source: Source, name: str) -> Member | None:
        entity = source.entity
        kinds: tuple[Mapping[str, Member], ...] = (entity.dimensions, entity.measures, entity.segments)
        for members in kinds:
            found = find_named(members, name)
            if found is not None:
                return found if self.visible(entity, found) else None
        return None

    def column(self, node: exp.Column) -> Member:
        """The member a column reference names (``x``, ``t.x``); unknown, hidden and special columns refused."""
        if node.args.get("db") or node.args.get("catalog"):
            raise QueryError(f"Column '{sql_text(node)}' not found: use <column> or <table>.<column>")
        name = node.name
        if name.lower() == USER_FIELD:
            raise QueryError("Changing the security context with __user is not allowed")
        if name.lower() == JOIN_FIELD:
            raise QueryError("__cubeJoinField can only be used in JOIN ... ON a.__cubeJoinField = b.__cubeJoinField")
        qualifier = node.table
        candidates = [self.source(qualifier)] if qualifier else self.sources
        found = [(source, member) for source in candidates if (member := self.lookup(source, name)) is not None]
        if not found:
            where = f"'{candidates[0].alias}'" if len(candidates) == 1 else "any table in FROM"
            raise QueryError(f"Column '{name}' not found in {where}")
        if len(found) > 1:
            raise QueryError(f"Column reference '{name}' is ambiguous: qualify it with its table")
        return found[0][1]

    def star(self, node: exp.Expr) -> list[tuple[str, Term]]:
        """``*`` / ``t.*``: the visible dimensions of the table(s), as (output name, term) pairs."""
        qualifier = node.table if isinstance(node, exp.Column) else ""
        sources = [self.source(qualifier)] if qualifier else self.sources
        return [
            (dimension.name, Term(dimension))
            for source in sources
            for dimension in source.entity.dimensions.values()
            if self.visible(source.entity, dimension)
        ]

    # -- expressions --------------------------------------------------------------------------------

    def term(self, node: exp.Expr, clause: str) -> Term:
        """A select-list style expression: a dimension, an aggregated measure or a truncated time dimension."""
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            member = self.column(node)
            if isinstance(member, Measure):
                raise QueryError(
                    f"Measure '{member.full_name}' must be aggregated: use MEASURE({node.name}) or the aggregate "
                    f"function of its type ({member.type})"
                )
            if member.kind == "segment":
                raise QueryError(
                    f"Segment '{member.full_name}' is a condition: use it in WHERE ({node.name} or {node.name} IS TRUE)"
                )
            return Term(member)
        if isinstance(node, _TRUNCATIONS):
            return self.truncated(node, clause)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "measure":
            return Term(self.measure_argument(node.expressions, "MEASURE", None), aggregated=True)
        if isinstance(node, exp.Count):
            return Term(self.count(node), aggregated=True)
        spec = _AGGREGATE_TYPES.get(type(node))
        if spec is not None and not node.args.get("expressions"):
            return Term(self.measure_argument([node.this], *spec), aggregated=True)
        raise unsupported(node, clause)

    def measure_argument(
        self, arguments: Iterable[exp.Expr | None], function: str, types: frozenset[str] | None
    ) -> Measure:
        """The measure an aggregate function is applied to, checked against the function's types."""
        items = [a for a in arguments if a is not None]
        if len(items) != 1 or not isinstance(items[0], exp.Column) or isinstance(items[0].this, exp.Star):
            raise QueryError(f"{function}() takes one measure column")
        member = self.column(items[0])
        if not isinstance(member, Measure):
            raise QueryError(
                f"{function}() needs a measure, but '{member.full_name}' is a {member.kind}: the SQL API aggregates "
                "measures only"
            )
        if types is not None and member.type not in types:
            raise QueryError(
                f"{AGGREGATION_MISMATCH}. The aggregation type for '{member.full_name}' is '{member.type}()' "
                f"but '{function}()' was provided"
            )
        return member

    def count(self, node: exp.Count) -> Measure:
        argument = node.this
        if isinstance(argument, exp.Star) or (isinstance(argument, exp.Literal) and not argument.is_string):
            return self.count_star()  # COUNT(*), COUNT(1)
        if isinstance(argument, exp.Distinct):
            if argument.args.get("on"):
                raise QueryError("COUNT(DISTINCT ON ...) is not supported")
            return self.measure_argument(argument.expressions, "COUNT(DISTINCT)", _COUNT_DISTINCT_TYPES)
        return self.measure_argument([argument, *node.expressions], "COUNT", _COUNT_TYPES)

    def count_star(self) -> Measure:
        """``COUNT(*)``: the table's ``count`` measure (else its first unfiltered count measure)."""
        if len(self.sources) != 1:
            raise QueryError("COUNT(*) is ambiguous when several tables are joined: use MEASURE(<table>.<count>)")
        entity = self.sources[0].entity
        counts = [
            m for m in entity.measures.values() if m.type == "count" and not m.filters and self.visible(entity, m)
        ]
        named = [m for m in counts if m.name.lower() == "count"]
        if not counts:
            raise QueryError(f"COUNT(*) needs a count measure in '{entity.name}'")
        return (named or counts)[0]

    def truncated(self, node: exp.Expr, clause: str) -> Term:
        """``DATE_TRUNC('month', created_at)``: a time dimension at a predefined or custom granularity."""
        unit, column = node.args.get("unit"), node.this
        if node.args.get("zone") or not isinstance(column, exp.Column) or unit is None:
            raise QueryError(f"DATE_TRUNC takes a granularity and a time dimension, got {sql_text(node)}")
        member = self.column(column)
        if not isinstance(member, Dimension) or member.type != "time":
            raise QueryError(f"DATE_TRUNC needs a time dimension, but '{member.full_name}' is not one")
        text = unit.name
        if text.lower() in PREDEFINED_GRANULARITIES:
            return Term(member, text.lower())
        custom = find_named(member.granularities, text)
        if custom is None:
            raise QueryError(f'Granularity "{text.lower()}" does not exist in dimension {member.full_name}')
        return Term(member, custom.name)

    def output_name(self, node: exp.Expr, term: Term) -> str:
        """A select item's column name when it has no alias: the column's name, or ``function(table.member)``."""
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Column):
            return node.name
        if term.granularity:
            return f"date_trunc('{term.granularity}', {term.name})"
        if isinstance(node, exp.Count) and isinstance(node.this, exp.Star | exp.Literal):
            return f"count({node.this.sql()})"
        if isinstance(node, exp.Count) and isinstance(node.this, exp.Distinct):
            return f"count(distinct {term.name})"
        # What is left is a function call (a column and DATE_TRUNC returned above).
        function = node.name if isinstance(node, exp.Anonymous) else cast(exp.Func, node).sql_name()
        return f"{function.lower()}({term.name})"
