"""The Chat API with an embed token: ``Authorization: Embed-Token <jwt>`` from a redeemed session."""

from __future__ import annotations

import pytest

from embedadmin.chat.models import ChatUser, Run
from embedadmin.embedding import services as embedding
from embedadmin.embedding.serializers import generate_session_input
from tests.chat.conftest import SESSION
from tests.tokens import sign_token

pytestmark = pytest.mark.django_db(transaction=True)


def _rpc(message: str) -> dict:
    return {"jsonrpc": "2.0", "error": {"code": -32001, "message": message}, "id": None}


def _embed_token(cast, **fields) -> str:
    data = generate_session_input({"deploymentId": cast.deployment.pk, **fields})
    session_id = embedding.session_generate(account=cast.account, deployment=cast.deployment, data=data)
    return embedding.session_exchange(session_id=session_id).token


def _header(token: str) -> dict[str, str]:
    return {"Authorization": f"Embed-Token {token}"}


def test_an_embed_token_speaks_for_its_sub_without_chat_token_auth(chat, acme):
    # given: the deployment does not enable token auth; the admin-minted session is the grant
    token = _embed_token(acme, externalId="Dana", email="dana@acme.test", embedTenantName="tenant-a")

    # when
    result = chat.stream({"input": "hi", "sessionSettings": {"externalId": "mallory"}}, headers=_header(token))

    # then
    assert result.status == 200
    assert result.ids[-1] == "__usage__"
    user = ChatUser.objects.get()
    assert (user.external_id, user.email) == ("dana", "dana@acme.test")
    assert Run.objects.get().query_context["securityContext"]["embed"]["embedTenant"] == "tenant-a"


@pytest.mark.parametrize(
    ("account_ai", "settings"),
    [
        (True, {"allowAi": False}),
        (True, {"allowAi": False, "showDashboardChat": True}),
        (False, {}),
        (False, {"showDashboardChat": True}),
    ],
)
def test_a_session_without_ai_is_refused(chat, acme, account_ai, settings):
    # given
    from embedadmin.accounts import services as accounts

    accounts.tenant_settings_update(account=acme.account, changes={"allowAi": account_ai})
    token = _embed_token(acme, externalId="dana", settings=settings)

    # when
    results = [
        chat.stream({"input": "hi"}, headers=_header(token)),
        chat.abort({"chatId": "x"}, headers=_header(token)),
    ]

    # then
    assert [r.lines for r in results] == [[_rpc("AI chat is not allowed for this embed session")]] * 2
    assert ChatUser.objects.count() == 0


def test_a_token_the_host_signs_cannot_pose_as_an_embed_token(chat, acme):
    # given: the host holds the deployment secret and copies an embed token's claims, seal excepted
    forged = sign_token(
        acme.created.deployment_api_secret,
        sub="eve",
        jti="x",
        embed={"deploymentId": acme.deployment.pk, "settings": {"allowAi": True}},
    )

    # when
    result = chat.stream({"input": "hi"}, headers=_header(forged))

    # then
    assert result.lines == [_rpc("Not an embed token")]


def test_an_embed_token_of_another_deployment_or_account_is_refused(chat, acme, globex):
    # given
    token = _embed_token(globex, externalId="dana")

    # when
    result = chat.stream({"input": "hi"}, headers=_header(token))

    # then
    assert result.lines == [_rpc(f"This embed token is not valid for deployment {acme.deployment.pk}")]


def test_a_revoked_embed_token_is_refused(chat, acme):
    # given
    data = generate_session_input({"deploymentId": acme.deployment.pk, "externalId": "dana"})
    session_id = embedding.session_generate(account=acme.account, deployment=acme.deployment, data=data)
    token = embedding.session_exchange(session_id=session_id).token
    from embedadmin.accounts.selectors import api_key_authenticate

    embedding.session_revoke(caller=api_key_authenticate(acme.created.api_key), session_id=session_id)

    # when
    result = chat.stream({"input": "hi", "sessionSettings": SESSION}, headers=_header(token))

    # then
    assert result.lines == [_rpc("Token has been revoked")]
