"""The SQL dialect a model's member SQL is written in: the dialect of the data source it is compiled for.

Cube copies member SQL into its queries as text, so a model written for BigQuery or MySQL may quote names with
backticks (``{CUBE}.`taxA```). This server parses member SQL into a syntax tree once per compile (sqlglot), so it
must parse in the source's own dialect. A source is named by Cube's data source type (``CUBEJS_DB_TYPE``:
``bigquery``, ``mysql``...), which is also the scheme of a deployment's data source URL (``bigquery://...``).

The sources this server queries are the modules of :mod:`embedadmin.semantic.sources`; a model for another source
compiles and is validated in that source's dialect (its ``/v1/meta`` answers), and its queries are refused.
"""

from __future__ import annotations

from embedadmin.core.data_source_kinds import CUBE_DB_TYPES

MODEL_DIALECTS = frozenset(CUBE_DB_TYPES.values())
DEFAULT_DIALECT = "duckdb"


def dialect_for(db_type: str) -> str | None:
    """The dialect of a Cube data source type (None for a type this server does not know)."""
    return CUBE_DB_TYPES.get(db_type.strip().lower())
