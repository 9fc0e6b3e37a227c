"""One client never takes the broker down (issue #10): bugs stay with the connection or timer
they happened in, untrusted headers never stop the listener, stalled handshakes are closed,
accept failures back off, and the resource limits act as RabbitMQ's."""

from __future__ import annotations

import errno
import logging
import os
import socket
import subprocess
import sys
import textwrap
from typing import Any

import pika
import pytest
from pika.exceptions import ChannelClosedByBroker, ConnectionClosedByBroker

from embroker import Broker, ManualClock
from embroker.amqp091 import PROTOCOL_HEADER, ServerConnection, encode_method_frame
from embroker.amqp091.methods import ConnectionStartOk, ConnectionTuneOk
from embroker.model import Channel as ModelChannel
from embroker.server import Server
from embroker.testing import advance, wait_until


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def manual_broker(clock: ManualClock) -> Broker:
    return Broker(clock=clock)


def _connect(server: Server) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(server.url))


def test_poison_x_death_expiring_keeps_the_listener_serving(manual_broker: Broker) -> None:
    """The issue's reproduction: a count of "x" in a client's x-death, dead-lettered by TTL."""
    with manual_broker.serve() as server:
        conn = _connect(server)
        ch = conn.channel()
        ch.queue_declare("dead")
        ch.queue_declare("src", arguments={"x-dead-letter-exchange": "", "x-message-ttl": 100,
                                           "x-dead-letter-routing-key": "dead"})
        poison = {"x-death": [{"queue": "src", "reason": "expired", "count": "x"}]}
        ch.basic_publish("", "src", b"poison", pika.BasicProperties(headers=poison))
        ch.basic_publish("", "src", b"fine")
        assert ch.queue_declare("src", passive=True).method.message_count == 2
        advance(manual_broker, 0.1)
        got = [ch.basic_get("dead", auto_ack=True) for _ in range(2)]
        assert [body for _m, _p, body in got] == [b"poison", b"fine"]
        assert got[0][1].headers["x-death"][0]["count"] == 1
        other = _connect(server)  # the listener still accepts and serves
        assert other.channel().queue_declare("dead", passive=True).method.message_count == 0
        other.close()
        conn.close()
    assert server.errors == []


def test_a_bug_while_handling_one_connection_closes_it_with_541_and_spares_the_others(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: ModelChannel, queue: str = "") -> int:
        raise RuntimeError("injected bug")

    with broker.serve() as server:
        bystander = _connect(server)
        bystander_ch = bystander.channel()
        bystander_ch.queue_declare("q")
        victim = _connect(server)
        monkeypatch.setattr(ModelChannel, "queue_purge", broken)
        with pytest.raises(ConnectionClosedByBroker) as err:
            victim.channel().queue_purge("q")
        assert err.value.reply_code == 541
        assert err.value.reply_text == "INTERNAL_ERROR - internal error: RuntimeError: injected bug"
        monkeypatch.undo()
        bystander_ch.basic_publish("", "q", b"still here")
        assert bystander_ch.basic_get("q", auto_ack=True)[2] == b"still here"
        bystander.close()
    assert [str(e) for e in server.errors] == ["injected bug"]
    server.errors.clear()


