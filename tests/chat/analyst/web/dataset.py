"""The web analytics dataset: a third model for the analyst, a product site's sessions and the events in them.

Deterministic rows (a seeded generator, no clock) from 2023-01-01 to 2025-08-19, written into a DuckDB file and
copied from it into a PostgreSQL schema by ``demo/generate.py``'s ``load_postgres``, value for value, so the same
question suite (``questions.yml``) runs on both and hand-written SQL on either checks the numbers.

The shape is a real site's: traffic grows over the years and peaks in November and December, mobile is the largest
device but converts worst, most visits come from organic search, direct traffic has no UTM source or medium
(NULL), a few sessions carry a source without a medium (the model's ``Unassigned`` channel), campaigns are set only
on paid and e-mail traffic, a bounced session is one page view and zero seconds, a few sessions lost their
duration (NULL), revenue is set on purchase events only, with one fully discounted order (0.00) and a few large
team orders.
"""

from __future__ import annotations

import csv
import math
import random
import tempfile
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

MODEL = Path(__file__).parent / "model"
SEED = 20230101
# Column names and types, valid in DuckDB and PostgreSQL alike (demo/generate.py's load_postgres copies them).
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "sessions": (
        ("id", "INTEGER"),
        ("visitor_id", "VARCHAR"),
        ("started_at", "TIMESTAMP"),
        ("device", "VARCHAR"),
        ("browser", "VARCHAR"),
        ("country", "VARCHAR"),
        ("utm_source", "VARCHAR"),
        ("utm_medium", "VARCHAR"),
        ("utm_campaign", "VARCHAR"),
        ("landing_page", "VARCHAR"),
        ("duration_seconds", "INTEGER"),
        ("bounced", "BOOLEAN"),
    ),
    "events": (
        ("id", "INTEGER"),
        ("session_id", "INTEGER"),
        ("event_name", "VARCHAR"),
        ("occurred_at", "TIMESTAMP"),
        ("page_path", "VARCHAR"),
        ("revenue", "DECIMAL(10, 2)"),
    ),
}
FOREIGN_KEYS = (("events", "session_id", "sessions"),)

FIRST_DAY = date(2023, 1, 1)
LAST_DAY = date(2025, 8, 19)  # the suite's clock is the next morning
DEVICES = {"mobile": 55, "desktop": 38, "tablet": 7}
BROWSERS = {
    "desktop": {"Chrome": 63, "Edge": 14, "Safari": 11, "Firefox": 10, "Opera": 2},
    "mobile": {"Chrome": 52, "Safari": 37, "Samsung Internet": 9, "Firefox": 2},
    "tablet": {"Safari": 61, "Chrome": 35, "Samsung Internet": 4},
}
COUNTRIES = {
    "United States": 340,
    "United Kingdom": 121,
    "Germany": 97,
    "Canada": 78,
    "France": 66,
    "India": 58,
    "Australia": 47,
    "Netherlands": 36,
    "Brazil": 29,
    "Spain": 24,
    "Japan": 17,
    "Sweden": 13,
    "Mexico": 10,
    "Poland": 8,
}
# channel: weight, bounce probability, (source, weight) choices, medium
CHANNELS: dict[str, tuple[int, float, dict[str | None, int], str | None]] = {
    "organic": (38, 0.47, {"google": 85, "bing": 9, "duckduckgo": 4, "ecosia": 2}, "organic"),
    "direct": (21, 0.41, {None: 1}, None),
    "cpc": (15, 0.37, {"google": 88, "bing": 12}, "cpc"),
    "paid_social": (7, 0.61, {"facebook": 46, "instagram": 31, "linkedin": 15, "tiktok": 8}, "paid_social"),
    "social": (6, 0.57, {"linkedin": 38, "reddit": 27, "facebook": 20, "twitter": 15}, "social"),
    "email": (8, 0.31, {"newsletter": 1}, "email"),
    "referral": (
        4,
        0.44,
        {"producthunt.com": 41, "g2.com": 29, "medium.com": 19, "news.ycombinator.com": 11},
        "referral",
    ),
    "unassigned": (1, 0.69, {"chatgpt.com": 55, "perplexity.ai": 30, "partner_portal": 15}, None),
}
# seasonal campaigns of paid social and e-mail: name, first day, last day
PROMOTIONS = (
    ("black_friday_2023", date(2023, 11, 20), date(2023, 12, 1)),
    ("spring_sale_2024", date(2024, 3, 15), date(2024, 4, 15)),
    ("summer_launch_2024", date(2024, 6, 10), date(2024, 7, 10)),
    ("black_friday_2024", date(2024, 11, 22), date(2024, 12, 2)),
    ("spring_sale_2025", date(2025, 3, 14), date(2025, 4, 14)),
)
BLOG = ["/blog/ga4-migration-guide", "/blog/utm-best-practices", "/blog/seo-checklist", "/blog/cohort-analysis-101"]
PRODUCTS = {"/product/starter": Decimal("29.00"), "/product/pro": Decimal("79.00"), "/product/team": Decimal("249.00")}
LANDING = {
    "organic": {
        "/": 18,
        BLOG[0]: 21,
        BLOG[1]: 14,
        BLOG[2]: 11,
        BLOG[3]: 6,
        "/features": 9,
        "/pricing": 8,
        "/docs/getting-started": 13,
    },
    "direct": {"/": 62, "/pricing": 14, "/docs/getting-started": 11, "/features": 5, "/product/pro": 8},
    "cpc": {"/pricing": 41, "/": 17, "/product/pro": 19, "/product/starter": 15, "/features": 8},
    "paid_social": {"/product/starter": 34, "/product/pro": 27, "/pricing": 22, "/": 17},
    "social": {BLOG[0]: 26, BLOG[1]: 19, BLOG[3]: 15, "/": 23, "/features": 17},
    "email": {BLOG[1]: 24, BLOG[2]: 13, "/pricing": 22, "/product/pro": 21, "/": 20},
    "referral": {"/": 44, "/features": 24, "/pricing": 32},
    "unassigned": {"/": 37, "/pricing": 33, "/docs/getting-started": 30},
}
PAGES = ["/", "/pricing", "/features", *BLOG, *PRODUCTS, "/docs/getting-started", "/about", "/contact"]
SEASON = {1: 0.86, 2: 0.9, 3: 1.04, 4: 0.97, 5: 0.95, 6: 1.0, 7: 0.88, 8: 0.84, 9: 1.02, 10: 1.08, 11: 1.37, 12: 1.19}
WEEKDAY = (1.12, 1.15, 1.1, 1.06, 0.97, 0.74, 0.79)


