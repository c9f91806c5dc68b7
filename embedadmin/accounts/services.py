"""State changes of accounts, deployments, internal users and credentials.

Each function here is the one write path for its state change: commands, the Platform API and the
admin panel all call them.
"""

from __future__ import annotations

import datetime
import functools
import os
import re
import secrets
import zoneinfo
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Model
from django.utils import timezone

from embedadmin.accounts.models import (
    Account,
    AccountMembership,
    ApiKey,
    Deployment,
    DeploymentEnvVariable,
    DeploymentSecret,
    InternalUserProfile,
    IssuedToken,
    PlatformToken,
    TenantSettings,
)
from embedadmin.core import credentials
from embedadmin.core.errors import BadRequest, Conflict, LimitExceeded, NotFound
from embedadmin.core.rows import create_unique, db_column
from embedadmin.core.versions import SharedVersion

if TYPE_CHECKING:
    from django.contrib.auth.models import User

API_KEY_KIND = "eak"
PLATFORM_TOKEN_KIND = "ept"

# The version of what hot paths remember of credentials and deployments (core/versions.py): API keys, tenant
# settings, deployments, their signing secrets and revoked tokens. Every service here that changes them bumps it.
CREDENTIALS = SharedVersion("credentials")


@dataclass(frozen=True)
class CreatedAccount:
    """Everything an operator needs after creating an account; secrets appear here only once."""

    account: Account
    deployment: Deployment
    api_key: str
    deployment_api_secret: str
    platform_token: str
    admin_username: str
    admin_password: str


