"""Cross-account isolation, as a matrix with a fixed cast of callers.

Both accounts hold the same kinds of rows under the same names (an embed tenant ``shared-tenant`` each,
a group ``sales`` each, a deployment ``second``, a workbook ``sales`` and a report ``Revenue00001`` each, ...)
plus rows only one of them has. Every endpoint that takes an id or a name is called with acme's ids and names
by every caller: only acme's own credential of the right kind reaches them; another account's gets the answer
a non-existent id would get (404; 204 for the idempotent session revoke and embed-tenant delete; 400 for
``internalId`` and the other body fields that name a row, as for any missing one) and nothing changes. Every
list endpoint shows a caller exactly its own account's rows.

A route under a deployment is also called through the caller's *own* deployment with acme's row id (a
workbook, report or folder of acme's, addressed as if it were the caller's): that is a 404 of the row, never
acme's row. A body field naming acme's row (a folder, a workbook, a user, an embed user, an embed tenant) is
refused as one the caller's account does not have. "Nothing changes" covers every table of the product
(content and chat included, the audit log of acme's account) and the files of both accounts' model
directories.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import ApiKey, DeploymentEnvVariable, IssuedToken, PlatformToken, TenantSettings
from embedadmin.dashboards.models import Folder, Report, Workbook
from embedadmin.directory.models import AttributeDefinition, EmbedTenant, ExternalUser, Group
from embedadmin.embedding.models import EmbedSession
from tests.conftest import Cast
from tests.dashboards import support as content
from tests.dashboards.support import DEMO_MODEL, chart, create_report, draft_with, ok, publish, put_json, set_draft
from tests.platform.support import (
    API_KEYS_URL,
    BUILD_DEPLOYMENTS_URL,
    DEPLOYMENTS_URL,
    EMBED_DASHBOARD_URL,
    EMBED_TENANTS_URL,
    GENERATE_URL,
    PLATFORM_TOKENS_URL,
    REGIONS_URL,
    REVOKE_URL,
    SCIM_ERROR_SCHEMA,
    SCIM_GROUP_SCHEMA,
    SCIM_GROUPS_URL,
    SCIM_PATCH_SCHEMA,
    SCIM_SEARCH_SCHEMA,
    SCIM_USER_SCHEMA,
    SCIM_USERS_URL,
    TENANT_SETTINGS_URL,
    USER_ATTRIBUTE_VALUES_URL,
    USER_ATTRIBUTES_URL,
    USERS_URL,
    define_in_tenant,
    every_row,
    files_under,
    mint_ok,
    tenant_path,
)

fresh_models = content.fresh_models  # the fixture: each test starts and ends with no model loaded

SHARED_TENANT = "shared-tenant"
PERSONAL_KEY_REFUSED = "This endpoint requires an admin API key; personal API keys are not allowed"
NOT_AN_API_KEY = "Authorization header must be 'Api-Key <key>'"
NOT_A_BEARER = "Authorization header must be 'Bearer <token>'"


@dataclass
class World:
    """One account's rows that the endpoints address by id or name."""

    cast: Cast
    main_deployment_id: int  # the account's first deployment: sessions and content (workbooks, reports, ...)
    deployment_id: int  # a second one, created through the Build API: tokens, env variables, its model files
    model_dir: str  # the second deployment's model directory
    model_file: str  # its one model file, named after the account
    private_tenant: str
    shared_group_id: int  # in SHARED_TENANT, no members
    private_group_id: int  # in the private tenant, no members
    team_group_id: int  # in SHARED_TENANT, alice is its member
    shared_attribute_id: int  # in SHARED_TENANT, no values
    private_attribute_id: int  # in the private tenant, no values
    tenant_wide_attribute_id: int
    scim_group_id: int
    session_id: str
    internal_username: str
    user_id: int  # the internal user ``internal_username``, with a value of the tenant-wide attribute
    alice_id: int  # the embed user alice
    personal_key: str
    spare_key_id: int  # an admin API key no caller uses
    spare_token_id: int  # a platform token no caller uses
    folder_id: int  # an empty folder at the root of the main deployment
    report_id: int  # the report REPORT_PUBLIC_ID (the same publicId in both accounts)
    workbook_id: int  # the workbook WORKBOOK_SLUG (the same slug in both accounts), its dashboard published
    dashboard_public_id: str


REPORT_PUBLIC_ID = "Revenue00001"
WORKBOOK_SLUG = "sales"
TEXT_WIDGET = {"id": "intro", "type": "TEXT", "position": {"x": 0, "y": 0, "w": 2, "h": 2}, "config": {"text": "Hi"}}


def _model_yaml(cube: str) -> str:
    return f"cubes:\n  - name: {cube}\n    sql_table: {cube}\n    measures:\n      - name: count\n        type: count\n"


def _created(response, status: int = 201) -> dict[str, Any]:
    assert response.status_code == status, response.content
    return response.json()


