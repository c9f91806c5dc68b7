"""State changes of a deployment's workspace: folders, workbooks, reports, dashboard drafts, publishing and embed
access. The Platform API, ``apply_dashboards`` (dashboards as code) and the model-reload task call these and
nothing else writes these rows.

Each function runs in its own transaction (nested in the caller's when there is one), validates before it writes,
and compares before it writes: a call that asks for what is already there changes no row (so applying the same
dashboards-as-code file twice writes nothing). Rows keep ``account`` equal to their deployment's account.

Field changes are passed as ``fields``/``changes`` mappings keyed by the model's field names; a key that is absent
means "leave as it is" (so ``{"folder": None}`` moves to the root while ``{}`` leaves the folder alone).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from embedadmin.accounts.models import Deployment
from embedadmin.core.errors import BadRequest, Conflict, NotFound
from embedadmin.core.rows import create_unique
from embedadmin.dashboards import selectors
from embedadmin.dashboards.models import (
    PUBLIC_ID_LENGTH,
    PUBLIC_ID_RE,
    Dashboard,
    DashboardVersion,
    EmbedAccess,
    Folder,
    Report,
    ReportSnapshot,
    Workbook,
)
from embedadmin.dashboards.validation import (
    DraftContext,
    ParsedQuery,
    Visualization,
    chart_report_ids,
    draft_validate,
    model_of,
    query_parse,
    visualization_parse,
)

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,254}$")
MAX_FOLDER_DEPTH = 10
DEFAULT_WORKBOOK_NAME = "Untitled workbook"
# The fields of a report whose change is a change of content (bumps ``Report.version``).
REPORT_CONTENT_FIELDS = ("name", "title", "description", "json_query", "sql_query", "pivot_items", "meta")
REPORT_FIELDS = (*REPORT_CONTENT_FIELDS, "public_id", "workbook", "folder", "source")
WORKBOOK_FIELDS = ("name", "meta", "folder", "slug")
FOLDER_FIELDS = ("name", "position")


def random_public_id() -> str:
    """12 random characters of ``[0-9A-Za-z]``."""
    return "".join(secrets.choice(BASE62) for _ in range(PUBLIC_ID_LENGTH))


def public_id_check(value: Any, what: str = "publicId") -> str:
    if not isinstance(value, str) or not re.match(PUBLIC_ID_RE, value):
        raise BadRequest(f"{what} must be {PUBLIC_ID_LENGTH} characters of [0-9A-Za-z]")
    return value


def slug_normalize(slug: Any) -> str:
    """A workbook slug trimmed and lowercased; 400 unless it is 1-255 of ``[a-z0-9._-]`` starting alphanumeric."""
    if not isinstance(slug, str):
        raise BadRequest("slug must be a string")
    normalized = slug.strip().lower()
    if not SLUG_RE.match(normalized):
        raise BadRequest("slug must be 1-255 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit")
    return normalized


def _unknown(changes: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(changes) - set(allowed))
    if unknown:
        raise TypeError(f"unknown fields: {', '.join(unknown)}")


def _same_deployment(deployment: Deployment, row: Folder | Workbook | None, what: str) -> None:
    if row is not None and row.deployment_id != deployment.pk:
        raise BadRequest(f"{what} {row.pk} is not in deployment {deployment.pk}")


def _apply(row: Any, changes: Mapping[str, Any]) -> list[str]:
    """Set the fields of ``changes`` that differ on ``row``; the names of those that did."""
    changed = []
    for name, value in changes.items():
        if getattr(row, name) != value:
            setattr(row, name, value)
            changed.append(name)
    return changed


def _save(row: Any, changed: list[str]) -> None:
    if changed:
        row.save(update_fields=[*changed, "updated_at"])


def _name(value: Any, what: str = "name") -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"{what} must be a non-empty string")
    if len(value) > 255:
        raise BadRequest(f"{what} must be at most 255 characters")
    return value


# --- folders -----------------------------------------------------------------------------------------


def folder_create(*, deployment: Deployment, name: str, parent: Folder | None = None, position: int = 0) -> Folder:
    """Create a folder at the root or under ``parent`` (of the same deployment), at most MAX_FOLDER_DEPTH deep."""
    _name(name)
    _same_deployment(deployment, parent, "Folder")
    if parent is not None and len(selectors.folder_ancestors(folder=parent)) >= MAX_FOLDER_DEPTH:
        raise BadRequest(f"Folders nest at most {MAX_FOLDER_DEPTH} deep")
    with transaction.atomic():
        # The parent is locked until the folder is in: a delete of it waits, or went first and this is a 404.
        if parent is not None and not Folder.objects.select_for_update().filter(pk=parent.pk).exists():
            raise NotFound(f"Folder {parent.pk} not found")
        return Folder.objects.create(
            account_id=deployment.account_id, deployment=deployment, name=name, parent=parent, position=position
        )


def folder_update(*, folder: Folder, changes: Mapping[str, Any]) -> Folder:
    """Rename or reposition a folder (``name``, ``position``); it cannot move to another parent here."""
    _unknown(changes, FOLDER_FIELDS)
    if "name" in changes:
        _name(changes["name"])
    with transaction.atomic():
        _save(folder, _apply(folder, changes))
    return folder


def folder_delete(*, folder: Folder) -> None:
    """Delete a folder without sub-folders; its workbooks and reports move to the root."""
    with transaction.atomic():
        locked = Folder.objects.select_for_update().filter(pk=folder.pk).first()
        if locked is None:  # deleted by a concurrent request a moment ago
            raise NotFound(f"Folder {folder.pk} not found")
        if selectors.folder_has_children(folder=locked):
            raise BadRequest(f"Folder {folder.pk} has sub-folders: delete or move them first")
        Workbook.objects.filter(folder=locked).update(folder=None, updated_at=timezone.now())
        Report.objects.filter(folder=locked).update(folder=None, updated_at=timezone.now())
        locked.delete()


# --- workbooks ---------------------------------------------------------------------------------------


def _workbook_changes(deployment: Deployment, changes: Mapping[str, Any]) -> dict[str, Any]:
    _unknown(changes, WORKBOOK_FIELDS)
    out = dict(changes)
    if "name" in out:
        out["name"] = _name(out["name"])
    if "meta" in out and not isinstance(out["meta"], dict):
        raise BadRequest("meta must be an object")
    if out.get("slug") is not None:
        out["slug"] = slug_normalize(out["slug"])
    if "folder" in out:
        _same_deployment(deployment, out["folder"], "Folder")
    return out


def _slug_taken(slug: str | None) -> Conflict:
    return Conflict(f"A workbook with slug {slug!r} already exists in this deployment")


def workbook_create(*, deployment: Deployment, changes: Mapping[str, Any] | None = None) -> Workbook:
    """Create a workbook; ``changes`` may set ``name`` (default "Untitled workbook"), ``folder``, ``meta``, ``slug``."""
    values = _workbook_changes(deployment, changes or {})
    values.setdefault("name", DEFAULT_WORKBOOK_NAME)
    workbook = Workbook(account_id=deployment.account_id, deployment=deployment, **values)
    with transaction.atomic():
        return create_unique(workbook, conflict=_slug_taken(workbook.slug))


def workbook_update(*, workbook: Workbook, changes: Mapping[str, Any]) -> Workbook:
    """Change a workbook's ``name``, ``meta`` (replaced), ``folder`` (None: the root) or ``slug``."""
    values = _workbook_changes(workbook.deployment, changes)
    with transaction.atomic():
        changed = _apply(workbook, values)
        if changed:
            try:
                with transaction.atomic():
                    _save(workbook, changed)
            except IntegrityError:
                raise _slug_taken(workbook.slug) from None
    return workbook


