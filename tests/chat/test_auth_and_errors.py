"""Authentication (API key, deployment token, both) and every error path of the Chat API."""

from __future__ import annotations

import asyncio

import pytest
from django.test import AsyncClient

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import ApiKey
from embedadmin.chat import services
from embedadmin.chat.models import ChatUser, Run, Thread
from tests.chat.conftest import SESSION
from tests.tokens import sign_token

pytestmark = pytest.mark.django_db(transaction=True)

# A valid address longer than the stored column (254 characters).
LONG_VALID_EMAIL = "a" * 60 + "@" + ".".join(["b" * 60] * 4) + ".com"

NOT_A_CHAT_SCHEME = "Authorization header must be 'Api-Key <key>' or 'Embed-Token <embed token>'"


def _rpc(message: str) -> dict:
    return {"jsonrpc": "2.0", "error": {"code": -32001, "message": message}, "id": None}


def _token(acme, **claims) -> str:
    return sign_token(acme.created.deployment_api_secret, **{"sub": "Bob", "scope": ["chat"], **claims})


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        (
            {},
            "Missing credentials: send 'Authorization: Api-Key <key>', 'Authorization: Embed-Token <token>' "
            "or 'X-Service-Auth-Token: <token>'",
        ),
        ({"Authorization": "Api-Key ak_000000000000_nope"}, "Invalid or revoked API key"),
        ({"Authorization": "Bearer something"}, NOT_A_CHAT_SCHEME),
        ({"Authorization": "Api-Key"}, NOT_A_CHAT_SCHEME),
        (
            {"X-Service-Auth-Token": "a.b.c"},
            "Token authentication is not enabled for this deployment's Chat API",
        ),
    ],
)
def test_authentication_failures_are_jsonrpc_errors_in_a_200(chat, headers, message):
    for result in (
        chat.stream({"input": "hi", "sessionSettings": SESSION}, headers=headers),
        chat.abort({"chatId": "x"}, headers=headers),
    ):
        assert result.status == 200
        assert result.lines == [_rpc(message)]
    assert ChatUser.objects.count() == 0


def test_a_key_of_another_account_is_refused(chat, globex):
    result = chat.stream(
        {"input": "hi", "sessionSettings": SESSION}, headers={"Authorization": f"Api-Key {globex.created.api_key}"}
    )

    assert result.lines == [_rpc("Invalid or revoked API key")]


def test_a_revoked_key_is_refused(chat, acme):
    accounts.api_key_revoke(key=ApiKey.objects.get(account=acme.account))

    assert chat.stream({"input": "hi", "sessionSettings": SESSION}).lines == [_rpc("Invalid or revoked API key")]


def test_a_key_scoped_to_another_deployment_is_refused(chat, acme):
    other, _ = accounts.deployment_create(account=acme.account, name="Other", slug="other")
    key, _ = accounts.api_key_create(account=acme.account, name="scoped", deployment_ids=[other.pk])

    result = chat.stream({"input": "hi", "sessionSettings": SESSION}, headers={"Authorization": f"Api-Key {key}"})

    assert result.lines == [_rpc(f"This API key is not allowed to access deployment {chat.agent.deployment_id}")]


def test_a_token_user_comes_from_the_claims_and_session_settings_are_ignored(chat, acme):
    chat.enable_token_auth()
    token = _token(acme, externalId="Carol", email="carol@example.com", groups=["eu"], userAttributes={"tier": "gold"})

    result = chat.stream(
        {"input": "hi", "sessionSettings": {"externalId": "mallory", "bogus": 1}},
        headers={"X-Service-Auth-Token": token},
    )

    assert result.status == 200
    assert result.ids[-1] == "__usage__"
    user = ChatUser.objects.get()
    assert (user.external_id, user.email, user.groups, user.user_attributes) == (
        "carol",
        "carol@example.com",
        ["eu"],
        {"tier": "gold"},
    )
    assert user.security_context["externalId"] == "Carol"
    assert Run.objects.get().query_context["securityContext"]["scope"] == ["chat"]


