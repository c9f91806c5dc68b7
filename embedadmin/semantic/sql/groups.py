"""Statements for queries that need several aggregation groups: fan-out-safe subqueries and rolling windows.

``GroupStatements`` is a part of the statement builder (:class:`.builder._Builder` mixes it in and
provides ``renderer``, ``model``, ``where``, ``from_clause``, ``filters``, ``leaf_aggregate`` and the rest).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.joins import JoinTree
from embedadmin.semantic.modeling.model import Dimension, Measure
from embedadmin.semantic.sql.columns import ResultColumn, SelectItem, column_alias
from embedadmin.semantic.sql.expressions import aliased, all_of, any_of, quoted, wrap
from embedadmin.semantic.sql.rolling import (
    bucket_aggregate,
    buckets,
    read_bounds,
    row_value,
    series_source,
    window_condition,
)

if TYPE_CHECKING:
    from embedadmin.semantic.modeling.joins import JoinHint
    from embedadmin.semantic.modeling.model import Member
    from embedadmin.semantic.query.normalized import FilterNode
    from embedadmin.semantic.sql.filters import FilterCompiler

ROLLING = "__rolling__"  # the aggregation group of rolling-window measures


class GroupStatements:
    """Building blocks of grouped statements (see :mod:`.builder` for the overall shape)."""

    model: Any
    renderer: Any
    query: Any
    taken: set[str]
    having_nodes: list[Any]
    rolling_td: Any
    rolling_range: Any
    context: Any

    if TYPE_CHECKING:  # provided by builder._Builder, which mixes this in

        def member(self, name: str) -> Member: ...
        def value_type(self, name: str) -> str: ...
        def dependencies(self, member: Member) -> list[JoinHint]: ...
        def from_clause(self, select: exp.Select, tree: JoinTree) -> exp.Select: ...
        def leaf_aggregate(self, tree: JoinTree) -> Callable[[Measure], exp.Expr]: ...
        def filters(self, member_sql: Callable[[str], exp.Expr]) -> FilterCompiler: ...
        def where(self, select: exp.Select, *, skip: FilterNode | None = None) -> exp.Select: ...

    def grouped(
        self,
        tree: JoinTree,
        dimensions: list[SelectItem],
        measure_names: list[str],
        groups: dict[str, dict[str, Measure]],
    ) -> tuple[exp.Select, list[ResultColumn]]:
        aggregate = self.leaf_aggregate(tree)
        leaf_column: dict[str, exp.Column] = {}
        subqueries: list[exp.Expr] = []
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

        def from_leaf(measure: Measure) -> exp.Expr:
            return leaf_column[measure.full_name].copy()

        columns = []
        for name in measure_names:
            alias = column_alias(name, self.taken)
            columns.append(ResultColumn(alias, name, name, "measure", self.value_type(name)))
            outer = outer.select(aliased(self.outer_measure(name, from_leaf), quoted(alias)), copy=False)
        having = self.filters(lambda n: self.outer_measure(n, from_leaf))
        for node in self.having_nodes:
            outer = outer.where(having.condition(node), copy=False)
        return outer, columns

    @staticmethod
    def _same_dimensions(left: str, right: str, count: int) -> exp.Expr:
        return all_of(
            *(
                exp.NullSafeEQ(this=exp.column(f"d_{i}", table=left), expression=exp.column(f"d_{i}", table=right))
                for i in range(count)
            )
        )

    def inner_joined(self, dimensions: list[SelectItem], subqueries: list[exp.Expr]) -> exp.Select:
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

    def union_of_keys(self, dimensions: list[SelectItem], subqueries: list[exp.Expr]) -> exp.Select:
        """Rolling windows give buckets the other groups may lack (and the reverse): every group is a CTE, left
        joined to the union of their dimension values (no FULL JOIN: PostgreSQL refuses one on IS NOT DISTINCT FROM)."""
        names = [f"q_{i}" for i in range(len(subqueries))]
        columns = [f"d_{i}" for i in range(len(dimensions))]
        keys: exp.Expr = exp.select(*columns).from_(names[0])
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

    def outer_measure(self, name: str, from_leaf: Callable[[Measure], exp.Expr]) -> exp.Expr:
        expression = self.renderer.measure(self.member(name), from_leaf)
        if any(not col.table.startswith("q_") for col in expression.find_all(exp.Column)):
            raise QueryError(f"'{name}' mixes measures and columns; it cannot be computed over a fan-out join")
        return expression

    def main_group(self, tree: JoinTree, dimensions: list[SelectItem], measures: list[exp.Expr]) -> exp.Select:
        select = exp.select(*(aliased(d.build(), f"d_{i}") for i, d in enumerate(dimensions)), *measures)
        select = self.where(self.from_clause(select, tree))
        if dimensions:
            select = select.group_by(*(exp.Literal.number(i + 1) for i in range(len(dimensions))), copy=False)
        return select

    def rolling_group(
        self, tree: JoinTree, dimensions: list[SelectItem], measures: list[tuple[Measure, str]]
    ) -> exp.Select:
        """Rolling-window measures over the time series of the query's time dimension (see :mod:`.rolling`)."""
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
        self.context.skip = self.rolling_range  # a cube's SQL keeps the rows the window reaches before the range
        try:
            base = self.where(self.from_clause(base, tree), skip=self.rolling_range)
        finally:
            self.context.skip = None
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
        dimensions: list[SelectItem],
        measures: list[exp.Expr],
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