def _build(api, cast: Cast, root: Path) -> World:
    name = cast.account.name
    platform = cast.platform_headers
    # The second deployment: through the Build API, with the same slug in both accounts (slugs are per account).
    deployment_id = _created(
        api.post_json(BUILD_DEPLOYMENTS_URL, {"name": f"{name} second", "slug": "second"}, **platform)
    )["id"]
    model_dir = root / name
    model_file = f"cubes/{name}_widgets.yml"
    (model_dir / "cubes").mkdir(parents=True)
    (model_dir / model_file).write_text(_model_yaml(f"{name}_widgets"))
    deployment = cast.account.deployments.get(pk=deployment_id)
    accounts.deployment_configure(deployment=deployment, model_dir=str(model_dir))
    accounts.deployment_configure(deployment=cast.deployment, model_dir=str(DEMO_MODEL))
    second = f"/api/v1/deployments/{deployment_id}"
    env_vars = [{"name": "DB_HOST", "value": f"{name}.db"}, {"name": "DB_PASSWORD", "value": f"{name}-secret"}]
    _created(put_json(api, f"{second}/env-vars", {"env_variables": env_vars}, **platform), 200)
    for kind in ("tokens", "tokens-for-meta-sync"):
        url = f"{second}/environments/production/{kind}"
        _created(api.post_json(url, {"security_context": {"sub": name}}, **platform))

    private_tenant = f"{name}-private"
    for tenant in (SHARED_TENANT, private_tenant):
        # "team" and "level" get a member and a value; "spare" and "unused" stay empty (deletable)
        define_in_tenant(
            api,
            cast,
            tenant,
            groups=["team", "spare"],
            attributes=[("level", "number"), ("unused", "string")],
            external_id="alice",
        )
        mint_ok(
            api,
            cast,
            externalId="alice",
            creatorMode=True,
            embedTenantName=tenant,
            groups=["team"],
            userAttributes=[{"name": "level", "value": 3}],
        )
    # dave's (latest) embed tenant is the shared one: the tenant's users list has someone to show
    _created(api.post_json(tenant_path(SHARED_TENANT, "user"), {"externalId": "dave"}, **cast.api_key_headers))
    attribute = _created(api.post_json(USER_ATTRIBUTES_URL, {"name": "region", "type": "string"}, **platform))
    group = _created(api.post_json(SCIM_GROUPS_URL, {"displayName": "sales"}, **platform))
    user = _created(api.post_json(USERS_URL, {"username": f"{name}-ann"}, **platform))
    value = {"userId": user["id"], "userAttributeId": attribute["id"], "value": name}
    _created(api.post_json(USER_ATTRIBUTE_VALUES_URL, value, **platform), 200)
    mint_ok(api, cast, externalId="bob", groups=["sales"], userAttributes=[{"name": "region", "value": "eu"}])
    personal_key, _ = accounts.api_key_create(
        account=cast.account, personal_owner=cast.account.memberships.get(is_admin=True).user
    )
    _, spare_key = accounts.api_key_create(account=cast.account, name="spare")
    _, spare_token = accounts.platform_token_create(account=cast.account, name="spare")

    main = f"/api/v1/deployments/{cast.deployment.pk}"
    folder = _created(api.post_json(f"{main}/folders", {"name": "Finance"}, **platform))
    report = create_report(api, cast, publicId=REPORT_PUBLIC_ID)
    workbook = ok(put_json(api, f"{main}/workbooks/by-slug/{WORKBOOK_SLUG}", {"name": "Sales"}, **platform))
    ok(set_draft(api, cast, workbook["id"], draft_with(chart("revenue", report["id"]))))
    dashboard = ok(publish(api, cast, workbook["id"]))

    def scoped(model, tenant: str, row_name: str) -> int:
        return model.objects.get(account=cast.account, embed_tenant__name=tenant, name=row_name).pk

    return World(
        cast=cast,
        main_deployment_id=cast.deployment.pk,
        deployment_id=deployment_id,
        model_dir=str(model_dir),
        model_file=model_file,
        private_tenant=private_tenant,
        shared_group_id=scoped(Group, SHARED_TENANT, "spare"),
        private_group_id=scoped(Group, private_tenant, "spare"),
        team_group_id=scoped(Group, SHARED_TENANT, "team"),
        shared_attribute_id=scoped(AttributeDefinition, SHARED_TENANT, "unused"),
        private_attribute_id=scoped(AttributeDefinition, private_tenant, "unused"),
        tenant_wide_attribute_id=attribute["id"],
        scim_group_id=int(group["id"]),
        session_id=mint_ok(api, cast, externalId="carol"),
        internal_username=f"{name}-ann",
        user_id=user["id"],
        alice_id=ExternalUser.objects.get(account=cast.account, external_id="alice").pk,
        personal_key=personal_key,
        spare_key_id=spare_key.pk,
        spare_token_id=spare_token.pk,
        folder_id=folder["id"],
        report_id=report["id"],
        workbook_id=workbook["id"],
        dashboard_public_id=dashboard["publicId"],
    )


@pytest.fixture
def worlds(api, acme, globex, tmp_path, fresh_models) -> dict[str, World]:
    return {"acme": _build(api, acme, tmp_path), "globex": _build(api, globex, tmp_path)}


CALLERS = ["acme admin key", "acme personal key", "acme platform token", "globex admin key", "globex platform token"]


def _headers(worlds: dict[str, World], caller: str) -> dict[str, str]:
    account, _, kind = caller.partition(" ")
    world = worlds[account]
    if kind == "admin key":
        return world.cast.api_key_headers
    if kind == "personal key":
        return {"HTTP_AUTHORIZATION": f"Api-Key {world.personal_key}"}
    return world.cast.platform_headers


@dataclass(frozen=True)
class Id:
    """An integer field of a body, formatted like a path: ``Id("{w.folder_id}")``."""

    template: str


@dataclass(frozen=True)
class Target:
    """An endpoint called with acme's id or name; ``foreign`` is what globex's credential gets.

    ``path`` and ``body`` are formatted with acme's World as ``w`` and the caller's own as ``own`` (so a route
    can be reached through the caller's own deployment, or a body can name acme's row from the caller's own)."""

    label: str
    method: str
    path: str
    body: dict[str, Any] | None
    auth: str  # "key", "platform" or "either" (an admin key or a platform token: the embed-tenant routes)
    owner_status: int
    foreign_status: int
    foreign_error: str | None  # formatted with acme's World; None for an empty 204
    scim: bool = False


