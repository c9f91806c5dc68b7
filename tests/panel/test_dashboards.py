"""The panel's dashboard pages: workbooks with their draft, reports, versions and embed access; publishing,
embedding and sharing through ``dashboards.services``; "preview as viewer" through ``session_generate``; and
an account administrator kept to their own account's dashboards, viewers and tenants."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from embedadmin.dashboards import services as dashboards
from embedadmin.dashboards.models import Dashboard, EmbedAccess
from embedadmin.directory import services as directory
from embedadmin.embedding import services as embedding
from embedadmin.embedding.models import EmbedSession
from tests.conftest import JsonClient
from tests.embedding.support import TOKEN_URL, decode_embed_token
from tests.panel.conftest import AccountRows, DashboardRows, admin_url, draft_of, make_dashboard, messages_of

NEVER_CACHED = "max-age=0, no-cache, no-store, must-revalidate, private"


def preview_url(dashboard: Dashboard) -> str:
    return f"/admin/dashboards/dashboard/{dashboard.pk}/preview/"


def workbook_url(rows: DashboardRows, page: str) -> str:
    return f"/admin/dashboards/workbook/{rows.workbook.pk}/{page}/"


def iframe_src(response) -> str:
    match = re.search(
        r'<iframe class="panel-preview-frame" id="panel-preview-frame" src="([^"]+)"', response.content.decode()
    )
    assert match, response.content
    return match.group(1).replace("&amp;", "&")


def session_of(url: str) -> str:
    (session,) = parse_qs(urlsplit(url).query)["session"]
    return session


@pytest.fixture
def unpublished(acme_rows: AccountRows, demo_model_state) -> DashboardRows:
    return make_dashboard(acme_rows.cast, publish=False)


# --- workbook list and page ----------------------------------------------------------------------------------


def test_workbook_list_shows_the_dashboard_of_each_workbook(acme_admin: Client, acme_dashboard, globex_dashboard):
    response = acme_admin.get(admin_url("workbook"))

    assert response.status_code == 200
    page = response.content.decode()
    dashboard = acme_dashboard.dashboard
    assert set(response.context["cl"].queryset.values_list("pk", flat=True)) == {acme_dashboard.workbook.pk}
    row = re.search(r"<tr>.*?Sales acme.*?</tr>", page, re.S).group(0)
    assert "sales-acme" in row
    assert "published" in row
    assert '<td class="field-version">1</td>' in row
    assert 'field-allow_embed"><img src="/static/admin/img/icon-yes.svg" alt="True">' in row
    assert f"<code>/embed/dashboard/{dashboard.public_id}?session=…</code>" in row
    assert f'href="{preview_url(dashboard)}">Preview as viewer</a>' in row
    assert "globex" not in page


def test_workbook_list_filters_by_deployment(acme_admin: Client, acme_dashboard: DashboardRows):
    from embedadmin.accounts import services as accounts

    staging, _secret = accounts.deployment_create(account=acme_dashboard.cast.account, name="Staging", slug="staging")
    other = dashboards.workbook_create(deployment=staging, changes={"name": "Staging book"})

    both = acme_admin.get(admin_url("workbook"))
    only = acme_admin.get(admin_url("workbook"), {"deployment__id__exact": staging.pk})

    assert set(both.context["cl"].queryset.values_list("pk", flat=True)) == {acme_dashboard.workbook.pk, other.pk}
    assert list(only.context["cl"].result_list) == [other]
    assert "draft only (never published)" in only.content.decode()


def test_workbook_page_shows_draft_versions_reports_and_embed_access(acme_admin: Client, acme_dashboard):
    response = acme_admin.get(admin_url("workbook", "change", acme_dashboard.workbook))

    assert response.status_code == 200
    page = response.content.decode()
    assert "<strong>Sales overview acme</strong>: 2 widget(s)" in page  # the draft, in words
    assert "<tr><td>v1</td>" in page  # the published versions
    assert acme_dashboard.report.public_id in page  # the reports inline
    assert "all embed users" in page  # embed access inline
    assert f'href="{workbook_url(acme_dashboard, "publish")}"' in page
    assert f'href="{workbook_url(acme_dashboard, "embed-access")}"' in page
    assert f'href="{preview_url(acme_dashboard.dashboard)}"' in page
    assert 'name="name"' not in page  # read-only: content changes through the API or dashboards as code


# --- publish -----------------------------------------------------------------------------------------------


def test_publish_button_publishes_a_changed_draft_through_the_service(
    acme_admin: Client, acme_dashboard: DashboardRows, monkeypatch
):
    calls = []
    real_publish = dashboards.workbook_publish
    monkeypatch.setattr(dashboards, "workbook_publish", lambda **kw: calls.append(kw) or real_publish(**kw))
    dashboards.workbook_dashboard_set(
        workbook=acme_dashboard.workbook, draft=draft_of(acme_dashboard.report, "Sales overview, second edition")
    )

    confirm = acme_admin.get(workbook_url(acme_dashboard, "publish"))
    response = acme_admin.post(workbook_url(acme_dashboard, "publish"))

    assert confirm.status_code == 200
    assert "version 2 of dashboard" in confirm.content.decode()
    assert response.status_code == 302
    assert response["Location"] == admin_url("workbook", "change", acme_dashboard.workbook)
    dashboard = Dashboard.objects.get(pk=acme_dashboard.dashboard.pk)
    assert (dashboard.version_number, dashboard.title) == (2, "Sales overview, second edition")
    assert [c["published_by"] for c in calls] == [acme_dashboard.cast.created.admin_username]
    assert messages_of(response) == [
        ("success", f"Published Sales overview, second edition: version 2 (publicId {dashboard.public_id}).")
    ]
    assert dashboard.versions.get(number=2).published_by == acme_dashboard.cast.created.admin_username


def test_publishing_an_unchanged_draft_makes_no_version(acme_admin: Client, acme_dashboard: DashboardRows):
    response = acme_admin.post(workbook_url(acme_dashboard, "publish"))

    assert response.status_code == 302
    assert Dashboard.objects.get(pk=acme_dashboard.dashboard.pk).versions.count() == 1


def test_publish_action_publishes_each_selected_workbook(acme_admin: Client, unpublished: DashboardRows):
    response = acme_admin.post(
        admin_url("workbook"), {"action": "publish_dashboards", "_selected_action": [unpublished.workbook.pk]}
    )

    assert response.status_code == 302
    dashboard = Dashboard.objects.get(workbook=unpublished.workbook)
    assert (dashboard.status, dashboard.version_number, dashboard.allow_embed) == ("published", 1, False)
    assert messages_of(response) == [("success", "Published 1 dashboard(s). Sales acme: version 1")]


def test_a_refused_publish_is_an_error_message(acme_admin: Client, acme_rows: AccountRows, demo_model_state):
    empty = dashboards.workbook_create(deployment=acme_rows.cast.deployment, changes={"name": "Empty"})

    response = acme_admin.post(admin_url("workbook"), {"action": "publish_dashboards", "_selected_action": [empty.pk]})

    assert response.status_code == 302
    assert messages_of(response) == [("error", f"Workbook {empty.pk} has no dashboard draft to publish")]
    assert not Dashboard.objects.filter(workbook=empty).exists()


# --- embedding and sharing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("action", "allowed"), [("disallow_embedding", False), ("allow_embedding", True)])
def test_allow_and_disallow_embedding_actions(acme_admin: Client, acme_dashboard: DashboardRows, action, allowed):
    Dashboard.objects.filter(pk=acme_dashboard.dashboard.pk).update(allow_embed=not allowed)

    response = acme_admin.post(
        admin_url("workbook"), {"action": action, "_selected_action": [acme_dashboard.workbook.pk]}
    )

    assert response.status_code == 302
    assert Dashboard.objects.get(pk=acme_dashboard.dashboard.pk).allow_embed is allowed


def test_embedding_cannot_be_allowed_before_publishing(acme_admin: Client, unpublished: DashboardRows):
    response = acme_admin.post(
        admin_url("workbook"), {"action": "allow_embedding", "_selected_action": [unpublished.workbook.pk]}
    )

    assert response.status_code == 302
    assert messages_of(response) == [
        ("error", f"allowEmbed: workbook {unpublished.workbook.pk} has no published dashboard")
    ]


def test_embed_access_page_shares_and_unshares_with_a_tenant(
    acme_admin: Client, acme_rows: AccountRows, acme_dashboard: DashboardRows
):
    url = workbook_url(acme_dashboard, "embed-access")
    tenant = acme_rows.embed_tenant

    page = acme_admin.get(url)
    shared = acme_admin.post(url, {"target": "tenant", "embed_tenant": tenant.pk, "access": "read"})
    listed = acme_admin.get(url).content.decode()
    unshared = acme_admin.post(url, {"unshare": tenant.pk})

    assert page.status_code == 200
    assert set(page.context["form"].fields["embed_tenant"].queryset) == {tenant}
    assert shared.status_code == 302
    assert f"embed tenant {tenant.name}" in listed
    assert unshared.status_code == 302
    assert list(
        EmbedAccess.objects.filter(workbook=acme_dashboard.workbook).values_list("embed_tenant", flat=True)
    ) == [None]


def test_embed_access_page_unshares_all_embed_users_and_toggles_embedding(acme_admin: Client, acme_dashboard):
    url = workbook_url(acme_dashboard, "embed-access")

    acme_admin.post(url, {"unshare": "all"})
    acme_admin.post(url, {"allow_embed": "false"})

    assert not EmbedAccess.objects.filter(workbook=acme_dashboard.workbook).exists()
    assert Dashboard.objects.get(pk=acme_dashboard.dashboard.pk).allow_embed is False
    acme_admin.post(url, {"target": "all", "access": "read"})
    acme_admin.post(url, {"allow_embed": "true"})
    assert EmbedAccess.objects.filter(workbook=acme_dashboard.workbook, embed_tenant=None).exists()
    assert Dashboard.objects.get(pk=acme_dashboard.dashboard.pk).allow_embed is True


def test_sharing_with_a_tenant_needs_the_tenant(acme_admin: Client, acme_dashboard):
    response = acme_admin.post(workbook_url(acme_dashboard, "embed-access"), {"target": "tenant", "access": "read"})

    assert response.status_code == 200
    assert response.context["form"].errors == {"embed_tenant": ["Choose the embed tenant."]}


# --- preview as viewer -------------------------------------------------------------------------------------


def test_preview_offers_the_accounts_external_users(acme_admin: Client, acme_rows, acme_dashboard, globex_rows):
    response = acme_admin.get(preview_url(acme_dashboard.dashboard))

    assert response.status_code == 200
    assert set(response.context["form"].fields["external_user"].queryset) == {acme_rows.external_user}
    assert "globex" not in response.content.decode()
    assert 'id="panel-preview-frame"' not in response.content.decode()


def test_preview_as_an_external_user_mints_their_session_and_frames_the_embed(
    acme_admin: Client, acme_rows: AccountRows, acme_dashboard: DashboardRows, api: JsonClient, monkeypatch
):
    calls = []
    real_generate = embedding.session_generate
    monkeypatch.setattr(embedding, "session_generate", lambda **kw: calls.append(kw) or real_generate(**kw))
    user = acme_rows.external_user

    response = acme_admin.post(preview_url(acme_dashboard.dashboard), {"external_user": user.pk})

    assert response.status_code == 200
    assert response["Cache-Control"] == NEVER_CACHED
    src = iframe_src(response)
    assert src.startswith(f"/embed/dashboard/{acme_dashboard.dashboard.public_id}?session=")
    assert calls == [
        {
            "account": acme_rows.cast.account,
            "deployment": acme_rows.cast.deployment,
            "data": embedding.GenerateSessionInput(
                deployment_id=acme_rows.cast.deployment.pk,
                external_id=user.external_id,
                embed_tenant_name=acme_rows.embed_tenant.name,
            ),
        }
    ]
    # The viewer as they are: their groups and attributes.
    exchanged = api.post_json(TOKEN_URL, {"sessionId": session_of(src)})
    assert exchanged.status_code == 200
    claims = decode_embed_token(exchanged.json()["token"], secret=acme_rows.cast.created.deployment_api_secret)
    assert (claims["sub"], claims["groups"], claims["userAttributes"]) == (
        user.external_id,
        [acme_rows.group.name],
        {acme_rows.attribute.name: "eu"},
    )
    assert claims["embed"]["embedTenant"] == acme_rows.embed_tenant.name


def test_preview_as_a_typed_viewer_has_exactly_the_typed_groups_and_attributes(
    acme_admin: Client, acme_rows: AccountRows, acme_dashboard: DashboardRows, api: JsonClient
):
    directory.group_create(account=acme_rows.cast.account, embed_tenant=None, name="managers")
    response = acme_admin.post(
        preview_url(acme_dashboard.dashboard),
        {
            "external_id": "preview-eve",
            "embed_tenant": "shop-new",
            "groups": f"managers, {acme_rows.group.name}",
            "attributes": f"{acme_rows.attribute.name}=us",
        },
    )

    assert response.status_code == 200
    exchanged = api.post_json(TOKEN_URL, {"sessionId": session_of(iframe_src(response))})
    claims = decode_embed_token(exchanged.json()["token"], secret=acme_rows.cast.created.deployment_api_secret)
    assert (claims["sub"], sorted(claims["groups"]), claims["userAttributes"]) == (
        "preview-eve",
        sorted(["managers", acme_rows.group.name]),
        {acme_rows.attribute.name: "us"},
    )
    assert claims["embed"]["embedTenant"] == "shop-new"


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({}, "Pick an external user, or type a viewer's external id."),
        ({"external_id": "x", "attributes": "nope=1"}, "Attributes: the account has no tenant-wide attribute 'nope'"),
        ({"external_id": "x", "groups": "no-such-group"}, None),
    ],
)
def test_preview_refusals_are_form_errors(acme_admin: Client, acme_rows, acme_dashboard, fields, error):
    sessions_before = EmbedSession.objects.count()

    response = acme_admin.post(preview_url(acme_dashboard.dashboard), fields)

    assert response.status_code == 200
    errors = response.context["form"].non_field_errors()
    assert len(errors) == 1
    if error is not None:
        assert errors == [error]
    assert 'id="panel-preview-frame"' not in response.content.decode()
    assert EmbedSession.objects.count() == sessions_before


def test_preview_new_tab_mints_another_session_and_goes_to_the_embed_page(
    acme_admin: Client, acme_rows: AccountRows, acme_dashboard: DashboardRows
):
    response = acme_admin.post(
        f"{preview_url(acme_dashboard.dashboard)}?open=1", {"external_user": acme_rows.external_user.pk}
    )

    assert response.status_code == 302
    assert response["Cache-Control"] == NEVER_CACHED
    assert response["Location"].startswith(f"/embed/dashboard/{acme_dashboard.dashboard.public_id}?session=")
    assert EmbedSession.objects.filter(external_user=acme_rows.external_user).count() == 2  # the fixture's and this


def test_an_unpublished_dashboard_has_no_preview(acme_admin: Client, acme_rows: AccountRows, unpublished):
    dashboards.workbook_publish(workbook=unpublished.workbook)
    dashboard = Dashboard.objects.get(workbook=unpublished.workbook)
    Dashboard.objects.filter(pk=dashboard.pk).update(status=Dashboard.Status.ARCHIVED)
    sessions_before = EmbedSession.objects.count()

    response = acme_admin.post(preview_url(dashboard), {"external_user": acme_rows.external_user.pk})

    assert response.status_code == 200
    assert "is not published" in response.content.decode()
    assert EmbedSession.objects.count() == sessions_before


# --- isolation ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "post"])
def test_other_accounts_dashboard_cannot_be_previewed(acme_admin: Client, acme_dashboard, globex_dashboard, method):
    sessions_before = EmbedSession.objects.count()
    globex_user = globex_dashboard.cast.account.external_users.get()

    response = getattr(acme_admin, method)(preview_url(globex_dashboard.dashboard), {"external_user": globex_user.pk})

    assert response.status_code == 302
    assert response["Location"] == "/admin/"
    assert EmbedSession.objects.count() == sessions_before


def test_other_accounts_viewer_cannot_be_picked(acme_admin: Client, acme_dashboard, globex_dashboard):
    sessions_before = EmbedSession.objects.count()
    globex_user = globex_dashboard.cast.account.external_users.get()

    response = acme_admin.post(preview_url(acme_dashboard.dashboard), {"external_user": globex_user.pk})

    assert response.status_code == 200
    assert response.context["form"].errors["external_user"] == [
        "Select a valid choice. That choice is not one of the available choices."
    ]
    assert EmbedSession.objects.count() == sessions_before


def test_other_accounts_tenant_cannot_be_shared_with(acme_admin: Client, acme_dashboard, globex_dashboard):
    globex_tenant = globex_dashboard.cast.account.embed_tenants.get()
    url = workbook_url(acme_dashboard, "embed-access")

    chosen = acme_admin.post(url, {"target": "tenant", "embed_tenant": globex_tenant.pk, "access": "read"})
    unshared = acme_admin.post(url, {"unshare": globex_tenant.pk})

    assert chosen.status_code == 200
    assert chosen.context["form"].errors["embed_tenant"] == [
        "Select a valid choice. That choice is not one of the available choices."
    ]
    assert unshared.status_code == 200
    assert messages_of(unshared) == [("error", "No such embed tenant.")]
    assert not EmbedAccess.objects.filter(embed_tenant=globex_tenant).exists()


@pytest.mark.parametrize("page", ["publish", "embed-access"])
def test_other_accounts_workbook_cannot_be_published_or_shared(
    acme_admin: Client, acme_dashboard, globex_dashboard, page
):
    globex_tenant = globex_dashboard.cast.account.embed_tenants.get()
    dashboards.workbook_dashboard_set(
        workbook=globex_dashboard.workbook, draft=draft_of(globex_dashboard.report, "changed by nobody")
    )

    response = acme_admin.post(workbook_url(globex_dashboard, page), {"unshare": "all", "allow_embed": "false"})
    actions = acme_admin.post(
        admin_url("workbook"),
        {"action": "disallow_embedding", "_selected_action": [globex_dashboard.workbook.pk]},
    )

    assert response.status_code == 302
    assert response["Location"] == "/admin/"
    assert actions.status_code == 302
    dashboard = Dashboard.objects.get(pk=globex_dashboard.dashboard.pk)
    assert (dashboard.version_number, dashboard.allow_embed) == (1, True)
    assert EmbedAccess.objects.filter(workbook=globex_dashboard.workbook, embed_tenant=None).exists()
    assert not EmbedAccess.objects.filter(embed_tenant=globex_tenant).exists()
