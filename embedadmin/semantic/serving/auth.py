"""Who is asking the Core Data API: the token of a request, verified for a deployment.

The token comes in ``x-cube-authorization`` or ``Authorization``, raw (as ``@cubejs-client/core``
sends it) or after a scheme such as ``Bearer``. Its header's ``alg`` picks the verification, nothing
else does:

- ``HS256``: any active secret of the deployment, through :func:`deployment_hs256_payload` (the same
  rules as every deployment token: audience and issuer when configured, ``exp`` required, ``nbf``,
  revoked ``jti``). Embed tokens are of this kind.
- ``RS256`` / ``ES256``: the key named by ``kid`` in the deployment's JWKS, with the algorithm the key
  itself implies (an RSA key verifies RS256 only, a P-256 key ES256 only), then the same claim rules.

Any other algorithm (``none``, ``HS512``, ``PS256``...) is refused, and because a JWKS key can never
verify an HS256 token, signing HS256 with a published public key ("algorithm confusion") fails too.
The verified payload becomes a :class:`SecurityContext`.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
from django.conf import settings

from embedadmin.accounts.models import Deployment
from embedadmin.accounts.tokens import (
    TokenInvalid,
    deployment_hs256_payload,
    deployment_jwt_decode,
    token_not_revoked,
)
from embedadmin.core.edge.authorization import CORE_TOKEN, CredentialRefused, presented_credential

logger = logging.getLogger(__name__)

# Asymmetric algorithms a JWKS key may verify, by the algorithm PyJWT derives from the key.
JWKS_ALGORITHMS = frozenset({"RS256", "ES256"})
MAX_JWKS_BYTES = 256 * 1024


class PublicTokenInvalid(TokenInvalid):
    """A refusal whose message the Core Data API shows as it is (Cube's own messages for a missing token and
    JWKS problems); any other :class:`TokenInvalid` is answered ``Invalid token``."""


# A claim this install writes into the tokens it restricts to some of the Core Data API's scopes ("meta": /v1/meta;
# "data": /v1/load, /v1/sql, /v1/dry-run, /v1/cubesql), as Cube's contextToApiScopes does by configuration. The
# Platform API's meta-sync tokens carry ["meta"]; a token without the claim may use every scope.
API_SCOPES_CLAIM = "embedadmin:apiScopes"
# The claim this install's embed tokens carry (``embedding.tokens``: sealed, so only a session exchange makes one).
# Its presence alone makes the caller an embed viewer who reads only what access policies grant: a token that
# carries it without a valid seal can only be narrower for it, never wider.
EMBED_CLAIM = "embed"


@dataclass(frozen=True)
class SecurityContext:
    """A verified caller: the whole token payload, plus the groups and user attributes it carries.

    ``groups`` is the ``groups`` claim when it is a list of strings, else empty; ``user_attributes``
    is the ``userAttributes`` claim when it is an object, else empty. Access policies read both.
    """

    payload: dict[str, Any]
    groups: tuple[str, ...] = ()
    user_attributes: dict[str, Any] = field(default_factory=dict)
    # The Core Data API scopes the token may use (API_SCOPES_CLAIM); None: every scope (any other token).
    api_scopes: frozenset[str] | None = None

    @property
    def embed_viewer(self) -> bool:
        """Whether the token speaks for an embed viewer (it carries :data:`EMBED_CLAIM`)."""
        return is_embed_viewer(self.payload)

    def allows(self, scope: str) -> bool:
        """Whether the token may use the Core Data API's ``scope`` ("meta" or "data"): every token but one whose
        ``API_SCOPES_CLAIM`` leaves it out. Every caller of the data (the Core Data API, the chat) asks this."""
        return self.api_scopes is None or scope in self.api_scopes

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> SecurityContext:
        groups = payload.get("groups")
        attributes = payload.get("userAttributes")
        if not (isinstance(groups, list) and all(isinstance(group, str) for group in groups)):
            groups = []
        api_scopes: frozenset[str] | None = None
        if API_SCOPES_CLAIM in payload:
            scopes = payload[API_SCOPES_CLAIM]
            readable = isinstance(scopes, list) and all(isinstance(s, str) for s in scopes)
            api_scopes = frozenset(scopes) if readable else frozenset()  # unreadable: restricts to nothing
        return cls(
            payload=payload,
            groups=tuple(groups),
            user_attributes=dict(attributes) if isinstance(attributes, dict) else {},
            api_scopes=api_scopes,
        )


def is_embed_viewer(security_context: dict[str, Any]) -> bool:
    """The one test of whether a verified security context is an embed viewer's."""
    return EMBED_CLAIM in security_context


def authorization_token(*, authorization: str | None, cube_authorization: str | None = None) -> str:
    """The token of a request: ``x-cube-authorization`` wins over ``Authorization``; the value is the token itself
    or ``<scheme> <token>`` (``Bearer``, or any word: Cube takes what follows the first space)."""
    header = "X-Cube-Authorization" if (cube_authorization or "").strip() else "Authorization"
    try:
        presented = presented_credential(
            cube_authorization if header != "Authorization" else authorization,
            accept=(CORE_TOKEN,),
            bare=True,
            any_scheme=True,
            header=header,
        )
    except CredentialRefused as exc:
        raise PublicTokenInvalid(exc.message) from None
    if presented is None:
        raise PublicTokenInvalid("Authorization header isn't set")
    return presented.value


