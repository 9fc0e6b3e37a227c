"""Names another protocol's client chose, sent to a stream protocol client.

The stream protocol decodes its strings strictly (a string that is no UTF-8 is a protocol
error), so a stream client cannot bring bytes that are no UTF-8. An AMQP 0-9-1 client can name a
stream with the encoding of a surrogate (``\\xed\\xa0\\x80``, which RabbitMQ's short string check
lets through); RabbitMQ writes such a name as the bytes it holds. Before, embroker failed to
encode a route or partitions answer naming it, and the stream connection was closed.
"""

from __future__ import annotations

from embroker import Broker
from embroker import amqp091 as a
from embroker.stream import Key
from tests.server.test_connection import Client
from tests.stream.test_connection import Peer, ok
from tests.wire_client import raw

M = a.methods


def test_a_partition_whose_name_holds_a_surrogates_encoding_is_named_with_its_bytes() -> None:
    broker = Broker()
    client = Client(broker)
    client.handshake()
    client.open_channel()
    name = "p-" + raw(b"\xed\xa0\x80")
    for method in (M.ExchangeDeclare(exchange="super", type="direct", durable=True,
                                     arguments={"x-super-stream": True}),
                   M.QueueDeclare(queue=name, durable=True,
                                  arguments={"x-queue-type": "stream"}),
                   M.QueueBind(queue=name, exchange="super", routing_key="k",
                               arguments={"x-stream-partition-order": 0})):
        (answer,) = client.call(1, method)
        assert not isinstance(answer, M.ConnectionClose | M.ChannelClose), answer
    peer = Peer(broker)
    peer.open()
    (reply,) = peer.send(peer.request(Key.PARTITIONS).string("super").frame())
    assert bytes(ok(reply, Key.PARTITIONS)._take(11)) == b"\x00\x00\x00\x01\x00\x05p-\xed\xa0\x80"
    (reply,) = peer.send(peer.request(Key.ROUTE).string("k").string("super").frame())
    assert bytes(ok(reply, Key.ROUTE)._take(11)) == b"\x00\x00\x00\x01\x00\x05p-\xed\xa0\x80"
