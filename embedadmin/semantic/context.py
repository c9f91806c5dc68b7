"""Who is asking: the query context every semantic-layer call takes."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

# Claims that differ between two tokens for the same viewer; they cannot change what a query returns.
VOLATILE_CLAIMS = frozenset({"iat", "exp", "nbf", "jti"})


@dataclass(frozen=True)
class QueryContext:
    """The caller as access policies see them.

    ``security_context`` is the verified token payload (``securityContext`` in the model),
    ``groups`` the caller's groups (policies' ``group``/``groups``), ``user_attributes`` the embed user's
    attributes (``userAttributes``). The semantic layer knows nothing else about the caller.

    ``only_granted`` makes the caller a stranger who reads only what was granted (an embed viewer): a cube or view
    without any access policy is then denied to them instead of open (``query.access.entity_access``).
    """

    security_context: dict[str, Any] = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)
    user_attributes: dict[str, Any] = field(default_factory=dict)
    only_granted: bool = False

    @cached_property
    def stable_security_context(self) -> dict[str, Any]:
        """The security context without the claims that differ between two tokens of one viewer: what
        policies read and what caches key on, so that the two cannot disagree."""
        return {key: value for key, value in (self.security_context or {}).items() if key not in VOLATILE_CLAIMS}

    @cached_property
    def env(self) -> dict[str, Any]:
        """The names policy expressions may read."""
        return {
            "securityContext": self.stable_security_context,
            "userAttributes": self.user_attributes or {},
            "groups": list(self.groups or []),
        }

    @cached_property
    def identity(self) -> str:
        """A digest of what in this context can change an answer (for caches keyed by caller): two tokens of
        one viewer (differing only in ``iat``, ``exp``, ``nbf``, ``jti``) share it; any other difference keeps
        them apart."""
        material = json.dumps(
            [self.stable_security_context, sorted(self.groups or []), self.user_attributes or {}, self.only_granted],
            sort_keys=True,
            default=str,
            separators=(",", ":"),
        )
        return hashlib.sha256(material.encode()).hexdigest()
