"""A psycopg connection pool that never hands out a dead connection, and the words for "the database is down".

After PostgreSQL restarts, every idle connection of a pool is dead, and psycopg's pool only learns it when a
client uses one: each would fail one request. :class:`CheckedConnectionPool` checks a connection before it
hands it out (an empty statement, one round trip), and when one is dead it checks every idle connection at
once, so the client that found it waits for a fresh connection instead of trying the next dead one (psycopg's
own check loop backs off a second, then two, four, ... between dead connections, and could run out of time).

The application database (through :mod:`embedadmin.core.postgresql`, the ``ENGINE`` ``DATABASE_URL`` selects)
and every PostgreSQL data source (:mod:`embedadmin.semantic.serving.datasources`) use it.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import psycopg_pool

# SQLSTATE classes of a server that is not there or going away: 08 connection exception, 57P01-57P03
# admin/crash shutdown and "the database system is starting up".
_UNAVAILABLE_SQLSTATES = ("08", "57P01", "57P02", "57P03")


class CheckedConnectionPool(psycopg_pool.ConnectionPool):
    """:class:`psycopg_pool.ConnectionPool` whose ``getconn`` returns only a connection that just answered.

    Takes the pool's arguments; ``check`` must not be given (this class is that check).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("check") is not None:
            raise TypeError("CheckedConnectionPool checks connections itself: do not pass check=")
        kwargs.pop("check", None)
        self._sweeping = threading.Lock()
        self.last_connect_error: BaseException | None = None
        base: type[psycopg.Connection] = kwargs.pop("connection_class", psycopg.Connection)
        pool = self

        class _Recorded(base):  # type: ignore[valid-type,misc]
            """The pool's connection class, noting whether its last connection attempt failed (and why)."""

            @classmethod
            def connect(cls, *a: Any, **kw: Any) -> Any:
                try:
                    conn = super().connect(*a, **kw)
                except Exception as exc:
                    pool.last_connect_error = exc
                    raise
                pool.last_connect_error = None
                return conn

        super().__init__(*args, check=self._check_before_use, connection_class=_Recorded, **kwargs)

    def getconn(self, timeout: float | None = None) -> Any:
        """A connection that just answered; :class:`psycopg_pool.PoolTimeout` naming why none could be made
        (the last connection attempt's error) when the server is down."""
        try:
            return super().getconn(timeout)
        except psycopg_pool.PoolTimeout as exc:
            failed = self.last_connect_error
            if failed is None:
                raise
            raise psycopg_pool.PoolTimeout(f"{exc}; last connection attempt: {unavailable_reason(failed)}") from failed

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
        ("does not exist", "the database does not exist"),
    ):
        if needle in text:
            return reason
    return f"unavailable ({type(exc).__name__})"
