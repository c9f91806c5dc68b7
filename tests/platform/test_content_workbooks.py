"""Platform API workbooks: list, create, read, update, delete, upsert by slug; isolation and bad input."""

from __future__ import annotations

import pytest

from embedadmin.dashboards.models import Folder, Workbook
from tests.dashboards import support
from tests.dashboards.support import (
    base,
    capture,
    count_writes,
    create_workbook,
    error,
    ok,
    put_json,
)
from tests.platform.support import BAD_PAGE_QUERIES, db_rows

WORKBOOK_KEYS = {
    "id",
    "deploymentId",
    "name",
    "slug",
    "folderId",
    "meta",
    "dashboardDraft",
    "dashboardPublished",
    "publishedDashboard",
    "createdAt",
    "updatedAt",
}

# The fixtures of tests/dashboards/support.py, here too.
fresh_models = support.fresh_models
globex_modelled = support.globex_modelled
modelled = support.modelled


def test_create_then_read_returns_the_workbook(api, acme):
    created = create_workbook(api, acme, meta={"team": "sales"})

    assert set(created) == WORKBOOK_KEYS
    assert created["deploymentId"] == acme.deployment.pk
    assert (created["name"], created["meta"], created["slug"], created["folderId"]) == (
        "Sales",
        {"team": "sales"},
        None,
        None,
    )
    assert (created["dashboardDraft"], created["dashboardPublished"], created["publishedDashboard"]) == (
        None,
        None,
        None,
    )
    read = ok(api.get(f"{base(acme)}/workbooks/{created['id']}", **acme.platform_headers))
    assert read == created


def test_create_without_a_name_gets_the_default(api, acme):
    created = ok(api.post_json(f"{base(acme)}/workbooks", {}, **acme.platform_headers), 201)
    assert created["name"] == "Untitled workbook"


def test_list_is_paginated_with_cubes_deprecated_fields(api, acme):
    ids = [create_workbook(api, acme, name=f"wb{i}")["id"] for i in range(5)]

    first = ok(api.get(f"{base(acme)}/workbooks?first=2", **acme.platform_headers))
    assert [w["id"] for w in first["items"]] == ids[:2]
    assert first["data"] == first["items"]
    assert first["count"] == 5
    assert first["pageInfo"]["hasNextPage"] is True
    after = first["pageInfo"]["endCursor"]
    rest = ok(api.get(f"{base(acme)}/workbooks?first=10&after={after}", **acme.platform_headers))
    assert [w["id"] for w in rest["items"]] == ids[2:]
    assert rest["pageInfo"]["hasNextPage"] is False


def test_list_filters_by_folder(api, acme):
    folder = ok(api.post_json(f"{base(acme)}/folders", {"name": "F"}, **acme.platform_headers), 201)
    inside = create_workbook(api, acme, folderId=folder["id"])
    outside = create_workbook(api, acme)

    in_folder = ok(api.get(f"{base(acme)}/workbooks?folderId={folder['id']}", **acme.platform_headers))
    at_root = ok(api.get(f"{base(acme)}/workbooks?folderId=null", **acme.platform_headers))

    assert [w["id"] for w in in_folder["items"]] == [inside["id"]]
    assert [w["id"] for w in at_root["items"]] == [outside["id"]]


@pytest.mark.parametrize(("query", "message"), BAD_PAGE_QUERIES)
def test_list_refuses_bad_pages(api, acme, query, message):
    assert error(api.get(f"{base(acme)}/workbooks?{query}", **acme.platform_headers), 400) == message


def test_update_renames_replaces_meta_moves_and_sets_slug(api, acme):
    created = create_workbook(api, acme, meta={"a": 1, "b": 2})
    folder = ok(api.post_json(f"{base(acme)}/folders", {"name": "F"}, **acme.platform_headers), 201)
    url = f"{base(acme)}/workbooks/{created['id']}"

    updated = ok(
        put_json(
            api,
            url,
            {"name": "New", "meta": {"c": 3}, "folderId": folder["id"], "slug": "  My-Book "},
            **acme.platform_headers,
        )
    )
    assert (updated["name"], updated["meta"], updated["folderId"], updated["slug"]) == (
        "New",
        {"c": 3},
        folder["id"],
        "my-book",
    )
    back_to_root = ok(put_json(api, url, {"folderId": None}, **acme.platform_headers))
    assert back_to_root["folderId"] is None
    assert back_to_root["name"] == "New"


def test_update_to_a_taken_slug_is_409(api, acme):
    create_workbook(api, acme, name="one")
    ok(put_json(api, f"{base(acme)}/workbooks/by-slug/taken", {}, **acme.platform_headers))
    other = create_workbook(api, acme)
    url = f"{base(acme)}/workbooks/{other['id']}"
    assert "already exists" in error(put_json(api, url, {"slug": "TAKEN"}, **acme.platform_headers), 409)