def _pick(rnd: random.Random, weights: dict[Any, int]) -> Any:
    return rnd.choices(list(weights), weights=list(weights.values()))[0]


def _poisson(rnd: random.Random, lam: float) -> int:
    limit, k, p = math.exp(-lam), 0, rnd.random()
    while p > limit:
        k += 1
        p *= rnd.random()
    return k


def _campaign(rnd: random.Random, channel: str, day: date) -> str | None:
    promotion = next((name for name, first, last in PROMOTIONS if first <= day <= last), None)
    if channel == "cpc":
        if promotion and rnd.random() < 0.35:
            return promotion
        return "brand_search" if rnd.random() < 0.42 else "generic_search"
    if channel == "paid_social":
        return promotion if promotion and rnd.random() < 0.8 else "always_on_retargeting"
    if channel == "email":
        return promotion if promotion and rnd.random() < 0.7 else "weekly_digest"
    return None


def _order_value(rnd: random.Random, page: str) -> Decimal:
    price = PRODUCTS[
        page if page in PRODUCTS else _pick(rnd, {"/product/starter": 5, "/product/pro": 4, "/product/team": 1})
    ]
    quantity = (
        5 if price == PRODUCTS["/product/team"] and rnd.random() < 0.12 else rnd.choices([1, 2, 3], [86, 11, 3])[0]
    )
    value = price * quantity
    if rnd.random() < 0.23:  # a discount code: 10, 15 or 20 percent off
        value = (value * (100 - rnd.choice([10, 15, 20])) / 100).quantize(Decimal("0.01"))
    if rnd.random() < 0.31:  # sales tax on some orders
        value = (value * Decimal("1.0825")).quantize(Decimal("0.01"))
    return value