TARGETS = [
    Target(
        "generate-session deploymentId", "post", GENERATE_URL,
        {"deploymentId": Id("{w.deployment_id}"), "externalId": "mallory"},
        "key", 200, 404, "Deployment {w.deployment_id} not found",
    ),
    Target(
        "generate-session internalId", "post", GENERATE_URL,
        {"deploymentId": Id("{own.main_deployment_id}"), "internalId": "{w.internal_username}"},
        "key", 200, 400, "internalId: no internal user '{w.internal_username}' in this account",
    ),
    Target(
        "session revoke", "post", REVOKE_URL, {"sessionId": "{w.session_id}"}, "key", 204, 204, None,
    ),
    Target(
        "embed-tenant groups of a private tenant", "get", tenant_path("{w.private_tenant}", "groups"), None,
        "either", 200, 404, "Embed tenant '{w.private_tenant}' not found",
    ),
    Target(
        "embed-tenant attributes of a private tenant", "get", tenant_path("{w.private_tenant}", "user-attributes"),
        None, "either", 200, 404, "Embed tenant '{w.private_tenant}' not found",
    ),
    Target(
        "embed-tenant group delete in a private tenant", "delete",
        tenant_path("{w.private_tenant}", "groups", "{w.private_group_id}"), None,
        "either", 204, 404, "Embed tenant '{w.private_tenant}' not found",
    ),
    Target(
        "embed-tenant attribute delete in a private tenant", "delete",
        tenant_path("{w.private_tenant}", "user-attributes", "{w.private_attribute_id}"), None,
        "either", 204, 404, "Embed tenant '{w.private_tenant}' not found",
    ),
    Target(
        "embed-tenant group delete through a same-named tenant", "delete",
        tenant_path(SHARED_TENANT, "groups", "{w.shared_group_id}"), None,
        "either", 204, 404, f"Group {{w.shared_group_id}} not found in embed tenant {SHARED_TENANT}",
    ),
    Target(
        "embed-tenant attribute delete through a same-named tenant", "delete",
        tenant_path(SHARED_TENANT, "user-attributes", "{w.shared_attribute_id}"), None,
        "either", 204, 404, f"User attribute {{w.shared_attribute_id}} not found in embed tenant {SHARED_TENANT}",
    ),
    Target(
        "user-attribute get", "get", USER_ATTRIBUTES_URL + "/{w.tenant_wide_attribute_id}", None,
        "platform", 200, 404, "User attribute {w.tenant_wide_attribute_id} not found",
    ),
    Target(
        "user-attribute patch", "patch", USER_ATTRIBUTES_URL + "/{w.tenant_wide_attribute_id}",
        {"description": "changed"}, "platform", 200, 404, "User attribute {w.tenant_wide_attribute_id} not found",
    ),
    Target(
        "user-attribute delete", "delete", USER_ATTRIBUTES_URL + "/{w.tenant_wide_attribute_id}", None,
        "platform", 400, 404, "User attribute {w.tenant_wide_attribute_id} not found",
    ),
    Target(
        "SCIM group get", "get", SCIM_GROUPS_URL + "/{w.scim_group_id}", None,
        "platform", 200, 404, "Group {w.scim_group_id} not found", scim=True,
    ),
    Target(
        "SCIM group delete", "delete", SCIM_GROUPS_URL + "/{w.scim_group_id}", None,
        "platform", 400, 404, "Group {w.scim_group_id} not found", scim=True,
    ),
]  # fmt: skip

# --- deployments, environments, env variables, keys and tokens, data model --------------------------------

DEPLOYMENT = "/api/v1/deployments/{w.deployment_id}"
BUILD_DEPLOYMENT = BUILD_DEPLOYMENTS_URL + "/{w.deployment_id}"
NO_DEPLOYMENT = "Deployment {w.deployment_id} not found"
SECURITY_CONTEXT = {"security_context": {"sub": "mallory"}}
UPLOAD = {"files": [{"path": "cubes/uploaded.yml", "content": _model_yaml("uploaded")}]}

TARGETS += [
    Target("deployment get", "get", DEPLOYMENT, None, "platform", 200, 404, NO_DEPLOYMENT),
    Target("deployment patch", "patch", DEPLOYMENT, {"name": "renamed"}, "platform", 200, 404, NO_DEPLOYMENT),
    Target("deployment put", "put", DEPLOYMENT, {"slug": "renamed"}, "platform", 200, 404, NO_DEPLOYMENT),
    Target("deployment delete", "delete", DEPLOYMENT, None, "platform", 204, 404, NO_DEPLOYMENT),
    Target(
        "deployment token", "post", DEPLOYMENT + "/token", {"expiresIn": 60}, "platform", 200, 404, NO_DEPLOYMENT,
    ),
    Target("environments", "get", DEPLOYMENT + "/environments", None, "platform", 200, 404, NO_DEPLOYMENT),
    Target(
        "environment tokens list", "get", DEPLOYMENT + "/environments/production/tokens", None,
        "platform", 200, 404, NO_DEPLOYMENT,
    ),
    Target(
        "environment token issue", "post", DEPLOYMENT + "/environments/production/tokens", SECURITY_CONTEXT,
        "platform", 201, 404, NO_DEPLOYMENT,
    ),
    Target(
        "meta-sync tokens list", "get", DEPLOYMENT + "/environments/production/tokens-for-meta-sync", None,
        "platform", 200, 404, NO_DEPLOYMENT,
    ),
    Target(
        "meta-sync token issue", "post", DEPLOYMENT + "/environments/production/tokens-for-meta-sync",
        SECURITY_CONTEXT, "platform", 201, 404, NO_DEPLOYMENT,
    ),
    Target("env-vars get", "get", DEPLOYMENT + "/env-vars", None, "platform", 200, 404, NO_DEPLOYMENT),
    Target(
        "env-vars put", "put", DEPLOYMENT + "/env-vars", {"env_variables": [{"name": "DB_HOST", "value": "evil"}]},
        "platform", 200, 404, NO_DEPLOYMENT,
    ),
    Target(
        "env-vars patch", "patch", DEPLOYMENT + "/env-vars",
        {"env_variables": [{"name": "DB_PASSWORD", "value": "evil"}]}, "platform", 200, 404, NO_DEPLOYMENT,
    ),
    # The 501 of an unpublished resource under a deployment: another account's deployment is a 404 first.
    Target("dbt-sync", "get", DEPLOYMENT + "/dbt-sync", None, "platform", 501, 404, NO_DEPLOYMENT),
    Target("github connect", "post", BUILD_DEPLOYMENT + "/github/connect", None, "platform", 501, 404, NO_DEPLOYMENT),
    Target("model files list", "get", BUILD_DEPLOYMENT + "/files", None, "platform", 200, 404, NO_DEPLOYMENT),
    Target(
        "model file read", "get", BUILD_DEPLOYMENT + "/files/{w.model_file}", None,
        "platform", 200, 404, NO_DEPLOYMENT,
    ),
    Target("data model upload", "post", BUILD_DEPLOYMENT + "/data-model", UPLOAD, "platform", 200, 404, NO_DEPLOYMENT),
    Target(
        "api-key get", "get", API_KEYS_URL + "/{w.spare_key_id}", None,
        "platform", 200, 404, "API key {w.spare_key_id} not found",
    ),
    Target(
        "api-key revoke", "delete", API_KEYS_URL + "/{w.spare_key_id}", None,
        "platform", 204, 404, "API key {w.spare_key_id} not found",
    ),
    Target(
        "api-key create scoped to a deployment", "post", API_KEYS_URL,
        {"name": "scoped", "deploymentIds": [Id("{w.deployment_id}")]}, "platform", 201, 404, NO_DEPLOYMENT,
    ),
    Target(
        "api-key create personal for a user", "post", API_KEYS_URL,
        {"kind": "personal", "ownerId": Id("{w.user_id}")}, "platform", 201, 404, "User {w.user_id} not found",
    ),
    Target(
        "platform-token get", "get", PLATFORM_TOKENS_URL + "/{w.spare_token_id}", None,
        "platform", 200, 404, "Platform token {w.spare_token_id} not found",
    ),
    Target(
        "platform-token revoke", "delete", PLATFORM_TOKENS_URL + "/{w.spare_token_id}", None,
        "platform", 204, 404, "Platform token {w.spare_token_id} not found",
    ),
]  # fmt: skip

