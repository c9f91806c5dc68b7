"""What the warehouse sources (:mod:`.trino`, :mod:`.snowflake`, :mod:`.bigquery`, :mod:`.databricks`) share: their
drivers imported on first use with a clear error when the package is missing, URL options, a statement stopped at
its deadline or by its :class:`~.base.CancelScope`, a few idle connections kept per URL, and the pieces of their
sqlglot writers that recognise this server's own trees.

Each warehouse is reached over HTTP through its official driver; none runs here, so their modules are tested by
SQL snapshots of every query shape and by their drivers' ``connect`` replaced with a recorder
(``tests/semantic/sources/``).
"""

from __future__ import annotations

import importlib
import logging
import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote

from sqlglot import exp

from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.sources.base import DataSourceUnavailable, QueryCancelled, cancellable, watchdog

logger = logging.getLogger(__name__)

# The file that lists the warehouse drivers (pinned); README and docs/data-sources.md say how to install it.
REQUIREMENTS = "requirements-warehouses.txt"


def import_driver(module: str, package: str, kind: str) -> ModuleType:
    """The driver module, imported on first use: a deployment that never names the warehouse never loads it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise DataSourceError(
            f"{kind} data sources need the {package} package, which is not installed on this server: "
            f"pip install -r {REQUIREMENTS}"
        ) from None


def url_options(query: str, allowed: frozenset[str], kind: str) -> dict[str, str]:
    """The query options of a data source URL; an option the source does not know is refused (a typo would
    otherwise be ignored silently)."""
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise DataSourceError(f"Unsupported {kind} URL option: {', '.join(unknown)}")
    return options


def flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = options.get(name)
    if value is None:
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise DataSourceError(f"URL option {name} must be true or false")


def number(options: Mapping[str, str], name: str, default: float) -> float:
    value = options.get(name)
    if value is None:
        return default
    try:
        parsed = float(value)
    except ValueError:
        raise DataSourceError(f"URL option {name} must be a number") from None
    if parsed <= 0:
        raise DataSourceError(f"URL option {name} must be positive")
    return parsed


def path_parts(path: str) -> list[str]:
    """The non-empty ``/``-separated parts of a URL path, percent-decoded."""
    return [unquote(part) for part in path.split("/") if part]


@dataclass
class Stops:
    """What stopped a statement, if anything: its deadline or its cancel scope."""

    timed_out: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)

    def error(self, timeout_s: float) -> DataSourceError | None:
        """The error to raise for a statement that failed after being stopped (None: it was not stopped)."""
        if self.cancelled.is_set():
            return QueryCancelled()
        if self.timed_out.is_set():
            return QueryTimeout(timeout_s)
        return None


@contextmanager
def stoppable(timeout_s: float, cancel: Any, stop: Callable[[], None]) -> Iterator[Stops]:
    """Within the block, ``stop`` is called (from another thread, at most once per cause, never after the block
    ends) when ``timeout_s`` passes or ``cancel`` is cancelled. The warehouses stop statements with a request of
    their own (an HTTP DELETE, a job cancel), so ``stop`` runs on a thread of its own, never on the shared
    watchdog's."""
    stops = Stops()
    guard = threading.Lock()
    live = True

    def on_deadline() -> None:
        with guard:
            if not live:
                return
            stops.timed_out.set()
        threading.Thread(target=_stop_quietly, args=(stop,), name="datasource-timeout", daemon=True).start()

    alarm = watchdog.call_later(timeout_s, on_deadline)
    try:
        with cancellable(cancel, stop) as fired:
            stops.cancelled = fired
            yield stops
    finally:
        watchdog.cancel(alarm)
        with guard:
            live = False


def _stop_quietly(stop: Callable[[], None]) -> None:
    try:
        stop()
    except Exception:
        logger.warning("stopping a warehouse statement failed", exc_info=True)


