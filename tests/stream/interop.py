"""rstream scripts that run unchanged against embroker's stream listener and against RabbitMQ's
(127.0.0.1:5552): each returns a transcript of what the client saw, to compare."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from rstream import (
    AMQPMessage,
    CompressionType,
    ConfirmationStatus,
    Consumer,
    ConsumerOffsetSpecification,
    MessageContext,
    OffsetType,
    Producer,
    SuperStreamConsumer,
    amqp_decoder,
)

Script = Callable[[str, int, str], Awaitable[list[Any]]]


def run(script: Script, host: str, port: int, amqp_url: str = "") -> list[Any]:
    """Run one script against the stream port ``host:port`` (a fresh event loop, bounded in
    time); ``amqp_url``: the same broker's AMQP 0-9-1 URL, for scripts that set up a topology
    as RabbitMQ 3.10 users do (super streams)."""
    return asyncio.run(asyncio.wait_for(script(host, port, amqp_url), 30))


def _name(base: str) -> str:
    return f"embroker-test-{base}-{uuid.uuid4().hex[:8]}"


async def _read(host: str, port: int, stream: str, spec: ConsumerOffsetSpecification,
                n: int, then: Callable[[], Awaitable[None]] | None = None) -> list[Any]:
    """Subscribe to ``stream`` from ``spec`` until ``n`` messages came (``then`` runs once
    subscribed); (offset, body, application properties) of each."""
    got: list[Any] = []
    done = asyncio.Event()

    async def on_message(msg: AMQPMessage, ctx: MessageContext) -> None:
        properties = {k.decode() if isinstance(k, bytes) else k: v
                      for k, v in (msg.application_properties or {}).items()}
        got.append((ctx.offset, bytes(msg.body), properties))
        if len(got) >= n:
            done.set()

    consumer = Consumer(host, port=port, username="guest", password="guest")
    await consumer.start()
    try:
        await consumer.subscribe(stream, on_message, decoder=amqp_decoder,
                                 offset_specification=spec)
        if then is not None:
            await then()
        await asyncio.wait_for(done.wait(), 10)
    finally:
        await consumer.close()
    return got


async def produce_and_consume(host: str, port: int, _amqp_url: str) -> list[Any]:
    """Five messages, then readers from first, an offset, last and next; offsets stored and
    queried; the stream deleted."""
    stream = _name("basic")
    out: list[Any] = []
    async with Producer(host, port=port, username="guest", password="guest") as producer:
        await producer.create_stream(stream, arguments={"max-length-bytes": 10_000_000})
        out.append(("exists", await producer.stream_exists(stream)))
        for i in range(5):
            await producer.send_wait(stream, AMQPMessage(
                body=b"m%d" % i, application_properties={"i": i}))

        out.append(("first", await _read(host, port, stream, ConsumerOffsetSpecification(
            OffsetType.FIRST, None), 5)))
        out.append(("offset 2", await _read(host, port, stream, ConsumerOffsetSpecification(
            OffsetType.OFFSET, 2), 3)))
        out.append(("last", await _read(host, port, stream, ConsumerOffsetSpecification(
            OffsetType.LAST, None), 1)))

        async def publish_one() -> None:
            await producer.send_wait(stream, AMQPMessage(body=b"later"))

        out.append(("next", await _read(host, port, stream, ConsumerOffsetSpecification(
            OffsetType.NEXT, None), 1, publish_one)))
        consumer = Consumer(host, port=port, username="guest", password="guest")
        await consumer.start()
        try:
            try:
                await consumer.query_offset(stream, "reader")
            except Exception as exc:  # (the transcript shows which)
                out.append(("query before store", type(exc).__name__))
            await consumer.store_offset(stream, "reader", 3)
            out.append(("query after store", await consumer.query_offset(stream, "reader")))
        finally:
            await consumer.close()
        await producer.delete_stream(stream)
        out.append(("exists after delete", await producer.stream_exists(stream)))
    return out


async def deduplication(host: str, port: int, _amqp_url: str) -> list[Any]:
    """A named producer's publishing ids: ids already written are confirmed and dropped; the
    sequence is the last id written."""
    stream = _name("dedup")
    out: list[Any] = []
    async with Producer(host, port=port, username="guest", password="guest") as producer:
        await producer.create_stream(stream)
        for prefix, ids in ((b"a", (1, 2, 3)), (b"b", (2, 3, 4))):
            for pid in ids:
                await producer.send_wait(stream, _numbered(prefix + b"%d" % pid, pid),
                                         publisher_name="dedup-ref")
        client = await producer.default_client
        out.append(("sequence", await client.query_publisher_sequence(stream, "dedup-ref")))
        out.append(("unknown sequence", await client.query_publisher_sequence(stream, "none")))
        out.append(("read", [(o, b) for o, b, _p in await _read(
            host, port, stream, ConsumerOffsetSpecification(OffsetType.FIRST, None), 4)]))
        await producer.delete_stream(stream)
    return out


async def super_stream(host: str, port: int, amqp_url: str) -> list[Any]:
    """A super stream as RabbitMQ 3.10 has them (``rabbitmq-streams add_super_stream`` makes
    the same): a direct exchange bound to its partition streams with routing keys and
    ``x-stream-partition-order``. Partitions and Route answer from those bindings; a super
    stream consumer reads every partition."""
    import pika

    name = _name("super")
    partitions = [f"{name}-{i}" for i in range(3)]
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    ch = conn.channel()
    ch.exchange_declare(name, "direct", durable=True)
    for i, partition in reversed(list(enumerate(partitions))):  # bound in another order
        ch.queue_declare(partition, durable=True, arguments={"x-queue-type": "stream"})
        ch.queue_bind(partition, name, str(i), arguments={"x-stream-partition-order": i})
    out: list[Any] = []
    try:
        async with Producer(host, port=port, username="guest", password="guest") as producer:
            client = await producer.default_client
            out.append(("partitions", [p.removeprefix(name) for p in
                                       await client.partitions(name)]))
            for key in ("0", "2", "9"):
                out.append((f"route {key}", [p.removeprefix(name) for p in
                                             await client.route(key, name)]))
            for partition in partitions:
                await producer.send_wait(partition, AMQPMessage(body=partition[-1:].encode()))
        got: list[Any] = []
        done = asyncio.Event()

        async def on_message(msg: AMQPMessage, ctx: MessageContext) -> None:
            got.append((ctx.stream.removeprefix(name), ctx.offset, bytes(msg.body)))
            if len(got) == len(partitions):
                done.set()

        consumer = SuperStreamConsumer(host, port=port, username="guest", password="guest",
                                       super_stream=name)
        await consumer.start()
        try:
            await consumer.subscribe(on_message, decoder=amqp_decoder)
            await asyncio.wait_for(done.wait(), 10)
        finally:
            await consumer.close()
        out.append(("read", sorted(got)))
    finally:
        for partition in partitions:
            ch.queue_delete(partition)
        ch.exchange_delete(name)
        conn.close()
    return out


async def sub_entry_batching(host: str, port: int, _amqp_url: str) -> list[Any]:
    """Sub-entries of records, uncompressed and gzipped, among single messages: one
    confirmation each, the records read one by one at offsets of their own."""
    stream = _name("sub-entry")
    out: list[Any] = []
    confirmed: list[bool] = []
    every = asyncio.Event()

    async def on_confirm(status: ConfirmationStatus) -> None:
        confirmed.append(status.is_confirmed)
        if len(confirmed) == 3:
            every.set()

    async with Producer(host, port=port, username="guest", password="guest") as producer:
        await producer.create_stream(stream)
        for compression, bodies in ((CompressionType.No, [b"n1", b"n2", b"n3"]),
                                    (CompressionType.Gzip, [b"g1", b"g2"]),
                                    (CompressionType.No, [b"last"])):
            await producer.send_sub_entry(stream, [AMQPMessage(body=b) for b in bodies],
                                          compression_type=compression,
                                          on_publish_confirm=on_confirm)
        await asyncio.wait_for(every.wait(), 10)
        out.append(("confirmed", confirmed))
        out.append(("first", [(o, b) for o, b, _p in await _read(
            host, port, stream, ConsumerOffsetSpecification(OffsetType.FIRST, None), 6)]))
        out.append(("offset 4", [(o, b) for o, b, _p in await _read(
            host, port, stream, ConsumerOffsetSpecification(OffsetType.OFFSET, 4), 2)]))
        await producer.delete_stream(stream)
    return out


def _numbered(body: bytes, publishing_id: int) -> AMQPMessage:
    # (rstream 1.1's AMQPMessage(publishing_id=...) fails in its base class's __new__)
    message = AMQPMessage(body=body)
    message.publishing_id = publishing_id
    return message


SCRIPTS: dict[str, Script] = {
    "produce_and_consume": produce_and_consume,
    "deduplication": deduplication,
    "super_stream": super_stream,
    "sub_entry_batching": sub_entry_batching,
}
