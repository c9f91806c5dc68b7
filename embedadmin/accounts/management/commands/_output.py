"""What the operators' commands share: their output (one JSON object with --json, readable lines otherwise), the
account ``--account`` names, and an :class:`ApiError` as a :class:`CommandError`."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from embedadmin.accounts.models import Account
from embedadmin.accounts.services import CreatedAccount
from embedadmin.core.errors import ApiError


def emit(command: BaseCommand, payload: dict, *, as_json: bool) -> None:
    if as_json:
        command.stdout.write(json.dumps(payload))
    else:
        width = max(len(k) for k in payload)
        for key, value in payload.items():
            command.stdout.write(f"{key.ljust(width)}  {value}")


def created_account_payload(created: CreatedAccount) -> dict:
    """What ``create_account --json`` prints (a stable contract operators script against)."""
    return {
        "accountName": created.account.name,
        "deploymentId": created.deployment.pk,
        "apiKey": created.api_key,
        "deploymentApiSecret": created.deployment_api_secret,
        "platformToken": created.platform_token,
        "adminUsername": created.admin_username,
        "adminPassword": created.admin_password,
    }


def fail(exc: ApiError) -> CommandError:
    return CommandError(exc.message)


def account_named(name: str) -> Account:
    """The account whose accountName is ``name`` (a command's ``--account``); a :class:`CommandError` otherwise."""
    account = Account.objects.filter(name=name).first()
    if account is None:
        raise CommandError(f"Account {name!r} not found")
    return account