def workbook_upsert_by_slug(*, deployment: Deployment, slug: str, changes: Mapping[str, Any]) -> Workbook:
    """``PUT .../workbooks/by-slug/{slug}``: create the deployment's workbook with this slug (trimmed, lowercased),
    or update it: ``name`` and ``folder`` when given, ``meta`` merged into the stored one. Writes nothing when the
    workbook is already so."""
    slug = slug_normalize(slug)
    values = _workbook_changes(deployment, {k: v for k, v in changes.items() if k != "slug"})
    with transaction.atomic():
        workbook = Workbook.objects.select_for_update().filter(deployment=deployment, slug=slug).first()
        if workbook is None:
            try:
                return workbook_create(deployment=deployment, changes={**values, "slug": slug})
            except Conflict:  # created concurrently: update that one
                workbook = Workbook.objects.select_for_update().get(deployment=deployment, slug=slug)
        if "meta" in values:
            values["meta"] = {**workbook.meta, **values["meta"]}
        _save(workbook, _apply(workbook, values))
    return workbook


def workbook_delete(*, workbook: Workbook) -> None:
    """Delete a workbook with its dashboard, versions and shares; its reports stay (without a workbook)."""
    with transaction.atomic():
        workbook.delete()


def _draft_context(deployment: Deployment) -> DraftContext:
    def report_id_of_public_id(public_id: str) -> int | None:
        report = Report.objects.filter(deployment=deployment, public_id=public_id).only("id").first()
        return report.pk if report is not None else None

    return DraftContext(
        deployment=deployment,
        report_exists=lambda report_id: (
            selectors.report_in_deployment(deployment=deployment, report_id=report_id) is not None
        ),
        report_id_of_public_id=report_id_of_public_id,
    )


