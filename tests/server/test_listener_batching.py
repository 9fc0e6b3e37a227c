"""The listener's batching policy (embroker._batching.BatchingPolicy), driven through the loop.

A client whose last read went unanswered, and whose bytes were waiting already when the select
answered (a quick select), or that pipelines, is let go on writing before the loop reads it: a
pause of ``pause_step``, and steps twice as long while it keeps sending, so that a client in the
same process, which hands over the interpreter lock at every send(), gets to write many frames
for one read (benchmarks/pipelined.py shows what it is worth). A client whose last read was
answered may be waiting for the next answer: it is read at once, and before any pause taken for
another client. The loop's turns are driven from this thread with the policy's clock a recorder
(:class:`RecordingPacer`); which selects count as quick is set by hand (``streaming``), and what
a client sends "meanwhile" is sent from the recording sleep, so nothing here depends on timing.

The hold for a consumer's acks: a select finds acks from a client that still holds deliveries
unacked; the loop looks again after a step and sleeps for the rest of half of them at the pace
they came."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from embroker import Broker
from embroker._batching import BatchingPolicy, ends_in_command, on_one_cpu, waiting
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


class RecordingPacer:
    """The policy's clock: records each pause (and runs ``on_sleep`` first); sleeps for real
    only as long as loopback takes to move what was sent meanwhile (nothing, here)."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self.yields = 0
        self.on_sleep: Callable[[], None] | None = None
        self.on_yield: Callable[[], None] | None = None

    def perf_counter(self) -> float:
        return time.perf_counter()

    def sleep(self, seconds: float) -> None:
        if self.on_sleep is not None:
            self.on_sleep()
        self.pauses.append(seconds)

    def sched_yield(self) -> None:
        self.yields += 1
        if self.on_yield is not None:
            self.on_yield()


@pytest.fixture
def rig() -> Iterator[tuple[Server, socket.socket, list[float]]]:
    pacer = RecordingPacer()
    server = Server(Broker(), batching=BatchingPolicy(pacer=pacer))
    server._prepare()
    server._loop_ident = threading.get_ident()
    client = socket.create_connection(("127.0.0.1", server.port))

    def send_meanwhile() -> None:
        if during_sleeps:
            _send(server, client, during_sleeps.pop(0))

    during_sleeps.clear()
    pacer.on_sleep = send_meanwhile
    server._turn(time.monotonic() + 5)  # the accept
    yield server, client, pacer.pauses
    client.close()
    server.stop()


def _turn(server: Server) -> None:
    server._turn(time.monotonic() + 5)


def _policy(server: Server) -> BatchingPolicy:
    return server.batching


def _send(server: Server, client: socket.socket, data: bytes) -> None:
    """Send ``data`` and wait until the server's side of the socket has all of it waiting
    (loopback: at once), so that what the loop counts there does not depend on timing."""
    accepted = _accepted(server, client)
    wanted = waiting(accepted) + len(data)
    client.sendall(data)
    deadline = time.monotonic() + 5
    while waiting(accepted) < wanted and time.monotonic() < deadline:
        time.sleep(0.001)


def _accepted(server: Server, client: socket.socket) -> socket.socket:
    """The listener's side of ``client``."""
    name = client.getsockname()
    sock = next(c.sock for c in server._clients.values() if c.sock.getpeername() == name)
    assert isinstance(sock, socket.socket)  # (a plain port: no TLS)
    return sock


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


