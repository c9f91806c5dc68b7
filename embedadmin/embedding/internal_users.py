"""The lifecycle of internal users across the rooms that hold their state: the one write path SCIM, the
Platform API's users admin and the panel's user pages call.

A user's own rows are the accounts app's (``accounts.services.internal_user_*``), its attribute values the
directory's, its embed sessions embedding's; this module is where they meet (embedding is the lowest room the
import layers let see all three), each change in one transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import Account
from embedadmin.accounts.services import InternalUserChanges
from embedadmin.core.errors import BadRequest
from embedadmin.directory import services as directory
from embedadmin.embedding import services as embedding

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def internal_user_save(
    *,
    account: Account,
    user: User | None,
    changes: InternalUserChanges,
    attribute_values: dict[str, Any] | None = None,
) -> User:
    """Create (``user`` None) or change an internal user, and set its attribute values when given; all or
    nothing. A user this call deactivates loses its sessions, tokens and keys at once (:func:`_revoke`)."""
    with transaction.atomic():
        if user is None:
            if not changes.username:
                raise BadRequest("userName is required")
            user = accounts.internal_user_create(
                account=account, username=changes.username, email="", is_admin=bool(changes.is_admin)
            )
        user, deactivated = accounts.internal_user_change(user=user, changes=changes)
        if attribute_values is not None:
            directory.internal_user_attributes_set(account=account, user_id=user.pk, values=attribute_values)
        if deactivated:
            embedding.internal_user_sessions_revoke(user_id=user.pk)
    return user


def internal_user_deactivate(*, account: Account, user: User) -> User:
    """Deactivate an internal user: no panel login, no personal API key, no embed session or token."""
    return internal_user_save(account=account, user=user, changes=InternalUserChanges(is_active=False))


def internal_user_remove(*, user: User) -> None:
    """Delete an internal user, revoking first what could outlive its row (embed tokens already exchanged)."""
    with transaction.atomic():
        embedding.internal_user_sessions_revoke(user_id=user.pk)
        accounts.internal_user_delete(user=user)
