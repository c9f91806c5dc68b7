"""``GET /api/v1/deployments/{deploymentId}/access`` (issue 22, "see who can read what"): for one embed viewer, every
cube and view of the deployment's model, granted or denied with the reason, the members and the row filters with the
viewer's values filled in.

The cast is the demo model (``tests/semantic/http_support.py``): ``sales`` grants the ``admin`` group everything and
the ``regional`` group everything but personal data, filtered to their ``country`` attribute; ``product_catalog``
grants every viewer its non-money members; the raw cubes carry no policy. The proof that the listing is the path a
real token takes: it agrees with ``/v1/meta`` answered to the token of a session minted by generate-session and
exchanged for the viewer.
"""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import json
from pathlib import Path

import pytest

from embedadmin.accounts.services import deployment_configure, duckdb_url
from embedadmin.directory import services as directory
from embedadmin.semantic.results.grants import CLOSED_WITHOUT_POLICY, NO_GROUP_MATCH, OPEN_WITHOUT_POLICY
from tests.conftest import Cast
from tests.platform.support import db_rows
from tests.semantic.http_support import (  # noqa: F401
    CoreApi,
    core,
    demo_duckdb,
    embed_token,
    fresh_semantic_state,
)

pytestmark = pytest.mark.django_db

RAW_CUBES = ["line_items", "orders", "products", "users"]
PERSONAL = {"sales.users_email", "sales.users_full_name"}
SECURE_MODEL = Path(__file__).resolve().parents[1] / "semantic" / "fixtures" / "secure"


def _url(cast: Cast) -> str:
    return f"/api/v1/deployments/{cast.deployment.pk}/access"


def _read(core: CoreApi, cast: Cast | None = None, **params) -> dict:
    """The access read as ``cast`` (acme by default); must succeed."""
    response = _get(core, cast, **params)
    assert response.status_code == 200, response.content
    return response.json()


def _get(core: CoreApi, cast: Cast | None = None, **params):
    cast = cast or core.cast
    encoded = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in params.items()}
    return core.client.get(_url(core.cast), encoded, **cast.platform_headers)


def _entities(body: dict) -> dict[str, dict]:
    return {entity["name"]: entity for entity in body["entities"]}


def _members(entity: dict) -> set[str]:
    return {member["name"] for member in entity["members"]}


def _meta_members(core: CoreApi, token: str) -> dict[str, set[str]]:
    """What ``/v1/meta`` lists to ``token``: member names by cube or view."""
    response = core.get("meta", token=token)
    assert response.status_code == 200, response.content
    cubes = response.json()["cubes"]
    return {c["name"]: {m["name"] for key in ("measures", "dimensions", "segments") for m in c[key]} for c in cubes}


@pytest.fixture
def directory_ready(embed_token) -> None:
    """The account's ``country`` attribute and ``regional``/``admin`` groups (made by the ``embed_token`` fixture)."""


def test_a_regional_viewer_reads_sales_without_personal_data_filtered_to_their_country(core, directory_ready):
    body = _read(core, groups="regional", attributes={"country": "Germany"})

    sales = _entities(body)["sales"]
    assert body["viewer"] == {"groups": ["regional"], "userAttributes": {"country": "Germany"}}
    assert body["openToEmbedWithoutPolicy"] is False
    assert sales["access"] == "granted"
    assert "reason" not in sales
    assert "sales.users_country" in _members(sales)
    assert not _members(sales) & PERSONAL
    assert sales["rowFilters"] == [{"member": "sales.users_country", "operator": "equals", "values": ["Germany"]}]
    assert sales["allRows"] is False
    assert {m["kind"] for m in sales["members"]} == {"measure", "dimension", "segment"}
    assert next(m for m in sales["members"] if m["name"] == "sales.order_count") == {
        "name": "sales.order_count",
        "title": "Sales Orders",
        "kind": "measure",
    }


