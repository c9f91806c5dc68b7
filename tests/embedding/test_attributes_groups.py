"""Groups and typed user attributes of generate-session (spec 2.15, 3, 4.2 rules 4, 5, 8; section 7):
which catalog names resolve in, value types, persistence per user, membership semantics, and that a
failing request writes nothing even after earlier steps of its transaction succeeded."""

from __future__ import annotations

from typing import Any

import pytest

from embedadmin.directory.models import AttributeValue, ExternalUser, GroupMembership
from tests.embedding.support import directory_counts

READ_ONLY = {"embedTenantName": "tenant-a"}
CREATOR = {"creatorMode": True, "embedTenantName": "tenant-a"}


@pytest.fixture
def two_scopes(new_session, tenant_attribute, tenant_group, acme) -> None:
    """Tenant-wide group "hq" and attribute "plan"; embed tenant "tenant-a" group "field" and attribute "seat"."""
    tenant_group(acme, "hq")
    tenant_attribute(acme, "plan", "string")
    new_session(
        acme,
        externalId="setup",
        **CREATOR,
        groupDefinitions=[{"name": "field"}],
        userAttributeDefinitions=[{"name": "seat", "type": "string"}],
    )


def _memberships(external_id: str) -> list[tuple[str | None, str]]:
    rows = GroupMembership.objects.filter(user__external_id=external_id).values_list(
        "group__embed_tenant__name", "group__name"
    )
    return sorted(rows, key=lambda row: (row[0] or "", row[1]))


def _values(external_id: str) -> dict[str, Any]:
    rows = AttributeValue.objects.filter(user__external_id=external_id).values_list("definition__name", "value")
    return dict(rows)


# --- which catalog a name resolves in -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "mode", "name", "error"),
    [
        ("groups", READ_ONLY, "hq", None),
        ("groups", READ_ONLY, "field", "Groups with names field not found"),
        ("groups", CREATOR, "field", None),
        ("groups", CREATOR, "hq", "Groups with names hq not found"),
        ("userAttributes", READ_ONLY, "plan", None),
        ("userAttributes", READ_ONLY, "seat", "User attributes not found: seat"),
        ("userAttributes", CREATOR, "seat", None),
        ("userAttributes", CREATOR, "plan", "User attributes not found: plan"),
    ],
)
def test_names_resolve_in_the_catalog_of_the_sessions_mode(generate, two_scopes, acme, field, mode, name, error):
    # given
    before = directory_counts(acme.account)
    value = [name] if field == "groups" else [{"name": name, "value": "x"}]

    # when
    response = generate(acme, externalId="alice", **mode, **{field: value})

    # then
    if error is None:
        assert response.status_code == 200
        stored = [group for _, group in _memberships("alice")] if field == "groups" else list(_values("alice"))
        assert stored == [name]
    else:
        assert response.status_code == 400
        assert response.json() == {"error": error}
        assert directory_counts(acme.account) == before


def test_unknown_groups_are_named_in_the_order_given(generate, tenant_group, acme):
    # given
    tenant_group(acme, "sales")

    # when
    response = generate(acme, externalId="alice", groups=["nope", "sales", "nada", "nope"])

    # then
    assert response.status_code == 400
    assert response.json() == {"error": "Groups with names nope, nada not found"}


def test_unknown_attributes_are_named_in_the_order_given(generate, tenant_attribute, acme):
    # given
    tenant_attribute(acme, "region", "string")

    # when
    response = generate(
        acme,
        externalId="alice",
        userAttributes=[{"name": "nope", "value": 1}, {"name": "region", "value": "eu"}, {"name": "nada", "value": 2}],
    )

    # then
    assert response.status_code == 400
    assert response.json() == {"error": "User attributes not found: nope, nada"}


def test_another_accounts_catalog_does_not_resolve(generate, tenant_attribute, tenant_group, acme, globex):
    # given
    tenant_group(globex, "sales")
    tenant_attribute(globex, "region", "string")

    # when
    by_group = generate(acme, externalId="alice", groups=["sales"])
    by_attribute = generate(acme, externalId="alice", userAttributes=[{"name": "region", "value": "eu"}])

    # then
    assert (by_group.status_code, by_group.json()) == (400, {"error": "Groups with names sales not found"})
    assert (by_attribute.status_code, by_attribute.json()) == (400, {"error": "User attributes not found: region"})


