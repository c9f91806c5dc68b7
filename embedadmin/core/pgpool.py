"""A psycopg connection pool that never hands out a dead connection, fails fast while the server is down, and
the words for "the database is down".

After PostgreSQL restarts, every idle connection of a pool is dead, and psycopg's pool only learns it when a
client uses one: each would fail one request. :class:`CheckedConnectionPool` checks a connection before it
hands it out (an empty statement, one round trip), and when one is dead it checks every idle connection at
once, so the client that found it waits for a fresh connection instead of trying the next dead one (psycopg's
own check loop backs off a second, then two, four, ... between dead connections, and could run out of time).

While the server cannot be reached, a request would wait the whole pool timeout for a connection that cannot
come. The pool's :class:`ConnectionBreaker` opens when a connection attempt fails that way: from then on a
request is refused at once (:class:`DatabaseUnreachable`, a pool timeout that came without waiting, which every
caller already answers with a 503), the pool's own reconnection attempts are put aside, and one connection
attempt at a time, every :data:`PROBE_INTERVAL_SECONDS`, tries the server (half-open): made by the pool's watcher
thread, or by the request that finds the attempt due. The first that succeeds closes the breaker and the pool
refills at once, so requests recover within an interval of the server coming back, traffic or not. One breaker
per pool, so per process and per server; SQLite has no pool and never meets it.

The application database (through :mod:`embedadmin.core.postgresql`, the ``ENGINE`` ``DATABASE_URL`` selects)
and every PostgreSQL data source (:mod:`embedadmin.semantic.sources`) use it.

The breaker reaches into psycopg_pool 3.3 (pinned in ``requirements.txt``) at three places, each named where it
happens: the waiting clients (failed at once when the breaker opens), ``_get_ready_connection`` (refuses a client
under the pool's lock, so none starts waiting after that), and ``_add_connection`` (a slot's reconnection put
aside while open). ``tests/core/test_db_breaker.py`` drives each of them against a real server.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import psycopg_pool
from psycopg_pool.pool import AddConnection

logger = logging.getLogger(__name__)

# SQLSTATE classes of a server that is not there or going away: 08 connection exception, 57P01-57P03
# admin/crash shutdown and "the database system is starting up".
_UNAVAILABLE_SQLSTATES = ("08", "57P01", "57P02", "57P03")
# A server that answers but has no connection slot left is up: its pool's other connections still serve.
_SERVER_FULL = ("too many clients", "remaining connection slots")

# How long after a failed connection attempt the next one may be made (one at a time, the probe): requests
# recover within this of the database coming back, and a down server sees one attempt per interval per pool.
PROBE_INTERVAL_SECONDS = 0.5
# The watcher stops probing a pool no request has asked for a connection for this long (a data source nobody
# queries is not tried twice a second for ever); the next request then probes, and starts it again.
WATCH_IDLE_SECONDS = 60.0


class DatabaseUnreachable(psycopg_pool.PoolTimeout):
    """No connection, at once: the pool's breaker is open. Its ``__cause__`` is the failed connection attempt.

    A :class:`psycopg_pool.PoolTimeout` (an ``OperationalError``), so that whatever answers a pool timeout with a
    503 answers this one too."""


class ConnectionBreaker:
    """Closed, open or half-open, for the connection attempts of one pool; thread-safe.

    - Closed: requests go to the pool as usual.
    - Open: a connection attempt failed (:meth:`failed`); requests are refused at once (:meth:`admit` raises
      :class:`DatabaseUnreachable`) and the pool's reconnections are put aside (:meth:`defer`).
    - Half-open: ``probe_interval`` after the last failure, one attempt is due: the first to ask takes the
      turn (a request through :meth:`admit`, the pool's watcher through :meth:`try_probe`) and makes one real
      attempt; every other request is still refused until it ends. Any successful attempt closes the breaker
      (:meth:`succeeded`) and hands back what was put aside; a failed one opens it for another interval.
    """

    def __init__(self, *, name: str = "", probe_interval: float = PROBE_INTERVAL_SECONDS) -> None:
        self.name = name
        self.probe_interval = probe_interval
        self._lock = threading.Lock()
        self._open = False
        self._prober: int | None = None  # the thread making the probe's attempt, while it does
        self._failed_at = 0.0  # the last failed attempt: the next may be made probe_interval after it
        self._opened_at = 0.0
        self._deferred: list[Callable[[], None]] = []
        self.last_error: BaseException | None = None
        self.asked_at = time.monotonic()  # when a request last asked for a connection
        # Counters: times opened, requests refused without an attempt, probes (attempts while open).
        self.opened = 0
        self.refused = 0
        self.probes = 0

    @property
    def is_open(self) -> bool:
        """Open or half-open: the last connection attempt failed and none has succeeded since."""
        return self._open

    @property
    def state(self) -> str:
        """``"closed"``, ``"open"`` (refusing every request) or ``"half-open"`` (a probe is due or under way)."""
        with self._lock:
            if not self._open:
                return "closed"
            due = time.monotonic() >= self._failed_at + self.probe_interval
            return "half-open" if self._prober is not None or due else "open"

    @property
    def prober(self) -> int | None:
        """The thread making the probe's attempt (its ``threading.get_ident()``), while one does."""
        return self._prober

    def due_in(self) -> float:
        """Seconds until the next attempt is due (0 when due now or closed)."""
        return max(0.0, self._failed_at + self.probe_interval - time.monotonic()) if self._open else 0.0

    def admit(self) -> bool:
        """Let a request through: False when closed (get a connection as usual), True when it is the probe (it
        must make one real connection attempt, and then call :meth:`release`); otherwise raise
        :class:`DatabaseUnreachable` at once."""
        self.asked_at = time.monotonic()
        if not self._open:  # the common case, without the lock
            return False
        with self._lock:
            if not self._open:
                return False
            if self._take_turn():
                return True
            self.refused += 1
        raise self.refusal()

    def try_probe(self) -> bool:
        """Take the probe's turn, if the breaker is open, an attempt is due and none is under way (then make one
        attempt and call :meth:`release`)."""
        with self._lock:
            return self._open and self._take_turn()

    def _take_turn(self) -> bool:
        if self._prober is not None or time.monotonic() < self._failed_at + self.probe_interval:
            return False
        self._prober = threading.get_ident()
        self.probes += 1
        return True

    def refusal(self) -> DatabaseUnreachable:
        """The error a refused request gets (its cause the failed attempt)."""
        error = DatabaseUnreachable(f"the database {self.name!r} cannot be reached: the last connection attempt failed")
        error.__cause__ = self.last_error
        return error

    def failed(self, exc: BaseException) -> bool:
        """A connection attempt failed: open (again) until ``probe_interval`` from now. True if it was closed."""
        with self._lock:
            opened = not self._open
            now = time.monotonic()
            self._open = True
            self._failed_at = now
            self.last_error = exc
            if self._prober == threading.get_ident():
                self._prober = None  # the probe failed: the next one after the interval
            if opened:
                self._opened_at = now
                self.opened += 1
        if opened:
            logger.warning(
                "database %r unreachable (%s): refusing requests at once, one connection attempt every %g s",
                self.name,
                unavailable_reason(exc),
                self.probe_interval,
            )
        return opened

    def succeeded(self) -> list[Callable[[], None]]:
        """A connection attempt succeeded: close, and return what :meth:`defer` put aside (to run now)."""
        with self._lock:
            if not self._open:
                return []
            self._open = False
            self._prober = None
            deferred, self._deferred = self._deferred, []
            down = time.monotonic() - self._opened_at
        logger.warning("database %r reachable again after %.2f s", self.name, down)
        return deferred

    def release(self) -> None:
        """The probe's attempt is over, however it ended (a no-op when :meth:`failed` or :meth:`succeeded` saw it)."""
        with self._lock:
            if self._prober == threading.get_ident():
                self._prober = None

    def defer(self, action: Callable[[], None]) -> bool:
        """Put ``action`` aside until the breaker closes, if it is open; False (do it now) when closed."""
        with self._lock:
            if not self._open:
                return False
            self._deferred.append(action)
            return True


def opens_breaker(exc: BaseException) -> bool:
    """Whether a failed connection attempt means the server cannot be reached (not that it is merely full)."""
    text = str(exc).lower()
    return is_unavailable_error(exc) and not any(needle in text for needle in _SERVER_FULL)


class CheckedConnectionPool(psycopg_pool.ConnectionPool):
    """:class:`psycopg_pool.ConnectionPool` whose ``getconn`` returns only a connection that just answered, and
    answers at once while its :class:`ConnectionBreaker` is open.

    Takes the pool's arguments, and ``probe_interval`` (seconds, :data:`PROBE_INTERVAL_SECONDS`); ``check``
    must not be given (this class is that check). While the breaker is open a watcher thread of the pool makes
    the due attempt when no request does (:meth:`_watch`).
    """

    def __init__(self, *args: Any, probe_interval: float = PROBE_INTERVAL_SECONDS, **kwargs: Any) -> None:
        if kwargs.get("check") is not None:
            raise TypeError("CheckedConnectionPool checks connections itself: do not pass check=")
        kwargs.pop("check", None)
        self._sweeping = threading.Lock()
        self.last_connect_error: BaseException | None = None
        self.breaker = ConnectionBreaker(probe_interval=probe_interval)
        self._watcher: threading.Thread | None = None
        self._watcher_lock = threading.Lock()
        self._closing = threading.Event()
        base: type[psycopg.Connection] = kwargs.pop("connection_class", psycopg.Connection)
        pool = self

        class _Recorded(base):  # type: ignore[valid-type,misc]
            """The pool's connection class: every connection attempt of the pool (its workers' and the probe's)
            reports to the breaker."""

            @classmethod
            def connect(cls, *a: Any, **kw: Any) -> Any:
                try:
                    conn = super().connect(*a, **kw)
                except Exception as exc:
                    pool._attempt_failed(exc)
                    raise
                pool.last_connect_error = None
                for action in pool.breaker.succeeded():
                    action()
                return conn

        super().__init__(*args, check=self._check_before_use, connection_class=_Recorded, **kwargs)
        self.breaker.name = self.name

    def getconn(self, timeout: float | None = None) -> Any:
        """A connection that just answered; :class:`DatabaseUnreachable` at once while the breaker is open;
        :class:`psycopg_pool.PoolTimeout` naming why none could be made (the last connection attempt's error)."""
        if timeout is None:
            timeout = self.timeout
        try:
            probe = self.breaker.admit()
        except DatabaseUnreachable:
            self._ensure_watcher()  # it may have stopped on a pool nobody asked for a while
            raise
        if probe:
            started = time.monotonic()
            self._probe(timeout)
            timeout = max(timeout - (time.monotonic() - started), 0.001)
        try:
            return super().getconn(timeout)
        except psycopg_pool.PoolTimeout as exc:
            if self.breaker.is_open:  # it opened while this request waited, or before it started to wait
                raise self.breaker.refusal() from self.breaker.last_error
            failed = self.last_connect_error
            if failed is None:
                raise
            raise psycopg_pool.PoolTimeout(f"{exc}; last connection attempt: {unavailable_reason(failed)}") from failed

    def _probe(self, timeout: float) -> None:
        """The half-open breaker's one attempt, in this request's thread. Success closed the breaker (the pool's
        put-aside reconnections run now) and the request goes on to the pool; failure refuses it."""
        try:
            conn = self._connect(timeout=timeout)  # psycopg_pool's: the attempt a pool slot makes
        except Exception as exc:
            self._attempt_failed(exc)  # (again: a failure after connecting, in configure, is not reported)
            raise self.breaker.refusal() from exc
        finally:
            self.breaker.release()
        conn.close()  # a probe only: the pool's own slots connect now that the breaker is closed

    def _attempt_failed(self, exc: BaseException) -> None:
        self.last_connect_error = exc
        if not (self.breaker.is_open or opens_breaker(exc)):
            return
        # Under the pool's lock, as _get_ready_connection reads the breaker: no client starts waiting after the
        # breaker opened, and every client already waiting (psycopg_pool's queue) is told now, not at its timeout.
        with self._lock:
            opened = self.breaker.failed(exc)
            waiting = list(self._waiting) if opened else []
            if opened:
                self._waiting.clear()
        for client in waiting:
            client.fail(self.breaker.refusal())
        if opened:
            self._ensure_watcher()

    def _ensure_watcher(self) -> None:
        with self._watcher_lock:
            if self._closing.is_set() or (self._watcher is not None and self._watcher.is_alive()):
                return
            self._watcher = threading.Thread(target=self._watch, name=f"{self.name}-breaker", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        """While the breaker is open, make each due attempt that no request makes: the breaker closes within an
        interval of the server coming back even when no request comes to try. Ends when the breaker closes, the
        pool closes, or no request has asked for a connection for :data:`WATCH_IDLE_SECONDS`."""
        breaker = self.breaker
        while breaker.is_open and time.monotonic() - breaker.asked_at < WATCH_IDLE_SECONDS:
            if self._closing.wait(min(max(breaker.due_in(), 0.01), 1.0)):  # a changed interval is seen within 1 s
                return
            if not breaker.try_probe():
                continue  # a request is probing, or the breaker closed
            try:
                conn = self._connect(timeout=self.timeout)
            except Exception as exc:
                self._attempt_failed(exc)
                continue
            finally:
                breaker.release()
            conn.close()  # a probe only: the pool's slots connect now that the breaker is closed

    def close(self, timeout: float = 5.0) -> None:
        self._closing.set()
        super().close(timeout)

    def _get_ready_connection(self, timeout: float | None) -> Any:
        # psycopg_pool calls this under the pool's lock, before a client starts waiting.
        if self.breaker.is_open:
            raise self.breaker.refusal()
        return super()._get_ready_connection(timeout)

    def _add_connection(self, attempt: Any, growing: bool = False) -> None:
        # psycopg_pool's (re)connection of a slot, run by its workers with a back-off of 1, 2, 4... s between
        # failures. While the breaker is open the slot waits for it to close instead (the probe is the one
        # attempt), then connects at once rather than at its next back-off.
        if self.breaker.defer(lambda: self.run_task(AddConnection(self, growing=growing))):
            return
        super()._add_connection(attempt, growing=growing)

    def _check_before_use(self, conn: psycopg.Connection) -> None:
        try:
            psycopg_pool.ConnectionPool.check_connection(conn)
        except Exception:
            # One dead connection means the server went away: the other idle ones are dead too.
            self.sweep()
            raise

    def sweep(self) -> None:
        """Check every idle connection now, discarding (and replacing) the dead ones; one sweep at a time."""
        if not self._sweeping.acquire(blocking=False):
            return
        try:
            self.check()
        finally:
            self._sweeping.release()


def is_unavailable_error(exc: BaseException) -> bool:
    """Whether ``exc`` (psycopg's) says the server cannot be reached, rather than that it refused a statement:
    a pool that gave no connection in time, a connection that failed or was lost (no SQLSTATE), a server
    shutting down or starting up."""
    if isinstance(exc, psycopg_pool.PoolTimeout | psycopg.InterfaceError):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    sqlstate = getattr(exc, "sqlstate", None)
    return not sqlstate or sqlstate.startswith(_UNAVAILABLE_SQLSTATES)


def unavailable_reason(exc: BaseException) -> str:
    """A short reason for an unreachable database, safe to show to anyone (no host, port or user name)."""
    text = str(exc).lower()
    if isinstance(exc, DatabaseUnreachable):
        if exc.__cause__ is not None:
            reason = unavailable_reason(exc.__cause__)
            return f"{reason} (at the last connection attempt; answering at once until one succeeds)"
        return "the last connection attempt failed"
    if isinstance(exc, psycopg_pool.PoolTimeout):
        if exc.__cause__ is not None:
            return f"{unavailable_reason(exc.__cause__)} (no connection within the pool timeout)"
        return "no connection became free in time (pool timeout)"
    for needle, reason in (
        ("connection refused", "connection refused"),
        ("starting up", "the database system is starting up"),
        ("shutting down", "the database system is shutting down"),
        ("terminating connection", "the connection was terminated by the server"),
        ("server closed the connection", "the server closed the connection"),
        ("consuming input failed", "the server closed the connection"),
        ("timeout expired", "connection timed out"),
        ("could not translate host name", "unknown host"),
        ("no such file or directory", "no server at the socket"),
        ("the connection is closed", "the connection is closed"),
        ("password authentication failed", "authentication failed"),
        ("too many clients", "no connection slot left on the server"),
        ("does not exist", "the database does not exist"),
    ):
        if needle in text:
            return reason
    return f"unavailable ({type(exc).__name__})"
