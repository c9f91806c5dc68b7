"""The Core Data API while things happen: slow queries ("Continue wait"), model files that change or break
under a running server, and injection attempts through every part of a query."""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from embedadmin.accounts.services import deployment_configure
from embedadmin.semantic.modeling import registry
from embedadmin.semantic.sources.duckdb import DuckDBSource
from tests.semantic.http_support import DEMO_MODEL, core, demo_duckdb, duck_rows, fresh_semantic_state  # noqa: F401
from tests.waiting import wait_until

COUNT = {"measures": ["orders.count"]}
EXTRA_CUBE = """cubes:
  - name: extra
    sql_table: orders
    measures:
      - name: count
        type: count
"""
BROKEN_CUBE = """cubes:
  - name: extra
    sql_table: orders
    measures:
      - name: count
        type: countish
"""


# --- Continue wait --------------------------------------------------------------------------------------


@dataclass
class HeldQueries:
    """DuckDB queries held until the test opens ``gate``; ``ran`` records each statement run."""

    ran: list[str] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def slow_duckdb(monkeypatch) -> Iterator[HeldQueries]:
    """Every DuckDB query is slow: it runs once the test opens the gate (opened at the end of the test in any case)."""
    original = DuckDBSource.execute
    held = HeldQueries()
    lock = threading.Lock()

    def slow(self, sql, params, *, timeout_s, cancel=None):
        with lock:
            held.ran.append(sql)
        assert held.gate.wait(30), "the test never let the query run"
        return original(self, sql, params, timeout_s=timeout_s, cancel=cancel)

    monkeypatch.setattr(DuckDBSource, "execute", slow)
    yield held
    held.gate.set()


def test_a_slow_query_answers_continue_wait_and_the_repeat_gets_its_rows(core, slow_duckdb, settings):
    # given
    settings.SEMANTIC = {**settings.SEMANTIC, "CONTINUE_WAIT_SECONDS": 0.05}

    # when: the query is held past the first request's wait and its first repeat's, then runs; the client repeats
    first = core.post("load", {"query": COUNT, "queryType": "multi"})
    repeats = [core.post("load", {"query": COUNT, "queryType": "multi"})]
    slow_duckdb.gate.set()

    def answered() -> bool:
        repeats.append(core.post("load", {"query": COUNT, "queryType": "multi"}))
        return "error" not in repeats[-1].json()

    wait_until(answered, "a repeat gets the rows", every=0)

    # then: 200 Continue wait, then the rows of the one query that ran, re-attached to
    assert first.status_code == 200
    assert first.json() == {"error": "Continue wait"}
    assert all(r.status_code == 200 for r in repeats)
    assert [r.json() for r in repeats[:-1]] == [{"error": "Continue wait"}] * (len(repeats) - 1)
    assert repeats[-1].json()["results"][0]["data"] == [{"orders.count": "2000"}]
    assert len(slow_duckdb.ran) == 1


def test_a_query_within_the_wait_answers_at_once(core, slow_duckdb, settings):
    settings.SEMANTIC = {**settings.SEMANTIC, "CONTINUE_WAIT_SECONDS": 5.0}
    # the query runs once it has started (the request waits on it meanwhile)
    opener = threading.Thread(
        target=lambda: (wait_until(lambda: slow_duckdb.ran, "the query starts"), slow_duckdb.gate.set())
    )
    opener.start()

    body = core.load(COUNT)
    opener.join()

    assert body["data"] == [{"orders.count": "2000"}]


# --- model files changing under the server --------------------------------------------------------------


@pytest.fixture
def model_dir(core, tmp_path, monkeypatch) -> Path:
    """A copy of the demo model the deployment serves; file changes are looked for on every request."""
    directory = tmp_path / "model"
    shutil.copytree(DEMO_MODEL, directory)
    deployment_configure(deployment=core.cast.deployment, model_dir=str(directory))
    monkeypatch.setattr(registry._registry, "check_interval", 0)
    return directory


def test_a_new_cube_file_is_served_without_a_restart(core, model_dir):
    # given
    before = core.get("load", {"query": {"measures": ["extra.count"]}})

    # when
    (model_dir / "cubes" / "extra.yml").write_text(EXTRA_CUBE)
    after = core.get("load", {"query": {"measures": ["extra.count"]}})

    # then
    assert before.status_code == 400
    assert after.status_code == 200
    assert after.json()["data"] == [{"extra.count": "2000"}]