def _full_clean(instance: Model) -> None:
    try:
        instance.full_clean(validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        messages = [f"{field}: {'; '.join(errors)}" for field, errors in exc.message_dict.items()]
        raise BadRequest("; ".join(messages)) from None


@transaction.atomic
def account_create(*, name: str, creator_mode: bool = False) -> CreatedAccount:
    """Create an account with its settings, a first deployment, an admin user and credentials."""
    account = Account(name=name)
    _full_clean(account)
    create_unique(account, conflict=Conflict(f"Account {name!r} already exists"))
    TenantSettings.objects.create(account=account, use_creator_mode=creator_mode)
    deployment, secret = deployment_create(account=account, name=f"{name} default", slug="default")
    admin_username = f"{name}-admin"
    admin_password = secrets.token_urlsafe(18)
    internal_user_create(account=account, username=admin_username, email="", password=admin_password, is_admin=True)
    api_key, _ = api_key_create(account=account, name="initial admin key")
    platform_token, _ = platform_token_create(account=account, name="initial platform token")
    return CreatedAccount(
        account=account,
        deployment=deployment,
        api_key=api_key,
        deployment_api_secret=secret,
        platform_token=platform_token,
        admin_username=admin_username,
        admin_password=admin_password,
    )


@transaction.atomic
def deployment_create(*, account: Account, name: str, slug: str) -> tuple[Deployment, str]:
    """Create a deployment and its first signing secret; returns the secret in clear, once."""
    deployment = Deployment(account=account, name=name, slug=slug)
    _full_clean(deployment)
    create_unique(deployment, conflict=Conflict(f"Deployment slug {slug!r} is already used in this account"))
    secret, _ = deployment_secret_rotate(deployment=deployment)  # bumps CREDENTIALS: routing may now find it
    return deployment, secret


def deployment_secret_rotate(*, deployment: Deployment) -> tuple[str, DeploymentSecret]:
    """Add a new signing secret: it signs from now on, and the older active ones still verify. Returns the
    secret in clear (shown once) and its row (whose id names it afterwards)."""
    secret = secrets.token_urlsafe(48)
    row = DeploymentSecret.objects.create(deployment=deployment, encrypted_secret=credentials.encrypt_secret(secret))
    CREDENTIALS.bump()
    return secret, row


@transaction.atomic
def deployment_secrets_revoke_older(*, deployment: Deployment, keep_id: int | None = None) -> int:
    """Revoke the active signing secrets of ``deployment`` older than the one to keep (``keep_id``, by default
    the newest): tokens they signed stop verifying at once (the second step of a rotation). Secrets newer
    than the kept one stay active. Returns how many were revoked."""
    active = list(
        DeploymentSecret.objects.select_for_update()
        .filter(deployment=deployment, revoked_at__isnull=True)  # newest first: Meta.ordering
        .values_list("pk", flat=True)
    )
    if not active:
        return 0
    keep = active[0] if keep_id is None else keep_id
    if keep not in active:
        raise Conflict(f"Secret #{keep} is not an active signing secret of deployment {deployment.pk}")
    older = active[active.index(keep) + 1 :]
    CREDENTIALS.bump()
    return DeploymentSecret.objects.filter(pk__in=older).update(revoked_at=timezone.now())


def internal_user_create(
    *, account: Account, username: str, email: str, password: str | None = None, is_admin: bool = False
) -> User:
    """Create a Django user that belongs to ``account``. Usernames are unique install-wide."""
    user_model = get_user_model()
    username = username.strip()
    if not username:
        raise BadRequest("username: must not be empty")
    user = user_model(username=username, email=email.strip(), is_staff=is_admin)
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    _full_clean(user)
    with transaction.atomic():
        _user_name_check_free(username)
        create_unique(user, conflict=Conflict(f"A user named {username!r} already exists"))
        AccountMembership.objects.create(user=user, account=account, is_admin=is_admin)
        create_unique(
            InternalUserProfile(user=user, account=account, user_name_key=user_name_key(username)),
            conflict=Conflict(f"A user named {username!r} already exists"),
        )
    return user


def user_name_key(username: str) -> str:
    """The form user names are compared in: SCIM's ``userName`` is unique without regard to case (RFC 7643 4.1)."""
    return username.casefold()


def _user_name_check_free(username: str, *, except_user_id: int | None = None) -> None:
    """409 when another user has this name in any case. Users created before profiles existed have no key, so
    the users table is asked too; the profile's unique key settles a race between two requests."""
    taken = get_user_model().objects.filter(username__iexact=username)
    if except_user_id is not None:
        taken = taken.exclude(pk=except_user_id)
    if taken.exists():
        raise Conflict(f"A user named {username!r} already exists")


@dataclass(frozen=True)
class InternalUserChanges:
    """What the Platform API and SCIM write of an internal user; ``None`` keeps what is stored.

    ``resource`` is the rest of the user's SCIM resource (attributes nothing else reads), stored as given.
    """

    username: str | None = None
    email: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    is_active: bool | None = None
    is_admin: bool | None = None
    external_id: str | None = None
    display_name: str | None = None
    resource: dict[str, Any] | None = None


def internal_user_profile(*, user: User) -> InternalUserProfile:
    """The user's profile, created when the user predates profiles (the case-folded name is then claimed)."""
    profile = InternalUserProfile.objects.filter(user=user).first()
    if profile is not None:
        return profile
    membership = AccountMembership.objects.get(user=user)
    return create_unique(
        InternalUserProfile(user=user, account_id=membership.account_id, user_name_key=user_name_key(user.username)),
        conflict=Conflict(f"A user named {user.username!r} already exists"),
    )


def internal_user_change(*, user: User, changes: InternalUserChanges) -> tuple[User, bool]:
    """Apply ``changes`` to an internal user, all or nothing; returns the user and whether it was deactivated
    by this call (the caller then revokes what lives outside accounts: embed sessions).

    Deactivating (``is_active`` false) closes the panel login (Django refuses inactive users on their next
    request) and revokes the user's personal API keys at once. User names stay unique without regard to case
    (409). Runs in the caller's transaction, or its own.
    """
    with transaction.atomic():
        user = type(user).objects.select_for_update().get(pk=user.pk)
        profile = internal_user_profile(user=user)
        was_active = user.is_active
        user_fields: list[str] = []
        if changes.username is not None and changes.username.strip() != user.username:
            username = changes.username.strip()
            if not username:
                raise BadRequest("username: must not be empty")
            _user_name_check_free(username, except_user_id=user.pk)
            user.username = username
            profile.user_name_key = user_name_key(username)
            user_fields.append("username")
        for field in ("email", "first_name", "last_name", "is_active"):
            value = getattr(changes, field)
            if value is not None and getattr(user, field) != (value.strip() if isinstance(value, str) else value):
                setattr(user, field, value.strip() if isinstance(value, str) else value)
                user_fields.append(field)
        if changes.is_admin is not None:
            AccountMembership.objects.filter(user=user).update(is_admin=changes.is_admin)
            if user.is_staff != changes.is_admin:
                user.is_staff = changes.is_admin
                user_fields.append("is_staff")
        if user_fields:
            _full_clean(user)
            try:
                with transaction.atomic():
                    user.save(update_fields=user_fields)
            except IntegrityError:
                raise Conflict(f"A user named {user.username!r} already exists") from None
        for field in ("external_id", "display_name", "resource"):
            value = getattr(changes, field)
            if value is not None:
                setattr(profile, field, value)
        try:
            with transaction.atomic():
                profile.save()  # always: updated_at is the resource's meta.lastModified
        except IntegrityError:
            raise Conflict(f"A user named {user.username!r} already exists") from None
        deactivated = was_active and not user.is_active
        if deactivated:
            internal_user_credentials_revoke(user=user)
    return user, deactivated


def internal_user_credentials_revoke(*, user: User) -> int:
    """Revoke every personal API key the user owns, effective on the next request of every process (the
    CREDENTIALS version). Platform tokens belong to the account, not to a user, so none is the user's.
    Returns how many keys were revoked."""
    revoked = ApiKey.objects.filter(owner=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
    CREDENTIALS.bump()
    return revoked


def internal_user_delete(*, user: User) -> None:
    """Delete an internal user with its membership, profile, keys and group memberships (cascades). Its keys are
    revoked first so that a process remembering one refuses it at once."""
    with transaction.atomic():
        internal_user_credentials_revoke(user=user)
        type(user).objects.filter(pk=user.pk).delete()


@transaction.atomic
def api_key_create(
    *,
    account: Account,
    name: str = "",
    personal_owner: User | None = None,
    deployment_ids: Iterable[int] = (),
) -> tuple[str, ApiKey]:
    """Mint an API key. Returns the plaintext (shown once) and the stored row."""
    deployment_ids = sorted(set(deployment_ids))
    deployments = list(Deployment.objects.filter(account=account, id__in=deployment_ids))
    missing = sorted(set(deployment_ids) - {d.id for d in deployments})
    if missing:
        raise NotFound(f"Deployments not found in account {account.name}: {', '.join(map(str, missing))}")
    if (
        personal_owner is not None
        and not AccountMembership.objects.filter(user=personal_owner, account=account).exists()
    ):
        raise BadRequest("A personal key's owner must be an internal user of the account")
    minted = credentials.mint(API_KEY_KIND)
    key = ApiKey.objects.create(
        account=account,
        name=name,
        kind=ApiKey.Kind.PERSONAL if personal_owner else ApiKey.Kind.ADMIN,
        owner=personal_owner,
        prefix=minted.prefix,
        key_digest=minted.digest,
    )
    if deployments:
        key.deployments.set(deployments)
    return minted.plaintext, key


def api_key_revoke(*, key: ApiKey) -> None:
    ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    CREDENTIALS.bump()


def platform_token_create(*, account: Account, name: str = "") -> tuple[str, PlatformToken]:
    minted = credentials.mint(PLATFORM_TOKEN_KIND)
    token = PlatformToken.objects.create(account=account, name=name, prefix=minted.prefix, token_digest=minted.digest)
    return minted.plaintext, token


def platform_token_revoke(*, token: PlatformToken) -> None:
    PlatformToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


# --- embed settings: the rules of their values, shared by tenant settings and generate-session ----------------

# A BCP-47 language tag as browsers take it: language, optional script, region and variants ("en-US", "zh-Hant-TW").
_LOCALE_RE = re.compile(
    r"^[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?(-([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*$"
)
_ORIGIN_RE = re.compile(
    r"^(https?)://([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*)(:[0-9]{1,5})?$"
)
_COLOR_RE = re.compile(r"^#([0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")
# A CSS font-family list: names, quotes, commas and spaces; nothing that could end the declaration.
_FONT_RE = re.compile(r"^[A-Za-z0-9 ,'\"._-]{1,200}$")
MAX_ALLOWED_ORIGINS = 50

# EmbedTheme (reference 1.8): each key is a color, a font, or a nested object of the same.
_THEME_SHAPE: dict[str, Any] = {
    "primaryColor": "color",
    "font": "font",
    "analyticsChat": {"backgroundColor": "color", "chatInput": {"backgroundColor": "color", "borderColor": "color"}},
    "chat": {"inputColor": "color"},
}


def locale_check(value: Any, *, name: str = "locale") -> str:
    """``value`` if it is a BCP-47 language tag (``en-US``), else :class:`BadRequest`."""
    if not isinstance(value, str) or len(value) > 35 or not _LOCALE_RE.match(value):
        raise BadRequest(f"{name}: must be a BCP-47 language tag such as en-US")
    return value


@functools.cache
def _iana_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def timezone_check(value: Any, *, name: str = "timezone") -> str:
    """``value`` if it is an IANA time zone name (``Europe/Paris``, ``UTC``), else :class:`BadRequest`."""
    if not isinstance(value, str) or value not in _iana_zones():
        raise BadRequest(f"{name}: must be an IANA time zone name such as Europe/Paris")
    return value


def origin_check(value: Any, *, name: str = "origin") -> str:
    """``value`` lowercased if it is an origin ``scheme://host[:port]`` (http or https, no path), else 400."""
    if isinstance(value, str):
        origin = value.strip().lower()
        match = _ORIGIN_RE.match(origin)
        if match and len(origin) <= 300 and (not match.group(6) or 0 < int(match.group(6)[1:]) <= 65535):
            return origin
    raise BadRequest(f"{name}: must be an origin scheme://host[:port] (http or https, no path), got {value!r}")


def origins_check(value: Any, *, name: str = "embedAllowedOrigins") -> list[str]:
    """A list of distinct origins (each by :func:`origin_check`), in the order given."""
    if not isinstance(value, list) or len(value) > MAX_ALLOWED_ORIGINS:
        raise BadRequest(f"{name}: must be a list of at most {MAX_ALLOWED_ORIGINS} origins")
    origins: list[str] = []
    for index, item in enumerate(value):
        origin = origin_check(item, name=f"{name}[{index}]")
        if origin not in origins:
            origins.append(origin)
    return origins


def embed_theme_check(value: Any, *, name: str = "embedTheme") -> dict[str, Any]:
    """``value`` if it is an EmbedTheme: known keys only, colors ``#hex``, a plain font list; else 400."""
    return _theme_part(value, _THEME_SHAPE, name)


def _theme_part(value: Any, shape: dict[str, Any], name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadRequest(f"{name}: must be an object")
    unknown = sorted(set(value) - set(shape))
    if unknown:
        raise BadRequest(f"{name}: unknown keys: {', '.join(map(str, unknown))}")
    checked: dict[str, Any] = {}
    for key, item in value.items():
        kind = shape[key]
        if isinstance(kind, dict):
            checked[key] = _theme_part(item, kind, f"{name}.{key}")
        elif kind == "color" and not (isinstance(item, str) and _COLOR_RE.match(item)):
            raise BadRequest(f"{name}.{key}: must be a color #rgb or #rrggbb")
        elif kind == "font" and not (isinstance(item, str) and _FONT_RE.match(item)):
            raise BadRequest(f"{name}.{key}: must be a font family list (letters, digits, spaces, quotes, commas)")
        else:
            checked[key] = item
    return checked


def _flag_check(value: Any, *, name: str) -> bool:
    if not isinstance(value, bool):
        raise BadRequest(f"{name}: must be a boolean")
    return value


def _count_check(value: Any, *, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 2**31 - 1:
        raise BadRequest(f"{name}: must be a non-negative integer")
    return value


# API name -> (TenantSettings field, the check that returns the value to store or raises BadRequest).
TENANT_SETTING_FIELDS: dict[str, tuple[str, Callable[..., Any]]] = {
    "useCreatorMode": ("use_creator_mode", _flag_check),
    "showDashboardChat": ("show_dashboard_chat", _flag_check),
    "allowAi": ("allow_ai", _flag_check),
    "allowExport": ("allow_export", _flag_check),
    "locale": ("embed_locale", locale_check),
    "timezone": ("embed_timezone", timezone_check),
    "restrictDataDownload": ("restrict_data_download", _flag_check),
    "embedAllowedOrigins": ("embed_allowed_origins", origins_check),
    "embedTheme": ("embed_theme", embed_theme_check),
    "maxExternalUsers": ("max_external_users", _count_check),
    "maxNonEphemeralChatUsers": ("max_non_ephemeral_chat_users", _count_check),
}


def tenant_settings_update(*, account: Account, changes: dict[str, Any]) -> TenantSettings:
    """Apply a flat set of setting changes (API names), all or nothing."""
    unknown = sorted(set(changes) - set(TENANT_SETTING_FIELDS))
    if unknown:
        raise BadRequest(f"Unknown settings: {', '.join(unknown)}")
    updates = {}
    for api_name, value in changes.items():
        field, check = TENANT_SETTING_FIELDS[api_name]
        updates[field] = check(value, name=api_name)
    with transaction.atomic():
        settings_row = TenantSettings.objects.select_for_update().get(account=account)
        for field, value in updates.items():
            setattr(settings_row, field, value)
        if updates:
            settings_row.save(update_fields=list(updates))
            CREDENTIALS.bump()  # an API key's caller carries its account's settings
    return settings_row


DATA_SOURCE_SCHEMES = ("duckdb://", "postgresql://", "postgres://")


def duckdb_url(path: str | os.PathLike[str]) -> str:
    """The ``duckdb://`` URL of a filesystem path, absolute or relative to the project directory."""
    return f"duckdb:///{os.fspath(path)}"


def deployment_configure(
    *,
    deployment: Deployment,
    model_dir: str | None = None,
    data_source_url: str | None = None,
    chat_token_auth: bool | None = None,
    open_to_embed_without_policy: bool | None = None,
) -> Deployment:
    """Set a deployment's data model directory, data source URL, chat token authentication, and whether cubes and
    views without an access policy are open to embed viewers (unsafe; docs/security.md).

    ``None`` leaves a setting as it is. The model directory must exist; the data source URL must be
    ``duckdb:///path`` or ``postgresql://...`` and is stored encrypted (it may hold a password).
    """
    updates: list[str] = []
    if model_dir is not None:
        path = Path(model_dir).expanduser().resolve()
        if not path.is_dir():
            raise BadRequest(f"model directory {model_dir!r} does not exist")
        deployment.model_dir = str(path)
        updates.append("model_dir")
    if data_source_url is not None:
        if not data_source_url.startswith(DATA_SOURCE_SCHEMES):
            raise BadRequest("data source URL must start with duckdb:/// or postgresql://")
        deployment.data_source_url_encrypted = credentials.encrypt_secret(data_source_url)
        updates.append("data_source_url_encrypted")
    if chat_token_auth is not None:
        deployment.chat_token_auth = chat_token_auth
        updates.append("chat_token_auth")
    if open_to_embed_without_policy is not None:
        deployment.open_to_embed_without_policy = open_to_embed_without_policy
        updates.append("open_to_embed_without_policy")
    if updates:
        deployment.save(update_fields=[*updates, "updated_at"])
        CREDENTIALS.bump()
    return deployment


@dataclass(frozen=True)
class Quota:
    """A per-account cap kept as a counter on :class:`TenantSettings` next to its limit."""

    counter: str
    limit: str
    exceeded: str  # message format with {limit}


EXTERNAL_USERS = Quota(
    counter="external_user_count",
    limit="max_external_users",
    exceeded="External user limit reached: this account allows at most {limit} external users",
)
NON_EPHEMERAL_CHAT_USERS = Quota(
    counter="non_ephemeral_chat_user_count",
    limit="max_non_ephemeral_chat_users",
    exceeded=(
        "Non-ephemeral chat user limit reached: this account allows at most {limit} non-ephemeral chat users; "
        "send isEphemeral: true or remove users"
    ),
)


@functools.cache
def _quota_reserve_sql(quota: Quota) -> str:
    """``UPDATE ... SET counter = counter + 1 WHERE account = %s AND counter < limit``.

    The ORM's update() compiles this anew on every call (half a millisecond on generate-session's path
    for each new user); only the model's own identifiers are formatted in.
    """
    meta = TenantSettings._meta
    qn = connection.ops.quote_name
    counter, limit = (qn(db_column(meta.get_field(name))) for name in (quota.counter, quota.limit))
    return (
        f"UPDATE {qn(meta.db_table)} SET {counter} = {counter} + 1 "  # noqa: S608
        f"WHERE {qn(db_column(meta.get_field('account')))} = %s AND {counter} < {limit}"
    )


def quota_reserve(*, account_id: int, quota: Quota) -> None:
    """Take one place under an account's cap, or raise 429 (ADR 0002).

    A single conditional UPDATE in the caller's transaction: on PostgreSQL the row lock makes
    concurrent reservations queue, and each re-checks the condition against the committed count, so
    the cap cannot be overshot.
    """
    with connection.cursor() as cursor:
        cursor.execute(_quota_reserve_sql(quota), [account_id])
        taken = cursor.rowcount
    if not taken:
        limit = TenantSettings.objects.filter(account_id=account_id).values_list(quota.limit, flat=True).first()
        raise LimitExceeded(quota.exceeded.format(limit=limit))


def quota_release(*, account_id: int, quota: Quota) -> None:
    """Give back one place under an account's cap (never below zero)."""
    TenantSettings.objects.filter(account_id=account_id, **{f"{quota.counter}__gt": 0}).update(
        **{quota.counter: F(quota.counter) - 1}
    )


def quota_recount(*, account_id: int, quota: Quota, count: Callable[[], int]) -> int:
    """Set a cap's counter to ``count()``, taken under the settings row lock so that no reservation
    slips in between the count and the write; returns the count."""
    with transaction.atomic():
        settings_row = TenantSettings.objects.select_for_update().get(account_id=account_id)
        actual = count()
        if getattr(settings_row, quota.counter) != actual:
            setattr(settings_row, quota.counter, actual)
            settings_row.save(update_fields=[quota.counter])
    return actual


# --- deployments, their env variables and issued tokens (Platform API) ----------------------------------------


def deployment_update(*, deployment: Deployment, name: str | None = None, slug: str | None = None) -> Deployment:
    """Rename a deployment or change its slug (unique in the account, 409); ``None`` keeps a field."""
    fields = [field for field, value in (("name", name), ("slug", slug)) if value is not None]
    if not fields:
        return deployment
    with transaction.atomic():
        deployment = Deployment.objects.select_for_update().get(pk=deployment.pk)
        if name is not None:
            deployment.name = name
        if slug is not None:
            deployment.slug = slug
        _full_clean(deployment)
        if (
            slug is not None
            and Deployment.objects.filter(account_id=deployment.account_id, slug=slug)
            .exclude(pk=deployment.pk)
            .exists()
        ):
            raise Conflict(f"Deployment slug {slug!r} is already used in this account")
        try:
            with transaction.atomic():
                deployment.save(update_fields=[*fields, "updated_at"])
        except IntegrityError:
            raise Conflict(f"Deployment slug {slug!r} is already used in this account") from None
        CREDENTIALS.bump()
    return deployment


def deployment_delete(*, deployment: Deployment) -> None:
    """Delete a deployment and everything that belongs to it (cascades: its signing secrets, env variables, issued
    token records, revoked tokens, workbooks, reports, folders, chat agents and their content). Its model directory
    on disk is left as it is. Tokens it signed stop verifying at once (the CREDENTIALS version)."""
    with transaction.atomic():
        Deployment.objects.filter(pk=deployment.pk).delete()
        CREDENTIALS.bump()


ENV_VARIABLE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENCRYPTED_PLACEHOLDER = "[ENCRYPTED]"
MAX_ENV_VARIABLES = 500


def env_variables_set(*, deployment: Deployment, variables: list[tuple[str, str]]) -> None:
    """Upsert a deployment's env variables by name, all or nothing; variables not named keep their values.

    Values are stored encrypted. ``[ENCRYPTED]`` (what a secret-looking value is answered as) is refused as a value:
    resending a listing must not overwrite the secret with the placeholder. New names must match
    ``^[A-Za-z_][A-Za-z0-9_]*$``; a stored name may be resent as it is."""
    seen: set[str] = set()
    with transaction.atomic():
        stored = {
            row.name: row for row in DeploymentEnvVariable.objects.select_for_update().filter(deployment=deployment)
        }
        for index, (name, value) in enumerate(variables):
            if name in seen:
                raise BadRequest(f"env_variables[{index}].name: {name!r} is given twice")
            seen.add(name)
            if name not in stored and not ENV_VARIABLE_NAME_RE.match(name):
                raise BadRequest(f"env_variables[{index}].name: must match ^[A-Za-z_][A-Za-z0-9_]*$")
            if value == ENCRYPTED_PLACEHOLDER:
                raise BadRequest(f"env_variables[{index}].value: {ENCRYPTED_PLACEHOLDER} is not a value")
        if len(set(stored) | seen) > MAX_ENV_VARIABLES:
            raise BadRequest(f"A deployment has at most {MAX_ENV_VARIABLES} env variables")
        for name, value in variables:
            encrypted = credentials.encrypt_secret(value)
            row = stored.get(name)
            if row is None:
                DeploymentEnvVariable.objects.create(deployment=deployment, name=name, encrypted_value=encrypted)
            else:
                row.encrypted_value = encrypted
                row.save(update_fields=["encrypted_value", "updated_at"])


def issued_token_record(
    *,
    deployment: Deployment,
    kind: str,
    jti: str,
    created_at: datetime.datetime,
    expires_at: datetime.datetime,
    environment: str = "",
    security_context: dict[str, Any] | None = None,
    scopes: list[str] | None = None,
    issued_by: PlatformToken | None = None,
) -> IssuedToken:
    """Record a token the Platform API issued: its ``jti``, claims and lifetime, never the token."""
    return IssuedToken.objects.create(
        deployment=deployment,
        kind=kind,
        environment=environment,
        jti=jti,
        security_context=security_context or {},
        scopes=scopes or [],
        issued_by=issued_by,
        created_at=created_at,
        expires_at=expires_at,
    )


def issued_tokens_purge(*, now: datetime.datetime | None = None) -> int:
    """Forget the records of issued tokens that have expired."""
    deleted, _ = IssuedToken.objects.filter(expires_at__lt=now or timezone.now()).delete()
    return deleted
