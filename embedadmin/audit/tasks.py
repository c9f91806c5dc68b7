"""Celery tasks of the audit room."""

from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from embedadmin.audit import services


@shared_task(name="audit.entries_purge", acks_late=True, soft_time_limit=600, time_limit=660)
def entries_purge() -> int:
    """Drop the entries older than ``EMBEDADMIN["AUDIT_RETENTION_DAYS"]`` (beat runs it daily)."""
    days = settings.EMBEDADMIN["AUDIT_RETENTION_DAYS"]
    return services.entries_purge(older_than=timezone.now() - dt.timedelta(days=days))
