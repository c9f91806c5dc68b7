"""SCIM filters on ids (Users ``id``, Groups ``id`` and ``members``) with values no id of ours can be: beyond a
bigint, negative, not a number. ``eq`` on such a value matches nothing, ``gt ge lt le`` compare numerically (a
value beyond every id is above all of them, a negative one below all of them), and ordering by a value that is no
number is 400 ``invalidFilter``; never a 500."""

from __future__ import annotations

import pytest

from embedadmin.accounts import services as accounts
from embedadmin.directory.models import Group
from tests.platform.support import SCIM_ERROR_SCHEMA, SCIM_GROUPS_URL

USERS = "/api/scim/v2/Users"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"

HUGE = "99999999999999999999999"  # beyond a bigint
MAX_BIGINT = "9223372036854775807"
BEYOND_BIGINT = "9223372036854775808"
BEYOND_INT = "2147483648"  # beyond the 32-bit column of the users' ids
THOUSANDS = "1" * 5000  # beyond int()'s 4,300 digits
HUGE_NEGATIVE = "-" + HUGE

# "all" / "none" of the listed resources, or the names picked.
ALL = "all"
NONE = "none"


def _list(api, cast, path: str, expression: str):
    return api.get(path, {"filter": expression, "count": "100"}, **cast.platform_headers)


def _invalid_filter(response) -> None:
    body = response.json()
    assert response.status_code == 400, body
    assert body["schemas"] == [SCIM_ERROR_SCHEMA]
    assert body["scimType"] == "invalidFilter"


@pytest.fixture
def users(api, acme) -> dict[str, str]:
    """The account's users (its admin, ann, bob) by name, with their ids."""
    for name in ("ann", "bob"):
        body = {"schemas": [USER_SCHEMA], "userName": name}
        assert api.post_json(USERS, body, **acme.platform_headers).status_code == 201
    listed = _list(api, acme, USERS, "userName pr").json()["Resources"]
    return {r["userName"]: r["id"] for r in listed}


@pytest.mark.parametrize(
    ("expression", "picked"),
    [
        # beyond every id: above all of them
        (f'id gt "{HUGE}"', NONE),
        (f'id ge "{HUGE}"', NONE),
        (f'id eq "{HUGE}"', NONE),
        (f'id ne "{HUGE}"', ALL),
        (f'id lt "{HUGE}"', ALL),
        (f'id le "{HUGE}"', ALL),
        (f'id gt "{MAX_BIGINT}"', NONE),
        (f'id ge "{MAX_BIGINT}"', NONE),
        (f'id le "{MAX_BIGINT}"', ALL),
        (f'id gt "{BEYOND_BIGINT}"', NONE),
        (f'id lt "{BEYOND_BIGINT}"', ALL),
        (f'id gt "{BEYOND_INT}"', NONE),
        (f'id lt "{BEYOND_INT}"', ALL),
        (f'id gt "{THOUSANDS}"', NONE),
        (f'id le "{THOUSANDS}"', ALL),
        (f'id eq "{THOUSANDS}"', NONE),
        # negative: below all of them
        ('id gt "-5"', ALL),
        ('id ge "-5"', ALL),
        ('id lt "-5"', NONE),
        ('id le "-5"', NONE),
        ('id eq "-5"', NONE),
        ('id ne "-5"', ALL),
        (f'id gt "{HUGE_NEGATIVE}"', ALL),
        (f'id lt "{HUGE_NEGATIVE}"', NONE),
        (f'id eq "{HUGE_NEGATIVE}"', NONE),
        ('id ge "0"', ALL),
        ('id lt "0"', NONE),
        ('id le "-0"', NONE),
        # no number: no user's id
        ('id eq "abc"', NONE),
        ('id ne "abc"', ALL),
        ('id eq "1.5"', NONE),
        ('id eq "\u0661"', NONE),  # ARABIC-INDIC DIGIT ONE: a digit, not one of ours
        ('id eq ""', NONE),
        ("id eq null", NONE),
        # combined with other terms
        (f'id gt "{HUGE}" or userName eq "ann"', ["ann"]),
        (f'not (id gt "{HUGE}")', ALL),
        (f'id lt "{HUGE}" and userName sw "b"', ["bob"]),
    ],
)
def test_a_user_id_no_user_can_have_compares_numerically(api, acme, users, expression, picked):
    # when
    response = _list(api, acme, USERS, expression)

    # then
    body = response.json()
    assert response.status_code == 200, body
    found = sorted(r["userName"] for r in body["Resources"])
    expected = sorted(users) if picked == ALL else [] if picked == NONE else picked
    assert (found, body["totalResults"]) == (expected, len(expected))


