"""The panel's "Who can read what" page (issue 22): for a deployment and one embed viewer (an external user as they
are, or an embed tenant, groups and attribute values), every cube and view of the model in a grid, with the same
answer as ``GET /api/v1/deployments/{id}/access``; "preview as viewer" links to it for its viewer; an account
administrator sees and picks only their own account's deployments, viewers and tenants. One Chromium test."""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from embedadmin.accounts.services import deployment_configure
from embedadmin.directory import services as directory
from embedadmin.directory.models import ExternalUser
from embedadmin.embedding import services as embedding
from embedadmin.semantic.results.grants import CLOSED_WITHOUT_POLICY, NO_GROUP_MATCH
from tests.conftest import Cast
from tests.panel.conftest import DEMO_MODEL, AccountRows, make_dashboard
from tests.panel.test_browser import log_in

ACCESS_URL = "/admin/accounts/deployment/access/"
NEVER_CACHED = "max-age=0, no-cache, no-store, must-revalidate, private"
RAW_CUBES = ("line_items", "orders", "products", "users")


def serve_demo(cast: Cast) -> ExternalUser:
    """``cast``'s deployment serving the demo model, the demo's directory (groups regional and admin, the country
    attribute) and Anna, a regional viewer of Northwind Traders in Germany, minted as a host mints her."""
    deployment_configure(deployment=cast.deployment, model_dir=str(DEMO_MODEL))
    for group in ("regional", "admin"):
        directory.group_create(account=cast.account, embed_tenant=None, name=group)
    directory.attribute_definition_create(
        account=cast.account, embed_tenant=None, data=directory.AttributeDefinitionInput(name="country", type="string")
    )
    embedding.session_generate(
        account=cast.account,
        deployment=cast.deployment,
        data=embedding.GenerateSessionInput(
            deployment_id=cast.deployment.pk,
            external_id="anna@northwind-traders",
            embed_tenant_name="northwind-traders",
            groups=["regional"],
            user_attributes=[("country", "Germany")],
            profile=directory.ProfileInput(display_name="Anna Berg"),
        ),
    )
    return ExternalUser.objects.get(account=cast.account, external_id="anna@northwind-traders")


@pytest.fixture
def anna(acme: Cast, demo_model_state) -> ExternalUser:
    return serve_demo(acme)


def rows_of(response) -> dict:
    assert response.status_code == 200, response.content
    grid = response.context["grid"]
    assert grid is not None, response.context["form"].errors
    return {row.name: row for row in grid.rows}


def test_an_external_user_is_shown_as_they_are(acme_admin: Client, acme: Cast, anna: ExternalUser):
    response = acme_admin.get(ACCESS_URL, {"deployment": acme.deployment.pk, "external_user": anna.pk})

    rows = rows_of(response)
    assert response["Cache-Control"] == NEVER_CACHED
    sales = rows["sales"]
    assert (sales.granted, sales.reason, sales.all_rows) == (True, None, False)
    assert sales.row_filters == ["Country equals Germany"]
    members = dict(sales.members)
    assert "Country" in members["Dimensions"]
    assert not {"Name", "Email"} & set(members["Dimensions"])
    assert set(members) == {"Measures", "Dimensions", "Segments"}
    for name in RAW_CUBES:
        assert (rows[name].granted, rows[name].reason, rows[name].members) == (False, CLOSED_WITHOUT_POLICY, [])
    page = html.unescape(response.content.decode())
    assert "Only rows where Country equals Germany" in page
    assert "No access policy: closed to embed viewers" in page
    assert page.count('class="panel-access-denied"') == len(RAW_CUBES)
    assert "northwind-traders" in page
    assert "country = Germany" in page
    assert f"GET /api/v1/deployments/{acme.deployment.pk}/access?externalId=anna@northwind-traders" in page


def test_a_typed_viewer_gets_the_same_answer_as_the_platform_api(acme_admin: Client, acme: Cast, anna: ExternalUser):
    tenant = anna.embed_tenant
    response = acme_admin.get(
        ACCESS_URL,
        {
            "deployment": acme.deployment.pk,
            "embed_tenant": tenant.pk,
            "groups": "regional",
            "attributes": "country=Spain",
        },
    )
    api = Client().get(
        f"/api/v1/deployments/{acme.deployment.pk}/access",
        {"embedTenant": tenant.name, "groups": "regional", "attributes": '{"country": "Spain"}'},
        **acme.platform_headers,
    )

    rows = rows_of(response)
    assert api.status_code == 200, api.content
    entities = api.json()["entities"]
    assert [e["name"] for e in entities] == list(rows)
    for entity in entities:
        row = rows[entity["name"]]
        assert (row.granted, row.reason, row.all_rows) == (
            entity["access"] == "granted",
            entity.get("reason"),
            entity["allRows"],
        )
        assert sum(len(titles) for _, titles in row.members) == len(entity["members"])
        assert len(row.row_filters) == len(entity["rowFilters"])
    assert rows["sales"].row_filters == ["Country equals Spain"]
    page = html.unescape(response.content.decode())
    assert 'attributes={"country":"Spain"}' in page


