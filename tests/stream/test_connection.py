"""The stream protocol's connection without sockets: bytes in, bytes out (PROTOCOL.adoc of
RabbitMQ 3.10.8, deps/rabbitmq_stream/docs); hostile bytes close one connection, never raise."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embroker import Broker
from embroker.amqp10 import encode_value, parse_message
from embroker.stream import (
    EXPECTED,
    Code,
    Fields,
    FrameReader,
    Key,
    State,
    StreamConnection,
    StreamProtocolError,
    Writer,
    response_key,
)


def amqp_body(text: bytes) -> bytes:
    """An AMQP 1.0 message of one data section."""
    return b"\x00\x53\x75" + bytes(encode_value(text))


class Peer:
    """A byte-level stream client of a :class:`StreamConnection`."""

    def __init__(self, broker: Broker) -> None:
        self.conn = StreamConnection(broker, peer="test", advertised_host="127.0.0.1",
                                     advertised_port=5552)
        self.reader = FrameReader(0)
        self.corr = 0
        #: The correlation id of the last ConsumerUpdate the server sent (0: none).
        self.corr_asked = 0

    def send(self, frame: bytes) -> list[tuple[int, Fields]]:
        self.conn.receive_data(frame)
        return self.received()

    def received(self) -> list[tuple[int, Fields]]:
        self.reader.feed(self.conn.data_to_send())
        out = []
        while (frame := self.reader.next_frame()) is not None:
            out.append((frame[0], Fields(frame[2])))
        return out

    def request(self, key: int) -> Writer:
        self.corr += 1
        return Writer(key).uint32(self.corr)

    def open(self, user: str = "guest", password: str = "guest") -> None:
        self.send(self.request(Key.PEER_PROPERTIES).properties({"product": "test"}).frame())
        self.send(self.request(Key.SASL_HANDSHAKE).frame())
        replies = self.send(self.request(Key.SASL_AUTHENTICATE).string("PLAIN")
                            .bytes_(f"\0{user}\0{password}".encode()).frame())
        assert [k for k, _ in replies] == [response_key(Key.SASL_AUTHENTICATE), Key.TUNE]
        self.send(Writer(Key.TUNE).uint32(1_048_576).uint32(0).frame())
        (opened,) = self.send(self.request(Key.OPEN).string("/").frame())
        assert opened[0] == response_key(Key.OPEN)
        assert self.conn.state is State.OPENED


def ok(reply: tuple[int, Fields], key: int) -> Fields:
    frame_key, fields = reply
    assert frame_key == response_key(key)
    fields.uint32()
    assert fields.uint16() == Code.OK
    return fields


@pytest.fixture
def broker() -> Broker:
    b = Broker()
    b.connect().channel().queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    return b


@pytest.fixture
def peer(broker: Broker) -> Peer:
    p = Peer(broker)
    p.open()
    return p


def test_open_advertises_this_listener(broker: Broker) -> None:
    p = Peer(broker)
    p.send(p.request(Key.PEER_PROPERTIES).properties({}).frame())
    p.send(p.request(Key.SASL_HANDSHAKE).frame())
    p.send(p.request(Key.SASL_AUTHENTICATE).string("PLAIN").bytes_(b"\0guest\0guest").frame())
    p.send(Writer(Key.TUNE).uint32(0).uint32(0).frame())
    (reply,) = p.send(p.request(Key.OPEN).string("/").frame())
    assert ok(reply, Key.OPEN).properties() == {"advertised_host": "127.0.0.1",
                                                "advertised_port": "5552"}


def test_bad_credentials_answer_authentication_failure_and_close(broker: Broker) -> None:
    p = Peer(broker)
    p.send(p.request(Key.PEER_PROPERTIES).properties({}).frame())
    p.send(p.request(Key.SASL_HANDSHAKE).frame())
    replies = p.send(p.request(Key.SASL_AUTHENTICATE).string("PLAIN")
                     .bytes_(b"\0guest\0nope").frame())
    key, fields = replies[0]
    assert key == response_key(Key.SASL_AUTHENTICATE)
    fields.uint32()
    assert fields.uint16() == Code.AUTHENTICATION_FAILURE
    assert p.conn.should_close


def test_metadata_names_this_listener_leader(peer: Peer) -> None:
    (reply,) = peer.send(peer.request(Key.METADATA).strings(["s", "missing"]).frame())
    key, f = reply
    assert key == response_key(Key.METADATA)
    f.uint32()
    assert f.count() == 1
    assert (f.uint16(), f.string(), f.uint32()) == (0, "127.0.0.1", 5552)
    assert f.count() == 2
    assert (f.string(), f.uint16(), f.uint16(), f.count()) == ("s", Code.OK, 0, 0)
    assert (f.string(), f.uint16(), f.uint16(), f.count()) == (
        "missing", Code.STREAM_DOES_NOT_EXIST, 0xFFFF, 0)


def test_a_publish_frame_is_one_chunk_delivered_with_its_crc(peer: Peer, broker: Broker) -> None:
    ok(peer.send(peer.request(Key.DECLARE_PUBLISHER).uint8(7).string("").string("s").frame())[0],
       Key.DECLARE_PUBLISHER)
    bodies = [amqp_body(b"a"), amqp_body(b"bb")]
    w = Writer(Key.PUBLISH).uint8(7).int32(2)
    for i, body in enumerate(bodies, 1):
        w.uint64(i).bytes_(body)
    (confirm,) = peer.send(w.frame())
    assert confirm[0] == Key.PUBLISH_CONFIRM
    f = confirm[1]
    assert (f.uint8(), [f.uint64() for _ in range(f.count())]) == (7, [1, 2])
    (subscribed, deliver) = peer.send(peer.request(Key.SUBSCRIBE).uint8(1).string("s")
                                      .uint16(1).uint16(10).properties({}).frame())
    ok(subscribed, Key.SUBSCRIBE)
    key, d = deliver
    assert key == Key.DELIVER
    assert d.uint8() == 1
    header = d._take(48)
    (_magic, chunk_type, entries, records, _ts, _epoch, first, crc, length, _trailer,
     _reserved) = struct.unpack(">bbHIqQQiIII", header)
    data = d._take(length)
    d.end()
    assert (chunk_type, entries, records, first) == (0, 2, 2, 0)
    assert crc == struct.unpack(">i", struct.pack(">I", zlib.crc32(data)))[0]
    assert data == b"".join(struct.pack(">I", len(b)) + b for b in bodies), "bytes kept as sent"
    queue = broker.queues["s"]
    assert queue.stream is not None
    assert [c.first_offset for c in queue.stream.chunks] == [0]
    assert [m.body for m in queue.messages] == [b"a", b"bb"], "AMQP readers get the body"


def test_amqp_091_publishes_reach_stream_readers_and_back(peer: Peer, broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.basic_publish("", "s", b"from 0-9-1", properties={"headers": {"h": 1}})
    (_ok, deliver) = peer.send(peer.request(Key.SUBSCRIBE).uint8(1).string("s").uint16(1)
                               .uint16(1).properties({}).frame())
    assert deliver[0] == Key.DELIVER
    d = deliver[1]
    d.uint8()
    header = struct.unpack(">bbHIqQQiIII", d._take(48))
    size = d.uint32()
    message = parse_message(d._take(size))
    assert header[2] == 1
    assert message.application_properties == {"h": 1}
    assert message.body.endswith(b"from 0-9-1")


def test_credit_counts_chunks(peer: Peer, broker: Broker) -> None:
    ch = broker.connect().channel()
    for i in range(3):
        ch.basic_publish("", "s", b"%d" % i)
    replies = peer.send(peer.request(Key.SUBSCRIBE).uint8(1).string("s").uint16(1).uint16(2)
                        .properties({}).frame())
    assert [k for k, _ in replies] == [response_key(Key.SUBSCRIBE), Key.DELIVER, Key.DELIVER]
    assert [k for k, _ in peer.send(Writer(Key.CREDIT).uint8(1).uint16(5).frame())] == [
        Key.DELIVER]
    ch.basic_publish("", "s", b"later")
    assert [k for k, _ in peer.received()] == [Key.DELIVER]
    (unknown,) = peer.send(Writer(Key.CREDIT).uint8(9).uint16(1).frame())
    assert unknown[0] == response_key(Key.CREDIT)
    assert (unknown[1].uint16(), unknown[1].uint8()) == (Code.SUBSCRIPTION_ID_DOES_NOT_EXIST, 9)


def test_deleting_the_stream_tells_its_readers(peer: Peer, broker: Broker) -> None:
    peer.send(peer.request(Key.SUBSCRIBE).uint8(1).string("s").uint16(3).uint16(1)
              .properties({}).frame())
    broker.connect().channel().queue_delete("s")
    ((key, f),) = peer.received()
    assert key == Key.METADATA_UPDATE
    assert (f.uint16(), f.string()) == (Code.STREAM_NOT_AVAILABLE, "s")


def test_create_and_delete_answer_codes(peer: Peer, broker: Broker) -> None:
    def code(frame: bytes) -> int:
        ((_key, f),) = peer.send(frame)
        f.uint32()
        return f.uint16()

    assert code(peer.request(Key.CREATE).string("t").properties(
        {"max-age": "1D", "stream-max-segment-size-bytes": "1000"}).frame()) == Code.OK
    assert broker.queues["t"].arguments == {"x-queue-type": "stream", "x-max-age": "1D",
                                            "x-stream-max-segment-size-bytes": 1000}
    assert code(peer.request(Key.CREATE).string("t").properties(
        {"max-age": "1D", "stream-max-segment-size-bytes": "1000"}).frame()) == \
        Code.STREAM_ALREADY_EXISTS
    assert code(peer.request(Key.CREATE).string("t").properties({}).frame()) == \
        Code.PRECONDITION_FAILED  # (not the stream these arguments declare: RabbitMQ 3.10.8)
    assert code(peer.request(Key.DELETE).string("t").frame()) == Code.OK
    assert code(peer.request(Key.DELETE).string("t").frame()) == Code.STREAM_DOES_NOT_EXIST


@pytest.mark.parametrize(("frame", "code"), [
    (Writer(0x7777).frame(), Code.UNKNOWN_FRAME),
    (struct.pack(">I", 128 * 1024 * 1024 + 1), Code.FRAME_TOO_LARGE),  # (max_message_size)
    (Writer(Key.OPEN).uint32(1).frame(), Code.UNKNOWN_FRAME),  # (too short for Open)
    (Writer(Key.PEER_PROPERTIES).uint32(1).int32(0).frame(), Code.UNKNOWN_FRAME),  # wrong state
])
def test_bad_frames_close_the_connection_with_a_code(peer: Peer, frame: bytes, code: int) -> None:
    ((key, f),) = peer.send(frame)
    assert key == Key.CLOSE
    f.uint32()
    assert f.uint16() == code
    assert peer.conn.should_close
    assert peer.send(Writer(Key.HEARTBEAT).frame()) == [], "nothing after the close"


def test_before_it_is_tuned_a_frame_over_frame_max_closes_the_connection(broker: Broker) -> None:
    # (after Tune the bound is the broker's largest message, as tests/stream/test_raw_frames.py
    # shows with a Publish past frame_max; before it, nobody unknown makes it buffer more)
    p = Peer(broker)
    ((key, f),) = p.send(struct.pack(">I", 2_000_000))
    assert key == Key.CLOSE
    f.uint32()
    assert f.uint16() == Code.FRAME_TOO_LARGE
    assert p.conn.should_close


@pytest.mark.parametrize("state", [State.PEER_PROPERTIES, State.SASL_HANDSHAKE,
                                   State.SASL_AUTHENTICATE, State.TUNE, State.OPEN])
def test_until_open_a_frame_over_8_kib_is_refused_at_its_header(state: State) -> None:
    """RabbitMQ's initial frame_max (rabbit_stream_reader, v4.3.5: ``stream.initial_frame_max``,
    8192 bytes, until Open succeeds, whatever Tune said; RabbitMQ 3.10.8 had no bound): a
    client that has not opened may not make the connection buffer more. The frame is refused
    as soon as its size is read, with none of its body kept. (Before: up to 1 MiB each.)"""
    p = _peer_in(state)
    replies = p.send(struct.pack(">IHHI", 1_048_576, Key.PEER_PROPERTIES, 1, 1) + bytes(1000))
    assert [k for k, _ in replies] == [Key.CLOSE]
    f = replies[0][1]
    f.uint32()
    assert f.uint16() == Code.FRAME_TOO_LARGE
    assert p.conn.should_close
    assert p.conn.close_reason == "frame of 1048576 bytes, over frame_max 8192"


def test_a_frame_over_frame_max_keeps_its_size_alone_not_what_came_with_it() -> None:
    """What came with a frame too large is not copied into the reader's buffer (a copy of a
    256 KiB read each, which the allocator kept: 50 such clients left `embroker serve` 3-6 MiB
    larger after they were gone, against 0.7 for 50 idle ones)."""
    reader = FrameReader(8192)
    reader.feed(b"\x00\x10")
    reader.feed(b"\x00\x00\x00\x11" + bytes(200_000))
    assert len(reader._buffer) == 4
    with pytest.raises(StreamProtocolError, match="over frame_max 8192"):
        reader.next_frame()
    fine = FrameReader(8192)
    frame = Writer(Key.HEARTBEAT).frame()
    fine.feed(frame[:2])
    fine.feed(frame[2:] + frame)
    assert [fine.next_frame(), fine.next_frame(), fine.next_frame()] == [
        (Key.HEARTBEAT, 1, b""), (Key.HEARTBEAT, 1, b""), None]


def test_until_open_a_frame_of_8_kib_is_taken_and_after_open_the_tuned_bound_holds() -> None:
    """A SASL PLAIN password of nearly 8 KiB (a JWT) fits; once open, frames up to what Tune
    and the largest message allow are read (a Publish of 100 KiB)."""
    broker = Broker(users={"guest": "guest", "jwt": "p" * 8000})
    broker.connect().channel().queue_declare("s", durable=True,
                                             arguments={"x-queue-type": "stream"})
    p = Peer(broker)
    p.open("jwt", "p" * 8000)
    p.send(p.request(Key.DECLARE_PUBLISHER).uint8(0).string("").string("s").frame())
    ((key, _f),) = p.send(Writer(Key.PUBLISH).uint8(0).int32(1).uint64(1)
                          .bytes_(amqp_body(b"x" * 100_000)).frame())
    assert key == Key.PUBLISH_CONFIRM


# -- hostile input ---------------------------------------------------------------------------

def _frames() -> st.SearchStrategy[bytes]:
    keys = st.sampled_from([int(k) for k in Key] + [0x7777, 0x8001, 0x801A])
    return st.builds(lambda key, version, body: struct.pack(">IHH", 4 + len(body), key, version)
                     + body, keys, st.sampled_from([1, 1, 1, 2]), st.binary(max_size=64))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before_open=st.booleans(), chunks=st.lists(st.one_of(_frames(), st.binary(max_size=40)),
                                                   max_size=8), split=st.booleans(),
       profile=st.sampled_from([None, "4.1.x"]))
def test_no_input_raises(before_open: bool, chunks: list[bytes], split: bool,
                         profile: str | None) -> None:
    """Any bytes, whole frames of any key with any body, in any state, at once or byte by
    byte, under either profile (4.x: filters, single active consumer, command versions): the
    connection answers or closes; it never raises, and the broker stays sound."""
    broker = Broker(as_rabbitmq=profile)
    with broker.connect() as setup:
        setup.channel().queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    p = Peer(broker)
    if not before_open:
        p.open()
    data = b"".join(chunks)
    pieces: Any = [data[i:i + 1] for i in range(len(data))] if split else [data]
    for piece in pieces:
        p.conn.receive_data(piece)
    p.received()
    p.conn.connection_lost()
    assert not broker.connections
    broker._check()


@settings(max_examples=200, deadline=None)
@given(messages=st.lists(st.binary(max_size=48), min_size=1, max_size=4))
def test_any_message_bytes_are_written_and_read(messages: list[bytes]) -> None:
    """osiris takes any bytes as a message: what is not AMQP 1.0 reaches AMQP readers as a
    body, stream readers as it was sent."""
    broker = Broker()
    with broker.connect() as setup:
        setup.channel().queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    p = Peer(broker)
    p.open()
    p.send(p.request(Key.DECLARE_PUBLISHER).uint8(0).string("ref").string("s").frame())
    w = Writer(Key.PUBLISH).uint8(0).int32(len(messages))
    for i, data in enumerate(messages, 1):
        w.uint64(i).bytes_(data)
    ((key, _f),) = p.send(w.frame())
    assert key == Key.PUBLISH_CONFIRM
    assert len(broker.queues["s"].messages) == len(messages)
    ch = broker.connect().channel()
    ch.basic_qos(prefetch_count=10)
    got: list[bytes] = []
    ch.basic_consume("s", lambda _c, _d, _p, body: got.append(body),
                     arguments={"x-stream-offset": "first"})
    ch.connection.process_data_events()
    assert len(got) == len(messages)
    broker._check()


def _peer_in(state: State) -> Peer:
    p = Peer(Broker())
    steps = [
        (State.SASL_HANDSHAKE, lambda: p.request(Key.PEER_PROPERTIES).properties({}).frame()),
        (State.SASL_AUTHENTICATE, lambda: p.request(Key.SASL_HANDSHAKE).frame()),
        (State.TUNE, lambda: p.request(Key.SASL_AUTHENTICATE).string("PLAIN")
         .bytes_(b"\0guest\0guest").frame()),
        (State.OPEN, lambda: Writer(Key.TUNE).uint32(0).uint32(0).frame()),
        (State.OPENED, lambda: p.request(Key.OPEN).string("/").frame()),
    ]
    for reached, frame in steps:
        if p.conn.state is state:
            break
        p.send(frame())
        assert p.conn.state is reached
    return p


@pytest.mark.parametrize("state", [s for s in State if s is not State.CLOSED])
@pytest.mark.parametrize("key", list(Key))
def test_every_state_and_key(state: State, key: Key) -> None:
    """Every command in every state, with an empty body: a command the state does not take
    closes the connection (UNKNOWN_FRAME); one it takes but cannot read closes it too; none
    raises (the state machine's table, EXPECTED, is the whole truth)."""
    p = _peer_in(state)
    replies = p.send(Writer(key).frame())
    if key not in EXPECTED[state] or key is Key.EXCHANGE_COMMAND_VERSIONS:
        assert [k for k, _ in replies][-1:] == [Key.CLOSE]
        assert p.conn.should_close
    elif key is not Key.HEARTBEAT:
        assert p.conn.should_close, "an empty body is too short for every other command"


def test_permissions_are_the_models(broker: Broker) -> None:
    """A user who may read ``s`` but not write it: Subscribe works, DeclarePublisher is
    ACCESS_REFUSED; Create needs configure (rabbit_stream_reader checks the queue resource)."""
    broker.add_user("reader", "pw")
    broker.set_permissions("reader", "^$", "^$", "^s$")
    p = Peer(broker)
    p.open("reader", "pw")

    def code(frame: bytes) -> int:
        ((_key, f), *_rest) = p.send(frame)
        f.uint32()
        return f.uint16()

    assert code(p.request(Key.SUBSCRIBE).uint8(1).string("s").uint16(1).uint16(1)
                .properties({}).frame()) == Code.OK
    assert code(p.request(Key.DECLARE_PUBLISHER).uint8(1).string("").string("s").frame()) \
        == Code.ACCESS_REFUSED
    assert code(p.request(Key.CREATE).string("t").properties({}).frame()) == Code.ACCESS_REFUSED
    assert "t" not in broker.queues


def _command(p: Peer, op: str, a: int, b: int, text: str) -> bytes:
    """A well-formed frame of the command ``op`` with these values."""
    stream = ["s", "t", "missing"][a % 3]
    if op == "declare_publisher":
        return p.request(Key.DECLARE_PUBLISHER).uint8(b % 3).string(text).string(stream).frame()
    if op == "publish":
        w = Writer(Key.PUBLISH).uint8(b % 3).int32(a % 4)
        for i in range(a % 4):
            w.uint64(b + i).bytes_(amqp_body(text.encode()))
        return w.frame()
    if op == "subscribe":
        w = p.request(Key.SUBSCRIBE).uint8(b % 3).string(stream).uint16(1 + a % 5)
        if a % 5 == 3:
            w.uint64(b)
        elif a % 5 == 4:
            w.uint64(b * 1000)
        return w.uint16(b % 4).properties(
            {"single-active-consumer": "true", "name": text} if a % 2 else
            {f"filter.{b % 2}": text}).frame()
    if op == "credit":
        return Writer(Key.CREDIT).uint8(b % 3).uint16(a).frame()
    if op == "unsubscribe":
        return p.request(Key.UNSUBSCRIBE).uint8(b % 3).frame()
    if op == "store_offset":
        return Writer(Key.STORE_OFFSET).string(text).string(stream).uint64(b).frame()
    if op == "query_offset":
        return p.request(Key.QUERY_OFFSET).string(text).string(stream).frame()
    if op == "create":
        return p.request(Key.CREATE).string(stream).properties({"max-age": text}).frame()
    if op == "delete":
        return p.request(Key.DELETE).string(stream).frame()
    if op == "update":  # (answering the last ConsumerUpdate the peer was sent, if any)
        return Writer(response_key(Key.CONSUMER_UPDATE)).uint32(p.corr_asked or b % 8) \
            .uint16(1).uint16(a % 6).uint64(b).frame()
    return p.request(Key.QUERY_PUBLISHER_SEQUENCE).string(text).string(stream).frame()


_OPS = ["declare_publisher", "publish", "subscribe", "credit", "unsubscribe", "store_offset",
        "query_offset", "create", "delete", "update", "sequence"]


@settings(max_examples=300, deadline=None)
@given(profile=st.sampled_from([None, "4.1.x"]),
       steps=st.lists(st.tuples(st.integers(0, 1), st.sampled_from(_OPS), st.integers(0, 11),
                                st.integers(0, 2**20), st.sampled_from(["", "a", "eu", "1s"])),
                      max_size=25))
def test_well_formed_commands_in_any_order(profile: str | None,
                                           steps: list[tuple[int, str, int, int, str]]) -> None:
    """Two connections sending well-formed commands with any values, in any order (streams
    that exist or not, publishers and subscriptions that exist or not, single active consumers,
    filters, stray ConsumerUpdate answers): nothing raises and the broker stays sound."""
    broker = Broker(as_rabbitmq=profile)
    with broker.connect() as setup:
        setup.channel().queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
    peers = [Peer(broker), Peer(broker)]
    for p in peers:
        p.open()
    for who, op, a, b, text in steps:
        p = peers[who]
        if not p.conn.should_close:
            for key, fields in p.send(_command(p, op, a, b, text)) + p.received():
                if key == Key.CONSUMER_UPDATE:
                    p.corr_asked = fields.uint32()
        with broker.connect() as other:
            if "s" in broker.queues:
                other.channel().basic_publish("", "s", b"x")
        broker._check()
    for p in peers:
        p.conn.connection_lost()
    assert not broker.connections
    for queue in broker.queues.values():
        assert queue.stream is None or not queue.stream.readers
        assert queue.stream is None or not queue.stream.groups
