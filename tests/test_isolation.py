"""Cross-account isolation, as a matrix with a fixed cast of callers.

Both accounts hold the same kinds of rows under the same names (an embed tenant ``shared-tenant`` each,
a group ``sales`` each, ...) plus rows only one of them has. Every endpoint that takes an id or a name
is called with acme's ids and names by every caller: only acme's own credential of the right kind
reaches them; another account's gets the answer a non-existent id would get (404; 204 for the
idempotent revoke; 400 for ``internalId``, which names a user like any other body field) and nothing
changes. Every list endpoint shows a caller exactly its own account's rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import TenantSettings
from embedadmin.directory.models import AttributeDefinition, EmbedTenant, Group
from embedadmin.embedding.models import EmbedSession
from tests.conftest import Cast
from tests.platform.support import (
    DEPLOYMENTS_URL,
    EMBED_TENANTS_URL,
    GENERATE_URL,
    REVOKE_URL,
    SCIM_ERROR_SCHEMA,
    SCIM_GROUPS_URL,
    TENANT_SETTINGS_URL,
    USER_ATTRIBUTES_URL,
    USERS_URL,
    db_rows,
    define_in_tenant,
    mint_ok,
    tenant_path,
)

SHARED_TENANT = "shared-tenant"
PERSONAL_KEY_REFUSED = "This endpoint requires an admin API key; personal API keys are not allowed"
NOT_AN_API_KEY = "Authorization header must be 'Api-Key <credential>'"
NOT_A_BEARER = "Authorization header must be 'Bearer <credential>'"


@dataclass
class World:
    """One account's rows that the endpoints address by id or name."""

    cast: Cast
    deployment_id: int
    private_tenant: str
    shared_group_id: int  # in SHARED_TENANT, no members
    private_group_id: int  # in the private tenant, no members
    shared_attribute_id: int  # in SHARED_TENANT, no values
    private_attribute_id: int  # in the private tenant, no values
    tenant_wide_attribute_id: int
    scim_group_id: int
    session_id: str
    internal_username: str
    personal_key: str


def _build(api, cast: Cast) -> World:
    name = cast.account.name
    deployment, _ = accounts.deployment_create(account=cast.account, name=f"{name} second", slug="second")
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
    attribute = api.post_json(USER_ATTRIBUTES_URL, {"name": "region", "type": "string"}, **cast.platform_headers)
    group = api.post_json(SCIM_GROUPS_URL, {"displayName": "sales"}, **cast.platform_headers)
    user = api.post_json(USERS_URL, {"username": f"{name}-ann"}, **cast.platform_headers)
    assert (attribute.status_code, group.status_code, user.status_code) == (201, 201, 201)
    mint_ok(api, cast, externalId="bob", groups=["sales"], userAttributes=[{"name": "region", "value": "eu"}])
    personal_key, _ = accounts.api_key_create(
        account=cast.account, personal_owner=cast.account.memberships.get(is_admin=True).user
    )

    def scoped(model, tenant: str, row_name: str) -> int:
        return model.objects.get(account=cast.account, embed_tenant__name=tenant, name=row_name).pk

    return World(
        cast=cast,
        deployment_id=deployment.pk,
        private_tenant=private_tenant,
        shared_group_id=scoped(Group, SHARED_TENANT, "spare"),
        private_group_id=scoped(Group, private_tenant, "spare"),
        shared_attribute_id=scoped(AttributeDefinition, SHARED_TENANT, "unused"),
        private_attribute_id=scoped(AttributeDefinition, private_tenant, "unused"),
        tenant_wide_attribute_id=attribute.json()["id"],
        scim_group_id=int(group.json()["id"]),
        session_id=mint_ok(api, cast, externalId="carol"),
        internal_username=f"{name}-ann",
        personal_key=personal_key,
    )


@pytest.fixture
def worlds(api, acme, globex) -> dict[str, World]:
    return {"acme": _build(api, acme), "globex": _build(api, globex)}


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
class Target:
    """An endpoint called with acme's id or name; ``foreign`` is what globex's credential gets."""

    label: str
    method: str
    path: str  # formatted with acme's World
    body: dict[str, Any] | None
    auth: str  # "key", "platform" or "either" (an admin key or a platform token: the embed-tenant routes)
    owner_status: int
    foreign_status: int
    foreign_error: str | None  # formatted with acme's World; None for an empty 204
    scim: bool = False


