"""The application database through outages, on a real PostgreSQL: the pool never hands out a dead connection
(after every backend was terminated, the next requests all succeed), a connection broken mid-request does not
poison the next request, and while the database cannot be reached every API family answers a JSON 503 with
``Retry-After`` and ``/readyz`` says why."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.signals import request_finished, request_started
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.utils import load_backend

from embedadmin.core.errors import RETRY_AFTER_SECONDS
from embedadmin.core.pgpool import CheckedConnectionPool, is_unavailable_error, unavailable_reason
from embedadmin.envconfig import database_from_url
from tests.asgi_server import admin_rows, database_url_for_subprocess, terminate_backends

pytestmark = pytest.mark.usefixtures("on_postgres")


def backends(application_name: str) -> int:
    [(count,)] = admin_rows("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [application_name])
    return int(count)


def pooled_wrapper(*, alias: str, host: str | None = None, port: str | None = None, timeout: float = 10) -> Any:
    """A database wrapper of the product's engine, on the test database, with the pool production configures
    (``database_from_url``) and an application name of its own (to find its backends)."""
    base = connections[DEFAULT_DB_ALIAS].settings_dict
    where = f"{host or base['HOST']}:{port or base['PORT'] or 5432}"
    url = f"postgresql://{base['USER']}:{base['PASSWORD']}@{where}/{base['NAME']}"
    config = database_from_url(f"{url}?pool_max_size=8&pool_timeout={timeout}", base_dir=Path("."))
    assert config["ENGINE"] == "embedadmin.core.postgresql"
    assert config["CONN_HEALTH_CHECKS"] is True
    config["OPTIONS"]["application_name"] = alias
    settings_dict = {**base, **config, "NAME": base["NAME"], "TEST": base.get("TEST", {})}
    wrapper = load_backend(config["ENGINE"]).DatabaseWrapper(settings_dict, alias)
    return wrapper


@contextmanager
def app_database(wrapper: BaseDatabaseWrapper) -> Iterator[BaseDatabaseWrapper]:
    """Serve this thread's requests from ``wrapper`` as the default database, its connection given back to the
    pool at each request's start and end as in production (the test client turns Django's own receivers off)."""

    def request_boundary(**kwargs: object) -> None:
        wrapper.close_if_unusable_or_obsolete()

    original = connections[DEFAULT_DB_ALIAS]
    connections[DEFAULT_DB_ALIAS] = wrapper
    request_started.connect(request_boundary, dispatch_uid="test-app-database")
    request_finished.connect(request_boundary, dispatch_uid="test-app-database-end")
    try:
        yield wrapper
    finally:
        request_started.disconnect(dispatch_uid="test-app-database")
        request_finished.disconnect(dispatch_uid="test-app-database-end")
        connections[DEFAULT_DB_ALIAS] = original
        wrapper.close()
        wrapper.close_pool()


def _select_one(wrapper: BaseDatabaseWrapper) -> int:
    try:
        with wrapper.cursor() as cursor:
            cursor.execute("SELECT 1")
            return int(cursor.fetchone()[0])
    finally:
        wrapper.close()  # back to the pool, as at the end of a request


def _hold_connections(wrapper: BaseDatabaseWrapper, count: int) -> None:
    """Fill the pool with ``count`` idle connections (all taken at once, then returned)."""
    pool = wrapper.pool
    taken = [pool.getconn() for _ in range(count)]
    for conn in taken:
        pool.putconn(conn)


def test_the_engine_builds_a_checked_pool(db):
    wrapper = pooled_wrapper(alias=f"ea-check-{uuid.uuid4().hex[:8]}")
    try:
        assert isinstance(wrapper.pool, CheckedConnectionPool)
    finally:
        wrapper.close_pool()


def test_after_every_backend_is_terminated_the_next_queries_all_succeed_at_once(db):
    name = f"ea-pool-{uuid.uuid4().hex[:8]}"
    wrapper = pooled_wrapper(alias=name)
    try:
        assert _select_one(wrapper) == 1
        _hold_connections(wrapper, 6)
        assert backends(name) >= 6
        assert terminate_backends(name) >= 6  # every idle connection of the pool is now dead, as after a restart

        started = time.monotonic()
        results = [_select_one(wrapper) for _ in range(10)]
        elapsed = time.monotonic() - started

        assert results == [1] * 10
        # The first request found a dead connection and the pool swept the other five at once: no request waits
        # through psycopg's 1 s, 2 s, 4 s back-off per dead connection.
        assert elapsed < 1.0, elapsed
        assert wrapper.pool.get_stats().get("connections_lost", 0) >= 5
    finally:
        wrapper.close_pool()


def test_requests_after_the_backends_are_terminated_all_answer(api, transactional_db, make_account):
    acme = make_account("acme")
    name = f"ea-http-{uuid.uuid4().hex[:8]}"
    with app_database(pooled_wrapper(alias=name)) as wrapper:
        urls = ["/readyz", "/api/v1/deployments", "/api/scim/v2/Groups"]
        for url in urls:
            assert api.get(url, **acme.platform_headers).status_code == 200, url
        _hold_connections(wrapper, 4)
        assert terminate_backends(name) >= 4

        statuses = [api.get(url, **acme.platform_headers).status_code for _ in range(5) for url in urls]

        assert statuses == [200] * len(statuses)


def test_a_connection_broken_mid_request_does_not_poison_the_next_one(api, transactional_db, make_account):
    acme = make_account("acme")
    name = f"ea-mid-{uuid.uuid4().hex[:8]}"
    with app_database(pooled_wrapper(alias=name)) as wrapper:
        wrapper.ensure_connection()  # the request's connection, taken from the pool
        terminate_backends(name)  # the server drops it while the "request" holds it
        with pytest.raises(OperationalError), wrapper.cursor() as cursor:
            cursor.execute("SELECT 1")
        wrapper.close_if_unusable_or_obsolete()  # what Django does at the end of every request

        statuses = [api.get("/api/v1/deployments", **acme.platform_headers).status_code for _ in range(5)]

        assert statuses == [200] * 5
        assert wrapper.pool.get_stats()["pool_size"] >= 1


# --- the database down -----------------------------------------------------------------------------------


@pytest.fixture
def database_down(api, acme) -> Iterator[Callable[..., Any]]:
    """acme's credentials made, then the app pointed at a port no PostgreSQL listens on (connection refused),
    pool timeout 0.5 s."""
    with app_database(pooled_wrapper(alias="ea-down", host="127.0.0.1", port="1", timeout=0.5)):
        yield api


HEADERS = {
    "platform": lambda cast: cast.platform_headers,
    "api-key": lambda cast: cast.api_key_headers,
    "none": lambda cast: {},
}


def _assert_503(response: Any, *, scim: bool = False) -> dict[str, Any]:
    assert response.status_code == 503, (response.status_code, response.content[:300])
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert response["Content-Type"].startswith("application/scim+json" if scim else "application/json")
    body = response.json()
    assert "retry later" in (body["detail"] if scim else body["error"])  # SCIM's error shape says it in "detail"
    return body


@pytest.mark.parametrize(
    ("method", "url", "body", "auth"),
    [
        ("get", "/api/v1/deployments", None, "platform"),  # platform API (DRF)
        ("get", "/api/v1/api-keys/current", None, "api-key"),
        ("post", "/api/v1/embed/generate-session", {"externalId": "u1", "tenantName": "t"}, "api-key"),  # embedding
        ("get", "/cubejs-api/v1/meta", None, "none"),  # Core Data API (its own views)
        ("post", "/cubejs-api/v1/load", {"query": {"measures": ["orders.count"]}}, "none"),
        ("post", "/d/1/cubejs-api/v1/load", {"query": {"measures": ["orders.count"]}}, "none"),
        ("post", "/api/v1/public/acme/agents/a1/chat/stream-chat-state", {"chatId": "c1", "input": "hi"}, "none"),
    ],
)
def test_every_api_answers_503_json_with_retry_after_while_the_database_is_down(
    database_down, acme, method, url, body, auth
):
    headers = HEADERS[auth](acme)
    response = database_down.get(url, **headers) if method == "get" else database_down.post_json(url, body, **headers)

    _assert_503(response)


def test_scim_answers_its_error_shape_with_503_and_retry_after(database_down, acme):
    response = database_down.get("/api/scim/v2/Groups", **acme.platform_headers)

    body = _assert_503(response, scim=True)
    assert body["status"] == "503"
    assert body["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]


def test_readyz_says_why_while_the_database_is_down(database_down):
    response = database_down.get("/readyz")

    assert response.status_code == 503
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"].startswith("connection refused"), body
    assert "127.0.0.1" not in response.content.decode()


def test_readyz_is_ready_again_and_stays_ready_once_the_database_is_back(api, db):
    name = f"ea-ready-{uuid.uuid4().hex[:8]}"
    with app_database(pooled_wrapper(alias=name)) as wrapper:
        assert api.get("/readyz").status_code == 200
        _hold_connections(wrapper, 5)
        terminate_backends(name)

        statuses = [api.get("/readyz").status_code for _ in range(20)]

        assert statuses == [200] * 20


# --- the classification ---------------------------------------------------------------------------------


def test_unavailable_errors_are_told_from_refused_statements():
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect("host=127.0.0.1 port=1 dbname=x user=x connect_timeout=2")
    assert is_unavailable_error(refused.value)
    assert unavailable_reason(refused.value) == "connection refused"

    with psycopg.connect(database_url_for_subprocess(), autocommit=True) as conn:
        with pytest.raises(psycopg.errors.QueryCanceled) as cancelled:
            conn.execute("SET statement_timeout = 10; SELECT pg_sleep(1)")
        with pytest.raises(psycopg.errors.DivisionByZero) as bad_sql:
            conn.execute("SELECT 1 / 0")
    assert not is_unavailable_error(cancelled.value)  # a timeout is the statement's, not the server's
    assert not is_unavailable_error(bad_sql.value)
