"""Signing and verifying deployment tokens (JWTs).

Tokens for a deployment are HS256-signed with one of its secrets. Verification accepts any active
secret (rotation), pins the algorithm (``alg: none`` and algorithm confusion fail), enforces ``exp``
and ``nbf``, the deployment's audience and issuer when configured, and refuses a revoked ``jti``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Protocol

import jwt
from django.conf import settings
from django.utils import timezone

from embedadmin.accounts.models import Deployment, RevokedToken
from embedadmin.accounts.selectors import (
    deployment_signing_secret,
    deployment_verification_secrets,
    token_is_revoked,
)
from embedadmin.accounts.services import CREDENTIALS
from embedadmin.core.fields import UNPAIRED_SURROGATE, has_lone_surrogate

LEEWAY_SECONDS = 5


class TokenInvalid(Exception):
    """The token cannot be trusted; the message says why (safe to show to the caller)."""


def deployment_token_sign(*, deployment: Deployment, claims: dict[str, Any], expires_at: dt.datetime) -> str:
    payload = dict(claims)
    now = timezone.now()
    payload["iat"] = int(now.timestamp())
    payload["exp"] = int(expires_at.timestamp())
    if deployment.jwt_audience and "aud" not in payload:
        payload["aud"] = deployment.jwt_audience
    return jwt.encode(payload, deployment_signing_secret(deployment=deployment), algorithm="HS256")


class TokenRules(Protocol):
    """What verifying a token needs of its deployment (a :class:`Deployment` has it)."""

    jwt_audience: str
    jwt_issuer: str


class SignatureMismatch(TokenInvalid):
    """The token was not signed with this key (with rotation, the next secret may still match)."""


def deployment_jwt_decode(
    *, deployment: TokenRules, token: str, key: Any, algorithm: str, issuer: str | list[str] | None
) -> dict[str, Any]:
    """Verify a token's signature with one key and its claims by the deployment's rules (``exp`` required,
    ``nbf``, audience and issuer when configured); the payload, or :class:`TokenInvalid`."""
    kwargs: dict[str, Any] = {
        "algorithms": [algorithm],
        "leeway": LEEWAY_SECONDS,
        "options": {"require": ["exp"], "verify_aud": bool(deployment.jwt_audience)},
    }
    if deployment.jwt_audience:
        kwargs["audience"] = deployment.jwt_audience
    if issuer:
        kwargs["issuer"] = issuer
    try:
        payload = jwt.decode(token, key, **kwargs)
    except jwt.InvalidSignatureError:
        raise SignatureMismatch("Invalid token signature") from None
    except jwt.ExpiredSignatureError:
        raise TokenInvalid("Token has expired") from None
    except jwt.ImmatureSignatureError:
        raise TokenInvalid("Token is not yet valid") from None
    except jwt.PyJWTError as exc:
        raise TokenInvalid(f"Invalid token: {exc}") from None
    if has_lone_surrogate(payload):  # text no database, log or answer can carry
        raise TokenInvalid(f"Invalid token: {UNPAIRED_SURROGATE}")
    return payload


def token_not_revoked(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload``, unless its ``jti`` was revoked."""
    if token_is_revoked(jti=payload.get("jti")):
        raise TokenInvalid("Token has been revoked")
    return payload


def deployment_token_verify(*, deployment: Deployment, token: str) -> dict[str, Any]:
    """The verified payload of an HS256 ``token`` for ``deployment``, or :class:`TokenInvalid`."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise TokenInvalid("Malformed token") from None
    if header.get("alg") != "HS256":
        raise TokenInvalid(f"Token algorithm {header.get('alg')!r} is not accepted")
    return deployment_hs256_payload(deployment=deployment, token=token)


def deployment_hs256_payload(*, deployment: Deployment, token: str) -> dict[str, Any]:
    """The verified payload of a token whose header says HS256: any active secret of the deployment may have
    signed it (rotation); :class:`TokenInvalid` otherwise, or when its ``jti`` was revoked."""
    secrets = deployment_verification_secrets(deployment_id=deployment.pk)
    return token_not_revoked(hs256_verify(deployment=deployment, token=token, secrets=secrets))


def hs256_verify(*, deployment: TokenRules, token: str, secrets: list[str]) -> dict[str, Any]:
    """The payload of an HS256 token signed by one of ``secrets`` (the deployment's active ones, in clear)
    and valid by the deployment's claim rules; revocation is the caller's to check."""
    # The configured issuer is the identity provider's; the deployment's own embed tokens are issued
    # by embedadmin and must keep verifying when an issuer is configured.
    issuer = [deployment.jwt_issuer, settings.EMBEDADMIN["EMBED_TOKEN_ISSUER"]] if deployment.jwt_issuer else None
    for secret in secrets:
        try:
            return deployment_jwt_decode(
                deployment=deployment, token=token, key=secret, algorithm="HS256", issuer=issuer
            )
        except SignatureMismatch:
            continue  # rotation: an older active secret may have signed it
    raise TokenInvalid("Invalid token signature")


def deployment_token_revoke(*, deployment: Deployment, jti: str, expires_at: dt.datetime) -> None:
    RevokedToken.objects.get_or_create(jti=jti, defaults={"deployment": deployment, "expires_at": expires_at})
    CREDENTIALS.bump()


def revoked_tokens_purge(*, now: dt.datetime | None = None) -> int:
    """Forget revocations of tokens that have expired anyway (an expired token is refused on its own)."""
    deleted, _ = RevokedToken.objects.filter(expires_at__lt=now or timezone.now()).delete()
    return deleted
