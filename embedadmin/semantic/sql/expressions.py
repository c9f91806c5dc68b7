"""Member SQL as sqlglot expressions: references substituted, time zones converted, measures aggregated.

Every cube is aliased by its own name (quoted), as in Cube, so a member's expression does not depend on the
query it appears in. Model SQL is trusted text parsed when the model compiled; values from callers never
pass through here (they become literals in :mod:`.filters`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from zoneinfo import ZoneInfo

from dateutil.relativedelta import relativedelta
from sqlglot import exp

from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.model import (
    CALCULATED_MEASURE_TYPES,
    CompiledModel,
    ConvertTzReference,
    CubeReference,
    CubeSqlReference,
    Dimension,
    FilterGroupReference,
    FilterParamsReference,
    Granularity,
    Measure,
    Member,
    MemberReference,
    Reference,
    SecurityContextReference,
    Segment,
    SqlSnippet,
)
from embedadmin.semantic.modeling.references import PREDEFINED_GRANULARITIES
from embedadmin.semantic.query.dates import format_local, local_now, parse_local
from embedadmin.semantic.sources.registry import approximates_count_distinct

MeasureLeaf = Callable[[Measure], exp.Expr]
# What a stage's time shift does to a dimension's SQL: (renderer, dimension, its SQL) -> the SQL to use.
TimeShiftRender = Callable[["Renderer", Dimension, exp.Expr], exp.Expr]
# What a context variable's placeholder is in a query (the builder's sql.context.ContextValues).
ContextValue = Callable[[Reference, exp.Expr, Mapping[str, Reference]], exp.Expr]
_CONTEXT_TYPES = (SecurityContextReference, FilterParamsReference, FilterGroupReference, ConvertTzReference)
_SIMPLE = (exp.Column, exp.Literal, exp.Func, exp.Paren, exp.Case, exp.Null, exp.Boolean, exp.Identifier)
TIMESTAMPTZ = exp.DataType.build("timestamptz")
TIMESTAMP = exp.DataType.build("timestamp")


def quoted(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def _balanced(connector: type[exp.Connector], conditions: list[exp.Expr]) -> exp.Expr:
    """Join conditions as a balanced tree: its depth grows with log(n), so hundreds of filters do not
    reach Python's recursion limit when sqlglot walks or writes the tree (a chain would)."""
    if len(conditions) == 1:
        return conditions[0]
    middle = len(conditions) // 2
    return connector(
        this=_balanced(connector, conditions[:middle]), expression=_balanced(connector, conditions[middle:])
    )


def _leaf(condition: exp.Expr, connector: type[exp.Connector]) -> exp.Expr:
    # A nested AND/OR of the other kind is parenthesized, as sqlglot's own and_/or_ do.
    if isinstance(condition, exp.Connector) and not isinstance(condition, connector):
        return exp.Paren(this=condition)
    return condition


def all_of(*conditions: exp.Expr) -> exp.Expr:
    """AND of freshly built conditions (not copied: sqlglot's helper would deep-copy them first)."""
    return _balanced(exp.And, [_leaf(c, exp.And) for c in conditions])


def any_of(*conditions: exp.Expr) -> exp.Expr:
    """OR of freshly built conditions."""
    return _balanced(exp.Or, [_leaf(c, exp.Or) for c in conditions])


def aliased(expression: exp.Expr, alias: str | exp.Identifier) -> exp.Expr:
    return exp.alias_(expression, alias, copy=False)


def wrap(expression: exp.Expr) -> exp.Expr:
    """Parenthesize a substituted expression unless it binds tighter than any operator around it."""
    return expression if isinstance(expression, _SIMPLE) else exp.Paren(this=expression)


def is_composite(measure: Measure) -> bool:
    """A calculated measure built from other measures (``{revenue} / {count}``)."""
    if measure.type not in CALCULATED_MEASURE_TYPES or measure.sql is None:
        return False
    return any(ref.kind == "measure" for ref in measure.sql.member_refs())