def connected(connect: Callable[..., Any], args: Mapping[str, Any], errors: Any, kind: str) -> Any:
    """``connect(**args)``: a warehouse connection (or client); the driver's ``errors`` (wrong credentials, an
    unknown account, no network) as :class:`DataSourceUnavailable`, the same statement expected to work later."""
    try:
        return connect(**args)
    except errors as exc:
        logger.warning("%s data source unavailable: %s %s", kind, type(exc).__name__, getattr(exc, "errno", ""))
        raise DataSourceUnavailable("Data source is unavailable") from None


class DriverSource:
    """A warehouse reached through its official driver: the driver module and the arguments of its ``connect``.
    ``KIND`` names the warehouse in messages and logs. The rollup writers of ``serving/rollup_writers/`` open
    connections of their own through :meth:`connect`, never one the query path keeps."""

    KIND = "warehouse"

    def __init__(self, connect_args: dict[str, Any], driver: Any) -> None:
        self._connect_args = connect_args
        self._driver = driver

    @property
    def driver(self) -> Any:
        return self._driver

    @property
    def connect_args(self) -> dict[str, Any]:
        """The arguments of the driver's ``connect`` read from the URL (a catalog, a database...)."""
        return self._connect_args

    def connect(self, **changes: Any) -> Any:
        """A new connection of the driver's ``connect`` (``changes``: arguments that differ from the URL's)."""
        return connected(self._driver.connect, {**self._connect_args, **changes}, self.driver_errors(), self.KIND)

    def driver_errors(self) -> Any:
        """The driver's base exception class (PEP 249's ``Error``)."""
        return self._driver.Error


def timeout_seconds(timeout_s: float) -> int:
    """A time limit in whole seconds, rounded up, at least 1 (what the warehouses' settings take)."""
    return max(1, math.ceil(timeout_s))


def positional(params: Sequence[Any]) -> list[Any] | None:
    """Parameters bound by position (``?``, ``:1``...); None for none (the drivers then leave the text as it is)."""
    return list(params) or None


def named(params: Sequence[Any]) -> dict[str, Any] | None:
    """Parameters bound by name ``p1``, ``p2``... (``:p1``); None for none."""
    return {f"p{index}": value for index, value in enumerate(params, start=1)} or None


class SessionSource(DriverSource):
    """A warehouse whose sessions take a login round trip to open: a few are kept idle between statements."""

    def __init__(self, connect_args: dict[str, Any], driver: Any) -> None:
        super().__init__(connect_args, driver)
        self._connections = IdleConnections(self.connect)

    def close(self) -> None:
        self._connections.close()

    def error_for(self, exc: Exception, timeout_s: float) -> DataSourceError:
        """The error a caller sees for the driver's ``exc`` (the warehouse's message for a refused statement)."""
        raise NotImplementedError

    @contextmanager
    def statement_session(self, timeout_s: float, set_timeout: str) -> Iterator[tuple[Lease, Any]]:
        """A kept session for one statement and a cursor on it, its statement time limit set to ``timeout_s`` (whole
        seconds, by ``set_timeout`` with ``{seconds}``) when the session holds another. A driver error becomes the
        caller's (:meth:`error_for`); the session is kept when the warehouse only refused the statement."""
        seconds = timeout_seconds(timeout_s)
        with self._connections.connection() as lease:
            try:
                cursor = lease.connection.cursor()
                try:
                    if lease.settings.get("timeout") != seconds:
                        cursor.execute(set_timeout.format(seconds=seconds))
                        lease.settings["timeout"] = seconds
                    yield lease, cursor
                finally:
                    cursor.close()
            except self.driver_errors() as exc:
                mapped = self.error_for(exc, timeout_s)
                lease.kept_on_error = not isinstance(mapped, DataSourceUnavailable)
                raise mapped from None


