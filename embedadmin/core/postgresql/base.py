"""Django's PostgreSQL backend, its psycopg pool a :class:`~embedadmin.core.pgpool.CheckedConnectionPool`.

Django builds its pool with ``check=ConnectionPool.check_connection`` when ``CONN_HEALTH_CHECKS`` is on, and
gives no way to pass another check: after a PostgreSQL restart that check still costs a waiting request a
second, two, four... per dead idle connection (psycopg's back-off), enough to run out the pool timeout.
This backend builds the same pool with the checked pool class, which sweeps every dead idle connection as soon
as it finds one, and whose breaker answers at once while the server cannot be reached (a request gets its 503
without waiting the pool timeout). Everything else is Django's backend.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base as postgresql

from embedadmin.core.pgpool import CheckedConnectionPool


class DatabaseWrapper(postgresql.DatabaseWrapper):
    @property
    def pool(self) -> Any:
        pool_options = self.settings_dict["OPTIONS"].get("pool")
        if self.alias == NO_DB_ALIAS or not pool_options:
            return None
        # Django's own: the pools of the process by alias, and the configure callback of a new connection.
        pools: dict[str, Any] = self._connection_pools  # type: ignore[attr-defined]
        if self.alias not in pools:
            if self.settings_dict.get("CONN_MAX_AGE", 0) != 0:
                raise ImproperlyConfigured("Pooling doesn't support persistent connections.")
            options = {} if pool_options is True else dict(pool_options)
            options.setdefault("name", self.alias)  # the breaker's log lines name the database by its alias
            connect_kwargs = self.get_connection_params()
            connect_kwargs["autocommit"] = True  # Django sets the real mode later, as its own backend does
            pool = CheckedConnectionPool(
                kwargs=connect_kwargs,
                open=False,  # opened on first use, not at start-up
                configure=self._configure_connection,  # type: ignore[attr-defined]
                **options,
            )
            pools.setdefault(self.alias, pool)  # two threads may race here: the first pool set wins
        return pools[self.alias]
