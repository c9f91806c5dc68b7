"""The one usage page in real headless Chromium: an account administrator finds it from the panel's home and reads
their account's figures per day, counted and measured, with readable titles and grouped digits; another account's
figures are never on it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.utils import timezone

from embedadmin.audit import services as audit
from embedadmin.audit.models import DailyUsage
from embedadmin.chat import tasks as chat_tasks
from tests.panel.conftest import AccountRows
from tests.panel.test_browser import log_in

pytestmark = pytest.mark.browser


def test_an_account_admin_reads_their_daily_usage_in_one_table(
    page, live_server, acme_rows: AccountRows, globex_rows: AccountRows, tmp_path: Path
):
    acme, globex = acme_rows.cast, globex_rows.cast
    # Given acme's counted figures of three days (a session minted today by make_rows), the recount run today,
    today = timezone.now().date()
    for days_ago, sessions, messages in ((1, 14_382, 2_071), (2, 9_655, 1_480)):
        day = today - dt.timedelta(days=days_ago)
        DailyUsage.objects.create(account=acme.account, day=day, kind="sessions", shard=2, count=sessions)
        DailyUsage.objects.create(account=acme.account, day=day, kind="chat_messages", shard=6, count=messages)
    audit.usage_snapshot(
        account_id=acme.account.pk,
        figures={"external_users": 8_412, "non_ephemeral_chat_users": 310, "ephemeral_chat_users": 1_296},
        day=today - dt.timedelta(days=1),
    )
    chat_tasks.reconcile_user_counts()
    audit.usage_count(account_id=globex.account.pk, kind="sessions", amount=777_777)  # into whichever shard it picks

    # when acme's administrator opens "Daily usage" from the panel's home,
    log_in(page, live_server.url, acme.created.admin_username, acme.created.admin_password)
    page.click("text=Daily usage")
    page.wait_for_url(f"{live_server.url}/admin/audit/dailyusage/")

    # then one table shows every figure per day under titles in words, digits grouped, a dash where none was measured,
    table = page.locator("table#result_list")
    titles = [t.strip() for t in table.locator("thead th").all_inner_texts()]
    assert [t.lower() for t in titles] == [
        "day",
        "sessions minted",
        "chat messages",
        "external users",
        "non-ephemeral chat users",
        "ephemeral chat users",
    ]
    rows = [[c.strip() for c in row.locator("td").all_inner_texts()] for row in table.locator("tbody tr").all()]
    assert rows == [
        [today.isoformat(), "1", "0", "1", "0", "0"],
        [(today - dt.timedelta(days=1)).isoformat(), "14,382", "2,071", "8,412", "310", "1,296"],
        [(today - dt.timedelta(days=2)).isoformat(), "9,655", "1,480", "\N{EM DASH}", "\N{EM DASH}", "\N{EM DASH}"],
    ]
    # figures align on the right, and nothing of globex's is on the page.
    assert table.locator("tbody td.figure").first.evaluate("cell => getComputedStyle(cell).textAlign") == "right"
    body = page.locator("body").inner_text()
    assert "777" not in body
    assert "globex" not in body
    assert "_" not in "".join(titles)  # no internal names
    page.screenshot(path=str(tmp_path / "usage-page.png"), full_page=True)
