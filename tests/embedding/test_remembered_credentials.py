"""What generate-session remembers between requests (API keys, deployments, catalogs; ``core/versions.py``) never
outlives a change made through the services: each change counts from the next request."""

from __future__ import annotations

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import ApiKey
from embedadmin.directory import services as directory
from embedadmin.directory.models import Group
from embedadmin.directory.services import AttributeDefinitionInput
from tests.embedding.support import directory_counts


def test_a_key_revoked_after_it_was_remembered_is_refused_at_once_and_writes_nothing(generate, acme):
    assert generate(acme, externalId="before").status_code == 200
    before = directory_counts(acme.account)

    accounts.api_key_revoke(key=ApiKey.objects.get(account=acme.account, name="initial admin key"))
    response = generate(acme, externalId="after")

    assert response.status_code == 401
    assert response.json() == {"error": "Invalid or revoked API key"}
    assert directory_counts(acme.account) == before


def test_creator_mode_switched_off_after_the_key_was_remembered_is_refused_at_once(generate, acme):
    definitions = {"creatorMode": True, "embedTenantName": "tenant-one", "groupDefinitions": [{"name": "g"}]}
    assert generate(acme, externalId="ann", **definitions).status_code == 200

    accounts.tenant_settings_update(account=acme.account, changes={"useCreatorMode": False})
    response = generate(acme, externalId="ann", **definitions)

    assert response.status_code == 403
    assert response.json() == {"error": "creatorMode requires the useCreatorMode tenant flag"}


def test_a_group_and_an_attribute_created_after_the_catalog_was_remembered_resolve_at_once(generate, acme):
    assert generate(acme, externalId="ann").status_code == 200  # the catalog (empty) is remembered

    directory.group_create(account=acme.account, embed_tenant=None, name="late")
    directory.attribute_definition_create(
        account=acme.account, embed_tenant=None, data=AttributeDefinitionInput(name="region", type="string")
    )
    response = generate(acme, externalId="ann", groups=["late"], userAttributes=[{"name": "region", "value": "x"}])

    assert response.status_code == 200, response.content


def test_a_group_deleted_after_the_catalog_was_remembered_is_not_found_at_once(generate, acme):
    group = directory.group_create(account=acme.account, embed_tenant=None, name="gone")
    assert generate(acme, externalId="ann", groups=[]).status_code == 200  # remembers a catalog with "gone"

    directory.group_delete(group=Group.objects.get(pk=group.pk))
    response = generate(acme, externalId="ann", groups=["gone"])

    assert response.status_code == 400
    assert response.json() == {"error": "Groups with names gone not found"}
