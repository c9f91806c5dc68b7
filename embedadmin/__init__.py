"""embedadmin: a self-hostable control plane for embedded analytics."""

from embedadmin.celery import app as celery_app

__all__ = ["celery_app"]
