"""broker.incidents: what the broker refused (channel and connection errors, with the method) and
the connections it dropped, for a failed test's report (issue 44)."""

from __future__ import annotations

import pytest

from embroker import Broker, ManualClock
from embroker import amqp091 as a
from embroker.amqp091._connection import ServerConnection
from embroker.amqp091._frames import HEARTBEAT_FRAME
from embroker.errors import CommandInvalid, NotFound
from embroker.model import Incident
from embroker.model._incidents import INCIDENTS_KEPT


def opened(broker: Broker, heartbeat: int = 0) -> ServerConnection:
    conn = ServerConnection(broker, peer="10.0.0.7:5000", loopback=True)
    conn.receive_data(a.PROTOCOL_HEADER)
    conn.receive_data(a.encode_method_frame(0, a.methods.ConnectionStartOk(
        client_properties={"connection_name": "billing"}, mechanism="PLAIN",
        response="\0guest\0guest", locale="en_US")))
    conn.receive_data(a.encode_method_frame(0, a.methods.ConnectionTuneOk(
        channel_max=10, frame_max=131072, heartbeat=heartbeat)))
    conn.receive_data(a.encode_method_frame(0, a.methods.ConnectionOpen(virtual_host="/")))
    conn.receive_data(a.encode_method_frame(1, a.methods.ChannelOpen()))
    conn.data_to_send()
    return conn


def test_a_channel_error_on_the_wire_names_the_connection_channel_and_method() -> None:
    broker = Broker(clock=ManualClock())
    broker.manual_clock.advance(7)
    conn = opened(broker)
    conn.receive_data(a.encode_method_frame(1, a.methods.QueueDeclare(queue="gone",
                                                                      passive=True)))
    (incident,) = broker.incidents
    assert incident == Incident(
        7.0, broker.clock.time(), "connection 10.0.0.7:5000 ('billing', user 'guest', vhost '/')",
        1, 404, "NOT_FOUND - no queue 'gone' in vhost '/'", "queue.declare", dropped=False)
    assert str(incident) == ("channel 1 of connection 10.0.0.7:5000 ('billing', user 'guest', "
                             "vhost '/') closed: 404 NOT_FOUND - no queue 'gone' in vhost '/' "
                             "(refusing queue.declare)")


def test_a_connection_error_and_a_missed_heartbeat_drop() -> None:
    broker = Broker(clock=ManualClock())
    refused = opened(broker)
    refused.receive_data(a.encode_method_frame(1, a.methods.ExchangeDeclare(
        exchange="x", type="nonsense")))
    silent = opened(broker, heartbeat=5)
    broker.manual_clock.advance(11)
    silent.tick()
    first, second = broker.incidents
    assert (first.channel, first.reply_code, first.method, first.dropped) == (
        0, 503, "exchange.declare", False)
    assert str(second) == ("connection 10.0.0.7:5000 ('billing', user 'guest', vhost '/') "
                           "dropped: 501 FRAME_ERROR - missed heartbeats from client, "
                           "timeout: 5s")
    assert (second.at, second.dropped) == (11.0, True)
    silent.receive_data(HEARTBEAT_FRAME)  # (after the end: nothing more)
    assert len(broker.incidents) == 2


def test_the_in_process_client_s_refusals_and_the_bound() -> None:
    broker = Broker()
    channel = broker.connect().channel()
    with pytest.raises(NotFound):
        channel.queue_declare("gone", passive=True)
    (incident,) = broker.incidents
    assert str(incident) == ("channel 1 of in-process connection 1 (user 'guest', vhost '/') "
                             "closed: 404 NOT_FOUND - no queue 'gone' in vhost '/' (refusing "
                             "queue_declare())")
    connection = broker.connect()
    for _ in range(INCIDENTS_KEPT + 5):
        with pytest.raises(CommandInvalid):
            connection.channel().exchange_declare("x", "nonsense")
        connection = broker.connect()
    assert len(broker.incidents) == INCIDENTS_KEPT
    assert broker.incidents[0].method == "exchange_declare()"


def test_a_reset_forgets_them() -> None:
    broker = Broker()
    broker.mark_baseline()
    with pytest.raises(NotFound):
        broker.connect().channel().queue_declare("gone", passive=True)
    broker.reset()
    assert list(broker.incidents) == []
