"""Per-tenant data sources and compiled models (docs/core-data-api.md "Per-tenant models and data sources"), on two
PostgreSQL databases: an isolation matrix over every door.

Tenant ``a``'s data lives in one database and tenant ``b``'s in another (the demo dataset in each, every customer's
city renamed ``Alpha City`` in one and ``Bravo City`` in the other, half of ``b``'s orders removed); the deployment's
default data source is the demo's DuckDB file, whose cities are neither. The deployment maps the security-context
field ``tenant`` to the two databases and compiles its model per ``tenant`` (a JavaScript view named after it).
Embed viewers of each tenant, and viewers whose security context names no tenant or an unknown one, try every door:
the Core Data API (``load``, ``sql``, ``meta``, ``cubesql``), the dashboard's view and export endpoints, and the
chat's tools. A viewer reads their own tenant's rows and model only; the others are refused (403), never served the
default's or another tenant's.
"""

# ruff: noqa: F811  (the fixtures imported from other test modules are redefined as test arguments, as pytest wants)

from __future__ import annotations

import csv
import io
import json
import re
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from demo.generate import load_postgres
from embedadmin.accounts.selectors import deployment_tenant_data_sources
from embedadmin.accounts.services import TenantDataSources, deployment_configure
from embedadmin.audit.models import AuditEntry
from embedadmin.chat.tools import ToolContext, default_tools
from embedadmin.semantic.serving.auth import core_token_verify
from embedadmin.semantic.serving.routing import query_context
from embedadmin.semantic.sources.registry import close_data_sources
from tests.asgi_server import database_url_for_subprocess
from tests.embedding.conftest import generate, new_session, tenant_group  # noqa: F401
from tests.embedding.dashboard_support import bootstrap_of, embed_headers, page_url, published_dashboard
from tests.schemas import qualified_model
from tests.semantic.http_support import DEMO_MODEL, CoreApi, core, demo_duckdb, fresh_semantic_state  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

CITY = {"a": "Alpha City", "b": "Bravo City"}
TENANT_VIEW = """
const { securityContext: { tenant } } = COMPILE_CONTEXT;
view(`tenant_${tenant}_orders`, {
  cubes: [{ joinPath: orders, includes: [`count`, `status`] }],
  accessPolicy: [{ group: `admin`, memberLevel: { includes: `*` } }],
});
"""
BY_CITY = {"measures": ["sales.order_count"], "dimensions": ["sales.users_city"]}
VIEW = "/api/v1/embed/dashboard/SalesOverv01/view"
EXPORT = "/api/v1/embed/dashboard/SalesOverv01/export"


@pytest.fixture(scope="module")
def tenant_databases(django_db_setup, django_db_blocker, demo_duckdb) -> Iterator[dict[str, str]]:
    """tenant -> URL of a database of its own holding its data (schema ``demo``); dropped afterwards."""
    with django_db_blocker.unblock():
        assert connection.vendor == "postgresql", "this test needs PostgreSQL (TEST_DATABASE_URL)"
        server = database_url_for_subprocess()
    base, _, name = server.rpartition("/")
    urls = {tenant: f"{base}/{name}_{tenant}_{uuid.uuid4().hex[:8]}" for tenant in CITY}
    with psycopg.connect(server, autocommit=True) as admin:
        for url in urls.values():
            admin.execute(f'CREATE DATABASE "{url.rpartition("/")[2]}"')
    try:
        for tenant, url in urls.items():
            load_postgres(demo_duckdb, url, schema="demo")
            with psycopg.connect(url, autocommit=True) as tenant_db:
                tenant_db.execute("UPDATE demo.users SET city = %s", [CITY[tenant]])
                if tenant == "b":
                    tenant_db.execute("DELETE FROM demo.line_items WHERE order_id % 2 = 0")
                    tenant_db.execute("DELETE FROM demo.orders WHERE id % 2 = 0")
        yield urls
    finally:
        close_data_sources()  # the pools of the tenants' data sources
        with psycopg.connect(server, autocommit=True) as admin:
            for url in urls.values():
                database = url.rpartition("/")[2]
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = %s AND usename = current_user",
                    [database],
                )
                admin.execute(f'DROP DATABASE IF EXISTS "{database}"')


