"""Creator-mode definitions (spec 2.16, 4.2 rules 6, 7, 9): idempotent upserts in the embed tenant's
own catalog, applied and validated before groups and attribute values, a type never changes."""

from __future__ import annotations

from typing import Any

import pytest

from embedadmin.accounts.models import Account
from embedadmin.directory.models import AttributeDefinition, Group
from tests.embedding.support import directory_counts

CREATOR = {"creatorMode": True, "embedTenantName": "tenant-a"}


def _catalog(account: Account) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every attribute definition and group of the account, all columns a request could change."""
    attributes = AttributeDefinition.objects.filter(account=account).order_by("id")
    groups = Group.objects.filter(account=account).order_by("id")
    return (
        list(
            attributes.values_list(
                "id", "embed_tenant__name", "name", "type", "display_name", "default_value", "description"
            )
        ),
        list(groups.values_list("id", "embed_tenant__name", "name", "description")),
    )


def test_definitions_are_created_in_the_embed_tenants_own_catalog(new_session, acme):
    # when
    new_session(
        acme,
        externalId="alice",
        **CREATOR,
        groupDefinitions=[{"name": "editors", "description": "Can edit"}],
        userAttributeDefinitions=[
            {"name": "region", "type": "string", "displayName": "Region", "defaultValue": "eu", "description": "d"}
        ],
    )

    # then
    attributes, groups = _catalog(acme.account)
    assert [row[1:] for row in attributes] == [("tenant-a", "region", "string", "Region", "eu", "d")]
    assert [row[1:] for row in groups] == [("tenant-a", "editors", "Can edit")]


def test_definitions_are_idempotent(new_session, acme):
    # given
    request = {
        **CREATOR,
        "groupDefinitions": [{"name": "editors", "description": "Can edit"}, {"name": "viewers"}],
        "userAttributeDefinitions": [
            {"name": "region", "type": "string", "displayName": "Region"},
            {"name": "limits", "type": "number_array"},
        ],
    }
    new_session(acme, externalId="alice", **request)
    before = _catalog(acme.account)

    # when
    new_session(acme, externalId="bob", **request)

    # then
    assert _catalog(acme.account) == before
    assert len(before[0]) == 2
    assert len(before[1]) == 2


def test_the_same_names_in_two_embed_tenants_are_two_definitions(new_session, acme):
    # given
    definitions = {
        "groupDefinitions": [{"name": "editors"}],
        "userAttributeDefinitions": [{"name": "region", "type": "string"}],
    }

    # when
    new_session(acme, externalId="alice", creatorMode=True, embedTenantName="tenant-a", **definitions)
    new_session(acme, externalId="bob", creatorMode=True, embedTenantName="tenant-b", **definitions)

    # then
    attributes, groups = _catalog(acme.account)
    assert [(row[1], row[2]) for row in attributes] == [("tenant-a", "region"), ("tenant-b", "region")]
    assert [(row[1], row[2]) for row in groups] == [("tenant-a", "editors"), ("tenant-b", "editors")]


def test_definitions_never_touch_the_tenant_wide_catalog(new_session, tenant_attribute, tenant_group, acme):
    # given: tenant-wide definitions with the same names
    tenant_attribute(acme, "region", "number", description="tenant-wide")
    tenant_group(acme, "editors")

    # when: the embed tenant defines them with another type and description
    new_session(
        acme,
        externalId="alice",
        **CREATOR,
        groupDefinitions=[{"name": "editors", "description": "embed"}],
        userAttributeDefinitions=[{"name": "region", "type": "string", "description": "embed"}],
    )

    # then
    attributes, groups = _catalog(acme.account)
    assert [row[1:] for row in attributes] == [
        (None, "region", "number", "", "", "tenant-wide"),
        ("tenant-a", "region", "string", "", "", "embed"),
    ]
    assert [row[1:] for row in groups] == [(None, "editors", ""), ("tenant-a", "editors", "embed")]


def test_attribute_definition_fields_are_updated_when_supplied_and_different(new_session, acme):
    # given
    new_session(
        acme,
        externalId="alice",
        **CREATOR,
        userAttributeDefinitions=[
            {"name": "region", "type": "string", "displayName": "Region", "defaultValue": "eu", "description": "old"}
        ],
    )
    (definition_id,) = AttributeDefinition.objects.filter(account=acme.account).values_list("id", flat=True)

    # when: one field changes, one is omitted, one is sent unchanged
    new_session(
        acme,
        externalId="alice",
        **CREATOR,
        userAttributeDefinitions=[{"name": "region", "type": "string", "displayName": "Area", "defaultValue": "eu"}],
    )

    # then
    attributes, _ = _catalog(acme.account)
    assert attributes == [(definition_id, "tenant-a", "region", "string", "Area", "eu", "old")]


@pytest.mark.parametrize(
    ("description", "stored"),
    [("Can edit", "Can edit"), ("Edits everything", "Edits everything"), ("", "Can edit"), (None, "Can edit")],
)
def test_group_description_is_updated_when_different_and_never_cleared(new_session, acme, description, stored):
    # given
    new_session(acme, externalId="alice", **CREATOR, groupDefinitions=[{"name": "editors", "description": "Can edit"}])
    group = Group.objects.get(account=acme.account)
    definition = {"name": "editors"} if description is None else {"name": "editors", "description": description}

    # when
    new_session(acme, externalId="alice", **CREATOR, groupDefinitions=[definition])

    # then
    assert list(Group.objects.filter(account=acme.account).values_list("id", "description")) == [(group.pk, stored)]


def test_cannot_change_type_rejects_the_whole_request_and_writes_nothing(generate, new_session, acme):
    # given: the embed tenant has "region" as a string, and one known user
    new_session(
        acme,
        externalId="alice",
        **CREATOR,
        groupDefinitions=[{"name": "editors", "description": "old"}],
        userAttributeDefinitions=[{"name": "region", "type": "string", "description": "old"}],
    )
    before_counts = directory_counts(acme.account)
    before_catalog = _catalog(acme.account)

    # when: a request for a new user also defines a new attribute and group first, updates descriptions,
    # and then redefines "region" as a number
    response = generate(
        acme,
        externalId="bob",
        **CREATOR,
        groupDefinitions=[{"name": "editors", "description": "new"}, {"name": "authors"}],
        userAttributeDefinitions=[
            {"name": "budget", "type": "number"},
            {"name": "region", "type": "number", "description": "new"},
        ],
        groups=["authors"],
        userAttributes=[{"name": "budget", "value": 5}],
    )

    # then
    assert response.status_code == 400
    assert response.json() == {"error": "cannot change type of user attribute region"}
    assert directory_counts(acme.account) == before_counts
    assert _catalog(acme.account) == before_catalog


@pytest.mark.parametrize(
    ("request_fields", "message"),
    [
        (
            {"groupDefinitions": [{"name": "editors"}, {"name": "viewers"}, {"name": "editors"}]},
            "Duplicate names in groupDefinitions: editors",
        ),
        (
            {
                "userAttributeDefinitions": [
                    {"name": "region", "type": "string"},
                    {"name": "region", "type": "string"},
                    {"name": "limits", "type": "number"},
                    {"name": "limits", "type": "number_array"},
                ]
            },
            "Duplicate names in userAttributeDefinitions: region, limits",
        ),
        (
            {
                "userAttributeDefinitions": [{"name": "region", "type": "string"}],
                "userAttributes": [{"name": "region", "value": "eu"}, {"name": "region", "value": "us"}],
            },
            "Duplicate names in userAttributes: region",
        ),
    ],
)
def test_duplicate_names_are_400_and_write_nothing(generate, acme, request_fields, message):
    # given
    before = directory_counts(acme.account)

    # when
    response = generate(acme, externalId="alice", **CREATOR, **request_fields)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert directory_counts(acme.account) == before


def test_definitions_are_applied_before_groups_and_values(embed_claims, acme):
    # when: one request defines an attribute and a group and uses both
    claims = embed_claims(
        acme,
        externalId="alice",
        **CREATOR,
        groupDefinitions=[{"name": "editors"}],
        userAttributeDefinitions=[{"name": "region", "type": "string"}, {"name": "quota", "type": "number"}],
        groups=["editors"],
        userAttributes=[{"name": "region", "value": "eu"}, {"name": "quota", "value": 3}],
    )

    # then
    assert claims["groups"] == ["editors"]
    assert claims["userAttributes"] == {"quota": 3, "region": "eu"}
    assert directory_counts(acme.account)["memberships"] == 1
    assert directory_counts(acme.account)["attribute_values"] == 2


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ({"name": "region", "type": "bool"}, 'userAttributeDefinitions.0.type: "bool" is not a valid choice.'),
        ({"name": "region"}, "userAttributeDefinitions.0.type: This field is required."),
        ({"type": "string"}, "userAttributeDefinitions.0.name: This field is required."),
        ({"name": "quota", "type": "number", "defaultValue": "many"}, "defaultValue 'many' is not a valid number"),
        (
            {"name": "tags", "type": "string_array", "defaultValue": "[1]"},
            "defaultValue '[1]' is not a valid string_array",
        ),
    ],
)
def test_an_invalid_attribute_definition_is_400(generate, acme, definition, message):
    # when
    response = generate(acme, externalId="alice", **CREATOR, userAttributeDefinitions=[definition])

    # then
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert directory_counts(acme.account)["attribute_definitions"] == 0


@pytest.mark.parametrize(
    ("type_", "default", "claim"),
    [("string", "eu", "eu"), ("number", "2.5", 2.5), ("string_array", '["a", "b"]', ["a", "b"])],
)
def test_a_default_value_is_the_claim_of_a_user_without_a_value(embed_claims, acme, type_, default, claim):
    # when
    claims = embed_claims(
        acme,
        externalId="alice",
        **CREATOR,
        userAttributeDefinitions=[{"name": "attr", "type": type_, "defaultValue": default}],
    )

    # then
    assert claims["userAttributes"] == {"attr": claim}
    assert directory_counts(acme.account)["attribute_values"] == 0
