"""Write helpers shared by the services."""

from __future__ import annotations

from typing import Any, TypeVar

from django.db import IntegrityError, transaction
from django.db.models import Field, ForeignObjectRel, Model

from embedadmin.core.errors import ApiError

M = TypeVar("M", bound=Model)


def create_unique(instance: M, *, conflict: ApiError) -> M:
    """Insert ``instance``; when a unique constraint refuses it (its name is taken, also by a request racing
    this one), raise ``conflict`` instead. The savepoint keeps the caller's transaction usable."""
    try:
        with transaction.atomic():
            instance.save(force_insert=True)
    except IntegrityError:
        raise conflict from None
    return instance


def db_column(field: Field[Any, Any] | ForeignObjectRel) -> str:
    """The database column of a concrete field, as ``_meta.get_field()`` or ``_meta.concrete_fields`` give it
    (``get_field()`` also answers reverse relations, which have none)."""
    if not isinstance(field, Field) or field.column is None:
        raise TypeError(f"{field!r} has no database column")
    return field.column