def order_count(url: str) -> int:
    with psycopg.connect(url) as db:
        row = db.execute("SELECT count(*) FROM demo.orders o JOIN demo.users u ON u.id = o.user_id").fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def tenanted(core: CoreApi, tenant_databases: dict[str, str], tmp_path: Path) -> CoreApi:
    model = qualified_model(DEMO_MODEL, tmp_path / "model", "demo")
    (model / "views" / "tenant.js").write_text(textwrap.dedent(TENANT_VIEW))
    deployment_configure(
        deployment=core.cast.deployment,
        model_dir=str(model),
        compile_context_keys=["tenant"],
        tenant_data_sources=TenantDataSources("tenant", dict(tenant_databases)),
    )
    return core


@pytest.fixture
def viewer(tenanted: CoreApi, new_session, tenant_group) -> Callable[..., dict[str, str]]:
    """``viewer(tenant)``: an embed viewer (group admin) whose session's security context names ``tenant`` (or,
    with ``None``, no tenant): its sessionId and exchanged token."""
    tenant_group(tenanted.cast, "admin")

    def make(tenant: str | None, **fields: Any) -> dict[str, str]:
        context = {"securityContext": {"tenant": tenant}} if tenant is not None else {}
        body = {"externalId": f"viewer-{tenant}", "groups": ["admin"], **context, **fields}
        exchanged = tenanted.client.post_json(
            "/api/v1/embed/session/token", {"sessionId": new_session(tenanted.cast, **body)}
        )
        assert exchanged.status_code == 200, exchanged.content
        return {"token": exchanged.json()["token"], "page_session": new_session(tenanted.cast, **body)}

    return make


# --- the doors --------------------------------------------------------------------------------------------------


def core_load(core: CoreApi, token: str) -> tuple[int, Any]:
    response = core.post("load", {"query": BY_CITY}, token=token)
    return response.status_code, response.json()


def cities_and_count(body: dict[str, Any]) -> tuple[set[str], int]:
    rows = body["data"]
    return {row["sales.users_city"] for row in rows}, sum(int(row["sales.order_count"]) for row in rows)


def test_each_tenants_viewer_reads_its_own_database_through_the_core_data_api(tenanted, viewer, tenant_databases):
    for tenant in ("a", "b"):
        status, body = core_load(tenanted, viewer(tenant)["token"])

        assert status == 200, body
        assert cities_and_count(body) == ({CITY[tenant]}, order_count(tenant_databases[tenant]))
    assert order_count(tenant_databases["a"]) != order_count(tenant_databases["b"])


def test_each_tenant_is_served_the_model_compiled_for_it(tenanted, viewer):
    for tenant, other in (("a", "b"), ("b", "a")):
        meta = tenanted.get("meta", token=viewer(tenant)["token"])

        assert meta.status_code == 200, meta.content
        names = {cube["name"] for cube in meta.json()["cubes"]}
        assert f"tenant_{tenant}_orders" in names
        assert f"tenant_{other}_orders" not in names
        own = tenanted.post(
            "load", {"query": {"measures": [f"tenant_{tenant}_orders.count"]}}, token=viewer(tenant)["token"]
        )
        theirs = tenanted.post(
            "load", {"query": {"measures": [f"tenant_{other}_orders.count"]}}, token=viewer(tenant)["token"]
        )
        assert own.status_code == 200, own.content
        assert theirs.status_code == 403
        assert theirs.json() == {"error": f"Access denied: 'tenant_{other}_orders.count' is not granted to this viewer"}


def test_sql_and_cubesql_answer_each_tenant_alike_and_cubesql_reads_its_database(tenanted, viewer, tenant_databases):
    for tenant in ("a", "b"):
        token = viewer(tenant)["token"]
        sql = tenanted.post("sql", {"query": BY_CITY}, token=token)
        lines = tenanted.post(
            "cubesql", {"query": "SELECT users_city, MEASURE(order_count) FROM sales GROUP BY 1"}, token=token
        )

        assert sql.status_code == 200, sql.content
        assert '"demo".users' in json.dumps(sql.json()) or "demo.users" in json.dumps(sql.json())
        assert lines.status_code == 200, lines.content
        data = [json.loads(line) for line in lines.content.decode().splitlines() if line]
        rows = [row for part in data if "data" in part for row in part["data"]]
        assert rows == [[CITY[tenant], str(order_count(tenant_databases[tenant]))]]


