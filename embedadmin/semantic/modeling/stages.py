"""Multi-stage measures and time shifts as the model declares them (Cube's ``multi_stage``, ``group_by``,
``reduce_by``, ``add_group_by``, ``time_shift``; a calendar cube's time dimension ``time_shift``).

Cube computes a multi-stage measure over other measures' results, in stages (its Tesseract planner; the SQL side
is :mod:`embedadmin.semantic.sql.stages`). What is compiled here, with Cube's validation rules
(``CubeValidator``'s multi-stage measure schema):

- ``multi_stage: true`` with ``sql`` over other measures: a calculated type (``number``...) combines them per
  row of the query; an aggregating type (``sum``, ``avg``, ``min``, ``max``, ``count``, ``count_distinct``)
  aggregates their values again: over ``add_group_by`` dimensions added to the query's, or, with ``group_by``
  (only those of the query's dimensions) or ``reduce_by`` (the query's dimensions but those), over a partition
  of the query's rows; with ``rolling_window``, over the window's time buckets.
- ``time_shift``: the measures it uses, computed with the query's time dimensions shifted by ``interval``
  (``prior``: from the past; ``next``: from the future), or by a calendar cube's named shift (``name``).

Refused with a model error naming the feature: ``type: rank`` and ``number_agg``, ``case``/``switch`` measures,
``order_by``, ``grain`` and a multi-stage ``filter``, and the combinations Cube's planner gives no meaning to here
(a window over counts; ``add_group_by`` on a calculated measure).
"""

from __future__ import annotations

from typing import Protocol

from embedadmin.semantic.modeling.definitions import Definition
from embedadmin.semantic.modeling.intervals import parse_interval
from embedadmin.semantic.modeling.model import CALCULATED_MEASURE_TYPES, Interval, MultiStage, SqlSnippet, TimeShift
from embedadmin.semantic.modeling.references import SnippetScope


class CubeScope(Protocol):
    """What compiling a member needs of its cube (``members.CubeScope``, which calls into this module)."""

    scope: SnippetScope

    def snippet(self, definition: Definition, key: str, text: object, *, qualify: bool = True) -> SqlSnippet: ...
    def member_path(self, definition: Definition, key: str, reference: object, kinds: tuple[str, ...]) -> str: ...


STAGE_KEYS = ("group_by", "reduce_by", "add_group_by", "time_shift")
# What an aggregating multi-stage measure may be: a window over the query's rows (group_by, reduce_by) re-aggregates
# values, which only these types can do.
WINDOW_TYPES = frozenset({"sum", "avg", "min", "max"})
AGGREGATING_TYPES = WINDOW_TYPES | {"count", "count_distinct", "count_distinct_approx"}
# Multi-stage forms of Cube this server does not compute (they stay model errors).
UNSUPPORTED_MULTI_STAGE_TYPES = frozenset({"rank", "number_agg"})
_SHIFT_KEYS = frozenset({"time_dimension", "interval", "type", "name"})
_CALENDAR_SHIFT_KEYS = frozenset({"name", "interval", "type", "sql"})
_SHIFT_TYPES = ("prior", "next")


def compile_multi_stage(definition: Definition, cs: CubeScope, kind: str, sql: SqlSnippet | None) -> MultiStage | None:
    """The measure's multi-stage part (None for an ordinary measure); a fault is a model error on its key."""
    used = [key for key in STAGE_KEYS if definition.get(key) is not None]
    if not definition.boolean("multi_stage", False):
        for key in used:
            definition.error(f'"{key}" needs multi_stage: true', key)
        return None
    if sql is None:
        raise definition.fail('a multi_stage measure needs "sql" over other measures')
    references = sql.member_refs()
    if not any(r.kind == "measure" for r in references):
        raise definition.fail("the sql of a multi_stage measure must use other measures", "sql")
    others = sorted({f"{r.cube}.{r.member}" for r in references if r.kind != "measure"})
    if others:
        raise definition.fail(f"the sql of a multi_stage measure may use measures only, not {', '.join(others)}", "sql")
    group_by = _dimensions(definition, cs, "group_by") if definition.get("group_by") is not None else None
    reduce_by = _dimensions(definition, cs, "reduce_by")
    add_group_by = _dimensions(definition, cs, "add_group_by")
    if kind in CALCULATED_MEASURE_TYPES and (group_by is not None or reduce_by or add_group_by):
        key = next(k for k in ("group_by", "reduce_by", "add_group_by") if definition.get(k) is not None)
        raise definition.fail(f'"{key}" needs an aggregating type (sum, avg, min, max...), not "{kind}"', key)
    if (group_by is not None or reduce_by) and kind not in WINDOW_TYPES:
        key = "group_by" if group_by is not None else "reduce_by"
        raise definition.fail(f'"{key}" re-aggregates the query\'s rows: type must be sum, avg, min or max', key)
    return MultiStage(
        group_by=group_by,
        reduce_by=reduce_by,
        add_group_by=add_group_by,
        time_shifts=_measure_time_shifts(definition, cs),
    )


