"""What the one ``/v1/load`` path remembers, and when it must not: kept answers, verified callers, round trips.

A repeated request is answered from what the process kept (``semantic/answers.py``, ``semantic/routing.py``), but
never after anything it depends on changed: a fresher result, a revoked token or secret, another caller.
"""
# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import datetime as dt
import uuid

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from embedadmin.accounts.services import deployment_secret_rotate, deployment_secrets_revoke_older
from embedadmin.accounts.tokens import deployment_token_revoke
from tests.semantic.http_support import core, demo_duckdb, fresh_semantic_state  # noqa: F401
from tests.tokens import sign_token

BY_STATUS = {"measures": ["orders.count"], "dimensions": ["orders.status"], "order": {"orders.status": "asc"}}


def by_amount_over(amount: int) -> dict:
    return {
        "measures": ["orders.count"],
        "filters": [{"member": "orders.amount", "operator": "gt", "values": [amount]}],
    }


def test_a_repeated_load_and_a_new_one_read_no_application_database_row(core):
    token = core.token()
    core.load(BY_STATUS, token=token)

    with CaptureQueriesContext(connection) as repeated:
        again = core.load(BY_STATUS, token=token)
    with CaptureQueriesContext(connection) as new_query:
        other = core.load(by_amount_over(100), token=token)

    assert repeated.captured_queries == []
    assert new_query.captured_queries == []
    assert again["data"]
    assert other["data"]


def test_a_kept_answer_is_the_same_bytes_as_the_first(core):
    token = core.token()

    first = core.post("load", {"query": BY_STATUS}, token=token)
    second = core.post("load", {"query": BY_STATUS}, token=token)

    assert first.status_code == second.status_code == 200
    assert first.content == second.content


def test_a_load_after_a_no_cache_refresh_gets_the_refreshed_rows(core):
    token = core.token()
    kept = core.load(BY_STATUS, token=token)

    refreshed = core.load(BY_STATUS, token=token, cache="no-cache")
    after = core.load(BY_STATUS, token=token)

    assert refreshed["lastRefreshTime"] > kept["lastRefreshTime"]
    assert after["lastRefreshTime"] == refreshed["lastRefreshTime"]


def test_every_no_cache_load_reads_the_data_source(core):
    token = core.token()

    times = [core.load(BY_STATUS, token=token, cache="no-cache")["lastRefreshTime"] for _ in range(3)]

    assert len(set(times)) == 3


def test_another_caller_does_not_get_an_answer_kept_for_the_first(core):
    query = {"measures": ["sales.order_count"]}
    admin = core.load(query, token=core.token())

    france = core.load(query, token=core.token(groups=["regional"], userAttributes={"country": "France"}))
    germany = core.load(query, token=core.token(groups=["regional"], userAttributes={"country": "Germany"}))

    counts = [int(body["data"][0]["sales.order_count"]) for body in (admin, france, germany)]
    assert counts[1] + counts[2] < counts[0]
    assert counts[1] != counts[2]


def test_a_revoked_token_is_refused_at_once_though_its_answer_was_kept(core):
    jti = str(uuid.uuid4())
    token = core.token(jti=jti)
    core.load(BY_STATUS, token=token)

    deployment_token_revoke(deployment=core.cast.deployment, jti=jti, expires_at=timezone.now() + dt.timedelta(hours=1))
    response = core.post("load", {"query": BY_STATUS}, token=token)

    assert response.status_code == 403
    assert response.json() == {"error": "Invalid token"}


def test_a_token_of_a_revoked_secret_is_refused_at_once_though_its_answer_was_kept(core):
    old_token = core.token()
    core.load(BY_STATUS, token=old_token)
    new_secret, _ = deployment_secret_rotate(deployment=core.cast.deployment)

    deployment_secrets_revoke_older(deployment=core.cast.deployment)
    refused = core.post("load", {"query": BY_STATUS}, token=old_token)
    accepted = core.post("load", {"query": BY_STATUS}, token=sign_token(new_secret, groups=["admin"]))

    assert refused.status_code == 403
    assert accepted.status_code == 200