def _open(server: Server, client: socket.socket, *, confirms: bool = False) -> None:
    """Take ``client`` through the handshake, open channel 1 and declare queue ``q`` (and
    put the channel in confirm mode); every select counts as slow while it does."""
    streaming, _policy(server).streaming = _policy(server).streaming, 0.0
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # (as clients do: no Nagle)
    parser = FrameParser(max_frame_size=131072)
    frames = [
        PROTOCOL_HEADER,
        encode_method_frame(0, methods.ConnectionStartOk(
            client_properties={}, mechanism="PLAIN", response="\0guest\0guest",
            locale="en_US")),
        encode_method_frame(0, methods.ConnectionTuneOk(channel_max=10, frame_max=131072,
                                                        heartbeat=0))
        + encode_method_frame(0, methods.ConnectionOpen(virtual_host="/")),
        encode_method_frame(1, methods.ChannelOpen()),
        encode_method_frame(1, methods.QueueDeclare(queue="q"))]
    if confirms:
        frames.append(encode_method_frame(1, methods.ConfirmSelect()))
    for frame in frames:
        client.sendall(frame)
        _frames(server, client, parser)
    _policy(server).streaming = streaming


@pytest.fixture
def publisher(rig: tuple[Server, socket.socket, list[float]],
              ) -> tuple[Server, socket.socket, list[float]]:
    """``rig``'s client with channel 1 open and queue ``q`` declared, whose last read was
    one publish (unanswered: it may stream); no select counts as quick."""
    server, client, pauses = rig
    _open(server, client)
    _policy(server).streaming = 0.0
    _send(server, client, _publish())
    _turn(server)
    pauses.clear()
    return server, client, pauses


# -- a client that streams, seen from a quick select -------------------------------------------


@pytest.mark.parametrize(("streaming", "paused"), [
    (3600.0, True),  # every select counts as quick: the bytes were waiting, a pause first
    (0.0, False),  # no select counts as quick: the loop had to wait for them, no pause
], ids=["bytes-were-waiting", "loop-waited-for-them"])
def test_an_unanswered_client_gets_a_pause_before_the_read_only_when_its_bytes_were_waiting(
        publisher: tuple[Server, socket.socket, list[float]], streaming: float,
        paused: bool) -> None:
    server, client, pauses = publisher
    _policy(server).streaming = streaming
    _send(server, client, _publish())
    _turn(server)
    assert pauses == ([_policy(server).pause_step] if paused else [])
    assert server.broker.queues["q"].message_count == 2  # and the read was served


def test_a_client_waiting_for_its_answer_is_read_at_once_however_quick_the_select(
        rig: tuple[Server, socket.socket, list[float]]) -> None:
    # A publish on a confirming channel is answered (basic.ack): the client may wait for each
    # one, as pika's BlockingChannel does. Before the policy knew, a busy machine made every
    # select look quick, and each confirm waited for a pause: 0.37x RabbitMQ's rate.
    server, client, pauses = rig
    _open(server, client, confirms=True)
    _policy(server).streaming = 3600.0  # every select counts as quick
    parser = FrameParser(max_frame_size=131072)
    for tag in (1, 2, 3):
        _send(server, client, _publish())
        (ack,) = _frames(server, client, parser)
        assert ack.method == methods.BasicAck(delivery_tag=tag)  # type: ignore[attr-defined]
    assert pauses == []


def test_a_request_written_in_pieces_by_a_client_waiting_for_its_answer_is_read_at_once(
        rig: tuple[Server, socket.socket, list[float]]) -> None:
    # pika writes a publish's method, header and body frames one send() each: the loop, handed
    # the interpreter lock at the first, reads a part of the command, which gets no answer. That
    # read says nothing of the client, which still waits for each confirm: no pause for the rest
    # (before, 2 pauses a message when the machine was busy: 0.35x RabbitMQ's rate).
    server, client, pauses = rig
    _open(server, client, confirms=True)
    policy = _policy(server)
    parser = FrameParser(max_frame_size=131072)
    frame = _publish()
    for tag in (1, 2):
        policy.streaming = 0.0
        _send(server, client, frame[:12])  # (the method frame's first bytes)
        _turn(server)
        policy.streaming = 3600.0  # the rest was waiting already
        _send(server, client, frame[12:])
        (ack,) = _frames(server, client, parser)
        assert ack.method == methods.BasicAck(delivery_tag=tag)  # type: ignore[attr-defined]
    assert pauses == []


