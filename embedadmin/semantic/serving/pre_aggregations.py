"""A deployment's rollup pre-aggregations: which are built (what ``/v1/load`` reads, :func:`store_state`), which
partitions are due by their ``refresh_key`` (:func:`pre_aggregations_refresh`), one partition's build under a lease
(:func:`pre_aggregation_partition_build`), a rebuild asked for (:func:`pre_aggregations_rebuild`), what the Platform
API and the panel show (:func:`pre_aggregations_status`), and the files no partition points to any more
(:func:`pre_aggregations_collect_garbage`).

A build reads the rollup's rows from the deployment's data source (any source of
:mod:`embedadmin.semantic.sources`, through the statement :func:`embedadmin.semantic.sql.rollups.build_query` compiles
in its dialect; the source gives them as the value types of :mod:`~embedadmin.semantic.sources.base`), writes them to
a new file of the store (:mod:`.rollup_store`), or, for a deployment that keeps its rollups in its data source, has
the source write them to a new table of its rollup schema (:mod:`.rollup_source`, :mod:`.rollup_writers`: PostgreSQL,
MySQL, ClickHouse and the warehouses), then swaps the partition's ``table`` to it in one conditional UPDATE: a reader
sees the old table or the new one, never a part of one. One build at a time per partition, across workers: a build
claims the partition's lease (``lease_owner``) by a conditional UPDATE and renews ``lease_heartbeat_at`` (the
database's clock) from a thread; another claims it only once the heartbeat is older than ``LEASE_STALE_SECONDS`` (its
worker died). A build that lost its lease stops (its statement on the data source is cancelled) and leaves the pointer
alone: only the lease holder's swap is written.

An ``originalSql`` table is built like a rollup, from the cube's SQL; a rollup built from it runs its build statement
on the store. A ``rollupLambda`` has no table: :func:`_lambda_state` says which partitions of its rollups it reads and
where the source's rows start, and :class:`LambdaRead` runs its answer (the source part on the data source, then the
statement on the store with those rows).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

import sqlglot
import sqlglot.errors
from celery.schedules import crontab
from django.conf import settings
from django.core.cache import cache
from django.db import connection as db_connection
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone
from sqlglot import exp

from embedadmin.accounts.models import Deployment
from embedadmin.core.data_source_kinds import QUERIED_SCHEMES, holds_rollups, scheme_of
from embedadmin.core.errors import ApiError, NotFound
from embedadmin.core.versions import ProcessMemory, SharedVersion
from embedadmin.semantic.context import QueryContext
from embedadmin.semantic.errors import DataSourceError, ModelError, QueryError
from embedadmin.semantic.modeling.intervals import parse_interval
from embedadmin.semantic.modeling.model import CompiledModel, Dimension, PreAggregation
from embedadmin.semantic.modeling.preaggregations import is_cron
from embedadmin.semantic.models import PreAggregationPartition
from embedadmin.semantic.query.dates import format_local, parse_local, start_of, unit_delta
from embedadmin.semantic.query.normalized import NormalizedQuery
from embedadmin.semantic.serving.rollup_source import STORE, RollupHome, rollup_home, source_table_name, table_prefix
from embedadmin.semantic.serving.rollup_store import (
    FILE_SUFFIX,
    BuildStopped,
    RollupSource,
    StoreCatalog,
    WrittenPartition,
    deployment_directory,
    remove_unreferenced,
    rollup_source,
    wider_type,
    write_partition,
)
from embedadmin.semantic.serving.rollup_writers import source_tables
from embedadmin.semantic.sources.base import CancelScope, DataSource, QueryCancelled, QueryResult
from embedadmin.semantic.sources.registry import dialect_of, get_data_source, writer
from embedadmin.semantic.sql.builder import CompiledQuery
from embedadmin.semantic.sql.expressions import Renderer
from embedadmin.semantic.sql.planning import LoadPlan, compile_cached
from embedadmin.semantic.sql.rollups import (
    LAMBDA,
    ORIGINAL_SQL,
    ROLLUP_TIMEZONE,
    STORE_DIALECT,
    BuildStatement,
    BuiltRollup,
    LambdaSource,
    RollupLayout,
    build_query,
    choose_rollup,
    lambda_rows_sql,
    rewrite,
    rollup_layouts,
    unrestricted,
)

logger = logging.getLogger(__name__)

Status = PreAggregationPartition.Status
PARTITION_FORMATS = {"hour": "%Y%m%d%H", "day": "%Y%m%d", "week": "%Y%m%d", "month": "%Y%m", "quarter": "%Y%m"}
MAX_PARTITIONS = 5_000
MIN_RETRY_SECONDS = 60.0
CRON_CHECK_SECONDS = 60.0


class Served(Protocol):
    """What a deployment serves (``services.ServedModel``): its model and data source."""

    @property
    def deployment(self) -> Deployment: ...
    @property
    def model(self) -> CompiledModel: ...
    @property
    def source_url(self) -> str: ...
    @property
    def dialect(self) -> str: ...


Serve = Callable[[Deployment], Served]  # services.served_model, passed in by the callers (tasks, Platform API)


def _settings() -> Any:
    return settings.PRE_AGGREGATIONS


def _version(deployment_id: int) -> SharedVersion:
    return SharedVersion(f"pre_aggregations:{deployment_id}")


# -- what the served model's rollups are ------------------------------------------------------------------------------


def _source_digest(source_url: str, home: RollupHome = STORE) -> str:
    material = f"{source_url}\n{home.key}" if home.key else source_url  # the store's digests are as they were
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def rollup_structure(model: CompiledModel, layout: RollupLayout, source_url: str, home: RollupHome = STORE) -> str:
    """A digest of how ``layout`` is built from ``source_url`` into ``home``: its statement, columns, partitioning
    and indexes. A model change that alters any of it (or another data source, or another home) makes new
    partitions; old ones are never read."""
    key = _source_digest(source_url, home)
    cache_of: dict[tuple[str, str], str] = model.caches.setdefault("rollup_structures", {})
    found = cache_of.get((layout.rollup.id, key))
    if found is None:
        compiled = build_query(model, layout, in_source=home.in_source)
        rollup = layout.rollup
        layouts = rollup_layouts(model)
        material = repr(
            (
                compiled.sql,
                compiled.params,
                [(c.name, c.member, c.role, c.measure_type) for c in layout.columns],
                rollup.partition_granularity,
                rollup.build_range_start,
                rollup.build_range_end,
                [(i.name, i.columns) for i in rollup.indexes],
                key,
                layout.bounded,
                # built from originalSql tables: a new structure of one of them makes a new one of this
                [rollup_structure(model, layouts[rid], source_url, home) for rid in layout.originals],
            )
        )
        found = cache_of[(layout.rollup.id, key)] = hashlib.sha256(material.encode()).hexdigest()[:16]
    return found


def home_layouts(model: CompiledModel, home: RollupHome) -> dict[str, RollupLayout]:
    """:func:`rollup_layouts` as ``home`` can build them: in the data source, an ``originalSql`` table, a rollup
    built from one, and a lambda unioned with the source's rows are unusable (they live in the DuckDB store only)."""
    layouts = rollup_layouts(model)
    if not home.in_source:
        return layouts
    key = f"rollup_layouts:{home.key}"
    found = model.caches.get(key)
    if isinstance(found, dict):
        return found
    placed: dict[str, RollupLayout] = {}
    # a lambda's rollups first (a lambda is often defined before them): its problem may be theirs
    for rid, layout in sorted(layouts.items(), key=lambda item: item[1].kind == LAMBDA):
        problem = layout.problem
        if problem is None and (layout.kind == ORIGINAL_SQL or layout.originals):
            problem = (
                "originalSql pre-aggregations, and rollups built from them, live in the DuckDB store only; this "
                "deployment keeps its rollups in its data source"
            )
        elif problem is None and layout.kind == LAMBDA:
            if layout.rollup.union_with_source_data:
                problem = (
                    "a rollup_lambda with union_with_source_data is served from the DuckDB store only; this "
                    "deployment keeps its rollups in its data source"
                )
            else:
                problem = next(
                    (f"its rollup {r}: {placed[r].problem}" for r in layout.parts if placed[r].problem), None
                )
        placed[rid] = layout if problem == layout.problem else dataclasses.replace(layout, problem=problem)
    placed = {rid: placed[rid] for rid in layouts}  # in definition order
    model.caches[key] = placed
    return placed


