"""Reads of accounts and credentials. Every lookup that could cross accounts takes ``account=``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from django.contrib.auth import get_user_model
from django.db.models import Exists, Model, OuterRef, Q, QuerySet
from django.utils import timezone

from embedadmin.accounts.models import (
    Account,
    ApiKey,
    Deployment,
    DeploymentEnvVariable,
    DeploymentSecret,
    IssuedToken,
    PlatformToken,
    RevokedToken,
    TenantSettings,
)
from embedadmin.accounts.services import API_KEY_KIND, CREDENTIALS, PLATFORM_TOKEN_KIND
from embedadmin.accounts.services.tenancy import TenantDataSources, tenant_data_sources_decrypt
from embedadmin.core import credentials
from embedadmin.core.edge.ids import row_id as parsed_row_id
from embedadmin.core.errors import Forbidden, NotFound
from embedadmin.core.prepared import PreparedQuery
from embedadmin.core.versions import ProcessMemory

if TYPE_CHECKING:
    from django.contrib.auth.models import User


ADMIN_KEY_REQUIRED = "{door} requires an admin API key; personal API keys are not allowed"


@dataclass(frozen=True)
class ApiKeyCaller:
    """Who is calling with an ``Api-Key``: the key, read with its account and whether it is scoped to
    deployments (the ``is_scoped`` annotation of the authenticating query)."""

    key: ApiKey
    credentials_version: str  # the CREDENTIALS version read before the key: what the caller's other reads go by

    @property
    def account(self) -> Account:
        return self.key.account

    @property
    def is_scoped(self) -> bool:
        # An annotation of _API_KEY_BY_PREFIX, which the types of a model instance cannot express.
        scoped: bool = self.key.is_scoped  # type: ignore[attr-defined]
        return scoped

    @property
    def is_admin(self) -> bool:
        return self.key.kind == ApiKey.Kind.ADMIN

    def may_access(self, deployment_id: int) -> bool:
        """Whether the key may act on this deployment: unscoped keys may act on all of the account's."""
        return not self.is_scoped or self.key.deployments.filter(pk=deployment_id).exists()

    # The one rule of "an admin key, in its deployment scope", for every door that takes one (the DRF permission
    # IsAdminApiKey, deployment_for_key, the Chat API): each answers why the key may not, or None.

    def admin_refusal(self, door: str = "This endpoint") -> str | None:
        """Why the key may not act as the account's administrator (a personal key), or None."""
        return None if self.is_admin else ADMIN_KEY_REQUIRED.format(door=door)

    def scope_refusal(self, deployment_id: int) -> str | None:
        """Why the key may not act on deployment ``deployment_id`` (outside its scope), or None."""
        return (
            None
            if self.may_access(deployment_id)
            else f"This API key is not allowed to access deployment {deployment_id}"
        )


@dataclass(frozen=True)
class PlatformCaller:
    """Who is calling the Platform API or SCIM with a bearer token."""

    account: Account
    token: PlatformToken


# Runs on every API-key request: compiled once (see embedadmin/core/prepared.py).
_API_KEY_BY_PREFIX: PreparedQuery[ApiKey] = PreparedQuery(
    ApiKey,
    lambda prefix: (
        ApiKey.objects.select_related("account", "account__tenant_settings")
        .annotate(is_scoped=Exists(ApiKey.deployments.through.objects.filter(apikey_id=OuterRef("pk"))))
        .filter(prefix=prefix, revoked_at__isnull=True)
        .order_by()[:1]
    ),
    sentinels=("\x00prefix",),
)


# What a process remembers of API keys and deployments (core/versions.py): keys by prefix, and deployments by
# account and id, each under the CREDENTIALS version.
_REMEMBERED_KEYS: ProcessMemory[ApiKey] = ProcessMemory()
_REMEMBERED_DEPLOYMENTS: ProcessMemory[Deployment] = ProcessMemory()


def api_key_authenticate(plaintext: str) -> ApiKeyCaller | None:
    """Return the caller for a presented API key, or None for an unknown, malformed or revoked key. The key's
    row is remembered by prefix; the digest is compared, in constant time, on every call."""
    prefix = credentials.split_prefix(API_KEY_KIND, plaintext)
    if prefix is None:
        return None
    version = CREDENTIALS.current()
    key = _REMEMBERED_KEYS.remembered(prefix, version, lambda: _API_KEY_BY_PREFIX.first(prefix))
    if key is None or not credentials.matches(plaintext, key.key_digest):
        return None
    return ApiKeyCaller(key=key, credentials_version=version)


