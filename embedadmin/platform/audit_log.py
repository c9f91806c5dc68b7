"""``GET /api/v1/audit-log`` and ``GET /api/v1/usage``: the account's audit log (newest first, filtered, cursor
pages) and its usage per day (sessions minted, chat messages, user counts). Read with a platform token; both are
written by :mod:`embedadmin.audit` (docs/audit-log.md)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.audit import selectors
from embedadmin.audit.models import AuditEntry, DailyUsage
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import BadRequest
from embedadmin.core.fields import has_lone_surrogate
from embedadmin.core.pagination import paginate
from embedadmin.platform.openapi import error, page_of, page_operation
from embedadmin.platform.platform_view import PlatformView

MAX_USAGE_DAYS = 366


AUDIT_ENTRY = inline_serializer(
    "AuditEntry",
    {
        "id": serializers.IntegerField(),
        "occurredAt": serializers.DateTimeField(),
        "actor": inline_serializer(
            "AuditActor",
            {
                "kind": serializers.CharField(help_text=", ".join(AuditEntry.ActorKind.values)),
                "id": serializers.CharField(allow_blank=True),
                "label": serializers.CharField(allow_blank=True),
                "owner": serializers.CharField(allow_null=True, help_text="A personal API key's user"),
            },
        ),
        "via": serializers.CharField(),
        "action": serializers.CharField(help_text='"api_key.revoke": the resource type and the verb'),
        "resource": inline_serializer(
            "AuditResource", {"type": serializers.CharField(), "id": serializers.CharField(allow_blank=True)}
        ),
        "details": serializers.DictField(help_text="Names and counts, never the values sent"),
        "ip": serializers.CharField(allow_null=True),
        "userAgent": serializers.CharField(allow_blank=True),
    },
)
# Each kind of daily usage figure by its name in ``GET /api/v1/usage`` (a kind added to the table is named here).
USAGE_FIELDS: dict[str, str] = {
    DailyUsage.Kind.SESSIONS: "sessions",
    DailyUsage.Kind.CHAT_MESSAGES: "chatMessages",
    DailyUsage.Kind.EXTERNAL_USERS: "externalUsers",
    DailyUsage.Kind.NON_EPHEMERAL_CHAT_USERS: "nonEphemeralChatUsers",
    DailyUsage.Kind.EPHEMERAL_CHAT_USERS: "ephemeralChatUsers",
}
_MEASURED = "The day's last count by the hourly recount; null when none was taken that day"
DAILY_USAGE = inline_serializer(
    "DailyUsage",
    {
        "items": serializers.ListField(
            child=inline_serializer(
                "DailyUsageDay",
                {
                    "day": serializers.DateField(),
                    "sessions": serializers.IntegerField(help_text="Embed sessions minted"),
                    "chatMessages": serializers.IntegerField(help_text="Chat messages started"),
                    "externalUsers": serializers.IntegerField(
                        allow_null=True, help_text=f"External users of the account. {_MEASURED}"
                    ),
                    "nonEphemeralChatUsers": serializers.IntegerField(
                        allow_null=True, help_text=f"Chat users kept beyond the time to live. {_MEASURED}"
                    ),
                    "ephemeralChatUsers": serializers.IntegerField(
                        allow_null=True, help_text=f"Chat users that expire. {_MEASURED}"
                    ),
                },
            )
        )
    },
)


def audit_entry_item(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.pk,
        "occurredAt": iso_time(entry.occurred_at),
        "actor": {
            "kind": entry.actor_kind,
            "id": entry.actor_id,
            "label": entry.actor_label,
            "owner": entry.actor_owner or None,
        },
        "via": entry.via,
        "action": entry.action,
        "resource": {"type": entry.resource_type, "id": entry.resource_id},
        "details": entry.details,
        "ip": entry.ip,
        "userAgent": entry.user_agent,
    }


def _moment(params: Any, name: str) -> dt.datetime | None:
    """``from``/``to``: an ISO 8601 date-time (with an offset, or UTC) or a date (its midnight, UTC)."""
    raw = params.get(name)
    if raw in (None, ""):
        return None
    text = str(raw)
    try:
        moment = parse_datetime(text)
        if moment is None and (day := parse_date(text)) is not None:
            moment = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    except ValueError:
        moment = None
    if moment is None:
        raise BadRequest(f"{name}: expected an ISO 8601 date-time or date, got {text[:40]!r}")
    try:  # in UTC, as stored; a moment at the calendar's ends may have no UTC equivalent
        return (moment if timezone.is_aware(moment) else moment.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
    except OverflowError:
        raise BadRequest(f"{name}: out of range") from None


def _text(params: Any, name: str, *, choices: list[str] | None = None) -> str | None:
    raw = params.get(name)
    if raw in (None, ""):
        return None
    text = str(raw)
    if "\x00" in text or has_lone_surrogate(text) or len(text) > 300:
        raise BadRequest(f"{name}: not a valid value")
    if choices is not None and text not in choices:
        raise BadRequest(f"{name}: must be one of {', '.join(choices)}")
    return text


_FILTERS = [
    OpenApiParameter("from", OpenApiTypes.DATETIME, description="Entries at or after this moment (or date, UTC)"),
    OpenApiParameter("to", OpenApiTypes.DATETIME, description="Entries before this moment (or date, UTC)"),
    OpenApiParameter("actorKind", str, enum=list(AuditEntry.ActorKind.values)),
    OpenApiParameter("actorId", str, description="The credential's or user's id"),
    OpenApiParameter("action", str, description='An action ("api_key.revoke") or a resource type ("api_key")'),
    OpenApiParameter("resourceType", str),
    OpenApiParameter("resourceId", str),
    OpenApiParameter("via", str, enum=["platform_api", "build_api", "scim", "embed_api", "panel"]),
]


class AuditLogView(PlatformView):
    """``GET /api/v1/audit-log``: who changed what in the account, newest first."""

    @page_operation(
        page_of("AuditEntryPage", AUDIT_ENTRY),
        filters=_FILTERS,
        errors={400: error("A filter that is not valid, from not before to, or an invalid page parameter")},
    )
    def get(self, request: PlatformRequest) -> Response:
        params = request.query_params
        since, until = _moment(params, "from"), _moment(params, "to")
        if since is not None and until is not None and since >= until:
            raise BadRequest("from must be before to")
        filters = selectors.EntryFilters(
            since=since,
            until=until,
            actor_kind=_text(params, "actorKind", choices=list(AuditEntry.ActorKind.values)),
            actor_id=_text(params, "actorId"),
            action=_text(params, "action"),
            resource_type=_text(params, "resourceType"),
            resource_id=_text(params, "resourceId"),
            via=_text(params, "via"),
        )
        rows = selectors.entries_of(account=request.user.account, filters=filters)
        return Response(paginate(rows, params=params, descending=True).as_dict(audit_entry_item))


class UsageView(PlatformView):
    """``GET /api/v1/usage?from=YYYY-MM-DD&to=YYYY-MM-DD``: per day (UTC), sessions minted and chat messages
    counted, and the user counts measured that day; the last 30 days by default, at most 366 days."""

    @extend_schema(
        parameters=[OpenApiParameter("from", OpenApiTypes.DATE), OpenApiParameter("to", OpenApiTypes.DATE)],
        responses={
            200: DAILY_USAGE,
            400: error(f"Not a YYYY-MM-DD date, from after to, or more than {MAX_USAGE_DAYS} days"),
        },
    )
    def get(self, request: PlatformRequest) -> Response:
        today = timezone.now().date()
        until = _day(request.query_params, "to") or today
        since = _day(request.query_params, "from")
        if since is None:  # the 30 days up to ``until`` (fewer at the calendar's start)
            since = max(dt.date.min, until - dt.timedelta(days=29)) if until.year > 1 else dt.date.min
        if since > until:
            raise BadRequest("from must not be after to")
        if (until - since).days >= MAX_USAGE_DAYS:
            raise BadRequest(f"at most {MAX_USAGE_DAYS} days at a time")
        days = selectors.daily_usage_of(account=request.user.account, since=since, until=until)
        items = [
            {"day": day.isoformat(), **{name: figures[kind] for kind, name in USAGE_FIELDS.items()}}
            for day, figures in days.items()
        ]
        return Response({"items": items})


def _day(params: Any, name: str) -> dt.date | None:
    raw = params.get(name)
    if raw in (None, ""):
        return None
    try:
        day = parse_date(str(raw))
    except ValueError:
        day = None
    if day is None:
        raise BadRequest(f"{name}: expected a date, YYYY-MM-DD")
    return day
