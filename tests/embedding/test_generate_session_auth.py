"""Who may call generate-session (spec 4.2, 5): admin API keys, within their deployment scope."""

from __future__ import annotations

import pytest

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import ApiKey
from tests.embedding.support import directory_counts

INVALID_KEY = "Invalid or revoked API key"
BAD_SCHEME = "Authorization header must be 'Api-Key <key>'"


def _api_key_headers(key: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Api-Key {key}"}


@pytest.mark.parametrize(
    ("authorization", "message"),
    [
        (None, "Missing Authorization header: expected 'Api-Key <key>'"),
        ("Bearer {key}", BAD_SCHEME),
        ("{key}", BAD_SCHEME),
        ("Api-Key", BAD_SCHEME),
        ("Api-Key   ", BAD_SCHEME),
        ("Api-Key not-a-key", INVALID_KEY),
        ("Api-Key eak_0123456789ab_" + "x" * 43, INVALID_KEY),
        ("Api-Key {key}x", INVALID_KEY),  # the right prefix with the wrong secret
    ],
)
def test_a_missing_malformed_or_unknown_key_is_401(generate, acme, authorization, message):
    # given
    headers = {} if authorization is None else {"HTTP_AUTHORIZATION": authorization.format(key=acme.created.api_key)}
    before = directory_counts(acme.account)

    # when
    response = generate(acme, headers=headers, externalId="alice")

    # then
    assert response.status_code == 401
    assert response.json() == {"error": message}
    assert directory_counts(acme.account) == before


def test_a_revoked_key_is_401(generate, acme):
    # given
    key = ApiKey.objects.get(account=acme.account)
    accounts.api_key_revoke(key=key)

    # when
    response = generate(acme, externalId="alice")

    # then
    assert response.status_code == 401
    assert response.json() == {"error": INVALID_KEY}
    assert directory_counts(acme.account)["sessions"] == 0


def test_a_personal_key_is_403(generate, acme):
    # given
    owner = accounts.internal_user_create(account=acme.account, username="acme-analyst", email="")
    personal_key, _ = accounts.api_key_create(account=acme.account, personal_owner=owner)
    before = directory_counts(acme.account)

    # when
    response = generate(acme, headers=_api_key_headers(personal_key), externalId="alice")

    # then
    assert response.status_code == 403
    assert response.json() == {"error": "This endpoint requires an admin API key; personal API keys are not allowed"}
    assert directory_counts(acme.account) == before


def test_a_key_scoped_to_another_deployment_is_403(generate, acme):
    # given
    other, _ = accounts.deployment_create(account=acme.account, name="other", slug="other")
    scoped_key, _ = accounts.api_key_create(account=acme.account, deployment_ids=[other.pk])
    before = directory_counts(acme.account)

    # when
    response = generate(acme, headers=_api_key_headers(scoped_key), externalId="alice")

    # then
    assert response.status_code == 403
    assert response.json() == {"error": f"This API key is not allowed to access deployment {acme.deployment.pk}"}
    assert directory_counts(acme.account) == before


def test_a_key_scoped_to_this_deployment_mints_a_session(generate, acme):
    # given
    other, _ = accounts.deployment_create(account=acme.account, name="other", slug="other")
    scoped_key, _ = accounts.api_key_create(account=acme.account, deployment_ids=[other.pk, acme.deployment.pk])

    # when
    response = generate(acme, headers=_api_key_headers(scoped_key), externalId="alice")

    # then
    assert response.status_code == 200
    assert list(response.json()) == ["sessionId"]
    assert directory_counts(acme.account)["sessions"] == 1


def test_an_unscoped_key_mints_for_any_deployment_of_its_account(generate, acme):
    # given
    other, _ = accounts.deployment_create(account=acme.account, name="other", slug="other")

    # when
    response = generate(acme, deploymentId=other.pk, externalId="alice")

    # then
    assert response.status_code == 200
    assert acme.account.embed_sessions.get().deployment == other


def test_an_unknown_deployment_is_404(generate, acme):
    # given
    before = directory_counts(acme.account)

    # when
    response = generate(acme, deploymentId=987654321, externalId="alice")

    # then
    assert response.status_code == 404
    assert response.json() == {"error": "Deployment 987654321 not found"}
    assert directory_counts(acme.account) == before


def test_another_accounts_deployment_is_404_and_changes_neither_account(generate, acme, globex):
    # given
    before = (directory_counts(acme.account), directory_counts(globex.account))

    # when
    response = generate(acme, deploymentId=globex.deployment.pk, externalId="alice")

    # then
    assert response.status_code == 404
    assert response.json() == {"error": f"Deployment {globex.deployment.pk} not found"}
    assert (directory_counts(acme.account), directory_counts(globex.account)) == before
