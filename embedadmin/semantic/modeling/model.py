"""The compiled data model: typed, validated, references resolved, lookups precomputed.

Built once per model version by :mod:`.compiler` and shared read-only by every request. Cubes and views
are both *entities*; a view's members are compiled into the same :class:`Measure`/:class:`Dimension`/
:class:`Segment` types as a cube's, with ``alias_member`` naming the cube member they stand for and
``join_path`` the path from the view's root cube to that member's cube.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

from sqlglot import exp

from embedadmin.semantic.modeling.expressions import ContextExpression

Relationship = Literal["belongsTo", "hasMany", "hasOne"]
MemberKind = Literal["measure", "dimension", "segment"]

MEASURE_TYPES = (
    "count",
    "count_distinct",
    "count_distinct_approx",
    "sum",
    "avg",
    "min",
    "max",
    "number",
    "string",
    "time",
    "boolean",
)
DIMENSION_TYPES = ("string", "number", "time", "boolean", "geo")
# The operators that test a string (``equals`` and ``notEquals`` test any type) and those that test a time, in
# Cube's order.
_STRING_TESTS = (
    "equals",
    "notEquals",
    "contains",
    "notContains",
    "startsWith",
    "notStartsWith",
    "endsWith",
    "notEndsWith",
)
_DATE_TESTS = (
    "inDateRange",
    "notInDateRange",
    "onTheDate",
    "beforeDate",
    "beforeOrOnDate",
    "afterDate",
    "afterOrOnDate",
)
# Filter operators Cube 1.7 accepts (``query.js``), in its order.
FILTER_OPERATORS = (
    *_STRING_TESTS,
    "in",
    "notIn",
    "gt",
    "gte",
    "lt",
    "lte",
    "set",
    "notSet",
    *_DATE_TESTS,
    "measureFilter",
)
VALUELESS_OPERATORS = frozenset({"set", "notSet", "measureFilter"})
DATE_OPERATORS = frozenset(_DATE_TESTS)
# The filter operators that make sense for a member, by its value type (``value_type``), in the order a person
# picks from: the panel's report builder offers these, and a dashboard's FILTER control may use no other.
OPERATORS_BY_TYPE: dict[str, tuple[str, ...]] = {
    "string": (*_STRING_TESTS, "set", "notSet"),
    "number": ("equals", "notEquals", "gt", "gte", "lt", "lte", "set", "notSet"),
    "boolean": ("equals", "notEquals", "set", "notSet"),
    "time": (*_DATE_TESTS, "set", "notSet"),
}
# Measures whose value survives a fan-out join unchanged (duplicates do not alter them).
FANOUT_SAFE_MEASURE_TYPES = frozenset({"count_distinct", "count_distinct_approx", "min", "max"})
# Measures whose ``sql`` is an aggregate expression already (Cube does not wrap them).
CALCULATED_MEASURE_TYPES = frozenset({"number", "string", "time", "boolean"})


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """Where a definition is written: display file name and 1-based line."""

    file: str
    line: int


@dataclass(frozen=True, slots=True)
class MemberReference:
    """``{cube.member}`` (or ``{member}``, ``{CUBE.member}``, ``{a.b.member}``, ``{td.granularity}``)."""

    cube: str
    member: str
    granularity: str | None = None
    path: tuple[str, ...] = ()  # join hint: cubes from the referring cube to ``cube``
    kind: str = "dimension"  # what the member is: measure, dimension or segment


@dataclass(frozen=True, slots=True)
class CubeReference:
    """``{CUBE}`` or ``{other_cube}``: the table alias of a cube in the query."""

    cube: str


@dataclass(frozen=True, slots=True)
class CubeSqlReference:
    """``{other_cube.sql()}``: another cube's SQL, as a subquery."""

    cube: str


@dataclass(frozen=True, slots=True, eq=False)
class SecurityContextReference:
    """``{SECURITY_CONTEXT.a.b.filter('col')}`` (``requiredFilter``, ``unsafeValue()``): a value of the caller's
    security context, bound as a parameter when a query is compiled (:mod:`embedadmin.semantic.sql.context`).
    ``parameters`` names the placeholders of a function form (``filter(lambda v: ...)``), None for a column."""

    path: tuple[str, ...]
    method: str  # filter | requiredFilter | unsafeValue
    column: str = ""  # the column as written, for requiredFilter's error
    parameters: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, eq=False)
