"""Reads of the directory. Every function takes the account (or an object of it) it reads within."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from django.db.models import Count, Q, QuerySet

from embedadmin.accounts.models import Account
from embedadmin.core.errors import BadRequest, NotFound
from embedadmin.core.prepared import InList, Nullable, PreparedQuery
from embedadmin.core.versions import ProcessMemory, SharedVersion
from embedadmin.directory.models import (
    AttributeDefinition,
    AttributeValue,
    EmbedTenant,
    ExternalUser,
    Group,
    GroupMembership,
    InternalAttributeValue,
)
from embedadmin.directory.values import default_value_parse

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django_stubs_ext import WithAnnotations

# generate-session reads these on every call: compiled once (embedadmin/core/prepared.py).
# A scope is an embed tenant's id, or None for the tenant-wide catalog (``IS NULL``).
_DEFINITIONS: PreparedQuery[AttributeDefinition] = PreparedQuery(
    AttributeDefinition,
    lambda account_id, tenant_id: AttributeDefinition.objects.filter(
        account_id=account_id, embed_tenant_id=tenant_id
    ).order_by(),
    sentinels=(-9_000_001, Nullable(-9_000_002)),
)
_MEMBERSHIPS: PreparedQuery[GroupMembership] = PreparedQuery(
    GroupMembership,
    lambda user_id, tenant_id: GroupMembership.objects.filter(
        user_id=user_id, group__embed_tenant_id=tenant_id
    ).order_by(),
    sentinels=(-9_000_001, Nullable(-9_000_002)),
)


def _scope_id(embed_tenant: EmbedTenant | None) -> int | None:
    return embed_tenant.pk if embed_tenant is not None else None


def catalog_version(account_id: int) -> SharedVersion:
    """The version of an account's catalogs (embed tenants, attribute definitions, groups) that processes keep
    copies of (core/versions.py): every directory service that changes them bumps it."""
    return SharedVersion(f"directory:{account_id}")


@dataclass(frozen=True)
class Catalog:
    """One scope's attribute definitions and groups, by name: what generate-session resolves names against."""

    definitions: dict[str, AttributeDefinition]
    groups: dict[str, Group]


_GROUPS_IN_SCOPE: PreparedQuery[Group] = PreparedQuery(
    Group,
    lambda account_id, tenant_id: Group.objects.filter(account_id=account_id, embed_tenant_id=tenant_id).order_by(),
    sentinels=(-9_000_001, Nullable(-9_000_002)),
)
_REMEMBERED_CATALOGS: ProcessMemory[Catalog] = ProcessMemory()
_REMEMBERED_TENANTS: ProcessMemory[EmbedTenant] = ProcessMemory()


def catalog_in_scope(*, account: Account, embed_tenant: EmbedTenant | None, remember: bool = True) -> Catalog:
    """The scope's catalog, remembered by the process under the account's catalog version. ``remember=False``
    for a caller whose own transaction has just written the catalog: rows that may still roll back are never
    remembered."""

    def read() -> Catalog:
        return Catalog(
            definitions=attribute_definitions_in_scope(account=account, embed_tenant=embed_tenant),
            groups={g.name: g for g in _GROUPS_IN_SCOPE.fetch(account.pk, _scope_id(embed_tenant))},
        )

    if not remember:
        return read()
    version = catalog_version(account.pk).current()
    catalog = _REMEMBERED_CATALOGS.remembered((account.pk, _scope_id(embed_tenant)), version, read)
    assert catalog is not None  # read() always gives one
    return catalog


def embed_tenant_by_name(*, account: Account, name: str) -> EmbedTenant | None:
    """The account's embed tenant ``name`` (remembered once found, under the catalog version)."""
    version = catalog_version(account.pk).current()
    return _REMEMBERED_TENANTS.remembered(
        (account.pk, name), version, lambda: EmbedTenant.objects.filter(account=account, name=name).first()
    )


def attribute_definitions_in_scope(
    *, account: Account, embed_tenant: EmbedTenant | None
) -> dict[str, AttributeDefinition]:
    """Every attribute definition of one scope, by name (catalogs are small: one query serves both
    name resolution and the defaults of the token's claims)."""
    return {d.name: d for d in _DEFINITIONS.fetch(account.pk, _scope_id(embed_tenant))}