def _usable(model: CompiledModel, home: RollupHome = STORE) -> dict[str, RollupLayout]:
    """The tables ``home`` builds for ``model`` (rollups and originalSql; a lambda reads its rollups')."""
    return {
        rid: layout
        for rid, layout in home_layouts(model, home).items()
        if layout.problem is None and layout.built_itself
    }


def _lambdas(model: CompiledModel, home: RollupHome = STORE) -> dict[str, RollupLayout]:
    return {
        rid: layout
        for rid, layout in home_layouts(model, home).items()
        if layout.problem is None and not layout.built_itself
    }


# -- what readers use -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoreState:
    """The deployment's rollups that are built for its model and data source now, and the files readers attach."""

    built: dict[str, BuiltRollup]
    catalog: StoreCatalog


_states: ProcessMemory[StoreState] = ProcessMemory(max_entries=1_000)


def store_state(*, deployment: Deployment, model: CompiledModel, source_url: str) -> StoreState | None:
    """The built rollups ``/v1/load`` may read for this model (None when the model has none, or rollups are
    switched off). Remembered by the process until a build swaps a partition (a shared version)."""
    home = rollup_home(deployment)
    if not _settings()["ENABLED"] or not _usable(model, home):
        return None  # (a lambda reads rollups: with none to build, there is no lambda either)
    version = _version(deployment.pk).current()
    key = (deployment.pk, model.compiler_id, _source_digest(source_url, home))
    return _states.remembered(key, version, lambda: _read_state(deployment, model, source_url, home))


def _read_state(deployment: Deployment, model: CompiledModel, source_url: str, home: RollupHome) -> StoreState:
    layouts = _usable(model, home)
    structures = {rid: rollup_structure(model, layout, source_url, home) for rid, layout in layouts.items()}
    rows = PreAggregationPartition.objects.filter(deployment=deployment, pre_aggregation__in=list(layouts)).values_list(
        "pre_aggregation", "structure", "partition", "table", "built_at", "range_start", "range_end", "built_until"
    )
    by_rollup: dict[str, list[tuple[Any, ...]]] = {}
    for rid, structure, partition, table, built_at, start, end, until in rows:
        if structure == structures[rid]:
            by_rollup.setdefault(rid, []).append((partition, table, built_at, start, end, until))
    built: dict[str, BuiltRollup] = {}
    tables: list[tuple[str, tuple[str, ...]]] = []
    for rid, layout in layouts.items():
        partitions = sorted(by_rollup.get(rid, []), key=lambda p: p[:5])
        if not partitions or any(not p[1] for p in partitions):
            continue
        files = tuple(p[1] for p in partitions)
        covered = None
        rollup = layout.rollup
        if rollup.partition_granularity and (rollup.build_range_start or rollup.build_range_end):
            starts = [_naive(p[3]) for p in partitions if p[3] is not None]
            ends = [_naive(p[4]) for p in partitions if p[4] is not None]
            covered = (min(starts), max(ends)) if starts and ends else None
        built[rid] = BuiltRollup(
            table=layout.table,
            version=hashlib.blake2b(repr(files).encode(), digest_size=8).hexdigest(),
            last_updated_at=min(p[2] for p in partitions),
            covered=covered,
            source_tables=tuple((home.schema, f) for f in files) if home.in_source else (),
        )
        tables.append((layout.table, files))
    renamed: list[tuple[str, tuple[str, ...]]] = []
    for rid, layout in _lambdas(model, home).items():
        found = _lambda_state(layout, layouts, built, by_rollup)
        if found is not None:
            built[rid], files = found
            if home.in_source:
                built[rid] = dataclasses.replace(built[rid], source_tables=tuple((home.schema, f) for f in files))
            tables.append((layout.table, files))
            renamed.append((layout.table, tuple(c.name for c in layout.columns)))
    return StoreState(built=built, catalog=StoreCatalog(deployment.pk, tuple(tables), tuple(renamed)))