def test_delete_is_204_and_then_404(api, acme):
    created = create_workbook(api, acme)
    url = f"{base(acme)}/workbooks/{created['id']}"
    response = api.delete(url, **acme.platform_headers)
    assert response.status_code == 204
    assert error(api.get(url, **acme.platform_headers), 404) == f"Workbook {created['id']} not found"


def test_upsert_by_slug_creates_then_merges_meta(api, acme):
    url = f"{base(acme)}/workbooks/by-slug/%20Sales-Overview%20"
    created = ok(put_json(api, url, {"name": "Sales", "meta": {"a": 1}}, **acme.platform_headers))
    assert created["slug"] == "sales-overview"

    updated = ok(put_json(api, url, {"meta": {"b": 2}}, **acme.platform_headers))

    assert updated["id"] == created["id"]
    assert updated["meta"] == {"a": 1, "b": 2}
    assert updated["name"] == "Sales"
    assert Workbook.objects.filter(deployment=acme.deployment).count() == 1


def test_upsert_by_slug_twice_writes_nothing(api, acme):
    url = f"{base(acme)}/workbooks/by-slug/sales"
    body = {"name": "Sales", "meta": {"a": 1}}
    first = ok(put_json(api, url, body, **acme.platform_headers))

    with capture() as queries:
        second = ok(put_json(api, url, body, **acme.platform_headers))

    assert count_writes(queries) == 0
    assert second == first


def test_upsert_by_slug_refuses_a_bad_slug(api, acme):
    assert "slug must be" in error(
        put_json(api, f"{base(acme)}/workbooks/by-slug/%20", {}, **acme.platform_headers), 400
    )


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ([], "Expected a dictionary"),
        ("not json", "Invalid JSON body"),
        ({"name": 5}, "name"),
        ({"meta": []}, "meta"),
        ({"folderId": "1"}, "folderId"),
        ({"folderId": 999999}, "folderId: folder 999999 not found"),
        ({"colour": "red"}, "Unknown fields: colour"),
        ({"name": "x" * 256}, "name"),
    ],
)
def test_create_refuses_bad_bodies_and_changes_nothing(api, acme, body, fragment):
    before = Workbook.objects.count()
    message = error(api.post_json(f"{base(acme)}/workbooks", body, **acme.platform_headers), 400)
    assert fragment in message
    assert Workbook.objects.count() == before


def test_a_folder_of_another_deployment_is_refused(api, acme, globex):
    theirs = Folder.objects.create(account=globex.account, deployment=globex.deployment, name="theirs")
    message = error(api.post_json(f"{base(acme)}/workbooks", {"folderId": theirs.pk}, **acme.platform_headers), 400)
    assert "not found in this deployment" in message


def test_unauthenticated_is_401(api, acme):
    assert api.get(f"{base(acme)}/workbooks").status_code == 401


def test_another_accounts_deployment_and_workbook_are_404_and_unchanged(api, acme, globex):
    theirs = create_workbook(api, globex, name="theirs")
    before = db_rows()
    own_deployment_their_id = f"{base(acme)}/workbooks/{theirs['id']}"
    their_deployment = f"{base(globex)}/workbooks"
    calls = [
        api.get(their_deployment, **acme.platform_headers),
        api.post_json(their_deployment, {"name": "x"}, **acme.platform_headers),
        api.get(f"{their_deployment}/{theirs['id']}", **acme.platform_headers),
        put_json(api, f"{their_deployment}/{theirs['id']}", {"name": "x"}, **acme.platform_headers),
        api.delete(f"{their_deployment}/{theirs['id']}", **acme.platform_headers),
        put_json(api, f"{their_deployment}/by-slug/x", {}, **acme.platform_headers),
        api.get(own_deployment_their_id, **acme.platform_headers),
        put_json(api, own_deployment_their_id, {"name": "x"}, **acme.platform_headers),
        api.delete(own_deployment_their_id, **acme.platform_headers),
        api.get(f"{base(acme)}/workbooks/99999999999999999999", **acme.platform_headers),
    ]
    assert [r.status_code for r in calls] == [404] * len(calls)
    assert db_rows() == before
    assert Workbook.objects.get(pk=theirs["id"]).name == "theirs"


@pytest.mark.parametrize("path", ["workbooks?folderId", "reports?workbookId", "reports?folderId", "folders?parentId"])
@pytest.mark.parametrize("value", ["%C2%B2", "%D9%A3", "-1", "1e3", "9" * 20])
def test_an_id_filter_that_is_not_an_ascii_integer_is_400(api, acme, path, value):
    # "²" and "٣" are digits to str.isdigit() but not to int(): a 400, never a server error
    response = api.get(f"{base(acme)}/{path}={value}", **acme.platform_headers)
    assert response.status_code == 400
    assert "must be a positive integer" in response.json()["error"]
