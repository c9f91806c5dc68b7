"""Fixtures of the panel tests: two accounts with a row of every kind, and the people who look at them.

Rows are made through the services, as the API would make them. Every name of globex's rows contains
"globex", so a page of acme's administrator that mentions "globex" has leaked something.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.contrib.messages import get_messages
from django.db.models import Model
from django.test import Client

from demo.generate import DEFAULT_SEED, generate
from embedadmin.accounts.models import ApiKey, PlatformToken
from embedadmin.accounts.services import deployment_configure
from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards.models import Dashboard, Folder, Report, Workbook
from embedadmin.directory import services as directory
from embedadmin.directory.models import AttributeDefinition, EmbedTenant, ExternalUser, Group
from embedadmin.embedding import services as embedding
from embedadmin.embedding.models import EmbedSession
from embedadmin.semantic import clear_models
from embedadmin.semantic.sources.registry import close_data_sources
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
    # Workspace content, for the tests that need it (``with_dashboard``).
    content: DashboardRows | None = None

    def with_dashboard(self) -> AccountRows:
        """These rows and a published dashboard of the account (``make_dashboard``)."""
        return replace(self, content=make_dashboard(self.cast))

    def of(self, model_name: str) -> Model:
        """The row of a panel model, by its admin URL name (``apikey``, ``externaluser``...)."""
        if model_name in ("workbook", "dashboard", "report", "folder"):
            assert self.content is not None, "rows made without with_dashboard()"
            return getattr(self.content, model_name)
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
        "workbook": "dashboards",
        "dashboard": "dashboards",
        "report": "dashboards",
        "folder": "dashboards",
        "auditentry": "audit",
        "dailyusage": "audit",
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


DEMO_MODEL = Path(__file__).resolve().parents[2] / "demo" / "model"


@dataclass(frozen=True)
class DashboardRows:
    """A workbook of an account's deployment (serving the demo model) with a report, a draft and, when
    published, its dashboard."""

    cast: Cast
    workbook: Workbook
    report: Report
    folder: Folder
    dashboard: Dashboard | None


def draft_of(report: Report, title: str) -> dict:
    return {
        "title": title,
        "widgets": [
            {
                "id": "revenue",
                "type": "CHART",
                "position": {"x": 0, "y": 0, "w": 6, "h": 3},
                "config": {"reportId": report.pk},
            },
            {"id": "intro", "type": "TEXT", "position": {"x": 6, "y": 0, "w": 6, "h": 2}, "config": {"text": "Hello"}},
        ],
    }


def make_dashboard(cast: Cast, *, publish: bool = True, data_source_url: str | None = None) -> DashboardRows:
    """Through the services, as the Platform API would: configure the deployment with the demo model, write a
    report, a workbook and its draft, and publish it (embedding allowed, shared with all embed users)."""
    name = cast.account.name
    deployment_configure(deployment=cast.deployment, model_dir=str(DEMO_MODEL), data_source_url=data_source_url)
    report = dashboards.report_create(
        deployment=cast.deployment,
        fields={
            "name": f"Revenue {name}",
            "json_query": json.dumps({"measures": ["sales.total_amount"]}),
            "meta": {"visualization": {"kind": "kpi", "measure": "sales.total_amount"}},
        },
    )
    folder = dashboards.folder_create(deployment=cast.deployment, name=f"Shared {name}")
    workbook = dashboards.workbook_create(
        deployment=cast.deployment, changes={"name": f"Sales {name}", "slug": f"sales-{name}", "folder": folder}
    )
    dashboards.report_update(report=report, fields={"workbook": workbook})
    dashboards.workbook_dashboard_set(workbook=workbook, draft=draft_of(report, f"Sales overview {name}"))
    dashboard = None
    if publish:
        dashboard = dashboards.workbook_publish(workbook=workbook, allow_embed=True)
        dashboards.embed_access_update(workbook=workbook, all_embed_users=True, action="read")
    workbook.refresh_from_db()
    return DashboardRows(cast=cast, workbook=workbook, report=report, folder=folder, dashboard=dashboard)


@pytest.fixture
def demo_model_state() -> Iterator[None]:
    """No compiled model or open data source leaks between tests."""
    clear_models()
    yield
    clear_models()
    close_data_sources()


@pytest.fixture
def acme_dashboard(acme_rows: AccountRows, demo_model_state) -> DashboardRows:
    return make_dashboard(acme_rows.cast)


@pytest.fixture
def globex_dashboard(globex_rows: AccountRows, demo_model_state) -> DashboardRows:
    return make_dashboard(globex_rows.cast)


@pytest.fixture(scope="session")
def demo_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo dataset with 2,000 orders (DuckDB), generated once per test session."""
    path = tmp_path_factory.mktemp("panel-demo") / "demo.duckdb"
    generate(path, orders=2000, seed=DEFAULT_SEED)
    return path
