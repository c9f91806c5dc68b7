"""``/v1/load`` answered on the event loop before Django, exactly as Django would answer it (ADR 0011).

A dashboard asks the same queries again and again, and most answers come from the result cache.
Django still routes each request, verifies its token and compiles the query before it finds the
cached rows, which costs a few milliseconds. ``LoadLane`` wraps the ASGI application
(``embedadmin/asgi.py``) for ``GET``/``POST {base}/v1/load`` (``/d/{id}{base}/v1/load``, or the default
deployment's path when ``DEFAULT_DEPLOYMENT_ID`` is set). It routes the request and verifies its HS256
token itself, then:

1. gives an answer it kept, byte for byte, when every condition below holds;
2. otherwise takes the view's own steps: :func:`views.load_work` plans the load on the event loop, its
   results are awaited from the result cache's runner (:func:`service.read_results_async`: the query runs on
   the runner's worker thread, and a cached result is read on a worker thread), and
   :func:`service.finish_load` shapes the answer, on a worker thread when it has more than ``LOOP_ROWS``
   rows. Errors get Django's bodies (``views.error_answer``), answers the headers of Django's answers
   (learned from the first load Django answers here).

A request the lane cannot read the way Django does (JWKS tokens, a body that is not a JSON object, time
zones it cannot read, a non-ASCII query string, the process's first load) goes to Django.

An answer is given again only with:

- **The same request.** The same deployment, the same method, and the same raw query string or body, so
  that Django would parse the same query.
- **The same caller.** The token is verified on every request, against the deployment's active secrets and
  the token's revocation, read in one round trip on the lane's async pool and then remembered while a
  listening connection hears no change to them (:class:`_Changes`). The answer is kept under the caller's
  identity, ``QueryContext.identity``, the key of the result cache and of access policies.
- **The same model.** The same ``compilerId``, read from the model registry, which notices file changes
  within its check interval exactly as Django's path does.
- **The same time.** Relative date ranges resolve against the current time. An answer is kept under the
  current local time in each of the request's time zones, truncated to the finest unit its query could
  name (day, or hour, minute, second when the query mentions one). Custom granularities, which depend on
  the year, are covered by the same key.
- **The same rows.** Each result the answer was made of is still the one this process last wrote to the
  result cache (``QueryRunner.written_at``) and is still fresh (``refresh_key.every``). An answer is kept
  only when all of them were fresh, the request read the cache (not ``no-cache``), and none was stale;
  Django's view reports that through a slot in the request's environ.

The lane is installed on PostgreSQL with a result cache local to the process (no ``REDIS_URL``), because only
there does every write of a result pass through ``written_at``: neither the embedded default (SQLite, no
lane pool) nor the scaled-out setup (Redis) has it. ``LOAD_LANE=false`` turns it off.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import math
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

import jwt
import psycopg
from django.conf import settings

from embedadmin.accounts.models import Deployment
from embedadmin.accounts.tokens import LEEWAY_SECONDS, TokenInvalid, hs256_verify
from embedadmin.core import credentials
from embedadmin.core.errors import BadRequest
from embedadmin.core.fields import MAX_BIGINT
from embedadmin.core.lanes import LanePool, headers_once, read_some, remember, remembered, replay
from embedadmin.core.wsgi_bridge import ENVIRON_EXTRAS

from . import service, views
from .auth import SecurityContext, authorization_token
from .cache import CachedResult, ContinueWait, query_runner
from .context import QueryContext
from .datasources import dialect_of
from .dates import format_local, local_now, resolve_timezone, start_of
from .registry import ModelVersion, load_model, loaded_model
from .routing import query_context
from .service import LoadAnswer, LoadWork, ResultUse, ServedModel, json_bytes

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
MAX_ANSWER_BYTES = 256 * 1024
MAX_KEPT_BYTES = 32 * 1024 * 1024
ROW_MAX_AGE_S = 60.0
# Answers of at most this many rows are shaped on the event loop; larger ones on a worker thread.
LOOP_ROWS = 500

_DEPLOYMENT_SQL = (
    "SELECT d.model_dir, d.data_source_url_encrypted, d.jwt_audience, d.jwt_issuer,"
    " ARRAY(SELECT s.encrypted_secret FROM accounts_deploymentsecret s"
    "       WHERE s.deployment_id = d.id AND s.revoked_at IS NULL ORDER BY s.created_at DESC, s.id DESC),"
    " EXISTS (SELECT 1 FROM accounts_revokedtoken r WHERE r.jti = %s)"
    " FROM accounts_deployment d WHERE d.id = %s"
)


@dataclass(frozen=True)
class _Kept:
    """A 200 answer kept for the same request."""

    headers: list[tuple[bytes, bytes]]
    body: bytes
    reuse: tuple[ResultUse, ...]


@dataclass(frozen=True)
class _Admitted:
    """A request the lane has routed and whose token it has verified: what Django's view would run."""

    key: tuple[Any, ...]  # what its answer is kept under
    deployment_id: int
    model_dir: str
    source_encrypted: str
    source: tuple[str, str]  # the data source's URL in clear, and its dialect
    version: ModelVersion  # the deployment's model version the lane looked up (its model is not None)
    ctx: QueryContext
    method: str
    raw: bytes  # the query string of a GET, the body of a POST (a JSON object: time_shape read it)
    # Cube's parameters when reading the request's shape parsed them; None when its shape was remembered (a
    # kept answer needs no parameters: they are read only if the request is answered afresh).
    params: dict[str, Any] | None

    def served(self) -> ServedModel:
        """What Django's view would serve the request from (built only for a request answered afresh)."""
        deployment = Deployment(
            pk=self.deployment_id, model_dir=self.model_dir, data_source_url_encrypted=self.source_encrypted
        )
        url, dialect = self.source
        assert self.version.model is not None
        return ServedModel(
            deployment=deployment, model=self.version.model, error=self.version.error, source_url=url, dialect=dialect
        )


