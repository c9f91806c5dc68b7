"""A cube's ``pre_aggregations`` compiled and validated (``semantic/modeling/preaggregations.py``): every key Cube's
rollups take, the faults named with file, line and member, and the types this server refuses by name."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from embedadmin.semantic import ModelError, QueryContext, load_model, meta

CUBE = """
cubes:
  - name: orders
    sql_table: orders
    joins:
      - name: users
        sql: "{CUBE}.user_id = {users.id}"
        relationship: many_to_one
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
      - name: status
        sql: status
        type: string
      - name: created_at
        sql: created_at
        type: time
    measures:
      - name: count
        type: count
      - name: total
        sql: amount
        type: sum
      - name: customers
        sql: user_id
        type: count_distinct
    segments:
      - name: completed
        sql: "{CUBE}.status = 'completed'"
    pre_aggregations:
{rollups}
  - name: users
    sql_table: users
    dimensions:
      - name: id
        sql: id
        type: number
        primary_key: true
      - name: country
        sql: country
        type: string
"""


def compile_rollups(tmp_path: Path, rollups: str):
    (tmp_path / "orders.yml").write_text(CUBE.replace("{rollups}", textwrap.indent(textwrap.dedent(rollups), " " * 6)))
    return load_model(tmp_path, dialect="duckdb", check_interval=0)


def error_of(tmp_path: Path, rollups: str) -> ModelError:
    version = compile_rollups(tmp_path, rollups)
    assert version.error is not None
    return version.error


def test_every_key_of_a_rollup_is_compiled(tmp_path: Path) -> None:
    version = compile_rollups(
        tmp_path,
        """
        - name: main
          measures: [count, CUBE.total]
          dimensions: ["{CUBE}.status", users.country]
          segments: [completed]
          time_dimension: orders.created_at
          granularity: day
          partition_granularity: month
          build_range_start: {sql: "SELECT '2024-01-01'"}
          build_range_end: {sql: "SELECT now()"}
          refresh_key: {every: 1 day, incremental: true, update_window: 7 day}
          indexes:
            - name: by_status
              columns: [status]
          scheduledRefresh: false
        - name: nightly
          measures: [count]
          refresh_key: {every: "0 3 * * *", timezone: Europe/Berlin}
        - name: changed
          measureReferences: [count]
          refresh_key: {sql: SELECT max(id) FROM orders}
        """,
    )

    (main, nightly, changed) = version.require().entities["orders"].pre_aggregations
    assert main.id == "orders.main"
    assert main.measures == ("orders.count", "orders.total")
    assert main.dimensions == ("orders.status", "users.country")
    assert main.segments == ("orders.completed",)
    assert (main.time_dimension, main.granularity, main.partition_granularity) == ("orders.created_at", "day", "month")
    assert main.build_range_start == "SELECT '2024-01-01'"
    assert main.refresh_key.incremental is True
    assert main.refresh_key.update_window.text == "7 day"
    assert main.indexes[0].columns == ("orders.status",)
    assert main.scheduled_refresh is False
    assert (nightly.refresh_key.every, nightly.refresh_key.timezone) == ("0 3 * * *", "Europe/Berlin")
    assert (changed.measures, changed.refresh_key.every, changed.refresh_key.sql) == (
        ("orders.count",),
        "10 second",
        "SELECT max(id) FROM orders",
    )
    assert main.allow_non_strict_date_range_match is False


def test_extended_meta_lists_the_rollups_as_cube_does(tmp_path: Path) -> None:
    model = compile_rollups(
        tmp_path, "- name: main\n  measures: [count]\n  time_dimension: created_at\n  granularity: month\n"
    ).require()

    orders = next(c for c in meta(model, QueryContext(), extended=True)["cubes"] if c["name"] == "orders")

    assert orders["preAggregations"] == [
        {
            "name": "main",
            "type": "rollup",
            "measureReferences": "[orders.count]",
            "timeDimensionReference": "orders.created_at",
            "granularity": "month",
            "refreshKey": {"every": "1 hour"},
            "scheduledRefresh": True,
        }
    ]


@pytest.mark.parametrize(
    ("rollups", "message"),
    [
        ("- name: r\n  measures: [nope]\n", 'measures: unknown measure "nope"'),
        ("- name: r\n  dimensions: [count]\n", 'dimensions: unknown dimension "count"'),
        ("- name: r\n  measures: [count]\n  time_dimension: status\n  granularity: day\n", "is not a time dimension"),
        ("- name: r\n  measures: [count]\n  time_dimension: created_at\n", "a time_dimension needs a granularity"),
        (
            "- name: r\n  measures: [count]\n  time_dimension: created_at\n  granularity: fortnight\n",
            'granularity "fortnight" does not exist',
        ),
        ("- name: r\n  measures: [count]\n  partition_granularity: month\n", "partition_granularity needs a time"),
        (
            "- name: r\n  measures: [count]\n  time_dimension: created_at\n  granularity: day\n"
            "  partition_granularity: decade\n",
            "partition_granularity must be one of",
        ),
        ("- name: r\n  measures: [count]\n  refresh_key: {every: soon}\n", "refresh_key.every: invalid interval"),
        (
            "- name: r\n  measures: [count]\n  refresh_key: {every: '0 3 * * *', sql: SELECT 1}\n",
            "a CRON every cannot be combined with sql",
        ),
        ("- name: r\n  measures: [count]\n  refresh_key: {incremental: true}\n", "incremental needs a partition"),
        (
            "- name: r\n  measures: [count]\n  dimensions: [status]\n  indexes: [{name: i, columns: [id]}]\n",
            'index column "id" is not a dimension of the rollup',
        ),
        ("- name: r\n  measures: [count]\n  colour: blue\n", 'unknown property "colour"'),
        ("- name: r\n", "a rollup needs measures, dimensions, segments or a time_dimension"),
        ("- name: r\n  measures: [count]\n- name: r\n  measures: [total]\n", 'a pre-aggregation named "r"'),
        (
            "- name: r\n  type: original_sql\n  partition_granularity: month\n",
            "partition_granularity on an original_sql pre-aggregation is not supported by this server yet",
        ),
        ("- name: r\n  type: originalSql\n  measures: [count]\n", 'unknown property "measures"'),
        ("- name: r\n  type: rollup_lambda\n", "a rollup_lambda needs rollups"),
        ("- name: r\n  type: rollup_lambda\n  rollups: [orders.a]\n", 'rollups: no pre-aggregation "orders.a"'),
        (
            "- name: r\n  type: rollup_lambda\n  rollups: [base]\n- name: base\n  type: original_sql\n",
            '"orders.base" is not a rollup',
        ),
        (
            "- name: r\n  type: rollup_lambda\n  rollups: [batch]\n- name: batch\n  measures: [customers]\n",
            'measure "orders.customers" of "orders.batch" is not additive',
        ),
        (
            "- name: r\n  type: rollup_lambda\n  rollups: [batch]\n  union_with_source_data: true\n"
            "- name: batch\n  measures: [count]\n  time_dimension: created_at\n  granularity: day\n",
            '"orders.batch" has no partition_granularity',
        ),
        (
            "- name: r\n  type: rollup_lambda\n  rollups: [a, b]\n"
            "- name: a\n  measures: [count]\n  time_dimension: created_at\n  granularity: day\n"
            "  partition_granularity: day\n"
            "- name: b\n  measures: [count]\n  time_dimension: created_at\n  granularity: day\n"
            "  partition_granularity: month\n",
            "incompatible partition granularities: day can't be padded by month",
        ),
        (
            "- name: r\n  type: rollup_lambda\n  rollups: [a, b]\n"
            "- name: a\n  measures: [count]\n  time_dimension: created_at\n  granularity: day\n"
            "  partition_granularity: month\n"
            "- name: b\n  measures: [total]\n  time_dimension: created_at\n  granularity: day\n"
            "  partition_granularity: day\n",
            'the members of "orders.a" and "orders.b" do not match',
        ),
        (
            "- name: r\n  type: rollup_lambda\n  rollups: [a]\n  measures: [total]\n- name: a\n  measures: [count]\n",
            'its members do not match those of "orders.a"',
        ),
        ("- name: r\n  measures: [count]\n  union_with_source_data: true\n", "belongs to a rollup_lambda"),
        ("- name: r\n  type: rollupJoin\n", "rollup_join pre-aggregations"),
        ("- name: r\n  measures: [count]\n  time_dimensions: []\n", "several time dimensions (time_dimensions)"),
        ("- name: r\n  type: cubestore\n", 'unknown pre-aggregation type "cubestore"'),
    ],
)
def test_a_fault_is_a_model_error_naming_it(tmp_path: Path, rollups: str, message: str) -> None:
    error = error_of(tmp_path, rollups)

    assert message in error.message
    assert error.file.endswith("orders.yml")
    assert error.line > 0
    assert error.member.startswith("pre-aggregation")


def test_a_lambda_takes_its_first_rollups_members_and_may_name_another_cubes_rollups(tmp_path: Path) -> None:
    (tmp_path / "archive.yml").write_text(
        textwrap.dedent(
            """
            cubes:
              - name: archive
                sql_table: orders_archive
                dimensions:
                  - {name: id, sql: id, type: number, primary_key: true}
                  - {name: status, sql: status, type: string}
                  - {name: created_at, sql: created_at, type: time}
                measures:
                  - {name: count, type: count}
                pre_aggregations:
                  - name: batch
                    measures: [count]
                    dimensions: [status]
                    time_dimension: created_at
                    granularity: day
                    partition_granularity: month
            """
        )
    )
    rollups = """
        - name: lambda
          type: rollupLambda
          unionWithSourceData: true
          rollups: [archive.batch, CUBE.recent]
        - name: recent
          measures: [count]
          dimensions: [status]
          time_dimension: created_at
          granularity: day
          partition_granularity: day
        """

    model = compile_rollups(tmp_path, rollups).require()

    lambda_, _ = model.entities["orders"].pre_aggregations
    assert (lambda_.type, lambda_.rollups, lambda_.union_with_source_data) == (
        "rollupLambda",
        ("archive.batch", "orders.recent"),
        True,
    )
    assert (lambda_.measures, lambda_.dimensions, lambda_.time_dimension) == (
        ("archive.count",),
        ("archive.status",),
        "archive.created_at",
    )


def test_union_with_source_data_needs_its_last_rollup_in_the_lambdas_cube(tmp_path: Path) -> None:
    (tmp_path / "archive.yml").write_text(
        textwrap.dedent(
            """
            cubes:
              - name: archive
                sql_table: orders_archive
                dimensions:
                  - {name: id, sql: id, type: number, primary_key: true}
                  - {name: created_at, sql: created_at, type: time}
                measures:
                  - {name: count, type: count}
                pre_aggregations:
                  - name: batch
                    measures: [count]
                    time_dimension: created_at
                    granularity: day
                    partition_granularity: month
            """
        )
    )

    lambda_ = "- name: r\n  type: rollup_lambda\n  union_with_source_data: true\n  rollups: [archive.batch]\n"
    error = error_of(tmp_path, lambda_)

    assert 'enabled only for a rollup of cube orders, but "archive.batch"' in error.message
    assert error.file.endswith("orders.yml")
