"""The embed session lifecycle: generate (mint), exchange (redeem once for a token), revoke."""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import models, transaction
from django.utils import timezone

from embedadmin.accounts.models import Account, Deployment, TenantSettings
from embedadmin.accounts.selectors import ApiKeyCaller, deployment_for_key
from embedadmin.accounts.services import EXTERNAL_USERS, quota_reserve
from embedadmin.accounts.tokens import deployment_token_revoke, deployment_token_sign
from embedadmin.audit.models import DailyUsage
from embedadmin.audit.services import usage_count
from embedadmin.core import credentials
from embedadmin.core.errors import BadRequest, Forbidden, NotFound, Unauthorized
from embedadmin.core.prepared import PreparedInsert
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory import services as directory
from embedadmin.embedding.models import EmbedSession
from embedadmin.embedding.tokens import embed_token_seal

# Claims the token sets itself; a securityContext may not override them.
RESERVED_CLAIMS = frozenset({"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "groups", "userAttributes", "embed"})

# Fields that identify the viewer and so cannot accompany internalId (spec 4.2 rule 1).
EXTERNAL_ONLY_FIELDS = (
    "groups",
    "userAttributes",
    "groupDefinitions",
    "userAttributeDefinitions",
    "securityContext",
    "userProfile",
)


_SESSION_INSERT: PreparedInsert[EmbedSession] = PreparedInsert(EmbedSession)


@dataclass(frozen=True)
class GenerateSessionInput:
    """A parsed generate-session request. ``None`` means "not sent" wherever sending matters."""

    deployment_id: int
    external_id: str | None = None
    internal_id: str | None = None
    email: str | None = None
    profile: directory.ProfileInput | None = None
    embed_tenant_name: str | None = None
    creator_mode: bool = False
    user_attributes: list[tuple[str, Any]] | None = None
    groups: list[str] | None = None
    attribute_definitions: list[directory.AttributeDefinitionInput] = field(default_factory=list)
    group_definitions: list[directory.GroupDefinitionInput] = field(default_factory=list)
    security_context: dict[str, Any] | None = None
    # The session's settings as sent (showDashboardChat, allowAi, allowExport, locale, timezone), nulls left out.
    settings: dict[str, Any] = field(default_factory=dict)
    embed_theme: dict[str, Any] | None = None


@dataclass(frozen=True)
class ExchangedToken:
    """A redeemed session: the embed token and when it expires."""

    token: str
    expires_at: dt.datetime


def _new_session_key() -> str:
    # 256 bits of randomness; only its digest is stored.
    return secrets.token_urlsafe(32)


def _check_request_shape(data: GenerateSessionInput, *, use_creator_mode: bool) -> None:
    """Rules that need no database: which fields may go together."""
    if (data.external_id is None) == (data.internal_id is None):
        raise BadRequest("Exactly one of externalId or internalId is required")
    if data.external_id is not None and not data.external_id:
        raise BadRequest("externalId: must not be empty")
    if data.creator_mode and not use_creator_mode:
        raise Forbidden("creatorMode requires the useCreatorMode tenant flag")
    has_definitions = bool(data.attribute_definitions or data.group_definitions)
    if has_definitions and not data.creator_mode:
        raise BadRequest("groupDefinitions and userAttributeDefinitions require creatorMode: true")
    if has_definitions and not data.embed_tenant_name:
        raise BadRequest("groupDefinitions and userAttributeDefinitions require embedTenantName")
    if data.security_context:
        reserved = sorted(RESERVED_CLAIMS & set(data.security_context))
        if reserved:
            raise BadRequest(f"securityContext: reserved claim names not allowed: {', '.join(reserved)}")


def session_generate_for_key(*, caller: ApiKeyCaller, data: GenerateSessionInput) -> str:
    """Mint a session for an API-key caller: the deployment must be the account's and in the key's scope."""
    deployment = deployment_for_key(caller=caller, deployment_id=data.deployment_id)
    return session_generate(account=caller.account, deployment=deployment, data=data)


def _session_expiry(now: dt.datetime) -> dt.datetime:
    return now + dt.timedelta(seconds=settings.EMBEDADMIN["SESSION_TTL_SECONDS"])


def _token_expiry(exchanged_at: dt.datetime) -> dt.datetime:
    """When the embed token of a session exchanged at ``exchanged_at`` expires (and its revocation may lapse)."""
    return exchanged_at + dt.timedelta(seconds=settings.EMBEDADMIN["EMBED_TOKEN_TTL_SECONDS"])


def session_generate(*, account: Account, deployment: Deployment, data: GenerateSessionInput) -> str:
    """Mint a single-use session for one viewer; returns the ``sessionId`` (shown only here).

    In one transaction: apply creator-mode definitions, upsert the external user within the account
    cap, set its groups and attribute values, and store the session. Any failure writes nothing.
    The API and the admin panel both come here.
    """
    if deployment.account_id != account.pk:
        raise NotFound(f"Deployment {deployment.pk} not found")
    _check_request_shape(data, use_creator_mode=account.tenant_settings.use_creator_mode)

    internal_user = None
    if data.internal_id is not None:
        internal_user = (
            get_user_model()
            .objects.filter(username=data.internal_id, membership__account=account, is_active=True)
            .first()
        )
        if internal_user is None:
            raise BadRequest(f"internalId: no internal user {data.internal_id!r} in this account")

    now = timezone.now()
    session_key = _new_session_key()
    with transaction.atomic():
        embed_tenant = (
            directory.embed_tenant_get_or_create(account=account, name=data.embed_tenant_name)
            if data.embed_tenant_name
            else None
        )
        scope = embed_tenant if data.creator_mode else None
        applies_definitions = data.creator_mode and bool(data.attribute_definitions or data.group_definitions)
        if applies_definitions:
            directory.definitions_apply(
                account=account,
                embed_tenant=embed_tenant,
                group_definitions=data.group_definitions,
                attribute_definitions=data.attribute_definitions,
            )

        claims: dict[str, Any]
        external_user = None
        created = False
        if internal_user is not None:
            claims = {
                "sub": internal_user.username,
                "groups": directory_selectors.internal_user_group_names(account=account, user_id=internal_user.pk),
                "userAttributes": {},
                "securityContext": {},
                "identity": {"internalId": internal_user.username, "email": internal_user.email},
            }
        else:
            assert data.external_id is not None  # _check_request_shape: exactly one of externalId or internalId
            catalog = directory_selectors.catalog_in_scope(
                account=account, embed_tenant=scope, remember=not applies_definitions
            )
            definitions = catalog.definitions
            attribute_values = []
            if data.user_attributes:
                named = directory_selectors.attribute_definitions_resolve(
                    definitions=definitions, names=[name for name, _ in data.user_attributes]
                )
                attribute_values = directory.attribute_values_check(definitions=named, values=data.user_attributes)
            groups = directory_selectors.groups_resolve(groups=catalog.groups, names=data.groups) if data.groups else []
            external_user, created = directory.external_user_upsert(
                account=account,
                external_id=data.external_id,
                email=data.email,
                profile=data.profile,
                embed_tenant=embed_tenant,
            )
            if data.groups is not None:
                directory.external_user_groups_set(
                    user=external_user, embed_tenant=scope, groups=groups, user_is_new=created
                )
            if attribute_values:
                directory.external_user_attributes_set(user=external_user, values=attribute_values)
            group_names, attributes = directory_selectors.external_user_claims(
                user=external_user,
                embed_tenant=scope,
                definitions=definitions,
                group_names=[g.name for g in groups] if data.groups is not None else None,
                written_values={d.pk: v for d, v in attribute_values},
                user_is_new=created,
            )
            claims = {
                "sub": external_user.external_id,
                "groups": group_names,
                "userAttributes": attributes,
                "securityContext": data.security_context or {},
                "identity": {
                    "externalId": external_user.external_id,
                    "email": external_user.email,
                    "userProfile": {"displayName": external_user.display_name, "picture": external_user.picture},
                },
            }

        _SESSION_INSERT.create(
            key_digest=credentials.digest(session_key),
            account=account,
            deployment=deployment,
            embed_tenant=embed_tenant,
            external_user=external_user,
            internal_user=internal_user,
            creator_mode=data.creator_mode,
            settings={key: value for key, value in data.settings.items() if value is not None},
            embed_theme=data.embed_theme or {},
            claims=claims,
            expires_at=_session_expiry(now),
        )
        # Last before the commit (the counter rows stay locked until then), always in this order.
        usage_count(account_id=account.pk, kind=DailyUsage.Kind.SESSIONS)
        if created:
            quota_reserve(account_id=account.pk, quota=EXTERNAL_USERS)
    return session_key


def renew_at(expires_at: dt.datetime) -> dt.datetime:
    """When an embed page should ask its host for a new session (``cube:event:session-expiring``):
    ``EMBED_RENEW_LEAD_SECONDS`` before its token expires, at most half the token's lifetime before."""
    ttl = settings.EMBEDADMIN["EMBED_TOKEN_TTL_SECONDS"]
    lead = min(settings.EMBEDADMIN["EMBED_RENEW_LEAD_SECONDS"], ttl // 2)
    return expires_at - dt.timedelta(seconds=lead)


def session_exchange(*, session_id: str) -> ExchangedToken:
    """Redeem a session once for an embed token; unknown, expired, used or revoked is 401.

    The claim is one conditional UPDATE, so of two requests racing for one session exactly one wins.
    """
    now = timezone.now()
    digest = credentials.digest(session_id)
    # Claim and sign in one transaction: if signing fails (no active secret), the claim rolls back
    # and the session stays usable. Concurrent claims queue on the row lock and re-check the WHERE.
    with transaction.atomic():
        claimed = EmbedSession.objects.filter(
            key_digest=digest, exchanged_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now
        ).update(exchanged_at=now)
        if not claimed:
            raise Unauthorized("Session is invalid, expired or already used")
        session = EmbedSession.objects.select_related("deployment", "embed_tenant", "account__tenant_settings").get(
            key_digest=digest
        )
        expires_at = _token_expiry(now)
        claims = embed_token_claims(session=session)
        # Sealed last, over every claim and the expiry the token is signed with (deployment_token_sign writes the
        # same integer): a holder of the deployment secret can change none of them.
        claims["embed"]["seal"] = embed_token_seal(payload={**claims, "exp": int(expires_at.timestamp())})
        token = deployment_token_sign(deployment=session.deployment, claims=claims, expires_at=expires_at)
    return ExchangedToken(token=token, expires_at=expires_at)


@dataclass(frozen=True)
class EmbedSettings:
    """What an embed session may show and how: the account's defaults under the session's own values."""

    show_dashboard_chat: bool
    allow_ai: bool
    allow_export: bool
    locale: str
    timezone: str
    embed_theme: dict[str, Any]

    def as_claim(self) -> dict[str, Any]:
        return {
            "showDashboardChat": self.show_dashboard_chat,
            "allowAi": self.allow_ai,
            "allowExport": self.allow_export,
            "locale": self.locale,
            "timezone": self.timezone,
            "embedTheme": self.embed_theme,
        }


def _theme_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        merged[key] = _theme_merge(below, value) if isinstance(value, dict) and isinstance(below, dict) else value
    return merged


def embed_settings_resolve(
    *, account_settings: TenantSettings, session_settings: dict[str, Any], session_theme: dict[str, Any]
) -> EmbedSettings:
    """The one resolution of an embed session's settings (reference 1.5).

    A session value that is omitted or null inherits the account's. ``allowAi`` false withholds AI whatever
    ``showDashboardChat`` says, so the dashboard chat shows only when both are on. ``allowExport`` is what the host
    signed; the page's URL may only narrow it and the account's ``restrictDataDownload`` outranks it, both judged
    when the page asks (``embedding.pages.effective_flags``). ``embedTheme`` is the account's theme with the
    session's keys over it.
    """

    def pick(name: str, default: Any) -> Any:
        value = session_settings.get(name)
        return default if value is None else value

    allow_ai = bool(pick("allowAi", account_settings.allow_ai))
    return EmbedSettings(
        show_dashboard_chat=allow_ai and bool(pick("showDashboardChat", account_settings.show_dashboard_chat)),
        allow_ai=allow_ai,
        allow_export=bool(pick("allowExport", account_settings.allow_export)),
        locale=str(pick("locale", account_settings.embed_locale)),
        timezone=str(pick("timezone", account_settings.embed_timezone)),
        embed_theme=_theme_merge(account_settings.embed_theme or {}, session_theme or {}),
    )


def embed_token_claims(*, session: EmbedSession) -> dict[str, Any]:
    """The payload of a session's embed token: the security context at top level, like any Core Data
    API token, plus the reserved ``groups``, ``userAttributes`` and ``embed`` claims."""
    stored = session.claims
    resolved = embed_settings_resolve(
        account_settings=session.account.tenant_settings,
        session_settings=session.settings,
        session_theme=session.embed_theme,
    )
    jti = str(session.public_id)
    return {
        **stored.get("securityContext", {}),
        "iss": settings.EMBEDADMIN["EMBED_TOKEN_ISSUER"],
        "sub": stored["sub"],
        "jti": jti,
        "groups": stored.get("groups", []),
        "userAttributes": stored.get("userAttributes", {}),
        "embed": {
            "accountName": session.account.name,
            "deploymentId": session.deployment_id,
            "embedTenant": session.embed_tenant.name if session.embed_tenant else None,
            "creatorMode": session.creator_mode,
            "settings": resolved.as_claim(),
            **stored.get("identity", {}),
        },
    }


def session_revoke(*, caller: ApiKeyCaller, session_id: str) -> None:
    """Revoke a session of the caller's account, before or after its exchange. Idempotent: a session
    that is unknown, of another account or already revoked is left alone without an error."""
    now = timezone.now()
    session = (
        EmbedSession.objects.select_related("deployment")
        .filter(key_digest=credentials.digest(session_id), account=caller.account)
        .first()
    )
    if session is None:
        return
    if not caller.may_access(session.deployment_id):
        return
    with transaction.atomic():
        EmbedSession.objects.filter(pk=session.pk, revoked_at__isnull=True).update(revoked_at=now)
        # Re-read under the row lock the UPDATE took: an exchange that won the race is visible now.
        exchanged_at = EmbedSession.objects.filter(pk=session.pk).values_list("exchanged_at", flat=True).get()
        if exchanged_at is not None:
            deployment_token_revoke(
                deployment=session.deployment, jti=str(session.public_id), expires_at=_token_expiry(exchanged_at)
            )


def internal_user_sessions_revoke(*, user_id: int) -> int:
    """Revoke every live embed session minted for an internal user (``internalId``), and the embed token of each
    one already exchanged: a deactivated or deleted user can neither redeem a session nor use its token. Runs in
    the caller's transaction (the user's deactivation). Returns how many sessions were revoked."""
    now = timezone.now()
    ttl = dt.timedelta(seconds=settings.EMBEDADMIN["EMBED_TOKEN_TTL_SECONDS"])
    live = EmbedSession.objects.select_for_update(of=("self",)).filter(
        internal_user_id=user_id, revoked_at__isnull=True
    )
    sessions = list(
        live.filter(models.Q(expires_at__gt=now) | models.Q(exchanged_at__gt=now - ttl))
        .select_related("deployment")
        .order_by("pk")
    )
    for session in sessions:
        if session.exchanged_at is not None and session.exchanged_at + ttl > now:
            deployment_token_revoke(
                deployment=session.deployment, jti=str(session.public_id), expires_at=session.exchanged_at + ttl
            )
    EmbedSession.objects.filter(pk__in=[s.pk for s in sessions]).update(revoked_at=now)
    return len(sessions)
