"""Sub-entry batching: a Publish entry that carries several records (the top bit of its first
byte set, then its compression, how many records, their uncompressed size and the stored
bytes). What a stream reader and an AMQP 0-9-1 consumer see of one, on embroker and (with
``EMBROKER_REFERENCE_URL``) on RabbitMQ 3.10.8, whose answers are the expected values here."""

from __future__ import annotations

import gzip
import os
import struct
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pika
import pytest
from hypothesis import given
from hypothesis import strategies as st

from embroker import Broker
from embroker.model._stream import SubBatch
from embroker.server import Server
from embroker.stream import Fields, Key, Writer
from tests.stream.test_raw_frames import REFERENCE_STREAM_PORT, RawClient


def message(body: bytes) -> bytes:
    """An AMQP 1.0 message of one data section."""
    return bytes([0, 0x53, 0x75, 0xA0, len(body)]) + body


def records(*bodies: bytes) -> bytes:
    """Simple entries (a size whose top bit is 0, then the bytes) of one message each."""
    return b"".join(struct.pack(">I", len(m)) + m for m in map(message, bodies))


def sub_entry(compression: int, count: int, uncompressed: int, data: bytes) -> bytes:
    return struct.pack(">BHII", 0x80 | compression << 4, count, uncompressed, len(data)) + data


PLAIN = records(b"a", b"bb", b"ccc")
#: (a gzip member with no time in it, so that the chunk's bytes are the same on every run)
GZIPPED = gzip.compress(PLAIN, mtime=0)


def publish_and_read(url: str, host: str, port: int, entry: bytes,
                     wanted: int) -> tuple[list[int], tuple[int, int, bytes], list[Any]]:
    """A Publish of a message, ``entry`` and a message to a new stream; the publishing ids
    confirmed, the chunk a reader from ``first`` is sent (entries, records, data), and what a
    0-9-1 consumer from ``first`` gets: ``(body, x-stream-offset)`` for each of ``wanted``
    messages, or how its connection was closed."""
    client = RawClient(host, port)
    try:
        name = client.new_publisher("embroker-sub-entry")
        publish = (Writer(Key.PUBLISH).uint8(1).int32(3).uint64(1).bytes_(message(b"single"))
                   .uint64(2).raw(entry).uint64(3).bytes_(message(b"after")))
        client.sock.sendall(publish.frame())
        confirmed: list[int] = []
        while len(confirmed) < 3:  # (RabbitMQ's writer may take the three in two batches,
            key, body = client.next()  # each confirmed on its own, under load)
            assert key == Key.PUBLISH_CONFIRM
            f = Fields(body)
            assert f.uint8() == 1
            confirmed += [f.uint64() for _ in range(f.int32())]
        key, _body = client.exchange(client.request(Key.SUBSCRIBE).uint8(1).string(name)
                                     .uint16(1).uint16(10).properties({}).frame())
        assert key == 0x8000 | Key.SUBSCRIBE
        # (the chunks that hold them: one on embroker, perhaps two on RabbitMQ)
        entries, count, data = 0, 0, b""
        while count < 2 + struct.unpack(">H", entry[1:3])[0]:
            key, body = client.next()
            assert key == Key.DELIVER
            header = struct.unpack(">bbHIqQQiIII", body[1:49])
            entries, count, data = entries + header[2], count + header[3], data + body[49:]
        chunk = (entries, count, data)
        seen: list[Any] = []
        connection = pika.BlockingConnection(pika.URLParameters(url))
        try:
            channel = connection.channel()
            channel.basic_qos(prefetch_count=10)

            def on_message(ch: Any, method: Any, props: Any, data: bytes) -> None:
                seen.append((data, props.headers["x-stream-offset"]))
                ch.basic_ack(method.delivery_tag)

            channel.basic_consume(name, on_message, arguments={"x-stream-offset": "first"})
            for _ in range(100):  # (at most 10 s)
                if len(seen) >= wanted:
                    break
                connection.process_data_events(time_limit=0.1)
            connection.close()
        except pika.exceptions.ConnectionClosedByBroker as exc:
            seen.append(("closed", exc.reply_code, exc.reply_text))
        client.exchange(client.request(Key.DELETE).string(name).frame())
        return confirmed, chunk, seen
    finally:
        client.close()


