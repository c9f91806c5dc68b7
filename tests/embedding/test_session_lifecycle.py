"""The session lifecycle (issue 2, spec 4.2 and section 1 of the reference notes): a sessionId is
exchanged once, within 5 minutes, for a 24-hour embed token; revoke refuses the session and its token."""

from __future__ import annotations

import datetime as dt

import jwt
import pytest
from django.utils import timezone

from embedadmin.accounts import services as accounts
from embedadmin.embedding.models import EmbedSession
from embedadmin.embedding.tokens import embed_token_seal
from tests.embedding.support import CONTEXT_URL, REVOKE_URL, bearer, decode_embed_token
from tests.tokens import sign_token

SESSION_REFUSED = {"error": "Session is invalid, expired or already used"}
DAY = 24 * 3600


@pytest.fixture
def revoke(api):
    """``revoke(cast, session_id, headers=None)``: POST session/revoke with the cast's admin key."""

    def call(cast, session_id: str, *, headers: dict[str, str] | None = None):
        return api.post_json(
            REVOKE_URL, {"sessionId": session_id}, **(cast.api_key_headers if headers is None else headers)
        )

    return call


# --- exchange -------------------------------------------------------------------------------------------


def test_exchange_returns_a_24_hour_hs256_token_for_the_deployment(
    new_session, exchange, tenant_group, tenant_attribute, acme
):
    # given
    tenant_group(acme, "hq")
    tenant_attribute(acme, "plan", "string")
    session_id = new_session(
        acme,
        externalId="Alice",
        email="alice@acme.test",
        userProfile={"displayName": "Alice", "picture": "https://cdn.acme.test/alice.png"},
        embedTenantName="tenant-a",
        groups=["hq"],
        userAttributes=[{"name": "plan", "value": "gold"}],
        securityContext={"tenant_id": 7, "region": "eu"},
        settings={"showDashboardChat": False},
    )
    session = EmbedSession.objects.get(account=acme.account)

    # when
    started = int(timezone.now().timestamp())
    response = exchange(session_id)
    finished = int(timezone.now().timestamp()) + 1

    # then
    assert response.status_code == 200
    body = response.json()
    assert sorted(body) == ["expiresAt", "renewAt", "token"]
    # A page that swaps this token in place announces it expiring an hour before it does (the default lead).
    renew = dt.datetime.fromisoformat(body["renewAt"])
    assert dt.datetime.fromisoformat(body["expiresAt"]) - renew == dt.timedelta(hours=1)
    assert jwt.get_unverified_header(body["token"])["alg"] == "HS256"
    claims = decode_embed_token(body["token"], secret=acme.created.deployment_api_secret)
    assert started + DAY <= claims["exp"] <= finished + DAY
    assert started <= claims["iat"] <= finished
    assert body["expiresAt"].endswith("Z")
    assert int(dt.datetime.fromisoformat(body["expiresAt"]).timestamp()) == claims["exp"]
    assert {k: v for k, v in claims.items() if k not in ("exp", "iat")} == {
        "tenant_id": 7,
        "region": "eu",
        "iss": "embedadmin",
        "sub": "alice",
        "jti": str(session.public_id),
        "groups": ["hq"],
        "userAttributes": {"plan": "gold"},
        "embed": {
            "accountName": "acme",
            "deploymentId": acme.deployment.pk,
            "embedTenant": "tenant-a",
            "creatorMode": False,
            "settings": {
                "showDashboardChat": False,
                "allowAi": True,
                "allowExport": False,
                "locale": "en-US",
                "timezone": "UTC",
                "embedTheme": {},
            },
            "externalId": "alice",
            "email": "alice@acme.test",
            "userProfile": {"displayName": "Alice", "picture": "https://cdn.acme.test/alice.png"},
            # The install's mark over every claim and the expiry (embedding.tokens.embed_token_seal): a host
            # holding the deployment secret can neither make it nor change a claim under it.
            "seal": embed_token_seal(payload=claims),
        },
    }


def test_a_creator_mode_token_says_so(embed_claims, acme):
    # when
    claims = embed_claims(acme, externalId="alice", creatorMode=True, embedTenantName="tenant-a")

    # then
    assert claims["embed"]["creatorMode"] is True
    assert claims["embed"]["embedTenant"] == "tenant-a"


