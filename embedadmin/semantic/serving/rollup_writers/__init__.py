"""The rollup writers: for each dialect whose data source can hold a deployment's rollups
(:data:`embedadmin.core.data_source_kinds.ROLLUP_HOME_DIALECTS`), a module named after it that builds, drops and
collects rollup tables in a schema of that source (:class:`~..rollup_source.SourceTables`), each with its dialect's
facts: its driver and session, how a table is made whole (a transaction on PostgreSQL, a dropped table on a failure
elsewhere), its sizes, its table comments and its indexes.

Each module has ``open_writer(url)`` and ``MAX_IDENTIFIER`` (the longest table name the source takes). A module is
imported on first use, as the data source modules are: a warehouse's driver is loaded only by a deployment that
keeps its rollups in that warehouse.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from embedadmin.core.data_source_kinds import QUERIED_SCHEMES, ROLLUP_HOME_DIALECTS, scheme_of, schemes_speaking
from embedadmin.semantic.errors import DataSourceError
from embedadmin.semantic.serving.rollup_source import SourceTables


def writer_module(dialect: str) -> ModuleType:
    """The writer module of ``dialect`` (one of :data:`ROLLUP_HOME_DIALECTS`)."""
    assert dialect in ROLLUP_HOME_DIALECTS, dialect
    return importlib.import_module(f"{__name__}.{dialect}")


def source_tables(url: str) -> SourceTables:
    """The writer of rollup tables for a data source URL; :class:`DataSourceError` for a source that cannot hold
    them (its deployment keeps its rollups in the store)."""
    scheme = scheme_of(url)
    dialect = QUERIED_SCHEMES.get(scheme, "")
    if dialect not in ROLLUP_HOME_DIALECTS:
        raise DataSourceError(
            f"rollups cannot live in a {scheme or 'duckdb'} data source: they live in the data source only for "
            f"{', '.join(schemes_speaking(ROLLUP_HOME_DIALECTS))} (set the deployment's pre-aggregation storage to "
            "the store)"
        )
    writer: SourceTables = writer_module(dialect).open_writer(url)
    return writer


def rollup_home_problem(url: str) -> str | None:
    """Why the data source at ``url`` cannot hold a deployment's rollups (its writer cannot be made: no writer for its
    kind, a Trino URL naming no catalog, a Snowflake URL naming no database, a warehouse's driver not installed), or
    None. Nothing is connected to. Asked when a deployment's rollups are set to live in its data source
    (``accounts.services.deployment_configure``, for the Platform API, the panel and ``configure_deployment``)."""
    try:
        source_tables(url)
    except (DataSourceError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return None
