"""How a value of a result reads in the viewer's locale, in the analyst's text: the rule of the dashboard's tiles.

The tiles are formatted in the page by one formatter (``static/embed/common.js`` ``Formatter.value``), from the
column the server names for each value (``dashboards/tiles.py`` ``tile_column``; for a chat result, the same
description in its ``annotation``: ``tools.column_annotation``): ``{type, format, currency, granularity}``, the
format as ``/v1/meta`` shows it (``semantic/modeling/formats.py``: ``currency``, ``percent``, ``number``, or a named
format such as ``{"type": "custom-numeric", "alias": "currency_0"}``). The analyst writes its answers as text, on the
server, so this module reads the same column by the same rule, with the same CLDR data the browser's ``Intl`` has
(Babel): a currency with the locale's symbol and its place (``$19,841.88``, ``19.841,88 $``, ``19 841,88 $US``), a
percent of a fraction (``0.125``: ``12.5%``, ``12,5 %``), plain numbers with the locale's separators, a time bucket
labelled for its grain (``Jan 2024``, ``Jan. 2024``, ``2024年1月``, ``Q1 2024``, ``2024-W05``).
``tests/chat/test_value_formatting_browser.py`` holds the two to the same text in Chromium.
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

from babel import Locale, UnknownLocaleError
from babel.dates import format_datetime, format_skeleton
from babel.numbers import NumberPattern, format_compact_decimal, parse_pattern

DEFAULT_LOCALE = "en-US"  # a caller that names no locale (and the page's own fallback)
NO_VALUE = "\u2013"  # an en dash, as the page shows no value
# Cube's named numeric formats: the family and, after "_", the decimals (as common.js NAMED_FORMAT reads them).
NAMED_FORMAT = re.compile(r"^(number|decimal|percent|currency|accounting|abbr)(?:_(\d))?$")
CURRENCY_CODE = re.compile(r"^[A-Z]{3}$")
# A time grain's CLDR skeleton, as the page's Intl options for it (common.js GRAIN_OPTIONS) ask: year; short month
# and year; and a day's date, then its time of day for the finer grains (``h``: the locale's hour cycle, 12 or 24).
DATE_SKELETONS = {"year": "y", "month": "yMMM", "day": "yMMMd"}
TIME_SKELETONS = {"hour": "h", "minute": "hm"}
WALL_CLOCK_OFFSET = re.compile(r"(Z|[+-]\d\d:?\d\d)$")


@cache
def _babel_locale(tag: str) -> Locale | None:
    """The CLDR locale of a language tag (``de-DE``), else of its language alone, else None (as ``Intl`` takes
    ``de-XX`` for German and an unknown language for none)."""
    for candidate in (tag, tag.split("-", 1)[0]):
        try:
            return Locale.parse(candidate, sep="-")
        except (UnknownLocaleError, ValueError, TypeError):
            continue
    return None


@dataclass(frozen=True)
class ValueFormatter:
    """Values formatted in ``locale`` (a checked BCP-47 tag; one CLDR has no data for reads as ``en-US``, as on the
    page) with times read in ``timezone``."""

    locale: str = DEFAULT_LOCALE
    timezone: str = "UTC"

    @property
    def cldr(self) -> Locale:
        found = _babel_locale(self.locale) or _babel_locale(DEFAULT_LOCALE)
        assert found is not None
        return found

    def value(self, value: Any, column: Mapping[str, Any] | None) -> str:
        """One value by its column: a time by its grain, a number by its format, anything else as text."""
        column = column or {}
        if column.get("type") == "time":
            grain = column.get("granularity")
            if isinstance(grain, Mapping):
                grain = grain.get("name")
            return self.date(value, grain if isinstance(grain, str) else None)
        if column.get("type") == "number":
            return self.number(value, column)
        if value is None:
            return NO_VALUE
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    # --- numbers -------------------------------------------------------------------------------------------

    def number(self, value: Any, column: Mapping[str, Any] | None = None) -> str:
        """A number by a column's ``format`` and ``currency``: currency and accounting with the currency's symbol (2
        decimals, or the named format's), percent of a fraction (up to 2 decimals), ``abbr`` compact (1.2K), ``id``
        rounded, else up to 2 decimals (none for a whole number)."""
        if value is None or value == "":
            return NO_VALUE
        number = _as_number(value)
        if number is None:
            return str(value)
        column = column or {}
        shown_format = column.get("format")
        digits: int | None = None
        if isinstance(shown_format, Mapping):
            alias = str(shown_format.get("alias") or "")
            if alias == "id":
                return str(math.floor(number + 0.5))  # Math.round
            named = NAMED_FORMAT.match(alias)
            shown_format = named.group(1) if named else shown_format.get("type")
            if named and named.group(2) is not None:
                digits = int(named.group(2))
        decimals = digits if digits is not None else (0 if number.is_integer() else 2)
        amount = decimal.Decimal(repr(number))  # the shortest text of the double, as Intl reads a number
        if shown_format in ("currency", "accounting"):
            code = str(column.get("currency") or "USD").upper()
            fraction = (2, 2) if digits is None else (min(digits, 2), digits)
            if CURRENCY_CODE.match(code):
                kind = "accounting" if shown_format == "accounting" else "standard"
                return self._currency(amount, code, kind, fraction)
            return f"{self._pattern(self.cldr.decimal_formats[None], amount, (0, decimals))} {code}"
        if shown_format == "percent":
            return self._pattern(self.cldr.percent_formats[None], amount, (0, 2 if digits is None else digits))
        if shown_format == "abbr":
            with _half_expand():
                return format_compact_decimal(amount, locale=self.cldr, fraction_digits=decimals)
        return self._pattern(self.cldr.decimal_formats[None], amount, (0, decimals))

    def _pattern(
        self, pattern: NumberPattern | str, amount: decimal.Decimal, fraction: tuple[int, int], currency: str = ""
    ) -> str:
        parsed = parse_pattern(pattern)
        shaped = NumberPattern(
            parsed.pattern,
            parsed.prefix,
            parsed.suffix,
            parsed.grouping,
            parsed.int_prec,
            fraction,
            parsed.exp_prec,
            parsed.exp_plus,
            parsed.number_pattern,
        )
        with _half_expand():
            return str(shaped.apply(amount, self.cldr, currency=currency or None, currency_digits=False))

    def _currency(self, amount: decimal.Decimal, code: str, kind: str, fraction: tuple[int, int]) -> str:
        """A currency amount, with the space CLDR's currency spacing puts between digits and a symbol of letters
        (``CHF 12.00``, ``12,00 CHF``), as ICU does."""
        text = self._pattern(self.cldr.currency_formats[kind], amount, fraction, currency=code)
        symbol = self.cldr.currency_symbols.get(code, code)
        at = text.find(symbol)
        if at < 0 or not symbol:
            return text
        before, after = text[:at], text[at + len(symbol) :]
        if after[:1].isdigit() and symbol[-1].isalpha():
            after = "\u00a0" + after
        if before[-1:].isdigit() and symbol[0].isalpha():
            before = before + "\u00a0"
        return before + symbol + after

    # --- times ---------------------------------------------------------------------------------------------

    def date(self, value: Any, granularity: str | None = None) -> str:
        """A time bucket labelled for its grain: 2024, Q1 2024, Jan 2024, 2024-W05, Jan 5, 2024 (in the locale)."""
        if value is None or value == "":
            return NO_VALUE
        wall = _wall_clock(value, self.timezone)
        if wall is None:
            return str(value)
        if granularity == "week":
            return _iso_week(wall)
        if granularity == "quarter":
            return f"Q{(wall.month - 1) // 3 + 1} {format_skeleton('y', wall, locale=self.cldr)}"
        if granularity == "second":
            return str(format_datetime(wall, "medium", locale=self.cldr))
        if granularity in TIME_SKELETONS:
            day = format_skeleton(DATE_SKELETONS["day"], wall, locale=self.cldr)
            skeleton = TIME_SKELETONS[granularity]
            if "h" not in str(self.cldr.time_formats["short"].pattern):  # a 24-hour locale
                skeleton = skeleton.replace("h", "H")
            time = format_skeleton(skeleton, wall, locale=self.cldr)
            glue = str(self.cldr.datetime_formats["medium"])
            return glue.replace("{1}", day).replace("{0}", time)
        return format_skeleton(DATE_SKELETONS.get(granularity or "day", DATE_SKELETONS["day"]), wall, locale=self.cldr)


def _half_expand() -> AbstractContextManager[decimal.Context]:
    """Rounding half away from zero, as ``Intl.NumberFormat`` rounds (Babel rounds with the decimal context's rule,
    half to even by default)."""
    return decimal.localcontext(rounding=decimal.ROUND_HALF_UP)


def _as_number(value: Any) -> float | None:
    """``value`` as JavaScript's ``Number()`` reads a result's value (numbers come as numbers or as their text), or
    None when it is none or not finite."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _wall_clock(value: Any, timezone: str) -> datetime | None:
    """A time value as its wall-clock time: a time without an offset already is one (the query was composed in the
    viewer's time zone); one with an offset is read in ``timezone``."""
    if isinstance(value, date):  # a datetime too
        text = value.isoformat()
    elif isinstance(value, str):
        text = value.strip()
    else:
        return None
    zoned = bool(WALL_CLOCK_OFFSET.search(text))
    try:
        moment = datetime.fromisoformat(text.replace(" ", "T").replace("Z", "+00:00"))
    except ValueError:
        return None
    if not zoned or moment.tzinfo is None:
        return moment.replace(tzinfo=None)
    try:
        zone = ZoneInfo(timezone)
    except (KeyError, ValueError):
        zone = ZoneInfo("UTC")
    return moment.astimezone(zone).replace(tzinfo=None)


def _iso_week(wall: datetime) -> str:
    """The ISO week of a day, as 2024-W05 (a Sunday read as the week it ends the eve of, as the page reads one)."""
    day = wall.date()
    if day.weekday() == 6:
        day += timedelta(days=1)
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"