def _lambda_state(
    layout: RollupLayout,
    layouts: dict[str, RollupLayout],
    built: dict[str, BuiltRollup],
    by_rollup: dict[str, list[tuple[Any, ...]]],
) -> tuple[BuiltRollup, tuple[str, ...]] | None:
    """What a lambda reads now, or None until each of its rollups is built: Cube's walk over its rollups' partitions,
    oldest data first, kept exact. A rollup before the last gives the partitions it holds whole after what the
    earlier ones hold; the last gives every partition after that up to the first one that ends before its range does
    (a build stops at the build range's end); the source's rows are those after the last partition read."""
    cursor: datetime | None = None  # every row up to here is in the partitions taken
    first: datetime | None = None
    files: list[str] = []
    parts: list[tuple[str, str, datetime]] = []
    for index, rid in enumerate(layout.parts):
        if rid not in built:
            return None
        last = index == len(layout.parts) - 1
        taken = 0
        for _, table, _, raw_start, raw_end, until in sorted(by_rollup[rid], key=lambda p: (p[3] is not None, p[3])):
            if raw_start is None or raw_end is None:  # not partitioned: a lambda of one rollup, no source data
                files.append(table)
                taken += 1
                continue
            start, end = _naive(raw_start), _naive(raw_end)
            if cursor is not None and start <= cursor:
                continue  # an earlier rollup holds it
            if cursor is not None and start > cursor + timedelta(milliseconds=1):
                return None  # a gap no table holds: the answer would miss rows
            holds = _naive(until) if until is not None else end
            complete = holds >= end
            if not last and not complete:
                break
            files.append(table)
            taken += 1
            first = first or start
            cursor = holds
            if not complete:
                break
        if taken:
            parts.append((rid, layouts[rid].table, built[rid].last_updated_at))
    if not files or (layout.rollup.union_with_source_data and cursor is None):
        return None
    covered = None
    # Bounded as a rollup with a build range is: where its first rollup's starts, and, without the source's rows,
    # where its last one's ends (a later rollup starts where an earlier one ends, or the lambda is not served).
    ranges = [bool(layouts[r].rollup.build_range_start or layouts[r].rollup.build_range_end) for r in layout.parts]
    ranged = ranges[0] or (not layout.rollup.union_with_source_data and any(ranges))
    if first is not None and cursor is not None and ranged:
        covered = (first, datetime.max if layout.rollup.union_with_source_data else cursor)
    state = BuiltRollup(
        table=layout.table,
        version=hashlib.blake2b(repr(files).encode(), digest_size=8).hexdigest(),
        last_updated_at=min(updated for _, _, updated in parts),
        covered=covered,
        parts=tuple(parts),
        source_after=cursor if layout.rollup.union_with_source_data else None,
    )
    return state, tuple(files)


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _aware(local: datetime) -> datetime:
    return local.replace(tzinfo=UTC)


# -- partitions and what is due ---------------------------------------------------------------------------------------


def _every_seconds(rollup: PreAggregation) -> float:
    every = rollup.refresh_key.every
    if is_cron(every):
        return CRON_CHECK_SECONDS
    interval = parse_interval(every)
    return float(max(interval.months * 30 * 86400 + interval.seconds, 1))


def _scalar(source_url: str, sql: str) -> Any:
    """The first value a model's SQL (a ``refresh_key`` or a build range bound) answers on the data source. The SQL
    is read in the source's dialect and written by its writer, as the model's member SQL is: a source's driver may
    need it so (PyMySQL formats every statement, so MySQL's ``DATE_FORMAT(x, '%Y')`` is sent as ``'%%Y'``)."""
    dialect = dialect_of(source_url)
    try:
        statement = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError as exc:
        raise DataSourceError(f"the pre-aggregation's SQL cannot be read as {dialect} SQL: {exc}") from None
    written = statement.sql(dialect=writer(dialect))
    result = get_data_source(source_url).execute(written, [], timeout_s=_settings()["BUILD_TIMEOUT_SECONDS"])
    return result.rows[0][0] if result.rows and result.rows[0] else None


def _moment(value: Any) -> datetime | None:
    """A build range bound as a source answered it (a timestamp, a date, or text) as a naive UTC time."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return _naive(value)
    if hasattr(value, "isoformat"):
        return parse_local(value.isoformat())
    try:
        return _naive(parse_local(str(value), ZoneInfo("UTC")))
    except ValueError:
        raise DataSourceError(f"a build range bound is not a time: {str(value)[:40]!r}") from None


def _range_sql(model: CompiledModel, rollup: PreAggregation) -> str:
    """``SELECT min(t), max(t) FROM <the time dimension's cube>`` (UTC local times): the default build range."""
    assert rollup.time_dimension is not None
    built = unrestricted(model)
    renderer = Renderer(built, ROLLUP_TIMEZONE, None)
    dimension = built.members[rollup.time_dimension]
    assert isinstance(dimension, Dimension)
    value = renderer.local_time(renderer.dimension(dimension))
    select = exp.select(exp.Min(this=value), exp.Max(this=value.copy())).from_(renderer.cube_source(dimension.entity))
    return select.sql(dialect=writer(model.dialect))


def _build_range(model: CompiledModel, rollup: PreAggregation, source_url: str) -> tuple[datetime, datetime] | None:
    start = _moment(_scalar(source_url, rollup.build_range_start)) if rollup.build_range_start else None
    end = _moment(_scalar(source_url, rollup.build_range_end)) if rollup.build_range_end else None
    if start is None or end is None:
        result = get_data_source(source_url).execute(
            _range_sql(model, rollup), [], timeout_s=_settings()["BUILD_TIMEOUT_SECONDS"]
        )
        low, high = result.rows[0] if result.rows else (None, None)
        start = start or _moment(low)
        end = end or _moment(high)
    if start is None or end is None or end < start:
        return None
    return start, end


