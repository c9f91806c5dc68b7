"""The "Mint embed session" action on external users, through Django's test client."""

from __future__ import annotations

import re

from django.contrib.messages import get_messages
from django.test import Client

from embedadmin.accounts import services as accounts
from embedadmin.core.errors import LimitExceeded
from embedadmin.embedding import services as embedding
from embedadmin.embedding.models import EmbedSession
from tests.conftest import JsonClient
from tests.embedding.support import TOKEN_URL, decode_embed_token
from tests.panel.conftest import AccountRows, admin_url


def choose(client: Client, user_pk: int):
    """Run the action from the list: the answer is the page that asks for the deployment."""
    return client.post(
        admin_url("externaluser"), {"action": "mint_embed_session", "index": "0", "_selected_action": [user_pk]}
    )


def mint(client: Client, user_pk: int, deployment_pk: int):
    """Submit the action's own page with a deployment."""
    return client.post(
        admin_url("externaluser"),
        {"action": "mint_embed_session", "_selected_action": [user_pk], "mint": "1", "deployment": deployment_pk},
    )


def session_id_of(response) -> str:
    match = re.search(r'<code class="panel-secret" data-label="sessionId">([^<]+)</code>', response.content.decode())
    assert match, response.content
    return match.group(1)


def test_action_asks_for_one_of_the_accounts_deployments(acme_admin: Client, acme_rows: AccountRows, globex_rows):
    second, _secret = accounts.deployment_create(account=acme_rows.cast.account, name="Staging", slug="staging")

    response = choose(acme_admin, acme_rows.external_user.pk)

    assert response.status_code == 200
    assert response.templates[0].name == "panel/mint_session.html"
    deployments = response.context["form"].fields["deployment"].queryset
    assert list(deployments.values_list("pk", flat=True)) == [acme_rows.cast.deployment.pk, second.pk]
    assert b"valid for 5 minutes" in response.content
    assert EmbedSession.objects.filter(account=acme_rows.cast.account).count() == 1  # only the fixture's


def test_minted_session_is_shown_once_and_exchanges_for_a_token(
    acme_admin: Client, acme_rows: AccountRows, api: JsonClient
):
    user = acme_rows.external_user

    response = mint(acme_admin, user.pk, acme_rows.cast.deployment.pk)

    assert response.status_code == 200
    assert response["Cache-Control"] == "max-age=0, no-cache, no-store, must-revalidate, private"
    assert b"Single use and valid for 5 minutes" in response.content
    session_id = session_id_of(response)
    exchanged = api.post_json(TOKEN_URL, {"sessionId": session_id})
    assert exchanged.status_code == 200
    claims = decode_embed_token(exchanged.json()["token"], secret=acme_rows.cast.created.deployment_api_secret)
    assert claims["sub"] == user.external_id
    assert claims["groups"] == [acme_rows.group.name]
    assert claims["userAttributes"] == {acme_rows.attribute.name: "eu"}
    assert claims["embed"]["embedTenant"] == acme_rows.embed_tenant.name
    assert claims["embed"]["deploymentId"] == acme_rows.cast.deployment.pk
    # Single use.
    assert api.post_json(TOKEN_URL, {"sessionId": session_id}).status_code == 401


def test_mint_goes_through_the_generate_session_service(acme_admin: Client, acme_rows: AccountRows, monkeypatch):
    calls = []
    real_generate = embedding.session_generate

    def spy(**kwargs):
        calls.append(kwargs)
        return real_generate(**kwargs)

    monkeypatch.setattr(embedding, "session_generate", spy)

    mint(acme_admin, acme_rows.external_user.pk, acme_rows.cast.deployment.pk)

    assert calls == [
        {
            "account": acme_rows.cast.account,
            "deployment": acme_rows.cast.deployment,
            "data": embedding.GenerateSessionInput(
                deployment_id=acme_rows.cast.deployment.pk,
                external_id=acme_rows.external_user.external_id,
                embed_tenant_name=acme_rows.embed_tenant.name,
            ),
        }
    ]


def test_service_refusal_is_an_error_message(acme_admin: Client, acme_rows: AccountRows, monkeypatch):
    def refuse(**kwargs):
        raise LimitExceeded("External user limit reached: this account allows at most 1 external users")

    monkeypatch.setattr(embedding, "session_generate", refuse)

    response = mint(acme_admin, acme_rows.external_user.pk, acme_rows.cast.deployment.pk)

    assert response.status_code == 302
    assert response["Location"] == admin_url("externaluser")
    assert [(m.level_tag, m.message) for m in get_messages(response.wsgi_request)] == [
        ("error", "External user limit reached: this account allows at most 1 external users")
    ]


def test_other_accounts_deployment_is_not_a_choice(acme_admin: Client, acme_rows: AccountRows, globex_rows):
    response = mint(acme_admin, acme_rows.external_user.pk, globex_rows.cast.deployment.pk)

    assert response.status_code == 200
    assert response.context["form"].errors["deployment"] == [
        "Select a valid choice. That choice is not one of the available choices."
    ]
    assert EmbedSession.objects.filter(account=acme_rows.cast.account).count() == 1


def test_exactly_one_user_must_be_selected(acme_admin: Client, acme_rows: AccountRows):
    embedding.session_generate(
        account=acme_rows.cast.account,
        deployment=acme_rows.cast.deployment,
        data=embedding.GenerateSessionInput(deployment_id=acme_rows.cast.deployment.pk, external_id="second"),
    )
    pks = list(acme_rows.cast.account.external_users.values_list("pk", flat=True))

    response = acme_admin.post(
        admin_url("externaluser"), {"action": "mint_embed_session", "index": "0", "_selected_action": pks}
    )

    assert response.status_code == 302
    assert [(m.level_tag, m.message) for m in get_messages(response.wsgi_request)] == [
        ("warning", "Select exactly one external user to mint an embed session for.")
    ]