class LoadLane:
    """ASGI middleware: answers ``/v1/load`` from the answers kept or by the view's own steps; hands what it
    cannot read as Django does to ``app``."""

    def __init__(self, app: Callable, *, pool: LanePool, base_path: str, default_deployment_id: int = 0) -> None:
        self.app = app
        self.pool = pool
        base = re.escape(base_path.rstrip("/"))
        self._prefixed = re.compile(rf"^/d/([0-9]{{1,19}}){base}/v1/load$")
        self._plain = re.compile(rf"^{base}/v1/load$")
        self.default_deployment_id = default_deployment_id
        # Only the event loop's thread touches these.
        self._kept: OrderedDict[tuple[Any, ...], _Kept] = OrderedDict()
        self._kept_bytes = 0
        self._changes = _Changes(pool.params)
        self._rows: dict[tuple[int, str | None], tuple[tuple[Any, ...] | None, int, float]] = {}
        # Pure functions of their keys, remembered (core.lanes.remember).
        self._secrets: dict[tuple[str, ...], list[str]] = {}
        self._tokens: dict[tuple[Any, ...], tuple[dict[str, Any], QueryContext, float]] = {}
        self._claims: dict[str, tuple[Any, Any] | None] = {}
        self._shapes: dict[str, tuple[str, tuple[str, ...]] | None] = {}
        self._sources: dict[str, tuple[str, str]] = {}
        self._time_keys: dict[tuple[Any, ...], tuple[str, ...]] = {}
        # The headers of Django's answers to /v1/load (but for Content-Length), learned from the first one.
        self._answer_headers: list[tuple[bytes, bytes]] | None = None

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        deployment_id = self._deployment_id(scope)
        if deployment_id is None:
            return await self.app(scope, receive, send)
        body, complete = await read_some(receive, MAX_BODY_BYTES)
        admitted = None
        if complete:
            try:
                admitted = await self._admit(scope, deployment_id, body)
            except TokenInvalid:
                pass  # Django answers the 403
            except Exception as exc:  # never fail a request the app can answer
                logger.warning("load lane: %s; answered by Django instead", exc)
            if admitted is not None:
                if await self._send_kept(admitted.key, send):
                    return None
                if self._answer_headers is not None:
                    return await self._run(admitted, self._answer_headers, send)
        if admitted is None:
            return await self.app(scope, replay(body, complete, receive), send)
        slot: dict[str, Any] = {}
        scope = {**scope, ENVIRON_EXTRAS: {**scope.get(ENVIRON_EXTRAS, {}), views.LANE_SLOT: slot}}
        captured = _Capture(send)
        await self.app(scope, replay(body, complete, receive), captured)
        if not (captured.complete and captured.status == 200):
            return None
        self._answer_headers = captured.headers
        if slot.get("deployment_id") == deployment_id:
            body = b"".join(captured.body)
            self._keep(admitted.key, captured.headers, body, slot["compiler_id"], slot["reuse"])
        return None

    async def _run(self, admitted: _Admitted, django_headers: list[tuple[bytes, bytes]], send: Callable) -> None:
        """Answer with what Django's view would: the same steps (:func:`views.load_work`,
        :func:`service.finish_load`), the same error bodies, and the headers of Django's own answers."""
        status, content, answer = await _answer(admitted)
        length = str(len(content)).encode()
        headers = [(k, length if k.lower() == b"content-length" else v) for k, v in django_headers]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content, "more_body": False})
        if answer is not None and answer.reuse is not None:  # a 200 with data
            self._keep(admitted.key, headers, content, answer.compiler_id, answer.reuse)

    def _deployment_id(self, scope: dict[str, Any]) -> int | None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "POST"):
            return None
        match = self._prefixed.match(scope["path"])
        if match:
            number = int(match.group(1))
            return number if number <= MAX_BIGINT else None  # Django's 404
        if self.default_deployment_id and self._plain.match(scope["path"]):
            return self.default_deployment_id
        return None

    async def _admit(self, scope: dict[str, Any], deployment_id: int, body: bytes) -> _Admitted | None:
        """The request routed and its caller verified, with the key its answer is kept under; None when the
        lane leaves it to Django."""
        headers = headers_once(scope, (b"authorization", b"x-cube-authorization"))
        if headers is None:
            return None
        token = authorization_token(
            authorization=headers.get(b"authorization", b"").decode("latin-1") or None,
            cube_authorization=headers.get(b"x-cube-authorization", b"").decode("latin-1") or None,
        )
        claimed = remembered(self._claims, token, lambda: _unverified(token))
        if claimed is None or claimed[0] != "HS256":
            return None  # JWKS tokens, and anything malformed: Django's path
        claimed_jti = claimed[1]
        raw = scope.get("query_string", b"") if scope["method"] == "GET" else body
        if scope["method"] == "GET" and (
            not raw.isascii()  # Django decodes a raw query string in its own way
            or raw.count(b"&") >= settings.DATA_UPLOAD_MAX_NUMBER_FIELDS  # Django refuses too many
            or b"%00" in raw  # and a NUL (embedadmin.core.middleware)
        ):
            return None
        request = hashlib.sha256(scope["method"].encode() + b"\n" + raw).hexdigest()
        params = None

        def shape_of_request() -> tuple[str, tuple[str, ...]] | None:
            nonlocal params
            params = _params(scope["method"], raw)
            return time_shape(params)

        shape = remembered(self._shapes, request, shape_of_request)
        if shape is None:
            return None  # not a JSON object, time zones it cannot read: Django's path
        row = await self._deployment_row(deployment_id, str(claimed_jti) if claimed_jti is not None else None)
        if row is None:
            return None
        model_dir, source_encrypted, audience, issuer, secrets, revoked = row
        if not model_dir or not source_encrypted or revoked:
            return None
        payload, ctx = self._verified(token, tuple(secrets), audience, issuer)
        if payload.get("jti") != claimed_jti:
            return None
        source = remembered(self._sources, source_encrypted, lambda: _source(source_encrypted))
        dialect = source[1]
        version = loaded_model(model_dir, dialect=dialect)
        if version is None:  # the files are due a look, which may compile: not on the event loop
            loop = asyncio.get_running_loop()
            version = await loop.run_in_executor(None, functools.partial(load_model, model_dir, dialect=dialect))
        if version.model is None:
            return None
        return _Admitted(
            key=(deployment_id, request, ctx.identity, self._time_key(shape), version.model.compiler_id),
            deployment_id=deployment_id,
            model_dir=model_dir,
            source_encrypted=source_encrypted,
            source=source,
            version=version,
            ctx=ctx,
            method=scope["method"],
            raw=raw,
            params=params,
        )

    def _time_key(self, shape: tuple[str, tuple[str, ...]]) -> tuple[str, ...]:
        """:func:`time_key_of` now, remembered for the current second: every time zone's offset is whole seconds,
        so a local second, minute, hour or day starts on a whole second of Unix time."""
        second = math.floor(time.time())
        return remembered(
            self._time_keys, (shape, second), lambda: time_key_of(shape, datetime.fromtimestamp(second, UTC))
        )

    async def _deployment_row(self, deployment_id: int, jti: str | None) -> tuple[Any, ...] | None:
        """The deployment's model, data source, token rules and active secrets, and whether ``jti`` is
        revoked: read once, then remembered while the lane listens for changes to them (see
        :class:`_Changes`), at most ``ROW_MAX_AGE_S``."""
        key = (deployment_id, jti)
        self._changes.listen()
        generation = self._changes.generation  # before the read: a change during it invalidates the row
        known = self._rows.get(key)
        if (
            known is not None
            and self._changes.listening
            and known[1] == generation
            and time.monotonic() - known[2] < ROW_MAX_AGE_S
        ):
            return known[0]
        async with self.pool.connection() as conn:
            row = await (await conn.execute(_DEPLOYMENT_SQL, [jti, deployment_id])).fetchone()
        remember(self._rows, key, (row, generation, time.monotonic()))
        return row

    def _verified(
        self, token: str, secrets: tuple[str, ...], audience: str, issuer: str
    ) -> tuple[dict[str, Any], QueryContext]:
        """``hs256_verify`` and the caller's query context, remembered: the signature check depends only on
        the token and the secrets, and the claim checks on the deployment's audience and issuer and on the
        time, until ``exp``."""
        key = (token, secrets, audience, issuer)
        known = self._tokens.get(key)
        if known is not None and time.time() < known[2]:
            return known[0], known[1]
        clear = remembered(self._secrets, secrets, lambda: [credentials.decrypt_secret(s) for s in secrets])
        rules = Deployment(jwt_audience=audience, jwt_issuer=issuer)  # the token rules, as hs256_verify reads them
        payload = hs256_verify(deployment=rules, token=token, secrets=clear)
        ctx = query_context(SecurityContext.from_payload(payload))
        expires = payload.get("exp")
        if isinstance(expires, int | float) and not isinstance(expires, bool):
            # Valid until exp (with the leeway every check allows); nbf has passed, or it would have failed.
            remember(self._tokens, key, (payload, ctx, expires + LEEWAY_SECONDS))
        return payload, ctx

    async def _send_kept(self, key: tuple[Any, ...], send: Callable) -> bool:
        kept = self._kept.get(key)
        if kept is None or not _rows_current(kept.reuse):
            return False
        self._kept.move_to_end(key)
        await send({"type": "http.response.start", "status": 200, "headers": kept.headers})
        await send({"type": "http.response.body", "body": kept.body, "more_body": False})
        return True

    def _keep(
        self,
        key: tuple[Any, ...],
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        compiler_id: str,
        reuse: tuple[ResultUse, ...],
    ) -> None:
        if len(body) > MAX_ANSWER_BYTES or compiler_id != key[-1]:  # the key ends with the compilerId
            return
        previous = self._kept.pop(key, None)
        if previous is not None:
            self._kept_bytes -= len(previous.body)
        self._kept[key] = _Kept(headers, body, reuse)
        self._kept_bytes += len(body)
        while self._kept_bytes > MAX_KEPT_BYTES:
            _, dropped = self._kept.popitem(last=False)
            self._kept_bytes -= len(dropped.body)


