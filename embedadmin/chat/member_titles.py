"""Members' titles as people read them, wherever the chat shows a member: ``serviceMeta``'s ``shortTitle`` (what the
built-in analyst writes in its answers, suggestions and "Computed:" sentences) and the titles of a ``serviceSqlApi``
result's columns (its table's headers and its chart's axes and tooltips).

A member reads as the model titles it, without its cube's or view's title (its ``shortTitle``: "Order value", not
"Sales Order value"). One kind of title the model does not write: a view member included with ``prefix: true`` whose
cube member has no title is named ``<cube>_<member>`` (``users_city``), and titled from that name ("Users City"),
as Cube does. It reads as its cube member ("City"), unless another member of the view already reads so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from embedadmin.chat.member_search import local_name, short_title
from embedadmin.semantic.modeling.titles import titleize


def reading_titles(members: Iterable[Mapping[str, Any]], *, cube_title: str) -> dict[str, str]:
    """The title each member of one cube or view (``/v1/meta`` member objects, as the caller sees them) reads as,
    by member name."""
    members = list(members)
    titles = {m["name"]: _own_title(m, cube_title) for m in members}
    candidates = {m["name"]: found for m in members if (found := _cube_member_title(m, titles[m["name"]]))}
    # A cube member's title is taken only when no other member reads, or would read, the same.
    said = Counter(title.lower() for title in (*titles.values(), *candidates.values()))
    for name, title in candidates.items():
        if said[title.lower()] == 1:
            titles[name] = title
    return titles


def _own_title(member: Mapping[str, Any], cube_title: str) -> str:
    """The model's short title of a member: ``shortTitle``, else its title without the cube's, else its name's."""
    given = member.get("shortTitle")
    if isinstance(given, str) and given:
        return given
    title = member.get("title")
    if isinstance(title, str) and title:
        return short_title(title, cube_title)
    return titleize(local_name(str(member["name"])))


def _cube_member_title(member: Mapping[str, Any], own: str) -> str:
    """For a view member titled from the name a cube's prefix gave it (``users_city``: "Users City"), its cube
    member's title ("City"); else ``""``."""
    alias = member.get("aliasMember")
    if not isinstance(alias, str) or "." not in alias:
        return ""
    cube, name = alias.split(".", 1)
    local = local_name(str(member["name"]))
    if local != f"{cube}_{name}" or own != titleize(local):
        return ""
    return titleize(name)