def partition_ranges(granularity: str, start: datetime, end: datetime) -> list[tuple[str, datetime, datetime]]:
    """(key, first instant, last millisecond) of each partition covering [start, end]."""
    ranges = []
    moment = start_of(start, granularity)
    while moment <= end:
        following = moment + unit_delta(granularity, 1)
        ranges.append(
            (moment.strftime(PARTITION_FORMATS.get(granularity, "%Y")), moment, following - timedelta(milliseconds=1))
        )
        moment = following
        if len(ranges) > MAX_PARTITIONS:
            raise DataSourceError(f"the build range makes more than {MAX_PARTITIONS} partitions")
    return ranges


def _partition_rows(
    deployment: Deployment,
    model: CompiledModel,
    layout: RollupLayout,
    source_url: str,
    structure: str,
    now: datetime,
    home: RollupHome = STORE,
) -> list[PreAggregationPartition]:
    """The rollup's partition rows for ``structure``, made for its current build range (computed again when its
    refresh interval moves to a new bucket, or a new partition is asked for)."""
    rollup = layout.rollup
    existing = list(
        PreAggregationPartition.objects.filter(deployment=deployment, pre_aggregation=rollup.id, structure=structure)
    )
    if not rollup.partition_granularity:
        if existing:
            return existing
        wanted: list[tuple[str, datetime | None, datetime | None]] = [("", None, None)]
    else:
        every = _every_seconds(rollup)
        bucket = math.floor(now.timestamp() / every)
        remembered = f"pre-aggregation-range:{deployment.pk}:{rollup.id}:{structure}:{bucket}"
        if existing and cache.get(remembered):
            return existing
        found = _build_range(model, rollup, source_url)
        cache.set(remembered, True, every)
        if found is None:
            return existing
        wanted = [(key, _aware(a), _aware(b)) for key, a, b in partition_ranges(rollup.partition_granularity, *found)]
    have = {row.partition for row in existing}
    for key, start, end in wanted:
        if key in have:
            continue
        row, _ = PreAggregationPartition.objects.get_or_create(
            deployment=deployment,
            pre_aggregation=rollup.id,
            structure=structure,
            partition=key,
            defaults={"range_start": start, "range_end": end, "schema": home.schema},
        )
        existing.append(row)
    return existing


def _refresh_due(row: PreAggregationPartition, rollup: PreAggregation, now: datetime) -> bool:
    """Whether ``row``'s refresh_key says it is due (``sql`` keys are judged by the caller)."""
    built = row.built_at
    if built is None:
        return True
    every = rollup.refresh_key.every
    if is_cron(every):
        fields = every.split()[-5:]
        zone = rollup.refresh_key.timezone or "UTC"
        schedule = crontab(*fields, nowfun=lambda: now.astimezone(ZoneInfo(zone)))
        remaining: timedelta = schedule.remaining_estimate(built.astimezone(ZoneInfo(zone)))
        return remaining <= timedelta(0)
    seconds = _every_seconds(rollup)
    return math.floor(now.timestamp() / seconds) != math.floor(built.timestamp() / seconds)


def _in_update_window(
    row: PreAggregationPartition, rollup: PreAggregation, rows: list[PreAggregationPartition], now: datetime
) -> bool:
    window = rollup.refresh_key.update_window
    if window is None:
        last = max((r.range_start for r in rows if r.range_start is not None), default=None)
        return row.range_start == last
    seconds = window.months * 30 * 86400 + window.seconds
    return row.range_end is not None and row.range_end >= now - timedelta(seconds=seconds)


def pre_aggregations_refresh(
    *, deployment: Deployment, serve: Serve, enqueue: Callable[[int], None], now: datetime | None = None
) -> int:
    """Queue a build of every partition of the deployment's scheduled rollups that is due: never built, a rebuild
    asked for, or its ``refresh_key`` says so (``every`` interval or CRON, ``sql`` whose value changed; with
    ``incremental``, only partitions ending within ``update_window``, else only the last). Returns how many."""
    try:
        served = serve(deployment)
    except (ApiError, ModelError):
        return 0
    home = rollup_home(deployment)
    if not _builds_for(served, home):
        return 0
    moment = now or timezone.now()
    queued = 0
    # originalSql tables first: rollups are built from them
    ordered = sorted(_usable(served.model, home).values(), key=lambda layout: layout.kind != ORIGINAL_SQL)
    for layout in ordered:
        rollup = layout.rollup
        if not rollup.scheduled_refresh:
            continue
        if layout.originals and not _originals_built(deployment, served.model, layout, served.source_url):
            continue  # queued once they are
        try:
            structure = rollup_structure(served.model, layout, served.source_url, home)
            rows = _partition_rows(deployment, served.model, layout, served.source_url, structure, moment, home)
            changed = _sql_key_changed(rollup, rows, served.source_url, moment)
        except (DataSourceError, QueryError) as exc:
            logger.warning(
                "pre-aggregation %s of deployment %s: refresh check failed: %s", rollup.id, deployment.pk, exc
            )
            continue
        for row in rows:
            if _due(row, rollup, rows, moment, changed) and _mark_queued(row, moment):
                transaction.on_commit(functools.partial(enqueue, row.pk))
                queued += 1
    return queued


def _builds_for(served: Served, home: RollupHome) -> bool:
    """Whether the deployment's rollups are built: into the DuckDB store from any source this server queries
    (:data:`~embedadmin.core.data_source_kinds.QUERIED_SCHEMES`: the source gives the build's rows as value types,
    which the store maps to its columns), or into a schema of a source that holds them itself
    (:func:`~embedadmin.core.data_source_kinds.holds_rollups`). A Cube data source type this server does not query
    (``oracle://``) has none built: its queries are refused anyway."""
    if not served.source_url or scheme_of(served.source_url) not in QUERIED_SCHEMES:
        return False
    return not home.in_source or holds_rollups(served.source_url)


def _sql_key_changed(
    rollup: PreAggregation, rows: list[PreAggregationPartition], source_url: str, now: datetime
) -> bool:
    """For a ``refresh_key.sql``: run it when the rollup's ``every`` has passed since the last check; whether its
    value differs from what a built partition was built with."""
    if rollup.refresh_key.sql is None or not rows:
        return False
    checked = min((r.refresh_checked_at for r in rows if r.refresh_checked_at), default=None)
    if checked is not None and (now - checked).total_seconds() < _every_seconds(rollup):
        return False
    value = str(_scalar(source_url, rollup.refresh_key.sql))[:255]
    PreAggregationPartition.objects.filter(pk__in=[r.pk for r in rows]).update(refresh_checked_at=now)
    return any(r.built_at is not None and r.refresh_key_value != value for r in rows)