def platform_token_authenticate(plaintext: str) -> PlatformCaller | None:
    prefix = credentials.split_prefix(PLATFORM_TOKEN_KIND, plaintext)
    if prefix is None:
        return None
    token = PlatformToken.objects.select_related("account").filter(prefix=prefix, revoked_at__isnull=True).first()
    if token is None or not credentials.matches(plaintext, token.token_digest):
        return None
    return PlatformCaller(account=token.account, token=token)


_DEPLOYMENT_OF_ACCOUNT: PreparedQuery[Deployment] = PreparedQuery(
    Deployment,
    lambda account_id, deployment_id: Deployment.objects.filter(account_id=account_id, pk=deployment_id).order_by()[:1],
    sentinels=(-9_000_001, -9_000_002),
)


def deployment_for_key(*, caller: ApiKeyCaller, deployment_id: int) -> Deployment:
    """The caller's deployment ``deployment_id``: 404 when the account has none, 403 outside the key's scope."""
    account_id = caller.account.pk
    deployment = _REMEMBERED_DEPLOYMENTS.remembered(
        (account_id, deployment_id),
        caller.credentials_version,
        lambda: _DEPLOYMENT_OF_ACCOUNT.first(account_id, deployment_id),
    )
    if deployment is None:
        raise NotFound(f"Deployment {deployment_id} not found")
    refusal = caller.scope_refusal(deployment_id)
    if refusal is not None:
        raise Forbidden(refusal)
    return deployment


# Read on every Core Data API request with an HS256 token: compiled once (embedadmin/core/prepared.py).
_ACTIVE_SECRETS: PreparedQuery[DeploymentSecret] = PreparedQuery(
    DeploymentSecret,
    lambda deployment_id: DeploymentSecret.objects.filter(deployment_id=deployment_id, revoked_at__isnull=True).only(
        "encrypted_secret"
    ),  # newest first: DeploymentSecret.Meta.ordering
    sentinels=(-9_000_001,),
)


def deployment_signing_secret(*, deployment: Deployment) -> str:
    """The newest active secret of a deployment, in clear: it signs tokens."""
    active = _ACTIVE_SECRETS.fetch(deployment.pk)
    if not active:
        raise Forbidden(f"Deployment {deployment.pk} has no active signing secret")
    return credentials.decrypt_secret(active[0].encrypted_secret)


_REVOKED_TOKEN: PreparedQuery[RevokedToken] = PreparedQuery(
    RevokedToken, lambda jti: RevokedToken.objects.filter(jti=jti).only("id").order_by()[:1], sentinels=("\x00jti",)
)


def deployment_verification_secrets(*, deployment_id: int) -> list[str]:
    """All active secrets of a deployment, newest first: any of them verifies a token."""
    return [credentials.decrypt_secret(row.encrypted_secret) for row in _ACTIVE_SECRETS.fetch(deployment_id)]


def token_is_revoked(*, jti: Any) -> bool:
    """Whether a token's ``jti`` was revoked (tokens without one cannot be revoked individually)."""
    return jti is not None and _REVOKED_TOKEN.first(str(jti)) is not None


def deployment_data_source_url(*, deployment: Deployment) -> str:
    """The deployment's data source URL in clear ('' when none is configured)."""
    if not deployment.data_source_url_encrypted:
        return ""
    return credentials.decrypt_secret(deployment.data_source_url_encrypted)


def deployment_tenant_data_sources(*, deployment: Deployment) -> TenantDataSources:
    """The security-context field that selects the deployment's data source and each value's URL, in clear (an
    empty :class:`TenantDataSources` when not set)."""
    return tenant_data_sources_decrypt(deployment.tenant_data_sources_encrypted)


def deployment_tenant_data_sources_shown(*, deployment: Deployment) -> dict[str, Any] | None:
    """The tenant data sources as they are answered and printed: ``{field, sources}`` with each URL's password
    replaced (``***``); None when not set."""
    stored = deployment_tenant_data_sources(deployment=deployment)
    if not stored.field:
        return None
    sources = {value: data_source_url_redacted(url) for value, url in sorted(stored.sources.items())}
    return {"field": stored.field, "sources": sources}


