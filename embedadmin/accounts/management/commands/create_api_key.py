from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from embedadmin.accounts import services
from embedadmin.accounts.management.commands._output import account_named, emit, fail
from embedadmin.accounts.models import AccountMembership
from embedadmin.core.errors import ApiError


class Command(BaseCommand):
    help = "Mint an API key for an account (admin by default; --personal for the account's admin user)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--account", required=True, help="accountName")
        parser.add_argument("--deployment", type=int, action="append", default=[], help="limit to this deployment id")
        parser.add_argument("--personal", action="store_true", help="a personal key (cannot mint sessions)")
        parser.add_argument("--owner", help="username owning a personal key (default: the account's first admin)")
        parser.add_argument("--name", default="", help="a label for the key")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **options) -> None:
        account = account_named(options["account"])
        owner = None
        if options["personal"]:
            memberships = AccountMembership.objects.filter(account=account).select_related("user")
            if options["owner"]:
                memberships = memberships.filter(user__username=options["owner"])
            membership = memberships.order_by("-is_admin", "user_id").first()
            if membership is None:
                raise CommandError("No internal user to own the personal key")
            owner = membership.user
        try:
            plaintext, key = services.api_key_create(
                account=account, name=options["name"], personal_owner=owner, deployment_ids=options["deployment"]
            )
        except ApiError as exc:
            raise fail(exc) from None
        emit(
            self,
            {"apiKey": plaintext, "kind": key.kind, "deploymentIds": sorted(options["deployment"])},
            as_json=options["json"],
        )
