"""Core Data API token verification: deployment secrets, a real JWKS server, real embed tokens."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from django.utils import timezone
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from embedadmin.accounts.models import Deployment, RevokedToken
from embedadmin.accounts.tokens import TokenInvalid
from embedadmin.semantic.serving import auth
from embedadmin.semantic.serving.auth import (
    FETCH_FAILED,
    JwksClient,
    SecurityContext,
    authorization_token,
    core_token_verify,
)
from embedadmin.semantic.serving.routing import query_context
from tests.tokens import sign_token

AUDIENCE = "https://analytics.example.com"
ISSUER = "https://idp.example.com/"


@dataclass
class JwksServer:
    """A JWKS host on 127.0.0.1: serves ``keys`` at ``url``, counts requests, can stall (``stalled``: it answers
    only once the test is over) or fail (``status``)."""

    url: str
    keys: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 0
    stalled: bool = False
    status: int = 200
    released: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def jwks_server() -> Iterator[JwksServer]:
    state = JwksServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests += 1
            if state.stalled:
                state.released.wait(30)
            body = json.dumps({"keys": state.keys}).encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    state.released.set()
    server.shutdown()
    server.server_close()


@dataclass(frozen=True)
class SigningKey:
    kid: str
    algorithm: str
    private: Any

    @property
    def jwk(self) -> dict[str, Any]:
        to_jwk = RSAAlgorithm.to_jwk if self.algorithm == "RS256" else ECAlgorithm.to_jwk
        return {**to_jwk(self.private.public_key(), as_dict=True), "kid": self.kid, "use": "sig"}

    @property
    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def sign(self, claims: dict[str, Any], **header: Any) -> str:
        """``claims`` signed with this key, its ``kid`` in the header unless ``header`` names another."""
        return sign_token(self.private, algorithm=self.algorithm, headers={"kid": self.kid, **header}, **claims)


@pytest.fixture(scope="module")
def rsa_key() -> SigningKey:
    return SigningKey("rsa-1", "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


@pytest.fixture(scope="module")
def rsa_key_2() -> SigningKey:
    return SigningKey("rsa-2", "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


@pytest.fixture(scope="module")
def ec_key() -> SigningKey:
    return SigningKey("ec-1", "ES256", ec.generate_private_key(ec.SECP256R1()))


@pytest.fixture
def deployment(acme, jwks_server, rsa_key, ec_key) -> Deployment:
    """acme's deployment, trusting the local JWKS host for its audience and issuer."""
    jwks_server.keys = [rsa_key.jwk, ec_key.jwk]
    Deployment.objects.filter(pk=acme.deployment.pk).update(
        jwks_url=jwks_server.url, jwt_audience=AUDIENCE, jwt_issuer=ISSUER
    )
    return Deployment.objects.get(pk=acme.deployment.pk)


@pytest.fixture
def jwks() -> JwksClient:
    return JwksClient(ttl_s=300, refetch_interval_s=0, timeout_s=1)


