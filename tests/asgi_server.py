"""The production entry point (``embedadmin.asgi:application``) served by a real uvicorn process on the
test database, for tests that must go through the server the product ships with."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import httpx
from django.db import connection


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_database_url() -> str:
    """The test database, as a URL another process can open."""
    p = connection.settings_dict
    return f"postgresql://{quote(p['USER'])}:{quote(p['PASSWORD'])}@{p['HOST']}:{p['PORT'] or 5432}/{p['NAME']}"


@contextmanager
def uvicorn_server(**env: str) -> Iterator[str]:
    """Serve the app in a uvicorn subprocess on a free port; yields its base URL."""
    port = _free_port()
    environ = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
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
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{base}/livez", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None, "the web process exited"
            assert time.monotonic() < deadline, "the web process did not start"
            time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(10)
