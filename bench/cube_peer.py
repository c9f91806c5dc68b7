"""Cube 1.7.43 as a reference peer: start it beside embedadmin on the same model and data, mint its tokens, stop it.

Cube is installed by ``../shared/cube-peer/setup.sh ../cube-peer-run`` (Node 22 and Cube from the npm registry) and
started by ``../shared/cube-peer/start.sh`` (see ``../shared/cube-peer/README.md``). This module wraps those scripts
for a benchmark; it holds no benchmark logic::

    import cube_peer

    ok, reason = cube_peer.available()
    if not ok:
        print(reason)  # Cube peer not installed: run ../shared/cube-peer/setup.sh ../cube-peer-run
    source = cube_peer.DuckDBSource(Path("demo.duckdb"))  # or PostgresSource(database="demo", schema="demo")
    with cube_peer.CubePeer(model_dir=DEMO_MODEL, source=source, port=4100) as cube:
        cube.base_url                          # http://127.0.0.1:4100/cubejs-api/v1
        cube.token({"groups": ["admin"]})      # the Authorization header's value

What it takes care of, each found by running Cube on the demo model:

- Jinja. Cube's Jinja engine is Rust-only and absent here, so the model is copied into a scratch directory and its
  templated YAML files rendered with embedadmin's own renderer: Cube compiles the text our server compiles.
- DuckDB. Cube opens its file read-write and holds an exclusive lock while it runs (no other process, not even a
  read-only one, can open the file then, and Cube cannot open a file another process has open). Its DuckDB
  (``@duckdb/node-api`` 1.5) also cannot read files written by the DuckDB 2.0 that embedadmin pins (storage version
  999). So Cube reads its own copy, written in a storage version it reads (with the ``duckdb`` package).
- Groups and user attributes. Cube finds access-policy groups through ``contextToGroups`` in a ``cube.js`` and
  ``userAttributes`` under ``securityContext.cubeCloud``. :meth:`CubePeer.start` writes a ``cube.js`` taking the
  token's ``groups`` claim, and :func:`make_token` copies a ``userAttributes`` claim into ``cubeCloud``: the same
  claims mean the same to both servers.
- Time zone. Cube's DuckDB SQL casts ``TIMESTAMP`` to ``TIMESTAMPTZ`` in the process's time zone: it runs in UTC.

Cube's cache, as seen on ``/v1/load``: a repeated query is served from its in-memory result cache (the refresh key
``every: 1 hour`` is itself a cached query); ``"cache": "no-cache"`` at the top of a POST body (or ``?cache=no-cache``
on a GET) runs the query every time and stores the result; ``cache`` inside the query object is accepted but has no
effect; ``renewQuery`` is rejected (400). GET ``?query=<json>`` and POST ``{"query": ...}`` both work.

One peer per install directory at a time: ``start.sh`` keeps ``cube.pid``, ``cube.log`` and the ``model`` link there.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
API_PATH = "/cubejs-api/v1"
JINJA_MARKERS = ("{%", "{{", "{#")
# Cube reads .jinja and .py files in a model directory as model files; here they only feed the rendering.
RENDER_ONLY_SUFFIXES = (".jinja", ".py")
FALLBACK_DUCKDB_STORAGE = "v1.5.0"  # what Cube 1.7.43's @duckdb/node-api 1.5.5 reads
CUBE_JS = """\
// Written by embedadmin's bench/cube_peer.py: access-policy groups from the token's `groups` claim.
module.exports = {
  contextToGroups: ({ securityContext }) =>
    (Array.isArray(securityContext && securityContext.groups) ? securityContext.groups : []),
};
"""


class CubePeerError(RuntimeError):
    """Cube could not be started, or did not answer."""


def install_dir() -> Path:
    """Where setup.sh installed Cube: ``$CUBE_PEER_DIR``, else ``cube-peer-run`` beside the repository."""
    return Path(os.environ.get("CUBE_PEER_DIR") or ROOT.parent / "cube-peer-run").resolve()


def scripts_dir() -> Path:
    """The shared Cube peer scripts: ``$CUBE_PEER_SHARED``, else ``shared/cube-peer`` beside the repository."""
    return Path(os.environ.get("CUBE_PEER_SHARED") or ROOT.parent / "shared" / "cube-peer").resolve()


def available(install: Path | None = None) -> tuple[bool, str]:
    """Whether a Cube peer can be started: ``(True, where)``, or ``(False, what to run)``."""
    scripts = scripts_dir()
    install = install or install_dir()
    if not (scripts / "start.sh").is_file():
        return False, f"Cube peer scripts not found in {scripts} (set CUBE_PEER_SHARED)"
    server = install / "node_modules" / "@cubejs-backend" / "server" / "package.json"
    node = (install / "node22" / "package" / "bin" / "node").is_file() or shutil.which("node") is not None
    if not server.is_file() or not node:
        setup = os.path.relpath(scripts / "setup.sh", ROOT)
        return False, f"Cube peer not installed: run {setup} {os.path.relpath(install, ROOT)}"
    return True, f"Cube peer installed in {install}"


def make_token(secret: str, claims: Mapping[str, Any] | None = None, *, ttl: int = 3600) -> str:
    """An HS256 JWT with ``claims`` (plus ``iat``/``exp``), as make-token.js makes, without starting node.

    A ``userAttributes`` claim is also put under ``cubeCloud``, where Cube's access policies look for it.
    """
    payload = dict(claims or {})
    if "userAttributes" in payload and "cubeCloud" not in payload:
        payload["cubeCloud"] = {"userAttributes": payload["userAttributes"]}
    now = int(time.time())
    payload.setdefault("iat", now)
    payload.setdefault("exp", now + ttl)
    signing_input = f"{_b64url_json({'alg': 'HS256', 'typ': 'JWT'})}.{_b64url_json(payload)}"
    signature = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64url(signature)}"


@dataclass(frozen=True)
class DuckDBSource:
    """A DuckDB file. It is only read: Cube gets a copy of it (see the module docstring)."""

    path: Path

    def cube_env(self, scratch: Path, install: Path) -> dict[str, str]:
        copy = scratch / "data.duckdb"
        copy_duckdb_for_cube(Path(self.path), copy, storage_version=duckdb_storage_version(install))
        return {"CUBEJS_DB_TYPE": "duckdb", "CUBEJS_DB_DUCKDB_DATABASE_PATH": str(copy)}


@dataclass(frozen=True)
class PostgresSource:
    """A PostgreSQL database; ``schema`` goes first on the search path, for the model's unqualified table names."""

    database: str
    host: str = "127.0.0.1"
    port: int = 5432
    user: str = "embedadmin"
    password: str = "embedadmin"
    schema: str | None = None

    def cube_env(self, scratch: Path, install: Path) -> dict[str, str]:
        env = {
            "CUBEJS_DB_TYPE": "postgres",
            "CUBEJS_DB_HOST": self.host,
            "CUBEJS_DB_PORT": str(self.port),
            "CUBEJS_DB_NAME": self.database,
            "CUBEJS_DB_USER": self.user,
            "CUBEJS_DB_PASS": self.password,
        }
        if self.schema:
            env["PGOPTIONS"] = f"-c search_path={self.schema},public"  # read by node-postgres
        return env