def test_a_bug_sending_a_delivery_closes_the_consumer_not_the_publisher(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    from embroker.model import Delivered

    real = ServerConnection._send_event

    def fail_deliveries(self: ServerConnection, event: Any) -> None:
        if isinstance(event, Delivered):
            raise RuntimeError("cannot send this delivery")
        real(self, event)

    with broker.serve() as server:
        consumer = _connect(server)
        cch = consumer.channel()
        cch.queue_declare("q")
        cch.basic_consume("q", lambda *_: None)
        publisher = _connect(server)
        pch = publisher.channel()
        pch.confirm_delivery()
        monkeypatch.setattr(ServerConnection, "_send_event", fail_deliveries)
        pch.basic_publish("", "q", b"m")  # confirmed: the publisher goes on
        with pytest.raises(ConnectionClosedByBroker) as err:
            consumer.process_data_events(time_limit=2)
        assert err.value.reply_code == 541
        monkeypatch.undo()
        wait_until(lambda: broker.queues["q"].message_count == 1)  # ("one more", held)  # requeued, not lost
        assert pch.basic_get("q", auto_ack=True)[2] == b"m"
        publisher.close()
    assert [str(e) for e in server.errors] == ["cannot send this delivery"]
    server.errors.clear()


def test_a_bug_in_a_timer_is_kept_and_the_other_timers_still_run(broker: Broker) -> None:
    ran = []

    def bug() -> None:
        raise RuntimeError("timer bug")

    with broker.serve() as server:
        with broker.locked():
            now = broker.clock.monotonic()
            broker.clock.call_at(now, bug)
            broker.clock.call_at(now, lambda: ran.append("after"))
        server._wake()
        wait_until(lambda: ran == ["after"])
        conn = _connect(server)
        conn.close()
    assert [str(e) for e in server.errors] == ["timer bug"]
    server.errors.clear()


# -- handshakes that stall -------------------------------------------------------------------------

def _raw(server: Server, stage: int) -> socket.socket:
    """A socket that stops after ``stage`` steps of the handshake (0: nothing sent)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    if stage >= 1:
        sock.sendall(PROTOCOL_HEADER)
        sock.recv(65536)  # connection.start
    if stage >= 2:
        sock.sendall(encode_method_frame(0, ConnectionStartOk(
            client_properties={}, mechanism="PLAIN", response="\0guest\0guest", locale="en_US")))
        sock.recv(65536)  # connection.tune
    if stage >= 3:
        sock.sendall(encode_method_frame(0, ConnectionTuneOk(channel_max=2047, frame_max=131072)))
    return sock


def _closed(sock: socket.socket) -> bool:
    sock.settimeout(0.01)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_stalled_handshakes_are_closed_after_rabbitmqs_timeout(
        manual_broker: Broker, clock: ManualClock) -> None:
    """10 s from connecting to connection.open, whatever step the client stopped at
    (RabbitMQ's handshake_timeout; measured on 3.10: a socket that sent a valid tune-ok and no
    connection.open is reset 10 s after it connected)."""
    with manual_broker.serve() as server:
        stalled = {stage: _raw(server, stage) for stage in range(4)}
        wait_until(lambda: sorted(c.state.name for c in server.connections) == [
            "HEADER", "OPEN_VHOST", "START_OK", "TUNE_OK"])
        advance(manual_broker, 9.9)
        healthy = _connect(server)  # a client that finishes in time is not touched
        assert not any(_closed(sock) for sock in stalled.values())
        advance(manual_broker, 0.1)
        for sock in stalled.values():
            wait_until(lambda sock=sock: _closed(sock))  # type: ignore[misc]
        advance(manual_broker, 11)
        healthy.channel().queue_declare("fine")
        healthy.close()
        for sock in stalled.values():
            sock.close()
    assert server.errors == []


def test_fifty_stalled_sockets_do_not_lock_clients_out(manual_broker: Broker) -> None:
    with manual_broker.serve() as server:
        stalled = [_raw(server, 1) for _ in range(50)]
        advance(manual_broker, 10)
        wait_until(lambda: all(_closed(sock) for sock in stalled))
        assert server.connections == []
        for sock in stalled:
            sock.close()


# -- accept failures ------------------------------------------------------------------------------

def test_accept_failing_for_lack_of_descriptors_pauses_and_warns_once(
        broker: Broker, caplog: pytest.LogCaptureFixture) -> None:
    server = Server(broker)
    try:
        server._running = True
        (port,) = server._ports
        server._select_port(port)
        caplog.set_level(logging.WARNING, "embroker.server")
        full = OSError(errno.EMFILE, "Too many open files")
        for _ in range(5):
            server._accept_failed(port, full)
        assert not port.selected  # not selected for reading until the pause ends
        assert port.backoff == 1.0  # 0.05 doubled, capped at a second
        warnings = [r.getMessage() for r in caplog.records]
        assert len(warnings) == 1
        assert f"cannot accept connections on port {server.port}" in warnings[0]
    finally:
        server._running = False
        server.stop()


_FD_LIMITED_SERVER = textwrap.dedent("""
    import logging, resource, sys
    from embroker import Broker
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))
    server = Broker().serve()
    print(server.port, flush=True)
    sys.stdin.read()          # until the test closes our stdin
    server.stop()
