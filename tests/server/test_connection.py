"""The sans-IO server connection, driven with bytes only (no sockets)."""

from __future__ import annotations

from typing import Any

import pytest

from embroker import Broker, ManualClock
from embroker import amqp091 as a
from embroker.amqp091._assembly import ContentAssembler
from embroker.amqp091._connection import ConnectionState, ServerConnection
from embroker.amqp091._frames import HEARTBEAT_FRAME
from embroker.amqp091._properties import encode_properties

CLIENT_PROPERTIES = {"capabilities": {"authentication_failure_close": True,
                                      "consumer_cancel_notify": True,
                                      "connection.blocked": True}}


class Client:
    """The client end: encodes methods and messages, decodes what the server sent."""

    def __init__(self, broker: Broker, **kwargs: Any) -> None:
        kwargs.setdefault("loopback", True)  # as from 127.0.0.1 (guest logs in from there only)
        self.server = ServerConnection(broker, peer="test", **kwargs)
        self.parser = a.FrameParser(max_frame_size=131072)
        self.assembler = ContentAssembler()

    def send(self, data: bytes) -> list[Any]:
        """Commands and heartbeat frames the server answered with."""
        self.server.receive_data(data)
        commands: list[Any] = []
        for frame in self.parser.feed(self.server.data_to_send()):
            if isinstance(frame, a.HeartbeatFrame):
                commands.append(frame)
                continue
            command = self.assembler.add(frame)
            if command is not None:
                commands.append(command)
        return commands

    def call(self, channel: int, method: a.Method) -> list[Any]:
        return [c.method if isinstance(c, a.Command) else c
                for c in self.send(a.encode_method_frame(channel, method))]

    def handshake(self, *, heartbeat: int = 0, properties: dict[str, Any] | None = None,
                  password: str = "guest") -> None:
        (start,) = self.send(a.PROTOCOL_HEADER)
        assert isinstance(start.method, a.methods.ConnectionStart)
        (tune,) = self.call(0, a.methods.ConnectionStartOk(
            client_properties=CLIENT_PROPERTIES if properties is None else properties,
            mechanism="PLAIN", response=f"\0guest\0{password}", locale="en_US"))
        assert isinstance(tune, a.methods.ConnectionTune)
        assert self.call(0, a.methods.ConnectionTuneOk(channel_max=tune.channel_max,
                                               frame_max=tune.frame_max, heartbeat=heartbeat)) == []
        (open_ok,) = self.call(0, a.methods.ConnectionOpen(virtual_host="/"))
        assert isinstance(open_ok, a.methods.ConnectionOpenOk)

    def open_channel(self, number: int = 1) -> None:
        assert self.call(number, a.methods.ChannelOpen()) == [a.methods.ChannelOpenOk()]


@pytest.fixture
def broker() -> Broker:
    return Broker(clock=ManualClock())


def test_handshake_offers_rabbitmq_capabilities(broker: Broker) -> None:
    client = Client(broker)
    (start,) = client.send(a.PROTOCOL_HEADER)
    caps = start.method.server_properties["capabilities"]
    for name in ("publisher_confirms", "exchange_exchange_bindings", "basic.nack",
                 "consumer_cancel_notify", "connection.blocked", "consumer_priorities",
                 "authentication_failure_close", "per_consumer_qos", "direct_reply_to"):
        assert caps[name] is True
    assert "PLAIN" in start.method.mechanisms.split()
    assert "AMQPLAIN" in start.method.mechanisms.split()


def test_handshake_fed_one_byte_at_a_time(broker: Broker) -> None:
    client = Client(broker)
    for byte in a.PROTOCOL_HEADER:
        client.server.receive_data(bytes([byte]))
    assert client.server.state is ConnectionState.START_OK


@pytest.mark.parametrize("header", [b"AMQP\x00\x00\x08\x00", b"AMQP\x01\x01\x00\x09",
                                    b"AMQP\x00\x01\x00\x00", b"HTTP/1.1"])
def test_other_protocol_header_gets_ours_and_a_close(broker: Broker, header: bytes) -> None:
    conn = ServerConnection(broker)
    conn.receive_data(header)
    assert conn.data_to_send() == a.PROTOCOL_HEADER
    assert conn.should_close


