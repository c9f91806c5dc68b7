"""``manage.py create_agent --account NAME [--deployment ID] --json``: prints agentId and chatApiUrl."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from embedadmin.accounts.management.commands._output import account_named
from embedadmin.accounts.models import Deployment
from embedadmin.chat import services
from embedadmin.chat.models import Agent
from embedadmin.chat.selectors import chat_api_url
from embedadmin.core.errors import ApiError


class Command(BaseCommand):
    help = "Create a chat agent of an account over one of its deployments."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, help="accountName")
        parser.add_argument("--deployment", type=int, help="deployment id (default: the account's first)")
        parser.add_argument("--name", default="Analyst")
        parser.add_argument("--provider", choices=Agent.Provider.values, default=Agent.Provider.BUILTIN)
        parser.add_argument("--base-url", default="", help="OpenAI-compatible endpoint (provider openai)")
        parser.add_argument("--model", default="", help="model name (provider openai)")
        parser.add_argument("--api-key", default="", help="provider API key, stored encrypted")
        parser.add_argument("--site-url", default="http://127.0.0.1:4000", help="where this server is reached")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **options) -> None:
        account = account_named(options["account"])
        deployments = Deployment.objects.filter(account=account).order_by("pk")
        if options["deployment"] is not None:
            deployments = deployments.filter(pk=options["deployment"])
        deployment = deployments.first()
        if deployment is None:
            raise CommandError("No such deployment in this account")
        try:
            agent = services.agent_create(
                account=account,
                deployment=deployment,
                name=options["name"],
                provider=options["provider"],
                base_url=options["base_url"],
                model=options["model"],
                api_key=options["api_key"],
            )
        except ApiError as exc:
            raise CommandError(exc.message) from None
        payload = {"agentId": agent.public_id, "chatApiUrl": chat_api_url(agent, options["site_url"])}
        if options["json"]:
            self.stdout.write(json.dumps(payload))
        else:
            for key, value in payload.items():
                self.stdout.write(f"{key}  {value}")
