"""A data model pointed at a PostgreSQL schema: the same Cube model files, each ``sql_table`` qualified with the
schema that holds the dataset (how the DuckDB and PostgreSQL runs of one suite share their model)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path


def qualified_model(source: Path, target: Path, schema: str) -> Path:
    """A copy of the model at ``source`` in ``target`` whose cubes read their tables from ``schema``."""
    shutil.copytree(source, target)
    for path in (target / "cubes").glob("*.yml"):
        path.write_text(re.sub(r"sql_table: (\w+)", rf"sql_table: {schema}.\1", path.read_text()))
    return target
