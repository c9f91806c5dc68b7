"""The one rule for a row id written as text (a URL segment, a query parameter, a SCIM member value): ASCII decimal
digits within a bigint. ``"²"`` is a digit to ``str.isdigit`` but no id; a number beyond a bigint cannot even be
compared with an id column, so it names no row rather than failing in the database."""

from __future__ import annotations

from embedadmin.core.fields import MAX_BIGINT

_MAX_DIGITS = len(str(MAX_BIGINT))


def row_id(text: str | int) -> int | None:
    """The id ``text`` names, or None when no row can have it."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text if 0 <= text <= MAX_BIGINT else None
    if not isinstance(text, str) or not (text.isascii() and text.isdigit()) or len(text) > _MAX_DIGITS:
        return None
    number = int(text)
    return number if number <= MAX_BIGINT else None


class RowIdConverter:
    """The ``<id:...>`` path converter: a row id as :func:`row_id` reads it, else the URL matches nothing (404)."""

    regex = f"[0-9]{{1,{_MAX_DIGITS}}}"

    def to_python(self, value: str) -> int:
        number = row_id(value)
        if number is None:
            raise ValueError(value)  # Django: this pattern does not match
        return number

    def to_url(self, value: int) -> str:
        return str(value)
