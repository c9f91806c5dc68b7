"""State changes of the directory: tenants, external users within the account cap, groups, attributes.

Functions that write several rows expect to run inside the caller's transaction (the generate-session
service wraps them in one) and validate everything they can before writing anything.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from embedadmin.accounts.models import Account
from embedadmin.accounts.services import EXTERNAL_USERS, quota_recount, quota_release, quota_reserve
from embedadmin.core.errors import BadRequest, Conflict, NotFound
from embedadmin.core.rows import create_unique, db_column
from embedadmin.directory import selectors
from embedadmin.directory.models import (
    AttributeDefinition,
    AttributeValue,
    EmbedTenant,
    ExternalUser,
    Group,
    GroupMembership,
    InternalAttributeValue,
)
from embedadmin.directory.values import ATTRIBUTE_TYPES, default_value_parse, value_matches_type


@dataclass(frozen=True)
class GroupDefinitionInput:
    name: str
    description: str | None = None


@dataclass(frozen=True)
class AttributeDefinitionInput:
    name: str
    type: str
    display_name: str | None = None
    default_value: str | None = None
    description: str | None = None


@dataclass(frozen=True)
class ProfileInput:
    """Profile properties to overwrite; None means "keep what was saved"."""

    display_name: str | None = None
    picture: str | None = None


def _check_tenant_of(account: Account, embed_tenant: EmbedTenant | None) -> None:
    if embed_tenant is not None and embed_tenant.account_id != account.pk:
        raise NotFound("Embed tenant not found")


# --- embed tenants ----------------------------------------------------------------------------------


def embed_tenant_get_or_create(*, account: Account, name: str) -> EmbedTenant:
    tenant = selectors.embed_tenant_by_name(account=account, name=name)
    if tenant is not None:
        return tenant
    try:
        with transaction.atomic():
            tenant = EmbedTenant.objects.create(account=account, name=name)
    except IntegrityError:  # created concurrently
        return EmbedTenant.objects.get(account=account, name=name)
    selectors.catalog_version(account.pk).bump()
    return tenant


# --- definitions ------------------------------------------------------------------------------------


def _reject_duplicates(names: Iterable[str], what: str) -> None:
    seen: set[str] = set()
    duplicates: list[str] = []
    for name in names:
        if name in seen and name not in duplicates:
            duplicates.append(name)
        seen.add(name)
    if duplicates:
        raise BadRequest(f"Duplicate names in {what}: {', '.join(duplicates)}")


def _reject_type_changes(
    definitions: Sequence[AttributeDefinitionInput], existing: dict[str, AttributeDefinition]
) -> None:
    changed_type = [d.name for d in definitions if d.name in existing and existing[d.name].type != d.type]
    if changed_type:
        raise BadRequest(f"cannot change type of user attribute {', '.join(changed_type)}")


def definitions_apply(
    *,
    account: Account,
    embed_tenant: EmbedTenant | None,
    group_definitions: Sequence[GroupDefinitionInput],
    attribute_definitions: Sequence[AttributeDefinitionInput],
) -> None:
    """Idempotently upsert group and attribute definitions in one scope.

    The request is validated before anything is written (duplicates, types, an existing definition of
    another type). Missing definitions are inserted with ``ON CONFLICT DO NOTHING``: when concurrent
    requests define the same new name (the first sessions of a new customer), the losers wait for the
    winner and reuse its row instead of failing. The caller's transaction makes the whole call atomic.
    """
    _reject_duplicates((d.name for d in group_definitions), "groupDefinitions")
    _reject_duplicates((d.name for d in attribute_definitions), "userAttributeDefinitions")
    for definition in attribute_definitions:
        if definition.type not in ATTRIBUTE_TYPES:
            raise BadRequest(
                f"userAttributeDefinitions: type of {definition.name!r} must be one of {', '.join(ATTRIBUTE_TYPES)}"
            )
        if definition.default_value is not None:
            default_value_parse(definition.type, definition.default_value)

    scope = {"account": account, "embed_tenant": embed_tenant}
    selectors.catalog_version(account.pk).bump()
    # The scope's whole catalog by name (catalogs are small): only the names requested are looked up.
    existing_attrs = (
        selectors.attribute_definitions_in_scope(account=account, embed_tenant=embed_tenant)
        if attribute_definitions
        else {}
    )
    _reject_type_changes(attribute_definitions, existing_attrs)
    missing_attrs = [d for d in attribute_definitions if d.name not in existing_attrs]
    if missing_attrs:
        AttributeDefinition.objects.bulk_create(
            [
                AttributeDefinition(
                    **scope,
                    name=d.name,
                    type=d.type,
                    display_name=d.display_name or "",
                    default_value=d.default_value or "",
                    description=d.description or "",
                )
                for d in missing_attrs
            ],
            ignore_conflicts=True,
        )
        # Re-read: a concurrent request may have won a name, possibly with another type.
        existing_attrs = selectors.attribute_definitions_in_scope(account=account, embed_tenant=embed_tenant)
        _reject_type_changes(attribute_definitions, existing_attrs)

    # Updates in primary-key order, so two requests updating the same definitions cannot deadlock.
    for definition in sorted(attribute_definitions, key=lambda d: existing_attrs[d.name].pk):
        current = existing_attrs[definition.name]
        updates = {
            field: value
            for field, value in (
                ("display_name", definition.display_name),
                ("default_value", definition.default_value),
                ("description", definition.description),
            )
            if value is not None and getattr(current, field) != value
        }
        if updates:
            AttributeDefinition.objects.filter(pk=current.pk).update(**updates, updated_at=timezone.now())

    group_names = [d.name for d in group_definitions]
    existing_groups = selectors.groups_by_name(account=account, embed_tenant=embed_tenant, names=group_names)
    missing_groups = [d for d in group_definitions if d.name not in existing_groups]
    if missing_groups:
        Group.objects.bulk_create(
            [Group(**scope, name=d.name, description=d.description or "") for d in missing_groups],
            ignore_conflicts=True,
        )
        existing_groups = selectors.groups_by_name(account=account, embed_tenant=embed_tenant, names=group_names)
    for group_definition in sorted(group_definitions, key=lambda d: existing_groups[d.name].pk):
        group = existing_groups[group_definition.name]
        if group_definition.description and group_definition.description != group.description:
            # A description is updated when supplied and different, and never cleared (so "" is ignored).
            Group.objects.filter(pk=group.pk).update(
                description=group_definition.description, updated_at=timezone.now()
            )


def attribute_definition_create(
    *, account: Account, embed_tenant: EmbedTenant | None, data: AttributeDefinitionInput
) -> AttributeDefinition:
    """Create one attribute definition (Platform API); a name already used in the scope is 409."""
    _check_tenant_of(account, embed_tenant)
    if data.type not in ATTRIBUTE_TYPES:
        raise BadRequest(f"type must be one of {', '.join(ATTRIBUTE_TYPES)}")
    if data.default_value:
        default_value_parse(data.type, data.default_value)
    definition = AttributeDefinition(
        account=account,
        embed_tenant=embed_tenant,
        name=data.name,
        type=data.type,
        display_name=data.display_name or "",
        default_value=data.default_value or "",
        description=data.description or "",
    )
    created = create_unique(definition, conflict=Conflict(f"A user attribute named {data.name!r} already exists"))
    selectors.catalog_version(account.pk).bump()  # after the write: a copy read before it must not outlive it
    return created


def attribute_definition_update(*, definition: AttributeDefinition, changes: dict[str, Any]) -> AttributeDefinition:
    """Update the mutable fields of a definition; the type cannot change."""
    if "type" in changes and changes["type"] != definition.type:
        raise BadRequest("cannot change type")
    if "name" in changes and changes["name"] != definition.name:
        raise BadRequest("name cannot be changed: access policies refer to it")
    if changes.get("default_value"):
        default_value_parse(definition.type, changes["default_value"])
    fields = [f for f in ("display_name", "default_value", "description") if f in changes]
    for field in fields:
        setattr(definition, field, changes[field] or "")
    if fields:
        definition.save(update_fields=[*fields, "updated_at"])
        selectors.catalog_version(definition.account_id).bump()
    return definition


def attribute_definition_delete(*, definition: AttributeDefinition) -> None:
    """Delete a definition that no user has a value for; otherwise refuse (values would vanish silently)."""
    with transaction.atomic():
        holders = (
            AttributeValue.objects.filter(definition=definition).count()
            + InternalAttributeValue.objects.filter(definition=definition).count()
        )
        if holders:
            raise BadRequest(
                f"User attribute {definition.name!r} still has values for {holders} user(s); clear them first"
            )
        definition.delete()
        selectors.catalog_version(definition.account_id).bump()


def group_create(*, account: Account, embed_tenant: EmbedTenant | None, name: str, description: str = "") -> Group:
    _check_tenant_of(account, embed_tenant)
    name = name.strip()
    if not name:
        raise BadRequest("Group name must not be empty")
    if name.startswith("system:"):
        raise BadRequest("Group names starting with 'system:' are reserved")
    group = Group(account=account, embed_tenant=embed_tenant, name=name, description=description)
    created = create_unique(group, conflict=Conflict(f"A group named {name!r} already exists"))
    selectors.catalog_version(account.pk).bump()  # after the write, as above
    return created


def group_delete(*, group: Group, with_internal_members: bool = False) -> None:
    """Delete a group that has no members; otherwise refuse, as its members' access would change.

    ``with_internal_members`` removes its internal (IdP-managed) members first, as SCIM deletes a group
    with its memberships (the users stay); a refused delete keeps them.
    """
    with transaction.atomic():
        if with_internal_members:
            group.internal_members.clear()
        members = GroupMembership.objects.filter(group=group).count() + group.internal_members.count()
        if members:
            raise BadRequest(f"Group {group.name!r} still has {members} member(s); remove them first")
        group.delete()
        selectors.catalog_version(group.account_id).bump()


# --- external users ---------------------------------------------------------------------------------


def external_user_upsert(
    *,
    account: Account,
    external_id: str,
    email: str | None,
    profile: ProfileInput | None,
    embed_tenant: EmbedTenant | None,
) -> tuple[ExternalUser, bool]:
    """Find or create the external user, overwriting only the properties supplied; returns it and
    whether it was created.

    One ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING`` statement (PostgreSQL and SQLite): concurrent
    requests for one new user queue on the unique index, exactly one inserts, and the others update the row
    it wrote. ``session_count`` tells them apart: 1 for the row just inserted.

    A created user must take a place under the account cap (``quota_reserve(EXTERNAL_USERS)``) in the
    same transaction, which the caller holds open: the caller reserves it as the last write before
    its commit, because the reservation locks the account's counter row until then and every other
    request creating a user in the account waits for that lock.
    """
    now = ExternalUser._meta.get_field("updated_at").get_db_prep_save(timezone.now(), connection)
    display_name = profile.display_name if profile else None
    picture = profile.picture if profile else None
    tenant_id = embed_tenant.pk if embed_tenant is not None else None
    inserted = [now, now, account.pk, external_id, tenant_id, email or "", display_name or "", picture or "", now, 1]
    sql, fields, converters = _user_upsert_sql()
    with connection.cursor() as cursor:
        cursor.execute(sql, [*inserted, email, tenant_id, display_name, picture])
        row = list(cursor.fetchone())
    for position, (column, functions) in converters:  # the ORM's own from-database conversions
        for convert in functions:
            row[position] = convert(row[position], column, connection)
    user = ExternalUser.from_db(connection.alias, [f.attname for f in fields], row)
    user.account = account
    return user, user.session_count == 1


@functools.cache
def _user_upsert_sql() -> tuple[str, tuple[models.Field[Any, Any], ...], list[tuple[int, tuple[Any, list[Any]]]]]:
    """The upsert of :func:`external_user_upsert`, the fields it returns in order, and the ORM's converters of
    the returned values by position.

    Supplied properties overwrite, omitted ones (NULL parameters) keep the stored value. Only the model's own
    identifiers are formatted in; every value is a bound parameter.
    """
    meta = ExternalUser._meta
    qn = connection.ops.quote_name
    col = {f.name: qn(db_column(f)) for f in meta.concrete_fields}
    inserted: tuple[str, ...] = ("created_at", "updated_at", "account", "external_id", "embed_tenant", "email")
    inserted += ("display_name", "picture", "last_session_at", "session_count")
    kept = ("email", "embed_tenant", "display_name", "picture")
    fields = tuple(meta.concrete_fields)
    sql = (
        f"INSERT INTO {qn(meta.db_table)} AS t ({', '.join(col[n] for n in inserted)}) "  # noqa: S608
        f"VALUES ({', '.join(['%s'] * len(inserted))}) "
        f"ON CONFLICT ({col['account']}, {col['external_id']}) DO UPDATE SET "
        f"{col['last_session_at']} = EXCLUDED.{col['last_session_at']}, "
        f"{col['updated_at']} = EXCLUDED.{col['updated_at']}, "
        f"{col['session_count']} = t.{col['session_count']} + 1, "
        + ", ".join(f"{col[n]} = COALESCE(%s, t.{col[n]})" for n in kept)
        + f" RETURNING {', '.join(qn(db_column(f)) for f in fields)}"
    )
    converters = []
    for position, field in enumerate(fields):
        column = field.get_col(meta.db_table)
        functions = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if functions:
            converters.append((position, (column, functions)))
    return sql, fields, converters


def external_user_groups_set(
    *, user: ExternalUser, embed_tenant: EmbedTenant | None, groups: Sequence[Group], user_is_new: bool = False
) -> None:
    """Make the user's memberships in one scope exactly ``groups`` (``[]`` clears them)."""
    wanted = {g.pk for g in groups}
    current = set() if user_is_new else selectors.external_user_group_ids(user=user, embed_tenant=embed_tenant)
    stale = current - wanted
    if stale:
        GroupMembership.objects.filter(user=user, group_id__in=stale).delete()
    new = wanted - current
    if new:
        GroupMembership.objects.bulk_create(
            [GroupMembership(user=user, group_id=gid) for gid in sorted(new)], ignore_conflicts=True
        )


