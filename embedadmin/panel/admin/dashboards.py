"""Panel pages of a deployment's dashboards: workbooks (their draft, reports, published versions and embed access),
publishing, embedding and sharing, and "preview as viewer", which mints a session for a chosen viewer and shows the
embed page as that viewer sees it.

Every state change goes through ``dashboards.services`` (publish, allowEmbed, embed access) or
``embedding.services.session_generate`` (the preview's session, as the API mints it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.cache import add_never_cache_headers
from django.utils.html import format_html, format_html_join

from embedadmin.core.errors import ApiError
from embedadmin.dashboards import selectors as dashboards_selectors
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards.models import Dashboard, DashboardVersion, EmbedAccess, Folder, Report, Workbook
from embedadmin.directory.models import EmbedTenant, ExternalUser
from embedadmin.embedding import services as embedding
from embedadmin.panel import tenancy
from embedadmin.panel.admin.access import access_page_url, typed_attributes
from embedadmin.panel.admin.builder import builder_urls
from embedadmin.panel.admin.editor import DashboardEditorPages, draft_summary
from embedadmin.panel.forms import EmbedAccessForm, PreviewViewerForm
from embedadmin.panel.panel_admin import (
    PanelAdmin,
    PanelReadOnlyInline,
    audit_panel_change,
    object_missing_redirect,
    page_context,
)
from embedadmin.panel.site import panel_site


def embed_path(dashboard: Dashboard) -> str:
    """The embed page of a dashboard, as a host's iframe addresses it (with ``?session=`` appended)."""
    return f"/embed/dashboard/{dashboard.public_id}"


def dashboard_of(workbook: Workbook) -> Dashboard | None:
    """The workbook's dashboard (read with it by the admins' querysets), None before the first publish."""
    return getattr(workbook, "dashboard", None)


def pretty_json(value: Any) -> str:
    return format_html("<pre class='panel-json'>{}</pre>", json.dumps(value, indent=2, sort_keys=False))


def is_published(dashboard: Dashboard | None) -> bool:
    return dashboard is not None and dashboard.status == Dashboard.Status.PUBLISHED and dashboard.version_number > 0


class DashboardStatusFilter(admin.SimpleListFilter):
    """Workbooks by their dashboard: published, never published (a draft only), archived."""

    title = "dashboard"
    parameter_name = "dashboard"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("published", "published"), ("unpublished", "draft only"), ("archived", "archived")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "unpublished":
            return queryset.filter(dashboard__isnull=True)
        if self.value() in ("published", "archived"):
            return queryset.filter(dashboard__status=self.value())
        return queryset


class ReportInline(PanelReadOnlyInline):
    model = Report
    fields = ("public_id", "name", "kind", "version", "updated_at")
    verbose_name = "report"

    @admin.display(description="visualization")
    def kind(self, obj: Report) -> str:
        visualization = obj.meta.get("visualization") if isinstance(obj.meta, dict) else None
        return str(visualization.get("kind", "-")) if isinstance(visualization, dict) else "-"


class EmbedAccessInline(PanelReadOnlyInline):
    model = EmbedAccess
    fields = ("shared_with", "created_at")
    verbose_name = "embed access"
    verbose_name_plural = "embed access (who may see the dashboard in an embed)"

    @admin.display(description="shared with")
    def shared_with(self, obj: EmbedAccess) -> str:
        return f"embed tenant {obj.embed_tenant.name}" if obj.embed_tenant is not None else "all embed users"


class DashboardLinks:
    """Columns and fields shared by the workbook and dashboard pages."""

    @admin.display(description="embed link")
    def embed_link(self, obj: Workbook | Dashboard) -> str:
        dashboard = obj if isinstance(obj, Dashboard) else dashboard_of(obj)
        if dashboard is None:
            return "-"
        link = format_html("<code>{}?session=…</code>", embed_path(dashboard))
        if not is_published(dashboard):
            return link
        preview = reverse("admin:dashboards_dashboard_preview", args=[dashboard.pk])
        return format_html('{} <a class="panel-preview-link" href="{}">Preview as viewer</a>', link, preview)


