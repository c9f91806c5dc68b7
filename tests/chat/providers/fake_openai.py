"""A fake OpenAI-compatible chat-completions server: a real HTTP server on 127.0.0.1, for provider tests.

Each ``POST /v1/chat/completions`` takes the next scripted :class:`Reply` and streams it as OpenAI does:
HTTP/1.1 chunked ``text/event-stream``, one server-sent event per chunk, with a pause before each. The
server records every request it received (path, headers, JSON body) and notices when a client hangs
up in the middle of a stream. It checks ``Authorization: Bearer <api_key>`` and answers a wrong key
with OpenAI's 401 body.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import zip_longest
from typing import Any

COMPLETIONS_PATH = "/v1/chat/completions"
ECHOED_MODEL = "fake-model-2024-01-01"  # what the server says it ran, as OpenAI names a snapshot


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a stream of server-sent events, or an HTTP error with a JSON body."""

    events: Sequence[str] = ()
    status: int = 200
    body: dict[str, Any] | None = None
    pause: float = 0.005  # seconds before each event
    complete: bool = True  # False: the connection is cut after the events, mid-body
    # Events from index ``held_from`` on wait until ``release`` is set (the client saw what came before), at most
    # ``HOLD_SECONDS``; a hold that ran out is counted in ``FakeOpenAI.holds_timed_out``.
    held_from: int | None = None
    release: threading.Event | None = None


HOLD_SECONDS = 20.0


@dataclass(frozen=True)
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call the fake model makes: its id, the tool's name and the JSON text of its arguments."""

    id: str
    name: str
    arguments: str


def sse(payload: dict[str, Any] | str) -> str:
    """One server-sent event carrying ``payload`` (JSON, or text such as ``[DONE]``)."""
    return f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n"


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with one choice (``usage`` is null until the last chunk)."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": ECHOED_MODEL,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        "usage": None,
    }


def usage_chunk(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """The last chunk with ``stream_options.include_usage``: no choices, the call's token counts."""
    return {
        **chunk({}),
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _finished(body: list[str], finish_reason: str, usage: tuple[int, int], pause: float) -> Reply:
    events = [sse(chunk({"role": "assistant", "content": ""})), *body, sse(chunk({}, finish_reason))]
    return Reply(events=[*events, sse(usage_chunk(*usage)), sse("[DONE]")], pause=pause)


def answer(
    *pieces: str, reasoning: Sequence[str] = (), usage: tuple[int, int] = (10, 5), pause: float = 0.005
) -> Reply:
    """A plain answer: optional ``reasoning_content`` deltas, then the content ``pieces`` in order."""
    body = [sse(chunk({"reasoning_content": text})) for text in reasoning]
    body.append(": keep-alive\n\n")  # a comment line, which clients must skip
    body += [sse(chunk({"content": text})) for text in pieces]
    return _finished(body, "stop", usage, pause)


def _call_fragments(index: int, call: ScriptedCall, size: int) -> list[str]:
    opening = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
    pieces = [call.arguments[i : i + size] for i in range(0, len(call.arguments), size)]
    fragments = [{"index": index, "function": {"arguments": piece}} for piece in pieces]
    return [sse(chunk({"tool_calls": [fragment]})) for fragment in [opening, *fragments]]


def tool_calls(
    *calls: ScriptedCall, fragment_size: int = 4, interleave: bool = False, usage: tuple[int, int] = (20, 8)
) -> Reply:
    """A turn that calls tools: each call's id and name, then its arguments ``fragment_size`` characters
    at a time; with ``interleave`` the calls' fragments alternate (each carries its ``index``)."""
    streams = [_call_fragments(index, call, fragment_size) for index, call in enumerate(calls)]
    if interleave:
        body = [event for group in zip_longest(*streams) for event in group if event is not None]
    else:
        body = [event for stream in streams for event in stream]
    return _finished(body, "tool_calls", usage, 0.005)


def error(status: int, message: str, code: str) -> Reply:
    """An HTTP error with OpenAI's error body."""
    return Reply(status=status, body={"error": {"message": message, "type": "api_error", "param": None, "code": code}})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        fake.received(ReceivedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw)))
        if self.path != COMPLETIONS_PATH:
            self._json(404, {"error": {"message": f"Unknown path {self.path}", "code": "not_found"}})
        elif self.headers.get("Authorization") != f"Bearer {fake.api_key}":
            self._json(401, error(401, "Incorrect API key provided", "invalid_api_key").body or {})
        else:
            reply = fake.next_reply()
            if reply.status != 200:
                self._json(reply.status, reply.body or {})
            else:
                self._stream(reply)

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, reply: Reply) -> None:
        fake = self.server.fake
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for index, event in enumerate(reply.events):
                if index == reply.held_from and reply.release is not None and not reply.release.wait(HOLD_SECONDS):
                    fake.holds_timed_out += 1
                if fake.stopping.wait(reply.pause):
                    break
                data = event.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            if reply.complete:
                self.wfile.write(b"0\r\n\r\n")
            self.close_connection = not reply.complete
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            fake.disconnected.set()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAI


class FakeOpenAI:
    """The fake server; use as a context manager. ``url`` is the base URL an agent is configured with."""

    def __init__(self, *, api_key: str = "sk-test-right") -> None:
        self.api_key = api_key
        self.requests: list[ReceivedRequest] = []
        self.disconnected = threading.Event()
        self.stopping = threading.Event()
        self.holds_timed_out = 0
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        with self._lock:
            self._replies.extend(replies)

    def next_reply(self) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return error(500, "The fake server has no scripted reply left", "unscripted")

    def received(self, request: ReceivedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving and close the port (again is harmless); streams in progress end."""
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
