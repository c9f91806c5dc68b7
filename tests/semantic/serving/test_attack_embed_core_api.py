"""The Core Data API door for embed viewers (issue 22): a viewer's embed token reads only what an access policy
grants it, by ``/v1/meta``, ``/v1/load``, ``/v1/sql``, ``/v1/dry-run`` and ``/v1/cubesql``.

The cast is the demo model: the ``sales`` and ``product_catalog`` views carry policies, the cubes behind them carry
none. A regional viewer (Germany) may read ``sales`` without personal data, filtered to Germany; the cubes are
invisible to every embed viewer, while a token the customer's own back end signs keeps Cube's semantics.
"""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import json

import pytest

from embedadmin.audit.models import AuditEntry
from tests.semantic.http_support import (  # noqa: F401
    CoreApi,
    core,
    demo_duckdb,
    duck_rows,
    embed_token,
    fresh_semantic_state,
)

pytestmark = pytest.mark.django_db

RAW_ORDERS_BY_COUNTRY = {"measures": ["orders.count", "orders.total_amount"], "dimensions": ["users.country"]}
RAW_PERSONAL_DATA = {"dimensions": ["users.email", "users.full_name", "users.country"]}
OTHER_COUNTRIES = ("France", "United States", "United Kingdom", "Spain", "Italy")


def _countries(core: CoreApi) -> list[str]:
    return [row[0] for row in duck_rows(core.dataset, "SELECT DISTINCT country FROM users ORDER BY 1")]


def _emails(core: CoreApi) -> list[str]:
    return [row[0] for row in duck_rows(core.dataset, "SELECT email FROM users ORDER BY id LIMIT 50")]


def _assert_nothing_outside_the_grant(core: CoreApi, body: bytes) -> None:
    text = body.decode()
    for country in _countries(core):
        if country != "Germany":
            assert f'"{country}"' not in text, country
    for email in _emails(core):
        assert email not in text


@pytest.fixture
def anna(embed_token) -> str:
    """The demo's regional viewer: groups ["regional"], country Germany."""
    token, _ = embed_token(groups=["regional"], country="Germany", external_id="anna@northwind.example")
    return token


@pytest.mark.parametrize("endpoint", ["load", "sql", "dry-run"])
@pytest.mark.parametrize("query", [RAW_ORDERS_BY_COUNTRY, RAW_PERSONAL_DATA], ids=["orders-by-country", "personal"])
def test_a_raw_cube_without_a_policy_is_refused_to_an_embed_viewer(core, anna, endpoint, query):
    response = core.post(endpoint, {"query": query}, token=anna)

    assert response.status_code == 403
    first = query.get("measures", query.get("dimensions"))[0]
    assert response.json() == {"error": f"Access denied: '{first}' is not granted to this viewer"}
    _assert_nothing_outside_the_grant(core, response.content)


def test_the_refusal_is_the_same_for_a_cube_that_does_not_exist(core, anna):
    granted_elsewhere = core.post("load", {"query": {"measures": ["orders.count"]}}, token=anna)
    missing = core.post("load", {"query": {"measures": ["no_such_cube.count"]}}, token=anna)

    assert (granted_elsewhere.status_code, missing.status_code) == (403, 403)
    assert missing.json() == {"error": "Access denied: 'no_such_cube.count' is not granted to this viewer"}


@pytest.mark.parametrize(
    "query",
    [
        {"measures": ["sales.order_count"], "filters": [{"member": "users.country", "operator": "set"}]},
        {
            "measures": ["sales.order_count"],
            "filters": [{"or": [{"member": "users.email", "operator": "contains", "values": ["@"]}]}],
        },
        {"measures": ["sales.order_count"], "segments": ["orders.completed"]},
        {"measures": ["sales.order_count"], "timeDimensions": [{"dimension": "orders.created_at"}]},
        {"measures": ["sales.order_count"], "order": {"users.country": "asc"}},
        {"measures": ["sales.order_count"], "joinHints": [["orders", "users"]]},
    ],
    ids=["filter", "or-filter", "segment", "time-dimension", "order", "join-hints"],
)
def test_a_granted_query_cannot_smuggle_a_raw_cube_member(core, anna, query):
    response = core.post("load", {"query": query}, token=anna)

    assert response.status_code == 403, response.content
    assert response.json()["error"].startswith("Access denied: ")


def test_a_member_the_policy_excludes_is_refused_in_a_granted_view(core, anna):
    response = core.post("load", {"query": {"dimensions": ["sales.users_email"]}}, token=anna)

    assert response.status_code == 403
    assert response.json() == {"error": "Access denied: 'sales.users_email' is not granted to this viewer"}