def attribute_definitions_named(
    *, account: Account, embed_tenant: EmbedTenant | None, names: Iterable[str]
) -> dict[str, AttributeDefinition]:
    """The definitions of one scope among ``names``, by name (those that exist): what a write naming a few
    attributes reads, however many the account defines."""
    wanted = sorted(set(names))
    if not wanted:
        return {}
    rows = AttributeDefinition.objects.filter(account=account, embed_tenant=embed_tenant, name__in=wanted)
    return {d.name: d for d in rows}


def external_user_group_ids(*, user: ExternalUser, embed_tenant: EmbedTenant | None) -> set[int]:
    """Ids of the user's groups in one scope."""
    return {m.group_id for m in _MEMBERSHIPS.fetch(user.pk, _scope_id(embed_tenant))}


def attribute_definitions_resolve(
    *, definitions: dict[str, AttributeDefinition], names: Sequence[str]
) -> dict[str, AttributeDefinition]:
    """The definitions named, all of which must be in ``definitions`` (``User attributes not found``)."""
    missing = [n for n in dict.fromkeys(names) if n not in definitions]
    if missing:
        raise BadRequest(f"User attributes not found: {', '.join(missing)}")
    return {n: definitions[n] for n in names}


_GROUPS: PreparedQuery[Group] = PreparedQuery(
    Group,
    lambda account_id, tenant_id, names: Group.objects.filter(
        account_id=account_id, embed_tenant_id=tenant_id, name__in=names
    ).order_by(),
    sentinels=(-9_000_001, Nullable(-9_000_002), InList("\x00group-")),
)


def groups_by_name(*, account: Account, embed_tenant: EmbedTenant | None, names: Sequence[str]) -> dict[str, Group]:
    """The groups of one scope among ``names``, by name; a name without a group is left out."""
    return {g.name: g for g in _GROUPS.fetch(account.pk, _scope_id(embed_tenant), list(names))}


def groups_resolve(*, groups: dict[str, Group], names: Sequence[str]) -> list[Group]:
    """The groups named, all of which must be in ``groups`` (``Groups with names ... not found``)."""
    unique_names = list(dict.fromkeys(names))
    found = groups
    missing = [n for n in unique_names if n not in found]
    if missing:
        raise BadRequest(f"Groups with names {', '.join(missing)} not found")
    return [found[n] for n in unique_names]


def external_user_claims(
    *,
    user: ExternalUser,
    embed_tenant: EmbedTenant | None,
    definitions: dict[str, AttributeDefinition],
    group_names: Sequence[str] | None = None,
    written_values: dict[int, Any] | None = None,
    user_is_new: bool = False,
) -> tuple[list[str], dict[str, Any]]:
    """The group names and attribute values (defaults filled in) of a user in one scope.

    ``definitions`` are the scope's definitions; ``group_names`` and ``written_values`` (definition id
    -> value, ``None`` for cleared) are what the caller has just written, so only the rest is read.
    """
    names: Iterable[str]
    if group_names is None:
        scope = Q(embed_tenant=embed_tenant) if embed_tenant is not None else Q(embed_tenant__isnull=True)
        names = Group.objects.filter(scope, memberships__user=user).order_by().values_list("name", flat=True)
    else:
        names = group_names
    written = written_values or {}
    unread = [d.pk for d in definitions.values() if d.pk not in written]
    stored: dict[int, Any] = {}
    if unread and not user_is_new:
        stored = dict(
            AttributeValue.objects.filter(user=user, definition_id__in=unread)
            .order_by()
            .values_list("definition_id", "value")
        )
    return sorted(set(names)), attribute_claims(definitions=definitions, values={**stored, **written})


def attribute_claims(*, definitions: dict[str, AttributeDefinition], values: dict[int, Any]) -> dict[str, Any]:
    """The ``userAttributes`` a viewer is given: for each definition (by name), its value (definition id
    -> value; ``None`` is cleared) or else its default; left out when it has neither."""
    attributes: dict[str, Any] = {}
    for name in sorted(definitions):
        definition = definitions[name]
        value = values.get(definition.pk)
        if value is None and definition.default_value:
            value = default_value_parse(definition.type, definition.default_value)
        if value is not None:
            attributes[name] = value
    return attributes


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


