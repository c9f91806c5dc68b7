"""The panel's dashboard editor: a workbook's dashboard draft laid out on a grid (GridStack, dragged and resized
with the mouse) and set in forms, saved through ``dashboards.services.workbook_dashboard_set`` (the Platform API's
validation: a refused draft is a 400 naming the widget and writes nothing), published through the panel's publish
(:meth:`WorkbookAdmin.publish_workbook`, audited like every panel write), and compared with the published version
in words.

What the editor offers comes from the deployment: its reports by name, and the members of its model as ``/v1/meta``
describes them for its administrators (``semantic.results.meta.administrator_meta``, as the report builder reads it:
access policies judge viewers, not the person building the dashboard; hidden members are left out). The operators a
filter may offer are the validation's (``validation.control_operators``), named in the panel's words for them
(``access.OPERATOR_WORDS``). The browser sends back a whole draft; only the service decides what is stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.cache import add_never_cache_headers
from django.utils.html import format_html, format_html_join

from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.errors import ApiError, BadRequest, client_error, json_error
from embedadmin.dashboards import selectors as dashboards_selectors
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards import tiles
from embedadmin.dashboards.models import Dashboard, DashboardVersion, Report, ReportSnapshot, Workbook
from embedadmin.dashboards.validation import DEFAULT_COLS, VISIBILITIES, control_operators, model_of
from embedadmin.panel.admin.access import OPERATOR_WORDS
from embedadmin.panel.panel_admin import PanelAdmin, audit_panel_change, page_context
from embedadmin.semantic.modeling.model import DATE_OPERATORS, Dimension, Member, value_type
from embedadmin.semantic.modeling.reading_titles import READING_TITLE
from embedadmin.semantic.modeling.references import PREDEFINED_GRANULARITIES
from embedadmin.semantic.query.dates import DATE_RANGE_PRESETS, date_range_presets
from embedadmin.semantic.results.meta import administrator_meta

if TYPE_CHECKING:
    _EditorBase = PanelAdmin
else:
    _EditorBase = object

# The embed page draws a draft without a layout on this grid (``embedding.pages``); the editor starts new drafts on it.
DEFAULT_ROW_HEIGHT = 80
# The editor page runs under the strict policy of the embed pages: its scripts and styles are files of this product.
EDITOR_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
VISIBILITY_WORDS = {"visible": "shown", "hidden": "hidden", "disabled": "shown, not changeable"}
REPORT_KIND_WORDS = {"kpi": "KPI", "table": "Table", "pivot": "Pivot table", "text": "Text", "vega": "Chart"}
MARK_WORDS = {"bar": "Bar chart", "line": "Line chart", "area": "Area chart", "arc": "Pie chart", "point": "Scatter"}
# A refusal of ``draft_validate`` names its widget first: ``widgets[2] (id "revenue"): ...``.
WIDGET_REFUSAL = re.compile(r'^widgets\[(\d+)\](?: \(id "[^"]*"\))?: ')


# --- what the editor offers ------------------------------------------------------------------------------------


def _grains(member: Dimension, described: dict[str, Any]) -> list[dict[str, str]]:
    """The granularities a TIME_GRAIN control may offer for ``member``: the predefined ones, then its own (the rule
    ``validation._check_grain`` applies)."""
    own = [str(g["name"]) for g in described.get("granularities", [])]
    names = [*(g for g in PREDEFINED_GRANULARITIES if g not in own), *own]
    return [{"name": name, "title": tiles.grain_title(name, described)} for name in names]


def _member_item(entity_title: str, member: Member, described: dict[str, Any]) -> dict[str, Any]:
    item: dict[str, Any] = {
        "name": member.full_name,
        "title": described[READING_TITLE],
        "entity": entity_title,
        "kind": member.kind,
        "type": value_type(member),
    }
    if isinstance(member, Dimension):
        item["operators"] = list(control_operators(member))
        if member.type == "time":
            item["grains"] = _grains(member, described)
    return item


def member_catalog(*, deployment: Any) -> list[dict[str, Any]]:
    """The cubes and views of the deployment's model with their shown measures and dimensions, as ``/v1/meta``
    describes them for its administrators (``administrator_meta``, as the report builder reads it):
    ``[{name, title, isView, members: [{name, title, entity, kind, type, operators?, grains?}]}]``, views first (what
    embedded dashboards usually read). A dimension's ``operators`` are those a FILTER control on it may offer
    (``validation.control_operators``). 400 when the deployment has no model."""
    model = model_of(deployment=deployment)
    entities = []
    for entity in administrator_meta(model)["cubes"]:
        members = [
            _member_item(entity["title"], model.members[described["name"]], described)
            for described in (*entity["measures"], *entity["dimensions"])
        ]
        is_view = entity["type"] == "view"
        entities.append({"name": entity["name"], "title": entity["title"], "isView": is_view, "members": members})
    return sorted(entities, key=lambda e: (not e["isView"], e["title"].lower()))


def report_kind(report: Report | ReportSnapshot) -> str:
    """How a report is drawn, in words: "KPI", "Table", "Bar chart"..."""
    if isinstance(report, ReportSnapshot):
        kind, spec = report.kind, report.spec
    else:
        visualization = report.meta.get("visualization") if isinstance(report.meta, dict) else None
        visualization = visualization if isinstance(visualization, dict) else {}
        kind, spec = str(visualization.get("kind", "")), visualization.get("spec")
    if kind == "vega" and isinstance(spec, dict):
        mark = spec.get("mark")
        mark = mark.get("type") if isinstance(mark, dict) else mark
        if isinstance(mark, str) and mark in MARK_WORDS:
            return MARK_WORDS[mark]
    return REPORT_KIND_WORDS.get(kind, "Report")


def report_items(*, deployment: Any) -> list[dict[str, Any]]:
    """The deployment's reports a CHART may show, by name, with the workbook each belongs to (names repeat across
    workbooks)."""
    rows = dashboards_selectors.reports_of(deployment=deployment).select_related("workbook").order_by("name", "id")
    return [
        {
            "id": r.pk,
            "publicId": r.public_id,
            "name": r.name,
            "title": r.title,
            "kind": report_kind(r),
            "workbook": r.workbook.name if r.workbook is not None else "",
        }
        for r in rows
    ]


def draft_of(workbook: Workbook) -> dict[str, Any]:
    """The workbook's draft, or a new empty one on the grid the embed page draws by default."""
    if isinstance(workbook.dashboard_draft, dict):
        return workbook.dashboard_draft
    return {
        "title": workbook.name,
        "layout": {"cols": DEFAULT_COLS, "rowHeight": DEFAULT_ROW_HEIGHT},
        "widgets": [],
    }