def test_amqplain_login(broker: Broker) -> None:
    client = Client(broker)
    client.send(a.PROTOCOL_HEADER)
    table = a.encode_table({"LOGIN": "guest", "PASSWORD": "guest"})[4:]
    (tune,) = client.call(0, a.methods.ConnectionStartOk(client_properties={}, mechanism="AMQPLAIN",
                                                 response=table.decode("latin-1"),
                                                 locale="en_US"))
    assert isinstance(tune, a.methods.ConnectionTune)


def test_wrong_password_is_refused_with_a_close_when_the_client_asks(broker: Broker) -> None:
    client = Client(broker)
    client.send(a.PROTOCOL_HEADER)
    (close,) = client.call(0, a.methods.ConnectionStartOk(
        client_properties=CLIENT_PROPERTIES, mechanism="PLAIN", response="\0guest\0bad",
        locale="en_US"))
    assert close.reply_code == 403
    assert close.reply_text.startswith("ACCESS_REFUSED - Login was refused using authentication "
                                       "mechanism PLAIN")
    assert client.server.should_close


def test_wrong_password_without_the_capability_just_closes(broker: Broker) -> None:
    client = Client(broker)
    client.send(a.PROTOCOL_HEADER)
    assert client.call(0, a.methods.ConnectionStartOk(client_properties={}, mechanism="PLAIN",
                                              response="\0guest\0bad", locale="en_US")) == []
    assert client.server.should_close


def test_method_out_of_order_in_the_handshake_is_command_invalid(broker: Broker) -> None:
    client = Client(broker)
    client.send(a.PROTOCOL_HEADER)
    (close,) = client.call(0, a.methods.ConnectionOpen(virtual_host="/"))
    assert close.reply_code == 503


def test_channel_exception_closes_only_the_channel(broker: Broker) -> None:
    client = Client(broker)
    client.handshake()
    client.open_channel(1)
    client.open_channel(2)
    (close,) = client.call(1, a.methods.QueueDeclare(queue="missing", passive=True))
    assert (close.reply_code, close.reply_text, close.class_id, close.method_id) == (
        404, "NOT_FOUND - no queue 'missing' in vhost '/'", 50, 10)
    # Until close-ok, the closed channel ignores everything else (section 2.3.7).
    assert client.call(1, a.methods.QueueDeclare(queue="q")) == []
    assert client.call(1, a.methods.ChannelCloseOk()) == []
    assert client.call(2, a.methods.QueueDeclare(queue="q"))[0].queue == "q"
    client.open_channel(1)  # the number can be used again


def test_connection_exception_closes_the_connection_and_waits_for_close_ok(
        broker: Broker) -> None:
    client = Client(broker)
    client.handshake()
    client.open_channel()
    (close,) = client.call(1, a.methods.ExchangeDeclare(exchange="x", type="nonsense"))
    assert (close.reply_code, close.class_id, close.method_id) == (503, 40, 10)
    assert client.server.state is ConnectionState.CLOSING
    assert client.call(1, a.methods.QueueDeclare(queue="q")) == []
    assert client.call(0, a.methods.ConnectionCloseOk()) == []
    assert client.server.should_close
    assert broker.connections == {}


def test_close_ok_that_never_comes_times_out(broker: Broker) -> None:
    client = Client(broker)
    client.handshake()
    client.open_channel()
    client.call(1, a.methods.ExchangeDeclare(exchange="x", type="nonsense"))
    broker.clock.advance(1.0)  # type: ignore[attr-defined]
    client.server.tick()
    assert client.server.should_close


def test_method_on_unopened_channel_is_channel_error(broker: Broker) -> None:
    client = Client(broker)
    client.handshake()
    (close,) = client.call(3, a.methods.QueueDeclare(queue="q"))
    assert (close.reply_code, close.reply_text) == (504, "CHANNEL_ERROR - expected 'channel.open'")


def test_more_channels_than_channel_max_is_not_allowed(broker: Broker) -> None:
    """As RabbitMQ 3.10: the count of open channels is limited, not the channel numbers."""
    client = Client(broker, channel_max=2)
    client.handshake()
    client.open_channel(7)
    client.open_channel(9)
    (close,) = client.call(3, a.methods.ChannelOpen())
    assert (close.reply_code, close.reply_text) == (
        530, "NOT_ALLOWED - number of channels opened (2) has reached the negotiated "
             "channel_max (2)")