def test_raw_cubes_are_listed_denied_with_the_reason(core, directory_ready):
    body = _read(core, groups="regional", attributes={"country": "Germany"})

    entities = _entities(body)
    assert [e["name"] for e in body["entities"]] == [*RAW_CUBES, "product_catalog", "sales"]
    for name in RAW_CUBES:
        assert entities[name] == {
            "name": name,
            "title": entities[name]["title"],
            "type": "cube",
            "access": "denied",
            "reason": CLOSED_WITHOUT_POLICY,
            "members": [],
            "rowFilters": [],
            "allRows": False,
        }
    assert entities["users"]["title"] == "Customers"
    catalog = entities["product_catalog"]
    assert (catalog["access"], catalog["allRows"], catalog["rowFilters"]) == ("granted", True, [])
    assert not _members(catalog) & {"product_catalog.revenue", "product_catalog.price"}


def test_the_admin_group_reads_every_member_and_every_row(core, directory_ready):
    body = _read(core, groups="admin")

    sales = _entities(body)["sales"]
    assert sales["access"] == "granted"
    assert _members(sales) >= PERSONAL
    assert (sales["rowFilters"], sales["allRows"]) == ([], True)
    assert {"product_catalog.revenue", "product_catalog.price"} <= _members(_entities(body)["product_catalog"])


def test_a_viewer_without_a_matching_group_is_denied_sales_with_the_reason(core, directory_ready):
    body = _read(core)

    sales = _entities(body)["sales"]
    assert body["viewer"] == {"groups": [], "userAttributes": {}}
    assert (sales["access"], sales["reason"], sales["members"]) == ("denied", NO_GROUP_MATCH, [])
    assert _entities(body)["product_catalog"]["access"] == "granted"  # its "*" policy


def test_a_regional_viewer_without_a_country_reads_no_rows_of_sales(core, directory_ready):
    sales = _entities(_read(core, groups="regional"))["sales"]

    assert sales["access"] == "granted"
    assert sales["rowFilters"] == [{"noRows": "sales.users_country: security context value missing"}]
    assert sales["allRows"] is False


def test_groups_may_be_repeated_or_comma_separated(core, directory_ready):
    repeated = core.client.get(
        f"{_url(core.cast)}?groups=regional&groups=admin&attributes=%7B%22country%22%3A%22Spain%22%7D",
        **core.cast.platform_headers,
    )
    joined = _read(core, groups="regional, admin", attributes={"country": "Spain"})

    assert repeated.status_code == 200, repeated.content
    assert repeated.json() == joined
    assert joined["viewer"]["groups"] == ["regional", "admin"]
    sales = _entities(joined)["sales"]
    assert (sales["allRows"], sales["rowFilters"]) == (True, [])  # admin's policy lifts the restriction


def test_an_attribute_left_out_gets_its_default(core, directory_ready):
    directory.attribute_definition_create(
        account=core.cast.account,
        embed_tenant=None,
        data=directory.AttributeDefinitionInput(name="currency", type="string", default_value="EUR"),
    )

    body = _read(core, groups="regional", attributes={"country": "Germany"})

    assert body["viewer"]["userAttributes"] == {"country": "Germany", "currency": "EUR"}


def test_the_deployment_setting_flips_raw_cubes_to_granted(core, directory_ready):
    url = f"/api/v1/deployments/{core.cast.deployment.pk}"
    opened = core.client.patch_json(url, {"openToEmbedWithoutPolicy": True}, **core.cast.platform_headers)
    assert opened.status_code == 200, opened.content

    body = _read(core, groups="regional", attributes={"country": "Germany"})

    entities = _entities(body)
    assert body["openToEmbedWithoutPolicy"] is True
    for name in RAW_CUBES:
        assert entities[name]["access"] == "granted"
        assert entities[name]["reason"] == OPEN_WITHOUT_POLICY
        assert entities[name]["allRows"] is True
    assert "users.email" in _members(entities["users"])
    assert not _members(entities["sales"]) & PERSONAL  # the view's own policy still holds