def newest_published(workbook: Workbook) -> DashboardVersion | None:
    dashboard = getattr(workbook, "dashboard", None)
    if dashboard is None or dashboard.status != Dashboard.Status.PUBLISHED:
        return None
    return dashboards_selectors.newest_version(dashboard=dashboard)


# --- words for a draft: the summary on the workbook page and the comparison ------------------------------------


@dataclass
class Vocabulary:
    """What the words about a draft need: report names by id (now, and as a published version froze them), and
    member titles by name."""

    reports: dict[int, Report] = field(default_factory=dict)
    snapshots: dict[int, ReportSnapshot] = field(default_factory=dict)
    members: dict[str, str] = field(default_factory=dict)

    def member(self, name: Any) -> str:
        return self.members.get(name, str(name)) if name else "no member"

    def report(self, report_id: Any) -> str:
        found: Report | ReportSnapshot | None = self.reports.get(report_id) or self.snapshots.get(report_id)
        if found is None:
            return f"a missing report (id {report_id})"
        return found.title or found.name


def vocabulary_of(*, deployment: Any, report_ids: Iterable[Any], version: DashboardVersion | None) -> Vocabulary:
    ids = [i for i in report_ids if isinstance(i, int) and not isinstance(i, bool)]
    words = Vocabulary(reports=dashboards_selectors.reports_by_id(deployment=deployment, report_ids=ids))
    if version is not None:
        words.snapshots = {s.report_id: s for s in version.snapshots.all() if s.report_id is not None}
    try:
        catalog = member_catalog(deployment=deployment)
    except ApiError:  # no model, or none compiles: members are named by their names
        catalog = []
    words.members = {m["name"]: f"{m['title']} ({e['title']})" for e in catalog for m in e["members"]}
    return words