# --- internal users, their attribute values, SCIM ---------------------------------------------------------

USER = USERS_URL + "/{w.user_id}"
SCIM_USER = SCIM_USERS_URL + "/{w.user_id}"
NO_USER = "User {w.user_id} not found"
DEACTIVATE = {"schemas": [SCIM_PATCH_SCHEMA], "Operations": [{"op": "replace", "value": {"active": False}}]}

TARGETS += [
    Target("user get", "get", USER, None, "platform", 200, 404, NO_USER),
    Target("user patch", "patch", USER, {"email": "mallory@example.com"}, "platform", 200, 404, NO_USER),
    Target("user put", "put", USER, {"role": "admin"}, "platform", 200, 404, NO_USER),
    Target("user deactivate", "post", USER + "/deactivate", None, "platform", 200, 404, NO_USER),
    Target("user delete", "delete", USER, None, "platform", 204, 404, NO_USER),
    Target(
        "user-attribute value of acme's user", "post", USER_ATTRIBUTE_VALUES_URL,
        {"userId": "{w.user_id}", "userAttributeId": "{w.tenant_wide_attribute_id}", "value": "mallory"},
        "platform", 200, 404, NO_USER,
    ),
    Target(
        "user-attribute value of acme's attribute", "post", USER_ATTRIBUTE_VALUES_URL,
        {"userId": Id("{own.user_id}"), "userAttributeId": Id("{w.tenant_wide_attribute_id}"), "value": "mallory"},
        "platform", 200, 404, "User attribute {w.tenant_wide_attribute_id} not found",
    ),
    Target(
        "user-attribute values of a user", "get", USER_ATTRIBUTE_VALUES_URL + "/{w.user_id}", None,
        "platform", 200, 404, NO_USER,
    ),
    Target("SCIM user get", "get", SCIM_USER, None, "platform", 200, 404, NO_USER, scim=True),
    Target(
        "SCIM user put", "put", SCIM_USER, {"schemas": [SCIM_USER_SCHEMA], "userName": "mallory", "active": False},
        "platform", 200, 404, NO_USER, scim=True,
    ),
    Target("SCIM user patch", "patch", SCIM_USER, DEACTIVATE, "platform", 200, 404, NO_USER, scim=True),
    Target("SCIM user delete", "delete", SCIM_USER, None, "platform", 204, 404, NO_USER, scim=True),
    Target(
        "SCIM group put", "put", SCIM_GROUPS_URL + "/{w.scim_group_id}",
        {"schemas": [SCIM_GROUP_SCHEMA], "displayName": "renamed"},
        "platform", 200, 404, "Group {w.scim_group_id} not found", scim=True,
    ),
    Target(
        "SCIM group patch", "patch", SCIM_GROUPS_URL + "/{w.scim_group_id}",
        {"schemas": [SCIM_PATCH_SCHEMA], "Operations": [{"op": "replace", "value": {"displayName": "renamed"}}]},
        "platform", 200, 404, "Group {w.scim_group_id} not found", scim=True,
    ),
    Target(
        "SCIM group member of acme's user", "patch", SCIM_GROUPS_URL + "/{own.scim_group_id}",
        {
            "schemas": [SCIM_PATCH_SCHEMA],
            "Operations": [{"op": "add", "path": "members", "value": [{"value": "{w.user_id}"}]}],
        },
        "platform", 200, 400, "members: no user {w.user_id} in this account", scim=True,
    ),
]  # fmt: skip

# --- embed tenants: groups, members, provisioning ---------------------------------------------------------