def test_meta_lists_only_the_granted_views_and_members(core, anna):
    body = core.get("meta", token=anna).json()

    names = {cube["name"]: {m["name"] for m in cube["measures"] + cube["dimensions"]} for cube in body["cubes"]}
    assert set(names) == {"sales", "product_catalog"}
    assert "sales.users_email" not in names["sales"]
    assert "sales.users_full_name" not in names["sales"]
    assert "product_catalog.revenue" not in names["product_catalog"]


@pytest.mark.parametrize(
    "sql",
    ["SELECT email FROM users", "SELECT country, MEASURE(count) FROM users GROUP BY 1", "SELECT * FROM no_such"],
    ids=["personal", "aggregate", "missing"],
)
def test_cubesql_refuses_a_raw_cube(core, anna, sql):
    response = core.post("cubesql", {"query": sql}, token=anna)

    assert response.status_code == 403
    assert response.json()["error"].startswith("Access denied: table ")
    _assert_nothing_outside_the_grant(core, response.content)


def test_a_query_through_the_granted_view_reaches_the_cubes_as_the_view_defines_it(core, anna):
    body = core.load(
        {"measures": ["sales.order_count", "sales.revenue"], "dimensions": ["sales.users_country"]}, token=anna
    )

    expected = duck_rows(
        core.dataset, "SELECT count(*) FROM orders JOIN users ON users.id = orders.user_id WHERE country = 'Germany'"
    )[0][0]
    assert [(row["sales.users_country"], row["sales.order_count"]) for row in body["data"]] == [
        ("Germany", str(expected))
    ]


def test_an_admin_embed_viewer_reads_every_row_of_the_view_but_still_no_raw_cube(core, embed_token):
    admin, _ = embed_token(groups=["admin"], external_id="ada@example.com")

    view = core.load({"dimensions": ["sales.users_country"]}, token=admin)
    raw = core.post("load", {"query": {"dimensions": ["users.country"]}}, token=admin)

    assert sorted(row["sales.users_country"] for row in view["data"]) == _countries(core)
    assert raw.status_code == 403


def test_a_token_the_customers_back_end_signs_keeps_cubes_semantics(core):
    body = core.load(RAW_ORDERS_BY_COUNTRY, token=core.token(sub="backend-job"))

    assert sorted(row["users.country"] for row in body["data"]) == _countries(core)


def test_the_deployment_setting_opens_cubes_without_policy_and_is_audited(core, anna):
    deployment = core.cast.deployment
    url = f"/api/v1/deployments/{deployment.pk}"

    before = core.post("load", {"query": {"dimensions": ["users.country"]}}, token=anna)
    opened = core.client.patch_json(url, {"openToEmbedWithoutPolicy": True}, **core.cast.platform_headers)
    after = core.post("load", {"query": {"dimensions": ["users.country"]}}, token=anna)
    still_excluded = core.post("load", {"query": {"dimensions": ["sales.users_email"]}}, token=anna)
    closed = core.client.patch_json(url, {"openToEmbedWithoutPolicy": False}, **core.cast.platform_headers)
    again = core.post("load", {"query": {"dimensions": ["users.country"]}}, token=anna)

    assert before.status_code == 403
    assert opened.status_code == 200
    assert opened.json()["openToEmbedWithoutPolicy"] is True
    assert after.status_code == 200
    assert still_excluded.status_code == 400  # the view's own policy still holds (Cube's hidden-member answer)
    assert closed.status_code == 200
    assert closed.json()["openToEmbedWithoutPolicy"] is False
    assert again.status_code == 403
    entries = AuditEntry.objects.filter(resource_type="deployment", resource_id=str(deployment.pk))
    assert entries.count() == 2
    assert all("openToEmbedWithoutPolicy" in json.dumps(entry.details) for entry in entries)


@pytest.mark.parametrize("value", ["true", 1, None, {"x": 1}])
def test_the_setting_refuses_anything_but_a_boolean_and_changes_nothing(core, value):
    deployment = core.cast.deployment
    url = f"/api/v1/deployments/{deployment.pk}"

    response = core.client.patch_json(
        url, {"name": "renamed", "openToEmbedWithoutPolicy": value}, **core.cast.platform_headers
    )

    deployment.refresh_from_db()
    if value is None:  # null leaves the setting as it is, like every optional field of the PATCH
        assert response.status_code == 200
    else:
        assert response.status_code == 400
        assert deployment.name != "renamed"
    assert deployment.open_to_embed_without_policy is False