def _widgets(config: Any) -> list[dict[str, Any]]:
    widgets = config.get("widgets") if isinstance(config, dict) else None
    return [w for w in widgets if isinstance(w, dict)] if isinstance(widgets, list) else []


def _config(widget: Mapping[str, Any]) -> dict[str, Any]:
    config = widget.get("config")
    return config if isinstance(config, dict) else {}


def _position(widget: Mapping[str, Any]) -> dict[str, int]:
    position = widget.get("position")
    position = position if isinstance(position, dict) else {}
    return {key: int(position[key]) if isinstance(position.get(key), int) else 0 for key in ("x", "y", "w", "h")}


def is_date_range(widget: Mapping[str, Any]) -> bool:
    operators = _config(widget).get("operators")
    return isinstance(operators, list) and any(op in DATE_OPERATORS for op in operators if isinstance(op, str))


def widget_kind(widget: Mapping[str, Any]) -> str:
    """What a widget is, in the editor's words: report, text, filter, date range, grain, measure switch."""
    kind = widget.get("type")
    if kind == "FILTER":
        return "date range" if is_date_range(widget) else "filter"
    return {"CHART": "report", "TEXT": "text", "TIME_GRAIN": "grain", "FIELD": "measure switch"}.get(
        str(kind), "widget"
    )


def widget_title(widget: Mapping[str, Any], words: Vocabulary) -> str:
    """The title a person knows a widget by: its own, else its report's or member's; a text's first words."""
    config = _config(widget)
    kind = widget.get("type")
    if kind == "CHART":
        title = config.get("title")
        return title if isinstance(title, str) and title else words.report(config.get("reportId"))
    if kind == "TEXT":
        text = config.get("text")
        first = text.strip().splitlines()[0] if isinstance(text, str) and text.strip() else ""
        return shorten(first, 40) or "Empty text"
    label = config.get("label")
    if isinstance(label, str) and label:
        return label
    return words.member(config.get("member")).split(" (")[0]


def shorten(text: str, size: int) -> str:
    """At most ``size`` characters, cut at a word when one ends in the second half (the editor's rule too)."""
    if len(text) <= size:
        return text
    cut = text[:size]
    space = cut.rfind(" ")
    return f"{cut[:space] if space > size // 2 else cut}…"


def place_words(position: Mapping[str, int]) -> str:
    """Where a widget sits, counted as people count: "column 1, row 2, 4 columns wide, 3 rows high"."""
    return f"column {position['x'] + 1}, row {position['y'] + 1}, {size_words(position)}"


def size_words(position: Mapping[str, int]) -> str:
    columns, rows = position["w"], position["h"]
    return f"{columns} column{'s' if columns != 1 else ''} wide, {rows} row{'s' if rows != 1 else ''} high"


def _value_words(value: Any) -> str:
    """A control's default value in words: ``{"operator": "equals", "values": ["France"]}`` -> "equals France"."""
    if value is None or value == "" or value == []:
        return "none"
    if isinstance(value, dict):
        operator = value.get("operator")
        values = value.get("values", [value["value"]] if "value" in value else [])
        shown = _value_words(values)
        if isinstance(operator, str):
            word = OPERATOR_WORDS.get(operator, (operator, operator))[0]
            return word if shown == "none" else f"{word} {shown}"
        return shown
    if isinstance(value, list):
        if len(value) == 2 and all(isinstance(v, str) for v in value):
            return f"{value[0]} to {value[1]}" if re.match(r"^\d{4}-", value[0]) else f"{value[0]}, {value[1]}"
        return ", ".join(_value_words(v) for v in value) or "none"
    presets = dict(DATE_RANGE_PRESETS)
    return presets.get(value, str(value)) if isinstance(value, str) else str(value)


def _setting_words(key: str, value: Any, words: Vocabulary) -> str:
    if key == "member":
        return words.member(value)
    if key == "reportId":
        return f"“{words.report(value)}”"
    if key == "operators" and isinstance(value, list):
        return ", ".join(OPERATOR_WORDS.get(op, (str(op),))[0] for op in value) or "none"
    if key == "alternatives" and isinstance(value, list):
        return ", ".join(words.member(m).split(" (")[0] for m in value) or "none"
    if key in ("grains", "defaultGrain"):
        grains = value if isinstance(value, list) else [value]
        return ", ".join(str(g).replace("_", " ") for g in grains if g) or "none"
    if key == "multiple":
        return "several values" if value is not False else "one value"
    if key == "visibility":
        return VISIBILITY_WORDS.get(str(value or "visible"), str(value))
    if key == "defaultValue":
        return _value_words(value)
    if key == "text":
        text = value.strip() if isinstance(value, str) else ""
        return f"“{shorten(text, 60)}”" if text else "empty"
    return str(value)


