"""Drop the ``embedadmin_lane`` notification triggers of ``0003``: the Core Data API has one path again, and
what it remembers of deployments, secrets and revocations is invalidated by the services that change them
(ADR 0012). ``0003`` stays as history; reversing this migration installs its triggers again."""

import importlib

from django.db import migrations

_0003 = importlib.import_module("embedadmin.accounts.migrations.0003_lane_notifications")


class Migration(migrations.Migration):
    dependencies = [("accounts", "0003_lane_notifications"), ("embedding", "0003_session_generate_with_key")]

    operations = [migrations.RunPython(_0003.drop, _0003.create, elidable=False)]
