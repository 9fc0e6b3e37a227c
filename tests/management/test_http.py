"""The sans-IO HTTP connection of the management port, fed byte strings (h11's way), and a
hostile HTTP client against a listener that serves AMQP clients meanwhile."""

from __future__ import annotations

import contextlib
import select
import socket

import pika
from hypothesis import given, settings
from hypothesis import strategies as st

from embroker import Broker
from embroker.management import HttpConnection, Request, Response
from embroker.management._http import MAX_HEADERS, MAX_PENDING_OUTPUT
from embroker.server import _READ_SIZE


def echo(request: Request) -> Response:
    return Response(200, f"{request.method} {request.path} {len(request.body)}".encode(),
                    [("content-type", "text/plain")])


def responses(data: bytes) -> list[bytes]:
    return list(data.split(b"HTTP/1.1 ")[1:])


def test_a_request_gets_its_response() -> None:
    conn = HttpConnection(echo)
    conn.receive_data(b"GET /api/overview HTTP/1.1\r\nHost: x\r\n\r\n")
    out = conn.data_to_send()
    assert out.startswith(b"HTTP/1.1 200 OK\r\n")
    assert out.endswith(b"GET /api/overview 0")
    assert not conn.should_close


def test_pipelined_requests_are_answered_in_order_on_one_connection() -> None:
    conn = HttpConnection(echo)
    conn.receive_data(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nPUT /b HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 3\r\n\r\nabcGET /c HTTP/1.1\r\nHost: x\r\n\r\n")
    parts = responses(conn.data_to_send())
    assert [p.rsplit(b"\r\n", 1)[-1] for p in parts] == [b"GET /a 0", b"PUT /b 3", b"GET /c 0"]
    assert conn.requests_served == 3
    assert not conn.should_close


def test_a_request_fed_one_byte_at_a_time_is_the_same_request() -> None:
    whole = b"PUT /api/queues/%2F/q HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    conn = HttpConnection(echo)
    for byte in whole:
        conn.receive_data(bytes([byte]))
    assert conn.data_to_send().endswith(b"PUT /api/queues/%2F/q 2")


def test_connection_close_and_http_1_0_end_the_connection_after_the_response() -> None:
    for request in (b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    b"GET / HTTP/1.0\r\n\r\n"):
        conn = HttpConnection(echo)
        conn.receive_data(request)
        assert b"200 OK" in conn.data_to_send()
        assert conn.should_close


def test_a_head_request_has_the_length_and_no_body() -> None:
    conn = HttpConnection(echo)
    conn.receive_data(b"HEAD /x HTTP/1.1\r\nHost: x\r\n\r\n")
    out = conn.data_to_send()
    assert b"content-length: 9\r\n" in out
    assert out.endswith(b"\r\n\r\n")


def test_a_body_over_the_limit_is_refused_413_before_it_is_read() -> None:
    conn = HttpConnection(echo, max_body=10)
    conn.receive_data(b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n")
    assert conn.data_to_send().startswith(b"HTTP/1.1 413 ")
    assert conn.should_close


def test_headers_over_the_limit_are_refused() -> None:
    conn = HttpConnection(echo)
    conn.receive_data(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_HEADERS + 10))
    assert conn.data_to_send().startswith(b"HTTP/1.1 431 ")
    assert conn.should_close


def test_garbage_is_answered_400_and_closed() -> None:
    conn = HttpConnection(echo)
    conn.receive_data(b"\x16\x03\x01 not http at all\r\n\r\n")
    assert conn.data_to_send().startswith(b"HTTP/1.1 400 ")
    assert conn.should_close


def test_a_slow_request_times_out_408_and_an_idle_connection_closes() -> None:
    now = [0.0]
    conn = HttpConnection(echo, request_timeout=5, idle_timeout=20, clock=lambda: now[0])
    conn.receive_data(b"GET / HTTP/1.1\r\nHo")
    now[0] = 6
    conn.tick()
    assert conn.data_to_send().startswith(b"HTTP/1.1 408 ")
    assert conn.should_close
    idle = HttpConnection(echo, request_timeout=5, idle_timeout=20, clock=lambda: now[0])
    now[0] += 21
    idle.tick()
    assert idle.should_close
    assert idle.data_to_send() == b""


def test_a_client_that_reads_nothing_stops_being_read_from() -> None:
    big = Response(200, b"x" * (MAX_PENDING_OUTPUT // 2 + 1))
    conn = HttpConnection(lambda _request: big)
    conn.receive_data(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 2)
    assert conn.blocked
    conn.data_to_send()
    assert not conn.blocked


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.booleans())
def test_any_input_is_served_or_refused_never_raised(data: bytes, bytewise: bool) -> None:
    """h11's invariant for a server: whatever arrives, in one piece or byte by byte, the
    connection answers or closes; nothing raises."""
    conn = HttpConnection(echo)
    chunks = [bytes([b]) for b in data] if bytewise else [data]
    for chunk in [*chunks, b""]:
        conn.receive_data(chunk)
    out = conn.data_to_send()
    assert out == b"" or out.startswith(b"HTTP/1.1 ")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([
    b"GET /api/overview HTTP/1.1\r\nHost: x\r\n\r\n", b"PUT /x HTTP/1.1\r\nHost: x\r\n",
    b"Content-Length: 5\r\n\r\nhello", b"\r\n", b"Transfer-Encoding: chunked\r\n\r\n",
    b"5\r\nhello\r\n0\r\n\r\n", b"GET / HTTP/1.0\r\n\r\n", b"\x00\xff", b"Connection: close"]),
    max_size=8))