def external_user_attributes_set(*, user: ExternalUser, values: Sequence[tuple[AttributeDefinition, Any]]) -> None:
    """Write the supplied attribute values (already type-checked); ``None`` clears a value."""
    cleared = [d.pk for d, v in values if v is None]
    if cleared:
        AttributeValue.objects.filter(user=user, definition_id__in=cleared).delete()
    rows = [(d.pk, v) for d, v in values if v is not None]
    if rows:
        _attribute_values_upsert(user_id=user.pk, rows=rows)


def _attribute_values_upsert(*, user_id: int, rows: Sequence[tuple[int, Any]]) -> None:
    """``INSERT ... ON CONFLICT (user, definition) DO UPDATE`` in one statement, with bound values.

    The same as ``bulk_create(update_conflicts=True)``, which costs the ORM about a millisecond to
    compile on every generate-session; PostgreSQL and SQLite both accept this form.
    """
    meta = AttributeValue._meta
    qn = connection.ops.quote_name
    user_col, definition_col, value_col, updated_col = (
        qn(db_column(meta.get_field(name))) for name in ("user", "definition", "value", "updated_at")
    )
    value_field, updated_field = meta.get_field("value"), meta.get_field("updated_at")
    now = updated_field.get_db_prep_save(timezone.now(), connection)
    params: list[Any] = []
    for definition_id, value in rows:
        params += [user_id, definition_id, value_field.get_db_prep_save(value, connection), now]
    placeholders = ", ".join(["(%s, %s, %s, %s)"] * len(rows))
    # Only identifiers from the model's own metadata are formatted in; every value is a parameter.
    sql = (
        f"INSERT INTO {qn(meta.db_table)} ({user_col}, {definition_col}, {value_col}, {updated_col}) "  # noqa: S608
        f"VALUES {placeholders} ON CONFLICT ({user_col}, {definition_col}) "
        f"DO UPDATE SET {value_col} = EXCLUDED.{value_col}, {updated_col} = EXCLUDED.{updated_col}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def attribute_values_check(
    *, definitions: dict[str, AttributeDefinition], values: Sequence[tuple[str, Any]]
) -> list[tuple[AttributeDefinition, Any]]:
    """Pair each supplied value with its definition, rejecting a value of the wrong type."""
    _reject_duplicates((name for name, _ in values), "userAttributes")
    checked = []
    for name, value in values:
        definition = definitions[name]
        if value is not None and not value_matches_type(definition.type, value):
            raise BadRequest(f"userAttributes: value of {name!r} must be a {definition.type}")
        checked.append((definition, value))
    return checked


