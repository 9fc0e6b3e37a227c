"""A STOMP connection driven with bytes in a test: frames in, frames out, no socket."""

from __future__ import annotations

from typing import Any

from embroker.model import Broker
from embroker.stomp import Frame, FrameReader, StompConnection


class Wire:
    """A :class:`StompConnection` and what it sent, read back as frames."""

    def __init__(self, broker: Broker, **options: Any) -> None:
        options.setdefault("peer", "127.0.0.1:50000")
        options.setdefault("local", "127.0.0.1:61613")
        self.broker = broker
        self.conn = StompConnection(broker, **options)
        self.reader = FrameReader(1 << 30)

    def send(self, data: bytes | str) -> list[Frame]:
        """Feed ``data``; the frames the connection sent in answer (and before)."""
        self.conn.receive_data(data.encode() if isinstance(data, str) else data)
        return self.frames()

    def frames(self) -> list[Frame]:
        self.reader.feed(self.conn.data_to_send())
        found = []
        while (frame := self.reader.next()) is not None:
            found.append(frame)
        return found

    def connect(self, user: str = "guest", password: str = "guest", version: str = "1.2",
                vhost: str = "/", extra: str = "") -> Frame:
        frames = self.send(f"CONNECT\naccept-version:{version}\nhost:{vhost}\nlogin:{user}\n"
                           f"passcode:{password}\n{extra}\n\x00")
        assert len(frames) == 1, frames
        return frames[0]


def frame(command: str, *headers: str, body: str = "") -> str:
    """A frame's text: ``frame("SEND", "destination:/queue/q", body="hi")``."""
    return command + "\n" + "".join(h + "\n" for h in headers) + "\n" + body + "\x00"