def _due(
    row: PreAggregationPartition,
    rollup: PreAggregation,
    rows: list[PreAggregationPartition],
    now: datetime,
    sql_changed: bool,
) -> bool:
    stale = now - timedelta(seconds=_settings()["LEASE_STALE_SECONDS"])
    if row.status == Status.BUILDING and row.lease_heartbeat_at is not None and row.lease_heartbeat_at > stale:
        return False
    requeue = now - timedelta(seconds=_settings()["REQUEUE_SECONDS"])
    if row.status == Status.QUEUED and row.queued_at is not None and row.queued_at > requeue:
        return False
    if not row.table:
        if row.status == Status.FAILED:
            wait = max(_every_seconds(rollup), MIN_RETRY_SECONDS)
            return row.updated_at <= now - timedelta(seconds=wait)
        return True
    requested = row.rebuild_requested_at
    if requested is not None and (row.build_started_at is None or requested > row.build_started_at):
        return True
    if rollup.refresh_key.incremental and not _in_update_window(row, rollup, rows, now):
        return False
    if rollup.refresh_key.sql is not None:
        return sql_changed
    return _refresh_due(row, rollup, now)


def _mark_queued(row: PreAggregationPartition, now: datetime) -> bool:
    stale = Now() - timedelta(seconds=_settings()["LEASE_STALE_SECONDS"])
    free = Q(lease_owner="") | Q(lease_heartbeat_at__lt=stale)
    return bool(PreAggregationPartition.objects.filter(free, pk=row.pk).update(status=Status.QUEUED, queued_at=now))


# -- a build ----------------------------------------------------------------------------------------------------------


class _Heartbeat:
    """Renews a build's lease from a thread of its own; ``alive()`` turns False once the lease is lost, and the
    statements run under ``scope`` are cancelled then (a build statement on the data source stops at once, not when
    it ends)."""

    def __init__(self, partition_id: int, worker: str) -> None:
        self.partition_id = partition_id
        self.worker = worker
        self.scope = CancelScope()
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pre-aggregation-lease", daemon=True)

    def alive(self) -> bool:
        return not self._lost.is_set()

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        """Renew every ``HEARTBEAT_SECONDS``. A renewal that fails (the application database is unreachable, the
        connection broke) is logged and tried again on a new connection; once no renewal has succeeded for
        ``LEASE_STALE_SECONDS`` the lease counts as lost (another worker may take it over by then), as when the
        lease is taken over: the build stops."""
        last_renewed = time.monotonic()
        try:
            while not self._stop.wait(_settings()["HEARTBEAT_SECONDS"]):
                try:
                    renewed = PreAggregationPartition.objects.filter(
                        pk=self.partition_id, lease_owner=self.worker
                    ).update(lease_heartbeat_at=Now())
                except Exception:
                    logger.warning(
                        "the lease of pre-aggregation partition %s not renewed", self.partition_id, exc_info=True
                    )
                    db_connection.close()  # the next renewal opens a new connection
                    if time.monotonic() - last_renewed < _settings()["LEASE_STALE_SECONDS"]:
                        continue
                    renewed = 0
                if not renewed:
                    self._lost.set()
                    self.scope.cancel()
                    return
                last_renewed = time.monotonic()
        finally:
            db_connection.close()


def _claim(partition_id: int, worker: str) -> bool:
    stale = Now() - timedelta(seconds=_settings()["LEASE_STALE_SECONDS"])
    free = Q(lease_owner="") | Q(lease_heartbeat_at__isnull=True) | Q(lease_heartbeat_at__lt=stale)
    return bool(
        PreAggregationPartition.objects.filter(free, pk=partition_id).update(
            lease_owner=worker, lease_heartbeat_at=Now(), status=Status.BUILDING, build_started_at=Now()
        )
    )


def _release(partition_id: int, worker: str, **changes: Any) -> bool:
    return bool(
        PreAggregationPartition.objects.filter(pk=partition_id, lease_owner=worker).update(
            lease_owner="", lease_heartbeat_at=None, queued_at=None, **changes
        )
    )


def new_worker_id() -> str:
    import os
    import socket

    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def pre_aggregation_partition_build(*, partition_id: int, serve: Serve, worker: str | None = None) -> str:
    """Build one partition under its lease and swap it in. Returns ``built``, ``busy`` (another worker holds a live
    lease), ``gone`` (no such partition), ``obsolete`` (the model no longer has it), ``lost`` (the lease was taken
    over meanwhile: nothing swapped) or ``failed`` (its error is recorded)."""
    worker = worker or new_worker_id()
    if not PreAggregationPartition.objects.filter(pk=partition_id).exists():
        return "gone"
    if not _claim(partition_id, worker):
        return "busy"
    row = PreAggregationPartition.objects.select_related("deployment").get(pk=partition_id)
    started = time.monotonic()
    try:
        served = serve(row.deployment)
        home = rollup_home(row.deployment)
        layout = _usable(served.model, home).get(row.pre_aggregation)
        if layout is None or rollup_structure(served.model, layout, served.source_url, home) != row.structure:
            _release(partition_id, worker, status=Status.FAILED, error="The model no longer defines this rollup")
            return "obsolete"
        with _Heartbeat(partition_id, worker) as heartbeat:
            refresh_value = ""
            if layout.rollup.refresh_key.sql is not None:
                refresh_value = str(_scalar(served.source_url, layout.rollup.refresh_key.sql))[:255]
            date_range, built_until = _partition_range(served, layout, row)
            compiled = build_query(served.model, layout, date_range, in_source=home.in_source)
            column_names = {c.member: c.name for c in layout.columns}
            if row.schema:
                written = _write_in_source(served, layout, row, worker, compiled, heartbeat)
            else:
                try:
                    result = _run_build(served, compiled, heartbeat.scope)
                except QueryCancelled:
                    if not heartbeat.alive():
                        raise BuildStopped() from None  # the lease was taken over: its statement was stopped
                    raise
                name = _file_name(layout, row)
                directory = deployment_directory(row.deployment_id)
                written = write_partition(
                    directory=directory,
                    file_name=name,
                    # an originalSql table has the columns its cube's SQL gives
                    columns=[c.name for c in layout.columns] if layout.columns else list(result.columns),
                    result=result,
                    indexes=[(i.name, [column_names[m] for m in i.columns]) for i in layout.rollup.indexes],
                    keep_going=heartbeat.alive,
                )
        with transaction.atomic():
            swapped = _release(
                partition_id,
                worker,
                status=Status.BUILT,
                table=written.file,
                built_at=Now(),
                rows=written.rows,
                bytes=written.bytes,
                build_seconds=round(time.monotonic() - started, 3),
                refresh_key_value=refresh_value,
                built_until=_aware(built_until) if built_until is not None else None,
                error="",
                building_table="",
            )
            if swapped:
                _version(row.deployment_id).bump()
        if not swapped:
            if row.schema:
                source_tables(served.source_url).drop(row.schema, [written.file])
            else:
                (deployment_directory(row.deployment_id) / written.file).unlink(missing_ok=True)
            return "lost"
        return "built"
    except BuildStopped:
        return "lost"
    except (ApiError, DataSourceError, QueryError, ModelError, OSError) as exc:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        logger.warning("pre-aggregation partition %s failed to build: %s", partition_id, message)
        _release(partition_id, worker, status=Status.FAILED, error=message[:2000])
        return "failed"
    except BaseException:
        _release(partition_id, worker, status=Status.FAILED, error="Internal error while building")
        raise


