from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from embedadmin.accounts.management.commands._output import account_named
from embedadmin.chat import services
from embedadmin.chat.models import Agent
from embedadmin.chat.selectors import chat_api_url


class Command(BaseCommand):
    help = "Make sure an account has a built-in analyst agent (idempotent) and print its Chat API URL."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, help="accountName")
        parser.add_argument("--site-url", default="http://127.0.0.1:4000")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        account = account_named(options["account"])
        agent = Agent.objects.filter(account=account).order_by("id").first()
        if agent is None:
            deployment = account.deployments.order_by("id").first()
            if deployment is None:
                raise CommandError("The account has no deployment")
            agent = services.agent_create(account=account, deployment=deployment, name="Analyst")
        payload = {"agentId": agent.public_id, "chatApiUrl": chat_api_url(agent, options["site_url"])}
        if options["json"]:
            self.stdout.write(json.dumps(payload))
        else:
            self.stdout.write(f"  Chat API URL:   {payload['chatApiUrl']}/chat/stream-chat-state")
