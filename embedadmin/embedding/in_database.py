"""generate-session's common case in one PostgreSQL statement (ADR 0010).

The full path (``services.session_generate``) makes ten round trips to the database for an existing
user and twelve for a new one: the deployment, BEGIN, the attribute catalog, the groups, the user
upsert, the memberships read and write, the attribute values, the session, the cap and COMMIT. On a
2-core machine each costs the web process about half a millisecond of CPU, which bounds the endpoint
well below its target. The migration ``embedding/0002`` installs ``embedadmin_session_generate_v1``,
which does the same reads, checks and writes inside PostgreSQL. Both callers run
``embedadmin_session_generate_v2`` (``0003``): ``_v1`` after an optional check of the API key. Django passes
no key (it has just authenticated it), so its request makes one round trip after the key lookup; the lane,
which remembers keys, passes one and so makes one round trip in all.

Scope: an external user in read-only mode (no ``creatorMode``, no definitions), which is what a host
back end sends on every page view. Anything else, and any request the function declines, takes the
full path. The function declines (SQLSTATE ``EA001``) exactly where the full path answers an error:
an unknown deployment, an unknown attribute or group, a value of the wrong type, the account's cap.
It raises before its transaction commits, so nothing is written, and the full path then runs and
words the error; the full path stays the one authority for every message.

tests/embedding/test_in_database.py runs both paths on the same requests and compares every row and
claim they write.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import DatabaseError, connection, transaction
from psycopg.types.json import Jsonb

DECLINED = "EA001"

# ``embedadmin_session_generate_v2`` (migration ``embedding/0003``); see :func:`call_params`.
CALL_SQL = (
    "SELECT embedadmin_session_generate_v2(%s::bigint, "
    "%s::bigint, %s::bigint, %s::text, %s::text, %s::text, %s::text, %s::text, %s::text[], %s::jsonb,"
    " %s::boolean, %s::text[], %s::jsonb, %s::boolean, %s::text, %s::uuid, %s::timestamptz, %s::timestamptz)"
)


class Declined(Exception):
    """The function wrote nothing: the full path decides (and words the error)."""


def serves(data: Any) -> bool:
    """Whether a request (a ``GenerateSessionInput``) is of the kind the function serves."""
    if data.external_id is None or data.creator_mode:
        return False
    if data.attribute_definitions or data.group_definitions:
        return False
    names = [name for name, _ in data.user_attributes or ()]
    return len(names) == len(set(names))  # duplicates are the full path's 400


def handles(data: Any) -> bool:
    """Whether this request goes to the function here: PostgreSQL, and a request it serves."""
    return connection.vendor == "postgresql" and serves(data)


def call_params(
    *, account_id: int, data: Any, key_digest: str, now: Any, expires_at: Any, api_key_id: int | None = None
) -> list[Any]:
    """The parameters of :data:`CALL_SQL` for one request. With ``api_key_id`` the function also checks that
    the key is still the account's, unrevoked, admin and unscoped (the lane); without, the caller has."""
    attributes = data.user_attributes or []
    profile = data.profile
    return [
        api_key_id,
        account_id,
        data.deployment_id,
        data.external_id,
        data.email,
        profile.display_name if profile is not None else None,
        profile.picture if profile is not None else None,
        data.embed_tenant_name,
        [name for name, _ in attributes],
        Jsonb([value for _, value in attributes]),
        data.groups is not None,
        list(data.groups or ()),
        Jsonb(data.security_context or {}),
        data.show_dashboard_chat,
        key_digest,
        uuid.uuid4(),
        now,
        expires_at,
    ]


def is_declined(exc: BaseException) -> bool:
    """Whether a psycopg error (or Django's wrapper of one) is the function declining."""
    cause = exc if getattr(exc, "sqlstate", None) is not None else exc.__cause__
    return getattr(cause, "sqlstate", None) == DECLINED


def session_generate(params: list[Any]) -> None:
    """Run the function with :func:`call_params`: the session (and the user, memberships, values) is
    written in one statement, or :class:`Declined` is raised with nothing written."""
    try:
        if connection.in_atomic_block:
            # Inside a caller's transaction: a savepoint keeps it usable after a decline.
            with transaction.atomic():
                _call(params)
        else:
            # Autocommit: the one statement is its own transaction (no BEGIN/COMMIT round trips).
            _call(params)
    except DatabaseError as exc:
        if is_declined(exc):
            raise Declined(str(exc.__cause__)) from None
        raise


def _call(params: list[Any]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(CALL_SQL, params)
