"""Every write route of the HTTP APIs declares its audit: the action its successful answer records, or why it
records none. A new write endpoint without either fails here, before it can change an account unaudited."""

from __future__ import annotations

from collections.abc import Iterator

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

from embedadmin.audit.edge import AuditedView

WRITES = ("POST", "PUT", "PATCH", "DELETE")


def _routes(patterns: list, prefix: str = "") -> Iterator[tuple[str, type]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            view_class = getattr(pattern.callback, "cls", None)
            if isinstance(view_class, type) and issubclass(view_class, APIView):
                yield prefix + str(pattern.pattern), view_class


def audited_writes() -> list[tuple[str, str, type]]:
    return [
        (route, method, view_class)
        for route, view_class in _routes(get_resolver().url_patterns)
        for method in WRITES
        if hasattr(view_class, method.lower())
    ]


def test_the_routes_are_found():
    routes = {(route, method) for route, method, _ in audited_writes()}
    assert ("api/v1/api-keys", "POST") in routes
    assert ("api/scim/v2/Users/<str:user_id>", "PATCH") in routes
    assert len(routes) > 60


def test_every_write_route_is_audited_or_says_why_not():
    undeclared = []
    for route, method, view_class in audited_writes():
        if not issubclass(view_class, AuditedView):
            undeclared.append(f"{method} {route}: {view_class.__name__} is not an AuditedView")
            continue
        audited = bool(view_class.audit_resource) and method in view_class.audit_verbs
        exempt = bool(view_class.audit_exempt.get(method))
        if audited == exempt:
            undeclared.append(f"{method} {route}: audited={audited}, exempt={exempt}")
    assert undeclared == []
