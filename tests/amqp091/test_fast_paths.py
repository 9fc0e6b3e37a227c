"""The hot paths' shortcuts give what the general code gives (issue 26's CPU per message)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from embroker import Broker
from embroker.amqp091 import (
    PROTOCOL_HEADER,
    ServerConnection,
    encode_message,
    encode_method_frame,
    methods,
)
from embroker.amqp091._connection import _CONFIRM_FRAME
from embroker.amqp091._frames import deliver_payload


@pytest.mark.parametrize("channel", [1, 2047])
@pytest.mark.parametrize("tag", [1, 255, 2**40])
@pytest.mark.parametrize("multiple", [False, True])
def test_confirm_frames_are_the_encoded_methods(channel: int, tag: int, multiple: bool) -> None:
    assert _CONFIRM_FRAME.pack(1, channel, 13, 60, 80, tag, multiple, 0xCE) == \
        encode_method_frame(channel, methods.BasicAck(delivery_tag=tag, multiple=multiple))
    assert _CONFIRM_FRAME.pack(1, channel, 13, 60, 120, tag, multiple | 2, 0xCE) == \
        encode_method_frame(channel, methods.BasicNack(delivery_tag=tag, multiple=multiple,
                                                       requeue=True))


def _open(broker: Broker, on_output: Callable[[], None] | None = None) -> ServerConnection:
    conn = ServerConnection(broker, loopback=True, on_output=on_output)
    conn.receive_data(PROTOCOL_HEADER)
    conn.receive_data(encode_method_frame(0, methods.ConnectionStartOk(
        client_properties={}, mechanism="PLAIN", response="\0guest\0guest", locale="en_US")))
    conn.receive_data(encode_method_frame(0, methods.ConnectionTuneOk(
        channel_max=10, frame_max=131072, heartbeat=0)))
    conn.receive_data(encode_method_frame(0, methods.ConnectionOpen(virtual_host="/")))
    conn.receive_data(encode_method_frame(1, methods.ChannelOpen()))
    conn.data_to_send()
    return conn


def test_confirms_on_the_wire_one_per_read_and_coalesced() -> None:
    broker = Broker()
    conn = _open(broker)
    conn.receive_data(encode_method_frame(1, methods.QueueDeclare(queue="q")))
    conn.receive_data(encode_method_frame(1, methods.ConfirmSelect()))
    conn.data_to_send()
    publish = encode_message(1, methods.BasicPublish(routing_key="q"), b"x", 131072)
    conn.receive_data(publish)
    assert conn.data_to_send() == encode_method_frame(1, methods.BasicAck(delivery_tag=1))
    conn.receive_data(publish * 3)
    assert conn.data_to_send() == encode_method_frame(1, methods.BasicAck(delivery_tag=4,
                                                                          multiple=True))


def test_routing_decisions_share_tuples_but_not_values() -> None:
    """The fast routing path shares the queue's name tuple and the exchange's visit; what a
    decision says is what the general path says."""
    broker = Broker()
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"1")
    ch.basic_publish("", "q", b"2")
    first, second = broker.trace[-2], broker.trace[-1]
    assert first.keys == ("q",)
    assert first.queues == ("q",)
    assert second.queues == ("q",)
    ch.exchange_declare("x", "direct")
    ch.queue_bind("q", "x", "k")
    ch.basic_publish("x", "k", b"3")
    decision = broker.trace[-1]
    assert decision.keys == ("k",)
    assert decision.queues == ("q",)
    ch.queue_declare("r")
    ch.queue_bind("r", "x", "k")
    ch.basic_publish("x", "k", b"4")
    assert broker.trace[-1].queues == ("q", "r")
    later = broker.trace[-1]
    assert later.explain() != decision.explain()
    assert decision.queues == ("q",)  # an earlier decision keeps what it saw


@pytest.mark.parametrize(("consumer_tag", "tag", "redelivered", "exchange", "routing_key"), [
    ("ctag", 1, False, "", "q"),
    ("amq.ctag-é", 2**64 - 1, True, "x" * 255, "k.\udcff"),
    ("", 0, False, "amq.topic", ""),
])
def test_deliver_payload_is_the_encoded_method(consumer_tag: str, tag: int, redelivered: bool,
                                               exchange: str, routing_key: str) -> None:
    assert deliver_payload(consumer_tag, tag, redelivered, exchange, routing_key) == \
        methods.BasicDeliver(consumer_tag=consumer_tag, delivery_tag=tag,
                             redelivered=redelivered, exchange=exchange,
                             routing_key=routing_key).encode()


@pytest.mark.parametrize("arguments", [
    ("t", 1, False, "x" * 256, "k"), ("t", 2**64, False, "", "k"), ("t", -1, False, "", "k"),
    ("t", 1, False, "", None),
])
def test_deliver_payload_leaves_what_cannot_be_encoded_to_the_method(
        arguments: tuple[Any, ...]) -> None:
    assert deliver_payload(*arguments) is None
    consumer_tag, tag, redelivered, exchange, routing_key = arguments
    with pytest.raises((TypeError, ValueError)):
        methods.BasicDeliver(consumer_tag=consumer_tag, delivery_tag=tag,
                             redelivered=redelivered, exchange=exchange,
                             routing_key=routing_key).encode()


def test_deliveries_on_the_wire_are_encode_message() -> None:
    broker = Broker()
    conn = _open(broker)
    conn.receive_data(encode_method_frame(1, methods.QueueDeclare(queue="q")))
    conn.receive_data(encode_message(1, methods.BasicPublish(routing_key="q"), b"body" * 100,
                                     131072, properties={"content_type": "text/plain"}))
    conn.data_to_send()
    conn.receive_data(encode_method_frame(1, methods.BasicConsume(queue="q", consumer_tag="c")))
    expected = encode_method_frame(1, methods.BasicConsumeOk(consumer_tag="c")) + \
        encode_message(1, methods.BasicDeliver(consumer_tag="c", delivery_tag=1,
                                               routing_key="q"), b"body" * 100, 131072,
                       properties={"content_type": "text/plain"})
    assert conn.data_to_send() == expected


def test_deliveries_to_alternating_consumers_and_keys_are_each_encoded() -> None:
    """A connection keeps the last delivery's consumer tag and exchange and routing key
    encoded: each delivery that differs in either is encoded afresh."""
    broker = Broker()
    conn = _open(broker)
    for name in ("q1", "q2"):
        conn.receive_data(encode_method_frame(1, methods.QueueDeclare(queue=name)))
        conn.receive_data(encode_method_frame(1, methods.QueueBind(
            queue=name, exchange="amq.topic", routing_key="#")))
    for tag, name in (("c1", "q1"), ("c2", "q2")):
        conn.receive_data(encode_method_frame(1, methods.BasicConsume(queue=name,
                                                                      consumer_tag=tag)))
    conn.data_to_send()
    expected = b""
    delivery_tag = 0
    for exchange, key in (("amq.topic", "a"), ("amq.topic", "a"), ("amq.topic", "q2"),
                          ("", "q2"), ("amq.topic", "q2")):
        conn.receive_data(encode_message(1, methods.BasicPublish(exchange=exchange,
                                                                 routing_key=key), b"x", 131072))
        for tag in (("c1", "c2") if exchange else ("c2",)):
            delivery_tag += 1
            expected += encode_message(1, methods.BasicDeliver(
                consumer_tag=tag, delivery_tag=delivery_tag, exchange=exchange,
                routing_key=key), b"x", 131072)
    assert conn.data_to_send() == expected


def test_output_its_own_input_caused_is_left_to_the_reader() -> None:
    """on_output is for what the connection did not cause by what it was fed: a delivery
    another connection's publish caused calls it; one its own ack or publish caused does not
    (whoever fed it collects it after ``receive_data``)."""
    broker = Broker()
    calls: list[str] = []
    conn = _open(broker, on_output=lambda: calls.append("output"))
    conn.receive_data(encode_method_frame(1, methods.QueueDeclare(queue="q")))
    conn.receive_data(encode_method_frame(1, methods.BasicQos(prefetch_count=1)))
    conn.receive_data(encode_method_frame(1, methods.BasicConsume(queue="q", consumer_tag="c")))
    conn.data_to_send()
    other = broker.connect().channel()
    other.basic_publish("", "q", b"1")
    other.basic_publish("", "q", b"2")
    assert calls == ["output"]  # the first delivery; the second waits for the ack
    conn.data_to_send()
    conn.receive_data(encode_method_frame(1, methods.BasicAck(delivery_tag=1)))
    assert calls == ["output"]
    assert conn.data_to_send() == encode_message(
        1, methods.BasicDeliver(consumer_tag="c", delivery_tag=2, routing_key="q"), b"2",
        131072)


def test_an_unknown_single_ack_closes_the_channel_as_the_general_path_does() -> None:
    broker = Broker()
    conn = _open(broker)
    conn.receive_data(encode_method_frame(1, methods.BasicAck(delivery_tag=7)))
    assert conn.data_to_send() == encode_method_frame(1, methods.ChannelClose(
        reply_code=406, reply_text="PRECONDITION_FAILED - unknown delivery tag 7",
        class_id=60, method_id=80))
