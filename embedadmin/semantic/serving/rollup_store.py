"""The pre-aggregation store: each built partition of a rollup is a DuckDB file of its own, read through one
in-memory DuckDB connection per deployment that attaches the files in use.

Layout: ``PRE_AGGREGATIONS["DIR"]/<deployment id>/<cube>__<rollup>[_<partition>]_<structure>_<version>.duckdb``,
each holding one table, ``rollup``. A file is written once (:func:`write_partition`: under a ``.building`` name,
then renamed when complete) and never changed; the application database's
:class:`~embedadmin.semantic.models.PreAggregationPartition` row says which file each partition reads, and a build
swaps it in one UPDATE. Why files and not one database file per deployment: DuckDB lets one process open a file for
writing and no other process open it at all meanwhile, so web processes could not read a deployment's rollups while a
worker builds one; immutable files are read by every process at once, and the pointer swap is a database
transaction (ADR 0017).

Reading (:func:`rollup_source`): a :class:`RollupSource` is a
:class:`~embedadmin.semantic.sources.duckdb.DuckDBSource` whose connection is an
in-memory database attaching the deployment's current files read-only, with one view per rollup (``orders__main``:
the union of its partitions); then external access is switched off and the configuration locked, as for any DuckDB
data source. When the files in use change, the next query gets a new source; the old one is closed once no query can
still be running on it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
from django.conf import settings
from sqlglot import exp

from embedadmin.semantic.errors import DataSourceError
from embedadmin.semantic.sources.base import QueryResult
from embedadmin.semantic.sources.duckdb import DuckDBSource

logger = logging.getLogger(__name__)

TABLE = "rollup"
BUILDING_SUFFIX = ".building"
FILE_SUFFIX = ".duckdb"
INSERT_BATCH_ROWS = 50_000
MAX_DECIMAL_PRECISION = 38
# value type (sources.base.VALUE_TYPES) -> the store's column type; decimals get their scale from the values.
_COLUMN_TYPES = {
    "integer": "HUGEINT",
    "float": "DOUBLE",
    "string": "VARCHAR",
    "boolean": "BOOLEAN",
    "timestamp": "TIMESTAMP",
    "timestamptz": "TIMESTAMPTZ",
    "date": "DATE",
    "time": "TIME",
}


class BuildStopped(Exception):
    """The build lost its lease (another worker took the partition over): its file is abandoned."""


def deployment_directory(deployment_id: int) -> Path:
    return Path(settings.PRE_AGGREGATIONS["DIR"]) / str(int(deployment_id))


def _identifier(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def _sql(statement: exp.Expr) -> str:
    return statement.sql(dialect="duckdb")


def _create_table(columns: Sequence[str], types: Sequence[str]) -> str:
    definitions = [
        exp.ColumnDef(this=_identifier(name), kind=exp.DataType.build(kind, dialect="duckdb"))
        for name, kind in zip(columns, types, strict=True)
    ]
    return _sql(exp.Create(this=exp.Schema(this=exp.to_table(TABLE), expressions=definitions), kind="TABLE"))


def _insert(types: Sequence[str]) -> str:
    """``INSERT INTO rollup SELECT unnest(CAST($1 AS <type>[])), ...``: a batch bound as one list per column."""
    values = [
        exp.Unnest(
            expressions=[
                exp.Cast(
                    this=exp.Parameter(this=exp.Literal.number(index + 1)),
                    to=exp.DataType.build(f"{kind}[]", dialect="duckdb"),
                )
            ]
        )
        for index, kind in enumerate(types)
    ]
    return _sql(exp.insert(exp.select(*values), TABLE))


def _create_index(name: str, columns: Sequence[str]) -> str:
    index = exp.Index(
        this=_identifier(f"{TABLE}_{name}"),
        table=exp.to_table(TABLE),
        params=exp.IndexParameters(columns=[exp.Ordered(this=exp.column(_identifier(c))) for c in columns]),
    )
    return _sql(exp.Create(kind="INDEX", this=index))


def _attach(path: Path, alias: str) -> str:
    return _sql(
        exp.Attach(
            this=exp.alias_(exp.Literal.string(str(path)), alias),
            expressions=[exp.AttachOption(this=exp.var("READ_ONLY"))],
        )
    )


def _described(connection: duckdb.DuckDBPyConnection, alias: str) -> list[tuple[str, str, int | None]]:
    """The columns of the ``rollup`` table of ``alias``, in order: name, type and (for a decimal) scale."""
    return connection.execute(
        "SELECT column_name, data_type, numeric_scale FROM duckdb_columns() "
        "WHERE database_name = ? AND table_name = ? ORDER BY column_index",
        [alias, TABLE],
    ).fetchall()


def _read_as(described: Sequence[Sequence[tuple[str, str, int | None]]]) -> dict[int, str]:
    """The decimal columns (by position) whose scale differs between the tables of a union, and the type every table
    reads them as: the largest scale. A partition's decimal column takes its scale from its own values
    (:func:`column_type`; 0 when it holds only NULLs), and DuckDB types the union of DECIMAL(38, 2) and
    DECIMAL(38, 0) as DECIMAL(38, 0): the other partitions' values would be rounded."""
    scales: dict[int, set[int]] = {}
    for columns in described:
        for position, (_, kind, scale) in enumerate(columns):
            if kind.startswith("DECIMAL") and scale is not None:
                scales.setdefault(position, set()).add(scale)
    return {p: f"DECIMAL({MAX_DECIMAL_PRECISION}, {max(found)})" for p, found in scales.items() if len(found) > 1}


