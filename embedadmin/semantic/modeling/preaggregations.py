"""A cube's ``pre_aggregations`` compiled into :class:`PreAggregation` rollups, validated as Cube validates them.

Served: ``rollup`` (the default type) with ``measures``, ``dimensions``, ``segments``, ``time_dimension`` +
``granularity``, ``partition_granularity``, ``refresh_key`` (``every`` as an interval or a CRON string, ``sql``,
``incremental``, ``update_window``, ``timezone``), ``build_range_start``/``build_range_end``, ``indexes``,
``scheduled_refresh`` and ``allow_non_strict_date_range_match``. Members are written as Cube writes them: ``count``,
``CUBE.count``, ``{CUBE}.count``, ``orders.count``, or a member of a joined cube (``users.city``,
``orders.users.city``), which must be reachable through the cube's joins.

``original_sql`` (the cube's own SQL materialised; a rollup with ``use_original_sql_pre_aggregations: true`` is
built from it) and ``rollup_lambda`` (``rollups`` unioned, oldest data first, and with ``union_with_source_data`` the
source's rows after the last one's build) are served too. A lambda is checked once every cube's pre-aggregations are
compiled (:func:`rollup_lambda_problems`): its rollups exist, are rollups, share its members (Cube's
``memberNameMismatchValidation``), are partitioned where Cube requires it, and have additive measures only.

Refused with a model error naming the feature: ``rollup_join`` and ``auto_rollup`` pre-aggregations, a partitioned
``original_sql``, and a rollup's ``time_dimensions`` list (several time dimensions), none of which this server builds
or matches yet. Accepted and without effect (said in ``docs/pre-aggregations.md``): ``external`` (every rollup lives
in the deployment's pre-aggregation store), ``sql_alias``, ``unique_key_columns``, ``read_only``, ``stream_offset``
and ``output_column_types``.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Mapping
from typing import Any

from embedadmin.semantic.modeling.definitions import Abort, Definition, definition_name
from embedadmin.semantic.modeling.files import YamlMap
from embedadmin.semantic.modeling.intervals import parse_interval
from embedadmin.semantic.modeling.model import (
    Dimension,
    Entity,
    MemberReference,
    PreAggregation,
    PreAggregationIndex,
    PreAggregationRefreshKey,
    SourceLocation,
)
from embedadmin.semantic.modeling.references import PREDEFINED_GRANULARITIES

PRE_AGGREGATION_KEYS = frozenset(
    {
        "name",
        "type",
        "measures",
        "dimensions",
        "segments",
        "time_dimension",
        "granularity",
        "partition_granularity",
        "refresh_key",
        "build_range_start",
        "build_range_end",
        "indexes",
        "scheduled_refresh",
        "allow_non_strict_date_range_match",
        # accepted without effect (module docstring)
        "external",
        "sql_alias",
        "use_original_sql_pre_aggregations",
        "unique_key_columns",
        "read_only",
        "stream_offset",
        "output_column_types",
        # Cube's legacy spellings of the member lists
        "measure_references",
        "dimension_references",
        "segment_references",
        "time_dimension_reference",
    }
)
ORIGINAL_SQL_KEYS = frozenset(
    {
        "name",
        "type",
        "refresh_key",
        "scheduled_refresh",
        # accepted without effect
        "external",
        "sql_alias",
        "unique_key_columns",
        "read_only",
        "stream_offset",
        "output_column_types",
    }
)
LAMBDA_KEYS = frozenset(
    {
        "name",
        "type",
        "rollups",
        "union_with_source_data",
        "measures",
        "dimensions",
        "segments",
        "time_dimension",
        "granularity",
        "scheduled_refresh",
        "measure_references",
        "dimension_references",
        "segment_references",
        "time_dimension_reference",
        "external",
        "sql_alias",
    }
)
# Refused: (key or type) -> what the message names.
REFUSED_TYPES = {
    "rollup_join": "rollup_join pre-aggregations (rollups joined across data sources)",
    "auto_rollup": "auto_rollup pre-aggregations",
}
REFUSED_KEYS = {"time_dimensions": "a rollup with several time dimensions (time_dimensions)"}
ORIGINAL_SQL_REFUSED = ("time_dimension", "partition_granularity", "build_range_start", "build_range_end", "indexes")
LAMBDA_ONLY_KEYS = ("rollups", "union_with_source_data", "lambda_rollups")
# Cube's type names (what /v1/meta and usedPreAggregations say).
TYPE_NAMES = {"rollup": "rollup", "original_sql": "originalSql", "rollup_lambda": "rollupLambda"}
ADDITIVE_TYPES = frozenset({"count", "sum", "min", "max"})
PARTITION_GRANULARITIES = ("hour", "day", "week", "month", "quarter", "year")
REFRESH_KEY_KEYS = frozenset({"every", "sql", "incremental", "update_window", "timezone"})
INDEX_KEYS = frozenset({"name", "columns", "type"})
INDEX_TYPES = ("regular", "aggregate")
DEFAULT_EVERY = "1 hour"
# With only ``sql``, Cube checks it every 10 seconds.
DEFAULT_SQL_EVERY = "10 second"
_CRON_FIELD = r"[0-9*/,\-?LW#A-Za-z]+"
CRON = re.compile(rf"^\s*{_CRON_FIELD}(\s+{_CRON_FIELD}){{4,5}}\s*$")


def is_cron(every: str) -> bool:
    """Whether a ``refresh_key.every`` is a CRON string (five fields, or six with seconds) rather than an interval."""
    return bool(CRON.match(every)) and not re.match(r"^\s*-?\d+\s+[a-z]+", every.strip().lower())


class _RollupScope:
    """What compiling one cube's pre-aggregations needs: the cube, every compiled cube, and the join graph."""

    def __init__(self, cube: str, cubes: Mapping[str, Entity]) -> None:
        self.cube = cube
        self.cubes = cubes

    def member(self, definition: Definition, key: str, reference: object, kind: str) -> str:
        """``count`` / ``CUBE.count`` / ``{CUBE}.count`` / ``orders.count`` / ``orders.users.city`` as a full
        member name of ``kind`` (measure, dimension or segment)."""
        if not isinstance(reference, str) or not reference.strip():
            raise definition.fail(f"{key} must list member names", key)
        text = reference.strip().replace("{CUBE}", self.cube).replace("{", "").replace("}", "")
        if text.startswith("CUBE."):
            text = f"{self.cube}.{text[5:]}"
        path, _, name = text.rpartition(".")
        owner = path.rpartition(".")[2] if path else self.cube
        entity = self.cubes.get(owner)
        found = None if entity is None else _of_kind(entity, name, kind)
        if found is None:
            raise definition.fail(f'{key}: unknown {kind} "{reference}"', key)
        # A member of a cube this one does not join compiles, as in Cube; its rollup fails to build, saying so.
        return f"{owner}.{name}"


