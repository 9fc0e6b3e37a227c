"""The log says why each connection ended (once) and why each channel closed."""

from __future__ import annotations

import logging
import socket

import pika
import pytest
from pika.exceptions import ChannelClosedByBroker, ProbableAuthenticationError

from embroker import Broker, ManualClock
from embroker.amqp091 import PROTOCOL_HEADER, encode_method_frame
from embroker.amqp091.methods import ConnectionOpen, ConnectionStartOk, ConnectionTuneOk
from embroker.server import Server
from embroker.testing import advance, wait_until


def ended(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "embroker.server" and " ended: " in r.getMessage()]


def connect(url: str, name: str = "billing") -> pika.BlockingConnection:
    params = pika.URLParameters(url)
    params.client_properties = {"connection_name": name}
    return pika.BlockingConnection(params)


@pytest.fixture(autouse=True)
def info_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="embroker")


def test_a_client_close_is_logged_once_with_the_connection_name(
        broker: Broker, server: Server, caplog: pytest.LogCaptureFixture) -> None:
    conn = connect(server.url)
    conn.close()
    wait_until(lambda: ended(caplog))
    broker.settle()
    (line,) = ended(caplog)
    assert line.startswith("connection 127.0.0.1:")
    assert line.endswith(" ('billing', user 'guest', vhost '/') ended: closed by the client "
                         "(connection.close 200 'Normal shutdown')")


def test_refused_login_names_the_user_and_mechanism(
        broker: Broker, server: Server, caplog: pytest.LogCaptureFixture) -> None:
    # As RabbitMQ 3.10.8 logs it (rabbit_reader's auth_fail; checked in its log file)
    with pytest.raises(ProbableAuthenticationError):
        connect(server.url.replace("guest:guest", "bob:wrong"))
    wait_until(lambda: ended(caplog))
    (line,) = ended(caplog)
    assert line.endswith("ended: PLAIN login refused: user 'bob' - invalid credentials")


def test_unknown_vhost(broker: Broker, server: Server, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(pika.exceptions.AMQPConnectionError):
        connect(server.url + "nowhere")
    wait_until(lambda: ended(caplog))
    (line,) = ended(caplog)
    assert line.endswith("ended: 530 NOT_ALLOWED - vhost nowhere not found")


def test_a_channel_error_and_an_abrupt_end(broker: Broker, server: Server,
                                           caplog: pytest.LogCaptureFixture) -> None:
    conn = connect(server.url, "checker")
    with pytest.raises(ChannelClosedByBroker):
        conn.channel().queue_declare("missing", passive=True)
    channel_lines = [r.getMessage() for r in caplog.records if "channel 1 closed" in r.getMessage()]
    assert len(channel_lines) == 1
    assert channel_lines[0].endswith(
        "('checker', user 'guest', vhost '/'): channel 1 closed by the broker: "
        "404 NOT_FOUND - no queue 'missing' in vhost '/'")
    conn._impl._transport._sock.close()  # the socket goes without connection.close
    wait_until(lambda: ended(caplog))
    (line,) = ended(caplog)
    assert line.endswith("ended: the client closed the socket without connection.close")


def handshake(server: Server, heartbeat: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(PROTOCOL_HEADER)
    sock.recv(65536)
    sock.sendall(encode_method_frame(0, ConnectionStartOk(
        client_properties={"connection_name": "silent"}, mechanism="PLAIN",
        response="\0guest\0guest", locale="en_US")))
    sock.recv(65536)
    sock.sendall(encode_method_frame(0, ConnectionTuneOk(channel_max=2047, frame_max=131072,
                                                         heartbeat=heartbeat)))
    sock.sendall(encode_method_frame(0, ConnectionOpen(virtual_host="/")))
    sock.recv(65536)
    return sock


def test_heartbeat_and_handshake_timeouts(caplog: pytest.LogCaptureFixture) -> None:
    broker = Broker(clock=ManualClock())
    with broker.serve() as server:
        silent = handshake(server, heartbeat=1)
        stalled = socket.create_connection(("127.0.0.1", server.port))
        broker.settle()
        advance(broker, 11)
        wait_until(lambda: len(ended(caplog)) == 1)  # the handshake's: on the broker's clock
        # The silent client lives in real time: the broker's clock counts its silence once it
        # has been silent for two intervals of real time too (about 2 s here).

        def dropped() -> bool:
            advance(broker, 1)
            return len(ended(caplog)) == 2
        wait_until(dropped, timeout=10)
        lines = sorted(ended(caplog))
        silent.close()
        stalled.close()
    assert any(line.endswith("('silent', user 'guest', vhost '/') ended: 501 FRAME_ERROR - "
                             "missed heartbeats from client, timeout: 1s") for line in lines)
    assert any("ended: 501 FRAME_ERROR - handshake timeout: the client did not finish the "
               "handshake in time (stopped waiting for the protocol header)" in line
               for line in lines)


def test_a_socket_client_is_not_silent_while_the_test_moves_the_clock(
        caplog: pytest.LogCaptureFixture) -> None:
    """A client on a socket lives in real time: an hour of the broker's ManualClock in one
    ``advance`` is not its silence (issue 44: pika over TCP was dropped at the listener's next
    look at heartbeats, half a second later)."""
    broker = Broker(clock=ManualClock())
    with broker.serve() as server:
        client = handshake(server, heartbeat=5)
        advance(broker, 3600)
        # The listener's next look at heartbeats sends one (the broker's clock says it is due):
        # the same look that would have dropped the client.
        got = b""
        while b"\x08\x00\x00\x00\x00\x00\x00\xce" not in got:
            data = client.recv(65536)
            assert data, f"the broker closed the connection: {ended(caplog)}"
            got += data
        assert len(server.connections) == 1
        client.close()
