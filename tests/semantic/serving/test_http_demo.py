"""``make run``'s demo: bootstrap_demo points the demo deployment at the demo model and data and prints a token
and a curl line that work against /cubejs-api/v1 as printed."""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import io
import json
import re
import shlex
from urllib.parse import urlsplit

from django.core.management import call_command

from embedadmin.accounts.models import Deployment
from embedadmin.accounts.selectors import deployment_data_source_url
from embedadmin.accounts.services import duckdb_url
from tests.semantic.http_support import DEMO_MODEL, demo_duckdb, fresh_semantic_state  # noqa: F401


def test_bootstrap_demo_configures_the_deployment_and_prints_a_working_curl(
    api, db, settings, tmp_path, demo_duckdb, fresh_semantic_state
):
    # given
    settings.VAR_DIR = tmp_path
    source = duckdb_url(demo_duckdb)

    # when
    first, second = io.StringIO(), io.StringIO()
    call_command("bootstrap_demo", "--url", "http://127.0.0.1:4000", "--data-source", source, stdout=first)
    call_command("bootstrap_demo", "--url", "http://127.0.0.1:4000", "--data-source", source, stdout=second)

    # then: configured once, the same lines twice
    credentials = json.loads((tmp_path / "demo-credentials.json").read_text())
    deployment = Deployment.objects.get(pk=credentials["deploymentId"])
    assert deployment.model_dir == str(DEMO_MODEL)
    assert deployment_data_source_url(deployment=deployment) == source
    assert second.getvalue() == first.getvalue()
    printed = first.getvalue()
    assert "  apiUrl:         http://127.0.0.1:4000/cubejs-api/v1   " in printed
    assert f"(or http://127.0.0.1:4000/d/{deployment.pk}/cubejs-api/v1)" in printed

    # and the printed curl answers with data
    curl = shlex.split(re.search(r"Try:\s+(curl .*)", printed).group(1))
    token = curl[curl.index("-H") + 1].removeprefix("Authorization: ")
    query = curl[curl.index("--data-urlencode") + 1].removeprefix("query=")
    response = api.get(urlsplit(curl[-1]).path, {"query": query}, HTTP_AUTHORIZATION=token)
    assert response.status_code == 200, response.content
    assert sum(int(row["orders.count"]) for row in response.json()["data"]) == 2000