SETTING_NAMES = {
    "member": "member",
    "operators": "operators",
    "multiple": "values",
    "defaultValue": "default",
    "visibility": "visibility",
    "grains": "grains",
    "defaultGrain": "default grain",
    "alternatives": "alternatives",
    "text": "text",
}
# Settings a widget shows under another name (titles), or that the comparison reports on their own (reports).
_TITLE_KEYS = ("title", "label")


@dataclass(frozen=True)
class Difference:
    """One change of a draft against the published version, in words."""

    change: str  # added | removed | moved | resized | retitled | report | settings | dashboard | report-edited
    text: str
    widget_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"change": self.change, "text": self.text, "widgetId": self.widget_id}


def _defaulted(config: Mapping[str, Any], key: str) -> Any:
    """A setting as a viewer meets it: an absent ``multiple`` allows several values, an absent visibility shows."""
    defaults = {"multiple": True, "visibility": "visible"}
    return config.get(key, defaults.get(key))


def _widget_changes(before: dict[str, Any], after: dict[str, Any], words: Vocabulary) -> list[Difference]:
    wid = str(after.get("id"))
    name = f"{widget_kind(after).capitalize()} “{widget_title(after, words)}”"
    changes: list[Difference] = []
    old_title, new_title = widget_title(before, words), widget_title(after, words)
    old_at, new_at = _position(before), _position(after)
    if (old_at["x"], old_at["y"]) != (new_at["x"], new_at["y"]):
        changes.append(
            Difference(
                "moved",
                f"{name} moved from column {old_at['x'] + 1}, row {old_at['y'] + 1} "
                f"to column {new_at['x'] + 1}, row {new_at['y'] + 1}",
                wid,
            )
        )
    if (old_at["w"], old_at["h"]) != (new_at["w"], new_at["h"]):
        changes.append(Difference("resized", f"{name} resized from {size_words(old_at)} to {size_words(new_at)}", wid))
    old, new = _config(before), _config(after)
    if after.get("type") == "CHART" and old.get("reportId") != new.get("reportId"):
        changes.append(
            Difference(
                "report",
                f"{name} shows {_setting_words('reportId', new.get('reportId'), words)} instead of "
                f"{_setting_words('reportId', old.get('reportId'), words)}",
                wid,
            )
        )
    elif old_title != new_title:
        changes.append(
            Difference("retitled", f"{widget_kind(after).capitalize()} “{old_title}” retitled “{new_title}”", wid)
        )
    settings = []
    for key in sorted((set(old) | set(new)) - {"reportId", "reportPublicId", *_TITLE_KEYS}):
        was, now = _defaulted(old, key), _defaulted(new, key)
        if was != now:
            label = SETTING_NAMES.get(key, key)
            settings.append(f"{label}: {_setting_words(key, was, words)} → {_setting_words(key, now, words)}")
    if settings:
        changes.append(Difference("settings", f"{name}: {'; '.join(settings)}", wid))
    return changes


