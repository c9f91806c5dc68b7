"""The embed gates: which published dashboard an embed token may see (docs/dashboards.md, reference 1.3, R5).

One function, :func:`embed_dashboard`, serves the embed page and the view and export endpoints, so the gates
cannot drift apart. In order: the dashboard is in the token's deployment (else 404) -> it is published
(status ``published`` and a version, else 404) -> ``allowEmbed`` (else 403) -> it is shared with the token's
embed tenant or with all embed users (else 404). A dashboard of another deployment, account or tenant gives
the same 404 with the same message as one that does not exist.

The token itself (signature, expiry, revocation) is verified before this is called; ``claims`` is its
verified payload.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from typing import Any

import jwt
from django.utils.crypto import salted_hmac

from embedadmin.accounts.models import Deployment
from embedadmin.accounts.selectors import deployment_by_id
from embedadmin.accounts.tokens import TokenInvalid
from embedadmin.core.errors import Forbidden, NotFound
from embedadmin.dashboards import selectors
from embedadmin.dashboards.models import Dashboard, DashboardVersion, ReportSnapshot
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.serving.auth import SecurityContext, core_token_verify
from embedadmin.semantic.serving.routing import query_context

EMBED_TOKEN_SCHEME = "embed-token"
_SEAL_SALT = "embedadmin.embed-token.seal"
NOT_FOUND = "Dashboard not found"
NOT_EMBEDDABLE = "This dashboard may not be embedded"


# --- embed tokens ------------------------------------------------------------------------------------------


def _sealed_content(payload: dict[str, Any]) -> str:
    """What the seal covers: every claim of the token (its tenant, settings, groups, attributes, security context
    and expiry) but the seal itself and the two the signer adds on its own (``iat``, ``aud``), canonically."""
    body = {key: value for key, value in payload.items() if key not in ("iat", "aud")}
    embed = dict(_embed_claim(body))
    embed.pop("seal", None)
    body["embed"] = embed
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def embed_token_seal(*, payload: dict[str, Any]) -> str:
    """The mark only this install can put in an embed token's ``embed`` claim: an HMAC keyed by its SECRET_KEY
    over the whole payload (``exp`` included).

    A host holds its deployment's signing secret and may mint any Core Data API token, but not this, nor change
    a claim of a sealed token (another tenant, ``allowAi``, a later expiry): so a token that carries a valid seal
    was made by ``session_exchange`` from an admin-minted session, exactly as it was made, which is what lets it
    open the embed endpoints and the Chat API without the deployment's ``chat_token_auth``.
    """
    return salted_hmac(_SEAL_SALT, _sealed_content(payload), algorithm="sha256").hexdigest()


@dataclass(frozen=True)
class EmbedCaller:
    """A verified embed token: its deployment, its payload as a security context, and the query context of it."""

    deployment: Deployment
    security: SecurityContext

    @property
    def claims(self) -> dict[str, Any]:
        return self.security.payload

    @property
    def embed(self) -> dict[str, Any]:
        return _embed_claim(self.claims)

    @property
    def sub(self) -> str:
        return str(self.claims.get("sub", ""))

    @property
    def jti(self) -> str:
        return str(self.claims.get("jti", ""))

    @property
    def settings(self) -> dict[str, Any]:
        value = self.embed.get("settings")
        return value if isinstance(value, dict) else {}

    @property
    def ctx(self) -> QueryContext:
        return query_context(self.security, deployment=self.deployment)


def embed_token_verify(*, token: str) -> EmbedCaller:
    """Verify an embed token exactly as the Core Data API verifies any token of its deployment (signature, expiry,
    revocation), then its seal; :class:`TokenInvalid` otherwise."""
    token = token.strip()
    if not token or not token.isascii() or not token.isprintable():
        raise TokenInvalid("Invalid token")
    try:
        unverified = jwt.decode(token, options={"verify_signature": False})
        deployment_id = unverified["embed"]["deploymentId"]
    except (jwt.PyJWTError, KeyError, TypeError):
        raise TokenInvalid("Not an embed token") from None
    if not isinstance(deployment_id, int) or isinstance(deployment_id, bool):
        raise TokenInvalid("Not an embed token")
    deployment = deployment_by_id(deployment_id=deployment_id)
    if deployment is None:
        raise TokenInvalid("Not an embed token")
    security = core_token_verify(deployment=deployment, token=token)
    embed = _embed_claim(security.payload)
    seal = embed.get("seal")
    try:
        expected = embed_token_seal(payload=security.payload)
    except ValueError:  # a value JSON cannot write canonically (NaN): not a token this install made
        raise TokenInvalid("Not an embed token") from None
    if (
        not isinstance(seal, str)
        or not hmac.compare_digest(seal, expected)
        or embed.get("deploymentId") != deployment.pk
    ):
        raise TokenInvalid("Not an embed token")
    return EmbedCaller(deployment=deployment, security=security)


def embed_authorization_token(authorization: str) -> str:
    """The token of ``Authorization: Embed-Token <jwt>``; :class:`TokenInvalid` for any other header."""
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != EMBED_TOKEN_SCHEME or not token.strip():
        raise TokenInvalid("Authorization header must be 'Embed-Token <embed token>'")
    return token.strip()


# --- the gates ---------------------------------------------------------------------------------------------


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


def _embed_claim(claims: dict[str, Any]) -> dict[str, Any]:
    embed = claims.get("embed")
    return embed if isinstance(embed, dict) else {}


def embed_dashboard(*, claims: dict[str, Any], public_id: str) -> EmbeddedDashboard:
    """The published dashboard ``public_id`` as the embed token with ``claims`` may see it, through the gates."""
    embed = _embed_claim(claims)
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


def dashboard_account_id(*, public_id: str) -> int | None:
    """The account of a dashboard by its ``public_id`` (no gate: only to pick the frame policy of an error page)."""
    return Dashboard.objects.filter(public_id=public_id).values_list("account_id", flat=True).first()
