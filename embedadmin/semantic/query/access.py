"""Access policies at request time: which entities and members a caller may see, which rows they may read.

A policy *matches* a caller when its group is ``"*"``, it names none, or it names one of the caller's groups,
and all its conditions are true. For an entity (cube or view) with policies:

- no matching policy: the entity is hidden from meta and any query touching it reads no rows (``1 = 0``);
- a member is visible when some matching policy grants it (``member_level`` includes minus excludes, or no
  ``member_level`` at all);
- rows: the union (OR) over matching policies of each policy's row filters (AND within a policy); a matching
  policy without ``row_level`` (or with ``allow_all``) lifts the restriction for that entity. Restrictions of
  different entities in one query are intersected (AND). Cube itself ORs filters of one group across entities,
  which can let one cube's policy widen another's; this is deliberately stricter.

A value a row filter needs but the caller's context lacks turns that filter into ``1 = 0``: never wider.
Conditions that cannot be evaluated are false.

An entity without policies is open to every caller, as in Cube, except to a caller who reads only what was granted
(``QueryContext.only_granted``: an embed viewer, docs/security.md): to them it is denied like an entity none of
whose policies match. This is the one decision every door asks (``/v1/meta``, ``/v1/load``, ``/v1/sql``,
``/v1/dry-run``, ``/v1/cubesql``, the embed pages and the chat tools all reach it through normalization, meta
and the SQL builder). A cube reached only *through* a view's members is judged as the view defines it: its own
policies still narrow its rows, but having none does not deny the view's query.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.modeling.expressions import ContextTemplate, MissingValue
from embedadmin.semantic.modeling.model import AccessPolicy, CompiledModel, Entity, PolicyFilter
from embedadmin.semantic.query.normalized import Contradiction, FilterCondition, FilterGroup, FilterNode

_NEGATED_OPERATORS = frozenset({"notEquals", "notIn", "notContains", "notStartsWith", "notEndsWith"})


@dataclass(frozen=True, slots=True)
class EntityAccess:
    """A caller's access to one entity."""

    governed: bool
    policies: tuple[AccessPolicy, ...]  # the matching ones

    @property
    def denied(self) -> bool:
        return self.governed and not self.policies

    def member_visible(self, name: str) -> bool:
        """Whether the member (short name) is granted by some matching policy."""
        if not self.governed:
            return True
        for policy in self.policies:
            if not policy.member_level:
                return True
            included = policy.member_includes is None or name in policy.member_includes
            if included and name not in policy.member_excludes:
                return True
        return False


_OPEN = EntityAccess(governed=False, policies=())


_UNGRANTED = EntityAccess(governed=True, policies=())


def entity_access(entity: Entity, ctx: QueryContext, *, through_view: bool = False) -> EntityAccess:
    """The caller's access to ``entity``; ``through_view`` when the query reaches it only as the origin of a
    view's members (then an entity without policies does not deny, whoever asks)."""
    if entity.access_policies is None:
        return _UNGRANTED if ctx.only_granted and not through_view else _OPEN
    return EntityAccess(governed=True, policies=tuple(p for p in entity.access_policies if _matches(p, ctx)))


def _matches(policy: AccessPolicy, ctx: QueryContext) -> bool:
    if policy.groups is not None and "*" not in policy.groups and not set(policy.groups) & set(ctx.groups or ()):
        return False
    for condition in policy.conditions:
        try:
            if not condition.evaluate(ctx.env):
                return False
        except MissingValue:
            return False
    return True


def row_restriction(
    model: CompiledModel, entities: Iterable[str], ctx: QueryContext, *, through_views: Iterable[str] = ()
) -> list[FilterNode]:
    """Filters to AND into a query reading ``entities`` (cubes and views it names) and ``through_views`` (cubes it
    reaches only as origins of view members); empty when unrestricted."""
    restrictions: list[FilterNode] = []
    named = dict.fromkeys(entities)
    reached = [(name, True) for name in dict.fromkeys(through_views) if name not in named]
    for name, through_view in [*((name, False) for name in named), *reached]:
        access = entity_access(model.entities[name], ctx, through_view=through_view)
        if not access.governed:
            continue
        if access.denied:
            return [Contradiction(f"access to {name} denied")]
        if any(p.row_level_all for p in access.policies):
            continue
        alternatives = [_all_of(resolve_filter(f, ctx) for f in p.row_filters) for p in access.policies]
        restrictions.append(alternatives[0] if len(alternatives) == 1 else FilterGroup("or", tuple(alternatives)))
    return restrictions


def _all_of(nodes: Iterable[FilterNode]) -> FilterNode:
    items = tuple(nodes)
    return items[0] if len(items) == 1 else FilterGroup("and", items)


def resolve_filter(policy_filter: PolicyFilter, ctx: QueryContext) -> FilterNode:
    """A policy row filter with ``{ securityContext.x }`` values filled in from ``ctx``."""
    if policy_filter.and_ is not None:
        return FilterGroup("and", tuple(resolve_filter(f, ctx) for f in policy_filter.and_))
    if policy_filter.or_ is not None:
        return FilterGroup("or", tuple(resolve_filter(f, ctx) for f in policy_filter.or_))
    assert policy_filter.member is not None
    assert policy_filter.operator is not None
    if policy_filter.values is None:
        return FilterCondition(policy_filter.member, policy_filter.operator, None)
    values: list[str | None] = []
    for value in policy_filter.values:
        try:
            values.extend(_expand(value, ctx))
        except MissingValue:
            return Contradiction(f"{policy_filter.member}: security context value missing")
    if not values and policy_filter.operator not in _NEGATED_OPERATORS:
        return Contradiction(f"{policy_filter.member}: no values")
    if not values:
        return FilterGroup("and", ())
    return FilterCondition(policy_filter.member, policy_filter.operator, tuple(values))


def _expand(value: object, ctx: QueryContext) -> list[str | None]:
    if isinstance(value, ContextTemplate):
        value = value.evaluate(ctx.env)
    items = value if isinstance(value, list | tuple) else [value]
    return [stringify(item) for item in items]


def stringify(value: object) -> str | None:
    """Cube's ``value.toString()`` for filter values: booleans lowercase, None kept."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