PRIVATE_GROUP = tenant_path("{w.private_tenant}", "groups", "{w.private_group_id}")
SHARED_GROUP = tenant_path(SHARED_TENANT, "groups", "{w.shared_group_id}")
NO_PRIVATE_TENANT = "Embed tenant '{w.private_tenant}' not found"
NO_SHARED_GROUP = f"Group {{w.shared_group_id}} not found in embed tenant {SHARED_TENANT}"
ALICE = {"members": [{"externalId": "alice"}]}

TARGETS += [
    Target("embed-tenant delete of a private tenant", "delete", tenant_path("{w.private_tenant}"), None,
           "either", 204, 204, None),
    Target("embed-tenant group get in a private tenant", "get", PRIVATE_GROUP, None,
           "either", 200, 404, NO_PRIVATE_TENANT),
    Target("embed-tenant group patch in a private tenant", "patch", PRIVATE_GROUP, {"description": "changed"},
           "either", 200, 404, NO_PRIVATE_TENANT),
    Target("embed-tenant group members in a private tenant", "get", PRIVATE_GROUP + "/users", None,
           "either", 200, 404, NO_PRIVATE_TENANT),
    Target("embed-tenant member add in a private tenant", "post", PRIVATE_GROUP + "/users", ALICE,
           "either", 200, 404, NO_PRIVATE_TENANT),
    Target("embed-tenant provision into a private tenant", "post", tenant_path("{w.private_tenant}", "user"),
           {"externalId": "mallory"}, "either", 201, 404, NO_PRIVATE_TENANT),
    Target("embed-tenant users of a private tenant", "get", tenant_path("{w.private_tenant}", "users"), None,
           "either", 200, 404, NO_PRIVATE_TENANT),
    Target("embed-tenant bulk provision into a private tenant", "post", tenant_path("{w.private_tenant}", "users"),
           {"users": [{"externalId": "mallory"}]}, "either", 200, 404, NO_PRIVATE_TENANT),
    Target("embed-tenant group get through a same-named tenant", "get", SHARED_GROUP, None,
           "either", 200, 404, NO_SHARED_GROUP),
    Target("embed-tenant group patch through a same-named tenant", "patch", SHARED_GROUP,
           {"description": "changed"}, "either", 200, 404, NO_SHARED_GROUP),
    Target("embed-tenant group members through a same-named tenant", "get", SHARED_GROUP + "/users", None,
           "either", 200, 404, NO_SHARED_GROUP),
    Target("embed-tenant member add through a same-named tenant", "post", SHARED_GROUP + "/users", ALICE,
           "either", 200, 404, NO_SHARED_GROUP),
    Target("embed-tenant member remove through a same-named tenant", "delete", SHARED_GROUP + "/users", ALICE,
           "either", 200, 404, NO_SHARED_GROUP),
    Target("embed-tenant member add of acme's embed user", "post",
           tenant_path(SHARED_TENANT, "groups", "{own.shared_group_id}", "users"),
           {"members": [{"embedUserId": Id("{w.alice_id}")}]},
           "either", 200, 400, "Embed users not found: {w.alice_id}"),
]  # fmt: skip

# --- content: folders, workbooks, dashboards, reports ------------------------------------------------------

CONTENT = "/api/v1/deployments/{w.main_deployment_id}"
OWN_CONTENT = "/api/v1/deployments/{own.main_deployment_id}"
NO_CONTENT_DEPLOYMENT = "Deployment {w.main_deployment_id} not found"
NO_FOLDER = "Folder {w.folder_id} not found"
NO_WORKBOOK = "Workbook {w.workbook_id} not found"
NO_REPORT = "Report {w.report_id} not found"
NO_DASHBOARD = "Dashboard {w.dashboard_public_id} not found"
DRAFT = {"dashboardDraft": draft_with(TEXT_WIDGET)}
SHARE = {"allEmbedUsers": True, "action": "read"}


def _content_targets(label: str, base: str, missing: str, *, workbook_missing: str, report_missing: str) -> list:
    """The content routes under ``base`` (acme's deployment, or the caller's own): ``missing`` is what a
    stranger gets on a folder, ``workbook_missing`` and ``report_missing`` on a workbook and a report."""
    folder, workbook, report = (
        base + "/folders/{w.folder_id}",
        base + "/workbooks/{w.workbook_id}",
        base + "/reports/{w.report_id}",
    )
    return [
        Target(f"folder get {label}", "get", folder, None, "platform", 200, 404, missing),
        Target(f"folder put {label}", "put", folder, {"name": "renamed"}, "platform", 200, 404, missing),
        Target(f"folder delete {label}", "delete", folder, None, "platform", 204, 404, missing),
        Target(f"folder ancestors {label}", "get", folder + "/ancestors", None, "platform", 200, 404, missing),
        Target(f"workbook get {label}", "get", workbook, None, "platform", 200, 404, workbook_missing),
        Target(f"workbook put {label}", "put", workbook, {"name": "renamed"}, "platform", 200, 404,
               workbook_missing),
        Target(f"workbook delete {label}", "delete", workbook, None, "platform", 204, 404, workbook_missing),
        Target(f"workbook dashboard draft {label}", "put", workbook + "/dashboard", DRAFT, "platform", 200, 404,
               workbook_missing),
        Target(f"workbook publish {label}", "post", workbook + "/publish", {}, "platform", 200, 404,
               workbook_missing),
        Target(f"workbook embed-access get {label}", "get", workbook + "/embed-access", None, "platform", 200, 404,
               workbook_missing),
        Target(f"workbook embed-access put {label}", "put", workbook + "/embed-access", SHARE, "platform", 200, 404,
               workbook_missing),
        Target(f"report get {label}", "get", report, None, "platform", 200, 404, report_missing),
        Target(f"report put {label}", "put", report, {"title": "renamed"}, "platform", 200, 404, report_missing),
        Target(f"report delete {label}", "delete", report, None, "platform", 204, 404, report_missing),
    ]  # fmt: skip


