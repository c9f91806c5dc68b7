"""The audit log (issue 18): every audited change writes exactly one entry, in its own transaction, naming who,
what and from where and never a secret; a refused or failed change writes none and changes nothing; the log is
read per account with filters and cursor pages; sessions and chat messages are counted per day, not logged, beside
the user counts the hourly recount measures (one daily usage table, ADR 0016)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from embedadmin.audit import services as audit
from embedadmin.audit.models import AuditEntry, DailyUsage
from embedadmin.audit.services import Actor, Change
from tests.conftest import Cast, JsonClient
from tests.platform.support import (
    API_KEYS_URL,
    BUILD_DEPLOYMENTS_URL,
    GENERATE_URL,
    PLATFORM_TOKENS_URL,
    REVOKE_URL,
    SCIM_GROUPS_URL,
    SCIM_USER_SCHEMA,
    SCIM_USERS_URL,
    TENANT_SETTINGS_URL,
    USER_ATTRIBUTES_URL,
    USERS_URL,
    every_row,
    mint_ok,
    tenant_path,
)

AUDIT_URL = "/api/v1/audit-log"
USAGE_URL = "/api/v1/usage"
CLIENT = {"REMOTE_ADDR": "203.0.113.7", "HTTP_USER_AGENT": "terraform-provider/1.2"}


def entries(cast: Cast) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(account=cast.account).order_by("id"))


@dataclass
class Step:
    """One audited request, what its entry must say, and a refused twin that must write nothing."""

    name: str
    send: Callable[[JsonClient, Cast, dict[str, Any]], Any]  # (api, cast, state) -> response
    status: int
    action: str
    via: str = "platform_api"
    resource_id: Callable[[Any, dict[str, Any], Cast], str] | None = None  # (response, state, cast)
    refused: Callable[[JsonClient, Cast, dict[str, Any]], Any] | None = None
    refused_status: int = 400


def _json(response) -> Any:
    return response.json() if response.content else None


def _remember(state: dict[str, Any], key: str, value: Any) -> Any:
    state[key] = value
    return value


def _created(key: str):
    def keep(response, state, _cast):
        return str(_remember(state, key, _json(response))["id"])

    return keep


P = "platform_headers"
K = "api_key_headers"


def h(cast: Cast, kind: str = P) -> dict[str, str]:
    return {**getattr(cast, kind), **CLIENT}


STEPS = [
    Step(
        "tenant settings",
        lambda api, c, s: api.patch_json(TENANT_SETTINGS_URL, {"allowAi": False}, **h(c)),
        200,
        "tenant_settings.update",
        refused=lambda api, c, s: api.patch_json(TENANT_SETTINGS_URL, {"allowAi": "maybe"}, **h(c)),
    ),
    Step(
        "deployment create (Build API)",
        lambda api, c, s: api.post_json(BUILD_DEPLOYMENTS_URL, {"name": "Sales EU"}, **h(c)),
        201,
        "deployment.create",
        via="build_api",
        resource_id=_created("deployment"),
        refused=lambda api, c, s: api.post_json(BUILD_DEPLOYMENTS_URL, {"name": ""}, **h(c)),
    ),
    Step(
        "deployment update",
        lambda api, c, s: api.patch_json(f"/api/v1/deployments/{s['deployment']['id']}", {"name": "Sales"}, **h(c)),
        200,
        "deployment.update",
        resource_id=lambda r, s, c: str(s["deployment"]["id"]),
        refused=lambda api, c, s: api.patch_json(f"/api/v1/deployments/{s['deployment']['id']}", {"name": 7}, **h(c)),
    ),
    Step(
        "deployment token",
        lambda api, c, s: api.post_json(f"/api/v1/deployments/{c.deployment.pk}/token", {"expiresIn": 600}, **h(c)),
        200,
        "deployment_token.issue",
        resource_id=lambda r, s, c: _remember(s, "token", _json(r)) and str(c.deployment.pk),
        refused=lambda api, c, s: api.post_json(
            f"/api/v1/deployments/{c.deployment.pk}/token", {"expiresIn": 5}, **h(c)
        ),
    ),
    Step(
        "API key create",
        lambda api, c, s: api.post_json(API_KEYS_URL, {"name": "ci"}, **h(c)),
        201,
        "api_key.create",
        resource_id=_created("api_key"),
        refused=lambda api, c, s: api.post_json(API_KEYS_URL, {"name": "ci", "kind": "root"}, **h(c)),
    ),
    Step(
        "API key revoke",
        lambda api, c, s: api.delete(f"{API_KEYS_URL}/{s['api_key']['id']}", **h(c)),
        204,
        "api_key.revoke",
        resource_id=lambda r, s, c: str(s["api_key"]["id"]),
        refused=lambda api, c, s: api.delete(f"{API_KEYS_URL}/999999999", **h(c)),
        refused_status=404,
    ),
    Step(
        "platform token create",
        lambda api, c, s: api.post_json(PLATFORM_TOKENS_URL, {"name": "ops"}, **h(c)),
        201,
        "platform_token.create",
        resource_id=_created("platform_token"),
        refused=lambda api, c, s: api.post_json(PLATFORM_TOKENS_URL, {"name": ["ops"]}, **h(c)),
    ),
    Step(
        "user attribute create",
        lambda api, c, s: api.post_json(USER_ATTRIBUTES_URL, {"name": "region", "type": "string"}, **h(c)),
        201,
        "user_attribute.create",
        resource_id=_created("attribute"),
        refused=lambda api, c, s: api.post_json(USER_ATTRIBUTES_URL, {"name": "x", "type": "blob"}, **h(c)),
    ),
    Step(
        "user create",
        lambda api, c, s: api.post_json(USERS_URL, {"username": "ann@example.com"}, **h(c)),
        201,
        "user.create",
        resource_id=_created("user"),
        refused=lambda api, c, s: api.post_json(USERS_URL, {"username": ""}, **h(c)),
    ),
    Step(
        "user deactivate",
        lambda api, c, s: api.post_json(f"{USERS_URL}/{s['user']['id']}/deactivate", {}, **h(c)),
        200,
        "user.deactivate",
        resource_id=lambda r, s, c: str(s["user"]["id"]),
        refused=lambda api, c, s: api.post_json(f"{USERS_URL}/999999999/deactivate", {}, **h(c)),
        refused_status=404,
    ),
    Step(
        "SCIM user create",
        lambda api, c, s: api.post_json(
            SCIM_USERS_URL, {"schemas": [SCIM_USER_SCHEMA], "userName": "bob@example.com"}, **h(c)
        ),
        201,
        "scim_user.create",
        via="scim",
        resource_id=_created("scim_user"),
        refused=lambda api, c, s: api.post_json(
            SCIM_USERS_URL, {"schemas": [SCIM_USER_SCHEMA], "userName": "ANN@EXAMPLE.COM"}, **h(c)
        ),
        refused_status=409,
    ),
    Step(
        "SCIM user deactivate (PATCH)",
        lambda api, c, s: api.patch_json(
            f"{SCIM_USERS_URL}/{s['scim_user']['id']}",
            {
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "replace", "value": {"active": False}}],
            },
            **h(c),
        ),
        200,
        "scim_user.update",
        via="scim",
        resource_id=lambda r, s, c: str(s["scim_user"]["id"]),
        refused=lambda api, c, s: api.patch_json(
            f"{SCIM_USERS_URL}/{s['scim_user']['id']}",
            {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "explode"}]},
            **h(c),
        ),
    ),
    Step(
        "SCIM group create",
        lambda api, c, s: api.post_json(SCIM_GROUPS_URL, {"displayName": "analysts"}, **h(c)),
        201,
        "scim_group.create",
        via="scim",
        resource_id=_created("scim_group"),
        refused=lambda api, c, s: api.post_json(SCIM_GROUPS_URL, {"displayName": ""}, **h(c)),
    ),
    Step(
        "embed user provisioning",
        lambda api, c, s: api.post_json(tenant_path("north-eu", "user"), {"externalId": "u1"}, **h(c)),
        201,
        "embed_user.provision",
        resource_id=_created("embed_user"),
        refused=lambda api, c, s: api.post_json(tenant_path("north-eu", "user"), {"externalId": ""}, **h(c)),
    ),
    Step(
        "embed tenant group create with an admin API key",
        lambda api, c, s: api.post_json(tenant_path("north-eu", "groups"), {"name": "managers"}, **h(c, K)),
        201,
        "embed_tenant_group.create",
        resource_id=_created("group"),
        refused=lambda api, c, s: api.post_json(tenant_path("north-eu", "groups"), {"name": ""}, **h(c, K)),
    ),
    Step(
        "session revoke (embedding API)",
        lambda api, c, s: api.post_json(
            REVOKE_URL, {"sessionId": _remember(s, "session", mint_ok(api, c, externalId="viewer"))}, **h(c, K)
        ),
        204,
        "embed_session.revoke",
        via="embed_api",
        resource_id=lambda r, s, c: "",
        refused=lambda api, c, s: api.post_json(REVOKE_URL, {"sessionId": 7}, **h(c, K)),
    ),
    Step(
        "deployment delete",
        lambda api, c, s: api.delete(f"/api/v1/deployments/{s['deployment']['id']}", **h(c)),
        204,
        "deployment.delete",
        resource_id=lambda r, s, c: str(s["deployment"]["id"]),
        refused=lambda api, c, s: api.delete("/api/v1/deployments/999999999", **h(c)),
        refused_status=404,
    ),
]


@pytest.fixture
def walked(api, acme, globex) -> dict[str, Any]:
    """Every step of STEPS on acme, each checked as it goes (see test_each_change_writes_exactly_one_entry)."""
    state: dict[str, Any] = {"checked": []}
    mint_ok(api, acme, externalId="seed", embedTenantName="north-eu")  # the embed tenant the steps address
    for step in STEPS:
        if step.refused is not None:
            before, rows = entries(acme), every_row(audit_of=acme.account.pk)
            refused = step.refused(api, acme, state)
            assert refused.status_code == step.refused_status, (step.name, refused.content)
            assert entries(acme) == before, f"{step.name}: a refused request wrote an entry"
            assert every_row(audit_of=acme.account.pk) == rows, f"{step.name}: a refused request changed rows"
        before = entries(acme)
        response = step.send(api, acme, state)
        assert response.status_code == step.status, (step.name, response.content)
        new = entries(acme)[len(before) :]
        assert len(new) == 1, (step.name, [e.action for e in new])
        expected_id = step.resource_id(response, state, acme) if step.resource_id is not None else None
        state["checked"].append((step, expected_id, new[0]))
    return state


def test_each_change_writes_exactly_one_entry_and_a_refused_one_none(walked, acme):
    for step, expected_id, entry in walked["checked"]:
        assert (entry.action, entry.via) == (step.action, step.via), step.name
        assert entry.resource_type == step.action.split(".")[0]
        if expected_id is not None:
            assert entry.resource_id == expected_id, step.name
        assert (entry.ip, entry.user_agent) == ("203.0.113.7", "terraform-provider/1.2")
        assert 200 <= entry.details["status"] < 300
    patched = next(entry for step, _, entry in walked["checked"] if step.action == "scim_user.update")
    assert patched.details["operations"] == ["replace active"]


def test_entries_name_the_credential_and_never_a_secret(walked, acme):
    token = acme.created.platform_token
    key = acme.created.api_key
    by_token = AuditEntry.objects.filter(account=acme.account, actor_kind="platform_token")
    by_key = AuditEntry.objects.filter(account=acme.account, actor_kind="api_key")
    assert by_token.count() == len(STEPS) - 2
    assert by_key.count() == 2
    platform_token_row = acme.account.platform_tokens.order_by("id").first()
    assert {e.actor_id for e in by_token} == {str(platform_token_row.pk)}
    assert all(platform_token_row.prefix in e.actor_label for e in by_token)
    everything = json.dumps(list(AuditEntry.objects.values()), default=str)
    secrets = [
        token,
        key,
        walked["api_key"]["key"],
        walked["platform_token"]["token"],
        walked["token"]["cubeApiToken"],
        walked["session"],
    ]
    assert [secret for secret in secrets if secret in everything] == []


def test_the_log_is_read_newest_first_with_filters_and_cursor_pages(walked, api, acme, globex):
    everything = entries(acme)
    newest_first = [e.pk for e in reversed(everything)]

    seen, after = [], ""
    while True:
        page = api.get(f"{AUDIT_URL}?first=5&after={after}", **acme.platform_headers)
        assert page.status_code == 200, page.content
        body = page.json()
        seen += [item["id"] for item in body["items"]]
        if not body["pageInfo"]["hasNextPage"]:
            break
        after = body["pageInfo"]["endCursor"]
    assert seen == newest_first

    one = api.get(f"{AUDIT_URL}?action=api_key.revoke", **acme.platform_headers).json()["items"]
    assert [(i["action"], i["resource"]["id"]) for i in one] == [("api_key.revoke", str(walked["api_key"]["id"]))]
    assert one[0]["actor"]["kind"] == "platform_token"
    assert one[0]["ip"] == "203.0.113.7"
    scim = api.get(f"{AUDIT_URL}?via=scim", **acme.platform_headers).json()["items"]
    assert [i["action"] for i in scim] == ["scim_group.create", "scim_user.update", "scim_user.create"]
    by_type = api.get(f"{AUDIT_URL}?action=deployment", **acme.platform_headers).json()["items"]
    assert [i["action"] for i in by_type] == ["deployment.delete", "deployment.update", "deployment.create"]
    keys = api.get(f"{AUDIT_URL}?actorKind=api_key", **acme.platform_headers).json()["items"]
    assert [i["action"] for i in keys] == ["embed_session.revoke", "embed_tenant_group.create"]
    future = (timezone.now() + dt.timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert api.get(f"{AUDIT_URL}?from={future}", **acme.platform_headers).json()["items"] == []
    assert len(api.get(f"{AUDIT_URL}?to={future}&first=500", **acme.platform_headers).json()["items"]) == len(
        everything
    )

    # another account sees only its own (none), and cannot page into acme's with acme's cursor
    assert api.get(AUDIT_URL, **globex.platform_headers).json()["items"] == []
    cursor = api.get(f"{AUDIT_URL}?first=1", **acme.platform_headers).json()["pageInfo"]["endCursor"]
    assert api.get(f"{AUDIT_URL}?after={cursor}", **globex.platform_headers).json()["items"] == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("from=yesterday", "from: expected an ISO 8601 date-time or date"),
        ("to=2026-13-40", "to: expected an ISO 8601 date-time or date"),
        ("from=2026-01-02&to=2026-01-01", "from must be before to"),
        ("to=9999-12-31T23:59:59-23:59", "to: out of range"),
        ("from=0001-01-01T00:00:00%2B23:59", "from: out of range"),
        ("actorKind=robot", "actorKind: must be one of"),
        ("action=%00", "The URL must not contain NUL characters"),
        ("resourceId=" + "x" * 301, "resourceId: not a valid value"),
        ("first=0", "first must be an integer between 1 and 500"),
        ("after=%21%21", "after is not a valid cursor"),
    ],
)
def test_bad_log_queries_are_400(api, acme, query, message):
    response = api.get(f"{AUDIT_URL}?{query}", **acme.platform_headers)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_the_log_needs_a_platform_token(api, acme):
    assert api.get(AUDIT_URL).status_code == 401
    assert api.get(AUDIT_URL, **acme.api_key_headers).status_code == 401


def test_bulk_provisioning_records_each_provisioned_user_and_nothing_for_a_failure(api, acme):
    mint_ok(api, acme, externalId="seed", embedTenantName="shop-eu")
    users = [{"externalId": "a@example.com"}, {"externalId": "b@example.com", "groups": ["no-such-group"]}]

    response = api.post_json(tenant_path("shop-eu", "users"), {"users": users}, **acme.platform_headers)

    assert response.status_code == 200, response.content
    provisioned = response.json()["succeeded"]
    assert [u["externalId"] for u in provisioned] == ["a@example.com"]
    assert [(e.action, e.resource_id, e.details) for e in entries(acme)] == [
        ("embed_user.provision", str(provisioned[0]["id"]), {"bulk": True})
    ]
    failing = api.post_json(tenant_path("shop-eu", "users"), {"users": users[1:]}, **acme.platform_headers)
    assert failing.json()["succeeded"] == []
    assert len(entries(acme)) == 1


def test_a_body_field_name_no_json_column_can_store_does_not_fail_the_change(api, acme):
    created = api.post_json(API_KEYS_URL, {"name": "ci"}, **acme.platform_headers).json()

    response = api.generic(
        "DELETE",
        f"{API_KEYS_URL}/{created['id']}",
        data='{"\\u0000": 1, "note": 2}',
        content_type="application/json",
        **acme.platform_headers,
    )

    assert response.status_code == 204, response.content
    revoke = [e for e in entries(acme) if e.action == "api_key.revoke"]
    assert [e.details["fields"] for e in revoke] == [["note"]]


def test_reads_and_searches_write_no_entry(api, acme):
    api.get(USERS_URL, **acme.platform_headers)
    api.post_json(
        f"{SCIM_USERS_URL}/.search",
        {"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"]},
        **acme.platform_headers,
    )
    api.get(AUDIT_URL, **acme.platform_headers)
    assert entries(acme) == []


def test_sessions_and_chat_messages_are_counted_per_day_not_logged(api, acme, globex):
    for i in range(3):
        mint_ok(api, acme, externalId=f"viewer-{i}")
    mint_ok(api, globex, externalId="other")
    refused = api.post_json(GENERATE_URL, {"deploymentId": acme.deployment.pk}, **acme.api_key_headers)
    assert refused.status_code == 400

    assert entries(acme) == []
    today = timezone.now().date()
    response = api.get(USAGE_URL, **acme.platform_headers)
    assert response.status_code == 200
    items = response.json()["items"]
    assert len(items) == 30
    assert items[-1] == {
        "day": today.isoformat(),
        "sessions": 3,
        "chatMessages": 0,
        "externalUsers": None,  # no recount has measured them today
        "nonEphemeralChatUsers": None,
        "ephemeralChatUsers": None,
    }
    assert all(item["sessions"] == 0 for item in items[:-1])
    assert sum(DailyUsage.objects.filter(account=globex.account).values_list("count", flat=True)) == 1
    assert api.get(f"{USAGE_URL}?from=2026-01-01&to=2027-06-01", **acme.platform_headers).status_code == 400
    assert api.get(f"{USAGE_URL}?from=x", **acme.platform_headers).status_code == 400
    at_the_end = api.get(f"{USAGE_URL}?from=9999-12-30&to=9999-12-31", **acme.platform_headers)
    assert [item["day"] for item in at_the_end.json()["items"]] == ["9999-12-30", "9999-12-31"]
    at_the_start = api.get(f"{USAGE_URL}?to=0001-01-02", **acme.platform_headers)
    assert at_the_start.status_code == 200
    assert len(at_the_start.json()["items"]) == 2


def test_usage_answers_the_user_counts_the_recount_measured_and_never_another_accounts(api, acme, globex):
    from embedadmin.chat import tasks as chat_tasks
    from embedadmin.directory.models import ExternalUser

    # Given acme with two external users, globex with three, a count measured for acme two days ago,
    today = timezone.now().date()
    for name in ("ann", "bob"):
        ExternalUser.objects.create(account=acme.account, external_id=name)
    for name in ("x", "y", "z"):
        ExternalUser.objects.create(account=globex.account, external_id=name)
    audit.usage_snapshot(
        account_id=acme.account.pk,
        figures={"external_users": 1, "non_ephemeral_chat_users": 0, "ephemeral_chat_users": 4},
        day=today - dt.timedelta(days=2),
    )
    mint_ok(api, globex, externalId="w")

    # when the hourly recount runs (twice: the day's figure is set again, not added),
    chat_tasks.reconcile_user_counts()
    chat_tasks.reconcile_user_counts()
    items = api.get(f"{USAGE_URL}?from={today - dt.timedelta(days=2)}", **acme.platform_headers).json()["items"]

    # then acme's usage shows its own counts on the days they were measured, null on a day none was, nothing of globex.
    assert items == [
        {
            "day": (today - dt.timedelta(days=2)).isoformat(),
            "sessions": 0,
            "chatMessages": 0,
            "externalUsers": 1,
            "nonEphemeralChatUsers": 0,
            "ephemeralChatUsers": 4,
        },
        {
            "day": (today - dt.timedelta(days=1)).isoformat(),
            "sessions": 0,
            "chatMessages": 0,
            "externalUsers": None,
            "nonEphemeralChatUsers": None,
            "ephemeralChatUsers": None,
        },
        {
            "day": today.isoformat(),
            "sessions": 0,
            "chatMessages": 0,
            "externalUsers": 2,
            "nonEphemeralChatUsers": 0,
            "ephemeralChatUsers": 0,
        },
    ]
    theirs = api.get(USAGE_URL, **globex.platform_headers).json()["items"][-1]
    assert (theirs["sessions"], theirs["externalUsers"]) == (1, 4)


def test_a_measured_figure_is_set_in_one_row_and_a_counted_one_only_added(acme):
    today = timezone.now().date()
    figures = {"external_users": 5, "non_ephemeral_chat_users": 2, "ephemeral_chat_users": 7}

    audit.usage_snapshot(account_id=acme.account.pk, figures=figures)
    audit.usage_snapshot(account_id=acme.account.pk, figures={**figures, "external_users": 6})

    rows = DailyUsage.objects.filter(account=acme.account).values_list("day", "kind", "shard", "count")
    assert sorted(rows) == [
        (today, "ephemeral_chat_users", 0, 7),
        (today, "external_users", 0, 6),
        (today, "non_ephemeral_chat_users", 0, 2),
    ]
    with pytest.raises(ValueError, match="measured, not counted"):
        audit.usage_count(account_id=acme.account.pk, kind=DailyUsage.Kind.EXTERNAL_USERS)
    with pytest.raises(ValueError, match="counted, not measured"):
        audit.usage_snapshot(account_id=acme.account.pk, figures={"sessions": 3})
    # The database holds the rule too: a measured figure lives in shard 0 only, and a kind is one of the known ones.
    with pytest.raises(IntegrityError), transaction.atomic():
        DailyUsage.objects.create(account=acme.account, day=today, kind="external_users", shard=3, count=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        DailyUsage.objects.create(account=acme.account, day=today, kind="sessoins", shard=0, count=1)


@pytest.mark.django_db(transaction=True)
def test_an_entry_outside_a_transaction_is_refused(acme):
    actor = Actor("system", "", "test", "platform_api")
    with pytest.raises(RuntimeError, match="outside the transaction"):
        audit.entry_record(account_id=acme.account.pk, actor=actor, change=Change("x.y", "x"))
    with transaction.atomic():
        audit.entry_record(account_id=acme.account.pk, actor=actor, change=Change("x.y", "x"))
    assert [e.action for e in entries(acme)] == ["x.y"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_first_counts_of_a_day_lose_nothing(acme):
    from tests.conftest import run_concurrently

    def count() -> None:
        with transaction.atomic():
            audit.usage_count(account_id=acme.account.pk, kind=DailyUsage.Kind.SESSIONS)

    run_concurrently([count] * 24)

    rows = DailyUsage.objects.filter(account=acme.account)
    assert sum(rows.values_list("count", flat=True)) == 24
    assert rows.count() <= DailyUsage.SHARDS


def test_retention_drops_entries_older_than_the_setting(acme, settings):
    actor = Actor("system", "", "test", "platform_api")
    with transaction.atomic():
        for age_days in (400, 366, 10, 0):
            entry = audit.entry_record(account_id=acme.account.pk, actor=actor, change=Change(f"x.d{age_days}", "x"))
            AuditEntry.objects.filter(pk=entry.pk).update(occurred_at=timezone.now() - dt.timedelta(days=age_days))
    settings.EMBEDADMIN = {**settings.EMBEDADMIN, "AUDIT_RETENTION_DAYS": 365}

    from embedadmin.audit.tasks import entries_purge

    assert entries_purge() == 2
    assert [e.action for e in entries(acme)] == ["x.d10", "x.d0"]


def test_an_upsert_addressed_by_slug_names_its_resource_by_id(api, acme):
    url = f"/api/v1/deployments/{acme.deployment.pk}/workbooks/by-slug/sales-overview"

    response = api.put(url, data="{}", content_type="application/json", **acme.platform_headers)

    assert response.status_code in (200, 201), response.content
    assert [(e.action, e.resource_id) for e in entries(acme)] == [("workbook.upsert", str(response.json()["id"]))]