def _part(alias: str, columns: Sequence[tuple[str, str, int | None]], read_as: dict[int, str]) -> exp.Select:
    """``SELECT * FROM <alias>.rollup``, its columns listed with a cast where ``read_as`` names one."""
    table = exp.table_(TABLE, db=alias)
    if not read_as:
        return exp.select("*").from_(table)
    return exp.select(
        *(
            exp.alias_(
                exp.cast(exp.column(_identifier(name)), exp.DataType.build(read_as[p], dialect="duckdb")),
                _identifier(name),
            )
            if p in read_as
            else exp.column(_identifier(name))
            for p, (name, _, _) in enumerate(columns)
        )
    ).from_(table)


def _create_view(
    view: str,
    aliases: Sequence[str],
    columns: Sequence[str] = (),
    *,
    described: Sequence[Sequence[tuple[str, str, int | None]]] = (),
) -> str:
    """A view over the ``rollup`` tables of ``aliases`` (a union, by position); ``columns`` names its columns (a
    lambda's tables are several rollups', whose column names differ); ``described`` is each table's
    :func:`_described` (a decimal column is read at the largest scale of the tables)."""
    read_as = _read_as(described)
    parts = [_part(alias, described[i] if read_as else (), read_as) for i, alias in enumerate(aliases)]
    union: exp.Expr = parts[0]
    for part in parts[1:]:
        union = exp.union(union, part, distinct=False)
    if columns:
        alias = exp.TableAlias(this=_identifier("parts"), columns=[_identifier(c) for c in columns])
        union = exp.select("*").from_(exp.Subquery(this=union, alias=alias))
    return _sql(exp.Create(this=exp.Table(this=_identifier(view)), kind="VIEW", expression=union))


def column_type(value_type: str, values: Sequence[Any]) -> str:
    """The store's type for a column of ``value_type`` holding ``values`` (a decimal keeps the largest scale)."""
    if value_type == "decimal":
        scale = whole = 0
        for value in values:
            if not isinstance(value, Decimal):
                continue
            if not value.is_finite():
                raise DataSourceError("a rollup cannot store a NaN or infinite decimal")
            _, figures, exponent = value.as_tuple()
            assert isinstance(exponent, int)
            scale = max(scale, -exponent)
            whole = max(whole, len(figures) + exponent)
        if whole + scale > MAX_DECIMAL_PRECISION:
            raise DataSourceError(f"a decimal value needs more than {MAX_DECIMAL_PRECISION} digits")
        return f"DECIMAL({MAX_DECIMAL_PRECISION}, {scale})"
    found = _COLUMN_TYPES.get(value_type)
    if found is None:
        raise DataSourceError(f"a rollup cannot store a column of type {value_type}")
    return found


