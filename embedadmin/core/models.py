"""Abstract base model shared by the apps."""

from django.db import models


class TimestampedModel(models.Model):
    """Adds creation and modification times."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
