"""Helpers for the real-client tests (the broker and server fixtures are in tests/conftest.py)."""

from __future__ import annotations


def wait_until(predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    """Poll ``predicate`` until it holds (for effects that cross the listener's thread)."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.001)


def raw_amqp_socket(port: int):  # type: ignore[no-untyped-def]
    """A socket that has done the AMQP handshake by hand and opened channel 1."""
    import socket

    from embroker import amqp091 as a

    sock = socket.create_connection(("127.0.0.1", port), timeout=2)
    parser = a.FrameParser(max_frame_size=131072)

    def expect(kind: type) -> None:
        while True:
            for frame in parser.feed(sock.recv(65536)):
                assert isinstance(frame.method, kind), frame
                return

    sock.sendall(a.PROTOCOL_HEADER)
    expect(a.ConnectionStart)
    sock.sendall(a.encode_method_frame(0, a.ConnectionStartOk(
        client_properties={}, mechanism="PLAIN", response="\0guest\0guest", locale="en_US")))
    expect(a.ConnectionTune)
    sock.sendall(a.encode_method_frame(0, a.ConnectionTuneOk(channel_max=10, frame_max=131072,
                                                             heartbeat=0)))
    sock.sendall(a.encode_method_frame(0, a.ConnectionOpen(virtual_host="/")))
    expect(a.ConnectionOpenOk)
    sock.sendall(a.encode_method_frame(1, a.ChannelOpen()))
    expect(a.ChannelOpenOk)
    return sock
