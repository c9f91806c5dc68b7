"""Generate the demo e-commerce dataset: users, products, orders and line items in a DuckDB file.

    python demo/generate.py var/demo.duckdb                     # 100k orders
    python demo/generate.py var/demo.duckdb --orders 10000000   # 10M orders (about a minute on 2 cores)
    python demo/generate.py var/demo.duckdb --postgres postgresql://u:p@host/db --schema demo

Every value is a function of the seed and the row's id, computed in DuckDB SQL from ``hash(seed, salt,
id)``: no row-by-row Python, and the same seed gives the same table contents on every run (with the
DuckDB version pinned in requirements.txt; :func:`table_checksums` proves it). Times are UTC, stored as
``TIMESTAMP`` without a zone, orders over the three years 2023-2025 with the business growing
2.5-fold. ``--postgres`` copies the generated tables into a PostgreSQL schema, value for value.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import psycopg

DEFAULT_ORDERS = 100_000
DEFAULT_SEED = 20_240_601

# One schema for both databases: these types mean the same in DuckDB and PostgreSQL.
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "users": (
        ("id", "BIGINT"),
        ("first_name", "VARCHAR"),
        ("last_name", "VARCHAR"),
        ("email", "VARCHAR"),
        ("gender", "VARCHAR"),
        ("age", "INTEGER"),
        ("city", "VARCHAR"),
        ("country", "VARCHAR"),
        ("created_at", "TIMESTAMP"),
    ),
    "products": (
        ("id", "BIGINT"),
        ("name", "VARCHAR"),
        ("category", "VARCHAR"),
        ("price", "DECIMAL(10, 2)"),
        ("created_at", "TIMESTAMP"),
    ),
    "orders": (
        ("id", "BIGINT"),
        ("user_id", "BIGINT"),
        ("status", "VARCHAR"),
        ("amount", "DECIMAL(12, 2)"),
        ("item_count", "INTEGER"),
        ("created_at", "TIMESTAMP"),
        ("completed_at", "TIMESTAMP"),
    ),
    "line_items": (
        ("id", "BIGINT"),
        ("order_id", "BIGINT"),
        ("product_id", "BIGINT"),
        ("quantity", "INTEGER"),
        ("price", "DECIMAL(10, 2)"),
        ("created_at", "TIMESTAMP"),
    ),
}
FOREIGN_KEYS = (
    ("orders", "user_id", "users"),
    ("line_items", "order_id", "orders"),
    ("line_items", "product_id", "products"),
)

# (city, country), most populous first: lower indexes are drawn more often.
CITIES = (
    ("New York", "United States"),
    ("London", "United Kingdom"),
    ("Los Angeles", "United States"),
    ("Berlin", "Germany"),
    ("Paris", "France"),
    ("Toronto", "Canada"),
    ("Chicago", "United States"),
    ("Sydney", "Australia"),
    ("Madrid", "Spain"),
    ("Tokyo", "Japan"),
    ("Manchester", "United Kingdom"),
    ("Munich", "Germany"),
    ("São Paulo", "Brazil"),
    ("Lyon", "France"),
    ("Austin", "United States"),
    ("Vancouver", "Canada"),
    ("Melbourne", "Australia"),
    ("Barcelona", "Spain"),
    ("Osaka", "Japan"),
    ("Hamburg", "Germany"),
    ("Rio de Janeiro", "Brazil"),
    ("Seattle", "United States"),
    ("Edinburgh", "United Kingdom"),
    ("Montreal", "Canada"),
)
FEMALE_NAMES = (
    "Olivia", "Emma", "Ava", "Sophia", "Mia", "Amelia", "Charlotte", "Isabella", "Lucía", "Hannah",
    "Chloé", "Yuki", "Ana", "Grace", "Lena", "Zoe", "Maya", "Nora", "Sara", "Léa",
)  # fmt: skip
MALE_NAMES = (
    "Liam", "Noah", "Oliver", "Elijah", "James", "Lucas", "Mateo", "Leon", "Hugo", "Ethan",
    "Jack", "Finn", "Haruto", "Gabriel", "Daniel", "Arthur", "Louis", "Felix", "Pedro", "Sam",
)  # fmt: skip
LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Garcia", "Miller", "Davis", "Martin", "Müller", "Schmidt",
    "Dubois", "Bernard", "Tanaka", "Suzuki", "Silva", "Santos", "Taylor", "Wilson", "Lopez", "Clark",
    "O'Connor", "Nguyen", "Kowalski", "Rossi", "Novak", "Walker", "Young", "King", "Wright", "Scott",
)  # fmt: skip
# category: (price floor, price ceiling, product nouns)
CATEGORIES = {
    "Electronics": (19, 1499, ("Headphones", "Smartwatch", "Speaker", "Tablet", "Camera", "Charger", "Monitor")),
    "Clothing": (9, 199, ("T-Shirt", "Jeans", "Jacket", "Sneakers", "Dress", "Hoodie", "Scarf")),
    "Home & Kitchen": (9, 399, ("Blender", "Kettle", "Lamp", "Pan", "Rug", "Vase", "Coffee Maker")),
    "Books": (5, 59, ("Novel", "Cookbook", "Atlas", "Biography", "Guide", "Anthology", "Journal")),
    "Sports & Outdoors": (9, 499, ("Tent", "Yoga Mat", "Bicycle Helmet", "Backpack", "Dumbbells", "Racket")),
    "Beauty": (5, 119, ("Serum", "Shampoo", "Lipstick", "Perfume", "Face Cream", "Nail Kit")),
    "Toys & Games": (5, 149, ("Puzzle", "Board Game", "Robot Kit", "Plush Bear", "Building Blocks")),
    "Grocery": (2, 49, ("Coffee Beans", "Olive Oil", "Green Tea", "Dark Chocolate", "Granola", "Honey")),
}
ADJECTIVES = ("Classic", "Premium", "Eco", "Smart", "Compact", "Deluxe", "Essential", "Urban", "Pro", "Vintage")

# Orders span three years; users sign up from half a year earlier so the first orders have buyers.
ORDERS_START = "2023-01-01 00:00:00"
ORDER_DAYS = 1096
USERS_START = "2022-07-01 00:00:00"
USER_SECONDS = 1279 * 86400


@dataclass(frozen=True)
class DemoSizes:
    """How many rows of each kind a dataset of ``orders`` orders has (line items vary, 2.15 per order)."""

    orders: int
    users: int
    products: int

    @classmethod
    def for_orders(cls, orders: int) -> DemoSizes:
        return cls(orders=orders, users=max(100, orders // 5), products=min(5000, max(200, orders // 200)))


def _sql_list(values: Sequence[object]) -> str:
    """A DuckDB list literal of constant strings or numbers (values are ours, quotes doubled)."""
    items = []
    for value in values:
        items.append(str(value) if isinstance(value, int) else "'" + str(value).replace("'", "''") + "'")
    return "[" + ", ".join(items) + "]"


def _pick(values: Sequence[object], u: str, skew: float = 1.0) -> str:
    """SQL choosing one of ``values`` by the uniform number ``u``; ``skew`` > 1 favours the first ones."""
    return f"({_sql_list(values)})[1 + floor({len(values)} * pow({u}, {skew}))::INTEGER]"


def _create_tables(connection: duckdb.DuckDBPyConnection) -> None:
    for table, columns in TABLES.items():
        spec = ", ".join(f"{name} {kind}" for name, kind in columns)
        connection.execute(f"CREATE TABLE {table} ({spec})")


def _fill(connection: duckdb.DuckDBPyConnection, sizes: DemoSizes, seed: int) -> None:
    """Insert every row. The SQL is assembled from this module's constants and integers only."""
    # rnd(salt, id): a uniform number in [0, 1) that depends only on the seed, the salt and the id.
    # hash(a, b, c) combines weakly (draws with different salts came out correlated), so the id's hash
    # is xored with a per-salt key and hashed again.
    connection.execute(
        f"CREATE TEMP MACRO rnd(salt, id) AS "
        f"hash(xor(hash(id::BIGINT), hash({int(seed)}::BIGINT * 1000 + salt))) / 18446744073709551616.0"
    )
    category_names = list(CATEGORIES)
    floors = [CATEGORIES[name][0] for name in category_names]
    ceilings = [CATEGORIES[name][1] for name in category_names]
    category_index = "1 + floor(8 * rnd(20, id))::INTEGER"
    nouns = " ".join(
        f"WHEN {i} THEN {_pick(CATEGORIES[name][2], 'rnd(21, id)')}" for i, name in enumerate(category_names, 1)
    )
    connection.execute(
        f"""
        INSERT INTO products
        SELECT id,
               {_pick(ADJECTIVES, "rnd(22, id)")} || ' ' || CASE c {nouns} END AS name,
               ({_sql_list(category_names)})[c] AS category,
               CAST(greatest(({_sql_list(floors)})[c] + round((({_sql_list(ceilings)})[c] - ({_sql_list(floors)})[c])
                    * pow(rnd(23, id), 2)) - 0.01, 0.99) AS DECIMAL(10, 2)) AS price,
               TIMESTAMP '2022-01-01 00:00:00' + to_seconds(floor(365 * 86400 * rnd(24, id))::BIGINT) AS created_at
        FROM (SELECT range + 1 AS id, {category_index} AS c FROM range({sizes.products}))
        ORDER BY id
        """  # noqa: S608
    )
    connection.execute(
        f"""
        INSERT INTO users
        SELECT id, first_name, last_name,
               lower(replace(replace(first_name || '.' || last_name, '''', ''), ' ', '')) || id || '@example.com',
               gender, age, ({_sql_list([c for c, _ in CITIES])})[city_index],
               ({_sql_list([country for _, country in CITIES])})[city_index], created_at
        FROM (
            SELECT id, gender,
                   CASE gender WHEN 'female' THEN {_pick(FEMALE_NAMES, "rnd(2, id)")}
                               ELSE {_pick(MALE_NAMES, "rnd(2, id)")} END AS first_name,
                   {_pick(LAST_NAMES, "rnd(3, id)")} AS last_name,
                   18 + floor(62 * pow(rnd(4, id), 1.7))::INTEGER AS age,
                   1 + floor({len(CITIES)} * pow(rnd(5, id), 1.6))::INTEGER AS city_index,
                   TIMESTAMP '{USERS_START}' + to_seconds(floor((id - 1 + rnd(6, id)) / {sizes.users}
                       * {USER_SECONDS})::BIGINT) AS created_at
            FROM (SELECT range + 1 AS id, CASE WHEN rnd(1, range + 1) < 0.51 THEN 'female' ELSE 'male' END AS gender
                  FROM range({sizes.users}))
        )
        ORDER BY id
        """  # noqa: S608
    )
    # Order days follow a density rising linearly to 2.5x (inverse CDF of 1 + 1.5p); buyers are users
    # who had signed up by then, early users more often.
    connection.execute(
        f"""
        CREATE TEMP TABLE order_base AS
        SELECT id, created_at,
               1 + floor(rnd(12, id) * greatest(1, least({sizes.users},
                   floor(epoch(created_at - TIMESTAMP '{USERS_START}') / {USER_SECONDS} * {sizes.users}))))::BIGINT
                   AS user_id,
               1 + floor(4 * pow(rnd(13, id), 1.5))::INTEGER AS item_count,
               CASE WHEN s < 0.72 THEN 'completed' WHEN s < 0.81 THEN 'shipped' WHEN s < 0.86 THEN 'processing'
                    WHEN s < 0.95 THEN 'cancelled' ELSE 'returned' END AS status,
               to_seconds(floor(86400 + 9 * 86400 * rnd(15, id))::BIGINT) AS delivery,
               1 + sum(1 + floor(4 * pow(rnd(13, id), 1.5))::INTEGER) OVER (ORDER BY id) - item_count AS first_item_id
        FROM (
            SELECT range + 1 AS id, rnd(14, range + 1) AS s,
                   TIMESTAMP '{ORDERS_START}'
                   + to_days(floor({ORDER_DAYS} * (sqrt(1 + 5.25 * rnd(10, range + 1)) - 1) / 1.5)::INTEGER)
                   + to_seconds(floor(86400 * rnd(11, range + 1))::BIGINT) AS created_at
            FROM range({sizes.orders})
        )
        ORDER BY id
        """  # noqa: S608
    )
    # Line item ids run in order of (order id, position); a fifth of the items are sold at a discount.
    connection.execute(
        f"""
        INSERT INTO line_items
        SELECT o.first_item_id + k AS id,
               o.id, p.id,
               1 + floor(3 * pow(rnd(31, o.id * 4 + k), 3))::INTEGER AS quantity,
               CASE WHEN rnd(32, o.id * 4 + k) < 0.2
                    THEN CAST(round(p.price * (0.7 + 0.2 * rnd(33, o.id * 4 + k)), 2) AS DECIMAL(10, 2))
                    ELSE p.price END AS price,
               o.created_at
        FROM order_base o, range(o.item_count) AS positions(k),
             products p
        WHERE p.id = 1 + floor({sizes.products} * pow(rnd(30, o.id * 4 + k), 1.4))::BIGINT
        ORDER BY o.id, k
        """  # noqa: S608
    )
    connection.execute(
        f"""
        INSERT INTO orders
        SELECT o.id, o.user_id,
               CASE WHEN o.status IN ('completed', 'returned')
                         AND o.created_at + o.delivery > TIMESTAMP '{ORDERS_START}' + to_days({ORDER_DAYS})
                    THEN 'shipped' ELSE o.status END AS status,
               totals.amount, o.item_count, o.created_at,
               CASE WHEN o.status IN ('completed', 'returned')
                         AND o.created_at + o.delivery <= TIMESTAMP '{ORDERS_START}' + to_days({ORDER_DAYS})
                    THEN o.created_at + o.delivery END AS completed_at
        FROM order_base o
        JOIN (SELECT order_id, CAST(sum(quantity * price) AS DECIMAL(12, 2)) AS amount
              FROM line_items GROUP BY order_id) totals ON totals.order_id = o.id
        ORDER BY o.id
        """  # noqa: S608
    )
    connection.execute("DROP TABLE order_base")