# --- typed values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "value"),
    [
        ("string", "eu"),
        ("string", ""),
        ("number", 3),
        ("number", -2.5),
        ("number", 0),
        ("number", 10**15),
        ("string_array", ["a", "b"]),
        ("string_array", []),
        ("number_array", [1, 2.5, -3]),
        ("number_array", []),
    ],
)
def test_a_value_of_the_definitions_type_is_stored_and_signed(embed_claims, tenant_attribute, acme, type_, value):
    # given
    tenant_attribute(acme, "attr", type_)

    # when
    claims = embed_claims(acme, externalId="alice", userAttributes=[{"name": "attr", "value": value}])

    # then
    assert _values("alice") == {"attr": value}
    assert claims["userAttributes"] == {"attr": value}


@pytest.mark.parametrize(
    ("type_", "value"),
    [
        ("string", 5),
        ("string", True),
        ("string", ["eu"]),
        ("string", {"code": "eu"}),
        ("number", "5"),
        ("number", True),
        ("number", False),
        ("number", [1]),
        ("number", {}),
        ("string_array", "a"),
        ("string_array", ["a", 1]),
        ("string_array", ["a", None]),
        ("string_array", [["a"]]),
        ("string_array", {"0": "a"}),
        ("number_array", 1),
        ("number_array", [1, "2"]),
        ("number_array", [True]),
        ("number_array", [1, None]),
        ("number_array", ["1"]),
        ("number_array", [[1]]),
    ],
)
def test_a_value_of_another_type_is_400_and_writes_nothing(generate, tenant_attribute, acme, type_, value):
    # given
    tenant_attribute(acme, "attr", type_)
    before = directory_counts(acme.account)

    # when
    response = generate(acme, externalId="alice", userAttributes=[{"name": "attr", "value": value}])

    # then
    assert response.status_code == 400
    assert response.json() == {"error": f"userAttributes: value of 'attr' must be a {type_}"}
    assert directory_counts(acme.account) == before


def test_a_number_too_large_for_a_double_is_400(api, tenant_attribute, acme):
    # given: 1e400 parses to infinity, which no access policy can compare against
    tenant_attribute(acme, "attr", "number")
    value = '[{"name": "attr", "value": 1e400}]'
    body = f'{{"deploymentId": {acme.deployment.pk}, "externalId": "alice", "userAttributes": {value}}}'

    # when
    response = api.post_json("/api/v1/embed/generate-session", body, **acme.api_key_headers)

    # then
    assert response.status_code == 400
    assert response.json() == {
        "error": "userAttributes.0.value: Must not contain a number beyond a double's range (such as 1e400)."
    }
    assert directory_counts(acme.account)["external_users"] == 0


def test_null_clears_a_stored_value(new_session, embed_claims, tenant_attribute, acme):
    # given
    tenant_attribute(acme, "region", "string")
    new_session(acme, externalId="alice", userAttributes=[{"name": "region", "value": "eu"}])

    # when
    claims = embed_claims(acme, externalId="alice", userAttributes=[{"name": "region", "value": None}])

    # then
    assert _values("alice") == {}
    assert claims["userAttributes"] == {}


def test_null_for_a_value_never_set_is_accepted(embed_claims, tenant_attribute, acme):
    # given
    tenant_attribute(acme, "region", "string")

    # when
    claims = embed_claims(acme, externalId="alice", userAttributes=[{"name": "region", "value": None}])

    # then
    assert _values("alice") == {}
    assert claims["userAttributes"] == {}


def test_values_persist_per_user_and_a_later_call_overwrites_only_the_names_it_supplies(
    new_session, embed_claims, tenant_attribute, acme
):
    # given
    tenant_attribute(acme, "region", "string")
    tenant_attribute(acme, "quota", "number")
    new_session(
        acme, externalId="alice", userAttributes=[{"name": "region", "value": "eu"}, {"name": "quota", "value": 3}]
    )
    new_session(acme, externalId="bob", userAttributes=[{"name": "region", "value": "us"}])

    # when
    new_session(acme, externalId="alice", userAttributes=[{"name": "quota", "value": 5}])
    claims = embed_claims(acme, externalId="alice")  # no userAttributes: everything kept

    # then
    assert _values("alice") == {"region": "eu", "quota": 5}
    assert _values("bob") == {"region": "us"}
    assert claims["userAttributes"] == {"quota": 5, "region": "eu"}


