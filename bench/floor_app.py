"""The floor under /v1/load: the least any Python ASGI server must do to answer a query over HTTP.

``bench/core_api.py`` serves this next to the product, with the same server (gunicorn, a uvicorn worker, uvloop,
httptools), and sends it the SQL each cache-off load runs, interleaved with the loads and the direct SQL. A
request's body is ``{"sql": ..., "params": [...]}``; the answer is its rows as a JSON array. No Django, no routing,
no token, no planning, no result cache, no shaping: what remains is HTTP, JSON and the query itself.

- ``POST /thread``: the query runs on a worker thread while the event loop waits, as a server must run it if
  its other requests are not to stop for the length of each query (the product's runner does this).
- ``POST /inline``: the query runs on the event loop itself, which no server can do with real traffic; it
  measures HTTP and JSON alone.
- ``/fixed/{n}`` (any method; the body is read and ignored): a JSON answer of ``n`` bytes and no query, the floor
  under a cache hit of that size.

Reads the DuckDB file named by ``FLOOR_DUCKDB`` (read-only, as the bench's direct SQL opens it).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import duckdb

_connection = duckdb.connect(os.environ["FLOOR_DUCKDB"], read_only=True)
_connection.execute("SET TimeZone = 'UTC'")
_local = threading.local()
_executor = ThreadPoolExecutor(max_workers=1)


def _rows(sql: str, params: list[Any]) -> bytes:
    cursor = getattr(_local, "cursor", None)
    if cursor is None:
        cursor = _local.cursor = _connection.cursor()
    cursor.execute(sql, params)
    return json.dumps(cursor.fetchall(), default=str).encode()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    status = 200
    if scope["path"] == "/livez":
        content = b"{}"
    elif scope["path"].startswith("/fixed/"):
        content = b'"' + b"x" * max(0, int(scope["path"].removeprefix("/fixed/")) - 2) + b'"'
    else:
        query = json.loads(body)
        if scope["path"] == "/thread":
            loop = asyncio.get_running_loop()
            content = await loop.run_in_executor(_executor, _rows, query["sql"], query["params"])
        else:
            content = _rows(query["sql"], query["params"])
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})
