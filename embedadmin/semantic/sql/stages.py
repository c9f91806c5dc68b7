"""Queries with multi-stage measures (Cube's ``multi_stage``, ``time_shift``): measures over other measures' results,
computed in stages, each stage a CTE, as Cube's Tesseract planner computes them.

A query measure that is multi-stage, or uses one, is planned as Tesseract plans it
(``multi_stage_query_planner.rs``): a *state* is the query's grain (its dimensions and time dimensions, plus what
``add_group_by`` adds) and its time shifts; a measure is computed for a state by

- a *leaf* stage when nothing it uses is multi-stage: an ordinary statement of this builder for that measure, at
  the state's grain, with the query's filters and the state's time shifts (the time dimension rendered as
  ``dimension + interval`` for ``prior``, ``- interval`` for ``next``; a calendar cube's named shift maps its
  primary key to the shift's ``sql``);
- an *inner* stage otherwise: the stages of the measures its ``sql`` uses, for the state with the measure's
  ``add_group_by`` dimensions and time shifts added, joined on their dimensions; then
  a calculated measure (``number``...) is its ``sql`` over them, row by row; an aggregating one aggregates its
  ``sql`` over them, grouped by the state's dimensions, or, with ``group_by``/``reduce_by``, as a window
  partitioned by the query's dimensions it keeps (``sum(sum(x)) OVER (PARTITION BY ...)``);
- a *rolling* stage for a multi-stage ``rolling_window`` measure: its ``sql`` at the query's granularity (or the
  window's, if finer) over the widened date range, then aggregated over each bucket's window.

The query's ordinary measures are one more leaf stage; the answer joins every stage on the query's dimensions (the
union of their keys, each stage left-joined to it), and the query's measure filters apply to that answer.
Parameters are shared with the stages' builders: every caller value is still a bound parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.intervals import parse_interval
from embedadmin.semantic.modeling.model import (
    CALCULATED_MEASURE_TYPES,
    Dimension,
    Interval,
    Measure,
    MemberReference,
    SqlSnippet,
    TimeShift,
)
from embedadmin.semantic.modeling.references import PREDEFINED_GRANULARITIES
from embedadmin.semantic.query.normalized import FilterCondition, FilterNode, NormalizedQuery, TimeDimensionSpec
from embedadmin.semantic.sql.columns import ResultColumn, SelectItem, column_alias, filter_leaves
from embedadmin.semantic.sql.expressions import aliased, all_of, quoted
from embedadmin.semantic.sql.rolling import buckets, read_bounds, series_source, window_condition

if TYPE_CHECKING:
    from embedadmin.semantic.modeling.model import Member
    from embedadmin.semantic.sql.filters import FilterCompiler

# Finer first: the rolling base's granularity is the finer of the query's and the window's (Tesseract's rule).
_GRAIN_ORDER = ("second", "minute", "hour", "day", "week", "month", "quarter", "year")
_WINDOW_AGGREGATES: dict[str, type[exp.AggFunc]] = {"sum": exp.Sum, "avg": exp.Avg, "min": exp.Min, "max": exp.Max}
# A multi-stage rolling measure aggregates its buckets' values: counts add up.
_ROLLING_AGGREGATES: dict[str, type[exp.AggFunc]] = {**_WINDOW_AGGREGATES, "count": exp.Sum}


@dataclass(frozen=True)
class Grain:
    """One dimension of a stage's grain: a query member (or a dimension ``add_group_by`` adds) and, for a time
    dimension, its granularity."""

    member: str
    granularity: str | None = None

    @property
    def key(self) -> str:
        return f"{self.member}.{self.granularity}" if self.granularity else self.member


@dataclass(frozen=True)
class Shift:
    """How a stage renders one time dimension (its full name): moved by intervals (``(sign, interval)`` steps: 1
    for a prior period, whose rows move forward to the query's buckets; -1 for the next), or replaced by a calendar's
    mapping (``sql``)."""

    dimension: str
    steps: tuple[tuple[int, Interval], ...] = ()
    sql: SqlSnippet | None = field(default=None, compare=False)
    mapping: str = ""  # what ``sql`` is (the shift's name or interval), so that two states compare


@dataclass(frozen=True)
class State:
    """A stage's grain and time shifts (hashable: a measure computed twice for one state is one stage)."""

    grain: tuple[Grain, ...]
    shifts: tuple[Shift, ...] = ()


@dataclass
class Stage:
    """A CTE: its name, body, the column of each grain key, and the column of each measure it computes."""

    name: str
    body: exp.Expr
    columns: dict[str, str]
    values: dict[str, str] = field(default_factory=dict)


class StagedStatements:
    """Statements for queries with multi-stage measures (mixed into :class:`.builder._Builder`)."""

    model: Any
    renderer: Any
    query: NormalizedQuery
    taken: set[str]
    having_nodes: list[FilterNode]
    where_nodes: list[FilterNode]
    rolling_td: TimeDimensionSpec | None
    ungrouped: bool

    if TYPE_CHECKING:  # provided by builder._Builder, which mixes this in

        def member(self, name: str) -> Member: ...
        def value_type(self, name: str) -> str: ...
        def is_measure(self, node: FilterNode) -> bool: ...
        def filters(self, member_sql: Callable[[str], exp.Expr]) -> FilterCompiler: ...
        def child(
            self, query: NormalizedQuery, time_shift: Callable[[Any, Dimension, exp.Expr], exp.Expr] | None
        ) -> Any: ...

    # -- which measures need stages -------------------------------------------------------------------

    def origin_measure(self, name: str) -> Measure:
        measure = self.renderer.origin(self.member(name))
        assert isinstance(measure, Measure)
        return measure

    def has_stages(self, measure: Measure, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``measure`` is multi-stage or uses one (through the measures its ``sql`` uses)."""
        if measure.multi_stage is not None:
            return True
        if measure.full_name in seen or measure.sql is None or measure.type not in CALCULATED_MEASURE_TYPES:
            return False
        return any(self.has_stages(child, seen | {measure.full_name}) for child in self.children(measure))

    def children(self, measure: Measure) -> list[Measure]:
        """The measures ``measure``'s ``sql`` uses, once each, in order."""
        found: dict[str, Measure] = {}
        for reference in measure.sql.member_refs() if measure.sql is not None else ():
            if reference.kind == "measure":
                target = self.model.entities[reference.cube].measures[reference.member]
                found.setdefault(target.full_name, target)
        return list(found.values())

    def staged_measures(self, names: Sequence[str]) -> bool:
        having = [leaf.member for node in self.having_nodes for leaf in filter_leaves(node)]
        return any(self.has_stages(self.origin_measure(n)) for n in dict.fromkeys([*names, *having]))

    # -- the statement --------------------------------------------------------------------------------

    def staged(self, dimensions: list[SelectItem], measure_names: list[str]) -> tuple[exp.Select, list[ResultColumn]]:
        """The query's statement: its measures' stages joined on the query's dimensions."""
        if self.ungrouped:
            raise QueryError("Multi-stage measures cannot be used in an ungrouped query")
        self.stages: list[Stage] = []
        self.known: dict[tuple[str, State], Stage] = {}
        state = State(grain=self.query_grain())
        having = [leaf.member for node in self.having_nodes for leaf in filter_leaves(node)]
        needed = list(dict.fromkeys([*measure_names, *having]))
        ordinary = [n for n in needed if not self.has_stages(self.origin_measure(n))]
        parts: list[tuple[Stage, dict[str, str]]] = []
        if ordinary:
            stage = self.leaf_stage(ordinary, state)
            parts.append((stage, {n: stage.values[n] for n in ordinary}))
            for name in ordinary:  # a stage that needs one of them at the query's grain reads it from there
                origin = self.origin_measure(name).full_name
                self.known.setdefault(
                    (origin, state), Stage(stage.name, stage.body, stage.columns, {"v": stage.values[name]})
                )
        for name in needed:
            if name not in ordinary:
                stage = self.describe(self.origin_measure(name), state)
                parts.append((stage, {name: stage.values["v"]}))
        keys = [g.key for g in state.grain]
        names = [f"p_{i}" for i in range(len(parts))]
        value: dict[str, exp.Expr] = {}
        for table, (_, produced) in zip(names, parts, strict=True):
            for name, column in produced.items():
                value.setdefault(name, exp.column(column, table=table))
        outer = self.joined(parts, names, keys, dimensions)
        for stage in self.stages:
            outer = outer.with_(stage.name, as_=stage.body, copy=False)
        columns: list[ResultColumn] = []
        for name in measure_names:
            alias = column_alias(name, self.taken)
            columns.append(ResultColumn(alias, name, name, "measure", self.value_type(name)))
            outer = outer.select(aliased(value[name].copy(), quoted(alias)), copy=False)
        having_sql = self.filters(lambda n: value[n].copy())
        for node in self.having_nodes:
            outer = outer.where(having_sql.condition(node), copy=False)
        return outer, columns

    def joined(
        self, parts: list[tuple[Stage, dict[str, str]]], names: list[str], keys: list[str], dimensions: list[SelectItem]
    ) -> exp.Select:
        """Every part left-joined to the union of their grain keys (CROSS JOINed when the query has no dimension)."""
        if not keys:
            outer = exp.select().from_(exp.to_table(parts[0][0].name).as_(names[0]), copy=False)
            for (stage, _), name in list(zip(parts, names, strict=True))[1:]:
                outer.append("joins", exp.Join(this=exp.to_table(stage.name).as_(name), kind="CROSS"))
            return outer
        union: exp.Expr | None = None
        for stage, _ in parts:
            select = exp.select(*(aliased(exp.column(stage.columns[k]), f"k_{i}") for i, k in enumerate(keys)))
            select = select.from_(stage.name, copy=False)
            union = select if union is None else exp.union(union, select, distinct=True, copy=False)
        assert union is not None
        by_key = {d.key: d.alias for d in dimensions}
        outer = exp.select(
            *(aliased(exp.column(f"k_{i}", table="keys"), quoted(by_key[k])) for i, k in enumerate(keys))
        ).from_(exp.Subquery(this=union, alias=exp.TableAlias(this=exp.to_identifier("keys"))), copy=False)
        for (stage, _), name in zip(parts, names, strict=True):
            on = all_of(
                *(
                    exp.NullSafeEQ(
                        this=exp.column(f"k_{i}", table="keys"), expression=exp.column(stage.columns[k], table=name)
                    )
                    for i, k in enumerate(keys)
                )
            )
            outer.append("joins", exp.Join(this=exp.to_table(stage.name).as_(name), on=on, side="LEFT"))
        return outer

    def query_grain(self) -> tuple[Grain, ...]:
        grain = [Grain(name) for name in self.query.dimensions]
        for td in self.query.time_dimensions:
            if td.granularity and Grain(td.dimension, td.granularity) not in grain:
                grain.append(Grain(td.dimension, td.granularity))
        return tuple(grain)

    def register(self, stage: Stage) -> Stage:
        self.stages.append(stage)
        return stage

    # -- stages ---------------------------------------------------------------------------------------

    def describe(self, measure: Measure, state: State) -> Stage:
        """The stage computing ``measure`` for ``state`` (value column ``v``), and the stages it needs first."""
        key = (measure.full_name, state)
        if key in self.known:
            return self.known[key]
        if not self.has_stages(measure):
            leaf = self.leaf_stage([measure.full_name], state)
            stage = Stage(leaf.name, leaf.body, leaf.columns, {"v": leaf.values[measure.full_name]})
        elif measure.multi_stage is not None and measure.rolling_window is not None:
            stage = self.rolling_stage(measure, state)
        else:
            stage = self.inner_stage(measure, state)
        self.known[key] = stage
        return stage

    def leaf_stage(self, measures: list[str], state: State) -> Stage:
        """An ordinary statement of ``measures`` at ``state``'s grain, with its time shifts."""
        grain_dims = [g.member for g in state.grain if g.granularity is None]
        query = self.stage_query(measures, grain_dims, self.query.time_dimensions)
        builder = self.child(query, self.shift_renderer(state.shifts))
        statement, columns, _ = builder.statement()
        by_key = {c.key: c.alias for c in columns}
        name = f"stage_{len(self.stages)}"
        return self.register(
            Stage(
                name,
                statement,
                {g.key: by_key[g.key] for g in state.grain},
                {m: by_key[m] for m in measures},
            )
        )

    def stage_query(
        self,
        measures: list[str],
        dimensions: list[str],
        time_dimensions: Sequence[TimeDimensionSpec],
        extra: Sequence[FilterNode] = (),
    ) -> NormalizedQuery:
        """The query a stage's statement answers: the query's own filters (not its measure filters, which apply to
        the answer), segments and join hints, with the stage's measures and grain."""
        filters = tuple(n for n in self.query.filters if not self.is_measure(n))
        return replace(
            self.query,
            measures=tuple(measures),
            dimensions=tuple(dict.fromkeys(dimensions)),
            time_dimensions=tuple(time_dimensions),
            filters=filters + tuple(extra),
            order=(),
            total=None,
            ungrouped=None,
            offset=None,
        )

    def inner_stage(self, measure: Measure, state: State) -> Stage:
        """A measure over the stages of the measures it uses (calculated row by row, or aggregated again)."""
        multi = measure.multi_stage
        inner = state
        if multi is not None:
            added = tuple(Grain(d) for d in multi.add_group_by if Grain(d) not in state.grain)
            inner = State(grain=state.grain + added, shifts=self.merge_shifts(state.shifts, multi.time_shifts))
        children = self.children(measure)
        inputs = [self.describe(child, inner) for child in children]
        names = [f"i_{i}" for i in range(len(inputs))]
        source = exp.select().from_(exp.to_table(inputs[0].name).as_(names[0]), copy=False)
        for index in range(1, len(inputs)):
            target = exp.to_table(inputs[index].name).as_(names[index])
            on = [
                exp.NullSafeEQ(
                    this=exp.column(inputs[0].columns[g.key], table=names[0]),
                    expression=exp.column(inputs[index].columns[g.key], table=names[index]),
                )
                for g in inner.grain
            ]
            join = exp.Join(this=target, on=all_of(*on), kind="INNER") if on else exp.Join(this=target, kind="CROSS")
            source.append("joins", join)
        grain: dict[str, exp.Expr] = {g.key: exp.column(inputs[0].columns[g.key], table=names[0]) for g in state.grain}
        columns = {g.key: f"g_{i}" for i, g in enumerate(state.grain)}
        body = source.select(*(aliased(grain[g.key].copy(), columns[g.key]) for g in state.grain), copy=False)
        value = self.over_inputs(
            measure,
            {c.full_name: exp.column(i.values["v"], table=n) for c, i, n in zip(children, inputs, names, strict=True)},
        )
        if measure.type in CALCULATED_MEASURE_TYPES:
            body = body.select(aliased(value, "v"), copy=False)
        else:
            body = body.select(aliased(self.aggregate_again(measure, value, state, grain), "v"), copy=False)
            if state.grain:
                body = body.group_by(*(exp.Literal.number(i + 1) for i in range(len(state.grain))), copy=False)
        return self.register(Stage(f"stage_{len(self.stages)}", body, columns, {"v": "v"}))

    def over_inputs(self, measure: Measure, inputs: dict[str, exp.Expr]) -> exp.Expr:
        """``measure``'s ``sql`` with each measure it uses replaced by that measure's column."""
        assert measure.sql is not None
        tree = measure.sql.tree.copy()
        for node in list(tree.find_all(exp.Column)):
            reference = measure.sql.refs.get(node.name) if not node.table else None
            if reference is None:
                continue
            if not isinstance(reference, MemberReference) or reference.kind != "measure":
                raise QueryError(f"'{measure.full_name}' uses more than measures: it cannot be computed in stages")
            column = inputs[f"{reference.cube}.{reference.member}"].copy()
            if node is tree:
                tree = column
            else:
                node.replace(column)
        return tree

    def aggregate_again(self, measure: Measure, value: exp.Expr, state: State, grain: dict[str, exp.Expr]) -> exp.Expr:
        """An aggregating multi-stage measure over its inputs' rows: grouped by the state's grain, or a window over
        the partition ``group_by``/``reduce_by`` leave of it (Tesseract's ``MultiStageWindowNode``:
        ``sum(sum(x)) OVER (PARTITION BY ...)``)."""
        multi = measure.multi_stage
        partition = list(state.grain)
        if multi is not None:
            partition = [g for g in partition if self.dimension_of(g) not in multi.reduce_by]
            if multi.group_by is not None:
                partition = [g for g in partition if self.dimension_of(g) in multi.group_by]
        if partition == list(state.grain):
            return self.plain_aggregate(measure, value)
        function = _WINDOW_AGGREGATES[measure.type]
        return exp.Window(
            this=function(this=function(this=value)),
            partition_by=[grain[g.key].copy() for g in partition] or None,
        )

    @staticmethod
    def plain_aggregate(measure: Measure, value: exp.Expr) -> exp.Expr:
        if measure.type == "count":
            return exp.Count(this=value)
        if measure.type in ("count_distinct", "count_distinct_approx"):
            return exp.Count(this=exp.Distinct(expressions=[value]))
        return _WINDOW_AGGREGATES[measure.type](this=value)

    def dimension_of(self, grain: Grain) -> str:
        """The cube dimension a grain member stands for (``group_by``/``reduce_by`` name cube dimensions)."""
        return str(self.renderer.origin(self.member(grain.member)).full_name)

    # -- rolling windows ------------------------------------------------------------------------------

    def rolling_stage(self, measure: Measure, state: State) -> Stage:
        """A multi-stage ``rolling_window`` measure: its ``sql`` per bucket of the base granularity (the query's,
        or the window's if finer) over the date range the windows read, aggregated over each bucket's window."""
        td, window = self.rolling_td, measure.rolling_window
        assert window is not None
        if td is None or td.granularity is None or td.date_range is None:
            raise QueryError(
                f"rolling_window measures ('{measure.full_name}') need a time dimension with a granularity and a "
                "dateRange"
            )
        if td.granularity not in PREDEFINED_GRANULARITIES:
            raise QueryError(f"'{measure.full_name}': a multi-stage rolling window needs a predefined granularity")
        if measure.type not in _ROLLING_AGGREGATES:
            raise QueryError(
                f"'{measure.full_name}': a multi-stage rolling window of type {measure.type} is not supported"
            )
        children = self.children(measure)
        if any(self.has_stages(child) for child in children):
            raise QueryError(f"'{measure.full_name}': a rolling window over multi-stage measures is not supported")
        base_grain = _finer(td.granularity, window.trailing, window.leading)
        lower, upper = read_bounds([window], td.date_range)
        bounds = [
            FilterCondition(td.dimension, operator, (value,))
            for operator, value in (("afterOrOnDate", lower), ("beforeOrOnDate", upper))
            if value is not None
        ]
        time_dimensions = [TimeDimensionSpec(td.dimension, base_grain)]
        time_dimensions += [t for t in self.query.time_dimensions if t is not td]
        rolled = next(g for g in state.grain if g.member == td.dimension and g.granularity == td.granularity)
        others = [g for g in state.grain if g != rolled]
        query = self.stage_query(
            [c.full_name for c in children],
            [g.member for g in others if g.granularity is None],
            time_dimensions,
            bounds,
        )
        statement, result, _ = self.child(query, self.shift_renderer(state.shifts)).statement()
        by_key = {c.key: c.alias for c in result}
        value = self.over_inputs(measure, {c.full_name: exp.column(by_key[c.full_name]) for c in children})
        base_body = exp.select(
            *(aliased(exp.column(by_key[g.key]), f"g_{i}") for i, g in enumerate(others)),
            aliased(exp.column(by_key[f"{td.dimension}.{base_grain}"]), "t"),
            aliased(value, "v"),
        ).from_(statement.subquery("base_source", copy=False), copy=False)
        base = self.register(Stage(f"stage_{len(self.stages)}", base_body, {}, {"v": "v"}))
        dimension = self.renderer.origin(self.member(td.dimension))
        assert isinstance(dimension, Dimension)
        series = buckets(self.renderer, dimension.granularities, td.granularity, td.date_range)
        condition = window_condition(window, exp.column("t", table="base"))
        columns = {g.key: f"g_{i}" for i, g in enumerate(state.grain)}
        body = exp.select(
            *(
                aliased(
                    exp.column("date_from", table="series")
                    if g == rolled
                    else exp.column(f"g_{others.index(g)}", table="base"),
                    columns[g.key],
                )
                for g in state.grain
            ),
            aliased(
                _ROLLING_AGGREGATES[measure.type](
                    this=exp.Case().when(condition.copy(), exp.column("v", table="base"))
                ),
                "v",
            ),
        ).from_(series_source(series), copy=False)
        body.append("joins", exp.Join(this=exp.to_table(base.name).as_("base"), on=condition, side="LEFT"))
        body = body.group_by(*(exp.Literal.number(i + 1) for i in range(len(state.grain))), copy=False)
        return self.register(Stage(f"stage_{len(self.stages)}", body, columns, {"v": "v"}))

    # -- time shifts ----------------------------------------------------------------------------------

    def merge_shifts(self, current: tuple[Shift, ...], declared: tuple[TimeShift, ...]) -> tuple[Shift, ...]:
        """``current`` with a measure's ``time_shift`` added, resolved as Tesseract resolves it against the query's
        time dimensions: an interval moves the dimension (a calendar cube's primary key the other way, or maps it
        by the calendar's ``sql`` for that interval); a name maps a calendar's primary key by that shift's ``sql``
        (or interval)."""
        shifts = {s.dimension: s for s in current}
        for item in declared:
            for dimension in self.query_time_dimensions():
                if item.time_dimension in (None, dimension.full_name):
                    shift = self.resolve_shift(dimension, item)
                    if shift is not None:
                        shifts[shift.dimension] = _combined(shifts.get(shift.dimension), shift)
        return tuple(sorted(shifts.values(), key=lambda s: s.dimension))

    def query_time_dimensions(self) -> list[Dimension]:
        """The cube time dimensions the query reads (its time dimensions, and time members its filters use)."""
        names = [td.dimension for td in self.query.time_dimensions]
        names += [leaf.member for node in self.where_nodes for leaf in filter_leaves(node)]
        found: dict[str, Dimension] = {}
        for name in names:
            member = self.renderer.origin(self.member(name))
            if isinstance(member, Dimension) and member.type == "time":
                found.setdefault(member.full_name, member)
        return list(found.values())

    def resolve_shift(self, dimension: Dimension, item: TimeShift) -> Shift | None:
        cube = self.model.entities[dimension.entity]
        keys = cube.primary_keys
        calendar_key = f"{cube.name}.{keys[0]}" if cube.calendar and len(keys) == 1 else None
        if item.name is not None:
            mapping = next((s for s in dimension.time_shifts if s.name == item.name), None)
            if mapping is None:
                if calendar_key is not None:
                    raise QueryError(f"Time shift with name {item.name} not found for dimension {dimension.full_name}")
                return None
        else:
            mapping = next(
                (
                    s
                    for s in dimension.time_shifts
                    if s.name is None and s.interval == item.interval and s.type == item.type and s.sql is not None
                ),
                None,
            )
        if mapping is not None and calendar_key is not None:
            if mapping.sql is not None:
                return Shift(calendar_key, sql=mapping.sql, mapping=mapping.name or mapping.sql.text)
            assert mapping.interval is not None
            return Shift(calendar_key, steps=((-_sign(mapping), mapping.interval),))
        if item.interval is None:
            return None
        if calendar_key is not None:
            return Shift(calendar_key, steps=((-_sign(item), item.interval),))
        return Shift(dimension.full_name, steps=((_sign(item), item.interval),))

    @staticmethod
    def shift_renderer(shifts: tuple[Shift, ...]) -> Callable[[Any, Dimension, exp.Expr], exp.Expr] | None:
        """What a stage's renderer does to a dimension's SQL under ``shifts`` (None: nothing)."""
        if not shifts:
            return None
        by_dimension = {s.dimension: s for s in shifts}

        def render(renderer: Any, dimension: Dimension, value: exp.Expr) -> exp.Expr:
            shift = by_dimension.get(dimension.full_name)
            if shift is None:
                return value
            if shift.sql is not None:
                # The mapping's own SQL is rendered unshifted (it may read the dimension it replaces).
                saved, renderer.time_shift = renderer.time_shift, None
                try:
                    return exp.Paren(this=renderer.snippet(shift.sql))
                finally:
                    renderer.time_shift = saved
            for sign, interval in shift.steps:
                value = _moved(value, interval, sign)
            return exp.Paren(this=value)

        return render


def _sign(shift: TimeShift) -> int:
    return 1 if shift.type == "prior" else -1


def _combined(existing: Shift | None, new: Shift) -> Shift:
    """A shift of a stage already shifted: intervals add up; a calendar's mapping does not stack (as in Cube)."""
    if existing is None:
        return new
    if existing.sql is not None or new.sql is not None:
        raise QueryError(f"Hierarchical time shift is not supported for '{new.dimension}'")
    return Shift(new.dimension, steps=existing.steps + new.steps)


def _moved(value: exp.Expr, interval: Interval, sign: int) -> exp.Expr:
    for unit, amount in interval.parts:
        step = exp.Interval(this=exp.Literal.string(str(amount)), unit=exp.var(unit.upper()))
        value = exp.Add(this=value, expression=step) if sign > 0 else exp.Sub(this=value, expression=step)
    return value


def _finer(granularity: str, *windows: str | None) -> str:
    """The finer of the query's granularity and the units of a rolling window's ``trailing``/``leading``."""
    finest = _GRAIN_ORDER.index(granularity)
    for text in windows:
        if text and text != "unbounded":
            for unit, _ in parse_interval(text).parts:
                finest = min(finest, _GRAIN_ORDER.index(unit))
    return _GRAIN_ORDER[finest]