@pytest.mark.parametrize(
    ("groups", "country"),
    [(["regional"], "Germany"), (["admin"], None), ([], None), (["regional"], None)],
    ids=["regional", "admin", "no-group", "regional-without-country"],
)
def test_the_listing_agrees_with_meta_for_the_viewers_real_embed_token(core, embed_token, groups, country):
    token, _ = embed_token(groups=groups, country=country, external_id="rita@example.com")

    body = _read(core, externalId="rita@example.com")

    granted = {e["name"]: _members(e) for e in body["entities"] if e["access"] == "granted"}
    assert granted == _meta_members(core, token)
    assert body["viewer"]["externalId"] == "rita@example.com"
    assert body["viewer"]["groups"] == sorted(groups)


def test_the_listing_agrees_with_meta_when_the_deployment_opens_cubes(core, embed_token):
    token, _ = embed_token(groups=["regional"], country="France")
    url = f"/api/v1/deployments/{core.cast.deployment.pk}"
    core.client.patch_json(url, {"openToEmbedWithoutPolicy": True}, **core.cast.platform_headers)

    body = _read(core, externalId="rita@example.com")

    granted = {e["name"]: _members(e) for e in body["entities"] if e["access"] == "granted"}
    assert granted == _meta_members(core, token)
    assert set(RAW_CUBES) <= set(granted)


def test_an_external_user_is_read_as_they_are_in_their_embed_tenant(core, embed_token):
    body = {
        "deploymentId": core.cast.deployment.pk,
        "externalId": "louis@contoso.example",
        "embedTenantName": "contoso",
        "groups": ["regional"],
        "userAttributes": [{"name": "country", "value": "France"}],
    }
    minted = core.client.post_json("/api/v1/embed/generate-session", body, **core.cast.api_key_headers)
    assert minted.status_code == 200, minted.content

    directory.embed_tenant_get_or_create(account=core.cast.account, name="northwind")

    own = _read(core, externalId="louis@contoso.example")
    other = _read(core, externalId="louis@contoso.example", embedTenant="northwind")

    assert own["viewer"] == {
        "externalId": "louis@contoso.example",
        "embedTenant": "contoso",
        "groups": ["regional"],
        "userAttributes": {"country": "France"},
    }
    assert _entities(own)["sales"]["rowFilters"][0]["values"] == ["France"]
    assert other["viewer"] == {**own["viewer"], "embedTenant": "northwind"}
    assert other["entities"] == own["entities"]


def test_reading_writes_nothing(core, embed_token):
    embed_token(groups=["regional"], country="Germany")
    before = db_rows()

    _read(core, externalId="rita@example.com")
    _read(core, groups="admin", attributes={"country": "Italy"})

    assert db_rows() == before


def test_security_context_values_are_filled_into_row_filters(core, demo_duckdb):
    deployment_configure(
        deployment=core.cast.deployment, model_dir=str(SECURE_MODEL), data_source_url=duckdb_url(demo_duckdb)
    )
    directory.group_create(account=core.cast.account, embed_tenant=None, name="manager")

    body = _read(core, groups="manager", securityContext={"statuses": ["shipped", "completed"], "min_amount": 100})

    entities = _entities(body)
    assert body["viewer"]["securityContext"] == {"statuses": ["shipped", "completed"], "min_amount": 100}
    assert entities["secure_orders"]["rowFilters"] == [
        {
            "or": [
                {"member": "secure_orders.status", "operator": "equals", "values": ["shipped", "completed"]},
                {
                    "or": [
                        {"member": "secure_orders.amount", "operator": "gte", "values": ["100"]},
                        {"member": "secure_orders.status", "operator": "equals", "values": ["shipped"]},
                    ]
                },
            ]
        }
    ]
    # A view reached cube's own policies narrow the view's rows too (as a query through it is narrowed).
    assert entities["secure_view"]["rowFilters"] == [
        {"member": "secure_view.status", "operator": "notEquals", "values": ["cancelled"]},
        entities["secure_orders"]["rowFilters"][0],
    ]
    assert (entities["secure_users"]["access"], entities["secure_users"]["reason"]) == ("denied", NO_GROUP_MATCH)


