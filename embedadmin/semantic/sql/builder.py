"""A normalized query as one SQL statement (sqlglot tree -> text for the dialect) plus its parameters.

Shape of the statement:

- Cubes are joined along the join tree (:mod:`.joins`), ``LEFT JOIN`` in tree order, each aliased by name.
- Dimension filters, segments, time-dimension ranges and access-policy row filters go to ``WHERE``;
  measure filters to ``HAVING``. Caller values are parameters (:mod:`.filters`).
- Fan-out: when a join multiplies a cube's rows (see :mod:`.joins`), its ``sum``/``avg``/``count(sql)``/
  ``number`` measures are computed in a separate subquery that first takes the DISTINCT (dimensions,
  primary key) pairs of the joined, filtered rows and then joins the cube back on its primary key; a plain
  ``count`` becomes ``count(DISTINCT primary key)``; ``count_distinct``, ``min`` and ``max`` are unaffected.
  The subqueries are joined on the dimensions (NULL-safe) and the outer query applies measure filters,
  order and limit. This is Cube's own strategy.
- ``total``: ``SELECT count(*)`` over the statement without order, limit and offset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlglot import exp

from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.dependencies import (
    cubes_read_through_view,
    member_dependencies,
    snippet_dependencies,
)
from embedadmin.semantic.modeling.joins import JoinHint, JoinTree, build_join_tree
from embedadmin.semantic.modeling.model import FANOUT_SAFE_MEASURE_TYPES, CompiledModel, Dimension, Measure, Member
from embedadmin.semantic.modeling.model import value_type as member_value_type
from embedadmin.semantic.query.access import row_restriction
from embedadmin.semantic.query.normalized import (
    EVERY_ROW,
    FilterCondition,
    FilterNode,
    NormalizedQuery,
    TimeDimensionSpec,
)
from embedadmin.semantic.sources.registry import writer
from embedadmin.semantic.sql.columns import ResultColumn, SelectItem, column_alias, filter_leaves, query_leaves
from embedadmin.semantic.sql.context import ContextValues
from embedadmin.semantic.sql.expressions import Renderer, TimeShiftRender, aliased, all_of, is_composite, quoted, wrap
from embedadmin.semantic.sql.filters import FilterCompiler, Origin, Parameters
from embedadmin.semantic.sql.groups import ROLLING, GroupStatements
from embedadmin.semantic.sql.stages import StagedStatements


@dataclass(frozen=True)
class CompiledQuery:
    """What the data source runs for one normalized query, and how to read its result."""

    query: NormalizedQuery
    dialect: str
    sql: str
    params: tuple[Any, ...]
    total_sql: str | None
    columns: tuple[ResultColumn, ...]
    hints: dict[str, Any] = field(default_factory=dict)
    # Per parameter, the query filter value it was bound from (None: not from one); see sql/shapes.py.
    origins: tuple[Origin | None, ...] = ()

    @property
    def alias_to_member(self) -> dict[str, str]:
        return {c.alias: c.key for c in self.columns}


def compile_query(
    model: CompiledModel, query: NormalizedQuery, ctx: QueryContext, *, now: datetime | None = None
) -> CompiledQuery:
    """Compile one normalized query for the model's dialect, with the caller's row restrictions."""
    return _Builder(model, query, ctx, now).build()


class _Builder(StagedStatements, GroupStatements):
    def __init__(
        self,
        model: CompiledModel,
        query: NormalizedQuery,
        ctx: QueryContext,
        now: datetime | None,
        params: Parameters | None = None,
    ) -> None:
        self.model = model
        self.query = query
        self.ctx = ctx
        self.renderer = Renderer(model, query.timezone, now)
        # A stage of a multi-stage query (sql/stages.py) binds into its query's parameters and restricts its rows
        # as the query does (the caller's row filters of what the query reads).
        self.params = params or Parameters(leaves={id(leaf): i for i, leaf in enumerate(query_leaves(query.filters))})
        self.restrictions: list[FilterNode] | None = None
        self.ungrouped = bool(query.ungrouped)
        self.taken: set[str] = set()
        self.where_nodes: list[FilterNode] = []
        self.having_nodes: list[FilterNode] = []
        self.sub_joins: dict[str, tuple[str, exp.Select]] = {}
        self.rolling_td: TimeDimensionSpec | None = None
        self.rolling_range: FilterNode | None = None
        self.renderer.sub_query = self.sub_query_value
        self.context = ContextValues(
            ctx=ctx, params=self.params, zone=self.renderer.zone, member=self.member, value_type=self.value_type
        )
        self.renderer.context = self.context

    # -- members ------------------------------------------------------------------------------------

    def member(self, name: str) -> Member:
        return self.model.members[name]

    def value_type(self, name: str) -> str:
        return member_value_type(self.member(name))

    def is_measure(self, node: FilterNode) -> bool:
        return any(self.member(leaf.member).kind == "measure" for leaf in filter_leaves(node))

    # -- join tree ----------------------------------------------------------------------------------

    def dependencies(self, member: Member) -> list[JoinHint]:
        """Join hints a member needs: its cube (or a view's join path) and cubes its SQL refers to."""
        hints: list[JoinHint] = []
        if member.alias_member:
            path = member.join_path
            hints.append(path if len(path) > 1 else path[0])
        origin = self.renderer.origin(member)
        if not member.alias_member and not self.model.entities[origin.entity].is_view:
            hints.append(origin.entity)  # a view's own member has no table: only what its SQL reaches is joined
        hints.extend(member_dependencies(self.model, origin).hints)
        return hints

    def join_tree(self, members: Iterable[str]) -> JoinTree:
        # The query's own join hints come first, as in Cube (queryLevelJoinHints): the first one's cube is the root
        # when roots tie (a rollup is built rooted at its own cube: sql/rollups.py).
        hints: list[JoinHint] = list(self.query.join_hints)
        for name in members:
            hints.extend(self.dependencies(self.member(name)))
        unique = list(dict.fromkeys(hints))
        return build_join_tree(self.model, unique)

    def from_clause(self, select: exp.Select, tree: JoinTree) -> exp.Select:
        """FROM the root cube, LEFT JOIN the tree's cubes, then the sub-query dimensions of those cubes."""
        select = select.from_(self.renderer.cube_source(tree.root), copy=False)
        for edge in tree.edges:
            condition = self.renderer.snippet(edge.join.sql)
            select.append("joins", exp.Join(this=self.renderer.cube_source(edge.target), on=condition, side="LEFT"))
        for alias, (cube, subquery) in self.sub_joins.items():
            if cube in tree.cubes:
                on = exp.EQ(
                    this=exp.column("pk_0", table=quoted(alias)), expression=wrap(self.renderer.primary_key(cube))
                )
                select.append(
                    "joins", exp.Join(this=subquery.copy().subquery(quoted(alias), copy=False), on=on, side="LEFT")
                )
        return select

    def sub_query_value(self, dimension: Dimension) -> exp.Expr:
        """A ``sub_query`` dimension: its value per primary key, computed in a subquery joined by key."""
        alias = f"{dimension.entity}__{dimension.name}__subquery"
        if alias not in self.sub_joins:
            self.sub_joins[alias] = (dimension.entity, self.sub_query_select(dimension))
        return exp.column("value", table=quoted(alias))

    def sub_query_select(self, dimension: Dimension) -> exp.Select:
        cube = dimension.entity
        if len(self.model.entities[cube].primary_keys) != 1:
            raise QueryError(f"sub_query dimension '{dimension.full_name}' needs a cube with one primary key")
        tree = build_join_tree(self.model, [cube, *snippet_dependencies(self.model, dimension).hints])

        def leaf(measure: Measure) -> exp.Expr:
            distinct = measure.entity in tree.multiplied and measure.type == "count"
            return self.renderer.aggregate(measure, distinct_keys=distinct)

        assert dimension.sql is not None
        value = self.renderer.snippet(dimension.sql, leaf)
        select = exp.select(aliased(self.renderer.primary_key(cube), "pk_0"), aliased(value, "value"))
        return self.from_clause(select, tree).group_by(exp.Literal.number(1), copy=False)

    # -- build --------------------------------------------------------------------------------------

    def child(self, query: NormalizedQuery, time_shift: TimeShiftRender | None) -> _Builder:
        """A builder for one stage of this query (sql/stages.py): the same caller and parameters, its own query, the
        stage's time shifts."""
        child = _Builder(self.model, query, self.ctx, self.renderer.now, params=self.params)
        child.restrictions = self.restrictions
        child.renderer.time_shift = time_shift
        return child

    def statement(self) -> tuple[exp.Select, list[ResultColumn], JoinTree]:
        """The query's statement without order, limit and offset, its result columns, and its join tree."""
        query = self.query
        used = [*query.measures, *query.dimensions, *(td.dimension for td in query.time_dimensions), *query.segments]
        used.extend(leaf.member for leaf in query_leaves(query.filters))
        named = [self.member(name).entity for name in used]
        reached = [cube for m in map(self.member, used) for cube in cubes_read_through_view(self.model, m)]
        if self.restrictions is None:  # a stage of a multi-stage query has its query's
            self.restrictions = row_restriction(self.model, named, self.ctx, through_views=reached)
        restrictions = self.restrictions
        used.extend(leaf.member for node in restrictions for leaf in filter_leaves(node))
        tree = self.join_tree(used)
        conditions = [*query.filters, *restrictions]
        self.where_nodes = [n for n in conditions if not self.is_measure(n)]
        self.having_nodes = [n for n in conditions if self.is_measure(n)]
        for td in query.time_dimensions:
            if td.date_range is not None:
                node = FilterCondition(td.dimension, "inDateRange", td.date_range)
                self.where_nodes.append(node)
                if td.granularity and self.rolling_td is None:
                    self.rolling_td, self.rolling_range = td, node
        self.context.filters = self.where_nodes  # what FILTER_PARAMS push down (set before any SQL is rendered)
        for name in used:
            for dimension in member_dependencies(self.model, self.renderer.origin(self.member(name))).sub_queries:
                self.sub_query_value(dimension)
        columns, dimension_selects = self.dimension_columns()
        measure_names = list(query.measures)
        if self.staged_measures(measure_names):
            statement, measure_columns = self.staged(dimension_selects, measure_names)
            return statement, [*columns, *measure_columns], tree
        leaves = self.leaf_measures(
            [*measure_names, *(leaf.member for n in self.having_nodes for leaf in filter_leaves(n))]
        )
        groups = self.measure_groups(leaves, tree)
        if ROLLING in groups and (self.ungrouped or self.rolling_td is None):
            names = ", ".join(f"'{name}'" for name in groups[ROLLING])
            raise QueryError(
                f"rolling_window measures ({names}) need a time dimension with a granularity and a dateRange"
            )
        if self.ungrouped or set(groups) <= {""}:
            statement, measure_columns = self.flat(tree, dimension_selects, measure_names)
        else:
            statement, measure_columns = self.grouped(tree, dimension_selects, measure_names, groups)
        columns.extend(measure_columns)
        return statement, columns, tree

    def build(self) -> CompiledQuery:
        query = self.query
        statement, columns, tree = self.statement()
        self.order_by(statement, columns)
        total_sql = None
        if query.total:
            counted = statement.copy()
            for key in ("order", "limit", "offset"):
                counted.set(key, None)
            total = exp.select(exp.Count(this=exp.Star()).as_("total_count", copy=False)).from_(
                counted.subquery("original_query", copy=False)
            )
            total_sql = total.sql(dialect=writer(self.model.dialect), copy=False)
        if query.limit is not None and query.limit < EVERY_ROW:
            statement.limit(query.limit, copy=False)
        if query.offset:
            statement.offset(query.offset, copy=False)
        return CompiledQuery(
            query=query,
            dialect=self.model.dialect,
            sql=statement.sql(dialect=writer(self.model.dialect), copy=False),
            params=tuple(self.params.values),
            origins=tuple(self.params.origins),
            total_sql=total_sql,
            columns=tuple(columns),
            hints={"root": tree.root, "joins": [e.target for e in tree.edges], "multiplied": sorted(tree.multiplied)},
        )

    def dimension_columns(self) -> tuple[list[ResultColumn], list[SelectItem]]:
        taken = self.taken
        columns: list[ResultColumn] = []
        selects: list[SelectItem] = []
        for name in self.query.dimensions:
            alias = column_alias(name, taken)
            columns.append(ResultColumn(alias, name, name, "dimension", self.value_type(name)))

            def dimension_sql(n: str = name) -> exp.Expr:
                member = self.member(n)
                # A rollup's build selects its segments as boolean columns (sql/rollups.py).
                return self.renderer.segment(member) if member.kind == "segment" else self.renderer.dimension(member)

            selects.append(SelectItem(alias, name, dimension_sql))
        for td in self.query.time_dimensions:
            if not td.granularity:
                continue
            key = f"{td.dimension}.{td.granularity}"
            if any(c.key == key for c in columns):
                continue
            alias = column_alias(key, taken)
            columns.append(ResultColumn(alias, key, td.dimension, "timeDimension", "time", td.granularity))

            def time_dimension_sql(d: str = td.dimension, g: str = td.granularity) -> exp.Expr:
                return self.renderer.time_dimension(self.member(d), g)

            selects.append(SelectItem(alias, key, time_dimension_sql))
        return columns, selects

    # -- measures -----------------------------------------------------------------------------------

    def leaf_measures(self, names: Iterable[str]) -> list[Measure]:
        found: dict[str, Measure] = {}

        def visit(measure: Measure) -> None:
            if is_composite(measure):
                assert measure.sql is not None
                for ref in measure.sql.member_refs():
                    if ref.kind == "measure":
                        target = self.model.entities[ref.cube].measures[ref.member]
                        visit(target)
            else:
                found.setdefault(measure.full_name, measure)

        for name in names:
            member = self.renderer.origin(self.member(name))
            if isinstance(member, Measure):
                visit(member)
        return list(found.values())

    def measure_groups(self, leaves: list[Measure], tree: JoinTree) -> dict[str, dict[str, Measure]]:
        """Leaves by aggregation group: "" for the main query, a cube name for its fan-out-safe subquery."""
        groups: dict[str, dict[str, Measure]] = {}
        for leaf in leaves:
            if leaf.rolling_window is not None:
                groups.setdefault(ROLLING, {})[leaf.full_name] = leaf
                continue
            cube = leaf.entity
            group = ""
            fanout_safe = leaf.type in FANOUT_SAFE_MEASURE_TYPES or leaf.fanout_safe
            if not self.ungrouped and cube in tree.multiplied and not fanout_safe:
                keys = self.model.entities[cube].primary_keys
                plain_count = leaf.type == "count" and leaf.sql is None and len(keys) == 1
                group = "" if plain_count else cube
            groups.setdefault(group, {})[leaf.full_name] = leaf
        return groups

    def leaf_aggregate(self, tree: JoinTree) -> Callable[[Measure], exp.Expr]:
        def render(measure: Measure) -> exp.Expr:
            if self.ungrouped:
                return self.renderer.unaggregated(measure)
            distinct = measure.entity in tree.multiplied and measure.type == "count"
            return self.renderer.aggregate(measure, distinct_keys=distinct)

        return render

    # -- statements ---------------------------------------------------------------------------------

    def filters(self, member_sql: Callable[[str], exp.Expr]) -> FilterCompiler:
        def measure_filter(name: str) -> exp.Expr:
            measure = self.renderer.origin(self.member(name))
            assert isinstance(measure, Measure)
            return self.renderer.filter_condition(measure) or exp.true()

        return FilterCompiler(self.params, self.renderer.zone, member_sql, self.value_type, measure_filter)

    def where(self, select: exp.Select, *, skip: FilterNode | None = None) -> exp.Select:
        compiler = self.filters(lambda n: self.renderer.dimension(self.member(n)))
        conditions = [self.renderer.segment(self.member(segment)) for segment in self.query.segments]
        conditions += [compiler.condition(node) for node in self.where_nodes if node is not skip]
        # One balanced AND: chaining .where() per filter nests a level each time (~150 filters used to exceed
        # the recursion limit).
        return select.where(all_of(*conditions), copy=False) if conditions else select

    def flat(
        self, tree: JoinTree, dimensions: list[SelectItem], measure_names: list[str]
    ) -> tuple[exp.Select, list[ResultColumn]]:
        aggregate = self.leaf_aggregate(tree)
        select = exp.select(*(aliased(d.build(), quoted(d.alias)) for d in dimensions))
        columns = []
        for name in measure_names:
            alias = column_alias(name, self.taken)
            columns.append(ResultColumn(alias, name, name, "measure", self.value_type(name)))
            select = select.select(
                aliased(self.renderer.measure(self.member(name), aggregate), quoted(alias)), copy=False
            )
        select = self.where(self.from_clause(select, tree))
        if dimensions and not self.ungrouped:
            select = select.group_by(*(exp.Literal.number(i + 1) for i in range(len(dimensions))), copy=False)
        having = self.filters(lambda n: self.renderer.measure(self.member(n), aggregate))
        if self.having_nodes:
            condition = all_of(*(having.condition(node) for node in self.having_nodes))
            select = select.where(condition, copy=False) if self.ungrouped else select.having(condition, copy=False)
        return select, columns

    # -- order --------------------------------------------------------------------------------------

    def order_by(self, select: exp.Select, columns: list[ResultColumn]) -> None:
        positions: dict[str, int] = {}
        for position, column in enumerate(columns, start=1):
            positions.setdefault(column.key, position)
            positions.setdefault(column.alias, position)
            if column.role == "timeDimension":
                positions.setdefault(column.member, position)
        for order in self.query.order:
            ordered = positions.get(order.id)
            if ordered is not None:
                select.order_by(exp.Ordered(this=exp.Literal.number(ordered), desc=order.desc), copy=False)


__all__ = ["CompiledQuery", "ResultColumn", "compile_query"]
