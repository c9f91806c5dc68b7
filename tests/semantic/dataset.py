"""A small, fixed shop dataset (users, products, orders, line items) for DuckDB and PostgreSQL tests.

Times are UTC instants stored as naive ``TIMESTAMP`` values (Cube's convention); two orders sit on each
side of the Europe/Berlin DST changes of 2024 so time-zone tests can see the difference.
"""

from __future__ import annotations

from datetime import datetime

USERS = [
    # id, name, country, city, created_at, lifetime_value
    (1, "Ada", "DE", "Berlin", datetime(2023, 1, 5, 10, 0), 1500),
    (2, "Bob", "DE", "Munich", datetime(2023, 3, 1, 8, 30), 250),
    (3, "Cleo", "FR", "Paris", datetime(2023, 6, 15, 12, 0), 50),
    (4, "Dan", "US", "Boston", datetime(2023, 9, 30, 23, 0), None),
    (5, "Eve", None, None, datetime(2024, 1, 1, 0, 0), 100),
]
PRODUCTS = [
    (1, "Widget", "tools", 10),
    (2, "Gadget", "tools", 25),
    (3, "Book", "media", 15),
    (4, "Lamp 50% off", "home", 40),
]
ORDERS = [
    # id, user_id, status, amount, created_at (UTC)
    (1, 1, "completed", 100, datetime(2024, 1, 15, 9, 0)),
    (2, 1, "completed", 50, datetime(2024, 1, 31, 23, 30)),  # Feb 1st in Berlin
    (3, 2, "shipped", 75, datetime(2024, 2, 10, 14, 0)),
    (4, 3, "processing", 20, datetime(2024, 3, 30, 22, 30)),  # Mar 30 23:30 CET
    (5, 3, "completed", 300, datetime(2024, 3, 31, 1, 30)),  # Mar 31 03:30 CEST (after the spring change)
    (6, 4, "cancelled", 10, datetime(2024, 10, 26, 22, 30)),  # Oct 27 00:30 CEST
    (7, 4, "completed", 60, datetime(2024, 10, 27, 1, 30)),  # Oct 27 02:30 CET (after the autumn change)
    (8, 5, "shipped", 5, datetime(2024, 12, 31, 23, 59)),  # Jan 1st 2025 in Berlin
    (9, 2, "completed", 40, datetime(2024, 6, 1, 12, 0)),
    (10, None, "completed", 15, datetime(2024, 6, 2, 12, 0)),
]
LINE_ITEMS = [
    # id, order_id, product_id, quantity, price
    (1, 1, 1, 2, 10),
    (2, 1, 2, 1, 25),
    (3, 1, 3, 3, 15),
    (4, 2, 1, 5, 10),
    (5, 3, 4, 1, 40),
    (6, 5, 2, 4, 25),
    (7, 5, 4, 2, 40),
    (8, 7, 3, 1, 15),
    (9, 9, 1, 1, 10),
    (10, 9, 3, 2, 15),
]

SCHEMA = {
    "users": "id INTEGER PRIMARY KEY, name VARCHAR, country VARCHAR, city VARCHAR, created_at TIMESTAMP, "
    "lifetime_value INTEGER",
    "products": "id INTEGER PRIMARY KEY, name VARCHAR, category VARCHAR, price INTEGER",
    "orders": "id INTEGER PRIMARY KEY, user_id INTEGER, status VARCHAR, amount INTEGER, created_at TIMESTAMP",
    "line_items": "id INTEGER PRIMARY KEY, order_id INTEGER, product_id INTEGER, quantity INTEGER, price INTEGER",
}
ROWS = {"users": USERS, "products": PRODUCTS, "orders": ORDERS, "line_items": LINE_ITEMS}
