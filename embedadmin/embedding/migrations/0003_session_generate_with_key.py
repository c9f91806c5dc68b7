"""History: migration 0004 drops these functions and the lane named here is gone (ADR 0012).

PostgreSQL only: ``embedadmin_session_generate_v2``, ``_v1`` (``0002``) after an optional API-key check.

The lane (``embedadmin/embedding/lane.py``) remembers what it read of an API key by its prefix (which key it
is, its digest, kind and account) and compares the digest in constant time. What can change about a key
later is checked here, in the statement that writes the session: given ``p_api_key_id``, the key must still
exist for the account, unrevoked, an admin key, scoped to no deployment. Otherwise the function declines
(SQLSTATE ``EA001``, nothing written) and Django's full path answers (401 or 403): a revocation counts from
its commit, with no cache to wait for. Django's own caller has authenticated the key itself and passes NULL.
"""

from django.db import migrations

CREATE = r"""
CREATE OR REPLACE FUNCTION embedadmin_session_generate_v2(
    p_api_key_id bigint,         -- NULL: the caller has checked the key
    p_account_id bigint,
    p_deployment_id bigint,
    p_external_id text,
    p_email text,
    p_display_name text,
    p_picture text,
    p_tenant_name text,
    p_attribute_names text[],
    p_attribute_values jsonb,
    p_set_groups boolean,
    p_group_names text[],
    p_security_context jsonb,
    p_show_dashboard_chat boolean,
    p_key_digest text,
    p_public_id uuid,
    p_now timestamptz,
    p_expires_at timestamptz
) RETURNS bigint
LANGUAGE plpgsql
AS $fn$
BEGIN
    IF p_api_key_id IS NOT NULL THEN
        PERFORM 1 FROM accounts_apikey k
         WHERE k.id = p_api_key_id AND k.account_id = p_account_id AND k.revoked_at IS NULL AND k.kind = 'admin'
           AND NOT EXISTS (SELECT 1 FROM accounts_apikey_deployments d WHERE d.apikey_id = k.id);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'api key' USING ERRCODE = 'EA001';
        END IF;
    END IF;
    RETURN embedadmin_session_generate_v1(
        p_account_id, p_deployment_id, p_external_id, p_email, p_display_name, p_picture, p_tenant_name,
        p_attribute_names, p_attribute_values, p_set_groups, p_group_names, p_security_context,
        p_show_dashboard_chat, p_key_digest, p_public_id, p_now, p_expires_at);
END
$fn$;
"""

DROP = "DROP FUNCTION IF EXISTS embedadmin_session_generate_v2"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("embedding", "0002_session_generate_function"),
        ("accounts", "0003_lane_notifications"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
