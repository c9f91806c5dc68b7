"""The TPC-H-like wholesale dataset: a third model for the analyst, in a data team's own vocabulary (TPC-H column
names such as ``l_extendedprice``, ``o_orderpriority``, ``c_mktsegment``; upper-case category values).

Deterministic rows (a seeded ``random.Random``; every date fixed, none read from the clock) written into a DuckDB
file and copied from it into a PostgreSQL schema by ``demo/generate.py``'s ``load_postgres``, value for value, so
the same question suite runs on both and hand-written SQL on either checks the numbers.

The data is a snapshot taken at the end of 2025-06-14: orders from 2023-01-01 to 2025-06-14; a line not shipped by
then has no ship date (line status ``O``), one not received has no receipt date (return flag ``N``).
"""

from __future__ import annotations

import csv
import itertools
import math
import random
import tempfile
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

MODEL = Path(__file__).parent / "model"
SEED = 19920101
# Column names and types, valid in DuckDB and PostgreSQL alike (demo/generate.py's load_postgres copies them).
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "region": (("id", "INTEGER"), ("r_name", "VARCHAR")),
    "nation": (("id", "INTEGER"), ("n_name", "VARCHAR"), ("n_regionkey", "INTEGER")),
    "customer": (
        ("id", "INTEGER"),
        ("c_name", "VARCHAR"),
        ("c_nationkey", "INTEGER"),
        ("c_mktsegment", "VARCHAR"),
        ("c_acctbal", "DECIMAL(12, 2)"),
    ),
    "supplier": (
        ("id", "INTEGER"),
        ("s_name", "VARCHAR"),
        ("s_nationkey", "INTEGER"),
        ("s_acctbal", "DECIMAL(12, 2)"),
    ),
    "part": (
        ("id", "INTEGER"),
        ("p_name", "VARCHAR"),
        ("p_mfgr", "VARCHAR"),
        ("p_brand", "VARCHAR"),
        ("p_type", "VARCHAR"),
        ("p_size", "INTEGER"),
        ("p_container", "VARCHAR"),
        ("p_retailprice", "DECIMAL(12, 2)"),
    ),
    "orders": (
        ("id", "INTEGER"),
        ("o_custkey", "INTEGER"),
        ("o_orderstatus", "VARCHAR"),
        ("o_totalprice", "DECIMAL(12, 2)"),
        ("o_orderdate", "DATE"),
        ("o_orderpriority", "VARCHAR"),
        ("o_clerk", "VARCHAR"),
    ),
    "lineitem": (
        ("id", "INTEGER"),
        ("l_orderkey", "INTEGER"),
        ("l_linenumber", "INTEGER"),
        ("l_partkey", "INTEGER"),
        ("l_suppkey", "INTEGER"),
        ("l_quantity", "INTEGER"),
        ("l_extendedprice", "DECIMAL(12, 2)"),
        ("l_discount", "DECIMAL(4, 2)"),
        ("l_tax", "DECIMAL(4, 2)"),
        ("l_returnflag", "VARCHAR"),
        ("l_linestatus", "VARCHAR"),
        ("l_shipdate", "DATE"),
        ("l_commitdate", "DATE"),
        ("l_receiptdate", "DATE"),
        ("l_shipmode", "VARCHAR"),
    ),
}
FOREIGN_KEYS = (
    ("nation", "n_regionkey", "region"),
    ("customer", "c_nationkey", "nation"),
    ("supplier", "s_nationkey", "nation"),
    ("orders", "o_custkey", "customer"),
    ("lineitem", "l_orderkey", "orders"),
    ("lineitem", "l_partkey", "part"),
    ("lineitem", "l_suppkey", "supplier"),
)

REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]
# TPC-H's nations (name, region index) with a weight: how often customers (and suppliers) are there.
NATIONS = [
    ("ALGERIA", 0, 2), ("ARGENTINA", 1, 4), ("BRAZIL", 1, 7), ("CANADA", 1, 5), ("EGYPT", 4, 3),
    ("ETHIOPIA", 0, 1), ("FRANCE", 3, 6), ("GERMANY", 3, 9), ("INDIA", 2, 8), ("INDONESIA", 2, 3),
    ("IRAN", 4, 2), ("IRAQ", 4, 1), ("JAPAN", 2, 6), ("JORDAN", 4, 1), ("KENYA", 0, 2),
    ("MOROCCO", 0, 2), ("MOZAMBIQUE", 0, 1), ("PERU", 1, 2), ("CHINA", 2, 11), ("ROMANIA", 3, 3),
    ("SAUDI ARABIA", 4, 3), ("VIETNAM", 2, 4), ("RUSSIA", 3, 4), ("UNITED KINGDOM", 3, 7), ("UNITED STATES", 1, 15),
]  # fmt: skip
SEGMENTS = {"AUTOMOBILE": 17, "BUILDING": 26, "FURNITURE": 21, "HOUSEHOLD": 14, "MACHINERY": 22}
PRIORITIES = {"1-URGENT": 17, "2-HIGH": 22, "3-MEDIUM": 26, "4-NOT SPECIFIED": 21, "5-LOW": 14}
SHIP_MODES = {"TRUCK": 21, "MAIL": 17, "SHIP": 16, "RAIL": 14, "AIR": 13, "REG AIR": 11, "FOB": 8}
TYPE_1 = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"]
TYPE_2 = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"]
TYPE_3 = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"]
CONTAINER_1 = ["SM", "LG", "MED", "JUMBO", "WRAP"]
CONTAINER_2 = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"]
COLORS = ["almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched", "blue", "blush",
          "brown", "burlywood", "chartreuse", "chiffon", "chocolate", "coral", "cornflower", "cream", "cyan",
          "dark", "deep", "dim", "dodger", "firebrick", "floral", "forest", "frosted", "gainsboro", "ghost",
          "goldenrod", "green", "grey", "honeydew", "hot", "indian", "ivory", "khaki", "lace", "lavender"]  # fmt: skip
FIRST_DAY = date(2023, 1, 1)
LAST_DAY = date(2025, 6, 14)  # the snapshot: nothing is dated later
CUSTOMERS, SUPPLIERS, PARTS, ORDERS, CLERKS = 613, 40, 200, 1837, 30
CENT = Decimal("0.01")


def _money(value: float) -> Decimal:
    return Decimal(str(round(value, 2))).quantize(CENT)


