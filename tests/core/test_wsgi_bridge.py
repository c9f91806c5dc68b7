"""The one-hand-off WSGI bridge (embedadmin/core/wsgi_bridge.py), driven as an ASGI server drives it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time

import pytest

from embedadmin.core.wsgi_bridge import WSGIBridge


def _scope(path="/x", *, method="POST", query=b"", headers=(), root_path=""):
    return {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": root_path,
        "query_string": query,
        "headers": list(headers),
        "server": ("127.0.0.1", 4000),
        "client": ("10.0.0.7", 5555),
        "scheme": "http",
        "http_version": "1.1",
    }


def _drive(
    bridge, scope, bodies=(b"",), *, disconnect=False, fail_send_after=None, leave_after=None, stall_send_after=None
):
    """Run one request; return the messages sent. ``leave_after``: seconds after the body until the
    client disconnects (otherwise it waits for the whole answer)."""
    incoming = [{"type": "http.request", "body": b, "more_body": i < len(bodies) - 1} for i, b in enumerate(bodies)]
    if disconnect:
        incoming = [*incoming[:-1], {"type": "http.disconnect"}]
    sent = []

    async def receive():
        if incoming:
            return incoming.pop(0)
        if leave_after is None:
            await asyncio.Event().wait()
        await asyncio.sleep(leave_after)
        return {"type": "http.disconnect"}

    async def send(message):
        if fail_send_after is not None and len(sent) >= fail_send_after:
            raise OSError("client went away")
        if stall_send_after is not None and len(sent) >= stall_send_after:
            await asyncio.Event().wait()  # a client that stopped reading
        sent.append(message)

    async def run():
        await bridge(scope, receive, send)

    with contextlib.suppress(OSError):
        asyncio.run(run())
    return sent


def _echo(environ, start_response):
    body = environ["wsgi.input"].read()
    keys = ["REQUEST_METHOD", "SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "CONTENT_TYPE", "CONTENT_LENGTH"]
    keys += ["REMOTE_ADDR", "SERVER_NAME", "SERVER_PORT", "HTTP_AUTHORIZATION", "HTTP_X_MULTI"]
    answer = {k: environ.get(k) for k in keys} | {"body": body.decode()}
    start_response("201 Created", [("Content-Type", "application/json"), ("X-Thread", threading.current_thread().name)])
    return [json.dumps(answer).encode()]


def test_a_request_reaches_the_app_as_pep_3333_environ_and_the_answer_comes_back_whole():
    bridge = WSGIBridge(_echo, threads=2)
    headers = [
        (b"content-type", b"application/json"),
        (b"authorization", b"Api-Key abc"),
        (b"x-multi", b"one"),
        (b"x-multi", b"two"),
        (b"content-length", b"999"),  # a lying length: the body read whole is what counts
    ]
    sent = _drive(
        bridge, _scope("/app/api/v1/x", query=b"a=1&b=%20", headers=headers, root_path="/app"), [b'{"a"', b":1}"]
    )
    start, body = sent
    assert start["status"] == 201
    assert dict(start["headers"])[b"content-type"] == b"application/json"
    assert dict(start["headers"])[b"x-thread"].startswith(b"wsgi")
    assert body["more_body"] is False
    echoed = json.loads(body["body"])
    assert echoed == {
        "REQUEST_METHOD": "POST",
        "SCRIPT_NAME": "/app",
        "PATH_INFO": "/api/v1/x",
        "QUERY_STRING": "a=1&b=%20",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": "7",
        "REMOTE_ADDR": "10.0.0.7",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "4000",
        "HTTP_AUTHORIZATION": "Api-Key abc",
        "HTTP_X_MULTI": "one,two",
        "body": '{"a":1}',
    }


def test_a_body_over_the_limit_is_a_json_413_and_the_app_never_runs():
    calls = []

    def app(environ, start_response):
        calls.append(environ)
        start_response("200 OK", [])
        return [b""]

    bridge = WSGIBridge(app, threads=1, max_body_bytes=10)
    by_header = _drive(bridge, _scope(headers=[(b"content-length", b"11")]), [b"x" * 11])
    by_stream = _drive(bridge, _scope(), [b"x" * 6, b"x" * 6])
    for sent in (by_header, by_stream):
        assert sent[0]["status"] == 413
        assert json.loads(sent[1]["body"]) == {"error": "Request body too large"}
    assert calls == []
    assert _drive(bridge, _scope(), [b"x" * 10])[0]["status"] == 200


def test_a_client_that_leaves_before_its_body_is_read_gets_nothing_and_the_app_never_runs():
    calls = []

    def app(environ, start_response):
        calls.append(environ)
        start_response("200 OK", [])
        return [b""]

    sent = _drive(WSGIBridge(app, threads=1), _scope(), [b"part", b"rest"], disconnect=True)
    assert sent == []
    assert calls == []


class _Stream:
    """A streamed answer that records where and how often it was closed."""

    def __init__(self, chunks):
        self.chunks = chunks
        self.closed_in = []

    def __iter__(self):
        return iter(self.chunks)

    def close(self):
        self.closed_in.append(threading.current_thread().name)


def test_a_large_answer_streams_in_buffers_in_order_and_is_closed_once_in_a_worker_thread():
    stream = _Stream([bytes([65 + i]) * 100 for i in range(10)])

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return stream

    sent = _drive(WSGIBridge(app, threads=1, buffer_bytes=250), _scope(method="GET"))
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert len(bodies) > 2, "a large answer is not held back until it is complete"
    assert all(m["more_body"] for m in bodies[:-1])
    assert bodies[-1]["more_body"] is False
    assert b"".join(m["body"] for m in bodies) == b"".join(stream.chunks)
    assert len(stream.closed_in) == 1
    assert stream.closed_in[0].startswith("wsgi")


def test_an_answer_whose_client_went_away_mid_stream_is_still_closed():
    stream = _Stream([b"x" * 100] * 10)

    def app(environ, start_response):
        start_response("200 OK", [])
        return stream

    sent = _drive(WSGIBridge(app, threads=1, buffer_bytes=100), _scope(method="GET"), fail_send_after=2)
    assert len(sent) == 2
    assert len(stream.closed_in) == 1


def test_start_response_may_come_with_the_first_chunk():
    def app(environ, start_response):
        start_response("202 Accepted", [("X-Late", "yes")])
        yield b"late"

    sent = _drive(WSGIBridge(app, threads=1), _scope(method="GET"))
    assert sent[0]["status"] == 202
    assert dict(sent[0]["headers"])[b"x-late"] == b"yes"
    assert b"".join(m.get("body", b"") for m in sent[1:]) == b"late"


@pytest.mark.parametrize("broken", ["raises", "never_starts"])
def test_an_app_that_fails_outside_django_still_answers_json_500(broken, caplog):
    def app(environ, start_response):
        if broken == "raises":
            raise ValueError("boom")
        return [b"no start_response"]

    sent = _drive(WSGIBridge(app, threads=1), _scope())
    assert sent[0]["status"] == 500
    assert json.loads(sent[1]["body"]) == {"error": "Internal server error"}
    assert "boom" not in sent[1]["body"].decode()


class _AsyncStream:
    """A Django StreamingHttpResponse over an async iterator, as far as the bridge looks at it."""

    is_async = True

    def __init__(self, produce):
        self.produce = produce
        self.closed_in = []
        self.finished = []

    @property
    def streaming_content(self):
        async def content():
            try:
                async for chunk in self.produce():
                    yield chunk
            finally:
                self.finished.append(True)

        return content()

    def close(self):
        self.closed_in.append(threading.current_thread().name)


def test_an_async_stream_is_sent_chunk_by_chunk_from_the_event_loop():
    async def lines():
        for i in range(3):
            await asyncio.sleep(0.01)
            yield f"line {i}\n".encode()

    stream = _AsyncStream(lines)

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json")])
        return stream

    sent = _drive(WSGIBridge(app, threads=1), _scope())
    assert sent[0]["status"] == 200
    assert [m["body"] for m in sent[1:]] == [b"line 0\n", b"line 1\n", b"line 2\n", b""]
    assert [m["more_body"] for m in sent[1:]] == [True, True, True, False]
    assert stream.finished == [True]
    assert len(stream.closed_in) == 1
    assert stream.closed_in[0].startswith("wsgi")


def test_a_client_that_leaves_stops_an_async_stream_waiting_for_its_next_line():
    async def forever():
        yield b"first\n"
        await asyncio.Event().wait()
        yield b"never\n"

    stream = _AsyncStream(forever)

    def app(environ, start_response):
        start_response("200 OK", [])
        return stream

    sent = _drive(WSGIBridge(app, threads=1), _scope(), leave_after=0.05)
    assert [m.get("body") for m in sent[1:]] == [b"first\n"]
    assert stream.finished == [True], "the stream was cancelled, its cleanup ran"
    assert len(stream.closed_in) == 1


def test_header_names_with_underscores_are_dropped_so_they_cannot_pose_as_dashed_ones():
    headers = [(b"x_forwarded_proto", b"https"), (b"x-forwarded-proto", b"http"), (b"authorization", b"k")]
    sent = _drive(WSGIBridge(_echo_all, threads=1), _scope(headers=headers))
    environ = json.loads(sent[1]["body"])
    assert environ["HTTP_X_FORWARDED_PROTO"] == "http"
    assert environ["HTTP_AUTHORIZATION"] == "k"


def _echo_all(environ, start_response):
    start_response("200 OK", [])
    return [json.dumps({k: v for k, v in environ.items() if k.startswith("HTTP_")}).encode()]


def test_the_thread_that_ran_the_app_releases_its_connections_when_the_answer_outlives_the_hand_off():
    released_in = []
    ran_in = []

    def app(environ, start_response):
        ran_in.append(threading.current_thread().name)
        start_response("200 OK", [])
        return _Stream([b"x" * 100] * 5) if environ["PATH_INFO"] == "/stream" else [b"small"]

    bridge = WSGIBridge(
        app, threads=4, buffer_bytes=100, release=lambda: released_in.append(threading.current_thread().name)
    )
    _drive(bridge, _scope("/small", method="GET"))
    assert released_in == [], "a whole answer is closed where it ran: nothing to release early"
    _drive(bridge, _scope("/stream", method="GET"))
    assert released_in == [ran_in[-1]]


def test_an_async_stream_whose_client_stopped_reading_is_closed_when_the_client_leaves():
    async def lines():
        for i in range(100):
            yield f"{i}\n".encode()

    stream = _AsyncStream(lines)

    def app(environ, start_response):
        start_response("200 OK", [])
        return stream

    _drive(WSGIBridge(app, threads=1), _scope(), stall_send_after=3, leave_after=0.05)
    assert stream.finished == [True]
    assert len(stream.closed_in) == 1


def test_a_client_that_leaves_stops_a_slow_sync_stream_between_pulls():
    pulled = []

    class Slow(_Stream):
        def __iter__(self):
            for i in range(200):
                time.sleep(0.005)  # a slow producer: the client leaves while it is being pulled
                pulled.append(i)
                yield b"x" * 10

    stream = Slow([])

    def app(environ, start_response):
        start_response("200 OK", [])
        return stream

    _drive(WSGIBridge(app, threads=2, buffer_bytes=10), _scope(method="GET"), leave_after=0.1)
    assert 0 < len(pulled) < 200, "the stream stopped once the client was gone"
    assert len(stream.closed_in) == 1