def draft_differences(*, draft: Any, published: Any, words: Vocabulary) -> list[Difference]:
    """What publishing ``draft`` would change for viewers of the ``published`` config (None before the first
    publish): widgets added, removed, moved or resized, retitled, showing another report or set otherwise, the
    dashboard's title and grid, and the reports edited since they were frozen. In draft order, removals last."""
    draft = draft if isinstance(draft, dict) else {}
    before = published if isinstance(published, dict) else {}
    differences: list[Difference] = []
    if published is not None:
        old_title, new_title = before.get("title") or "", draft.get("title") or ""
        if old_title != new_title:
            differences.append(Difference("dashboard", f"Dashboard retitled “{old_title}” → “{new_title}”"))
        old_grid, new_grid = _grid(before), _grid(draft)
        if old_grid != new_grid:
            differences.append(
                Difference(
                    "dashboard",
                    f"Grid: {old_grid[0]} columns of rows {old_grid[1]} px → {new_grid[0]} columns of rows "
                    f"{new_grid[1]} px",
                )
            )
    published_widgets = {str(w.get("id")): w for w in _widgets(before)}
    drafted = _widgets(draft)
    for widget in drafted:
        wid = str(widget.get("id"))
        old = published_widgets.get(wid)
        name = f"{widget_kind(widget).capitalize()} “{widget_title(widget, words)}”"
        if old is None or old.get("type") != widget.get("type"):
            if old is not None:
                differences.append(Difference("removed", f"{_named(old, words)} removed", wid))
            differences.append(Difference("added", f"{name} added at {place_words(_position(widget))}", wid))
            continue
        differences.extend(_widget_changes(old, widget, words))
        if widget.get("type") == "CHART":
            differences.extend(_report_edits(widget, words))
    drafted_ids = {str(w.get("id")) for w in drafted}
    for wid, widget in published_widgets.items():
        if wid not in drafted_ids:
            differences.append(
                Difference("removed", f"{_named(widget, words)} removed (was at {place_words(_position(widget))})", wid)
            )
    return differences


def _named(widget: Mapping[str, Any], words: Vocabulary) -> str:
    return f"{widget_kind(widget).capitalize()} “{widget_title(widget, words)}”"


def _grid(config: Mapping[str, Any]) -> tuple[int, int]:
    layout = config.get("layout") if isinstance(config.get("layout"), dict) else {}
    assert isinstance(layout, dict)
    return int(layout.get("cols") or DEFAULT_COLS), int(layout.get("rowHeight") or DEFAULT_ROW_HEIGHT)


def _report_edits(widget: Mapping[str, Any], words: Vocabulary) -> list[Difference]:
    """A report a chart kept, edited since the version froze it: publishing freezes it again."""
    report_id = _config(widget).get("reportId")
    frozen = words.snapshots.get(report_id) if isinstance(report_id, int) else None
    if frozen is None:
        return []
    current = words.reports.get(report_id) if isinstance(report_id, int) else None
    if current is None:
        return [
            Difference("report-edited", f"Report “{frozen.title or frozen.name}” was deleted", str(widget.get("id")))
        ]
    if current.version == frozen.report_version:
        return []
    return [
        Difference(
            "report-edited",
            f"Report “{current.title or current.name}” was edited since publish (version {frozen.report_version} → "
            f"{current.version})",
            str(widget.get("id")),
        )
    ]


def draft_summary(workbook: Workbook) -> str:
    """The workbook page's account of its draft: the grid and each widget in words, and where to edit it."""
    edit = reverse("admin:dashboards_workbook_editor", args=[workbook.pk])
    link = format_html('<a class="panel-edit-dashboard" href="{}">Edit dashboard</a>', edit)
    draft = workbook.dashboard_draft
    if not isinstance(draft, dict):
        return format_html("none yet. {}", link)
    widgets = _widgets(draft)
    report_ids = [_config(w).get("reportId") for w in widgets if w.get("type") == "CHART"]
    words = vocabulary_of(deployment=workbook.deployment, report_ids=report_ids, version=None)
    cols, row_height = _grid(draft)
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        (
            (widget_title(w, words), widget_kind(w), _widget_detail(w, words), place_words(_position(w)))
            for w in sorted(widgets, key=lambda w: (_position(w)["y"], _position(w)["x"]))
        ),
    )
    return format_html(
        "<p><strong>{}</strong>: {} widget(s) on {} columns, rows of {} px. {}</p>"
        "<table class='panel-draft'><thead><tr><th>widget</th><th>kind</th><th>shows</th><th>where</th></tr></thead>"
        "<tbody>{}</tbody></table>",
        draft.get("title") or workbook.name,
        len(widgets),
        cols,
        row_height,
        link,
        rows,
    )