def duckdb_storage_version(install: Path) -> str:
    """The DuckDB storage version Cube's DuckDB reads (``v<major>.<minor>.0`` of its ``@duckdb/node-api``)."""
    try:
        package = json.loads((install / "node_modules" / "@duckdb" / "node-api" / "package.json").read_text())
        version = re.match(r"(\d+)\.(\d+)\.", str(package["version"]))
    except (OSError, ValueError, KeyError, TypeError):
        version = None
    return f"v{version[1]}.{version[2]}.0" if version else FALLBACK_DUCKDB_STORAGE


def copy_duckdb_for_cube(source: Path, target: Path, *, storage_version: str) -> None:
    """Copy a DuckDB database into a new file of ``storage_version``; ``source`` is opened read-only."""
    import duckdb  # a project dependency; only a DuckDB source needs it

    target.unlink(missing_ok=True)
    connection = duckdb.connect()
    try:
        connection.execute(f"ATTACH {_sql_string(source)} AS source (READ_ONLY)")
        connection.execute(f"ATTACH {_sql_string(target)} AS target (STORAGE_VERSION {_sql_string(storage_version)})")
        connection.execute("COPY FROM DATABASE source TO target")
    finally:
        connection.close()


def render_model(source: Path, target: Path) -> None:
    """Copy a model directory to ``target`` with its templated YAML files rendered by embedadmin's renderer.

    Hidden files, the ``.jinja``/``.py`` files templates import and the model's ``dashboards/`` folder (embedadmin's
    dashboards as code, whose flow-style ``}}`` Cube reads as Jinja) are left out: Cube would try to compile them.
    """

    def ignore(directory: str, names: list[str]) -> set[str]:
        left_out = {name for name in names if name.startswith(".") or name.endswith(RENDER_ONLY_SUFFIXES)}
        return left_out | ({"dashboards"} & set(names) if Path(directory) == source else set())

    shutil.copytree(source, target, ignore=ignore)
    templated = [
        path
        for path in sorted(target.rglob("*"))
        if path.suffix in (".yml", ".yaml") and any(m in path.read_text(encoding="utf-8") for m in JINJA_MARKERS)
    ]
    if not templated:
        return
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from embedadmin.semantic.modeling.files import template_environment

    environment = template_environment(source)  # imports resolve in the original directory
    for path in templated:
        path.write_text(environment.from_string(path.read_text(encoding="utf-8")).render(), encoding="utf-8")


