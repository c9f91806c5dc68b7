"""Test settings: the product's settings on a real PostgreSQL (``TEST_DATABASE_URL``).

``make test`` starts PostgreSQL and points ``TEST_DATABASE_URL`` at it; the embedded pass sets
``TEST_DATABASE_URL=sqlite:///...`` to run the embedded-default tests on SQLite.
"""

import os

os.environ.setdefault("EMBEDADMIN_ALLOW_DEV_SECRET", "true")
os.environ.setdefault(
    "DATABASE_URL", os.environ.get("TEST_DATABASE_URL", "postgresql://embedadmin:embedadmin@127.0.0.1:5432/embedadmin")
)
os.environ.setdefault("EMBEDADMIN_VAR_DIR", "/tmp/embedadmin-test-var")

from embedadmin.settings import *  # noqa: F403
from embedadmin.settings import DATABASES, EMBEDADMIN

# Playwright runs its own event loop in the test thread; Django must allow sync ORM calls there.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast; production uses PBKDF2
CELERY_TASK_ALWAYS_EAGER = True
os.makedirs(STATIC_ROOT, exist_ok=True)  # noqa: F405  (served from here by whitenoise)
CELERY_BROKER_URL = "memory://"

if DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # Tests open many short connections from threads; a pool per test database is not needed.
    DATABASES["default"]["OPTIONS"].pop("pool", None)
    DATABASES["default"]["TEST"] = {"NAME": os.environ.get("TEST_DATABASE_NAME", "test_embedadmin")}
else:
    # SQLite: a file, as the embedded install uses, so that concurrent work (chat runs, streams) waits on
    # SQLite's lock with the busy timeout instead of failing with "table is locked" as an in-memory database
    # shared between threads does. pytest-xdist gives each worker its own file.
    DATABASES["default"]["TEST"] = {"NAME": DATABASES["default"]["NAME"] + ".test"}

EMBEDADMIN = {**EMBEDADMIN}
