# chat.AccountUsageDay's rows are in audit.DailyUsage now (0003): the table goes.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('chat', '0003_usage_days_to_daily_usage'),
    ]

    operations = [
        migrations.DeleteModel(
            name='AccountUsageDay',
        ),
    ]
