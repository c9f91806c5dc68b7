"""History: migration 0004 drops these triggers with the lane (ADR 0012).

PostgreSQL only: a notification on channel ``embedadmin_lane`` whenever deployments, their secrets or
revoked tokens change, so that the Core Data API's lane drops what it remembered of them (ADR 0011).

NOTIFY is transactional: listeners hear it when the change commits.
"""

from django.db import migrations

TABLES = ("accounts_deployment", "accounts_deploymentsecret", "accounts_revokedtoken")

CREATE = [
    """
    CREATE OR REPLACE FUNCTION embedadmin_lane_notify() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
        PERFORM pg_notify('embedadmin_lane', TG_TABLE_NAME);
        RETURN NULL;
    END
    $fn$
    """,
    *(
        f"CREATE TRIGGER embedadmin_lane_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table}"
        " FOR EACH STATEMENT EXECUTE FUNCTION embedadmin_lane_notify()"
        for table in TABLES
    ),
]

DROP = [
    *(f"DROP TRIGGER IF EXISTS embedadmin_lane_notify ON {table}" for table in TABLES),
    "DROP FUNCTION IF EXISTS embedadmin_lane_notify()",
]


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in CREATE:
            schema_editor.execute(statement, params=None)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in DROP:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_deployment_data_model")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