class Renderer:
    """Builds member expressions for one query (one dialect, one time zone)."""

    def __init__(self, model: CompiledModel, timezone: str, now: datetime | None) -> None:
        self.model = model
        self.dialect = model.dialect
        self.timezone = timezone
        self.zone = ZoneInfo(timezone)
        self.now = now
        self._stack: list[str] = []
        # How a sub_query dimension becomes a value: set by the statement builder, which owns the joins.
        self.sub_query: Callable[[Dimension], exp.Expr] | None = None
        # How a stage of a multi-stage query moves its time dimensions (sql/stages.py); None: not at all.
        self.time_shift: TimeShiftRender | None = None
        # What SECURITY_CONTEXT, FILTER_PARAMS and FILTER_GROUP are in this query: set by the statement builder.
        self.context: ContextValue | None = None

    # -- resolution ---------------------------------------------------------------------------------

    def origin(self, member: Member) -> Member:
        """The cube member a view member stands for (a cube member stands for itself)."""
        return self.model.members[member.alias_member] if member.alias_member else member

    def cube_member(self, cube: str, name: str) -> Member:
        member = self.model.entities[cube].member(name)
        assert member is not None  # references were checked when the model compiled
        return member

    # -- snippets -----------------------------------------------------------------------------------

    def snippet(self, snippet: SqlSnippet, measure: MeasureLeaf | None = None) -> exp.Expr:
        """A copy of ``snippet``'s tree with every reference replaced."""
        tree = snippet.tree.copy()
        refs = snippet.refs
        if any(isinstance(r, _CONTEXT_TYPES) for r in refs.values()):
            tree = tree.transform(lambda node: self._context_variable(node, refs), copy=False)
        for node in list(tree.find_all(exp.Column, exp.Table)):
            replacement = self._replacement(node, refs, measure)
            if replacement is None:
                continue
            if node is tree:
                tree = replacement
            else:
                node.replace(replacement)
        return tree

    def _context_variable(self, node: exp.Expr, refs: Mapping[str, Reference]) -> exp.Expr:
        """A context variable's placeholder (a call, or a bare column for ``unsafeValue()``) as its SQL here."""
        if isinstance(node, exp.Anonymous):
            reference = refs.get(node.name)
        elif isinstance(node, exp.Column) and not node.table:
            reference = refs.get(node.name)
            if not isinstance(reference, SecurityContextReference):
                return node
        else:
            return node
        if not isinstance(reference, _CONTEXT_TYPES):
            return node
        if isinstance(reference, ConvertTzReference):
            return exp.Paren(this=self.local_time(node.expressions[0]))
        if self.context is None:
            raise QueryError("SECURITY_CONTEXT, FILTER_PARAMS and FILTER_GROUP can only be read by a query")
        return self.context(reference, node, refs)

    def _replacement(self, node: exp.Expr, refs: dict[str, Reference], measure: MeasureLeaf | None) -> exp.Expr | None:
        """What a placeholder node becomes (None: nothing, or the node was fixed in place)."""
        if isinstance(node, exp.Table):
            reference = refs.get(node.name)
            if isinstance(reference, CubeSqlReference):
                return exp.Subquery(this=self.cube_source_query(reference.cube), alias=node.args.get("alias"))
            if isinstance(reference, CubeReference):
                node.set("this", quoted(reference.cube))
            return None
        assert isinstance(node, exp.Column)
        table_ref = refs.get(node.table) if node.table else None
        if isinstance(table_ref, CubeReference):
            node.set("table", quoted(table_ref.cube))
            return None
        reference = refs.get(node.name) if not node.table else None
        if reference is None:
            return None
        if isinstance(reference, CubeReference):
            return exp.column(quoted(reference.cube))
        if isinstance(reference, MemberReference):
            return wrap(self.reference(reference, measure))
        if isinstance(reference, CubeSqlReference):
            raise QueryError(f"{{{reference.cube}.sql()}} cannot be used as a value")
        return None  # a context variable's function parameter, bound by its call (sql/context.py)

    def reference(self, reference: MemberReference, measure: MeasureLeaf | None) -> exp.Expr:
        target = self.cube_member(reference.cube, reference.member)
        key = f"{target.full_name}.{reference.granularity}" if reference.granularity else target.full_name
        if key in self._stack:
            raise QueryError(f"Circular reference: {' -> '.join([*self._stack, key])}")
        self._stack.append(key)
        try:
            if isinstance(target, Measure):
                if measure is None:
                    raise QueryError(f"'{target.full_name}' is a measure and cannot be used in a dimension's SQL")
                return self.measure(target, measure)
            if isinstance(target, Segment):
                return self.segment(target)
            if reference.granularity:
                return self.time_dimension(target, reference.granularity)
            return self.dimension(target)
        finally:
            self._stack.pop()

    def cube_source_query(self, cube: str) -> exp.Expr:
        entity = self.model.entities[cube]
        if entity.sql is not None:
            return self.snippet(entity.sql)
        assert entity.table is not None
        return exp.select("*").from_(entity.table.copy())

    def cube_source(self, cube: str) -> exp.Expr:
        """The cube's table or subquery, aliased by the cube name, for a FROM or JOIN."""
        entity = self.model.entities[cube]
        if entity.sql is not None:
            return exp.Subquery(this=self.snippet(entity.sql), alias=exp.TableAlias(this=quoted(cube)))
        assert entity.table is not None
        table = entity.table.copy()
        table.set("alias", exp.TableAlias(this=quoted(cube)))
        return table

    # -- dimensions and segments --------------------------------------------------------------------

    def dimension(self, member: Member) -> exp.Expr:
        dimension = self.origin(member)
        assert isinstance(dimension, Dimension)
        if dimension.sub_query:
            if self.sub_query is None:
                raise QueryError(f"sub_query dimension '{dimension.full_name}' cannot be used here")
            return self.sub_query(dimension)
        if dimension.case is not None:
            case = exp.Case()
            for when in dimension.case.when:
                case = case.when(self.snippet(when.sql), self._label(when.label))
            if dimension.case.else_label is not None:
                case = case.else_(self._label(dimension.case.else_label))
            return case
        if dimension.type == "geo":
            assert dimension.latitude is not None
            assert dimension.longitude is not None
            return exp.DPipe(
                this=exp.DPipe(this=wrap(self.snippet(dimension.latitude)), expression=exp.Literal.string(",")),
                expression=wrap(self.snippet(dimension.longitude)),
                safe=True,
            )
        assert dimension.sql is not None
        value = self.snippet(dimension.sql)
        return value if self.time_shift is None else self.time_shift(self, dimension, value)

    def _label(self, label: str | SqlSnippet) -> exp.Expr:
        return exp.Literal.string(label) if isinstance(label, str) else self.snippet(label)

    def segment(self, member: Member) -> exp.Expr:
        segment = self.origin(member)
        assert isinstance(segment, Segment)
        if segment.sql is None:  # an empty sql: every row (Cube leaves the condition out)
            return exp.true()
        return self.snippet(segment.sql)

    # -- time ---------------------------------------------------------------------------------------

    def local_time(self, expression: exp.Expr) -> exp.Expr:
        """A time column as wall-clock time of the query time zone (stored values are read as UTC)."""
        return exp.AtTimeZone(
            this=exp.Cast(this=expression, to=TIMESTAMPTZ.copy()), zone=exp.Literal.string(self.timezone)
        )

    def time_dimension(self, member: Member, granularity: str) -> exp.Expr:
        """The dimension truncated to ``granularity`` in the query time zone (a naive local timestamp)."""
        dimension = self.origin(member)
        assert isinstance(dimension, Dimension)
        local = self.local_time(self.dimension(dimension))
        if granularity in dimension.granularities:
            return self.custom_granularity(local, dimension.granularities[granularity])
        if granularity not in PREDEFINED_GRANULARITIES:
            raise QueryError(f'Granularity "{granularity}" does not exist in dimension {member.full_name}')
        return exp.TimestampTrunc(this=local, unit=exp.var(granularity.upper()))

    def granularity_origin(self, granularity: Granularity) -> datetime:
        """Cube's origin: ``origin``, else the start of the current year (Monday-aligned for week intervals),
        moved by ``offset``."""
        if granularity.origin is not None:
            return parse_local(granularity.origin, self.zone)
        current = local_now(self.now, self.zone)
        origin = datetime(current.year, 1, 1)
        if all(unit == "week" for unit, _ in granularity.interval.parts):
            origin = origin - relativedelta(days=origin.weekday())
        if granularity.offset is not None:
            origin = origin + relativedelta(months=granularity.offset.months, seconds=granularity.offset.seconds)
        return origin

    def custom_granularity(self, local: exp.Expr, granularity: Granularity) -> exp.Expr:
        """Buckets of ``interval`` counted from the origin: month arithmetic for calendar intervals,
        seconds for fixed ones."""
        origin = self.granularity_origin(granularity)
        origin_sql = exp.Cast(this=exp.Literal.string(format_local(origin)), to=TIMESTAMP.copy())
        interval = granularity.interval
        if interval.months:
            months: exp.Expr = exp.Add(
                this=exp.Mul(
                    this=exp.Paren(
                        this=exp.Sub(this=_extract("YEAR", local), expression=exp.Literal.number(origin.year))
                    ),
                    expression=exp.Literal.number(12),
                ),
                expression=exp.Paren(
                    this=exp.Sub(this=_extract("MONTH", local), expression=exp.Literal.number(origin.month))
                ),
            )
            months = exp.Cast(this=months, to=exp.DataType.build("bigint"))
            stepped = exp.Add(
                this=origin_sql.copy(), expression=exp.Mul(this=_interval(1, "MONTH"), expression=months.copy())
            )
            whole = (
                exp.Case()
                .when(
                    exp.LT(this=local.copy(), expression=stepped),
                    exp.Sub(this=months.copy(), expression=exp.Literal.number(1)),
                )
                .else_(months)
            )
            return _bucket(origin_sql, whole, interval.months, "MONTH")
        seconds = exp.Sub(this=_extract("EPOCH", local), expression=_extract("EPOCH", origin_sql.copy()))
        return _bucket(origin_sql, seconds, interval.seconds, "SECOND")

    # -- measures -----------------------------------------------------------------------------------

    def measure(self, member: Member, leaf: MeasureLeaf) -> exp.Expr:
        """A measure's value: ``leaf`` renders each aggregate; composite measures combine leaves."""
        measure = self.origin(member)
        assert isinstance(measure, Measure)
        if is_composite(measure):
            assert measure.sql is not None
            return self.snippet(measure.sql, leaf)
        return leaf(measure)

    def filter_condition(self, measure: Measure) -> exp.Expr | None:
        conditions = [wrap(self.snippet(f)) for f in measure.filters]
        if not conditions:
            return None
        return all_of(*conditions) if len(conditions) > 1 else conditions[0]

    def primary_key(self, cube: str) -> exp.Expr:
        keys = self.model.entities[cube].primary_keys
        return self.dimension(self.cube_member(cube, keys[0]))

    def aggregate(self, measure: Measure, *, distinct_keys: bool = False) -> exp.Expr:
        """The aggregate of a leaf measure. ``distinct_keys``: a ``count`` over a fan-out join counts
        distinct primary keys instead of rows."""
        condition = self.filter_condition(measure)
        if measure.type in CALCULATED_MEASURE_TYPES:
            assert measure.sql is not None
            return self.snippet(measure.sql, self._no_nested_leaf)
        if measure.type == "count" and measure.sql is None:
            # Cube counts the primary key: rows a LEFT JOIN adds without a match (NULL key) do not count.
            keys = self.model.entities[measure.entity].primary_keys
            if len(keys) != 1:
                counted = exp.Star() if condition is None else _when(condition, exp.Literal.number(1))
                return exp.Count(this=counted)
            key = _when(condition, self.primary_key(measure.entity))
            return exp.Count(this=exp.Distinct(expressions=[key]) if distinct_keys else key)
        assert measure.sql is not None
        argument = _when(condition, self.snippet(measure.sql, self._no_nested_leaf))
        if measure.type == "count":
            return exp.Count(this=argument)
        approximate = self.dialect == "duckdb" or approximates_count_distinct(self.dialect)
        if measure.type == "count_distinct" or (measure.type == "count_distinct_approx" and not approximate):
            return exp.Count(this=exp.Distinct(expressions=[argument]))
        if measure.type == "count_distinct_approx":
            return exp.ApproxDistinct(this=argument)
        function = {"sum": exp.Sum, "avg": exp.Avg, "min": exp.Min, "max": exp.Max}[measure.type]
        return function(this=argument)

    def unaggregated(self, measure: Measure) -> exp.Expr:
        """A leaf measure's per-row value for ungrouped queries."""
        condition = self.filter_condition(measure)
        if measure.type in CALCULATED_MEASURE_TYPES:
            raise QueryError(f"'{measure.full_name}' of type {measure.type} cannot be used in an ungrouped query")
        if measure.type == "count":
            if measure.sql is not None:
                present = exp.Not(this=exp.Is(this=wrap(self.snippet(measure.sql)), expression=exp.Null()))
                condition = present if condition is None else all_of(condition, present)
            if condition is None:
                return exp.Literal.number(1)
            return exp.Case().when(condition, exp.Literal.number(1)).else_(exp.Literal.number(0))
        assert measure.sql is not None
        return _when(condition, self.snippet(measure.sql))

    @staticmethod
    def _no_nested_leaf(measure: Measure) -> exp.Expr:
        raise QueryError(f"'{measure.full_name}' is referenced from an aggregate measure's SQL; use a number measure")


def _when(condition: exp.Expr | None, value: exp.Expr) -> exp.Expr:
    return value if condition is None else exp.Case().when(condition, value)


def _extract(part: str, expression: exp.Expr) -> exp.Expr:
    return exp.Extract(this=exp.var(part), expression=expression.copy())


def _interval(amount: int, unit: str) -> exp.Expr:
    return exp.Interval(this=exp.Literal.string(str(amount)), unit=exp.var(unit))


def _bucket(origin: exp.Expr, units: exp.Expr, step: int, unit: str) -> exp.Expr:
    """``origin + floor(units / step) * step`` units."""
    steps = exp.Floor(
        this=exp.Div(this=exp.Cast(this=units, to=exp.DataType.build("double")), expression=exp.Literal.number(step))
    )
    whole = exp.Cast(this=exp.Mul(this=steps, expression=exp.Literal.number(step)), to=exp.DataType.build("bigint"))
    return exp.Add(this=origin, expression=exp.Mul(this=_interval(1, unit), expression=whole))


__all__ = ["Renderer", "is_composite", "quoted", "wrap"]
