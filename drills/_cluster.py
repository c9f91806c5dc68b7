"""A real multi-process deployment on this machine that a drill owns and may break.

``with cluster() as c:`` brings up, each on a free port and in a temporary directory of its own (never the shared
test services on 5432 and 6379):

- a dedicated PostgreSQL (``initdb`` + ``pg_ctl``, trust authentication, run as the ``postgres`` user when we are
  root): database ``embedadmin`` for the application and, with ``postgres_data=True``, database ``data`` holding
  the demo dataset (``demo/generate.py``'s ``load_postgres``) as a second tenant's data source, so that a database
  restart also hits the data-source pool;
- a dedicated Redis (``redis-server``, no persistence: a restart loses its contents, as a real one would);
- the application: migrated, an account ``drills`` whose deployment serves the demo model (``demo/model``) on a
  generated DuckDB file, an agent; gunicorn with ``workers`` uvicorn workers (2), a Celery worker and Celery beat,
  with the broker, cache and chat fast path on the dedicated Redis.

Everything is torn down, and the temporary directory deleted, when the block exits, also on failure or on SIGTERM
(the runner's budget). A drill then breaks it through ``c.postgres`` (:class:`Postgres`: ``stop``, ``kill``,
``start``, ``restart``), ``c.redis`` (:class:`Redis`: ``stop``, ``start``, ``restart``), ``c.kill_worker()``, and
measures it with :func:`load`, ``c.request``, ``c.chat_stream``, ``c.rss_kb`` and friends. See ``drills/README.md``.

A drill waits for what it needs to have happened (:func:`wait_for`, :class:`Progress`), never a fixed time, so a
busy machine makes it slower, not wrong. Every wait has a stop-loss that only ends a wait for something that is not
coming: :meth:`Cluster.stop_loss`, many times the idle time, scaled by how slowly this machine brought the cluster
up (:attr:`Cluster.pace`).
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import jwt

from bench import _harness

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BIN = Path(PYTHON).parent
DEMO_MODEL = ROOT / "demo" / "model"
SECRET_KEY = "drills-secret-key-drills-secret-key-drills-secret-key"
# A directory the runner prepares once for all its drills (:func:`build_template`): a PostgreSQL data directory,
# initialised, migrated and cleanly stopped, and the demo dataset. A cluster copies them instead of running initdb,
# the migrations and the generator again (about 10 s of each drill's start on the 2-core VM); the migrations still
# run at its start and find nothing to do.
TEMPLATE_ENV = "DRILLS_TEMPLATE"
# The CPU contention the runner measured before the drill (1.0: an idle machine; at most 4).
CONTENTION_ENV = "DRILLS_CONTENTION"


def contention() -> float:
    """The CPU contention the runner measured before this drill (1.0 when run without the runner). An expectation
    whose figure is a delay the machine's speed adds to (a request answered, a process scheduled) scales its limit
    by it and says so; one that is the product's own promise (a 503 within 200 ms, recovery within 1 s) does not."""
    try:
        return min(4.0, max(1.0, float(os.environ.get(CONTENTION_ENV, "1"))))
    except ValueError:
        return 1.0


# Never hand these out: the shared test services and `make run` live there.
_RESERVED_PORTS = {4000, 4100, 5432, 6379}
# Where the running cluster of this process records itself, so that the runner can clean up after a drill it
# had to kill (see drills/run.py): set by the runner for each drill's process.
STATE_ENV = "DRILLS_STATE_FILE"
# When the runner stops this drill (Unix time; drills/run.py): a wait's stop-loss ends before, leaving the
# teardown TEARDOWN_SECONDS, so that a wait that gives up says what it waited for.
DEADLINE_ENV = "DRILLS_DEADLINE"
TEARDOWN_SECONDS = 15.0
# The cluster's start-up on the idle 2-core development VM (docs/reliability.md): Cluster.pace compares to it.
IDLE_START_SECONDS = 7.0
T = TypeVar("T")


class ClusterError(RuntimeError):
    """The cluster could not be brought up (the message says which part and points at its log)."""


class Stuck(RuntimeError):
    """A wait ran past its stop-loss: what it waited for never happened (the drill fails and says what)."""


def wait_for(condition: Callable[[], T], *, what: str, stop_loss: float, poll: float = 0.02) -> T:
    """Poll ``condition`` until it returns something truthy, and return that. ``stop_loss`` (seconds, see
    :meth:`Cluster.stop_loss`) only ends a wait for something that is not coming: :class:`Stuck` naming ``what``."""
    deadline = time.monotonic() + stop_loss
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Stuck(f"gave up after {stop_loss:.0f} s waiting for {what}")
        time.sleep(poll)


class Progress:
    """Requests answered so far by a :func:`load` running in another thread (``load(..., progress=p)``), and a wait
    on that count: a drill breaks something once a load has done enough, not after a fixed time."""

    def __init__(self) -> None:
        self._answered = 0
        self._changed = threading.Condition()

    @property
    def answered(self) -> int:
        return self._answered

    def tick(self) -> None:
        with self._changed:
            self._answered += 1
            self._changed.notify_all()

    def wait(self, count: int, *, stop_loss: float, what: str = "") -> int:
        """Until ``count`` requests have been answered in all; returns the count then."""
        deadline = time.monotonic() + stop_loss
        with self._changed:
            while self._answered < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Stuck(f"gave up after {stop_loss:.0f} s waiting for {count} answers ({what or 'load'})")
                self._changed.wait(left)
            return self._answered


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (never 4000, 4100, 5432 or 6379)."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port not in _RESERVED_PORTS:
            return port


def _run(command: list[str], *, timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True, **kwargs)  # noqa: S603


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------------------------
# PostgreSQL