@pytest.mark.parametrize(
    ("template", "picked"),
    [
        ('id gt "{ann}"', ["bob"]),
        ('id ge "{ann}"', ["ann", "bob"]),
        ('id lt "{bob}" and id ge "{ann}"', ["ann"]),
        ('id le "{bob}" and id gt "{ann}"', ["bob"]),
        ('id eq "{ann}"', ["ann"]),
        ('id eq "000{ann}"', ["ann"]),
        ('id ge "+{bob}"', ["bob"]),
    ],
)
def test_a_user_id_compares_as_a_number(api, acme, users, template, picked):
    # when
    response = _list(api, acme, USERS, template.format(**users))

    # then
    body = response.json()
    assert response.status_code == 200, body
    assert sorted(r["userName"] for r in body["Resources"] if r["userName"] in ("ann", "bob")) == picked


@pytest.mark.parametrize(
    "expression",
    [
        'id gt "abc"',
        'id ge "1.5"',
        'id lt ""',
        'id le "+"',
        'id gt "\u0661"',
        "id gt null",
        'id lt "12abc"',
    ],
)
def test_ordering_users_by_an_id_that_is_no_number_is_400_invalid_filter(api, acme, users, expression):
    _invalid_filter(_list(api, acme, USERS, expression))


def test_the_search_endpoint_reads_a_huge_id_the_same(api, acme, users):
    # when
    body = {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
        "filter": f'id gt "{HUGE}"',
    }
    response = api.post_json(f"{USERS}/.search", body, **acme.platform_headers)

    # then
    assert response.status_code == 200, response.json()
    assert (response.json()["totalResults"], response.json().get("Resources", [])) == (0, [])


# --- groups ---------------------------------------------------------------------------------------------------


@pytest.fixture
def groups(api, acme) -> dict[str, Group]:
    """Two groups of the account: "staffed", with one internal member, and "empty"."""
    for name in ("staffed", "empty"):
        body = {"schemas": [GROUP_SCHEMA], "displayName": name}
        assert api.post_json(SCIM_GROUPS_URL, body, **acme.platform_headers).status_code == 201
    made = {g.name: g for g in Group.objects.filter(account=acme.account, name__in=("staffed", "empty"))}
    made["staffed"].internal_members.add(accounts.internal_user_create(account=acme.account, username="ann", email=""))
    return made


@pytest.mark.parametrize(
    ("expression", "picked"),
    [
        (f'id gt "{HUGE}"', []),
        (f'id ge "{HUGE}"', []),
        (f'id eq "{HUGE}"', []),
        (f'id lt "{HUGE}"', ["empty", "staffed"]),
        (f'id le "{HUGE}"', ["empty", "staffed"]),
        (f'id gt "{MAX_BIGINT}"', []),
        (f'id lt "{BEYOND_BIGINT}"', ["empty", "staffed"]),
        (f'id gt "{THOUSANDS}"', []),
        ('id gt "-1"', ["empty", "staffed"]),
        ('id lt "-1"', []),
        (f'id ge "{HUGE_NEGATIVE}"', ["empty", "staffed"]),
        ('id eq "-1"', []),
        ('id eq "abc"', []),
        ('id ne "abc"', ["empty", "staffed"]),
        # members: a group matches when one of its members' ids compares
        (f'members gt "{HUGE}"', []),
        (f'members eq "{HUGE}"', []),
        (f'members lt "{HUGE}"', ["staffed"]),
        (f'members.value lt "{BEYOND_INT}"', ["staffed"]),
        (f'members.value gt "{BEYOND_INT}"', []),
        ('members ge "-3"', ["staffed"]),
        ('members le "-3"', []),
        ('members eq "abc"', []),
        (f'members gt "{HUGE}" or displayName eq "empty"', ["empty"]),
    ],
)
def test_a_group_id_no_group_can_have_compares_numerically(api, acme, groups, expression, picked):
    # when
    response = _list(api, acme, SCIM_GROUPS_URL, expression)

    # then
    body = response.json()
    assert response.status_code == 200, body
    found = sorted(r["displayName"] for r in body["Resources"] if r["displayName"] in groups)
    assert found == picked


@pytest.mark.parametrize("expression", ['id gt "abc"', 'id le "4.2"', 'members gt "x"', "members.value lt null"])
def test_ordering_groups_by_an_id_that_is_no_number_is_400_invalid_filter(api, acme, groups, expression):
    _invalid_filter(_list(api, acme, SCIM_GROUPS_URL, expression))
