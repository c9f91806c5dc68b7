"""How a member's title reads to a person: the one rule behind every place the product shows a member to someone
(a tile's columns, axes, legends and CSV headers, a control's label, the panel's report builder, dashboard editor and
"who can read what" page, the dashboard chat's answers, tables and charts).

A member reads as the model titles it, without its cube's or view's title: its short title ("Order value", not
"Sales Order value"). One kind of title the model does not write: a view member included with ``prefix: true`` whose
cube member has no title is named ``<cube>_<member>`` (``users_city``) and titled from that name ("Users City"), as
Cube does (``/v1/meta`` keeps that title, which Cube's clients read). It reads as its cube member ("City"), unless
another public member of the view already reads, or would read, so (then both keep the title that tells them apart).

Computed once per compiled model (its ``caches``); ``/v1/meta`` composed for display carries it per member as
``readingTitle`` (:func:`embedadmin.semantic.results.meta.meta` with ``readable=True``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from embedadmin.semantic.modeling.model import CompiledModel, Entity, Member
from embedadmin.semantic.modeling.titles import titleize

# The key ``/v1/meta`` composed for display gives each member's reading title under.
READING_TITLE = "readingTitle"


def reading_titles(model: CompiledModel) -> Mapping[str, str]:
    """The title each member of ``model`` reads as, by full name (``sales.users_city`` -> "City")."""
    found: dict[str, str] | None = model.caches.get("reading_titles")
    if found is None:
        found = {}
        for entity in model.entities.values():
            found.update(entity_reading_titles(entity))
        model.caches["reading_titles"] = found
    return found


def entity_reading_titles(entity: Entity) -> dict[str, str]:
    """The title each member of one cube or view reads as, by full name."""
    members: list[Member] = [*entity.measures.values(), *entity.dimensions.values(), *entity.segments.values()]
    titles = {m.full_name: m.display.short_title for m in members}
    candidates = {m.full_name: found for m in members if (found := _cube_member_title(m))}
    # What people may read of the entity: its public members' titles, and the cube members' titles they could take.
    said = Counter(
        title.lower()
        for m in members
        if m.display.public
        for title in (titles[m.full_name], candidates.get(m.full_name))
        if title
    )
    for member in members:
        candidate = candidates.get(member.full_name)
        if candidate is None:
            continue
        others = said[candidate.lower()] - (1 if member.display.public else 0)
        if others == 0:
            titles[member.full_name] = candidate
    return titles


def _cube_member_title(member: Member) -> str | None:
    """For a view member named and titled from the prefix a view gave it (``users_city``: "Users City", the cube
    member having no title of its own), its cube member's title ("City"); else None."""
    alias = member.alias_member
    if not alias or "." not in alias or member.display.own_title:
        return None
    cube, name = alias.split(".", 1)
    if member.name != f"{cube}_{name}":
        return None
    return titleize(name)
