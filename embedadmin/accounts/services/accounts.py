"""Creating an account with everything it starts with (settings, a deployment, an admin, credentials)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.db import transaction

from embedadmin.accounts.models import (
    Account,
    Deployment,
    TenantSettings,
)
from embedadmin.accounts.services.credentials import api_key_create, platform_token_create
from embedadmin.accounts.services.deployments import deployment_create
from embedadmin.accounts.services.users import internal_user_create
from embedadmin.accounts.services.validation import full_clean_or_400
from embedadmin.core.errors import Conflict
from embedadmin.core.rows import create_unique


@dataclass(frozen=True)
class CreatedAccount:
    """Everything an operator needs after creating an account; secrets appear here only once."""

    account: Account
    deployment: Deployment
    api_key: str
    deployment_api_secret: str
    platform_token: str
    admin_username: str
    admin_password: str


@transaction.atomic
def account_create(*, name: str, creator_mode: bool = False) -> CreatedAccount:
    """Create an account with its settings, a first deployment, an admin user and credentials."""
    account = Account(name=name)
    full_clean_or_400(account)
    create_unique(account, conflict=Conflict(f"Account {name!r} already exists"))
    TenantSettings.objects.create(account=account, use_creator_mode=creator_mode)
    deployment, secret = deployment_create(account=account, name=f"{name} default", slug="default")
    admin_username = f"{name}-admin"
    admin_password = secrets.token_urlsafe(18)
    internal_user_create(account=account, username=admin_username, email="", password=admin_password, is_admin=True)
    api_key, _ = api_key_create(account=account, name="initial admin key")
    platform_token, _ = platform_token_create(account=account, name="initial platform token")
    return CreatedAccount(
        account=account,
        deployment=deployment,
        api_key=api_key,
        deployment_api_secret=secret,
        platform_token=platform_token,
        admin_username=admin_username,
        admin_password=admin_password,
    )
