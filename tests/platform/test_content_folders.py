"""Platform API folders (reference 2.3): one level per list, create, rename, delete (contents to the root),
ancestors; isolation and bad input."""

from __future__ import annotations

import pytest

from embedadmin.dashboards.models import Folder, Workbook
from tests.dashboards import support
from tests.dashboards.support import (
    base,
    content_rows,
    create_report,
    create_workbook,
    error,
    ok,
    put_json,
)

# The fixtures of tests/dashboards/support.py, here too.
fresh_models = support.fresh_models
modelled = support.modelled


def make(api, cast, name, parent=None, **fields):
    body = {"name": name, **({"parentId": parent} if parent else {}), **fields}
    return ok(api.post_json(f"{base(cast)}/folders", body, **cast.platform_headers), 201)


def test_list_is_one_level_per_call(api, acme):
    top = make(api, acme, "Top", position=2)
    first = make(api, acme, "First", position=1)
    child = make(api, acme, "Child", parent=top["id"])
    url = f"{base(acme)}/folders"

    root = ok(api.get(url, **acme.platform_headers))
    under = ok(api.get(f"{url}?parentId={top['id']}", **acme.platform_headers))

    assert [f["name"] for f in root["items"]] == ["Top", "First"]  # the cursor orders by id
    assert root["count"] == 2
    assert root["data"] == root["items"]
    assert [f["id"] for f in under["items"]] == [child["id"]]
    assert (child["parentId"], child["type"], first["position"]) == (top["id"], "FOLDER", 1)
    assert "parentId" in error(api.get(f"{url}?parentId=99999", **acme.platform_headers), 400)


def test_rename_and_reposition(api, acme):
    folder = make(api, acme, "Old")
    url = f"{base(acme)}/folders/{folder['id']}"
    updated = ok(put_json(api, url, {"name": "New", "position": 7}, **acme.platform_headers))
    assert (updated["name"], updated["position"]) == ("New", 7)
    assert "Unknown fields: parentId" in error(put_json(api, url, {"parentId": None}, **acme.platform_headers), 400)
    assert "name" in error(put_json(api, url, {"name": "  "}, **acme.platform_headers), 400)


def test_delete_detaches_contents_to_the_root(api, modelled):
    folder = make(api, modelled, "F")
    workbook = create_workbook(api, modelled, folderId=folder["id"])
    report = create_report(api, modelled, folderId=folder["id"])

    assert api.delete(f"{base(modelled)}/folders/{folder['id']}", **modelled.platform_headers).status_code == 204

    assert not Folder.objects.filter(pk=folder["id"]).exists()
    assert ok(api.get(f"{base(modelled)}/workbooks/{workbook['id']}", **modelled.platform_headers))["folderId"] is None
    assert ok(api.get(f"{base(modelled)}/reports/{report['id']}", **modelled.platform_headers))["folderId"] is None


def test_delete_with_sub_folders_is_400_and_changes_nothing(api, acme):
    top = make(api, acme, "Top")
    make(api, acme, "Child", parent=top["id"])
    before = content_rows()
    message = error(api.delete(f"{base(acme)}/folders/{top['id']}", **acme.platform_headers), 400)
    assert "sub-folders" in message
    assert content_rows() == before


def test_ancestors_run_from_the_root_to_the_folder(api, acme):
    a = make(api, acme, "A")
    b = make(api, acme, "B", parent=a["id"])
    c = make(api, acme, "C", parent=b["id"])
    chain = ok(api.get(f"{base(acme)}/folders/{c['id']}/ancestors", **acme.platform_headers))
    assert [f["id"] for f in chain] == [a["id"], b["id"], c["id"]]


def test_nesting_is_limited(api, acme):
    parent = None
    for depth in range(10):
        parent = make(api, acme, f"level {depth}", parent=parent["id"] if parent else None)
    response = api.post_json(
        f"{base(acme)}/folders", {"name": "too deep", "parentId": parent["id"]}, **acme.platform_headers
    )
    assert "at most 10 deep" in error(response, 400)


def test_bad_bodies_are_400(api, acme):
    url = f"{base(acme)}/folders"
    for body, fragment in [
        ({}, "name"),
        ({"name": 3}, "name"),
        ({"name": "x", "position": "1"}, "position"),
        ({"name": "x", "position": 2**40}, "position"),
        ({"name": "x", "parentId": 12345}, "parentId: folder 12345 not found"),
        ({"name": "x", "kind": "y"}, "Unknown fields: kind"),
    ]:
        assert fragment in error(api.post_json(url, body, **acme.platform_headers), 400)
    assert Folder.objects.count() == 0


def test_another_accounts_folders_are_404_and_unchanged(api, acme, globex):
    theirs = make(api, globex, "Theirs")
    before = content_rows()
    headers = acme.platform_headers
    calls = [
        api.get(f"{base(globex)}/folders", **headers),
        api.post_json(f"{base(globex)}/folders", {"name": "x"}, **headers),
        put_json(api, f"{base(globex)}/folders/{theirs['id']}", {"name": "x"}, **headers),
        api.delete(f"{base(globex)}/folders/{theirs['id']}", **headers),
        api.get(f"{base(acme)}/folders/{theirs['id']}/ancestors", **headers),
        put_json(api, f"{base(acme)}/folders/{theirs['id']}", {"name": "x"}, **headers),
        api.delete(f"{base(acme)}/folders/{theirs['id']}", **headers),
    ]
    assert [r.status_code for r in calls] == [404] * len(calls)
    assert content_rows() == before
    assert Workbook.objects.count() == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_sub_folder_and_a_delete_of_its_parent_at_once_never_fail_the_server(modelled):
    from embedadmin.core.errors import ApiError
    from embedadmin.dashboards import services as content
    from tests.conftest import run_concurrently

    for _ in range(5):
        parent = content.folder_create(deployment=modelled.deployment, name="parent")

        def create(parent=parent):
            try:
                return content.folder_create(deployment=modelled.deployment, name="child", parent=parent)
            except ApiError as exc:
                return exc.status

        def delete(parent=parent):
            try:
                return content.folder_delete(folder=parent)
            except ApiError as exc:
                return exc.status

        created, deleted = run_concurrently([create, delete])
        # Either the child went in first (the delete is then refused: it has a sub-folder), or the delete went
        # first (the child's parent is gone: 404); never an integrity error.
        if deleted is None:
            assert created == 404
        else:
            assert deleted == 400
            assert created.parent_id == parent.pk