def external_user_delete(*, user: ExternalUser) -> None:
    """Delete an external user and release its place under the cap."""
    with transaction.atomic():
        deleted, _ = ExternalUser.objects.filter(pk=user.pk).delete()
        if deleted:
            quota_release(account_id=user.account_id, quota=EXTERNAL_USERS)


def external_user_count_reconcile(*, account: Account) -> int:
    """Recount the account's external users into its counter; returns the count."""
    return quota_recount(
        account_id=account.pk, quota=EXTERNAL_USERS, count=ExternalUser.objects.filter(account=account).count
    )


# --- internal users (SCIM) ------------------------------------------------------------------------------


def internal_user_attributes_set(*, account: Account, user_id: int, values: dict[str, Any]) -> None:
    """Make an internal user's tenant-wide attribute values exactly ``values`` (name -> value; a name left out
    or ``None`` is cleared), each checked against its definition's type by the rule every attribute value
    follows (``values.value_matches_type``). An unknown name is 400. Runs in the caller's transaction."""
    definitions = selectors.attribute_definitions_named(account=account, embed_tenant=None, names=values)
    unknown = sorted(set(values) - set(definitions))
    if unknown:
        raise BadRequest(f"User attributes not found: {', '.join(unknown)}")
    checked = attribute_values_check(definitions=definitions, values=list(values.items()))
    kept = {d.pk: v for d, v in checked if v is not None}
    InternalAttributeValue.objects.filter(user_id=user_id).exclude(definition_id__in=kept).delete()
    for definition_id, value in sorted(kept.items()):
        InternalAttributeValue.objects.update_or_create(
            user_id=user_id, definition_id=definition_id, defaults={"value": value}
        )