def test_a_client_that_keeps_sending_gets_steps_twice_as_long_up_to_the_most(
        publisher: tuple[Server, socket.socket, list[float]]) -> None:
    server, client, pauses = publisher
    policy = _policy(server)
    policy.streaming = 3600.0
    frame = _publish()
    _send(server, client, frame[:5])
    during_sleeps.extend([frame[5:10], frame[10:15], frame[15:]])
    _turn(server)
    step, most = policy.pause_step, policy.hold_max
    assert pauses == [step, 2 * step, 4 * step, pytest.approx(most - 7 * step)]
    assert server.broker.queues["q"].message_count == 2  # the whole publish, in one read


def test_no_pause_for_what_is_not_a_client_or_when_batching_is_off(
        publisher: tuple[Server, socket.socket, list[float]]) -> None:
    server, client, pauses = publisher
    _policy(server).streaming = 3600.0
    second = socket.create_connection(("127.0.0.1", server.port))  # the listening socket
    _turn(server)
    server._wake()  # the loop's own wake-up socket
    _turn(server)
    assert pauses == []
    _policy(server).enabled = False
    _send(server, client, _publish())
    _turn(server)
    assert pauses == []
    assert server.broker.queues["q"].message_count == 2
    second.close()


@pytest.mark.parametrize(("sent_meanwhile", "pauses_taken"), [
    (False, []),  # it waits for an answer: read at once, no pause
    (True, [BatchingPolicy.pause_step]),  # it writes on: the steps follow
], ids=["client-waits-for-an-answer", "client-still-writing"])
def test_on_one_cpu_the_loop_gives_the_cpu_away_before_it_pauses_for_a_client(
        publisher: tuple[Server, socket.socket, list[float]], sent_meanwhile: bool,
        pauses_taken: list[float]) -> None:
    # On one CPU a client in the listener's process has written all it could before the loop
    # runs: every select answers at once, for a client that waits for each answer too.
    server, client, pauses = publisher
    policy = _policy(server)
    policy.streaming = 3600.0
    policy.one_cpu = True
    pacer = policy.pacer
    assert isinstance(pacer, RecordingPacer)
    frame = _publish()
    if sent_meanwhile:
        pacer.on_yield = lambda: _send(server, client, frame[6:])
    _send(server, client, frame[:6])
    _turn(server)
    assert pacer.yields == 1
    assert pauses == pauses_taken
    if not sent_meanwhile:
        _send(server, client, frame[6:])
        _turn(server)
    assert server.broker.queues["q"].message_count == 2


def test_the_loop_knows_whether_its_thread_may_run_on_one_cpu_only() -> None:
    if not hasattr(os, "sched_getaffinity"):
        assert on_one_cpu() is False
        return
    assert on_one_cpu() is (len(os.sched_getaffinity(0)) == 1)
    server = Server(Broker()).start()
    try:
        assert server.batching.one_cpu is (len(os.sched_getaffinity(0)) == 1)  # (inherited)
    finally:
        server.stop()


# -- two clients on one loop -------------------------------------------------------------------


def test_a_request_response_client_is_answered_before_the_pause_for_a_pipelining_one(
        rig: tuple[Server, socket.socket, list[float]]) -> None:
    # The round trip of a client that waits for each confirm, sharing the loop with one that
    # streams publishes: both are ready in one turn; the confirm is written before the loop
    # pauses for the streamer, so no pause is ever part of its round trip.
    server, streamer, pauses = rig
    confirming = socket.create_connection(("127.0.0.1", server.port))
    _turn(server)  # (its accept)
    _open(server, streamer)
    _open(server, confirming, confirms=True)
    policy = _policy(server)
    policy.streaming = 0.0
    _send(server, streamer, _publish())  # (unanswered: it streams)
    _turn(server)
    pacer = policy.pacer
    assert isinstance(pacer, RecordingPacer)
    answered_before_pause: list[bool] = []

    def look() -> None:
        if not answered_before_pause:
            waiting_for_it = waiting(confirming)  # (the ack, written to its socket already?)
            answered_before_pause.append(waiting_for_it > 0)

    pacer.on_sleep = look
    policy.streaming = 3600.0  # both selects quick: the streamer's bytes were waiting
    for round_trip in range(1, 4):
        _send(server, streamer, _publish() * 2)
        _send(server, confirming, _publish())
        _turn(server)
        assert answered_before_pause == [True]
        (ack,) = FrameParser(max_frame_size=131072).feed(confirming.recv(4096))
        assert ack.method == methods.BasicAck(delivery_tag=round_trip)
        answered_before_pause.clear()
    assert len(pauses) == 3  # one pause a turn, for the streamer alone
    assert server.broker.queues["q"].message_count == 1 + 6 + 3
    confirming.close()


