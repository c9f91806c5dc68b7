"""Reading configuration from the environment, failing loudly on bad values.

Every setting that an operator may change comes through one of these helpers, so a typo in a
deployment's environment stops the process at start-up with a message that names the variable
instead of surfacing later as a confusing runtime error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import overload
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured


@overload
def env_str(name: str, default: str) -> str: ...
@overload
def env_str(name: str, default: None = None) -> str | None: ...
def env_str(name: str, default: str | None = None) -> str | None:
    """Return ``$NAME``, or the contents of the file named by ``$NAME_FILE`` (for secrets)."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        try:
            return Path(file_name).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_name!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true or false)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def _postgres_host(netloc: str) -> str:
    """The host of a PostgreSQL URL as libpq reads it: a name, an address, or a percent-encoded Unix socket
    directory (``postgresql://user:pw@%2Fvar%2Frun%2Fpostgresql/name``), kept as written (no lowercasing)."""
    host = netloc.rpartition("@")[2]
    if host.startswith("["):  # an IPv6 address (maybe with a %25-encoded zone), maybe with a port after "]"
        return unquote(host[1 : host.index("]")])
    return unquote(host.partition(":")[0])


def database_from_url(url: str, *, base_dir: Path) -> dict:
    """Translate ``sqlite:///path`` or ``postgresql://user:pw@host:port/name`` into Django's form.

    The PostgreSQL host may be a Unix socket directory, percent-encoded as libpq accepts it
    (``postgresql://user:pw@%2Fvar%2Frun%2Fpostgresql/name``): on one box, the socket saves the TCP stack on
    every round trip.

    A relative SQLite path is taken relative to the project directory, so the default
    ``sqlite:///var/embedadmin.sqlite3`` works wherever the checkout lives.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    options = dict(parse_qsl(parts.query))
    if scheme == "sqlite":
        raw_path = unquote(parts.path)
        # sqlite:///relative/path -> "/relative/path"; sqlite:////abs/path -> "//abs/path".
        path = Path(raw_path[1:]) if raw_path.startswith("//") else base_dir / raw_path.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(path),
            # A busy timeout makes concurrent writers wait for the lock instead of failing.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    if scheme in {"postgres", "postgresql", "pgsql"}:
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured("DATABASE_URL names no database")
        pool_size = int(options.pop("pool_max_size", "20"))
        # Parameters bound on the server, and statements prepared once a connection has run them twice:
        # the hot paths run the same few statements (core/prepared.py), and PostgreSQL then skips
        # parsing and planning them. Behind a transaction-mode pooler (PgBouncer < 1.21) that cannot
        # carry prepared statements, set ``?prepare_threshold=none``.
        threshold = options.pop("prepare_threshold", "2").strip().lower()
        if threshold in {"none", ""}:
            prepare_threshold = None
        elif threshold.isdigit():
            prepare_threshold = int(threshold)
        else:
            raise ImproperlyConfigured(f"DATABASE_URL: prepare_threshold={threshold!r} is not a number or 'none'")
        server_binding = options.pop("server_side_binding", "true").strip().lower() not in {"0", "false", "off", "no"}
        pool_timeout = options.pop("pool_timeout", "10")
        try:
            pool_timeout_s = float(pool_timeout)
        except ValueError:
            raise ImproperlyConfigured(f"DATABASE_URL: pool_timeout={pool_timeout!r} is not a number") from None
        config: dict = {
            # Django's backend with a pool that checks each connection before handing it out and sweeps the
            # dead ones after a PostgreSQL restart (embedadmin/core/postgresql, core/pgpool.py).
            "ENGINE": "embedadmin.core.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": _postgres_host(parts.netloc),
            "PORT": str(parts.port or ""),
            # Connections come from psycopg's pool; Django's persistent connections stay off.
            "CONN_MAX_AGE": 0,
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": {
                # ``timeout``: how long a request waits for a connection (with the database down, before its 503).
                "pool": {"min_size": 1, "max_size": pool_size, "timeout": pool_timeout_s},
                "server_side_binding": server_binding,
                "prepare_threshold": prepare_threshold if server_binding else None,
            },
        }
        config["OPTIONS"].update(options)
        return config
    raise ImproperlyConfigured(f"DATABASE_URL scheme {scheme!r} is not supported (use sqlite or postgresql)")
