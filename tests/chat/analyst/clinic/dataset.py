"""The clinic dataset: a second model for the analyst, with other names and words than the demo shop's.

Deterministic rows (a seeded generator) written into a DuckDB file and copied from it into a PostgreSQL schema by
``demo/generate.py``'s ``load_postgres``, value for value, so the same question suite runs on both and hand-written
SQL on either checks the numbers.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

MODEL = Path(__file__).parent / "model"
SEED = 20240601
# Column names and types, valid in DuckDB and PostgreSQL alike (demo/generate.py's load_postgres copies them).
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "patients": (
        ("id", "INTEGER"),
        ("full_name", "VARCHAR"),
        ("city", "VARCHAR"),
        ("insurance", "VARCHAR"),
        ("birth_year", "INTEGER"),
        ("registered_at", "TIMESTAMP"),
    ),
    "physicians": (("id", "INTEGER"), ("name", "VARCHAR"), ("specialty", "VARCHAR"), ("site", "VARCHAR")),
    "appointments": (
        ("id", "INTEGER"),
        ("patient_id", "INTEGER"),
        ("physician_id", "INTEGER"),
        ("starts_at", "TIMESTAMP"),
        ("status", "VARCHAR"),
        ("visit_type", "VARCHAR"),
        ("fee", "DECIMAL(10, 2)"),
        ("duration_minutes", "INTEGER"),
        ("wait_minutes", "INTEGER"),
    ),
}
FOREIGN_KEYS = (("appointments", "patient_id", "patients"), ("appointments", "physician_id", "physicians"))
CITIES = ["Lyon", "Lille", "Nantes", "Bordeaux", "Toulouse", "Saint Etienne", "Le Havre"]
INSURANCE = ["public", "private", "uninsured"]
SPECIALTIES = ["cardiology", "dermatology", "pediatrics", "orthopedics", "general practice"]
SITES = ["North Wing", "South Wing", "Central"]
FIRST = ["Alice", "Bruno", "Chloe", "David", "Emma", "Farid", "Gina", "Hugo", "Ines", "Jules", "Lea", "Marc"]
LAST = ["Martin", "Bernard", "Dubois", "Thomas", "Robert", "Petit", "Durand", "Leroy", "Moreau", "Simon"]
VISITS = {"consultation": (50, 90), "follow-up": (30, 60), "check-up": (40, 70), "procedure": (150, 400)}
START = datetime(2023, 1, 1, 8, 0)
DAYS = 912  # to 2025-07-01


def rows(seed: int = SEED) -> dict[str, list[tuple[Any, ...]]]:
    """The tables' rows, the same for the same seed."""
    rnd = random.Random(seed)
    physicians = [
        (i, f"Dr {rnd.choice(FIRST)} {LAST[i % len(LAST)]}", SPECIALTIES[i % len(SPECIALTIES)], SITES[i % len(SITES)])
        for i in range(1, 25)
    ]
    patients = [
        (
            i,
            f"{rnd.choice(FIRST)} {rnd.choice(LAST)}",
            rnd.choice(CITIES),
            rnd.choices(INSURANCE, weights=[6, 3, 1])[0],
            rnd.randint(1940, 2020),
            START - timedelta(days=rnd.randint(0, 700)),
        )
        for i in range(1, 401)
    ]
    appointments = []
    for i in range(1, 3001):
        visit_type = rnd.choices(list(VISITS), weights=[5, 3, 3, 1])[0]
        low, high = VISITS[visit_type]
        starts = START + timedelta(days=rnd.randrange(DAYS), minutes=30 * rnd.randrange(20))
        appointments.append(
            (
                i,
                rnd.randint(1, 400),
                rnd.randint(1, 24),
                starts,
                rnd.choices(["attended", "no-show", "cancelled"], weights=[75, 10, 15])[0],
                visit_type,
                Decimal(rnd.randint(low * 100, high * 100)) / 100,
                rnd.choice([15, 20, 30, 45, 60, 90]),
                rnd.randint(0, 60),
            )
        )
    return {"patients": patients, "physicians": physicians, "appointments": appointments}


def write_duckdb(path: Path) -> None:
    """The dataset in a new DuckDB file (``load_postgres(path, url, tables=TABLES, foreign_keys=FOREIGN_KEYS)``
    copies it into PostgreSQL)."""
    data = rows()
    with duckdb.connect(str(path)) as connection:
        for table, columns in TABLES.items():
            connection.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {kind}' for n, kind in columns)})")
            connection.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in columns)})", data[table])