def test_a_token_without_external_id_uses_sub_lowercased(chat, acme):
    chat.enable_token_auth()

    chat.stream({"input": "hi"}, headers={"X-Service-Auth-Token": _token(acme)})

    assert ChatUser.objects.get().external_id == "bob"


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ({"scope": ["embed"]}, "The token's scope does not include 'chat'"),
        ({"scope": None}, "The token's scope does not include 'chat'"),
        ({"sub": None}, "The token has neither an externalId nor a sub claim"),
        ({"sub": "  "}, "The token has neither an externalId nor a sub claim"),
        # a token restricted to the metadata (the Platform API's meta-sync tokens) cannot query through the agent
        ({"embedadmin:apiScopes": ["meta"]}, "API scope is missing: data"),
    ],
)
def test_token_claims_are_checked(chat, acme, claims, message):
    chat.enable_token_auth()
    token = sign_token(acme.created.deployment_api_secret, **{"sub": "bob", "scope": ["chat"], **claims})

    assert chat.stream({"input": "hi"}, headers={"X-Service-Auth-Token": token}).lines == [_rpc(message)]


def test_a_space_separated_scope_string_with_chat_is_accepted(chat, acme):
    chat.enable_token_auth()

    result = chat.stream({"input": "hi"}, headers={"X-Service-Auth-Token": _token(acme, scope="read chat")})

    assert result.ids[0] == "__cutoff__"


def test_tokens_signed_otherwise_or_expired_are_refused(chat, acme):
    chat.enable_token_auth()
    forged = sign_token("not-the-secret-but-long-enough-for-hs256", sub="bob", scope=["chat"])
    expired = sign_token(acme.created.deployment_api_secret, ttl_s=-60, sub="bob", scope=["chat"])

    assert chat.stream({"input": "hi"}, headers={"X-Service-Auth-Token": forged}).lines == [
        _rpc("Invalid token signature")
    ]
    assert chat.stream({"input": "hi"}, headers={"X-Service-Auth-Token": expired}).lines == [_rpc("Token has expired")]


def test_with_both_headers_authorization_wins(chat, acme):
    chat.enable_token_auth()
    headers = {**chat.key_headers(), "X-Service-Auth-Token": _token(acme)}

    result = chat.stream({"input": "hi"}, headers=headers)  # the key path needs sessionSettings

    assert result.status == 400
    assert result.lines == [{"error": "sessionSettings is required with API key authentication"}]
    bad_key = {"Authorization": "Api-Key nope", "X-Service-Auth-Token": _token(acme)}
    assert chat.stream({"input": "hi"}, headers=bad_key).lines == [_rpc("Invalid or revoked API key")]