def test_a_broken_file_names_file_line_and_member_while_the_last_good_model_serves(core, model_dir):
    # given: the model compiled once
    assert core.get("load", {"query": COUNT}).status_code == 200

    # when: a file breaks
    (model_dir / "cubes" / "extra.yml").write_text(BROKEN_CUBE)
    still = core.get("load", {"query": COUNT})
    meta = core.get("meta")
    broken = core.get("load", {"query": {"measures": ["extra.count"]}})

    # then
    assert still.status_code == 200
    assert still.json()["data"] == [{"orders.count": "2000"}]
    assert meta.status_code == 200
    assert broken.status_code == 400
    assert broken.json() == {
        "error": "Cube 'extra' not found for path 'extra.count'. Note: Model error: model/cubes/extra.yml:6: "
        'measure extra.count: unknown type "countish"; the last version that compiled is serving'
    }


def test_a_model_that_never_compiled_is_400_naming_the_file(core, model_dir):
    # given: a broken file before the first request
    (model_dir / "cubes" / "extra.yml").write_text(BROKEN_CUBE)

    # when
    meta = core.get("meta")
    load = core.get("load", {"query": COUNT})

    # then
    assert meta.status_code == load.status_code == 400
    assert meta.json() == load.json()
    assert meta.json() == {
        "error": 'Model error: model/cubes/extra.yml:6: measure extra.count: unknown type "countish"'
    }


def test_a_fixed_file_is_served_again(core, model_dir):
    # given
    (model_dir / "cubes" / "extra.yml").write_text(BROKEN_CUBE)
    assert core.get("meta").status_code == 400

    # when
    (model_dir / "cubes" / "extra.yml").write_text(EXTRA_CUBE)

    # then
    assert core.get("load", {"query": {"measures": ["extra.count"]}}).json()["data"] == [{"extra.count": "2000"}]


# --- injection attempts ---------------------------------------------------------------------------------

STATUS_FILTER = {"member": "orders.status", "operator": "equals"}


@pytest.mark.parametrize(
    "values",
    [
        ["x' OR '1'='1"],
        ["completed'; DROP TABLE orders; --"],
        ["completed\\' OR 1=1 --"],
        ["') OR TRUE --"],
    ],
)
def test_filter_values_are_bound_not_spliced(core, values):
    # when
    body = core.load({**COUNT, "filters": [{**STATUS_FILTER, "values": values}]})
    sql = core.post("sql", {"query": {**COUNT, "filters": [{**STATUS_FILTER, "values": values}]}}).json()

    # then: nothing matches, and the value is a parameter, not SQL
    assert body["data"] == [{"orders.count": "0"}]
    assert sql["sql"]["sql"][1] == values
    assert values[0] not in sql["sql"]["sql"][0]


@pytest.mark.parametrize("operator", ["contains", "startsWith", "endsWith"])
def test_like_wildcards_in_values_match_literally(core, operator):
    body = core.load({**COUNT, "filters": [{"member": "orders.status", "operator": operator, "values": ["%"]}]})

    assert body["data"] == [{"orders.count": "0"}]


@pytest.mark.parametrize(
    "query",
    [
        {"measures": ["orders.count; DROP TABLE orders"]},
        {"measures": ["orders.count", "orders.count) FROM users --"]},
        {"dimensions": ["orders.status' OR '1'='1"]},
        {"measures": ["orders.count"], "order": {"orders.count DESC; DROP TABLE orders --": "asc"}},
        {"measures": ["orders.count"], "order": {"orders.count": "desc; DROP TABLE orders"}},
        {"measures": ["orders.count"], "order": [["orders.count", "asc, (SELECT 1)"]]},
        {"measures": ["orders.count"], "segments": ["orders.completed OR 1=1"]},
        {"measures": ["orders.count"], "filters": [{"member": "orders.status OR 1=1", "operator": "set"}]},
        {"measures": ["orders.count"], "filters": [{**STATUS_FILTER, "operator": "equals OR 1=1", "values": ["x"]}]},
        {"measures": ["orders.count"], "timezone": "UTC'; DROP TABLE orders; --"},
        {
            "measures": ["orders.count"],
            "timeDimensions": [{"dimension": "orders.created_at", "granularity": "month') FROM users --"}],
        },
        {
            "measures": ["orders.count"],
            "timeDimensions": [{"dimension": "orders.created_at", "dateRange": ["2024-01-01'; DROP", "2024-02-01"]}],
        },
        {"measures": ["orders.count"], "limit": "1; DROP TABLE orders"},
    ],
    ids=[
        "measure",
        "measure-subquery",
        "dimension",
        "order-key",
        "order-direction",
        "order-array",
        "segment",
        "filter-member",
        "filter-operator",
        "timezone",
        "granularity",
        "date-range",
        "limit",
    ],
)
def test_sql_in_member_names_order_and_options_is_refused(core, query):
    # when
    response = core.get("load", {"query": query})

    # then: a 400 that says what is wrong, and the data is untouched
    assert response.status_code == 400
    assert list(response.json()) == ["error"]
    assert core.load(COUNT)["data"] == [{"orders.count": "2000"}]
    assert duck_rows(core.dataset, "SELECT count(*) FROM orders") == [(2000,)]
