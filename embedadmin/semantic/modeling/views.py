"""Compiling views: members included from cubes along join paths, folders, hierarchies.

A view member is a copy of a cube member renamed into the view (``prefix``/``alias``), carrying
``alias_member`` (the cube member it stands for) and ``join_path`` (cubes from the view's root to it).
Like Cube, a view does not carry primary keys or visibility over: an included member is public in the view (the
view itself may be hidden), even a primary key or a member its cube marks ``public: false`` (Cube 1.7.43's
``generateIncludeMembers`` copies neither; its ``/v1/meta`` lists them in the view).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from embedadmin.semantic.modeling.definitions import DESCRIPTIVE_KEYS, Definition, Problems, visibility
from embedadmin.semantic.modeling.model import (
    Dimension,
    Entity,
    Folder,
    Hierarchy,
    Measure,
    Member,
    MemberDisplay,
    Segment,
)
from embedadmin.semantic.modeling.policies import compile_policies
from embedadmin.semantic.modeling.titles import titleize

RAW_MEMBER_SECTIONS = {"measures": "measure", "dimensions": "dimension", "segments": "segment"}
VIEW_KEYS = DESCRIPTIVE_KEYS | {"cubes", "folders", "access_policy", "view_group", "view_groups", "extends"}
VIEW_KEYS |= RAW_MEMBER_SECTIONS.keys()
VIEW_UNSUPPORTED = frozenset({"includes", "excludes"})
VIEW_CUBE_KEYS = frozenset({"join_path", "includes", "excludes", "prefix", "alias", "split"})
INCLUDE_KEYS = frozenset({"name", "alias", "title", "description", "format", "meta"})


# Compiles a view's own members: (view definition, view title) -> members.
OwnMembers = Callable[[Definition, str], list[Member]]


@dataclasses.dataclass
class _Included:
    member: Member
    name: str
    path: tuple[str, ...]
    overrides: dict[str, Any]


def compile_view(
    definition: Definition,
    cubes: Mapping[str, Entity],
    problems: Problems,
    own_members: OwnMembers | None = None,
) -> Entity:
    """A view. ``own_members`` compiles what the view defines itself (Cube's legacy ``measures``/``dimensions``/
    ``segments`` of a view, which may only use other cubes' members)."""
    name = str(definition.get("name"))
    definition.check_keys(VIEW_KEYS, VIEW_UNSUPPORTED)
    title = definition.string("title") or titleize(name)
    included: list[_Included] = []
    hierarchies: list[Hierarchy] = []
    by_path: dict[str, list[str]] = {}
    for raw in definition.sequence("cubes"):
        part = definition.child(raw, definition.what, "cubes")
        part.check_keys(VIEW_CUBE_KEYS)
        path = _join_path(part, cubes)
        cube = cubes[path[-1]]
        prefix = f"{part.string('alias') or path[-1]}_" if part.boolean("prefix", False) else ""
        chosen = _chosen_members(part, cube)
        excluded = {str(x) for x in part.sequence("excludes")}
        for member_name, overrides in chosen:
            if member_name in excluded:
                continue
            member = cube.member(member_name)
            if member is None:
                if not any(h.name == member_name for h in cube.hierarchies):
                    part.error(f'"{member_name}" is not a member of {cube.name}', "includes")
                continue
            view_name = prefix + str(overrides.get("alias") or member_name)
            # Cube includes a member once per (join path, member, name): the same include written twice is one.
            if any(i.path == path and i.member is member and i.name == view_name for i in included):
                continue
            included.append(_Included(member, view_name, path, overrides))
            by_path.setdefault(".".join(path), []).append(view_name)
        hierarchies.extend(_hierarchies(part, cube, prefix, name, included))
    seen: set[str] = set()
    for item in included:
        if item.name in seen:
            definition.error(f'member "{item.name}" is included twice; use prefix or alias', "cubes")
        seen.add(item.name)
    renamed = {item.member.full_name: f"{name}.{item.name}" for item in reversed(included)}
    view_public = visibility(definition, True)
    members = [_copy_member(item, name, title, renamed) for item in included]
    for member in own_members(definition, title) if own_members is not None else ():
        if member.name in seen:
            definition.error(f'member "{member.name}" is both included and defined by the view', "cubes")
            continue
        seen.add(member.name)
        members.append(member)
    kinds = {m.name: m.kind for m in members}
    groups = definition.get("view_groups") or ([definition.get("view_group")] if definition.get("view_group") else [])
    return Entity(
        name=name,
        is_view=True,
        title=title,
        description=definition.string("description"),
        public=view_public,
        meta=definition.get("meta"),
        measures={m.name: m for m in members if isinstance(m, Measure)},
        dimensions={m.name: m for m in members if isinstance(m, Dimension)},
        segments={m.name: m for m in members if isinstance(m, Segment)},
        hierarchies=tuple(h for h in hierarchies if h.levels),
        folders=folder_tree(definition, name, kinds, by_path),
        access_policies=compile_policies(definition, name, kinds),
        location=definition.location,
        view_groups=tuple(str(g) for g in groups),
    )


def _join_path(part: Definition, cubes: Mapping[str, Entity]) -> tuple[str, ...]:
    """The cubes of ``join_path``. As in Cube, only the cube names are checked here: whether the joins between them
    exist is a question of the queries that use the view's members (a query that needs a join no cube declares,
    in that direction, is refused with "Can't find join path", as Cube refuses it)."""
    text = part.string("join_path", required=True) or ""
    path = tuple(step.strip() for step in text.split("."))
    for step in path:
        if step not in cubes:
            raise part.fail(f'join_path "{text}": unknown cube "{step}"', "join_path")
    return path


def _chosen_members(part: Definition, cube: Entity) -> list[tuple[str, dict[str, Any]]]:
    includes = part.get("includes")
    if includes == "*":
        names = [*cube.measures, *cube.dimensions, *cube.segments]
        return [(n, {}) for n in names]
    if not isinstance(includes, list):
        raise part.fail('includes must be "*" or a list', "includes")
    chosen = []
    for item in includes:
        if isinstance(item, dict):
            entry = part.child(item, part.what, "includes")
            entry.check_keys(INCLUDE_KEYS)
            chosen.append((str(entry.string("name", required=True)), dict(entry.data)))
        else:
            chosen.append((str(item), {}))
    return chosen


def _hierarchies(part: Definition, cube: Entity, prefix: str, view: str, included: list[_Included]) -> list[Hierarchy]:
    includes = part.get("includes")
    wanted = (
        {str(i.get("name") if isinstance(i, dict) else i) for i in includes} if isinstance(includes, list) else None
    )
    renamed = {i.member.full_name: f"{view}.{i.name}" for i in included}
    result = []
    for hierarchy in cube.hierarchies:
        if wanted is not None and hierarchy.name not in wanted:
            continue
        levels = tuple(renamed[level] for level in hierarchy.levels if level in renamed)
        result.append(
            Hierarchy(
                name=prefix + hierarchy.name,
                title=hierarchy.title,
                levels=levels,
                public=hierarchy.public,
                alias_member=f"{cube.name}.{hierarchy.name}",
            )
        )
    return result


def _copy_member(item: _Included, view: str, view_title: str, renamed: Mapping[str, str]) -> Member:
    member, overrides = item.member, item.overrides
    own = member.display
    own_title = overrides.get("title") or own.own_title
    short = own_title or titleize(item.name)
    display = MemberDisplay(
        title=f"{view_title} {short}",
        short_title=short,
        description=overrides.get("description", own.description),
        meta=overrides.get("meta", own.meta),
        public=True,
        own_title=own_title,
        own_public=own.own_public,
    )
    changes: dict[str, Any] = {
        "name": item.name,
        "entity": view,
        "display": display,
        "alias_member": member.full_name,
        "join_path": item.path,
    }
    if "format" in overrides and not isinstance(member, Segment):
        changes["format"] = overrides["format"]
    if isinstance(member, Measure):
        changes["drill_members"] = tuple(renamed[d] for d in member.drill_members if d in renamed)
    if isinstance(member, Dimension):
        changes["primary_key"] = False
        changes["key"] = renamed.get(member.key) if member.key else None
    return dataclasses.replace(member, **changes)


def folder_tree(
    definition: Definition, entity: str, members: Mapping[str, str], by_path: Mapping[str, list[str]]
) -> tuple[Folder, ...]:
    """``folders`` of a cube or view: member names, ``{join_path: x}`` (views) and nested folders."""
    return tuple(
        _folder(definition.child(raw, definition.what, "folders"), entity, members, by_path)
        for raw in definition.sequence("folders")
    )


def _folder(folder: Definition, entity: str, members: Mapping[str, str], by_path: Mapping[str, list[str]]) -> Folder:
    folder.check_keys(frozenset({"name", "includes"}))
    name = folder.string("name", required=True) or ""
    items: list[str | Folder] = []
    for raw in folder.sequence("includes"):
        if isinstance(raw, dict) and "join_path" in raw:
            path = str(raw["join_path"])
            if path not in by_path:
                folder.error(f'folder "{name}": no members included from join_path "{path}"', "includes")
            items.extend(f"{entity}.{n}" for n in by_path.get(path, []))
        elif isinstance(raw, dict):
            items.append(_folder(folder.child(raw, folder.what, "includes"), entity, members, by_path))
        elif str(raw) in members:
            items.append(f"{entity}.{raw}")
        else:
            folder.error(f'folder "{name}": unknown member "{raw}"', "includes")
    return Folder(name=name, members=tuple(items))
