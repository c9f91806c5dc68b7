"""The embed pages a host app frames, and the endpoints they call (docs/dashboards.md "The embed page").

- ``GET /embed/dashboard/{publicId}?session=`` (or ``sessionId=``): redeem the session with the one exchange,
  pass the gates (:func:`embedadmin.dashboards.access.embed_dashboard`), render ``embed/dashboard.html`` with
  its bootstrap. A missing, used, expired or revoked session is a 401 page, the same for every publicId; a gate
  is a 403 or 404 page. Never data on an error page.
- ``GET /embed/chat?sessionId=`` (or ``session=``): the standalone chat, whatever ``showDashboardChat`` says;
  a 403 page when the session's ``allowAi`` is false.
- ``POST /api/v1/embed/dashboard/{publicId}/view`` and ``.../export`` (``Authorization: Embed-Token <jwt>``):
  the view of a state, and a tile's rows as CSV. The gates run again on every call, and the signed ``grant``
  the page got must be for this dashboard and this session's token (the view endpoint trades the grant of an
  earlier session of the same viewer for one of the token in hand: renewal in place). What the page may do
  (``allowExport``) is the token's signed settings, narrowed by the page URL, under ``restrictDataDownload``.

Every ``/embed/*`` answer is framed only by the account's allowed origins (``core.middleware``), is never
cached and sends no referrer. A page without a usable session knows no account: it is one page, framed by this
site only, whatever the publicId.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from embedadmin.accounts.models import TenantSettings
from embedadmin.accounts.tokens import TokenInvalid
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.declarations import declare
from embedadmin.core.edge.openapi import error_responses, json_content
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import ApiError, BadRequest, Forbidden, NotFound, Unauthorized
from embedadmin.dashboards import viewstate
from embedadmin.dashboards.access import EmbeddedDashboard, embed_dashboard
from embedadmin.embedding import services
from embedadmin.embedding.tokens import EmbedCaller, embed_caller, embed_token_verify
from embedadmin.semantic.serving.cache import ContinueWait
from embedadmin.semantic.serving.services import semantic_load

# A function the URL map gives the pages: the Chat API URL of a deployment's agent (``agentId`` when the page
# URL names one of that deployment), or None when the deployment has no agent.
ChatEndpoint = Callable[[int, str | None], str | None]

GRANT_SALT = "embedadmin.embed.dashboard-grant"
SESSION_EXPIRED = ("This session has expired", "Ask the application that showed this page to open it again.")
_FILENAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


# --- shared pieces -------------------------------------------------------------------------------------------


def _account_settings(account_id: int | None) -> TenantSettings | None:
    return TenantSettings.objects.filter(account_id=account_id).first() if account_id is not None else None


def _page_headers(response: HttpResponse, *, origins: list[str]) -> HttpResponse:
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    response.embed_frame_ancestors = origins  # type: ignore[attr-defined]  # read by core.middleware
    return response


def _error_page(request: HttpRequest, status: int, title: str, message: str, *, origins: list[str]) -> HttpResponse:
    response = render(request, "embed/error.html", {"title": title, "message": message}, status=status)
    return _page_headers(response, origins=origins)


def _no_session_page(request: HttpRequest) -> HttpResponse:
    """The one page of an embed without a usable session (missing, unknown, used, expired or revoked).

    Nothing about an account is known from such a request, so nothing about one is said: not whether the page's
    publicId exists, nor whose it is, nor which origins that account lets frame its embeds. The page is the same
    for every path and every unusable session, framed by this site only (``frame-ancestors 'self'``).
    """
    return _error_page(request, 401, *SESSION_EXPIRED, origins=[])


def _session_param(request: HttpRequest) -> str:
    value = request.GET.get("session") or request.GET.get("sessionId") or ""
    return value.strip() if len(value) <= 200 and value.isascii() and value.isprintable() else ""


def core_api_base(deployment_id: int) -> str:
    return f"/d/{deployment_id}{settings.CUBEJS_BASE_PATH}/v1"


def effective_flags(
    *, url_flags: dict[str, bool], caller: EmbedCaller, account: TenantSettings | None
) -> dict[str, bool]:
    """What the page may do: the session's signed settings, narrowed by what the URL let through, under the
    account's ``restrictDataDownload`` (``account``: its settings read for this request, so a restriction applies
    to pages already open).

    The ``show...`` flags only hide parts of the page (the chat is the session's ``showDashboardChat`` and
    ``allowAi``), so they are the URL's; every flag that widens what a viewer can do is signed and only narrowed.
    """
    downloads = account is not None and not account.restrict_data_download
    flags = {name: url_flags.get(name) is not False for name in viewstate.URL_FLAGS}
    flags["allowExport"] = flags["allowExport"] and caller.settings.get("allowExport") is True and downloads
    return flags


def grant_sign(*, public_id: str, caller: EmbedCaller, url_flags: dict[str, bool]) -> str:
    """The signed grant of a dashboard page: which dashboard, for which session's token (deployment, sub, jti),
    and what the page URL let through (its narrowing, kept for the embed's life). Valid for a token's lifetime."""
    body = {
        "p": public_id,
        "d": caller.deployment.pk,
        "s": caller.sub,
        "j": caller.jti,
        "u": {name: url_flags.get(name) is not False for name in viewstate.URL_FLAGS},
    }
    return signing.dumps(body, salt=GRANT_SALT, compress=True)


def grant_verify(*, grant: Any, public_id: str, caller: EmbedCaller, renewing: bool = False) -> dict[str, bool]:
    """What the URL of the page that got ``grant`` let through, when the grant is for this dashboard and this
    session's token.

    ``renewing`` (the view endpoint only) also takes the grant of an earlier session of the same viewer: a page
    renewed in place (``set-session``) trades it there for a grant of the token in hand. The URL's narrowing
    carries over; what the page may do is computed again from the new token's signed settings.
    """
    if not isinstance(grant, str) or not grant or len(grant) > 4096:
        raise BadRequest("grant: required (the grant of the page's bootstrap)")
    try:
        body = signing.loads(grant, salt=GRANT_SALT, max_age=settings.EMBEDADMIN["EMBED_TOKEN_TTL_SECONDS"])
    except signing.SignatureExpired:
        raise Forbidden("grant: expired; reload the embed") from None
    except signing.BadSignature:
        raise Forbidden("grant: invalid") from None
    if (
        not isinstance(body, dict)
        or body.get("p") != public_id
        or body.get("d") != caller.deployment.pk
        or body.get("s") != caller.sub
        or not isinstance(body.get("u"), dict)
    ):
        raise Forbidden("grant: not for this dashboard and viewer")
    if body.get("j") != caller.jti and not renewing:
        raise Forbidden("grant: not for this session")
    return {name: body["u"].get(name) is not False for name in viewstate.URL_FLAGS}


def _dashboard_config(embedded: EmbeddedDashboard) -> dict[str, Any]:
    """The published version's dashboard config (an empty one when it is not an object)."""
    return embedded.version.config if isinstance(embedded.version.config, dict) else {}


def view_body(*, caller: EmbedCaller, embedded: EmbeddedDashboard, state: viewstate.ViewState) -> dict[str, Any]:
    """The view of ``embedded`` for ``state``, with the member formats the viewer may see."""
    try:
        members = viewstate.viewer_members(deployment=caller.deployment, ctx=caller.ctx)
    except ApiError:
        members = {}  # a model that does not serve: the tiles say so themselves when they load
    config = _dashboard_config(embedded)
    return viewstate.compose_view(config=config, snapshot_for=embedded.snapshot_for, state=state, members=members)


# --- what the views declare: their OpenAPI operations (GET /api/v1/spec) and audit ----------------------------

_HTML = {"text/html": {"schema": {"type": "string"}}}
_PAGE_RESPONSES = {
    "200": {"description": "The embed page (HTML)", "content": _HTML},
    **{code: {"description": "The error page (HTML)", "content": _HTML} for code in ("400", "401", "403", "404")},
}
_SESSION_PARAM = {"name": "session", "in": "query", "required": False, "schema": {"type": "string"}}
_VIEW_FIELD_SCHEMAS: dict[str, Any] = {
    "grant": {
        "type": "string",
        "maxLength": 4096,
        "description": "The signed grant of the page's bootstrap, bound to the session's token (each view answers"
        " a fresh one for the token in hand; a view also takes the grant of an earlier session of the same"
        " viewer, after a renewal in place)",
    },
    "state": {
        "type": "object",
        "description": "The viewer's state by control id: filters, grains, fields, timezone (docs/dashboards.md)",
    },
    "filterUrlParameter": {"type": "string", "description": 'f_<member>=<JSON>, as f_orders.status={"value":"paid"}'},
    "timezone": {"type": "string", "description": "An IANA time zone name"},
}
_EXPORT_FIELD_SCHEMAS: dict[str, Any] = {
    **_VIEW_FIELD_SCHEMAS,
    "widgetId": {"type": "string", "minLength": 1, "description": "The tile whose rows to download"},
    "format": {"type": "string", "enum": ["csv"], "description": "csv (PNG is drawn in the page)"},
}
VIEW_FIELDS = tuple(_VIEW_FIELD_SCHEMAS)
EXPORT_FIELDS = tuple(_EXPORT_FIELD_SCHEMAS)
_VIEW_ANSWER = {
    "type": "object",
    "description": "The dashboard's widgets with their queries for the state, a fresh grant for the token in hand"
    " and what the page may do with it",
    "properties": {
        "widgets": {"type": "array", "items": {"type": "object"}},
        "grant": {"type": "string"},
        "flags": {
            "type": "object",
            "description": "allowExport (the session's signed setting, narrowed by the page URL, off when the"
            " account restricts downloads) and the page URL's show... flags",
            "additionalProperties": {"type": "boolean"},
        },
    },
    "required": ["widgets", "grant", "flags"],
}
_EMBED_TOKEN: list[dict[str, list[str]]] = [{"EmbedToken": []}]
DASHBOARD_PAGE = {
    "GET": {
        "tags": ["Embed pages"],
        "summary": "The embedded dashboard page (HTML; the iframe's src)",
        "parameters": [_SESSION_PARAM],
        "responses": _PAGE_RESPONSES,
    }
}
CHAT_PAGE = {
    "GET": {
        "tags": ["Embed pages"],
        "summary": "The embedded chat page (HTML; the iframe's src)",
        "parameters": [
            _SESSION_PARAM,
            {"name": "agent", "in": "query", "required": False, "schema": {"type": "string"}},
        ],
        "responses": _PAGE_RESPONSES,
    }
}
DASHBOARD_VIEW = {
    "POST": {
        "tags": ["Embedding"],
        "summary": "The embedded dashboard's widgets and data for a viewer state",
        "security": _EMBED_TOKEN,
        "requestBody": {
            "required": True,
            "content": json_content(
                {
                    "type": "object",
                    "properties": _VIEW_FIELD_SCHEMAS,
                    "required": ["grant"],
                    "additionalProperties": False,
                }
            ),
        },
        "responses": {
            "200": {"description": "The view of the state", "content": json_content(_VIEW_ANSWER)},
            **error_responses(),
        },
    }
}
DASHBOARD_EXPORT = {
    "POST": {
        "tags": ["Embedding"],
        "summary": "Download one widget's rows",
        "security": _EMBED_TOKEN,
        "requestBody": {
            "required": True,
            "content": json_content(
                {
                    "type": "object",
                    "properties": _EXPORT_FIELD_SCHEMAS,
                    "required": ["grant", "widgetId"],
                    "additionalProperties": False,
                }
            ),
        },
        "responses": {
            "200": {"description": "The tile's rows as CSV", "content": {"text/csv": {"schema": {"type": "string"}}}},
            **error_responses(),
        },
    }
}
READS = "a read: it computes what the viewer's token may see and changes nothing"


# --- the pages -----------------------------------------------------------------------------------------------


def _redeem(request: HttpRequest) -> tuple[services.ExchangedToken, EmbedCaller] | None:
    """The page's ``session`` redeemed with the one exchange, and the viewer of its token; None when the session
    is missing, used, expired or revoked (or, in the moment between, its deployment's secret was revoked)."""
    session_id = _session_param(request)
    if not session_id:
        return None
    try:
        exchanged = services.session_exchange(session_id=session_id)
        return exchanged, embed_token_verify(token=exchanged.token)
    except (Unauthorized, TokenInvalid):
        return None


def _allowed_origins(account: TenantSettings | None) -> list[str]:
    return list(account.embed_allowed_origins) if account else []


def _session_bootstrap(
    *, caller: EmbedCaller, exchanged: services.ExchangedToken, origins: list[str]
) -> dict[str, Any]:
    """What every embed page's bootstrap says of its session: the viewer's deployment, the token and its renewal."""
    return {
        "deploymentId": caller.deployment.pk,
        "embedTenant": caller.embed.get("embedTenant"),
        "token": exchanged.token,
        "tokenExpiresAt": iso_time(exchanged.expires_at),
        "renewAt": iso_time(services.renew_at(exchanged.expires_at)),
        "coreApiBase": core_api_base(caller.deployment.pk),
        "hostOrigins": origins,
    }


@declare(operations=DASHBOARD_PAGE)
@require_GET
def dashboard_page(request: HttpRequest, public_id: str, chat_endpoint: ChatEndpoint | None = None) -> HttpResponse:
    """``GET /embed/dashboard/{publicId}?session=``."""
    redeemed = _redeem(request)
    if redeemed is None:
        return _no_session_page(request)
    exchanged, caller = redeemed
    account = _account_settings(caller.deployment.account_id)
    origins = _allowed_origins(account)
    try:
        embedded = embed_dashboard(claims=caller.claims, public_id=public_id)
    except Forbidden:
        return _error_page(
            request, 403, "This dashboard cannot be shown here", "Embedding is not enabled for it.", origins=origins
        )
    except NotFound:
        return _error_page(
            request, 404, "Dashboard not found", "It does not exist or is not shared with you.", origins=origins
        )
    bootstrap = dashboard_bootstrap(
        request=request,
        caller=caller,
        embedded=embedded,
        exchanged=exchanged,
        account=account,
        chat_endpoint=chat_endpoint,
    )
    response = render(request, "embed/dashboard.html", {"bootstrap": bootstrap})
    return _page_headers(response, origins=origins)


def _endpoints(public_id: str | None) -> dict[str, str]:
    endpoints = {"token": "/api/v1/embed/session/token"}
    if public_id is not None:
        endpoints["view"] = f"/api/v1/embed/dashboard/{public_id}/view"
        endpoints["export"] = f"/api/v1/embed/dashboard/{public_id}/export"
    return endpoints


def _agent_param(request: HttpRequest) -> str | None:
    agent = request.GET.get("agentId")
    return agent if agent and len(agent) <= 64 and agent.isascii() and agent.isprintable() else None


def dashboard_bootstrap(
    *,
    request: HttpRequest,
    caller: EmbedCaller,
    embedded: EmbeddedDashboard,
    exchanged: services.ExchangedToken,
    account: TenantSettings | None,
    chat_endpoint: ChatEndpoint | None,
) -> dict[str, Any]:
    """The bootstrap of a dashboard page (docs/dashboards.md): the token, its renewal, the resolved settings with
    the URL's overrides, the signed grant, and the initial view."""
    dashboard = embedded.dashboard
    config = _dashboard_config(embedded)
    resolved = dict(caller.settings)
    url = viewstate.parse_url(
        config,
        [(name, value) for name, values in request.GET.lists() for value in values],
        timezone=str(resolved.get("timezone") or "UTC"),
    )
    flags = effective_flags(url_flags=url.flags, caller=caller, account=account)
    resolved["allowExport"] = flags["allowExport"]
    if url.locale:
        resolved["locale"] = url.locale
    if url.timezone:
        resolved["timezone"] = url.timezone
    endpoints = _endpoints(dashboard.public_id)
    chat = None
    if resolved.get("showDashboardChat") is True and chat_endpoint is not None:
        chat = chat_endpoint(caller.deployment.pk, _agent_param(request))
    if chat:
        endpoints["chat"] = chat
    else:
        resolved["showDashboardChat"] = False  # no agent to talk to: no panel
    return {
        "surface": "dashboard",
        "publicId": dashboard.public_id,
        "title": config.get("title") or dashboard.title,
        "description": config.get("description") or dashboard.description,
        "versionNumber": embedded.version.number,
        **_session_bootstrap(caller=caller, exchanged=exchanged, origins=_allowed_origins(account)),
        "endpoints": endpoints,
        "settings": resolved,
        "flags": flags,
        "grant": grant_sign(public_id=dashboard.public_id, caller=caller, url_flags=url.flags),
        "layout": config.get("layout") or {"cols": 12, "rowHeight": 80},
        "theme": config.get("theme") or {},
        "view": view_body(caller=caller, embedded=embedded, state=url.state),
    }


@declare(operations=CHAT_PAGE)
@require_GET
def chat_page(request: HttpRequest, chat_endpoint: ChatEndpoint | None = None) -> HttpResponse:
    """``GET /embed/chat?sessionId=``: the standalone chat (not affected by ``showDashboardChat``)."""
    redeemed = _redeem(request)
    if redeemed is None:
        return _no_session_page(request)
    exchanged, caller = redeemed
    origins = _allowed_origins(_account_settings(caller.deployment.account_id))
    if caller.settings.get("allowAi") is not True:
        return _error_page(
            request, 403, "AI chat is not available", "AI chat is not allowed for this embed session.", origins=origins
        )
    chat = chat_endpoint(caller.deployment.pk, _agent_param(request)) if chat_endpoint else None
    if not chat:
        return _error_page(
            request, 404, "AI chat is not available", "No agent answers for this deployment.", origins=origins
        )
    bootstrap = {
        "surface": "chat",
        **_session_bootstrap(caller=caller, exchanged=exchanged, origins=origins),
        "endpoints": {**_endpoints(None), "chat": chat},
        "settings": caller.settings,
    }
    response = render(request, "embed/chat.html", {"bootstrap": bootstrap})
    return _page_headers(response, origins=origins)


# --- the endpoints -------------------------------------------------------------------------------------------


def _caller(request: HttpRequest) -> EmbedCaller:
    try:
        return embed_caller(request.headers.get("Authorization"))
    except TokenInvalid as exc:
        raise Unauthorized(str(exc)) from None


def _state(body: dict[str, Any], *, caller: EmbedCaller, config: dict[str, Any]) -> viewstate.ViewState:
    zone = body.get("timezone")
    if zone is not None and viewstate.usable_timezone(zone) is None:
        raise BadRequest("timezone: must be an IANA time zone name")
    fallback = zone or str(caller.settings.get("timezone") or "UTC")
    state = viewstate.state_from_body(config, body.get("state"), timezone=fallback)
    if zone is not None:
        state.timezone = zone
    parameter = body.get("filterUrlParameter")
    if parameter is not None:
        if not isinstance(parameter, str) or not parameter.startswith("f_") or "=" not in parameter:
            raise BadRequest('filterUrlParameter: must be f_<member>=<JSON>, such as f_orders.status={"value":"paid"}')
        name, _, value = parameter.partition("=")
        viewstate.apply_filter_parameter(config, state, name, value)  # like the URL: ignored when no control takes it
    return state


@declare(operations=DASHBOARD_VIEW, audit_exempt={"POST": READS})
@csrf_exempt
@require_POST
def dashboard_view(request: HttpRequest, public_id: str) -> HttpResponse:
    """``POST /api/v1/embed/dashboard/{publicId}/view`` ``{grant, state?, filterUrlParameter?, timezone?}``."""
    caller = _caller(request)
    body = json_object_body(request, fields=VIEW_FIELDS)
    embedded = embed_dashboard(claims=caller.claims, public_id=public_id)
    url_flags = grant_verify(grant=body.get("grant"), public_id=public_id, caller=caller, renewing=True)
    config = _dashboard_config(embedded)
    state = _state(body, caller=caller, config=config)
    view = view_body(caller=caller, embedded=embedded, state=state)
    # A fresh grant for the token in hand (a page renewed in place trades its earlier session's grant here), and
    # what the page may do with it: this token's signed settings, narrowed by the page URL, as at page load.
    view["grant"] = grant_sign(public_id=public_id, caller=caller, url_flags=url_flags)
    view["flags"] = effective_flags(
        url_flags=url_flags, caller=caller, account=_account_settings(caller.deployment.account_id)
    )
    response = JsonResponse(view)
    response["Cache-Control"] = "no-store"
    return response


def _csv_cell(value: Any) -> Any:
    """A cell as a spreadsheet should read it: text that would start a formula is quoted with a leading '."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


def _load_all(caller: EmbedCaller, query: dict[str, Any]) -> dict[str, Any]:
    """``semantic_load`` until it answers (each ContinueWait re-attaches to the running query)."""
    attempts = int(settings.SEMANTIC["QUERY_TIMEOUT_SECONDS"] // max(settings.SEMANTIC["CONTINUE_WAIT_SECONDS"], 1)) + 2
    for _ in range(attempts):
        try:
            return semantic_load(deployment=caller.deployment, ctx=caller.ctx, query=query)
        except ContinueWait:
            continue
    raise ApiError("The query did not finish in time; try again")


@declare(operations=DASHBOARD_EXPORT, audit_exempt={"POST": READS})
@csrf_exempt
@require_POST
def dashboard_export(request: HttpRequest, public_id: str) -> HttpResponse:
    """``POST /api/v1/embed/dashboard/{publicId}/export`` ``{grant, state?, widgetId, format: "csv"}``."""
    caller = _caller(request)
    body = json_object_body(request, fields=EXPORT_FIELDS)
    if body.get("format", "csv") != "csv":
        raise BadRequest('format: only "csv" is exported by the server (PNG is drawn in the page)')
    widget_id = body.get("widgetId")
    if not isinstance(widget_id, str) or not widget_id:
        raise BadRequest("widgetId: required")
    embedded = embed_dashboard(claims=caller.claims, public_id=public_id)
    url_flags = grant_verify(grant=body.get("grant"), public_id=public_id, caller=caller)
    account = _account_settings(caller.deployment.account_id)
    if account is None or account.restrict_data_download:
        raise Forbidden("Data downloads are restricted for this account")
    if not effective_flags(url_flags=url_flags, caller=caller, account=account)["allowExport"]:
        raise Forbidden("Export is not allowed for this embed session")
    config = _dashboard_config(embedded)
    view = view_body(caller=caller, embedded=embedded, state=_state(body, caller=caller, config=config))
    widget = next((w for w in view["widgets"] if w.get("id") == widget_id), None)
    if widget is None or "query" not in widget:
        raise NotFound(f"No tile {widget_id!r} with data in this dashboard")
    query = dict(widget["query"])
    cap = settings.EMBEDADMIN["EMBED_EXPORT_MAX_ROWS"]
    asked = query.get("limit")
    query["limit"] = min(asked, cap) if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0 else cap
    result = _load_all(caller, query)
    rows = result.get("data") or []
    # The tile's columns, as the page shows them (dashboards.tiles): same order, same titles; values as the Core
    # Data API returns them (numbers unformatted, times in the query's time zone), a pivot table's flat.
    columns = widget["columns"]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([_csv_cell(column["title"]) for column in columns])
    for row in rows:
        writer.writerow([_csv_cell(row.get(column["key"])) for column in columns])
    filename = _FILENAME_UNSAFE.sub("-", f"{public_id}-{widget_id}")[:120] + ".csv"
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    response["X-Row-Count"] = str(len(rows))
    response["X-Row-Limit"] = str(query["limit"])
    return response
