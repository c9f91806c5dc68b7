"""The external-user cap of generate-session (spec 8; issue 2): at most ``maxExternalUsers`` (10,000 by
default) external users per account; the request that would create one more is 429 and writes nothing.

The concurrent version of these rules is in ``test_races.py``.
"""

from __future__ import annotations

from embedadmin.directory import services as directory
from embedadmin.directory.models import ExternalUser
from tests.embedding.support import TENANT_SETTINGS_URL, directory_counts


def _limit_reached(limit: int) -> dict[str, str]:
    return {"error": f"External user limit reached: this account allows at most {limit} external users"}


def test_the_default_limit_is_10000(api, acme):
    # when
    response = api.get(TENANT_SETTINGS_URL, **acme.platform_headers)

    # then
    assert response.status_code == 200
    assert response.json()["maxExternalUsers"] == 10_000


def test_the_10001st_external_user_is_refused(generate, new_session, acme):
    # given: 9,999 external users, counted by the reconciling service
    ExternalUser.objects.bulk_create(
        [ExternalUser(account=acme.account, external_id=f"user-{n}") for n in range(9_999)], batch_size=5_000
    )
    assert directory.external_user_count_reconcile(account=acme.account) == 9_999

    # when
    last_place = generate(acme, externalId="user-9999")
    one_too_many = generate(acme, externalId="user-10000")

    # then
    assert last_place.status_code == 200
    assert one_too_many.status_code == 429
    assert one_too_many.json() == _limit_reached(10_000)
    assert directory_counts(acme.account)["external_users"] == 10_000
    assert directory_counts(acme.account)["external_user_counter"] == 10_000


def test_a_lowered_limit_refuses_a_new_user_and_writes_nothing(
    generate, new_session, patch_tenant_settings, tenant_group, acme
):
    # given
    tenant_group(acme, "hq")
    new_session(acme, externalId="alice")
    new_session(acme, externalId="bob")
    patch_tenant_settings(acme, maxExternalUsers=2)
    before = directory_counts(acme.account)

    # when: the new user would also create an embed tenant, definitions, a membership and a value
    response = generate(
        acme,
        externalId="carol",
        creatorMode=True,
        embedTenantName="tenant-a",
        groupDefinitions=[{"name": "editors"}],
        userAttributeDefinitions=[{"name": "seat", "type": "string"}],
        groups=["editors"],
        userAttributes=[{"name": "seat", "value": "a1"}],
    )

    # then
    assert response.status_code == 429
    assert response.json() == _limit_reached(2)
    assert directory_counts(acme.account) == before


def test_an_existing_user_still_gets_sessions_at_the_cap(generate, new_session, patch_tenant_settings, acme):
    # given
    new_session(acme, externalId="alice")
    patch_tenant_settings(acme, maxExternalUsers=1)
    assert generate(acme, externalId="bob").status_code == 429

    # when
    response = generate(acme, externalId=" ALICE ", userProfile={"displayName": "Alice"})

    # then
    assert response.status_code == 200
    assert directory_counts(acme.account)["sessions"] == 2
    assert directory_counts(acme.account)["external_user_counter"] == 1


def test_internal_users_do_not_count(generate, patch_tenant_settings, acme):
    # given
    patch_tenant_settings(acme, maxExternalUsers=0)

    # when
    internal = generate(acme, internalId="acme-admin")
    external = generate(acme, externalId="alice")

    # then
    assert internal.status_code == 200
    assert external.status_code == 429
    assert external.json() == _limit_reached(0)


def test_raising_the_limit_admits_new_users_again(generate, new_session, patch_tenant_settings, acme):
    # given
    new_session(acme, externalId="alice")
    patch_tenant_settings(acme, maxExternalUsers=1)
    assert generate(acme, externalId="bob").status_code == 429

    # when
    patch_tenant_settings(acme, maxExternalUsers=2)
    response = generate(acme, externalId="bob")

    # then
    assert response.status_code == 200
    assert directory_counts(acme.account)["external_user_counter"] == 2


def test_the_cap_is_per_account(generate, new_session, patch_tenant_settings, acme, globex):
    # given
    new_session(acme, externalId="alice")
    patch_tenant_settings(acme, maxExternalUsers=1)

    # when
    response = generate(globex, externalId="bob")

    # then
    assert response.status_code == 200
    assert directory_counts(globex.account)["external_user_counter"] == 1