class FilterParamsReference:
    """``{FILTER_PARAMS.cube.member.filter('col')}``: the query's filters on ``cube.member`` with ``col`` as the
    member (or ``parameters``, a function form's placeholders, bound to their values)."""

    cube: str
    member: str
    parameters: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, eq=False)
class FilterGroupReference:
    """``{FILTER_GROUP(FILTER_PARAMS..., ...)}``: the query's filter tree restricted to the members of its
    FILTER_PARAMS arguments, ``and``/``or`` kept."""


@dataclass(frozen=True, slots=True, eq=False)
class ConvertTzReference:
    """``{SQL_UTILS.convertTz('col')}``: ``col`` as wall-clock time of the query's time zone."""


ContextReference = SecurityContextReference | FilterParamsReference | FilterGroupReference | ConvertTzReference
Reference = MemberReference | CubeReference | CubeSqlReference | ContextReference


@dataclass(frozen=True, slots=True)
class SqlSnippet:
    """A SQL fragment from the model, parsed once for the model's dialect.

    ``tree`` holds placeholder identifiers (``__ref_0``...) where the YAML had ``{...}`` references;
    ``refs`` maps each placeholder to what it stands for. The tree is never mutated: the SQL builder copies it.
    """

    text: str
    tree: exp.Expr
    refs: dict[str, Reference]
    location: SourceLocation

    def member_refs(self) -> list[MemberReference]:
        return [r for r in self.refs.values() if isinstance(r, MemberReference)]

    def reads_security_context(self) -> bool:
        return any(isinstance(r, SecurityContextReference) for r in self.refs.values())


@dataclass(frozen=True, slots=True)
class Interval:
    """A parsed ``"1 year 2 months"`` interval: calendar months and fixed seconds, kept apart."""

    text: str
    months: int = 0
    seconds: int = 0
    parts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Granularity:
    """A custom granularity of a time dimension (predefined ones are not stored)."""

    name: str
    title: str | None
    interval: Interval
    offset: Interval | None
    origin: str | None
    offset_text: str | None = None


@dataclass(frozen=True, slots=True)
class RollingWindow:
    trailing: str | None = None
    leading: str | None = None
    offset: str = "end"
    type: str | None = None  # year_to_date | quarter_to_date | month_to_date | to_date
    granularity: str | None = None  # for type: to_date


@dataclass(frozen=True, slots=True)
class TimeShift:
    """One ``time_shift`` item: of a multi-stage measure (``interval`` + ``type``, or the ``name`` of a calendar's
    shift; ``time_dimension`` the full name it applies to, None for every time dimension of the query), or of a
    calendar cube's time dimension (``name`` and/or ``interval`` + ``type``, with the ``sql`` it maps to)."""

    interval: Interval | None = None
    type: str = "prior"  # prior | next
    name: str | None = None
    time_dimension: str | None = None
    sql: SqlSnippet | None = None


@dataclass(frozen=True, slots=True)
class MultiStage:
    """What makes a measure multi-stage (Cube's ``multi_stage: true``): computed over other measures' results.
    ``group_by`` (None: not set), ``reduce_by`` and ``add_group_by`` are full dimension names."""

    group_by: tuple[str, ...] | None = None
    reduce_by: tuple[str, ...] = ()
    add_group_by: tuple[str, ...] = ()
    time_shifts: tuple[TimeShift, ...] = ()


@dataclass(frozen=True, slots=True)
class CaseWhen:
    sql: SqlSnippet
    label: str | SqlSnippet


@dataclass(frozen=True, slots=True)
class CaseSpec:
    when: tuple[CaseWhen, ...]
    else_label: str | SqlSnippet | None


@dataclass(frozen=True, slots=True)
class MemberDisplay:
    """What every member shows in meta and annotation."""

    title: str  # "<entity title> <short title>"
    short_title: str
    description: str | None
    meta: Any
    public: bool
    own_title: str | None = None  # the title written in the model, if any (views inherit it)
    own_public: bool | None = None  # public/shown written in the model, if any


