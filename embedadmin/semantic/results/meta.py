"""``/v1/meta``: the model as Cube's ``CubeToMetaTransformer`` and gateway present it, per caller.

Each entity's JSON is built once per model version (members that are not public already left out, as the
gateway does outside dev mode) and shared by every request; per request only entities with access
policies are filtered for the caller: denied entities disappear, members no matching policy grants are
left out, and entities left without members are dropped.

Composed for display (``readable=True``: the product's own pages and the chat, never the wire), each member also
carries ``readingTitle``, the title a person reads it by (:mod:`embedadmin.semantic.modeling.reading_titles`);
the body Cube's clients read keeps Cube's shape.
"""

from __future__ import annotations

import hashlib
from typing import Any

from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.modeling.formats import dimension_format, format_description, measure_format
from embedadmin.semantic.modeling.model import (
    CompiledModel,
    Dimension,
    Entity,
    Folder,
    Measure,
    Member,
    PreAggregation,
    Segment,
    value_type,
)
from embedadmin.semantic.modeling.reading_titles import READING_TITLE, reading_titles
from embedadmin.semantic.modeling.titles import titleize
from embedadmin.semantic.query.access import entity_access

_CALCULATED_AGG_TYPES = {"count_distinct": "countDistinct", "count_distinct_approx": "countDistinctApprox"}


def meta(
    model: CompiledModel,
    ctx: QueryContext,
    *,
    only_views: bool = False,
    extended: bool = False,
    readable: bool = False,
) -> dict[str, Any]:
    """The ``/v1/meta`` body for ``ctx``: ``{"cubes": [...], "compilerId": "..."}``.

    ``only_views``: views only (``?onlyViews=true``). ``extended`` (``?extended``): cubes also list their
    ``joins`` as ``{name, relationship, sql}`` (relationship spelled as Cube stores it: belongsTo, hasMany,
    hasOne) and their ``sql`` or ``sqlTable``. ``readable``: composed for display, each member with its
    ``readingTitle`` (module docstring).
    """
    base = _readable_base(model) if readable else _base(model)
    cubes: list[dict[str, Any]] = []
    mask: list[str] = []
    for name, entity in model.entities.items():
        if only_views and not entity.is_view:
            continue
        shown = base.get(name)
        if shown is None:
            continue
        if entity.access_policies is not None or ctx.only_granted:
            shown = _for_caller(entity, shown, ctx)
            mask.append(f"{name}:{','.join(m['name'] for m in _members(shown)) if shown else '-'}")
            if shown is None:
                continue
        cubes.append(_extended(entity, shown) if extended else shown)
    compiler_id = model.compiler_id
    if mask:
        compiler_id = hashlib.sha256(f"{compiler_id}|{'|'.join(mask)}".encode()).hexdigest()
    body: dict[str, Any] = {"cubes": cubes, "compilerId": compiler_id}
    if model.compiler_errors and not ctx.only_granted:
        body["compilerErrors"] = compiler_errors_json(model)
    return body


def compiler_errors_json(model: CompiledModel) -> list[dict[str, Any]]:
    """``compilerErrors`` of a model compiled with "load what compiles": each cube or view left out (``name``; null
    for a file that could not be read), where, and why. Not Cube's (Cube refuses a model with any fault), so it is
    absent whenever the model compiled whole, and never shown to an embed viewer (it names what they cannot see)."""
    return [
        {"name": e.entity, "file": e.file, "line": e.line, "member": e.member, "message": e.message}
        for e in model.compiler_errors
    ]


def administrator_meta(model: CompiledModel) -> dict[str, Any]:
    """The ``/v1/meta`` body as the deployment's administrator reads it: every cube and view with its public members,
    whatever their access policies say of a caller (a policy judges callers of the API; the administrator writes the
    reports those callers will read), composed for display (each member with its ``readingTitle``)."""
    return {"cubes": list(_readable_base(model).values()), "compilerId": model.compiler_id}


def _extended(entity: Entity, shown: dict[str, Any]) -> dict[str, Any]:
    if entity.is_view:
        return shown
    body = dict(shown)
    if entity.sql is not None:
        body["sql"] = entity.sql.text
    else:
        body["sqlTable"] = entity.sql_table
    body["joins"] = [{"name": j.target, "relationship": j.relationship, "sql": j.sql.text} for j in entity.joins]
    if entity.pre_aggregations:
        body["preAggregations"] = [_pre_aggregation_json(p) for p in entity.pre_aggregations]
    return body