def _partition_range(
    served: Served, layout: RollupLayout, row: PreAggregationPartition
) -> tuple[tuple[str, str] | None, datetime | None]:
    """The date range a partition's build reads (UTC local times), and, for a rollup a lambda reads, the end of
    what it holds: the build range's end when that falls within the partition (its rows after it are the source's
    for the lambda), computed before the build reads a row."""
    if row.range_start is None or row.range_end is None:
        return None, None
    start, end = _naive(row.range_start), _naive(row.range_end)
    until = None
    later = PreAggregationPartition.objects.filter(
        deployment_id=row.deployment_id,
        pre_aggregation=row.pre_aggregation,
        structure=row.structure,
        range_start__gt=row.range_start,
    )
    if layout.bounded and later.exists():
        until = end  # the build range goes on past it: the partition is built whole
    elif layout.bounded:
        found = _build_range(served.model, layout.rollup, served.source_url)
        until = end if found is None else parse_local(format_local(min(end, found[1])))
        end = until
    return (format_local(start), format_local(end)), until


def _write_in_source(
    served: Served,
    layout: RollupLayout,
    row: PreAggregationPartition,
    worker: str,
    statement: BuildStatement,
    heartbeat: _Heartbeat,
) -> WrittenPartition:
    """Build the partition into a new table of the data source's rollup schema, through a connection of the
    build's own that may write (:mod:`.rollup_source`; the query path's source stays read only). The table a dead
    build was writing under this lease is dropped first; the new one is named on the row before it is created."""
    tables = source_tables(served.source_url)
    if row.building_table:  # the lease was taken over (or released by a failure): that table is nobody's
        tables.drop(row.schema, [row.building_table])
    name = source_table_name(row.deployment_id, layout.table, row.partition, row.structure, uuid.uuid4().hex)
    if not PreAggregationPartition.objects.filter(pk=row.pk, lease_owner=worker).update(building_table=name):
        raise BuildStopped()
    column_names = {c.member: c.name for c in layout.columns}
    return tables.write(
        schema=row.schema,
        table=name,
        sql=statement.sql,
        params=statement.params,
        columns=[c.name for c in layout.columns],
        indexes=[[column_names[m] for m in i.columns] for i in layout.rollup.indexes],
        timeout_s=_settings()["BUILD_TIMEOUT_SECONDS"],
        keep_going=heartbeat.alive,
        cancel=heartbeat.scope,  # the lease lost: the statement running on the source is stopped
    )


def _run_build(served: Served, statement: BuildStatement, cancel: CancelScope) -> QueryResult:
    """The build statement's rows: from the data source, or, for a rollup built from originalSql pre-aggregations,
    from their tables in the store (each must be built for the structure the model has now); stopped by ``cancel``
    (the build's lease lost) or by ``BUILD_TIMEOUT_SECONDS``."""
    timeout = _settings()["BUILD_TIMEOUT_SECONDS"]
    if not statement.reads:
        source = get_data_source(served.source_url)
        return source.execute(statement.sql, statement.params, timeout_s=timeout, cancel=cancel)
    layouts = rollup_layouts(served.model)
    tables = []
    for rid, table in statement.reads:
        structure = rollup_structure(served.model, layouts[rid], served.source_url)
        files = tuple(
            PreAggregationPartition.objects.filter(
                deployment=served.deployment, pre_aggregation=rid, structure=structure
            ).values_list("table", flat=True)
        )
        if not files or not all(files):
            raise DataSourceError(f"originalSql pre-aggregation {rid} is not built yet")
        tables.append((table, files))
    store = RollupSource(StoreCatalog(served.deployment.pk, tuple(tables)))
    try:
        return store.execute(statement.sql, statement.params, timeout_s=timeout, cancel=cancel)
    finally:
        store.close()


def _originals_built(deployment: Deployment, model: CompiledModel, layout: RollupLayout, source_url: str) -> bool:
    """Whether every originalSql table a rollup is built from is built (a build before would fail)."""
    layouts = rollup_layouts(model)
    for rid in layout.originals:
        structure = rollup_structure(model, layouts[rid], source_url)
        tables = list(
            PreAggregationPartition.objects.filter(
                deployment=deployment, pre_aggregation=rid, structure=structure
            ).values_list("table", flat=True)
        )
        if not tables or not all(tables):
            return False
    return True


def _file_name(layout: RollupLayout, row: PreAggregationPartition) -> str:
    suffix = f"_{row.partition}" if row.partition else ""
    return f"{layout.table}{suffix}_{row.structure[:8]}_{uuid.uuid4().hex[:8]}{FILE_SUFFIX}"


