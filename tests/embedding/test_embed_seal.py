"""An embed token is sealed by this install over all its claims: a host that holds the deployment's signing secret
can re-sign a real token, but any claim it changes (another embed tenant, AI allowed, a later expiry, more groups)
breaks the seal, and the embed endpoints and the Chat API refuse it as not an embed token."""

from __future__ import annotations

import datetime as dt

import jwt
import pytest

from embedadmin.accounts.tokens import TokenInvalid
from embedadmin.embedding import services as embedding
from embedadmin.embedding.tokens import embed_token_verify
from tests.conftest import Cast
from tests.tokens import sign_token


def exchanged_token(cast: Cast, **settings) -> str:
    session_id = embedding.session_generate(
        account=cast.account,
        deployment=cast.deployment,
        data=embedding.GenerateSessionInput(
            deployment_id=cast.deployment.pk, external_id="viewer", embed_tenant_name="tenant-a", settings=settings
        ),
    )
    return embedding.session_exchange(session_id=session_id).token


def resigned(token: str, cast: Cast, change) -> str:
    claims = jwt.decode(token, options={"verify_signature": False})
    change(claims)
    return sign_token(cast.created.deployment_api_secret, **claims)


def test_the_real_token_verifies(acme: Cast):
    caller = embed_token_verify(token=exchanged_token(acme))
    assert caller.sub == "viewer"
    assert caller.embed["embedTenant"] == "tenant-a"


def test_re_signing_it_unchanged_keeps_it_valid(acme: Cast):
    # The seal does not depend on iat (the signer's own claim): the same claims re-signed are the same token.
    token = resigned(exchanged_token(acme), acme, lambda claims: claims.update(iat=claims["iat"] - 5))
    assert embed_token_verify(token=token).sub == "viewer"


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda c: c["embed"].update(embedTenant="tenant-b"), id="another embed tenant"),
        pytest.param(lambda c: c["embed"]["settings"].update(allowAi=True), id="AI allowed"),
        pytest.param(lambda c: c.update(exp=c["exp"] + 3600), id="a later expiry"),
        pytest.param(lambda c: c.update(groups=["admin"]), id="another group"),
        pytest.param(lambda c: c.update(userAttributes={"country": "France"}), id="another attribute"),
        pytest.param(lambda c: c.update(tenant_id=2), id="a security context claim"),
        pytest.param(lambda c: c.update(sub="someone-else"), id="another viewer"),
        pytest.param(lambda c: c["embed"].pop("seal"), id="no seal"),
    ],
)
def test_a_host_with_the_deployment_secret_cannot_change_a_claim(acme: Cast, change):
    token = resigned(exchanged_token(acme, allowAi=False), acme, change)
    # The signature is good (the host has the secret): only the seal tells.
    assert jwt.decode(token, acme.created.deployment_api_secret, algorithms=["HS256"], options={"verify_aud": False})
    with pytest.raises(TokenInvalid, match="Not an embed token"):
        embed_token_verify(token=token)


def test_a_forged_token_opens_no_embed_endpoint(api, acme: Cast):
    token = resigned(exchanged_token(acme), acme, lambda c: c.update(exp=int(dt.datetime(2100, 1, 1).timestamp())))
    response = api.post_json(
        "/api/v1/embed/dashboard/SalesOvervw1/view", {"grant": "x"}, HTTP_AUTHORIZATION=f"Embed-Token {token}"
    )
    assert response.status_code == 401
    assert response.json()["error"] == "Not an embed token"