def workbook_dashboard_set(*, workbook: Workbook, draft: Any) -> Workbook:
    """``PUT .../workbooks/{id}/dashboard``: validate the draft (``validation.draft_validate``) and store it as the
    workbook's ``dashboard_draft``. What viewers see changes only at the next publish."""
    config = draft_validate(_draft_context(workbook.deployment), draft)
    with transaction.atomic():
        if workbook.dashboard_draft != config:
            workbook.dashboard_draft = config
            workbook.save(update_fields=["dashboard_draft", "updated_at"])
    return workbook


# --- reports -----------------------------------------------------------------------------------------


def report_content(
    *, deployment: Deployment, json_query: Any, meta: Any, ctx: DraftContext | None = None
) -> tuple[ParsedQuery | None, Visualization]:
    """Check a report's query and visualization against the deployment's model; the parsed query (None when
    empty) and the visualization."""
    if not isinstance(meta, dict):
        raise BadRequest("meta must be an object")
    if json_query is None or json_query == "":
        parsed = None
    else:
        model = ctx.model if ctx is not None else model_of(deployment=deployment)
        parsed = query_parse(model=model, json_query=json_query)
    return parsed, visualization_parse(meta=meta, parsed=parsed)


def _report_values(deployment: Deployment, fields: Mapping[str, Any]) -> dict[str, Any]:
    _unknown(fields, REPORT_FIELDS)
    values = dict(fields)
    if "name" in values:
        values["name"] = _name(values["name"])
    for key in ("title", "description", "sql_query"):
        if key in values:
            if values[key] is None:
                values[key] = ""
            if not isinstance(values[key], str):
                raise BadRequest(f"{key} must be a string")
    if "json_query" in values and values["json_query"] is None:
        values["json_query"] = ""
    if "meta" in values and values["meta"] is None:
        values["meta"] = {}
    if values.get("public_id") is not None:
        public_id_check(values["public_id"])
    if "source" in values and values["source"] not in Report.Source.values:
        raise BadRequest(f"source must be one of {', '.join(Report.Source.values)}")
    _same_deployment(deployment, values.get("workbook"), "Workbook")
    _same_deployment(deployment, values.get("folder"), "Folder")
    return values


def _checked_content(deployment: Deployment, report: Report, values: dict[str, Any]) -> None:
    """Validate the query and visualization the report will have; store the query as its JSON text."""
    if "json_query" in values or "meta" in values:
        parsed, _ = report_content(
            deployment=deployment,
            json_query=values.get("json_query", report.json_query),
            meta=values.get("meta", report.meta),
        )
        if "json_query" in values:
            values["json_query"] = parsed.text if parsed is not None else ""


def _public_id_taken(public_id: str) -> Conflict:
    return Conflict(f"A report with publicId {public_id!r} already exists in this account")


def report_create(*, deployment: Deployment, fields: Mapping[str, Any]) -> Report:
    """Create a report (``name`` required); a publicId is generated when none is given."""
    values = _report_values(deployment, fields)
    if "name" not in values:
        raise BadRequest("name is required")
    if values.get("public_id") is None:
        values["public_id"] = random_public_id()
    report = Report(account_id=deployment.account_id, deployment=deployment)
    _checked_content(deployment, report, values)
    _apply(report, values)
    with transaction.atomic():
        return create_unique(report, conflict=_public_id_taken(report.public_id))


def _report_write(report: Report, values: dict[str, Any]) -> Report:
    """Apply ``values`` to a locked report: compare, bump the version on a change of content, save."""
    if values.get("public_id") is not None and values["public_id"] != report.public_id:
        raise BadRequest(f"publicId of report {report.pk} is {report.public_id!r} and cannot change")
    values.pop("public_id", None)
    _checked_content(report.deployment, report, values)
    changed = _apply(report, values)
    if any(name in REPORT_CONTENT_FIELDS for name in changed):
        report.version += 1
        changed.append("version")
    _save(report, changed)
    return report


def report_update(*, report: Report, fields: Mapping[str, Any]) -> Report:
    """``PUT .../reports/{id}``: change the given fields (publicId is written once)."""
    values = _report_values(report.deployment, fields)
    with transaction.atomic():
        locked = Report.objects.select_for_update().select_related("deployment").get(pk=report.pk)
        return _report_write(locked, values)


