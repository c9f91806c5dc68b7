"""A deployment's multitenancy settings in the panel: compile-context keys and tenant data sources are edited on
its change page through the same service as the Platform API, passwords never shown, changes audited by name."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from embedadmin.accounts import services as accounts
from embedadmin.accounts.selectors import deployment_tenant_data_sources
from embedadmin.audit.models import AuditEntry
from tests.conftest import Cast
from tests.panel.conftest import admin_url

pytestmark = pytest.mark.django_db

SOURCES = {"a": "postgresql://reader:s3cret-a@db.example/tenant_a", "b": "postgresql://reader:s3cret-b@db.example/b"}


def form(**fields: str) -> dict[str, str]:
    return {
        "compile_context_keys_text": "",
        "tenant_data_source_field_text": "",
        "tenant_data_sources_text": "",
        **fields,
    }


def test_the_settings_are_edited_on_the_deployments_page(acme_admin: Client, acme: Cast) -> None:
    url = admin_url("deployment", "change", acme.deployment)
    lines = "\n".join(f"{tenant} = {source}" for tenant, source in SOURCES.items())

    saved = acme_admin.post(
        url,
        form(
            compile_context_keys_text="tenant, embed.embedTenant",
            tenant_data_source_field_text="tenant",
            tenant_data_sources_text=lines,
        ),
    )

    assert saved.status_code == 302, saved.content
    acme.deployment.refresh_from_db()
    assert acme.deployment.compile_context_keys == ["tenant", "embed.embedTenant"]
    stored = deployment_tenant_data_sources(deployment=acme.deployment)
    assert (stored.field, stored.sources) == ("tenant", SOURCES)
    page = acme_admin.get(url).content.decode()
    assert "s3cret" not in page
    assert "a = postgresql://reader:***@db.example/tenant_a" in page
    entry = AuditEntry.objects.filter(resource_type="deployment", resource_id=str(acme.deployment.pk)).latest("id")
    assert entry.action == "deployment.update"
    assert "s3cret" not in json.dumps(entry.details)


def test_a_url_left_as_shown_keeps_its_password(acme_admin: Client, acme: Cast) -> None:
    accounts.deployment_configure(
        deployment=acme.deployment, tenant_data_sources=accounts.TenantDataSources("tenant", SOURCES)
    )
    url = admin_url("deployment", "change", acme.deployment)
    shown = "a = postgresql://reader:***@db.example/tenant_a\nc = duckdb:///var/c.duckdb"

    saved = acme_admin.post(url, form(tenant_data_source_field_text="tenant", tenant_data_sources_text=shown))

    # b removed, c added (another kind of source than a's: refused), then with a postgres URL: a kept as stored
    assert saved.status_code == 200
    assert "every data source is of one kind" in saved.content.decode()
    shown = "a = postgresql://reader:***@db.example/tenant_a\nc = postgresql://x@db.example/c"
    assert (
        acme_admin.post(url, form(tenant_data_source_field_text="tenant", tenant_data_sources_text=shown)).status_code
        == 302
    )
    acme.deployment.refresh_from_db()
    stored = deployment_tenant_data_sources(deployment=acme.deployment)
    assert stored.sources == {"a": SOURCES["a"], "c": "postgresql://x@db.example/c"}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"compile_context_keys_text": "exp"}, "differs between two tokens of one viewer"),
        ({"tenant_data_source_field_text": "tenant", "tenant_data_sources_text": "a"}, "write value = data source URL"),
        ({"tenant_data_sources_text": "a = duckdb:///x"}, "tenantDataSources.field: a security-context field name"),
    ],
)
def test_a_bad_setting_is_shown_on_the_form_and_changes_nothing(
    acme_admin: Client, acme: Cast, fields: dict[str, str], message: str
) -> None:
    response = acme_admin.post(admin_url("deployment", "change", acme.deployment), form(**fields))

    assert response.status_code == 200
    assert message in response.content.decode()
    acme.deployment.refresh_from_db()
    assert (acme.deployment.compile_context_keys, acme.deployment.tenant_data_source_field) == ([], "")


def test_another_accounts_deployment_is_not_there_to_change(acme_admin: Client, globex: Cast) -> None:
    response = acme_admin.post(
        admin_url("deployment", "change", globex.deployment), form(compile_context_keys_text="t")
    )

    assert (response.status_code, response["Location"]) == (302, "/admin/")
    globex.deployment.refresh_from_db()
    assert globex.deployment.compile_context_keys == []