def embed_tenants_of(*, account: Account, search: str) -> QuerySet[EmbedTenant]:
    """The account's embed tenants whose name contains ``search`` (all of them when it is empty)."""
    tenants = EmbedTenant.objects.filter(account=account)
    if search:
        tenants = tenants.filter(name__icontains=search)
    return tenants


class GroupCounts(TypedDict):
    """What :func:`embed_tenant_groups` annotates its groups with."""

    member_count: int


def embed_tenant_groups(
    *, account: Account, embed_tenant: EmbedTenant
) -> QuerySet[WithAnnotations[Group, GroupCounts]]:
    """The groups of one embed tenant, each with its ``member_count``."""
    return Group.objects.filter(account=account, embed_tenant=embed_tenant).annotate(member_count=Count("memberships"))


def group_in_embed_tenant(*, account: Account, embed_tenant: EmbedTenant, group_id: int) -> Group:
    """The embed tenant's group ``group_id``; 404 when the tenant has no such group."""
    group = Group.objects.filter(account=account, embed_tenant=embed_tenant, pk=group_id).first()
    if group is None:
        raise NotFound(f"Group {group_id} not found in embed tenant {embed_tenant.name}")
    return group


def attribute_definitions_of(*, account: Account, embed_tenant: EmbedTenant | None) -> QuerySet[AttributeDefinition]:
    """The attribute definitions of one scope: an embed tenant's, or the tenant-wide ones (``None``)."""
    return AttributeDefinition.objects.filter(account=account, embed_tenant_id=_scope_id(embed_tenant))


def attribute_definition_of(
    *, account: Account, embed_tenant: EmbedTenant | None, attribute_id: int
) -> AttributeDefinition:
    """The scope's attribute definition ``attribute_id``; 404 when the scope has no such definition."""
    definition = attribute_definitions_of(account=account, embed_tenant=embed_tenant).filter(pk=attribute_id).first()
    if definition is None:
        where = f" in embed tenant {embed_tenant.name}" if embed_tenant is not None else ""
        raise NotFound(f"User attribute {attribute_id} not found{where}")
    return definition


@dataclass(frozen=True)
class ScimGroupsPage:
    """One page of SCIM groups: ``total`` groups match, ``groups`` are those of the page."""

    total: int
    groups: list[Group]


def scim_groups(*, account: Account, display_name: str | None, start_index: int, count: int) -> ScimGroupsPage:
    """The page of the account's tenant-wide groups (named ``display_name``, when given) from the 1-based
    ``start_index``, in id order, with their internal members."""
    groups = Group.objects.filter(account=account, embed_tenant__isnull=True).prefetch_related("internal_members")
    if display_name is not None:
        groups = groups.filter(name=display_name)
    total = groups.count()
    # Past the end the page is empty; capping the offset keeps it within what the database accepts.
    offset = min(start_index - 1, total)
    return ScimGroupsPage(total=total, groups=list(groups.order_by("id")[offset : offset + count]))


_SCIM_ID_MAX_DIGITS = 19  # a bigint; a larger one within them matches no row (the ORM's integer lookups)


def scim_group(*, account: Account, group_id: str) -> Group:
    """The account's tenant-wide group whose SCIM id (text) is ``group_id``; 404 otherwise."""
    # Ids are short decimal ASCII: "²".isdigit() is true too, and int() refuses it and huge numbers.
    is_id = group_id.isascii() and group_id.isdigit() and len(group_id) <= _SCIM_ID_MAX_DIGITS
    group = (
        Group.objects.filter(account=account, embed_tenant__isnull=True, pk=int(group_id)).first() if is_id else None
    )
    if group is None:
        raise NotFound(f"Group {group_id} not found")
    return group


def group_internal_members(*, group: Group) -> list[User]:
    """A group's internal (IdP-managed) users, its SCIM members (already read for a group from ``scim_groups``)."""
    return list(group.internal_members.all())


