"""The embedded dashboard's view door (issue 22): what a viewer can send the page (``f_`` URL values, the view
endpoint's state, a forged or re-signed token) never shows a row or member outside their grant.

The viewer is a regional manager of the dataset's first country on the demo model (``sales`` filtered to their
country, no personal data; the raw cubes closed to embed viewers).
"""

# ruff: noqa: F401, F811
from __future__ import annotations

import hashlib
import hmac
import json
import time

import jwt
import pytest

from tests.dashboards.test_embed_view import VIEW, _load, _tile, countries, regional
from tests.embedding.conftest import (
    exchange,
    generate,
    new_session,
    patch_tenant_settings,
    tenant_attribute,
    tenant_group,
)
from tests.embedding.dashboard_support import embed_headers
from tests.semantic.http_support import core, demo_duckdb, duck_rows, fresh_semantic_state
from tests.tokens import sign_token

pytestmark = pytest.mark.django_db


def _other_countries(core, mine: str) -> list[str]:
    return [row[0] for row in duck_rows(core.dataset, "SELECT DISTINCT country FROM users") if row[0] != mine]


def _emails(core) -> list[str]:
    return [row[0] for row in duck_rows(core.dataset, "SELECT email FROM users ORDER BY id LIMIT 100")]


def _nothing_outside(core, mine: str, text: str, *, said: str = "") -> None:
    """No other country and no email in ``text``, but for words the viewer said themselves (``said``)."""
    assert [c for c in _other_countries(core, mine) if f'"{c}"' in text and c not in said] == []
    assert [e for e in _emails(core) if e in text] == []


def _rows_of_every_tile(api, boot: dict) -> str:
    return json.dumps([_load(api, boot, widget["query"]) for widget in boot["view"]["widgets"] if "query" in widget])


@pytest.mark.parametrize(
    ("name", "value"),
    [
        pytest.param("f_sales.users_country", '{"or":[{"value":"France"},{"value":"Germany"}]}', id="or-object"),
        pytest.param("f_sales.users_country", '{"operator":"notEquals","value":"nowhere"}', id="operator-not-offered"),
        pytest.param("f_sales.users_country", '{"operator":"set"}', id="valueless-operator"),
        pytest.param("f_sales.users_email", '{"operator":"contains","value":"@"}', id="other-member"),
        pytest.param("f_users.country", '{"operator":"set"}', id="raw-cube-member"),
        pytest.param("f_users.email", '{"value":"x"}', id="raw-personal-member"),
        pytest.param("f_sales.users_country", '{"value":"x\' OR 1=1 --"}', id="sql-string"),
        pytest.param("f_sales.users_country", '{"value":' * 5000 + '"x"' + "}" * 5000, id="5000-deep"),
        pytest.param("f_sales.users_country", '["France"]', id="array"),
    ],
)
def test_an_f_value_never_shows_what_the_viewer_may_not_see(api, core, regional, countries, name, value):
    boot = regional(**{name: value})

    rows = _rows_of_every_tile(api, boot)

    _nothing_outside(core, countries[0], rows)
    _nothing_outside(core, countries[0], json.dumps(boot), said=value)


@pytest.mark.parametrize(
    "filters",
    [
        {"sales.users_country": {"operator": "notEquals", "values": [""]}},
        {"users.country": {"operator": "set", "values": []}},
        {"sales.users_email": {"operator": "set", "values": []}},
    ],
    ids=["wider-operator", "raw-member", "excluded-member"],
)
def test_a_view_state_cannot_widen_the_grant(api, core, regional, countries, filters):
    boot = regional()

    response = api.post_json(
        VIEW, {"grant": boot["grant"], "state": {"filters": filters}}, **embed_headers(boot["token"])
    )

    assert response.status_code in (200, 400)
    _nothing_outside(core, countries[0], response.content.decode())
    if response.status_code == 200:
        view = response.json()
        _nothing_outside(core, countries[0], _rows_of_every_tile(api, {**boot, "view": view}))


def _part(value: dict) -> str:
    return jwt.utils.base64url_encode(json.dumps(value).encode()).decode()


# Put together by hand, not with ``tests.tokens.sign_token``: PyJWT signs neither a header that names an algorithm
# other than the signature's nor with an empty HMAC key, and these forgeries need both.
def _unsigned(header: dict, claims: dict) -> str:
    return f"{_part(header)}.{_part(claims)}.{_part({'sig': 1})}"


def _hs256_with_empty_key(claims: dict) -> str:
    signing_input = f"{_part({'alg': 'HS256', 'typ': 'JWT'})}.{_part(claims)}"
    signature = hmac.new(b"", signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{jwt.utils.base64url_encode(signature).decode()}"


def _claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def _forgeries(core, token: str) -> dict[str, str]:
    claims = _claims(token)
    wider = {**claims, "groups": ["admin"], "exp": int(time.time()) + 3600}
    unsealed = {key: value for key, value in claims.items() if key != "embed"}
    return {
        "alg-none": sign_token(None, algorithm="none", **wider),
        "rs256-header": _unsigned({"alg": "RS256", "typ": "JWT", "kid": "k"}, wider),
        "guessed-key": sign_token("secret", **wider),
        "empty-key": _hs256_with_empty_key(wider),
        "claims-changed-signature-kept": ".".join([token.split(".")[0], _part(wider), token.split(".")[2]]),
        "deployment-secret-wider": sign_token(core.cast.created.deployment_api_secret, **wider),
        "deployment-secret-unsealed": sign_token(core.cast.created.deployment_api_secret, **unsealed),
    }


FORGERIES = [
    "alg-none",
    "rs256-header",
    "guessed-key",
    "empty-key",
    "claims-changed-signature-kept",
    "deployment-secret-wider",
    "deployment-secret-unsealed",
]


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_forged_token_opens_neither_the_view_nor_a_wider_load(api, core, regional, countries, forgery):
    boot = regional()
    token = _forgeries(core, boot["token"])[forgery]

    view = api.post_json(VIEW, {"grant": boot["grant"]}, **embed_headers(token))
    load = api.post_json(
        f"{boot['coreApiBase']}/load",
        {"query": {"dimensions": ["sales.users_country", "sales.users_email"]}},
        HTTP_AUTHORIZATION=token,
    )

    assert view.status_code == 401
    if forgery.startswith("deployment-secret"):
        # Only the host holds the deployment's secret, and its own back end may sign any Core Data API token
        # (Cube's rule): the embed endpoints refuse it above (no seal), what it reads is the host's own business.
        assert load.status_code in (200, 400)
    else:
        assert load.status_code == 403
        _nothing_outside(core, countries[0], load.content.decode())