class CubePeer:
    """Cube running in the background on ``127.0.0.1:port``, on ``model_dir`` and ``source``.

    ``start()`` returns once Cube has answered ``/readyz`` (its database is reachable) and ``/v1/meta`` (the model
    compiled), so the first timed request pays neither; ``stop()`` ends it and removes its scratch files. As a
    context manager it stops on the way out, and a failed start stops whatever had started.
    """

    def __init__(
        self,
        *,
        model_dir: Path,
        source: DuckDBSource | PostgresSource,
        port: int = 4100,
        api_secret: str = "cube-peer-secret",
        install: Path | None = None,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 90.0,
    ) -> None:
        self.model_dir = Path(model_dir).resolve()
        self.source = source
        self.port = port
        self.api_secret = api_secret
        self.install = (install or install_dir()).resolve()
        self.extra_env = dict(env or {})  # e.g. CUBEJS_LOG_LEVEL=info, CUBEJS_CONCURRENCY=8
        self.startup_timeout = startup_timeout
        self.pid: int | None = None
        self.startup_seconds: float | None = None  # from launch to the first /v1/meta answer
        self._scratch: Path | None = None

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/cubejs-api/v1``: append ``/load``, ``/meta``, ``/sql``."""
        return self.origin + API_PATH

    @property
    def log_path(self) -> Path:
        return self.install / "cube.log"

    def token(self, claims: Mapping[str, Any] | None = None, *, ttl: int = 3600) -> str:
        """A token Cube accepts, carrying ``claims`` (see :func:`make_token`)."""
        return make_token(self.api_secret, claims, ttl=ttl)

    def start(self) -> CubePeer:
        ok, reason = available(self.install)
        if not ok:
            raise CubePeerError(reason)
        pid_file = self.install / "cube.pid"
        running = _read_pid(pid_file)
        if running is not None and _is_cube(running):
            raise CubePeerError(f"a Cube peer already runs from {self.install} (pid {running}); one at a time")
        if _port_in_use(self.port):
            raise CubePeerError(f"port {self.port} is already in use")
        pid_file.unlink(missing_ok=True)  # stale: never signal a pid that start.sh did not just write
        try:
            self._scratch = Path(tempfile.mkdtemp(prefix=f"peer-{self.port}-", dir=self.install))
            model = self._scratch / "model"
            render_model(self.model_dir, model)
            env = self._environment(model)
            (self.install / "cube.js").write_text(CUBE_JS)
            started = time.perf_counter()
            launched = subprocess.run(
                [str(scripts_dir() / "start.sh"), str(self.install), "--bg"],
                env=env,
                cwd=self.install,
                capture_output=True,
                text=True,
                check=False,
            )
            self.pid = _read_pid(pid_file)
            if launched.returncode != 0 or self.pid is None:
                raise CubePeerError(f"start.sh failed ({launched.returncode}): {launched.stderr.strip()}")
            self._wait_ready(started + self.startup_timeout)
            self.startup_seconds = time.perf_counter() - started
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """End Cube (SIGTERM, SIGKILL after 10 s) and remove the scratch copy of the model and data."""
        pid, self.pid = self.pid, None
        if pid is not None:
            if _alive(pid):
                os.kill(pid, signal.SIGTERM)
                if not _wait_exit(pid, 10.0):
                    os.kill(pid, signal.SIGKILL)
                    _wait_exit(pid, 5.0)
            pid_file = self.install / "cube.pid"
            if _read_pid(pid_file) == pid:
                pid_file.unlink(missing_ok=True)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def __enter__(self) -> CubePeer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _environment(self, model: Path) -> dict[str, str]:
        """The caller's environment without Cube, PostgreSQL and port settings (cube.env fills unset ones), plus
        this peer's."""
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("CUBEJS_", "CUBE_", "PG")) and key not in ("PORT", "TZ")
        }
        assert self._scratch is not None
        env.update(
            {
                "CUBE_PEER_DIR": str(self.install),
                "CUBE_MODEL_DIR": str(model),
                "PORT": str(self.port),
                "CUBEJS_API_SECRET": self.api_secret,
                "TZ": "UTC",
            }
        )
        env.update(self.source.cube_env(self._scratch, self.install))
        env.update(self.extra_env)
        return env

    def _wait_ready(self, deadline: float) -> None:
        """Poll ``/readyz`` until Cube can reach its database, then ask ``/v1/meta`` once (compiles the model)."""
        assert self.pid is not None
        last = "no answer"
        while True:
            if not _alive(self.pid):
                raise CubePeerError(f"Cube exited while starting; {self._log_tail()}")
            try:
                status, body = _http_get(self.origin + "/readyz")
            except OSError as exc:
                status, body = 0, str(exc)
            if status == 200:
                break
            last = f"{status} {body[:300]}"
            if time.perf_counter() > deadline:
                raise CubePeerError(
                    f"Cube not ready after {self.startup_timeout:.0f} s (/readyz: {last}); {self._log_tail()}"
                )
            time.sleep(0.1)
        timeout = max(deadline - time.perf_counter(), 5.0)
        status, body = _http_get(self.base_url + "/meta", {"Authorization": self.token()}, timeout=timeout)
        if status != 200:
            raise CubePeerError(f"Cube's /v1/meta answered {status}: {body[:1000]}")

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return f"no log at {self.log_path}"
        return f"last lines of {self.log_path}:\n" + "\n".join(text)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64url_json(value: Any) -> str:
    return _b64url(json.dumps(value, separators=(",", ":")).encode())


def _sql_string(value: object) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _http_get(url: str, headers: Mapping[str, str] | None = None, *, timeout: float = 5.0) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _is_cube(pid: int) -> bool:
    """Whether ``pid`` is a running Cube server (a pid file may outlive its process, and pids are reused)."""
    try:
        return _alive(pid) and b"cubejs-server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _wait_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
