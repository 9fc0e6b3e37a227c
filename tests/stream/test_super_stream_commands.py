"""The stream commands RabbitMQ 3.13 added, under the RabbitMQ 4 profile: CreateSuperStream (29),
DeleteSuperStream (30) and StreamStats (28); RabbitMQ 3.10.8's reader knows none of them
("unknown frame"). No RabbitMQ 4 runs here: each rule below names the source it follows
(v4.1.0: deps/rabbitmq_stream/src/rabbit_stream_reader.erl, rabbit_stream_manager.erl,
rabbit_stream_utils.erl), and rstream's own super stream creation runs against it."""

from __future__ import annotations

import asyncio

import pytest

from embroker import Broker
from embroker.fieldtypes import Long
from embroker.stream import Code, Key, Writer
from tests.stream.test_connection import Peer

STREAM_ARGS = {"x-queue-type": "stream"}


def _create(peer: Peer, name: str, partitions: list[str], keys: list[str],
            arguments: dict[str, str] | None = None) -> int:
    ((key, f),) = peer.send(peer.request(Key.CREATE_SUPER_STREAM).string(name)
                            .strings(partitions).strings(keys)
                            .properties(arguments or {}).frame())
    assert key == 0x8000 | Key.CREATE_SUPER_STREAM
    f.uint32()
    return f.uint16()


def _delete(peer: Peer, name: str) -> int:
    ((key, f),) = peer.send(peer.request(Key.DELETE_SUPER_STREAM).string(name).frame())
    assert key == 0x8000 | Key.DELETE_SUPER_STREAM
    f.uint32()
    return f.uint16()


def _stats(peer: Peer, name: str) -> tuple[int, dict[str, int]]:
    ((key, f),) = peer.send(peer.request(Key.STREAM_STATS).string(name).frame())
    assert key == 0x8000 | Key.STREAM_STATS
    f.uint32()
    code = f.uint16()
    return code, {f.string(): f.int64() for _ in range(f.count())}


def _opened(broker: Broker) -> Peer:
    peer = Peer(broker)
    peer.open()
    return peer


@pytest.mark.parametrize("frame", [
    Writer(Key.STREAM_STATS).uint32(1).string("s").frame(),
    Writer(Key.CREATE_SUPER_STREAM).uint32(1).string("s").int32(0).int32(0).int32(0).frame(),
    Writer(Key.DELETE_SUPER_STREAM).uint32(1).string("s").frame(),
], ids=["stream-stats", "create-super-stream", "delete-super-stream"])
def test_under_the_3_10_profile_the_3_13_commands_are_unknown_frames(frame: bytes) -> None:
    peer = _opened(Broker())
    ((key, f),) = peer.send(frame)
    assert key == Key.CLOSE
    f.uint32()
    assert (f.uint16(), f.string()) == (Code.UNKNOWN_FRAME, "unknown frame")


def test_a_super_stream_is_an_exchange_its_partition_streams_and_ordered_bindings() -> None:
    # rabbit_stream_manager:create_super_stream/6: a durable direct exchange with
    # x-super-stream = true, each partition a stream (queue-leader-locator balanced unless
    # given), bound with its binding key and x-stream-partition-order (a long, from 0).
    broker = Broker(as_rabbitmq="4.1.x")
    peer = _opened(broker)
    assert _create(peer, "invoices", ["invoices-b", "invoices-a"], ["kb", "ka"],
                   {"max-age": "1D"}) == Code.OK
    exchange = broker.exchanges["invoices"]
    assert (exchange.type, exchange.durable, exchange.arguments) == (
        "direct", True, {"x-super-stream": True})
    for order, (partition, key) in enumerate((("invoices-b", "kb"), ("invoices-a", "ka"))):
        queue = broker.queues[partition]
        assert queue.stream is not None
        assert queue.arguments == {**STREAM_ARGS, "x-max-age": "1D",
                                   "x-queue-leader-locator": "balanced"}
        (binding,) = queue.bindings.values()
        assert (binding.routing_key, binding.arguments) == (
            key, {"x-stream-partition-order": Long(order)})
    ((_key, f),) = peer.send(peer.request(Key.PARTITIONS).string("invoices").frame())
    f.uint32()
    assert f.uint16() == Code.OK
    assert f.strings() == ["invoices-b", "invoices-a"]  # (by partition order, not by name)


@pytest.mark.parametrize(("name", "partitions", "keys", "code"), [
    ("ss", ["ss-0", "ss-1"], ["0"], Code.PRECONDITION_FAILED),  # as many keys as partitions
    ("ss", ["ss-0", "ss-0"], ["0", "1"], Code.PRECONDITION_FAILED),  # duplicate partitions
    ("ss", ["amq.ss-0"], ["0"], Code.PRECONDITION_FAILED),  # a partition name refused
    ("amq.ss", ["ss-0"], ["0"], Code.PRECONDITION_FAILED),  # enforce_correct_name
    ("", ["ss-0"], ["0"], Code.PRECONDITION_FAILED),
    ("taken", ["ss-0"], ["0"], Code.STREAM_ALREADY_EXISTS),  # an exchange of that name
    ("ss", ["ss-0", "taken-q"], ["0", "1"], Code.STREAM_ALREADY_EXISTS),  # a queue of one
], ids=["keys", "duplicates", "partition-name", "reserved", "empty", "exchange-exists",
        "queue-exists"])
def test_a_super_stream_rabbitmq_would_not_create_creates_nothing(
        name: str, partitions: list[str], keys: list[str], code: int) -> None:
    # validate_super_stream_creation/4: validation_failed is PRECONDITION_FAILED,
    # reference_already_exists STREAM_ALREADY_EXISTS; checked before anything is made.
    broker = Broker(as_rabbitmq="4.1.x")
    with broker.connect() as admin:
        channel = admin.channel()
        channel.exchange_declare("taken", "topic")
        channel.queue_declare("taken-q")
    before = (set(broker.exchanges), set(broker.queues))
    assert _create(_opened(broker), name, partitions, keys) == code
    assert (set(broker.exchanges), set(broker.queues)) == before