def _of_kind(entity: Entity, name: str, kind: str) -> Any:
    if kind == "measure":
        return entity.measures.get(name)
    if kind == "dimension":
        return entity.dimensions.get(name)
    return entity.segments.get(name)


def compile_pre_aggregations(
    cube: str,
    items: list[tuple[Any, str]],
    owner: Definition,
    cubes: Mapping[str, Entity],
) -> tuple[PreAggregation, ...]:
    """The cube's rollups in definition order (Cube matches them in that order); faults go to ``owner.problems``."""
    scope = _RollupScope(cube, cubes)
    compiled: list[PreAggregation] = []
    names: set[str] = set()
    for item, file in items:
        if not isinstance(item, YamlMap):
            owner.error("each item of pre_aggregations must be a mapping", "pre_aggregations")
            continue
        definition = Definition(item, file, f"pre-aggregation of cube {cube}", owner.problems)
        try:
            rollup = _compile_one(definition, scope)
        except Abort:
            continue
        if rollup.name in names:
            definition.error(f'a pre-aggregation named "{rollup.name}" is already defined in cube {cube}', "name")
            continue
        names.add(rollup.name)
        compiled.append(rollup)
    return tuple(compiled)


def _compile_one(definition: Definition, scope: _RollupScope) -> PreAggregation:
    name = definition_name(definition, "pre-aggregation", scope.cube)
    kind = definition.string("type") or "rollup"
    kind = re.sub(r"(?<=[a-z])([A-Z])", r"_\1", kind).lower()
    if kind in REFUSED_TYPES:
        raise definition.fail(f"{REFUSED_TYPES[kind]} are not supported by this server yet", "type")
    if kind not in TYPE_NAMES:
        raise definition.fail(f'unknown pre-aggregation type "{definition.string("type")}"', "type")
    for key, feature in REFUSED_KEYS.items():
        if key in definition.data:
            raise definition.fail(f"{feature} are not supported by this server yet", key)
    if kind == "original_sql":
        return _original_sql(definition, scope, name)
    if kind == "rollup_lambda":
        return _rollup_lambda(definition, scope, name)
    for key in LAMBDA_ONLY_KEYS:
        if key in definition.data:
            raise definition.fail(f"{key} belongs to a rollup_lambda pre-aggregation (type: rollup_lambda)", key)
    definition.check_keys(PRE_AGGREGATION_KEYS)
    measures = _members(definition, scope, "measures", "measure_references", "measure")
    dimensions = _members(definition, scope, "dimensions", "dimension_references", "dimension")
    segments = _members(definition, scope, "segments", "segment_references", "segment")
    time_dimension, granularity = _time_dimension(definition, scope)
    partition = definition.string("partition_granularity")
    if partition is not None:
        if partition not in PARTITION_GRANULARITIES:
            raise definition.fail(
                f"partition_granularity must be one of {', '.join(PARTITION_GRANULARITIES)}", "partition_granularity"
            )
        if time_dimension is None:
            raise definition.fail("partition_granularity needs a time_dimension", "partition_granularity")
    build_start = _range_sql(definition, "build_range_start")
    build_end = _range_sql(definition, "build_range_end")
    if not measures and not dimensions and not segments and time_dimension is None:
        raise definition.fail("a rollup needs measures, dimensions, segments or a time_dimension")
    stored = {*dimensions, *segments, *([time_dimension] if time_dimension else [])}
    return PreAggregation(
        name=name,
        cube=scope.cube,
        measures=measures,
        dimensions=dimensions,
        segments=segments,
        time_dimension=time_dimension,
        granularity=granularity,
        partition_granularity=partition,
        refresh_key=_refresh_key(definition),
        build_range_start=build_start,
        build_range_end=build_end,
        indexes=_indexes(definition, scope, stored),
        scheduled_refresh=bool(definition.boolean("scheduled_refresh", True)),
        allow_non_strict_date_range_match=bool(definition.boolean("allow_non_strict_date_range_match", False)),
        location=definition.location,
        use_original_sql=bool(definition.boolean("use_original_sql_pre_aggregations", False)),
    )


