"""The one place the tests sign a JWT: a token as a host's back end (or an identity provider, or an attacker holding
some key) would sign it.

``sign_token(secret, groups=["admin"])`` is an HS256 token of a deployment secret that was issued now and expires in
an hour. Every part can be changed to express a bad token: ``key`` (another secret, an RSA or EC private key, None
with ``algorithm="none"``), ``algorithm``, ``headers`` (a ``kid``), ``ttl_s`` (negative: expired) and the claims
themselves; a claim given as None is left out (``exp=None``: a token without an expiry). Tokens no JWT library
would sign (an empty HMAC key, a PEM public key as an HMAC secret, a header naming another algorithm) are put
together by hand where a test needs them.
"""

from __future__ import annotations

import time
from typing import Any

import jwt


def sign_token(
    key: Any,
    /,
    *,
    ttl_s: float = 3600,
    algorithm: str = "HS256",
    headers: dict[str, Any] | None = None,
    **claims: Any,
) -> str:
    """A JWT of ``claims`` signed with ``key``; ``iat`` is now and ``exp`` ``ttl_s`` later unless given."""
    now = int(time.time())
    payload = {"iat": now, "exp": int(now + ttl_s), **claims}
    payload = {name: value for name, value in payload.items() if value is not None}
    return jwt.encode(payload, key, algorithm=algorithm, headers=headers)