def test_fragments_of_requests_are_served_or_refused(parts: list[bytes]) -> None:
    conn = HttpConnection(echo)
    for part in parts:
        conn.receive_data(part)
    out = conn.data_to_send()
    assert out == b"" or out.startswith(b"HTTP/1.1 ")


def test_hostile_http_clients_do_not_disturb_amqp_clients_of_the_same_listener() -> None:
    broker = Broker()
    with broker.serve(management=True) as server:
        port = server.management_port
        assert port is not None
        connection = pika.BlockingConnection(pika.URLParameters(server.url))
        channel = connection.channel()
        channel.confirm_delivery()
        channel.queue_declare("q")
        hostile = []
        for payload in (b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ",  # never finishes
                        b"\x00\x01garbage\r\n\r\n",
                        b"PUT /api/queues/%2F/x HTTP/1.1\r\nHost: x\r\nContent-Length: "
                        b"999999999\r\n\r\n",
                        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 200):  # never reads answers
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(payload)
            hostile.append(sock)
        for i in range(200):
            channel.basic_publish("", "q", b"%d" % i)
        assert broker.queues["q"].message_count == 200
        connection.close()
        for sock in hostile:
            sock.close()
        assert server.errors == []


def test_the_listener_stops_reading_a_client_that_leaves_its_answers_unread() -> None:
    """A client that pipelines requests and reads none of the answers costs at most
    MAX_PENDING_OUTPUT bytes of answers (and the sockets' buffers): then its requests stay
    unread until it reads; once it does, every request is answered."""
    broker = Broker()
    request = b"GET /console.css HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * 2000 + b"\r\n\r\n"
    batch = request * 10
    with broker.serve(management=True) as server:
        assert server.management_port is not None
        sock = socket.create_connection(("127.0.0.1", server.management_port))
        sock.setblocking(False)
        sent_bytes = 0
        # Send until the socket takes nothing for 2 s (the listener stopped reading and the
        # kernel's buffers are full); bounded in any case.
        while sent_bytes < 100_000 * len(request):
            if not select.select([], [sock], [], 2.0)[1]:
                break
            offset = sent_bytes % len(batch)
            with contextlib.suppress(BlockingIOError):
                sent_bytes += sock.send(batch[offset:])
        sent, partial = divmod(sent_bytes, len(request))
        assert sent < 100_000
        (client,) = server._http_clients.values()
        served = client.conn.requests_served
        assert served < sent  # requests wait, unread
        answer = len(client.conn._app(Request("GET", "/console.css", {}, {})).body)
        # At most the limit, one read's worth of requests answered past it, and what the
        # kernel's socket buffers took (a few MiB on loopback).
        assert served * answer < MAX_PENDING_OUTPUT + (_READ_SIZE // len(request) + 1) * (
            answer + 200) + 16 * 1024 * 1024
        wanted = sent + (1 if partial else 0)
        rest = request[partial:] if partial else b""  # of the last request, sent as it goes
        answered, tail = 0, b""
        marker = b"HTTP/1.1 200 OK"
        while answered < wanted:
            readable, writable, _ = select.select([sock], [sock] if rest else [], [], 30)
            assert readable or writable, f"stuck after {answered} of {wanted} answers"
            if writable:
                with contextlib.suppress(BlockingIOError):
                    rest = rest[sock.send(rest):]
            if not readable:
                continue
            chunk = sock.recv(1 << 20)
            assert chunk, f"closed after {answered} of {wanted} answers"
            data = tail + chunk
            answered += data.count(marker)
            tail = data[-(len(marker) - 1):]
        sock.close()
        assert answered == wanted
        assert server.errors == []


def test_h11_is_imported_only_by_a_listener_that_serves_the_management_api() -> None:
    import subprocess
    import sys

    script = ("import sys, embroker; broker = embroker.Broker(); "
              "print('h11' in sys.modules, end=' '); broker.serve().stop(); "
              "print('h11' in sys.modules, 'embroker.management' in sys.modules, end=' '); "
              "broker.serve(management=True).stop(); print('h11' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.split() == ["False", "False", "False", "True"]
