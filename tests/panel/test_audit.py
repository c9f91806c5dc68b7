"""Panel changes in the audit log: Django's add, change and delete pages and the panel's own actions each record one
entry per changed object in the change's transaction, by the signed-in user, never with a secret; a refused change
records none. The audit log page shows an administrator their own account's entries only."""

from __future__ import annotations

import json
import re
from datetime import timedelta

from django.test import Client

from embedadmin.audit.models import AuditEntry
from embedadmin.directory import services as directory
from embedadmin.directory.models import Group
from tests.conftest import Cast
from tests.panel.conftest import AccountRows, admin_url, shown_secrets


def actions(cast: Cast) -> list[tuple[str, str]]:
    rows = AuditEntry.objects.filter(account=cast.account).order_by("id")
    return [(e.action, e.resource_id) for e in rows]


def test_adding_a_platform_token_records_one_entry_without_its_secret(acme_admin: Client, acme: Cast):
    response = acme_admin.post(
        admin_url("platformtoken", "add"), {"name": "terraform"}, REMOTE_ADDR="198.51.100.4", HTTP_USER_AGENT="Firefox"
    )

    plaintext = shown_secrets(response)["Platform token"]
    entry = AuditEntry.objects.get(account=acme.account)
    token = acme.account.platform_tokens.get(name="terraform")
    assert (entry.action, entry.resource_id, entry.via) == ("platform_token.create", str(token.pk), "panel")
    assert (entry.actor_kind, entry.actor_label) == ("user", acme.created.admin_username)
    assert (entry.ip, entry.user_agent) == ("198.51.100.4", "Firefox")
    assert plaintext not in json.dumps(list(AuditEntry.objects.values()), default=str)


def test_a_change_names_the_changed_fields(acme_admin: Client, acme_rows: AccountRows):
    attribute = acme_rows.attribute
    url = admin_url("attributedefinition", "change", attribute)
    form = acme_admin.get(url).context["adminform"].form
    data = {name: value for name, value in form.initial.items() if value is not None}
    data["description"] = "Where the viewer works"

    response = acme_admin.post(url, data)

    assert response.status_code == 302, response.content
    entry = AuditEntry.objects.get(account=acme_rows.cast.account)
    assert (entry.action, entry.resource_id) == ("attribute_definition.update", str(attribute.pk))
    assert entry.details == {"fields": ["Description"]}


def test_a_refused_add_and_a_refused_delete_record_nothing(acme_admin: Client, acme_rows: AccountRows):
    acme_admin.post(admin_url("group", "add"), {"name": "system:all"})
    acme_admin.post(admin_url("group", "delete", acme_rows.group), {"post": "yes"})  # it has a member

    assert Group.objects.filter(pk=acme_rows.group.pk).exists()
    assert actions(acme_rows.cast) == []


def test_bulk_delete_records_each_deletion_or_none(acme_admin: Client, acme_rows: AccountRows):
    account = acme_rows.cast.account
    empty = [directory.group_create(account=account, embed_tenant=None, name=f"aaa-{i}") for i in range(2)]

    def delete(selected: list[int]) -> None:
        acme_admin.post(admin_url("group"), {"action": "delete_selected", "_selected_action": selected, "post": "yes"})

    delete([empty[0].pk, acme_rows.group.pk])  # the second is refused: all or nothing
    assert actions(acme_rows.cast) == []

    delete([g.pk for g in empty])
    assert sorted(actions(acme_rows.cast)) == [("group.delete", str(g.pk)) for g in empty]
    assert not Group.objects.filter(pk__in=[g.pk for g in empty]).exists()


def test_the_revoke_action_records_each_revocation(acme_admin: Client, acme: Cast):
    key = acme.account.api_keys.get()

    acme_admin.post(admin_url("apikey"), {"action": "revoke_selected", "_selected_action": [key.pk]})

    assert actions(acme) == [("api_key.revoke", str(key.pk))]


def test_the_log_page_shows_the_administrators_account_only(acme_admin: Client, acme: Cast, globex: Cast, login, api):
    api.patch_json("/api/v1/tenant/settings", {"allowAi": False}, **acme.platform_headers)
    api.post_json("/api/v1/platform-tokens", {"name": "globex-secret-ops"}, **globex.platform_headers)

    page = acme_admin.get(admin_url("auditentry"))

    assert page.status_code == 200
    assert b"tenant_settings.update" in page.content
    assert b"platform_token.create" not in page.content
    theirs = AuditEntry.objects.get(account=globex.account)
    assert acme_admin.get(admin_url("auditentry", "change", theirs)).status_code == 302  # not found: redirected
    assert acme_admin.post(admin_url("auditentry", "delete", theirs), {"post": "yes"}).status_code in (302, 403)
    assert AuditEntry.objects.filter(pk=theirs.pk).exists()


