"""The migration that made one daily usage table (ADR 0016): chat.AccountUsageDay's rows become gauge rows of
audit.DailyUsage (shard 0, one per user count), beside the counters already there, and the table goes; reversed, the
rows come back and the gauge rows go. Run with Django's migration executor on the test database, SQLite or
PostgreSQL, which is migrated forward to the latest state again whatever happens."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("chat", "0002_run_context"), ("audit", "0002_daily_usage_shards")]
AFTER = [("chat", "0004_delete_accountusageday")]
DAY = dt.date(2026, 11, 20)


def migrate(targets: list[tuple[str, str]]):
    """Migrate the test database to ``targets``; the app registry of that state."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


@pytest.fixture
def back_to_latest():
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_usage_days_move_into_daily_usage_and_back(acme, globex, back_to_latest):
    # Given the state before: user counts in chat.AccountUsageDay, a sessions counter in audit.DailyUsage,
    apps = migrate(BEFORE)
    usage_day = apps.get_model("chat", "AccountUsageDay")
    daily_usage = apps.get_model("audit", "DailyUsage")
    usage_day.objects.create(
        account_id=acme.account.pk, day=DAY, external_users=120, non_ephemeral_chat_users=7, ephemeral_chat_users=0
    )
    usage_day.objects.create(
        account_id=acme.account.pk,
        day=DAY + dt.timedelta(days=1),
        external_users=121,
        non_ephemeral_chat_users=8,
        ephemeral_chat_users=3,
    )
    usage_day.objects.create(
        account_id=globex.account.pk, day=DAY, external_users=9, non_ephemeral_chat_users=1, ephemeral_chat_users=2
    )
    daily_usage.objects.create(account_id=acme.account.pk, day=DAY, kind="sessions", shard=4, count=31)

    # when the migrations run,
    apps = migrate(AFTER)

    # then every count is a row of the one table, in shard 0, the counter untouched, and the old table is gone;
    rows = apps.get_model("audit", "DailyUsage").objects.values_list("account_id", "day", "kind", "shard", "count")
    acme_id, globex_id, next_day = acme.account.pk, globex.account.pk, DAY + dt.timedelta(days=1)
    assert sorted(rows) == sorted(
        [
            (acme_id, DAY, "sessions", 4, 31),
            (acme_id, DAY, "external_users", 0, 120),
            (acme_id, DAY, "non_ephemeral_chat_users", 0, 7),
            (acme_id, DAY, "ephemeral_chat_users", 0, 0),
            (acme_id, next_day, "external_users", 0, 121),
            (acme_id, next_day, "non_ephemeral_chat_users", 0, 8),
            (acme_id, next_day, "ephemeral_chat_users", 0, 3),
            (globex_id, DAY, "external_users", 0, 9),
            (globex_id, DAY, "non_ephemeral_chat_users", 0, 1),
            (globex_id, DAY, "ephemeral_chat_users", 0, 2),
        ]
    )
    assert "chat_accountusageday" not in connection.introspection.table_names()

    # and reversed, the counts are back in their table and only the counter stays in the one table.
    apps = migrate(BEFORE)
    back = apps.get_model("chat", "AccountUsageDay").objects.values_list(
        "account_id", "day", "external_users", "non_ephemeral_chat_users", "ephemeral_chat_users"
    )
    assert sorted(back) == sorted(
        [(acme_id, DAY, 120, 7, 0), (acme_id, next_day, 121, 8, 3), (globex_id, DAY, 9, 1, 2)]
    )
    assert list(apps.get_model("audit", "DailyUsage").objects.values_list("kind", "count")) == [("sessions", 31)]
