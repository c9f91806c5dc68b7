"""The pre-aggregation store reads a rollup's partitions as one table without changing a value: a decimal column
takes its scale from each partition's own values when it is written, and the union of the partitions keeps the
largest (DuckDB alone would type the union of DECIMAL(38, 2) and DECIMAL(38, 0) as DECIMAL(38, 0), rounding cents).
"""

from __future__ import annotations

import os
import time
from decimal import Decimal
from pathlib import Path

import pytest

from embedadmin.semantic.serving.rollup_store import (
    RollupSource,
    StoreCatalog,
    close_rollup_sources,
    remove_unreferenced,
    write_partition,
)
from embedadmin.semantic.sources.base import QueryResult

DEPLOYMENT_ID = 7


@pytest.fixture
def store(settings, tmp_path: Path) -> Path:
    settings.PRE_AGGREGATIONS = {**settings.PRE_AGGREGATIONS, "DIR": tmp_path}
    yield tmp_path / str(DEPLOYMENT_ID)
    close_rollup_sources()


def partition(directory: Path, name: str, rows: list[tuple[str, Decimal | None]]) -> str:
    result = QueryResult(columns=["country", "revenue"], types=["string", "decimal"], rows=rows)
    write_partition(
        directory=directory, file_name=name, columns=["users__country", "line_items__revenue"], result=result
    )
    return name


def test_partitions_with_other_scales_are_read_at_the_largest(store: Path) -> None:
    # Given a rollup partitioned by year: 2025 holds cents, 2026 only NULLs (its orders have no line items yet:
    # written as DECIMAL(38, 0)) and 2024 whole numbers only
    files = (
        partition(store, "revenue_2024.duckdb", [("Germany", Decimal("3"))]),
        partition(store, "revenue_2025.duckdb", [("Germany", Decimal("10.25")), ("France", Decimal("0.50"))]),
        partition(store, "revenue_2026.duckdb", [("Germany", None)]),
    )
    source = RollupSource(StoreCatalog(DEPLOYMENT_ID, (("orders__revenue", files),)))
    try:
        # When the store sums them, and reads them row by row
        total = source.execute('SELECT sum("line_items__revenue") FROM "orders__revenue"', [], timeout_s=10)
        rows = source.execute(
            'SELECT "users__country", "line_items__revenue" FROM "orders__revenue" ORDER BY 2 NULLS LAST',
            [],
            timeout_s=10,
        )
    finally:
        source.close()
    # Then no value is rounded
    assert total.rows == [(Decimal("13.75"),)]
    assert rows.rows == [
        ("France", Decimal("0.50")),
        ("Germany", Decimal("3.00")),
        ("Germany", Decimal("10.25")),
        ("Germany", None),
    ]


def test_the_union_is_typed_with_the_largest_scale(store: Path) -> None:
    files = (
        partition(store, "revenue_2024.duckdb", [("Germany", Decimal("1.5"))]),
        partition(store, "revenue_2025.duckdb", [("France", Decimal("2.25"))]),
    )
    source = RollupSource(StoreCatalog(DEPLOYMENT_ID, (("orders__revenue", files),)))
    try:
        described = source.execute('DESCRIBE SELECT * FROM "orders__revenue"', [], timeout_s=10)
        total = source.execute('SELECT sum("line_items__revenue") FROM "orders__revenue"', [], timeout_s=10)
    finally:
        source.close()
    assert [(row[0], row[1]) for row in described.rows] == [
        ("users__country", "VARCHAR"),
        ("line_items__revenue", "DECIMAL(38,2)"),
    ]
    assert total.rows == [(Decimal("3.75"),)]


def test_a_file_built_long_ago_then_replaced_is_kept_its_grace_period(store: Path) -> None:
    # given: a partition's file written an hour ago, and the file that replaces it, written now
    old = partition(store, "orders__main_aaaa_1.duckdb", [("DE", Decimal("1.00"))])
    new = partition(store, "orders__main_aaaa_2.duckdb", [("DE", Decimal("2.00"))])
    hour_ago = time.time() - 3600
    os.utime(store / old, (hour_ago, hour_ago))

    # when: a collection finds the old file in use, then, once it is replaced, the next one finds it unused
    assert remove_unreferenced(store, lambda: {old}, older_than_s=600) == 0
    removed = remove_unreferenced(store, lambda: {new}, older_than_s=600)

    # then: it is kept (its grace period counts from when it was last found in use), then removed after it
    assert removed == 0
    assert (store / old).exists()
    later = time.time() - 601
    os.utime(store / old, (later, later))
    assert remove_unreferenced(store, lambda: {new}, older_than_s=600) == 1
    assert not (store / old).exists()
    assert (store / new).exists()