def data_source_url_redacted(url: str) -> str:
    """The URL with any password replaced, for display in the panel and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


# Read on every Core Data API request: compiled once (see embedadmin/core/prepared.py).
_DEPLOYMENT_BY_ID: PreparedQuery[Deployment] = PreparedQuery(
    Deployment,
    lambda deployment_id: Deployment.objects.filter(pk=deployment_id).order_by()[:1],
    sentinels=(-9_000_003,),
)
# The Core Data API's fallback rule reads this on every request without a /d/ prefix: compiled once too.
_MODELLED_DEPLOYMENTS: PreparedQuery[Deployment] = PreparedQuery(
    Deployment,
    lambda no_model: Deployment.objects.exclude(model_dir=no_model).order_by("id")[:2],
    sentinels=("\x00no-model",),
)


def deployment_by_id(*, deployment_id: int) -> Deployment | None:
    """A deployment by id, in no account's scope: for a request whose credential is verified against the
    deployment's own secrets (a Core Data API token, an embed token), which then fix the account. None for an id
    no row can have."""
    return _DEPLOYMENT_BY_ID.first(deployment_id) if parsed_row_id(deployment_id) is not None else None


def modelled_deployments() -> list[Deployment]:
    """The first two deployments with a data model (whether there is exactly one is what routing asks)."""
    return list(_MODELLED_DEPLOYMENTS.fetch(""))


def deployments_of(*, account: Account) -> QuerySet[Deployment]:
    """The account's deployments, for the caller to order and paginate."""
    return Deployment.objects.filter(account=account)


def internal_users_of(*, account: Account) -> QuerySet[User]:
    """The account's internal users, each read with its membership (which says whether it is an admin)."""
    return get_user_model().objects.filter(membership__account=account).select_related("membership")


def tenant_settings_of(*, account: Account) -> TenantSettings:
    """The account's tenant settings and user counts (every account has one row)."""
    return TenantSettings.objects.get(account=account)


def internal_user_of(*, account: Account, user_id: str | int) -> User:
    """The account's internal user whose id (or its decimal text, as SCIM and the Platform API give it) is
    ``user_id``, with its membership and profile; 404 for any other id, another account's user included."""
    return _one_of(internal_users_of(account=account).select_related("scim_profile"), user_id, "User")


@dataclass(frozen=True)
class InternalUsersPage:
    """One page of internal users: ``total`` match, ``users`` are those of the page (with membership and profile)."""

    total: int
    users: list[User]


def internal_users_page(*, account: Account, query: Q, start_index: int, count: int) -> InternalUsersPage:
    """The page of the account's internal users matching ``query`` from the 1-based ``start_index``, in id order."""
    users = internal_users_of(account=account).filter(query).select_related("scim_profile").distinct()
    total = users.count()
    offset = min(start_index - 1, total)
    return InternalUsersPage(total=total, users=list(users.order_by("pk")[offset : offset + count]))


_Row = TypeVar("_Row", bound=Model)


def _one_of(rows: QuerySet[_Row], row_id: str | int, what: str) -> _Row:
    """The row of ``rows`` whose id (or its decimal text, as URLs give it) is ``row_id``; 404 ("<what> <id> not
    found") for any other id, one no row can have included (non-ASCII digits such as "²", beyond a bigint)."""
    number = parsed_row_id(row_id)
    row = rows.filter(pk=number).first() if number is not None else None
    if row is None:
        raise NotFound(f"{what} {row_id} not found")
    return row


def deployment_of(*, account: Account, deployment_id: str | int) -> Deployment:
    """The account's deployment ``deployment_id``; 404 for any other id, another account's included."""
    return _one_of(Deployment.objects.filter(account=account), deployment_id, "Deployment")


def env_variables_of(*, deployment: Deployment) -> QuerySet[DeploymentEnvVariable]:
    """The deployment's env variables (values encrypted), for the caller to order and paginate."""
    return DeploymentEnvVariable.objects.filter(deployment=deployment)


def env_variable_value(*, variable: DeploymentEnvVariable) -> str:
    """An env variable's value in clear."""
    return credentials.decrypt_secret(variable.encrypted_value)


def issued_tokens_of(*, deployment: Deployment, kind: str, environment: str) -> QuerySet[IssuedToken]:
    """The records of the tokens issued for a deployment's environment that have not expired yet."""
    return IssuedToken.objects.filter(
        deployment=deployment, kind=kind, environment=environment, expires_at__gt=timezone.now()
    )


def api_keys_of(*, account: Account) -> QuerySet[ApiKey]:
    """The account's API keys, revoked ones included, with their deployment scope."""
    return ApiKey.objects.filter(account=account).prefetch_related("deployments")


def api_key_of(*, account: Account, key_id: str | int) -> ApiKey:
    """The account's API key ``key_id``; 404 for any other id."""
    return _one_of(ApiKey.objects.filter(account=account), key_id, "API key")


def platform_tokens_of(*, account: Account) -> QuerySet[PlatformToken]:
    """The account's platform tokens, revoked ones included."""
    return PlatformToken.objects.filter(account=account)


def platform_token_of(*, account: Account, token_id: str | int) -> PlatformToken:
    """The account's platform token ``token_id``; 404 for any other id."""
    return _one_of(PlatformToken.objects.filter(account=account), token_id, "Platform token")
