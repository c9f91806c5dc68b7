"""Who can read what: every cube and view of a model as one caller may read it (the Platform API's
``GET /api/v1/deployments/{id}/access`` and the panel's access page).

Nothing here decides access: each entity is asked of :func:`~embedadmin.semantic.query.access.entity_access` and
its rows of :func:`~embedadmin.semantic.query.access.row_restriction`, exactly as ``/v1/meta`` and the SQL builder
ask them, so the listing cannot disagree with what the caller's token reads. What this adds is the denied entities
too, each with the reason, and the row filters with the caller's values filled in.

An entity's members are those ``/v1/meta`` would list for the caller: public ones its matching policies grant. Its
row filters are those a query of all these members gets: the entity's own and, for a view, those of the cubes
behind its members that carry policies of their own (``through_views``), ANDed.
"""

from __future__ import annotations

from dataclasses import dataclass

from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.modeling.dependencies import cubes_read_through_view
from embedadmin.semantic.modeling.model import CompiledModel, Entity, Member
from embedadmin.semantic.modeling.reading_titles import reading_titles
from embedadmin.semantic.query.access import entity_access, row_restriction
from embedadmin.semantic.query.normalized import FilterNode
from embedadmin.semantic.sql.columns import filter_leaves

NOT_PUBLIC = "not public in the model: no caller reads it directly"
NO_PUBLIC_MEMBERS = "none of its members is public in the model"
CLOSED_WITHOUT_POLICY = "no access policy: closed to embed viewers"
OPEN_WITHOUT_POLICY = "no access policy: open to this viewer"
NO_GROUP_MATCH = "no policy matches the viewer's groups"
NO_MATCH = "no policy matches the viewer's groups and conditions"
NO_MEMBERS_GRANTED = "its matching policies grant none of its members"


@dataclass(frozen=True, slots=True)
class MemberGrant:
    """A member the caller may read."""

    name: str  # full name, "sales.status"
    title: str  # as /v1/meta shows it, "Sales Status"
    reading_title: str  # as a person reads it: "Status", "City" for users_city (modeling/reading_titles.py)
    kind: str  # measure, dimension or segment


@dataclass(frozen=True, slots=True)
class EntityGrant:
    """One cube or view as the caller may read it. ``reason`` says why it is denied, or why it is open without a
    policy; ``row_filters`` are ANDed (each may be an and/or tree, or a condition no row meets)."""

    name: str
    title: str
    type: str  # cube or view
    granted: bool
    reason: str | None
    members: tuple[MemberGrant, ...]
    row_filters: tuple[FilterNode, ...]
    filter_members: tuple[MemberGrant, ...] = ()  # the members the row filters name, for their titles

    @property
    def all_rows(self) -> bool:
        """Whether the caller reads every row of it."""
        return self.granted and not self.row_filters


def entity_grants(model: CompiledModel, ctx: QueryContext) -> list[EntityGrant]:
    """Every cube and view of ``model``, in model order, as ``ctx`` may read it."""
    return [_grant(model, entity, ctx) for entity in model.entities.values()]


def _grant(model: CompiledModel, entity: Entity, ctx: QueryContext) -> EntityGrant:
    if not entity.public:
        return _denied(entity, NOT_PUBLIC)
    members: list[Member] = [*entity.measures.values(), *entity.dimensions.values(), *entity.segments.values()]
    public = [m for m in members if m.display.public]
    if not public:
        return _denied(entity, NO_PUBLIC_MEMBERS)
    access = entity_access(entity, ctx)
    if access.denied:
        return _denied(entity, _denial(entity))
    granted = [m for m in public if access.member_visible(m.name)]
    if not granted:
        return _denied(entity, NO_MEMBERS_GRANTED)
    reached = [cube for m in granted for cube in cubes_read_through_view(model, m)]
    row_filters = tuple(row_restriction(model, [entity.name], ctx, through_views=reached))
    named = dict.fromkeys(leaf.member for node in row_filters for leaf in filter_leaves(node))
    return EntityGrant(
        name=entity.name,
        title=entity.title,
        type=entity.type,
        granted=True,
        reason=None if access.governed else OPEN_WITHOUT_POLICY,
        members=tuple(_member(model, m) for m in granted),
        row_filters=row_filters,
        filter_members=tuple(_member(model, model.members[name]) for name in named if name in model.members),
    )


def _denial(entity: Entity) -> str:
    if entity.access_policies is None:  # denied only to a caller who reads what was granted
        return CLOSED_WITHOUT_POLICY
    # Which part of a policy failed is not re-evaluated here (entity_access is the one evaluator): the reason
    # names conditions only when some policy has them.
    return NO_MATCH if any(p.conditions for p in entity.access_policies) else NO_GROUP_MATCH


def _denied(entity: Entity, reason: str) -> EntityGrant:
    return EntityGrant(
        name=entity.name,
        title=entity.title,
        type=entity.type,
        granted=False,
        reason=reason,
        members=(),
        row_filters=(),
    )


def _member(model: CompiledModel, member: Member) -> MemberGrant:
    return MemberGrant(
        name=member.full_name,
        title=member.display.title,
        reading_title=reading_titles(model)[member.full_name],
        kind=member.kind,
    )
