# Daily usage takes measured figures beside the counted ones (ADR 0016): the user counts chat.AccountUsageDay kept
# move here (chat 0003). A kind name may be up to 32 characters; a gauge lives in shard 0 only.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0002_daily_usage_shards'),
    ]

    operations = [
        migrations.AlterField(
            model_name='dailyusage',
            name='kind',
            field=models.CharField(choices=[('sessions', 'Sessions minted'), ('chat_messages', 'Chat messages'), ('external_users', 'External users'), ('non_ephemeral_chat_users', 'Non-ephemeral chat users'), ('ephemeral_chat_users', 'Ephemeral chat users')], max_length=32),
        ),
        migrations.AddConstraint(
            model_name='dailyusage',
            constraint=models.CheckConstraint(condition=models.Q(('kind__in', ['sessions', 'chat_messages', 'external_users', 'non_ephemeral_chat_users', 'ephemeral_chat_users'])), name='daily_usage_kind_valid'),
        ),
        migrations.AddConstraint(
            model_name='dailyusage',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('kind__in', ('external_users', 'non_ephemeral_chat_users', 'ephemeral_chat_users')), _negated=True), ('shard', 0), _connector='OR'), name='daily_usage_gauge_in_shard_0'),
        ),
    ]
