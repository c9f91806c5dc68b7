"""Fixtures of the Core Data API HTTP tests: the demo model on a small generated demo dataset, a deployment
configured for it, tokens, and a client that speaks Cube's parameters.

Imported by the ``test_http_*`` modules (``from .http_support import ...``); the dataset is generated once per
test session with ``demo/generate.py``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
from django.core.cache import cache
from django.http import HttpResponse

from demo.generate import DEFAULT_SEED, generate
from embedadmin.accounts.services import deployment_configure, duckdb_url
from embedadmin.semantic import clear_models
from embedadmin.semantic.sources.registry import close_data_sources
from tests.conftest import Cast, JsonClient
from tests.tokens import sign_token

REPO = Path(__file__).resolve().parents[2]
DEMO_MODEL = REPO / "demo" / "model"
DEMO_ORDERS = 2000


@pytest.fixture(scope="session")
def demo_duckdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo dataset with 2,000 orders, generated once per test session."""
    path = tmp_path_factory.mktemp("demo-http") / "demo.duckdb"
    generate(path, orders=DEMO_ORDERS, seed=DEFAULT_SEED)
    return path


def duck_rows(path: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Hand-written SQL run directly on (a copy of) the DuckDB file: what the API's answers are compared with.

    A copy, because DuckDB refuses a second connection to a file the data source has open with other settings.
    """
    reference = path.with_name(f"reference-{path.name}")
    if not reference.exists():
        shutil.copyfile(path, reference)
    with duckdb.connect(str(reference), read_only=True) as connection:
        connection.execute("SET TimeZone = 'UTC'")
        return connection.execute(sql, params or []).fetchall()


@dataclass
class CoreApi:
    """The Core Data API of one deployment, through Django's test client."""

    client: JsonClient
    cast: Cast
    dataset: Path

    @property
    def base(self) -> str:
        return f"/d/{self.cast.deployment.pk}/cubejs-api/v1"

    def token(self, **claims: Any) -> str:
        """A token of the deployment; by default an administrator's (group ``admin``)."""
        claims.setdefault("groups", ["admin"])
        return sign_token(self.cast.created.deployment_api_secret, **claims)

    def headers(self, token: str | None) -> dict[str, str]:
        return {} if token is None else {"HTTP_AUTHORIZATION": token}

    def get(self, endpoint: str, params: dict[str, Any] | None = None, *, token: str | None = "", **extra: Any):
        """GET ``{base}/{endpoint}``; object parameters are JSON-encoded as Cube's client does."""
        encoded = {k: v if isinstance(v, str) else json.dumps(v) for k, v in (params or {}).items()}
        auth = self.headers(self.token() if token == "" else token)
        return self.client.get(f"{self.base}/{endpoint}", encoded, **auth, **extra)

    def post(self, endpoint: str, body: Any, *, token: str | None = "", **extra: Any) -> HttpResponse:
        auth = self.headers(self.token() if token == "" else token)
        return self.client.post_json(f"{self.base}/{endpoint}", body, **auth, **extra)

    def load(self, query: Any, *, token: str | None = "", **params: Any) -> dict[str, Any]:
        """POST ``/v1/load`` that must succeed; the response body."""
        response = self.post("load", {"query": query, **params}, token=token)
        assert response.status_code == 200, response.content
        body = response.json()
        assert "error" not in body, body
        return body


@pytest.fixture
def fresh_semantic_state() -> Iterator[None]:
    """No cached results, models or open data sources leak between tests."""
    cache.clear()
    clear_models()
    yield
    cache.clear()
    clear_models()
    close_data_sources()


@pytest.fixture
def core(api: JsonClient, acme: Cast, demo_duckdb: Path, fresh_semantic_state: None) -> CoreApi:
    """acme's deployment serving the demo model on the generated demo dataset."""
    deployment_configure(deployment=acme.deployment, model_dir=str(DEMO_MODEL), data_source_url=duckdb_url(demo_duckdb))
    return CoreApi(client=api, cast=acme, dataset=demo_duckdb)


@pytest.fixture
def embed_token(core) -> Callable[..., tuple[str, str]]:
    """``embed_token(groups=[...], country=...)``: (token, sessionId), a session minted by generate-session and the
    token it is exchanged for."""
    client, cast = core.client, core.cast
    created = client.post_json(
        "/api/v1/user-attributes", {"name": "country", "type": "string"}, **cast.platform_headers
    )
    assert created.status_code == 201, created.content
    for group in ("regional", "admin"):
        response = client.post_json("/api/scim/v2/Groups", {"displayName": group}, **cast.platform_headers)
        assert response.status_code == 201, response.content

    def make(*, groups: list[str], country: str | None = None, external_id: str = "rita@example.com"):
        body = {"deploymentId": cast.deployment.pk, "externalId": external_id, "groups": groups}
        if country is not None:
            body["userAttributes"] = [{"name": "country", "value": country}]
        session = client.post_json("/api/v1/embed/generate-session", body, **cast.api_key_headers)
        assert session.status_code == 200, session.content
        session_id = session.json()["sessionId"]
        exchanged = client.post_json("/api/v1/embed/session/token", {"sessionId": session_id})
        assert exchanged.status_code == 200, exchanged.content
        return exchanged.json()["token"], session_id

    return make
