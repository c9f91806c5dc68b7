"""Concurrency on PostgreSQL: real threads, each with its own database connection, released together by a
barrier so their requests overlap. Each scenario runs a few rounds to make the race real.

- the external-user cap under parallel clients racing for the last places;
- the same new externalId from many clients at once;
- creator-mode definitions for a new embed tenant from many clients at once;
- single-use exchange; revoke racing exchange.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from embedadmin.accounts.models import TenantSettings
from embedadmin.core import credentials
from embedadmin.directory.models import AttributeDefinition, EmbedTenant, ExternalUser, Group
from embedadmin.embedding.models import EmbedSession
from tests.conftest import Cast, JsonClient, run_concurrently
from tests.embedding.support import CONTEXT_URL, GENERATE_URL, REVOKE_URL, TOKEN_URL, bearer

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ROUNDS = 3


def _generate(cast: Cast, **fields) -> Callable[[], tuple[int, dict]]:
    """A generate-session request to run in a thread: returns (status, body)."""

    def call() -> tuple[int, dict]:
        body = {"deploymentId": cast.deployment.pk, **fields}
        response = JsonClient().post_json(GENERATE_URL, body, **cast.api_key_headers)
        return response.status_code, response.json()

    return call


def _exchange(session_id: str) -> Callable[[], tuple[int, dict]]:
    def call() -> tuple[int, dict]:
        response = JsonClient().post_json(TOKEN_URL, {"sessionId": session_id})
        return response.status_code, response.json()

    return call


def _revoke(cast: Cast, session_id: str) -> Callable[[], tuple[int, bytes]]:
    def call() -> tuple[int, bytes]:
        response = JsonClient().post_json(REVOKE_URL, {"sessionId": session_id}, **cast.api_key_headers)
        return response.status_code, response.content

    return call


def test_parallel_clients_racing_for_the_last_places_never_overshoot_the_cap(
    on_postgres, new_session, patch_tenant_settings, acme
):
    # given: 3 users already; two existing users keep asking for sessions throughout
    for external_id in ("alice", "bob", "carol"):
        new_session(acme, externalId=external_id)
    limit = 3

    for round_ in range(ROUNDS):
        limit += 2
        patch_tenant_settings(acme, maxExternalUsers=limit)
        sessions_before = EmbedSession.objects.count()
        new_users = [_generate(acme, externalId=f"round-{round_}-user-{n}") for n in range(14)]
        existing_users = [_generate(acme, externalId="alice"), _generate(acme, externalId="bob")]

        # when
        results = run_concurrently(new_users + existing_users)

        # then: exactly the two free places were granted; the existing users were never refused
        new_statuses = Counter(status for status, _ in results[:14])
        assert new_statuses == {200: 2, 429: 12}
        assert [status for status, _ in results[14:]] == [200, 200]
        limit_body = {"error": f"External user limit reached: this account allows at most {limit} external users"}
        assert all(body == limit_body for status, body in results if status == 429)
        assert ExternalUser.objects.filter(account=acme.account).count() == limit
        assert TenantSettings.objects.get(account=acme.account).external_user_count == limit
        assert EmbedSession.objects.count() == sessions_before + 4


def test_the_same_new_external_id_from_many_clients_is_one_user(on_postgres, tenant_group, tenant_attribute, acme):
    # given
    tenant_group(acme, "hq")
    tenant_attribute(acme, "plan", "string")

    for round_ in range(ROUNDS):
        external_id = f"shared-{round_}"
        request = _generate(
            acme, externalId=external_id, groups=["hq"], userAttributes=[{"name": "plan", "value": "gold"}]
        )

        # when
        results = run_concurrently([request] * 8)

        # then
        assert [status for status, _ in results] == [200] * 8
        user = ExternalUser.objects.get(account=acme.account, external_id=external_id)
        assert list(user.memberships.values_list("group__name", flat=True)) == ["hq"]
        assert list(user.attribute_values.values_list("value", flat=True)) == ["gold"]
        assert EmbedSession.objects.filter(external_user=user).count() == 8
        assert TenantSettings.objects.get(account=acme.account).external_user_count == round_ + 1


@pytest.mark.parametrize("tenant_exists", [False, True])
def test_new_definitions_from_many_clients_are_applied_once(on_postgres, new_session, acme, tenant_exists):
    for round_ in range(ROUNDS):
        tenant_name = f"tenant-{round_}"
        if tenant_exists:  # then creating the tenant does not serialize the requests
            new_session(acme, externalId=f"{tenant_name}-first", creatorMode=True, embedTenantName=tenant_name)
        requests = [
            _generate(
                acme,
                externalId=f"{tenant_name}-user-{n}",
                creatorMode=True,
                embedTenantName=tenant_name,
                groupDefinitions=[{"name": "editors", "description": "Can edit"}],
                userAttributeDefinitions=[{"name": "seat", "type": "string"}],
                groups=["editors"],
                userAttributes=[{"name": "seat", "value": f"s{n}"}],
            )
            for n in range(8)
        ]

        # when
        results = run_concurrently(requests)

        # then
        assert [status for status, _ in results] == [200] * 8, results
        tenant = EmbedTenant.objects.get(account=acme.account, name=tenant_name)
        assert list(Group.objects.filter(embed_tenant=tenant).values_list("name", "description")) == [
            ("editors", "Can edit")
        ]
        assert list(AttributeDefinition.objects.filter(embed_tenant=tenant).values_list("name", "type")) == [
            ("seat", "string")
        ]
        assert ExternalUser.objects.filter(embed_tenant=tenant).count() == 8 + tenant_exists


def test_racing_definitions_of_one_new_name_with_two_types_keep_one_type(on_postgres, new_session, acme):
    for round_ in range(ROUNDS):
        # given
        tenant_name = f"tenant-{round_}"
        new_session(acme, externalId=f"{tenant_name}-first", creatorMode=True, embedTenantName=tenant_name)
        types = ["string", "number"] * 4
        requests = [
            _generate(
                acme,
                externalId=f"{tenant_name}-user-{n}",
                creatorMode=True,
                embedTenantName=tenant_name,
                userAttributeDefinitions=[{"name": "seat", "type": type_}],
            )
            for n, type_ in enumerate(types)
        ]

        # when
        results = run_concurrently(requests)

        # then: the first to commit set the type; every request of the other type was refused
        (kept,) = AttributeDefinition.objects.filter(embed_tenant__name=tenant_name).values_list("type", flat=True)
        expected = [(200 if type_ == kept else 400) for type_ in types]
        assert [status for status, _ in results] == expected
        assert all(
            body == {"error": "cannot change type of user attribute seat"} for status, body in results if status == 400
        )


def test_of_many_exchanges_racing_for_one_session_exactly_one_wins(on_postgres, new_session, acme):
    for _ in range(ROUNDS):
        # given
        session_id = new_session(acme, externalId="alice")

        # when
        results = run_concurrently([_exchange(session_id)] * 8)

        # then
        statuses = Counter(status for status, _ in results)
        assert statuses == {200: 1, 401: 7}
        assert all(
            body == {"error": "Session is invalid, expired or already used"}
            for status, body in results
            if status == 401
        )


def test_revoke_racing_exchange_never_leaves_a_working_token(on_postgres, new_session, acme):
    for _ in range(ROUNDS * 2):
        # given
        session_id = new_session(acme, externalId="alice")

        # when
        (exchange_status, exchange_body), (revoke_status, revoke_body) = run_concurrently(
            [_exchange(session_id), _revoke(acme, session_id)]
        )

        # then: either the exchange lost, or the token it won is already refused
        assert (revoke_status, revoke_body) == (204, b"")
        assert EmbedSession.objects.get(key_digest=credentials.digest(session_id)).revoked_at is not None
        if exchange_status == 401:
            assert exchange_body == {"error": "Session is invalid, expired or already used"}
        else:
            assert exchange_status == 200
            context = JsonClient().get(CONTEXT_URL, **bearer(exchange_body["token"]))
            assert (context.status_code, context.json()) == (401, {"error": "Token has been revoked"})