@dataclass(frozen=True, slots=True)
class _MemberFields:
    """What every member has: its ``name`` in its cube or view (``entity``), where it is written, and in a view the
    cube member it stands for (``alias_member``) with the joins from the view's root cube to that member's cube
    (``join_path``). The fields after ``name`` and ``entity`` are keyword-only; each kind adds its own."""

    name: str
    entity: str
    _: KW_ONLY
    location: SourceLocation | None = None
    alias_member: str | None = None
    join_path: tuple[str, ...] = ()

    @property
    def full_name(self) -> str:
        return f"{self.entity}.{self.name}"


@dataclass(frozen=True, slots=True)
class Measure(_MemberFields):
    type: str
    sql: SqlSnippet | None
    display: MemberDisplay
    filters: tuple[SqlSnippet, ...] = ()
    drill_members: tuple[str, ...] = ()
    format: Any = None
    currency: str | None = None
    rolling_window: RollingWindow | None = None
    kind: MemberKind = "measure"
    multi_stage: MultiStage | None = None
    # A calculated measure whose aggregate rows duplicated by a fan-out join do not change, as a FANOUT_SAFE type's:
    # a rollup's distinct-count sketch (semantic/sql/rollups.py). The model's own measures never set it.
    fanout_safe: bool = False


@dataclass(frozen=True, slots=True)
class Dimension(_MemberFields):
    type: str
    sql: SqlSnippet | None
    display: MemberDisplay
    primary_key: bool = False
    case: CaseSpec | None = None
    latitude: SqlSnippet | None = None
    longitude: SqlSnippet | None = None
    granularities: dict[str, Granularity] = field(default_factory=dict)
    format: Any = None
    currency: str | None = None
    order: str | None = None
    key: str | None = None
    sub_query: bool = False
    propagate_filters_to_sub_query: bool = False
    suggest_filter_values: bool = True
    kind: MemberKind = "dimension"
    time_shifts: tuple[TimeShift, ...] = ()  # a calendar cube's named shifts and mappings


@dataclass(frozen=True, slots=True)
class Segment(_MemberFields):
    sql: SqlSnippet | None
    display: MemberDisplay
    kind: MemberKind = "segment"


Member = Measure | Dimension | Segment


def value_type(member: Member) -> str:
    """number, string, time or boolean: how filter values for ``member`` are read (a view member has the type of
    the cube member it stands for)."""
    if isinstance(member, Measure):
        return member.type if member.type in ("string", "time", "boolean") else "number"
    if isinstance(member, Dimension):
        return "string" if member.type == "geo" else member.type
    return "boolean"


@dataclass(frozen=True, slots=True)
class Hierarchy:
    name: str
    title: str | None
    levels: tuple[str, ...]  # full member names
    public: bool
    alias_member: str | None = None


@dataclass(frozen=True, slots=True)
class Folder:
    name: str
    members: tuple[str | Folder, ...]  # full member names or nested folders


@dataclass(frozen=True, slots=True)
class Join:
    target: str
    relationship: Relationship
    sql: SqlSnippet
    location: SourceLocation


@dataclass(frozen=True, slots=True)
class PolicyFilter:
    """A row-level filter of a policy, in query-filter shape with members resolved to full names.

    ``values`` may hold ``{ securityContext.x }`` templates, resolved per caller.
    """

    member: str | None = None
    operator: str | None = None
    values: tuple[Any, ...] | None = None
    and_: tuple[PolicyFilter, ...] | None = None
    or_: tuple[PolicyFilter, ...] | None = None


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """One ``access_policy`` entry of a cube or view."""

    key: str  # groups joined with ",", or "default" when the policy names none
    groups: tuple[str, ...] | None  # None: no group given (matches everyone)
    conditions: tuple[ContextExpression, ...]
    member_level: bool
    member_includes: frozenset[str] | None  # None: "*"
    member_excludes: frozenset[str]
    row_filters: tuple[PolicyFilter, ...]
    row_level_all: bool  # no row_level, or row_level.allow_all
    location: SourceLocation


@dataclass(frozen=True, slots=True)
class RefreshKey:
    every: str | None = None
    sql: str | None = None


@dataclass(frozen=True, slots=True)
class PreAggregationRefreshKey:
    """When a rollup is rebuilt (Cube's ``refresh_key``): on an interval or CRON schedule (``every``), when the
    value of ``sql`` changes (checked every ``every``), per partition with ``incremental`` (only the partitions
    ending within ``update_window``, else only the last one)."""

    every: str = "1 hour"
    sql: str | None = None
    incremental: bool = False
    update_window: Interval | None = None
    timezone: str | None = None  # of a CRON ``every``


