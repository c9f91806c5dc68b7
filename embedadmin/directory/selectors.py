"""Reads of the directory. Every function takes the account (or an object of it) it reads within."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Q

from embedadmin.accounts.models import Account
from embedadmin.core.errors import BadRequest, NotFound
from embedadmin.directory.models import AttributeDefinition, AttributeValue, EmbedTenant, ExternalUser, Group
from embedadmin.directory.services import default_value_parse


def attribute_definitions_resolve(
    *, account: Account, embed_tenant: EmbedTenant | None, names: Sequence[str]
) -> dict[str, AttributeDefinition]:
    """The definitions named, all of which must exist in the scope (``User attributes not found``)."""
    found = {
        d.name: d
        for d in AttributeDefinition.objects.filter(account=account, embed_tenant=embed_tenant, name__in=names)
    }
    missing = [n for n in dict.fromkeys(names) if n not in found]
    if missing:
        raise BadRequest(f"User attributes not found: {', '.join(missing)}")
    return found


def groups_resolve(*, account: Account, embed_tenant: EmbedTenant | None, names: Sequence[str]) -> list[Group]:
    """The groups named, all of which must exist in the scope (``Groups with names ... not found``)."""
    unique_names = list(dict.fromkeys(names))
    found = {g.name: g for g in Group.objects.filter(account=account, embed_tenant=embed_tenant, name__in=unique_names)}
    missing = [n for n in unique_names if n not in found]
    if missing:
        raise BadRequest(f"Groups with names {', '.join(missing)} not found")
    return [found[n] for n in unique_names]


def external_user_claims(*, user: ExternalUser, embed_tenant: EmbedTenant | None) -> tuple[list[str], dict[str, Any]]:
    """The group names and attribute values (defaults filled in) of a user in one scope."""
    scope = Q(embed_tenant=embed_tenant) if embed_tenant is not None else Q(embed_tenant__isnull=True)
    groups = sorted(Group.objects.filter(scope, memberships__user=user).values_list("name", flat=True))
    attributes: dict[str, Any] = {}
    values = {v.definition_id: v.value for v in AttributeValue.objects.filter(user=user)}
    for definition in AttributeDefinition.objects.filter(scope, account_id=user.account_id):
        if definition.pk in values:
            attributes[definition.name] = values[definition.pk]
        elif definition.default_value:
            attributes[definition.name] = default_value_parse(definition.type, definition.default_value)
    return groups, attributes


def internal_user_group_names(*, account: Account, user_id: int) -> list[str]:
    """Tenant-wide groups an internal user belongs to (SCIM-managed)."""
    return sorted(
        Group.objects.filter(account=account, embed_tenant__isnull=True, internal_members__id=user_id).values_list(
            "name", flat=True
        )
    )


def embed_tenant_for_account(*, account: Account, name: str) -> EmbedTenant:
    tenant = EmbedTenant.objects.filter(account=account, name=name.lower()).first()
    if tenant is None:
        raise NotFound(f"Embed tenant {name!r} not found")
    return tenant