def amounts_by_country(url: str) -> dict[str, float]:
    with psycopg.connect(url) as db:
        rows = db.execute(
            "SELECT u.country, sum(o.amount) FROM demo.orders o JOIN demo.users u ON u.id = o.user_id GROUP BY 1"
        ).fetchall()
    return {country: float(amount) for country, amount in rows}


def test_the_dashboards_view_and_export_serve_each_tenant_its_own(tenanted, viewer, tenant_databases):
    published_dashboard(tenanted.cast)
    for tenant in ("a", "b"):
        session = viewer(tenant, settings={"allowExport": True})["page_session"]
        page = tenanted.client.get(page_url("SalesOverv01", session))
        assert page.status_code == 200, page.content
        boot = bootstrap_of(page)

        view = tenanted.client.post_json(VIEW, {"grant": boot["grant"]}, **embed_headers(boot["token"]))
        export = tenanted.client.post_json(
            EXPORT, {"grant": boot["grant"], "widgetId": "by-country", "format": "csv"}, **embed_headers(boot["token"])
        )
        tile = next(w for w in boot["view"]["widgets"] if w["id"] == "revenue")
        rows = tenanted.client.post_json(
            f"{boot['coreApiBase']}/load",
            {"query": {**BY_CITY, "measures": ["sales.order_count"]}},
            HTTP_AUTHORIZATION=boot["token"],
        )

        assert view.status_code == 200, view.content
        assert tile["query"]["measures"]
        assert export.status_code == 200, export.content
        exported = {row[0]: float(row[1]) for row in list(csv.reader(io.StringIO(export.content.decode())))[1:]}
        assert exported == pytest.approx(amounts_by_country(tenant_databases[tenant]))
        assert rows.status_code == 200, rows.content
        assert {row["sales.users_city"] for row in rows.json()["data"]} == {CITY[tenant]}