class _Changes:
    """Whether what the lane read of deployments, secrets and revoked tokens may still be used.

    A connection of its own LISTENs on ``embedadmin_lane``; triggers (migration ``accounts/0003``) notify
    it when any of those tables changes, on commit. Every notification, and every (re)connection, moves
    ``generation`` on, which makes every row read before it stale. While the connection is down nothing
    read is reused: every request reads again. A lost connection is retried after ``RETRY_S``.
    """

    RETRY_S = 1.0

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self.generation = 0
        self.listening = False
        self._task: asyncio.Task[None] | None = None
        self._attempted = -math.inf

    def listen(self) -> None:
        if self._task is not None and not self._task.done():
            return
        if time.monotonic() - self._attempted < self.RETRY_S:
            return
        self._attempted = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._listen())

    async def _listen(self) -> None:
        try:
            conn = await psycopg.AsyncConnection.connect(**self.params, autocommit=True)
            async with conn:
                await conn.execute("LISTEN embedadmin_lane")
                self.generation += 1
                self.listening = True
                async for _ in conn.notifies():
                    self.generation += 1
        except Exception as exc:
            logger.warning("load lane: not listening for changes (%s); reading them on every request", exc)
        finally:
            self.listening = False
            self.generation += 1


async def _answer(admitted: _Admitted) -> tuple[int, bytes, LoadAnswer | None]:
    """The status, body and (for a 200 with data) the answer, as the view gives them: planned and shaped on
    the event loop, the query awaited on the result cache's runner (its worker thread runs it). A large
    answer is shaped and encoded on a worker thread instead (``LOOP_ROWS``)."""
    try:
        params = admitted.params if admitted.params is not None else _params(admitted.method, admitted.raw)
        assert params is not None  # time_shape has read the same bytes
        work = views.load_work(admitted.served(), admitted.ctx, views.checked_params(params))
        results = await service.read_results_async(work)
        if sum(len(result.result.rows) for result in results) <= LOOP_ROWS:
            answer = service.finish_load(work, results)
            return 200, json_bytes(answer.body), answer
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, _finished, work, results)
    except ContinueWait:
        return 200, json_bytes(views.CONTINUE_WAIT), None
    except Exception as exc:  # every failure becomes {"error": ...}, as in the view
        status, content = views.error_answer(exc)
        return status, content, None


