"""A receiving link's first transfers reach the client after its attach, in a later write.

RabbitMQ answers a receiving link's attach from the session, and its first transfers come after
the link's credit has gone to the queue's process and messages have come back: the client reads
the attach on its own first. Clients rely on it without knowing: RabbitMQ's AMQP 1.0 Python
client runs a consumer's handler while ``connection.consumer()`` waits for the attach, so a
handler that stops the consumer (as its examples and tests do, by raising) would raise out of
``consumer()`` if the first transfers came with the attach. embroker's connection says where the
attach's answer ends (``pause_at``) and the listener writes the rest a moment later."""

from __future__ import annotations

from typing import Any

import pytest

import embroker._listener_loop as loop_module
import embroker.server as server_module
from embroker import Broker, ManualClock
from embroker._listener import _Client
from embroker.amqp10 import Attach, Flow, ServerConnection, Source, Target, Transfer, UInt
from embroker.amqp10_common._frames import encode_frame

from .helpers import Client


@pytest.fixture
def broker() -> Broker:
    b = Broker(clock=ManualClock())
    ch = b.connect().channel()
    ch.queue_declare("q")
    for i in range(3):
        ch.basic_publish("", "q", b"%d" % i)
    return b


def _attach_and_flow(handle: int = 0) -> bytes:
    """What proton sends when a receiver opens: the attach and its credit, in one write."""
    return encode_frame(0, Attach(name=f"r{handle}", handle=UInt(handle), role=True,
                                  source=Source(address="/queues/q"), target=Target())) + \
        encode_frame(0, Flow(next_incoming_id=UInt(0), incoming_window=UInt(100),
                             next_outgoing_id=UInt(0), outgoing_window=UInt(100),
                             handle=UInt(handle), delivery_count=UInt(0),
                             link_credit=UInt(10)))


def test_pause_at_ends_the_attach_answer_when_transfers_follow_it(broker: Broker) -> None:
    client = Client.opened(broker)
    connection = client.connection
    connection.receive_data(_attach_and_flow())
    data = connection.data_to_send()
    assert connection.pause_at is not None
    client.reader.feed(data[:connection.pause_at])
    first = client.reader.next_frame()
    assert first is not None
    assert isinstance(first.performative, Attach)
    assert client.reader.next_frame() is None  # the attach's answer alone
    client.reader.feed(data[connection.pause_at:])
    rest = [client.reader.next_frame() for _ in range(3)]
    assert all(f is not None and isinstance(f.performative, Transfer) for f in rest)


def test_no_pause_without_transfers_after_the_attach(broker: Broker) -> None:
    client = Client.opened(broker)
    connection = client.connection
    replies = client.attach_receiver("/queues/q")  # no credit yet: the attach's answer only
    assert [type(r) for r in replies] == [Attach]
    assert connection.pause_at is None


class _Socket:
    """What the listener writes to, recorded (a socket that takes everything)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def send(self, data: Any) -> int:
        self.writes.append(bytes(data))
        return len(data)

    def fileno(self) -> int:
        return 1_000_000

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", 5672)


def test_the_listener_writes_the_rest_after_the_pause(broker: Broker,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_module, "_ATTACH_PAUSE", 3600.0)  # (released by hand below)
    server = server_module.Server(broker)
    try:
        socket = _Socket()
        client = _Client(socket, "test", server._connection)  # type: ignore[arg-type]
        handshake = Client(client.conn)
        handshake.open()
        handshake.begin()
        client.conn.receive_data(_attach_and_flow())
        server._write(client)
        assert client in server._paused
        reader = Client(ServerConnection(broker)).reader
        reader.feed(b"".join(socket.writes))
        kinds = []
        while (frame := reader.next_frame()) is not None:
            kinds.append(type(frame.performative).__name__)
        assert kinds[-1] == "Attach"  # written: up to the attach's answer
        assert len(client.wbuf) > 0  # held: the transfers
        del server._paused[client]
        server._write(client)
        reader.feed(socket.writes[-1])
        assert [type(f.performative).__name__ for f in iter(reader.next_frame, None)] == [
            "Transfer"] * 3
    finally:
        server.stop()
