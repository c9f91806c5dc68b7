"""A deployment's environments through the Platform API: the one production environment, and the tokens and
tokens-for-meta-sync issued for it (Cube's snake_case bodies; a token is shown once)."""

from __future__ import annotations

import datetime as dt

import jwt
import pytest

from embedadmin.accounts.models import IssuedToken
from embedadmin.accounts.selectors import deployment_signing_secret
from embedadmin.semantic.serving.auth import API_SCOPES_CLAIM
from tests.dashboards import support as dashboards_support
from tests.platform.support import db_rows
from tests.tokens import sign_token

fresh_models = dashboards_support.fresh_models
modelled = dashboards_support.modelled

KINDS = [("tokens", IssuedToken.Kind.ENVIRONMENT), ("tokens-for-meta-sync", IssuedToken.Kind.META_SYNC)]
CONTEXT = {"sub": "user-7", "tenant_id": 42, "groups": ["sales"], "nested": {"region": "eu"}}


def _environments(cast) -> str:
    return f"/api/v1/deployments/{cast.deployment.pk}/environments"


def _tokens(cast, route: str, environment: str = "production") -> str:
    return f"{_environments(cast)}/{environment}/{route}"


def _time(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_the_production_environment_names_the_core_data_api_url(api, acme):
    # when
    response = api.get(_environments(acme), **acme.platform_headers)

    # then
    assert response.status_code == 200, response.content
    body = response.json()
    production = {
        "id": "production",
        "type": "production",
        "branch": None,
        "user": None,
        "api_credentials": [
            {
                "type": "rest",
                "version": "v1",
                "url": f"http://testserver/d/{acme.deployment.pk}/cubejs-api/v1",
                "host": None,
                "port": None,
                "database": None,
            }
        ],
    }
    assert body["items"] == [production]
    assert body["data"] == [production]
    assert body["pagination"] == {"offset": 0, "limit": 1, "total": 1}
    assert body["pageInfo"]["hasNextPage"] is False


@pytest.mark.parametrize(("wanted", "count"), [("production", 1), ("staging", 0), ("development", 0)])
def test_the_type_filter(api, acme, wanted, count):
    response = api.get(f"{_environments(acme)}?type={wanted}", **acme.platform_headers)
    assert response.status_code == 200
    assert len(response.json()["items"]) == count
    assert response.json()["pagination"]["total"] == count


def test_an_unknown_type_is_400(api, acme):
    response = api.get(f"{_environments(acme)}?type=preview", **acme.platform_headers)
    assert response.status_code == 400
    assert response.json() == {"error": "type: must be production, staging or development"}


@pytest.mark.parametrize(("route", "kind"), KINDS)
def test_a_token_is_shown_once_and_verifies_with_the_deployments_secret(api, acme, route, kind):
    # when
    response = api.post_json(
        _tokens(acme, route),
        {"security_context": CONTEXT, "expires_in": 600, "scopes": ["meta", "data"]},
        **acme.platform_headers,
    )

    # then
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert set(data) == {"token", "jti", "security_context", "scopes", "created_at", "expires_at"}
    assert data["security_context"] == CONTEXT
    assert data["scopes"] == ["meta", "data"]
    assert _time(data["expires_at"]) - _time(data["created_at"]) == dt.timedelta(seconds=600)
    claims = jwt.decode(data["token"], deployment_signing_secret(deployment=acme.deployment), algorithms=["HS256"])
    assert {k: claims[k] for k in CONTEXT} == CONTEXT
    assert claims["jti"] == data["jti"]
    assert claims["exp"] == int(_time(data["expires_at"]).timestamp())
    restriction = {API_SCOPES_CLAIM} if kind == IssuedToken.Kind.META_SYNC else set()
    assert set(claims) == {*CONTEXT, "jti", "iat", "exp", *restriction}
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(data["token"], "not-the-deployments-secret-but-long-enough", algorithms=["HS256"])
    record = IssuedToken.objects.get(jti=data["jti"])
    assert (record.deployment_id, record.kind, record.environment) == (acme.deployment.pk, kind, "production")
    assert record.security_context == CONTEXT
    assert data["token"] not in str(list(IssuedToken.objects.values()))


@pytest.mark.parametrize(("route", "kind"), KINDS)
def test_listed_tokens_have_no_token_and_each_route_lists_its_own_kind(api, acme, route, kind):
    # given
    mine = api.post_json(_tokens(acme, route), {"security_context": {"sub": "a"}}, **acme.platform_headers)
    other_route = next(r for r, _ in KINDS if r != route)
    api.post_json(_tokens(acme, other_route), {"security_context": {"sub": "b"}}, **acme.platform_headers)
    issued = mine.json()["data"]

    # when
    response = api.get(_tokens(acme, route), **acme.platform_headers)

    # then
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["items"] == [{**issued, "token": None}]
    assert body["data"] == body["items"]
    assert body["pagination"] == {"offset": 0, "limit": 1, "total": 1}
    assert issued["token"] not in response.content.decode()


def test_the_default_lifetime_is_an_hour_and_the_scopes_empty(api, acme):
    response = api.post_json(_tokens(acme, "tokens"), {"security_context": {}}, **acme.platform_headers)
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert _time(data["expires_at"]) - _time(data["created_at"]) == dt.timedelta(seconds=3600)
    assert data["scopes"] == []


@pytest.mark.parametrize("expires_in", [1, 3600])
def test_expires_in_bounds_are_accepted(api, acme, expires_in):
    body = {"security_context": {}, "expires_in": expires_in}
    response = api.post_json(_tokens(acme, "tokens"), body, **acme.platform_headers)
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert _time(data["expires_at"]) - _time(data["created_at"]) == dt.timedelta(seconds=expires_in)


@pytest.mark.parametrize("route", [r for r, _ in KINDS])
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"security_context": {}, "expires_in": 0}, "expires_in: must be an integer between 1 and 3600"),
        ({"security_context": {}, "expires_in": 3601}, "expires_in: must be an integer between 1 and 3600"),
        ({"security_context": {}, "expires_in": "60"}, "expires_in: must be an integer between 1 and 3600"),
        ({"security_context": {}, "expires_in": True}, "expires_in: must be an integer between 1 and 3600"),
        ({"security_context": {}, "expires_in": 1.5}, "expires_in: must be an integer between 1 and 3600"),
        ({}, "security_context: must be a JSON object"),
        ({"security_context": None}, "security_context: must be a JSON object"),
        ({"security_context": ["a"]}, "security_context: must be a JSON object"),
        ({"security_context": {"exp": 1}}, "security_context: exp are set by the server"),
        ({"security_context": {"jti": "x", "iat": 1}}, "security_context: iat, jti are set by the server"),
        ({"security_context": {}, "scopes": "meta"}, "scopes: must be a list of strings"),
        ({"security_context": {}, "scopes": [1]}, "scopes: must be a list of strings"),
        ({"security_context": {}, "scopes": [""]}, "scopes: must be a list of strings"),
        ({"securityContext": {}}, "Unknown fields: securityContext"),
        ({"security_context": {}, "expiresIn": 60}, "Unknown fields: expiresIn"),
        ({"security_context": {"sub": "a\x00b"}}, "The body must not contain NUL characters"),
        ([], "The body must be a JSON object"),
    ],
)
def test_a_bad_body_is_400_and_nothing_is_stored(api, acme, route, body, message):
    before = db_rows()
    response = api.post_json(_tokens(acme, route), body, **acme.platform_headers)
    assert response.status_code == 400, response.content
    assert response.json() == {"error": message}
    assert db_rows() == before