TARGETS += _content_targets(
    "in acme's deployment",
    CONTENT,
    NO_CONTENT_DEPLOYMENT,
    workbook_missing=NO_CONTENT_DEPLOYMENT,
    report_missing=NO_CONTENT_DEPLOYMENT,
)
TARGETS += _content_targets(
    "through the caller's own deployment",
    OWN_CONTENT,
    NO_FOLDER,
    workbook_missing=NO_WORKBOOK,
    report_missing=NO_REPORT,
)
TARGETS += [
    Target("folders list", "get", CONTENT + "/folders", None, "platform", 200, 404, NO_CONTENT_DEPLOYMENT),
    Target("folder create", "post", CONTENT + "/folders", {"name": "mallory"}, "platform", 201, 404,
           NO_CONTENT_DEPLOYMENT),
    Target("workbooks list", "get", CONTENT + "/workbooks", None, "platform", 200, 404, NO_CONTENT_DEPLOYMENT),
    Target("workbook create", "post", CONTENT + "/workbooks", {"name": "mallory"}, "platform", 201, 404,
           NO_CONTENT_DEPLOYMENT),
    Target("workbook upsert by slug", "put", CONTENT + f"/workbooks/by-slug/{WORKBOOK_SLUG}", {"name": "mallory"},
           "platform", 200, 404, NO_CONTENT_DEPLOYMENT),
    Target("reports list", "get", CONTENT + "/reports", None, "platform", 200, 404, NO_CONTENT_DEPLOYMENT),
    Target("report create", "post", CONTENT + "/reports", {"name": "mallory"}, "platform", 201, 404,
           NO_CONTENT_DEPLOYMENT),
    Target("report upsert by publicId", "put", CONTENT + f"/reports/by-public-id/{REPORT_PUBLIC_ID}",
           {"name": "mallory"}, "platform", 200, 404, NO_CONTENT_DEPLOYMENT),
    Target("embed dashboard get", "get", EMBED_DASHBOARD_URL + "/{w.dashboard_public_id}", None,
           "platform", 200, 404, NO_DASHBOARD),
    Target("embed dashboard patch", "patch", EMBED_DASHBOARD_URL + "/{w.dashboard_public_id}",
           {"allowEmbed": False}, "platform", 200, 404, NO_DASHBOARD),
    # A body naming acme's row from the caller's own deployment and workbook.
    Target("folder create under acme's folder", "post", OWN_CONTENT + "/folders",
           {"name": "child", "parentId": Id("{w.folder_id}")},
           "platform", 201, 400, "parentId: folder {w.folder_id} not found in this deployment"),
    Target("workbook moved into acme's folder", "put", OWN_CONTENT + "/workbooks/{own.workbook_id}",
           {"folderId": Id("{w.folder_id}")},
           "platform", 200, 400, "folderId: folder {w.folder_id} not found in this deployment"),
    Target("report create in acme's workbook", "post", OWN_CONTENT + "/reports",
           {"name": "child", "workbookId": Id("{w.workbook_id}")},
           "platform", 201, 400, "workbookId: workbook {w.workbook_id} not found in this deployment"),
    Target("report create in acme's folder", "post", OWN_CONTENT + "/reports",
           {"name": "child", "folderId": Id("{w.folder_id}")},
           "platform", 201, 400, "folderId: folder {w.folder_id} not found in this deployment"),
    Target("embed access for acme's private tenant", "put", OWN_CONTENT + "/workbooks/{own.workbook_id}/embed-access",
           {"embedTenantName": "{w.private_tenant}", "action": "read"},
           "platform", 200, 404, NO_PRIVATE_TENANT),
]  # fmt: skip


def _is_owner(target: Target, caller: str) -> bool:
    return caller == ("acme platform token" if target.auth == "platform" else "acme admin key")


def _is_co_owner(target: Target, caller: str) -> bool:
    """The embed-tenant routes ("either") take acme's platform token as well as its admin key."""
    return target.auth == "either" and caller == "acme platform token"


def _error_body(target: Target, status: int, message: str) -> dict[str, Any]:
    if target.scim:
        body = {"schemas": [SCIM_ERROR_SCHEMA], "status": str(status), "detail": message}
        return {**body, "scimType": "invalidValue"} if status == 400 else body
    return {"error": message}


def _expected(target: Target, caller: str, acme: World) -> tuple[int, dict[str, Any] | None]:
    """(status, body) a caller other than the owner gets on ``target``; None stands for no body."""
    if target.auth == "platform" and not caller.endswith("platform token"):
        return 401, _error_body(target, 401, NOT_A_BEARER)
    if target.auth == "key" and caller.endswith("platform token"):
        return 401, _error_body(target, 401, NOT_AN_API_KEY)
    if caller == "acme personal key":
        return 403, _error_body(target, 403, PERSONAL_KEY_REFUSED)
    if target.foreign_error is None:
        return target.foreign_status, None
    return target.foreign_status, _error_body(target, target.foreign_status, target.foreign_error.format(w=acme))


def _outcome(response) -> tuple[int, dict[str, Any] | None]:
    return response.status_code, (response.json() if response.content else None)


def _filled(value: Any, **names: World) -> Any:
    if isinstance(value, Id):
        return int(value.template.format(**names))
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, dict):
        return {key: _filled(item, **names) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled(item, **names) for item in value]
    return value


def _call(api, target: Target, worlds: dict[str, World], caller: str):
    names = {"w": worlds["acme"], "own": worlds[caller.split(" ")[0]]}
    path = _filled(target.path, **names)
    headers = _headers(worlds, caller)
    # No body at all (as ``curl -X POST`` sends) when the target has none; a JSON one otherwise.
    body = "" if target.body is None else json.dumps(_filled(target.body, **names))
    return api.generic(target.method.upper(), path, body, content_type="application/json", **headers)