def test_a_token_is_signed_for_the_sessions_deployment(new_session, exchange, acme):
    # given
    other, other_secret = accounts.deployment_create(account=acme.account, name="other", slug="other")
    session_id = new_session(acme, deploymentId=other.pk, externalId="alice")

    # when
    token = exchange(session_id).json()["token"]

    # then
    assert decode_embed_token(token, secret=other_secret)["embed"]["deploymentId"] == other.pk
    with pytest.raises(jwt.InvalidSignatureError):
        decode_embed_token(token, secret=acme.created.deployment_api_secret)


def test_a_session_is_single_use(new_session, exchange, acme):
    # given
    session_id = new_session(acme, externalId="alice")
    assert exchange(session_id).status_code == 200

    # when
    response = exchange(session_id)

    # then
    assert response.status_code == 401
    assert response.json() == SESSION_REFUSED
    assert EmbedSession.objects.get(account=acme.account).exchanged_at is not None


@pytest.mark.parametrize(("age_seconds", "status"), [(0, 200), (299, 200), (300, 401), (301, 401), (3600, 401)])
def test_a_session_is_valid_for_five_minutes(new_session, exchange, monkeypatch, acme, age_seconds, status):
    # given
    session_id = new_session(acme, externalId="alice")
    minted_at = timezone.now()

    # when: the clock has moved on
    monkeypatch.setattr(timezone, "now", lambda: minted_at + dt.timedelta(seconds=age_seconds))
    response = exchange(session_id)

    # then
    assert response.status_code == status
    if status == 401:
        assert response.json() == SESSION_REFUSED
        assert EmbedSession.objects.get(account=acme.account).exchanged_at is None


def test_a_session_expired_in_the_database_is_refused(new_session, exchange, acme):
    # given
    session_id = new_session(acme, externalId="alice")
    EmbedSession.objects.filter(account=acme.account).update(expires_at=timezone.now() - dt.timedelta(seconds=1))

    # when
    response = exchange(session_id)

    # then
    assert response.status_code == 401
    assert response.json() == SESSION_REFUSED


@pytest.mark.parametrize("session_id", ["nope", "x" * 43, "x" * 200])
def test_an_unknown_session_is_401(exchange, acme, session_id):
    # when
    response = exchange(session_id)

    # then
    assert response.status_code == 401
    assert response.json() == SESSION_REFUSED


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "sessionId: This field is required."),
        ({"sessionId": ""}, "sessionId: This field may not be blank."),
        ({"sessionId": 5}, "sessionId: Not a valid string."),
        ({"sessionId": "x" * 201}, "sessionId: Ensure this field has no more than 200 characters."),
    ],
)
def test_a_malformed_exchange_is_400(api, body, message):
    # when
    response = api.post_json("/api/v1/embed/session/token", body)

    # then
    assert response.status_code == 400
    assert response.json() == {"error": message}


# --- revoke ---------------------------------------------------------------------------------------------


def test_a_session_revoked_before_its_exchange_cannot_be_exchanged(new_session, exchange, revoke, acme):
    # given
    session_id = new_session(acme, externalId="alice")

    # when
    revoked = revoke(acme, session_id)

    # then
    assert revoked.status_code == 204
    assert revoked.content == b""
    response = exchange(session_id)
    assert response.status_code == 401
    assert response.json() == SESSION_REFUSED


def test_a_revoked_sessions_token_is_refused(api, new_session, exchange, revoke, acme):
    # given
    session_id = new_session(acme, externalId="alice")
    token = exchange(session_id).json()["token"]
    before = api.get(CONTEXT_URL, **bearer(token))
    assert before.status_code == 200
    assert before.json()["sub"] == "alice"

    # when
    revoked = revoke(acme, session_id)

    # then
    assert revoked.status_code == 204
    after = api.get(CONTEXT_URL, **bearer(token))
    assert after.status_code == 401
    assert after.json() == {"error": "Token has been revoked"}


def test_revoke_is_idempotent(api, new_session, exchange, revoke, acme):
    # given
    session_id = new_session(acme, externalId="alice")
    token = exchange(session_id).json()["token"]

    # when
    responses = [revoke(acme, session_id) for _ in range(3)]

    # then
    assert [r.status_code for r in responses] == [204, 204, 204]
    assert api.get(CONTEXT_URL, **bearer(token)).status_code == 401


def test_revoking_an_unknown_session_is_204(revoke, acme):
    # when
    response = revoke(acme, "never-minted")

    # then
    assert response.status_code == 204
    assert response.content == b""