@dataclass(frozen=True, slots=True)
class PreAggregationIndex:
    name: str
    columns: tuple[str, ...]  # full member names
    type: str = "regular"  # regular | aggregate


@dataclass(frozen=True, slots=True, kw_only=True)
class PreAggregation:
    """A ``rollup`` pre-aggregation of a cube: a materialised GROUP BY of its measures, dimensions, segments and
    time dimension at ``granularity`` (members as full names, possibly of joined cubes), built into the
    pre-aggregation store and matched against queries by :mod:`embedadmin.semantic.sql.rollups`. What a type
    does not have (an ``originalSql`` one has no members; a ``rollupLambda`` no partitions, build range or
    indexes) is left at its default."""

    name: str
    cube: str
    measures: tuple[str, ...] = ()
    dimensions: tuple[str, ...] = ()
    segments: tuple[str, ...] = ()
    time_dimension: str | None = None
    granularity: str | None = None
    partition_granularity: str | None = None
    refresh_key: PreAggregationRefreshKey
    build_range_start: str | None = None  # SQL
    build_range_end: str | None = None
    indexes: tuple[PreAggregationIndex, ...] = ()
    scheduled_refresh: bool
    allow_non_strict_date_range_match: bool = False
    location: SourceLocation
    type: str = "rollup"  # or "originalSql", "rollupLambda" (Cube's names)
    use_original_sql: bool = False  # a rollup built from its cubes' originalSql pre-aggregations
    rollups: tuple[str, ...] = ()  # a rollupLambda's rollups (ids), oldest data first
    union_with_source_data: bool = False  # a rollupLambda adds the source's rows after its last rollup's build

    @property
    def id(self) -> str:
        """``cube.name``: Cube's ``preAggregationId``."""
        return f"{self.cube}.{self.name}"


@dataclass(slots=True)
class Entity:
    """A cube or a view: the unit of ``/v1/meta`` and of access policies."""

    name: str
    is_view: bool
    title: str
    description: str | None
    public: bool
    meta: Any
    measures: dict[str, Measure]
    dimensions: dict[str, Dimension]
    segments: dict[str, Segment]
    hierarchies: tuple[Hierarchy, ...]
    folders: tuple[Folder, ...]
    access_policies: tuple[AccessPolicy, ...] | None
    location: SourceLocation
    # cubes only
    sql_table: str | None = None
    sql: SqlSnippet | None = None
    table: exp.Expr | None = None  # parsed sql_table
    joins: tuple[Join, ...] = ()
    primary_keys: tuple[str, ...] = ()
    data_source: str = "default"
    refresh_key: RefreshKey | None = None
    calendar: bool = False  # Cube's calendar cube: its time dimensions may map time shifts
    pre_aggregations: tuple[PreAggregation, ...] = ()
    # views only
    view_groups: tuple[str, ...] = ()

    @property
    def type(self) -> str:
        return "view" if self.is_view else "cube"

    def member(self, name: str) -> Member | None:
        return self.measures.get(name) or self.dimensions.get(name) or self.segments.get(name)


@dataclass(frozen=True, slots=True)
class CompilerError:
    """A cube or view left out of a model compiled with "load what compiles" (``entity`` None: a file that could
    not be read at all), or a join left out because the cube it joins was: where, and what is wrong."""

    entity: str | None
    file: str
    line: int
    member: str
    message: str


@dataclass(slots=True)
class CompiledModel:
    """Everything a request needs, precomputed. Immutable after compilation."""

    compiler_id: str
    dialect: str
    entities: dict[str, Entity]
    members: dict[str, Member]  # "entity.member" -> member, cubes and views alike
    joins: dict[str, dict[str, Join]]  # from cube -> to cube -> join
    connected_components: dict[str, int]
    view_groups: tuple[Any, ...] = ()
    caches: dict[str, Any] = field(default_factory=dict)  # per-model memo tables (meta, SQL fragments)
    # A model compiled with "load what compiles": what was left out, and why (/v1/meta's compilerErrors).
    compiler_errors: tuple[CompilerError, ...] = ()

    def cube(self, name: str) -> Entity:
        return self.entities[name]
