"""The panel's report builder: a report made by picking fields of the deployment's model, previewed as a viewer sees
it, saved as the Platform API saves a report (``docs/dashboards.md``, "The report builder").

Where each part comes from, so that nothing here is a second rule:

- the fields: ``/v1/meta`` as the deployment's administrator reads it (``semantic_meta_for_administrator``: every
  cube and view with its public members; access policies judge viewers, not the person writing their reports);
  the filter operators by member type: the semantic layer's table (``model.OPERATORS_BY_TYPE``), in the panel's
  words for them (``access.OPERATOR_WORDS``);
- a chart type's visualization: ``dashboards.charts.chart_visualization`` (the page asks, it has no rule of its own);
- the preview: the viewer picked as "preview as viewer" picks one (``PreviewViewerForm``: an external user as they are,
  or a viewer typed with groups and attributes), resolved without writing anything as the panel's "who can read
  what" resolves them (``embedding.viewers.embed_viewer_resolve``), then the query context every door builds
  (``viewer_context``), so the viewer's access policies and row filters apply; the tile is composed as the embed
  page composes it (``viewstate.compose_view``) and run through the Core Data API's load (``semantic_load``);
- filter values: the Core Data API's load of the member, as that viewer;
- saving: ``dashboards.services.report_create`` / ``report_update`` with the Platform API's validation, audited as
  every panel write; "Add to dashboard": ``workbook_dashboard_set`` with a CHART widget below the others.

The endpoints answer JSON: ``{"error": "...", "field": "query" | "visualization" | "name" | ...}`` with the status of
the refusal, never a server error for bad input, and nothing written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.cache import add_never_cache_headers

from embedadmin.accounts.models import Deployment
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.ids import row_id
from embedadmin.core.errors import ApiError, BadRequest, NotFound, client_error
from embedadmin.core.fields import loads_json
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards import tiles
from embedadmin.dashboards.charts import CHART_TYPES, chart_type_of, chart_visualization
from embedadmin.dashboards.models import Report, ReportSnapshot, Workbook
from embedadmin.dashboards.validation import DEFAULT_COLS, model_of
from embedadmin.dashboards.viewstate import VALUES_QUERY_LIMIT, ViewState, compose_view, viewer_members
from embedadmin.directory.models import EmbedTenant, ExternalUser
from embedadmin.embedding.viewers import EmbedViewer, embed_viewer_resolve
from embedadmin.panel import tenancy
from embedadmin.panel.admin.access import OPERATOR_WORDS, typed_attributes
from embedadmin.panel.forms import PreviewViewerForm
from embedadmin.panel.panel_admin import PanelAdmin, audit_panel_change, object_missing_redirect, page_context
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.modeling.model import OPERATORS_BY_TYPE, VALUELESS_OPERATORS
from embedadmin.semantic.modeling.reading_titles import READING_TITLE
from embedadmin.semantic.query.dates import date_range_presets
from embedadmin.semantic.serving.cache import ContinueWait
from embedadmin.semantic.serving.routing import viewer_context
from embedadmin.semantic.serving.services import semantic_load, semantic_meta_for_administrator

# The builder runs under the strict policy of the embed pages: its scripts and styles are files of this product.
BUILDER_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
    "font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# The grains the builder offers for every time dimension (a model's own granularities follow them), titled as a
# dashboard's grain control titles them (tiles.grain_title).
GRAINS = ("hour", "day", "week", "month", "quarter", "year")
# How many external users the "Preview as" list offers (any other viewer can be typed).
VIEWER_CHOICES = 200
# The member keys of /v1/meta the page reads (besides its title: the title a person reads it by).
MEMBER_KEYS = ("name", "type", "format", "currency", "granularities", "description")
# The fields of each endpoint's body.
VIEWER_FIELDS = ("externalUser", "externalId", "embedTenant", "groups", "attributes")
PREVIEW_FIELDS = ("query", "visualization", "viewer", "title")
VALUES_FIELDS = ("member", "viewer", "search")
SAVE_FIELDS = ("reportId", "name", "jsonQuery", "visualization")
ADD_FIELDS = ("reportId", "workbookId")
VISUALIZATION_FIELDS = ("query", "chartType")


# --- what the page is built on ---------------------------------------------------------------------------------


def _catalog(deployment: Deployment) -> list[dict[str, Any]]:
    """The cubes and views of the deployment with their members, as the page reads them: each member titled as a
    person reads it (``readingTitle``: ``semantic.modeling.reading_titles``)."""
    body = semantic_meta_for_administrator(deployment=deployment)
    catalog = []
    for cube in body["cubes"]:
        entry: dict[str, Any] = {"name": cube["name"], "title": cube.get("title") or cube["name"], "type": cube["type"]}
        for part in ("measures", "dimensions", "segments"):
            entry[part] = [
                {"title": m[READING_TITLE], **{k: m[k] for k in MEMBER_KEYS if k in m}} for m in cube.get(part, [])
            ]
        entry["folders"] = [{"name": f["name"], "members": f["members"]} for f in cube.get("folders", [])]
        catalog.append(entry)
    return catalog


def _titles(catalog: list[dict[str, Any]]) -> Callable[[str], str]:
    """A member's name as the page shows it (its reading title)."""
    titles = {m["name"]: m["title"] for cube in catalog for part in ("measures", "dimensions") for m in cube[part]}
    return lambda name: titles.get(name, name)


