from __future__ import annotations

import datetime as dt
import json
import os
import shlex
from pathlib import Path

import jwt
from django.conf import settings
from django.core.management.base import BaseCommand

from embedadmin.accounts import selectors, services
from embedadmin.accounts.management.commands._output import created_account_payload, fail
from embedadmin.accounts.models import Account, Deployment
from embedadmin.core.errors import ApiError, Conflict

# The demo token is valid for this long from the start of the day it is printed on: the same token all day,
# so running the command twice prints the same thing.
DEMO_TOKEN_DAYS = 30
SAMPLE_QUERY = {"measures": ["orders.count"], "dimensions": ["orders.status"]}


class Command(BaseCommand):
    help = (
        "Create the demo account once (idempotent) and print how to reach it. Its credentials are "
        "written to var/demo-credentials.json on first creation: secrets are stored hashed, so that "
        "file is the only place they can be read again."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--name", default="demo")
        parser.add_argument("--url", default="http://127.0.0.1:4000")
        parser.add_argument(
            "--model-dir", default=str(settings.BASE_DIR / "demo" / "model"), help="the demo deployment's model"
        )
        parser.add_argument(
            "--data-source",
            default=None,
            help="the demo deployment's data source URL (default: duckdb:/// of VAR_DIR/demo.duckdb)",
        )

    def handle(self, *args, **options) -> None:
        name = options["name"]
        path = settings.VAR_DIR / f"{name}-credentials.json"
        if not Account.objects.filter(name=name).exists():
            try:
                created = services.account_create(name=name, creator_mode=True)
            except Conflict:
                created = None  # another bootstrap created it a moment ago: it writes the file
            except ApiError as exc:
                raise fail(exc) from None
            if created is not None:
                settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
                # Created private from the start: the file holds the only readable copy of the secrets.
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.fchmod(descriptor, 0o600)  # a file left by an earlier install keeps its mode otherwise
                with os.fdopen(descriptor, "w") as file:
                    json.dump(created_account_payload(created), file, indent=2)
        if not path.exists():
            self.stdout.write(f"Demo account {name!r} exists but {path} is gone; create a new key with create_api_key.")
            return
        credentials = json.loads(path.read_text())
        url = options["url"]
        data_source = options["data_source"] or services.duckdb_url(settings.VAR_DIR / "demo.duckdb")
        deployment = Deployment.objects.get(pk=credentials["deploymentId"])
        _configure_once(deployment, model_dir=options["model_dir"], data_source=data_source)
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "embedadmin is starting.",
                    f"  Admin panel:    {url}/admin/",
                    f"  Login:          {credentials['adminUsername']} / {credentials['adminPassword']}",
                    f"  Demo API key:   {credentials['apiKey']}",
                    f"  Deployment id:  {credentials['deploymentId']}",
                    f"  Platform token: {credentials['platformToken']}",
                    f"  (saved in {path})",
                    "",
                    *_core_api_lines(url, credentials),
                ]
            )
        )


def _configure_once(deployment: Deployment, *, model_dir: str, data_source: str) -> None:
    """Point the demo deployment at its model and data, writing only what differs (so a second run
    changes nothing: the stored URL is encrypted afresh on every write)."""
    wanted_dir = str(Path(model_dir).expanduser().resolve())
    try:
        services.deployment_configure(
            deployment=deployment,
            model_dir=model_dir if deployment.model_dir != wanted_dir else None,
            data_source_url=(
                data_source if selectors.deployment_data_source_url(deployment=deployment) != data_source else None
            ),
        )
    except ApiError as exc:
        raise fail(exc) from None


def _core_api_lines(url: str, credentials: dict) -> list[str]:
    """How to query the demo data: a token for the demo deployment (group admin) and a curl line."""
    start = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    expires = start + dt.timedelta(days=DEMO_TOKEN_DAYS)
    token = jwt.encode(
        {"sub": "demo-admin", "groups": ["admin"], "iat": int(start.timestamp()), "exp": int(expires.timestamp())},
        credentials["deploymentApiSecret"],
        algorithm="HS256",
    )
    api_url = f"{url}{settings.CUBEJS_BASE_PATH}/v1"
    query = shlex.quote(f"query={json.dumps(SAMPLE_QUERY, separators=(',', ':'))}")
    return [
        "Core Data API (Cube-compatible) on the demo data:",
        f"  apiUrl:         {api_url}   (or {url}/d/{credentials['deploymentId']}{settings.CUBEJS_BASE_PATH}/v1)",
        f"  Token:          {token}",
        f"                  (group admin, valid until {expires:%Y-%m-%d})",
        f'  Try:            curl -H "Authorization: {token}" -G --data-urlencode {query} {api_url}/load',
        "",
    ]
