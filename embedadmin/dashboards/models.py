"""Workspace content of a deployment: folders, workbooks, reports, and the dashboard of each workbook.

A **report** is a saved Cube REST query (``json_query``) plus its visualization (``meta``). A **workbook**
holds reports and one dashboard **draft** (``dashboard_draft``: layout, widgets, controls). Publishing the
draft freezes it into a :class:`DashboardVersion` with a :class:`ReportSnapshot` of every report a chart
names; an embed renders the newest version, never the draft, so editing a draft or a report changes
nothing a viewer sees until the next publish. :class:`EmbedAccess` shares a workbook's dashboard with one
embed tenant, or (``embed_tenant`` null) with all embed users.

Every row carries its ``account`` so that each query can be scoped to the caller's account in one
filter; the services keep ``account`` equal to the deployment's account.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from embedadmin.accounts.models import Account, Deployment
from embedadmin.core.models import TimestampedModel
from embedadmin.directory.models import EmbedTenant

PUBLIC_ID_RE = r"^[0-9A-Za-z]{12}$"
PUBLIC_ID_LENGTH = 12


class Folder(TimestampedModel):
    """A node of a deployment's workspace tree; workbooks and reports may sit in one."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="folders")
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="folders")
    name = models.CharField(max_length=255)
    # CASCADE so that deleting a deployment (or account) takes its whole tree; deleting one folder that still has
    # sub-folders is refused by services.folder_delete (400), as Cube does.
    parent = models.ForeignKey("self", on_delete=models.CASCADE, null=True, blank=True, related_name="children")
    position = models.IntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.name


class Workbook(TimestampedModel):
    """A deployment's container of reports and of one dashboard (its draft lives here)."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="workbooks")
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="workbooks")
    name = models.CharField(max_length=255)
    # Trimmed and lowercased; unique per deployment when set (dashboards as code upsert by it).
    slug = models.CharField(max_length=255, null=True, blank=True)
    folder = models.ForeignKey(Folder, on_delete=models.SET_NULL, null=True, blank=True, related_name="workbooks")
    meta = models.JSONField(default=dict, blank=True)
    # The dashboard being edited (a DashboardConfig); null until one is written.
    dashboard_draft = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["deployment", "slug"],
                condition=Q(slug__isnull=False),
                name="workbook_slug_unique_per_deployment",
            )
        ]

    def __str__(self) -> str:
        return self.name


class Report(TimestampedModel):
    """A saved Cube REST query and its visualization."""

    class Source(models.TextChoices):
        PLAYGROUND = "PLAYGROUND"
        GOOGLE_SHEETS = "GOOGLE_SHEETS"
        EXCEL = "EXCEL"
        D3 = "D3"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="reports")
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="reports")
    workbook = models.ForeignKey(Workbook, on_delete=models.SET_NULL, null=True, blank=True, related_name="reports")
    folder = models.ForeignKey(Folder, on_delete=models.SET_NULL, null=True, blank=True, related_name="reports")
    # 12 characters [0-9A-Za-z], unique per account, written once.
    public_id = models.CharField(max_length=PUBLIC_ID_LENGTH)
    name = models.CharField(max_length=255)
    title = models.CharField(max_length=255, blank=True, default="")
    description = models.TextField(blank=True, default="")
    # The Cube REST query as the client sent it (a JSON string, as Cube stores it).
    json_query = models.TextField(blank=True, default="")
    sql_query = models.TextField(blank=True, default="")
    pivot_items = models.JSONField(null=True, blank=True)
    # Visualization and display settings: meta.visualization = {kind, spec | columns | measure | text}.
    meta = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.PLAYGROUND)
    # Bumped on every change of content; a snapshot records the version it froze.
    version = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["account", "public_id"], name="report_public_id_unique_per_account")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"


class Dashboard(TimestampedModel):
    """The published face of a workbook: created by its first publish, one per workbook."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        PUBLISHED = "published"
        ARCHIVED = "archived"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="dashboards")
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="dashboards")
    workbook = models.OneToOneField(Workbook, on_delete=models.CASCADE, related_name="dashboard")
    # Unique across the install: it is the address of the embed page, /embed/dashboard/{public_id}.
    public_id = models.CharField(max_length=PUBLIC_ID_LENGTH, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    allow_embed = models.BooleanField(default=False)
    title = models.CharField(max_length=255, blank=True, default="")
    description = models.TextField(blank=True, default="")
    # The number of the newest DashboardVersion (0 before the first publish).
    version_number = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.title or self.workbook} ({self.public_id})"


class DashboardVersion(models.Model):
    """One publish: the frozen config and (through ``snapshots``) the reports as they were."""

    dashboard = models.ForeignKey(Dashboard, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    config = models.JSONField()
    # Digest of config + the snapshots' content: publishing an unchanged draft makes no new version.
    fingerprint = models.CharField(max_length=64)
    published_at = models.DateTimeField(auto_now_add=True)
    published_by = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        ordering = ["dashboard_id", "-number"]
        constraints = [models.UniqueConstraint(fields=["dashboard", "number"], name="dashboard_version_unique")]

    def __str__(self) -> str:
        return f"{self.dashboard} v{self.number}"


class ReportSnapshot(models.Model):
    """A report as it was published: what an embedded chart renders and queries."""

    class Kind(models.TextChoices):
        VEGA = "vega"
        TABLE = "table"
        KPI = "kpi"
        PIVOT = "pivot"
        TEXT = "text"

    version = models.ForeignKey(DashboardVersion, on_delete=models.CASCADE, related_name="snapshots")
    report = models.ForeignKey(Report, on_delete=models.SET_NULL, null=True, blank=True, related_name="snapshots")
    report_public_id = models.CharField(max_length=PUBLIC_ID_LENGTH)
    report_version = models.PositiveIntegerField()
    name = models.CharField(max_length=255)
    title = models.CharField(max_length=255, blank=True, default="")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # The Vega-Lite spec (kind vega) or the table/KPI/text settings; never data.
    spec = models.JSONField(default=dict)
    # The query, parsed (an object).
    json_query = models.JSONField(default=dict)
    meta = models.JSONField(default=dict)

    class Meta:
        ordering = ["version_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["version", "report_public_id"], name="report_snapshot_unique_per_version")
        ]

    def __str__(self) -> str:
        return f"{self.name} in {self.version}"


class EmbedAccess(models.Model):
    """A read share of a workbook's dashboard with one embed tenant, or with all embed users (tenant null)."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="embed_accesses")
    workbook = models.ForeignKey(Workbook, on_delete=models.CASCADE, related_name="embed_accesses")
    embed_tenant = models.ForeignKey(
        EmbedTenant, on_delete=models.CASCADE, null=True, blank=True, related_name="embed_accesses"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "embed accesses"
        constraints = [
            models.UniqueConstraint(
                fields=["workbook", "embed_tenant"],
                condition=Q(embed_tenant__isnull=False),
                name="embed_access_unique_per_tenant",
            ),
            models.UniqueConstraint(
                fields=["workbook"], condition=Q(embed_tenant__isnull=True), name="embed_access_unique_all_users"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.workbook} shared with {self.embed_tenant or 'all embed users'}"
