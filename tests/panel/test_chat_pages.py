"""The panel's Chat API pages: agents with their Chat API URL and chat users, per account (their daily counts are on
the audit room's usage page)."""

import pytest

from embedadmin.chat import services as chat
from embedadmin.chat.models import Agent

from .conftest import admin_url


@pytest.fixture
def agents(acme, globex) -> tuple[Agent, Agent]:
    return (
        chat.agent_create(account=acme.account, deployment=acme.deployment, name="acme analyst"),
        chat.agent_create(account=globex.account, deployment=globex.deployment, name="globex analyst"),
    )


def test_an_account_admin_sees_its_agents_with_their_chat_api_url_and_no_other_account(acme_admin, agents):
    acme_agent, globex_agent = agents

    page = acme_admin.get(admin_url("agent")).content.decode()

    assert f"http://testserver/api/v1/public/acme/agents/{acme_agent.public_id}" in page
    assert "acme analyst" in page
    assert globex_agent.public_id not in page
    assert "globex" not in page
    assert acme_admin.get(admin_url("agent", "change", globex_agent)).status_code == 302


def test_an_agent_added_in_the_panel_is_created_by_the_service(acme, acme_admin):
    response = acme_admin.post(
        admin_url("agent", "add"),
        {"account": acme.account.pk, "deployment": acme.deployment.pk, "name": "Sales bot", "provider": "builtin"},
    )

    assert response.status_code == 302
    agent = Agent.objects.get(name="Sales bot")
    assert (agent.account, agent.deployment, len(agent.public_id)) == (acme.account, acme.deployment, 16)


def test_chat_users_page_opens_and_their_counts_are_on_the_one_usage_page(acme_admin, agents):
    assert acme_admin.get(admin_url("chatuser")).status_code == 200
    assert acme_admin.get("/admin/chat/accountusageday/").status_code == 404
    assert acme_admin.get(admin_url("dailyusage")).status_code == 200


def test_an_openai_compatible_agent_gets_its_provider_key_in_the_panel_and_never_shows_it(acme, acme_admin):
    form = acme_admin.get(admin_url("agent", "add")).content.decode()
    assert 'name="api_key"' in form
    assert 'type="password"' in form
    fields = {
        "account": acme.account.pk,
        "deployment": acme.deployment.pk,
        "name": "LLM bot",
        "provider": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "gpt-test",
        "api_key": "  sk-secret-value  ",
    }

    response = acme_admin.post(admin_url("agent", "add"), fields)

    assert response.status_code == 302
    agent = Agent.objects.get(name="LLM bot")
    assert chat.agent_api_key(agent=agent) == "sk-secret-value"
    assert "sk-secret-value" not in agent.api_key_encrypted
    for page in (admin_url("agent"), admin_url("agent", "change", agent)):
        assert b"sk-secret-value" not in acme_admin.get(page).content
