"""PostgreSQL data sources through outages, on a real server: after every pooled backend was terminated (as by a
restart) the next queries all succeed at once; a query whose connection is killed under it fails as unavailable
and the next query gets a healthy connection; an unreachable source is a 503 with Retry-After on /v1/load."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from embedadmin.accounts.services import deployment_configure
from embedadmin.core.errors import RETRY_AFTER_SECONDS
from embedadmin.semantic.sources.base import DataSource, DataSourceError, DataSourceUnavailable
from embedadmin.semantic.sources.registry import close_data_sources, get_data_source
from tests.asgi_server import admin_rows, terminate_backends
from tests.semantic.http_support import DEMO_MODEL, CoreApi, fresh_semantic_state  # noqa: F401
from tests.waiting import wait_until

POSTGRES_URL = os.environ.get("TEST_DATABASE_URL", "postgresql://embedadmin:embedadmin@127.0.0.1:5432/embedadmin")


@pytest.fixture
def pg_name() -> Iterator[str]:
    yield f"ea-ds-{uuid.uuid4().hex[:8]}"
    close_data_sources()


@pytest.fixture
def pg_source(pg_name: str) -> DataSource:
    return get_data_source(f"{POSTGRES_URL}?application_name={pg_name}&pool_max_size=6")


def _sleeping(application_name: str) -> bool:
    """Whether a backend of ``application_name`` runs ``pg_sleep``."""
    rows = admin_rows(
        "SELECT 1 FROM pg_stat_activity WHERE application_name = %s AND state = 'active'"
        " AND strpos(query, 'pg_sleep') > 0",
        [application_name],
    )
    return bool(rows)


def _fill(pg_source: DataSource, count: int) -> None:
    """Make the pool hold ``count`` idle connections: ``count`` queries at once."""
    barrier = threading.Barrier(count)

    def run() -> None:
        barrier.wait()
        pg_source.execute("SELECT pg_sleep(0.2)", [], timeout_s=5)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_after_every_pooled_backend_is_terminated_the_next_queries_all_succeed(pg_source, pg_name):
    _fill(pg_source, 5)
    assert terminate_backends(pg_name) >= 5

    started = time.monotonic()
    results = [pg_source.execute("SELECT $1::int", [n], timeout_s=5).rows for n in range(10)]

    assert results == [[(n,)] for n in range(10)]
    assert time.monotonic() - started < 1.0


def test_a_query_whose_connection_dies_under_it_fails_unavailable_and_poisons_nothing(pg_source, pg_name):
    errors: list[BaseException] = []

    def run() -> None:
        try:
            pg_source.execute("SELECT pg_sleep(5)", [], timeout_s=10)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    wait_until(lambda: _sleeping(pg_name), "the statement runs in the server", every=0.05)
    terminate_backends(pg_name)
    thread.join(5)

    assert len(errors) == 1, errors
    assert isinstance(errors[0], DataSourceUnavailable), errors
    assert str(errors[0]) == "Data source is unavailable"
    assert [pg_source.execute("SELECT 1", [], timeout_s=5).rows for _ in range(5)] == [[(1,)]] * 5


def test_a_refused_statement_is_not_unavailable(pg_source):
    with pytest.raises(DataSourceError) as caught:
        pg_source.execute("SELECT 1 / 0", [], timeout_s=5)
    assert not isinstance(caught.value, DataSourceUnavailable)
    assert pg_source.execute("SELECT 1", [], timeout_s=5).rows == [(1,)]


def test_an_unreachable_source_is_unavailable_naming_nothing_secret():
    source = get_data_source("postgresql://nobody:secret-password@127.0.0.1:1/none?pool_min_size=0&pool_timeout=0.5")
    try:
        with pytest.raises(DataSourceUnavailable) as caught:
            source.execute("SELECT 1", [], timeout_s=1)
        assert str(caught.value) == "Data source is unavailable"
    finally:
        close_data_sources()


def test_load_on_an_unreachable_source_is_503_json_with_retry_after(api, acme, fresh_semantic_state):  # noqa: F811
    url = "postgresql://nobody:secret@127.0.0.1:1/none?pool_min_size=0&pool_timeout=0.5"
    deployment_configure(deployment=acme.deployment, model_dir=str(DEMO_MODEL), data_source_url=url)
    core = CoreApi(client=api, cast=acme, dataset=DEMO_MODEL)

    response = core.post("load", {"query": {"measures": ["orders.count"]}})

    assert response.status_code == 503, response.content
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert response.json() == {"error": "Data source is unavailable"}