def _finished(work: LoadWork, results: list[CachedResult]) -> tuple[int, bytes, LoadAnswer]:
    answer = service.finish_load(work, results)
    return 200, json_bytes(answer.body), answer


def _unverified(token: str) -> tuple[Any, Any] | None:
    """A token's ``alg`` and ``jti``, unverified (to pick the check and find its revocation), or None."""
    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None
    return header.get("alg"), claims.get("jti")


def _source(source_encrypted: str) -> tuple[str, str]:
    """A data source URL in clear, and its dialect."""
    url = credentials.decrypt_secret(source_encrypted)
    return url, dialect_of(url)


def _rows_current(reuse: tuple[ResultUse, ...]) -> bool:
    """Whether each result is still the one last written here, and still fresh."""
    runner = query_runner()
    now = datetime.now(UTC).timestamp()
    return all(runner.written_at(use.key) == use.refreshed_at and now - use.refreshed_at < use.every for use in reuse)


def _params(method: str, raw: bytes) -> dict[str, Any] | None:
    """Cube's parameters as the view reads them (a GET's query string, a POST's JSON object)."""
    if method == "GET":
        return dict(parse_qsl(raw.decode("latin-1"), keep_blank_values=True))
    try:
        return views.body_params(raw)
    except BadRequest:
        return None