def _original_sql(definition: Definition, scope: _RollupScope, name: str) -> PreAggregation:
    """The cube's own SQL (``sql`` or ``sql_table``) materialised as it is: no members, one table."""
    for key in ORIGINAL_SQL_REFUSED:
        if key in definition.data:
            raise definition.fail(f"{key} on an original_sql pre-aggregation is not supported by this server yet", key)
    definition.check_keys(ORIGINAL_SQL_KEYS)
    return PreAggregation(
        name=name,
        cube=scope.cube,
        refresh_key=_refresh_key(definition),
        scheduled_refresh=bool(definition.boolean("scheduled_refresh", True)),
        location=definition.location,
        type=TYPE_NAMES["original_sql"],
    )


def _rollup_lambda(definition: Definition, scope: _RollupScope, name: str) -> PreAggregation:
    """A lambda as written: its rollups' ids, and members only when it lists them (checked against its rollups,
    and otherwise taken from the first, once every cube is compiled: :func:`rollup_lambda_problems`)."""
    definition.check_keys(LAMBDA_KEYS)
    references = definition.sequence("rollups")
    if not references:
        raise definition.fail("a rollup_lambda needs rollups: the rollups it unions, oldest data first", "rollups")
    rollups = []
    for reference in references:
        if not isinstance(reference, str) or not reference.strip():
            raise definition.fail("rollups must list pre-aggregation names", "rollups")
        text = reference.strip().replace("{CUBE}", scope.cube).replace("{", "").replace("}", "")
        if text.startswith("CUBE."):
            text = text[5:]
        owner, _, rollup = text.rpartition(".")
        rollups.append(f"{owner.rpartition('.')[2] or scope.cube}.{rollup}")
    time_dimension, granularity = _time_dimension(definition, scope)
    return PreAggregation(
        name=name,
        cube=scope.cube,
        measures=_members(definition, scope, "measures", "measure_references", "measure"),
        dimensions=_members(definition, scope, "dimensions", "dimension_references", "dimension"),
        segments=_members(definition, scope, "segments", "segment_references", "segment"),
        time_dimension=time_dimension,
        granularity=granularity,
        refresh_key=PreAggregationRefreshKey(every=DEFAULT_EVERY),
        scheduled_refresh=False,  # never built itself: its rollups are
        location=definition.location,
        type=TYPE_NAMES["rollup_lambda"],
        rollups=tuple(dict.fromkeys(rollups)),
        union_with_source_data=bool(definition.boolean("union_with_source_data", False)),
    )


