"""Internal users of an account: creation, changes, credentials revoked with them, deletion."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from embedadmin.accounts.models import (
    Account,
    AccountMembership,
    ApiKey,
    InternalUserProfile,
)
from embedadmin.accounts.services.credentials import CREDENTIALS
from embedadmin.accounts.services.validation import full_clean_or_400
from embedadmin.core.errors import BadRequest, Conflict
from embedadmin.core.rows import create_unique

if TYPE_CHECKING:
    from django.contrib.auth.models import User


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
    full_clean_or_400(user)
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
            full_clean_or_400(user)
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
