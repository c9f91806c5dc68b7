"""Celery tasks of accounts and credentials: thin, idempotent, each calling one service."""

from __future__ import annotations

from celery import shared_task

from embedadmin.accounts.services import issued_tokens_purge
from embedadmin.accounts.tokens import revoked_tokens_purge


@shared_task(name="accounts.purge_revoked_tokens", ignore_result=True)
def purge_revoked_tokens() -> int:
    """Delete revocation records of tokens past their expiry (beat: hourly); returns how many."""
    return revoked_tokens_purge()


@shared_task(name="accounts.purge_issued_tokens", ignore_result=True)
def purge_issued_tokens() -> int:
    """Delete the records of issued deployment tokens past their expiry (beat: hourly); returns how many."""
    return issued_tokens_purge()
