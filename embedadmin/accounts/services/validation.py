"""The model checks every service runs before it writes, as the client's 400."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Model

from embedadmin.core.errors import BadRequest


def full_clean_or_400(instance: Model) -> None:
    """Run the model's field checks (not uniqueness or constraints: the write itself finds those, race-safe); a
    failure is a :class:`BadRequest` naming each field."""
    try:
        instance.full_clean(validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        messages = [f"{field}: {'; '.join(errors)}" for field, errors in exc.message_dict.items()]
        raise BadRequest("; ".join(messages)) from None