def test_second_channel_open_is_a_channel_error(broker: Broker) -> None:
    client = Client(broker)
    client.handshake()
    client.open_channel(1)
    (close,) = client.call(1, a.methods.ChannelOpen())
    assert (close.reply_code, close.reply_text) == (504, "CHANNEL_ERROR - second 'channel.open' seen")


def test_client_close_handshake(broker: Broker) -> None:
    client = Client(broker)
    client.handshake()
    client.open_channel()
    assert client.call(1, a.methods.ChannelClose(reply_code=200, reply_text="bye", class_id=0,
                                         method_id=0)) == [a.methods.ChannelCloseOk()]
    assert client.call(0, a.methods.ConnectionClose(reply_code=200, reply_text="bye", class_id=0,
                                            method_id=0)) == [a.methods.ConnectionCloseOk()]
    assert broker.connections == {}
    # As RabbitMQ: the socket is left for the client to close; what it still sends is dropped.
    assert not client.server.should_close
    assert client.call(1, a.methods.ChannelOpen()) == []
    client.server.receive_data(b"")
    assert client.server.should_close


def test_after_its_close_ok_a_client_that_keeps_the_socket_is_dropped_after_30_s(
        broker: Broker) -> None:
    assert isinstance(broker.clock, ManualClock)
    client = Client(broker)
    client.handshake()
    client.call(0, a.methods.ConnectionClose(reply_code=200, reply_text="bye"))
    broker.clock.advance(29.9)
    client.server.tick()
    assert not client.server.should_close
    broker.clock.advance(0.1)
    client.server.tick()
    assert client.server.should_close


def test_publish_and_deliver_keep_the_encoded_properties(broker: Broker) -> None:
    client = Client(broker)
    client.handshake()
    client.open_channel()
    client.call(1, a.methods.QueueDeclare(queue="q"))
    assert client.call(1, a.methods.BasicConsume(queue="q", consumer_tag="c", no_ack=True))[0] == \
        a.methods.BasicConsumeOk(consumer_tag="c")
    props = {"content_type": "text/plain", "headers": {"n": 1}}
    (deliver,) = client.send(a.encode_message(1, a.methods.BasicPublish(exchange="", routing_key="q"),
                                              b"body", 131072, props))
    assert deliver.method == a.methods.BasicDeliver(consumer_tag="c", delivery_tag=1, redelivered=False,
                                            exchange="", routing_key="q")
    assert (deliver.properties, deliver.body) == (props, b"body")
    assert deliver.raw_properties == encode_properties(props)


def test_heartbeats_are_sent_and_a_silent_client_is_dropped(broker: Broker) -> None:
    clock: ManualClock = broker.clock  # type: ignore[assignment]
    client = Client(broker)
    client.handshake(heartbeat=10)
    clock.advance(5)
    client.server.tick()
    assert client.server.data_to_send() == HEARTBEAT_FRAME
    clock.advance(10)
    client.server.receive_data(HEARTBEAT_FRAME)  # the client is alive
    clock.advance(19)
    client.server.tick()
    assert not client.server.should_close
    clock.advance(2)
    client.server.tick()
    assert client.server.should_close
    assert broker.connections == {}


def test_blocked_publishers_are_told_when_they_publish_and_held_until_unblocked(
        broker: Broker) -> None:
    """RabbitMQ 3.10.8's reader: an alarm says nothing to a connection until it publishes;
    then connection.blocked (once), and nothing more of it is read until the alarm clears."""
    client = Client(broker)
    client.handshake()
    client.open_channel()
    client.call(1, a.methods.QueueDeclare(queue="q"))
    broker.block_publishers("low on memory")
    assert client.server.data_to_send() == b""
    publish = a.encode_message(1, a.methods.BasicPublish(exchange="", routing_key="q"), b"x",
                               131072, {})
    (blocked,) = client.send(publish + publish)
    assert blocked.method == a.methods.ConnectionBlocked(reason="low on memory")
    assert client.server.blocked
    assert client.send(publish) == []  # (held: not even read)
    assert broker.queues["q"].message_count == 0
    broker.unblock_publishers()
    client.server.publishers_unblocked()  # (what a transport does: this one is bare)
    frames = list(client.parser.feed(client.server.data_to_send()))
    assert [f.method for f in frames] == [a.methods.ConnectionUnblocked()]
    assert broker.queues["q"].message_count == 3
    assert not client.server.blocked


