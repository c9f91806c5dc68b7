"""Filter values bound as their member's type: a number or a boolean is checked when the query is normalized
(a value that is neither is the client's error, 400) and bound as that type by the SQL builder."""

from __future__ import annotations

import contextlib
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from embedadmin.semantic.errors import QueryError

_INTEGER = re.compile(r"^[-+]?\d{1,18}$")
NUMBER_TEXT = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")  # a number as SQL and JSON write it
# Operators whose values are bound as the member's type (typed_value); the others bind text or dates.
TYPED_OPERATORS = ("equals", "notEquals", "in", "notIn", "gt", "gte", "lt", "lte")
# The largest power of ten (either way) a number filter value may have: DuckDB binds a decimal beyond a double's
# range as a double (1e-400 would become 0), so both databases read the same number only within it.
MAX_EXPONENT = 300
# The spellings of a boolean, bound as Python booleans; "1" and "0" stay text, which each database reads as the
# column's type (a boolean, or the integer column a boolean dimension may stand for).
_BOOLEAN_WORDS: dict[str, bool | str] = {"true": True, "t": True, "yes": True, "on": True, "1": "1"}
_BOOLEAN_WORDS |= {"false": False, "f": False, "no": False, "off": False, "0": "0"}


def typed_value(value: str, member_type: str) -> Any:
    """The Python value to bind for a filter value of a member of ``member_type``: a number or a boolean for
    those types (a value that is neither is the client's error, 400, not the data source's), else the text."""
    if member_type == "number":
        text = value.strip()
        if _INTEGER.match(text):
            return int(text)
        number = None
        if NUMBER_TEXT.match(text):
            with contextlib.suppress(InvalidOperation):
                number = Decimal(text)
        if number is None:
            raise QueryError(f"Invalid filter value '{value}': a number is expected")
        if abs(number.adjusted()) > MAX_EXPONENT:
            raise QueryError(f"Invalid filter value '{value}': the number is out of range")
        return number
    if member_type == "boolean":
        known = _BOOLEAN_WORDS.get(value.strip().lower())
        if known is None:
            raise QueryError(f"Invalid filter value '{value}': a boolean is expected (true or false)")
        return known
    return value


def check_typed_values(member: str, member_type: str, values: tuple[str | None, ...]) -> None:
    """Refuse (400, naming ``member``) a value :func:`typed_value` cannot bind for a member of this type."""
    for value in values:
        if value is not None:
            try:
                typed_value(value, member_type)
            except QueryError as exc:
                raise QueryError(f"{exc.message} for {member}") from None
