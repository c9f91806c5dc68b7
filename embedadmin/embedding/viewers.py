"""Embed viewers described without a session: the claims their embed token would carry, and what it may read.

The panel's and the Platform API's "who can read what" ask this one resolution: the claims a read-only
generate-session would store for the viewer (groups and attributes resolved in the account's tenant-wide catalog,
defaults filled in), made into the token's payload by :func:`embedding.services.embed_token_claims`, then the query
context every door builds (``semantic.serving.routing.viewer_context``) and the one decision
(``semantic.serving.services.semantic_grants``). Nothing is written: no external user is made or changed, no session
is minted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from embedadmin.accounts.models import Account, Deployment
from embedadmin.core.errors import BadRequest
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory import services as directory
from embedadmin.directory.models import EmbedTenant, ExternalUser
from embedadmin.embedding.models import EmbedSession
from embedadmin.embedding.services import RESERVED_CLAIMS, embed_token_claims
from embedadmin.semantic.results.grants import EntityGrant
from embedadmin.semantic.serving.routing import viewer_context
from embedadmin.semantic.serving.services import semantic_grants


@dataclass(frozen=True)
class EmbedViewer:
    """A viewer as their embed token would carry them."""

    external_id: str | None
    embed_tenant: str | None
    groups: list[str]
    user_attributes: dict[str, Any]
    security_context: dict[str, Any]  # the session's securityContext, as sent
    payload: dict[str, Any]  # the token's claims (without iat, exp, aud and the seal): securityContext to policies


def embed_viewer_resolve(
    *,
    account: Account,
    deployment: Deployment,
    external_user: ExternalUser | None,
    embed_tenant: EmbedTenant | None,
    group_names: list[str],
    attribute_values: list[tuple[str, Any]],
    security_context: dict[str, Any],
) -> EmbedViewer:
    """The viewer's embed-token claims, resolved as ``embedding.services.session_generate`` resolves a read-only
    session's (the tenant-wide catalog): an existing external user's stored groups and values with defaults, or the
    groups and typed values given (400 for names the catalog does not have, or a value of the wrong type)."""
    reserved = sorted(RESERVED_CLAIMS & set(security_context))
    if reserved:
        raise BadRequest(f"securityContext: reserved claim names not allowed: {', '.join(reserved)}")
    catalog = directory_selectors.catalog_in_scope(account=account, embed_tenant=None)
    identity: dict[str, Any] = {}
    if external_user is not None:
        groups, attributes = directory_selectors.external_user_claims(
            user=external_user, embed_tenant=None, definitions=catalog.definitions
        )
        identity = {
            "externalId": external_user.external_id,
            "email": external_user.email,
            "userProfile": {"displayName": external_user.display_name, "picture": external_user.picture},
        }
    else:
        groups = [g.name for g in directory_selectors.groups_resolve(groups=catalog.groups, names=group_names)]
        named = directory_selectors.attribute_definitions_resolve(
            definitions=catalog.definitions, names=[name for name, _ in attribute_values]
        )
        checked = directory.attribute_values_check(definitions=named, values=attribute_values)
        attributes = directory_selectors.attribute_claims(
            definitions=catalog.definitions, values={d.pk: value for d, value in checked}
        )
    claims = {
        "sub": external_user.external_id if external_user is not None else "",
        "groups": groups,
        "userAttributes": attributes,
        "securityContext": security_context,
        "identity": identity,
    }
    session = EmbedSession(account=account, deployment=deployment, embed_tenant=embed_tenant, claims=claims)
    return EmbedViewer(
        external_id=external_user.external_id if external_user is not None else None,
        embed_tenant=embed_tenant.name if embed_tenant is not None else None,
        groups=groups,
        user_attributes=attributes,
        security_context=security_context,
        payload=embed_token_claims(session=session),
    )


def embed_viewer_grants(*, deployment: Deployment, viewer: EmbedViewer) -> list[EntityGrant]:
    """Every cube and view of the deployment as ``viewer``'s embed token reads it."""
    ctx = viewer_context(
        deployment=deployment,
        security_context=viewer.payload,
        groups=list(viewer.groups),
        user_attributes=viewer.user_attributes,
    )
    return semantic_grants(deployment=deployment, ctx=ctx)
