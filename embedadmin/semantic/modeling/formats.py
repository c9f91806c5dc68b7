"""Member ``format`` values as ``/v1/meta`` shows them, and their ``formatDescription``.

Named numeric formats (``number_2``, ``percent_1``, ``currency_0``, ``abbr``, ``accounting_3``, ``id``...)
become ``{"type": "custom-numeric", "value": <d3 specifier>, "alias": <name>}``; ``percent``, ``currency``
and ``number`` stay plain strings; any other string is a raw d3 specifier (or, on a time dimension, a
strftime pattern: ``custom-time``). Specifiers trim trailing zeros (``~``) except at zero decimals.
"""

from __future__ import annotations

from typing import Any


def _named_formats() -> dict[str, str]:
    table: dict[str, str] = {"id": ".0f"}
    families = {
        "number": (",", "f"),
        "decimal": (",", "f"),
        "percent": ("", "%"),
        "currency": ("$,", "f"),
        "accounting": ("(,", "f"),
        "abbr": ("", "s"),
    }
    for family, (prefix, kind) in families.items():
        for digits in range(7):
            trim = "~" if digits or kind == "s" else ""
            table[f"{family}_{digits}"] = f"{prefix}.{digits}{trim}{kind}"
    table["decimal"] = table["decimal_2"]
    table["abbr"] = table["abbr_2"]
    table["accounting"] = table["accounting_2"]
    return table


NAMED_NUMERIC_FORMATS = _named_formats()
STANDARD_FORMAT_SPECIFIERS = {
    "percent": ".2~%",
    "currency": "$,.2~f",
    "number": ",.2~f",
    "abbr": ".2~s",
    "accounting": "(,.2~f",
    "id": ".0f",
}
DEFAULT_FORMAT = ("number", ",.2~f")
_MEASURE_PLAIN_FORMATS = frozenset({"percent", "currency", "number"})
_DIMENSION_PLAIN_FORMATS = frozenset({"imageUrl", "currency", "percent", "number", "id"})
_NO_DESCRIPTION_MEASURE_TYPES = frozenset({"string", "boolean", "time"})


def is_known_format(value: Any) -> bool:
    """Whether a model ``format`` is acceptable: a non-empty string or a ``{type: link, label}`` object."""
    if isinstance(value, str):
        return bool(value)
    return isinstance(value, dict) and value.get("type") == "link" and isinstance(value.get("label", ""), str)


def _shown(value: Any, plain: frozenset[str], custom_type: str | None) -> Any:
    """Empty -> None; objects as written; named numeric formats resolved; ``plain`` names as is; any other
    string as a ``custom_type`` format (or as is when there is none)."""
    if not value:
        return None
    if not isinstance(value, str):
        return value
    if value in NAMED_NUMERIC_FORMATS:
        return {"type": "custom-numeric", "value": NAMED_NUMERIC_FORMATS[value], "alias": value}
    if value in plain or custom_type is None:
        return value
    return {"type": custom_type, "value": value}


def measure_format(value: Any) -> Any:
    return _shown(value, _MEASURE_PLAIN_FORMATS, "custom-numeric")


def dimension_format(value: Any, dimension_type: str) -> Any:
    custom = {"time": "custom-time", "number": "custom-numeric"}.get(dimension_type)
    return _shown(value, _DIMENSION_PLAIN_FORMATS, custom)


def format_description(shown_format: Any, member_type: str, *, is_measure: bool, currency: str | None) -> Any:
    """``{name, specifier, currency?}`` for numeric measures and number dimensions; None otherwise."""
    if is_measure and member_type in _NO_DESCRIPTION_MEASURE_TYPES:
        return None
    if not is_measure and member_type != "number":
        return None
    if isinstance(shown_format, dict) and shown_format.get("type") == "custom-numeric":
        description = {"name": shown_format.get("alias") or "custom", "specifier": shown_format["value"]}
    elif isinstance(shown_format, str) and shown_format in STANDARD_FORMAT_SPECIFIERS:
        description = {"name": shown_format, "specifier": STANDARD_FORMAT_SPECIFIERS[shown_format]}
    else:
        description = {"name": DEFAULT_FORMAT[0], "specifier": DEFAULT_FORMAT[1]}
    if currency:
        description["currency"] = currency
    return description