@dataclass
class _KeySet:
    """What we last learnt from one JWKS URL."""

    keys: dict[str, jwt.PyJWK]
    fetched_at: float  # when ``keys`` came, -inf before any success
    attempted_at: float  # when we last asked, successfully or not
    error: str | None = None  # why the last attempt failed


FETCH_FAILED = "Unable to decode JWT key: the key set could not be fetched"


class JwksClient:
    """Keys of JWKS URLs, fetched with a bounded timeout and kept for ``ttl_s``.

    A ``kid`` missing from the cached set triggers a refetch (key rotation), and so does an expired
    set; either happens at most once per ``refetch_interval_s`` per URL, so tokens with made-up ``kid``
    values or an identity provider that is down cannot make every request wait on it. When a refetch
    fails, the keys fetched before keep verifying.
    """

    def __init__(self, *, ttl_s: float = 300.0, refetch_interval_s: float = 10.0, timeout_s: float = 3.0) -> None:
        self.ttl_s = ttl_s
        self.refetch_interval_s = refetch_interval_s
        self.timeout_s = timeout_s
        self._sets: dict[str, _KeySet] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def key(self, url: str, kid: str) -> jwt.PyJWK:
        """The key ``kid`` of the set at ``url``; :class:`TokenInvalid` when there is none."""
        cached = self._sets.get(url)
        if cached is not None and kid in cached.keys and time.monotonic() - cached.fetched_at < self.ttl_s:
            return cached.keys[kid]
        with self._lock_for(url):
            now = time.monotonic()
            cached = self._sets.get(url) or _KeySet(keys={}, fetched_at=-math.inf, attempted_at=-math.inf)
            fresh = now - cached.fetched_at < self.ttl_s
            if (kid in cached.keys and fresh) or now - cached.attempted_at < self.refetch_interval_s:
                # Known and fresh, or asked a moment ago (perhaps by a thread we waited for).
                return self._known(cached, kid)
            try:
                keys = self._fetch(url)
            except TokenInvalid as exc:
                cached.attempted_at, cached.error = now, str(exc)
                self._sets[url] = cached
                return self._known(cached, kid)
            cached = self._sets[url] = _KeySet(keys=keys, fetched_at=now, attempted_at=now)
            return self._known(cached, kid)

    @staticmethod
    def _known(key_set: _KeySet, kid: str) -> jwt.PyJWK:
        if kid in key_set.keys:
            return key_set.keys[kid]
        raise PublicTokenInvalid(key_set.error or f'Unable to verify, JWK with kid: "{kid}" not found')

    def _lock_for(self, url: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(url, threading.Lock())

    def _fetch(self, url: str) -> dict[str, jwt.PyJWK]:
        try:
            with httpx.stream("GET", url, timeout=self.timeout_s, follow_redirects=False) as response:
                response.raise_for_status()
                body = b""
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_JWKS_BYTES:
                        raise ValueError("key set too large")
            document = json.loads(body)
            entries = document["keys"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            logger.warning("cannot fetch JWKS %s: %s", url, exc)
            raise PublicTokenInvalid(FETCH_FAILED) from None
        keys: dict[str, jwt.PyJWK] = {}
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("kid"), str):
                continue
            try:
                key = jwt.PyJWK(entry)
            except jwt.PyJWTError:
                continue  # a key type or curve we do not use
            if key.algorithm_name in JWKS_ALGORITHMS and entry.get("use", "sig") == "sig":
                keys[entry["kid"]] = key
        return keys


_default_jwks = JwksClient(ttl_s=settings.SEMANTIC["JWKS_TTL_SECONDS"])


def core_token_verify(*, deployment: Deployment, token: str, jwks: JwksClient | None = None) -> SecurityContext:
    """The security context of a Core Data API token for ``deployment``, or :class:`TokenInvalid`."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise TokenInvalid("Invalid token") from None
    algorithm = header.get("alg")
    if not isinstance(algorithm, str):
        raise TokenInvalid("Invalid token")
    if algorithm == "HS256":
        return SecurityContext.from_payload(deployment_hs256_payload(deployment=deployment, token=token))
    if algorithm not in JWKS_ALGORITHMS or not deployment.jwks_url:
        raise TokenInvalid(f"Token algorithm {algorithm!r} is not accepted")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise PublicTokenInvalid("JWT without kid inside headers")
    key = (jwks or _default_jwks).key(deployment.jwks_url, kid)
    if key.algorithm_name != algorithm:
        raise TokenInvalid(f"Token algorithm {algorithm!r} does not match its key {kid!r}")
    payload = deployment_jwt_decode(
        deployment=deployment, token=token, key=key.key, algorithm=algorithm, issuer=deployment.jwt_issuer
    )
    return SecurityContext.from_payload(token_not_revoked(payload))
