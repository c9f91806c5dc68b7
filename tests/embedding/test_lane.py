"""The generate-session lane (``embedadmin/embedding/lane.py``, ADR 0010): the common request answered on
the event loop, everything else handed to Django with its body as read.

- Through two real servers of the shipped entry point, one with the lane and one without, every kind
  of request gets the same status, body and headers.
- In process, with a downstream application that records what reaches it: which requests the lane
  answers itself and which it hands on (untouched, and with nothing written).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from embedadmin.accounts import services as accounts
from embedadmin.core.lanes import LanePool, connection_params
from embedadmin.embedding.lane import MAX_BODY_BYTES, GenerateSessionLane
from embedadmin.embedding.models import EmbedSession
from tests.asgi_driver import drive, http_scope
from tests.asgi_server import uvicorn_server
from tests.conftest import Cast
from tests.embedding.support import GENERATE_URL, TOKEN_URL, directory_counts

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

# Headers that differ between any two answers.
_VOLATILE = {"date", "server", "content-length"}


def _catalog(cast: Cast, client: httpx.Client) -> None:
    platform = {"Authorization": f"Bearer {cast.created.platform_token}"}
    for body in ({"name": "country", "type": "string"}, {"name": "level", "type": "number", "defaultValue": "3"}):
        assert client.post("/api/v1/user-attributes", json=body, headers=platform).status_code == 201
    for name in ("sales", "emea"):
        assert client.post("/api/scim/v2/Groups", json={"displayName": name}, headers=platform).status_code == 201


def _cases(cast: Cast, other: Cast, keys: dict[str, str]) -> list[tuple[str, dict[str, str], bytes]]:
    """(name, headers, body) of every kind of request the lane must answer as Django does."""
    admin = {"Authorization": f"Api-Key {cast.created.api_key}", "Content-Type": "application/json"}
    deployment = cast.deployment.pk

    def body(**fields: Any) -> bytes:
        return json.dumps({"deploymentId": deployment, **fields}).encode()

    common = {
        "externalId": "Viewer@Example.com",
        "userAttributes": [{"name": "country", "value": "FR"}],
        "groups": ["sales"],
        "securityContext": {"tenantId": 3},
    }
    return [
        ("common", admin, body(**common)),
        ("again, fewer groups", admin, body(externalId="viewer@example.com", groups=[])),
        ("profile, tenant", admin, body(externalId="x", userProfile={"displayName": "X"}, embedTenantName="cust-one")),
        ("charset", {**admin, "Content-Type": "application/json; charset=utf-8"}, body(externalId="y")),
        ("latin-1", {**admin, "Content-Type": "application/json; charset=latin-1"}, body(externalId="y")),
        ("utf-16", {**admin, "Content-Type": "application/json; charset=utf-16"}, body(externalId="y")),
        ("utf-16 body", admin, json.dumps({"deploymentId": deployment, "externalId": "z"}).encode("utf-16")),
        ("BOM", admin, b"\xef\xbb\xbf" + body(externalId="z")),
        ("no content type", {"Authorization": admin["Authorization"]}, body(externalId="y")),
        ("text content type", {**admin, "Content-Type": "text/plain"}, body(externalId="y")),
        ("no key", {"Content-Type": "application/json"}, body(externalId="y")),
        ("bearer", {**admin, "Authorization": "Bearer abc"}, body(externalId="y")),
        ("unknown key", {**admin, "Authorization": "Api-Key ek_000000000000_nope"}, body(externalId="y")),
        ("wrong secret", {**admin, "Authorization": admin["Authorization"][:-4] + "AAAA"}, body(externalId="y")),
        ("revoked key", {**admin, "Authorization": f"Api-Key {keys['revoked']}"}, body(externalId="y")),
        ("personal key", {**admin, "Authorization": f"Api-Key {keys['personal']}"}, body(externalId="y")),
        ("scoped key", {**admin, "Authorization": f"Api-Key {keys['scoped']}"}, body(externalId="y")),
        ("other scoped key", {**admin, "Authorization": f"Api-Key {keys['scoped_elsewhere']}"}, body(externalId="y")),
        ("malformed json", admin, b'{"deploymentId": '),
        ("NaN", admin, b'{"deploymentId": %d, "externalId": "n", "securityContext": {"x": NaN}}' % deployment),
        ("not an object", admin, b"[1]"),
        ("unknown field", admin, body(externalId="y", nope=1)),
        ("untrimmed id", admin, body(externalId="  Padded@Example.com ")),
        ("unknown group", admin, body(externalId="y", groups=["sales", "nope"])),
        ("unknown attribute", admin, body(externalId="y", userAttributes=[{"name": "nope", "value": 1}])),
        ("wrong type", admin, body(externalId="y", userAttributes=[{"name": "level", "value": "high"}])),
        ("duplicate attribute", admin, body(externalId="y", userAttributes=[{"name": "level", "value": 1}] * 2)),
        ("unknown deployment", admin, json.dumps({"deploymentId": 999_999, "externalId": "y"}).encode()),
        (
            "another account's deployment",
            admin,
            json.dumps({"deploymentId": other.deployment.pk, "externalId": "y"}).encode(),
        ),
        ("reserved claim", admin, body(externalId="y", securityContext={"exp": 1})),
        ("internal user", admin, body(internalId=cast.created.admin_username)),
        ("creator mode", admin, body(externalId="y", creatorMode=True, embedTenantName="cust-two")),
        # An unpaired surrogate (written by json.dumps as the escape \ud800) in a value, a key, the context.
        ("surrogate value", admin, body(externalId="y", userAttributes=[{"name": "country", "value": "\ud800"}])),
        ("surrogate key", admin, body(externalId="y", securityContext={"\udc00": 1})),
        ("surrogate id", admin, body(externalId="y\ud800")),
        ("deployment beyond a bigint", admin, json.dumps({"deploymentId": 2**63, "externalId": "y"}).encode()),
    ]


def _answer(response: httpx.Response) -> tuple[int, Any, dict[str, str]]:
    payload = response.json()
    if "error" in payload:  # the two servers' accounts have deployments of different ids
        payload = {"error": re.sub(r"(?i)(deployments?:? )\d+", r"\1N", payload["error"])}
    if "sessionId" in payload:
        assert len(payload["sessionId"]) >= 43
        payload = {"sessionId": "<minted>"}
    headers = {name: value for name, value in response.headers.items() if name not in _VOLATILE}
    return response.status_code, payload, headers


def _keys(cast: Cast) -> dict[str, str]:
    """Keys of the account that the lane must leave to Django: revoked, personal, scoped."""
    revoked, row = accounts.api_key_create(account=cast.account, name="old")
    accounts.api_key_revoke(key=row)
    admin_user = get_user_model().objects.get(username=cast.created.admin_username)
    personal, _ = accounts.api_key_create(account=cast.account, name="mine", personal_owner=admin_user)
    scoped, _ = accounts.api_key_create(account=cast.account, name="scoped", deployment_ids=[cast.deployment.pk])
    second, _ = accounts.deployment_create(account=cast.account, name="second", slug="second")
    elsewhere, _ = accounts.api_key_create(account=cast.account, name="elsewhere", deployment_ids=[second.pk])
    return {"revoked": revoked, "personal": personal, "scoped": scoped, "scoped_elsewhere": elsewhere}


def test_with_and_without_the_lane_every_request_gets_the_same_answer(on_postgres, make_account):
    # given: two accounts with the same catalogs and keys, one served with the lane, one without
    answers: dict[str, list] = {}
    for lane, name in (("true", "withlane"), ("false", "nolane")):
        cast, other = make_account(name), make_account(f"{name}-other")
        cases = _cases(cast, other, _keys(cast))
        with uvicorn_server(GENERATE_SESSION_LANE=lane) as base, httpx.Client(base_url=base, timeout=10) as client:
            _catalog(cast, client)

            # when
            answers[lane] = [
                (case, _answer(client.post(GENERATE_URL, content=content, headers=headers)))
                for case, headers, content in cases
            ]
            # a minted session is exchangeable, whoever minted it
            _, headers, content = cases[0]
            minted = client.post(GENERATE_URL, content=content, headers=headers)
            exchanged = client.post(TOKEN_URL, json={"sessionId": minted.json()["sessionId"]})
            answers[lane].append(("exchange", exchanged.status_code))
        answers[lane].append(("rows", _rows(cast)))

    # then
    for with_lane, without in zip(answers["true"], answers["false"], strict=True):
        assert with_lane == without
    statuses = {answer[0] for _, answer in answers["true"][:-2]}
    assert statuses == {200, 400, 401, 403, 404, 415}
    refused = dict(answers["true"][:-2])
    for case in ("surrogate value", "surrogate key", "surrogate id", "deployment beyond a bigint"):
        assert refused[case][0] == 400, (case, refused[case])
    assert answers["true"][-2] == ("exchange", 200)


def _rows(cast: Cast) -> dict[str, Any]:
    counts = directory_counts(cast.account)
    claims = [s.claims for s in EmbedSession.objects.filter(account=cast.account).order_by("id")]
    # the internal user's name carries the account's
    return {"counts": counts, "claims": json.loads(json.dumps(claims).replace(cast.account.name, "ACCOUNT"))}


# --- in process: what the lane answers itself ------------------------------------------------------------


class _Downstream:
    """Stands in for Django: records what reaches it and answers 599."""

    def __init__(self) -> None:
        self.requests: list[bytes] = []

    async def __call__(self, scope, receive, send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests.append(body)
        await send({"type": "http.response.start", "status": 599, "headers": []})
        await send({"type": "http.response.body", "body": b"downstream", "more_body": False})


def _scope(headers: dict[str, str], path: str = GENERATE_URL, method: str = "POST") -> dict[str, Any]:
    return http_scope(method, path, headers)


async def _call(app, scope: dict[str, Any], chunks: list[bytes]) -> tuple[int, bytes]:
    status, _, body = await drive(app, scope, chunks)
    return status, body


def _lane_run(scenario) -> Any:
    downstream = _Downstream()
    lane = GenerateSessionLane(downstream, pool=LanePool(connection_params(connection.settings_dict)))

    async def run():
        try:
            return await scenario(lane, downstream)
        finally:
            await lane.pool.close()

    return asyncio.run(run())


def test_the_lane_answers_the_common_request_itself(on_postgres, acme, globex, tenant_group):
    tenant_group(acme, "sales")
    headers = {"Authorization": f"Api-Key {acme.created.api_key}", "Content-Type": "application/json"}
    body = json.dumps({"deploymentId": acme.deployment.pk, "externalId": "Ann", "groups": ["sales"]}).encode()

    async def scenario(lane, downstream):
        return await _call(lane, _scope(headers), [body]), downstream.requests

    (status, content), reached = _lane_run(scenario)

    assert status == 200
    assert reached == []
    session = EmbedSession.objects.get(account=acme.account)
    assert session.claims["sub"] == "ann"
    assert session.claims["groups"] == ["sales"]
    assert set(json.loads(content)) == {"sessionId"}


@pytest.mark.parametrize(
    ("case", "path", "method", "auth", "fields"),
    [
        ("another path", "/api/v1/embed/session/token", "POST", "admin", {"externalId": "a"}),
        ("another method", GENERATE_URL, "PUT", "admin", {"externalId": "a"}),
        ("no key", GENERATE_URL, "POST", None, {"externalId": "a"}),
        ("another account's deployment", GENERATE_URL, "POST", "admin", {"deployment": "globex", "externalId": "a"}),
        ("unknown group", GENERATE_URL, "POST", "admin", {"externalId": "a", "groups": ["nope"]}),
        ("internal user", GENERATE_URL, "POST", "admin", {"internalId": "acme-admin"}),
    ],
)
def test_what_the_lane_is_not_sure_of_reaches_django_untouched_and_unwritten(
    on_postgres, acme, globex, case, path, method, auth, fields
):
    deployment = globex.deployment.pk if fields.pop("deployment", None) == "globex" else acme.deployment.pk
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = f"Api-Key {acme.created.api_key}"
    body = json.dumps({"deploymentId": deployment, **fields}).encode()
    before = directory_counts(acme.account), directory_counts(globex.account)

    async def scenario(lane, downstream):
        return await _call(lane, _scope(headers, path, method), [body[:5], body[5:]]), downstream.requests

    (status, content), reached = _lane_run(scenario)

    assert (status, content) == (599, b"downstream")
    assert reached == [body]
    assert (directory_counts(acme.account), directory_counts(globex.account)) == before


def test_a_body_larger_than_the_lane_reads_reaches_django_whole(on_postgres, acme):
    headers = {"Authorization": f"Api-Key {acme.created.api_key}", "Content-Type": "application/json"}
    body = json.dumps(
        {"deploymentId": acme.deployment.pk, "externalId": "a", "pad": "x" * (2 * MAX_BODY_BYTES)}
    ).encode()
    chunks = [body[i : i + 16_384] for i in range(0, len(body), 16_384)]

    async def scenario(lane, downstream):
        return await _call(lane, _scope(headers), chunks), downstream.requests

    (status, _), reached = _lane_run(scenario)

    assert status == 599
    assert reached == [body]


@pytest.mark.parametrize("change", ["revoked", "scoped", "deleted"])
def test_a_key_the_lane_remembers_is_refused_from_the_commit_of_its_change(on_postgres, acme, change):
    """The lane remembers what a key is, but the statement that writes the session checks it again: the
    next request after a revocation (or a new scope, or a deletion) reaches Django and writes nothing."""
    secret, row = accounts.api_key_create(account=acme.account, name="remembered")
    headers = {"Authorization": f"Api-Key {secret}", "Content-Type": "application/json"}
    body = json.dumps({"deploymentId": acme.deployment.pk, "externalId": "ann"}).encode()

    def apply_change() -> None:
        if change == "revoked":
            accounts.api_key_revoke(key=row)
        elif change == "scoped":
            row.deployments.set([acme.deployment])
        else:
            row.delete()

    async def scenario(lane, downstream):
        first = await _call(lane, _scope(headers), [body])
        remembered = len(lane._keys)
        await asyncio.to_thread(apply_change)
        second = await _call(lane, _scope(headers), [body])
        return first, remembered, second, downstream.requests

    (first, remembered, second, reached) = _lane_run(scenario)

    assert first[0] == 200
    assert remembered == 1
    assert second == (599, b"downstream")
    assert reached == [body]
    assert EmbedSession.objects.filter(account=acme.account).count() == 1
