"""``scim2-tester``'s compliance checks against the shipped server (uvicorn, ``embedadmin.asgi``) over HTTP, with
strict payload validation: scim2-client validates every request it sends and every answer it reads (resources,
list responses, errors) under scim2-models' strict policy (a member no model declares is refused), and checks each
answer's content type and status code. Nothing the server answers is altered before the client reads it.

Every check must succeed. The one check the server answers by design with a status the tester reports as skipped
is named in ``EXPECTED_SKIPS`` with its reason; a check the RFC makes wrong is named in ``RFC_DISAGREEMENTS`` with
the section; any other skip, and any error, fails the test.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from scim2_client import BaseSyncSCIMClient
from scim2_client.errors import RequestNetworkException
from scim2_models import ScimPolicy, ScimProvider
from scim2_tester import Status, check_server

from embedadmin.directory import services as directory
from embedadmin.directory.services import AttributeDefinitionInput
from tests.asgi_server import uvicorn_server

pytestmark = pytest.mark.django_db(transaction=True)

PASSED = {Status.SUCCESS, Status.COMPLIANT, Status.ACCEPTABLE}
# Root-level ``POST /.search`` (all resource types at once) is optional: RFC 7644 3.4.2.1 says queries MAY be performed
# against the server root. The server answers 501 Not Implemented (3.12) and searches per type at /Users/.search and
# /Groups/.search; scim2-tester reports the 501 as SKIPPED, which is no failure.
EXPECTED_SKIPS = {"POST /.search: searching several resource types at once is not supported by the server"}
# One check where scim2-tester 0.5.2 contradicts RFC 7644 3.5.2.1 ("if the target location specifies a multi-valued
# attribute, a new value is added"): it first adds the whole UserAttribute extension (with a random ``regions``),
# then adds one value at ``...:regions`` and expects the attribute to hold only that value; the server keeps both,
# as the RFC says. Named here, not skipped: the test fails if any other check fails.
RFC_DISAGREEMENTS = {
    "User check_add_attribute: ERROR PATCH modify() returned unexpected value for "
    "'urn:cube:params:1.0:UserAttribute:regions'."
}


class HttpxSCIMClient(BaseSyncSCIMClient):
    """scim2-client's network engine on ``httpx`` (the product's HTTP client; scim2-client ships one on httpx2)."""

    def __init__(self, client: httpx.Client, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.client = client

    def _stays_under_base_url(self, endpoint: str) -> bool:
        url = self.client.build_request("GET", endpoint).url
        base = self.client.base_url
        return url.scheme == base.scheme and url.host == base.host and url.raw_path.startswith(base.raw_path)

    def _parse_json(self, response: Any) -> Any:
        return response.json()

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            return self.client.request(method, url, **kwargs)
        except httpx.RequestError as exc:
            raise RequestNetworkException() from exc


STRICT = {
    "check_request_payload": True,
    "check_response_payload": True,
    "check_response_content_type": True,
    "check_response_status_codes": True,
}


def _results(base: str, token: str) -> list[Any]:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"{base}/api/scim/v2/", headers=headers, timeout=30) as http:
        client = HttpxSCIMClient(http, provider=ScimProvider(policy=ScimPolicy()), **STRICT)
        client.discover()
        assert client.provider.policy.unknown is ScimPolicy.Unknown.forbid  # discovery kept the strict reading
        return check_server(client)


@pytest.mark.parametrize("with_attributes", [False, True], ids=["core", "with-user-attributes"])
def test_every_scim2_tester_check_passes_against_the_live_server(on_postgres, acme, with_attributes):
    # given an account (with typed user attributes in the second run: the UserAttribute extension)
    if with_attributes:
        # Text attributes only: scim2-tester 0.5.2 fills a decimal attribute with a UUID string (its filler has no
        # float case) and then fails its own validation, so number and number_array attributes cannot be checked
        # by it; test_scim_users.py covers them.
        for name, type_ in (("department", "string"), ("regions", "string_array")):
            directory.attribute_definition_create(
                account=acme.account, embed_tenant=None, data=AttributeDefinitionInput(name=name, type=type_)
            )

    # when
    with uvicorn_server() as base:
        results = _results(base, acme.created.platform_token)

    # then
    failed = [
        f"{r.resource_type or '-'} {r.title}: {r.status.name} {r.reason}"
        for r in results
        if r.status not in PASSED and not (r.status == Status.SKIPPED and r.reason in EXPECTED_SKIPS)
    ]
    disagreements = [f for f in failed if f.split("\n")[0] in RFC_DISAGREEMENTS]
    failed = [f for f in failed if f not in disagreements]
    skipped = [r.reason for r in results if r.status == Status.SKIPPED]
    passed = [r for r in results if r.status in PASSED]
    print(f"scim2-tester: {len(passed)}/{len(results)} passed; skipped: {skipped}; RFC disagreements: {disagreements}")
    assert failed == [], "\n".join(failed)
    assert set(skipped) <= EXPECTED_SKIPS
    assert len(passed) >= 40
