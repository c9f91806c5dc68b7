"""A normalized query as one SQL statement (sqlglot tree -> text for the dialect) plus its parameters.

Shape of the statement:

- Cubes are joined along the join tree (:mod:`.joins`), ``LEFT JOIN`` in tree order, each aliased by name.
- Dimension filters, segments, time-dimension ranges and access-policy row filters go to ``WHERE``;
  measure filters to ``HAVING``. Caller values are parameters (:mod:`.sql_filters`).
- Fan-out: when a join multiplies a cube's rows (see :mod:`.joins`), its ``sum``/``avg``/``count(sql)``/
  ``number`` measures are computed in a separate subquery that first takes the DISTINCT (dimensions,
  primary key) pairs of the joined, filtered rows and then joins the cube back on its primary key; a plain
  ``count`` becomes ``count(DISTINCT primary key)``; ``count_distinct``, ``min`` and ``max`` are unaffected.
  The subqueries are joined on the dimensions (NULL-safe) and the outer query applies measure filters,
  order and limit. This is Cube's own strategy.
- ``total``: ``SELECT count(*)`` over the statement without order, limit and offset.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlglot import exp

from .context import QueryContext
from .dependencies import member_dependencies, snippet_dependencies
from .errors import QueryError
from .joins import JoinHint, JoinTree, build_join_tree
from .model import FANOUT_SAFE_MEASURE_TYPES, CompiledModel, Dimension, Measure, Member
from .policies import row_restriction
from .query import Contradiction, FilterCondition, FilterGroup, FilterNode, NormalizedQuery, TimeDimensionSpec
from .sql_expressions import Renderer, aliased, all_of, any_of, is_composite, quoted, wrap
from .sql_filters import FilterCompiler, Parameters
from .sql_rolling import bucket_aggregate, buckets, read_bounds, row_value, series_source, window_condition

Role = Literal["measure", "dimension", "timeDimension"]
ROLLING = "__rolling__"  # the aggregation group of rolling-window measures
_ALIAS_UNSAFE = re.compile(r"[^a-z0-9_]")


@dataclass(frozen=True, slots=True)
class ResultColumn:
    """One column of the statement's result: its SQL alias and the row key(s) it fills."""

    alias: str
    key: str  # "orders.count", "orders.status", "orders.created_at.month"
    member: str  # the member name ("orders.created_at" for a time dimension)
    role: Role
    type: str  # number | string | time | boolean | geo
    granularity: str | None = None


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

    @property
    def alias_to_member(self) -> dict[str, str]:
        return {c.alias: c.key for c in self.columns}


@dataclass
class _Select:
    alias: str
    key: str  # the row key: member name, or "Cube.td.granularity"
    build: Callable[[], exp.Expression]


def compile_query(
    model: CompiledModel, query: NormalizedQuery, ctx: QueryContext, *, now: datetime | None = None
) -> CompiledQuery:
    """Compile one normalized query for the model's dialect, with the caller's row restrictions."""
    return _Builder(model, query, ctx, now).build()


def _alias(name: str, taken: set[str]) -> str:
    base = _ALIAS_UNSAFE.sub("_", name.lower().replace(".", "__", 1).replace(".", "_"))
    alias, index = base, 1
    while alias in taken:
        index += 1
        alias = f"{base}_{index}"
    taken.add(alias)
    return alias


def _leaves(node: FilterNode) -> Iterable[FilterCondition]:
    if isinstance(node, FilterCondition):
        yield node
    elif isinstance(node, FilterGroup):
        for item in node.items:
            yield from _leaves(item)


