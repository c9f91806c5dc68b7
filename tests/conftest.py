"""Shared fixtures: a fixed cast of accounts and callers, built through the real services."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from playwright.sync_api import expect

from embedadmin.accounts import services as accounts
from embedadmin.accounts.services import CreatedAccount

# A browser test's assertion waits as long as its actions do (15 s): on a busy 2-core machine a page (swagger-ui over
# the whole spec) can take longer than Playwright's default 5 s to render; what is asserted is what a page shows.
expect.set_options(timeout=15_000)


@dataclass
class Cast:
    """One account as the tests see it: its objects and ready-made headers for each credential."""

    created: CreatedAccount

    @property
    def account(self):
        return self.created.account

    @property
    def deployment(self):
        return self.created.deployment

    @property
    def api_key_headers(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Api-Key {self.created.api_key}"}

    @property
    def platform_headers(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.created.platform_token}"}


@pytest.fixture(autouse=True)
def _fresh_shared_cache() -> None:
    """Each test starts with an empty default cache. The versions of what processes remember live there
    (``core/versions.py``), so nothing remembered in an earlier test, whose rows were rolled back, is used."""
    cache.clear()


@pytest.fixture
def make_account(db) -> Callable[..., Cast]:
    def make(name: str = "acme", *, creator_mode: bool = False) -> Cast:
        return Cast(accounts.account_create(name=name, creator_mode=creator_mode))

    return make


@pytest.fixture
def acme(make_account) -> Cast:
    """Account A, with creator mode on."""
    return make_account("acme", creator_mode=True)


@pytest.fixture
def globex(make_account) -> Cast:
    """Account B, the other tenant every isolation test tries to reach."""
    return make_account("globex", creator_mode=True)


class JsonClient(Client):
    """Django's test client speaking JSON: ``post_json(url, body, **headers)``."""

    def post_json(self, path: str, body: Any, **extra):
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        return self.post(path, data=data, content_type="application/json", **extra)

    def patch_json(self, path: str, body: Any, **extra):
        return self.patch(path, data=json.dumps(body), content_type="application/json", **extra)


@pytest.fixture
def api() -> JsonClient:
    return JsonClient()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that need PostgreSQL carry the ``postgres`` marker, so the embedded (SQLite) pass of
    ``make test`` can leave them to the PostgreSQL pass."""
    for item in items:
        if "on_postgres" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)


@pytest.fixture
def on_postgres() -> None:
    """Skip-free guard: tests that need PostgreSQL fail loudly when run elsewhere."""
    assert connection.vendor == "postgresql", "this test needs PostgreSQL (TEST_DATABASE_URL)"


THREAD_TIMEOUT_SECONDS = 60
T = TypeVar("T")


def run_concurrently(calls: list[Callable[[], T]]) -> list[T]:
    """Run each call in its own thread, all released at once; their results in order.

    Each thread closes its database connection when done, so none outlives the test's flush.
    """
    barrier = threading.Barrier(len(calls))
    results: list[T | None] = [None] * len(calls)
    errors: list[BaseException] = []

    def worker(index: int, call: Callable[[], T]) -> None:
        try:
            barrier.wait(timeout=THREAD_TIMEOUT_SECONDS)
            results[index] = call()
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=THREAD_TIMEOUT_SECONDS)
    assert not [t for t in threads if t.is_alive()], "a thread did not finish"
    assert not errors, errors
    return results  # type: ignore[return-value]
