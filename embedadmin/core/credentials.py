"""Credential primitives: minting high-entropy secrets, storing only their digest, comparing safely.

API keys, platform tokens and embed session ids are random 256-bit values shown once. What is stored
is a SHA-256 digest: the values are long random strings, so a fast hash is enough to make a stolen
database useless (there is nothing to brute-force), and lookups stay one indexed query. API keys and
platform tokens carry a short public prefix (:func:`mint`), stored in clear, used to find the row
before the constant-time compare; embed session ids have none and are found by their unique digest.

Deployment JWT secrets must stay recoverable (HMAC needs the key), so they are encrypted at rest with
a key derived from settings instead (:func:`encrypt_secret`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

# Characters after the kind tag: <kind>_<prefix:12>_<secret:43>
PREFIX_LENGTH = 12


@dataclass(frozen=True)
class MintedSecret:
    """A freshly minted credential: ``plaintext`` goes to the caller once; the rest is stored."""

    plaintext: str
    prefix: str
    digest: str


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def mint(kind: str) -> MintedSecret:
    """Mint ``<kind>_<prefix>_<secret>`` with 256 bits of randomness in the secret part."""
    prefix = secrets.token_hex(PREFIX_LENGTH // 2)
    plaintext = f"{kind}_{prefix}_{secrets.token_urlsafe(32)}"
    return MintedSecret(plaintext=plaintext, prefix=prefix, digest=digest(plaintext))


def split_prefix(kind: str, plaintext: str) -> str | None:
    """Return the lookup prefix of a presented credential, or None when it is not of ``kind``."""
    parts = plaintext.split("_", 2)
    if len(parts) != 3 or parts[0] != kind or len(parts[1]) != PREFIX_LENGTH:
        return None
    return parts[1]


def matches(plaintext: str, stored_digest: str) -> bool:
    """Constant-time comparison of a presented credential with a stored digest."""
    return hmac.compare_digest(digest(plaintext), stored_digest)


@lru_cache(maxsize=1)
def _fernet() -> Fernet:
    material = hashlib.sha256(("embedadmin-secrets:" + settings.EMBEDADMIN["ENCRYPTION_KEY"]).encode()).digest()
    return Fernet(base64.urlsafe_b64encode(material))


def encrypt_secret(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode()


@lru_cache(maxsize=1024)
def decrypt_secret(token: str) -> str:
    """The clear value of an encrypted secret; remembered per ciphertext (a rotated secret is a new
    ciphertext), so verifying a token does not pay for key derivation and decryption each time."""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:  # the encryption key changed since the secret was stored
        raise RuntimeError("A stored secret cannot be decrypted: EMBEDADMIN_ENCRYPTION_KEY changed?") from exc
