"""Chat users: who a request speaks for, their upsert within the account's non-ephemeral limit, the
expiry of ephemeral users and the recount of both user caps."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.utils import timezone

from embedadmin.accounts.models import Account
from embedadmin.accounts.services import NON_EPHEMERAL_CHAT_USERS, quota_recount, quota_release, quota_reserve
from embedadmin.audit.models import DailyUsage
from embedadmin.audit.services import usage_snapshot
from embedadmin.chat import selectors
from embedadmin.chat.authentication import ChatCredential
from embedadmin.chat.bus import EventBus, bus_for_settings, thread_channel
from embedadmin.chat.models import Agent, ChatUser, Run
from embedadmin.chat.services.runs import HEARTBEAT_SECONDS, stale_before
from embedadmin.core.errors import BadRequest, Conflict
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory import services as directory

if TYPE_CHECKING:
    from django.contrib.auth.models import User

DEFAULT_EPHEMERAL_TTL_SECONDS = 7 * 24 * 3600
EXPIRE_BATCH_SIZE = 500
# How long the expiry waits for the running runs of expiring users to stop: an abort reaches a run at once
# through the bus, or at its next heartbeat when the bus is away. Then a moment for their streams to read
# the closing frames before the log goes with the threads.
EXPIRY_RUNS_GRACE_SECONDS = HEARTBEAT_SECONDS + 1.0
EXPIRY_STREAMS_GRACE_SECONDS = 0.5


@dataclass(frozen=True)
class ChatIdentity:
    """Who a request speaks for and what they query with. ``None`` keeps what was stored."""

    external_id: str | None = None
    internal_user: User | None = None
    email: str | None = None
    groups: list[str] | None = None
    user_attributes: dict[str, Any] | None = None
    security_context: dict[str, Any] | None = None
    is_ephemeral: bool | None = None
    ttl_seconds: int | None = None


@dataclass(frozen=True)
class SessionSettingsInput:
    """A parsed ``sessionSettings``; ``None`` means "not sent"."""

    external_id: str | None = None
    internal_id: str | None = None
    email: str | None = None
    user_attributes: list[tuple[str, Any]] | None = None
    groups: list[str] | None = None
    security_context: dict[str, Any] | None = None
    is_ephemeral: bool | None = None
    ephemeral_ttl_seconds: int | None = None


def internal_user_of_account(*, account: Account, internal_id: str) -> User | None:
    """The active internal user of ``account`` whose username or email is ``internal_id``."""
    return (
        get_user_model()
        .objects.filter(Q(username=internal_id) | Q(email__iexact=internal_id), membership__account=account)
        .filter(is_active=True)
        .order_by("pk")
        .first()
    )


def identity_from_session_settings(*, account: Account, data: SessionSettingsInput) -> ChatIdentity:
    """The identity an API-key request describes: its user attributes are typed by the account's
    tenant-wide catalog (unknown names are refused) and missing ones take their defaults."""
    if data.internal_id is not None:
        user = internal_user_of_account(account=account, internal_id=data.internal_id)
        if user is None:
            raise BadRequest(f"sessionSettings.internalId: no internal user {data.internal_id!r} in this account")
        return ChatIdentity(
            internal_user=user,
            email=user.email,
            groups=directory_selectors.internal_user_group_names(account=account, user_id=user.pk),
            user_attributes={},
            security_context={},
            is_ephemeral=data.is_ephemeral,
            ttl_seconds=data.ephemeral_ttl_seconds,
        )
    attributes = None
    if data.user_attributes is not None:
        definitions = directory_selectors.catalog_in_scope(account=account, embed_tenant=None).definitions
        named = directory_selectors.attribute_definitions_resolve(
            definitions=definitions, names=[name for name, _ in data.user_attributes]
        )
        checked = directory.attribute_values_check(definitions=named, values=data.user_attributes)
        attributes = directory_selectors.attribute_claims(
            definitions=definitions, values={definition.pk: value for definition, value in checked}
        )
    return ChatIdentity(
        external_id=data.external_id,
        email=data.email,
        groups=data.groups,
        user_attributes=attributes,
        security_context=data.security_context,
        is_ephemeral=data.is_ephemeral,
        ttl_seconds=data.ephemeral_ttl_seconds,
    )


def _expiry(now: dt.datetime, ttl_seconds: int | None) -> dt.datetime:
    return now + dt.timedelta(seconds=ttl_seconds or DEFAULT_EPHEMERAL_TTL_SECONDS)


def _chat_user_create(*, account: Account, identity: ChatIdentity, now: dt.datetime) -> ChatUser | None:
    """Insert the user (reserving a place when non-ephemeral); None when a concurrent request won."""
    ephemeral = identity.is_ephemeral is not False
    try:
        with transaction.atomic():
            user = ChatUser.objects.create(
                account=account,
                external_id=identity.external_id or "",
                internal_user=identity.internal_user,
                email=identity.email or "",
                groups=identity.groups or [],
                user_attributes=identity.user_attributes or {},
                security_context=identity.security_context or {},
                is_ephemeral=ephemeral,
                expires_at=_expiry(now, identity.ttl_seconds) if ephemeral else None,
            )
            if not ephemeral:
                quota_reserve(account_id=account.pk, quota=NON_EPHEMERAL_CHAT_USERS)
            return user
    except IntegrityError:
        return None


def _chat_user_update(*, user: ChatUser, identity: ChatIdentity, now: dt.datetime) -> ChatUser:
    """Refresh the snapshot and apply an explicit change of kind (within the limit) or a shorter TTL."""
    updates: dict[str, Any] = {
        field: value
        for field, value in (
            ("email", identity.email),
            ("groups", identity.groups),
            ("user_attributes", identity.user_attributes),
            ("security_context", identity.security_context),
        )
        if value is not None and getattr(user, field) != value
    }
    with transaction.atomic():
        if identity.is_ephemeral is False and user.is_ephemeral:
            quota_reserve(account_id=user.account_id, quota=NON_EPHEMERAL_CHAT_USERS)
            updates.update(is_ephemeral=False, expires_at=None)
        elif identity.is_ephemeral is True and not user.is_ephemeral:
            quota_release(account_id=user.account_id, quota=NON_EPHEMERAL_CHAT_USERS)
            updates.update(is_ephemeral=True, expires_at=_expiry(now, identity.ttl_seconds))
        elif user.is_ephemeral and identity.ttl_seconds is not None:
            # Never outlive a TTL once given: a shorter one moves the expiry closer, a longer one does not.
            assert user.expires_at is not None  # an ephemeral user has one (chat_user_ephemeral_has_expiry)
            updates["expires_at"] = min(user.expires_at, _expiry(now, identity.ttl_seconds))
        if updates:
            updates["updated_at"] = now
            ChatUser.objects.filter(pk=user.pk).update(**updates)
    for field, value in updates.items():
        setattr(user, field, value)
    return user


def chat_user_upsert(*, account: Account, identity: ChatIdentity, now: dt.datetime | None = None) -> ChatUser:
    """Find or create the chat user of ``identity``.

    New users are ephemeral unless ``is_ephemeral`` is False, which takes a place under the account's
    non-ephemeral limit in the same transaction as the insert. An ephemeral user already past its expiry
    is deleted (with its threads) and created afresh: it never outlives its TTL, even when the expiry
    worker is late.
    """
    now = now or timezone.now()
    for _ in range(3):
        user = selectors.chat_user_find(
            account=account, external_id=identity.external_id, internal_user=identity.internal_user
        )
        # An ephemeral user has an expiry (chat_user_ephemeral_has_expiry).
        if user is not None and user.is_ephemeral and user.expires_at is not None and user.expires_at <= now:
            _runs_stop(Q(thread__owner_id=user.pk), wait_seconds=0)
            ChatUser.objects.filter(pk=user.pk, is_ephemeral=True, expires_at__lte=now).delete()
            user = None
        if user is None:
            user = _chat_user_create(account=account, identity=identity, now=now)
            if user is not None:
                return user
            continue  # created concurrently: read it and update it
        user.account = account
        return _chat_user_update(user=user, identity=identity, now=now)
    raise Conflict("The chat user is being changed by another request; try again")


def query_context_of(user: ChatUser) -> dict[str, Any]:
    """What the agent queries with for ``user`` (stored on each run, so any process can rebuild it)."""
    return {"securityContext": user.security_context, "groups": user.groups, "userAttributes": user.user_attributes}


def identity_for_request(
    *, agent: Agent, credential: ChatCredential, session_settings: SessionSettingsInput | None
) -> ChatIdentity:
    """Who a stream request speaks for: the token's claims (``sessionSettings`` ignored), or the
    ``sessionSettings`` an API key must send."""
    if credential.token is not None:
        context = credential.token
        return ChatIdentity(
            external_id=credential.token_external_id,
            email=credential.token_email,
            groups=list(context.groups),
            user_attributes=dict(context.user_attributes),
            security_context=dict(context.payload),
        )
    if session_settings is None:
        raise BadRequest("sessionSettings is required with API key authentication")
    return identity_from_session_settings(account=agent.account, data=session_settings)


def abort_requester(
    *, agent: Agent, credential: ChatCredential, external_id: str | None, internal_id: str | None
) -> tuple[ChatUser | None, bool]:
    """Who asks to abort: the token's user, or the user ``sessionSettings`` names. An API key without
    ``sessionSettings`` acts for the whole account (second value True)."""
    if credential.token is not None:
        return selectors.chat_user_find(account=agent.account, external_id=credential.token_external_id), False
    if internal_id is not None:
        internal_user = internal_user_of_account(account=agent.account, internal_id=internal_id)
        if internal_user is None:
            return None, False
        return selectors.chat_user_find(account=agent.account, internal_user=internal_user), False
    if external_id is not None:
        return selectors.chat_user_find(account=agent.account, external_id=external_id), False
    return None, True


def chat_users_expire(*, now: dt.datetime | None = None, batch_size: int = EXPIRE_BATCH_SIZE) -> int:
    """Delete ephemeral chat users past their expiry, with their threads, in batches; returns how many.

    Runs still streaming for those users are aborted first, and given a moment to end (their streams end
    with an aborted run's closing frames) before their log goes. Each batch locks its rows with ``SKIP
    LOCKED``, so two workers running at once share the work instead of waiting on (or deadlocking over) the
    same users; running it again deletes nothing more.
    """
    now = now or timezone.now()
    _runs_stop(Q(thread__owner__is_ephemeral=True, thread__owner__expires_at__lte=now))
    deleted = 0
    while True:
        with transaction.atomic():
            ids = list(
                ChatUser.objects.select_for_update(skip_locked=True)
                .filter(is_ephemeral=True, expires_at__lte=now)
                .order_by("pk")
                .values_list("pk", flat=True)[:batch_size]
            )
            if not ids:
                return deleted
            ChatUser.objects.filter(pk__in=ids).delete()
        deleted += len(ids)


def _runs_stop(
    owners: Q,
    *,
    wait_seconds: float = EXPIRY_RUNS_GRACE_SECONDS,
    bus: EventBus | None = None,
) -> None:
    """Abort the running runs of the threads ``owners`` selects (recorded on the run and published, as an
    abort request is), then wait up to ``wait_seconds`` for those whose process is alive to end."""
    # Whether each run's process lives is the database's judgement (its clock wrote the heartbeats): never this
    # server's clock, which may run ahead of it and take live runs for dead.
    alive = ExpressionWrapper(Q(heartbeat_at__gte=stale_before()), output_field=BooleanField())
    running = list(
        Run.objects.filter(owners, status=Run.Status.RUNNING)
        .annotate(alive=alive)
        .values_list("pk", "thread_id", "alive")
    )
    if not running:
        return
    Run.objects.filter(pk__in=[run_id for run_id, _, _ in running], status=Run.Status.RUNNING).update(
        abort_requested=True
    )
    bus = bus or bus_for_settings()
    for run_id, thread_id, _ in running:
        bus.publish(thread_channel(thread_id), {"kind": "abort", "run": run_id})
    if wait_seconds <= 0:
        return
    live = [run_id for run_id, _, is_alive in running if is_alive]
    deadline = time.monotonic() + wait_seconds
    while live and time.monotonic() < deadline:
        time.sleep(0.05)
        live = list(Run.objects.filter(pk__in=live, status=Run.Status.RUNNING).values_list("pk", flat=True))
    time.sleep(EXPIRY_STREAMS_GRACE_SECONDS)


def user_counts_reconcile(*, account: Account, day: dt.date | None = None) -> dict[str, int]:
    """Recount the account's external and non-ephemeral chat users into its counters, and record the three user
    counts as the day's figures in the one daily usage table (``audit.usage_snapshot``: the panel's usage page and
    ``GET /api/v1/usage`` read them). Returns the figures recorded."""
    external = directory.external_user_count_reconcile(account=account)
    non_ephemeral = quota_recount(
        account_id=account.pk,
        quota=NON_EPHEMERAL_CHAT_USERS,
        count=ChatUser.objects.filter(account=account, is_ephemeral=False).count,
    )
    ephemeral = ChatUser.objects.filter(account=account, is_ephemeral=True).count()
    figures = {
        DailyUsage.Kind.EXTERNAL_USERS.value: external,
        DailyUsage.Kind.NON_EPHEMERAL_CHAT_USERS.value: non_ephemeral,
        DailyUsage.Kind.EPHEMERAL_CHAT_USERS.value: ephemeral,
    }
    usage_snapshot(account_id=account.pk, figures=figures, day=day)
    return figures
