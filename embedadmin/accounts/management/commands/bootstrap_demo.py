from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand

from embedadmin.accounts import services
from embedadmin.accounts.models import Account


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
            created = services.account_create(name=name, creator_mode=True)
            credentials = {
                "accountName": created.account.name,
                "deploymentId": created.deployment.pk,
                "apiKey": created.api_key,
                "deploymentApiSecret": created.deployment_api_secret,
                "platformToken": created.platform_token,
                "adminUsername": created.admin_username,
                "adminPassword": created.admin_password,
            }
            created.account.tenant_settings  # noqa: B018  (settings row exists)
            settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(credentials, indent=2))
            path.chmod(0o600)
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
