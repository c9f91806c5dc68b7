"""The production entry point (``embedadmin.asgi:application``) served by a real uvicorn process on the
test database, for tests that must go through the server the product ships with; and the test database as a
URL another process (that server, or a data source) can open."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx
import psycopg
from django.db import connection

from tests.waiting import wait_until


def _free_port() -> int:
    """A free port in a range of its own for each pytest-xdist worker, so that two workers starting servers at
    once cannot both pick the same port (one would then probe the other's server)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    first = 20000 + 1000 * (int(worker) if worker.isdigit() else 0)
    for port in random.sample(range(first, first + 1000), 1000):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port for the test server")


def database_url_for_subprocess() -> str:
    """The test database, as a URL another process can open (any host form DATABASE_URL accepts)."""
    p = connection.settings_dict
    host = p["HOST"] or "127.0.0.1"
    host = quote(host, safe="") if host.startswith("/") else f"[{host}]" if ":" in host else host
    credentials = f"{quote(p['USER'], safe='')}:{quote(p['PASSWORD'], safe='')}"
    return f"postgresql://{credentials}@{host}:{p['PORT'] or 5432}/{p['NAME']}"


def admin_rows(sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` run on a connection of its own (autocommit) to the test database's server: to look at,
    or end, the sessions of the code under test."""
    with psycopg.connect(database_url_for_subprocess(), autocommit=True) as admin:
        return admin.execute(sql, list(params)).fetchall()


def terminate_backends(application_name: str) -> int:
    """Terminate every PostgreSQL backend of ``application_name`` (as a restart would), from a connection of its
    own to the test database's server; how many there were."""
    rows = admin_rows(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE application_name = %s AND pid <> pg_backend_pid()",
        [application_name],
    )
    return len(rows)


@contextmanager
def uvicorn_server(**env: str) -> Iterator[str]:
    """Serve the app in a uvicorn subprocess on a free port; yields its base URL."""
    port = _free_port()
    environ = {
        **os.environ,
        "DATABASE_URL": database_url_for_subprocess(),
        "EMBEDADMIN_ALLOW_DEV_SECRET": "true",
        "DJANGO_SETTINGS_MODULE": "embedadmin.settings",
        **env,
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "embedadmin.asgi:application", "--port", str(port), "--log-level", "warning"],
        env=environ,
        stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def live() -> bool:
        assert server.poll() is None, "the web process exited"
        try:
            return httpx.get(f"{base}/livez", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(live, "the web process answers /livez", every=0.2)
        yield base
    finally:
        server.terminate()
        server.wait(10)