@admin.register(Workbook, site=panel_site)
class WorkbookAdmin(DashboardEditorPages, DashboardLinks, PanelAdmin):
    """A deployment's workbooks: what a dashboard is made of, and what embeds of it may show; their dashboard
    drafts are edited in the dashboard editor (``editor.py``)."""

    panel_allows = frozenset({"view", "publish", "share", "draft"})
    list_display = (
        "name",
        "slug",
        "deployment",
        "dashboard_status",
        "version",
        "allow_embed",
        "embed_link",
        "account",
    )
    list_filter = ("deployment", DashboardStatusFilter, "account")
    list_select_related = ("account", "deployment", "dashboard", "folder")
    search_fields = ("name", "slug", "dashboard__public_id")
    # The dashboard's state, shown below the workbook's own fields; publishing and the editor change it.
    readonly_fields = (
        "dashboard_link",
        "dashboard_status",
        "version",
        "allow_embed",
        "embed_link",
        "published_versions",
        "draft",
    )
    fields = ("name", "slug", "account", "deployment", "folder", *readonly_fields, "created_at", "updated_at")
    inlines = (ReportInline, EmbedAccessInline)
    actions = ("publish_dashboards", "allow_embedding", "disallow_embedding")
    change_form_template = "panel/workbook_change_form.html"

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<path:object_id>/publish/",
                self.admin_site.admin_view(self.publish_view),
                name="dashboards_workbook_publish",
            ),
            path(
                "<path:object_id>/embed-access/",
                self.admin_site.admin_view(self.embed_access_view),
                name="dashboards_workbook_embed_access",
            ),
        ]
        return self.editor_urls() + own + super().get_urls()

    # --- columns and fields ------------------------------------------------------------------------------

    @admin.display(description="dashboard status", ordering="dashboard__status")
    def dashboard_status(self, obj: Workbook) -> str:
        dashboard = dashboard_of(obj)
        return dashboard.status if dashboard is not None else "draft only (never published)"

    @admin.display(description="version", ordering="dashboard__version_number")
    def version(self, obj: Workbook) -> str:
        dashboard = dashboard_of(obj)
        return str(dashboard.version_number) if dashboard is not None and dashboard.version_number else "-"

    @admin.display(description="allowEmbed", boolean=True, ordering="dashboard__allow_embed")
    def allow_embed(self, obj: Workbook) -> bool:
        dashboard = dashboard_of(obj)
        return dashboard is not None and dashboard.allow_embed

    @admin.display(description="dashboard")
    def dashboard_link(self, obj: Workbook) -> str:
        dashboard = dashboard_of(obj)
        if dashboard is None:
            return "-"
        url = reverse("admin:dashboards_dashboard_change", args=[dashboard.pk])
        return format_html('<a href="{}">{}</a>', url, dashboard)

    @admin.display(description="published versions")
    def published_versions(self, obj: Workbook) -> str:
        dashboard = dashboard_of(obj)
        versions = list(dashboard.versions.all()) if dashboard is not None else []
        if not versions:
            return "none"
        rows = format_html_join(
            "",
            "<tr><td>v{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    v.number,
                    v.published_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                    v.published_by or "-",
                    len(v.config.get("widgets", [])),
                )
                for v in versions
            ),
        )
        return format_html(
            "<table class='panel-versions'><thead><tr><th>version</th><th>published</th><th>by</th><th>widgets</th>"
            "</tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    @admin.display(description="dashboard draft")
    def draft(self, obj: Workbook) -> str:
        return draft_summary(obj)

    # --- publish -------------------------------------------------------------------------------------------

    def publish_workbook(self, request: HttpRequest, workbook: Workbook) -> Dashboard:
        """The panel's one publish (the button, the action and the dashboard editor): the service, audited."""
        with transaction.atomic():
            dashboard = dashboards.workbook_publish(workbook=workbook, published_by=request.user.get_username())
            audit_panel_change(request, workbook, "publish", details={"version": dashboard.version_number})
        return dashboard

    @admin.action(description="Publish the selected workbooks' drafts", permissions=["publish"])
    def publish_dashboards(self, request: HttpRequest, queryset: QuerySet) -> None:
        """Publish each draft (all or none: the first refusal is shown and nothing is published)."""
        with transaction.atomic():
            published = [(wb, self.publish_workbook(request, wb)) for wb in queryset.order_by("pk")]
        summary = "; ".join(f"{wb.name}: version {d.version_number}" for wb, d in published)
        self.message_user(request, f"Published {len(published)} dashboard(s). {summary}", messages.SUCCESS)

    def _allow_embed(self, request: HttpRequest, queryset: QuerySet, allow: bool) -> None:
        with transaction.atomic():
            for workbook in queryset.order_by("pk"):
                dashboards.embed_access_update(workbook=workbook, allow_embed=allow)
                audit_panel_change(request, workbook, "update", resource="embed_access", details={"allowEmbed": allow})
        count = queryset.count()
        state = "allowed" if allow else "disallowed"
        self.message_user(request, f"Embedding {state} for {count} dashboard(s).", messages.SUCCESS)

    @admin.action(description="Allow embedding the selected dashboards", permissions=["share"])
    def allow_embedding(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._allow_embed(request, queryset, True)

    @admin.action(description="Disallow embedding the selected dashboards", permissions=["share"])
    def disallow_embedding(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._allow_embed(request, queryset, False)

    def _workbook_or_redirect(self, request: HttpRequest, object_id: str) -> Workbook | HttpResponse:
        workbook = self.get_object(request, object_id)
        if workbook is None:
            return object_missing_redirect(self, request, object_id)
        return workbook

    def publish_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """GET: what publishing will do; POST: publish through ``workbook_publish``."""
        if not self.panel_allowed(request, "publish"):
            raise PermissionDenied
        workbook = self._workbook_or_redirect(request, object_id)
        if isinstance(workbook, HttpResponse):
            return workbook
        change_url = reverse("admin:dashboards_workbook_change", args=[workbook.pk])
        if request.method == "POST":
            try:
                published = self.publish_workbook(request, workbook)
            except ApiError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self.message_user(
                    request,
                    f"Published {published.title or workbook.name}: version {published.version_number} "
                    f"(publicId {published.public_id}).",
                    messages.SUCCESS,
                )
            return HttpResponseRedirect(change_url)
        current = dashboard_of(workbook)
        context = {
            **page_context(self, request, title="Publish the dashboard draft", obj=workbook),
            "dashboard": current,
            "next_version": (current.version_number if current is not None else 0) + 1,
        }
        return TemplateResponse(request, "panel/publish.html", context)

    # --- embed access --------------------------------------------------------------------------------------

    def embed_access_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Who may see the dashboard in an embed: allowEmbed, and the shares, changed through
        ``embed_access_update`` (the Platform API's PUT .../embed-access)."""
        if not self.panel_allowed(request, "share"):
            raise PermissionDenied
        workbook = self._workbook_or_redirect(request, object_id)
        if isinstance(workbook, HttpResponse):
            return workbook
        tenants = tenancy.restrict(EmbedTenant.objects.filter(account_id=workbook.account_id), request)
        posted = request.POST if request.method == "POST" else None
        form = EmbedAccessForm(posted if posted and "access" in posted else None, embed_tenants=tenants)
        if posted is not None:
            done = self._embed_access_change(request, workbook, form, tenants)
            if done:
                return HttpResponseRedirect(request.path)
        state = dashboards_selectors.embed_access_of(workbook=workbook)
        dashboard = dashboard_of(workbook)
        context = {
            **page_context(self, request, title="Embed access", obj=workbook),
            "form": form,
            "state": state,
            "dashboard": dashboard,
            "published": is_published(dashboard),
        }
        return TemplateResponse(request, "panel/embed_access.html", context)

    def _embed_access_change(
        self, request: HttpRequest, workbook: Workbook, form: EmbedAccessForm, tenants: QuerySet[EmbedTenant]
    ) -> bool:
        """Apply a POST of the embed access page (``tenants``: the embed tenants the viewer may name); whether it
        was applied (else the form shows why not)."""
        change: dict[str, Any]
        if "allow_embed" in request.POST:
            change = {"allow_embed": request.POST["allow_embed"] == "true"}
        elif "unshare" in request.POST:
            value = request.POST["unshare"]
            if value == "all":
                change = {"all_embed_users": True, "action": "none"}
            else:
                found = tenants.filter(pk=int(value)).first() if value.isascii() and value.isdigit() else None
                if found is None:
                    self.message_user(request, "No such embed tenant.", messages.ERROR)
                    return False
                change = {"embed_tenant_name": found.name, "action": "none"}
        elif form.is_valid():
            data = form.cleaned_data
            if data["target"] == "all":
                change = {"all_embed_users": True, "action": data["access"]}
            else:
                change = {"embed_tenant_name": data["embed_tenant"].name, "action": data["access"]}
        else:
            return False
        try:
            with transaction.atomic():
                dashboards.embed_access_update(workbook=workbook, **change)
                details = {"fields": sorted(change)}
                audit_panel_change(request, workbook, "update", resource="embed_access", details=details)
        except ApiError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return False
        self.message_user(request, "Embed access changed.", messages.SUCCESS)
        return True


class DashboardVersionInline(PanelReadOnlyInline):
    model = DashboardVersion
    fields = ("number", "published_at", "published_by", "snapshot_count")
    verbose_name = "published version"

    @admin.display(description="report snapshots")
    def snapshot_count(self, obj: DashboardVersion) -> int:
        return obj.snapshots.count()


@dataclass(frozen=True)
class PreviewSession:
    """A session minted for a preview: the embed page's URL with it, and who it is for."""

    url: str
    viewer: str


@admin.register(Dashboard, site=panel_site)
class DashboardAdmin(DashboardLinks, PanelAdmin):
    """Published dashboards (one per workbook, made by its first publish) and "preview as viewer"."""

    panel_allows = frozenset({"view", "preview"})
    list_display = (
        "title",
        "public_id",
        "workbook",
        "deployment",
        "status",
        "version_number",
        "allow_embed",
        "embed_link",
        "account",
    )
    list_display_links = ("title", "public_id")
    list_filter = ("deployment", "status", "allow_embed", "account")
    list_select_related = ("account", "deployment", "workbook")
    search_fields = ("title", "public_id", "workbook__name", "workbook__slug")
    fields = (
        "title",
        "public_id",
        "workbook",
        "account",
        "deployment",
        "status",
        "version_number",
        "allow_embed",
        "embed_link",
        "description",
        "created_at",
        "updated_at",
    )
    readonly_fields = ("embed_link",)
    inlines = (DashboardVersionInline,)
    change_form_template = "panel/dashboard_change_form.html"

    def get_urls(self) -> list[URLPattern]:
        preview = path(
            "<path:object_id>/preview/",
            self.admin_site.admin_view(self.preview_view),
            name="dashboards_dashboard_preview",
        )
        return [preview, *super().get_urls()]

    def preview_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Pick a viewer; on POST mint a session for them with ``session_generate`` and show the embed page in an
        iframe (``?open=1``: mint another and go to the embed page itself, for a new tab; a session is single
        use). The page holds a live session id: never cached."""
        if not self.panel_allowed(request, "preview"):
            raise PermissionDenied
        dashboard = self.get_object(request, object_id)
        if dashboard is None:
            return object_missing_redirect(self, request, object_id)
        users = tenancy.restrict(ExternalUser.objects.filter(account_id=dashboard.account_id), request)
        form = PreviewViewerForm(request.POST if request.method == "POST" else None, external_users=users)
        preview: PreviewSession | None = None
        if is_published(dashboard) and form.is_valid():
            try:
                preview = self._mint(dashboard, form.cleaned_data)
            except ApiError as exc:
                form.add_error(None, exc.message)
        if preview is not None and request.GET.get("open") == "1":
            response: HttpResponse = HttpResponseRedirect(preview.url)
        else:
            state = dashboards_selectors.embed_access_of(workbook=dashboard.workbook)
            context = {
                **page_context(
                    self, request, title=f"Preview {dashboard.title or dashboard.public_id} as a viewer", obj=dashboard
                ),
                "dashboard": dashboard,
                "published": is_published(dashboard),
                "form": form,
                "preview": preview,
                "access_url": preview_access_url(dashboard, form.cleaned_data) if preview is not None else None,
                "state": state,
                "embed_access_url": reverse("admin:dashboards_workbook_embed_access", args=[dashboard.workbook_id]),
            }
            response = TemplateResponse(request, "panel/preview.html", context)
        add_never_cache_headers(response)
        return response

    def _mint(self, dashboard: Dashboard, data: dict[str, Any]) -> PreviewSession:
        """A session for the chosen viewer, through the same service as ``POST /api/v1/embed/generate-session``."""
        user: ExternalUser | None = data["external_user"]
        if user is not None:
            # The viewer as they are: their embed tenant, groups and attribute values stay untouched.
            request_data = embedding.GenerateSessionInput(
                deployment_id=dashboard.deployment_id,
                external_id=user.external_id,
                embed_tenant_name=user.embed_tenant.name if user.embed_tenant else None,
            )
            viewer = user.external_id
        else:
            request_data = embedding.GenerateSessionInput(
                deployment_id=dashboard.deployment_id,
                external_id=data["external_id"],
                embed_tenant_name=data["embed_tenant"] or None,
                groups=data["groups"],
                user_attributes=typed_attributes(dashboard.account, data["attributes"]),
            )
            viewer = data["external_id"]
        session_id = embedding.session_generate(
            account=dashboard.account, deployment=dashboard.deployment, data=request_data
        )
        return PreviewSession(url=f"{embed_path(dashboard)}?{urlencode({'session': session_id})}", viewer=viewer)


def preview_access_url(dashboard: Dashboard, data: dict[str, Any]) -> str:
    """The "Who can read what" page of the previewed viewer: the external user picked, or the typed viewer's embed
    tenant (made by the preview's mint when new), groups and attribute lines."""
    user: ExternalUser | None = data["external_user"]
    if user is not None:
        return access_page_url(dashboard.deployment_id, external_user=str(user.pk))
    tenant = EmbedTenant.objects.filter(account=dashboard.account, name=data["embed_tenant"]).first()
    return access_page_url(
        dashboard.deployment_id,
        embed_tenant=str(tenant.pk) if tenant is not None and data["embed_tenant"] else "",
        groups=", ".join(data["groups"]),
        attributes="\n".join(f"{name}={value}" for name, value in data["attributes"]),
    )


@admin.register(Report, site=panel_site)
class ReportAdmin(PanelAdmin):
    """Reports: saved queries and their visualizations (written through the Platform API, dashboards as code or the
    report builder, ``builder.py``)."""

    panel_allows = frozenset({"view", "build"})
    list_display = ("name", "public_id", "workbook", "deployment", "version", "updated_at", "builder_link", "account")
    list_filter = ("deployment", "workbook", "account")
    list_select_related = ("account", "deployment", "workbook")
    search_fields = ("name", "title", "public_id")
    fields = (
        "name",
        "public_id",
        "title",
        "description",
        "account",
        "deployment",
        "workbook",
        "folder",
        "source",
        "version",
        "query",
        "visualization",
        "created_at",
        "updated_at",
    )
    readonly_fields = ("query", "visualization")
    change_list_template = "panel/report_builder_change_list.html"
    change_form_template = "panel/report_builder_change_form.html"

    def get_urls(self) -> list[URLPattern]:
        return [*builder_urls(self), *super().get_urls()]

    @admin.display(description="builder")
    def builder_link(self, obj: Report) -> str:
        url = reverse("admin:dashboards_report_builder_edit", args=[obj.pk])
        return format_html('<a href="{}">Edit in builder</a>', url)

    @admin.display(description="query (jsonQuery)")
    def query(self, obj: Report) -> str:
        try:
            return pretty_json(json.loads(obj.json_query)) if obj.json_query else "-"
        except ValueError:
            return format_html("<pre>{}</pre>", obj.json_query)

    @admin.display(description="meta (visualization)")
    def visualization(self, obj: Report) -> str:
        return pretty_json(obj.meta)


@admin.register(Folder, site=panel_site)
class FolderAdmin(PanelAdmin):
    list_display = ("name", "parent", "deployment", "position", "account")
    list_filter = ("deployment", "account")
    list_select_related = ("account", "deployment", "parent")
    search_fields = ("name",)
    fields = ("name", "parent", "account", "deployment", "position", "created_at", "updated_at")
