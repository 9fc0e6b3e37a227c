"""The loop's pause for a streaming client: when a select finds a client's bytes waiting already
(it returned at once), the loop sleeps ``_BATCH_PAUSE`` before reading, and steps twice as long
each time while the client keeps sending, so that a client in the same process, which hands over
the interpreter lock at every send(), gets to write many frames for one read
(benchmarks/pipelined.py shows what it is worth). The loop's turns are driven from this thread;
which selects count as quick is set by hand, and what the client sends "meanwhile" is sent from
the recording sleep, so nothing here depends on timing.

The loop's hold for a consumer's acks (``_hold``): a select finds acks from a client that still
holds deliveries unacked; the loop looks again after a step and sleeps for the rest of half of
them at the pace they came."""

from __future__ import annotations

import os
import selectors
import socket
import threading
import time
from collections.abc import Iterator

import pytest

import embroker.server as server_module
from embroker import Broker
from embroker.amqp091 import (
    PROTOCOL_HEADER,
    FrameParser,
    encode_message,
    encode_method_frame,
    methods,
)
from embroker.server import Server

#: What the client sends while the loop sleeps (the next one each time), for the hold's tests.
during_sleeps: list[bytes] = []


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Server, socket.socket, list[float]]]:
    pauses: list[float] = []
    sleep = time.sleep
    during_sleeps.clear()

    def recording_sleep(seconds: float) -> None:
        if threading.get_ident() == server._loop_ident:
            pauses.append(seconds)
            if during_sleeps:
                _send(server, client, during_sleeps.pop(0))
        sleep(seconds)

    server = Server(Broker())
    server._prepare()
    server._loop_ident = threading.get_ident()
    monkeypatch.setattr(time, "sleep", recording_sleep)  # (the loop calls time.sleep)
    client = socket.create_connection(("127.0.0.1", server.port))
    server._turn(time.monotonic() + 5)  # the accept
    yield server, client, pauses
    client.close()
    server.stop()


def _turn(server: Server) -> None:
    server._turn(time.monotonic() + 5)


@pytest.mark.parametrize(("streaming", "paused"), [
    (3600.0, True),  # every select counts as quick: the bytes were waiting, a pause first
    (0.0, False),  # no select counts as quick: the loop had to wait for them, no pause
], ids=["bytes-were-waiting", "loop-waited-for-them"])
def test_a_client_gets_a_pause_before_the_read_only_when_its_bytes_were_waiting(
        rig: tuple[Server, socket.socket, list[float]], monkeypatch: pytest.MonkeyPatch,
        streaming: float, paused: bool) -> None:
    server, client, pauses = rig
    monkeypatch.setattr(server_module, "_STREAMING", streaming)
    client.sendall(PROTOCOL_HEADER)
    _turn(server)
    assert pauses == ([server_module._BATCH_PAUSE] if paused else [])
    assert client.recv(4096).startswith(b"\x01\x00\x00")  # and the read was served: start


