"""How a request becomes an audit entry: who (:func:`actor_of`) and, for DRF views, the one place an audited write
and its entry share a transaction (:class:`AuditedView`).

A view declares what its writes are (``audit_resource``, ``audit_verbs``); ``dispatch`` runs an audited method in
one transaction, records exactly one entry when the answer is a success, and rolls everything back otherwise, so a
refused or failed request leaves neither a change nor an entry. Reads and the methods a view does not list are not
wrapped. ``tests/audit/test_coverage.py`` checks that every write route of the HTTP APIs declares its audit or
says why it has none.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, ClassVar

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponseBase
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.views import APIView

from embedadmin.accounts.selectors import ApiKeyCaller, PlatformCaller
from embedadmin.audit.models import AuditEntry
from embedadmin.audit.services import Actor, Change, entry_record
from embedadmin.core.fields import has_lone_surrogate

# What the methods of a resource usually mean; a view maps its own (``{"POST": "publish"}``).
CRUD_VERBS: Mapping[str, str] = {"POST": "create", "PUT": "update", "PATCH": "update", "DELETE": "delete"}


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: the peer's, or behind a trusted proxy (``EMBEDADMIN_BEHIND_PROXY``) the last address
    of ``X-Forwarded-For`` (the one the proxy appended). None when it is not an IP address."""
    address = request.META.get("REMOTE_ADDR", "")
    if getattr(settings, "USE_X_FORWARDED_HOST", False):
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        if forwarded:
            address = forwarded.rsplit(",", 1)[-1].strip()
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return None


def actor_of(request: HttpRequest | Request, *, via: str) -> tuple[int | None, Actor]:
    """The account a request acts in (None when it cannot tell) and who acts: an API key, a platform token (the
    Platform API's and identity providers' credential) or a signed-in panel user."""
    user: Any = request.user
    where = {"ip": client_ip(request), "user_agent": request.META.get("HTTP_USER_AGENT", "")[:512]}
    if isinstance(user, ApiKeyCaller):
        key = user.key
        owner = key.owner.get_username() if key.owner_id is not None and key.owner is not None else ""
        label = f"{key.name or 'API key'} ({key.prefix}…)"
        actor = Actor(AuditEntry.ActorKind.API_KEY, str(key.pk), label, via, owner=owner, **where)
        return key.account_id, actor
    if isinstance(user, PlatformCaller):
        token = user.token
        label = f"{token.name or 'Platform token'} ({token.prefix}…)"
        return user.account.pk, Actor(AuditEntry.ActorKind.PLATFORM_TOKEN, str(token.pk), label, via, **where)
    if getattr(user, "is_authenticated", False):
        return None, Actor(AuditEntry.ActorKind.USER, str(user.pk), user.get_username(), via, **where)
    return None, Actor(AuditEntry.ActorKind.SYSTEM, "", "anonymous", via, **where)


class AuditedView(APIView):
    """A DRF view whose writes are audited: one entry per successful write, in the write's transaction."""

    audit_via: ClassVar[str] = "platform_api"
    audit_resource: ClassVar[str] = ""  # "deployment", "scim_user", ...; empty: the view writes nothing
    audit_verbs: ClassVar[Mapping[str, str]] = CRUD_VERBS
    # The URL keyword that names the resource; otherwise the last one, or a create's answer's id (an upsert
    # addressed by another key, such as a slug, sets audit_id_from_answer to name its resource by id too).
    audit_id_kwarg: ClassVar[str | None] = None
    audit_id_from_answer: ClassVar[bool] = False
    # Write methods that are not audited, each with why (a search, a 501, what is counted instead).
    audit_exempt: ClassVar[Mapping[str, str]] = {}
    # False for a view whose items each commit on their own (bulk provisioning): one request-wide transaction would
    # hold the first item's locks to the end. Such a view records each item's entry in the item's own
    # transaction with ``audit_record``.
    audit_atomic: ClassVar[bool] = True

    def audit_note(self, **details: Any) -> None:
        """Add names or counts (never values sent) to this request's entry, e.g. ``created=3, failed=1``."""
        self._audit_details = {**getattr(self, "_audit_details", {}), **details}

    def audit_record(self, *, resource_id: str, verb: str | None = None, **details: Any) -> None:
        """Record one entry now, inside the transaction of the change it records: ``dispatch`` calls it for a
        successful request, a view with ``audit_atomic`` False for each item (``details``: names and counts)."""
        account_id, actor = actor_of(self.request, via=self.audit_via)
        if account_id is None:
            return
        verb = verb or self.audit_verbs[self.request.method or ""]
        change = Change(f"{self.audit_resource}.{verb}", self.audit_resource, resource_id, details)
        entry_record(account_id=account_id, actor=actor, change=change)

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        verb = self.audit_verbs.get(request.method or "") if self.audit_resource else None
        if verb is None or not self.audit_atomic:
            return super().dispatch(request, *args, **kwargs)
        with transaction.atomic():
            response = super().dispatch(request, *args, **kwargs)
            if 200 <= response.status_code < 300:
                resource_id = self._audit_resource_id(response, kwargs)
                self.audit_record(resource_id=resource_id, verb=verb, **self._audit_details_of(response, kwargs))
            else:  # refused or failed: nothing it may have written stays
                transaction.set_rollback(True)
        return response

    def _audit_resource_id(self, response: HttpResponseBase, kwargs: Mapping[str, Any]) -> str:
        if self.audit_id_kwarg is not None and self.audit_id_kwarg in kwargs:
            return str(kwargs[self.audit_id_kwarg])
        data = getattr(response, "data", None)
        answer_names_it = self.request.method == "POST" or self.audit_id_from_answer
        if isinstance(data, Mapping) and data.get("id") is not None and answer_names_it:
            return str(data["id"])
        return str(list(kwargs.values())[-1]) if kwargs else ""

    def _audit_details_of(self, response: HttpResponseBase, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        details: dict[str, Any] = {"status": response.status_code}
        if kwargs:
            details["path"] = {name: str(value) for name, value in kwargs.items()}
        body = None
        if isinstance(self.request, Request):
            try:  # a body the view did not read may not parse: the entry then names no fields
                body = self.request.data
            except APIException:
                body = None
        if isinstance(body, Mapping) and body:
            # Names only, and only those a JSON column stores (PostgreSQL's jsonb refuses NUL; a lone surrogate
            # cannot be encoded): a name that cannot be kept must not fail the change it describes.
            names = (str(name) for name in body)
            details["fields"] = sorted(n[:100] for n in names if "\x00" not in n and not has_lone_surrogate(n))[:50]
        details.update(getattr(self, "_audit_details", {}))
        return details
