"""The panel's home overview: an account administrator reads their account's figures (users against the caps,
sessions and chat messages per day in a chart, dashboards published, the latest audit entries) and nothing of another
account's; a superuser reads every account's, at a query cost that does not grow with the number of accounts."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from embedadmin.accounts.models import TenantSettings
from embedadmin.audit import services as audit
from embedadmin.audit.models import DailyUsage
from embedadmin.dashboards.models import Dashboard
from embedadmin.panel.overview import Cap
from tests.conftest import Cast
from tests.panel.conftest import AccountRows, make_dashboard
from tests.panel.test_browser import log_in


def _record(cast: Cast, action: str, resource_id: str) -> None:
    actor = audit.Actor(kind="system", id="test", label="overview test", via="panel")
    with transaction.atomic():
        audit.entry_record(
            account_id=cast.account.pk,
            actor=actor,
            change=audit.Change(action=action, resource_type=action.split(".")[0], resource_id=resource_id),
        )


def test_a_cap_is_shown_as_how_full_it_is():
    assert Cap(used=9_000, limit=10_000).percent == 90
    assert Cap(used=9_000, limit=10_000).near
    assert not Cap(used=8_999, limit=10_000).near
    assert Cap(used=0, limit=0).percent == 100  # nothing may be added: full
    assert Cap(used=12, limit=10).percent == 100  # a lowered cap below the count still reads as full


@pytest.mark.browser
@pytest.mark.postgres
def test_an_account_admin_reads_their_overview_on_the_panel_home(
    page, live_server, acme_rows: AccountRows, globex_rows: AccountRows, tmp_path: Path
):
    acme, globex = acme_rows.cast, globex_rows.cast
    # Given acme with 8,412 external users of 10,000 counted, sessions and messages over the last days,
    TenantSettings.objects.filter(account=acme.account).update(
        external_user_count=9_412, max_external_users=10_000, non_ephemeral_chat_user_count=310
    )
    today = timezone.now().date()
    for days_ago, sessions, messages in ((1, 1_382, 271), (3, 655, 80)):
        day = today - dt.timedelta(days=days_ago)
        DailyUsage.objects.create(account=acme.account, day=day, kind="sessions", shard=2, count=sessions)
        DailyUsage.objects.create(account=acme.account, day=day, kind="chat_messages", shard=6, count=messages)
    # a day outside the 30-day window (not counted),
    DailyUsage.objects.create(account=acme.account, day=today - dt.timedelta(days=45), kind="sessions", count=5_000)
    make_dashboard(acme)  # published
    _record(acme, "workbook.publish", "acme-sales-dashboard")
    # and globex's figures and audit entries, which acme's administrator must never see,
    audit.usage_count(account_id=globex.account.pk, kind="sessions", amount=777_776)  # with make_rows's: 777,777
    _record(globex, "report.create", "globex-secret-report")

    # when acme's administrator logs in,
    log_in(page, live_server.url, acme.created.admin_username, acme.created.admin_password)

    # then the home shows one row for acme: the caps with their bars, the totals of the last 30 days,
    table = page.get_by_role("table", name="Usage by account")
    rows = [[c.strip() for c in row.locator("th, td").all_inner_texts()] for row in table.locator("tbody tr").all()]
    # make_rows minted one session today (counted as it happened): 1,382 + 655 + 1.
    assert [row[0] for row in rows] == ["acme"]
    assert rows[0][1].startswith("9,412 of 10,000")
    assert rows[0][2].startswith("310 of 10,000")
    published = Dashboard.objects.filter(account=acme.account, status="published").count()
    assert published >= 1  # make_dashboard's, and the demo's applied from the model folder
    assert rows[0][3:] == ["2,038", "351", f"{published:,}"]
    meter = table.get_by_label("9412 of 10000 external users")
    assert meter.get_attribute("value") == "9412"
    # the cap near full is marked,
    assert "near" in (table.locator(".panel-cap").first.get_attribute("class") or "")
    # the chart draws a line per kind with readable legend titles,
    chart = page.get_by_role("figure", name="Sessions minted and chat messages per day (UTC)")
    chart.locator("svg").wait_for()
    legend = chart.locator("svg .role-legend-label text").all_text_contents()
    assert sorted(legend) == ["Chat messages", "Sessions minted"]
    assert chart.locator("svg path.mark-line, svg .mark-line path").count() == 2
    # the recent audit entries are acme's,
    recent = page.locator("#recent-audit-module").inner_text()
    assert "acme-sales-dashboard" in recent
    # and nothing of globex's is on the page.
    body = page.locator("body").inner_text()
    assert "globex" not in body
    assert "777" not in body
    page.screenshot(path=str(tmp_path / "panel-overview.png"), full_page=True)


@pytest.mark.postgres
def test_a_superuser_sees_every_account_at_a_fixed_query_cost(superuser, acme: Cast, globex: Cast, make_account):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            response = superuser.get("/admin/")
        assert response.status_code == 200
        return len(captured)

    audit.usage_count(account_id=globex.account.pk, kind="sessions", amount=40)
    audit.usage_count(account_id=acme.account.pk, kind="sessions", amount=3)
    with_two = queries()
    response = superuser.get("/admin/")
    names = [row.account.name for row in response.context["overview"].accounts]
    assert names[:2] == ["globex", "acme"]  # the busiest first
    for index in range(4):
        make_account(f"quiet-{index}")
    assert queries() == with_two
    assert len(superuser.get("/admin/").context["overview"].accounts) == 6