class _Builder:
    def __init__(self, model: CompiledModel, query: NormalizedQuery, ctx: QueryContext, now: datetime | None) -> None:
        self.model = model
        self.query = query
        self.ctx = ctx
        self.renderer = Renderer(model, query.timezone, now)
        self.params = Parameters()
        self.ungrouped = bool(query.ungrouped)
        self.taken: set[str] = set()
        self.where_nodes: list[FilterNode] = []
        self.having_nodes: list[FilterNode] = []
        self.sub_joins: dict[str, tuple[str, exp.Select]] = {}
        self.rolling_td: TimeDimensionSpec | None = None
        self.rolling_range: FilterNode | None = None
        self.renderer.sub_query = self.sub_query_value

    # -- members ------------------------------------------------------------------------------------

    def member(self, name: str) -> Member:
        return self.model.members[name]

    def value_type(self, name: str) -> str:
        member = self.renderer.origin(self.member(name))
        if isinstance(member, Measure):
            return member.type if member.type in ("string", "time", "boolean") else "number"
        if isinstance(member, Dimension):
            return "string" if member.type == "geo" else member.type
        return "boolean"

    def is_measure(self, node: FilterNode) -> bool:
        return any(self.member(leaf.member).kind == "measure" for leaf in _leaves(node))

    # -- join tree ----------------------------------------------------------------------------------

    def dependencies(self, member: Member) -> list[JoinHint]:
        """Join hints a member needs: its cube (or a view's join path) and cubes its SQL refers to."""
        hints: list[JoinHint] = []
        if member.alias_member:
            path = member.join_path
            hints.append(path if len(path) > 1 else path[0])
        origin = self.renderer.origin(member)
        if not member.alias_member:
            hints.append(origin.entity)
        hints.extend(member_dependencies(self.model, origin).hints)
        return hints

    def join_tree(self, members: Iterable[str]) -> JoinTree:
        hints: list[JoinHint] = []
        for name in members:
            hints.extend(self.dependencies(self.member(name)))
        hints.extend(self.query.join_hints)
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

    def sub_query_value(self, dimension: Dimension) -> exp.Expression:
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

        def leaf(measure: Measure) -> exp.Expression:
            distinct = measure.entity in tree.multiplied and measure.type == "count"
            return self.renderer.aggregate(measure, distinct_keys=distinct)

        assert dimension.sql is not None
        value = self.renderer.snippet(dimension.sql, leaf)
        select = exp.select(aliased(self.renderer.primary_key(cube), "pk_0"), aliased(value, "value"))
        return self.from_clause(select, tree).group_by(exp.Literal.number(1), copy=False)

    # -- build --------------------------------------------------------------------------------------

    def build(self) -> CompiledQuery:
        query = self.query
        used = [*query.measures, *query.dimensions, *(td.dimension for td in query.time_dimensions), *query.segments]
        used.extend(leaf.member for node in query.filters for leaf in _leaves(node))
        entities = [part for name in used for part in self._entities(name)]
        restrictions = row_restriction(self.model, entities, self.ctx)
        used.extend(leaf.member for node in restrictions for leaf in _leaves(node))
        tree = self.join_tree(used)
        for name in used:
            for dimension in member_dependencies(self.model, self.renderer.origin(self.member(name))).sub_queries:
                self.sub_query_value(dimension)
        conditions = [*query.filters, *restrictions]
        self.where_nodes = [n for n in conditions if not self.is_measure(n)]
        self.having_nodes = [n for n in conditions if self.is_measure(n)]
        for td in query.time_dimensions:
            if td.date_range is not None:
                node = FilterCondition(td.dimension, "inDateRange", td.date_range)
                self.where_nodes.append(node)
                if td.granularity and self.rolling_td is None:
                    self.rolling_td, self.rolling_range = td, node
        columns, dimension_selects = self.dimension_columns()
        measure_names = list(query.measures)
        leaves = self.leaf_measures([*measure_names, *(leaf.member for n in self.having_nodes for leaf in _leaves(n))])
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
        self.order_by(statement, columns)
        total_sql = None
        if query.total:
            counted = statement.copy()
            for key in ("order", "limit", "offset"):
                counted.set(key, None)
            total = exp.select(exp.Count(this=exp.Star()).as_("total_count", copy=False)).from_(
                counted.subquery("original_query", copy=False)
            )
            total_sql = total.sql(dialect=self.model.dialect, copy=False)
        if query.limit is not None:
            statement.limit(query.limit, copy=False)
        if query.offset:
            statement.offset(query.offset, copy=False)
        return CompiledQuery(
            query=query,
            dialect=self.model.dialect,
            sql=statement.sql(dialect=self.model.dialect, copy=False),
            params=tuple(self.params.values),
            total_sql=total_sql,
            columns=tuple(columns),
            hints={"root": tree.root, "joins": [e.target for e in tree.edges], "multiplied": sorted(tree.multiplied)},
        )

    def _entities(self, name: str) -> list[str]:
        member = self.member(name)
        origin = self.renderer.origin(member)
        return [member.entity, origin.entity] if member.alias_member else [member.entity]

    def dimension_columns(self) -> tuple[list[ResultColumn], list[_Select]]:
        taken = self.taken
        columns: list[ResultColumn] = []
        selects: list[_Select] = []
        for name in self.query.dimensions:
            alias = _alias(name, taken)
            columns.append(ResultColumn(alias, name, name, "dimension", self.value_type(name)))
            selects.append(_Select(alias, name, lambda n=name: self.renderer.dimension(self.member(n))))
        for td in self.query.time_dimensions:
            if not td.granularity:
                continue
            key = f"{td.dimension}.{td.granularity}"
            if any(c.key == key for c in columns):
                continue
            alias = _alias(key, taken)
            columns.append(ResultColumn(alias, key, td.dimension, "timeDimension", "time", td.granularity))
            selects.append(
                _Select(
                    alias,
                    key,
                    lambda d=td.dimension, g=td.granularity: self.renderer.time_dimension(self.member(d), g),
                )
            )
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
            if not self.ungrouped and cube in tree.multiplied and leaf.type not in FANOUT_SAFE_MEASURE_TYPES:
                keys = self.model.entities[cube].primary_keys
                plain_count = leaf.type == "count" and leaf.sql is None and len(keys) == 1
                group = "" if plain_count else cube
            groups.setdefault(group, {})[leaf.full_name] = leaf
        return groups

    def leaf_aggregate(self, tree: JoinTree) -> Callable[[Measure], exp.Expression]:
        def render(measure: Measure) -> exp.Expression:
            if self.ungrouped:
                return self.renderer.unaggregated(measure)
            distinct = measure.entity in tree.multiplied and measure.type == "count"
            return self.renderer.aggregate(measure, distinct_keys=distinct)

        return render

    # -- statements ---------------------------------------------------------------------------------

    def filters(self, member_sql: Callable[[str], exp.Expression]) -> FilterCompiler:
        def measure_filter(name: str) -> exp.Expression:
            measure = self.renderer.origin(self.member(name))
            assert isinstance(measure, Measure)
            return self.renderer.filter_condition(measure) or exp.true()

        return FilterCompiler(self.params, self.renderer.zone, member_sql, self.value_type, measure_filter)

    def where(self, select: exp.Select, *, skip: FilterNode | None = None) -> exp.Select:
        compiler = self.filters(lambda n: self.renderer.dimension(self.member(n)))
        for segment in self.query.segments:
            select = select.where(self.renderer.segment(self.member(segment)), copy=False)
        for node in self.where_nodes:
            if node is not skip:
                select = select.where(compiler.condition(node), copy=False)
        return select

    def flat(
        self, tree: JoinTree, dimensions: list[_Select], measure_names: list[str]
    ) -> tuple[exp.Select, list[ResultColumn]]:
        aggregate = self.leaf_aggregate(tree)
        select = exp.select(*(aliased(d.build(), quoted(d.alias)) for d in dimensions))
        columns = []
        for name in measure_names:
            alias = _alias(name, self.taken)
            columns.append(ResultColumn(alias, name, name, "measure", self.value_type(name)))
            select = select.select(
                aliased(self.renderer.measure(self.member(name), aggregate), quoted(alias)), copy=False
            )
        select = self.where(self.from_clause(select, tree))
        if dimensions and not self.ungrouped:
            select = select.group_by(*(exp.Literal.number(i + 1) for i in range(len(dimensions))), copy=False)
        having = self.filters(lambda n: self.renderer.measure(self.member(n), aggregate))
        for node in self.having_nodes:
            condition = having.condition(node)
            select = select.where(condition, copy=False) if self.ungrouped else select.having(condition, copy=False)
        return select, columns

    def grouped(
        self,
        tree: JoinTree,
        dimensions: list[_Select],
        measure_names: list[str],
        groups: dict[str, dict[str, Measure]],
    ) -> tuple[exp.Select, list[ResultColumn]]:
        aggregate = self.leaf_aggregate(tree)
        leaf_column: dict[str, exp.Column] = {}
        subqueries: list[exp.Expression] = []
        ordered = sorted(groups.items(), key=lambda g: (g[0] != ROLLING, g[0] != ""))
        for index, (group, leaves) in enumerate(ordered):
            name = f"q_{index}"
            aliases = {}
            for number, leaf in enumerate(leaves.values()):
                aliases[leaf.full_name] = f"m_{index}_{number}"
                leaf_column[leaf.full_name] = exp.column(aliases[leaf.full_name], table=name)
            if group == ROLLING:
                body = self.rolling_group(tree, dimensions, [(leaf, aliases[n]) for n, leaf in leaves.items()])
            else:
                measures = [aliased(aggregate(leaf), aliases[n]) for n, leaf in leaves.items()]
                body = (
                    self.main_group(tree, dimensions, measures)
                    if not group
                    else self.keys_group(tree, dimensions, measures, group, list(leaves.values()))
                )
            subqueries.append(body.subquery(name, copy=False))
        if ROLLING in groups and len(subqueries) > 1:
            outer = self.union_of_keys(dimensions, subqueries)
        else:
            outer = self.inner_joined(dimensions, subqueries)

        def from_leaf(measure: Measure) -> exp.Expression:
            return leaf_column[measure.full_name].copy()

        columns = []
        for name in measure_names:
            alias = _alias(name, self.taken)
            columns.append(ResultColumn(alias, name, name, "measure", self.value_type(name)))
            outer = outer.select(aliased(self.outer_measure(name, from_leaf), quoted(alias)), copy=False)
        having = self.filters(lambda n: self.outer_measure(n, from_leaf))
        for node in self.having_nodes:
            outer = outer.where(having.condition(node), copy=False)
        return outer, columns

    @staticmethod
    def _same_dimensions(left: str, right: str, count: int) -> exp.Expression:
        return all_of(
            *(
                exp.NullSafeEQ(this=exp.column(f"d_{i}", table=left), expression=exp.column(f"d_{i}", table=right))
                for i in range(count)
            )
        )

    def inner_joined(self, dimensions: list[_Select], subqueries: list[exp.Expression]) -> exp.Select:
        """Groups over the same rows have the same dimension values: join them on those (Cube's way)."""
        outer = exp.select(
            *(aliased(exp.column(f"d_{i}", table="q_0"), quoted(d.alias)) for i, d in enumerate(dimensions))
        )
        outer = outer.from_(subqueries[0], copy=False)
        for index, subquery in enumerate(subqueries[1:], start=1):
            if dimensions:
                on = self._same_dimensions("q_0", f"q_{index}", len(dimensions))
                outer.append("joins", exp.Join(this=subquery, on=on, kind="INNER"))
            else:
                outer.append("joins", exp.Join(this=subquery, kind="CROSS"))
        return outer

    def union_of_keys(self, dimensions: list[_Select], subqueries: list[exp.Expression]) -> exp.Select:
        """Rolling windows give buckets the other groups may lack (and the reverse): every group is a CTE, left
        joined to the union of their dimension values (no FULL JOIN: PostgreSQL refuses one on IS NOT DISTINCT FROM)."""
        names = [f"q_{i}" for i in range(len(subqueries))]
        columns = [f"d_{i}" for i in range(len(dimensions))]
        keys: exp.Expression = exp.select(*columns).from_(names[0])
        for name in names[1:]:
            keys = exp.union(keys, exp.select(*columns).from_(name), distinct=True, copy=False)
        outer = exp.select(
            *(aliased(exp.column(c, table="keys"), quoted(d.alias)) for c, d in zip(columns, dimensions, strict=True))
        )
        outer = outer.from_(exp.Subquery(this=keys, alias=exp.TableAlias(this=exp.to_identifier("keys"))), copy=False)
        for name, subquery in zip(names, subqueries, strict=True):
            outer.append(
                "joins",
                exp.Join(this=exp.to_table(name), on=self._same_dimensions("keys", name, len(columns)), side="LEFT"),
            )
            outer = outer.with_(name, as_=subquery.this, copy=False)
        return outer

    def outer_measure(self, name: str, from_leaf: Callable[[Measure], exp.Expression]) -> exp.Expression:
        expression = self.renderer.measure(self.member(name), from_leaf)
        if any(not col.table.startswith("q_") for col in expression.find_all(exp.Column)):
            raise QueryError(f"'{name}' mixes measures and columns; it cannot be computed over a fan-out join")
        return expression

    def main_group(self, tree: JoinTree, dimensions: list[_Select], measures: list[exp.Expression]) -> exp.Select:
        select = exp.select(*(aliased(d.build(), f"d_{i}") for i, d in enumerate(dimensions)), *measures)
        select = self.where(self.from_clause(select, tree))
        if dimensions:
            select = select.group_by(*(exp.Literal.number(i + 1) for i in range(len(dimensions))), copy=False)
        return select

    def rolling_group(
        self, tree: JoinTree, dimensions: list[_Select], measures: list[tuple[Measure, str]]
    ) -> exp.Select:
        """Rolling-window measures over the time series of the query's time dimension (see :mod:`.sql_rolling`)."""
        td = self.rolling_td
        assert td is not None
        assert td.date_range is not None
        assert td.granularity is not None
        key = f"{td.dimension}.{td.granularity}"
        dimension = self.renderer.origin(self.member(td.dimension))
        assert isinstance(dimension, Dimension)
        series = buckets(self.renderer, dimension.granularities, td.granularity, td.date_range)
        base = exp.select(
            *(aliased(d.build(), f"d_{i}") for i, d in enumerate(dimensions) if d.key != key),
            aliased(self.renderer.local_time(self.renderer.dimension(dimension)), "t"),
            *(aliased(row_value(self.renderer, m), f"v_{j}") for j, (m, _) in enumerate(measures)),
        )
        base = self.where(self.from_clause(base, tree), skip=self.rolling_range)
        lower, upper = read_bounds([m.rolling_window for m, _ in measures if m.rolling_window], td.date_range)
        bounds = self.filters(lambda n: self.renderer.dimension(self.member(n)))
        if lower is not None:
            base = base.where(
                exp.GTE(this=self.renderer.dimension(dimension), expression=bounds.instant(lower)), copy=False
            )
        if upper is not None:
            base = base.where(
                exp.LTE(this=self.renderer.dimension(dimension), expression=bounds.instant(upper)), copy=False
            )
        time = exp.column("t", table="base")
        windows = [window_condition(m.rolling_window, time) for m, _ in measures if m.rolling_window]
        select = exp.select(
            *(
                aliased(
                    exp.column("date_from", table="series") if d.key == key else exp.column(f"d_{i}", table="base"),
                    f"d_{i}",
                )
                for i, d in enumerate(dimensions)
            ),
            *(
                aliased(bucket_aggregate(m, exp.Case().when(window.copy(), exp.column(f"v_{j}", table="base"))), alias)
                for j, ((m, alias), window) in enumerate(zip(measures, windows, strict=True))
            ),
        ).from_(series_source(series), copy=False)
        join_on = windows[0] if len(windows) == 1 else any_of(*(exp.Paren(this=w.copy()) for w in windows))
        select.append("joins", exp.Join(this=base.subquery("base", copy=False), on=join_on, side="LEFT"))
        if dimensions:
            select = select.group_by(*(exp.Literal.number(i + 1) for i in range(len(dimensions))), copy=False)
        return select

    def keys_group(
        self,
        tree: JoinTree,
        dimensions: list[_Select],
        measures: list[exp.Expression],
        cube: str,
        leaves: list[Measure],
    ) -> exp.Select:
        for leaf in leaves:
            others = {h if isinstance(h, str) else h[-1] for h in self.dependencies(leaf)} - {cube}
            if others:
                raise QueryError(f"'{leaf.full_name}' refers to other cubes; it cannot be computed over a fan-out join")
        keys = self.model.entities[cube].primary_keys
        key_exprs = [self.renderer.dimension(self.model.entities[cube].dimensions[k]) for k in keys]
        inner = exp.select(
            *(aliased(d.build(), f"d_{i}") for i, d in enumerate(dimensions)),
            *(aliased(e.copy(), f"pk_{i}") for i, e in enumerate(key_exprs)),
        ).distinct()
        inner = self.where(self.from_clause(inner, tree))
        on = all_of(
            *(exp.EQ(this=exp.column(f"pk_{i}", table="keys"), expression=wrap(e)) for i, e in enumerate(key_exprs))
        )
        select = exp.select(
            *(aliased(exp.column(f"d_{i}", table="keys"), f"d_{i}") for i in range(len(dimensions))), *measures
        )
        select = select.from_(inner.subquery("keys", copy=False), copy=False)
        select.append("joins", exp.Join(this=self.renderer.cube_source(cube), on=on, side="LEFT"))
        if dimensions:
            select = select.group_by(*(exp.Literal.number(i + 1) for i in range(len(dimensions))), copy=False)
        return select

    # -- order --------------------------------------------------------------------------------------

    def order_by(self, select: exp.Select, columns: list[ResultColumn]) -> None:
        positions = {}
        for position, column in enumerate(columns, start=1):
            positions.setdefault(column.key, position)
            positions.setdefault(column.alias, position)
            if column.role == "timeDimension":
                positions.setdefault(column.member, position)
        for order in self.query.order:
            position = positions.get(order.id)
            if position is not None:
                select.order_by(exp.Ordered(this=exp.Literal.number(position), desc=order.desc), copy=False)


__all__ = ["CompiledQuery", "Contradiction", "ResultColumn", "compile_query"]