def chat_call(core: CoreApi, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A chat tool called as the runtime calls it, with the query context of the viewer's token."""
    deployment = core.cast.deployment
    ctx = query_context(core_token_verify(deployment=deployment, token=token), deployment=deployment)
    context = ToolContext(account_id=core.cast.account.pk, deployment_id=deployment.pk, query_context=ctx)
    return json.loads(default_tools().call(context, name, arguments))


def test_the_chat_tools_read_each_tenants_model_and_database(tenanted, viewer, tenant_databases):
    for tenant, other in (("a", "b"), ("b", "a")):
        token = viewer(tenant)["token"]
        meta = chat_call(tenanted, token, "serviceMeta", {"searchQuery": "orders"})
        result = chat_call(
            tenanted,
            token,
            "serviceSqlApi",
            {"sqlQuery": "SELECT users_city, MEASURE(order_count) FROM sales GROUP BY 1", "queryTitle": "By city"},
        )

        names = {cube["name"] for cube in meta["cubes"]}
        assert f"tenant_{tenant}_orders" in names
        assert f"tenant_{other}_orders" not in names
        text = json.dumps(result)
        assert CITY[tenant] in text
        assert CITY[other] not in text
        assert str(order_count(tenant_databases[tenant])) in text


# --- fail closed ------------------------------------------------------------------------------------------------

REFUSALS = {
    None: "Access denied: the security context has no 'tenant', which selects this deployment's data model",
    "c": "Access denied: no data source is configured for this security context's 'tenant'",
    "a b": "Access denied: the security context cannot select a data model: tenant: a compile key's text has "
    "letters, digits, '_' and '-' only (100 at most)",
}


@pytest.mark.parametrize("tenant", list(REFUSALS), ids=["missing", "unknown", "not-a-key"])
def test_a_viewer_without_a_known_tenant_is_refused_by_every_door(tenanted, viewer, tenant):
    published_dashboard(tenanted.cast)
    made = viewer(tenant)
    token, expected = made["token"], {"error": REFUSALS[tenant]}
    boot_page = tenanted.client.get(page_url("SalesOverv01", made["page_session"]))

    answers = {
        "load": tenanted.post("load", {"query": BY_CITY}, token=token),
        "sql": tenanted.post("sql", {"query": BY_CITY}, token=token),
        "dry-run": tenanted.post("dry-run", {"query": BY_CITY}, token=token),
        "meta": tenanted.get("meta", token=token),
        "cubesql": tenanted.post("cubesql", {"query": "SELECT MEASURE(order_count) FROM sales"}, token=token),
    }

    for door, response in answers.items():
        assert (door, response.status_code, response.json()) == (door, 403, expected)
    for tool, arguments in (
        ("serviceMeta", {"searchQuery": "orders"}),
        ("serviceSqlApi", {"sqlQuery": "SELECT MEASURE(order_count) FROM sales", "queryTitle": "x"}),
    ):
        assert chat_call(tenanted, token, tool, arguments) == expected
    # The dashboard page does not open on a model it cannot read; nothing of any tenant's data is on it.
    assert boot_page.status_code != 200 or not any(city in boot_page.content.decode() for city in CITY.values())
    for response in [*answers.values(), boot_page]:
        assert not any(city in response.content.decode() for city in CITY.values())


def test_who_can_read_what_describes_a_tenants_viewer_with_its_model_and_refuses_one_without(tenanted, viewer):
    viewer("a")  # the admin group exists
    url = f"/api/v1/deployments/{tenanted.cast.deployment.pk}/access"

    described = tenanted.client.get(
        url, {"groups": "admin", "securityContext": json.dumps({"tenant": "a"})}, **tenanted.cast.platform_headers
    )
    without = tenanted.client.get(url, {"groups": "admin"}, **tenanted.cast.platform_headers)

    assert described.status_code == 200, described.content
    names = {entity["name"] for entity in described.json()["entities"]}
    assert "tenant_a_orders" in names
    assert "tenant_b_orders" not in names
    assert (without.status_code, without.json()) == (403, {"error": REFUSALS[None]})


def test_a_token_the_customer_signs_without_the_tenant_is_refused_too(tenanted, tenant_databases):
    plain = tenanted.token()
    with_tenant = tenanted.token(tenant="b")

    refused = tenanted.post("load", {"query": BY_CITY}, token=plain)
    served = tenanted.load(BY_CITY, token=with_tenant)

    assert (refused.status_code, refused.json()) == (403, {"error": REFUSALS[None]})
    assert cities_and_count(served) == ({CITY["b"]}, order_count(tenant_databases["b"]))


def test_answers_and_results_kept_for_one_tenant_are_never_given_to_another(tenanted, viewer):
    a, b = viewer("a")["token"], viewer("b")["token"]

    for _ in range(2):  # the second round is answered from what the first kept
        assert cities_and_count(core_load(tenanted, a)[1])[0] == {CITY["a"]}
        assert cities_and_count(core_load(tenanted, b)[1])[0] == {CITY["b"]}
        assert {c["name"] for c in tenanted.get("meta", token=a).json()["cubes"]} >= {"tenant_a_orders"}
        assert "tenant_a_orders" not in {c["name"] for c in tenanted.get("meta", token=b).json()["cubes"]}


# --- the settings ---------------------------------------------------------------------------------------------


def test_the_settings_are_set_through_the_platform_api_audited_and_answered_without_passwords(core, tenant_databases):
    url = f"/api/v1/deployments/{core.cast.deployment.pk}"
    body = {"compileContextKeys": ["tenant"], "tenantDataSources": {"field": "tenant", "sources": tenant_databases}}

    changed = core.client.patch_json(url, body, **core.cast.platform_headers)
    read = core.client.get(url, **core.cast.platform_headers)

    assert changed.status_code == 200, changed.content
    assert read.json() == changed.json()
    assert read.json()["compileContextKeys"] == ["tenant"]
    shown = read.json()["tenantDataSources"]
    assert shown["field"] == "tenant"
    assert set(shown["sources"]) == {"a", "b"}
    password = connection.settings_dict["PASSWORD"]
    assert shown["sources"] == {t: url.replace(f":{password}@", ":***@") for t, url in tenant_databases.items()}
    entry = AuditEntry.objects.filter(resource_type="deployment", resource_id=str(core.cast.deployment.pk)).latest("id")
    assert entry.action == "deployment.update"
    assert sorted(entry.details["fields"]) == ["compileContextKeys", "tenantDataSources"]
    assert "postgresql://" not in json.dumps(entry.details)

    # Resending what was answered (passwords as ***) is refused rather than stored; null and [] turn both off.
    resent = core.client.patch_json(url, {"tenantDataSources": shown}, **core.cast.platform_headers)
    off = core.client.patch_json(
        url, {"compileContextKeys": [], "tenantDataSources": None}, **core.cast.platform_headers
    )
    assert resent.status_code == 400
    assert "send the URL with its password" in resent.json()["error"]
    assert (off.json()["compileContextKeys"], off.json()["tenantDataSources"]) == ([], None)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"compileContextKeys": "tenant"}, "compileContextKeys: must be a list of security-context field names"),
        ({"compileContextKeys": ["exp"]}, "compileContextKeys[0]: 'exp' differs between two tokens of one viewer"),
        ({"compileContextKeys": ["a", "a.b"]}, "compileContextKeys: 'a.b' repeats or overlaps 'a'"),
        ({"compileContextKeys": ["a b"]}, "compileContextKeys[0]: a security-context field name"),
        ({"tenantDataSources": {"field": "tenant", "sources": {}}}, "tenantDataSources.sources: at least one value"),
        ({"tenantDataSources": {"field": "", "sources": {"a": "duckdb:///x"}}}, "tenantDataSources.field: a security"),
        ({"tenantDataSources": {"field": "t", "sources": {"a": "http://x"}}}, "tenantDataSources.sources['a']: a data"),
        (
            {"tenantDataSources": {"field": "t", "sources": {"a": "duckdb:///x", "b": "postgresql://h/db"}}},
            "tenantDataSources.sources: every data source is of one kind",
        ),
        ({"tenantDataSources": ["t"]}, "tenantDataSources: must be null or an object {field, sources}"),
        ({"name": "renamed", "compileContextKeys": "x"}, "compileContextKeys: must be a list"),
    ],
)
def test_a_bad_setting_is_a_400_and_changes_nothing(core, body, message):
    url = f"/api/v1/deployments/{core.cast.deployment.pk}"

    response = core.client.patch_json(url, body, **core.cast.platform_headers)

    assert response.status_code == 400
    assert response.json()["error"].startswith(message)
    core.cast.deployment.refresh_from_db()
    assert core.cast.deployment.name != "renamed"
    assert core.cast.deployment.compile_context_keys == []
    assert core.cast.deployment.tenant_data_source_field == ""