def test_a_personal_key_is_refused(chat, acme):
    user = accounts.internal_user_create(account=acme.account, username="pat", email="pat@example.com")
    key, _ = accounts.api_key_create(account=acme.account, name="mine", personal_owner=user)

    result = chat.stream({"input": "hi", "sessionSettings": SESSION}, headers={"Authorization": f"Api-Key {key}"})

    assert result.lines == [_rpc("The Chat API requires an admin API key; personal API keys are not allowed")]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "Invalid JSON body: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ("[1]", "The body must be a JSON object"),
        ({"input": "hi"}, "sessionSettings is required with API key authentication"),
        ({"sessionSettings": SESSION}, "input is required when chatId is omitted"),
        ({"input": 3, "sessionSettings": SESSION}, "input: Not a valid string."),
        ({"input": "", "sessionSettings": SESSION}, "input: This field may not be blank."),
        (
            {"input": "hi", "messageId": "123-message", "sessionSettings": SESSION},
            "messageId: must be '<unix ms>-message'",
        ),
        ({"input": "hi", "unknown": 1, "sessionSettings": SESSION}, "Unknown fields: unknown"),
        (
            {"input": "hi", "sessionSettings": {}},
            "sessionSettings: exactly one of externalId or internalId is required",
        ),
        (
            {"input": "hi", "sessionSettings": {"externalId": "a", "internalId": "b"}},
            "sessionSettings: exactly one of externalId or internalId is required",
        ),
        (
            {"input": "hi", "sessionSettings": {"internalId": "b", "groups": []}},
            "sessionSettings: groups: not allowed with internalId",
        ),
        (
            {"input": "hi", "sessionSettings": {"externalId": "a b"}},
            "sessionSettings.externalId: must not contain spaces",
        ),
        (
            {"input": "hi", "sessionSettings": {"externalId": "a", "isEphemeral": "no"}},
            "sessionSettings.isEphemeral: Must be a boolean.",
        ),
        (
            {"input": "hi", "sessionSettings": {"externalId": "a", "ephemeralTtlSeconds": 0}},
            "sessionSettings.ephemeralTtlSeconds: Ensure this value is greater than or equal to 1.",
        ),
        (
            {"input": "hi", "sessionSettings": {"externalId": "a", "userAttributes": [{"name": "nope", "value": 1}]}},
            "User attributes not found: nope",
        ),
        (
            # valid, but longer than the stored column
            {"input": "hi", "sessionSettings": {"externalId": "a", "email": LONG_VALID_EMAIL}},
            "sessionSettings.email: Ensure this field has no more than 254 characters.",
        ),
        (
            {"input": "hi", "sessionSettings": {"externalId": "a", "email": 1}},
            "sessionSettings.email: Not a valid string.",
        ),
        (
            {"input": "hi", "sessionSettings": {"internalId": "nobody@example.com"}},
            "sessionSettings.internalId: no internal user 'nobody@example.com' in this account",
        ),
    ],
)
def test_invalid_bodies_are_400(chat, body, message):
    result = chat.stream(body)

    assert result.status == 400
    assert result.lines == [{"error": message}]
    assert Thread.objects.count() == 0


def test_unknown_account_agent_and_thread_are_404(chat):
    body = {"input": "hi", "sessionSettings": SESSION}
    unknown_account = chat.stream_url.replace("/public/acme/", "/public/nosuch/")
    unknown_agent = chat.stream_url.replace(chat.agent.public_id, "nosuchagent")

    for url, message in (
        (unknown_account, "Account 'nosuch' not found"),
        (unknown_agent, "Agent 'nosuchagent' not found"),
    ):
        response = chat.post(url, body)
        assert response.status_code == 404
        assert response.json() == {"error": message}
    missing = chat.stream({"input": "hi", "chatId": "nosuch", "sessionSettings": SESSION})
    assert missing.status == 404
    assert missing.lines == [{"error": "Chat 'nosuch' not found"}]


def test_another_users_thread_is_404_for_the_stream(chat):
    first = chat.ask()

    result = chat.stream({"input": "hi", "chatId": first.chat_id, "sessionSettings": {"externalId": "eve"}})

    assert result.status == 404
    assert result.lines == [{"error": f"Chat {first.chat_id!r} not found"}]


def test_an_agent_of_another_account_is_404(chat, globex):
    other = services.agent_create(account=globex.account, deployment=globex.deployment, name="B")
    url = chat.stream_url.replace(chat.agent.public_id, other.public_id)

    response = chat.post(url, {"input": "hi", "sessionSettings": SESSION})

    assert response.status_code == 404
    assert response.json() == {"error": f"Agent {other.public_id!r} not found"}


def test_wrong_method_is_405_json(chat):
    response = asyncio.run(AsyncClient().get(chat.stream_url))

    assert response.status_code == 405
    assert response.json() == {"error": "Method not allowed"}


def test_a_server_fault_is_500_json(chat, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(services, "chat_user_upsert", broken)

    result = chat.ask()

    assert result.status == 500
    assert result.lines == [{"error": "Internal server error"}]
