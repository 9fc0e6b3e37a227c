"""The stream port on the selector loop: hostile bytes close their own connection only, and a
closed connection leaves nothing behind in the model; heartbeats, the opening's timeouts and the
broker's own closes as RabbitMQ 3.10.8's stream reader has them."""

from __future__ import annotations

import contextlib
import socket
import struct
import time
import urllib.parse

from embroker import Broker, ManualClock
from embroker.stream import MAX_UNSENT, Key, State, Writer
from tests.management.test_api import Api
from tests.stream.interop import SCRIPTS, run
from tests.stream.test_backpressure import CHUNK_BODY, stream_of
from tests.stream.test_connection import Peer
from tests.stream.test_raw_frames import RawClient


def _wait(predicate: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False


def test_garbage_closes_one_connection_and_the_listener_goes_on() -> None:
    broker = Broker()
    with broker.serve(stream_port=0) as server:
        assert server.stream_port is not None
        bad = [socket.create_connection(("127.0.0.1", server.stream_port)) for _ in range(3)]
        bad[0].sendall(b"\xff" * 64)                                     # a huge frame size
        bad[1].sendall(b"\x00\x00\x00\x02\x00")                          # too short a frame
        bad[2].sendall(Writer(Key.PUBLISH).uint8(0).int32(10).frame())  # out of place
        for sock in bad:
            sock.settimeout(5)
            data = b""
            while chunk := sock.recv(4096):
                data += chunk
            assert data[4:6] == b"\x00\x16", "a Close frame, then the socket closes"
            sock.close()
        assert run(SCRIPTS["deduplication"], "127.0.0.1", server.stream_port, server.url)[0] \
            == ("sequence", 4)
        assert _wait(lambda: not broker.connections), broker.connections
        assert not server.errors, server.errors


def _opened(heartbeat: int) -> tuple[ManualClock, Broker, Peer]:
    clock = ManualClock()
    broker = Broker(clock=clock)
    p = Peer(broker)
    p.open()  # (the peer tuned heartbeats off: tune again on a fresh peer)
    p.conn.heartbeat = heartbeat
    return clock, broker, p


def test_heartbeats_go_out_when_nothing_else_did_for_half_an_interval() -> None:
    # rabbit_heartbeat's sender (v3.10.8) looks every half interval for bytes sent
    clock, _broker, p = _opened(60)
    p.conn.tick()
    assert p.received() == []
    clock.advance(29)
    p.conn.tick()
    assert p.received() == []
    clock.advance(1)
    p.conn.tick()
    assert [k for k, _ in p.received()] == [Key.HEARTBEAT]


def test_a_client_silent_for_two_heartbeat_intervals_is_dropped_without_a_frame() -> None:
    # rabbit_heartbeat's receiver: a second look in a row that finds no bytes received stops
    # the reader (rabbit_stream_reader's heartbeat_timeout: no Close, the socket closes)
    clock, broker, p = _opened(60)
    clock.advance(100)
    p.send(Writer(Key.HEARTBEAT).frame())  # bytes in: the silence starts again
    clock.advance(120)
    p.conn.tick()
    assert p.conn.state is State.OPENED
    p.received()
    clock.advance(1)
    p.conn.tick()
    assert (p.conn.state, p.conn.should_close, p.received()) == (State.CLOSED, True, [])
    assert p.conn.close_reason == "missed heartbeats from client, timeout: 60s"
    assert not broker.connections


def test_each_step_of_the_opening_may_take_ten_seconds() -> None:
    # rabbit_stream_reader: a state_timeout of connection_negotiation_step_timeout (10_000 ms)
    # on entering each state of the opening; at the end the socket closes, with no frame
    clock = ManualClock()
    p = Peer(Broker(clock=clock))
    clock.advance(9.9)
    p.conn.tick()
    p.send(p.request(Key.PEER_PROPERTIES).properties({}).frame())
    clock.advance(9.9)
    p.conn.tick()
    assert p.conn.state is State.SASL_HANDSHAKE
    clock.advance(0.1)
    p.conn.tick()
    assert (p.conn.state, p.conn.should_close, p.received()) == (State.CLOSED, True, [])
    assert p.conn.close_reason == ("timeout in state 'sasl-handshake', likely due to lack of "
                                   "client action")


def test_a_restart_drops_stream_connections_without_a_frame() -> None:
    _clock, broker, p = _opened(0)
    broker.restart()
    assert (p.conn.state, p.conn.should_close, p.received()) == (State.CLOSED, True, [])
    assert not broker.connections
    assert len(broker.transports) == 0


def test_a_deleted_vhost_drops_its_stream_connections_without_a_frame() -> None:
    _clock, broker, p = _opened(0)
    broker.delete_vhost("/")
    assert (p.conn.state, p.conn.close_reason, p.received()) == (
        State.CLOSED, "CONNECTION_FORCED - vhost '/' is deleted", [])


def _closed_without_a_frame(sock: socket.socket) -> bool:
    sock.settimeout(5)
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
    return data == b""


def test_the_listener_closes_the_sockets_of_stream_connections_the_broker_closes() -> None:
    broker = Broker()
    with broker.serve(stream_port=0, management=True) as server:
        assert server.stream_port is not None
        restarted, deleted = RawClient("127.0.0.1", server.stream_port), \
            RawClient("127.0.0.1", server.stream_port)
        restarted.open()
        broker.restart()
        assert _closed_without_a_frame(restarted.sock)
        deleted.open()
        status, listed = Api(server)("GET", "/connections")
        assert (status, len(listed)) == (200, 1)
        assert Api(server)("DELETE", "/connections/" + urllib.parse.quote(
            listed[0]["name"], safe=""))[0] == 204
        assert _closed_without_a_frame(deleted.sock)
        assert _wait(lambda: not broker.connections), broker.connections
        assert not server.errors, server.errors


def test_the_event_exchange_says_a_stream_connection_speaks_stream() -> None:
    # rabbit_stream_reader's i(protocol, _, _) is <<"stream">> in its connection_created infos
    broker = Broker(plugins=["rabbitmq_event_exchange"])
    ch = broker.connect().channel()
    q = ch.queue_declare("", exclusive=True).queue
    ch.queue_bind(q, "amq.rabbitmq.event", "connection.created")
    Peer(broker).open()
    created = ch.basic_get(q, auto_ack=True)
    assert created is not None
    assert created.properties["headers"]["protocol"] == "stream"


def test_the_listener_holds_a_bounded_output_for_a_client_that_reads_nothing() -> None:
    """8 subscriptions on a 3 MiB stream, credit for all of it, a client that reads nothing:
    the listener holds about MAX_UNSENT for it (not 8 x 3 MiB); then it reads, and gets every
    chunk of every subscription in order."""
    broker = Broker()
    subscriptions, chunks = 8, 48
    stream_of(broker, chunks)  # (of 64 KiB each)
    with broker.serve(stream_port=0) as server:
        assert server.stream_port is not None
        raw = RawClient("127.0.0.1", server.stream_port)
        raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        raw.open()
        for subscription in range(subscriptions):
            raw.sock.sendall(raw.request(Key.SUBSCRIBE).uint8(subscription).string("s")
                             .uint16(1).uint16(1000).properties({}).frame())
        log = broker.queues["s"].stream
        assert log is not None
        assert _wait(lambda: len(log.readers) == subscriptions)
        held = server._on_loop(lambda: sum(len(c.wbuf) for c in server._http_clients.values()),
                               5)
        assert held <= MAX_UNSENT + CHUNK_BODY + 100
        delivered: dict[int, list[int]] = {}
        while sum(map(len, delivered.values())) < subscriptions * chunks:
            key, frame = raw.next()
            if key == Key.DELIVER:
                delivered.setdefault(frame[0], []).append(int.from_bytes(frame[25:33], "big"))
        assert delivered == {s: list(range(chunks)) for s in range(subscriptions)}
        raw.close()
        assert not server.errors, server.errors


def test_half_sent_frames_before_login_are_refused_at_their_header_and_hold_nothing() -> None:
    """The issue's probe: 50 clients each send the header of a 1 MiB frame and most of its
    body, before any login. Each is refused (FRAME_TOO_LARGE) as soon as its size is read and
    closed; the listener keeps none of the bodies. (Before: +49 MiB for `embroker serve`.)"""
    broker = Broker()
    with broker.serve(stream_port=0) as server:
        assert server.stream_port is not None
        socks = []
        for _ in range(50):
            sock = socket.create_connection(("127.0.0.1", server.stream_port))
            sock.setblocking(False)
            with contextlib.suppress(OSError):  # (refused and closed before it all went)
                sock.send(struct.pack(">IHHI", 1_048_576, Key.PEER_PROPERTIES, 1, 1)
                          + bytes(600_000))
            socks.append(sock)
        assert _wait(lambda: not server._on_loop(lambda: [
            c for c in server._http_clients.values() if c.port is not None
            and c.port.kind == "stream"]))
        for sock in socks:
            sock.setblocking(True)
            sock.settimeout(5)
            try:
                head = sock.recv(10)
            except ConnectionResetError:
                head = b""
            assert head == b"" or head[4:6] == b"\x00\x16", head  # a Close, or reset
            sock.close()
        assert not server.errors, server.errors