# -- asked for by people ----------------------------------------------------------------------------------------------


def pre_aggregations_rebuild(
    *, deployment: Deployment, serve: Serve, enqueue: Callable[[int], None], pre_aggregation: str | None = None
) -> int:
    """Ask for a rebuild of every partition of the deployment's rollups (or of one, ``cube.name``), scheduled or
    not, and queue their builds; returns how many partitions. 404 for a rollup the model does not define."""
    served = serve(deployment)
    if not served.source_url:
        raise ApiError(f"Deployment {deployment.pk} has no data source: set one with configure_deployment")
    home = rollup_home(deployment)
    layouts = _usable(served.model, home)
    if pre_aggregation is not None:
        if pre_aggregation not in rollup_layouts(served.model):
            raise NotFound(f"Pre-aggregation {pre_aggregation!r} not found in the deployment's model")
        asked = home_layouts(served.model, home)[pre_aggregation]
        if asked.problem is not None:
            raise ApiError(f"Pre-aggregation {pre_aggregation!r} cannot be built: {asked.problem}")
        layouts = {rid: layouts[rid] for rid in asked.parts or (pre_aggregation,)}  # a lambda: its rollups
    now = timezone.now()
    queued = 0
    for layout in layouts.values():
        structure = rollup_structure(served.model, layout, served.source_url, home)
        try:
            rows = _partition_rows(deployment, served.model, layout, served.source_url, structure, now, home)
        except DataSourceError as exc:
            raise ApiError(f"Pre-aggregation {layout.rollup.id}: {exc}") from None
        PreAggregationPartition.objects.filter(pk__in=[r.pk for r in rows]).update(rebuild_requested_at=now)
        for row in rows:
            if _mark_queued(row, now):
                transaction.on_commit(functools.partial(enqueue, row.pk))
            queued += 1
    return queued


def pre_aggregations_collect_garbage(*, deployment: Deployment, serve: Serve) -> int:
    """Drop partitions of structures the model no longer builds (after the file grace period), with their tables
    in the data source, and remove what no partition points to: the store's files, and the tables of the data
    source's rollup schema (marked when first found, dropped once the grace period has passed since). Returns how
    many files and tables were removed."""
    grace = timedelta(seconds=_settings()["FILE_GRACE_SECONDS"])
    home = rollup_home(deployment)
    tables = None  # the writer of the data source's rollup tables, when it can hold them
    try:
        served = serve(deployment)
        current = {
            (rid, rollup_structure(served.model, layout, served.source_url, home))
            for rid, layout in _usable(served.model, home).items()
        }
        if served.source_url and holds_rollups(served.source_url):
            tables = source_tables(served.source_url)
    except (ApiError, ModelError, DataSourceError) as exc:
        # without the model, or the writer of the rollup schema, nothing there is known unused: the store's files
        # are still collected
        logger.warning("pre-aggregations of deployment %s not collected in its data source: %s", deployment.pk, exc)
        current = None
    if current is not None:
        old = timezone.now() - grace
        stale = []
        for pk, rid, structure, schema, table, building in PreAggregationPartition.objects.filter(
            deployment=deployment, updated_at__lt=old
        ).values_list("pk", "pre_aggregation", "structure", "schema", "table", "building_table"):
            if (rid, structure) in current:
                continue
            if schema and tables is not None:
                try:
                    tables.drop(schema, [t for t in (table, building) if t])
                except DataSourceError as exc:
                    logger.warning("rollup tables of deployment %s not dropped: %s", deployment.pk, exc)
                    continue  # kept: dropped on a later pass
            stale.append(pk)
        if stale:
            PreAggregationPartition.objects.filter(pk__in=stale).delete()
            _version(deployment.pk).bump()
    rows = PreAggregationPartition.objects.filter(deployment=deployment)
    removed = remove_unreferenced(
        deployment_directory(deployment.pk),
        lambda: set(rows.filter(schema="").exclude(table="").values_list("table", flat=True)),
        older_than_s=grace.total_seconds(),
    )
    if home.in_source and tables is not None:
        mine = rows.filter(schema=home.schema)

        def in_use() -> set[str]:
            # read once the schema is listed: a table swapped in (or named for a build) meanwhile is seen in use
            live = Q(lease_heartbeat_at__gte=Now() - timedelta(seconds=_settings()["LEASE_STALE_SECONDS"]))
            used = set(mine.exclude(table="").values_list("table", flat=True))
            return used | set(mine.filter(live).exclude(lease_owner="").values_list("building_table", flat=True))

        removed += tables.unreferenced(
            home.schema, table_prefix(deployment.pk), in_use, older_than_s=grace.total_seconds()
        )
    return removed


# -- what is shown ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionStatus:
    partition: str
    range_start: datetime | None
    range_end: datetime | None
    status: str
    built_at: datetime | None
    rows: int | None
    bytes: int | None
    build_seconds: float | None
    error: str
    building_since: datetime | None


@dataclass(frozen=True)
class RollupStatus:
    """A rollup of the deployment's model as the Platform API and the panel show it."""

    rollup: PreAggregation
    table: str
    problem: str | None
    served: bool  # every partition built: queries it matches are answered from it
    partitions: list[PartitionStatus] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.problem is not None:
            return "unusable"
        states = {p.status for p in self.partitions}
        if Status.BUILDING in states:
            return "building"
        if self.served:
            return "built"
        if Status.FAILED in states:
            return "failed"
        return "pending"

    @property
    def last_refresh_time(self) -> datetime | None:
        built = [p.built_at for p in self.partitions if p.built_at is not None]
        return min(built) if self.served and built else None


