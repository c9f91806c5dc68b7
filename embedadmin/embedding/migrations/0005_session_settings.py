"""A session's embed settings move into one JSON column: ``show_dashboard_chat`` becomes
``settings["showDashboardChat"]`` (and back, when migrating backwards)."""

from django.db import migrations, models


def forwards(apps, schema_editor):
    EmbedSession = apps.get_model("embedding", "EmbedSession")
    for value in (True, False):
        EmbedSession.objects.filter(show_dashboard_chat=value).update(settings={"showDashboardChat": value})


def backwards(apps, schema_editor):
    EmbedSession = apps.get_model("embedding", "EmbedSession")
    for value in (True, False):
        EmbedSession.objects.filter(settings__showDashboardChat=value).update(show_dashboard_chat=value)


class Migration(migrations.Migration):
    dependencies = [("embedding", "0004_drop_session_generate_functions")]

    operations = [
        migrations.AddField(
            model_name="embedsession", name="settings", field=models.JSONField(blank=True, default=dict)
        ),
        migrations.AddField(
            model_name="embedsession", name="embed_theme", field=models.JSONField(blank=True, default=dict)
        ),
        migrations.RunPython(forwards, backwards),
        migrations.RemoveField(model_name="embedsession", name="show_dashboard_chat"),
    ]