#: One publishing id, one chunk entry per sub-entry; its records counted in the offsets. The
#: records of an uncompressed one go to AMQP consumers one by one; a compressed one osiris hands
#: RabbitMQ 3.10's queue reader unparsed, which crashes: the consumer's connection is closed,
#: 541 (checked live). A count that says more records than there are leaves a gap in the
#: offsets, as osiris counts them.
CASES = {
    "uncompressed": (sub_entry(0, 3, len(PLAIN), PLAIN), 5, [
        (b"single", 0), (b"a", 1), (b"bb", 2), (b"ccc", 3), (b"after", 4)]),
    "gzip": (sub_entry(1, 3, len(PLAIN), GZIPPED), 1, [("closed", 541, "INTERNAL_ERROR")]),
    "a-client's-own-compression": (sub_entry(7, 2, 9, b"opaque"), 1, [
        ("closed", 541, "INTERNAL_ERROR")]),
    "count-past-its-records": (sub_entry(0, 4, len(PLAIN), PLAIN), 4, [
        (b"single", 0), (b"a", 1), (b"bb", 2), (b"ccc", 3), (b"after", 5)]),
    "not-records": (sub_entry(0, 1, 7, b"\0\0\0\x09abc"), 1, [
        ("closed", 541, "INTERNAL_ERROR")]),
}


def expected_chunk(entry: bytes) -> tuple[int, int, bytes]:
    count = struct.unpack(">H", entry[1:3])[0]
    data = records(b"single") + entry + records(b"after")
    return 3, 2 + count, data


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Broker().serve(stream_port=0) as srv:
        yield srv
        assert not srv.errors, srv.errors


@pytest.mark.parametrize("case", CASES)
def test_a_sub_entry_is_one_entry_of_records_as_rabbitmq_stores_and_delivers_it(
        server: Server, case: str) -> None:
    # (Before, embroker closed the connection: "30 bytes left over in a frame".)
    entry, wanted, amqp = CASES[case]
    assert server.stream_port is not None
    got = publish_and_read(server.url, "127.0.0.1", server.stream_port, entry, wanted)
    assert got == ([1, 2, 3], expected_chunk(entry), amqp)


@pytest.mark.skipif(not os.environ.get("EMBROKER_REFERENCE_URL"),
                    reason="EMBROKER_REFERENCE_URL is not set")
@pytest.mark.parametrize("case", CASES)
def test_rabbitmq_stores_and_delivers_a_sub_entry_so(case: str) -> None:
    entry, wanted, amqp = CASES[case]
    url = os.environ["EMBROKER_REFERENCE_URL"]
    host = urllib.parse.urlsplit(url).hostname or "127.0.0.1"
    got = publish_and_read(url, host, REFERENCE_STREAM_PORT, entry, wanted)
    assert got == ([1, 2, 3], expected_chunk(entry), amqp)


#: RabbitMQ 4.x (v4.1.0 rabbit_stream_queue:stream_entries/5) skips a compressed sub-batch ("It
#: can only be consumed by Stream protocol clients"), delivers an uncompressed one's records one
#: by one, and crashes on one that is not simple entries (it parses every uncompressed
#: sub-batch of a chunk it reads, before it delivers any of the chunk's records).
CASES_4 = {
    "uncompressed": CASES["uncompressed"],
    "gzip": (CASES["gzip"][0], 2, [(b"single", 0), (b"after", 4)]),
    "not-records": CASES["not-records"],
}


@pytest.mark.parametrize("case", CASES_4)
def test_rabbitmq_4_skips_a_compressed_sub_entry_for_amqp_consumers(case: str) -> None:
    entry, wanted, amqp = CASES_4[case]
    with Broker(as_rabbitmq="4.1.0").serve(stream_port=0) as srv:
        assert srv.stream_port is not None
        got = publish_and_read(srv.url, "127.0.0.1", srv.stream_port, entry, wanted)
        assert not srv.errors, srv.errors
    assert got == ([1, 2, 3], expected_chunk(entry), amqp)


def test_a_publish_entry_is_read_as_a_message_or_a_sub_entry() -> None:
    f = Fields(bytes.fromhex("00000002" "6869" "93" "0002" "0000000a" "00000003" "78797a"))
    assert f.entry() == b"hi"
    sub = f.entry()
    assert isinstance(sub, SubBatch)
    assert (sub.compression, sub.count, sub.uncompressed_size, sub.data) == (1, 2, 10, b"xyz")
    f.end()


@given(st.lists(st.binary(max_size=40), max_size=20))
def test_an_uncompressed_sub_batch_gives_back_its_records(bodies: list[bytes]) -> None:
    data = b"".join(struct.pack(">I", len(b)) + b for b in bodies)
    assert SubBatch(0, len(bodies), len(data), data).records() == bodies
    assert SubBatch(4, len(bodies), len(data), data).records() is None  # (zstd)
