"""Rollup pre-aggregations at query time: which rollup answers a query (Cube's matching rules), the query that builds
a rollup, and a query rewritten onto a rollup's table, compiled by the same statement builder as any query.

A rollup is a materialised GROUP BY. Its table has one column per dimension (``orders__status``), segment (a boolean,
``orders__completed``), the time dimension at the rollup's granularity (``orders__created_at_day``, a bucket start in
UTC) and *leaf* measure (a calculated measure such as ``{sum} / {count}`` is stored as its leaves and recomputed from
them). Its build is an ordinary query of those members (:func:`build_query`) run on the source.

**Matching** (``PreAggregations.ts``, ``canUsePreAggregationForTransformedQueryFn``): candidates are the rollups of the
cubes in the query's join tree, root first, in definition order; the first that matches answers. The query's facts
are computed on cube members (a view member stands for the cube member it includes), and a caller's row policy counts
as the query's filters: its members must be in the rollup, or the rollup is not used for that caller.

- *Leaf-additive* path, when every leaf measure is ``count``, ``sum``, ``min`` or ``max`` (or
  ``count_distinct_approx`` where the rollup keeps it as a sketch, below) and none is multiplied by a join of the
  query: the leaves are stored in the rollup and not multiplied by the rollup's own joins; every dimension, segment
  and filter member (policy filters included) is a rollup dimension; each time dimension is the rollup's, at a
  granularity the rollup's rolls up into (``day`` into ``week``, ``month``...; not ``week`` into ``month``) after
  lowering it to what the date range is aligned to (a range from the 15th at noon needs an ``hour`` rollup), unless
  the rollup allows non-strict date range matches. Measures are re-aggregated: ``count`` and ``sum`` as sums,
  ``min``/``max`` as themselves, sketches merged and estimated.
- *Exact* path, otherwise (``avg``, ``count_distinct``, ``count_distinct_approx`` kept as a count, and multiplied
  measures): the query's grouping is the rollup's: every time dimension has the rollup's granularity, and the
  dimensions (filter members included) equal the rollup's, or every filter is a single-value ``equals`` and those
  members with the dimensions equal them. Each group of the answer is then one row of the rollup, read as it is.

**Sketches.** Rollups kept in a data source whose dialect has a mergeable distinct-count sketch (ClickHouse, Trino,
Snowflake, BigQuery, Databricks: :mod:`.sketches`) store each ``count_distinct_approx`` leaf as that sketch (built from
a model where the measure is the sketch's state aggregate: :func:`build_query` with ``in_source``), so it merges at
any coarser grouping or grain, as Cube's HyperLogLog measures do in Cube Store; read, it is merged and estimated
(:func:`rollup_model`). Elsewhere the rollup holds the count itself, matched exactly: the DuckDB store (DuckDB's
approximate count keeps no state a table can hold), PostgreSQL and MySQL (no sketch without extensions).

An ``originalSql`` pre-aggregation (the cube's SQL as a table) never answers a query; a rollup with
``use_original_sql_pre_aggregations`` is built from those tables in the store (:func:`build_query`). A
``rollupLambda`` is laid out as its first rollup and matched by the leaf-additive path only; its answer reads its
rollups' partitions and, with ``union_with_source_data``, the source's rows after them (:class:`LambdaSource`, bound
into the statement on the store by :func:`lambda_rows_sql`).

Not matched (the source answers): ungrouped queries, rolling-window measures, ``measureFilter`` filters, a time zone
other than the rollup's (UTC), custom granularities, a join tree other than the rollup's (a view rooted elsewhere), a
row policy that denies the caller, and, when the rollups live in the DuckDB store and the data source is not DuckDB,
a calculated measure that divides (its arithmetic would run in DuckDB's dialect, not the source's). Rollups kept in
the data source itself are read there, in its dialect (:func:`rollup_model` over their tables), so that restriction
does not apply to them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlglot import exp

from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.dependencies import cubes_read_through_view, member_snippets
from embedadmin.semantic.modeling.model import (
    CompiledModel,
    CubeReference,
    CubeSqlReference,
    Dimension,
    Entity,
    Measure,
    Member,
    MemberDisplay,
    MemberReference,
    PreAggregation,
    Segment,
    SourceLocation,
    SqlSnippet,
)
from embedadmin.semantic.modeling.references import PREDEFINED_GRANULARITIES
from embedadmin.semantic.query.access import row_restriction
from embedadmin.semantic.query.dates import format_local, parse_local
from embedadmin.semantic.query.normalized import (
    EVERY_ROW,
    Contradiction,
    FilterCondition,
    FilterGroup,
    FilterNode,
    NormalizedQuery,
    OrderSpec,
    TimeDimensionSpec,
)
from embedadmin.semantic.sources.registry import writer
from embedadmin.semantic.sql.builder import CompiledQuery, compile_query
from embedadmin.semantic.sql.columns import column_alias, filter_leaves
from embedadmin.semantic.sql.expressions import Renderer, all_of, is_composite, quoted, wrap
from embedadmin.semantic.sql.sketches import Sketch, sketch_of

STORE_DIALECT = "duckdb"
ORIGINAL_SQL = "originalSql"
LAMBDA = "rollupLambda"
# Stands for a lambda's fresh source rows in the statement on the store; :func:`lambda_rows_sql` puts them there.
LAMBDA_ROWS = "lambda_source_rows"
ROLLUP_TIMEZONE = "UTC"
ADDITIVE = frozenset({"count", "sum", "min", "max"})
# Where a rollup keeps count_distinct_approx measures as sketches (sql/sketches.py), those merge as well.
MERGEABLE = ADDITIVE | {"count_distinct_approx"}
COUNTING = frozenset({"count", "count_distinct", "count_distinct_approx"})
# Granularities a bucket of each one is made of, itself first (Cube's standardGranularitiesParents).
HIERARCHY = {
    "year": ("year", "quarter", "month", "day", "hour", "minute", "second"),
    "quarter": ("quarter", "month", "day", "hour", "minute", "second"),
    "month": ("month", "day", "hour", "minute", "second"),
    "week": ("week", "day", "hour", "minute", "second"),
    "day": ("day", "hour", "minute", "second"),
    "hour": ("hour", "minute", "second"),
    "minute": ("minute", "second"),
    "second": ("second",),
}
_LOCATION = SourceLocation("pre-aggregation", 0)


# -- granularities --------------------------------------------------------------------------------------------------


def min_granularity(a: str | None, b: str | None) -> str | None:
    """The coarsest granularity both ``a`` and ``b`` are made of (Cube's ``minGranularity``): month and week -> day."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    common = [g for g in reversed(HIERARCHY[a]) if g in HIERARCHY[b]]
    return common[-1] if common else "second"


def granularity_of(moment: datetime) -> str | None:
    """The coarsest granularity ``moment`` starts a bucket of (Cube's ``granularityFor``); None below a second."""
    if moment.microsecond:
        return None
    if moment.second:
        return "second"
    if moment.minute:
        return "minute"
    if moment.hour:
        return "hour"
    if moment.month == 1 and moment.day == 1:
        return "year"
    if moment.day == 1:
        return "month"
    if moment.weekday() == 0:
        return "week"
    return "day"


_UNALIGNED = "unaligned"


def range_granularity(date_range: tuple[str, str]) -> str:
    """The granularity a date range is aligned to: the coarser of its start's and its end's (plus a millisecond)."""
    start = parse_local(date_range[0])
    end = parse_local(date_range[1]) + timedelta(milliseconds=1)
    first, last = granularity_of(start), granularity_of(end)
    if first is None or last is None:
        return _UNALIGNED
    return min_granularity(first, last) or _UNALIGNED


# -- a rollup's layout and build ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RollupColumn:
    """One column of a rollup's table: the member it holds (``orders.created_at`` for the time column)."""

    name: str
    member: str
    role: str  # dimension | segment | time | measure
    measure_type: str | None = None  # a leaf measure's type


@dataclass(frozen=True)
class RollupLayout:
    """A rollup as this server stores and matches it. ``problem`` says why it cannot be built (no join path...)."""

    rollup: PreAggregation
    table: str  # its name in the store: ``orders__main``
    columns: tuple[RollupColumn, ...]  # in the build query's column order: dimensions, segments, time, measures
    listed: frozenset[str]  # the measures it names (calculated ones included)
    leaves: Mapping[str, RollupColumn]  # leaf measure -> column
    grouped_by: frozenset[str]  # dimensions and segments
    build: NormalizedQuery
    root: str = ""
    joined: frozenset[str] = frozenset()
    multiplied: frozenset[str] = frozenset()  # leaf measures its own joins multiply
    problem: str | None = None
    parts: tuple[str, ...] = ()  # a lambda's rollups (ids), oldest data first
    originals: tuple[str, ...] = ()  # the originalSql pre-aggregations a rollup is built from, one per cube it reads
    bounded: bool = False  # a lambda reads it: each partition is built up to the build range's end, recorded

    @property
    def time_column(self) -> RollupColumn | None:
        return next((c for c in self.columns if c.role == "time"), None)

    @property
    def kind(self) -> str:
        """``rollup``, ``originalSql`` or ``rollupLambda``."""
        return self.rollup.type

    @property
    def built_itself(self) -> bool:
        """Whether the store holds a table of its own (a lambda reads its rollups' tables)."""
        return self.rollup.type != LAMBDA


def table_name(rollup: PreAggregation) -> str:
    return f"{rollup.cube}__{rollup.name}"


def leaf_measures(model: CompiledModel, names: Iterable[str]) -> dict[str, Measure] | None:
    """The aggregate measures ``names`` are computed from (a calculated measure's, recursively); None when one is
    a calculated measure that refers to something other than measures."""
    found: dict[str, Measure] = {}

    def visit(measure: Measure) -> bool:
        if not is_composite(measure):
            found.setdefault(measure.full_name, measure)
            return True
        assert measure.sql is not None
        for reference in measure.sql.refs.values():
            if not isinstance(reference, MemberReference) or reference.kind != "measure":
                return False
            target = model.entities[reference.cube].measures.get(reference.member)
            if target is None or not visit(target):
                return False
        return True

    for name in names:
        member = origin(model, model.members[name])
        if not isinstance(member, Measure) or not visit(member):
            return None
    return found


def origin(model: CompiledModel, member: Member) -> Member:
    """The cube member a view member stands for."""
    return model.members[member.alias_member] if member.alias_member else member


def unrestricted(model: CompiledModel) -> CompiledModel:
    """``model`` without access policies: what a rollup is built from (a rollup holds every row; each caller's row
    policy applies when it is read). Kept with the model."""
    found = model.caches.get("rollup_build_model")
    if isinstance(found, CompiledModel):
        return found
    entities = {name: dataclasses.replace(entity, access_policies=None) for name, entity in model.entities.items()}
    built = _remodelled(model, entities)
    model.caches["rollup_build_model"] = built
    return built


def _remodelled(model: CompiledModel, entities: dict[str, Entity], **changes: Any) -> CompiledModel:
    """``model`` with ``entities`` (and ``changes``), its members read from them, its caches empty."""
    members: dict[str, Member] = {}
    for entity in entities.values():
        for section in (entity.measures, entity.dimensions, entity.segments):
            for member in section.values():
                members[member.full_name] = member
    return dataclasses.replace(model, entities=entities, members=members, caches={}, **changes)


def rollup_layouts(model: CompiledModel) -> dict[str, RollupLayout]:
    """Every rollup of the model by its id (``cube.name``), in definition order; kept with the model."""
    found = model.caches.get("rollup_layouts")
    if isinstance(found, dict):
        return found
    rollups = [rollup for entity in model.entities.values() if not entity.is_view for rollup in entity.pre_aggregations]
    read_by_lambdas = {rid for rollup in rollups if rollup.type == LAMBDA for rid in rollup.rollups}
    built = {
        rollup.id: _layout(model, rollup, bounded=rollup.id in read_by_lambdas)
        for rollup in rollups
        if rollup.type == ORIGINAL_SQL
    }
    built.update(
        (rollup.id, _layout(model, rollup, bounded=rollup.id in read_by_lambdas, originals=built))
        for rollup in rollups
        if rollup.type not in (ORIGINAL_SQL, LAMBDA)
    )
    lambdas = {rollup.id: _lambda_layout(rollup, built) for rollup in rollups if rollup.type == LAMBDA}
    layouts = {rollup.id: built.get(rollup.id) or lambdas[rollup.id] for rollup in rollups}
    model.caches["rollup_layouts"] = layouts
    return layouts


def _original_sql_layout(model: CompiledModel, rollup: PreAggregation) -> RollupLayout:
    """The cube's SQL as a table: its columns are whatever that SQL returns (known when it is built)."""
    problem = None
    if _reads_context(model, [rollup.cube], []):
        problem = (
            "the cube's SQL reads the query's context (SECURITY_CONTEXT, FILTER_PARAMS, FILTER_GROUP or SQL_UTILS), "
            "so one table cannot serve every caller"
        )
    return RollupLayout(
        rollup=rollup,
        table=table_name(rollup),
        columns=(),
        listed=frozenset(),
        leaves={},
        grouped_by=frozenset(),
        build=NormalizedQuery(),
        root=rollup.cube,
        problem=problem,
    )


def _lambda_layout(rollup: PreAggregation, built: Mapping[str, RollupLayout]) -> RollupLayout:
    """A lambda laid out as its first rollup (the lambda table's columns are that rollup's, each other rollup's
    read by position); a problem of any of its rollups is its own."""
    parts = [built[rid] for rid in rollup.rollups]
    first = parts[0]
    problem = next((f"its rollup {p.rollup.id} cannot be built: {p.problem}" for p in parts if p.problem), None)
    shape = [(c.role, c.member.rpartition(".")[2], c.measure_type) for c in first.columns]
    for part in parts[1:]:
        if problem is None and [(c.role, c.member.rpartition(".")[2], c.measure_type) for c in part.columns] != shape:
            problem = f"the columns of {part.rollup.id} do not line up with those of {first.rollup.id}"
    return dataclasses.replace(first, rollup=rollup, table=table_name(rollup), parts=rollup.rollups, problem=problem)


def _layout(
    model: CompiledModel,
    rollup: PreAggregation,
    *,
    bounded: bool = False,
    originals: Mapping[str, RollupLayout] | None = None,
) -> RollupLayout:
    if rollup.type == ORIGINAL_SQL:
        return dataclasses.replace(_original_sql_layout(model, rollup), bounded=bounded)
    layout = _rollup_layout(model, rollup)
    layout = dataclasses.replace(layout, bounded=bounded)
    if layout.problem is not None or not rollup.use_original_sql:
        return layout
    # Cube substitutes each cube's originalSql table for its SQL in the build; here those tables are in the store,
    # which holds nothing else of the source: every cube the build reads must have one, or none (Cube then reads
    # the source as usual).
    cubes = [layout.root, *sorted(layout.joined)]
    found = {cube: _original_of(model, cube, originals or {}) for cube in cubes}
    if not any(found.values()):
        return layout
    missing = [cube for cube, original in found.items() if original is None]
    if missing:
        problem = (
            f"it is built from originalSql pre-aggregations, which live in the pre-aggregation store, but cube "
            f"{missing[0]} has none: give it one, or set use_original_sql_pre_aggregations to false"
        )
        return dataclasses.replace(layout, problem=problem)
    broken = next((o for o in found.values() if o is not None and o.problem is not None), None)
    if broken is not None:
        return dataclasses.replace(
            layout, problem=f"its originalSql {broken.rollup.id} cannot be built: {broken.problem}"
        )
    return dataclasses.replace(layout, originals=tuple(o.rollup.id for o in found.values() if o is not None))


def _original_of(model: CompiledModel, cube: str, originals: Mapping[str, RollupLayout]) -> RollupLayout | None:
    """The cube's first originalSql pre-aggregation (Cube's ``findPreAggregationToUseForCube``)."""
    entity = model.entities[cube]
    return next((originals[p.id] for p in entity.pre_aggregations if p.type == ORIGINAL_SQL), None)


def _rollup_layout(model: CompiledModel, rollup: PreAggregation) -> RollupLayout:
    taken: set[str] = set()
    columns = [RollupColumn(column_alias(d, taken), d, "dimension") for d in rollup.dimensions]
    columns += [RollupColumn(column_alias(s, taken), s, "segment") for s in rollup.segments]
    if rollup.time_dimension is not None:
        key = f"{rollup.time_dimension}.{rollup.granularity}"
        columns.append(RollupColumn(column_alias(key, taken), rollup.time_dimension, "time"))
    found = leaf_measures(model, rollup.measures)
    problem = None if found is not None else "a calculated measure of it refers to something other than measures"
    leaves = found or {}
    leaf_columns = {n: RollupColumn(column_alias(n, taken), n, "measure", m.type) for n, m in leaves.items()}
    columns += leaf_columns.values()
    time_dimensions: tuple[TimeDimensionSpec, ...] = ()
    if rollup.time_dimension is not None:
        time_dimensions = (TimeDimensionSpec(rollup.time_dimension, rollup.granularity),)
    build = NormalizedQuery(
        measures=tuple(leaves),
        dimensions=(*rollup.dimensions, *rollup.segments),
        time_dimensions=time_dimensions,
        limit=EVERY_ROW,
        timezone=ROLLUP_TIMEZONE,
        join_hints=((rollup.cube,),),  # rooted at the rollup's cube, as Cube builds it
    )
    layout = RollupLayout(
        rollup=rollup,
        table=table_name(rollup),
        columns=tuple(columns),
        listed=frozenset(rollup.measures),
        leaves=leaf_columns,
        grouped_by=frozenset((*rollup.dimensions, *rollup.segments)),
        build=build,
        problem=problem,
    )
    if problem is not None:
        return layout
    try:
        compiled = compile_query(unrestricted(model), build, QueryContext())
    except QueryError as exc:
        return dataclasses.replace(layout, problem=exc.message)
    if compiled.hints["root"] != rollup.cube:
        problem = f"Can't find join path from cube {rollup.cube} to every member of the rollup"
        return dataclasses.replace(layout, problem=problem)
    multiplied = frozenset(compiled.hints.get("multiplied", ()))
    cubes = [compiled.hints["root"], *compiled.hints.get("joins", ())]
    if _reads_context(model, cubes, [column.member for column in columns]):
        return dataclasses.replace(
            layout,
            problem="its SQL reads the query's context (SECURITY_CONTEXT, FILTER_PARAMS, FILTER_GROUP or SQL_UTILS), "
            "so one table cannot serve every caller",
        )
    return dataclasses.replace(
        layout,
        root=compiled.hints["root"],
        joined=frozenset(compiled.hints.get("joins", ())),
        multiplied=frozenset(name for name in leaves if name.split(".")[0] in multiplied),
    )


def _reads_context(model: CompiledModel, cubes: list[str], members: list[str]) -> bool:
    """Whether the SQL of ``cubes`` or of ``members`` (and what they reference) reads the query's context."""
    pending: list[SqlSnippet] = [model.entities[c].sql for c in cubes if model.entities[c].sql is not None]  # type: ignore[misc]
    seen: set[str] = set()
    queue = list(members)
    while queue or pending:
        if queue:  # a member: what its SQL references is read next
            name = queue.pop()
            if name not in seen and name in model.members:
                seen.add(name)
                pending.extend(member_snippets(model.members[name]))
            continue
        snippet = pending.pop()
        for reference in snippet.refs.values():
            if isinstance(reference, MemberReference):
                queue.append(f"{reference.cube}.{reference.member}")
            elif isinstance(reference, CubeSqlReference):
                entity = model.entities.get(reference.cube)
                if entity is not None and entity.sql is not None:
                    pending.append(entity.sql)
            elif not isinstance(reference, CubeReference):
                return True
    return False


@dataclass(frozen=True)
class BuildStatement:
    """What builds a table of the store: a statement on the data source, or, for a rollup built from originalSql
    pre-aggregations, on the store (``reads``: those pre-aggregations' ids and their tables there)."""

    sql: str
    params: tuple[Any, ...]
    reads: tuple[tuple[str, str], ...] = ()


def build_query(
    model: CompiledModel,
    layout: RollupLayout,
    date_range: tuple[str, str] | None = None,
    *,
    in_source: bool = False,
) -> BuildStatement:
    """The statement that builds ``layout``'s table (one partition when ``date_range`` is given: UTC local times).
    ``in_source``: the table is kept in the data source, whose dialect's sketch (if any) each ``count_distinct_approx``
    measure is stored as (:func:`sketched`)."""
    if layout.kind == ORIGINAL_SQL:
        renderer = Renderer(unrestricted(model), ROLLUP_TIMEZONE, None)
        statement = renderer.cube_source_query(layout.rollup.cube)
        if not isinstance(statement, exp.Query):
            statement = exp.select("*").from_(exp.Subquery(this=statement, alias=exp.TableAlias(this=quoted("t"))))
        return BuildStatement(statement.sql(dialect=writer(model.dialect)), ())
    query = layout.build
    if date_range is not None:
        assert layout.rollup.time_dimension is not None
        td = TimeDimensionSpec(layout.rollup.time_dimension, layout.rollup.granularity, date_range)
        query = dataclasses.replace(query, time_dimensions=(td,))
    if layout.originals:
        reads = tuple((rid, table_name(rollup_layouts(model)[rid].rollup)) for rid in layout.originals)
        compiled = compile_query(_on_originals(model, reads), query, QueryContext())
        return BuildStatement(compiled.sql, compiled.params, reads)
    sketch = sketched(model.dialect) if in_source else None
    built_from = unrestricted(model) if sketch is None else _sketching(model, sketch)
    compiled = compile_query(built_from, query, QueryContext())
    return BuildStatement(compiled.sql, compiled.params)


def sketched(rollup_dialect: str) -> Sketch | None:
    """The sketch rollups read in ``rollup_dialect`` keep ``count_distinct_approx`` measures as (the data source's
    where it holds the rollups and has one); None where they keep the count itself (the DuckDB store, PostgreSQL,
    MySQL)."""
    return None if rollup_dialect == STORE_DIALECT else sketch_of(rollup_dialect)


def _sketching(model: CompiledModel, sketch: Sketch) -> CompiledModel:
    """The unrestricted model with each ``count_distinct_approx`` measure a ``number`` measure whose SQL is the sketch
    of its values (its filters as a ``CASE``): what a rollup kept as sketches is built from. Kept with the model.

    The sketch stays fan-out safe (``Measure.fanout_safe``), as ``count_distinct_approx`` is: rows a join of the rollup
    duplicates add no distinct value, so it is aggregated over the joined rows like any measure of an unmultiplied
    cube, and its SQL and filters may read the joined cubes."""
    key = f"rollup_sketching:{sketch.dialect}"
    found = model.caches.get(key)
    if isinstance(found, CompiledModel):
        return found
    base = unrestricted(model)
    entities = {
        name: dataclasses.replace(
            entity,
            measures={
                n: _sketch_measure(base, m, sketch) if m.type == "count_distinct_approx" and m.sql is not None else m
                for n, m in entity.measures.items()
            },
        )
        for name, entity in base.entities.items()
    }
    built = _remodelled(base, entities)
    model.caches[key] = built
    return built


def _sketch_measure(model: CompiledModel, measure: Measure, sketch: Sketch) -> Measure:
    """``measure`` (a ``count_distinct_approx``) as a fan-out-safe ``number`` measure: the sketch state of its SQL,
    counting only the rows its filters keep. Each snippet's placeholders are renamed apart, as they become one snippet.
    Its values' type is the dimension's where the SQL is a reference to one (the sketch casts a type it does not take
    to text)."""
    assert measure.sql is not None
    refs: dict[str, Any] = {}
    trees = []
    for index, snippet in enumerate((measure.sql, *measure.filters)):
        renamed = {placeholder: f"{placeholder}_s{index}" for placeholder in snippet.refs}
        tree = snippet.tree.copy()
        for identifier in tree.find_all(exp.Identifier):
            if identifier.name in renamed:
                identifier.set("this", renamed[identifier.name])
        refs.update({renamed[p]: reference for p, reference in snippet.refs.items()})
        trees.append(tree)
    value, conditions = trees[0], [wrap(t) for t in trees[1:]]
    if conditions:
        value = exp.Case().when(all_of(*conditions), value)
    tree = sketch.state(value, _dimension_type(model, measure.sql))
    snippet = SqlSnippet(text=tree.sql(dialect=sketch.dialect), tree=tree, refs=refs, location=measure.sql.location)
    return dataclasses.replace(measure, type="number", sql=snippet, filters=(), fanout_safe=True)


def _dimension_type(model: CompiledModel, snippet: SqlSnippet) -> str | None:
    """The type of the dimension ``snippet`` is a reference to (``{status}``, ``{users.country}``); None for other
    SQL, whose type is not known."""
    tree = snippet.tree
    if not isinstance(tree, exp.Column) or tree.table:
        return None
    reference = snippet.refs.get(tree.name)
    if not isinstance(reference, MemberReference) or reference.kind != "dimension" or reference.granularity:
        return None
    dimension = model.entities[reference.cube].dimensions.get(reference.member)
    return None if dimension is None else dimension.type


def _on_originals(model: CompiledModel, reads: tuple[tuple[str, str], ...]) -> CompiledModel:
    """The unrestricted model in the store's dialect, each cube read from its originalSql table there."""
    key = f"rollup_on_originals:{reads}"
    found = model.caches.get(key)
    if isinstance(found, CompiledModel):
        return found
    base = unrestricted(model)
    tables = {rid.partition(".")[0]: table for rid, table in reads}
    entities = {
        name: dataclasses.replace(entity, sql=None, table=exp.Table(this=quoted(tables[name])))
        if name in tables
        else entity
        for name, entity in base.entities.items()
    }
    built = _remodelled(base, entities, dialect=STORE_DIALECT)
    model.caches[key] = built
    return built


# -- matching -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BuiltRollup:
    """What the store holds of a rollup: its read name, version (changes with each build) and, for a rollup with an
    explicit build range, the range its partitions cover (local UTC times): a query outside it is not answered.

    A lambda's: ``parts``, each rollup it reads (id, its table and version, its oldest build), and with
    ``union_with_source_data`` ``source_after``, the end of what those tables hold: rows after it are the source's."""

    table: str
    version: str
    last_updated_at: datetime
    covered: tuple[datetime, datetime] | None = None
    parts: tuple[tuple[str, str, datetime], ...] = ()
    source_after: datetime | None = None
    # Rollups kept in the data source (a deployment's pre-aggregations schema): the (schema, table) of each partition
    # read, in order; empty for the DuckDB store, whose views name the rollup itself.
    source_tables: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class _Facts:
    """A query's facts as matching reads them, on cube members."""

    measures: frozenset[str]
    leaves: dict[str, Measure]
    dimensions: frozenset[str]  # selected dimensions
    filter_members: frozenset[str]  # dimensions the filters read (policy filters included)
    grouping: frozenset[str]  # selected dimensions, segments, filter members (policy filters included)
    time_dimensions: tuple[tuple[str, str | None, tuple[str, str] | None], ...]
    filters: tuple[FilterNode, ...]  # the query's own, then the policy's
    leaf_additive: bool
    additive: bool
    multiplied: bool
    single_equals: frozenset[str] | None


def _facts(
    model: CompiledModel,
    compiled: CompiledQuery,
    ctx: QueryContext,
    restrictions: list[FilterNode],
    mergeable: frozenset[str] = ADDITIVE,
) -> _Facts | None:
    query = compiled.query
    filters = (*query.filters, *restrictions)
    filter_members: list[str] = []
    measure_names = list(query.measures)
    for node in filters:
        if isinstance(node, Contradiction):
            return None
        for leaf in filter_leaves(node):
            member = origin(model, model.members[leaf.member])
            if leaf.operator == "measureFilter":
                return None
            if isinstance(member, Measure):
                measure_names.append(leaf.member)
            else:
                filter_members.append(member.full_name)
    leaves = leaf_measures(model, measure_names)
    # Multi-stage measures are computed in stages over the source (sql/stages.py), as Cube does not accelerate them.
    if leaves is None or any(m.rolling_window is not None or m.multi_stage is not None for m in leaves.values()):
        return None
    measures = [origin(model, model.members[name]) for name in query.measures]
    if any(isinstance(m, Measure) and m.rolling_window is not None for m in measures):
        return None
    dimensions = [origin(model, model.members[name]).full_name for name in query.dimensions]
    segments = [origin(model, model.members[name]).full_name for name in query.segments]
    time_dimensions = []
    for td in query.time_dimensions:
        dimension = origin(model, model.members[td.dimension])
        if td.granularity is not None and td.granularity not in PREDEFINED_GRANULARITIES:
            return None
        time_dimensions.append((dimension.full_name, td.granularity, td.date_range))
    multiplied = set(compiled.hints.get("multiplied", ()))
    return _Facts(
        measures=frozenset(m.full_name for m in measures),
        leaves=leaves,
        dimensions=frozenset(dimensions),
        filter_members=frozenset(filter_members),
        grouping=frozenset((*dimensions, *segments, *filter_members)),
        time_dimensions=tuple(sorted(time_dimensions, key=lambda t: (t[0], t[1] or ""))),
        filters=filters,
        leaf_additive=all(m.type in mergeable for m in leaves.values()),
        additive=all(isinstance(m, Measure) and m.type in ADDITIVE for m in measures),
        multiplied=any(name.split(".")[0] in multiplied for name in leaves),
        single_equals=_single_equals(filters, [*dimensions, *segments], model),
    )


def _single_equals(filters: Sequence[FilterNode], grouped: list[str], model: CompiledModel) -> frozenset[str] | None:
    """Cube's ``filterDimensionsSingleValueEqual``: the selected dimensions and segments with the members of the
    filters, when every filter is a single-value ``equals`` (or an ``and`` of them); None otherwise."""
    members = set(grouped)

    def visit(node: FilterNode) -> bool:
        if isinstance(node, FilterGroup):
            return node.kind == "and" and all(visit(item) for item in node.items)
        if isinstance(node, FilterCondition) and node.operator == "equals" and len(node.values or ()) == 1:
            members.add(origin(model, model.members[node.member]).full_name)
            return True
        return False

    return frozenset(members) if all(visit(node) for node in filters) else None


def _time_matches(layout: RollupLayout, facts: _Facts, *, exact: bool, built: BuiltRollup) -> bool:
    rollup = layout.rollup
    strict = not rollup.allow_non_strict_date_range_match
    for dimension, granularity, date_range in facts.time_dimensions:
        if dimension != rollup.time_dimension or rollup.granularity not in HIERARCHY:
            return False
        if built.covered is not None and not _within(date_range, built.covered):
            return False
        wanted = granularity
        if strict and date_range is not None:
            aligned = range_granularity(date_range)
            if aligned == _UNALIGNED:
                return False
            wanted = min_granularity(granularity, aligned)
        if exact:
            if granularity is None or wanted != rollup.granularity or granularity != rollup.granularity:
                return False
        elif wanted is not None and rollup.granularity not in HIERARCHY[wanted]:
            return False
    if built.covered is not None and not any(d == rollup.time_dimension for d, _, _ in facts.time_dimensions):
        return False  # a build range bounds the rollup: a query must stay within it
    if exact:
        return len(facts.time_dimensions) == (1 if rollup.time_dimension else 0)
    return True


def _within(date_range: tuple[str, str] | None, covered: tuple[datetime, datetime]) -> bool:
    if date_range is None:
        return False
    return covered[0] <= parse_local(date_range[0]) and parse_local(date_range[1]) <= covered[1]


def _can_use(layout: RollupLayout, facts: _Facts, compiled: CompiledQuery, built: BuiltRollup) -> str | None:
    """How ``layout`` answers the query: "additive", "exact", or None."""
    if layout.problem is not None or layout.kind == ORIGINAL_SQL:
        return None
    if compiled.hints.get("root") != layout.root or not set(compiled.hints.get("joins", ())) <= layout.joined:
        return None
    if facts.leaf_additive and not facts.multiplied:
        leaves_stored = all(name in layout.leaves for name in facts.leaves)
        if (
            leaves_stored
            and not set(facts.leaves) & layout.multiplied
            and facts.grouping <= layout.grouped_by
            and _time_matches(layout, facts, exact=False, built=built)
        ):
            return "additive"
    if layout.kind == LAMBDA:
        return None  # its rows come from several tables (and the source): only re-aggregation is exact
    stored = all(name in layout.leaves for name in facts.leaves) or facts.measures <= layout.listed
    if not stored or any(td[1] is None for td in facts.time_dimensions):
        return None
    if not _time_matches(layout, facts, exact=True, built=built):
        return None
    if facts.single_equals is not None and facts.single_equals == layout.grouped_by:
        return "exact"
    if facts.filter_members <= facts.dimensions and facts.grouping == layout.grouped_by:
        return "exact"
    return None


@dataclass(frozen=True)
class RollupChoice:
    """The rollup that answers a query, how, and the caller's row filters it must apply."""

    layout: RollupLayout
    built: BuiltRollup
    how: str  # additive | exact
    filters: tuple[FilterNode, ...]


def caller_restrictions(model: CompiledModel, query: NormalizedQuery, ctx: QueryContext) -> list[FilterNode]:
    """The row filters a caller's policies add to ``query``, as the statement builder adds them."""
    used = [*query.measures, *query.dimensions, *(td.dimension for td in query.time_dimensions), *query.segments]
    used.extend(leaf.member for node in query.filters for leaf in filter_leaves(node))
    named = [model.members[name].entity for name in used]
    reached = [cube for name in used for cube in cubes_read_through_view(model, model.members[name])]
    return row_restriction(model, named, ctx, through_views=reached)


def choose_rollup(
    model: CompiledModel,
    compiled: CompiledQuery,
    ctx: QueryContext,
    built: Mapping[str, BuiltRollup],
    *,
    source_dialect: str,
    rollup_dialect: str = STORE_DIALECT,
) -> RollupChoice | None:
    """The first built rollup that can answer ``compiled``'s query for ``ctx`` (Cube's order), or None.
    ``rollup_dialect``: where the rollups are read, the store's DuckDB or the data source's own dialect."""
    query = compiled.query
    if query.ungrouped or query.timezone != ROLLUP_TIMEZONE or not built:
        return None
    restrictions = caller_restrictions(model, query, ctx)
    mergeable = MERGEABLE if sketched(rollup_dialect) is not None else ADDITIVE
    facts = _facts(model, compiled, ctx, restrictions, mergeable)
    if facts is None:
        return None
    if source_dialect != rollup_dialect and _divides(model, query):
        return None
    layouts = rollup_layouts(model)
    cubes = [compiled.hints.get("root"), *compiled.hints.get("joins", ())]
    for cube in dict.fromkeys(cubes):
        entity = model.entities.get(cube) if isinstance(cube, str) else None
        for rollup in entity.pre_aggregations if entity is not None else ():
            state = built.get(rollup.id)
            layout = layouts.get(rollup.id)
            if state is None or layout is None:
                continue
            how = _can_use(layout, facts, compiled, state)
            if how is not None:
                return RollupChoice(layout, state, how, facts.filters)
    return None


def _divides(model: CompiledModel, query: NormalizedQuery) -> bool:
    """Whether a calculated measure of the query divides (its arithmetic would run in the store's dialect)."""
    pending = [origin(model, model.members[name]) for name in query.measures]
    pending += [origin(model, model.members[leaf.member]) for n in query.filters for leaf in filter_leaves(n)]
    while pending:
        member = pending.pop()
        if isinstance(member, Measure) and is_composite(member):
            assert member.sql is not None
            if member.sql.tree.find(exp.Div, exp.IntDiv) is not None:
                return True
            for reference in member.sql.member_refs():
                target = model.entities[reference.cube].member(reference.member)
                if target is not None:
                    pending.append(target)
    return False


# -- the query on the rollup ----------------------------------------------------------------------------------------


_REAGGREGATE: dict[str, Callable[[exp.Expr], exp.Expr]] = {
    "count": lambda c: exp.Coalesce(this=exp.Sum(this=c), expressions=[exp.Literal.number(0)]),
    "sum": lambda c: exp.Sum(this=c),
    "min": lambda c: exp.Min(this=c),
    "max": lambda c: exp.Max(this=c),
}


def _leaf_value(kind: str | None, column: exp.Expr, sketch: Sketch | None = None) -> exp.Expr:
    if kind in _REAGGREGATE:
        return _REAGGREGATE[kind](column)
    if kind == "count_distinct_approx" and sketch is not None:  # the column holds sketches: merged, estimated
        return exp.Coalesce(this=sketch.estimate(column), expressions=[exp.Literal.number(0)])
    # A non-additive leaf is read only where each group of the answer is one row of the rollup.
    value: exp.Expr = exp.Max(this=column)
    if kind in COUNTING:
        value = exp.Coalesce(this=value, expressions=[exp.Literal.number(0)])
    return value


@dataclass
class RollupModel:
    """A rollup's table as a model of one cube (named after the table): its columns as dimensions, segments and
    measures that re-aggregate them, and the calculated measures computed from those. ``names`` maps each cube member
    the rollup answers for to its member here (``time`` the time dimension's)."""

    model: CompiledModel
    names: dict[str, str] = field(default_factory=dict)
    time: str | None = None


def rollup_model(
    model: CompiledModel,
    layout: RollupLayout,
    *,
    with_source: bool = False,
    source_tables: tuple[tuple[str, str], ...] = (),
) -> RollupModel:
    """``layout``'s table as a model (kept with ``model``): what a rewritten query is compiled against. With
    ``with_source`` (a lambda unioned with source data), its table is the lambda's tables and :data:`LAMBDA_ROWS`.
    With ``source_tables`` (rollups kept in the data source), it reads those tables, a UNION ALL of them, in the
    data source's dialect; only the latest set is kept per rollup (a rebuild makes a new one)."""
    if source_tables:
        kept: dict[str, tuple[tuple[tuple[str, str], ...], RollupModel]] = model.caches.setdefault(
            "rollup_source_models", {}
        )
        latest = kept.get(layout.rollup.id)
        if latest is None or latest[0] != source_tables:
            latest = kept[layout.rollup.id] = (source_tables, _rollup_model(model, layout, False, source_tables))
        return latest[1]
    cache: dict[tuple[str, bool], RollupModel] = model.caches.setdefault("rollup_models", {})
    found = cache.get((layout.rollup.id, with_source))
    if found is None:
        found = cache[(layout.rollup.id, with_source)] = _rollup_model(model, layout, with_source)
    return found


def _source_union(tables: tuple[tuple[str, str], ...], columns: Sequence[str]) -> exp.Expr:
    """``SELECT * FROM s.t1 UNION ALL SELECT * FROM s.t2 ...`` with the columns named (a lambda's tables are several
    rollups', whose column names differ): the partitions of a rollup kept in the data source, read as one table."""
    parts = [exp.select("*").from_(exp.Table(this=quoted(table), db=quoted(schema))) for schema, table in tables]
    union: exp.Expr = parts[0]
    for part in parts[1:]:
        union = exp.union(union, part, distinct=False)
    alias = exp.TableAlias(this=quoted("parts"), columns=[quoted(c) for c in columns])
    return exp.select("*").from_(exp.Subquery(this=union, alias=alias))


def _rollup_model(
    model: CompiledModel, layout: RollupLayout, with_source: bool, source_tables: tuple[tuple[str, str], ...] = ()
) -> RollupModel:
    table = layout.table
    sketch = sketched(model.dialect) if source_tables else None
    measures: dict[str, Measure] = {}
    dimensions: dict[str, Dimension] = {}
    segments: dict[str, Segment] = {}
    names: dict[str, str] = {}
    time = None
    for column in layout.columns:
        source = model.members[column.member]
        reference = _column(table, column.name)
        snippet = _snippet(reference, column.name)
        if column.role == "time":
            time = f"{table}.{column.name}"
        else:
            names[column.member] = f"{table}.{column.name}"
        if column.role == "segment":
            segments[column.name] = Segment(column.name, table, snippet, _display(column.name))
        elif column.role in ("dimension", "time"):
            assert isinstance(source, Dimension)
            kind = "string" if source.type == "geo" else source.type
            dimensions[column.name] = Dimension(column.name, table, kind, snippet, _display(column.name))
        else:
            assert isinstance(source, Measure)
            kind = source.type if source.type in ("string", "time", "boolean") else "number"
            value = _snippet(_leaf_value(column.measure_type, reference, sketch), column.name)
            measures[column.name] = Measure(column.name, table, kind, value, _display(column.name))
    taken = {column.name for column in layout.columns}
    for name in sorted(layout.listed - set(layout.leaves)):
        _calculated(model, model.members[name], table, measures, names, taken)
    entity = Entity(
        name=table,
        is_view=False,
        title=table,
        description=None,
        public=True,
        meta=None,
        measures=measures,
        dimensions=dimensions,
        segments=segments,
        hierarchies=(),
        folders=(),
        access_policies=None,
        location=_LOCATION,
        table=exp.Table(this=exp.to_identifier(table, quoted=True)),
    )
    if with_source:
        union = exp.union(
            exp.select("*").from_(exp.Table(this=quoted(table))),
            exp.select("*").from_(exp.Table(this=quoted(LAMBDA_ROWS))),
            distinct=False,
        )
        entity = dataclasses.replace(entity, table=None, sql=_snippet(union, LAMBDA_ROWS))
    if len(source_tables) == 1 and layout.kind != LAMBDA:
        schema, only = source_tables[0]
        entity = dataclasses.replace(entity, table=exp.Table(this=quoted(only), db=quoted(schema)))
    elif source_tables:
        read = _source_union(source_tables, [c.name for c in layout.columns])
        entity = dataclasses.replace(entity, table=None, sql=_snippet(read, table))
    members: dict[str, Member] = {}
    for section in (measures, dimensions, segments):
        for name, member in section.items():
            members[f"{table}.{name}"] = member
    compiled = CompiledModel(
        compiler_id=f"{model.compiler_id}:{layout.rollup.id}",
        dialect=model.dialect if source_tables else STORE_DIALECT,
        entities={table: entity},
        members=members,
        joins={table: {}},
        connected_components={},
    )
    return RollupModel(compiled, names, time)


def _display(name: str) -> MemberDisplay:
    return MemberDisplay(title=name, short_title=name, description=None, meta=None, public=True)


def _snippet(tree: exp.Expr, text: str) -> SqlSnippet:
    return SqlSnippet(text=text, tree=tree, refs={}, location=_LOCATION)


def _column(table: str, name: str) -> exp.Expr:
    return exp.column(exp.to_identifier(name, quoted=True), table=exp.to_identifier(table, quoted=True))


def _calculated(
    model: CompiledModel,
    member: Member,
    table: str,
    measures: dict[str, Measure],
    names: dict[str, str],
    taken: set[str],
) -> str | None:
    """A calculated measure over the rollup's leaves (its references pointed at their columns); its name there."""
    if member.full_name in names:
        return names[member.full_name].split(".", 1)[1]
    if not isinstance(member, Measure) or member.sql is None or member.filters or not is_composite(member):
        return None
    refs: dict[str, Any] = {}
    for placeholder, reference in member.sql.refs.items():
        if not isinstance(reference, MemberReference) or reference.kind != "measure":
            return None
        target = model.entities[reference.cube].measures.get(reference.member)
        inner = None if target is None else _calculated(model, target, table, measures, names, taken)
        if inner is None:
            return None
        refs[placeholder] = MemberReference(table, inner, kind="measure")
    name = column_alias(member.full_name, taken)
    snippet = SqlSnippet(text=member.sql.text, tree=member.sql.tree, refs=refs, location=_LOCATION)
    measures[name] = Measure(name, table, member.type, snippet, _display(name))
    names[member.full_name] = f"{table}.{name}"
    return name


def rewrite(
    model: CompiledModel,
    compiled: CompiledQuery,
    choice: RollupChoice,
    compile_rewritten: Callable[[CompiledModel, NormalizedQuery], CompiledQuery],
    *,
    source_row_limit: int = EVERY_ROW,
) -> CompiledQuery | None:
    """``compiled`` answered from ``choice``'s rollup: its query with every member named by the rollup's model and
    the caller's row filters added, compiled by ``compile_rewritten`` (the planner's cached compile); the result
    reads as ``compiled`` does (its query, row keys and types; hints naming the rollup). None when a member the query
    needs has no counterpart in the rollup's model. ``source_row_limit``: the most rows a lambda's source part may
    give (:class:`LambdaSource`)."""
    query = compiled.query
    source = _lambda_source(model, choice, query, source_row_limit)
    tables = choice.built.source_tables
    target = rollup_model(model, choice.layout, with_source=source is not None, source_tables=tables)

    def name(member: str) -> str:
        found = target.names.get(origin(model, model.members[member]).full_name)
        if found is None:
            raise KeyError(member)
        return found

    def time_name(member: str) -> str:
        if target.time is None or origin(model, model.members[member]).full_name != choice.layout.rollup.time_dimension:
            raise KeyError(member)
        return target.time

    def node(item: FilterNode) -> FilterNode:
        if isinstance(item, FilterGroup):
            return FilterGroup(item.kind, tuple(node(i) for i in item.items))
        if isinstance(item, FilterCondition):
            return FilterCondition(name(item.member), item.operator, item.values)
        return item

    def order(spec: OrderSpec) -> OrderSpec:
        member, _, granularity = spec.id.partition(".")[2].partition(".")
        base = f"{spec.id.split('.')[0]}.{member}" if member else spec.id
        for lookup in (name, time_name):
            try:
                renamed = lookup(base)
            except KeyError:
                continue
            return OrderSpec(f"{renamed}.{granularity}" if granularity else renamed, spec.desc)
        return spec

    try:
        rewritten = dataclasses.replace(
            query,
            measures=tuple(name(m) for m in query.measures),
            dimensions=tuple(name(d) for d in query.dimensions),
            segments=tuple(name(s) for s in query.segments),
            time_dimensions=tuple(
                dataclasses.replace(td, dimension=time_name(td.dimension)) for td in query.time_dimensions
            ),
            filters=tuple(node(f) for f in choice.filters),
            order=tuple(order(o) for o in query.order),
            join_hints=(),
        )
    except KeyError:
        return None
    on_rollup = compile_rewritten(target.model, rewritten)
    if len(on_rollup.columns) != len(compiled.columns):
        return None
    columns = tuple(
        dataclasses.replace(mine, alias=theirs.alias)
        for mine, theirs in zip(compiled.columns, on_rollup.columns, strict=True)
    )
    used: dict[str, Any] = {
        "preAggregationId": choice.layout.rollup.id,
        "table": choice.layout.table,
        # In the data source: its newest partition's table, as the source names it (the statement reads them all).
        "targetTableName": ".".join(tables[-1]) if tables else f"{choice.built.table}_{choice.built.version}",
        "version": choice.built.version,
        "lastUpdatedAt": choice.built.last_updated_at,
        "type": choice.layout.rollup.type,
        "matched": choice.how,
    }
    if choice.layout.kind == LAMBDA:
        # As Cube says a lambda's use: one entry per rollup it read, of type rollup, naming the lambda
        # (``rollupLambdaId``); with the source's rows, updated now (Cube's lambda table).
        now = datetime.now(UTC) if source is not None else None
        used["parts"] = [
            {
                "preAggregationId": rid,
                "table": table,
                "targetTableName": f"{table}_{choice.built.version}",
                "lastUpdatedAt": now or updated,
                "type": "rollup",
                "matched": choice.how,
                "rollupLambdaId": choice.layout.rollup.id,
            }
            for rid, table, updated in choice.built.parts
        ]
        if source is not None:
            used["lambda"] = source
    return dataclasses.replace(
        on_rollup, query=query, columns=columns, hints={**compiled.hints, "preAggregation": used}
    )


@dataclass(frozen=True)
class LambdaSource:
    """A lambda's fresh rows: its last rollup's build statement on the data source, for the time after
    ``after`` (where its tables end), the query's row filters pushed down; read into the store's statement in place of
    :data:`LAMBDA_ROWS`, as columns in the lambda table's order. ``row_limit``: the most rows it may give (Cube's
    ``CUBEJS_MAX_SOURCE_ROW_LIMIT``); the statement asks for one more, so that its reader can tell a part cut short
    from a whole one and refuse the first."""

    sql: str
    params: tuple[Any, ...]
    after: datetime
    columns: tuple[str, ...]
    row_limit: int = EVERY_ROW


def _lambda_source(
    model: CompiledModel, choice: RollupChoice, query: NormalizedQuery, row_limit: int = EVERY_ROW
) -> LambdaSource | None:
    """The source part of a lambda answer, or None (not a lambda with source data, or every date range of the query
    on its time dimension ends within what its tables hold: the source cannot add a row)."""
    layout, after = choice.layout, choice.built.source_after
    if layout.kind != LAMBDA or after is None:
        return None
    ranges = [
        td.date_range
        for td in query.time_dimensions
        if origin(model, model.members[td.dimension]).full_name == layout.rollup.time_dimension
    ]
    if any(r is not None and parse_local(r[1]) <= after for r in ranges):
        return None
    last = rollup_layouts(model)[layout.parts[-1]]
    # The lambda's columns hold the first rollup's members; the last rollup's stand at the same places.
    same = {mine.member: theirs.member for mine, theirs in zip(layout.columns, last.columns, strict=True)}
    pushed = [f for f in (_pushed(model, node, same) for node in choice.filters) if f is not None]
    assert layout.rollup.time_dimension is not None
    bound = FilterCondition(same[layout.rollup.time_dimension], "afterDate", (format_local(after),))
    statement = dataclasses.replace(last.build, filters=(*pushed, bound), limit=min(row_limit + 1, EVERY_ROW))
    compiled = compile_query(unrestricted(model), statement, QueryContext())
    return LambdaSource(compiled.sql, compiled.params, after, tuple(c.name for c in layout.columns), row_limit)


def _pushed(model: CompiledModel, node: FilterNode, same: Mapping[str, str]) -> FilterNode | None:
    """A row filter of the query as a filter of the source part (its members the last rollup's), or None when it
    cannot be (a measure filter: those apply to whole groups, on the store). Applied again on the store, so pushing
    one only spares rows."""
    if isinstance(node, FilterGroup):
        items = [_pushed(model, item, same) for item in node.items]
        if any(item is None for item in items):
            return None
        return FilterGroup(node.kind, tuple(item for item in items if item is not None))
    if isinstance(node, FilterCondition):
        member = origin(model, model.members[node.member])
        if isinstance(member, Measure) or member.full_name not in same:
            return None
        return FilterCondition(same[member.full_name], node.operator, node.values)
    return None


def lambda_rows_sql(sql: str, columns: Sequence[str], types: Sequence[str], first_param: int) -> str:
    """``sql`` (a statement on a lambda's tables and :data:`LAMBDA_ROWS`) with the source's rows in place of
    :data:`LAMBDA_ROWS`: one list parameter per column from ``$first_param``, cast to the store's column types."""
    values = [
        exp.alias_(
            exp.Unnest(
                expressions=[
                    exp.Cast(
                        this=exp.Parameter(this=exp.Literal.number(first_param + index)),
                        to=exp.DataType.build(f"{kind}[]", dialect=STORE_DIALECT),
                    )
                ]
            ),
            quoted(name),
        )
        for index, (name, kind) in enumerate(zip(columns, types, strict=True))
    ]
    rows = exp.Subquery(this=exp.select(*values), alias=exp.TableAlias(this=quoted(LAMBDA_ROWS)))
    placeholder = exp.Table(this=quoted(LAMBDA_ROWS)).sql(dialect=STORE_DIALECT)
    if sql.count(f"FROM {placeholder}") != 1:
        raise QueryError("a lambda statement must read its source rows once")
    return sql.replace(f"FROM {placeholder}", f"FROM {rows.sql(dialect=STORE_DIALECT)}")


__all__ = [
    "BuildStatement",
    "BuiltRollup",
    "LambdaSource",
    "RollupChoice",
    "RollupColumn",
    "RollupLayout",
    "build_query",
    "choose_rollup",
    "rewrite",
    "rollup_layouts",
]