def test_the_admin_group_reads_all_rows_and_no_group_is_denied(acme_admin: Client, acme: Cast, anna: ExternalUser):
    admin = rows_of(acme_admin.get(ACCESS_URL, {"deployment": acme.deployment.pk, "groups": "admin"}))
    nobody = rows_of(acme_admin.get(ACCESS_URL, {"deployment": acme.deployment.pk}))

    assert (admin["sales"].all_rows, admin["sales"].row_filters) == (True, [])
    assert {"Name", "Email"} <= set(dict(admin["sales"].members)["Dimensions"])
    assert (nobody["sales"].granted, nobody["sales"].reason) == (False, NO_GROUP_MATCH)


def test_a_regional_viewer_without_a_country_reads_no_row_in_plain_words(acme_admin, acme, anna):
    rows = rows_of(acme_admin.get(ACCESS_URL, {"deployment": acme.deployment.pk, "groups": "regional"}))

    assert rows["sales"].row_filters == ["no row (the viewer has no value for Country)"]


def test_the_page_without_a_viewer_shows_the_form_with_the_accounts_first_deployment(acme_admin, acme, anna):
    response = acme_admin.get(ACCESS_URL)

    assert response.status_code == 200
    assert response.context["grid"] is None
    assert response.context["form"]["deployment"].value() == acme.deployment.pk
    for label in ("Deployment", "External user", "Embed tenant", "Groups", "Attributes", "Security context"):
        assert re.search(rf'<label for="id_\w+">{label}:</label>', response.content.decode()), label


@pytest.mark.parametrize(
    ("params", "field", "error"),
    [
        ({"attributes": "nationality=DE"}, None, "Attributes: the account has no tenant-wide attribute 'nationality'"),
        ({"groups": "auditors"}, None, "Groups with names auditors not found"),
        ({"attributes": "country"}, "attributes", "Line 1: write name=value."),
        ({"security_context": "{nope"}, "security_context", "Not valid JSON: write a JSON object."),
        ({"security_context": "[1]"}, "security_context", "Write a JSON object."),
        ({"security_context": '{"groups": ["admin"]}'}, None, "Security context: reserved claim names not allowed"),
        ({"groups": "admin", "external_user": "ANNA"}, None, "Pick an external user, or type groups and attributes"),
    ],
)
def test_bad_input_is_a_form_error(acme_admin: Client, acme: Cast, anna: ExternalUser, params, field, error):
    params = {k: (str(anna.pk) if v == "ANNA" else v) for k, v in params.items()}

    response = acme_admin.get(ACCESS_URL, {"deployment": acme.deployment.pk, **params})

    assert response.status_code == 200
    assert response.context["grid"] is None
    form = response.context["form"]
    errors = form.errors.get(field, []) if field else form.non_field_errors()
    assert any(e.startswith(error) for e in errors), form.errors


# --- isolation ---------------------------------------------------------------------------------------------------


def test_an_account_administrator_picks_only_their_accounts_rows(
    acme_admin: Client, acme: Cast, anna: ExternalUser, globex_rows: AccountRows
):
    response = acme_admin.get(ACCESS_URL)
    form = response.context["form"]

    assert set(form.fields["deployment"].queryset) == {acme.deployment}
    assert set(form.fields["external_user"].queryset) == {anna}
    assert set(form.fields["embed_tenant"].queryset) == {anna.embed_tenant}
    assert "globex" not in response.content.decode()


@pytest.mark.parametrize("field", ["deployment", "external_user", "embed_tenant"])
def test_another_accounts_rows_are_refused(acme_admin, acme: Cast, anna, globex_rows: AccountRows, field):
    theirs = {
        "deployment": globex_rows.cast.deployment,
        "external_user": globex_rows.external_user,
        "embed_tenant": globex_rows.embed_tenant,
    }[field]
    params = {"deployment": acme.deployment.pk, field: theirs.pk}

    response = acme_admin.get(ACCESS_URL, params)

    assert response.status_code == 200
    assert response.context["grid"] is None
    assert "Select a valid choice" in response.context["form"].errors[field][0]
    assert "globex" not in response.content.decode()