def generate(
    path: str | os.PathLike[str], orders: int = DEFAULT_ORDERS, seed: int = DEFAULT_SEED, *, threads: int | None = None
) -> DemoSizes:
    """Write the demo dataset to the DuckDB file ``path``, replacing it atomically; returns the sizes."""
    if orders < 1:
        raise ValueError("orders must be at least 1")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    sizes = DemoSizes.for_orders(orders)
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    config = {"threads": threads} if threads else {}
    connection = duckdb.connect(str(partial), config=config)
    try:
        _create_tables(connection)
        _fill(connection, sizes, seed)
        connection.execute("CHECKPOINT")
    finally:
        connection.close()
    os.replace(partial, target)
    return sizes


def table_checksums(path: str | os.PathLike[str]) -> dict[str, str]:
    """``{table: "<rows>:<xor of the rows' MD5>"}``: equal for equal table contents, in any row order."""
    connection = duckdb.connect(str(path), read_only=True)
    try:
        checksums = {}
        for table in TABLES:
            count, digest = connection.execute(
                f"SELECT count(*), coalesce(bit_xor(md5_number(CAST(t AS VARCHAR))), 0) FROM {table} t"  # noqa: S608
            ).fetchone()
            checksums[table] = f"{count}:{int(digest):032x}"
        return checksums
    finally:
        connection.close()


