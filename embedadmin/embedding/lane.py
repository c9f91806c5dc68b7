"""generate-session's common request answered on the event loop (ADR 0010).

``GenerateSessionLane`` wraps the ASGI application (``embedadmin/asgi.py``). For
``POST /api/v1/embed/generate-session`` it tries to answer on the event loop, with a small pool
of async PostgreSQL connections and no thread hand-off: one round trip (the one-statement write of
``in_database``) once the key is remembered, two when it is read (first use, every ``KEY_MAX_AGE_S``, and
after a failed write). It answers only what it is sure of:

- an ``Api-Key`` that is an admin key of the account, unrevoked, not scoped to deployments, compared
  in constant time. What a key is (its id, digest, kind and account) is read once by its prefix and then
  remembered; what can change about it (revocation, scope) is checked again by the statement that
  writes the session (``embedadmin_session_generate_v2``, migration ``embedding/0003``), so a revoked
  key is refused from the commit of its revocation;
- a JSON body that the validation fast path (``serializers.fast_input``) accepts as is, of the
  kind ``in_database`` serves;
- a write the function completes.

Everything else (another path, a missing or unknown key, a personal or scoped key, a body the fast
path leaves to the serializer, a decline, a database error) goes to the wrapped application with the
request body as read, and Django answers exactly as it would have: its full path is the one authority
for every error and every other kind of request. A request the function declines wrote nothing.

The answer is Django's: the same status, body and headers (tests/embedding/test_lane.py compares
them). The lane is on when the database is PostgreSQL; ``GENERATE_SESSION_LANE=false`` turns it off.
Each web process has a :class:`~embedadmin.core.lanes.LanePool` for it (and the Core Data API's lane),
besides Django's pool.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from embedadmin.accounts.authentication import ApiKeyAuthentication, credential_of
from embedadmin.accounts.models import ApiKey
from embedadmin.accounts.services import API_KEY_KIND
from embedadmin.core import credentials
from embedadmin.core.fields import loads_json
from embedadmin.core.lanes import LanePool, headers_once, read_some, remember, replay
from embedadmin.embedding import in_database, serializers, services

logger = logging.getLogger(__name__)

PATH = "/api/v1/embed/generate-session"
MAX_BODY_BYTES = 64 * 1024
KEY_MAX_AGE_S = 60.0

# The key by its prefix, as accounts.selectors._API_KEY_BY_PREFIX reads it; ``scoped`` is whether the key
# is restricted to some deployments.
_KEY_SQL = (
    "SELECT k.id, k.key_digest, k.kind, k.account_id,"
    " EXISTS (SELECT 1 FROM accounts_apikey_deployments d WHERE d.apikey_id = k.id) AS scoped"
    " FROM accounts_apikey k WHERE k.prefix = %s AND k.revoked_at IS NULL"
)

# Django's answer to a generate-session, besides Content-Length (DRF's Allow, the security middleware's).
_HEADERS = [
    (b"content-type", b"application/json"),
    (b"allow", b"POST, OPTIONS"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # DRF's parser refuses NaN and Infinity too


class GenerateSessionLane:
    """ASGI middleware: answers the common generate-session on the loop, hands the rest to ``app``."""

    def __init__(self, app: Callable, *, pool: LanePool) -> None:
        self.app = app
        self.pool = pool
        # prefix -> (the key's row, when it was read); only the event loop's thread touches it.
        self._keys: dict[str, tuple[tuple[Any, ...], float]] = {}

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or scope["path"] != PATH or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        body, complete = await read_some(receive, MAX_BODY_BYTES)
        if complete:
            session_id = await self._answer(scope, body)
            if session_id is not None:
                content = json.dumps({"sessionId": session_id}, separators=(",", ":")).encode()
                headers = [*_HEADERS, (b"content-length", str(len(content)).encode())]
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": content, "more_body": False})
                return None
        return await self.app(scope, replay(body, complete, receive), send)

    async def _answer(self, scope: dict[str, Any], body: bytes) -> str | None:
        """The new sessionId, or None when Django should answer."""
        headers = headers_once(scope, (b"content-type", b"authorization"))
        if headers is None:
            return None
        if not _json_utf8(headers.get(b"content-type", b"")):
            return None
        key = credential_of(headers.get(b"authorization", b"").decode("latin-1"), ApiKeyAuthentication.scheme)
        if key is None:
            return None
        try:
            data = loads_json(body.decode("utf-8"), parse_constant=_reject_constant)
        except ValueError:  # not UTF-8 (UnicodeDecodeError is one), a BOM, not JSON, an unpaired surrogate
            return None
        request = serializers.fast_input(data)
        if request is None or not in_database.serves(request):
            return None
        try:
            return await self._write(key, request)
        except Exception as exc:
            if not in_database.is_declined(exc):
                logger.warning("generate-session lane: %s; answered by Django instead", exc)
            return None

    async def _write(self, key: str, request: Any) -> str | None:
        prefix = credentials.split_prefix(API_KEY_KIND, key)
        if prefix is None:
            return None
        async with self.pool.connection() as conn:
            row = await self._key_row(conn, prefix)
            if row is None:
                return None
            key_id, key_digest, kind, account_id, scoped = row
            if not credentials.matches(key, key_digest) or kind != ApiKey.Kind.ADMIN or scoped:
                return None
            prepared = services.session_statement(account_id=account_id, data=request, api_key_id=key_id)
            if prepared is None:
                return None
            session_id, params = prepared
            try:
                await conn.execute(in_database.CALL_SQL, params)
            except Exception:
                self._keys.pop(prefix, None)  # read the key again next time (revoked, scoped, deleted?)
                raise
        return session_id

    async def _key_row(self, conn: Any, prefix: str) -> tuple[Any, ...] | None:
        """The key's row by its prefix: remembered for up to ``KEY_MAX_AGE_S`` once read."""
        known = self._keys.get(prefix)
        if known is not None and time.monotonic() - known[1] < KEY_MAX_AGE_S:
            return known[0]
        row = await (await conn.execute(_KEY_SQL, [prefix])).fetchone()
        if row is None:
            self._keys.pop(prefix, None)
            return None
        remember(self._keys, prefix, (tuple(row), time.monotonic()))
        return tuple(row)


def _json_utf8(content_type: bytes) -> bool:
    """``application/json``, in UTF-8 (the default, as DRF's parser reads it)."""
    media_type, *params = content_type.decode("latin-1").split(";")
    if media_type.strip().lower() != "application/json":
        return False
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return False
    return True