def test_a_superuser_may_not_mix_accounts(superuser: Client, acme: Cast, anna, globex_rows: AccountRows):
    response = superuser.get(
        ACCESS_URL, {"deployment": acme.deployment.pk, "external_user": globex_rows.external_user.pk}
    )

    assert response.context["form"].errors["external_user"] == ["Not of the deployment's account."]


def test_someone_not_logged_in_is_sent_to_the_login(acme, anna):
    response = Client().get(ACCESS_URL, {"deployment": acme.deployment.pk, "external_user": anna.pk})

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


# --- links -------------------------------------------------------------------------------------------------------


def test_the_deployment_page_links_to_it(acme_admin: Client, acme: Cast, anna):
    response = acme_admin.get(f"/admin/accounts/deployment/{acme.deployment.pk}/change/")

    assert (
        f'href="{ACCESS_URL}?deployment={acme.deployment.pk}" id="panel-deployment-access"' in response.content.decode()
    )


def test_preview_as_viewer_links_to_the_page_of_the_same_viewer(
    acme_admin: Client, acme_rows: AccountRows, demo_model_state
):
    cast = acme_rows.cast
    content = make_dashboard(cast)
    serve_demo(cast)
    preview = f"/admin/dashboards/dashboard/{content.dashboard.pk}/preview/"

    picked = acme_admin.post(preview, {"external_user": acme_rows.external_user.pk})
    typed = acme_admin.post(
        preview,
        {"external_id": "eve", "embed_tenant": "shop-new", "groups": "regional, admin", "attributes": "country=Spain"},
    )

    assert _access_link(picked) == {
        "deployment": [str(cast.deployment.pk)],
        "external_user": [str(acme_rows.external_user.pk)],
    }
    link = _access_link(typed)
    tenant = ExternalUser.objects.get(account=cast.account, external_id="eve").embed_tenant
    assert link == {
        "deployment": [str(cast.deployment.pk)],
        "embed_tenant": [str(tenant.pk)],
        "groups": ["regional, admin"],
        "attributes": ["country=Spain"],
    }
    # Followed, the link shows that viewer: what their embed token reads.
    followed = acme_admin.get(ACCESS_URL, {k: v[0] for k, v in link.items()})
    grid = followed.context["grid"]
    assert (grid.viewer.embed_tenant, grid.viewer.groups, grid.viewer.user_attributes["country"]) == (
        "shop-new",
        ["regional", "admin"],
        "Spain",
    )


def _access_link(response) -> dict[str, list[str]]:
    assert response.status_code == 200, response.content
    match = re.search(r'<a href="([^"]+)" id="panel-preview-access">', response.content.decode())
    assert match, response.content
    url = html.unescape(match.group(1))
    assert urlsplit(url).path == ACCESS_URL
    return parse_qs(urlsplit(url).query)


# --- in Chromium -------------------------------------------------------------------------------------------------


@pytest.mark.browser
def test_in_chromium_the_administrator_reads_the_grid_of_a_viewer(
    page, live_server, acme: Cast, anna: ExternalUser, tmp_path: Path
):
    log_in(page, live_server.url, acme.created.admin_username, acme.created.admin_password)

    # From the deployment's page, the administrator opens the access page and picks Anna by her label,
    page.goto(f"{live_server.url}/admin/accounts/deployment/{acme.deployment.pk}/change/")
    page.click("#panel-deployment-access")
    page.get_by_label("External user").select_option(label="anna@northwind-traders (northwind-traders)")
    page.click("input[type=submit][value='Show what they can read']")
    page.wait_for_selector("#panel-access-viewer")

    # then the grid shows sales granted to her country, without personal data, and the raw cubes denied, greyed.
    sales = page.locator("tr[data-entity=sales]")
    assert "Only rows where Country equals Germany" in sales.inner_text()
    assert "Email" not in sales.inner_text()
    users = page.locator("tr[data-entity=users]")
    assert "Denied" in users.inner_text()
    assert "No access policy: closed to embed viewers" in users.inner_text()
    assert users.evaluate("row => getComputedStyle(row.cells[0]).color") != sales.evaluate(
        "row => getComputedStyle(row.cells[0]).color"
    )
    # Every control of the form has a label a screen reader announces.
    for label in ("Deployment", "External user", "Embed tenant", "Groups", "Attributes", "Security context"):
        assert page.get_by_label(label).count() == 1, label
    page.screenshot(path=str(tmp_path / "panel-access.png"), full_page=True)