def load_postgres(
    path: str | os.PathLike[str],
    url: str,
    *,
    schema: str = "demo",
    tables: Mapping[str, Sequence[tuple[str, str]]] = TABLES,
    foreign_keys: Sequence[tuple[str, str, str]] = FOREIGN_KEYS,
) -> dict[str, int]:
    """Copy ``tables`` (the demo's by default; each with an ``id`` key) of the DuckDB file ``path`` into
    ``schema`` of the PostgreSQL database ``url``.

    The tables are replaced (other objects in the schema are left alone), loaded with ``COPY``, then given
    primary keys, ``foreign_keys`` and statistics. Returns the row count of each table.
    """
    if not schema.isidentifier():
        raise ValueError(f"schema must be a plain identifier, not {schema!r}")
    counts: dict[str, int] = {}
    with (
        tempfile.TemporaryDirectory(prefix="demo-copy-") as scratch,
        duckdb.connect(str(path), read_only=True) as source,
        psycopg.connect(url) as target,
    ):
        target.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        for table in reversed(list(tables)):
            target.execute(f'DROP TABLE IF EXISTS "{schema}".{table} CASCADE')
        for table, columns in tables.items():
            target.execute(f'CREATE TABLE "{schema}".{table} ({", ".join(f"{n} {k}" for n, k in columns)})')
            csv_path = Path(scratch) / f"{table}.csv"
            source.execute(f"COPY {table} TO '{csv_path}' (FORMAT csv, HEADER false)")
            with (
                csv_path.open("rb") as data,
                target.cursor() as cursor,
                cursor.copy(f'COPY "{schema}".{table} FROM STDIN (FORMAT csv)') as copy,
            ):
                while chunk := data.read(1 << 20):
                    copy.write(chunk)
            counts[table] = source.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
            target.execute(f'ALTER TABLE "{schema}".{table} ADD PRIMARY KEY (id)')
        for table, column, parent in foreign_keys:
            target.execute(
                f'ALTER TABLE "{schema}".{table} ADD FOREIGN KEY ({column}) REFERENCES "{schema}".{parent} (id)'
            )
            target.execute(f'CREATE INDEX ON "{schema}".{table} ({column})')
        target.execute("ANALYZE " + ", ".join(f'"{schema}".{table}' for table in tables))
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", default="var/demo.duckdb", help="DuckDB file to write")
    parser.add_argument("--orders", type=int, default=DEFAULT_ORDERS, help="number of orders (default 100000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="same seed, same data")
    parser.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all cores)")
    parser.add_argument("--postgres", metavar="URL", help="also load the dataset into this PostgreSQL database")
    parser.add_argument("--schema", default="demo", help="PostgreSQL schema for --postgres (default demo)")
    parser.add_argument("--checksums", action="store_true", help="print a checksum of each table")
    args = parser.parse_args(argv)

    started = time.monotonic()
    sizes = generate(args.path, orders=args.orders, seed=args.seed, threads=args.threads)
    print(
        f"wrote {args.path}: {sizes.orders} orders, {sizes.users} users, {sizes.products} products "
        f"in {time.monotonic() - started:.1f} s"
    )
    if args.checksums:
        for table, checksum in table_checksums(args.path).items():
            print(f"{table} {checksum}")
    if args.postgres:
        started = time.monotonic()
        counts = load_postgres(args.path, args.postgres, schema=args.schema)
        rows = ", ".join(f"{table} {count}" for table, count in counts.items())
        print(f"loaded schema {args.schema}: {rows} in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