def wider_type(stored: str, value_type: str, values: Sequence[Any]) -> str:
    """The type a column of the store (``stored``) reads ``values`` of ``value_type`` as, beside its own: a decimal
    column at the larger scale of the two (a lambda's source rows may carry more digits than a partition whose
    values happened to need fewer), any other its own."""
    if value_type != "decimal" or not stored.upper().startswith("DECIMAL"):
        return stored
    scale = int(stored.rstrip(")").rpartition(",")[2] or 0) if "," in stored else 0
    theirs = int(column_type(value_type, values).rstrip(")").rpartition(",")[2])
    return stored if theirs <= scale else f"DECIMAL({MAX_DECIMAL_PRECISION}, {theirs})"


@dataclass(frozen=True)
class WrittenPartition:
    file: str
    rows: int
    bytes: int


def write_partition(
    *,
    directory: Path,
    file_name: str,
    columns: Sequence[str],
    result: QueryResult,
    indexes: Sequence[tuple[str, Sequence[str]]] = (),
    keep_going: Callable[[], bool] = lambda: True,
) -> WrittenPartition:
    """Write ``result``'s rows as the ``rollup`` table of a new file ``file_name`` in ``directory``, with
    ``indexes`` (name, columns); complete on return. ``keep_going()`` is asked between batches: False stops the
    build (:class:`BuildStopped`) and removes what it wrote."""
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / file_name
    building = directory / f"{file_name}{BUILDING_SUFFIX}"
    for leftover in (building, building.with_name(building.name + ".wal")):
        leftover.unlink(missing_ok=True)
    if len(columns) != len(result.columns):
        raise DataSourceError("the build statement's columns do not match the rollup's")
    by_column = list(zip(*result.rows, strict=True)) if result.rows else [() for _ in columns]
    types = [column_type(kind, values) for kind, values in zip(result.types, by_column, strict=True)]
    try:
        connection = duckdb.connect(str(building))
        try:
            connection.execute("SET TimeZone = 'UTC'")
            connection.execute(_create_table(columns, types))
            insert = _insert(types)
            for start in range(0, len(result.rows), INSERT_BATCH_ROWS):
                if not keep_going():
                    raise BuildStopped()
                batch = result.rows[start : start + INSERT_BATCH_ROWS]
                connection.execute(insert, [list(values) for values in zip(*batch, strict=True)])
            for name, indexed in indexes:
                connection.execute(_create_index(name, indexed))
            connection.execute("CHECKPOINT")
        finally:
            connection.close()
        if not keep_going():
            raise BuildStopped()
        os.replace(building, final)
    except BaseException:
        building.unlink(missing_ok=True)
        raise
    return WrittenPartition(file=file_name, rows=len(result.rows), bytes=final.stat().st_size)


def remove_unreferenced(directory: Path, referenced: Callable[[], set[str]], *, older_than_s: float) -> int:
    """Delete the files of ``directory`` no partition points to (replaced tables, builds that died) once they are
    older than ``older_than_s``; returns how many.

    ``referenced()`` is asked once the directory is listed: a file swapped in meanwhile is in use. A file found in use
    has its modification time set to now (a file is never written after its build), so a replaced file's age counts
    from the last collection that found it in use, not from its build: it is kept for ``older_than_s`` after it was
    replaced, less at most one collection interval."""
    if not directory.is_dir():
        return 0
    found = list(directory.iterdir())
    in_use = referenced()
    removed = 0
    now = time.time()
    horizon = now - older_than_s
    for path in found:
        base = path.name.removesuffix(".wal").removesuffix(BUILDING_SUFFIX)
        if not base.endswith(FILE_SUFFIX):
            continue
        with contextlib.suppress(FileNotFoundError):
            if base in in_use:
                if path.name == base:
                    os.utime(path, (now, now))
            elif path.stat().st_mtime < horizon:
                path.unlink()
                removed += 1
    return removed