def _report_item(report: Report) -> dict[str, Any]:
    """A saved report as the builder opens it: its query (parsed when it parses), visualization and chart type."""
    try:
        query = loads_json(report.json_query) if report.json_query else {}
    except ValueError:
        query = None
    visualization = report.meta.get("visualization") if isinstance(report.meta, dict) else None
    guess = None
    if isinstance(query, dict) and isinstance(visualization, dict):
        guess = chart_type_of(visualization=visualization, query=query)
    return {
        "id": report.pk,
        "publicId": report.public_id,
        "name": report.name,
        "version": report.version,
        "workbookId": report.workbook_id,
        "jsonQuery": report.json_query,
        "query": query if isinstance(query, dict) else None,
        "visualization": visualization,
        "chartType": guess.chart_type if guess else "table",
        "exact": bool(guess and guess.exact),
        "changeUrl": reverse("admin:dashboards_report_change", args=[report.pk]),
    }


def _viewer_choices(request: HttpRequest, deployment: Deployment) -> list[dict[str, Any]]:
    users = tenancy.restrict(ExternalUser.objects.filter(account_id=deployment.account_id), request)
    chosen = users.select_related("embed_tenant").order_by("external_id")[:VIEWER_CHOICES]
    return [
        {
            "id": user.pk,
            "label": f"{user.external_id} ({user.embed_tenant.name})" if user.embed_tenant else user.external_id,
        }
        for user in chosen
    ]


def _endpoints(deployment: Deployment) -> dict[str, str]:
    return {
        name: reverse(f"admin:dashboards_report_builder_{name}", args=[deployment.pk])
        for name in ("visualization", "preview", "values", "save", "add")
    } | {"edit": reverse("admin:dashboards_report_builder_edit", args=[0]).replace("/0/", "/{id}/")}


def bootstrap_of(request: HttpRequest, deployment: Deployment, report: Report | None) -> dict[str, Any]:
    """What the builder page starts from (a JSON data block of the page)."""
    catalog = _catalog(deployment)
    tenant_settings = deployment.account.tenant_settings
    workbooks = tenancy.restrict(Workbook.objects.filter(deployment=deployment), request).order_by("name", "pk")
    return {
        "deployment": {"id": deployment.pk, "name": deployment.name},
        "catalog": catalog,
        "operators": {kind: list(ops) for kind, ops in OPERATORS_BY_TYPE.items()},
        "operatorWords": {op: OPERATOR_WORDS[op][0] for ops in OPERATORS_BY_TYPE.values() for op in ops},
        "valueless": sorted(VALUELESS_OPERATORS),
        "chartTypes": [{"name": c.name, "label": c.label} for c in CHART_TYPES],
        "grains": [{"name": grain, "title": tiles.grain_title(grain, None)} for grain in GRAINS],
        "datePresets": date_range_presets(),
        "viewers": _viewer_choices(request, deployment),
        "workbooks": [{"id": w.pk, "name": w.name} for w in workbooks],
        "report": _report_item(report) if report is not None else None,
        "endpoints": _endpoints(deployment),
        "csrfToken": get_token(request),
        "locale": tenant_settings.embed_locale,
        "timezone": tenant_settings.embed_timezone,
    }


# --- the preview's viewer --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreviewViewer:
    """Who the preview runs as: their query context, how to name them, their locale and time zone."""

    ctx: QueryContext
    label: str
    locale: str
    timezone: str


