"""Shared output for the bootstrap commands: one JSON object with --json, readable lines otherwise."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from embedadmin.core.errors import ApiError


def emit(command: BaseCommand, payload: dict, *, as_json: bool) -> None:
    if as_json:
        command.stdout.write(json.dumps(payload))
    else:
        width = max(len(k) for k in payload)
        for key, value in payload.items():
            command.stdout.write(f"{key.ljust(width)}  {value}")


def fail(exc: ApiError) -> CommandError:
    return CommandError(exc.message)
