"""Strings another protocol's client chose, sent to an AMQP 1.0 client.

AMQP 1.0 strings are decoded strictly (embroker refuses a string that is no UTF-8 and a symbol
that is no ASCII: DecodeError), so a 1.0 client cannot bring bytes that are no UTF-8. An AMQP
0-9-1 client can, in a published routing key, a header (name or value) or a property; RabbitMQ
3.10's AMQP 1.0 plugin gives them to a 1.0 consumer as it holds them (``rabbit_amqp1_0_message``
wraps each binary as ``{utf8, Bin}`` or ``{symbol, Bin}``, unchecked). Before, embroker failed to
encode such a message for a 1.0 consumer: ``amqp:internal-error`` closed its connection, and
the message went back to the queue, for every consumer that took it.
"""

from __future__ import annotations

from embroker import Broker
from embroker import amqp091 as a
from embroker.amqp10 import Flow, ServerConnection, Transfer, UInt
from tests.server.test_connection import Client as Client091
from tests.wire_client import raw

from .helpers import Client

M = a.methods


def test_a_091_message_with_bytes_that_are_no_utf8_reaches_a_10_consumer() -> None:
    broker = Broker()
    publisher = Client091(broker)
    publisher.handshake()
    publisher.open_channel()
    publisher.call(1, M.QueueDeclare(queue="q"))
    publisher.call(1, M.QueueBind(queue="q", exchange="amq.fanout"))
    publisher.send(a.encode_message(1, M.BasicPublish(exchange="amq.fanout",
                                                      routing_key="k" + raw(b"\xff")),
                                    b"body", 131072, properties={
                                        "message_id": "m" + raw(b"\xfe"),
                                        "headers": {"h": "v" + raw(b"\xfd"),
                                                    "x-" + raw(b"\xfc"): 1}}))
    consumer = Client(ServerConnection(broker, loopback=True))
    consumer.open()
    consumer.begin()
    consumer.attach_receiver("/queues/q")
    consumer.send_frame(Flow(next_incoming_id=UInt(0), incoming_window=UInt(10),
                             next_outgoing_id=UInt(0), outgoing_window=UInt(100),
                             handle=UInt(0), delivery_count=UInt(0), link_credit=UInt(10)))
    frames = consumer.received()
    assert consumer.connection.failure is None  # (its owner would close it: internal-error)
    (transfer,) = [f for f in frames if isinstance(f.performative, Transfer)]
    payload = bytes(transfer.payload)
    # Each as RabbitMQ sends it: the bytes it holds (a str8-utf8, 0xa1). (An annotation whose
    # name is no ASCII keeps embroker's string key: RabbitMQ's would be a symbol.)
    for encoded in (b"\xa1\x02k\xff", b"\xa1\x02m\xfe", b"\xa1\x02v\xfd", b"\xa1\x03x-\xfc"):
        assert encoded in payload, encoded
