"""History: migration 0004 drops these functions and the code named here is gone (ADR 0012).

PostgreSQL only: ``embedadmin_session_generate_v1``, generate-session's common case in one statement.

See ``embedadmin/embedding/in_database.py`` for when it runs and ADR 0010 for why. The function does
what ``embedding.services.session_generate`` does for an external user in read-only mode (no creator
mode, no definitions), in the same order and with the same locks, and declines (SQLSTATE ``EA001``,
nothing written) whenever that path would answer an error, so that the full path words the error.

A later schema change to the tables it writes replaces it with a new version in a new migration (``_v3``:
``_v2``, from ``0003``, is the API-key check that calls ``_v1`` by name, so it is re-created too);
tests/embedding/test_in_database.py runs both paths on the same requests and compares every row they write.
"""

from django.db import migrations

CREATE = r"""
CREATE OR REPLACE FUNCTION embedadmin_session_generate_v1(
    p_account_id bigint,
    p_deployment_id bigint,
    p_external_id text,
    p_email text,                -- NULL: keep the saved email (a new user gets '')
    p_display_name text,         -- NULL: keep the saved value
    p_picture text,              -- NULL: keep the saved value
    p_tenant_name text,          -- NULL: no embed tenant named
    p_attribute_names text[],    -- the userAttributes sent, in order, names unique
    p_attribute_values jsonb,    -- a JSON array aligned with the names; JSON null clears a value
    p_set_groups boolean,        -- false: groups omitted, memberships kept
    p_group_names text[],        -- the groups sent (when p_set_groups)
    p_security_context jsonb,
    p_show_dashboard_chat boolean,
    p_key_digest text,
    p_public_id uuid,
    p_now timestamptz,
    p_expires_at timestamptz
) RETURNS bigint
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_tenant_id bigint;
    v_user_id bigint;
    v_email text;
    v_display_name text;
    v_picture text;
    v_created boolean;
    v_group_ids bigint[] := '{}';
    v_definition_ids bigint[] := '{}';
    v_missing text;
    v_groups jsonb;
    v_attributes jsonb;
    v_session_id bigint;
BEGIN
    -- This transaction's commit does not wait for its WAL to reach the disk (ADR 0010): a crash of
    -- PostgreSQL may lose the last sessions minted, whole, never part of one (the viewer asks again).
    PERFORM set_config('synchronous_commit', 'off', true);
    -- Reads and checks first: a request that fails writes nothing.
    PERFORM 1 FROM accounts_deployment WHERE id = p_deployment_id AND account_id = p_account_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'deployment' USING ERRCODE = 'EA001';
    END IF;

    IF cardinality(p_attribute_names) > 0 THEN
        SELECT string_agg(n.name, ', ' ORDER BY n.ord)
          INTO v_missing
          FROM unnest(p_attribute_names) WITH ORDINALITY AS n(name, ord)
         WHERE NOT EXISTS (
               SELECT 1 FROM directory_attributedefinition d
                WHERE d.account_id = p_account_id AND d.embed_tenant_id IS NULL AND d.name = n.name);
        IF v_missing IS NOT NULL THEN
            RAISE EXCEPTION 'attributes not found: %', v_missing USING ERRCODE = 'EA001';
        END IF;
        -- A value of the wrong type (null clears, so it fits every type).
        PERFORM 1
           FROM unnest(p_attribute_names) WITH ORDINALITY AS n(name, ord)
           JOIN directory_attributedefinition d
             ON d.account_id = p_account_id AND d.embed_tenant_id IS NULL AND d.name = n.name
          CROSS JOIN LATERAL (SELECT p_attribute_values -> (n.ord::int - 1) AS value) v
          WHERE jsonb_typeof(v.value) <> 'null'
            AND NOT CASE d.type
                WHEN 'string' THEN jsonb_typeof(v.value) = 'string'
                WHEN 'number' THEN jsonb_typeof(v.value) = 'number'
                WHEN 'string_array' THEN jsonb_typeof(v.value) = 'array' AND NOT EXISTS (
                    SELECT 1 FROM jsonb_array_elements(v.value) e WHERE jsonb_typeof(e) <> 'string')
                WHEN 'number_array' THEN jsonb_typeof(v.value) = 'array' AND NOT EXISTS (
                    SELECT 1 FROM jsonb_array_elements(v.value) e WHERE jsonb_typeof(e) <> 'number')
                ELSE false
            END;
        IF FOUND THEN
            RAISE EXCEPTION 'attribute value of the wrong type' USING ERRCODE = 'EA001';
        END IF;
    END IF;

    IF p_set_groups AND cardinality(p_group_names) > 0 THEN
        SELECT coalesce(array_agg(g.id ORDER BY g.id), '{}')
          INTO v_group_ids
          FROM directory_group g
         WHERE g.account_id = p_account_id AND g.embed_tenant_id IS NULL AND g.name = ANY (p_group_names);
        IF cardinality(v_group_ids) < (SELECT count(DISTINCT n) FROM unnest(p_group_names) n) THEN
            RAISE EXCEPTION 'groups not found' USING ERRCODE = 'EA001';
        END IF;
    END IF;

    -- Writes, in the order (and so with the locks) of the full path.
    IF p_tenant_name IS NOT NULL THEN
        INSERT INTO directory_embedtenant (created_at, updated_at, account_id, name)
        VALUES (p_now, p_now, p_account_id, p_tenant_name)
        ON CONFLICT (account_id, name) DO NOTHING
        RETURNING id INTO v_tenant_id;
        IF v_tenant_id IS NULL THEN
            SELECT id INTO v_tenant_id FROM directory_embedtenant
             WHERE account_id = p_account_id AND name = p_tenant_name;
        END IF;
    END IF;

    INSERT INTO directory_externaluser AS t (
        created_at, updated_at, account_id, external_id, embed_tenant_id, email, display_name, picture,
        last_session_at)
    VALUES (p_now, p_now, p_account_id, p_external_id, v_tenant_id, coalesce(p_email, ''),
            coalesce(p_display_name, ''), coalesce(p_picture, ''), p_now)
    ON CONFLICT (account_id, external_id) DO UPDATE SET
        last_session_at = EXCLUDED.last_session_at,
        updated_at = EXCLUDED.updated_at,
        email = coalesce(p_email, t.email),
        embed_tenant_id = coalesce(v_tenant_id, t.embed_tenant_id),
        display_name = coalesce(p_display_name, t.display_name),
        picture = coalesce(p_picture, t.picture)
    RETURNING t.id, t.email, t.display_name, t.picture, (t.xmax = 0)
         INTO v_user_id, v_email, v_display_name, v_picture, v_created;

    IF p_set_groups THEN
        DELETE FROM directory_groupmembership m
         USING directory_group g
         WHERE m.user_id = v_user_id AND g.id = m.group_id AND g.embed_tenant_id IS NULL
           AND NOT (m.group_id = ANY (v_group_ids));
        INSERT INTO directory_groupmembership (group_id, user_id)
        SELECT gid, v_user_id FROM unnest(v_group_ids) AS gid ORDER BY gid
        ON CONFLICT (group_id, user_id) DO NOTHING;
    END IF;

    IF cardinality(p_attribute_names) > 0 THEN
        DELETE FROM directory_attributevalue av
         USING unnest(p_attribute_names) WITH ORDINALITY AS n(name, ord), directory_attributedefinition d
         WHERE d.account_id = p_account_id AND d.embed_tenant_id IS NULL AND d.name = n.name
           AND jsonb_typeof(p_attribute_values -> (n.ord::int - 1)) = 'null'
           AND av.user_id = v_user_id AND av.definition_id = d.id;
        INSERT INTO directory_attributevalue (user_id, definition_id, value, updated_at)
        SELECT v_user_id, d.id, p_attribute_values -> (n.ord::int - 1), p_now
          FROM unnest(p_attribute_names) WITH ORDINALITY AS n(name, ord)
          JOIN directory_attributedefinition d
            ON d.account_id = p_account_id AND d.embed_tenant_id IS NULL AND d.name = n.name
         WHERE jsonb_typeof(p_attribute_values -> (n.ord::int - 1)) <> 'null'
         ORDER BY d.id
        ON CONFLICT (user_id, definition_id) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at;
    END IF;

    -- The claims: groups of the tenant-wide catalog, sorted by code point; every tenant-wide
    -- attribute with its value, else its default, else left out.
    SELECT coalesce(jsonb_agg(g.name ORDER BY g.name COLLATE "C"), '[]'::jsonb)
      INTO v_groups
      FROM directory_group g
      JOIN directory_groupmembership m ON m.group_id = g.id
     WHERE m.user_id = v_user_id AND g.account_id = p_account_id AND g.embed_tenant_id IS NULL;

    SELECT coalesce(jsonb_object_agg(a.name, a.value), '{}'::jsonb)
      INTO v_attributes
      FROM (
        SELECT d.name,
               coalesce(av.value, CASE
                   WHEN d.default_value = '' THEN NULL
                   WHEN d.type = 'string' THEN to_jsonb(d.default_value)
                   ELSE d.default_value::jsonb
               END) AS value
          FROM directory_attributedefinition d
          LEFT JOIN directory_attributevalue av ON av.definition_id = d.id AND av.user_id = v_user_id
         WHERE d.account_id = p_account_id AND d.embed_tenant_id IS NULL
      ) a
     WHERE a.value IS NOT NULL;

    INSERT INTO embedding_embedsession (
        public_id, key_digest, creator_mode, show_dashboard_chat, claims, created_at, expires_at,
        account_id, deployment_id, embed_tenant_id, external_user_id)
    VALUES (
        p_public_id, p_key_digest, false, p_show_dashboard_chat,
        jsonb_build_object(
            'sub', p_external_id,
            'groups', v_groups,
            'userAttributes', v_attributes,
            'securityContext', coalesce(p_security_context, '{}'::jsonb),
            'identity', jsonb_build_object(
                'externalId', p_external_id,
                'email', v_email,
                'userProfile', jsonb_build_object('displayName', v_display_name, 'picture', v_picture))),
        p_now, p_expires_at, p_account_id, p_deployment_id, v_tenant_id, v_user_id)
    RETURNING id INTO v_session_id;

    IF v_created THEN
        -- Last before the commit, as in the full path: the account's counter row stays locked until then.
        UPDATE accounts_tenantsettings
           SET external_user_count = external_user_count + 1
         WHERE account_id = p_account_id AND external_user_count < max_external_users;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'external user cap' USING ERRCODE = 'EA001';
        END IF;
    END IF;
    RETURN v_session_id;
END
$fn$;
"""

DROP = "DROP FUNCTION IF EXISTS embedadmin_session_generate_v1"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("embedding", "0001_initial"),
        ("directory", "0002_readable_unique_messages"),
        ("accounts", "0002_deployment_data_model"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
