"""The embed gates: which published dashboard an embed token may see (docs/dashboards.md, reference 1.3, R5).

One function, :func:`embed_dashboard`, serves the embed page and the view and export endpoints, so the gates
cannot drift apart. In order: the dashboard is in the token's deployment (else 404) -> it is published
(status ``published`` and a version, else 404) -> ``allowEmbed`` (else 403) -> it is shared with the token's
embed tenant or with all embed users (else 404). A dashboard of another deployment, account or tenant gives
the same 404 with the same message as one that does not exist.

The token itself (signature, seal, expiry, revocation) is verified before this is called, by the embedding room
(``embedding.tokens.embed_token_verify``); ``claims`` is its verified payload.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from embedadmin.core.errors import Forbidden, NotFound
from embedadmin.dashboards import selectors
from embedadmin.dashboards.models import Dashboard, DashboardVersion, ReportSnapshot

NOT_FOUND = "Dashboard not found"
NOT_EMBEDDABLE = "This dashboard may not be embedded"


@dataclass(frozen=True)
class EmbeddedDashboard:
    """A dashboard an embed token may see: its newest published version and that version's report snapshots."""

    dashboard: Dashboard
    version: DashboardVersion
    snapshots: tuple[ReportSnapshot, ...]

    def snapshot_for(self, widget_config: dict[str, Any]) -> ReportSnapshot | None:
        """The snapshot a CHART widget's config names (by ``reportId``, else ``reportPublicId``)."""
        report_id = widget_config.get("reportId")
        public_id = widget_config.get("reportPublicId")
        for snapshot in self.snapshots:
            if report_id is not None and not isinstance(report_id, bool) and snapshot.report_id == report_id:
                return snapshot
        for snapshot in self.snapshots:
            if isinstance(public_id, str) and snapshot.report_public_id == public_id:
                return snapshot
        return None


def embed_dashboard(*, claims: dict[str, Any], public_id: str) -> EmbeddedDashboard:
    """The published dashboard ``public_id`` as the embed token with ``claims`` may see it, through the gates."""
    embed = claims.get("embed")
    embed = embed if isinstance(embed, dict) else {}
    deployment_id = embed.get("deploymentId")
    if not isinstance(deployment_id, int) or isinstance(deployment_id, bool) or not isinstance(public_id, str):
        raise NotFound(NOT_FOUND)
    # The lookup (in the token's deployment, published, its newest version) and the share are the selectors' rules.
    published = selectors.published_dashboard(public_id=public_id, deployment_id=deployment_id)
    if published is None:
        raise NotFound(NOT_FOUND)
    dashboard = published.dashboard
    if not dashboard.allow_embed:
        raise Forbidden(NOT_EMBEDDABLE)
    tenant = embed.get("embedTenant")
    if not selectors.is_shared_with(
        workbook_id=dashboard.workbook_id, embed_tenant_name=tenant if isinstance(tenant, str) and tenant else None
    ):
        raise NotFound(NOT_FOUND)
    version, snapshots = published.version, tuple(published.snapshots)
    return EmbeddedDashboard(dashboard=dashboard, version=version, snapshots=snapshots)