def _pre_aggregation_json(rollup: PreAggregation) -> dict[str, Any]:
    """A rollup as Cube's extended meta lists it (its references written out, as Cube prints their functions)."""
    body: dict[str, Any] = {"name": rollup.name, "type": rollup.type}
    if rollup.measures:
        body["measureReferences"] = f"[{', '.join(rollup.measures)}]"
    if rollup.dimensions or rollup.segments:
        body["dimensionReferences"] = f"[{', '.join((*rollup.dimensions, *rollup.segments))}]"
    if rollup.time_dimension:
        body["timeDimensionReference"] = rollup.time_dimension
        body["granularity"] = rollup.granularity
    if rollup.partition_granularity:
        body["partitionGranularity"] = rollup.partition_granularity
    key = rollup.refresh_key
    refresh: dict[str, Any] = {"every": key.every}
    if key.sql is not None:
        refresh["sql"] = key.sql
    if key.incremental:
        refresh["incremental"] = True
    if key.update_window is not None:
        refresh["updateWindow"] = key.update_window.text
    body["refreshKey"] = refresh
    body["scheduledRefresh"] = rollup.scheduled_refresh
    return body


def member_json(model: CompiledModel, member: Member) -> dict[str, Any]:
    """A member as ``/v1/meta`` describes it (whatever its visibility); cached per model."""
    cache: dict[str, dict[str, Any]] = model.caches.setdefault("member_json", {})
    found = cache.get(member.full_name)
    if found is None:
        if isinstance(member, Measure):
            found = _measure_json(model, member)
        elif isinstance(member, Dimension):
            found = _dimension_json(member)
        else:
            found = _segment_json(member)
        cache[member.full_name] = found
    return found


def _members(entity_json: dict[str, Any]) -> list[dict[str, Any]]:
    return [*entity_json["measures"], *entity_json["dimensions"], *entity_json["segments"]]


def _for_caller(entity: Entity, shown: dict[str, Any], ctx: QueryContext) -> dict[str, Any] | None:
    access = entity_access(entity, ctx)
    if access.denied:
        return None
    prefix = len(entity.name) + 1
    visible = {m["name"] for m in _members(shown) if access.member_visible(m["name"][prefix:])}
    if not visible:
        return None
    filtered = dict(shown)
    for key in ("measures", "dimensions", "segments"):
        filtered[key] = [m for m in shown[key] if m["name"] in visible]
    filtered["hierarchies"] = [
        {**h, "levels": [level for level in h["levels"] if level in visible]}
        for h in shown["hierarchies"]
        if set(h["levels"]) & visible
    ]
    filtered["folders"] = [
        {"name": f["name"], "members": [n for n in f["members"] if n in visible]} for f in shown["folders"]
    ]
    filtered["nestedFolders"] = [_prune_folder(f, visible) for f in shown["nestedFolders"]]
    return filtered


def _prune_folder(folder: dict[str, Any], visible: set[str]) -> dict[str, Any]:
    members = [m if isinstance(m, str) else _prune_folder(m, visible) for m in folder["members"]]
    return {"name": folder["name"], "members": [m for m in members if not isinstance(m, str) or m in visible]}


def _base(model: CompiledModel) -> dict[str, dict[str, Any]]:
    base: dict[str, dict[str, Any]] | None = model.caches.get("meta")
    if base is None:  # an empty dict is a built (empty) model, not a missing cache entry
        base = _build_base(model)
    return base


def _readable_base(model: CompiledModel) -> dict[str, dict[str, Any]]:
    """The base composed for display: each member's JSON with its ``readingTitle``; built once per model."""
    readable: dict[str, dict[str, Any]] | None = model.caches.get("meta_readable")
    if readable is None:
        titles = reading_titles(model)
        readable = {
            name: {
                **entity_json,
                **{
                    part: [{**m, READING_TITLE: titles[m["name"]]} for m in entity_json[part]]
                    for part in ("measures", "dimensions", "segments")
                },
            }
            for name, entity_json in _base(model).items()
        }
        model.caches["meta_readable"] = readable
    return readable


def _build_base(model: CompiledModel) -> dict[str, dict[str, Any]]:
    base = {}
    for name, entity in model.entities.items():
        entity_json = _entity_json(model, entity)
        if _members(entity_json):
            base[name] = entity_json
    model.caches["meta"] = base
    return base


