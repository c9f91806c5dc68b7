"""Cube's title algorithm, reproduced exactly so generated titles match a Cube server's.

``titleize(name)`` = inflection.titleize(inflection.underscore(camelcase(name, pascalCase))), then
``Id``/``Ids`` as whole words become ``ID``/``IDs``: ``created_at`` -> ``Created at``,
``ordersByMonth`` -> ``Orders by Month``, ``user_ids`` -> ``User IDs``, ``amountUSD`` -> ``Amount Usd``.
"""

from __future__ import annotations

import re
from functools import lru_cache

# inflection's words that stay lowercase inside a title (the first word is capitalised anyway).
_LOWERCASE_WORDS = frozenset(
    [
        "and",
        "or",
        "nor",
        "a",
        "an",
        "the",
        "so",
        "but",
        "to",
        "of",
        "at",
        "by",
        "from",
        "into",
        "on",
        "onto",
        "off",
        "out",
        "in",
        "over",
        "with",
        "for",
    ]
)
_LEADING_SEPARATORS = re.compile(r"^[_.\- ]+")
_SEPARATOR_THEN_CHAR = re.compile(r"[_.\- ]+([^\W_]|_|$)")
_DIGITS_THEN_CHAR = re.compile(r"\d+([^\W_]|_|$)")
_ID_WORD = re.compile(r"\bId(s?)\b")


def _is_upper(ch: str) -> bool:
    return ch.upper() == ch and ch.lower() != ch


def _is_lower(ch: str) -> bool:
    return ch.lower() == ch and ch.upper() != ch


def _mark_camel_boundaries(text: str) -> str:
    """npm ``camelcase``'s preserveCamelCase: a ``-`` before each new word of a camelCased string."""
    chars = list(text)
    out: list[str] = []
    last_lower = last_upper = last_last_upper = False
    for ch in chars:
        if last_lower and _is_upper(ch):
            out.append("-")
            last_lower, last_last_upper, last_upper = False, last_upper, True
        elif last_upper and last_last_upper and _is_lower(ch):
            out.insert(len(out) - 1, "-")
            last_last_upper, last_upper, last_lower = last_upper, False, True
        else:
            last_lower = _is_lower(ch)
            last_last_upper = last_upper
            last_upper = _is_upper(ch)
        out.append(ch)
    return "".join(out)


def pascal_case(name: str) -> str:
    """npm ``camelcase(name, {pascalCase: true})``."""
    text = name.strip()
    if not text:
        return ""
    if text != text.lower():
        text = _mark_camel_boundaries(text)
    text = _LEADING_SEPARATORS.sub("", text).lower()
    text = text[:1].upper() + text[1:]
    text = _SEPARATOR_THEN_CHAR.sub(lambda m: m.group(1).upper(), text)
    return _DIGITS_THEN_CHAR.sub(lambda m: m.group(0).upper(), text)


def underscore(text: str) -> str:
    """inflection.underscore: ``AmountUsd`` -> ``amount_usd``."""
    return re.sub(r"^_", "", re.sub(r"([A-Z])", r"_\1", text)).lower()


def inflection_titleize(text: str) -> str:
    words = []
    for word in text.lower().replace("_", " ").split(" "):
        parts = [p if p.lower() in _LOWERCASE_WORDS else p[:1].upper() + p[1:] for p in word.split("-")]
        words.append("-".join(parts))
    joined = " ".join(words)
    return joined[:1].upper() + joined[1:]


@lru_cache(maxsize=8192)
def titleize(name: str) -> str:
    return _ID_WORD.sub(lambda m: "ID" + m.group(1), inflection_titleize(underscore(pascal_case(name))))
