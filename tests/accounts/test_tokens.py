"""Deployment token verification rules that the embedding flow depends on."""

import datetime as dt

import pytest
from django.utils import timezone

from embedadmin.accounts.tokens import TokenInvalid, deployment_token_sign, deployment_token_verify
from tests.tokens import sign_token


def _token(acme, **claims):
    expires = timezone.now() + dt.timedelta(minutes=5)
    return deployment_token_sign(deployment=acme.deployment, claims=claims, expires_at=expires)


@pytest.mark.django_db
def test_embed_tokens_keep_verifying_when_the_deployment_configures_an_identity_provider_issuer(acme):
    # given: a deployment whose external tokens must come from an identity provider
    acme.deployment.jwt_issuer = "https://idp.example.com/"
    acme.deployment.save()

    # then: its own embed tokens (issued by embedadmin) and the provider's tokens verify
    assert deployment_token_verify(deployment=acme.deployment, token=_token(acme, iss="embedadmin"))["iss"] == (
        "embedadmin"
    )
    provider = _token(acme, iss="https://idp.example.com/")
    assert deployment_token_verify(deployment=acme.deployment, token=provider)["iss"] == "https://idp.example.com/"
    # and: any other issuer, or none, is refused
    with pytest.raises(TokenInvalid):
        deployment_token_verify(deployment=acme.deployment, token=_token(acme, iss="https://evil.example.com/"))
    with pytest.raises(TokenInvalid):
        deployment_token_verify(deployment=acme.deployment, token=_token(acme))


@pytest.mark.django_db
def test_a_token_signed_with_another_deployments_secret_is_refused(acme, globex):
    token = sign_token(globex.created.deployment_api_secret, ttl_s=300)
    with pytest.raises(TokenInvalid, match="signature"):
        deployment_token_verify(deployment=acme.deployment, token=token)


@pytest.mark.django_db
def test_revocations_are_purged_once_their_tokens_expired(acme):
    from embedadmin.accounts.models import RevokedToken
    from embedadmin.accounts.tasks import purge_revoked_tokens
    from embedadmin.accounts.tokens import deployment_token_revoke

    now = timezone.now()
    deployment_token_revoke(deployment=acme.deployment, jti="expired", expires_at=now - dt.timedelta(seconds=1))
    deployment_token_revoke(deployment=acme.deployment, jti="live", expires_at=now + dt.timedelta(hours=1))
    live = _token(acme, jti="live")

    assert purge_revoked_tokens.delay().get() == 1

    assert list(RevokedToken.objects.values_list("jti", flat=True)) == ["live"]
    with pytest.raises(TokenInvalid, match="revoked"):
        deployment_token_verify(deployment=acme.deployment, token=live)
