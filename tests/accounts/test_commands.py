"""The operator contract of the management commands: create_account, create_api_key, bootstrap_demo."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from typing import Any

import jwt
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import Client

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import Account, ApiKey
from tests.platform.support import TENANT_SETTINGS_URL, db_rows, mint

CREATED_KEYS = {
    "accountName",
    "deploymentId",
    "apiKey",
    "deploymentApiSecret",
    "platformToken",
    "adminUsername",
    "adminPassword",
}


def run(*args: str) -> dict[str, Any]:
    """Run a command with ``--json``; the one JSON object it prints."""
    out = io.StringIO()
    call_command(*args, "--json", stdout=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1, lines
    return json.loads(lines[0])


def api_key_headers(key: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Api-Key {key}"}


def test_create_account_prints_exactly_the_contract_keys(db):
    # when
    printed = run("create_account", "newco")

    # then
    account = Account.objects.get(name="newco")
    assert set(printed) == CREATED_KEYS
    assert printed["accountName"] == "newco"
    assert printed["deploymentId"] == account.deployments.get().pk
    assert printed["adminUsername"] == "newco-admin"
    assert all(isinstance(printed[k], str) and printed[k] for k in CREATED_KEYS - {"deploymentId"})


@pytest.mark.parametrize(("flags", "creator_mode"), [((), False), (("--creator-mode",), True)])
def test_the_platform_token_reads_the_tenant_settings_with_the_creator_mode_flag(api, db, flags, creator_mode):
    # given
    printed = run("create_account", "newco", *flags)

    # when
    response = api.get(TENANT_SETTINGS_URL, HTTP_AUTHORIZATION=f"Bearer {printed['platformToken']}")

    # then
    assert response.status_code == 200
    assert response.json()["useCreatorMode"] is creator_mode


def test_the_api_key_mints_a_session_whose_token_the_deployment_secret_verifies(api, db):
    # given
    printed = run("create_account", "newco")
    body = {"deploymentId": printed["deploymentId"], "externalId": "alice"}

    # when
    session = api.post_json("/api/v1/embed/generate-session", body, **api_key_headers(printed["apiKey"]))
    exchanged = api.post_json("/api/v1/embed/session/token", {"sessionId": session.json()["sessionId"]})

    # then
    token = exchanged.json()["token"]
    claims = jwt.decode(token, printed["deploymentApiSecret"], algorithms=["HS256"])
    assert (session.status_code, exchanged.status_code) == (200, 200)
    assert (claims["sub"], claims["embed"]["deploymentId"]) == ("alice", printed["deploymentId"])
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(token, printed["deploymentApiSecret"] + "x", algorithms=["HS256"])


def test_the_admin_logs_in_to_the_panel_with_the_printed_password(db):
    # given
    printed = run("create_account", "newco")
    client = Client()

    # when
    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": printed["adminUsername"], "password": printed["adminPassword"], "next": "/admin/"},
    )

    # then
    assert response.status_code == 302
    assert response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
    assert not Client().login(username=printed["adminUsername"], password=printed["adminPassword"] + "x")


def test_an_existing_name_is_an_error_and_writes_nothing(acme):
    # given
    before = db_rows()

    # when
    with pytest.raises(CommandError) as raised:
        run("create_account", "acme")

    # then
    assert str(raised.value) == "Account 'acme' already exists"
    assert db_rows() == before


DNS_LABEL = "name: lowercase letters, digits and '-', a valid DNS label"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Acme", DNS_LABEL),
        ("9acme", DNS_LABEL),
        ("acme-", DNS_LABEL),
        ("ac_me", DNS_LABEL),
        ("a", DNS_LABEL),
        ("acme.io", DNS_LABEL),
        ("", "name: This field cannot be blank."),
        ("a" * 64, f"{DNS_LABEL}; Ensure this value has at most 63 characters (it has 64)."),
    ],
)
def test_an_invalid_name_is_an_error_and_writes_nothing(db, name, message):
    # given
    before = db_rows()

    # when
    with pytest.raises(CommandError) as raised:
        run("create_account", name)

    # then
    assert str(raised.value) == message
    assert db_rows() == before


def test_manage_py_exits_nonzero_with_the_error_on_stderr():
    # given: a name that fails before the database is touched, so the child needs no test data
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}

    # when
    result = subprocess.run(
        [sys.executable, "manage.py", "create_account", "Bad_Name", "--json"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    # then
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == f"CommandError: {DNS_LABEL}\n"


# --- create_api_key ---------------------------------------------------------------------------------


def test_create_api_key_prints_an_unscoped_admin_key_that_mints(api, acme):
    # when
    printed = run("create_api_key", "--account", "acme")

    # then
    assert printed == {"apiKey": printed["apiKey"], "kind": "admin", "deploymentIds": []}
    assert mint(api, acme, headers=api_key_headers(printed["apiKey"]), externalId="alice").status_code == 200


def test_a_key_scoped_to_deployments_mints_only_for_them(api, acme):
    # given
    staging, _ = accounts.deployment_create(account=acme.account, name="Staging", slug="staging")
    prod, _ = accounts.deployment_create(account=acme.account, name="Prod", slug="prod")

    # when
    printed = run("create_api_key", "--account", "acme", "--deployment", str(prod.pk), "--deployment", str(staging.pk))

    # then
    headers = api_key_headers(printed["apiKey"])
    statuses = {
        deployment.pk: mint(api, acme, headers=headers, externalId="alice", deploymentId=deployment.pk)
        for deployment in [acme.deployment, staging, prod]
    }
    assert printed["deploymentIds"] == sorted([staging.pk, prod.pk])
    assert {pk: r.status_code for pk, r in statuses.items()} == {acme.deployment.pk: 403, staging.pk: 200, prod.pk: 200}
    assert statuses[acme.deployment.pk].json() == {
        "error": f"This API key is not allowed to access deployment {acme.deployment.pk}"
    }


def test_a_personal_key_is_owned_by_the_admin_and_cannot_mint(api, acme):
    # when
    printed = run("create_api_key", "--account", "acme", "--personal")

    # then
    key = ApiKey.objects.get(prefix=printed["apiKey"].split("_")[1])
    response = mint(api, acme, headers=api_key_headers(printed["apiKey"]), externalId="alice")
    assert (printed["kind"], key.owner.username) == ("personal", "acme-admin")
    assert response.status_code == 403


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--account", "nope"), "Account 'nope' not found"),
        (("--account", "acme", "--deployment", "999999"), "Deployments not found in account acme: 999999"),
        (("--account", "acme", "--deployment", "{globex}"), "Deployments not found in account acme: {globex}"),
        (("--account", "acme", "--personal", "--owner", "nobody"), "No internal user to own the personal key"),
        (("--account", "acme", "--personal", "--owner", "globex-admin"), "No internal user to own the personal key"),
    ],
)
def test_create_api_key_errors_write_nothing(acme, globex, args, message):
    # given
    args = tuple(a.format(globex=globex.deployment.pk) for a in args)
    message = message.format(globex=globex.deployment.pk)
    before = db_rows()

    # when
    with pytest.raises(CommandError) as raised:
        run("create_api_key", *args)

    # then
    assert str(raised.value) == message
    assert db_rows() == before


def test_a_non_integer_deployment_is_refused_by_the_parser(acme):
    # when
    with pytest.raises(CommandError) as raised:
        run("create_api_key", "--account", "acme", "--deployment", "prod")

    # then
    assert str(raised.value) == "Error: argument --deployment: invalid int value: 'prod'"


# --- bootstrap_demo ---------------------------------------------------------------------------------


@pytest.fixture
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


def test_bootstrap_demo_is_idempotent(api, db, var_dir):
    # when
    first, second = io.StringIO(), io.StringIO()
    call_command("bootstrap_demo", "--url", "http://127.0.0.1:4000", stdout=first)
    rows = db_rows()
    call_command("bootstrap_demo", "--url", "http://127.0.0.1:4000", stdout=second)

    # then: one account, nothing more written, the same credentials shown, and they work
    path = var_dir / "demo-credentials.json"
    saved = json.loads(path.read_text())
    assert Account.objects.filter(name="demo").count() == 1
    assert db_rows() == rows
    assert second.getvalue() == first.getvalue()
    assert set(saved) == CREATED_KEYS
    assert f"  Demo API key:   {saved['apiKey']}\n" in first.getvalue()
    assert f"  Login:          demo-admin / {saved['adminPassword']}\n" in first.getvalue()
    assert path.stat().st_mode & 0o777 == 0o600
    tenant_settings = api.get(TENANT_SETTINGS_URL, HTTP_AUTHORIZATION=f"Bearer {saved['platformToken']}")
    assert tenant_settings.json()["useCreatorMode"] is True


def test_bootstrap_demo_replaces_a_stale_credentials_file_privately(db, var_dir):
    # given: a file left by an earlier install, readable by everyone
    path = var_dir / "demo-credentials.json"
    path.write_text("{}")
    path.chmod(0o644)

    # when
    call_command("bootstrap_demo", stdout=io.StringIO())

    # then
    assert set(json.loads(path.read_text())) == CREATED_KEYS
    assert path.stat().st_mode & 0o777 == 0o600


def test_bootstrap_demo_without_its_file_says_how_to_recover(db, var_dir):
    # given
    call_command("bootstrap_demo", stdout=io.StringIO())
    (var_dir / "demo-credentials.json").unlink()
    out = io.StringIO()

    # when
    call_command("bootstrap_demo", stdout=out)

    # then
    assert out.getvalue() == (
        f"Demo account 'demo' exists but {var_dir / 'demo-credentials.json'} is gone; "
        "create a new key with create_api_key.\n"
    )
    assert Account.objects.filter(name="demo").count() == 1


def test_configure_deployment_switches_chat_token_authentication(acme):
    deployment = acme.deployment
    assert deployment.chat_token_auth is False

    on = run("configure_deployment", str(deployment.pk), "--chat-token-auth", "on")
    deployment.refresh_from_db()
    assert deployment.chat_token_auth is True
    assert on["chatTokenAuth"] is True

    off = run("configure_deployment", str(deployment.pk), "--chat-token-auth", "off")
    deployment.refresh_from_db()
    assert deployment.chat_token_auth is False
    assert off["chatTokenAuth"] is False
