"""Rotating a deployment's signing secret from the panel: step 1 adds a secret (shown once) that signs
from then on while the older ones still verify; step 2 revokes the older ones, and their tokens stop
verifying. An account admin rotates only their own account's deployments."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import DeploymentSecret
from embedadmin.accounts.tokens import TokenInvalid, deployment_token_verify
from tests.conftest import Cast, JsonClient
from tests.embedding.support import GENERATE_URL, TOKEN_URL, decode_embed_token
from tests.panel.conftest import admin_url, messages_of, shown_secrets
from tests.tokens import sign_token


def _token(secret: str) -> str:
    return sign_token(secret, ttl_s=600, sub="ada")


def _embed_token(api: JsonClient, cast: Cast) -> str:
    minted = api.post_json(
        GENERATE_URL, {"deploymentId": cast.deployment.pk, "externalId": "viewer"}, **cast.api_key_headers
    )
    return api.post_json(TOKEN_URL, {"sessionId": minted.json()["sessionId"]}).json()["token"]


def test_rotation_in_two_steps(acme_admin: Client, acme: Cast, api: JsonClient):
    old = acme.created.deployment_api_secret
    signed_with_old = _token(old)

    response = acme_admin.post(
        admin_url("deployment"), {"action": "rotate_secret", "_selected_action": [acme.deployment.pk]}
    )

    assert response.status_code == 200
    assert response["Cache-Control"] == "max-age=0, no-cache, no-store, must-revalidate, private"
    newest = DeploymentSecret.objects.filter(deployment=acme.deployment).order_by("-created_at", "-id").first()
    label = f"Deployment {acme.deployment.pk} ({acme.deployment.name}) API secret #{newest.pk}"
    new = shown_secrets(response)[label]
    assert new != old
    assert new.encode() not in acme_admin.get(admin_url("deployment", "change", acme.deployment)).content
    # The new secret signs; the old one still verifies.
    assert decode_embed_token(_embed_token(api, acme), secret=new)["sub"] == "viewer"
    assert deployment_token_verify(deployment=acme.deployment, token=signed_with_old)["sub"] == "ada"

    confirm = acme_admin.post(
        admin_url("deployment"), {"action": "revoke_older_secrets", "_selected_action": [acme.deployment.pk]}
    )
    assert confirm.status_code == 200
    assert "Revoke the older secrets" in confirm.content.decode()
    assert f'name="keep_{acme.deployment.pk}" value="{newest.pk}"' in confirm.content.decode()
    assert deployment_token_verify(deployment=acme.deployment, token=signed_with_old)["sub"] == "ada", "not yet"

    response = acme_admin.post(admin_url("deployment"), _confirmed(acme, keep=newest.pk))

    assert response.status_code == 302
    assert messages_of(response) == [
        ("success", "Revoked 1 older signing secret; the secret kept for each deployment still signs and verifies.")
    ]
    with pytest.raises(TokenInvalid, match="Invalid token signature"):
        deployment_token_verify(deployment=acme.deployment, token=signed_with_old)
    assert deployment_token_verify(deployment=acme.deployment, token=_token(new))["sub"] == "ada"
    assert decode_embed_token(_embed_token(api, acme), secret=new)["sub"] == "viewer"
    # Confirming again leaves the kept secret alone.
    acme_admin.post(admin_url("deployment"), _confirmed(acme, keep=newest.pk))
    active = DeploymentSecret.objects.filter(deployment=acme.deployment, revoked_at__isnull=True)
    assert list(active.values_list("pk", flat=True)) == [newest.pk]


def _confirmed(cast: Cast, *, keep: int) -> dict:
    return {
        "action": "revoke_older_secrets",
        "_selected_action": [cast.deployment.pk],
        "post": "yes",
        f"keep_{cast.deployment.pk}": keep,
    }


def test_a_secret_made_after_the_confirmation_was_shown_stays_active(acme_admin: Client, acme: Cast):
    _, shown = accounts.deployment_secret_rotate(deployment=acme.deployment)  # what the clients were given
    _, later = accounts.deployment_secret_rotate(deployment=acme.deployment)  # a reload, or another admin

    response = acme_admin.post(admin_url("deployment"), _confirmed(acme, keep=shown.pk))

    assert response.status_code == 302
    active = set(
        DeploymentSecret.objects.filter(deployment=acme.deployment, revoked_at__isnull=True).values_list(
            "pk", flat=True
        )
    )
    assert active == {shown.pk, later.pk}


def test_keeping_a_secret_that_is_not_active_revokes_nothing(acme_admin: Client, acme: Cast):
    _, first = accounts.deployment_secret_rotate(deployment=acme.deployment)
    accounts.deployment_secrets_revoke_older(deployment=acme.deployment)  # keeps `first`, revokes the original
    revoked = DeploymentSecret.objects.get(deployment=acme.deployment, revoked_at__isnull=False)

    response = acme_admin.post(admin_url("deployment"), _confirmed(acme, keep=revoked.pk))

    assert messages_of(response) == [
        ("error", f"Secret #{revoked.pk} is not an active signing secret of deployment {acme.deployment.pk}")
    ]
    assert list(
        DeploymentSecret.objects.filter(deployment=acme.deployment, revoked_at__isnull=True).values_list(
            "pk", flat=True
        )
    ) == [first.pk]


def test_a_refusal_for_one_deployment_revokes_nothing_for_the_others(acme_admin: Client, acme: Cast):
    second, _ = accounts.deployment_create(account=acme.account, name="Second", slug="second")
    _, kept = accounts.deployment_secret_rotate(deployment=acme.deployment)
    active_before = set(DeploymentSecret.objects.filter(revoked_at__isnull=True).values_list("pk", flat=True))
    revoked_one = DeploymentSecret.objects.filter(deployment=acme.deployment).exclude(pk=kept.pk).get()

    response = acme_admin.post(
        admin_url("deployment"),
        {
            "action": "revoke_older_secrets",
            "_selected_action": [acme.deployment.pk, second.pk],
            "post": "yes",
            f"keep_{acme.deployment.pk}": kept.pk,  # valid: would revoke the original secret
            f"keep_{second.pk}": revoked_one.pk,  # not one of the second deployment's secrets
        },
    )

    assert messages_of(response) == [
        ("error", f"Secret #{revoked_one.pk} is not an active signing secret of deployment {second.pk}")
    ]
    assert set(DeploymentSecret.objects.filter(revoked_at__isnull=True).values_list("pk", flat=True)) == active_before


def test_an_admin_cannot_rotate_another_accounts_deployment(acme_admin: Client, acme: Cast, globex: Cast):
    before = list(DeploymentSecret.objects.filter(deployment=globex.deployment).values_list("pk", "revoked_at"))

    for action in ("rotate_secret", "revoke_older_secrets"):
        acme_admin.post(admin_url("deployment"), {"action": action, "_selected_action": [globex.deployment.pk]})
    acme_admin.post(admin_url("deployment"), _confirmed(globex, keep=0))

    after = list(DeploymentSecret.objects.filter(deployment=globex.deployment).values_list("pk", "revoked_at"))
    assert after == before
    assert deployment_token_verify(deployment=globex.deployment, token=_token(globex.created.deployment_api_secret))


def test_revoked_secrets_keep_their_revocation_time(acme: Cast):
    accounts.deployment_secret_rotate(deployment=acme.deployment)
    assert accounts.deployment_secrets_revoke_older(deployment=acme.deployment) == 1
    revoked = DeploymentSecret.objects.get(deployment=acme.deployment, revoked_at__isnull=False)
    stamp = revoked.revoked_at
    assert accounts.deployment_secrets_revoke_older(deployment=acme.deployment) == 0
    revoked.refresh_from_db()
    assert revoked.revoked_at == stamp
    assert isinstance(stamp, dt.datetime)