@pytest.mark.parametrize("route", [r for r, _ in KINDS])
def test_an_environment_other_than_production_is_404(api, acme, route):
    before = db_rows()
    listed = api.get(_tokens(acme, route, "staging"), **acme.platform_headers)
    posted = api.post_json(_tokens(acme, route, "staging"), {"security_context": {}}, **acme.platform_headers)
    for response in (listed, posted):
        assert response.status_code == 404
        assert response.json() == {"error": f"Environment staging not found in deployment {acme.deployment.pk}"}
    assert db_rows() == before


@pytest.mark.parametrize("route", [r for r, _ in KINDS])
def test_another_accounts_environment_and_tokens_are_404_and_nothing_changes(api, acme, globex, route):
    # given
    issued = api.post_json(_tokens(acme, route), {"security_context": {"sub": "a"}}, **acme.platform_headers)
    assert issued.status_code == 201
    before = db_rows()

    # when
    responses = [
        api.get(_environments(acme), **globex.platform_headers),
        api.get(_tokens(acme, route), **globex.platform_headers),
        api.post_json(_tokens(acme, route), {"security_context": {"sub": "x"}}, **globex.platform_headers),
    ]

    # then
    for response in responses:
        assert response.status_code == 404, response.content
        assert response.json() == {"error": f"Deployment {acme.deployment.pk} not found"}
        assert issued.json()["data"]["jti"] not in response.content.decode()
    assert db_rows() == before
    assert api.get(_tokens(globex, route), **globex.platform_headers).json()["items"] == []


def test_expired_tokens_are_not_listed(api, acme):
    # given
    response = api.post_json(_tokens(acme, "tokens"), {"security_context": {}}, **acme.platform_headers)
    jti = response.json()["data"]["jti"]
    IssuedToken.objects.filter(jti=jti).update(expires_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))

    # when
    listed = api.get(_tokens(acme, "tokens"), **acme.platform_headers).json()

    # then
    assert listed["items"] == []
    assert listed["pagination"]["total"] == 0


def test_unauthenticated_is_401(api, acme):
    assert api.get(_tokens(acme, "tokens")).status_code == 401
    assert api.post_json(_tokens(acme, "tokens"), {"security_context": {}}).status_code == 401


@pytest.mark.parametrize(("route", "data_allowed"), [("tokens", True), ("tokens-for-meta-sync", False)])
def test_a_meta_sync_token_reads_the_metadata_only(api, modelled, route, data_allowed):
    issued = api.post_json(_tokens(modelled, route), {"security_context": {"sub": "sync"}}, **modelled.platform_headers)
    token = issued.json()["data"]["token"]
    core = f"/d/{modelled.deployment.pk}/cubejs-api/v1"
    query = '{"measures": ["orders.count"]}'

    meta = api.get(f"{core}/meta", HTTP_AUTHORIZATION=token)
    sql = api.get(f"{core}/sql", {"query": query}, HTTP_AUTHORIZATION=token)
    load = api.get(f"{core}/load", {"query": query}, HTTP_AUTHORIZATION=token)

    assert meta.status_code == 200, meta.content
    assert "orders" in [cube["name"] for cube in meta.json()["cubes"]]
    if data_allowed:
        assert sql.status_code == 200, sql.content
    else:
        assert (sql.status_code, sql.json()) == (403, {"error": "API scope is missing: data"})
        assert (load.status_code, load.json()) == (403, {"error": "API scope is missing: data"})


def test_a_restriction_that_cannot_be_read_restricts_to_nothing(api, modelled):
    secret = deployment_signing_secret(deployment=modelled.deployment)
    token = sign_token(secret, ttl_s=60, sub="x", **{API_SCOPES_CLAIM: "meta"})

    meta = api.get(f"/d/{modelled.deployment.pk}/cubejs-api/v1/meta", HTTP_AUTHORIZATION=token)

    assert (meta.status_code, meta.json()) == (403, {"error": "API scope is missing: meta"})
