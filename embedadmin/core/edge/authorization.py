"""The one reader of credentials in request headers: ``Authorization: <scheme> <credential>`` and the single-value
headers some doors take (``X-Cube-Authorization``, ``X-Service-Auth-Token``).

Every door names the schemes it accepts from the table below (what each scheme carries) and gets a
:class:`Presented` credential, ``None`` when the request sends none, or :class:`CredentialRefused` with the message a
client sees. What a door does with the value (look up an API key, verify a token) and which status a refusal is (DRF's
401, Cube's 403, the Chat API's JSON-RPC error) is the door's.

The rules, the same at every door: the scheme is matched without regard to case; the credential is the rest of the
header, trimmed; a credential that is empty or not printable ASCII is refused (every credential this product mints or
verifies is printable ASCII, and a NUL must not reach a database lookup).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Scheme:
    """An ``Authorization`` scheme as a door accepts it: its name and what the credential after it is (for messages)."""

    name: str
    holds: str

    def written(self) -> str:
        return f"'{self.name} <{self.holds}>'"


API_KEY = Scheme("Api-Key", "key")  # an account API key (Platform API, generate-session, Chat API)
PLATFORM_TOKEN = Scheme("Bearer", "token")  # a platform token (Platform API, SCIM)
EMBED_TOKEN = Scheme("Embed-Token", "embed token")  # an embed page's token (embed endpoints, Chat API)
EMBED_BEARER = Scheme("Bearer", "embed token")  # the same token as a bearer (the session-context endpoint)
CORE_TOKEN = Scheme("Bearer", "token")  # a deployment JWT (Core Data API): any scheme, or none, as Cube reads it


@dataclass(frozen=True)
class Presented:
    """A credential a request presents: the accepted scheme it came with (``None`` when it came bare) and its value."""

    scheme: Scheme | None
    value: str


class CredentialRefused(Exception):
    """A credential header that cannot hold a credential of the accepted schemes; the message is safe to show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _printable(value: str) -> bool:
    return value.isascii() and value.isprintable()


def expected(accept: Sequence[Scheme], *, bare: bool = False) -> str:
    """How a header of ``accept`` is written, for messages: ``'Api-Key <key>' or 'Bearer <token>'``."""
    forms = [scheme.written() for scheme in accept]
    if bare and accept:
        forms.insert(0, f"'<{accept[0].holds}>'")
    return " or ".join(forms)


def missing_message(accept: Sequence[Scheme], *, header: str = "Authorization") -> str:
    return f"Missing {header} header: expected {expected(accept)}"


def presented_credential(
    value: str | None,
    *,
    accept: Sequence[Scheme],
    bare: bool = False,
    any_scheme: bool = False,
    header: str = "Authorization",
) -> Presented | None:
    """The credential of a header's ``value``; ``None`` when it is absent or blank.

    ``accept``: the schemes the door takes; ``bare``: a credential without a scheme is taken too (``Presented.scheme``
    is then ``None``); ``any_scheme``: any first word is taken as the scheme (Cube reads ``<anything> <token>``), the
    first of ``accept`` standing for it. Anything else raises :class:`CredentialRefused`."""
    text = (value or "").strip()
    if not text:
        return None
    refused = CredentialRefused(f"{header} header must be {expected(accept, bare=bare)}")
    word, _, rest = text.partition(" ")
    rest = rest.strip()
    if not rest:
        if bare and _printable(word):
            return Presented(None, word)
        raise refused
    scheme = next((s for s in accept if s.name.lower() == word.lower()), None)
    if scheme is None and any_scheme and accept:
        scheme = accept[0]
    if scheme is None or not _printable(rest):
        raise refused
    return Presented(scheme, rest)


def token_header(value: str | None, *, header: str) -> str | None:
    """The value of a header that carries one bare token (``X-Service-Auth-Token``); ``None`` when absent or blank,
    :class:`CredentialRefused` when it is not one printable ASCII word."""
    text = (value or "").strip()
    if not text:
        return None
    if " " in text or not _printable(text):
        raise CredentialRefused(f"{header} header must be '<token>'")
    return text
