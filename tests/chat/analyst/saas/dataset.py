"""The saas dataset: a third model for the analyst, a subscription business's accounts, subscriptions and invoices.

Deterministic rows (a seeded generator, dates fixed between 2023-01-02 and 2025-08-19, nothing read from the clock)
written into a DuckDB file and copied from it into a PostgreSQL schema by ``demo/generate.py``'s ``load_postgres``,
value for value, so the same question suite (``questions.yml`` here) runs on both and hand-written SQL on either
checks the numbers. Money is in integer cents in the tables (the model shows dollars).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

MODEL = Path(__file__).parent / "model"
SEED = 20250820
# Column names and types, valid in DuckDB and PostgreSQL alike (demo/generate.py's load_postgres copies them).
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "accounts": (
        ("id", "INTEGER"),
        ("name", "VARCHAR"),
        ("tier", "VARCHAR"),
        ("industry", "VARCHAR"),
        ("region", "VARCHAR"),
        ("country", "VARCHAR"),
        ("employees", "INTEGER"),
        ("partner_sourced", "BOOLEAN"),
        ("signed_up_at", "TIMESTAMP"),
    ),
    "subscriptions": (
        ("id", "INTEGER"),
        ("account_id", "INTEGER"),
        ("plan", "VARCHAR"),
        ("billing_interval", "VARCHAR"),
        ("status", "VARCHAR"),
        ("mrr_cents", "INTEGER"),
        ("seats", "INTEGER"),
        ("auto_renew", "BOOLEAN"),
        ("started_at", "TIMESTAMP"),
        ("canceled_at", "TIMESTAMP"),
        ("cancel_reason", "VARCHAR"),
    ),
    "invoices": (
        ("id", "INTEGER"),
        ("subscription_id", "INTEGER"),
        ("account_id", "INTEGER"),
        ("amount_cents", "INTEGER"),
        ("status", "VARCHAR"),
        ("payment_method", "VARCHAR"),
        ("issued_at", "TIMESTAMP"),
        ("paid_at", "TIMESTAMP"),
    ),
}
FOREIGN_KEYS = (
    ("subscriptions", "account_id", "accounts"),
    ("invoices", "subscription_id", "subscriptions"),
    ("invoices", "account_id", "accounts"),
)

START = datetime(2023, 1, 2)
END = datetime(2025, 8, 19, 23, 59)  # the last moment with data; the suite's clock is 2025-08-20
TIERS = {"starter": 48, "growth": 29, "scale": 15, "enterprise": 8}
INDUSTRIES = {
    "ecommerce": 21,
    "fintech": 17,
    "software": 14,
    "healthcare": 12,
    "logistics": 10,
    "manufacturing": 9,
    "education": 7,
    "media": 6,
}
REGIONS = {
    "North America": (44, ["United States", "Canada", "Mexico"], [8, 2, 1]),
    "EMEA": (31, ["United Kingdom", "Germany", "France", "Netherlands", "South Africa"], [4, 4, 3, 2, 1]),
    "APAC": (17, ["Australia", "Japan", "Singapore", "India"], [3, 2, 2, 2]),
    "LATAM": (8, ["Brazil", "Argentina", "Chile"], [4, 2, 1]),
}
# plan, billing interval, seats range, cents per seat, base cents
PLANS = {
    "starter": [("starter_monthly", "month", (1, 5), 1500, 1900)],
    "growth": [("growth_monthly", "month", (4, 30), 2500, 0), ("growth_annual", "year", (5, 40), 2100, 0)],
    "scale": [("scale_annual", "year", (20, 150), 3000, 0)],
    "enterprise": [("enterprise", "year", (120, 900), 3400, 0)],
}
ADDON = ("analytics_addon", "month")
MONTHLY_CHURN = {"starter": 0.042, "growth": 0.022, "scale": 0.012, "enterprise": 0.006, "addon": 0.035}
REASONS = {"price": 29, "switched_competitor": 22, "no_longer_needed": 17, "missing_features": 14, "payment_failed": 11}
# company names: FIRST + SECOND + SUFFIX, e.g. "Cedarstone Media"
FIRST = ["North", "Blue", "Bright", "Iron", "Silver", "Red", "Clear", "Swift", "Green", "Summit", "Cedar", "Harbor"]
FIRST += ["Atlas", "Nova", "Pioneer", "Quartz", "Maple", "Orbit", "Lumen", "Vertex", "Delta", "Falcon", "Granite"]
SECOND = ["wind", "stone", "field", "bridge", "line", "path", "peak", "wave", "forge", "gate"]
SECOND += ["light", "works", "point", "ridge", "craft", "leaf", "spring", "bay", "loop"]
SUFFIX = ["Labs", "Inc", "Group", "Systems", "Co", "Analytics", "Health", "Logistics", "Partners", "Digital", "GmbH"]
SUFFIX += ["Ltd", "Software", "Retail", "Media"]


def _pick(rnd: random.Random, weights: dict[str, Any]) -> str:
    names = list(weights)
    values = [w[0] if isinstance(w, tuple) else w for w in weights.values()]
    return rnd.choices(names, weights=values)[0]


def _add_months(moment: datetime, months: int) -> datetime:
    month = moment.month - 1 + months
    return moment.replace(year=moment.year + month // 12, month=month % 12 + 1, day=min(moment.day, 28))


def rows(seed: int = SEED) -> dict[str, list[tuple[Any, ...]]]:
    """The tables' rows, the same for the same seed."""
    rnd = random.Random(seed)
    span = (END - timedelta(days=5) - START).total_seconds()
    accounts: list[tuple[Any, ...]] = []
    names: set[str] = set()
    for i in range(1, 461):
        while True:
            name = f"{rnd.choice(FIRST)}{rnd.choice(SECOND)} {rnd.choice(SUFFIX)}"
            if name not in names:
                names.add(name)
                break
        tier = _pick(rnd, TIERS)
        region = _pick(rnd, REGIONS)
        _, countries, weights = REGIONS[region]
        country = None if rnd.random() < 0.03 else rnd.choices(countries, weights=weights)[0]
        industry = None if rnd.random() < 0.04 else _pick(rnd, INDUSTRIES)
        size = {"starter": 12, "growth": 60, "scale": 300, "enterprise": 2500}[tier]
        employees = None if rnd.random() < 0.12 else max(1, int(rnd.lognormvariate(0, 0.7) * size))
        signed_up = START + timedelta(seconds=int(span * rnd.random() ** 0.85))
        signed_up = signed_up.replace(second=0, microsecond=0)
        accounts.append((i, name, tier, industry, region, country, employees, rnd.random() < 0.16, signed_up))

    subscriptions: list[tuple[Any, ...]] = []
    invoices: list[tuple[Any, ...]] = []
    for account in accounts:
        account_id, tier, signed_up = account[0], account[2], account[8]
        starts = [("main", signed_up + timedelta(days=rnd.choice([0, 0, 0, 1, 3, 14]), hours=rnd.randint(0, 5)))]
        if rnd.random() < 0.24:
            starts.append(("addon", starts[0][1] + timedelta(days=rnd.randint(20, 420), hours=rnd.randint(1, 9))))
        for kind, started in starts:
            if started > END:
                continue
            if kind == "main":
                plan, interval, (low, high), per_seat, base = rnd.choice(PLANS[tier])
                seats = int(low + (high - low) * rnd.random() ** 2)
                discount = 0.0 if tier in ("starter", "growth") and rnd.random() < 0.8 else rnd.uniform(0.0, 0.3)
                mrr = round((base + seats * per_seat) * (1 - discount))
                churn = MONTHLY_CHURN[tier]
            else:
                plan, interval = ADDON
                seats = None
                mrr = rnd.choice([4900, 9900, 9900, 19900, 49900])
                churn = MONTHLY_CHURN["addon"]
            if account[7] and rnd.random() < 0.04:
                mrr = 0  # a partner's complimentary plan
            subscription_id = len(subscriptions) + 1
            trialing = kind == "main" and started > END - timedelta(days=30) and rnd.random() < 0.8
            canceled_at = None
            if not trialing:
                month = 1
                while (moment := _add_months(started, month)) <= END:
                    if rnd.random() < churn:
                        canceled_at = moment - timedelta(days=rnd.randint(0, 20), hours=rnd.randint(0, 12))
                        break
                    month += 1
            if trialing:
                status = "trialing"
            elif canceled_at is not None:
                status = "canceled"
            else:
                status = "past_due" if rnd.random() < 0.06 else "active"
            reason = None if canceled_at is None or rnd.random() < 0.05 else _pick(rnd, REASONS)
            auto_renew = (interval == "year" and rnd.random() < 0.85) or (interval == "month" and rnd.random() < 0.97)
            subscriptions.append(
                (
                    subscription_id,
                    account_id,
                    plan,
                    interval,
                    status,
                    mrr,
                    seats,
                    auto_renew,
                    started,
                    canceled_at,
                    reason,
                )
            )
            if trialing:
                continue
            step = 12 if interval == "year" else 1
            issued_dates = []
            k = 0
            while (issued := _add_months(started, k * step)) <= END and (canceled_at is None or issued < canceled_at):
                issued_dates.append(issued.replace(hour=6, minute=0))
                k += 1
            for n, issued in enumerate(issued_dates):
                amount = mrr * step
                if n == 0 and rnd.random() < 0.3:
                    amount = int(amount * rnd.randint(8, 30) / 30)  # prorated first invoice
                elif rnd.random() < 0.03:
                    amount = int(amount * rnd.uniform(0.5, 0.95))  # a credit
                if n == 0 and rnd.random() < 0.012:
                    amount = 0  # a 100% coupon
                last = n == len(issued_dates) - 1
                age = (END - issued).days
                draw = rnd.random()
                if status == "past_due" and n >= len(issued_dates) - 2 and age > 3:
                    state = "open"
                elif status == "canceled" and last and reason == "payment_failed":
                    state = "uncollectible"
                elif age < 30 and draw < 0.35:
                    state = "open"
                elif draw < 0.022:
                    state = "void"
                elif draw < 0.034:
                    state = "uncollectible"
                else:
                    state = "paid"
                paid_at = method = None
                if state == "paid":
                    weights = [70, 18, 12] if step == 1 else [25, 35, 40]  # annual plans pay by wire and ach more
                    method = rnd.choices(["card", "ach", "wire"], weights=weights)[0]
                    days = 0 if method == "card" and rnd.random() < 0.8 else int(rnd.expovariate(1 / 12))
                    paid_at = issued + timedelta(days=days, hours=rnd.randint(0, 15), minutes=rnd.randint(0, 59))
                    if paid_at > END:
                        paid_at, method, state = None, None, "open"
                invoices.append(
                    (len(invoices) + 1, subscription_id, account_id, amount, state, method, issued, paid_at)
                )
    invoices.sort(key=lambda row: (row[6], row[1]))
    invoices = [(i, *row[1:]) for i, row in enumerate(invoices, start=1)]
    return {"accounts": accounts, "subscriptions": subscriptions, "invoices": invoices}


def write_duckdb(path: Path) -> None:
    """The dataset in a new DuckDB file (``load_postgres(path, url, tables=TABLES, foreign_keys=FOREIGN_KEYS)``
    copies it into PostgreSQL)."""
    data = rows()
    with duckdb.connect(str(path)) as connection:
        for table, columns in TABLES.items():
            connection.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {kind}' for n, kind in columns)})")
            row = f"({', '.join('?' for _ in columns)})"
            table_rows = data[table]
            for first in range(0, len(table_rows), 500):  # multi-row inserts: executemany is slow in DuckDB
                chunk = table_rows[first : first + 500]
                connection.execute(
                    f"INSERT INTO {table} VALUES {', '.join(row for _ in chunk)}",
                    [value for values in chunk for value in values],
                )
