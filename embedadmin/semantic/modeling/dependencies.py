"""What a member's SQL reaches through ``{...}`` references: the cubes to join, and sub-query dimensions.

A ``sub_query`` dimension is computed in a subquery of its own (joined on its cube's primary key), so what
its SQL references is not joined into the query that uses it: the walk stops there and reports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from embedadmin.semantic.modeling.joins import JoinHint
from embedadmin.semantic.modeling.model import (
    CompiledModel,
    CubeReference,
    Dimension,
    Member,
    MemberReference,
    SqlSnippet,
)


@dataclass(frozen=True, slots=True)
class Dependencies:
    hints: tuple[JoinHint, ...] = ()
    sub_queries: tuple[Dimension, ...] = ()


def is_sub_query(member: Member) -> bool:
    return isinstance(member, Dimension) and member.sub_query


def member_dependencies(model: CompiledModel, member: Member) -> Dependencies:
    """Dependencies of using ``member`` (a cube member) in a query; cached per model."""
    cache: dict[str, Dependencies] = model.caches.setdefault("dependencies", {})
    found = cache.get(member.full_name)
    if found is None:
        own = Dependencies(sub_queries=(member,)) if is_sub_query(member) else None  # type: ignore[arg-type]
        found = own or snippet_dependencies(model, member)
        cache[member.full_name] = found
    return found


def cubes_read_through_view(model: CompiledModel, member: Member) -> tuple[str, ...]:
    """The cubes a view's member reads: the cube of the member it includes, or every cube the SQL of a member the
    view defines itself reaches (Cube's legacy form); none for a cube's member. Their row filters apply as to
    cubes reached through the view."""
    if not model.entities[member.entity].is_view:
        return ()
    if member.alias_member:
        return (model.members[member.alias_member].entity,)
    cubes: list[str] = []
    for hint in member_dependencies(model, member).hints:
        cubes.extend((hint,) if isinstance(hint, str) else hint)
    return tuple(dict.fromkeys(cubes))


def snippet_dependencies(model: CompiledModel, member: Member) -> Dependencies:
    """What ``member``'s own SQL needs, whatever kind of member it is."""
    hints: list[JoinHint] = []
    sub_queries: list[Dimension] = []
    _walk(model, member, set(), hints, sub_queries)
    unique_subs = {d.full_name: d for d in sub_queries}
    return Dependencies(tuple(dict.fromkeys(hints)), tuple(unique_subs.values()))


def _walk(model: CompiledModel, member: Member, seen: set[str], hints: list[JoinHint], subs: list[Dimension]) -> None:
    if member.full_name in seen:
        return
    seen.add(member.full_name)
    for snippet in member_snippets(member):
        for reference in snippet.refs.values():
            if isinstance(reference, CubeReference):
                if reference.cube != member.entity:
                    hints.append(reference.cube)
                continue
            if not isinstance(reference, MemberReference):
                continue
            hints.append(reference.path if len(reference.path) > 1 else reference.cube)
            target = model.entities[reference.cube].member(reference.member)
            if target is None:
                continue
            if is_sub_query(target):
                subs.append(target)  # type: ignore[arg-type]
            else:
                _walk(model, target, seen, hints, subs)


def member_snippets(member: Member) -> list[SqlSnippet]:
    """Every SQL snippet of a member: sql, geo parts, measure filters, case branches."""
    snippets: list[SqlSnippet] = []
    for attribute in ("sql", "latitude", "longitude"):
        value = getattr(member, attribute, None)
        if value is not None:
            snippets.append(value)
    snippets.extend(getattr(member, "filters", ()))
    case = getattr(member, "case", None)
    if case is not None:
        for when in case.when:
            snippets.append(when.sql)
            if isinstance(when.label, SqlSnippet):
                snippets.append(when.label)
        if isinstance(case.else_label, SqlSnippet):
            snippets.append(case.else_label)
    return snippets