def scim_group_save(
    *,
    group: Group,
    name: str | None = None,
    external_id: str | None = None,
    member_ids: Sequence[int] | None = None,
    member_displays: dict[int, str] | None = None,
) -> Group:
    """Rename a tenant-wide group, set its ``externalId`` and make its internal members exactly ``member_ids``
    (``None`` keeps each). Members must be internal users of the group's account (400 otherwise). Runs in the
    caller's transaction, or its own."""
    with transaction.atomic():
        fields = []
        if name is not None and name.strip() != group.name:
            name = name.strip()
            if not name or name.startswith("system:"):
                raise BadRequest("displayName must not be empty nor start with 'system:'")
            group.name = name
            fields.append("name")
        if external_id is not None and external_id != group.external_id:
            group.external_id = external_id
            fields.append("external_id")
        try:
            with transaction.atomic():
                group.save(update_fields=[*fields, "updated_at"])
        except IntegrityError:
            raise Conflict(f"A group named {group.name!r} already exists") from None
        if member_ids is not None:
            wanted = set(member_ids)
            found = set(
                get_user_model()
                .objects.filter(pk__in=wanted, membership__account_id=group.account_id)
                .values_list("pk", flat=True)
            )
            missing = sorted(wanted - found)
            if missing:
                raise BadRequest(f"members: no user {', '.join(map(str, missing))} in this account")
            group.internal_members.set(sorted(wanted))
            displays = {str(k): v for k, v in (member_displays or {}).items() if k in wanted and v}
            if displays != group.member_displays:
                group.member_displays = displays
                group.save(update_fields=["member_displays"])
        if "name" in fields:
            selectors.catalog_version(group.account_id).bump()
    return group