def rows(seed: int = SEED) -> dict[str, list[tuple[Any, ...]]]:
    """The tables' rows, the same for the same seed."""
    rnd = random.Random(seed)
    sessions: list[tuple[Any, ...]] = []
    events: list[tuple[Any, ...]] = []
    visitors: list[tuple[str, str, str | None, str | None]] = []  # id, device, browser, country
    days = (LAST_DAY - FIRST_DAY).days + 1
    free_order_given = False
    for offset in range(days):
        day = FIRST_DAY + timedelta(days=offset)
        growth = 2.1 + 2.9 * offset / days  # about 2 sessions a day at the start, 5 at the end
        for _ in range(_poisson(rnd, growth * SEASON[day.month] * WEEKDAY[day.weekday()])):
            if visitors and rnd.random() < 0.28:  # a returning visitor, more likely a recent one
                visitor = visitors[max(0, len(visitors) - 1 - int(rnd.expovariate(1 / 120)))]
            else:
                device = _pick(rnd, DEVICES)
                browser = None if rnd.random() < 0.012 else _pick(rnd, BROWSERS[device])
                country = None if rnd.random() < 0.021 else _pick(rnd, COUNTRIES)
                visitor = (f"V{len(visitors) + 1:05d}", device, browser, country)
                visitors.append(visitor)
            visitor_id, device, browser, country = visitor
            channel = _pick(rnd, {name: spec[0] for name, spec in CHANNELS.items()})
            _, bounce, sources, medium = CHANNELS[channel]
            source = _pick(rnd, sources)
            landing = _pick(rnd, LANDING[channel])
            bounce += {"mobile": 0.07, "tablet": 0.03, "desktop": -0.06}[device]
            bounced = rnd.random() < bounce
            hour = min(23, max(0, int(rnd.gauss(14.5, 4.2))))
            started = datetime(day.year, day.month, day.day, hour, rnd.randrange(60), rnd.randrange(60))
            session_id = len(sessions) + 1
            steps: list[tuple[str, str, Decimal | None]] = [("page_view", landing, None)]
            if not bounced:
                page = landing
                for _ in range(1 + int(rnd.expovariate(1 / 1.8))):
                    page = rnd.choice([p for p in PAGES if p != page])
                    steps.append(("page_view", page, None))
                if rnd.random() < 0.07 + (0.04 if landing == "/pricing" else 0):
                    steps.append(("signup", "/signup", None))
                cart = {"desktop": 0.31, "tablet": 0.23, "mobile": 0.17}[device] + (
                    0.07 if channel in ("email", "cpc") else 0
                )
                if rnd.random() < cart:
                    product = page if page in PRODUCTS else rnd.choice(list(PRODUCTS))
                    if product != page:
                        steps.append(("page_view", product, None))
                    steps.append(("add_to_cart", product, None))
                    if rnd.random() < 0.63:
                        steps.append(("begin_checkout", "/checkout", None))
                        if rnd.random() < {"desktop": 0.62, "tablet": 0.55, "mobile": 0.44}[device]:
                            value = _order_value(rnd, product)
                            if not free_order_given and started.year == 2024 and started.month == 9:
                                value, free_order_given = Decimal("0.00"), True  # a 100 percent coupon
                            steps.append(("purchase", "/checkout/thank-you", value))
            if bounced:
                duration: int | None = 0
                gaps = [0]
            else:
                gaps = [0] + [int(rnd.lognormvariate(math.log(38), 0.8)) + 3 for _ in steps[1:]]
                duration = sum(gaps) + int(rnd.lognormvariate(math.log(25), 0.9))
                if rnd.random() < 0.004:  # a tab left open: hours
                    duration += rnd.randint(7200, 14000)
                if rnd.random() < 0.006:  # the session's end was never recorded
                    duration = None
            sessions.append(
                (
                    session_id,
                    visitor_id,
                    started,
                    device,
                    browser,
                    country,
                    source,
                    medium,
                    _campaign(rnd, channel, day),
                    landing,
                    duration,
                    bounced,
                )
            )
            moment = started
            for gap, (name, path, revenue) in zip(gaps, steps, strict=True):
                moment += timedelta(seconds=gap)
                events.append((len(events) + 1, session_id, name, moment, path, revenue))
    return {"sessions": sessions, "events": events}


def write_duckdb(path: Path) -> None:
    """The dataset in a new DuckDB file (``load_postgres(path, url, tables=TABLES, foreign_keys=FOREIGN_KEYS)``
    copies it into PostgreSQL). Rows go through CSV files and ``COPY``: ``executemany`` takes minutes here."""
    data = rows()
    with tempfile.TemporaryDirectory(prefix="web-dataset-") as scratch, duckdb.connect(str(path)) as connection:
        for table, columns in TABLES.items():
            connection.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {kind}' for n, kind in columns)})")
            csv_path = Path(scratch) / f"{table}.csv"
            with csv_path.open("w", newline="") as out:
                writer = csv.writer(out)
                for row in data[table]:
                    writer.writerow([_cell(value) for value in row])
            connection.execute(f"COPY {table} FROM '{csv_path}' (FORMAT csv, HEADER false, NULLSTR '\\N')")


def _cell(value: Any) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)