def _viewer_text(value: Any, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise BadRequest(f"viewer.{name}: must be a string")
    return str(value)


def preview_viewer(request: HttpRequest, deployment: Deployment, given: Any) -> PreviewViewer:
    """The viewer of a preview, picked as the dashboards' "preview as viewer" picks one (``PreviewViewerForm``), and
    resolved without writing anything: no external user, embed tenant or session is made."""
    if not isinstance(given, dict):
        raise BadRequest("viewer: pick an external user or describe a viewer")
    unknown = sorted(set(given) - set(VIEWER_FIELDS))
    if unknown:
        raise BadRequest(f"viewer: unknown fields: {', '.join(unknown)}")
    data = {
        "external_user": _viewer_text(given.get("externalUser"), "externalUser"),
        "external_id": _viewer_text(given.get("externalId"), "externalId"),
        "embed_tenant": _viewer_text(given.get("embedTenant"), "embedTenant"),
        "groups": _viewer_text(given.get("groups"), "groups"),
        "attributes": _viewer_text(given.get("attributes"), "attributes"),
    }
    users = tenancy.restrict(ExternalUser.objects.filter(account_id=deployment.account_id), request)
    form = PreviewViewerForm(data, external_users=users)
    if not form.is_valid():
        problems = [str(e) for errors in form.errors.values() for e in errors]
        raise BadRequest(f"Preview as: {' '.join(problems)}")
    cleaned = form.cleaned_data
    user: ExternalUser | None = cleaned["external_user"]
    account = deployment.account
    if user is not None:
        tenant = user.embed_tenant
        attributes: list[tuple[str, Any]] = []
        label = user.external_id
    else:
        name = cleaned["embed_tenant"]
        # A tenant the account does not have yet is named in the claims only (the mint would make it; this writes
        # nothing).
        tenant = (
            (EmbedTenant.objects.filter(account=account, name=name).first() or EmbedTenant(account=account, name=name))
            if name
            else None
        )
        attributes = typed_attributes(account, cleaned["attributes"])
        label = cleaned["external_id"]
    try:
        viewer: EmbedViewer = embed_viewer_resolve(
            account=account,
            deployment=deployment,
            external_user=user,
            embed_tenant=tenant,
            group_names=cleaned["groups"],
            attribute_values=attributes,
            security_context={},
        )
    except BadRequest as exc:
        raise BadRequest(f"Preview as: {exc.message}") from None
    ctx = viewer_context(
        deployment=deployment,
        security_context=viewer.payload,
        groups=list(viewer.groups),
        user_attributes=viewer.user_attributes,
    )
    settings = viewer.payload.get("embed", {}).get("settings", {})
    return PreviewViewer(
        ctx=ctx,
        label=label,
        locale=str(settings.get("locale") or account.tenant_settings.embed_locale),
        timezone=str(settings.get("timezone") or account.tenant_settings.embed_timezone),
    )


# --- endpoints -------------------------------------------------------------------------------------------------

# Where an error belongs in the page, by how its message starts.
_ERROR_FIELDS = (
    ("jsonQuery", "query"),
    ("query", "query"),
    ("meta.visualization", "visualization"),
    ("visualization", "visualization"),
    ("meta", "visualization"),
    ("chartType", "chartType"),
    ("name", "name"),
    ("Preview as", "viewer"),
    ("viewer", "viewer"),
    ("Attributes", "viewer"),
    ("member", "member"),
    ("workbookId", "workbook"),
)


def error_answer(message: str, status: int) -> JsonResponse:
    field = next((name for prefix, name in _ERROR_FIELDS if message.startswith(prefix)), None)
    return JsonResponse({"error": message, "field": field}, status=status)


def _deployment(request: HttpRequest, deployment_id: int) -> Deployment:
    """The deployment of the URL among those the panel viewer may see (another account's is the same 404 as a
    missing one)."""
    found = tenancy.restrict(Deployment.objects.select_related("account"), request).filter(pk=deployment_id).first()
    if found is None:
        raise NotFound("Deployment not found")
    return found


def _report(request: HttpRequest, deployment: Deployment, report_id: Any) -> Report:
    number = row_id(report_id) if isinstance(report_id, int | str) and not isinstance(report_id, bool) else None
    found = (
        tenancy.restrict(Report.objects.select_related("deployment"), request)
        .filter(deployment=deployment, pk=number)
        .first()
        if number is not None
        else None
    )
    if found is None:
        raise NotFound(f"reportId: report {report_id} not found in this deployment")
    return found


def _json_setting(value: Any, field: str) -> Any:
    """A setting the Advanced tab sends as text (parsed here, so that bad JSON is this 400) or as JSON."""
    if isinstance(value, str):
        try:
            return loads_json(value)
        except (ValueError, RecursionError):
            raise BadRequest(f"{field}: not valid JSON") from None
    return value


def _query_object(value: Any) -> dict[str, Any]:
    query = _json_setting(value, "jsonQuery")
    if not isinstance(query, dict):
        raise BadRequest("jsonQuery: must be a JSON object (a Cube query)")
    return query


def visualization_view(request: HttpRequest, deployment: Deployment) -> dict[str, Any]:
    """``{query, chartType}`` -> the visualization of that chart type for the query, and notes on what it leaves out."""
    body = json_object_body(request, fields=VISUALIZATION_FIELDS)
    query = _query_object(body.get("query", {}))
    titles = _titles(_catalog(deployment))
    made = chart_visualization(query=query, chart_type=str(body.get("chartType")), title_of=titles)
    return {"visualization": made.visualization, "notes": list(made.notes)}


def preview_view(request: HttpRequest, deployment: Deployment) -> dict[str, Any]:
    """``{query, visualization, viewer, title?}`` -> the report's tile as the embed page composes it for the viewer,
    its rows (run through the Core Data API's load as that viewer), the row count and the time the load took."""
    body = json_object_body(request, fields=PREVIEW_FIELDS)
    visualization = _json_setting(body.get("visualization"), "meta.visualization")
    parsed, checked = dashboards.report_content(
        deployment=deployment, json_query=_query_object(body.get("query")), meta={"visualization": visualization}
    )
    if parsed is None or not parsed.selected:
        raise BadRequest("jsonQuery: pick a measure or a dimension")
    if checked.kind == ReportSnapshot.Kind.TEXT:
        raise BadRequest("meta.visualization: a text report has no rows to preview")
    viewer = preview_viewer(request, deployment, body.get("viewer"))
    given_title = body.get("title")
    title = given_title if isinstance(given_title, str) else ""
    snapshot = ReportSnapshot(kind=checked.kind, spec=checked.spec, json_query=parsed.query, name=title, title=title)
    config = {"widgets": [{"id": "preview", "type": "CHART", "position": {"x": 0, "y": 0, "w": DEFAULT_COLS, "h": 4}}]}
    view = compose_view(
        config=config,
        snapshot_for=lambda _config: snapshot,
        state=ViewState(timezone=viewer.timezone),
        members=viewer_members(deployment=deployment, ctx=viewer.ctx),
    )
    widget = view["widgets"][0]
    started = time.perf_counter()
    try:
        answer = semantic_load(deployment=deployment, ctx=viewer.ctx, query=widget["query"])
    except ContinueWait:
        return {"continueWait": True}
    elapsed = time.perf_counter() - started
    rows = answer.get("data", [])
    preview = {
        "widget": widget,
        "data": rows,
        "rowCount": len(rows),
        "durationMs": round(elapsed * 1000),
        "viewer": viewer.label,
        "locale": viewer.locale,
        "timezone": viewer.timezone,
    }
    totals = widget.get("spec", {}).get("totals") if checked.kind == ReportSnapshot.Kind.PIVOT else None
    if isinstance(totals, dict) and totals:
        # A pivot's totals are queries of their own (the composition's): run as the same viewer.
        try:
            preview["totals"] = {
                name: semantic_load(deployment=deployment, ctx=viewer.ctx, query=query).get("data", [])
                for name, query in totals.items()
            }
        except ContinueWait:
            return {"continueWait": True}
    return preview


def values_view(request: HttpRequest, deployment: Deployment) -> dict[str, Any]:
    """``{member, viewer, search?}`` -> the member's values as that viewer reads them through the Core Data API
    (the embed page's filter controls ask the same query), at most VALUES_QUERY_LIMIT."""
    body = json_object_body(request, fields=VALUES_FIELDS)
    member = body.get("member")
    found = model_of(deployment=deployment).members.get(member) if isinstance(member, str) else None
    if found is None or found.kind != "dimension":
        raise BadRequest(f"member: {member!r} is not a dimension of the data model")
    viewer = preview_viewer(request, deployment, body.get("viewer"))
    query: dict[str, Any] = {"dimensions": [member], "order": {member: "asc"}, "limit": VALUES_QUERY_LIMIT}
    search = body.get("search")
    if search is not None and not isinstance(search, str):
        raise BadRequest("search: must be a string")
    if search and search.strip():
        query["filters"] = [{"member": member, "operator": "contains", "values": [search.strip()]}]
    try:
        answer = semantic_load(deployment=deployment, ctx=viewer.ctx, query=query)
    except ContinueWait:
        return {"continueWait": True}
    values = [row.get(member) for row in answer.get("data", [])]
    shown = [str(v) for v in values if v is not None]
    return {"values": shown, "truncated": len(values) >= VALUES_QUERY_LIMIT}


def save_view(request: HttpRequest, deployment: Deployment) -> dict[str, Any]:
    """``{reportId?, name, jsonQuery, visualization}`` -> the report created or updated through the Platform API's
    services (``jsonQuery`` and ``meta.visualization`` validated the same way), with its audit entry."""
    body = json_object_body(request, fields=SAVE_FIELDS)
    visualization = _json_setting(body.get("visualization"), "meta.visualization")
    # The query as sent: text (the Advanced tab) is parsed and stored verbatim by the service, an object is stored
    # as its JSON text, as the Platform API does either.
    fields: dict[str, Any] = {"name": body.get("name"), "json_query": body.get("jsonQuery")}
    report_id = body.get("reportId")
    with transaction.atomic():
        if report_id is None:
            fields["meta"] = {"visualization": visualization}
            report = dashboards.report_create(deployment=deployment, fields=fields)
            audit_panel_change(request, report, "create")
        else:
            report = _report(request, deployment, report_id)
            meta = report.meta if isinstance(report.meta, dict) else {}
            fields["meta"] = {**meta, "visualization": visualization}
            version = report.version
            report = dashboards.report_update(report=report, fields=fields)
            if report.version != version:
                audit_panel_change(request, report, "update", details={"fields": ["name", "jsonQuery", "meta"]})
    return {"report": _report_item(report), "created": report_id is None}


def add_to_dashboard_view(request: HttpRequest, deployment: Deployment) -> dict[str, Any]:
    """``{reportId, workbookId}`` -> the report put on the workbook's dashboard draft as a CHART widget below the
    others (``workbook_dashboard_set``: the draft is validated as the Platform API's PUT validates it)."""
    body = json_object_body(request, fields=ADD_FIELDS)
    report = _report(request, deployment, body.get("reportId"))
    workbook_id = body.get("workbookId")
    number = row_id(workbook_id) if isinstance(workbook_id, int | str) and not isinstance(workbook_id, bool) else None
    workbooks = tenancy.restrict(Workbook.objects.select_related("deployment"), request).filter(deployment=deployment)
    workbook = workbooks.filter(pk=number).first() if number is not None else None
    if workbook is None:
        raise NotFound(f"workbookId: workbook {workbook_id} not found in this deployment")
    with transaction.atomic():
        workbook = Workbook.objects.select_for_update().select_related("deployment").get(pk=workbook.pk)
        draft = dict(workbook.dashboard_draft) if isinstance(workbook.dashboard_draft, dict) else {}
        draft.setdefault("title", workbook.name)
        widgets = [w for w in draft.get("widgets", []) if isinstance(w, dict)]
        cols = (
            draft.get("layout", {}).get("cols", DEFAULT_COLS) if isinstance(draft.get("layout"), dict) else DEFAULT_COLS
        )
        visualization = report.meta.get("visualization") if isinstance(report.meta, dict) else None
        kind = visualization.get("kind") if isinstance(visualization, dict) else None
        width, height = (3, 2) if kind == "kpi" else (6, 4)
        widgets.append(
            {
                "type": "CHART",
                "position": {"x": 0, "y": _bottom(widgets), "w": min(width, cols), "h": height},
                "config": {"reportId": report.pk},
            }
        )
        dashboards.workbook_dashboard_set(workbook=workbook, draft={**draft, "widgets": widgets})
        audit_panel_change(request, workbook, "update", resource="dashboard", details={"addedReport": report.pk})
        if report.workbook_id is None:
            dashboards.report_update(report=report, fields={"workbook": workbook})
            audit_panel_change(request, report, "update", details={"fields": ["workbook"]})
    workbook.refresh_from_db()
    stored = workbook.dashboard_draft if isinstance(workbook.dashboard_draft, dict) else {}
    added = stored["widgets"][-1]
    return {
        "workbook": {"id": workbook.pk, "name": workbook.name},
        "widgetId": added["id"],
        "workbookUrl": reverse("admin:dashboards_workbook_change", args=[workbook.pk]),
    }


def _bottom(widgets: list[dict[str, Any]]) -> int:
    """The first grid row below every widget of a draft."""
    bottom = 0
    for widget in widgets:
        position = widget.get("position")
        if isinstance(position, dict):
            y, h = position.get("y"), position.get("h")
            if isinstance(y, int) and isinstance(h, int) and not isinstance(y, bool) and not isinstance(h, bool):
                bottom = max(bottom, y + h)
    return bottom


# --- wiring ----------------------------------------------------------------------------------------------------

Endpoint = Callable[[HttpRequest, Deployment], dict[str, Any]]


def _endpoint(model_admin: PanelAdmin, handler: Endpoint) -> Callable[[HttpRequest, int], HttpResponse]:
    """A builder endpoint: POST only, for a panel viewer who may build reports, on a deployment they may see;
    every refusal a JSON error with its status (nothing written: each handler's writes are one transaction)."""

    def view(request: HttpRequest, deployment_id: int) -> HttpResponse:
        if request.method != "POST":
            response = error_answer("Method not allowed: POST", 405)
            response["Allow"] = "POST"
            return response
        if not model_admin.panel_allowed(request, "build"):
            return error_answer("You may not build reports", 403)
        try:
            answer = JsonResponse(handler(request, _deployment(request, deployment_id)))
        except Exception as exc:  # a client's fault is answered, anything else is the server's (and raised)
            known = client_error(exc)
            if known is None:
                raise
            return error_answer(known[1], known[0])
        add_never_cache_headers(answer)
        return answer

    return view


def builder_page(model_admin: PanelAdmin, request: HttpRequest, report_id: int | None = None) -> HttpResponse:
    """The builder: a new report (``?deployment=<id>``, else the viewer's only deployment with a model, else a list
    to pick from) or a saved one (``<id>/builder/``)."""
    if not model_admin.panel_allowed(request, "build"):
        raise PermissionDenied
    report = None
    deployments = tenancy.restrict(Deployment.objects.select_related("account"), request).exclude(model_dir="")
    if report_id is not None:
        report = tenancy.restrict(Report.objects.select_related("deployment"), request).filter(pk=report_id).first()
        if report is None:
            return object_missing_redirect(model_admin, request, str(report_id))
        deployment: Deployment | None = deployments.filter(pk=report.deployment_id).first()
    else:
        asked = row_id(request.GET.get("deployment", ""))
        deployment = deployments.filter(pk=asked).first() if asked is not None else None
        if deployment is None and asked is None and deployments.count() == 1:
            deployment = deployments.first()
    title = f"Edit report {report.name}" if report is not None else "New report"
    context = {**page_context(model_admin, request, title=title, obj=report), "deployment": deployment}
    if deployment is None:
        context["deployments"] = [
            (d, f"{reverse('admin:dashboards_report_builder')}?deployment={d.pk}") for d in deployments.order_by("pk")
        ]
        response = TemplateResponse(request, "panel/report_builder_pick.html", context)
    else:
        try:
            context["bootstrap"] = bootstrap_of(request, deployment, report)
        except ApiError as exc:  # a model that does not compile: said on the page
            context["model_error"] = exc.message
        response = TemplateResponse(request, "panel/report_builder.html", context)
        response["Content-Security-Policy"] = BUILDER_CSP
    add_never_cache_headers(response)
    return response


def builder_urls(model_admin: PanelAdmin) -> list[URLPattern]:
    """The builder's page and endpoints, for the report admin (before its own ``<object_id>/`` routes)."""
    site = model_admin.admin_site

    def new(request: HttpRequest) -> HttpResponse:
        return builder_page(model_admin, request)

    def edit(request: HttpRequest, report_id: int) -> HttpResponse:
        return builder_page(model_admin, request, report_id)

    endpoints: dict[str, Endpoint] = {
        "visualization": visualization_view,
        "preview": preview_view,
        "values": values_view,
        "save": save_view,
        "add": add_to_dashboard_view,
    }
    urls = [
        path("builder/", site.admin_view(new), name="dashboards_report_builder"),
        path("<id:report_id>/builder/", site.admin_view(edit), name="dashboards_report_builder_edit"),
    ]
    urls += [
        path(
            f"builder/<id:deployment_id>/{name}/",
            site.admin_view(_endpoint(model_admin, handler)),
            name=f"dashboards_report_builder_{name}",
        )
        for name, handler in endpoints.items()
    ]
    return urls