def _pg_bin() -> Path:
    """The directory of the newest installed PostgreSQL's server binaries."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name or 0))
    for candidate in reversed(candidates):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise ClusterError("no PostgreSQL server binaries (initdb) under /usr/lib/postgresql/*/bin or on PATH")


class Postgres:
    """A PostgreSQL server of our own in ``directory`` on ``port`` (TCP on 127.0.0.1, its Unix socket in the
    directory), trust authentication, superuser ``postgres``. Durability is off (``fsync``, synchronous commit):
    drills stop and kill the server, never the machine."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.data = directory / "data"
        self.socket_dir = directory / "socket"
        self.log = directory / "postgres.log"
        self.port = port or free_port()
        self.bin = _pg_bin()
        self.as_root = os.geteuid() == 0
        self.down_since: float | None = None  # when the last stop()/kill() began, until start() returns
        self.pace = 1.0  # the cluster's (Cluster.pace): scales the stop-losses of start and stop

    def _command(self, *args: str) -> list[str]:
        if self.as_root:  # initdb and postgres refuse to run as root
            return ["runuser", "-u", "postgres", "--", *args]
        return list(args)

    def url(self, database: str = "embedadmin") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def init(self, template: Path | None = None) -> None:
        """``initdb`` (or a copy of ``template``, a data directory made by :func:`build_template`) and the
        configuration (appended: a setting's last line wins, so a template's own port and socket are replaced)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if self.as_root:
            shutil.chown(self.directory, "postgres", "postgres")
            shutil.chown(self.socket_dir, "postgres", "postgres")
        if template is not None:
            _run(["cp", "-a", str(template), str(self.data)], timeout=120)  # keeps the owner and the 0700 mode
        else:
            initdb = [str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8"]
            try:
                _run(self._command(*initdb, "--no-sync", "--no-instructions"), timeout=120)
            except subprocess.CalledProcessError as exc:
                raise ClusterError(f"initdb failed: {exc.stderr.strip()}") from None
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                "\n# drills\n"
                f"port = {self.port}\n"
                "listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                "max_connections = 300\n"
                "shared_buffers = 64MB\n"
                "fsync = off\n"
                "synchronous_commit = off\n"
                "full_page_writes = off\n"
                "timezone = 'UTC'\n"
            )

    def set_port(self, port: int) -> None:
        """Move to another port (takes effect at the next start)."""
        self.port = port
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {port}\n")

    @property
    def pid(self) -> int | None:
        """The postmaster's pid while it runs."""
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def is_ready(self) -> bool:
        done = subprocess.run(  # noqa: S603
            [str(self.bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)], check=False, timeout=10
        )
        return done.returncode == 0

    def start(self, timeout: float | None = None) -> float | None:
        """Start and wait until it accepts connections. Returns how long it was down (since the last
        ``stop``/``kill`` began), or None on the first start. ``timeout``: a stop-loss (30 s times the pace)."""
        timeout = timeout or 30.0 * self.pace
        command = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", str(int(timeout))]
        try:
            _run(self._command(*command, "start"), timeout=timeout + 10)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            raise ClusterError(f"PostgreSQL did not start; {self.log}:\n{_tail(self.log)}") from None
        down = None if self.down_since is None else time.monotonic() - self.down_since
        self.down_since = None
        return down

    def stop(self, mode: str = "fast", timeout: float | None = None) -> None:
        """``pg_ctl stop -m mode`` (``fast``: connections are cut, a clean shutdown; ``immediate``: no
        shutdown, recovery at the next start; ``smart``: waits for clients)."""
        timeout = timeout or 30.0 * self.pace
        self.down_since = time.monotonic()
        command = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", str(int(timeout))]
        _run(self._command(*command, "stop"), timeout=timeout + 10)

    def kill(self) -> None:
        """An immediate stop (the postmaster and its backends quit at once; recovery at the next start)."""
        self.stop("immediate")

    def restart(self, pause: float = 0.0, mode: str = "fast") -> float:
        """Stop, stay down ``pause`` seconds more, start; returns how long it was down (seconds)."""
        self.stop(mode)
        if pause > 0:
            time.sleep(pause)
        down = self.start()
        assert down is not None
        return down

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def destroy(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(Exception):
                self.stop("immediate", timeout=15)
        pid = self.pid  # still there: the postmaster did not stop
        if pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------------------------------------------------------
# Redis


def redis_ping(port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class Redis:
    """A ``redis-server`` of our own on ``port``, in the foreground as our child, with no persistence."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or free_port()
        self.log = directory / "redis.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.down_since: float | None = None
        self.pace = 1.0  # the cluster's (Cluster.pace): scales the stop-loss of start

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process and self.process.poll() is None else None

    def start(self, timeout: float | None = None) -> float | None:
        """Start and wait for PING; returns how long it was down (None on the first start). ``timeout``: a
        stop-loss (10 s times the pace)."""
        timeout = timeout or 10.0 * self.pace
        self.directory.mkdir(parents=True, exist_ok=True)
        server = shutil.which("redis-server") or "/usr/bin/redis-server"
        command = [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        command += ["--daemonize", "no", "--dir", str(self.directory), "--logfile", str(self.log)]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True)  # noqa: S603
        deadline = time.monotonic() + timeout
        while not redis_ping(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self._reap(signal.SIGKILL)
                raise ClusterError(f"Redis did not start; {self.log}:\n{_tail(self.log)}")
            time.sleep(0.05)
        down = None if self.down_since is None else time.monotonic() - self.down_since
        self.down_since = None
        return down

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (or SIGKILL with ``kill``) and wait until it is gone."""
        self.down_since = time.monotonic()
        self._reap(signal.SIGKILL if kill else signal.SIGTERM)

    def restart(self, pause: float = 0.0, kill: bool = False) -> float:
        self.stop(kill)
        if pause > 0:
            time.sleep(pause)
        down = self.start()
        assert down is not None
        return down

    def _reap(self, sig: int) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def destroy(self) -> None:
        self._reap(signal.SIGKILL)


# ---------------------------------------------------------------------------------------------------------------
# Processes


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[1])


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (from ``/proc``), oldest pid first."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _ppid(int(entry)) == pid:
            state = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[0]
            if state not in ("Z", "X"):
                found.append(int(entry))
    return sorted(found)


def rss_kb(pid: int) -> int:
    """Resident memory of a process in KiB (``VmRSS`` of ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise ProcessLookupError(pid)


def socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets process ``pid`` holds open (from ``/proc/<pid>/fd``)."""
    found = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(fd_dir / fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(target[8:-1])
    return found


def tcp_inodes(local_port: int, *, remote_port: int | None = None, established: bool = False) -> set[str]:
    """The inodes of the TCP sockets whose local port is ``local_port`` (and remote port ``remote_port``; only
    connected ones with ``established``), from ``/proc/net/tcp`` and ``tcp6``."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) != local_port or (established and fields[3] != "01"):
                continue
            if remote_port is None or int(fields[2].rsplit(":", 1)[1], 16) == remote_port:
                inodes.add(fields[9])
    return inodes


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used, seconds (fields 14 and 15 of ``/proc/<pid>/stat``)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": field 3 is fields[0]
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Service:
    """A process we started (gunicorn master, Celery worker, Celery beat) in a session of its own."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=timeout)
        # Whatever is left in its session (workers the master did not reap in time).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


def _spawn(name: str, command: list[str], env: dict[str, str], log: Path) -> Service:
    handle = log.open("ab")
    process = subprocess.Popen(  # noqa: S603
        command, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    handle.close()
    return Service(name, process, log)


# ---------------------------------------------------------------------------------------------------------------
# HTTP


@dataclass
class Response:
    status: int  # 0: no answer (connection refused, reset or closed, or timed out)
    headers: dict[str, str]
    body: bytes
    seconds: float
    error: str = ""  # why there was no answer

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def is_json(self) -> bool:
        try:
            json.loads(self.body)
        except ValueError:
            return False
        return True


class Connection(_harness.Connection):
    """One keep-alive HTTP/1.1 connection (the benches' raw asyncio one: a load generator that leaves the CPU to
    the servers), with a timeout. Reconnects after a failure; a request whose connection failed answers status 0."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        super().__init__(port)
        self.timeout = timeout

    async def request(  # type: ignore[override]  # a Response, never raises
        self, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
    ) -> Response:
        started = time.perf_counter()
        try:
            status, answer_headers, payload = await asyncio.wait_for(
                self.exchange(method, path, headers or {}, body), self.timeout
            )
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
            self.close()
            return Response(0, {}, b"", time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
        if answer_headers.get("connection", "").lower() == "close":
            self.close()
        return Response(status, answer_headers, payload, time.perf_counter() - started)


json_body = _harness.json_body  # the compact JSON body of a request


Request = tuple[str, str, dict[str, str], bytes]  # method, path, headers, body
RequestFactory = Callable[[int], Request]


@dataclass
class LoadResult:
    """What ``load`` saw: statuses counted (0 = no answer), and every failure (a status other than the
    expected ones) with whether its body was JSON."""

    label: str
    total: int
    seconds: float
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)  # {i, status, json, body, error, at, ms}
    latencies_ms: list[float] = field(default_factory=list)
    started: float = 0.0  # time.perf_counter() when the load began: a failure's "at" counts from it

    @property
    def failed(self) -> int:
        return len(self.failures)

    @property
    def ok(self) -> int:
        return self.total - self.failed

    @property
    def non_json_failures(self) -> int:
        """Failures whose answer was not a JSON body (a plain-text error page, or no answer at all)."""
        return sum(1 for failure in self.failures if not failure["json"])

    @classmethod
    def merge(cls, results: list[LoadResult]) -> LoadResult:
        """Several loads' results as one (their statuses, failures and latencies together)."""
        merged = cls(
            " + ".join(r.label for r in results), sum(r.total for r in results), sum(r.seconds for r in results)
        )
        for r in results:
            merged.statuses.update(r.statuses)
            merged.failures.extend(r.failures)
            merged.latencies_ms.extend(r.latencies_ms)
        return merged

    def p(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "requests": self.total,
            "failed": self.failed,
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "non_json_failures": self.non_json_failures,
            "p50_ms": round(self.p(0.5), 1),
            "p99_ms": round(self.p(0.99), 1),
            "seconds": round(self.seconds, 2),
        }

    def line(self) -> str:
        statuses = " ".join(f"{k}x{v}" for k, v in sorted(self.statuses.items()))
        return (
            f"{self.label}: {self.total} requests, {self.failed} failed ({self.non_json_failures} not JSON), "
            f"statuses {statuses}, p50 {self.p(0.5):.0f} ms, p99 {self.p(0.99):.0f} ms, {self.seconds:.1f} s"
        )


async def load_async(
    port: int,
    make: RequestFactory,
    total: int,
    *,
    concurrency: int = 8,
    expect: tuple[int, ...] = (200,),
    timeout: float = 30.0,
    label: str = "load",
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> LoadResult:
    """``total`` requests (request i is ``make(i)``) over ``concurrency`` keep-alive connections; fewer when
    ``stop`` is set meanwhile (no new request is sent after it). ``progress`` counts the answers as they come."""
    result = LoadResult(label=label, total=0, seconds=0.0)
    counter = iter(range(total))
    started = result.started = time.perf_counter()

    async def client() -> None:
        conn = Connection(port, timeout)
        try:
            for i in counter:
                if stop is not None and stop.is_set():
                    break
                method, path, headers, body = make(i)
                answer = await conn.request(method, path, headers, body)
                result.total += 1
                result.statuses[answer.status] += 1
                result.latencies_ms.append(answer.seconds * 1000)
                if progress is not None:
                    progress.tick()
                if answer.status not in expect:
                    result.failures.append(
                        {
                            "i": i,
                            "status": answer.status,
                            "json": answer.status != 0 and answer.is_json,
                            "body": answer.body[:300].decode("utf-8", "replace"),
                            "retry_after": answer.headers.get("retry-after"),
                            "error": answer.error,
                            "at": round(time.perf_counter() - started, 3),
                            "ms": round(answer.seconds * 1000, 1),
                        }
                    )
        finally:
            conn.close()

    await asyncio.gather(*(client() for _ in range(max(1, min(concurrency, total)))))
    result.seconds = time.perf_counter() - started
    return result


# ---------------------------------------------------------------------------------------------------------------
# The cluster


def miss_query(value: int) -> dict[str, Any]:
    """A dashboard tile's query; a different amount threshold per ``value`` keeps every cache out."""
    return {
        "measures": ["orders.count", "orders.total_amount"],
        "dimensions": ["orders.status"],
        "filters": [{"member": "orders.amount", "operator": "gt", "values": [f"{(value % 50_000) / 100:.2f}"]}],
    }


HIT_QUERY = {"measures": ["orders.count"], "dimensions": ["orders.status"]}
ADMIN_CLAIMS = {"sub": "drills", "groups": ["admin"]}

# Run in one Python process (one Django start instead of one per command): migrate, then per tenant
# create_account --json, configure_deployment and create_agent --json, exactly as an operator would.
_SETUP = r"""
import io, json, sys
import django
django.setup()
from django.core.management import call_command
spec = json.loads(sys.argv[1])
call_command("migrate", interactive=False, verbosity=0)
tenants = {}
for tenant in spec["tenants"]:
    out = io.StringIO()
    call_command("create_account", tenant["account"], "--json", stdout=out)
    created = json.loads(out.getvalue())
    deployment = str(created["deploymentId"])
    call_command("configure_deployment", deployment, "--model-dir", spec["model"], "--data-source", tenant["source"],
                 stdout=io.StringIO())
    out = io.StringIO()
    call_command("create_agent", "--account", tenant["account"], "--deployment", deployment, "--site-url",
                 spec["site"], "--json", stdout=out)
    tenants[tenant["kind"]] = {"credentials": created, "agent": json.loads(out.getvalue())}
print("SETUP " + json.dumps(tenants))
"""


@dataclass
class Tenant:
    """An account of the cluster: its ``create_account --json`` credentials, its deployment (on ``kind``:
    ``duckdb`` or ``postgres`` data) and its agent (``create_agent --json``)."""

    kind: str
    credentials: dict[str, Any]
    agent: dict[str, Any]

    @property
    def account(self) -> str:
        return str(self.credentials["accountName"])

    @property
    def deployment_id(self) -> int:
        return int(self.credentials["deploymentId"])

    @property
    def api_key_headers(self) -> dict[str, str]:
        return {"Authorization": f"Api-Key {self.credentials['apiKey']}", "Content-Type": "application/json"}

    @property
    def platform_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.credentials['platformToken']}", "Content-Type": "application/json"}

    def core_token(self, claims: dict[str, Any] | None = None, ttl: int = 7200) -> str:
        """A Core Data API JWT (HS256 with the deployment's API secret); ``claims`` default to an admin."""
        now = int(time.time())
        payload = {**(ADMIN_CLAIMS if claims is None else claims), "iat": now, "exp": now + ttl}
        return jwt.encode(payload, str(self.credentials["deploymentApiSecret"]), algorithm="HS256")

    def core_headers(self, claims: dict[str, Any] | None = None) -> dict[str, str]:
        return {"Authorization": self.core_token(claims), "Content-Type": "application/json"}

    @property
    def core_base(self) -> str:
        return f"/d/{self.deployment_id}/cubejs-api/v1"

    @property
    def chat_base(self) -> str:
        return f"/api/v1/public/{self.account}/agents/{self.agent['agentId']}/chat"


def _app_env(postgres: Postgres, var_dir: Path) -> dict[str, str]:
    """The environment of the application's processes on ``postgres``: this one's, without the shared test services'
    settings, with the drills' database, secret key and var directory."""
    env = dict(os.environ)
    for name in ("TEST_DATABASE_URL", "TEST_REDIS_URL", "EMBEDADMIN_ALLOW_DEV_SECRET", "SECRET_KEY_FILE"):
        env.pop(name, None)
    env.update(
        {
            "DATABASE_URL": postgres.url("embedadmin"),
            "SECRET_KEY": SECRET_KEY,
            "EMBEDADMIN_VAR_DIR": str(var_dir),
            "DJANGO_SETTINGS_MODULE": "embedadmin.settings",
        }
    )
    return env


def _template() -> Path | None:
    """The runner's template directory (:data:`TEMPLATE_ENV`) when it holds a finished one."""
    path = os.environ.get(TEMPLATE_ENV)
    if path and (Path(path) / "ready").exists():
        return Path(path)
    return None


def build_template(directory: Path, orders: int = 20_000) -> None:
    """Prepare ``directory`` as a template for the clusters of a run (:data:`TEMPLATE_ENV`): PostgreSQL initialised
    with database ``embedadmin`` migrated, then stopped cleanly, and the demo dataset of ``orders`` orders. The file
    ``ready`` marks it finished; a cluster ignores a directory without it."""
    from demo.generate import generate

    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)  # the postgres user goes through it to its data directory
    postgres = Postgres(directory / "pg")
    postgres.init()
    try:
        postgres.start()
        postgres.create_database("embedadmin")
        var_dir = directory / "var"
        var_dir.mkdir()
        try:
            _run(
                [PYTHON, "manage.py", "migrate", "--noinput", "-v0"],
                timeout=600,
                env=_app_env(postgres, var_dir),
                cwd=ROOT,
            )
        except subprocess.CalledProcessError as exc:
            raise ClusterError(f"migrate failed:\n{exc.stdout[-2000:]}\n{exc.stderr[-4000:]}") from None
        generate(directory / f"demo-{orders}.duckdb", orders=orders, threads=1)
        postgres.stop("fast")  # a clean shutdown: a copy of the data directory starts without recovery
    except BaseException:
        postgres.destroy()
        raise
    (directory / "ready").write_text("ok\n")


class Cluster:
    """The deployment (see the module docstring). Build it with :func:`cluster`."""

    def __init__(
        self,
        *,
        workers: int = 2,
        orders: int = 20_000,
        postgres_data: bool = False,
        celery: bool = True,
        beat: bool = True,
        env: dict[str, str] | None = None,
        start_timeout: float = 120.0,
    ) -> None:
        self.workers = workers
        self.orders = orders
        self.postgres_data = postgres_data
        self.with_celery = celery
        self.with_beat = beat
        self.extra_env = env or {}
        self.start_timeout = start_timeout
        self.directory = Path(tempfile.mkdtemp(prefix="embedadmin-drill-"))
        self.directory.chmod(0o755)  # the postgres user goes through it to its data directory
        self.logs = self.directory / "logs"
        self.logs.mkdir()
        self.postgres = Postgres(self.directory / "pg")
        self.redis = Redis(self.directory / "redis")
        self.port = free_port()
        self.dataset = self.directory / "demo.duckdb"
        self.tenants: dict[str, Tenant] = {}
        self.web: Service | None = None
        self.celery_worker: Service | None = None
        self.celery_beat: Service | None = None
        self.env: dict[str, str] = {}
        self.started_in: dict[str, float] = {}  # seconds each start-up step took

    # -- life cycle -------------------------------------------------------------------------------------------------

    def start(self) -> Cluster:
        began = time.monotonic()
        self._record_state()
        step = time.monotonic()
        dataset_error: list[BaseException] = []

        template = _template()
        dataset_copy = template / f"demo-{self.orders}.duckdb" if template is not None else None

        def make_dataset() -> None:
            try:
                if dataset_copy is not None and dataset_copy.exists():
                    shutil.copyfile(dataset_copy, self.dataset)
                    return
                from demo.generate import generate

                generate(self.dataset, orders=self.orders, threads=1)
            except BaseException as exc:  # reported below
                dataset_error.append(exc)

        generating = threading.Thread(target=make_dataset, daemon=True)
        generating.start()
        self.postgres.init(template / "pg" / "data" if template is not None else None)
        for attempt in range(3):  # the free port may be taken between choosing it and binding it
            try:
                self.postgres.start()
                break
            except ClusterError:
                if attempt == 2 or self.postgres.pid is not None:
                    raise
                self.postgres.set_port(free_port())
        if template is None:
            self.postgres.create_database("embedadmin")  # the template's has it, migrated
        self.redis.start()
        self._record_state()
        self.started_in["postgres_redis"] = time.monotonic() - step
        generating.join(timeout=max(1.0, self.start_timeout - (time.monotonic() - began)))
        if generating.is_alive() or dataset_error:
            raise ClusterError(f"demo dataset not generated: {dataset_error[0] if dataset_error else 'timed out'}")
        self.started_in["dataset"] = time.monotonic() - step

        tenants = [{"kind": "duckdb", "account": "drills", "source": f"duckdb:///{self.dataset}"}]
        if self.postgres_data:
            step = time.monotonic()
            from demo.generate import load_postgres

            self.postgres.create_database("data")
            load_postgres(self.dataset, self.postgres.url("data"), schema="public")
            tenants.append({"kind": "postgres", "account": "drillspg", "source": self.postgres.url("data")})
            self.started_in["postgres_data"] = time.monotonic() - step

        var_dir = self.directory / "var"
        (var_dir / "staticfiles").mkdir(parents=True)  # whitenoise warns without it; the drills need no static files
        self.env = _app_env(self.postgres, var_dir)
        self.env.update(
            {
                "REDIS_URL": self.redis.url(0),
                "CELERY_BROKER_URL": self.redis.url(1),
                "LOG_LEVEL": "WARNING",
                "PYTHONUNBUFFERED": "1",
            }
        )
        self.env.update(self.extra_env)

        step = time.monotonic()
        spec = {"tenants": tenants, "model": str(DEMO_MODEL), "site": self.base_url}
        try:
            done = _run([PYTHON, "-c", _SETUP, json.dumps(spec)], timeout=self.start_timeout, env=self.env, cwd=ROOT)
        except subprocess.CalledProcessError as exc:
            raise ClusterError(f"migrate/setup failed:\n{exc.stdout[-2000:]}\n{exc.stderr[-4000:]}") from None
        line = next(line for line in done.stdout.splitlines() if line.startswith("SETUP "))
        for kind, created in json.loads(line[len("SETUP ") :]).items():
            self.tenants[kind] = Tenant(kind, created["credentials"], created["agent"])
        self.started_in["migrate_setup"] = time.monotonic() - step

        step = time.monotonic()
        self.web = _spawn("gunicorn", self._gunicorn_command(), self.env, self.logs / "gunicorn.log")
        if self.with_celery:
            celery = [str(BIN / "celery"), "-A", "embedadmin"]
            self.celery_worker = _spawn(
                "celery-worker",
                [*celery, "worker", "--pool=solo", "--loglevel=WARNING", "-n", f"drills-{self.port}@%h"],
                self.env,
                self.logs / "celery-worker.log",
            )
        if self.with_beat:
            beat = [str(BIN / "celery"), "-A", "embedadmin", "beat", "--loglevel=WARNING"]
            beat += ["--pidfile", str(var_dir / "celerybeat.pid")]
            self.celery_beat = _spawn("celery-beat", beat, self.env, self.logs / "celery-beat.log")
        self._record_state()
        self.wait_ready(timeout=max(10.0, self.start_timeout - (time.monotonic() - began)))
        self.started_in["web"] = time.monotonic() - step
        self.started_in["total"] = time.monotonic() - began
        self.postgres.pace = self.redis.pace = self.pace
        return self

    def _gunicorn_command(self) -> list[str]:
        return [
            str(BIN / "gunicorn"),
            "embedadmin.asgi:application",
            "-k",
            "embedadmin.core.http_server.UvicornWorker",  # the product's worker class (JSON 414/431)
            "-w",
            str(self.workers),
            "-b",
            f"127.0.0.1:{self.port}",
            "--log-level",
            "info",  # each worker logs "Started server process [pid]" once its app is loaded: see booted_workers
            "--graceful-timeout",
            "5",
            "--no-control-socket",  # else every gunicorn on the machine shares ~/.gunicorn/gunicorn.ctl
        ]

    def wait_ready(self, timeout: float | None = None) -> float:
        """Wait until ``/livez`` answers 200 and gunicorn has all its workers; returns seconds waited.
        ``timeout``: a stop-loss (60 s times the pace)."""
        timeout = timeout or self.stop_loss(60)
        began = time.monotonic()
        deadline = began + timeout
        while True:
            if self.web is None or not self.web.alive():
                raise ClusterError(f"gunicorn exited; {self.web.log if self.web else ''}:\n{self._web_log_tail()}")
            pids = self.worker_pids()
            if (
                len(pids) >= self.workers
                and set(pids) <= self.booted_workers()
                and self.request("GET", "/livez", timeout=2).status == 200
            ):
                self.warm_workers(deadline - time.monotonic())
                return time.monotonic() - began
            if time.monotonic() > deadline:
                raise ClusterError(f"the web server was not ready in {timeout:.0f} s:\n{self._web_log_tail()}")
            time.sleep(0.1)

    def warm_workers(self, stop_loss: float) -> None:
        """Have every web worker answer one request, so that a drill never mistakes a worker that never served for a
        slow product. Each ``/livez`` goes on a fresh connection; the worker that accepted it is found from its
        socket, until every worker has answered one."""
        deadline = time.monotonic() + max(stop_loss, 1.0)
        warm: set[int] = set()
        while not set(self.worker_pids()) <= warm:
            if time.monotonic() > deadline:
                raise ClusterError(f"web workers {sorted(set(self.worker_pids()) - warm)} never answered a request")
            left = max(1.0, deadline - time.monotonic())
            with socket.create_connection(("127.0.0.1", self.port), timeout=left) as conn:
                client_port = conn.getsockname()[1]

                def accepted_by(client_port: int = client_port) -> list[int]:
                    # A connection still in the listen queue has no inode yet (0 in /proc/net/tcp).
                    peer = tcp_inodes(self.port, remote_port=client_port) - {"0"}
                    return [pid for pid in self.worker_pids() if socket_inodes(pid) & peer]

                worker = wait_for(accepted_by, what="a web worker to accept a connection", stop_loss=left)[0]
                conn.sendall(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                answer = b""
                while chunk := conn.recv(65536):  # to the end: the worker has served it
                    answer += chunk
            if answer.startswith(b"HTTP/1.1 200"):
                warm.add(worker)

    def booted_workers(self) -> set[int]:
        """The pids of the web workers that have loaded the application and serve (from gunicorn's log)."""
        return {int(pid) for pid in re.findall(r"\[(\d+)\] \[INFO\] Application startup complete", self.log())}

    def _web_log_tail(self) -> str:
        return _tail(self.logs / "gunicorn.log")

    def close(self) -> None:
        """Stop everything and delete the temporary directory (never raises)."""
        for service in (self.web, self.celery_worker, self.celery_beat):
            if service is not None:
                with contextlib.suppress(Exception):
                    service.stop()
        with contextlib.suppress(Exception):
            self.redis.destroy()
        with contextlib.suppress(Exception):
            self.postgres.destroy()
        if os.environ.get("DRILLS_KEEP"):
            print(f"  (DRILLS_KEEP: logs kept in {self.directory})", file=sys.stderr)
        else:
            shutil.rmtree(self.directory, ignore_errors=True)
        state = os.environ.get(STATE_ENV)
        if state:
            with contextlib.suppress(OSError):
                Path(state).unlink()

    def _record_state(self) -> None:
        """Tell the runner what to clean up should it have to kill this process (see drills/run.py)."""
        state = os.environ.get(STATE_ENV)
        if state:
            groups = [s.pid for s in (self.web, self.celery_worker, self.celery_beat) if s is not None]
            if self.redis.pid is not None:
                groups.append(self.redis.pid)
            record = {
                "directory": str(self.directory),
                "pg_data": str(self.postgres.data),
                "pg_ctl": str(self.postgres.bin / "pg_ctl"),
                "process_groups": groups,
            }
            Path(state).write_text(json.dumps(record))

    # -- the deployment's parts -------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def tenant(self) -> Tenant:
        """The DuckDB tenant (account ``drills``)."""
        return self.tenants["duckdb"]

    @property
    def credentials(self) -> dict[str, Any]:
        """The ``create_account --json`` output of the DuckDB tenant."""
        return self.tenant.credentials

    @property
    def master_pid(self) -> int:
        assert self.web is not None
        return self.web.pid

    def worker_pids(self) -> list[int]:
        """The gunicorn workers alive now (children of the master)."""
        return children(self.master_pid) if self.web is not None else []

    def kill_worker(self, pid: int | None = None) -> int:
        """SIGKILL a web worker (the first one by default) and return once it is dead; gunicorn then starts a
        replacement (``wait_workers`` waits until it has booted). Returns the killed pid."""
        target = pid if pid is not None else self.worker_pids()[0]
        os.kill(target, signal.SIGKILL)
        wait_for(
            lambda: target not in self.worker_pids(),  # dead (or a zombie)
            what=f"worker {target} to die of SIGKILL",
            stop_loss=self.stop_loss(5),
            poll=0.01,
        )
        return target

    def wait_workers(self, timeout: float | None = None) -> float:
        """Wait until gunicorn has its full count of workers again, each with the application loaded (after a
        ``kill_worker``: the replacement has booted); returns seconds waited. ``timeout``: a stop-loss."""
        return self.wait_ready(timeout or self.stop_loss(30))

    @property
    def pace(self) -> float:
        """How many times slower than on the idle development VM this machine brought the cluster up (1.0 at
        least): a busy machine's drills wait longer before they give up."""
        return max(1.0, self.started_in.get("total", IDLE_START_SECONDS) / IDLE_START_SECONDS)

    def stop_loss(self, idle_seconds: float) -> float:
        """A wait's stop-loss: ``idle_seconds`` (already many times what the wait takes on the idle machine)
        scaled by :attr:`pace`, ending before the runner's budget for the drill does. It ends a wait for something
        that is not coming, never judges speed."""
        scaled = idle_seconds * self.pace
        deadline = os.environ.get(DEADLINE_ENV)
        if deadline:
            scaled = min(scaled, float(deadline) - TEARDOWN_SECONDS - time.time())
        return max(1.0, scaled)

    def rss_kb(self, pid: int) -> int:
        return rss_kb(pid)

    def worker_rss_kb(self) -> dict[int, int]:
        """Each live web worker's resident memory, KiB."""
        out = {}
        for pid in self.worker_pids():
            with contextlib.suppress(OSError, ProcessLookupError):
                out[pid] = rss_kb(pid)
        return out

    def worker_cpu_seconds(self) -> dict[int, float]:
        """Each live web worker's CPU time so far, seconds (which workers served a load, and how much)."""
        out = {}
        for pid in self.worker_pids():
            with contextlib.suppress(OSError, ProcessLookupError):
                out[pid] = cpu_seconds(pid)
        return out

    def log(self, name: str = "gunicorn") -> str:
        """A service's log so far (``gunicorn``, ``celery-worker``, ``celery-beat``, or ``postgres``/``redis``)."""
        path = {"postgres": self.postgres.log, "redis": self.redis.log}.get(name, self.logs / f"{name}.log")
        try:
            return path.read_text(errors="replace")
        except OSError:
            return ""

    # -- talking to it ----------------------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
    ) -> Response:
        """One request on a fresh connection; ``body`` bytes as is, anything else as JSON. Status 0: no answer."""
        payload = body if isinstance(body, bytes) else (b"" if body is None else json_body(body))

        async def once() -> Response:
            conn = Connection(self.port, timeout)
            try:
                return await conn.request(method, path, {"Connection": "close", **(headers or {})}, payload)
            finally:
                conn.close()

        return asyncio.run(once())

    def mint_session(self, external_id: str = "drill-user", tenant: str = "duckdb", **extra: Any) -> Response:
        """``POST /api/v1/embed/generate-session`` with the tenant's API key."""
        request = self.session_request(0, tenant=tenant, external_id=external_id, **extra)
        return self.request(request[0], request[1], request[3], request[2])

    def session_request(
        self, i: int, *, tenant: str = "duckdb", external_id: str | None = None, **extra: Any
    ) -> Request:
        who = self.tenants[tenant]
        body = {
            "deploymentId": who.deployment_id,
            "externalId": external_id or f"drill-{i}@example.com",
            **extra,
        }
        return "POST", "/api/v1/embed/generate-session", who.api_key_headers, json_body(body)

    def load_request(self, i: int, *, tenant: str = "duckdb", query: dict[str, Any] | None = None) -> Request:
        """``POST /v1/load`` of ``query`` (by default :func:`miss_query` of ``i``: a distinct query per ``i``)."""
        who = self.tenants[tenant]
        body = json_body({"query": query if query is not None else miss_query(i), "queryType": "multi"})
        return "POST", f"{who.core_base}/load", who.core_headers(), body

    def chat_request(self, i: int, *, question: str = "What is the total revenue?", tenant: str = "duckdb") -> Request:
        who = self.tenants[tenant]
        body = json_body({"input": question, "sessionSettings": {"externalId": f"drill-chat-{i}", "groups": ["admin"]}})
        return "POST", f"{who.chat_base}/stream-chat-state", who.api_key_headers, body

    async def chat_stream(
        self,
        body: dict[str, Any],
        *,
        tenant: str = "duckdb",
        on_line: Callable[[dict[str, Any]], None] | None = None,
        timeout: float = 60.0,
    ) -> tuple[int, list[dict[str, Any]], bool]:
        """POST ``body`` to the tenant's ``stream-chat-state`` and read the NDJSON stream to its end: (status,
        the lines, whether the stream ended cleanly with the terminating chunk). ``on_line`` sees each line as
        it arrives (to kill or stop something mid-stream). A body without ``sessionSettings`` gets an admin's."""
        who = self.tenants[tenant]
        body = {"sessionSettings": {"externalId": "drill-chat", "groups": ["admin"]}, **body}
        payload = json_body(body)
        lines: list[dict[str, Any]] = []
        seen_status = [0]  # the status line's, once read (a stream cut later keeps it)
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            head = [f"POST {who.chat_base}/stream-chat-state HTTP/1.1", "Host: 127.0.0.1"]
            head += [f"Content-Length: {len(payload)}", "Connection: close"]
            head += [f"{k}: {v}" for k, v in who.api_key_headers.items()]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
            await writer.drain()

            async def read() -> tuple[int, bool]:
                status_line = await reader.readline()
                if not status_line:
                    return 0, False
                status = int(status_line.split()[1])
                seen_status[0] = status
                chunked = False
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
                        chunked = True
                buffer = b""
                clean = False
                while True:
                    if chunked:
                        size_line = await reader.readline()
                        if not size_line.strip():
                            break
                        size = int(size_line.strip(), 16)
                        if size == 0:
                            clean = True
                            break
                        buffer += (await reader.readexactly(size + 2))[:-2]
                    else:
                        data = await reader.read(65536)
                        if not data:
                            clean = True
                            break
                        buffer += data
                    while b"\n" in buffer:
                        raw, buffer = buffer.split(b"\n", 1)
                        if raw.strip():
                            message = json.loads(raw)
                            lines.append(message)
                            if on_line is not None:
                                on_line(message)
                if buffer.strip():
                    lines.append(json.loads(buffer))
                return status, clean

            try:
                status, clean = await asyncio.wait_for(read(), timeout)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
                return seen_status[0], lines, False
            return status, lines, clean
        finally:
            writer.close()


def load(
    c: Cluster,
    kind: str | RequestFactory,
    n: int,
    *,
    concurrency: int = 8,
    expect: tuple[int, ...] = (200,),
    timeout: float = 30.0,
    tenant: str = "duckdb",
    label: str | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> LoadResult:
    """Send ``n`` requests of ``kind`` over ``concurrency`` connections and count what came back (fewer when
    ``stop`` is set meanwhile; ``progress`` counts answers as they come, for a drill waiting on the load).

    ``kind``: ``"load"`` (a distinct ``/v1/load`` query per request), ``"load-hit"`` (one cached query),
    ``"meta"``, ``"session"`` (generate-session, a new user per request), ``"readyz"``, ``"livez"``,
    ``"chat"`` (a chat question, the stream read whole), or a function ``i -> (method, path, headers, body)``.
    """
    factories: dict[str, RequestFactory] = {
        "load": lambda i: c.load_request(i, tenant=tenant),
        "load-hit": lambda i: c.load_request(i, tenant=tenant, query=HIT_QUERY),
        "meta": lambda _i: ("GET", f"{c.tenants[tenant].core_base}/meta", c.tenants[tenant].core_headers(), b""),
        "session": lambda i: c.session_request(i, tenant=tenant, external_id=f"load-{time.time_ns()}-{i}"),
        "readyz": lambda _i: ("GET", "/readyz", {}, b""),
        "livez": lambda _i: ("GET", "/livez", {}, b""),
        "chat": lambda i: c.chat_request(i, tenant=tenant),
    }
    make = kind if callable(kind) else factories[kind]
    name = label or (kind if isinstance(kind, str) else getattr(kind, "__name__", "custom"))
    return asyncio.run(
        load_async(
            c.port, make, n, concurrency=concurrency, expect=expect, timeout=timeout, label=name, progress=progress,
            stop=stop,
        )
    )  # fmt: skip


ClusterFactory = Callable[..., contextlib.AbstractContextManager[Cluster]]


@contextlib.contextmanager
def cluster(**options: Any) -> Iterator[Cluster]:
    """Bring up a :class:`Cluster` (``workers=2, orders=20_000, postgres_data=False, celery=True, beat=True,
    env=None, start_timeout=120``) and tear it all down afterwards, on failure too. SIGTERM (the runner's
    budget) is turned into an exception so that the teardown runs."""
    previous = signal.getsignal(signal.SIGTERM)
    in_main = threading.current_thread() is threading.main_thread()

    def terminated(signum: int, _frame: Any) -> None:
        raise SystemExit(f"drill terminated by signal {signum}")

    if in_main:
        signal.signal(signal.SIGTERM, terminated)
    c = Cluster(**options)
    try:
        c.start()
        steps = ", ".join(f"{step} {seconds:.1f}" for step, seconds in c.started_in.items() if step != "total")
        print(f"   cluster up in {c.started_in['total']:.1f} s (pace {c.pace:.2f}; {steps})", flush=True)
        yield c
    finally:
        c.close()
        if in_main:
            signal.signal(signal.SIGTERM, previous)


# ---------------------------------------------------------------------------------------------------------------
# Drill results


@dataclass
class Drill:
    """A drill's outcome: its figures (anything JSON) and its expectations, each a sentence and whether it held."""

    name: str
    figures: dict[str, Any] = field(default_factory=dict)
    expectations: list[tuple[str, bool]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def expect(self, text: str, ok: bool) -> bool:
        """Record an expectation (``text`` says what should hold, with the measured figure) and return ``ok``."""
        self.expectations.append((text, bool(ok)))
        return bool(ok)

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def ok(self) -> bool:
        return all(ok for _, ok in self.expectations)

    def print(self) -> None:
        print(f"== drill {self.name}: {'ok' if self.ok else 'FAILED'}")
        for key, value in self.figures.items():
            print(f"   {key}: {json.dumps(value) if not isinstance(value, str) else value}")
        for text in self.notes:
            print(f"   note: {text}")
        for text, ok in self.expectations:
            print(f"   [{'ok' if ok else 'FAIL'}] {text}")
        sys.stdout.flush()

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "figures": self.figures,
            "expectations": [{"text": text, "ok": ok} for text, ok in self.expectations],
            "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Drill:
        return cls(
            name=data["name"],
            figures=data.get("figures", {}),
            expectations=[(e["text"], e["ok"]) for e in data.get("expectations", [])],
            notes=data.get("notes", []),
        )