# --- isolation and bad input ------------------------------------------------------------------------------------


def test_another_accounts_deployment_is_404(core, globex):
    response = core.client.get(f"/api/v1/deployments/{globex.deployment.pk}/access", **core.cast.platform_headers)

    assert response.status_code == 404
    assert response.json() == {"error": f"Deployment {globex.deployment.pk} not found"}


def test_an_unknown_deployment_is_404(core):
    response = core.client.get("/api/v1/deployments/987654/access", **core.cast.platform_headers)

    assert response.status_code == 404
    assert "error" in response.json()


def test_another_accounts_external_user_and_embed_tenant_are_404(core, directory_ready, globex):
    directory.embed_tenant_get_or_create(account=globex.account, name="globex-shop")
    minted = core.client.post_json(
        "/api/v1/embed/generate-session",
        {"deploymentId": globex.deployment.pk, "externalId": "gina@globex.example", "embedTenantName": "globex-shop"},
        **globex.api_key_headers,
    )
    assert minted.status_code == 200, minted.content

    user = _get(core, externalId="gina@globex.example")
    tenant = _get(core, embedTenant="globex-shop")

    assert (user.status_code, user.json()) == (404, {"error": "External user 'gina@globex.example' not found"})
    assert (tenant.status_code, tenant.json()) == (404, {"error": "Embed tenant 'globex-shop' not found"})


def test_the_other_account_reading_its_own_deployment_sees_nothing_of_acme(core, directory_ready, globex):
    response = core.client.get(_url(core.cast), {"groups": "admin"}, **globex.platform_headers)

    assert response.status_code == 404


def test_without_a_platform_token_it_is_refused(core):
    response = core.client.get(_url(core.cast), **core.cast.api_key_headers)

    assert response.status_code in (401, 403)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"attributes": {"nationality": "DE"}}, "User attributes not found: nationality"),
        ({"attributes": "{not json"}, "attributes: not valid JSON (expected an object of attribute name -> value)"),
        ({"attributes": "[1, 2]"}, "attributes: expected an object of attribute name -> value"),
        ({"attributes": "[" * 5000 + "]" * 5000}, "attributes: not valid JSON (expected an object of attribute "),
        ({"attributes": {"country": 49}}, "userAttributes: value of 'country' must be a string"),
        ({"attributes": '{"country": NaN}'}, "attributes: not a valid value"),
        ({"groups": "regional,auditors"}, "Groups with names auditors not found"),
        ({"externalId": "rita@example.com", "groups": "admin"}, "externalId names a viewer as they are"),
        ({"externalId": "bad\x00id"}, "The URL must not contain NUL characters"),
        ({"groups": "re\x00gional"}, "The URL must not contain NUL characters"),
        ({"externalId": "x" * 1001}, "externalId: not a valid value"),
        ({"securityContext": '{"groups": ["admin"]}'}, "securityContext: reserved claim names not allowed: groups"),
        ({"securityContext": '"admin"'}, "securityContext: expected an object"),
        ({"securityContext": '{"x": "a\\u0000b"}'}, "securityContext: not a valid value"),
    ],
    ids=[
        "unknown-attribute",
        "malformed-json",
        "not-an-object",
        "deep-json",
        "wrong-type",
        "nan",
        "unknown-group",
        "external-id-and-groups",
        "nul-external-id",
        "nul-group",
        "long-external-id",
        "reserved-claim",
        "context-not-object",
        "context-nul",
    ],
)
def test_bad_input_is_a_json_400(core, embed_token, params, message):
    embed_token(groups=["regional"], country="Germany")

    response = _get(core, **params)

    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith(message)


def test_a_deployment_without_a_data_model_is_400(api, acme):
    response = api.get(f"/api/v1/deployments/{acme.deployment.pk}/access", **acme.platform_headers)

    assert response.status_code == 400
    assert response.json() == {
        "error": f"Deployment {acme.deployment.pk} has no data model: set one with configure_deployment"
    }