def _widget_detail(widget: Mapping[str, Any], words: Vocabulary) -> str:
    config = _config(widget)
    kind = widget.get("type")
    if kind == "CHART":
        report_id = config.get("reportId")
        report = words.reports.get(report_id) if isinstance(report_id, int) else None
        return f"{words.report(report_id)} ({report_kind(report)})" if report else words.report(report_id)
    if kind == "TEXT":
        return _setting_words("text", config.get("text"), words)
    member = words.member(config.get("member"))
    if kind == "TIME_GRAIN":
        return f"{member}: {_setting_words('grains', config.get('grains'), words)}"
    if kind == "FIELD":
        return f"{member}, or {_setting_words('alternatives', config.get('alternatives'), words)}"
    return f"{member}: {_setting_words('operators', config.get('operators', ['equals']), words)}"


# --- the pages --------------------------------------------------------------------------------------------------


def _refused_widget(draft: Any, message: str) -> str | None:
    """The id of the widget a refusal names (``widgets[2] (id "x"): ...``), when the draft gives it one."""
    match = WIDGET_REFUSAL.match(message)
    widgets = draft.get("widgets") if isinstance(draft, dict) else None
    if match is None or not isinstance(widgets, list) or int(match.group(1)) >= len(widgets):
        return None
    widget = widgets[int(match.group(1))]
    wid = widget.get("id") if isinstance(widget, dict) else None
    return wid if isinstance(wid, str) else None


def _json_refusal(exc: Exception) -> JsonResponse:
    known = client_error(exc)
    if known is None:
        raise exc
    status, message = known
    return json_error(message, status)


