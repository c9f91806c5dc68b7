"""/api/v1/user-attribute-values: an internal user's values of tenant-wide attributes (Cube's shapes, 2.7)."""

from __future__ import annotations

import pytest

from embedadmin.accounts import services as accounts
from embedadmin.directory.models import InternalAttributeValue
from tests.platform.support import USER_ATTRIBUTES_URL, db_rows

URL = "/api/v1/user-attribute-values"


def _attribute(api, cast, name, type_):
    response = api.post_json(USER_ATTRIBUTES_URL, {"name": name, "type": type_}, **cast.platform_headers)
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _user(cast, name="ann"):
    return accounts.internal_user_create(account=cast.account, username=name, email="", is_admin=False)


def test_set_upserts_and_get_lists_the_users_values(api, acme):
    # given
    user = _user(acme)
    region = _attribute(api, acme, "region", "string")
    ids = _attribute(api, acme, "ids", "number_array")

    # when
    api.post_json(
        URL, {"userId": str(user.pk), "userAttributeId": str(region), "value": "emea"}, **acme.platform_headers
    )
    set_ids = api.post_json(
        URL, {"userId": user.pk, "userAttributeId": ids, "value": [1, 2.5]}, **acme.platform_headers
    )
    again = api.post_json(
        URL, {"userId": str(user.pk), "userAttributeId": str(region), "value": "apac"}, **acme.platform_headers
    )
    listed = api.get(f"{URL}/{user.pk}", **acme.platform_headers)

    # then
    assert set_ids.json() == {
        "userId": user.pk, "userAttributeId": ids, "name": "ids", "type": "number_array", "value": [1, 2.5],
        "formattedValue": "1, 2.5", "displayName": "", "description": "",
    }  # fmt: skip
    assert again.status_code == 200
    assert [(v["name"], v["value"]) for v in listed.json()] == [("ids", [1, 2.5]), ("region", "apac")]
    assert InternalAttributeValue.objects.count() == 2


def test_null_clears_the_value(api, acme):
    user = _user(acme)
    region = _attribute(api, acme, "region", "string")
    body = {"userId": str(user.pk), "userAttributeId": str(region)}
    api.post_json(URL, {**body, "value": "emea"}, **acme.platform_headers)
    response = api.post_json(URL, {**body, "value": None}, **acme.platform_headers)
    assert response.json()["value"] is None
    assert api.get(f"{URL}/{user.pk}", **acme.platform_headers).json() == []


@pytest.mark.parametrize(("value", "status"), [(5, 400), (["a"], 400), (True, 400)])
def test_a_value_of_the_wrong_type_is_400_and_nothing_changes(api, acme, value, status):
    user = _user(acme)
    region = _attribute(api, acme, "region", "string")
    before = db_rows()
    response = api.post_json(
        URL, {"userId": str(user.pk), "userAttributeId": str(region), "value": value}, **acme.platform_headers
    )
    assert response.status_code == status
    assert db_rows() == before


@pytest.mark.parametrize("body", [[], {"userId": "1"}, {"userId": "", "userAttributeId": "1"}, {"x": 1}])
def test_bad_input_is_400(api, acme, body):
    before = db_rows()
    response = api.post_json(URL, body, **acme.platform_headers)
    assert response.status_code == 400
    assert db_rows() == before


def test_another_accounts_user_or_attribute_is_404_and_nothing_changes(api, acme, globex):
    mine, theirs = _user(acme), _user(globex, "bob")
    my_attr, their_attr = _attribute(api, acme, "region", "string"), _attribute(api, globex, "region", "string")
    before = db_rows()
    for user_id, attr_id in [(theirs.pk, my_attr), (mine.pk, their_attr)]:
        response = api.post_json(
            URL, {"userId": str(user_id), "userAttributeId": str(attr_id), "value": "x"}, **acme.platform_headers
        )
        assert response.status_code == 404
    assert api.get(f"{URL}/{theirs.pk}", **acme.platform_headers).status_code == 404
    assert db_rows() == before
