"""Helpers of the Platform API, embed-tenant admin, isolation and API-error tests.

Plain functions (no fixtures), imported by ``tests/platform``, ``tests/accounts`` and the
cross-cutting ``tests/test_isolation.py`` and ``tests/test_api_errors.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.http import HttpResponse

from tests.conftest import Cast, JsonClient

GENERATE_URL = "/api/v1/embed/generate-session"
REVOKE_URL = "/api/v1/embed/session/revoke"
TENANT_SETTINGS_URL = "/api/v1/tenant/settings"
USER_ATTRIBUTES_URL = "/api/v1/user-attributes"
USERS_URL = "/api/v1/users"
DEPLOYMENTS_URL = "/api/v1/deployments/"
EMBED_TENANTS_URL = "/api/v1/embed-tenants"
SCIM_GROUPS_URL = "/api/scim/v2/Groups"
SCIM_ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"

BAD_FIRST = "first must be an integer between 1 and 500"
BAD_CURSOR = "after is not a valid cursor"
# Queries every cursor-paginated list refuses with 400, and the message; an endpoint adds the
# cursors that are wrong for its own ordering key.
BAD_PAGE_QUERIES = [
    ("first=0", BAD_FIRST),
    ("first=-1", BAD_FIRST),
    ("first=501", BAD_FIRST),
    ("first=x", BAD_FIRST),
    ("first=1.5", BAD_FIRST),
    ("after=garbage", BAD_CURSOR),
    ("after=%25%25%25", BAD_CURSOR),
    ("after=e30", BAD_CURSOR),  # {}
    ("after=W3RydWVd", BAD_CURSOR),  # [true]
    ("after=" + "W" * 3000, BAD_CURSOR),
]

# The apps whose rows an API call may change; their auto-created many-to-many tables included.
_APP_LABELS = ("accounts", "directory", "embedding")


def db_rows() -> dict[str, list[dict[str, Any]]]:
    """Every row the product stores, by table, in primary-key order: equal before and after a call
    means the call changed nothing at all (not only nothing of the account it was aimed at)."""
    models = [get_user_model()]
    for label in _APP_LABELS:
        models.extend(apps.get_app_config(label).get_models(include_auto_created=True))
    return {model._meta.db_table: list(model.objects.order_by("pk").values()) for model in models}


def tenant_path(name: str, *rest: object) -> str:
    """``/api/v1/embed-tenants/{name}/...``"""
    return "/".join([EMBED_TENANTS_URL, name, *(str(part) for part in rest)])


def mint(api: JsonClient, cast: Cast, *, headers: dict[str, str] | None = None, **fields: Any) -> HttpResponse:
    """POST generate-session for ``cast`` (its admin key and deployment unless given)."""
    body = {"deploymentId": cast.deployment.pk, **fields}
    return api.post_json(GENERATE_URL, body, **(cast.api_key_headers if headers is None else headers))


def mint_ok(api: JsonClient, cast: Cast, **fields: Any) -> str:
    """A sessionId of a generate-session call that must succeed."""
    response = mint(api, cast, **fields)
    assert response.status_code == 200, response.content
    return response.json()["sessionId"]


def define_in_tenant(
    api: JsonClient,
    cast: Cast,
    tenant: str,
    *,
    groups: Iterable[str] = (),
    attributes: Iterable[tuple[str, str]] = (),
    external_id: str = "definer",
    **fields: Any,
) -> str:
    """Define groups and ``(name, type)`` attributes in an embed tenant through a creator-mode
    session (the only way they are created); extra ``fields`` go into the same request."""
    return mint_ok(
        api,
        cast,
        externalId=external_id,
        creatorMode=True,
        embedTenantName=tenant,
        groupDefinitions=[{"name": name} for name in groups],
        userAttributeDefinitions=[{"name": name, "type": type_} for name, type_ in attributes],
        **fields,
    )


def walk_pages(api: JsonClient, url: str, *, first: int, headers: dict[str, str]) -> list[list[dict[str, Any]]]:
    """Follow ``pageInfo.endCursor`` from the first page to the last; the items of each page."""
    pages: list[list[dict[str, Any]]] = []
    after = None
    separator = "&" if "?" in url else "?"
    while True:
        query = f"first={first}" + (f"&after={after}" if after else "")
        response = api.get(f"{url}{separator}{query}", **headers)
        assert response.status_code == 200, response.content
        body = response.json()
        assert set(body) == {"items", "pageInfo"}
        pages.append(body["items"])
        if not body["pageInfo"]["hasNextPage"]:
            assert len(pages[-1]) <= first
            return pages
        assert len(body["items"]) == first
        after = body["pageInfo"]["endCursor"]


def names(items: Sequence[dict[str, Any]]) -> list[str]:
    return [item["name"] for item in items]


# --- the isolation matrix's wider view (tests/test_isolation.py) ------------------------------------------

BUILD_DEPLOYMENTS_URL = "/build/api/v1/deployments"
API_KEYS_URL = "/api/v1/api-keys"
PLATFORM_TOKENS_URL = "/api/v1/platform-tokens"
REGIONS_URL = "/api/v1/regions"
USER_ATTRIBUTE_VALUES_URL = "/api/v1/user-attribute-values"
EMBED_DASHBOARD_URL = "/api/v1/embed/dashboard"
SCIM_USERS_URL = "/api/scim/v2/Users"
SCIM_USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
SCIM_GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
SCIM_PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
SCIM_SEARCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"


def every_row(*, audit_of: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """:func:`db_rows` widened to every app of the product (workbooks, reports, folders, dashboards, chat, ...),
    by table, in primary-key order.

    The audit log (when the app is installed) counts only with the rows of the account ``audit_of``: a caller's
    own audited request is entered in its own account's log even when the answer is the one a non-existent id
    gets (an idempotent 204), so another account's log is no sign of a change it made elsewhere."""
    models = [get_user_model()]
    for config in apps.get_app_configs():
        if config.name.startswith("embedadmin.") and config.label != "audit":
            models.extend(config.get_models(include_auto_created=True))
    rows = {model._meta.db_table: list(model.objects.order_by("pk").values()) for model in models}
    if apps.is_installed("embedadmin.audit"):
        for model in apps.get_app_config("audit").get_models():
            if any(field.name == "account" for field in model._meta.fields):
                mine = model.objects.filter(account_id=audit_of).order_by("pk")
                rows[model._meta.db_table] = list(mine.values())
    return rows


def files_under(*roots: str) -> dict[str, bytes]:
    """Every file under the directories ``roots`` with its content: equal before and after a call means no file
    there was written, added or removed."""
    from pathlib import Path

    found = (path for root in roots for path in sorted(Path(root).rglob("*")))
    return {path.as_posix(): path.read_bytes() for path in found if path.is_file()}