def report_upsert_by_public_id(*, deployment: Deployment, public_id: str, fields: Mapping[str, Any]) -> Report:
    """``PUT .../reports/by-public-id/{publicId}``: create the report with this publicId, or update it (``source``
    is taken on create only). 409 when the account uses the publicId in another deployment. Writes nothing when
    the report is already so."""
    public_id_check(public_id)
    values = _report_values(deployment, {k: v for k, v in fields.items() if k != "public_id"})
    with transaction.atomic():
        report = (
            Report.objects.select_for_update()
            .select_related("deployment")
            .filter(account_id=deployment.account_id, public_id=public_id)
            .first()
        )
        if report is None:
            if "name" not in values:
                raise BadRequest("name is required to create a report")
            try:
                return report_create(deployment=deployment, fields={**values, "public_id": public_id})
            except Conflict:  # created concurrently
                report = (
                    Report.objects.select_for_update()
                    .select_related("deployment")
                    .get(account_id=deployment.account_id, public_id=public_id)
                )
        if report.deployment_id != deployment.pk:
            raise Conflict(f"publicId {public_id!r} belongs to a report of another deployment")
        values.pop("source", None)
        return _report_write(report, values)


def report_delete(*, report: Report) -> None:
    """Delete a report. Published snapshots keep what they froze (their link becomes null)."""
    with transaction.atomic():
        report.delete()


# --- publish ----------------------------------------------------------------------------------------


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _snapshot_of(report: Report, ctx: DraftContext) -> dict[str, Any]:
    # ctx.deployment is the report's (reports_by_id read it there): report.deployment would be a query per report.
    parsed, visualization = report_content(
        deployment=ctx.deployment, json_query=report.json_query, meta=report.meta, ctx=ctx
    )
    return {
        "report_public_id": report.public_id,
        "report_version": report.version,
        "name": report.name,
        "title": report.title,
        "kind": visualization.kind,
        "spec": visualization.spec,
        "json_query": parsed.query if parsed is not None else {},
        "meta": report.meta,
    }


def workbook_publish(
    *,
    workbook: Workbook,
    title: str | None = None,
    description: str | None = None,
    allow_embed: bool | None = None,
    public_id: str | None = None,
    published_by: str = "",
) -> Dashboard:
    """``POST .../workbooks/{id}/publish``: freeze the draft into a new :class:`DashboardVersion` with a snapshot of
    every report a CHART names, creating the workbook's :class:`Dashboard` on the first publish (publicId:
    ``public_id``, else the workbook's ``meta.dashboardPublicId``, else random). Publishing an unchanged draft
    (same config, same reports) makes no version and writes nothing. ``title``/``description`` default to the
    draft's; ``allow_embed`` is set when given."""
    if public_id is not None:
        public_id_check(public_id)
    with transaction.atomic():
        locked = Workbook.objects.select_for_update().select_related("deployment").get(pk=workbook.pk)
        if locked.dashboard_draft is None:
            raise BadRequest(f"Workbook {workbook.pk} has no dashboard draft to publish")
        ctx = _draft_context(locked.deployment)
        try:
            config = draft_validate(ctx, locked.dashboard_draft)
        except BadRequest as exc:
            raise BadRequest(f"The dashboard draft no longer validates: {exc.message}") from None
        reports = selectors.reports_by_id(deployment=locked.deployment, report_ids=chart_report_ids(config))
        snapshots = {}
        for report_id in chart_report_ids(config):
            report = reports[report_id]
            try:
                snapshots[report_id] = _snapshot_of(report, ctx)
            except BadRequest as exc:
                raise BadRequest(
                    f"Report {report_id} ({report.public_id}) cannot be published: {exc.message}"
                ) from None
        # The frozen config names each chart's report by its publicId too: a published version keeps rendering
        # its snapshot after the report itself is deleted (the snapshot's report link is then null).
        for widget in config.get("widgets", []):
            if isinstance(widget, dict) and widget.get("type") == "CHART":
                widget_config = widget.get("config")
                if isinstance(widget_config, dict) and widget_config.get("reportId") in reports:
                    widget_config["reportPublicId"] = reports[widget_config["reportId"]].public_id
        fingerprint = _digest({"config": config, "snapshots": list(snapshots.values())})

        dashboard = Dashboard.objects.select_for_update().filter(workbook=locked).first()
        if dashboard is None:
            given = public_id or locked.meta.get("dashboardPublicId")
            new_id = public_id_check(given, "dashboard publicId") if given is not None else random_public_id()
            dashboard = create_unique(
                Dashboard(
                    account_id=locked.account_id,
                    deployment_id=locked.deployment_id,
                    workbook=locked,
                    public_id=new_id,
                ),
                conflict=Conflict(f"A dashboard with publicId {new_id!r} already exists"),
            )
        elif public_id is not None and public_id != dashboard.public_id:
            raise BadRequest(f"The dashboard of workbook {workbook.pk} has publicId {dashboard.public_id!r}")

        newest = selectors.newest_version(dashboard=dashboard)
        changes: dict[str, Any] = {
            "status": Dashboard.Status.PUBLISHED,
            "title": title if title is not None else (config.get("title") or locked.name),
            "description": description if description is not None else config.get("description", ""),
        }
        if allow_embed is not None:
            changes["allow_embed"] = allow_embed
        if newest is None or newest.fingerprint != fingerprint:
            number = (newest.number if newest is not None else 0) + 1
            version = DashboardVersion.objects.create(
                dashboard=dashboard, number=number, config=config, fingerprint=fingerprint, published_by=published_by
            )
            ReportSnapshot.objects.bulk_create(
                [ReportSnapshot(version=version, report_id=rid, **snap) for rid, snap in snapshots.items()]
            )
            changes["version_number"] = number
        _save(dashboard, _apply(dashboard, changes))
    return dashboard


