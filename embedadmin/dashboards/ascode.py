"""Dashboards as code: ``<model dir>/dashboards/*.yml`` applied to every deployment serving that model directory.

One file describes one workbook (upserted by slug), its reports (upserted by publicId), its dashboard draft,
whether to publish it and who it is shared with (format: ``docs/dashboards.md``). A file is applied through the
same service functions as the Platform API's ``PUT .../workbooks/by-slug/{slug}``, ``PUT .../reports/by-public-id/
{publicId}``, ``PUT .../dashboard``, ``POST .../publish`` and ``PUT .../embed-access``, each of which writes only
what differs, so applying a file twice writes nothing.

Each file is applied in its own transaction: a file with a problem changes nothing and is reported with the
problem; the other files still apply. PublicIds a file leaves out are derived from the deployment, the workbook
slug and the report key, so two deployments of one account can share the files without their ids colliding.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from django.db import connection, transaction

from embedadmin.accounts.models import Deployment
from embedadmin.core.errors import ApiError
from embedadmin.dashboards import selectors, services
from embedadmin.dashboards.models import PUBLIC_ID_LENGTH, Workbook
from embedadmin.semantic.modeling.files import display_name, list_dashboard_files

logger = logging.getLogger(__name__)

FILE_KEYS = frozenset({"workbook", "reports", "dashboard"})
WORKBOOK_KEYS = frozenset({"slug", "name", "meta"})
REPORT_KEYS = frozenset({"key", "publicId", "name", "title", "description", "query", "sqlQuery", "visualization"})
DRAFT_KEYS = ("title", "description", "layout", "theme", "settings")
DASHBOARD_KEYS = frozenset({*DRAFT_KEYS, "publicId", "publish", "allowEmbed", "embedAccess", "widgets"})
WIDGET_KEYS = frozenset({"id", "type", "report", "position", "config", "title", "style"})
DASHBOARD_KEY = "dashboard"  # the key a dashboard's derived publicId is made from


class FileProblem(ApiError):
    """What is wrong with one dashboards file (its structure; the services report the rest)."""


@dataclass(frozen=True)
class FileOutcome:
    """One file applied to one deployment: how many rows it wrote (INSERT/UPDATE/DELETE statements), the publicId
    of its dashboard when published, or the error that left the file unapplied."""

    deployment_id: int
    file: str
    writes: int
    error: str | None = None
    dashboard_public_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def derived_public_id(deployment_id: int, slug: str, key: str) -> str:
    """12 characters of base62 of ``sha256("{deployment_id}:{slug}:{key}")``: stable for a deployment and a file."""
    number = int.from_bytes(hashlib.sha256(f"{deployment_id}:{slug}:{key}".encode()).digest(), "big")
    digits = []
    while number:
        number, digit = divmod(number, 62)
        digits.append(services.BASE62[digit])
    return "".join(reversed(digits))[:PUBLIC_ID_LENGTH]


@contextmanager
def _counting_writes() -> Iterator[Callable[[], int]]:
    """Count the INSERT, UPDATE and DELETE statements run on the default connection inside the block."""
    count = 0

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        nonlocal count
        if sql.lstrip()[:6].upper() in ("INSERT", "UPDATE", "DELETE"):
            count += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield lambda: count


def _mapping(value: Any, where: str, allowed: frozenset[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FileProblem(f"{where}: must be a mapping")
    unknown = sorted(str(k) for k in set(value) - allowed)
    if unknown:
        raise FileProblem(f"{where}: unknown keys: {', '.join(unknown)}")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise FileProblem(f"{where}: must be a non-empty string")
    return value


def _workbook(deployment: Deployment, spec: dict[str, Any]) -> Workbook:
    workbook = _mapping(spec.get("workbook"), "workbook", WORKBOOK_KEYS)
    slug = _string(workbook.get("slug"), "workbook.slug")
    changes: dict[str, Any] = {"name": workbook.get("name", slug)}
    if "meta" in workbook:
        changes["meta"] = workbook["meta"]
    return services.workbook_upsert_by_slug(deployment=deployment, slug=slug, changes=changes)


def _reports(deployment: Deployment, workbook: Workbook, spec: dict[str, Any]) -> dict[str, int]:
    """Upsert the file's reports; their ids by key."""
    items = spec.get("reports", [])
    if not isinstance(items, list):
        raise FileProblem("reports: must be a list")
    ids: dict[str, int] = {}
    for index, item in enumerate(items):
        where = f"reports[{index}]"
        report = _mapping(item, where, REPORT_KEYS)
        key = _string(report.get("key"), f"{where}.key")
        if key in ids:
            raise FileProblem(f"{where}: key {key!r} is used by another report")
        public_id = report.get("publicId") or derived_public_id(deployment.pk, str(workbook.slug), key)
        fields: dict[str, Any] = {
            "name": report.get("name", key),
            "title": report.get("title", ""),
            "description": report.get("description", ""),
            "json_query": report.get("query"),
            "sql_query": report.get("sqlQuery", ""),
            "meta": {"visualization": report["visualization"]} if "visualization" in report else {},
            "workbook": workbook,
        }
        try:
            row = services.report_upsert_by_public_id(deployment=deployment, public_id=public_id, fields=fields)
        except ApiError as exc:
            raise FileProblem(f"{where} (key {key!r}): {exc.message}") from None
        ids[key] = row.pk
    return ids