def test_the_vhost_queue_limit_counts_every_partition() -> None:
    broker = Broker(as_rabbitmq="4.1.x")
    broker.vhosts["/"].policies.set_limits({"max-queues": 2})
    assert _create(_opened(broker), "ss", ["ss-0", "ss-1", "ss-2"], ["0", "1", "2"]) == \
        Code.PRECONDITION_FAILED
    assert "ss" not in broker.exchanges


@pytest.mark.parametrize(("configure", "read", "write"), [
    ("^$", ".*", ".*"),  # configure on the exchange and partitions
    ("^ss$", ".*", ".*"),  # ... on every partition
    (".*", "^$", ".*"),  # read on the exchange
    (".*", ".*", "^ss$"),  # write on every partition
], ids=["configure", "configure-partitions", "read-exchange", "write-partitions"])
def test_managing_a_super_stream_needs_every_permission_rabbitmq_checks(
        configure: str, read: str, write: str) -> None:
    # rabbit_stream_utils:check_super_stream_management_permitted/4, before any validation
    # (a refused user learns nothing of the names): ACCESS_REFUSED, nothing made or deleted.
    broker = Broker(as_rabbitmq="4.1.x")
    broker.add_user("u", "pw")
    broker.set_permissions("u", configure, write, read)
    peer = Peer(broker)
    peer.open("u", "pw")
    assert _create(peer, "ss", ["ss-0", "ss-1"], ["0"]) == Code.ACCESS_REFUSED  # (not 406)
    assert "ss" not in broker.exchanges
    assert _create(_opened(broker), "ss", ["ss-0", "ss-1"], ["0", "1"]) == Code.OK
    assert _delete(peer, "ss") == Code.ACCESS_REFUSED
    assert {"ss-0", "ss-1"} <= set(broker.queues)


def test_deleting_a_super_stream_deletes_its_exchange_and_partitions() -> None:
    # delete_super_stream/3: the partitions from the exchange's bindings, the exchange, then
    # each partition; an exchange that is not there is STREAM_DOES_NOT_EXIST.
    broker = Broker(as_rabbitmq="4.1.x")
    peer = _opened(broker)
    assert _create(peer, "ss", ["ss-0", "ss-1"], ["0", "1"]) == Code.OK
    assert _delete(peer, "ss") == Code.OK
    assert "ss" not in broker.exchanges
    assert not {"ss-0", "ss-1"} & set(broker.queues)
    assert _delete(peer, "ss") == Code.STREAM_DOES_NOT_EXIST


def test_stream_stats_are_the_first_and_committed_chunk_ids() -> None:
    # handle_frame_post_auth stream_stats: read permission, then the stream, then osiris'
    # get_stats (first_chunk_id, committed_chunk_id: -1 for a stream with no chunk yet).
    broker = Broker(as_rabbitmq="4.1.x")
    with broker.connect() as client:
        channel = client.channel()
        channel.queue_declare("s", durable=True, arguments=STREAM_ARGS)
        peer = _opened(broker)
        assert _stats(peer, "s") == (Code.OK, {"first_chunk_id": -1, "committed_chunk_id": -1})
        for body in (b"a", b"b", b"c"):  # (a chunk each)
            channel.basic_publish("", "s", body)
    assert _stats(peer, "s") == (Code.OK, {"first_chunk_id": 0, "committed_chunk_id": 2})
    assert _stats(peer, "nowhere") == (Code.STREAM_DOES_NOT_EXIST, {})
    broker.add_user("u", "pw")
    broker.set_permissions("u", ".*", ".*", "^$")
    other = Peer(broker)
    other.open("u", "pw")
    assert _stats(other, "nowhere") == (Code.ACCESS_REFUSED, {})  # (permission first)


def test_rstream_creates_routes_and_deletes_a_super_stream_against_the_4_profile() -> None:
    from rstream import AMQPMessage, SuperStreamCreationOption, SuperStreamProducer
    from rstream.superstream_producer import RouteType

    async def key_of(message: AMQPMessage) -> str:
        return str(message.application_properties["key"])

    async def scenario(port: int) -> tuple[list[str], list[str], list[str], bool]:
        async with SuperStreamProducer(
                "127.0.0.1", port=port, username="guest", password="guest",
                super_stream="orders", routing=RouteType.Key, routing_extractor=key_of,
                super_stream_creation_option=SuperStreamCreationOption(n_partitions=3),
        ) as producer:
            client = await producer.default_client
            partitions = await client.partitions("orders")
            routed = await client.route("1", "orders")
        with broker.locked():
            made = sorted(q for q in broker.queues if broker.queues[q].stream is not None)
        async with SuperStreamProducer(
                "127.0.0.1", port=port, username="guest", password="guest",
                super_stream="orders", routing=RouteType.Key, routing_extractor=key_of,
        ) as producer:
            await producer.delete_super_stream("orders")
            exists = await producer.stream_exists("orders-0")
        return partitions, routed, made, exists

    broker = Broker(as_rabbitmq="4.1.x")
    with broker.serve(stream_port=0) as server:
        assert server.stream_port is not None
        partitions, routed, made, exists = asyncio.run(scenario(server.stream_port))
        assert not server.errors, server.errors
    assert partitions == ["orders-0", "orders-1", "orders-2"]
    assert routed == ["orders-1"]
    assert made == partitions
    assert exists is False
    assert "orders" not in broker.exchanges
