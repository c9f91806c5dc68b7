"""The one Celery application; task schedules live in settings (CELERY_BEAT_SCHEDULE)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "embedadmin.settings")

app = Celery("embedadmin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
