"""Compile a model directory's files into a :class:`CompiledModel`.

Order of work: parse every file (the JavaScript files together, in a sandbox: :mod:`.js_models`, giving the
same documents as YAML); collect cube and view definitions (names unique across both);
resolve ``extends``; learn every cube's member names (so references can be resolved in any order);
compile cubes, then views; check the join graph. Every fault is collected, and a model with any fault
raises one :class:`ModelError` listing them all (the first names ``file:line: member: message``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from embedadmin.semantic.errors import ModelError, ModelProblem
from embedadmin.semantic.modeling.context_variables import ContextVariableError, substitute_compile_context
from embedadmin.semantic.modeling.definitions import (
    DESCRIPTIVE_KEYS,
    NAME_PATTERN,
    Abort,
    Definition,
    Problems,
    definition_name,
    visibility,
)
from embedadmin.semantic.modeling.dependencies import member_snippets
from embedadmin.semantic.modeling.files import (
    ModelFile,
    YamlList,
    YamlMap,
    compile_context,
    content_hash,
    parse_model_file,
    template_environment,
)
from embedadmin.semantic.modeling.joins import connected_components, join_problems
from embedadmin.semantic.modeling.js_models import DEFAULT_LIMITS, SandboxLimits, is_javascript, javascript_documents
from embedadmin.semantic.modeling.members import CubeScope, compile_dimension, compile_measure, compile_segment
from embedadmin.semantic.modeling.model import (
    CompiledModel,
    CompilerError,
    CubeReference,
    CubeSqlReference,
    Dimension,
    Entity,
    Hierarchy,
    Join,
    Measure,
    Member,
    MemberReference,
    RefreshKey,
    Segment,
    SourceLocation,
)
from embedadmin.semantic.modeling.policies import compile_policies
from embedadmin.semantic.modeling.preaggregations import compile_pre_aggregations, rollup_lambda_problems
from embedadmin.semantic.modeling.references import SnippetError, SnippetScope, parse_snippet
from embedadmin.semantic.modeling.titles import titleize
from embedadmin.semantic.modeling.views import RAW_MEMBER_SECTIONS, OwnMembers, compile_view, folder_tree

CUBE_KEYS = DESCRIPTIVE_KEYS | {
    "sql_table",
    "sql",
    "sql_alias",
    "data_source",
    "extends",
    "refresh_key",
    "calendar",
    "joins",
    "measures",
    "dimensions",
    "segments",
    "hierarchies",
    "pre_aggregations",
    "access_policy",
    "folders",
    "rewrite_queries",
}
JOIN_KEYS = frozenset({"name", "sql", "relationship"})
HIERARCHY_KEYS = frozenset({"name", "title", "levels", "public"})
RELATIONSHIPS = {
    **dict.fromkeys(("belongs_to", "belongsTo", "many_to_one", "manyToOne"), "belongsTo"),
    **dict.fromkeys(("has_many", "hasMany", "one_to_many", "oneToMany"), "hasMany"),
    **dict.fromkeys(("has_one", "hasOne", "one_to_one", "oneToOne"), "hasOne"),
}
_SECTIONS = ("measures", "dimensions", "segments", "joins", "hierarchies", "pre_aggregations")
# What a child of ``extends`` has as its parent's list followed by its own (Cube's CubeSymbols).
_CONCATENATED = frozenset({"access_policy", "cubes", "folders"})


@dataclass
class RawCube:
    """A cube definition before compilation; member items keep the file they were written in."""

    definition: Definition
    items: dict[str, list[tuple[Any, str]]] = field(default_factory=dict)


def compile_model(
    files: list[ModelFile],
    *,
    root: Path,
    dialect: str,
    js_limits: SandboxLimits = DEFAULT_LIMITS,
    security_context: Mapping[str, Any] | None = None,
    partial: bool = False,
) -> CompiledModel:
    """Compile ``files`` for ``dialect`` (the data source's: :mod:`.dialects`); raises ModelError on any fault.

    ``partial`` (a deployment's "load what compiles"): a cube or view with a fault is left out instead, with every
    cube and view that uses it (a join to it is left out of the cube that declares it), and the model lists them
    in ``compiler_errors``; ModelError only when nothing compiles."""
    problems = Problems()
    left_out = _LeftOut(problems, partial)
    # COMPILE_CONTEXT: the compile key's fields (registry.compile_key checked their values), or none.
    context = compile_context(security_context)
    env = template_environment(root, context)
    cubes: dict[str, RawCube] = {}
    views: dict[str, Definition] = {}
    order: list[str] = []
    scripts = [f for f in files if is_javascript(f)]
    documents: dict[str, YamlMap] = {}
    if scripts:
        documents, script_problems = javascript_documents(scripts, compile_context=context, limits=js_limits)
        problems.items.extend(script_problems)
    for model_file in files:
        try:
            document = (
                documents.get(model_file.display) if is_javascript(model_file) else parse_model_file(model_file, env)
            )
        except ModelError as exc:
            if not partial:
                raise
            problems.items.extend(exc.problems)
            continue
        for kind, definition in _definitions(document, model_file.display, problems):
            try:
                name = definition_name(definition, "cube" if kind == "cubes" else "view")
            except Abort:
                continue
            if name in cubes or name in views:
                definition.error(f'a cube or view named "{name}" is already defined', "name")
                left_out.names.add(name)  # both are (which one was meant is not known)
                continue
            order.append(name)
            if kind == "cubes":
                cubes[name] = RawCube(definition)
            else:
                views[name] = definition
    left_out.settle(cubes, views)
    _resolve_extends(cubes, views)
    _resolve_view_extends(views, cubes)
    left_out.settle(cubes, views)
    scope_members, scope_grains = _member_names(cubes, problems)
    left_out.settle(cubes, views)
    compiled: dict[str, Entity] = {}
    for name, raw in cubes.items():
        scope = SnippetScope(cube=name, members=scope_members, time_granularities=scope_grains, compile_context=context)
        try:
            compiled[name] = _compile_cube(raw, scope, dialect, problems)
        except Abort:
            continue
    left_out.settle(cubes, compiled, views)
    left_out.dependents(compiled)
    joins = _join_graph(compiled)
    for location, member_name, message in join_problems(compiled, joins):
        problems.add(location, member_name, message)
    for name, raw in cubes.items():
        if name in compiled:  # members of joined cubes may be named, so once every cube is compiled
            items = raw.items.get("pre_aggregations", [])
            compiled[name].pre_aggregations = compile_pre_aggregations(name, items, raw.definition, compiled)
    for location, member_name, message in rollup_lambda_problems(compiled):  # a lambda may name another cube's
        problems.add(location, member_name, message)
    if left_out.settle(cubes, compiled, views):
        left_out.dependents(compiled)
        joins = _join_graph(compiled)
    own_members = _view_members(scope_members, scope_grains, dialect, problems)
    for name, definition in views.items():
        if name in left_out.names or left_out.view_uses_left_out(name, definition):
            continue
        try:
            compiled[name] = compile_view(definition, compiled, problems, own_members)
        except Abort:
            continue
    left_out.settle(cubes, compiled, views)
    left_out.dependents(compiled)
    entities = {name: compiled[name] for name in order if name in compiled}
    if left_out.errors and not entities:
        raise ModelError([ModelProblem(e.file, e.line, e.member, e.message) for e in left_out.errors])
    members: dict[str, Member] = {}
    for entity in entities.values():
        for section in (entity.measures, entity.dimensions, entity.segments):
            for member in section.values():
                members[member.full_name] = member
    return CompiledModel(
        compiler_id=_compiler_id(files, security_context),
        dialect=dialect,
        entities=entities,
        members=members,
        joins=joins,
        connected_components=connected_components(entities, joins),
        compiler_errors=tuple(left_out.errors),
    )


def _join_graph(compiled: Mapping[str, Entity]) -> dict[str, dict[str, Join]]:
    """The joins the compiled cubes declare, by the declaring cube and then the joined one."""
    return {name: {join.target: join for join in entity.joins} for name, entity in compiled.items()}


_WHAT = re.compile(r"^\S+ (?:of (?:cube|view) )?([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class _LeftOut:
    """What a partial compile leaves out: the cubes and views with a fault (and those that use them), with the
    faults; without ``partial``, any fault raises."""

    problems: Problems
    partial: bool
    names: set[str] = field(default_factory=set)
    errors: list[CompilerError] = field(default_factory=list)

    def settle(self, *tables: dict[str, Any]) -> bool:
        """Raise on the problems found so far, or (partial) leave out the cubes and views they concern; whether
        any was."""
        if not self.partial:
            self.problems.raise_if_any()
            return False
        known = {name for table in tables for name in table}
        before = len(self.names)
        for problem in self.problems.items:
            match = _WHAT.match(problem.member)
            entity = match.group(1) if match and match.group(1) in known else None
            if entity is not None:
                self.names.add(entity)
            self.errors.append(CompilerError(entity, problem.file, problem.line, problem.member, problem.message))
        self.problems.items.clear()
        self.drop(*tables)
        return len(self.names) > before

    def drop(self, *tables: dict[str, Any]) -> None:
        for table in tables:
            for name in [n for n in table if n in self.names]:
                del table[name]

    def view_uses_left_out(self, name: str, definition: Definition) -> bool:
        """Whether a view's join paths name a cube left out (then it is, too)."""
        if not self.partial:
            return False
        cubes = definition.get("cubes")
        steps = [
            step.strip()
            for part in (cubes if isinstance(cubes, list) else [])
            if isinstance(part, dict)
            for step in str(part.get("join_path", "")).split(".")
        ]
        used = next((step for step in steps if step in self.names), None)
        if used is None:
            return False
        self.names.add(name)
        location = definition.location
        message = f'left out: it uses "{used}", which does not compile'
        self.errors.append(CompilerError(name, location.file, location.line, f"view {name}", message))
        return True

    def dependents(self, compiled: dict[str, Entity]) -> None:
        """Leave out what uses a cube or view left out (a join to one is dropped from the cube that declares it),
        until nothing more is."""
        if not self.partial:
            return
        changed = True
        while changed:
            changed = False
            for name, entity in list(compiled.items()):
                for join in [j for j in entity.joins if j.target in self.names]:
                    entity.joins = tuple(j for j in entity.joins if j is not join)
                    self.errors.append(
                        CompilerError(
                            name,
                            join.location.file,
                            join.location.line,
                            f"join {name}.{join.target}",
                            f'left out: cube "{join.target}" does not compile',
                        )
                    )
                used = sorted(_entities_used(entity) & self.names)
                if used:
                    self.names.add(name)
                    location = entity.location
                    kind = "view" if entity.is_view else "cube"
                    message = f'left out: it uses "{used[0]}", which does not compile'
                    self.errors.append(CompilerError(name, location.file, location.line, f"{kind} {name}", message))
                    changed = True
            self.drop(compiled)


def _entities_used(entity: Entity) -> set[str]:
    """The cubes and views an entity's members, SQL and views' paths name."""
    used: set[str] = set()
    snippets = [entity.sql] if entity.sql is not None else []
    for section in (entity.measures, entity.dimensions, entity.segments):
        for member in section.values():
            snippets.extend(member_snippets(member))
            if member.alias_member:
                used.add(member.alias_member.split(".", 1)[0])
            used.update(member.join_path)
            used.update(d.split(".", 1)[0] for d in getattr(member, "drill_members", ()))
    snippets.extend(j.sql for j in entity.joins)
    for snippet in snippets:
        for reference in snippet.refs.values():
            cube = getattr(reference, "cube", None)
            if isinstance(cube, str):
                used.add(cube)
            used.update(getattr(reference, "path", ()))
    used.discard(entity.name)
    return used


def _compiler_id(files: list[ModelFile], security_context: Mapping[str, Any] | None) -> str:
    """The model's ``compilerId``: its files' hash, and the compile key's fields when it has some (so that caches
    keyed by it never give one tenant's model or meta to another)."""
    content = content_hash(files)
    if not security_context:
        return content
    key = json.dumps(security_context, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{content}\0{key}".encode()).hexdigest()


def _definitions(document: Any, file: str, problems: Problems) -> Iterable[tuple[str, Definition]]:
    if document is None:
        return
    if not isinstance(document, YamlMap):
        problems.add(SourceLocation(file, 1), "", "a model file must be a mapping with cubes: and/or views:")
        return
    for key, items in document.items():
        location = SourceLocation(file, document.line_of(key))
        if key not in ("cubes", "views"):
            problems.add(location, "", f'unexpected key "{key}": only "cubes" and "views" are allowed')
            continue
        if items is None:
            continue
        if not isinstance(items, YamlList):
            problems.add(location, "", f"{key} must be a list")
            continue
        for item in items:
            if not isinstance(item, YamlMap):
                problems.add(
                    SourceLocation(file, getattr(item, "line", location.line)), "", f"each of {key} must be a mapping"
                )
                continue
            yield key, Definition(item, file, key[:-1], problems)


def _inherit(child: Definition, parent: Definition, *, skip: tuple[str, ...]) -> None:
    """Cube's ``extends`` for what is not a member: the parent's properties the child does not set; the child's
    own ``sql`` hides the parent's ``sql_table`` and the other way round; access policies (and a view's cubes
    and folders) are the parent's followed by the child's."""
    own = set(child.data)
    for key, value in parent.data.items():
        if key in skip or (key == "sql_table" and "sql" in own) or (key == "sql" and "sql_table" in own):
            continue
        if key in own and key in _CONCATENATED and isinstance(value, list) and isinstance(child.data[key], list):
            merged = YamlList([*value, *child.data[key]])
            merged.line = getattr(child.data[key], "line", 0)
            child.data[key] = merged
        elif key not in own:
            child.data[key] = value


def _extended(
    definition: Definition, kind: str, chain: tuple[str, ...], *, kin: Mapping[str, Any], others: Mapping[str, Any]
) -> str | None:
    """The name ``definition``'s ``extends`` gives, when it names one of ``kin`` (its own kind) outside ``chain``
    (the definitions extending down to it); None when it extends nothing, and None with the problem recorded when
    it names one of ``others`` (a cube extends cubes only, a view views only), nothing known, or a circle."""
    parent = definition.get("extends")
    if parent is None:
        return None
    parent = str(parent).strip("{} ")
    if parent not in kin:
        message = f"a {kind} can only extend a {kind}" if parent in others else f'extends unknown {kind} "{parent}"'
        definition.error(message, "extends")
    elif parent in chain:
        definition.error(f'circular extends through "{parent}"', "extends")
    else:
        return parent
    return None


def _resolve_view_extends(views: dict[str, Definition], cubes: dict[str, RawCube]) -> None:
    """A view extending a view: the parent's cubes, folders and policies, then its own; the rest inherited."""
    done: set[str] = set()

    def resolve(name: str, chain: tuple[str, ...]) -> None:
        if name in done:
            return
        done.add(name)
        definition = views[name]
        parent = _extended(definition, "view", chain, kin=views, others=cubes)
        if parent is not None:
            resolve(parent, (*chain, name))
            _inherit(definition, views[parent], skip=("name", "extends"))

    for name in views:
        resolve(name, (name,))


def _resolve_extends(cubes: dict[str, RawCube], views: Mapping[str, Definition]) -> None:
    """Give each cube its own and inherited member items (a child's item replaces a parent's of that name)."""
    resolved: dict[str, dict[str, list[tuple[Any, str]]]] = {}

    def resolve(name: str, chain: tuple[str, ...]) -> dict[str, list[tuple[Any, str]]]:
        if name in resolved:
            return resolved[name]
        raw = cubes[name]
        definition = raw.definition
        items: dict[str, list[tuple[Any, str]]] = {section: [] for section in _SECTIONS}
        parent = _extended(definition, "cube", chain, kin=cubes, others=views)
        if parent is not None:
            inherited = resolve(parent, (*chain, name))
            items = {section: list(values) for section, values in inherited.items()}
            _inherit(definition, cubes[parent].definition, skip=(*_SECTIONS, "name", "extends"))
        for section in _SECTIONS:
            own = definition.sequence(section) if isinstance(definition.get(section, []), list) else []
            own_names = {item.get("name") for item in own if isinstance(item, dict)}
            kept = [(item, file) for item, file in items[section] if item.get("name") not in own_names]
            items[section] = kept + [(item, definition.file) for item in own]
        resolved[name] = items
        return items

    for name, raw in cubes.items():
        try:
            raw.items = resolve(name, (name,))
        except Abort:
            raw.items = {section: [] for section in _SECTIONS}


def _member_names(
    cubes: dict[str, RawCube], problems: Problems
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, frozenset[str]]]]:
    """cube -> member -> kind, and cube -> time dimension -> custom granularity names."""
    members: dict[str, dict[str, str]] = {}
    grains: dict[str, dict[str, frozenset[str]]] = {}
    for name, raw in cubes.items():
        members[name] = {}
        grains[name] = {}
        for section, kind in RAW_MEMBER_SECTIONS.items():
            for item, file in raw.items.get(section, []):
                member = item.get("name") if isinstance(item, dict) else None
                if not isinstance(member, str):
                    continue
                if member in members[name]:
                    line = item.line if isinstance(item, YamlMap) else 0
                    problems.add(SourceLocation(file, line), f"{kind} {name}.{member}", "duplicate member name")
                    continue
                members[name][member] = kind
                if kind == "dimension" and item.get("type") == "time":
                    grains[name][member] = frozenset(
                        g["name"]
                        for g in item.get("granularities") or []
                        if isinstance(g, dict) and isinstance(g.get("name"), str)
                    )
    return members, grains


def _compile_cube(raw: RawCube, scope: SnippetScope, dialect: str, problems: Problems) -> Entity:
    definition = raw.definition
    name = scope.cube
    definition.check_keys(CUBE_KEYS)
    title = definition.string("title") or titleize(name)
    cube_scope = CubeScope(cube=name, cube_title=title, scope=scope, dialect=dialect, problems=problems)
    sql_table = definition.string("sql_table")
    if sql_table is not None:
        try:
            sql_table = substitute_compile_context(sql_table, scope.compile_context)
        except ContextVariableError as exc:
            raise definition.fail(str(exc), "sql_table") from None
    sql = definition.get("sql")
    if (sql_table is None) == (sql is None):
        raise definition.fail('a cube needs exactly one of "sql_table" or "sql"')
    table = None
    sql_snippet = None
    if sql_table is not None:
        try:
            table = exp.to_table(sql_table, dialect=dialect)
        except (SqlglotError, ValueError) as exc:
            raise definition.fail(f'invalid sql_table "{sql_table}": {exc}', "sql_table") from None
    else:
        sql_snippet = cube_scope.snippet(definition, "sql", sql, qualify=False)
    measures: dict[str, Measure] = {}
    dimensions: dict[str, Dimension] = {}
    segments: dict[str, Segment] = {}
    compilers: tuple[tuple[str, Callable[[Definition, CubeScope], Member], dict[str, Any]], ...] = (
        ("measures", compile_measure, measures),
        ("dimensions", compile_dimension, dimensions),
        ("segments", compile_segment, segments),
    )
    for section, compile_one, target in compilers:
        for item, file in raw.items.get(section, []):
            try:
                member_def = _item_definition(definition, item, file, section)
                member = compile_one(member_def, cube_scope)
                target[member.name] = member
            except Abort:
                continue
    joins = []
    for item, file in raw.items.get("joins", []):
        try:
            joins.append(_compile_join(_item_definition(definition, item, file, "joins"), scope, dialect))
        except Abort:
            continue
    hierarchies = []
    for item, file in raw.items.get("hierarchies", []):
        try:
            hierarchies.append(_compile_hierarchy(_item_definition(definition, item, file, "hierarchies"), cube_scope))
        except Abort:
            continue
    members = {**dict.fromkeys(measures, "measure"), **dict.fromkeys(dimensions, "dimension")}
    members.update(dict.fromkeys(segments, "segment"))
    refresh = definition.get("refresh_key")
    return Entity(
        name=name,
        is_view=False,
        title=title,
        description=definition.string("description"),
        public=visibility(definition, True),
        meta=definition.get("meta"),
        measures=measures,
        dimensions=dimensions,
        segments=segments,
        hierarchies=tuple(hierarchies),
        folders=folder_tree(definition, name, members, {}),
        access_policies=compile_policies(definition, name, members),
        location=definition.location,
        sql_table=sql_table,
        sql=sql_snippet,
        table=table,
        joins=tuple(joins),
        primary_keys=tuple(d.name for d in dimensions.values() if d.primary_key),
        data_source=definition.string("data_source") or "default",
        calendar=bool(definition.boolean("calendar", False)),
        refresh_key=RefreshKey(every=refresh.get("every"), sql=refresh.get("sql"))
        if isinstance(refresh, dict)
        else None,
    )


def _view_members(
    members: dict[str, dict[str, str]], grains: dict[str, dict[str, frozenset[str]]], dialect: str, problems: Problems
) -> OwnMembers:
    """What compiles a view's own members (Cube's legacy form): members whose SQL uses other cubes' members only
    (``{orders.count} / {users.count}``, a segment ``{orders.status} = 'paid'``), with Cube's refusals for a member
    that reads a table itself."""

    def compile_own(definition: Definition, title: str) -> list[Member]:
        view = str(definition.get("name"))
        scope = SnippetScope(cube=view, members={**members, view: {}}, time_granularities=grains)
        cube_scope = CubeScope(view, title, scope, dialect, problems, qualify=False)
        compilers: tuple[tuple[str, Callable[[Definition, CubeScope], Member]], ...] = (
            ("measures", compile_measure),
            ("dimensions", compile_dimension),
            ("segments", compile_segment),
        )
        result: list[Member] = []
        for section, compile_one in compilers:
            for item in definition.sequence(section):
                try:
                    member_definition = _item_definition(definition, item, definition.file, section)
                    member = compile_one(member_definition, cube_scope)
                except Abort:
                    continue
                references = [r for s in member_snippets(member) for r in s.refs.values()]
                tables = sorted({r.cube for r in references if isinstance(r, CubeReference | CubeSqlReference)})
                if tables:
                    member_definition.error(
                        f"Member '{member.full_name}' references foreign cubes: {', '.join(tables)}. Please split and "
                        "move this definition to corresponding cubes."
                    )
                elif not any(isinstance(r, MemberReference) for r in references):
                    member_definition.error(
                        f"View '{view}' defines own member '{member.full_name}'. Please move this member definition "
                        "to one of the cubes."
                    )
                else:
                    result.append(member)
        return result

    return compile_own


def _item_definition(owner: Definition, item: Any, file: str, section: str) -> Definition:
    if not isinstance(item, YamlMap):
        raise owner.fail(f"each item of {section} must be a mapping", section)
    return Definition(item, file, f"{section[:-1]} of {owner.what}", owner.problems)


def _compile_join(definition: Definition, scope: SnippetScope, dialect: str) -> Join:
    target = definition.string("name", required=True)
    assert target is not None
    definition.what = f"join {scope.cube}.{target}"
    definition.check_keys(JOIN_KEYS)
    if target not in scope.members:
        raise definition.fail(f'join to unknown cube "{target}"', "name")
    relationship = definition.string("relationship", required=True)
    if relationship not in RELATIONSHIPS:
        raise definition.fail(f'unknown relationship "{relationship}"', "relationship")
    if definition.get("sql") is None:
        raise definition.fail('"sql" is required')
    try:
        sql = parse_snippet(definition.get("sql"), scope, definition.location_of("sql"), dialect, qualify=False)
    except SnippetError as exc:
        raise definition.fail(str(exc), "sql") from None
    return Join(target=target, relationship=RELATIONSHIPS[relationship], sql=sql, location=definition.location)  # type: ignore[arg-type]


def _compile_hierarchy(definition: Definition, cube_scope: CubeScope) -> Hierarchy:
    name = definition_name(definition, "hierarchy", cube_scope.cube)
    definition.check_keys(HIERARCHY_KEYS)
    levels = tuple(
        cube_scope.member_path(definition, "levels", level, ("dimension",)) for level in definition.sequence("levels")
    )
    if not levels:
        raise definition.fail("a hierarchy needs levels", "levels")
    return Hierarchy(name=name, title=definition.string("title"), levels=levels, public=visibility(definition, True))


__all__ = ["NAME_PATTERN", "compile_model"]
