"""What a plain Django view of an API declares beside its code: the methods it answers, the OpenAPI operation of each
(merged into ``GET /api/v1/spec`` by ``platform/openapi.py``), and, for each write method, why it records no audit
entry (``tests/audit/test_coverage.py`` walks every API route: a DRF view declares its audit on ``AuditedView``, a
plain view here).

Path parameters come from the route (``<str:public_id>`` is ``{public_id}``), so an operation names only its query
parameters, body and answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

V = TypeVar("V", bound=Callable[..., Any])

WRITES = ("POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class Declared:
    """A plain view's declaration: ``operations`` by method (``"GET"``), ``audit_exempt`` by write method."""

    operations: Mapping[str, dict[str, Any]]
    audit_exempt: Mapping[str, str] = field(default_factory=dict)

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(self.operations)


def declare(
    *, operations: Mapping[str, dict[str, Any]], audit_exempt: Mapping[str, str] | None = None
) -> Callable[[V], V]:
    """Attach a :class:`Declared` to a view function (read back by :func:`declared`)."""
    declaration = Declared(operations=dict(operations), audit_exempt=dict(audit_exempt or {}))
    unknown = set(declaration.audit_exempt) - set(WRITES)
    if unknown:
        raise ValueError(f"audit_exempt names methods that are not writes: {sorted(unknown)}")

    def attach(view: V) -> V:
        view.edge_declared = declaration  # type: ignore[attr-defined]
        return view

    return attach


def declared(view: Callable[..., Any]) -> Declared | None:
    """The declaration of a view function, through the decorators that wrap it (``functools.wraps``)."""
    current: Any = view
    while current is not None:
        found = getattr(current, "edge_declared", None)
        if isinstance(found, Declared):
            return found
        current = getattr(current, "__wrapped__", None)
    return None
