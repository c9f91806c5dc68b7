"""Reads of workspace content: folders, workbooks, reports, dashboards, their published versions and embed access.

Every function takes the account or deployment it reads within (or an object already read within one), so a row
of another account is never found: the Platform API turns that into 404. The embed page
(``dashboards/access.py``) reads the published face through :func:`dashboard_by_public_id`,
:func:`published_dashboard` and :func:`embed_access_of` / :func:`is_shared_with`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from django.db.models import F, Q, QuerySet

from embedadmin.accounts.models import Account, Deployment
from embedadmin.core.edge.ids import row_id
from embedadmin.core.errors import NotFound
from embedadmin.dashboards.models import (
    Dashboard,
    DashboardVersion,
    EmbedAccess,
    Folder,
    Report,
    ReportSnapshot,
    Workbook,
)
from embedadmin.directory.models import EmbedTenant


def _id_ok(value: int) -> bool:
    """Whether ``value`` can be a row id (a larger number in a URL must not reach the database)."""
    return row_id(value) is not None


# --- deployments -------------------------------------------------------------------------------------


def deployments_with_model_dir(*, model_dir: str) -> list[Deployment]:
    """Every deployment (of any account) serving the model directory ``model_dir``, in id order."""
    return list(Deployment.objects.filter(model_dir=model_dir).order_by("pk"))


def deployments_with_model() -> list[Deployment]:
    """Every deployment that has a model directory, in id order."""
    return list(Deployment.objects.exclude(model_dir="").order_by("pk"))


# --- folders -----------------------------------------------------------------------------------------


def folders_of(*, deployment: Deployment, parent_id: int | None) -> QuerySet[Folder]:
    """The folders directly under ``parent_id`` (None: the root) of a deployment."""
    return Folder.objects.filter(deployment=deployment, parent_id=parent_id)


def folder_of(*, deployment: Deployment, folder_id: int) -> Folder:
    """The deployment's folder ``folder_id``; 404 when it has none."""
    folder = Folder.objects.filter(deployment=deployment, pk=folder_id).first() if _id_ok(folder_id) else None
    if folder is None:
        raise NotFound(f"Folder {folder_id} not found")
    return folder


def folder_ancestors(*, folder: Folder) -> list[Folder]:
    """The folders from the root down to ``folder`` itself."""
    chain = [folder]
    seen = {folder.pk}
    while chain[-1].parent_id is not None and chain[-1].parent_id not in seen:
        parent = Folder.objects.filter(deployment_id=folder.deployment_id, pk=chain[-1].parent_id).first()
        if parent is None:
            break
        seen.add(parent.pk)
        chain.append(parent)
    return list(reversed(chain))


def folder_has_children(*, folder: Folder) -> bool:
    return Folder.objects.filter(parent=folder).exists()


# --- workbooks ---------------------------------------------------------------------------------------


def workbooks_of(*, deployment: Deployment, folder_id: int | None = None, in_root: bool = False) -> QuerySet[Workbook]:
    """A deployment's workbooks, each read with its dashboard; only those in ``folder_id`` when given, only those
    at the root when ``in_root``."""
    rows = Workbook.objects.filter(deployment=deployment).select_related("dashboard")
    if folder_id is not None:
        rows = rows.filter(folder_id=folder_id)
    elif in_root:
        rows = rows.filter(folder__isnull=True)
    return rows


def workbook_of(*, deployment: Deployment, workbook_id: int) -> Workbook:
    """The deployment's workbook ``workbook_id``; 404 when it has none."""
    workbook = (
        Workbook.objects.filter(deployment=deployment, pk=workbook_id).select_related("dashboard").first()
        if _id_ok(workbook_id)
        else None
    )
    if workbook is None:
        raise NotFound(f"Workbook {workbook_id} not found")
    return workbook


def dashboard_of_workbook(*, workbook: Workbook) -> Dashboard | None:
    """The workbook's dashboard (created by its first publish), or None before that."""
    return Dashboard.objects.filter(workbook=workbook).first()


def newest_version(*, dashboard: Dashboard) -> DashboardVersion | None:
    """The dashboard's newest published version (what embeds render; ``version_number`` names it), or None."""
    if not dashboard.version_number:
        return None
    return DashboardVersion.objects.filter(dashboard=dashboard, number=dashboard.version_number).first()


# --- reports -----------------------------------------------------------------------------------------


def reports_of(
    *,
    deployment: Deployment,
    workbook_id: int | None = None,
    folder_id: int | None = None,
    search: str | None = None,
) -> QuerySet[Report]:
    """A deployment's reports, narrowed by workbook, folder and a case-insensitive search of name and title."""
    rows = Report.objects.filter(deployment=deployment)
    if workbook_id is not None:
        rows = rows.filter(workbook_id=workbook_id)
    if folder_id is not None:
        rows = rows.filter(folder_id=folder_id)
    if search:
        rows = rows.filter(Q(name__icontains=search) | Q(title__icontains=search))
    return rows


def report_of(*, deployment: Deployment, report_id: int) -> Report:
    """The deployment's report ``report_id``; 404 when it has none."""
    report = Report.objects.filter(deployment=deployment, pk=report_id).first() if _id_ok(report_id) else None
    if report is None:
        raise NotFound(f"Report {report_id} not found")
    return report


def report_in_deployment(*, deployment: Deployment, report_id: int) -> Report | None:
    """The deployment's report ``report_id``, or None."""
    return Report.objects.filter(deployment=deployment, pk=report_id).first() if _id_ok(report_id) else None