def test_a_client_that_keeps_sending_gets_steps_twice_as_long_up_to_the_most(
        rig: tuple[Server, socket.socket, list[float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, client, pauses = rig
    monkeypatch.setattr(server_module, "_STREAMING", 3600.0)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    _send(server, client, PROTOCOL_HEADER[:2])
    during_sleeps.extend([PROTOCOL_HEADER[2:4], PROTOCOL_HEADER[4:6], PROTOCOL_HEADER[6:]])
    _turn(server)
    step, most = server_module._BATCH_PAUSE, server_module._HOLD_MAX
    assert pauses == [step, 2 * step, 4 * step, pytest.approx(most - 7 * step)]
    assert client.recv(4096).startswith(b"\x01\x00\x00")  # the whole header: start


def test_no_pause_for_what_is_not_a_client_or_when_the_pause_is_off(
        rig: tuple[Server, socket.socket, list[float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, client, pauses = rig
    monkeypatch.setattr(server_module, "_STREAMING", 3600.0)
    second = socket.create_connection(("127.0.0.1", server.port))  # the listening socket
    _turn(server)
    server._wake()  # the loop's own wake-up socket
    _turn(server)
    assert pauses == []
    monkeypatch.setattr(server_module, "_BATCH_PAUSE", 0.0)
    client.sendall(PROTOCOL_HEADER)
    _turn(server)
    assert pauses == []
    second.close()


@pytest.mark.parametrize(("sent_meanwhile", "pauses_taken"), [
    (b"", []),  # it waits for an answer: read at once, no pause
    (PROTOCOL_HEADER[4:], [server_module._BATCH_PAUSE]),  # it writes on: the steps follow
], ids=["client-waits-for-an-answer", "client-still-writing"])
def test_on_one_cpu_the_loop_gives_the_cpu_away_before_it_pauses_for_a_client(
        rig: tuple[Server, socket.socket, list[float]], monkeypatch: pytest.MonkeyPatch,
        sent_meanwhile: bytes, pauses_taken: list[float]) -> None:
    # On one CPU a client in the listener's process has written all it could before the loop
    # runs: every select answers at once, for a client that waits for each answer too.
    server, client, pauses = rig
    monkeypatch.setattr(server_module, "_STREAMING", 3600.0)
    server._one_cpu = True
    yields: list[None] = []

    def recording_yield() -> None:
        yields.append(None)
        if sent_meanwhile:
            _send(server, client, sent_meanwhile)

    monkeypatch.setattr(os, "sched_yield", recording_yield)
    _send(server, client, PROTOCOL_HEADER[:4])
    _turn(server)
    assert len(yields) == 1
    assert pauses == pauses_taken
    if not sent_meanwhile:
        _send(server, client, PROTOCOL_HEADER[4:])
        _turn(server)
    assert client.recv(4096).startswith(b"\x01\x00\x00")  # the whole header: start


def test_the_loop_knows_whether_its_thread_may_run_on_one_cpu_only() -> None:
    if not hasattr(os, "sched_getaffinity"):
        assert server_module._on_one_cpu() is False
        return
    assert server_module._on_one_cpu() is (len(os.sched_getaffinity(0)) == 1)
    server = Server(Broker()).start()
    try:
        assert server._one_cpu is (len(os.sched_getaffinity(0)) == 1)  # (its thread's, inherited)
    finally:
        server.stop()


# -- the hold for a consumer's acks ----------------------------------------------------------


def _send(server: Server, client: socket.socket, data: bytes) -> None:
    """Send ``data`` and wait until the server's side of the socket has all of it waiting
    (loopback: at once), so that what the loop counts there does not depend on timing."""
    accepted = next(iter(server._clients.values())).sock
    wanted = server_module._waiting(accepted) + len(data)
    client.sendall(data)
    deadline = time.monotonic() + 5
    while server_module._waiting(accepted) < wanted and time.monotonic() < deadline:
        time.sleep(0.001)


def _frames(server: Server, client: socket.socket, parser: FrameParser) -> list[object]:
    client.setblocking(False)
    try:
        while True:
            _turn(server)
            try:
                found: list[object] = list(parser.feed(client.recv(1 << 20)))
            except BlockingIOError:
                continue
            if found:
                return found
    finally:
        client.setblocking(True)


def _ack(tag: int) -> bytes:
    return encode_method_frame(1, methods.BasicAck(delivery_tag=tag))


def _publish(body: bytes = b"m") -> bytes:
    return encode_message(1, methods.BasicPublish(routing_key="q"), body, 131072)


@pytest.fixture
def publisher(rig: tuple[Server, socket.socket, list[float]],
              monkeypatch: pytest.MonkeyPatch) -> tuple[Server, socket.socket, list[float]]:
    """``rig``'s client with channel 1 open and queue ``q`` declared; no select counts as
    quick, so only what the client's last read held can make the loop pause."""
    server, client, pauses = rig
    monkeypatch.setattr(server_module, "_STREAMING", 0.0)  # no select counts as quick
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # (as clients do: no Nagle)
    parser = FrameParser(max_frame_size=131072)
    for frame in (
            PROTOCOL_HEADER,
            encode_method_frame(0, methods.ConnectionStartOk(
                client_properties={}, mechanism="PLAIN", response="\0guest\0guest",
                locale="en_US")),
            encode_method_frame(0, methods.ConnectionTuneOk(channel_max=10, frame_max=131072,
                                                            heartbeat=0))
            + encode_method_frame(0, methods.ConnectionOpen(virtual_host="/")),
            encode_method_frame(1, methods.ChannelOpen()),
            encode_method_frame(1, methods.QueueDeclare(queue="q"))):
        client.sendall(frame)
        _frames(server, client, parser)
    pauses.clear()
    return server, client, pauses


@pytest.fixture
def consumer(publisher: tuple[Server, socket.socket, list[float]],
             ) -> tuple[Server, socket.socket, list[float]]:
    """``publisher``'s client consuming 10 messages at prefetch 10: deliveries 1-10 unacked."""
    server, client, pauses = publisher
    parser = FrameParser(max_frame_size=131072)
    client.sendall(_publish() * 10 + encode_method_frame(1, methods.BasicQos(prefetch_count=10)))
    _frames(server, client, parser)  # (basic.qos-ok)
    client.sendall(encode_method_frame(1, methods.BasicConsume(queue="q", consumer_tag="c")))
    delivered = 0
    while delivered < 10:
        delivered += sum(isinstance(getattr(f, "method", None), methods.BasicDeliver)
                         for f in _frames(server, client, parser))
    pauses.clear()
    return server, client, pauses


def _unacked(server: Server) -> int:
    return server.broker.connections[1].consumer_unacked()


def test_a_consumer_with_deliveries_in_hand_is_held_for_half_of_its_acks_at_its_pace(
        consumer: tuple[Server, socket.socket, list[float]]) -> None:
    server, client, pauses = consumer
    _send(server, client, _ack(1))
    during_sleeps.append(_ack(2))  # one ack in the step: 3 more to wait for, at that pace
    _turn(server)
    step = server_module._HOLD_STEP
    assert pauses == [step, pytest.approx(3 * step)]
    assert _unacked(server) == 8  # and what came was read in that turn


@pytest.mark.parametrize(("acked", "steps", "left"), [
    (range(1, 2), 1, 9),  # one ack, and nothing more in the step: read then
    (range(1, 6), 0, 5),  # half of them waiting already: no hold
], ids=["nothing-more-in-the-step", "half-waiting-already"])
def test_a_consumer_is_read_at_once_when_no_more_acks_come_or_half_are_waiting(
        consumer: tuple[Server, socket.socket, list[float]], acked: range, steps: int,
        left: int) -> None:
    server, client, pauses = consumer
    _send(server, client, b"".join(_ack(tag) for tag in acked))
    _turn(server)
    assert pauses == [server_module._HOLD_STEP] * steps
    assert _unacked(server) == left


def test_no_hold_for_a_consumer_with_one_delivery_in_hand(
        consumer: tuple[Server, socket.socket, list[float]]) -> None:
    server, client, pauses = consumer
    _send(server, client, b"".join(_ack(tag) for tag in range(1, 10)))
    _turn(server)
    pauses.clear()
    _send(server, client, _ack(10))  # the last one in hand: a round trip each from here
    _turn(server)
    assert pauses == []
    assert _unacked(server) == 0


def test_a_consumer_that_streams_gets_the_hold_not_the_pause_for_streaming_clients(
        consumer: tuple[Server, socket.socket, list[float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, client, pauses = consumer
    monkeypatch.setattr(server_module, "_STREAMING", 3600.0)  # every select counts as quick
    _send(server, client, _ack(1))
    _turn(server)
    assert pauses == [server_module._HOLD_STEP]


def test_a_consumer_that_publishes_gets_the_pause_for_streaming_clients(
        consumer: tuple[Server, socket.socket, list[float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Its bytes count as more acks than half of its deliveries: they are publishes (a kombu
    # worker's connection publishes and consumes), which the hold's count cannot tell apart.
    server, client, pauses = consumer
    monkeypatch.setattr(server_module, "_STREAMING", 3600.0)
    _send(server, client, encode_message(1, methods.BasicPublish(routing_key="q"), b"m" * 200,
                                         131072))
    _turn(server)
    assert pauses == [server_module._BATCH_PAUSE]


def test_a_consumer_ready_only_for_writing_is_not_held(
        consumer: tuple[Server, socket.socket, list[float]]) -> None:
    server, _client, pauses = consumer
    accepted = next(iter(server._clients.values()))
    key = server._selector.get_key(accepted.sock)
    assert server._hold([(key, selectors.EVENT_WRITE)]) is False  # (its output waits: no acks)
    assert pauses == []


def test_without_a_count_of_waiting_bytes_the_loop_pauses_once_and_holds_nobody(
        consumer: tuple[Server, socket.socket, list[float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # (Windows has no FIONREAD: the fixed pause for a streaming client, as before the steps)
    server, client, pauses = consumer
    _send(server, client, _ack(1))
    monkeypatch.setattr(server_module, "ioctl", None)
    monkeypatch.setattr(server_module, "_STREAMING", 3600.0)
    _turn(server)
    assert pauses == [server_module._BATCH_PAUSE]
    assert _unacked(server) == 9


# -- a client that pipelines, seen from its last read ------------------------------------------


@pytest.mark.parametrize(("first_read", "paused"), [
    (_publish() * 3, True),  # three publishes and no answer: it pipelines
    (_publish(), False),  # one: it may wait for each answer (a paced client)
    (encode_method_frame(1, methods.TxSelect()) + _publish() * 2, False),  # answered: tx.select-ok
], ids=["several-publishes", "one-publish", "answered"])
def test_a_client_whose_last_read_held_several_commands_unanswered_gets_the_pause(
        publisher: tuple[Server, socket.socket, list[float]], first_read: bytes,
        paused: bool) -> None:
    # The loop waited for its bytes each time (no quick select): a client in the listener's
    # process whose writes reach the loop a few at a time, each wake-up later than the last.
    server, client, pauses = publisher
    _send(server, client, first_read)
    _turn(server)
    assert pauses == []
    _send(server, client, _publish())
    _turn(server)
    assert pauses == ([server_module._BATCH_PAUSE] if paused else [])


def test_without_a_count_of_waiting_bytes_a_client_that_pipelines_is_read_at_once(
        publisher: tuple[Server, socket.socket, list[float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # (Windows: the loop cannot look at what waits, so only a quick select means streaming)
    server, client, pauses = publisher
    _send(server, client, _publish() * 3)
    _turn(server)
    _send(server, client, _publish())
    monkeypatch.setattr(server_module, "ioctl", None)
    _turn(server)
    assert pauses == []
    assert server.broker.queues["q"].message_count == 4


@pytest.mark.parametrize("command", [
    encode_method_frame(1, methods.QueueDeclare(queue="q", passive=True)),
    _publish() + encode_method_frame(1, methods.BasicGet(queue="q")),
], ids=["declare-after-a-burst", "publish-then-get"])
def test_a_pipelining_client_is_read_at_once_when_it_ends_with_a_command_it_may_wait_on(
        publisher: tuple[Server, socket.socket, list[float]], command: bytes) -> None:
    server, client, pauses = publisher
    _send(server, client, _publish() * 3)
    _turn(server)
    _send(server, client, command)
    _turn(server)
    assert pauses == []
    assert client.recv(4096)  # and it was answered in that turn


@pytest.mark.parametrize(("waiting", "ends_in_command"), [
    (encode_method_frame(1, methods.TxCommit()), True),
    (_publish() + encode_method_frame(1, methods.BasicGet(queue="q")), True),
    (_publish(), False),  # content last: a publisher still going
    (encode_method_frame(1, methods.BasicPublish(routing_key="q")), False),  # its header to come
    (encode_method_frame(1, methods.TxCommit())[:-3], False),  # a frame still coming
    (_publish(b"m" * 5000), False),  # more than the loop looks at: still streaming
    (b"", False),
], ids=["commit", "publish-then-get", "publish", "publish-method-only", "half-a-frame",
        "over-the-peek", "nothing"])
def test_what_a_client_wrote_ends_in_a_command_when_its_last_whole_frame_is_a_method_not_publish(
        waiting: bytes, ends_in_command: bool) -> None:
    left, right = socket.socketpair()
    with left, right:
        if waiting:
            left.sendall(waiting)
        assert server_module._ends_in_command(right) is ends_in_command
        assert server_module._waiting(right) == len(waiting)  # (looked at, not read)