def _dimensions(definition: Definition, cs: CubeScope, key: str) -> tuple[str, ...]:
    return tuple(cs.member_path(definition, key, ref, ("dimension",)) for ref in definition.sequence(key))


def _measure_time_shifts(definition: Definition, cs: CubeScope) -> tuple[TimeShift, ...]:
    """``time_shift`` of a measure: one item may name a calendar's shift or leave out ``time_dimension``; several
    items each need ``time_dimension``, ``interval`` and ``type`` (Cube's rule)."""
    items = definition.sequence("time_shift")
    shifts = []
    for raw in items:
        item = definition.child(raw, definition.what, "time_shift")
        item.check_keys(_SHIFT_KEYS)
        name = item.string("name")
        interval_text = item.string("interval")
        if len(items) > 1:
            for required in ("time_dimension", "interval", "type"):
                if item.get(required) is None:
                    raise item.fail(f'"{required}" is required when time_shift has several items', "time_shift")
            if name is not None:
                raise item.fail('"name" is allowed only when time_shift has one item', "name")
        elif (name is None) == (interval_text is None):
            raise item.fail('a time_shift needs either "name" or "interval"')
        if interval_text is not None and item.get("type") is None:
            raise item.fail('"type" (prior or next) is required with "interval"', "interval")
        dimension = None
        if item.get("time_dimension") is not None:
            dimension = cs.member_path(item, "time_dimension", item.get("time_dimension"), ("dimension",))
            cube, _, member = dimension.partition(".")
            if member not in cs.scope.time_granularities.get(cube, {}):
                raise item.fail(f'time_dimension "{dimension}" is not a time dimension', "time_dimension")
        shifts.append(
            TimeShift(
                interval=_interval(item, interval_text),
                type=_shift_type(item),
                name=name,
                time_dimension=dimension,
            )
        )
    return tuple(shifts)


def compile_calendar_time_shifts(definition: Definition, cs: CubeScope, dimension_type: str) -> tuple[TimeShift, ...]:
    """``time_shift`` of a (calendar cube's) time dimension: ``{name, interval, type}`` names a shift,
    ``{name, sql}`` or ``{interval, type, sql}`` maps the dimension to the time it is shifted to."""
    items = definition.sequence("time_shift")
    if items and dimension_type != "time":
        raise definition.fail("time_shift is only allowed on time dimensions", "time_shift")
    shifts = []
    for raw in items:
        item = definition.child(raw, definition.what, "time_shift")
        item.check_keys(_CALENDAR_SHIFT_KEYS)
        given = {key for key, value in item.data.items() if value is not None}
        if given not in ({"name", "interval", "type"}, {"name", "sql"}, {"interval", "type", "sql"}):
            raise item.fail(
                "a time_shift of a time dimension is {name, interval, type}, {name, sql} or {interval, type, sql}"
            )
        sql = cs.snippet(item, "sql", item.get("sql")) if "sql" in given else None
        shifts.append(
            TimeShift(
                interval=_interval(item, item.string("interval")),
                type=_shift_type(item),
                name=item.string("name"),
                sql=sql,
            )
        )
    return tuple(shifts)


def _interval(item: Definition, text: str | None) -> Interval | None:
    if text is None:
        return None
    try:
        interval = parse_interval(text)
    except ValueError as exc:
        raise item.fail(str(exc), "interval") from None
    if interval.months < 0 or interval.seconds < 0 or not (interval.months or interval.seconds):
        raise item.fail("a time_shift interval must be positive (type says the direction)", "interval")
    return interval


def _shift_type(item: Definition) -> str:
    kind = item.string("type") or "prior"
    if kind not in _SHIFT_TYPES:
        raise item.fail('type must be "prior" or "next"', "type")
    return kind