def test_another_accounts_deployment_settings_cannot_be_changed(core, globex):
    url = f"/api/v1/deployments/{globex.deployment.pk}"

    response = core.client.patch_json(url, {"compileContextKeys": ["tenant"]}, **core.cast.platform_headers)

    assert response.status_code == 404
    globex.deployment.refresh_from_db()
    assert globex.deployment.compile_context_keys == []


def test_the_settings_are_set_by_configure_deployment_and_printed_without_passwords(core, tenant_databases):
    deployment = core.cast.deployment
    pairs = [f"--tenant-source={value}={url}" for value, url in sorted(tenant_databases.items())]
    out = io.StringIO()

    call_command(
        "configure_deployment",
        str(deployment.pk),
        "--compile-context-keys=tenant, region",
        "--tenant-field=tenant",
        *pairs,
        "--json",
        stdout=out,
    )

    printed = json.loads(out.getvalue())
    deployment.refresh_from_db()
    assert deployment.compile_context_keys == ["tenant", "region"]
    assert deployment_tenant_data_sources(deployment=deployment).sources == tenant_databases
    assert printed["compileContextKeys"] == ["tenant", "region"]
    assert printed["tenantDataSources"]["field"] == "tenant"
    assert all(":***@" in url for url in printed["tenantDataSources"]["sources"].values())

    call_command("configure_deployment", str(deployment.pk), "--compile-context-keys=", "--tenant-field=", stdout=out)

    deployment.refresh_from_db()
    assert deployment.compile_context_keys == []
    assert not deployment_tenant_data_sources(deployment=deployment).field


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--tenant-source=a=postgresql://x/y"], "--tenant-source needs --tenant-field"),
        (["--tenant-field=tenant", "--tenant-source=a"], "--tenant-source 'a': write VALUE=URL"),
        (["--tenant-field=tenant", "--tenant-source=a=mysql2://x/y"], "tenantDataSources.sources['a']"),
        (["--tenant-field=tenant"], "tenantDataSources.sources: at least one value"),
        (["--compile-context-keys=exp"], "compileContextKeys"),
    ],
)
def test_a_bad_setting_on_the_command_line_fails_and_changes_nothing(core, arguments, message):
    deployment = core.cast.deployment

    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("configure_deployment", str(deployment.pk), *arguments, stdout=io.StringIO())

    deployment.refresh_from_db()
    assert deployment.compile_context_keys == []
    assert not deployment_tenant_data_sources(deployment=deployment).field