def scim_groups_matching(*, account: Account, query: Q, start_index: int, count: int) -> ScimGroupsPage:
    """The page of the account's tenant-wide groups matching ``query`` (a SCIM filter's) from the 1-based
    ``start_index``, in id order, with their internal members."""
    groups = Group.objects.filter(account=account, embed_tenant__isnull=True).filter(query).distinct()
    total = groups.count()
    offset = min(start_index - 1, total)
    page = groups.order_by("id").prefetch_related("internal_members")[offset : offset + count]
    return ScimGroupsPage(total=total, groups=list(page))


def internal_users_groups(*, account: Account, user_ids: Sequence[int]) -> dict[int, list[Group]]:
    """The tenant-wide groups of each of these internal users (SCIM's read-only ``groups``), by user id."""
    found: dict[int, list[Group]] = {user_id: [] for user_id in user_ids}
    through = Group.internal_members.through
    rows = (
        through.objects.filter(user_id__in=user_ids, group__account=account, group__embed_tenant__isnull=True)
        .select_related("group")
        .order_by("group_id")
    )
    for row in rows:
        found[row.user_id].append(row.group)
    return found


def internal_users_attribute_values(*, account: Account, user_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The tenant-wide attribute values stored for each of these internal users (no defaults), by user id."""
    found: dict[int, dict[str, Any]] = {user_id: {} for user_id in user_ids}
    rows = InternalAttributeValue.objects.filter(
        user_id__in=user_ids, definition__account=account, definition__embed_tenant__isnull=True
    ).values_list("user_id", "definition__name", "value")
    for user_id, name, value in rows.order_by("user_id", "definition__name"):
        found[user_id][name] = value
    return found


# --- embed-tenant administration (Platform API) ------------------------------------------------------


class TenantCounts(TypedDict):
    """What :func:`embed_tenants_with_counts` annotates its tenants with."""

    user_count: int


def embed_tenants_with_counts(*, account: Account, search: str) -> QuerySet[WithAnnotations[EmbedTenant, TenantCounts]]:
    """:func:`embed_tenants_of`, each tenant with the ``user_count`` of external users whose tenant it is."""
    return embed_tenants_of(account=account, search=search).annotate(user_count=Count("users"))


def embed_tenant_users(*, account: Account, embed_tenant: EmbedTenant) -> QuerySet[ExternalUser]:
    """The external users whose (latest) embed tenant is ``embed_tenant``."""
    return ExternalUser.objects.filter(account=account, embed_tenant=embed_tenant)


def group_external_members(*, group: Group) -> QuerySet[ExternalUser]:
    """A group's external members."""
    return ExternalUser.objects.filter(account_id=group.account_id, memberships__group=group)


def external_users_named(
    *, account: Account, external_ids: Sequence[str], user_ids: Sequence[int]
) -> list[ExternalUser]:
    """The account's external users named by external id or id, every one of which must exist (400 naming the
    missing ones otherwise; another account's user is missing)."""
    found = list(
        ExternalUser.objects.filter(account=account).filter(Q(external_id__in=external_ids) | Q(pk__in=user_ids))
    )
    missing = [e for e in dict.fromkeys(external_ids) if e not in {u.external_id for u in found}]
    missing += [str(i) for i in dict.fromkeys(user_ids) if i not in {u.pk for u in found}]
    if missing:
        raise BadRequest(f"Embed users not found: {', '.join(missing)}")
    return found


def internal_user_attribute_values(*, account: Account, user_id: int) -> list[InternalAttributeValue]:
    """An internal user's stored tenant-wide attribute values, with their definitions, by attribute name."""
    return list(
        InternalAttributeValue.objects.filter(
            user_id=user_id, definition__account=account, definition__embed_tenant__isnull=True
        )
        .select_related("definition")
        .order_by("definition__name", "definition_id")
    )


def attribute_definitions_filtered(
    *, account: Account, name: str | None, attribute_type: str | None
) -> QuerySet[AttributeDefinition]:
    """The account's tenant-wide attribute definitions, of exactly ``name`` and of ``attribute_type`` when given."""
    definitions = attribute_definitions_of(account=account, embed_tenant=None)
    if name is not None:
        definitions = definitions.filter(name=name)
    if attribute_type is not None:
        definitions = definitions.filter(type=attribute_type)
    return definitions