class IdleConnections:
    """Connections kept between statements (a warehouse session takes a login round trip to open), at most
    ``max_idle`` of them; a connection is used by one statement at a time."""

    def __init__(self, open_connection: Callable[[], Any], *, max_idle: int = 4) -> None:
        self._open = open_connection
        self._max_idle = max_idle
        self._idle: list[Lease] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[Lease]:
        with self._lock:
            lease = self._idle.pop() if self._idle else None
        if lease is None:
            lease = Lease(self._open())
        lease.kept_on_error = False
        try:
            yield lease
        except BaseException:
            lease.broken = lease.broken or not lease.kept_on_error
            raise
        finally:
            self._give_back(lease)

    def _give_back(self, lease: Lease) -> None:
        with self._lock:
            keep = not lease.broken and not self._closed and len(self._idle) < self._max_idle
            if keep:
                self._idle.append(lease)
        if not keep:
            _close_quietly(lease.connection)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for lease in idle:
            _close_quietly(lease.connection)


@dataclass
class Lease:
    """A connection lent for one statement, with the session settings it holds (``settings``: what the source last
    set on it, kept with the connection between statements). An error leaves it broken (closed, not reused) unless
    the source says the connection is still sound (``kept_on_error``: the database refused the SQL)."""

    connection: Any
    broken: bool = False
    kept_on_error: bool = False
    settings: dict[str, Any] = field(default_factory=dict)


def _close_quietly(connection: Any) -> None:
    try:
        connection.close()
    except Exception:
        logger.debug("closing a warehouse connection failed", exc_info=True)


# -- the writers' view of this server's syntax trees (semantic/sql/) ------------------------------------------------


def without_transforms(transforms: dict[Any, Any], *nodes: type[exp.Expr]) -> dict[Any, Any]:
    """A generator's ``TRANSFORMS`` less the entries of ``nodes``, so that the writer's ``<node>_sql`` methods
    render them (sqlglot looks a node up in ``TRANSFORMS`` before its method)."""
    return {node: render for node, render in transforms.items() if node not in nodes}


def is_local_time(node: exp.AtTimeZone) -> bool:
    """``CAST(x AS TIMESTAMPTZ) AT TIME ZONE 'Zone'``: a time column as wall-clock time of the query time zone
    (``sql/expressions.py local_time``), as opposed to an ``AT TIME ZONE`` written in a model's own SQL."""
    this = node.this
    return isinstance(this, exp.Cast) and this.to.is_type(exp.DataType.Type.TIMESTAMPTZ)


def is_instant_parameter(node: exp.Cast) -> bool:
    """``CAST($n AS TIMESTAMPTZ)``: an instant bound as ISO 8601 text in UTC (``...Z``, ``sql/filters.py``)."""
    return isinstance(node.this, exp.Parameter) and node.to.is_type(exp.DataType.Type.TIMESTAMPTZ)


def interval_steps(node: exp.Add) -> tuple[exp.Expr, int, str, exp.Expr] | None:
    """``origin + INTERVAL 'n' UNIT * count`` (custom granularities, ``sql/expressions.py _bucket``) as
    ``(origin, n, UNIT, count)``; None for any other sum."""
    product = node.expression
    if not isinstance(product, exp.Mul):
        return None
    interval = product.this
    if not isinstance(interval, exp.Interval) or not isinstance(interval.this, exp.Literal):
        return None
    unit = interval.args.get("unit")
    if unit is None:
        return None
    try:
        amount = int(interval.this.name)
    except ValueError:
        return None
    return node.this, amount, unit.name.upper(), product.expression


def interval_step_sql(generator: Any, node: exp.Add, template: str) -> str | None:
    """``origin + INTERVAL 'n' UNIT * count`` written by ``template`` (``{origin}``, ``{unit}``, ``{count}``: the
    number of units, ``n * count``), for a warehouse that adds a counted unit with a function; None for any other
    sum."""
    steps = interval_steps(node)
    if steps is None:
        return None
    origin, amount, unit, count = steps
    counted = generator.sql(count) if amount == 1 else f"{amount} * {generator.sql(count)}"
    return template.format(origin=generator.sql(origin), unit=unit, count=counted)


def parameter_number(node: exp.Parameter) -> int:
    return int(node.this.name)


def local_text(literal: exp.Expr) -> str | None:
    """The text of a string literal (None for anything else)."""
    return literal.name if isinstance(literal, exp.Literal) and literal.is_string else None
