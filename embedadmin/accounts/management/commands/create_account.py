from __future__ import annotations

from django.core.management.base import BaseCommand

from embedadmin.accounts import services
from embedadmin.accounts.management.commands._output import created_account_payload, emit, fail
from embedadmin.core.errors import ApiError


class Command(BaseCommand):
    help = "Create an account with a deployment, an admin user, an admin API key and a platform token."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", help="accountName: a DNS label (lowercase letters, digits, '-')")
        parser.add_argument("--creator-mode", action="store_true", help="turn on the useCreatorMode flag")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **options) -> None:
        try:
            created = services.account_create(name=options["name"], creator_mode=options["creator_mode"])
        except ApiError as exc:
            raise fail(exc) from None
        emit(self, created_account_payload(created), as_json=options["json"])