""")


@pytest.mark.skipif(sys.platform != "linux", reason="needs RLIMIT_NOFILE semantics of Linux")
def test_out_of_descriptors_the_listener_backs_off_and_recovers() -> None:
    proc = subprocess.Popen([sys.executable, "-c", _FD_LIMITED_SERVER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert proc.stdout is not None
        assert proc.stdin is not None
        port = int(proc.stdout.readline())
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(80)]
        url = f"amqp://guest:guest@127.0.0.1:{port}/"

        def refused() -> bool:  # the kernel queues the connect; the broker cannot accept it
            try:
                pika.BlockingConnection(pika.URLParameters(url + "?stack_timeout=1"))
            except Exception:  # pika's handshake timeout (AMQPConnectorStackTimeout)
                return True
            return False

        assert refused()
        for sock in socks:
            sock.close()
        conn = wait_until(lambda: pika.BlockingConnection(pika.URLParameters(url)), timeout=10)
        conn.channel().queue_declare("recovered")
        conn.close()
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(10)
    stderr = proc.stderr.read() if proc.stderr is not None else ""
    assert stderr.count("cannot accept connections") == 1, stderr
    assert "Traceback" not in stderr


# -- resource limits --------------------------------------------------------------------------------

def test_a_message_over_max_message_size_is_refused_as_rabbitmq_does() -> None:
    broker = Broker(max_message_size=1000)
    with broker.serve() as server:
        conn = _connect(server)
        ch = conn.channel()
        ch.queue_declare("q")
        ch.basic_publish("", "q", b"x" * 1000)
        ch.basic_publish("", "q", b"x" * 1001)  # the broker closes the channel...
        with pytest.raises(ChannelClosedByBroker) as err:
            ch.queue_declare("q", passive=True)  # ...which the next call sees
        assert err.value.reply_code == 406
        assert err.value.reply_text == ("PRECONDITION_FAILED - message size 1001 is larger "
                                        "than configured max size 1000")
        assert broker.queues["q"].message_count == 1
        conn.close()
    assert broker.trace[-1].outcome == "refused"


def test_the_memory_watermark_blocks_publishers_until_queues_drain() -> None:
    broker = Broker(memory_high_watermark=5000)
    events: list[str] = []
    with broker.serve() as server:
        conn = _connect(server)
        conn.add_on_connection_blocked_callback(lambda _c, f: events.append(f.method.reason))
        conn.add_on_connection_unblocked_callback(lambda _c, _f: events.append("unblocked"))
        ch = conn.channel()
        ch.queue_declare("q")
        for _ in range(6):
            ch.basic_publish("", "q", b"x" * 1000)
        wait_until(lambda: broker.queues["q"].message_count == 6)
        broker.tick()
        assert broker.publishers_blocked
        ch.basic_publish("", "q", b"one more")  # (told as it publishes, as RabbitMQ's reader)
        wait_until(lambda: conn.process_data_events(0) or events == ["low on memory"])
        broker.connect().channel().queue_purge("q")
        broker.tick()
        wait_until(lambda: conn.process_data_events(0) or events[-1:] == ["unblocked"])
        wait_until(lambda: broker.queues["q"].message_count == 1)  # ("one more", held)
        conn.close()
    assert server.errors == []