def test_the_delete_page_records_one_entry(acme_admin: Client, acme_rows: AccountRows):
    empty = directory.group_create(account=acme_rows.cast.account, embed_tenant=None, name="aaa-empty")

    response = acme_admin.post(admin_url("group", "delete", empty), {"post": "yes"})

    assert response.status_code == 302
    assert actions(acme_rows.cast) == [("group.delete", str(empty.pk))]


def test_an_objects_history_is_its_audit_entries_from_every_door(acme_admin: Client, acme_rows: AccountRows, api):
    attribute = acme_rows.attribute
    cast = acme_rows.cast
    api.patch_json(f"/api/v1/user-attributes/{attribute.pk}", {"description": "API"}, **cast.platform_headers)
    url = admin_url("attributedefinition", "change", attribute)
    form = acme_admin.get(url).context["adminform"].form
    data = {name: value for name, value in form.initial.items() if value is not None}
    acme_admin.post(url, {**data, "description": "panel"})
    other = directory.group_create(account=cast.account, embed_tenant=None, name="unrelated")
    acme_admin.post(admin_url("group", "delete", other), {"post": "yes"})

    history = acme_admin.get(admin_url("attributedefinition", "history", attribute))

    assert history.status_code == 302
    page = acme_admin.get(history["Location"])
    shown = [(e.action, e.resource_id) for e in page.context["cl"].result_list]
    assert shown == [("attribute_definition.update", str(attribute.pk)), ("user_attribute.update", str(attribute.pk))]


def usage_table(page) -> tuple[list[str], list[list[str]]]:
    """The usage page's table: its column titles and its rows' cells, as shown."""
    table = page.content.decode().split('id="result_list"')[1].split("</table>")[0]
    head, body = table.split("<tbody>")
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]
    return re.findall(r"<th[^>]*>([^<]*)</th>", head), cells


def test_the_usage_page_shows_every_figure_per_day_of_the_administrators_account_only(
    acme_admin: Client, acme: Cast, globex: Cast
):
    from django.utils import timezone

    from embedadmin.audit import services as audit
    from embedadmin.audit.models import DailyUsage

    # Given acme's sessions over two counter shards, its chat messages, its user counts measured today only,
    today = timezone.now().date()
    yesterday = today - timedelta(days=1)
    for shard, count in ((0, 2), (3, 1_205)):
        DailyUsage.objects.create(account=acme.account, day=today, kind="sessions", shard=shard, count=count)
    DailyUsage.objects.create(account=acme.account, day=today, kind="chat_messages", shard=1, count=4)
    DailyUsage.objects.create(account=acme.account, day=yesterday, kind="chat_messages", shard=5, count=3)
    audit.usage_snapshot(
        account_id=acme.account.pk,
        figures={"external_users": 10_000, "non_ephemeral_chat_users": 12, "ephemeral_chat_users": 0},
    )
    # and globex's figures, which acme's administrator must never see,
    DailyUsage.objects.create(account=globex.account, day=today, kind="sessions", shard=0, count=987_654)
    audit.usage_snapshot(
        account_id=globex.account.pk,
        figures={"external_users": 876_543, "non_ephemeral_chat_users": 765_432, "ephemeral_chat_users": 654_321},
    )

    # when acme's administrator opens the one usage page,
    page = acme_admin.get(admin_url("dailyusage"))

    # then it shows a column per figure, its days newest first, digits grouped, a dash for a count not measured,
    assert page.status_code == 200
    headers, rows = usage_table(page)
    assert headers == [
        "Day",
        "Sessions minted",
        "Chat messages",
        "External users",
        "Non-ephemeral chat users",
        "Ephemeral chat users",
    ]
    assert rows == [
        [today.isoformat(), "1,207", "4", "10,000", "12", "0"],
        [yesterday.isoformat(), "0", "3", "\N{EM DASH}", "\N{EM DASH}", "\N{EM DASH}"],
    ]
    # and nothing of globex's.
    html = page.content.decode()
    for theirs in ("987", "876", "765", "654", "globex"):
        assert theirs not in html


def test_the_superuser_sees_each_accounts_usage_by_name(superuser: Client, acme: Cast, globex: Cast):
    from django.utils import timezone

    from embedadmin.audit import services as audit

    for cast, users in ((acme, 3), (globex, 5)):
        audit.usage_snapshot(
            account_id=cast.account.pk,
            figures={"external_users": users, "non_ephemeral_chat_users": 0, "ephemeral_chat_users": 0},
        )

    headers, rows = usage_table(superuser.get(admin_url("dailyusage")))

    today = timezone.now().date().isoformat()
    assert headers[:3] == ["Day", "Account", "Sessions minted"]
    assert sorted(rows) == [[today, "acme", "0", "0", "3", "0", "0"], [today, "globex", "0", "0", "5", "0", "0"]]