# -- the hold for a consumer's acks ----------------------------------------------------------


@pytest.fixture
def consumer(rig: tuple[Server, socket.socket, list[float]],
             ) -> tuple[Server, socket.socket, list[float]]:
    """``rig``'s client consuming 10 messages at prefetch 10: deliveries 1-10 unacked; no
    select counts as quick."""
    server, client, pauses = rig
    _open(server, client)
    _policy(server).streaming = 0.0
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
    step = _policy(server).hold_step
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
    assert pauses == [_policy(server).hold_step] * steps
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
        consumer: tuple[Server, socket.socket, list[float]]) -> None:
    server, client, pauses = consumer
    _policy(server).streaming = 3600.0  # every select counts as quick
    _send(server, client, _ack(1))
    _turn(server)
    assert pauses == [_policy(server).hold_step]


def test_a_consumer_whose_bytes_are_publishes_is_not_held_for_acks(
        consumer: tuple[Server, socket.socket, list[float]]) -> None:
    # Its bytes count as more acks than half of its deliveries: they are publishes (a kombu
    # worker's connection publishes and consumes), which the hold's count cannot tell apart:
    # its last read was answered (deliveries), so it is read at once.
    server, client, pauses = consumer
    _policy(server).streaming = 3600.0
    _send(server, client, _publish(b"m" * 200))
    _turn(server)
    assert pauses == []
    _send(server, client, _publish(b"m" * 200))  # its last read went unanswered: it streams
    _turn(server)
    assert pauses == [_policy(server).pause_step]


def test_without_a_count_of_waiting_bytes_the_loop_pauses_once_and_holds_nobody(
        consumer: tuple[Server, socket.socket, list[float]]) -> None:
    # (Windows has no FIONREAD: the fixed pause for a streaming client, as before the steps)
    server, client, pauses = consumer
    _send(server, client, _ack(1))
    policy = _policy(server)
    policy.waiting = None
    policy.streaming = 3600.0
    _turn(server)
    assert pauses == []  # (acks: its last read was answered; no hold without a count)
    assert _unacked(server) == 9
    _send(server, client, _ack(2))  # (ack 1 was answered with nothing: it streams)
    _turn(server)
    assert pauses == [policy.pause_step]
    assert _unacked(server) == 8


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
    assert pauses == ([_policy(server).pause_step] if paused else [])


def test_without_a_count_of_waiting_bytes_a_client_that_pipelines_is_read_at_once(
        publisher: tuple[Server, socket.socket, list[float]]) -> None:
    # (Windows: the loop cannot look at what waits, so only a quick select means streaming)
    server, client, pauses = publisher
    _send(server, client, _publish() * 3)
    _turn(server)
    _send(server, client, _publish())
    _policy(server).waiting = None
    _turn(server)
    assert pauses == []
    assert server.broker.queues["q"].message_count == 5


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


@pytest.mark.parametrize(("waiting_bytes", "ends"), [
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
        waiting_bytes: bytes, ends: bool) -> None:
    left, right = socket.socketpair()
    with left, right:
        if waiting_bytes:
            left.sendall(waiting_bytes)
        assert ends_in_command(right) is ends
        assert waiting(right) == len(waiting_bytes)  # (looked at, not read)