@dataclass(frozen=True)
class StoreCatalog:
    """The files a deployment's readers attach: per rollup (its read name), its partitions' files."""

    deployment_id: int
    tables: tuple[tuple[str, tuple[str, ...]], ...]
    columns: tuple[tuple[str, tuple[str, ...]], ...] = ()  # views whose columns are named (lambdas)

    @property
    def key(self) -> str:
        material = repr((self.deployment_id, self.tables, self.columns)).encode()
        return hashlib.blake2b(material, digest_size=12).hexdigest()


class RollupSource(DuckDBSource):
    """A deployment's rollups as one read-only DuckDB data source (an in-memory database attaching their files)."""

    def __init__(self, catalog: StoreCatalog) -> None:
        super().__init__(deployment_directory(catalog.deployment_id))
        self.catalog = catalog
        self.retired_at: float | None = None
        self._types: dict[str, list[str]] = {}

    def _identity(self) -> tuple[int, ...]:
        return (0,)  # the files never change: a new catalog is a new source

    def column_types(self, view: str, *, timeout_s: float) -> list[str]:
        """The store's types of ``view``'s columns (asked once: the files never change)."""
        found = self._types.get(view)
        if found is None:
            statement = exp.Describe(this=exp.select("*").from_(exp.Table(this=_identifier(view))))
            result = self.execute(_sql(statement), [], timeout_s=timeout_s)
            found = self._types[view] = [str(row[1]) for row in result.rows]
        return found

    def _open(self) -> duckdb.DuckDBPyConnection:
        config: dict[str, Any] = {
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
        }
        directory = deployment_directory(self.catalog.deployment_id)
        try:
            connection = duckdb.connect(":memory:", config=config)
            attached: dict[str, str] = {}  # file -> its alias (a lambda reads its rollups' files too)
            named = dict(self.catalog.columns)
            for view, files in self.catalog.tables:
                for file in files:
                    if file not in attached:
                        attached[file] = f"p{len(attached)}"
                        connection.execute(_attach(directory / file, attached[file]))
                aliases = [attached[f] for f in files]
                described = [_described(connection, alias) for alias in aliases]
                connection.execute(_create_view(view, aliases, named.get(view, ()), described=described))
            connection.execute("SET TimeZone = 'UTC'")
            connection.execute("SET enable_external_access = false")
            connection.execute("SET lock_configuration = true")
        except duckdb.Error as exc:
            logger.warning(
                "cannot open the pre-aggregation store of deployment %s: %s", self.catalog.deployment_id, exc
            )
            raise DataSourceError("Pre-aggregation store cannot be opened") from None
        return connection


_sources: dict[int, RollupSource] = {}
_retired: list[RollupSource] = []
_lock = threading.Lock()


def rollup_source(catalog: StoreCatalog) -> RollupSource:
    """The source reading ``catalog``'s files (one per deployment at a time; a replaced one is closed once every
    query that may run on it has timed out)."""
    current = _sources.get(catalog.deployment_id)
    if current is not None and current.catalog == catalog:
        return current
    with _lock:
        current = _sources.get(catalog.deployment_id)
        if current is not None and current.catalog == catalog:
            return current
        if current is not None:
            current.retired_at = time.monotonic()
            _retired.append(current)
        source = _sources[catalog.deployment_id] = RollupSource(catalog)
        _close_retired_locked()
        return source


def _close_retired_locked() -> None:
    horizon = time.monotonic() - settings.SEMANTIC["QUERY_TIMEOUT_SECONDS"] - 5
    for source in [s for s in _retired if (s.retired_at or 0) < horizon]:
        _retired.remove(source)
        source.close()


def close_rollup_sources() -> None:
    """Close every reader (tests, and a deployment's store removed)."""
    with _lock:
        sources = [*_sources.values(), *_retired]
        _sources.clear()
        _retired.clear()
    for source in sources:
        source.close()
