"""Plain helpers of the embedding tests: endpoint paths, row counts, token decoding.

Fixtures live in ``conftest.py``; what is here is imported by the test modules (and by threads in the
race tests, which cannot use fixtures).
"""

from __future__ import annotations

from typing import Any

import jwt

from embedadmin.accounts.models import Account, TenantSettings
from embedadmin.directory.models import (
    AttributeDefinition,
    AttributeValue,
    EmbedTenant,
    ExternalUser,
    Group,
    GroupMembership,
)
from embedadmin.embedding.models import EmbedSession

GENERATE_URL = "/api/v1/embed/generate-session"
TOKEN_URL = "/api/v1/embed/session/token"
REVOKE_URL = "/api/v1/embed/session/revoke"
CONTEXT_URL = "/api/v1/embed/session/context"
TENANT_SETTINGS_URL = "/api/v1/tenant/settings"
USER_ATTRIBUTES_URL = "/api/v1/user-attributes"
SCIM_GROUPS_URL = "/api/scim/v2/Groups"


def directory_counts(account: Account) -> dict[str, int]:
    """Everything generate-session may write for ``account``, as counts: equal before and after a
    failed request means the request wrote nothing."""
    return {
        "embed_tenants": EmbedTenant.objects.filter(account=account).count(),
        "external_users": ExternalUser.objects.filter(account=account).count(),
        "sessions": EmbedSession.objects.filter(account=account).count(),
        "groups": Group.objects.filter(account=account).count(),
        "memberships": GroupMembership.objects.filter(group__account=account).count(),
        "attribute_definitions": AttributeDefinition.objects.filter(account=account).count(),
        "attribute_values": AttributeValue.objects.filter(user__account=account).count(),
        "external_user_counter": TenantSettings.objects.get(account=account).external_user_count,
    }


def decode_embed_token(token: str, *, secret: str) -> dict[str, Any]:
    """Verify an embed token as a Core Data API client would: HS256 with the deployment API secret."""
    return jwt.decode(token, secret, algorithms=["HS256"])


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}
