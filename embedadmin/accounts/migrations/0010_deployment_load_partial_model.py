from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0009_deployment_tenancy"),
    ]

    operations = [
        migrations.AddField(
            model_name="deployment",
            name="load_partial_model",
            field=models.BooleanField(default=False),
        ),
    ]