# --- embed-tenant administration (Platform API, /api/v1/embed-tenants) ----------------------------------


@dataclass(frozen=True)
class EmbedUserInput:
    """One embed user to provision (Cube's ``ProvisionEmbedUserInput``): ``groups`` are tenant-wide group names,
    ``tenant_groups`` the embed tenant's own; None leaves the memberships of that scope as they are."""

    external_id: str
    email: str | None = None
    groups: Sequence[str] | None = None
    tenant_groups: Sequence[str] | None = None
    profile: ProfileInput | None = None


def embed_tenant_name_check(name: str) -> str:
    """The canonical (lowercase) tenant name; a name in any other case is 400 (Cube: non-canonical case)."""
    if name != name.lower():
        raise BadRequest(f"Embed tenant name {name!r} is not canonical: use {name.lower()!r}")
    return name


def embed_tenant_delete(*, account: Account, name: str) -> bool:
    """Delete an embed tenant with its groups, attribute definitions and the external users whose tenant it is
    (their places under the cap are given back); idempotent: returns whether there was a tenant to delete."""
    embed_tenant_name_check(name)
    with transaction.atomic():
        tenant = EmbedTenant.objects.select_for_update().filter(account=account, name=name).first()
        if tenant is None:
            return False
        ExternalUser.objects.filter(account=account, embed_tenant=tenant).delete()
        tenant.delete()
        external_user_count_reconcile(account=account)
    selectors.catalog_version(account.pk).bump()
    return True


