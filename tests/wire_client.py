"""A raw AMQP 0-9-1 client over a socket, for sending bytes no client library would send.

Strings go through embroker's own codec, which encodes a surrogate from ``surrogateescape``
(``"\\udcff"``) as the byte it stands for (0xFF): a client property, a queue argument, a header
or a name can carry any bytes. It talks to embroker's listener and to RabbitMQ alike, so a test
can send the same bytes to both.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from embroker import amqp091 as a
from embroker.amqp091._assembly import ContentAssembler
from embroker.amqp091._frames import encode_message

__all__ = ["RawClient", "raw"]

M = a.methods


def raw(data: bytes) -> str:
    """``data`` as embroker's codec decodes a wire string of those bytes (and encodes it
    back): UTF-8 with ``surrogateescape``."""
    return data.decode("utf-8", "surrogateescape")


class RawClient:
    """One connection with channel 1 open, logged in with PLAIN (``user``, ``password``).

    ``call`` sends a method and returns the first method or command the server answers; a
    connection.close from the server comes back as such (not raised)."""

    def __init__(self, host: str, port: int, client_properties: dict[str, Any] | None = None,
                 *, user: str = "guest", password: str = "guest", vhost: str = "/",
                 timeout: float = 5.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._parser = a.FrameParser(max_frame_size=131072)
        self._assembler = ContentAssembler()
        self._pending: list[Any] = []
        self.sock.sendall(a.PROTOCOL_HEADER)
        self.next()
        self.send(0, M.ConnectionStartOk(client_properties=client_properties or {},
                                         mechanism="PLAIN", response=f"\0{user}\0{password}",
                                         locale="en_US"))
        tune = self.next()
        if not isinstance(tune, M.ConnectionTune):
            raise ConnectionError(f"login refused: {tune!r}")
        self.send(0, M.ConnectionTuneOk(channel_max=tune.channel_max, frame_max=tune.frame_max,
                                        heartbeat=0))
        self.send(0, M.ConnectionOpen(virtual_host=vhost))
        opened = self.next()
        if not isinstance(opened, M.ConnectionOpenOk):
            raise ConnectionError(f"not opened: {opened!r}")
        self.send(1, M.ChannelOpen())
        self.next()

    def send(self, channel: int, method: a.Method) -> None:
        self.sock.sendall(a.encode_method_frame(channel, method))

    def next(self) -> Any:
        """The next method (or content command: a delivery) the server sent; EOFError when
        the server closed the socket first."""
        while not self._pending:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("the server closed the socket")
            for frame in self._parser.feed(data):
                if isinstance(frame, a.HeartbeatFrame):
                    continue
                command = self._assembler.add(frame)
                if command is not None:
                    self._pending.append(command if command.body is not None and
                                         command.method.HAS_CONTENT else command.method)
        return self._pending.pop(0)

    def call(self, method: a.Method, channel: int = 1) -> Any:
        self.send(channel, method)
        return self.next()

    def publish(self, exchange: str, routing_key: str, body: bytes,
                properties: dict[str, Any] | None = None) -> None:
        self.sock.sendall(encode_message(1, M.BasicPublish(exchange=exchange,
                                                           routing_key=routing_key),
                                         body, 131072, properties=properties))

    def confirm(self) -> None:
        """Publisher confirms on channel 1: :meth:`publish` then :meth:`next` is its ack."""
        self.call(M.ConfirmSelect())

    def close(self) -> None:
        try:
            self.call(M.ConnectionClose(reply_code=200, reply_text="bye", class_id=0,
                                        method_id=0), channel=0)
        except (OSError, EOFError):  # (the server may have closed it already)
            pass
        finally:
            self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def wait_for(predicate: Any, timeout: float = 10.0, interval: float = 0.05) -> Any:
    """Poll ``predicate`` until it gives something true (RabbitMQ's statistics lag), within
    ``timeout`` seconds; its last answer."""
    deadline = time.monotonic() + timeout
    while True:
        found = predicate()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(interval)
