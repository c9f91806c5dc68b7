"""Shared benchmark plumbing: a PostgreSQL bench database, an ASGI server, and a lean load generator.

The load generator speaks HTTP/1.1 with keep-alive over raw asyncio streams, on uvloop (installed with
``uvicorn[standard]``): on a 2-core machine a full-featured client library would eat the CPU the server
under test needs.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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


def start_server(env: dict[str, str], *, port: int, workers: int) -> Server:
    """Serve the ASGI app the way production does: gunicorn with uvicorn workers."""
    command = [
        str(Path(PYTHON).parent / "gunicorn"),
        "embedadmin.asgi:application",
        "-k",
        "uvicorn_worker.UvicornWorker",
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
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await self.writer.drain()
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length = 0
        chunked = False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
            elif name.lower() == "transfer-encoding" and "chunked" in value:
                chunked = True
        if chunked:
            payload = b""
            while True:
                size = int((await self.reader.readline()).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                payload += chunk[:-2]
            return status, payload
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class RunResult:
    label: str
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def pct(self, q: float) -> float:
        return pct(self.latencies_ms, q)

    def line(self) -> str:
        return (
            f"{self.label:<38} {self.rate:8.1f} req/s   p50 {self.pct(0.50):6.2f} ms   "
            f"p99 {self.pct(0.99):6.2f} ms   mean {statistics.fmean(self.latencies_ms):6.2f} ms   "
            f"errors {self.errors}/{self.requests}"
        )

    def as_dict(self) -> dict:
        return {
            "label": self.label,
            "requests": self.requests,
            "errors": self.errors,
            "rate": round(self.rate, 1),
            "p50_ms": round(self.pct(0.5), 2),
            "p99_ms": round(self.pct(0.99), 2),
        }


RequestFactory = Callable[[int], tuple[str, str, dict[str, str], bytes]]


def run_load(label: str, *, port: int, clients: int, total: int, make: RequestFactory, expect: int = 200) -> RunResult:
    """Closed loop: each client sends its next request as soon as the last one is answered, so the
    run measures the most the server does (and latency at saturation, which Little's law ties to it:
    mean latency = clients / throughput)."""
    return run_rate(label, port=port, clients=clients, rate=None, total=total, make=make, expect=expect)


async def _run(
    port: int, clients: int, rate: float | None, total: int, make: RequestFactory, expect: int
) -> tuple[list[float], int, float]:
    """``clients`` connections take the next request as they are free; with a ``rate``, request i is due
    at ``i / rate`` seconds and its latency counts from then."""
    counter = iter(range(total))
    latencies: list[float] = []
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
                latencies.append((clock() - due) * 1000)
                if status != expect:
                    errors += 1
        finally:
            conn.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, errors, clock() - started


def run_rate(
    label: str, *, port: int, clients: int, rate: float | None, total: int, make: RequestFactory, expect: int = 200
) -> RunResult:
    """Open loop: requests fall due at a fixed ``rate`` (``total`` of them) and are sent over ``clients``
    keep-alive connections; each latency runs from when its request was due. This is latency at a
    given load, which a closed loop cannot measure. ``rate=None``: the closed loop of :func:`run_load`."""
    latencies, errors, seconds = uvloop.run(_run(port, clients, rate, total, make, expect))
    return RunResult(label=label, requests=total, errors=errors, seconds=seconds, latencies_ms=latencies)


def json_body(payload: dict) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()