def _short_names(rollup: PreAggregation) -> tuple[tuple[str, ...], ...]:
    """A rollup's members by short name, in order (Cube compares a lambda's rollups so)."""

    def short(names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(name.rpartition(".")[2] for name in names)

    time = () if rollup.time_dimension is None else (f"{short((rollup.time_dimension,))[0]}.{rollup.granularity}",)
    return short(rollup.measures), short(rollup.dimensions), short(rollup.segments), time


def _additive(cubes: Mapping[str, Entity], cube: str, measure: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether a measure re-aggregates from partial groups: count, sum, min, max, or a calculated measure of those."""
    found = cubes[cube].measures.get(measure)
    if found is None or f"{cube}.{measure}" in seen:
        return False
    if found.type in ADDITIVE_TYPES:
        return not found.rolling_window and found.multi_stage is None
    if found.type != "number" or found.sql is None:
        return False
    references = list(found.sql.refs.values())
    return bool(references) and all(
        isinstance(ref, MemberReference)
        and ref.kind == "measure"
        and _additive(cubes, ref.cube, ref.member, seen | {f"{cube}.{measure}"})
        for ref in references
    )


def rollup_lambda_problems(cubes: Mapping[str, Entity]) -> list[tuple[SourceLocation, str, str]]:
    """Check every rollup_lambda against the rollups it names, once every cube's pre-aggregations are compiled, and
    give a lambda that lists no members its first rollup's (as Cube does). The faults, as (where, what, message)."""
    problems: list[tuple[SourceLocation, str, str]] = []
    by_id = {p.id: p for entity in cubes.values() for p in entity.pre_aggregations}
    for entity in cubes.values():
        resolved = []
        for item in entity.pre_aggregations:
            if item.type == TYPE_NAMES["rollup_lambda"]:
                fault = _lambda_fault(item, by_id, cubes)
                if fault is not None:
                    problems.append((item.location, f"pre-aggregation {item.id}", fault))
                    continue
                first = by_id[item.rollups[0]]
                item = dataclasses.replace(
                    item,
                    measures=first.measures,
                    dimensions=first.dimensions,
                    segments=first.segments,
                    time_dimension=first.time_dimension,
                    granularity=first.granularity,
                )
            resolved.append(item)
        entity.pre_aggregations = tuple(resolved)
    return problems


def _lambda_fault(item: PreAggregation, by_id: Mapping[str, PreAggregation], cubes: Mapping[str, Entity]) -> str | None:
    rollups = []
    for rid in item.rollups:
        rollup = by_id.get(rid)
        if rollup is None:
            return f'rollups: no pre-aggregation "{rid}" is defined'
        if rollup.type != TYPE_NAMES["rollup"]:
            return f'rollups: "{rid}" is not a rollup (a rollup_lambda unions rollups)'
        rollups.append(rollup)
    last = rollups[-1]
    if item.union_with_source_data and last.cube != item.cube:
        return (
            f"union_with_source_data can be enabled only for a rollup of cube {item.cube}, "
            f'but "{last.id}" is defined in cube {last.cube}'
        )
    needs_partitions = len(rollups) > 1 or item.union_with_source_data
    for rollup in rollups:
        if needs_partitions and (rollup.partition_granularity is None or rollup.time_dimension is None):
            return (
                f'"{rollup.id}" has no partition_granularity: a rollup_lambda with several rollups or '
                "union_with_source_data needs a time_dimension and partition_granularity on each"
            )
    for earlier, later in itertools.pairwise(rollups):
        if str(earlier.partition_granularity) not in _PADDED_BY.get(str(later.partition_granularity), ()):
            return (
                f'"{earlier.id}" and "{later.id}" have incompatible partition granularities: '
                f"{earlier.partition_granularity} can't be padded by {later.partition_granularity}"
            )
    mine = _short_names(item)
    for rollup in rollups:
        theirs = _short_names(rollup)
        if any(mine) and mine != theirs:
            return f'its members do not match those of "{rollup.id}" (the same names in the same order)'
        if theirs != _short_names(rollups[0]):
            return f'the members of "{rollups[0].id}" and "{rollup.id}" do not match (the same names in the same order)'
        for measure in rollup.measures:
            owner, _, name = measure.partition(".")
            if not _additive(cubes, owner, name):
                return (
                    f'measure "{measure}" of "{rollup.id}" is not additive: a rollup_lambda re-aggregates its '
                    "rollups' rows with fresh ones, so count, sum, min, max or measures calculated from them only"
                )
    return None


# Partition granularity -> those a partition of it fits within (Cube's minGranularity(prev, next) == next).
_PADDED_BY = {
    "hour": ("hour", "day", "week", "month", "quarter", "year"),
    "day": ("day", "week", "month", "quarter", "year"),
    "week": ("week",),
    "month": ("month", "quarter", "year"),
    "quarter": ("quarter", "year"),
    "year": ("year",),
}


def _members(definition: Definition, scope: _RollupScope, key: str, legacy: str, kind: str) -> tuple[str, ...]:
    given = key if key in definition.data else legacy
    names = [scope.member(definition, given, ref, kind) for ref in definition.sequence(given)]
    return tuple(dict.fromkeys(names))


def _time_dimension(definition: Definition, scope: _RollupScope) -> tuple[str | None, str | None]:
    key = "time_dimension" if "time_dimension" in definition.data else "time_dimension_reference"
    reference = definition.get(key)
    granularity = definition.string("granularity")
    if reference is None:
        if granularity is not None:
            raise definition.fail("granularity needs a time_dimension", "granularity")
        return None, None
    name = scope.member(definition, key, reference, "dimension")
    entity, _, member = name.partition(".")
    dimension = scope.cubes[entity].dimensions[member]
    if not isinstance(dimension, Dimension) or dimension.type != "time":
        raise definition.fail(f'time_dimension "{reference}" is not a time dimension', key)
    if granularity is None:
        raise definition.fail("a time_dimension needs a granularity", key)
    if granularity not in PREDEFINED_GRANULARITIES and granularity not in dimension.granularities:
        raise definition.fail(f'granularity "{granularity}" does not exist in dimension {name}', "granularity")
    return name, granularity


def _range_sql(definition: Definition, key: str) -> str | None:
    value = definition.get(key)
    if value is None:
        return None
    sql = value.get("sql") if isinstance(value, dict) else None
    if not isinstance(sql, str) or not sql.strip():
        raise definition.fail(f"{key} must be {{sql: ...}}", key)
    return sql


def _refresh_key(definition: Definition) -> PreAggregationRefreshKey:
    raw = definition.get("refresh_key")
    if raw is None:
        return PreAggregationRefreshKey(every=DEFAULT_EVERY)
    if not isinstance(raw, YamlMap):
        raise definition.fail("refresh_key must be a mapping", "refresh_key")
    key = Definition(raw, definition.file, definition.what, definition.problems)
    key.check_keys(REFRESH_KEY_KEYS)
    every = key.string("every")
    sql = key.string("sql")
    if every is not None:
        if is_cron(every):
            if sql is not None:
                raise key.fail("refresh_key: a CRON every cannot be combined with sql", "every")
        else:
            try:
                interval = parse_interval(every)
            except ValueError as exc:
                raise key.fail(f"refresh_key.every: {exc}", "every") from None
            if interval.months * 30 * 86400 + interval.seconds <= 0:
                raise key.fail("refresh_key.every must be positive", "every")
    timezone = key.string("timezone")
    if timezone is not None and (every is None or not is_cron(every)):
        raise key.fail("refresh_key.timezone applies to a CRON every only", "timezone")
    window = None
    if key.get("update_window") is not None:
        try:
            window = parse_interval(str(key.get("update_window")))
        except ValueError as exc:
            raise key.fail(f"refresh_key.update_window: {exc}", "update_window") from None
    incremental = bool(key.boolean("incremental", False))
    if incremental and definition.get("partition_granularity") is None:
        raise key.fail("refresh_key.incremental needs a partition_granularity", "incremental")
    if window is not None and not incremental:
        raise key.fail("refresh_key.update_window needs incremental: true", "update_window")
    return PreAggregationRefreshKey(
        every=every or (DEFAULT_SQL_EVERY if sql is not None else DEFAULT_EVERY),
        sql=sql,
        incremental=incremental,
        update_window=window,
        timezone=timezone,
    )


def _indexes(definition: Definition, scope: _RollupScope, stored: set[str]) -> tuple[PreAggregationIndex, ...]:
    raw = definition.get("indexes")
    if raw is None:
        return ()
    items: list[tuple[str | None, Any]]
    if isinstance(raw, dict) and not isinstance(raw, list):
        items = list(raw.items())  # JavaScript's object form, keyed by name
    elif isinstance(raw, list):
        items = [(None, item) for item in raw]
    else:
        raise definition.fail("indexes must be a list", "indexes")
    indexes = []
    for given_name, item in items:
        index = definition.child(item, definition.what, "indexes")
        index.check_keys(INDEX_KEYS)
        name = given_name or index.string("name", required=True)
        kind = index.string("type") or "regular"
        if kind not in INDEX_TYPES:
            raise index.fail(f"index type must be one of {', '.join(INDEX_TYPES)}", "type")
        columns = []
        for ref in index.sequence("columns"):
            member = scope.member(index, "columns", ref, "dimension")
            if member not in stored:
                raise index.fail(f'index column "{ref}" is not a dimension of the rollup', "columns")
            columns.append(member)
        if not columns:
            raise index.fail("an index needs columns", "columns")
        indexes.append(PreAggregationIndex(name=str(name), columns=tuple(columns), type=kind))
    return tuple(indexes)
