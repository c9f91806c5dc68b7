"""Every write route of the HTTP APIs declares its audit: the action its successful answer records, or why it
records none. A DRF view declares it on ``AuditedView``; a plain Django view (the Core Data API, the Chat API, the
embed pages and endpoints) with ``core.edge.declarations.declare``. A new write endpoint without either fails here,
before it can change an account unaudited."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

from embedadmin.audit.audited_views import AuditedView
from embedadmin.core.edge.declarations import WRITES, declared

# Where the HTTP APIs live; the panel (Django admin, its own log) and the health probes are not APIs.
API_ROOTS = ("api/", "scim/", "cubejs-api/", "d/", "embed/")


def _routes(patterns: list, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern.callback


def _api_routes() -> list[tuple[str, Any]]:
    return [
        (route, callback) for route, callback in _routes(get_resolver().url_patterns) if route.startswith(API_ROOTS)
    ]


def audited_writes() -> list[tuple[str, str, type]]:
    return [
        (route, method, callback.cls)
        for route, callback in _api_routes()
        if isinstance(getattr(callback, "cls", None), type) and issubclass(callback.cls, APIView)
        for method in WRITES
        if hasattr(callback.cls, method.lower())
    ]


def plain_views() -> list[tuple[str, Any]]:
    return [(route, callback) for route, callback in _api_routes() if getattr(callback, "cls", None) is None]


def test_the_routes_are_found():
    routes = {(route, method) for route, method, _ in audited_writes()}
    assert ("api/v1/api-keys", "POST") in routes
    assert ("api/scim/v2/Users/<str:user_id>", "PATCH") in routes
    assert len(routes) > 60
    plain = {route for route, _ in plain_views()}
    assert "api/v1/public/<str:account_name>/agents/<str:agent_id>/chat/abort" in plain
    assert "cubejs-api/v1/load" in plain
    assert "api/v1/embed/dashboard/<str:public_id>/export" in plain


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


def test_every_plain_api_view_declares_its_methods_and_why_its_writes_record_nothing():
    undeclared = []
    for route, callback in plain_views():
        declaration = declared(callback)
        if declaration is None:
            undeclared.append(f"{route}: {getattr(callback, '__name__', callback)} declares nothing")
            continue
        for method in declaration.methods:
            if method in WRITES and not declaration.audit_exempt.get(method):
                undeclared.append(f"{method} {route}: neither audited nor exempt")
    assert undeclared == []


def test_the_chat_apis_writes_are_walked():
    chat = {
        (route, method): declared(callback).audit_exempt.get(method)
        for route, callback in plain_views()
        if "/chat/" in route
        for method in declared(callback).methods
    }
    assert set(chat) == {
        ("api/v1/public/<str:account_name>/agents/<str:agent_id>/chat/stream-chat-state", "POST"),
        ("api/v1/public/<str:account_name>/agents/<str:agent_id>/chat/abort", "POST"),
    }
    assert all(chat.values())
