"""The statements a rollup build in a data source runs, rendered by each dialect's writer, and the names its tables
get, within every source's limit."""

from __future__ import annotations

import pytest
import sqlglot

from embedadmin.core.data_source_kinds import ROLLUP_HOME_DIALECTS
from embedadmin.semantic.errors import DataSourceError
from embedadmin.semantic.serving.rollup_source import MAX_IDENTIFIER, Ddl, source_table_name
from embedadmin.semantic.serving.rollup_writers import source_tables, writer_module

BUILD = "SELECT status, COUNT(*) FROM orders GROUP BY 1"
EXPECTED = {
    "postgres": ('CREATE SCHEMA IF NOT EXISTS "rollups"', 'DROP TABLE IF EXISTS "rollups"."r1_t"', '"rollups"."r1_t"'),
    "mysql": ("CREATE SCHEMA IF NOT EXISTS `rollups`", "DROP TABLE IF EXISTS `rollups`.`r1_t`", "`rollups`.`r1_t`"),
    "clickhouse": (
        'CREATE DATABASE IF NOT EXISTS "rollups"',
        'DROP TABLE IF EXISTS "rollups"."r1_t"',
        '"rollups"."r1_t"',
    ),
    "trino": ('CREATE SCHEMA IF NOT EXISTS "rollups"', 'DROP TABLE IF EXISTS "rollups"."r1_t"', '"rollups"."r1_t"'),
    "snowflake": ('CREATE SCHEMA IF NOT EXISTS "rollups"', 'DROP TABLE IF EXISTS "rollups"."r1_t"', '"rollups"."r1_t"'),
    "bigquery": ("CREATE SCHEMA IF NOT EXISTS `rollups`", "DROP TABLE IF EXISTS `rollups`.`r1_t`", "`rollups`.`r1_t`"),
    "databricks": (
        "CREATE SCHEMA IF NOT EXISTS `rollups`",
        "DROP TABLE IF EXISTS `rollups`.`r1_t`",
        "`rollups`.`r1_t`",
    ),
}


@pytest.mark.parametrize("dialect", sorted(EXPECTED))
def test_each_dialect_renders_the_build_and_drop_statements(dialect):
    ddl = Ddl(dialect)
    schema_sql, drop_sql, table = EXPECTED[dialect]

    assert ddl.create_schema("rollups") == schema_sql
    assert ddl.drop_table("rollups", "r1_t") == drop_sql
    created = ddl.create_table_as("rollups", "r1_t", BUILD, ["status", "n"])
    b, status, n = (ddl.identifier(name) for name in ("b", "status", "n"))
    assert created == f"CREATE TABLE {table} AS SELECT {b}.{status}, {b}.{n} FROM ({BUILD}) AS {b}"
    # each statement parses back in its dialect
    for statement in (schema_sql, drop_sql, created, ddl.insert_select("rollups", "r1_t", BUILD)):
        assert sqlglot.parse_one(statement, read=dialect) is not None


def test_postgres_table_definitions_keep_the_types_postgres_spelled():
    ddl = Ddl("postgres")

    sql = ddl.create_table("rollups", "r1_t", ["orders__status", "orders__count"], ["text", "numeric(38,2)"])

    assert sql == 'CREATE TABLE "rollups"."r1_t" ("orders__status" text, "orders__count" numeric(38,2))'
    assert (
        ddl.create_index("rollups", "r1_t", ["orders__status"]) == 'CREATE INDEX ON "rollups"."r1_t" ("orders__status")'
    )


def test_table_names_fit_in_63_characters_and_stay_distinct():
    short = source_table_name(12, "orders__main", "20240101", "abcdef0123", "99887766aa")
    long_a = source_table_name(
        1234567, "a_very_long_cube_name_indeed__and_a_long_rollup_name", "2024010112", "ab" * 8, "cd" * 8
    )
    long_b = source_table_name(
        1234567, "a_very_long_cube_name_indeed__and_a_long_rollup_other", "2024010112", "ab" * 8, "cd" * 8
    )

    assert short == "r12_orders__main_20240101_abcdef01_99887766"
    assert max(len(long_a), len(long_b)) <= 63
    assert long_a != long_b
    assert long_a.startswith("r1234567_")


def test_every_source_that_can_hold_rollups_has_a_writer_whose_names_fit():
    for dialect in ROLLUP_HOME_DIALECTS:
        module = writer_module(dialect)
        assert callable(module.open_writer), dialect
        assert MAX_IDENTIFIER <= module.MAX_IDENTIFIER, dialect
    with pytest.raises(DataSourceError, match="rollups cannot live in a duckdb data source"):
        source_tables("duckdb:///var/demo.duckdb")
    with pytest.raises(DataSourceError, match="rollups cannot live in a oracle data source"):
        source_tables("oracle://scott@db/orcl")