def test_revoking_another_accounts_session_is_204_and_changes_nothing(api, new_session, exchange, revoke, acme, globex):
    # given
    unexchanged = new_session(globex, externalId="alice")
    exchanged = new_session(globex, externalId="bob")
    token = exchange(exchanged).json()["token"]

    # when
    responses = [revoke(acme, unexchanged), revoke(acme, exchanged)]

    # then
    assert [r.status_code for r in responses] == [204, 204]
    assert list(EmbedSession.objects.filter(account=globex.account).values_list("revoked_at", flat=True)) == [
        None,
        None,
    ]
    assert exchange(unexchanged).status_code == 200
    assert api.get(CONTEXT_URL, **bearer(token)).status_code == 200


def test_a_key_scoped_to_other_deployments_cannot_revoke(new_session, exchange, revoke, acme):
    # given
    other, _ = accounts.deployment_create(account=acme.account, name="other", slug="other")
    scoped_key, _ = accounts.api_key_create(account=acme.account, deployment_ids=[other.pk])
    session_id = new_session(acme, externalId="alice")

    # when
    response = revoke(acme, session_id, headers={"HTTP_AUTHORIZATION": f"Api-Key {scoped_key}"})

    # then
    assert response.status_code == 204
    assert exchange(session_id).status_code == 200


def test_a_personal_key_cannot_revoke(new_session, exchange, revoke, acme):
    # given
    owner = accounts.internal_user_create(account=acme.account, username="acme-analyst", email="")
    personal_key, _ = accounts.api_key_create(account=acme.account, personal_owner=owner)
    session_id = new_session(acme, externalId="alice")

    # when
    response = revoke(acme, session_id, headers={"HTTP_AUTHORIZATION": f"Api-Key {personal_key}"})

    # then
    assert response.status_code == 403
    assert response.json() == {"error": "This endpoint requires an admin API key; personal API keys are not allowed"}
    assert exchange(session_id).status_code == 200


def test_revoke_without_a_key_is_401(new_session, exchange, revoke, acme):
    # given
    session_id = new_session(acme, externalId="alice")

    # when
    response = revoke(acme, session_id, headers={})

    # then
    assert response.status_code == 401
    assert response.json() == {"error": "Missing Authorization header: expected 'Api-Key <key>'"}
    assert exchange(session_id).status_code == 200


# --- the session context endpoint -----------------------------------------------------------------------


def test_the_context_of_a_good_token_is_its_payload(api, new_session, exchange, acme):
    # given
    token = exchange(new_session(acme, externalId="alice")).json()["token"]

    # when
    response = api.get(CONTEXT_URL, **bearer(token))

    # then
    assert response.status_code == 200
    assert response.json() == decode_embed_token(token, secret=acme.created.deployment_api_secret)


def _forged(acme, **changes) -> str:
    """A token with an embed claim, signed with something other than the deployment secret."""
    claims = {"sub": "alice", "jti": "x", "embed": {"deploymentId": acme.deployment.pk}, **changes}
    return sign_token("not-the-secret-" + "x" * 32, ttl_s=60, **claims)


@pytest.mark.parametrize(
    ("authorization", "message"),
    [
        (None, "Authorization header must be 'Bearer <embed token>'"),
        ("Api-Key abc", "Authorization header must be 'Bearer <embed token>'"),
        ("Bearer not-a-jwt", "Not an embed token"),
        ("Bearer {forged}", "Invalid token signature"),
    ],
)
def test_a_bad_token_has_no_context(api, acme, authorization, message):
    # given
    headers = {} if authorization is None else {"HTTP_AUTHORIZATION": authorization.format(forged=_forged(acme))}

    # when
    response = api.get(CONTEXT_URL, **headers)

    # then
    assert response.status_code == 401
    assert response.json() == {"error": message}


def test_a_deployment_token_not_exchanged_for_a_session_has_no_context(api, acme):
    # given: validly signed for the deployment, but not an embed session's token
    token = sign_token(
        acme.created.deployment_api_secret,
        ttl_s=60,
        sub="alice",
        jti="made-up",
        embed={"deploymentId": acme.deployment.pk},
    )

    # when
    response = api.get(CONTEXT_URL, **bearer(token))

    # then
    assert response.status_code == 401
    assert response.json() == {"error": "Not an embed token"}
