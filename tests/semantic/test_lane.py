"""The Core Data API's lane (``embedadmin/semantic/lane.py``, ADR 0011): a repeated ``/v1/load`` answered
on the event loop with the bytes already given, and only while Django would give the same; any other load
of a caller the lane has verified answered by the view's own function, with Django's bodies and headers.

The application under test is the shipped stack in process: the lane in front of the WSGI bridge in front of
Django, driven as an ASGI server drives it, on the test database and the demo dataset. A counter between
the lane and the bridge tells which requests reached Django; a counter on ``service.finish_load`` (which the
view and the lane both call) tells which requests were answered afresh rather than from a kept answer.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, connection

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import Deployment
from embedadmin.accounts.tokens import deployment_token_revoke
from embedadmin.core.lanes import LanePool, connection_params
from embedadmin.core.wsgi_bridge import WSGIBridge
from embedadmin.semantic import lane as lane_module
from embedadmin.semantic import service
from embedadmin.semantic.cache import query_runner
from embedadmin.semantic.lane import LOOP_ROWS, LoadLane, time_key_of, time_shape
from embedadmin.semantic.service import ResultUse
from tests.asgi_driver import drive, http_scope

from .http_support import DEMO_MODEL, demo_duckdb, fresh_semantic_state, mint  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

QUERY = {"measures": ["orders.count"], "dimensions": ["orders.status"]}
# Time for a change's notification to reach the lane's listening connection.
NOTIFIED = 0.5


class _Counting:
    def __init__(self, app: Callable) -> None:
        self.app = app
        self.calls = 0

    async def __call__(self, scope, receive, send) -> None:
        self.calls += 1
        await self.app(scope, receive, send)


async def _request(app, method: str, path: str, headers: dict[str, str], body: bytes = b"", query: bytes = b""):
    return await drive(app, http_scope(method, path, headers, query), [body])


class _Computed:
    """Counts calls of ``service.finish_load``: answers made afresh, by Django's view or by the lane."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self.original = service.finish_load
        monkeypatch.setattr(service, "finish_load", self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.original(*args, **kwargs)


@pytest.fixture
def stack(on_postgres, acme, demo_duckdb, fresh_semantic_state, tmp_path, monkeypatch):  # noqa: F811
    """acme's deployment on a copy of the demo model; ``run(scenario)`` drives the lane in one event loop."""
    model_dir = tmp_path / "model"
    shutil.copytree(DEMO_MODEL, model_dir)
    accounts.deployment_configure(
        deployment=acme.deployment, model_dir=str(model_dir), data_source_url=accounts.duckdb_url(demo_duckdb)
    )
    django = _Counting(WSGIBridge(get_wsgi_application(), threads=2, release=close_old_connections))
    pool = LanePool(connection_params(connection.settings_dict))
    lane = LoadLane(django, pool=pool, base_path="/cubejs-api")
    path = f"/d/{acme.deployment.pk}/cubejs-api/v1/load"

    def run(scenario):
        async def main():
            try:
                return await scenario()
            finally:
                await pool.close()

        return asyncio.run(main())

    return {
        "lane": lane,
        "django": django,
        "computed": _Computed(monkeypatch),
        "path": path,
        "cast": acme,
        "model_dir": model_dir,
        "run": run,
    }


def _token(cast, **claims: Any) -> dict[str, str]:
    claims.setdefault("groups", ["admin"])
    return {"Authorization": mint(cast.created.deployment_api_secret, **claims), "Content-Type": "application/json"}


def _body(query: Any = QUERY, **params: Any) -> bytes:
    return json.dumps({"query": query, "queryType": "multi", **params}).encode()


def test_a_repeated_load_is_answered_by_the_lane_with_the_bytes_given(stack):
    lane, django, computed, path = stack["lane"], stack["django"], stack["computed"], stack["path"]
    headers = _token(stack["cast"], sub="ann")

    async def scenario():
        first = await _request(lane, "POST", path, headers, _body())
        after_first = django.calls
        second = await _request(lane, "POST", path, headers, _body())
        get_query = json.dumps(QUERY).encode()
        got_first = await _request(lane, "GET", path, headers, query=b"query=" + quote(get_query).encode())
        got_second = await _request(lane, "GET", path, headers, query=b"query=" + quote(get_query).encode())
        return first, after_first, second, got_first, got_second

    first, after_first, second, got_first, got_second = stack["run"](scenario)

    assert first[0] == 200
    assert json.loads(first[2])["results"][0]["data"]
    assert after_first == 1
    assert second == first  # status, headers (CORS included) and body
    assert got_second == got_first
    assert computed.calls == 2  # the first POST and the first GET
    assert django.calls == 1  # the first POST: the lane learns Django's headers, then answers the GET itself


def test_the_lane_answers_afresh_whatever_django_might_answer_differently(stack, monkeypatch):
    lane, django, computed, path, cast = stack["lane"], stack["django"], stack["computed"], stack["path"], stack["cast"]
    admin = _token(cast, sub="ann")
    # A finished query's outcome is reused for this long, also by no-cache requests (semantic/cache.py).
    monkeypatch.setattr(query_runner(), "job_result_ttl_s", 0.5)

    async def afresh(headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        before = computed.calls
        status, _, content = await _request(lane, "POST", path, headers, body)
        assert computed.calls == before + 1, body
        return status, content

    async def reaches_django(headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        before = django.calls
        status, _, content = await _request(lane, "POST", path, headers, body)
        assert django.calls == before + 1, body
        return status, content

    async def scenario():
        await _request(lane, "POST", path, admin, _body())
        outcomes = {}
        # another caller: other groups, so other policies and rows
        outcomes["other groups"] = await afresh(_token(cast, sub="bob", groups=[]), _body())
        # the same query written otherwise, and another cache mode
        outcomes["other bytes"] = await afresh(admin, _body() + b" ")
        await asyncio.sleep(1.1)  # the first query's outcome is no longer reused
        outcomes["no-cache"] = await afresh(admin, _body(cache="no-cache"))
        # the no-cache run wrote new rows to the result cache: the answer kept before is not current
        outcomes["after refresh"] = await afresh(admin, _body())
        # a token that is no longer good: expired, revoked
        outcomes["expired"] = await reaches_django(_token(cast, sub="ann", ttl_s=-60), _body())
        revoked = _token(cast, sub="ann", jti="token-1")
        served = await _request(lane, "POST", path, revoked, _body())  # the same viewer: the kept answer
        assert served[0] == 200
        await asyncio.to_thread(_revoke, cast.deployment.pk, "token-1")
        await asyncio.sleep(NOTIFIED)
        outcomes["revoked token"] = await reaches_django(revoked, _body())
        return outcomes

    outcomes = stack["run"](scenario)

    assert outcomes["other groups"][0] == 200
    assert outcomes["no-cache"][0] == 200
    assert outcomes["expired"][0] == 403
    assert outcomes["revoked token"] == (403, b'{"error":"Invalid token"}')


def _revoke(deployment_id: int, jti: str) -> None:
    deployment_token_revoke(deployment=Deployment.objects.get(pk=deployment_id), jti=jti, expires_at=datetime.now(UTC))
    close_old_connections()


def test_a_revoked_signing_secret_ends_the_answers_kept_for_its_tokens(stack):
    lane, django, path, cast = stack["lane"], stack["django"], stack["path"], stack["cast"]
    headers = _token(cast, sub="ann")

    async def scenario():
        await _request(lane, "POST", path, headers, _body())
        await asyncio.to_thread(_rotate_and_revoke, cast.deployment.pk)
        await asyncio.sleep(NOTIFIED)
        before = django.calls
        answer = await _request(lane, "POST", path, headers, _body())
        return answer, django.calls - before

    (status, _, content), reached = stack["run"](scenario)

    assert (status, content, reached) == (403, b'{"error":"Invalid token"}', 1)


def test_without_its_listening_connection_the_lane_reads_the_deployment_on_every_request(stack, monkeypatch):
    lane, path, cast = stack["lane"], stack["path"], stack["cast"]
    monkeypatch.setattr(lane._changes, "listen", lambda: None)  # never listening
    headers = _token(cast, sub="ann", jti="token-2")

    async def scenario():
        kept = await _request(lane, "POST", path, headers, _body())
        again = await _request(lane, "POST", path, headers, _body())
        await asyncio.to_thread(_revoke, cast.deployment.pk, "token-2")
        refused = await _request(lane, "POST", path, headers, _body())  # no wait for a notification
        return kept, again, refused

    kept, again, refused = stack["run"](scenario)

    assert again == kept
    assert (refused[0], refused[2]) == (403, b'{"error":"Invalid token"}')


def _rotate_and_revoke(deployment_id: int) -> None:
    deployment = Deployment.objects.get(pk=deployment_id)
    _, kept = accounts.deployment_secret_rotate(deployment=deployment)
    accounts.deployment_secrets_revoke_older(deployment=deployment, keep_id=kept.pk)
    close_old_connections()


def test_a_changed_model_file_ends_the_answers_kept_under_the_old_model(stack):
    lane, computed, path, cast, model_dir = (
        stack["lane"],
        stack["computed"],
        stack["path"],
        stack["cast"],
        stack["model_dir"],
    )
    headers = _token(cast, sub="ann")
    orders = next(p for p in Path(model_dir).rglob("*.yml") if "orders" in p.read_text())

    async def scenario():
        first = await _request(lane, "POST", path, headers, _body())
        orders.write_text(orders.read_text() + "\n# changed\n")
        await asyncio.sleep(1.1)  # the registry looks at the files at most once a second
        before = computed.calls
        again = await _request(lane, "POST", path, headers, _body())
        return first, again, computed.calls - before

    first, again, reached = stack["run"](scenario)

    assert reached == 1
    assert again[0] == 200
    assert json.loads(again[2])["results"][0]["data"] == json.loads(first[2])["results"][0]["data"]


def time_key(params: dict[str, Any] | None, now: datetime | None = None) -> tuple[str, ...] | None:
    """The lane's time key of a request's parameters (None when it leaves the request to Django)."""
    shape = time_shape(params)
    return None if shape is None else time_key_of(shape, now)


def test_answers_are_kept_per_local_time_at_the_finest_unit_the_query_names():
    def key(query: dict, at: datetime) -> tuple:
        return time_key({"query": query}, now=at)

    plain = {"measures": ["orders.count"]}
    hourly = {"timeDimensions": [{"dimension": "orders.created_at", "dateRange": "from 2 hours ago to now"}]}
    tokyo = {**plain, "timezone": "Asia/Tokyo"}
    morning, evening = datetime(2026, 3, 1, 9, 5, tzinfo=UTC), datetime(2026, 3, 1, 16, 5, tzinfo=UTC)

    assert key(plain, morning) == key(plain, evening)  # the same day in UTC
    assert key(hourly, morning) != key(hourly, morning.replace(hour=10))
    assert key(hourly, morning) == key(hourly, morning.replace(minute=59))
    assert key(tokyo, morning) != key(tokyo, evening)  # 18:05 and 01:05 the next day in Tokyo
    assert key({**plain, "timezone": "Mars/Olympus"}, morning) is None
    assert time_key({"query": "not json"}) is None


def test_the_lanes_time_key_follows_the_clock_to_the_second(monkeypatch):
    import types

    from embedadmin.semantic import lane as lane_module

    clock = {"now": datetime(2026, 3, 1, 9, 59, 59, 200_000, tzinfo=UTC).timestamp()}
    fake_time = types.SimpleNamespace(time=lambda: clock["now"], monotonic=lane_module.time.monotonic)
    monkeypatch.setattr(lane_module, "time", fake_time)
    lane = LoadLane(lambda *a: None, pool=types.SimpleNamespace(params={}), base_path="/cubejs-api")
    hourly = time_shape({"query": {"timeDimensions": [{"dimension": "o.c", "dateRange": "from 2 hours ago to now"}]}})
    by_second = time_shape({"query": {"measures": ["o.n"], "timezone": "Asia/Kathmandu", "x": "second"}})
    assert hourly is not None
    assert by_second is not None

    def keys() -> tuple:
        at = datetime.fromtimestamp(clock["now"], UTC)
        assert lane._time_key(hourly) == time_key_of(hourly, at)
        assert lane._time_key(by_second) == time_key_of(by_second, at)
        return lane._time_key(hourly), lane._time_key(by_second)

    before = keys()
    clock["now"] += 0.7  # 09:59:59.9, the same second
    assert keys() == before
    clock["now"] += 0.15  # 10:00:00.05 UTC: another hour in UTC, another second in Kathmandu (UTC+05:45)
    after = keys()
    assert after[0] != before[0]
    assert after[1] != before[1]


def test_a_result_past_its_refresh_interval_is_not_current():
    from embedadmin.semantic.lane import _rows_current

    runner = query_runner()
    now = datetime.now(UTC).timestamp()
    _written(runner, "k-fresh", now)
    _written(runner, "k-old", now - 20)

    assert _rows_current((ResultUse("k-fresh", now, every=10),))
    assert not _rows_current((ResultUse("k-old", now - 20, every=10),))
    assert not _rows_current((ResultUse("k-fresh", now - 1, every=10),))  # another write than the one kept
    assert not _rows_current((ResultUse("k-unknown", now, every=10),))


def _written(runner, key: str, at: float) -> None:
    """What a query job does with its rows: the result in the cache, and this process's stamp."""
    runner._set(f"result:{key}", (at, None), 3600)
    runner._stamp(key, at)


def test_a_result_the_cache_dropped_is_not_current():
    from embedadmin.semantic.lane import _rows_current

    runner = query_runner()
    now = datetime.now(UTC).timestamp()
    _written(runner, "k-culled", now)
    assert _rows_current((ResultUse("k-culled", now, every=10),))

    runner._cache.delete(f"{runner._namespace}:result:k-culled")  # culled, or the cache cleared

    assert not _rows_current((ResultUse("k-culled", now, every=10),))


def _cases() -> list[tuple[str, str, bytes, bytes]]:
    """(name, method, body, query string) of loads the lane answers itself: the same as Django, errors included."""
    amount = {**QUERY, "filters": [{"member": "orders.amount", "operator": "gt", "values": ["120.5"]}]}

    def valued(value: str) -> bytes:
        return _body({**amount, "filters": [{**amount["filters"][0], "values": [value]}]})

    get_query = b"query=" + quote(json.dumps(amount)).encode() + b"&queryType=multi"
    return [
        ("a filter value", "POST", _body(amount), b""),
        (
            "another filter value",
            "POST",
            valued("7"),
            b"",
        ),
        (
            "injection in a value",
            "POST",
            valued("1' OR '1'='1"),
            b"",
        ),
        ("compact", "POST", _body({**QUERY, "responseFormat": "compact"}), b""),
        ("not multi", "POST", json.dumps({"query": amount}).encode(), b""),
        ("two queries", "POST", _body([QUERY, {"measures": ["orders.count"]}]), b""),
        ("GET", "GET", b"", get_query),
        ("unknown member", "POST", _body({"measures": ["orders.nope"]}), b""),
        ("query not an object", "POST", _body(5), b""),
        ("no query", "POST", b"{}", b""),
        ("queryType not a string", "POST", json.dumps({"query": QUERY, "queryType": 3}).encode(), b""),
        ("unknown cache mode", "POST", _body(QUERY, cache="sometimes"), b""),
        (
            "NUL in a value",
            "POST",
            valued("a\u0000"),
            b"",
        ),
        ("limit above the maximum", "POST", _body({**QUERY, "limit": 10**9}), b""),
        ("too many query parameters", "GET", b"", get_query + b"&a=1" * 1000),
        ("a NUL in the query string", "GET", b"", get_query + b"&x=%00"),
        (MANY_ROWS, "POST", _body({"dimensions": ["orders.id", "orders.amount"], "limit": LOOP_ROWS + 100}), b""),
    ]


# More rows than the lane shapes on the event loop: its answer is made on a worker thread.
MANY_ROWS = "more rows than are shaped on the event loop"
# Requests the lane cannot read as Django does (their time zones, a query string Django refuses): Django answers.
DJANGOS = {"query not an object", "no query", "too many query parameters", "a NUL in the query string"}


def test_the_lanes_own_answers_are_djangos(stack, monkeypatch):
    lane, django, path, cast = stack["lane"], stack["django"], stack["path"], stack["cast"]
    headers = _token(cast, sub="ann")
    cases = _cases()
    # A cube over a table the data has not: its load is the data source's failure, a 500.
    (stack["model_dir"] / "cubes" / "ghosts.yml").write_text(
        "cubes:\n  - name: ghosts\n    sql_table: no_such_table\n"
        "    measures:\n      - name: count\n        type: count\n"
    )
    cases.append(("a data source failure", "POST", _body({"measures": ["ghosts.count"]}), b""))
    off_the_loop = []
    finished = lane_module._finished
    monkeypatch.setattr(
        lane_module, "_finished", lambda work, results: off_the_loop.append(1) or finished(work, results)
    )

    async def scenario():
        await _request(lane, "POST", path, headers, _body())  # Django's first answer: the lane learns its headers
        answers = {}
        for name, method, body, query in cases:
            before = django.calls
            by_lane = await _request(lane, method, path, headers, body, query)
            assert django.calls == before + (name in DJANGOS), name
            by_django = await _request(django.app, method, path, headers, body, query)
            answers[name] = by_lane, by_django
        return answers

    answers = stack["run"](scenario)

    statuses = set()
    for name, (by_lane, by_django) in answers.items():
        assert by_lane == by_django, name
        statuses.add(by_lane[0])
    assert len(json.loads(answers[MANY_ROWS][0][2])["results"][0]["data"]) == LOOP_ROWS + 100
    assert off_the_loop == [1]  # only the large answer was shaped off the event loop
    assert statuses == {200, 400, 500}  # 500: the data source failed