def test_deleting_a_consumed_queue_sends_basic_cancel(broker: Broker) -> None:
    client = Client(broker)
    client.handshake()
    client.open_channel()
    client.call(1, a.methods.QueueDeclare(queue="q"))
    client.call(1, a.methods.BasicConsume(queue="q", consumer_tag="c"))
    broker.connect().channel().queue_delete("q")
    frames = list(client.parser.feed(client.server.data_to_send()))
    assert frames[0].method == a.methods.BasicCancel(consumer_tag="c", no_wait=True)


def test_confirms_and_returns_over_the_wire(broker: Broker) -> None:
    client = Client(broker)
    client.handshake()
    client.open_channel()
    assert client.call(1, a.methods.ConfirmSelect()) == [a.methods.ConfirmSelectOk()]
    publish = a.encode_message(1, a.methods.BasicPublish(exchange="", routing_key="nowhere",
                                                 mandatory=True), b"x", 131072, {})
    returned, ack = client.send(publish)
    assert returned.method == a.methods.BasicReturn(reply_code=312, reply_text="NO_ROUTE", exchange="",
                                            routing_key="nowhere")
    assert ack.method == a.methods.BasicAck(delivery_tag=1, multiple=False)


def test_update_secret_is_answered(broker: Broker) -> None:
    client = Client(broker)
    client.handshake()
    assert client.call(0, a.methods.ConnectionUpdateSecret(new_secret="token", reason="refresh")) == [
        a.methods.ConnectionUpdateSecretOk()]
    assert client.server.state is ConnectionState.OPEN


@pytest.mark.parametrize(("channel_max", "frame_max", "reason"), [
    (0, 131072, "negotiated channel_max = 0 (no limit) is higher than the maximum allowed "
                "value (2047)"),
    (2048, 131072, "negotiated channel_max = 2048 is higher than the maximum allowed value (2047)"),
    (2047, 0, "negotiated frame_max = 0 is higher than the maximum allowed value (131072)"),
    (2047, 131073, "negotiated frame_max = 131073 is higher than the maximum allowed value "
                   "(131072)"),
    (2047, 4095, "negotiated frame_max = 4095 is lower than the minimum allowed value (4096)"),
])
def test_tune_ok_beyond_the_offer_is_refused_with_rabbitmqs_reason(
        broker: Broker, channel_max: int, frame_max: int, reason: str) -> None:
    """RabbitMQ 3.10 logs these reasons and resets the socket 3 s later without a frame;
    embroker says why in a connection.close (a deliberate difference, docs/conformance.md)."""
    client = Client(broker)
    client.send(a.PROTOCOL_HEADER)
    client.call(0, a.methods.ConnectionStartOk(client_properties=CLIENT_PROPERTIES,
                                               mechanism="PLAIN", response="\0guest\0guest"))
    (close,) = client.call(0, a.methods.ConnectionTuneOk(channel_max=channel_max,
                                                         frame_max=frame_max))
    assert close == a.methods.ConnectionClose(
        reply_code=530, reply_text=f"NOT_ALLOWED - failed to negotiate connection parameters: "
                                   f"{reason}")
    assert client.server.should_close


def test_server_properties_say_embroker_by_default() -> None:
    (start,) = Client(Broker()).send(a.PROTOCOL_HEADER)
    props = start.method.server_properties
    assert props["product"] == "embroker"
    assert "RabbitMQ's semantics" in props["information"]
    assert props["capabilities"]["publisher_confirms"] is True


def test_as_rabbitmq_presents_the_broker_as_that_version_and_still_says_what_it_is() -> None:
    broker = Broker(as_rabbitmq="3.10.8", server_properties={"cluster_name": "ci"})
    (start,) = Client(broker).send(a.PROTOCOL_HEADER)
    props = start.method.server_properties
    assert (props["product"], props["version"], props["cluster_name"]) == (
        "RabbitMQ", "3.10.8", "ci")
    assert props["platform"].startswith("Erlang/OTP")
    assert "embroker" in props["information"]
    assert props["capabilities"]["direct_reply_to"] is True


def test_server_properties_cannot_replace_the_capabilities() -> None:
    with pytest.raises(ValueError, match="capabilities"):
        Broker(server_properties={"capabilities": {}})