def pre_aggregations_status(*, deployment: Deployment, serve: Serve) -> list[RollupStatus]:
    """Every rollup of the deployment's model, in definition order, with its partitions for the model and data
    source it serves now: status, rows, size, build time, last build, error."""
    served = serve(deployment)
    rows_by_rollup: dict[tuple[str, str], list[PreAggregationPartition]] = {}
    for row in PreAggregationPartition.objects.filter(deployment=deployment):
        rows_by_rollup.setdefault((row.pre_aggregation, row.structure), []).append(row)
    statuses = []
    home = rollup_home(deployment)
    for rid, layout in home_layouts(served.model, home).items():
        partitions: list[PartitionStatus] = []
        tables: list[str] = []
        if layout.problem is None and served.source_url:
            structure = rollup_structure(served.model, layout, served.source_url, home)
            for row in sorted(rows_by_rollup.get((rid, structure), []), key=lambda r: r.partition):
                tables.append(row.table)
                partitions.append(
                    PartitionStatus(
                        partition=row.partition,
                        range_start=row.range_start,
                        range_end=row.range_end,
                        status=row.status,
                        built_at=row.built_at,
                        rows=row.rows,
                        bytes=row.bytes,
                        build_seconds=row.build_seconds,
                        error=row.error,
                        building_since=row.build_started_at if row.status == Status.BUILDING else None,
                    )
                )
        served_now = bool(tables) and all(tables)
        statuses.append(RollupStatus(layout.rollup, layout.table, layout.problem, served_now, partitions))
    # A lambda has no table of its own: it is served once each rollup it reads is.
    by_id = {status.rollup.id: status for status in statuses}
    return [
        dataclasses.replace(status, served=all(by_id[rid].served for rid in status.rollup.rollups))
        if status.rollup.rollups and status.problem is None
        else status
        for status in statuses
    ]


# -- answering from rollups ---------------------------------------------------------------------------------------


def plan_on_rollups(*, served: Served, ctx: QueryContext, plan: LoadPlan) -> LoadPlan:
    """``plan`` with each query a built rollup matches answered from it (:mod:`embedadmin.semantic.sql.rollups`):
    the same query, rewritten onto the rollup's table and compiled by the planner's compile, its hints naming the
    rollup (``preAggregation``) and the store files it reads."""
    state = store_state(deployment=served.deployment, model=served.model, source_url=served.source_url)
    if state is None or not state.built:
        return plan
    in_source = rollup_home(served.deployment).in_source
    queries = []
    for compiled in plan.queries:
        choice = choose_rollup(
            served.model,
            compiled,
            ctx,
            state.built,
            source_dialect=served.dialect,
            rollup_dialect=served.dialect if in_source else STORE_DIALECT,
        )
        rewritten = None
        if choice is not None:
            rewritten = rewrite(
                served.model,
                compiled,
                choice,
                _compile_on_rollup,
                source_row_limit=_settings()["MAX_SOURCE_ROW_LIMIT"],
            )
        if rewritten is not None:
            used = rewritten.hints["preAggregation"]
            used["catalog"] = state.catalog
            used["sourceUrl"] = served.source_url
            used["location"] = "source" if in_source else "store"
        queries.append(rewritten or compiled)
    return dataclasses.replace(plan, queries=tuple(queries))


def _compile_on_rollup(model: CompiledModel, query: NormalizedQuery) -> CompiledQuery:
    # No caller here: the caller's row filters are in the query already, and the rollup's model has no policies.
    return compile_cached(model, query, QueryContext())


def rollup_read(compiled: CompiledQuery) -> tuple[DataSource, str] | None:
    """For a query answered from a rollup: the store's source to run it on, and the name its results are cached
    under (the rollup's version: a rebuild starts afresh). None for a query of the data source."""
    used = compiled.hints.get("preAggregation")
    if used is None:
        return None
    catalog: StoreCatalog = used["catalog"]
    name = f"pre-aggregations:{catalog.deployment_id}:{used['preAggregationId']}:{used['version']}"
    if used.get("location") == "source":
        # Rollups kept in the data source are read there, through its read-only source, as any query is.
        return get_data_source(used["sourceUrl"]), name
    store = rollup_source(catalog)
    fresh: LambdaSource | None = used.get("lambda")
    if fresh is None:
        return store, name
    return LambdaRead(store, used["sourceUrl"], used["table"], fresh, used["preAggregationId"]), name


class LambdaRead:
    """A lambda's answer as one data source: its source part runs on the data source (its last rollup's build
    statement after where the rollup's tables end), then the statement on the store re-aggregates the lambda's
    tables with those rows, passed as list parameters cast to the store's column types (a decimal column at the
    larger scale of the tables' and the rows'). The result cache keeps the answer as it keeps a source's (the cube's
    refresh interval).

    The source part gives at most ``MAX_SOURCE_ROW_LIMIT`` rows (Cube's ``CUBEJS_MAX_SOURCE_ROW_LIMIT``, 200000); a
    part with more is refused with Cube's message (a 400: the query's date range or the rollup's build range is the
    fix), never answered from the rows that fit."""

    dialect = "duckdb"

    def __init__(self, store: RollupSource, source_url: str, view: str, fresh: LambdaSource, lambda_id: str) -> None:
        self.store = store
        self.source_url = source_url
        self.view = view
        self.fresh = fresh
        self.lambda_id = lambda_id

    def execute(
        self, sql: str, params: Sequence[Any], *, timeout_s: float, cancel: CancelScope | None = None
    ) -> QueryResult:
        started = time.monotonic()
        rows = get_data_source(self.source_url).execute(
            self.fresh.sql, self.fresh.params, timeout_s=timeout_s, cancel=cancel
        )
        if len(rows.rows) > self.fresh.row_limit:
            raise QueryError(
                f"The maximum number of source rows {self.fresh.row_limit} was reached for {self.lambda_id}: "
                "narrow the query's date range, or build the lambda's rollups further"
            )
        if len(rows.columns) != len(self.fresh.columns):
            raise DataSourceError("the lambda's source rows do not match its tables' columns")
        left = max(timeout_s - (time.monotonic() - started), 1.0)
        stored = self.store.column_types(self.view, timeout_s=left)
        by_column = [list(values) for values in zip(*rows.rows, strict=True)] if rows.rows else [[] for _ in stored]
        types = [wider_type(*column) for column in zip(stored, rows.types, by_column, strict=True)]
        statement = lambda_rows_sql(sql, self.fresh.columns, types, len(params) + 1)
        return self.store.execute(statement, [*params, *by_column], timeout_s=left, cancel=cancel)

    def close(self) -> None:
        """Nothing of its own to close: the store's source and the data source are shared."""