def _entity_json(model: CompiledModel, entity: Entity) -> dict[str, Any]:
    visible_entity = entity.public
    body: dict[str, Any] = {
        "name": entity.name,
        "type": entity.type,
        "title": entity.title,
        "isVisible": visible_entity,
        "public": visible_entity,
    }
    _put(body, "description", entity.description)
    if entity.view_groups:
        body["viewGroups"] = list(entity.view_groups)
    _put(body, "connectedComponent", model.connected_components.get(entity.name))
    _put(body, "meta", entity.meta)

    def shown(m):
        return visible_entity and m.display.public

    body["measures"] = [member_json(model, m) for m in entity.measures.values() if shown(m)]
    body["dimensions"] = [member_json(model, m) for m in entity.dimensions.values() if shown(m)]
    body["segments"] = [member_json(model, m) for m in entity.segments.values() if shown(m)]
    visible = {m["name"] for m in _members(body)}
    body["hierarchies"] = [_hierarchy_json(entity, h) for h in entity.hierarchies if set(h.levels) & visible]
    flat: list[dict[str, Any]] = []
    nested = [_folder_json(f, visible, flat, root=True) for f in entity.folders]
    body["folders"] = flat
    body["nestedFolders"] = nested
    return body


def _put(body: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        body[key] = value


def _measure_json(model: CompiledModel, measure: Measure) -> dict[str, Any]:
    display = measure.display
    member_type = value_type(measure)
    shown_format = measure_format(measure.format)
    body: dict[str, Any] = {"name": measure.full_name, "title": display.title}
    _put(body, "description", display.description)
    body["shortTitle"] = display.short_title
    _put(body, "format", shown_format)
    _put(
        body,
        "formatDescription",
        format_description(shown_format, member_type, is_measure=True, currency=measure.currency),
    )
    _put(body, "currency", measure.currency)
    cumulative = measure.rolling_window is not None
    body["cumulativeTotal"] = cumulative
    body["cumulative"] = cumulative
    body["type"] = member_type
    body["aggType"] = _CALCULATED_AGG_TYPES.get(measure.type, measure.type)
    drill = list(measure.drill_members)
    body["drillMembers"] = drill
    body["drillMembersGrouped"] = {
        "measures": [d for d in drill if getattr(model.members.get(d), "kind", None) == "measure"],
        "dimensions": [d for d in drill if getattr(model.members.get(d), "kind", None) == "dimension"],
    }
    _put(body, "aliasMember", measure.alias_member)
    _put(body, "meta", display.meta)
    body["isVisible"] = True
    body["public"] = True
    return body


def _dimension_json(dimension: Dimension) -> dict[str, Any]:
    display = dimension.display
    shown_format = dimension_format(dimension.format, dimension.type)
    body: dict[str, Any] = {"name": dimension.full_name, "title": display.title, "type": dimension.type}
    _put(body, "description", display.description)
    body["shortTitle"] = display.short_title
    body["suggestFilterValues"] = dimension.suggest_filter_values
    _put(body, "format", shown_format)
    _put(
        body,
        "formatDescription",
        format_description(shown_format, dimension.type, is_measure=False, currency=dimension.currency),
    )
    _put(body, "currency", dimension.currency)
    _put(body, "meta", display.meta)
    body["isVisible"] = True
    body["public"] = True
    body["primaryKey"] = dimension.primary_key
    _put(body, "aliasMember", dimension.alias_member)
    if dimension.granularities:
        body["granularities"] = [
            {
                key: value
                for key, value in (
                    ("name", g.name),
                    ("title", g.title or titleize(g.name)),
                    ("interval", g.interval.text),
                    ("offset", g.offset_text),
                    ("origin", g.origin),
                )
                if value is not None
            }
            for g in dimension.granularities.values()
        ]
    _put(body, "order", dimension.order)
    _put(body, "key", dimension.key)
    return body


def _segment_json(segment: Segment) -> dict[str, Any]:
    display = segment.display
    body: dict[str, Any] = {"name": segment.full_name, "title": display.title, "shortTitle": display.short_title}
    _put(body, "description", display.description)
    _put(body, "meta", display.meta)
    body["isVisible"] = True
    body["public"] = True
    return body


def _hierarchy_json(entity: Entity, hierarchy: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": f"{entity.name}.{hierarchy.name}"}
    _put(body, "title", hierarchy.title)
    body["levels"] = list(hierarchy.levels)
    _put(body, "aliasMember", hierarchy.alias_member)
    body["public"] = hierarchy.public
    return body


def _folder_json(folder: Folder, visible: set[str], flat: list[dict[str, Any]], *, root: bool) -> dict[str, Any]:
    """The nested folder; root folders also append their flattened members to ``flat`` (Cube's rule)."""
    collected: list[str] = []
    nested: list[Any] = []
    for item in folder.members:
        if isinstance(item, Folder):
            child = _folder_json(item, visible, flat, root=False)
            collected.extend(child.pop("_flat"))
            nested.append(child)
        elif item in visible:
            collected.append(item)
            nested.append(item)
    result: dict[str, Any] = {"name": folder.name, "members": nested}
    if root:
        flat.append({"name": folder.name, "members": list(dict.fromkeys(collected))})
    else:
        result["_flat"] = collected
    return result