def reports_by_id(*, deployment: Deployment, report_ids: list[int]) -> dict[int, Report]:
    """The deployment's reports among ``report_ids``, by id."""
    ids = [i for i in report_ids if _id_ok(i)]
    return {r.pk: r for r in Report.objects.filter(deployment=deployment, pk__in=ids)}


# --- the published face (embed page) ----------------------------------------------------------------


class PublishedDashboard(NamedTuple):
    """A dashboard as an embed renders it: the dashboard, its newest version and that version's snapshots (in
    order). Unpacks as ``dashboard, version, snapshots = published``."""

    dashboard: Dashboard
    version: DashboardVersion
    snapshots: list[ReportSnapshot]


def dashboard_by_public_id(
    *, public_id: str, account: Account | None = None, deployment_id: int | None = None
) -> Dashboard | None:
    """The dashboard with this publicId (unique across the install), within ``account`` and/or the deployment
    ``deployment_id`` when given; None when there is none there. Read with its workbook."""
    rows = Dashboard.objects.filter(public_id=public_id).select_related("workbook")
    if account is not None:
        rows = rows.filter(account=account)
    if deployment_id is not None:
        if not _id_ok(deployment_id):
            return None
        rows = rows.filter(deployment_id=deployment_id)
    return rows.first()


def published_of(*, dashboard: Dashboard) -> PublishedDashboard | None:
    """The newest published version of ``dashboard`` with its snapshots; None when it was never published."""
    return published_of_many(dashboards=[dashboard]).get(dashboard.pk)


def published_of_many(*, dashboards: list[Dashboard]) -> dict[int, PublishedDashboard]:
    """The newest published version (the one ``version_number`` names) of each of ``dashboards`` with its snapshots,
    in two queries (a page of workbooks), by dashboard id; a dashboard never published is left out."""
    wanted = [d for d in dashboards if d.version_number > 0]
    if not wanted:
        return {}
    condition = Q()
    for dashboard in wanted:
        condition |= Q(dashboard_id=dashboard.pk, number=dashboard.version_number)
    versions = {v.dashboard_id: v for v in DashboardVersion.objects.filter(condition)}
    snapshots: dict[int, list[ReportSnapshot]] = {v.pk: [] for v in versions.values()}
    for snapshot in ReportSnapshot.objects.filter(version_id__in=list(snapshots)).order_by("id"):
        snapshots[snapshot.version_id].append(snapshot)
    return {
        d.pk: PublishedDashboard(d, versions[d.pk], snapshots[versions[d.pk].pk]) for d in wanted if d.pk in versions
    }


def published_dashboard(*, public_id: str, deployment_id: int | None = None) -> PublishedDashboard | None:
    """What the embed page renders for ``/embed/dashboard/{public_id}``: the dashboard (in the deployment
    ``deployment_id`` when given, e.g. the embed token's), its newest version and that version's report snapshots.
    None when there is no such dashboard there or it has no published version. The caller applies the other gates
    (``allow_embed``, :func:`is_shared_with`)."""
    dashboard = dashboard_by_public_id(public_id=public_id, deployment_id=deployment_id)
    if dashboard is None or dashboard.status != Dashboard.Status.PUBLISHED:
        return None
    return published_of(dashboard=dashboard)


# --- embed access ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmbedAccessState:
    """Who a workbook's dashboard is shared with: ``all_embed_users`` (the share with every embed user, or None),
    ``tenants`` (one share per embed tenant, each read with its tenant, by tenant name) and the dashboard's
    ``allow_embed`` (False before the first publish)."""

    allow_embed: bool
    all_embed_users: EmbedAccess | None
    tenants: list[EmbedAccess]

    def tenant_names(self) -> list[str]:
        return [row.embed_tenant.name for row in self.tenants if row.embed_tenant is not None]


def embed_access_of(*, workbook: Workbook) -> EmbedAccessState:
    """The embed shares of ``workbook`` and its dashboard's ``allowEmbed``."""
    rows = list(EmbedAccess.objects.filter(workbook=workbook).select_related("embed_tenant"))
    dashboard = dashboard_of_workbook(workbook=workbook)
    tenants = sorted((r for r in rows if r.embed_tenant is not None), key=lambda r: r.embed_tenant.name)  # type: ignore[union-attr]
    return EmbedAccessState(
        allow_embed=dashboard.allow_embed if dashboard is not None else False,
        all_embed_users=next((r for r in rows if r.embed_tenant_id is None), None),
        tenants=tenants,
    )


def is_shared_with(*, workbook_id: int, embed_tenant_name: str | None) -> bool:
    """Whether the workbook's dashboard is shared with all embed users or with the embed tenant of that name (of the
    workbook's account: a share names a tenant row of it). A viewer without a tenant sees only what is shared with
    all embed users."""
    condition = Q(embed_tenant__isnull=True)
    if embed_tenant_name is not None:
        condition |= Q(embed_tenant__name=embed_tenant_name, embed_tenant__account_id=F("account_id"))
    return EmbedAccess.objects.filter(condition, workbook_id=workbook_id).exists()


def embed_tenant_named(*, account: Account, name: str) -> EmbedTenant | None:
    """The account's embed tenant ``name`` (read fresh: a share must name a tenant that exists now)."""
    return EmbedTenant.objects.filter(account=account, name=name).first()
