"""Helpers for the AMQP 1.0 tests: the recorded reference session, and a byte-level client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from embroker import Broker
from embroker.amqp10 import (
    AMQP_HEADER,
    FRAME_SASL,
    SASL_HEADER,
    Attach,
    Begin,
    Frame,
    FrameReader,
    Open,
    SaslInit,
    ServerConnection,
    Source,
    Symbol,
    Target,
    UInt,
    encode_frame,
)

DATA = Path(__file__).parent / "data"


def reference_session() -> dict[str, list[tuple[str, bytes]]]:
    """The session proton had with RabbitMQ 3.10 (shared notes, section 2.3), both directions:
    ``{"C->S": [(what, bytes), ...], "S->C": [...]}``; ``what`` is ``header`` or the
    performative's name."""
    session: dict[str, list[tuple[str, bytes]]] = {}
    direction = ""
    pending = ""
    for line in (DATA / "reference_session_hex.txt").read_text().splitlines():
        if line.startswith("====="):
            direction = line.split()[1]
            session[direction] = []
        elif "proto-header" in line:
            session[direction].append(("header", bytes.fromhex(line.split(":", 1)[1])))
        elif "perf=" in line:
            pending = line.split("perf=")[1]
        elif line.startswith("    ") and pending:
            session[direction].append((pending, bytes.fromhex(line)))
            pending = ""
    return session


class Client:
    """A byte-level AMQP 1.0 client for a sans-IO :class:`ServerConnection`."""

    def __init__(self, connection: ServerConnection) -> None:
        self.connection = connection
        self.reader = FrameReader(1 << 20)
        self._headers_due = 0

    @classmethod
    def opened(cls, broker: Broker, peer: str = "test") -> Client:
        """A client of a new loopback connection to ``broker``, open, with a session begun."""
        client = cls(ServerConnection(broker, loopback=True, peer=peer))
        client.open()
        client.begin()
        return client

    def send(self, data: bytes) -> None:
        self.connection.receive_data(data)

    def send_frame(self, performative: Any, channel: int = 0, payload: bytes = b"") -> None:
        self.send(encode_frame(channel, performative, payload))

    def received(self) -> list[Any]:
        """What the server sent since the last call: headers as bytes, frames as
        :class:`Frame`."""
        self.reader.feed(self.connection.data_to_send())
        out: list[Any] = []
        while True:
            if self.reader.buffered >= 8 and self._peek_header():
                out.append(self.reader.next_header())
                continue
            frame = self.reader.next_frame()
            if frame is None:
                return out
            out.append(frame)

    def _peek_header(self) -> bool:
        buffer = self.reader._buffer[self.reader._pos:self.reader._pos + 4]
        return bytes(buffer) == b"AMQP"

    def performatives(self) -> list[Any]:
        return [f.performative for f in self.received() if isinstance(f, Frame)]

    def login(self, user: str = "guest", password: str = "guest") -> None:
        self.send(SASL_HEADER)
        self.send(encode_frame(0, SaslInit(Symbol("PLAIN"), f"\0{user}\0{password}".encode()),
                               kind=FRAME_SASL))

    def open(self, **fields: Any) -> list[Any]:
        """SASL PLAIN, the AMQP header and open; returns what the server answered."""
        self.login()
        self.send(AMQP_HEADER)
        fields.setdefault("container_id", "test-client")
        self.send_frame(Open(**fields))
        return self.received()

    def begin(self, channel: int = 0, window: int = 2**31 - 1) -> Begin:
        self.send_frame(Begin(next_outgoing_id=UInt(0), incoming_window=UInt(window),
                              outgoing_window=UInt(2**31 - 1)), channel)
        replies = self.performatives()
        assert isinstance(replies[-1], Begin), replies
        return replies[-1]

    def attach_sender(self, address: str | None, handle: int = 0, channel: int = 0,
                      **fields: Any) -> list[Any]:
        self.send_frame(Attach(name=f"sender-{handle}", handle=UInt(handle), role=False,
                               source=Source(), target=Target(address=address),
                               initial_delivery_count=UInt(0), **fields), channel)
        return self.performatives()

    def attach_receiver(self, address: str, handle: int = 0, channel: int = 0,
                        **fields: Any) -> list[Any]:
        source = fields.pop("source", None) or Source(address=address)
        self.send_frame(Attach(name=f"receiver-{handle}", handle=UInt(handle), role=True,
                               source=source, target=Target(), **fields), channel)
        return self.performatives()


