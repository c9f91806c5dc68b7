"""State changes of accounts, deployments, internal users, credentials, tenant settings and quotas, one module per
concern.

Each function here is the one write path for its state change: commands, the Platform API and the admin panel all
call them, through this package (``from embedadmin.accounts import services``).
"""

from __future__ import annotations

from embedadmin.accounts.services.accounts import CreatedAccount, account_create
from embedadmin.accounts.services.credentials import (
    API_KEY_KIND,
    CREDENTIALS,
    PLATFORM_TOKEN_KIND,
    api_key_create,
    api_key_revoke,
    platform_token_create,
    platform_token_revoke,
)
from embedadmin.accounts.services.deployments import (
    DATA_SOURCE_SCHEMES,
    ENCRYPTED_PLACEHOLDER,
    ENV_VARIABLE_NAME_RE,
    MAX_ENV_VARIABLES,
    deployment_configure,
    deployment_create,
    deployment_delete,
    deployment_secret_rotate,
    deployment_secrets_revoke_older,
    deployment_update,
    duckdb_url,
    env_variables_set,
    issued_token_record,
    issued_tokens_purge,
)
from embedadmin.accounts.services.quotas import (
    EXTERNAL_USERS,
    NON_EPHEMERAL_CHAT_USERS,
    Quota,
    quota_recount,
    quota_release,
    quota_reserve,
)
from embedadmin.accounts.services.tenancy import TenantDataSources
from embedadmin.accounts.services.tenant_settings import (
    MAX_ALLOWED_ORIGINS,
    TENANT_SETTING_FIELDS,
    embed_theme_check,
    locale_check,
    origin_check,
    origins_check,
    tenant_settings_update,
    timezone_check,
)
from embedadmin.accounts.services.users import (
    InternalUserChanges,
    internal_user_change,
    internal_user_create,
    internal_user_credentials_revoke,
    internal_user_delete,
    internal_user_profile,
    user_name_key,
)

__all__ = [
    "API_KEY_KIND",
    "CREDENTIALS",
    "DATA_SOURCE_SCHEMES",
    "ENCRYPTED_PLACEHOLDER",
    "ENV_VARIABLE_NAME_RE",
    "EXTERNAL_USERS",
    "MAX_ALLOWED_ORIGINS",
    "MAX_ENV_VARIABLES",
    "NON_EPHEMERAL_CHAT_USERS",
    "PLATFORM_TOKEN_KIND",
    "TENANT_SETTING_FIELDS",
    "CreatedAccount",
    "InternalUserChanges",
    "Quota",
    "TenantDataSources",
    "account_create",
    "api_key_create",
    "api_key_revoke",
    "deployment_configure",
    "deployment_create",
    "deployment_delete",
    "deployment_secret_rotate",
    "deployment_secrets_revoke_older",
    "deployment_update",
    "duckdb_url",
    "embed_theme_check",
    "env_variables_set",
    "internal_user_change",
    "internal_user_create",
    "internal_user_credentials_revoke",
    "internal_user_delete",
    "internal_user_profile",
    "issued_token_record",
    "issued_tokens_purge",
    "locale_check",
    "origin_check",
    "origins_check",
    "platform_token_create",
    "platform_token_revoke",
    "quota_recount",
    "quota_release",
    "quota_reserve",
    "tenant_settings_update",
    "timezone_check",
    "user_name_key",
]