def _draft(dashboard: dict[str, Any], report_ids: dict[str, int]) -> dict[str, Any]:
    draft: dict[str, Any] = {k: dashboard[k] for k in DRAFT_KEYS if k in dashboard}
    widgets = dashboard.get("widgets", [])
    if not isinstance(widgets, list):
        raise FileProblem("dashboard.widgets: must be a list")
    out = []
    for index, item in enumerate(widgets):
        widget = dict(_mapping(item, f"dashboard.widgets[{index}]", WIDGET_KEYS))
        if "report" in widget:
            key = widget.pop("report")
            if key not in report_ids:
                raise FileProblem(f"dashboard.widgets[{index}]: report {key!r} is not a key of this file's reports")
            config = widget.get("config") or {}
            widget["config"] = {**config, "reportId": report_ids[key]} if isinstance(config, dict) else config
        out.append(widget)
    draft["widgets"] = out
    return draft


def _embed_access(workbook: Workbook, declared: Any) -> None:
    """Make the workbook's shares what the file declares (only the differences are written)."""
    access = _mapping(declared, "dashboard.embedAccess", frozenset({"allEmbedUsers", "tenants"}))
    everyone = access.get("allEmbedUsers", False)
    tenants = access.get("tenants", [])
    if not isinstance(everyone, bool):
        raise FileProblem("dashboard.embedAccess.allEmbedUsers: must be true or false")
    if not isinstance(tenants, list) or not all(isinstance(t, str) for t in tenants):
        raise FileProblem("dashboard.embedAccess.tenants: must be a list of embed tenant names")
    state = selectors.embed_access_of(workbook=workbook)
    if everyone != (state.all_embed_users is not None):
        services.embed_access_update(workbook=workbook, all_embed_users=True, action="read" if everyone else "none")
    current = set(state.tenant_names())
    for name in tenants:
        if name not in current:
            services.embed_access_update(workbook=workbook, embed_tenant_name=name, action="read")
    for name in sorted(current - set(tenants)):
        services.embed_access_update(workbook=workbook, embed_tenant_name=name, action="none")


def apply_spec(deployment: Deployment, spec: Any) -> str | None:
    """Apply one parsed file to ``deployment`` (in the caller's transaction); its dashboard's publicId when
    published."""
    spec = _mapping(spec, "the file", FILE_KEYS)
    workbook = _workbook(deployment, spec)
    report_ids = _reports(deployment, workbook, spec)
    if "dashboard" not in spec:
        return None
    dashboard = _mapping(spec["dashboard"], "dashboard", DASHBOARD_KEYS)
    services.workbook_dashboard_set(workbook=workbook, draft=_draft(dashboard, report_ids))
    allow_embed = dashboard.get("allowEmbed")
    if allow_embed is not None and not isinstance(allow_embed, bool):
        raise FileProblem("dashboard.allowEmbed: must be true or false")
    public_id = None
    if dashboard.get("publish", False):
        public_id = dashboard.get("publicId") or derived_public_id(deployment.pk, str(workbook.slug), DASHBOARD_KEY)
        published = services.workbook_publish(
            workbook=workbook,
            title=dashboard.get("title"),
            description=dashboard.get("description"),
            allow_embed=allow_embed,
            public_id=public_id,
            published_by="apply_dashboards",
        )
        public_id = published.public_id
    elif allow_embed is not None and allow_embed != selectors.embed_access_of(workbook=workbook).allow_embed:
        services.embed_access_update(workbook=workbook, allow_embed=allow_embed)
    if "embedAccess" in dashboard:
        _embed_access(workbook, dashboard["embedAccess"])
    return public_id


def _parse(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise FileProblem(f"cannot read the file: {exc}") from None
    except yaml.YAMLError as exc:
        raise FileProblem(f"invalid YAML: {exc}") from None


def apply_file(deployment: Deployment, path: Path, *, root: Path, dry_run: bool = False) -> FileOutcome:
    """Apply one file in its own transaction (rolled back on a problem, or always when ``dry_run``)."""
    name = display_name(root, path)
    with _counting_writes() as writes:
        try:
            spec = _parse(path)
            with transaction.atomic():
                public_id = apply_spec(deployment, spec)
                if dry_run:
                    transaction.set_rollback(True)
        except ApiError as exc:
            return FileOutcome(deployment.pk, name, writes(), error=exc.message)
    return FileOutcome(deployment.pk, name, writes(), dashboard_public_id=public_id)


def apply_for_deployment(deployment: Deployment, *, dry_run: bool = False) -> list[FileOutcome]:
    """Apply every ``dashboards/*.yml`` of the deployment's model directory; one outcome per file."""
    if not deployment.model_dir:
        return []
    root = Path(deployment.model_dir)
    outcomes = [apply_file(deployment, path, root=root, dry_run=dry_run) for path in list_dashboard_files(root)]
    for outcome in outcomes:
        if not outcome.ok:
            logger.warning(
                "dashboards file %s not applied to deployment %s: %s", outcome.file, deployment.pk, outcome.error
            )
    return outcomes


def apply_for_model_dir(model_dir: str) -> list[FileOutcome]:
    """Apply the dashboards files of ``model_dir`` to every deployment serving it."""
    outcomes: list[FileOutcome] = []
    for deployment in selectors.deployments_with_model_dir(model_dir=model_dir):
        outcomes.extend(apply_for_deployment(deployment))
    return outcomes