def dashboard_allow_embed_set(*, dashboard: Dashboard, allow_embed: bool) -> Dashboard:
    """``PATCH /api/v1/embed/dashboard/{publicId}``: turn signed embedding of a dashboard on or off."""
    with transaction.atomic():
        _save(dashboard, _apply(dashboard, {"allow_embed": allow_embed}))
    return dashboard


# --- embed access ------------------------------------------------------------------------------------

EMBED_ACTIONS = ("read", "none")


def embed_access_update(
    *,
    workbook: Workbook,
    embed_tenant_name: str | None = None,
    all_embed_users: bool = False,
    action: str | None = None,
    allow_embed: bool | None = None,
) -> selectors.EmbedAccessState:
    """``PUT .../workbooks/{id}/embed-access`` (reference 1.7): share the workbook's dashboard with one embed tenant
    or with all embed users (``action`` "read"), or remove that share ("none"), and/or set ``allowEmbed``. Exactly
    one target or none; 400 when the request asks for no change, 404 for an embed tenant the account does not
    have, 400 for ``allowEmbed`` before the first publish. Granting an existing share writes nothing."""
    if embed_tenant_name is not None and all_embed_users:
        raise BadRequest("Provide exactly one target: embedTenantName or allEmbedUsers")
    has_target = embed_tenant_name is not None or all_embed_users
    if has_target and action is None:
        raise BadRequest("action (read or none) is required with a target")
    if action is not None and not has_target:
        raise BadRequest("action needs a target: embedTenantName or allEmbedUsers: true")
    if action is not None and action not in EMBED_ACTIONS:
        raise BadRequest("action must be read or none")
    if not has_target and allow_embed is None:
        raise BadRequest("No change: give a target with an action, or allowEmbed")
    with transaction.atomic():
        dashboard = Dashboard.objects.select_for_update().filter(workbook=workbook).first()
        if allow_embed is not None and (dashboard is None or dashboard.version_number == 0):
            raise BadRequest(f"allowEmbed: workbook {workbook.pk} has no published dashboard")
        tenant = None
        if embed_tenant_name is not None:
            tenant = selectors.embed_tenant_named(account=workbook.account, name=embed_tenant_name)
            if tenant is None:
                raise NotFound(f"Embed tenant {embed_tenant_name!r} not found")
        if has_target:
            existing = EmbedAccess.objects.filter(workbook=workbook, embed_tenant=tenant)
            if action == "read" and not existing.exists():
                EmbedAccess.objects.bulk_create(
                    [EmbedAccess(account_id=workbook.account_id, workbook=workbook, embed_tenant=tenant)],
                    ignore_conflicts=True,  # granted concurrently: the share exists either way
                )
            elif action == "none" and existing.exists():
                existing.delete()
        if allow_embed is not None and dashboard is not None:
            _save(dashboard, _apply(dashboard, {"allow_embed": allow_embed}))
    return selectors.embed_access_of(workbook=workbook)


__all__ = [
    "dashboard_allow_embed_set",
    "embed_access_update",
    "folder_create",
    "folder_delete",
    "folder_update",
    "public_id_check",
    "random_public_id",
    "report_content",
    "report_create",
    "report_delete",
    "report_update",
    "report_upsert_by_public_id",
    "slug_normalize",
    "workbook_create",
    "workbook_dashboard_set",
    "workbook_delete",
    "workbook_publish",
    "workbook_update",
    "workbook_upsert_by_slug",
]