TARGETS = [
    Target(
        "generate-session deploymentId", "post", GENERATE_URL,
        {"deploymentId": "{w.deployment_id}", "externalId": "mallory"},
        "key", 200, 404, "Deployment {w.deployment_id} not found",
    ),
    Target(
        "generate-session internalId", "post", GENERATE_URL,
        {"deploymentId": "{own_deployment}", "internalId": "{w.internal_username}"},
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


def _is_owner(target: Target, caller: str) -> bool:
    return caller == ("acme platform token" if target.auth == "platform" else "acme admin key")


def _is_co_owner(target: Target, caller: str) -> bool:
    """The embed-tenant routes ("either") take acme's platform token as well as its admin key."""
    return target.auth == "either" and caller == "acme platform token"


def _error_body(target: Target, status: int, message: str) -> dict[str, Any]:
    if target.scim:
        return {"schemas": [SCIM_ERROR_SCHEMA], "status": str(status), "detail": message, "error": message}
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


def _call(api, target: Target, worlds: dict[str, World], caller: str):
    acme = worlds["acme"]
    caller_world = worlds[caller.split(" ")[0]]
    path = target.path.format(w=acme)
    headers = _headers(worlds, caller)
    if target.body is None:
        return getattr(api, target.method)(path, **headers)
    body = {k: v.format(w=acme, own_deployment=caller_world.cast.deployment.pk) for k, v in target.body.items()}
    if "deploymentId" in body:
        body["deploymentId"] = int(body["deploymentId"])
    send = api.post_json if target.method == "post" else api.patch_json
    return send(path, body, **headers)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.label)
def test_acmes_ids_and_names_reach_only_acmes_own_credential(api, worlds, target):
    # given
    strangers = [caller for caller in CALLERS if not _is_owner(target, caller) and not _is_co_owner(target, caller)]
    (owner,) = [caller for caller in CALLERS if _is_owner(target, caller)]
    before = db_rows()

    # when: every caller but the owner, then the owner (who proves the id or name is real)
    outcomes = {caller: _outcome(_call(api, target, worlds, caller)) for caller in strangers}
    after_strangers = db_rows()
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
    rows = Group.objects.filter(account=account, embed_tenant__isnull=True).order_by("id")
    return [str(pk) for pk in rows.values_list("id", flat=True)]


LISTS = {
    "embed-tenants": ("key", EMBED_TENANTS_URL + "?first=500"),
    "shared-tenant groups": ("key", tenant_path(SHARED_TENANT, "groups") + "?first=500"),
    "shared-tenant user-attributes": ("key", tenant_path(SHARED_TENANT, "user-attributes") + "?first=500"),
    "user-attributes": ("platform", USER_ATTRIBUTES_URL + "?first=500"),
    "users": ("platform", USERS_URL + "?first=500"),
    "deployments": ("platform", DEPLOYMENTS_URL + "?first=500"),
    "SCIM groups": ("platform", SCIM_GROUPS_URL + "?count=500"),
}


@pytest.mark.parametrize("account", ["acme", "globex"])
@pytest.mark.parametrize("endpoint", list(LISTS))
def test_a_list_shows_exactly_the_callers_own_rows(api, worlds, account, endpoint):
    # given
    auth, url = LISTS[endpoint]
    world = worlds[account]
    headers = world.cast.platform_headers if auth == "platform" else world.cast.api_key_headers

    # when
    response = api.get(url, **headers)

    # then
    body = response.json()
    listed = [item["id"] for item in body["Resources" if endpoint == "SCIM groups" else "items"]]
    assert response.status_code == 200
    assert listed == _own_ids(endpoint, world)
    assert listed  # both accounts have rows of every kind, so an empty list would prove nothing


@pytest.mark.parametrize("account", ["acme", "globex"])
def test_tenant_settings_are_the_callers_own(api, worlds, account):
    # given: the accounts' settings differ
    TenantSettings.objects.filter(account=worlds["acme"].cast.account).update(max_external_users=111)
    TenantSettings.objects.filter(account=worlds["globex"].cast.account).update(max_external_users=222)

    # when
    response = api.get(TENANT_SETTINGS_URL, **worlds[account].cast.platform_headers)

    # then
    assert response.json()["maxExternalUsers"] == {"acme": 111, "globex": 222}[account]
