"""The kinds of data source a deployment may name, by the scheme of its URL: facts the account settings (which URLs a
deployment may be given) and the Core Data API (which module queries a source, in which SQL dialect, where its
rollups may live) both read, written once here.

- :data:`CUBE_DB_TYPES`: Cube's data source types (``CUBEJS_DB_TYPE``), each also a URL scheme, and the sqlglot
  dialect their SQL is written in. A deployment may name any of them: its model compiles and is validated in that
  dialect (``semantic/modeling/dialects.py``).
- :data:`QUERIED_SCHEMES`: the schemes this server runs queries on, and their dialect; the source module of
  ``embedadmin/semantic/sources/`` is named after the dialect (``docs/data-sources.md``).
- :data:`ROLLUP_HOME_DIALECTS`: the dialects whose source can hold a deployment's rollups in a schema of its own
  (a database on MySQL and ClickHouse, a dataset on BigQuery; ``semantic/serving/rollup_writers/`` has a writer
  module for each, named after the dialect); the others keep them in the DuckDB store.
"""

from __future__ import annotations

from urllib.parse import urlsplit

CUBE_DB_TYPES: dict[str, str] = {
    "duckdb": "duckdb",
    "postgres": "postgres",
    "postgresql": "postgres",
    "questdb": "postgres",
    "crate": "postgres",
    "materialize": "materialize",
    "risingwave": "risingwave",
    "redshift": "redshift",
    "mysql": "mysql",
    "mongobi": "mysql",  # MongoDB's BI connector speaks MySQL
    "bigquery": "bigquery",
    "snowflake": "snowflake",
    "trino": "trino",
    "presto": "presto",
    "athena": "athena",
    "clickhouse": "clickhouse",
    "databricks-jdbc": "databricks",
    "databricks": "databricks",
    "mssql": "tsql",
    "oracle": "oracle",
    "sqlite": "sqlite",
    "hive": "hive",
    "druid": "druid",
    "dremio": "dremio",
}

QUERIED_SCHEMES: dict[str, str] = {
    "duckdb": "duckdb",
    "postgresql": "postgres",
    "postgres": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "clickhouse": "clickhouse",
    "clickhouses": "clickhouse",  # ClickHouse over HTTPS
    "chdb": "clickhouse",  # the ClickHouse engine in process
    "trino": "trino",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "databricks": "databricks",
}

ROLLUP_HOME_DIALECTS = frozenset({"postgres", "mysql", "clickhouse", "trino", "snowflake", "bigquery", "databricks"})


def scheme_of(url: str) -> str:
    return urlsplit(url).scheme.lower()


def url_accepted(url: str) -> bool:
    """Whether a deployment may name ``url`` as its data source: a source this server queries, or one of Cube's
    data source types (its model compiles and is validated, its queries are refused)."""
    scheme = scheme_of(url)
    return bool(scheme) and "://" in url and (scheme in QUERIED_SCHEMES or scheme in CUBE_DB_TYPES)


def holds_rollups(url: str) -> bool:
    """Whether the source ``url`` names can hold rollups in a schema of its own."""
    return QUERIED_SCHEMES.get(scheme_of(url)) in ROLLUP_HOME_DIALECTS


def schemes_speaking(dialects: frozenset[str]) -> list[str]:
    """The queried URL schemes of ``dialects``, for messages (``postgresql://``...)."""
    return [f"{scheme}://" for scheme, dialect in QUERIED_SCHEMES.items() if dialect in dialects]