class Clock:
    """The monotonic clock of ``semantic.serving.auth`` (the JWKS key cache's), moved by the test."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(auth, "time", clock)
    return clock


def claims(**extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"sub": "u-1", "aud": AUDIENCE, "iss": ISSUER, "iat": now, "exp": now + 600, **extra}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def by_hand(payload: dict[str, Any], *, secret: bytes | None, **header: Any) -> str:
    """A token put together by hand, as an attacker would: any header, HMAC-SHA256 over it with any
    bytes as the secret (PyJWT refuses a PEM key as an HMAC secret), or no signature at all."""
    signing_input = f"{b64(json.dumps({'alg': 'HS256', **header}).encode())}.{b64(json.dumps(payload).encode())}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest() if secret is not None else b""
    return f"{signing_input}.{b64(signature)}"


def rejection(deployment: Deployment, token: str, jwks: JwksClient) -> str:
    with pytest.raises(TokenInvalid) as caught:
        core_token_verify(deployment=deployment, token=token, jwks=jwks)
    return str(caught.value)


# --- extracting the token ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "cube_authorization", "expected"),
    [
        ("eyJ.raw.token", None, "eyJ.raw.token"),
        ("Bearer eyJ.b.t", None, "eyJ.b.t"),
        ("bearer   eyJ.b.t  ", None, "eyJ.b.t"),
        ("Bearer eyJ.ignored", "eyJ.cube.wins", "eyJ.cube.wins"),
        (None, "Bearer eyJ.cube", "eyJ.cube"),
    ],
)
def test_the_token_is_raw_or_after_a_scheme_and_x_cube_authorization_wins(authorization, cube_authorization, expected):
    assert authorization_token(authorization=authorization, cube_authorization=cube_authorization) == expected


@pytest.mark.parametrize("authorization", [None, "", "   "])
def test_a_missing_token_is_refused_with_cubes_message(authorization):
    with pytest.raises(TokenInvalid) as caught:
        authorization_token(authorization=authorization)

    assert str(caught.value) == "Authorization header isn't set"


# --- JWKS: RS256 and ES256 ---------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("key_name", ["rsa_key", "ec_key"])
def test_jwks_tokens_verify_into_a_security_context(request, deployment, jwks, key_name):
    key: SigningKey = request.getfixturevalue(key_name)
    token = key.sign(claims(groups=["regional", "sales"], userAttributes={"country": "Germany"}, tenant_id=42))

    context = core_token_verify(deployment=deployment, token=token, jwks=jwks)

    assert context.groups == ("regional", "sales")
    assert context.user_attributes == {"country": "Germany"}
    assert context.payload["tenant_id"] == 42
    assert context.payload["sub"] == "u-1"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"exp": int(time.time()) - 60}, "Token has expired"),
        ({"nbf": int(time.time()) + 600}, "Token is not yet valid"),
        ({"aud": "https://elsewhere.example.com"}, "Invalid token: Audience doesn't match"),
        ({"iss": "https://evil.example.com/"}, "Invalid token: Invalid issuer"),
        ({"exp": None}, 'Invalid token: Token is missing the "exp" claim'),
    ],
)
def test_jwks_token_claims_are_enforced(deployment, jwks, rsa_key, changes, message):
    assert rejection(deployment, rsa_key.sign(claims(**changes)), jwks) == message


@pytest.mark.django_db
def test_a_tampered_payload_fails_the_signature(deployment, jwks, rsa_key):
    header, _, signature = rsa_key.sign(claims(groups=["viewer"])).split(".")
    forged_payload = b64(json.dumps(claims(groups=["admin"])).encode())

    assert rejection(deployment, f"{header}.{forged_payload}.{signature}", jwks) == "Invalid token signature"


@pytest.mark.django_db
def test_alg_none_is_refused(deployment, jwks, rsa_key):
    unsigned = by_hand(claims(groups=["admin"]), secret=None, alg="none", kid=rsa_key.kid)

    assert rejection(deployment, unsigned, jwks) == "Token algorithm 'none' is not accepted"


@pytest.mark.django_db
def test_algorithm_confusion_hs256_signed_with_the_public_key_is_refused(deployment, jwks, rsa_key):
    confused = by_hand(claims(groups=["admin"]), secret=rsa_key.public_pem, kid=rsa_key.kid)

    assert rejection(deployment, confused, jwks) == "Invalid token signature"


@pytest.mark.django_db
def test_a_token_must_use_the_algorithm_of_its_key(deployment, jwks, rsa_key, ec_key):
    # An ES256 token that names the RSA key's kid.
    mislabelled = ec_key.sign(claims(), kid=rsa_key.kid)

    assert rejection(deployment, mislabelled, jwks) == "Token algorithm 'ES256' does not match its key 'rsa-1'"


@pytest.mark.django_db
def test_symmetric_keys_in_the_key_set_are_never_used(deployment, jwks, jwks_server):
    secret = b"shared-secret-published-by-mistake"
    jwks_server.keys.append({"kty": "oct", "kid": "oct-1", "k": b64(secret)})

    as_hs256 = by_hand(claims(), secret=secret, kid="oct-1")
    as_rs256 = by_hand(claims(), secret=secret, alg="RS256", kid="oct-1")

    assert rejection(deployment, as_hs256, jwks) == "Invalid token signature"
    assert rejection(deployment, as_rs256, jwks) == 'Unable to verify, JWK with kid: "oct-1" not found'


@pytest.mark.django_db
@pytest.mark.parametrize("algorithm", ["HS512", "PS256", "RS512"])
def test_other_algorithms_are_refused(deployment, jwks, rsa_key, algorithm):
    key = "x" * 64 if algorithm == "HS512" else rsa_key.private
    token = sign_token(key, algorithm=algorithm, headers={"kid": rsa_key.kid}, **claims())

    assert rejection(deployment, token, jwks) == f"Token algorithm '{algorithm}' is not accepted"


@pytest.mark.django_db
def test_jwks_tokens_need_a_kid_and_a_configured_jwks(deployment, jwks, rsa_key):
    without_kid = sign_token(rsa_key.private, algorithm="RS256", **claims())
    assert rejection(deployment, without_kid, jwks) == "JWT without kid inside headers"

    Deployment.objects.filter(pk=deployment.pk).update(jwks_url="")
    deployment.refresh_from_db()

    assert rejection(deployment, rsa_key.sign(claims()), jwks) == "Token algorithm 'RS256' is not accepted"


@pytest.mark.django_db
def test_a_revoked_jti_is_refused(deployment, jwks, rsa_key):
    RevokedToken.objects.create(jti="jti-7", deployment=deployment, expires_at=timezone.now())

    assert rejection(deployment, rsa_key.sign(claims(jti="jti-7")), jwks) == "Token has been revoked"
    assert core_token_verify(deployment=deployment, token=rsa_key.sign(claims(jti="jti-8")), jwks=jwks)


@pytest.mark.parametrize("garbage", ["not-a-jwt", "a.b.c", "eyJhbGciOiJIUzI1NiJ9"])
@pytest.mark.django_db
def test_garbage_is_an_invalid_token(deployment, jwks, garbage):
    assert rejection(deployment, garbage, jwks) == "Invalid token"


# --- the key cache ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_keys_are_cached_and_an_unknown_kid_refetches_after_rotation(deployment, jwks, jwks_server, rsa_key, rsa_key_2):
    core_token_verify(deployment=deployment, token=rsa_key.sign(claims()), jwks=jwks)
    core_token_verify(deployment=deployment, token=rsa_key.sign(claims()), jwks=jwks)
    assert jwks_server.requests == 1

    jwks_server.keys = [rsa_key_2.jwk]  # the identity provider rotates
    context = core_token_verify(deployment=deployment, token=rsa_key_2.sign(claims(sub="after")), jwks=jwks)
    core_token_verify(deployment=deployment, token=rsa_key_2.sign(claims()), jwks=jwks)

    assert context.payload["sub"] == "after"
    assert jwks_server.requests == 2


@pytest.mark.django_db
def test_unknown_kids_refetch_at_most_once_per_interval(deployment, jwks_server, rsa_key):
    jwks = JwksClient(ttl_s=300, refetch_interval_s=60, timeout_s=1)
    core_token_verify(deployment=deployment, token=rsa_key.sign(claims()), jwks=jwks)

    for kid in ("made-up-1", "made-up-2", "made-up-3"):
        token = rsa_key.sign(claims(), kid=kid)
        assert rejection(deployment, token, jwks) == f'Unable to verify, JWK with kid: "{kid}" not found'

    assert jwks_server.requests == 1


@pytest.mark.django_db
def test_keys_expire_after_their_ttl(deployment, jwks_server, rsa_key, clock):
    jwks = JwksClient(ttl_s=300, refetch_interval_s=0, timeout_s=1)
    core_token_verify(deployment=deployment, token=rsa_key.sign(claims()), jwks=jwks)

    clock.advance(301)
    core_token_verify(deployment=deployment, token=rsa_key.sign(claims()), jwks=jwks)

    assert jwks_server.requests == 2


@pytest.mark.django_db
def test_a_slow_jwks_host_fails_within_the_timeout(deployment, jwks_server, rsa_key):
    jwks = JwksClient(ttl_s=300, refetch_interval_s=0, timeout_s=0.3)
    jwks_server.stalled = True

    started = time.monotonic()
    message = rejection(deployment, rsa_key.sign(claims()), jwks)

    assert message == FETCH_FAILED
    assert time.monotonic() - started < 1.5


@pytest.mark.django_db
def test_keys_fetched_before_keep_verifying_while_the_jwks_host_fails(deployment, jwks_server, rsa_key, clock):
    jwks = JwksClient(ttl_s=300, refetch_interval_s=0, timeout_s=1)
    core_token_verify(deployment=deployment, token=rsa_key.sign(claims()), jwks=jwks)
    jwks_server.status = 503

    clock.advance(301)
    context = core_token_verify(deployment=deployment, token=rsa_key.sign(claims(sub="stale-ok")), jwks=jwks)
    unknown = rsa_key.sign(claims(), kid="new")

    assert context.payload["sub"] == "stale-ok"
    assert rejection(deployment, unknown, jwks) == FETCH_FAILED
    assert jwks_server.requests == 3


@pytest.mark.django_db
def test_a_failing_jwks_host_is_not_asked_on_every_request(deployment, jwks_server, rsa_key):
    jwks = JwksClient(ttl_s=300, refetch_interval_s=60, timeout_s=1)
    jwks_server.status = 500

    for _ in range(3):
        assert rejection(deployment, rsa_key.sign(claims()), jwks) == FETCH_FAILED

    assert jwks_server.requests == 1


# --- HS256 with the deployment's secrets -------------------------------------------------------------


@pytest.mark.django_db
def test_hs256_tokens_verify_with_the_deployment_secret(acme, jwks):
    now = int(time.time())
    token = sign_token(acme.created.deployment_api_secret, iat=now, exp=now + 60, groups=["admin"], tenant="t-1")

    context = core_token_verify(deployment=acme.deployment, token=token, jwks=jwks)

    assert context == SecurityContext(
        payload={"iat": now, "exp": now + 60, "groups": ["admin"], "tenant": "t-1"}, groups=("admin",)
    )


@pytest.mark.django_db
def test_hs256_with_another_secret_is_refused(acme, jwks):
    token = sign_token("not-the-deployment-secret" * 2, ttl_s=60)

    assert rejection(acme.deployment, token, jwks) == "Invalid token signature"


# --- embed tokens from the real embedding flow -------------------------------------------------------


@pytest.mark.django_db
def test_embed_tokens_carry_groups_and_user_attributes(api, acme, jwks):
    minted = api.post_json(
        "/api/v1/embed/generate-session",
        {
            "deploymentId": acme.deployment.pk,
            "externalId": "viewer-1",
            "embedTenantName": "north-region",
            "creatorMode": True,
            "groupDefinitions": [{"name": "regional"}, {"name": "sales"}],
            "userAttributeDefinitions": [{"name": "country", "type": "string"}],
            "groups": ["regional", "sales"],
            "userAttributes": [{"name": "country", "value": "Germany"}],
            "securityContext": {"tenant_id": 42},
        },
        **acme.api_key_headers,
    )
    assert minted.status_code == 200, minted.content
    exchanged = api.post_json("/api/v1/embed/session/token", {"sessionId": minted.json()["sessionId"]})
    assert exchanged.status_code == 200, exchanged.content
    token = exchanged.json()["token"]

    context = core_token_verify(deployment=acme.deployment, token=token, jwks=jwks)

    assert context.groups == ("regional", "sales")
    assert context.user_attributes == {"country": "Germany"}
    assert context.payload["tenant_id"] == 42
    assert context.payload["sub"] == "viewer-1"
    assert context.payload["embed"]["deploymentId"] == acme.deployment.pk


@pytest.mark.django_db
def test_a_revoked_embed_session_token_is_refused(api, acme, jwks):
    minted = api.post_json(
        "/api/v1/embed/generate-session",
        {"deploymentId": acme.deployment.pk, "externalId": "viewer-2"},
        **acme.api_key_headers,
    )
    session_id = minted.json()["sessionId"]
    token = api.post_json("/api/v1/embed/session/token", {"sessionId": session_id}).json()["token"]
    assert core_token_verify(deployment=acme.deployment, token=token, jwks=jwks).groups == ()

    revoked = api.post_json("/api/v1/embed/session/revoke", {"sessionId": session_id}, **acme.api_key_headers)

    assert revoked.status_code == 204
    assert rejection(acme.deployment, token, jwks) == "Token has been revoked"


# --- the security context ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "groups", "attributes"),
    [
        ({"groups": ["a", "b"], "userAttributes": {"x": 1}}, ("a", "b"), {"x": 1}),
        ({"groups": "admin", "userAttributes": ["x"]}, (), {}),
        ({"groups": ["admin", 1]}, (), {}),
        ({}, (), {}),
    ],
)
def test_groups_and_attributes_are_taken_only_in_the_expected_shape(payload, groups, attributes):
    context = SecurityContext.from_payload(payload)

    assert (context.groups, context.user_attributes, context.payload) == (groups, attributes, payload)


def _context(payload: dict[str, Any], *, open_to_embed: bool = False):
    return query_context(
        SecurityContext.from_payload(payload), deployment=Deployment(open_to_embed_without_policy=open_to_embed)
    )


def test_cache_identity_ignores_token_bookkeeping_but_not_what_the_viewer_may_see():
    base = _context({"sub": "u", "groups": ["a"], "iat": 1, "exp": 2, "jti": "x"})
    same_viewer = _context({"jti": "y", "exp": 9, "groups": ["a"], "sub": "u", "nbf": 3})
    other_groups = _context({"sub": "u", "groups": ["b"], "iat": 1, "exp": 2, "jti": "x"})

    assert base.identity == same_viewer.identity
    assert base.identity != other_groups.identity
    assert len(base.identity) == 64


def test_a_token_with_the_embed_claim_reads_only_what_is_granted_unless_the_deployment_opens_it():
    customer = _context({"sub": "u", "groups": ["a"]})
    viewer = _context({"sub": "u", "groups": ["a"], "embed": {"deploymentId": 1}})
    opened = _context({"sub": "u", "groups": ["a"], "embed": {"deploymentId": 1}}, open_to_embed=True)
    unsealed = _context({"sub": "u", "embed": "anything"})  # the claim's mere presence narrows, never widens

    assert (customer.only_granted, viewer.only_granted, opened.only_granted, unsealed.only_granted) == (
        False,
        True,
        False,
        True,
    )
    assert viewer.identity != opened.identity  # a cached answer for one is never served to the other
