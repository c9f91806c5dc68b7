# The user counts of chat.AccountUsageDay move into the one daily usage table (audit.DailyUsage, ADR 0016): each
# row becomes three gauge rows (shard 0) of its account and day. The row's recorded_at is not kept. Reversible: the
# reverse copies the gauge rows back and deletes them, so audit 0003 can be reversed after it.

from django.db import migrations

# The kinds of audit.DailyUsage, frozen here as this migration wrote them, by AccountUsageDay's field names.
GAUGES = ("external_users", "non_ephemeral_chat_users", "ephemeral_chat_users")
BATCH = 2_000


def usage_days_to_daily_usage(apps, schema_editor):
    usage_day_model = apps.get_model("chat", "AccountUsageDay")
    daily_usage_model = apps.get_model("audit", "DailyUsage")
    batch = []
    for usage_day in usage_day_model.objects.order_by("pk").iterator(chunk_size=BATCH):
        batch.extend(
            daily_usage_model(
                account_id=usage_day.account_id, day=usage_day.day, kind=kind, shard=0, count=getattr(usage_day, kind)
            )
            for kind in GAUGES
        )
        if len(batch) >= BATCH:
            # A figure already written for that day (by the reconcile task, after this table) is the later one.
            daily_usage_model.objects.bulk_create(batch, ignore_conflicts=True)
            batch = []
    daily_usage_model.objects.bulk_create(batch, ignore_conflicts=True)


def daily_usage_to_usage_days(apps, schema_editor):
    usage_day_model = apps.get_model("chat", "AccountUsageDay")
    daily_usage_model = apps.get_model("audit", "DailyUsage")
    gauges = daily_usage_model.objects.filter(kind__in=GAUGES, shard=0)
    days = {}
    for row in gauges.order_by("account_id", "day").iterator(chunk_size=BATCH):
        days.setdefault((row.account_id, row.day), {})[row.kind] = row.count
    usage_day_model.objects.bulk_create(
        [usage_day_model(account_id=account_id, day=day, **figures) for (account_id, day), figures in days.items()],
        batch_size=BATCH,
    )
    gauges.delete()


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0003_daily_usage_gauges'),
        ('chat', '0002_run_context'),
    ]

    operations = [
        migrations.RunPython(usage_days_to_daily_usage, daily_usage_to_usage_days),
    ]