def time_shape(params: dict[str, Any] | None) -> tuple[str, tuple[str, ...]] | None:
    """What in a request its relative dates depend on: the finest unit its query could name (day, or hour,
    minute, second when it mentions one) and its time zones; None when Django should read it."""
    if params is None:
        return None
    query = params.get("query")
    try:
        items = json.loads(query) if isinstance(query, str) else query
    except ValueError:
        return None
    items = items if isinstance(items, list) else [items]
    if not all(isinstance(item, dict) for item in items):
        return None
    text = json.dumps(items).lower()
    unit = next((u for u in ("second", "minute", "hour") if u in text), "day")
    zones = [item.get("timezone", "UTC") for item in items]
    if not all(isinstance(zone, str) for zone in zones):
        return None
    try:
        for zone in zones:
            resolve_timezone(zone)
    except Exception:  # an unknown or malformed time zone: Django answers the error
        return None
    return unit, tuple(sorted(set(zones)))


def time_key_of(shape: tuple[str, tuple[str, ...]], now: datetime | None = None) -> tuple[str, ...]:
    """The current local time in each of the request's time zones, truncated to its unit: two requests of
    one shape with the same key resolve every relative date alike."""
    unit, zones = shape
    moment = now or datetime.now(UTC)
    return (unit, *(format_local(start_of(local_now(moment, resolve_timezone(zone)), unit)) for zone in zones))


class _Capture:
    """A ``send`` that passes Django's answer on and keeps a copy of it."""

    def __init__(self, send: Callable) -> None:
        self.send = send
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.size = 0
        self.complete = False

    async def __call__(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunk = message.get("body", b"")
            self.size += len(chunk)
            if self.size <= MAX_ANSWER_BYTES:
                self.body.append(chunk)
            self.complete = not message.get("more_body", False) and self.size <= MAX_ANSWER_BYTES
        await self.send(message)


def installable() -> bool:
    """Whether the lane can be exact here: PostgreSQL (its pool) and a result cache local to the process."""
    backend = settings.CACHES["default"]["BACKEND"]
    engine = settings.DATABASES["default"]["ENGINE"]
    return engine == "django.db.backends.postgresql" and backend.endswith("LocMemCache")
