"""Who is asking: the query context every semantic-layer call takes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class QueryContext:
    """The caller as access policies see them.

    ``security_context`` is the verified token payload (``securityContext`` in the model),
    ``groups`` the caller's groups (policies' ``group``/``groups``), ``user_attributes`` the embed user's
    attributes (``userAttributes``). The semantic layer knows nothing else about the caller.
    """

    security_context: dict[str, Any] = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)
    user_attributes: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def env(self) -> dict[str, Any]:
        """The names policy expressions may read."""
        return {
            "securityContext": self.security_context or {},
            "userAttributes": self.user_attributes or {},
            "groups": list(self.groups or []),
        }

    @cached_property
    def cache_key(self) -> str:
        """A stable string identifying this context (for caches keyed by caller)."""
        return json.dumps(
            [self.security_context, sorted(self.groups or []), self.user_attributes],
            sort_keys=True,
            default=str,
            separators=(",", ":"),
        )
