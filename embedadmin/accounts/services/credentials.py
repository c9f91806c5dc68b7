"""API keys and platform tokens: minted once, stored as digests, revoked; the CREDENTIALS version hot paths
remember them under (core/versions.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from embedadmin.accounts.models import (
    Account,
    AccountMembership,
    ApiKey,
    Deployment,
    PlatformToken,
)
from embedadmin.core import credentials
from embedadmin.core.errors import BadRequest, NotFound
from embedadmin.core.versions import SharedVersion

if TYPE_CHECKING:
    from django.contrib.auth.models import User

API_KEY_KIND = "eak"
PLATFORM_TOKEN_KIND = "ept"

# The version of what hot paths remember of credentials and deployments (core/versions.py): API keys, tenant
# settings, deployments, their signing secrets and revoked tokens. Every service here that changes them bumps it.
CREDENTIALS = SharedVersion("credentials")


@transaction.atomic
def api_key_create(
    *,
    account: Account,
    name: str = "",
    personal_owner: User | None = None,
    deployment_ids: Iterable[int] = (),
) -> tuple[str, ApiKey]:
    """Mint an API key. Returns the plaintext (shown once) and the stored row."""
    deployment_ids = sorted(set(deployment_ids))
    deployments = list(Deployment.objects.filter(account=account, id__in=deployment_ids))
    missing = sorted(set(deployment_ids) - {d.id for d in deployments})
    if missing:
        raise NotFound(f"Deployments not found in account {account.name}: {', '.join(map(str, missing))}")
    if (
        personal_owner is not None
        and not AccountMembership.objects.filter(user=personal_owner, account=account).exists()
    ):
        raise BadRequest("A personal key's owner must be an internal user of the account")
    minted = credentials.mint(API_KEY_KIND)
    key = ApiKey.objects.create(
        account=account,
        name=name,
        kind=ApiKey.Kind.PERSONAL if personal_owner else ApiKey.Kind.ADMIN,
        owner=personal_owner,
        prefix=minted.prefix,
        key_digest=minted.digest,
    )
    if deployments:
        key.deployments.set(deployments)
    return minted.plaintext, key


def api_key_revoke(*, key: ApiKey) -> None:
    ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    CREDENTIALS.bump()


def platform_token_create(*, account: Account, name: str = "") -> tuple[str, PlatformToken]:
    minted = credentials.mint(PLATFORM_TOKEN_KIND)
    token = PlatformToken.objects.create(account=account, name=name, prefix=minted.prefix, token_digest=minted.digest)
    return minted.plaintext, token


def platform_token_revoke(*, token: PlatformToken) -> None:
    PlatformToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
