"""generate-session in one PostgreSQL statement (``embedding/in_database.py``, ADR 0010) against the
full path: the same requests, sent to two accounts with the same catalogs, one served by the
function and one by the full path, must get the same answers and leave the same rows.

The requests are drawn from a seeded generator over everything a read-only request may carry:
known and unknown attributes and groups, values of the right and the wrong type, nulls that clear,
defaults, profile properties, embed tenant names, chat settings, and the account's cap.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from embedadmin.accounts.models import TenantSettings
from embedadmin.directory.models import AttributeValue, ExternalUser, GroupMembership
from embedadmin.embedding import in_database
from embedadmin.embedding.models import EmbedSession
from tests.conftest import Cast
from tests.embedding.support import GENERATE_URL

pytestmark = pytest.mark.postgres

ATTRIBUTES = [
    ("country", "string", {}),
    ("level", "number", {"defaultValue": "5"}),
    ("ratio", "number", {"defaultValue": "2.50"}),
    ("regions", "string_array", {"defaultValue": '["all"]'}),
    ("scores", "number_array", {}),
    ("nick", "string", {"defaultValue": "anon"}),
]
# Sorted by code point, "Zeta" < "alpha" < "Ünïcode": the claims' order must not depend on a collation.
GROUPS = ["alpha", "Zeta", "Ünïcode", "sales", "emea"]


def _value(rng: random.Random, type_: str) -> Any:
    return {
        "string": lambda: rng.choice(["FR", "DE", "", "ünï"]),
        "number": lambda: rng.choice([0, 7, -3, 1.5, 10**12]),
        "string_array": lambda: rng.sample(["emea", "amer", "apac", "x"], rng.randint(0, 3)),
        "number_array": lambda: [rng.choice([1, 2.5, -4]) for _ in range(rng.randint(0, 3))],
    }[type_]()


def _wrong_value(rng: random.Random, type_: str) -> Any:
    return {
        "string": lambda: rng.choice([1, ["FR"], True]),
        "number": lambda: rng.choice(["7", [7], True]),
        "string_array": lambda: rng.choice(["emea", [1], ["a", 2]]),
        "number_array": lambda: rng.choice([1, ["1"], [1, True]]),
    }[type_]()


def _request(rng: random.Random) -> dict[str, Any]:
    """One read-only generate-session body (without ``deploymentId``)."""
    body: dict[str, Any] = {"externalId": f"User-{rng.randint(0, 9)}@Example.com"}
    if rng.random() < 0.3:
        body["email"] = rng.choice(["a@example.com", "b@example.org"])
    if rng.random() < 0.3:
        keys = rng.sample(["displayName", "picture"], rng.randint(0, 2))
        body["userProfile"] = {
            k: rng.choice(["Ann", ""]) if k == "displayName" else "https://img.example.com/a.png" for k in keys
        }
    if rng.random() < 0.2:
        body["embedTenantName"] = rng.choice(["customer-one", "customer-two"])
    if rng.random() < 0.8:
        attributes = []
        for name, type_, _ in rng.sample(ATTRIBUTES, rng.randint(0, 4)):
            roll = rng.random()
            value = None if roll < 0.15 else _wrong_value(rng, type_) if roll < 0.2 else _value(rng, type_)
            attributes.append({"name": name, "value": value})
        if rng.random() < 0.05:
            attributes.append({"name": "no-such-attribute", "value": "x"})
        body["userAttributes"] = attributes
    roll = rng.random()
    if roll < 0.7:
        groups = rng.sample(GROUPS, rng.randint(0, 3))
        if rng.random() < 0.05:
            groups.append("no-such-group")
        if groups and rng.random() < 0.1:
            groups.append(groups[0])  # a name twice
        body["groups"] = groups
    if rng.random() < 0.5:
        body["securityContext"] = {"tenantId": rng.randint(1, 3), "nested": {"k": [1, "two"]}}
    if rng.random() < 0.3:
        body["settings"] = {"showDashboardChat": rng.choice([True, False, None])}
    return body


def _snapshot(cast: Cast) -> dict[str, Any]:
    """Everything the request may have written for the account, without ids and wall-clock times."""
    users = {}
    for user in ExternalUser.objects.filter(account=cast.account).select_related("embed_tenant"):
        users[user.external_id] = {
            "email": user.email,
            "display_name": user.display_name,
            "picture": user.picture,
            "embed_tenant": user.embed_tenant.name if user.embed_tenant else None,
            "groups": sorted(GroupMembership.objects.filter(user=user).values_list("group__name", flat=True)),
            "values": dict(AttributeValue.objects.filter(user=user).values_list("definition__name", "value")),
        }
    sessions = [
        {
            "user": session.external_user.external_id,
            "embed_tenant": session.embed_tenant.name if session.embed_tenant else None,
            "creator_mode": session.creator_mode,
            "show_dashboard_chat": session.show_dashboard_chat,
            "claims": session.claims,
            # the full path stamps created_at a moment after it computes expires_at
            "ttl_seconds": round((session.expires_at - session.created_at).total_seconds()),
        }
        for session in EmbedSession.objects.filter(account=cast.account)
        .select_related("external_user", "embed_tenant")
        .order_by("id")
    ]
    counter = TenantSettings.objects.get(account=cast.account).external_user_count
    return {"users": users, "sessions": sessions, "counter": counter}


@pytest.fixture
def function_calls(monkeypatch) -> list[str]:
    """Records each call of the function: ``"ok"`` or ``"declined"``."""
    calls: list[str] = []
    real = in_database.session_generate

    def recording(params: list[Any]) -> None:
        try:
            real(params)
        except in_database.Declined:
            calls.append("declined")
            raise
        calls.append("ok")

    monkeypatch.setattr(in_database, "session_generate", recording)
    return calls


def _catalog(cast: Cast, tenant_attribute, tenant_group, patch_tenant_settings) -> None:
    for name, type_, extra in ATTRIBUTES:
        tenant_attribute(cast, name, type_, **extra)
    for name in GROUPS:
        tenant_group(cast, name)
    patch_tenant_settings(cast, maxExternalUsers=7)


def test_the_function_and_the_full_path_answer_and_write_the_same(
    on_postgres, api, make_account, tenant_attribute, tenant_group, patch_tenant_settings, function_calls, monkeypatch
):
    # given: two accounts with the same catalogs and a cap of 7 users (10 external ids are drawn)
    served, full = make_account("served"), make_account("fullpath")
    for cast in (served, full):
        _catalog(cast, tenant_attribute, tenant_group, patch_tenant_settings)
    rng = random.Random(20261121)
    statuses: set[int] = set()

    for step in range(160):
        body = _request(rng)
        if rng.random() < 0.03:
            body["deploymentId"] = 999_999  # not the account's
        requests = {cast.account.name: {"deploymentId": cast.deployment.pk, **body} for cast in (served, full)}

        # when
        served_response = api.post_json(GENERATE_URL, requests["served"], **served.api_key_headers)
        with monkeypatch.context() as patch:
            patch.setattr(in_database, "handles", lambda data: False)
            full_response = api.post_json(GENERATE_URL, requests["fullpath"], **full.api_key_headers)

        # then
        answers = []
        for response in (served_response, full_response):
            payload = response.json()
            answers.append((response.status_code, "sessionId" in payload, payload.get("error")))
        assert answers[0] == answers[1], (step, body, answers)
        served_rows, full_rows = _snapshot(served), _snapshot(full)
        assert served_rows == full_rows, (step, body, served_rows, full_rows)

        statuses.add(served_response.status_code)

    # the function served most requests, declined some, and every kind of answer occurred
    assert function_calls.count("ok") > 80
    assert function_calls.count("declined") > 5
    assert statuses == {200, 400, 404, 429}


def test_a_common_request_is_one_statement_after_the_key_lookup(on_postgres, api, acme, tenant_attribute, tenant_group):
    # given
    tenant_attribute(acme, "country", "string")
    tenant_group(acme, "sales")
    body = {
        "deploymentId": acme.deployment.pk,
        "externalId": "alice",
        "userAttributes": [{"name": "country", "value": "FR"}],
        "groups": ["sales"],
    }

    # when
    with CaptureQueriesContext(connection) as queries:
        response = api.post_json(GENERATE_URL, body, **acme.api_key_headers)

    # then: the key lookup, then the function (inside the test's transaction, within a savepoint)
    assert response.status_code == 200
    statements = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert len(statements) == 2, statements
    assert "embedadmin_session_generate_v2" in statements[1]
    session = EmbedSession.objects.get(account=acme.account)
    assert session.claims["groups"] == ["sales"]
    assert session.claims["userAttributes"] == {"country": "FR"}


@pytest.mark.django_db(transaction=True)
def test_a_declined_request_in_autocommit_writes_nothing_and_gets_the_full_paths_answer(
    on_postgres, api, make_account, tenant_group, patch_tenant_settings, function_calls
):
    # given: outside any transaction (as served), one place left under the cap
    cast = make_account("capped")
    tenant_group(cast, "sales")
    api.post_json(GENERATE_URL, {"deploymentId": cast.deployment.pk, "externalId": "first"}, **cast.api_key_headers)
    patch_tenant_settings(cast, maxExternalUsers=1)
    before = _snapshot(cast)

    # when: a new user, with a membership the function writes before it meets the cap
    response = api.post_json(
        GENERATE_URL,
        {"deploymentId": cast.deployment.pk, "externalId": "second", "groups": ["sales"]},
        **cast.api_key_headers,
    )

    # then
    assert response.status_code == 429
    assert response.json() == {"error": "External user limit reached: this account allows at most 1 external users"}
    assert function_calls == ["ok", "declined"]
    assert _snapshot(cast) == before