def group_description_update(*, group: Group, description: str) -> Group:
    """Change a group's description (the only mutable field of an embed-tenant group)."""
    if description != group.description:
        group.description = description
        group.save(update_fields=["description", "updated_at"])
        selectors.catalog_version(group.account_id).bump()
    return group


def group_external_members_add(*, group: Group, users: Sequence[ExternalUser]) -> tuple[int, int]:
    """Add external users to a group; returns (added, already members)."""
    wanted = {u.pk for u in users}
    with transaction.atomic():
        current = set(GroupMembership.objects.filter(group=group, user_id__in=wanted).values_list("user_id", flat=True))
        new = sorted(wanted - current)
        GroupMembership.objects.bulk_create(
            [GroupMembership(group=group, user_id=uid) for uid in new], ignore_conflicts=True
        )
    return len(new), len(wanted) - len(new)


def group_external_members_remove(*, group: Group, users: Sequence[ExternalUser]) -> tuple[int, int]:
    """Remove external users from a group; returns (removed, not members)."""
    wanted = {u.pk for u in users}
    removed, _ = GroupMembership.objects.filter(group=group, user_id__in=wanted).delete()
    return removed, len(wanted) - removed


def embed_user_provision(
    *, account: Account, embed_tenant: EmbedTenant, data: EmbedUserInput
) -> tuple[ExternalUser, bool]:
    """Create or update one external user of an embed tenant, in its own transaction: the one upsert of
    :func:`external_user_upsert` and, for a new user, a place under the account cap (``quota_reserve``: 429
    when the cap is reached, and nothing is written). Unknown group names are 400. Returns the user and whether
    it was created.

    An existing user is updated in place (its last login and session count are not touched); a new one is
    inserted by the upsert and its ``last_session_at`` cleared, as it has not logged in yet."""
    _check_tenant_of(account, embed_tenant)
    groups = _groups_named(account=account, embed_tenant=None, names=data.groups)
    tenant_groups = _groups_named(account=account, embed_tenant=embed_tenant, names=data.tenant_groups)
    with transaction.atomic():
        user = ExternalUser.objects.select_for_update().filter(account=account, external_id=data.external_id).first()
        created = False
        if user is not None:
            fields = ["embed_tenant"]
            user.embed_tenant = embed_tenant
            if data.email is not None:
                user.email = data.email
                fields.append("email")
            if data.profile is not None and data.profile.display_name is not None:
                user.display_name = data.profile.display_name
                fields.append("display_name")
            if data.profile is not None and data.profile.picture is not None:
                user.picture = data.profile.picture
                fields.append("picture")
            user.save(update_fields=[*fields, "updated_at"])
        else:
            user, created = external_user_upsert(
                account=account,
                external_id=data.external_id,
                email=data.email,
                profile=data.profile,
                embed_tenant=embed_tenant,
            )
            if created:
                ExternalUser.objects.filter(pk=user.pk).update(last_session_at=None)
                user.last_session_at = None
        if groups is not None:
            external_user_groups_set(user=user, embed_tenant=None, groups=groups, user_is_new=created)
        if tenant_groups is not None:
            external_user_groups_set(user=user, embed_tenant=embed_tenant, groups=tenant_groups, user_is_new=created)
        if created:
            # Last before the commit, as generate-session does: the reservation locks the counter row until then.
            quota_reserve(account_id=account.pk, quota=EXTERNAL_USERS)
    return user, created


def _groups_named(
    *, account: Account, embed_tenant: EmbedTenant | None, names: Sequence[str] | None
) -> list[Group] | None:
    if names is None:
        return None
    found = selectors.groups_by_name(account=account, embed_tenant=embed_tenant, names=names)
    return selectors.groups_resolve(groups=found, names=names)


def internal_user_attribute_value_set(*, user_id: int, definition: AttributeDefinition, value: Any) -> None:
    """Upsert one internal user's value of a tenant-wide attribute, checked against its type by the rule every
    attribute value follows (``values.value_matches_type``); ``None`` clears it."""
    [(checked, checked_value)] = attribute_values_check(
        definitions={definition.name: definition}, values=[(definition.name, value)]
    )
    if checked_value is None:
        InternalAttributeValue.objects.filter(user_id=user_id, definition=checked).delete()
        return
    InternalAttributeValue.objects.update_or_create(
        user_id=user_id, definition=checked, defaults={"value": checked_value}
    )
