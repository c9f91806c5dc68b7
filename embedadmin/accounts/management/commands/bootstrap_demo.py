from __future__ import annotations

import json
import os

from django.conf import settings
from django.core.management.base import BaseCommand

from embedadmin.accounts import services
from embedadmin.accounts.management.commands._output import created_account_payload, fail
from embedadmin.accounts.models import Account
from embedadmin.core.errors import ApiError, Conflict


class Command(BaseCommand):
    help = (
        "Create the demo account once (idempotent) and print how to reach it. Its credentials are "
        "written to var/demo-credentials.json on first creation: secrets are stored hashed, so that "
        "file is the only place they can be read again."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--name", default="demo")
        parser.add_argument("--url", default="http://127.0.0.1:4000")

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
                ]
            )
        )
