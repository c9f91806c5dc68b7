"""Drop the PL/pgSQL generate-session functions of ``0002`` and ``0003``: generate-session is one service in
Python on the ORM (ADR 0012). Those migrations stay as history; reversing this one installs the functions
again."""

import importlib

from django.db import migrations

_0002 = importlib.import_module("embedadmin.embedding.migrations.0002_session_generate_function")
_0003 = importlib.import_module("embedadmin.embedding.migrations.0003_session_generate_with_key")


def drop(apps, schema_editor):
    _0003.drop(apps, schema_editor)  # _v2 calls _v1: dropped first
    _0002.drop(apps, schema_editor)


def create(apps, schema_editor):
    _0002.create(apps, schema_editor)
    _0003.create(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [("embedding", "0003_session_generate_with_key")]

    operations = [migrations.RunPython(drop, create, elidable=False)]
