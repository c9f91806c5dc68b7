"""Shared benchmark plumbing: a PostgreSQL bench database, an ASGI server, and a lean load generator. Its raw
HTTP/1.1 client pieces (``Connection``, ``raw_request``) also serve the drills and the input-limit tests.

The load generator speaks HTTP/1.1 with keep-alive over raw asyncio streams, on uvloop (installed with
``uvicorn[standard]``): on a 2-core machine a full-featured client library would eat the CPU the server
under test needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import uvloop

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def bench_database_url(name: str = "embedadmin_bench") -> str:
    """Create (afresh) a PostgreSQL database for the benchmark next to the test database."""
    base = os.environ.get("TEST_DATABASE_URL", "postgresql://embedadmin:embedadmin@127.0.0.1:5432/embedadmin")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.rsplit("/", 1)[0] + f"/{name}"


def server_env(database_url: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": database_url,
            "SECRET_KEY": "bench-secret-key-bench-secret-key-bench-secret-key",
            "EMBEDADMIN_VAR_DIR": str(ROOT / "var" / "bench"),
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "embedadmin.settings",
        }
    )
    env.update(extra)
    return env


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [PYTHON, str(ROOT / "manage.py"), *args], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    return result.stdout


@dataclass
class Server:
    process: subprocess.Popen
    port: int

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start_server(env: dict[str, str], *, port: int, workers: int, app: str = "embedadmin.asgi:application") -> Server:
    """Serve an ASGI app (the product's by default) the way production does: gunicorn with uvicorn workers."""
    command = [
        str(Path(PYTHON).parent / "gunicorn"),
        app,
        "-k",
        "embedadmin.core.http_server.UvicornWorker",  # uvicorn's worker, JSON 414/431 for oversized heads
        "-w",
        str(workers),
        "-b",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, env=env, cwd=ROOT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            asyncio.run(_get_once(port, "/livez"))
            return Server(process, port)
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("server did not start")


async def _get_once(port: int, path: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    await reader.read()
    writer.close()


class Connection:
    """One keep-alive HTTP/1.1 connection (raw asyncio streams). ``request`` answers (status, body) and raises
    when the connection fails; ``exchange`` also answers the headers. ``drills/_cluster.py`` builds its
    failure-tolerant connection on this one."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, bytes]:
        status, _, payload = await self.exchange(method, path, headers, body)
        return status, payload

    async def exchange(
        self, method: str, path: str, headers: dict[str, str], body: bytes = b""
    ) -> tuple[int, dict[str, str], bytes]:
        """Send one request and read its answer: status, headers (names lower-cased) and body (chunked or
        not; an answer with neither a length nor chunks runs to the connection's end, which closes it)."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await self.writer.drain()
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionResetError("connection closed before an answer")
        status = int(status_line.split()[1])
        answer_headers: dict[str, str] = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            answer_headers[name.strip().lower()] = value.strip()
        if "chunked" in answer_headers.get("transfer-encoding", ""):
            payload = b""
            while True:
                size = int((await self.reader.readline()).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                payload += chunk[:-2]
        elif "content-length" in answer_headers or status in (204, 304):
            payload = await self.reader.readexactly(int(answer_headers.get("content-length", 0)))
        else:
            payload = await self.reader.read()
            self.close()
        return status, answer_headers, payload

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def raw_request(port: int, head: bytes, body: bytes = b"", timeout: float = 60.0) -> tuple[int, dict[str, str], bytes]:
    """One request on a fresh connection, its answer read while it is sent (a server may answer, and stop reading,
    before a large request is sent whole). Status 0 when nothing came back."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:

        def send() -> None:
            with contextlib.suppress(OSError):
                sock.sendall(head + body)

        sending = threading.Thread(target=send, daemon=True)
        sending.start()
        data = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                data += chunk
                if _complete(data):
                    break
    head_part, _, payload = data.partition(b"\r\n\r\n")
    if not head_part:
        return 0, {}, b""
    lines = head_part.decode("latin1").split("\r\n")
    headers = {k.lower(): v for k, _, v in (line.partition(": ") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, payload


def _complete(data: bytes) -> bool:
    head, found, payload = data.partition(b"\r\n\r\n")
    if not found:
        return False
    for line in head.decode("latin1").split("\r\n")[1:]:
        name, _, value = line.partition(": ")
        if name.lower() == "content-length":
            return len(payload) >= int(value)
    return False


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class StealMonitor:
    """The CPU time the hypervisor took from this virtual machine ("steal", ``/proc/stat``) during a run,
    sampled every ``interval_s``: on a shared VM a burst of it stalls every process at once, which shows up
    in the tail of any latency measured meanwhile. Reported next to each run so that its figures can be
    read against it. Reads nothing (and reports zeros) where ``/proc/stat`` has no steal column."""

    def __init__(self, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self.samples: list[tuple[float, float, float]] = []  # (start, end) perf_counter, steal fraction
        self._totals = [0, 0]  # steal ticks, all ticks
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _read() -> tuple[int, int] | None:
        try:
            with open("/proc/stat") as stat:
                fields = [int(x) for x in stat.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        if len(fields) < 8:
            return None
        return fields[7], sum(fields[:8])

    def _run(self) -> None:
        last, at = self._read(), time.perf_counter()
        while not self._stop.wait(self.interval_s):
            now, now_at = self._read(), time.perf_counter()
            if last is not None and now is not None and now[1] > last[1]:
                steal, total = now[0] - last[0], now[1] - last[1]
                self.samples.append((at, now_at, steal / total))
                self._totals[0] += steal
                self._totals[1] += total
            last, at = now, now_at

    def __enter__(self) -> StealMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def mean(self) -> float:
        return self._totals[0] / self._totals[1] if self._totals[1] else 0.0

    @property
    def peak(self) -> float:
        return max((sample[2] for sample in self.samples), default=0.0)

    def overlapping(self, start: float, end: float, threshold: float) -> bool:
        """Whether a sample of at least ``threshold`` steal overlaps ``[start, end]``."""
        return any(a < end and b > start and fraction >= threshold for a, b, fraction in self.samples)


# Steal in a sample at or above this is a burst (at 50 ms samples: 12 ms or more of 50 taken from the two CPUs).
STEAL_BURST = 0.25
SLOW_MS = 50.0  # requests slower than this are checked against the bursts


def print_steal(results: list[RunResult], indent: str = " ") -> None:
    """The steal report of each run, under one header that states how it is measured."""
    interval_ms = StealMonitor().interval_s * 1000
    print(
        f"{indent}CPU time the hypervisor took from the VM during each run (/proc/stat steal; "
        f"bursts: >= {STEAL_BURST:.0%} in {interval_ms:.0f} ms):"
    )
    for result in results:
        print(f"{indent}  {result.label:<38} {result.steal_line(SLOW_MS)}")


@dataclass
class RunResult:
    label: str
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]
    steal: StealMonitor | None = None
    spans: list[tuple[float, float]] | None = None  # each request's (due or sent, answered), perf_counter
    quantiles: dict[float, float] | None = None  # given by a load generator that keeps no latencies (wrk)

    def steal_line(self, slow_ms: float) -> str:
        """The VM's steal during the run, and how many of the requests slower than ``slow_ms`` overlapped a burst
        of it (against the share of the run's time such bursts covered)."""
        if self.steal is None or not self.steal.samples:
            return "steal n/a"
        bursts = [s for s in self.steal.samples if s[2] >= STEAL_BURST]
        covered = sum(b - a for a, b, _ in bursts) / max(1e-9, sum(b - a for a, b, _ in self.steal.samples))
        text = (
            f"steal {self.steal.mean * 100:.0f}% (peak {self.steal.peak * 100:.0f}%, "
            f"bursts {covered * 100:.0f}% of the time)"
        )
        if self.spans:
            slow = [span for span, ms in zip(self.spans, self.latencies_ms, strict=True) if ms > slow_ms]
            hit = sum(self.steal.overlapping(a, b, STEAL_BURST) for a, b in slow)
            text += f"; {hit}/{len(slow)} requests over {slow_ms:.0f} ms overlapped a burst"
        return text

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def pct(self, q: float) -> float:
        if self.quantiles is not None:
            return self.quantiles[q]
        return pct(self.latencies_ms, q)

    def line(self) -> str:
        mean = f"mean {statistics.fmean(self.latencies_ms):6.2f} ms   " if self.latencies_ms else ""
        return (
            f"{self.label:<38} {self.rate:8.1f} req/s   p50 {self.pct(0.50):6.2f} ms   "
            f"p99 {self.pct(0.99):6.2f} ms   {mean}errors {self.errors}/{self.requests}"
        )

    def as_dict(self) -> dict:
        return {
            "label": self.label,
            "requests": self.requests,
            "errors": self.errors,
            "rate": round(self.rate, 1),
            "p50_ms": round(self.pct(0.5), 2),
            "p99_ms": round(self.pct(0.99), 2),
            "steal_pct": round(self.steal.mean * 100, 1) if self.steal else None,
            "steal_peak_pct": round(self.steal.peak * 100, 1) if self.steal else None,
        }


RequestFactory = Callable[[int], tuple[str, str, dict[str, str], bytes]]


def run_load(label: str, *, port: int, clients: int, total: int, make: RequestFactory, expect: int = 200) -> RunResult:
    """Closed loop: each client sends its next request as soon as the last one is answered, so the
    run measures the most the server does (and latency at saturation, which Little's law ties to it:
    mean latency = clients / throughput)."""
    return run_rate(label, port=port, clients=clients, rate=None, total=total, make=make, expect=expect)


async def _run(
    port: int, clients: int, rate: float | None, total: int, make: RequestFactory, expect: int
) -> tuple[list[float], list[tuple[float, float]], int, float]:
    """``clients`` connections take the next request as they are free; with a ``rate``, request i is due
    at ``i / rate`` seconds and its latency counts from then."""
    counter = iter(range(total))
    latencies: list[float] = []
    spans: list[tuple[float, float]] = []
    errors = 0
    # time.perf_counter, not loop.time(): uvloop's clock moves in whole milliseconds.
    clock = time.perf_counter
    started = clock() + (0.05 if rate else 0.0)  # a moment for every client to be ready to send on time

    async def client() -> None:
        nonlocal errors
        conn = Connection(port)
        try:
            for i in counter:
                method, path, headers, body = make(i)
                due = started + i / rate if rate else clock()
                delay = due - clock()
                if delay > 0:
                    await asyncio.sleep(delay)
                status, _ = await conn.request(method, path, headers, body)
                # From when the request was due, not when a free connection sent it: a slow answer
                # delays the requests queued behind it, and that wait counts (no coordinated omission).
                answered = clock()
                latencies.append((answered - due) * 1000)
                spans.append((due, answered))
                if status != expect:
                    errors += 1
        finally:
            conn.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, spans, errors, clock() - started


def run_rate(
    label: str, *, port: int, clients: int, rate: float | None, total: int, make: RequestFactory, expect: int = 200
) -> RunResult:
    """Open loop: requests fall due at a fixed ``rate`` (``total`` of them) and are sent over ``clients``
    keep-alive connections; each latency runs from when its request was due. This is latency at a
    given load, which a closed loop cannot measure. ``rate=None``: the closed loop of :func:`run_load`."""
    with StealMonitor() as steal:
        latencies, spans, errors, seconds = uvloop.run(_run(port, clients, rate, total, make, expect))
    return RunResult(
        label=label, requests=total, errors=errors, seconds=seconds, latencies_ms=latencies, steal=steal, spans=spans
    )


def json_body(payload: Any) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


WRK_SCRIPT = """
local template, n, method, path, headers = @TEMPLATE@, @FIRST@, @METHOD@, @PATH@, {}
@HEADERS@
errors = 0
local threads = {}
setup = function(thread) table.insert(threads, thread) end
request = function()
  local body = template
  if string.find(template, "{N}", 1, true) then
    body = string.gsub(template, "{N}", @VALUE@)
    n = n + 1
  end
  return wrk.format(method, path, headers, body)
end
response = function(status, _headers, body)
  if status ~= 200 or string.sub(body, 1, 9) == '{"error":' then errors = errors + 1 end
end
done = function(summary, latency, _requests)
  local answered_errors = 0
  for _, thread in ipairs(threads) do answered_errors = answered_errors + thread:get("errors") end
  io.write(string.format("WRK %d %d %f %f %f\\n", summary.requests, answered_errors + summary.errors.connect
    + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.duration / 1e6, latency:percentile(50) / 1e3, latency:percentile(99) / 1e3))
end
"""


def wrk_run(
    label: str,
    *,
    port: int,
    method: str,
    path: str,
    headers: dict[str, str],
    body: str = "",
    first: int = 0,
    value: str = 'string.format("%.2f", (n % 50000) / 100)',
    clients: int = 16,
    seconds: float = 8.0,
) -> RunResult:
    """Closed loop with ``wrk`` (C, one thread): a load generator that leaves the CPU to the servers under test,
    where the Python one of :func:`run_load` tops out near what one core can send. ``{N}`` in ``body`` becomes
    ``value``, a Lua expression of the request's number ``n`` (``first``, ``first + 1``...; by default a threshold
    ``n % 50000 / 100``). wrk keeps no per-request latencies: the result carries its p50 and p99."""
    fills = {
        "@TEMPLATE@": json.dumps(body),
        "@FIRST@": str(first),
        "@VALUE@": value,
        "@METHOD@": json.dumps(method),
        "@PATH@": json.dumps(path),
        "@HEADERS@": "\n".join(f"headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()),
    }
    script = re.sub("|".join(fills), lambda m: fills[m.group(0)], WRK_SCRIPT)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    try:
        with StealMonitor() as steal:
            done = subprocess.run(
                [
                    "wrk",
                    "-t1",
                    f"-c{clients}",
                    f"-d{max(1, round(seconds))}s",
                    "-s",
                    handle.name,
                    f"http://127.0.0.1:{port}",
                ],
                capture_output=True,
                text=True,
                check=True,
            )
    finally:
        os.unlink(handle.name)
    summary = next(line for line in done.stdout.splitlines() if line.startswith("WRK "))
    requests, errors, duration, p50, p99 = summary.split()[1:]
    return RunResult(
        label=label,
        requests=int(requests),
        errors=int(errors),
        seconds=float(duration),
        latencies_ms=[],
        steal=steal,
        quantiles={0.5: float(p50), 0.99: float(p99)},
    )
