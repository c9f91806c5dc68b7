"""Which module serves a data source URL, and the one shared source per URL.

Each source is a small module of this package, named after its dialect (:mod:`.duckdb`, :mod:`.postgres`...), that
says what it is:

- ``SCHEMES``: the URL schemes it opens; ``DIALECT``: the sqlglot dialect its SQL is written in (member SQL is parsed
  in it, queries are rendered in it);
- ``open_source(url)``: a :class:`~.base.DataSource` for the URL, its driver's quirks (quoting, time zones,
  parameters, cancel, timeouts) kept inside;
- optionally ``WRITER``: the sqlglot dialect (a subclass of the stock one) that renders this server's queries for the
  source, where the stock generator needs a correction (a placeholder style, a time zone function).

A module is imported on first use, so a warehouse driver is loaded only by a deployment that names the warehouse.
A URL whose scheme is a Cube data source type with no module here (``oracle://``...) still gives its dialect (its
model compiles and is validated, :mod:`embedadmin.semantic.modeling.dialects`); its queries are refused.
"""

from __future__ import annotations

import importlib
import threading
from functools import cache
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from embedadmin.core.data_source_kinds import QUERIED_SCHEMES
from embedadmin.semantic.errors import DataSourceError
from embedadmin.semantic.modeling.dialects import DEFAULT_DIALECT, dialect_for
from embedadmin.semantic.sources.base import DataSource

# URL scheme -> the source module that opens it (named after its dialect), imported on first use.
_SCHEME_MODULES = QUERIED_SCHEMES


@cache
def _module(name: str) -> ModuleType:
    """The source module ``name``, which is also the dialect it speaks (``mysql.py`` speaks ``mysql``)."""
    module = importlib.import_module(f"{__package__}.{name}")
    assert _SCHEME_MODULES.keys() >= set(module.SCHEMES), f"{name}.SCHEMES missing from _SCHEME_MODULES"
    assert name == module.DIALECT, f"{name}.DIALECT must be {name!r}: a source module is named after its dialect"
    return module


def _module_speaking(dialect: str) -> ModuleType | None:
    """The source module of ``dialect``, imported on first use; None for a dialect this server does not query."""
    return _module(dialect) if dialect in queried_dialects() else None


def queried_schemes() -> frozenset[str]:
    """The URL schemes this server runs queries on."""
    return frozenset(_SCHEME_MODULES)


def queried_dialects() -> frozenset[str]:
    """The SQL dialects of the sources this server runs queries on."""
    return frozenset(_SCHEME_MODULES.values())


def dialect_of(url: str) -> str:
    """The SQL dialect of a data source URL; DuckDB's (the embedded default) when it names no source. A
    warehouse this server cannot query (``oracle://...``: Cube's data source types) gives its own dialect, which its
    model's SQL is parsed in (:mod:`embedadmin.semantic.modeling.dialects`)."""
    scheme = urlsplit(url).scheme.lower()
    name = _SCHEME_MODULES.get(scheme)
    if name is not None:
        return str(_module(name).DIALECT)
    return dialect_for(scheme) or DEFAULT_DIALECT


@cache
def writer(dialect: str) -> Any:
    """What renders a query for ``dialect``: a source module's ``WRITER`` where it has one, else sqlglot's own
    dialect of that name (``Expression.sql(dialect=writer(...))`` takes either)."""
    module = _module_speaking(dialect)
    written = getattr(module, "WRITER", None)
    return dialect if written is None else written


@cache
def approximates_count_distinct(dialect: str) -> bool:
    """Whether ``count_distinct_approx`` measures are an approximate aggregate in ``dialect`` (its source module
    sets ``APPROX_COUNT_DISTINCT``; its writer renders ``exp.ApproxDistinct``), not an exact ``COUNT(DISTINCT)``."""
    return bool(getattr(_module_speaking(dialect), "APPROX_COUNT_DISTINCT", False))


_sources: dict[str, DataSource] = {}
_sources_lock = threading.Lock()


def get_data_source(url: str) -> DataSource:
    """The shared data source for ``url``, created on first use; :class:`DataSourceError` for a bad URL."""
    source = _sources.get(url)
    if source is not None:
        return source
    scheme = urlsplit(url).scheme.lower()
    name = _SCHEME_MODULES.get(scheme)
    if name is None:
        if dialect_for(scheme):
            raise DataSourceError(f"{scheme} data sources are not queried by this server yet")
        raise DataSourceError("Unsupported data source URL: use duckdb:///path or postgresql://...")
    with _sources_lock:
        source = _sources.get(url)
        if source is None:
            source = _sources[url] = _module(name).open_source(url)
    return source


def close_data_sources() -> None:
    """Close every shared data source (tests, and process shutdown)."""
    with _sources_lock:
        sources = list(_sources.values())
        _sources.clear()
    for source in sources:
        source.close()
