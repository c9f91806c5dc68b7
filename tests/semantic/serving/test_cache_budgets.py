# ruff: noqa: F401, F811  (fixtures imported from http_support are used as test arguments, as pytest wants)
"""Every in-process cache is bounded in bytes (issue 17): thousands of distinct large queries, with distinct filter
values and distinct shapes, leave each cache under its budget, and queries differing only in their values share
one compiled entry. Correctness first: every answer is the one an uncached run gives."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from django.core.cache import caches

from embedadmin.core.memory import BoundedLocMemCache, ByteLRU, budgets
from embedadmin.core.versions import ProcessMemory
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.modeling.registry import ModelRegistry
from embedadmin.semantic.serving import services
from embedadmin.semantic.serving.answers import AnswerMemory, ResultUse
from embedadmin.semantic.sql import planning
from embedadmin.semantic.sql.builder import compile_query
from embedadmin.semantic.sql.planning import compiled_cache, plan_queries
from embedadmin.semantic.sql.shapes import same_statement
from tests.semantic.http_support import CoreApi, core, demo_duckdb, fresh_semantic_state


def _large_query(k: int, values: int = 400) -> dict[str, Any]:
    """A query with ``values`` distinct filter values (differing for every ``k``) and one of a few dozen shapes."""
    dimensions = [["orders.status"], ["orders.size"], ["orders.status", "orders.size"], []][k % 4]
    operator = ["equals", "notEquals"][k // 4 % 2]
    count = values + k % 5  # the number of values is part of the shape too
    return {
        "measures": ["orders.count", "orders.total_amount"][: 1 + k // 8 % 2],
        "dimensions": dimensions,
        "filters": [
            {"member": "orders.status", "operator": operator, "values": [f"q{k}-v{i}" for i in range(count)]},
            {"member": "orders.amount", "operator": "gt", "values": [str(k)]},
        ],
        "limit": 100 + k % 3,
    }


def test_the_byte_lru_drops_the_least_recently_used_beyond_its_budget():
    lru: ByteLRU[str, str] = ByteLRU("test", 1000, overhead=0)
    for key in "abc":
        lru.put(key, key, 300)
    assert lru.held_bytes == 900
    lru.get("a")
    lru.put("d", "d", 300)  # 1200 bytes: "b", the least recently used, makes room

    assert [lru.peek(k) for k in "abcd"] == ["a", None, "c", "d"]
    assert lru.held_bytes == 900
    lru.put("huge", "x", 1001)  # larger than the whole budget: not kept, nothing dropped for it
    assert lru.peek("huge") is None
    assert lru.held_bytes == 900


def test_queries_differing_only_in_their_values_share_one_compiled_entry(core: CoreApi):
    model = services.served_model(deployment=core.cast.deployment, ctx=None).model
    ctx = QueryContext()
    cache = compiled_cache()
    cache.clear()

    for k in range(50):
        query = {
            "measures": ["orders.count"],
            "filters": [{"member": "orders.status", "operator": "equals", "values": [f"s{k}-{i}" for i in range(100)]}],
        }
        planned = plan_queries(model, query, ctx).queries[0]
        assert same_statement(planned, compile_query(model, planned.query, ctx))

    assert len(cache) == 1


def test_hundreds_of_distinct_large_queries_keep_every_cache_under_its_budget(core: CoreApi, monkeypatch):
    """600 distinct large queries through ``/v1/load`` (distinct values, every one of the 240 combinations of what
    ``_large_query`` varies, so all its shapes), with budgets small enough that each cache fills and must evict:
    every answer is right, and every cache stays under its budget. (The drills' soak runs 5,000 against a real
    deployment at its real budgets: ``drills/drill_soak_and_inputs.py``.)"""
    budget = 384 * 1024
    total = 600
    small = {
        "compiled": ByteLRU("compiled queries", budget),
        "answers": AnswerMemory(max_bytes=budget),
    }
    monkeypatch.setattr(planning, "_compiled", small["compiled"])
    monkeypatch.setattr(services, "_answers", small["answers"])
    local = BoundedLocMemCache("budget-test", {"OPTIONS": {"MAX_BYTES": budget, "MAX_ENTRIES": 100_000}})
    model = services.served_model(deployment=core.cast.deployment, ctx=None).model
    ctx = QueryContext()

    for k in range(total):
        query = _large_query(k)
        body = core.load(query)
        if k % 50 == 0:  # what the cache gave is what a full compile gives
            planned = plan_queries(model, query, ctx).queries[0]
            assert same_statement(planned, compile_query(model, planned.query, ctx))
            if query["filters"][0]["operator"] == "equals":  # no order has these made-up statuses
                assert all(int(row.get("orders.count", 0)) == 0 for row in body["data"])
        local.set(f"result-{k}", body["data"] or [0] * 500)
        assert small["compiled"].held_bytes <= budget
        assert small["answers"].held_bytes <= budget
        assert local.held_bytes <= budget

    shapes = {(k % 4, k // 4 % 2, k % 5, k // 8 % 2, k % 3) for k in range(total)}  # what _large_query varies
    assert len(small["compiled"]) <= len(shapes)  # keyed by shape: not one entry per distinct query
    assert len(small["answers"]._kept) < total  # evicted by bytes...
    assert small["answers"].held_bytes > budget // 2  # ...once full, not because nothing was kept
    assert local.held_bytes > budget // 2
    for name, held, maximum, _count in budgets():
        assert held <= maximum, name


def test_the_local_memory_cache_is_bounded_in_bytes():
    local = BoundedLocMemCache("bounded-test", {"OPTIONS": {"MAX_BYTES": 100_000, "MAX_ENTRIES": 10_000}})
    local.clear()
    value = "x" * 1000
    size = len(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    for k in range(1000):
        local.set(f"k{k}", value)
        assert local.held_bytes <= 100_000

    assert local.get("k999") == value  # the most recent is kept...
    assert local.get("k0") is None  # ...the oldest dropped
    assert 100_000 // (size + 300) <= len(local._cache) <= 100_000 // size
    local.delete("k999")
    local.set("big", "y" * 200_000)  # larger than the whole budget: not kept
    assert local.get("big") is None
    local.clear()
    assert local.held_bytes == 0


def test_the_default_cache_of_an_install_without_redis_is_the_bounded_one(settings):
    assert settings.CACHES["default"]["BACKEND"] in (
        "embedadmin.core.memory.BoundedLocMemCache",
        "django.core.cache.backends.redis.RedisCache",
    )
    if "BoundedLocMemCache" in settings.CACHES["default"]["BACKEND"]:
        assert isinstance(caches["default"], BoundedLocMemCache)


def test_process_memory_is_bounded_in_bytes():
    memory: ProcessMemory[str] = ProcessMemory(max_entries=100_000, max_bytes=200_000, max_age_s=60)
    for k in range(2000):
        memory.put(f"key-{k}", "v" * 1000, "1")
        assert memory.held_bytes <= 200_000

    assert memory.get("key-1999", "1") == "v" * 1000
    assert memory.get("key-0", "1") is None


def test_the_model_registry_keeps_at_most_its_models(tmp_path):
    registry = ModelRegistry(max_models=3)
    for k in range(6):
        directory = tmp_path / f"m{k}"
        directory.mkdir()
        registry.get(directory, dialect="duckdb")
        assert len(registry) <= 3
    assert len(registry) == 3


def test_answer_memory_keeps_one_answer_per_kib_of_budget_at_most():
    memory = AnswerMemory(max_bytes=128 * 1024)
    fresh = (ResultUse(key="r", refreshed_at=1e12, every=1e12),)
    for k in range(10_000):
        memory.keep(("key", k), b"{}", fresh)

    assert len(memory._kept) == 128
