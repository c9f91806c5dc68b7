"""Fixtures of the panel tests: two accounts with a row of every kind, and the people who look at them.

Rows are made through the services, as the API would make them. Every name of globex's rows contains
"globex", so a page of acme's administrator that mentions "globex" has leaked something.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.contrib.messages import get_messages
from django.db.models import Model
from django.test import Client

from embedadmin.accounts.models import ApiKey, PlatformToken
from embedadmin.directory import services as directory
from embedadmin.directory.models import AttributeDefinition, EmbedTenant, ExternalUser, Group
from embedadmin.embedding import services as embedding
from embedadmin.embedding.models import EmbedSession
from tests.conftest import Cast

BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass(frozen=True)
class AccountRows:
    """One row of every kind the panel shows, all of one account."""

    cast: Cast
    admin_user: AbstractUser
    api_key: ApiKey
    platform_token: PlatformToken
    embed_tenant: EmbedTenant
    external_user: ExternalUser
    group: Group
    attribute: AttributeDefinition
    session: EmbedSession

    def of(self, model_name: str) -> Model:
        """The row of a panel model, by its admin URL name (``apikey``, ``externaluser``...)."""
        return {
            "account": self.cast.account,
            "deployment": self.cast.deployment,
            "apikey": self.api_key,
            "platformtoken": self.platform_token,
            "user": self.admin_user,
            "embedtenant": self.embed_tenant,
            "externaluser": self.external_user,
            "group": self.group,
            "attributedefinition": self.attribute,
            "embedsession": self.session,
        }[model_name]


def make_rows(cast: Cast) -> AccountRows:
    """Give ``cast``'s account a viewer in an embed tenant, with a group and an attribute, and a session."""
    name = cast.account.name
    group = directory.group_create(account=cast.account, embed_tenant=None, name=f"analysts-{name}")
    attribute = directory.attribute_definition_create(
        account=cast.account,
        embed_tenant=None,
        data=directory.AttributeDefinitionInput(name=f"region_{name}", type="string"),
    )
    embedding.session_generate(
        account=cast.account,
        deployment=cast.deployment,
        data=embedding.GenerateSessionInput(
            deployment_id=cast.deployment.pk,
            external_id=f"viewer-{name}",
            embed_tenant_name=f"shop-{name}",
            groups=[group.name],
            user_attributes=[(attribute.name, "eu")],
        ),
    )
    return AccountRows(
        cast=cast,
        admin_user=get_user_model().objects.get(username=cast.created.admin_username),
        api_key=ApiKey.objects.get(account=cast.account),
        platform_token=PlatformToken.objects.get(account=cast.account),
        embed_tenant=EmbedTenant.objects.get(account=cast.account),
        external_user=ExternalUser.objects.get(account=cast.account),
        group=group,
        attribute=attribute,
        session=EmbedSession.objects.get(account=cast.account),
    )


@pytest.fixture
def acme_rows(acme: Cast) -> AccountRows:
    return make_rows(acme)


@pytest.fixture
def globex_rows(globex: Cast) -> AccountRows:
    return make_rows(globex)


def shown_secrets(response) -> dict[str, str]:
    """The secrets of a "shown once" page, by label."""
    html = response.content.decode()
    return dict(re.findall(r'<code class="panel-secret" data-label="([^"]+)">([^<]+)</code>', html))


def messages_of(response) -> list[tuple[str, str]]:
    """The messages a panel response left for the administrator, as ``(level, text)``."""
    return [(m.level_tag, m.message) for m in get_messages(response.wsgi_request)]


def admin_url(model_name: str, view: str = "changelist", obj: Model | None = None) -> str:
    """``/admin/<app>/<model>/[<pk>/<view>/]`` of a panel model."""
    app = {
        "account": "accounts",
        "deployment": "accounts",
        "apikey": "accounts",
        "platformtoken": "accounts",
        "user": "auth",
        "embedtenant": "directory",
        "externaluser": "directory",
        "group": "directory",
        "attributedefinition": "directory",
        "embedsession": "embedding",
        "agent": "chat",
        "chatuser": "chat",
        "accountusageday": "chat",
    }[model_name]
    base = f"/admin/{app}/{model_name}/"
    if view == "changelist":
        return base
    if view == "add":
        return f"{base}add/"
    return f"{base}{obj.pk}/{view}/"


@pytest.fixture
def login() -> Callable[[str, str], Client]:
    """``login(username, password)``: a client logged in through the panel's login form."""

    def call(username: str, password: str) -> Client:
        client = Client()
        response = client.post("/admin/login/?next=/admin/", {"username": username, "password": password})
        assert response.status_code == 302, response.content
        return client

    return call


@pytest.fixture
def acme_admin(acme: Cast, login) -> Client:
    """A client logged in as acme's account administrator (made by ``account_create``)."""
    return login(acme.created.admin_username, acme.created.admin_password)


@pytest.fixture
def superuser(db, login) -> Client:
    get_user_model().objects.create_superuser("operator", "op@example.com", "operator-password-1")
    return login("operator", "operator-password-1")


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """Debian's headless Chromium, driven by Playwright (no downloaded browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=BROWSER_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser) -> Iterator:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()