class DashboardEditorPages(_EditorBase):
    """The editor's pages on the workbook admin: the editor, and its save, publish and compare calls (JSON)."""

    def publish_workbook(self, request: HttpRequest, workbook: Workbook) -> Dashboard:
        raise NotImplementedError  # WorkbookAdmin's: the panel's one publish

    def editor_urls(self) -> list[URLPattern]:
        """The editor's routes, to come before the admin's other ``<path:object_id>/...`` routes (a path converter
        would read ``12/dashboard-editor`` as an object id)."""
        pages = [
            ("", self.dashboard_editor_view, "dashboards_workbook_editor"),
            ("draft/", self.dashboard_draft_save_view, "dashboards_workbook_editor_save"),
            ("publish/", self.dashboard_publish_view, "dashboards_workbook_editor_publish"),
            ("compare/", self.dashboard_compare_view, "dashboards_workbook_editor_compare"),
        ]
        return [
            path(f"<path:object_id>/dashboard-editor/{suffix}", self.admin_site.admin_view(view), name=name)
            for suffix, view, name in pages
        ]

    def _editable_workbook(self, request: HttpRequest, object_id: str) -> Workbook | None:
        """The workbook, when the viewer may see it (another account's is missing, like an unknown id)."""
        workbook = self.get_object(request, object_id)
        return workbook if isinstance(workbook, Workbook) else None

    def dashboard_editor_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method != "GET":
            return HttpResponse(status=405, headers={"Allow": "GET"})
        if not self.panel_allowed(request, "draft"):
            raise PermissionDenied
        workbook = self._editable_workbook(request, object_id)
        if workbook is None:
            raise Http404("No such workbook")
        urls = {
            "save": reverse("admin:dashboards_workbook_editor_save", args=[workbook.pk]),
            "publish": reverse("admin:dashboards_workbook_editor_publish", args=[workbook.pk]),
            "compare": reverse("admin:dashboards_workbook_editor_compare", args=[workbook.pk]),
            "workbook": reverse("admin:dashboards_workbook_change", args=[workbook.pk]),
            "embedAccess": reverse("admin:dashboards_workbook_embed_access", args=[workbook.pk]),
        }
        model_error = None
        try:
            entities = member_catalog(deployment=workbook.deployment)
        except ApiError as exc:
            entities, model_error = [], exc.message
        version = newest_published(workbook)
        editor = {
            "workbook": {"id": workbook.pk, "name": workbook.name},
            "draft": draft_of(workbook),
            "draftSaved": workbook.dashboard_draft is not None,
            "reports": report_items(deployment=workbook.deployment),
            "entities": entities,
            "modelError": model_error,
            "operatorWords": {op: words[0] for op, words in OPERATOR_WORDS.items()},
            "visibilities": [[v, VISIBILITY_WORDS[v].capitalize()] for v in VISIBILITIES],
            "datePresets": date_range_presets(),
            "published": _published_item(workbook, version),
            "mayPublish": self.panel_allowed(request, "publish"),
            "urls": urls,
        }
        context = {
            **page_context(self, request, title=f"Edit dashboard: {workbook.name}", obj=workbook),
            "editor": editor,
        }
        response = TemplateResponse(request, "panel/dashboard_editor.html", context)
        response["Content-Security-Policy"] = EDITOR_CSP
        add_never_cache_headers(response)
        return response

    def _json_call(self, request: HttpRequest, object_id: str, permission: str) -> Workbook | JsonResponse:
        """The workbook a JSON call of the editor is about, or its refusal."""
        if request.method != "POST":
            response = json_error("Method not allowed: use POST", 405)
            response["Allow"] = "POST"
            return response
        if not self.panel_allowed(request, permission):
            return json_error("You may not change this dashboard", 403)
        workbook = self._editable_workbook(request, object_id)
        if workbook is None:
            return json_error("No such workbook", 404)
        return workbook

    def dashboard_draft_save_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Save the whole draft through ``workbook_dashboard_set``, audited as the Platform API's PUT is
        (``dashboard.update`` of the workbook); a refusal names the widget it is about and writes nothing."""
        workbook = self._json_call(request, object_id, "draft")
        if isinstance(workbook, JsonResponse):
            return workbook
        draft: Any = None
        try:
            body = json_object_body(request, fields=("draft",))
            if "draft" not in body:
                raise BadRequest("draft: required")
            draft = body["draft"]
            with transaction.atomic():
                saved = dashboards.workbook_dashboard_set(workbook=workbook, draft=draft)
                audit_panel_change(
                    request, workbook, "update", resource="dashboard", details={"widgets": len(_widgets(draft))}
                )
        except ApiError as exc:
            widget_id = _refused_widget(draft, exc.message)
            message = WIDGET_REFUSAL.sub("", exc.message) if widget_id else exc.message
            return JsonResponse({"error": message, "widgetId": widget_id}, status=exc.status)
        except Exception as exc:  # a body too large, nested too deeply, a database that is down: said, never a 500
            return _json_refusal(exc)
        return JsonResponse({"draft": saved.dashboard_draft, "message": "Draft saved."})

    def dashboard_publish_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Publish the saved draft with the panel's publish (the workbook page's button and action use it too)."""
        workbook = self._json_call(request, object_id, "publish")
        if isinstance(workbook, JsonResponse):
            return workbook
        try:
            dashboard = self.publish_workbook(request, workbook)
        except Exception as exc:
            return _json_refusal(exc)
        workbook.refresh_from_db()
        return JsonResponse(
            {
                "message": f"Published {dashboard.title or workbook.name}: version {dashboard.version_number} "
                f"(publicId {dashboard.public_id}).",
                "published": _published_item(workbook, newest_published(workbook)),
            }
        )

    def dashboard_compare_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The editor's draft (``{"draft": ...}``, saved or not) against the newest published version, in words."""
        workbook = self._json_call(request, object_id, "view")
        if isinstance(workbook, JsonResponse):
            return workbook
        try:
            body = json_object_body(request, fields=("draft",))
            draft = body.get("draft", workbook.dashboard_draft)
            if not isinstance(draft, dict):
                raise BadRequest("draft: must be an object")
        except Exception as exc:
            return _json_refusal(exc)
        version = newest_published(workbook)
        report_ids = [
            _config(w).get("reportId") for w in [*_widgets(draft), *_widgets(version.config if version else {})]
        ]
        words = vocabulary_of(deployment=workbook.deployment, report_ids=report_ids, version=version)
        differences = draft_differences(draft=draft, published=version.config if version else None, words=words)
        return JsonResponse(
            {
                "published": _published_item(workbook, version),
                "differences": [d.as_dict() for d in differences],
            }
        )


def _published_item(workbook: Workbook, version: DashboardVersion | None) -> dict[str, Any] | None:
    if version is None:
        return None
    dashboard = version.dashboard
    return {
        "versionNumber": version.number,
        "publicId": dashboard.public_id,
        "publishedAt": version.published_at.strftime("%Y-%m-%d %H:%M UTC"),
        "publishedBy": version.published_by,
        "allowEmbed": dashboard.allow_embed,
        "previewUrl": reverse("admin:dashboards_dashboard_preview", args=[dashboard.pk]),
    }