# --- group memberships ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        (None, ["sales", "support"]),  # omitted: kept
        ([], []),  # cleared
        (["hq"], ["hq"]),  # replaced exactly
        (["hq", "sales"], ["hq", "sales"]),
        (["sales", "sales"], ["sales"]),
    ],
)
def test_groups_omitted_keep_empty_clears_a_list_replaces(
    new_session, embed_claims, tenant_group, acme, groups, expected
):
    # given
    for name in ("hq", "sales", "support"):
        tenant_group(acme, name)
    new_session(acme, externalId="alice", groups=["sales", "support"])
    fields = {} if groups is None else {"groups": groups}

    # when
    claims = embed_claims(acme, externalId="alice", **fields)

    # then
    assert _memberships("alice") == [(None, name) for name in expected]
    assert claims["groups"] == expected


def test_groups_of_one_scope_leave_the_other_scopes_memberships_alone(
    new_session, embed_claims, two_scopes, tenant_group, acme
):
    # given: alice is in the tenant-wide "hq" and in tenant-a's "field"
    new_session(acme, externalId="alice", groups=["hq"])
    new_session(acme, externalId="alice", **CREATOR, groups=["field"])

    # when: the creator-mode session clears its own scope
    creator_claims = embed_claims(acme, externalId="alice", **CREATOR, groups=[])
    read_only_claims = embed_claims(acme, externalId="alice")

    # then
    assert _memberships("alice") == [(None, "hq")]
    assert creator_claims["groups"] == []
    assert read_only_claims["groups"] == ["hq"]


# --- a failing request writes nothing -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (
            # a new embed tenant, new definitions and a new user come before the unknown group
            {**CREATOR, "groupDefinitions": [{"name": "field"}], "groups": ["field", "ghosts"]},
            "Groups with names ghosts not found",
        ),
        (
            {
                **CREATOR,
                "userAttributeDefinitions": [{"name": "seat", "type": "string"}],
                "userAttributes": [{"name": "seat", "value": "a1"}, {"name": "ghost", "value": 1}],
            },
            "User attributes not found: ghost",
        ),
        (
            {
                **CREATOR,
                "groupDefinitions": [{"name": "field"}],
                "userAttributeDefinitions": [{"name": "seat", "type": "number"}],
                "groups": ["field"],
                "userAttributes": [{"name": "seat", "value": "a1"}],
            },
            "userAttributes: value of 'seat' must be a number",
        ),
        ({**READ_ONLY, "groups": ["hq", "ghosts"]}, "Groups with names ghosts not found"),
        (
            {**READ_ONLY, "groups": ["hq"], "userAttributes": [{"name": "plan", "value": 1}]},
            "userAttributes: value of 'plan' must be a string",
        ),
    ],
)
def test_a_failing_request_writes_nothing(generate, tenant_attribute, tenant_group, acme, fields, error):
    # given
    tenant_group(acme, "hq")
    tenant_attribute(acme, "plan", "string")
    before = directory_counts(acme.account)

    # when
    response = generate(acme, externalId="new-user", userProfile={"displayName": "New"}, **fields)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": error}
    assert directory_counts(acme.account) == before
    assert not ExternalUser.objects.filter(external_id="new-user").exists()


def test_a_failing_request_leaves_an_existing_user_as_it_was(
    generate, new_session, tenant_group, tenant_attribute, acme
):
    # given
    tenant_group(acme, "hq")
    tenant_attribute(acme, "plan", "string")
    new_session(
        acme,
        externalId="alice",
        email="alice@acme.test",
        userProfile={"displayName": "Alice"},
        groups=["hq"],
        userAttributes=[{"name": "plan", "value": "gold"}],
    )
    before = list(ExternalUser.objects.filter(account=acme.account).values())

    # when: a valid profile, email, group change and value change, then one unknown group
    response = generate(
        acme,
        externalId="alice",
        email="new@acme.test",
        userProfile={"displayName": "Renamed"},
        groups=[],
        userAttributes=[{"name": "plan", "value": "silver"}, {"name": "ghost", "value": 1}],
    )

    # then
    assert response.status_code == 400
    assert list(ExternalUser.objects.filter(account=acme.account).values()) == before
    assert _memberships("alice") == [(None, "hq")]
    assert _values("alice") == {"plan": "gold"}
