"""Compiling ``access_policy`` blocks of cubes and views (Cube's data access policies).

Everything that can be checked when the model compiles is: member names of ``member_level`` and of
row filters, operators, and the ``{ securityContext.x }`` expressions (parsed by a whitelist, see
:mod:`.expressions`). ``member_masking`` is refused: ignoring it would show real values where
the model asked for masked ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from embedadmin.semantic.modeling.definitions import Definition
from embedadmin.semantic.modeling.expressions import compile_expression, compile_template
from embedadmin.semantic.modeling.model import FILTER_OPERATORS, VALUELESS_OPERATORS, AccessPolicy, PolicyFilter

POLICY_KEYS = frozenset({"group", "groups", "role", "conditions", "member_level", "row_level"})
POLICY_UNSUPPORTED = frozenset({"member_masking"})


def compile_policies(owner: Definition, entity: str, members: Mapping[str, str]) -> tuple[AccessPolicy, ...] | None:
    """The entity's policies, or None when it declares none. ``members``: short name -> kind."""
    raw = owner.get("access_policy")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise owner.fail("access_policy must be a list", "access_policy")
    policies = []
    for index, item in enumerate(raw):
        policy = owner.child(item, f"access_policy[{index}] of {entity}", "access_policy")
        policies.append(_compile_policy(policy, entity, members))
    return tuple(policies)


def _compile_policy(policy: Definition, entity: str, members: Mapping[str, str]) -> AccessPolicy:
    policy.check_keys(POLICY_KEYS, POLICY_UNSUPPORTED)
    given = [key for key in ("group", "groups", "role") if policy.get(key) is not None]
    if len(given) > 1:
        raise policy.fail("use either group or groups, not both")
    groups = None
    if given:
        value = policy.get(given[0])
        groups = tuple(str(g) for g in (value if isinstance(value, list) else [value]))
    conditions = []
    for item in policy.sequence("conditions"):
        condition = policy.child(item, policy.what, "conditions")
        text = condition.get("if")
        if isinstance(text, bool):
            text = str(text)
        if not isinstance(text, str):
            raise condition.fail('each condition needs "if: <expression>"')
        try:
            conditions.append(compile_expression(text))
        except ValueError as exc:
            raise condition.fail(str(exc), "if") from None
    member_level = policy.get("member_level")
    includes: frozenset[str] | None = None
    excludes: frozenset[str] = frozenset()
    if member_level is not None:
        level = policy.child(member_level, policy.what, "member_level")
        level.check_keys(frozenset({"includes", "excludes"}))
        includes = _member_set(level, "includes", entity, members, default_all=True)
        excludes = _member_set(level, "excludes", entity, members, default_all=False) or frozenset()
        if excludes is None:  # excludes: "*"
            excludes = frozenset(members)
    row_filters: tuple[PolicyFilter, ...] = ()
    row_all = True
    if policy.get("row_level") is not None:
        row = policy.child(policy.get("row_level"), policy.what, "row_level")
        row.check_keys(frozenset({"filters", "allow_all"}))
        row_filters = tuple(_row_filter(row, item, entity, members) for item in row.sequence("filters"))
        row_all = bool(row.boolean("allow_all", False)) or not row_filters
        if row.boolean("allow_all", False) is False and not row_filters:
            raise row.fail("row_level needs filters or allow_all: true")
    return AccessPolicy(
        key=",".join(groups) if groups else "default",
        groups=groups,
        conditions=tuple(conditions),
        member_level=member_level is not None,
        member_includes=includes,
        member_excludes=excludes,
        row_filters=row_filters,
        row_level_all=row_all,
        location=policy.location,
    )


def _member_set(
    level: Definition, key: str, entity: str, members: Mapping[str, str], *, default_all: bool
) -> frozenset[str] | None:
    """Short member names; None means ``"*"`` (all members)."""
    value = level.get(key)
    if value is None:
        return None if default_all else frozenset()
    if value == "*":
        return None
    if not isinstance(value, list):
        raise level.fail(f'{key} must be "*" or a list of member names', key)
    names = []
    for item in value:
        name = _short_name(str(item), entity)
        if name not in members:
            raise level.fail(f'unknown member "{item}" in {key}', key)
        names.append(name)
    return frozenset(names)


def _short_name(name: str, entity: str) -> str:
    """``status``, ``orders.status``, ``{CUBE}.status`` or ``{CUBE.status}`` (as a JavaScript model writes it):
    the member's short name."""
    text = name.strip()
    if text.startswith("{") and text.endswith("}") and text.count("{") == 1:
        text = text[1:-1].strip()
    text = text.replace("{CUBE}", "CUBE", 1)
    for prefix in (f"{entity}.", "CUBE."):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def _row_filter(row: Definition, raw: Any, entity: str, members: Mapping[str, str]) -> PolicyFilter:
    item = row.child(raw, row.what, "filters")
    for group in ("and", "or"):
        if item.get(group) is not None:
            if len(item.data) != 1:
                raise item.fail(f"a filter with {group} may not have other keys")
            parts = tuple(_row_filter(item, sub, entity, members) for sub in item.sequence(group))
            return PolicyFilter(and_=parts) if group == "and" else PolicyFilter(or_=parts)
    item.check_keys(frozenset({"member", "dimension", "operator", "values"}))
    member = item.string("member") or item.string("dimension")
    if member is None:
        raise item.fail("row filter needs a member")
    name = _short_name(member, entity)
    if name not in members or members[name] == "segment":
        raise item.fail(f'unknown member "{member}" in row filter', "member")
    operator = item.string("operator", required=True)
    if operator not in FILTER_OPERATORS:
        raise item.fail(f'unknown operator "{operator}"', "operator")
    values = item.get("values")
    if values is None and operator not in VALUELESS_OPERATORS:
        raise item.fail(f'operator "{operator}" needs values', "values")
    if values is not None and not isinstance(values, list):
        values = [values]
    compiled: list[Any] = []
    for value in values or []:
        try:
            template = compile_template(value)
        except ValueError as exc:
            raise item.fail(str(exc), "values") from None
        compiled.append(template if template is not None else value)
    return PolicyFilter(
        member=f"{entity}.{name}",
        operator=operator,
        values=tuple(compiled) if values is not None else None,
    )
