"""Database round trips of generate-session: a deterministic guard on its cost, whatever the machine's speed.

Counted with Django's query capture, which sees every round trip, the transaction's BEGIN and COMMIT included
(the tests run in real transactions, as the server does). Each write is one statement: the user upsert, the
memberships (read for an existing user, inserted for a new one), the attribute values, the session, and for a new
user its place under the cap. The API key,
the deployment and the catalog are remembered by the process after the first request (``core/versions.py``), so
the counted request is a later one, as on any busy install.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from embedadmin.audit.models import DailyUsage

ATTRIBUTES = [
    {"name": "region", "type": "string"},
    {"name": "level", "type": "number"},
    {"name": "teams", "type": "string_array"},
]


pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
def catalog(acme, tenant_attribute, tenant_group):
    """Three tenant-wide attribute definitions and two groups, through the Platform API and SCIM; and today's
    session counters (each of their shards exists after a day's first few mints, so a later mint updates one)."""
    for definition in ATTRIBUTES:
        tenant_attribute(acme, definition["name"], definition["type"])
    for name in ("sales", "support"):
        tenant_group(acme, name)
    today = timezone.now().date()
    DailyUsage.objects.bulk_create(
        DailyUsage(account=acme.account, day=today, kind=DailyUsage.Kind.SESSIONS, shard=shard, count=0)
        for shard in range(DailyUsage.SHARDS)
    )
    return acme


def body(external_id: str) -> dict:
    return {
        "externalId": external_id,
        "email": f"{external_id}@example.com",
        "userAttributes": [
            {"name": "region", "value": "emea"},
            {"name": "level", "value": 3},
            {"name": "teams", "value": ["a", "b"]},
        ],
        "groups": ["sales", "support"],
        "securityContext": {"tenant": 7},
    }


def statements(generate, cast, external_id: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = generate(cast, **body(external_id))
    assert response.status_code == 200, response.content
    return [query["sql"] for query in captured.captured_queries]


def test_minting_for_an_existing_user_takes_seven_round_trips(catalog, generate):
    statements(generate, catalog, "warm-up")
    statements(generate, catalog, "ann")

    sent = statements(generate, catalog, "ann")

    assert [s.split(" ")[0] for s in sent] == ["BEGIN", "INSERT", "SELECT", "INSERT", "INSERT", "UPDATE", "COMMIT"], (
        sent
    )


def test_minting_for_a_new_user_takes_eight_round_trips(catalog, generate):
    statements(generate, catalog, "warm-up")

    sent = statements(generate, catalog, "bob")

    assert [s.split(" ")[0] for s in sent] == [
        "BEGIN",
        "INSERT",
        "INSERT",
        "INSERT",
        "INSERT",
        "UPDATE",
        "UPDATE",
        "COMMIT",
    ], sent


def test_the_days_sessions_counter_counts_each_mint_once(catalog, generate):
    for external_id in ("warm-up", "ann", "ann", "bob"):
        statements(generate, catalog, external_id)

    counters = DailyUsage.objects.filter(account=catalog.account, kind=DailyUsage.Kind.SESSIONS)
    assert sum(counters.values_list("count", flat=True)) == 4