def _state(worlds: dict[str, World]) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Every row of the product (acme's audit log among them) and every file of both accounts' models."""
    acme = worlds["acme"]
    return every_row(audit_of=acme.cast.account.pk), files_under(*(w.model_dir for w in worlds.values()))


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.label)
def test_acmes_ids_and_names_reach_only_acmes_own_credential(api, worlds, target):
    # given
    strangers = [caller for caller in CALLERS if not _is_owner(target, caller) and not _is_co_owner(target, caller)]
    (owner,) = [caller for caller in CALLERS if _is_owner(target, caller)]
    before = _state(worlds)

    # when: every caller but the owner, then the owner (who proves the id or name is real)
    outcomes = {caller: _outcome(_call(api, target, worlds, caller)) for caller in strangers}
    after_strangers = _state(worlds)
    owner_status = _call(api, target, worlds, owner).status_code

    # then
    assert outcomes == {caller: _expected(target, caller, worlds["acme"]) for caller in strangers}
    assert after_strangers == before
    assert owner_status == target.owner_status


def test_a_foreign_revoke_leaves_the_session_exchangeable(api, worlds):
    # given
    acme, globex = worlds["acme"], worlds["globex"]

    # when
    revoke = api.post_json(REVOKE_URL, {"sessionId": acme.session_id}, **globex.cast.api_key_headers)
    exchange = api.post_json("/api/v1/embed/session/token", {"sessionId": acme.session_id})

    # then
    assert (revoke.status_code, exchange.status_code) == (204, 200)


def test_the_owners_revoke_does_revoke(api, worlds):
    # given
    acme = worlds["acme"]

    # when
    api.post_json(REVOKE_URL, {"sessionId": acme.session_id}, **acme.cast.api_key_headers)
    exchange = api.post_json("/api/v1/embed/session/token", {"sessionId": acme.session_id})

    # then
    assert exchange.status_code == 401
    assert EmbedSession.objects.get(account=acme.cast.account, external_user__external_id="carol").revoked_at


# --- lists ------------------------------------------------------------------------------------------


def _own_ids(endpoint: str, world: World) -> list[Any]:
    """The ids a list endpoint must show ``world``'s account: its own rows and nothing else."""
    account = world.cast.account
    if endpoint == "embed-tenants":
        return list(EmbedTenant.objects.filter(account=account).order_by("name").values_list("id", flat=True))
    if endpoint.startswith("shared-tenant "):
        model = Group if endpoint.endswith("groups") else AttributeDefinition
        rows = model.objects.filter(account=account, embed_tenant__name=SHARED_TENANT)
        return list(rows.order_by("-id" if model is Group else "name").values_list("id", flat=True))
    if endpoint == "user-attributes":
        rows = AttributeDefinition.objects.filter(account=account, embed_tenant__isnull=True)
        return list(rows.order_by("name").values_list("id", flat=True))
    if endpoint == "users":
        return list(account.memberships.order_by("user_id").values_list("user_id", flat=True))
    if endpoint == "deployments":
        return list(account.deployments.order_by("id").values_list("id", flat=True))
    if endpoint.startswith("SCIM users"):
        return [str(pk) for pk in account.memberships.order_by("user_id").values_list("user_id", flat=True)]
    if endpoint in ("api-keys", "platform-tokens"):
        model = ApiKey if endpoint == "api-keys" else PlatformToken
        return list(model.objects.filter(account=account).order_by("id").values_list("id", flat=True))
    if endpoint in ("embed users of shared-tenant", "members of shared-tenant's team"):
        users = ExternalUser.objects.filter(account=account)
        if endpoint.startswith("members"):
            users = users.filter(memberships__group_id=world.team_group_id)
        else:
            users = users.filter(embed_tenant__name=SHARED_TENANT)
        return list(users.order_by("external_id", "id").values_list("id", flat=True))
    if endpoint in ("workbooks", "reports", "root folders"):
        model = {"workbooks": Workbook, "reports": Report, "root folders": Folder}[endpoint]
        rows = model.objects.filter(deployment_id=world.main_deployment_id)
        if model is Folder:
            rows = rows.filter(parent__isnull=True)
        return list(rows.order_by("id").values_list("id", flat=True))
    if endpoint == "env-vars":
        rows = DeploymentEnvVariable.objects.filter(deployment_id=world.deployment_id)
        return list(rows.order_by("name").values_list("name", flat=True))
    if endpoint.endswith(" tokens"):
        kind = IssuedToken.Kind.ENVIRONMENT if endpoint == "environment tokens" else IssuedToken.Kind.META_SYNC
        rows = IssuedToken.objects.filter(deployment_id=world.deployment_id, kind=kind)
        return list(rows.order_by("-id").values_list("jti", flat=True))
    if endpoint == "model files":
        return [world.model_file]
    if endpoint == "user-attribute values":
        rows = AttributeDefinition.objects.filter(account=account, internal_values__user_id=world.user_id)
        return list(rows.order_by("name").values_list("id", flat=True))
    if endpoint == "regions":  # not an account's: the install's one region, the same for every account
        return [getattr(settings, "PLATFORM_REGION", "local")]
    rows = Group.objects.filter(account=account, embed_tenant__isnull=True).order_by("id")
    return [str(pk) for pk in rows.values_list("id", flat=True)]


@dataclass(frozen=True)
class Listing:
    auth: str  # "key" or "platform"
    url: str  # formatted with the caller's World
    key: str = "id"  # the field of an item that _own_ids gives
    items: str | None = "items"  # where the items are; None: the answer is the list
    search: dict[str, Any] | None = None  # a POST body (SCIM .search) instead of a GET


LISTS = {
    "embed-tenants": Listing("key", EMBED_TENANTS_URL + "?first=500"),
    "shared-tenant groups": Listing("key", tenant_path(SHARED_TENANT, "groups") + "?first=500"),
    "shared-tenant user-attributes": Listing("key", tenant_path(SHARED_TENANT, "user-attributes") + "?first=500"),
    "user-attributes": Listing("platform", USER_ATTRIBUTES_URL + "?first=500"),
    "users": Listing("platform", USERS_URL + "?first=500"),
    "deployments": Listing("platform", DEPLOYMENTS_URL + "?first=500"),
    "SCIM groups": Listing("platform", SCIM_GROUPS_URL + "?count=500", items="Resources"),
    "SCIM users": Listing("platform", SCIM_USERS_URL + "?count=500", items="Resources"),
    "SCIM users .search": Listing(
        "platform", SCIM_USERS_URL + "/.search", items="Resources", search={"schemas": [SCIM_SEARCH_SCHEMA]}
    ),
    "api-keys": Listing("platform", API_KEYS_URL + "?first=500"),
    "platform-tokens": Listing("platform", PLATFORM_TOKENS_URL + "?first=500"),
    "embed users of shared-tenant": Listing("platform", tenant_path(SHARED_TENANT, "users") + "?first=500"),
    "members of shared-tenant's team": Listing(
        "key", tenant_path(SHARED_TENANT, "groups", "{w.team_group_id}", "users") + "?first=500"
    ),
    "workbooks": Listing("platform", "/api/v1/deployments/{w.main_deployment_id}/workbooks?first=500"),
    "reports": Listing("platform", "/api/v1/deployments/{w.main_deployment_id}/reports?first=500"),
    "root folders": Listing("platform", "/api/v1/deployments/{w.main_deployment_id}/folders?first=500"),
    "env-vars": Listing("platform", "/api/v1/deployments/{w.deployment_id}/env-vars?first=500", key="name"),
    "environment tokens": Listing(
        "platform", "/api/v1/deployments/{w.deployment_id}/environments/production/tokens?first=500", key="jti"
    ),
    "meta-sync tokens": Listing(
        "platform",
        "/api/v1/deployments/{w.deployment_id}/environments/production/tokens-for-meta-sync?first=500",
        key="jti",
    ),
    "model files": Listing("platform", BUILD_DEPLOYMENTS_URL + "/{w.deployment_id}/files?first=500", key="path"),
    "user-attribute values": Listing(
        "platform", USER_ATTRIBUTE_VALUES_URL + "/{w.user_id}", key="userAttributeId", items=None
    ),
    "regions": Listing("platform", REGIONS_URL),
}


@pytest.mark.parametrize("account", ["acme", "globex"])
@pytest.mark.parametrize("endpoint", list(LISTS))
def test_a_list_shows_exactly_the_callers_own_rows(api, worlds, account, endpoint):
    # given
    listing = LISTS[endpoint]
    world = worlds[account]
    headers = world.cast.platform_headers if listing.auth == "platform" else world.cast.api_key_headers
    url = listing.url.format(w=world)

    # when
    response = api.post_json(url, listing.search, **headers) if listing.search else api.get(url, **headers)

    # then
    body = response.json()
    listed = [item[listing.key] for item in (body if listing.items is None else body[listing.items])]
    assert response.status_code == 200
    assert listed == _own_ids(endpoint, world)
    assert listed  # both accounts have rows of every kind, so an empty list would prove nothing


def test_a_deployment_created_through_the_build_api_is_listed_for_its_account_only(api, worlds):
    # given: both accounts' second deployments were created through the Build API with the slug "second"
    acme, globex = worlds["acme"], worlds["globex"]

    # when
    created = api.post_json(BUILD_DEPLOYMENTS_URL, {"name": "third", "slug": "third"}, **globex.cast.platform_headers)
    listed = {
        name: [item["id"] for item in api.get(DEPLOYMENTS_URL, **w.cast.platform_headers).json()["items"]]
        for name, w in worlds.items()
    }

    # then
    assert created.status_code == 201
    third = created.json()["id"]
    assert listed == {
        "acme": [acme.main_deployment_id, acme.deployment_id],
        "globex": [globex.main_deployment_id, globex.deployment_id, third],
    }


def test_an_upsert_by_a_slug_or_publicid_acme_also_uses_changes_only_the_callers_row(api, worlds):
    # given: both accounts hold a workbook WORKBOOK_SLUG and a report REPORT_PUBLIC_ID
    acme, globex = worlds["acme"], worlds["globex"]
    acmes = (
        list(Workbook.objects.filter(account=acme.cast.account).order_by("pk").values()),
        list(Report.objects.filter(account=acme.cast.account).order_by("pk").values()),
    )
    own = f"/api/v1/deployments/{globex.main_deployment_id}"
    headers = globex.cast.platform_headers

    # when
    workbook = put_json(api, f"{own}/workbooks/by-slug/{WORKBOOK_SLUG}", {"name": "globex's"}, **headers)
    report = put_json(api, f"{own}/reports/by-public-id/{REPORT_PUBLIC_ID}", {"name": "globex's"}, **headers)

    # then
    assert (workbook.status_code, report.status_code) == (200, 200)
    assert (workbook.json()["id"], report.json()["id"]) == (globex.workbook_id, globex.report_id)
    assert [Workbook.objects.get(pk=globex.workbook_id).name, Report.objects.get(pk=globex.report_id).name] == [
        "globex's",
        "globex's",
    ]
    assert (
        list(Workbook.objects.filter(account=acme.cast.account).order_by("pk").values()),
        list(Report.objects.filter(account=acme.cast.account).order_by("pk").values()),
    ) == acmes


@pytest.mark.parametrize("account", ["acme", "globex"])
def test_tenant_settings_are_the_callers_own(api, worlds, account):
    # given: the accounts' settings differ
    TenantSettings.objects.filter(account=worlds["acme"].cast.account).update(max_external_users=111)
    TenantSettings.objects.filter(account=worlds["globex"].cast.account).update(max_external_users=222)

    # when
    response = api.get(TENANT_SETTINGS_URL, **worlds[account].cast.platform_headers)

    # then
    assert response.json()["maxExternalUsers"] == {"acme": 111, "globex": 222}[account]