def rows(seed: int = SEED) -> dict[str, list[tuple[Any, ...]]]:
    """The tables' rows, the same for the same seed."""
    rnd = random.Random(seed)
    region = [(i + 1, name) for i, name in enumerate(REGIONS)]
    nation = [(i + 1, name, r + 1) for i, (name, r, _) in enumerate(NATIONS)]
    nation_weights = [w for _, _, w in NATIONS]
    nation_ids = [n[0] for n in nation]

    customer = []
    for i in range(1, CUSTOMERS + 1):
        segment = None if rnd.random() < 0.015 else rnd.choices(list(SEGMENTS), weights=list(SEGMENTS.values()))[0]
        balance = 0.0 if i % 151 == 0 else rnd.uniform(-999.99, 9999.99)
        customer.append(
            (i, f"Customer#{i:09d}", rnd.choices(nation_ids, weights=nation_weights)[0], segment, _money(balance))
        )
    supplier = [
        (
            i,
            f"Supplier#{i:09d}",
            rnd.choices(nation_ids, weights=nation_weights)[0],
            _money(rnd.uniform(-999.99, 9999.99)),
        )
        for i in range(1, SUPPLIERS + 1)
    ]
    part = []
    for i in range(1, PARTS + 1):
        mfgr = rnd.choices(range(1, 6), weights=[30, 25, 20, 15, 10])[0]
        container = None if rnd.random() < 0.02 else f"{rnd.choice(CONTAINER_1)} {rnd.choice(CONTAINER_2)}"
        part.append(
            (
                i,
                " ".join(rnd.sample(COLORS, 5)),
                f"Manufacturer#{mfgr}",
                f"Brand#{mfgr}{rnd.randint(1, 5)}",
                f"{rnd.choice(TYPE_1)} {rnd.choice(TYPE_2)} {rnd.choice(TYPE_3)}",
                rnd.randint(1, 50),
                container,
                _money(math.exp(rnd.uniform(math.log(4.0), math.log(2100.0)))),
            )
        )
    part_weights = [1.0 / (k**0.6) for k in range(1, PARTS + 1)]
    rnd.shuffle(part_weights)
    part_cumulative = list(itertools.accumulate(part_weights))
    supplier_cumulative = list(itertools.accumulate(1.0 / (k**0.5) for k in range(1, SUPPLIERS + 1)))
    # Customers: a few buy a lot, some never (every 13th customer has no orders).
    buyers = [c for c in range(1, CUSTOMERS + 1) if c % 13]
    buyer_cumulative = list(itertools.accumulate(rnd.paretovariate(1.6) for _ in buyers))
    clerks = [f"Clerk#{k:09d}" for k in range(1, CLERKS + 1)]
    clerk_cumulative = list(itertools.accumulate(1.0 / (k**0.8) for k in range(1, CLERKS + 1)))
    days = (LAST_DAY - FIRST_DAY).days + 1
    day_weights = []
    for d in range(days):
        day = FIRST_DAY + timedelta(days=d)
        season = {10: 1.3, 11: 1.5, 12: 1.25, 1: 0.8, 2: 0.85, 7: 0.9, 8: 0.85}.get(day.month, 1.0)
        day_weights.append((1.0 + 0.8 * d / days) * season * (0.7 if day.weekday() >= 5 else 1.0))
    order_days = sorted(rnd.choices(range(days), weights=day_weights, k=ORDERS))

    orders, lineitem = [], []
    line_id = 0
    for order_id, offset in enumerate(order_days, start=1):
        ordered = FIRST_DAY + timedelta(days=offset)
        clerk = None if rnd.random() < 0.03 else rnd.choices(clerks, cum_weights=clerk_cumulative)[0]
        priority = rnd.choices(list(PRIORITIES), weights=list(PRIORITIES.values()))[0]
        total = Decimal(0)
        statuses = set()
        for number in range(1, rnd.choices(range(1, 8), weights=[12, 18, 20, 18, 14, 10, 8])[0] + 1):
            line_id += 1
            part_id = rnd.choices(range(1, PARTS + 1), cum_weights=part_cumulative)[0]
            supp_id = rnd.choices(range(1, SUPPLIERS + 1), cum_weights=supplier_cumulative)[0]
            quantity = 1 if rnd.random() < 0.03 else rnd.randint(1, 50)
            price = part[part_id - 1][7] * quantity
            discount = Decimal(rnd.randint(0, 10)) / 100
            tax = Decimal(rnd.randint(0, 8)) / 100
            mode = rnd.choices(list(SHIP_MODES), weights=list(SHIP_MODES.values()))[0]
            rush = 0.6 if priority in ("1-URGENT", "2-HIGH") else 1.0
            shipped = ordered + timedelta(days=max(1, int(rnd.expovariate(1 / 12) * rush) + 1))
            committed = ordered + timedelta(days=rnd.randint(30, 90))
            transit = {"AIR": 3, "REG AIR": 5, "FOB": 8, "TRUCK": 9, "RAIL": 14, "MAIL": 12, "SHIP": 24}[mode]
            received = shipped + timedelta(days=rnd.randint(1, transit * 2))
            if shipped > LAST_DAY:
                ship_date, receipt, status, flag = None, None, "O", "N"
            else:
                ship_date, status = shipped, "F"
                if received > LAST_DAY:
                    receipt, flag = None, "N"
                else:
                    returns = 0.09 if mode in ("MAIL", "SHIP") else 0.05
                    receipt, flag = received, ("R" if rnd.random() < returns else "A")
            statuses.add(status)
            total += (price * (1 - discount) * (1 + tax)).quantize(CENT)
            lineitem.append(
                (line_id, order_id, number, part_id, supp_id, quantity, price, discount, tax, flag, status,
                 ship_date, committed, receipt, mode)
            )  # fmt: skip
        order_status = "P" if len(statuses) > 1 else statuses.pop()
        customer_id = rnd.choices(buyers, cum_weights=buyer_cumulative)[0]
        orders.append((order_id, customer_id, order_status, total, ordered, priority, clerk))
    return {
        "region": region,
        "nation": nation,
        "customer": customer,
        "supplier": supplier,
        "part": part,
        "orders": orders,
        "lineitem": lineitem,
    }


def write_duckdb(path: Path) -> None:
    """The dataset in a new DuckDB file (``load_postgres(path, url, tables=TABLES, foreign_keys=FOREIGN_KEYS)``
    copies it into PostgreSQL)."""
    data = rows()
    with tempfile.TemporaryDirectory(prefix="tpch-") as scratch, duckdb.connect(str(path)) as connection:
        for table, columns in TABLES.items():
            connection.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {kind}' for n, kind in columns)})")
            # Through a CSV file: executemany takes minutes for the line items. An empty field is NULL.
            csv_path = Path(scratch) / f"{table}.csv"
            with csv_path.open("w", newline="") as out:
                csv.writer(out).writerows(["" if v is None else v for v in row] for row in data[table])
            connection.execute(f"COPY {table} FROM '{csv_path}' (FORMAT csv, HEADER false)")
