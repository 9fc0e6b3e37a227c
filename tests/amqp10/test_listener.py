"""The listener serves AMQP 0-9-1 and 1.0 on one port (told apart by the protocol header), and
AMQP 1.0 alone on ``amqp10_port``; hostile bytes cost one connection, never the listener."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pika
import pytest

from embroker import Broker
from embroker.amqp091 import PROTOCOL_HEADER
from embroker.amqp10 import AMQP_HEADER, SASL_HEADER
from embroker.server import Server


def _exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        received = b""
        while True:
            try:
                chunk = sock.recv(4096)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            received += chunk
        return received


def test_one_port_serves_both_protocols(server: Server) -> None:
    proton = pytest.importorskip("proton.utils")
    pika_conn = pika.BlockingConnection(pika.URLParameters(server.url))
    pika_conn.channel().queue_declare("shared")
    c = proton.BlockingConnection(server.amqp10_url, timeout=5, allowed_mechs="PLAIN")
    c.create_sender("/queues/shared").send(proton_message("from 1.0"))
    _m, _p, body = pika_conn.channel().basic_get("shared", auto_ack=True)
    assert body == b"\x00Sw\xa1\x08from 1.0"
    c.close()
    pika_conn.close()


def proton_message(body: str) -> Any:
    from proton import Message
    return Message(body=body)


def test_a_bare_amqp10_header_is_answered_with_the_sasl_header(server: Server) -> None:
    assert _exchange(server.port, AMQP_HEADER) == SASL_HEADER


def test_the_amqp10_port_serves_amqp10_alone(broker: Broker) -> None:
    with broker.serve(amqp10_port=0) as server:
        assert server.amqp10_port is not None
        assert server.amqp10_port != server.port
        assert server.amqp10_url.endswith(f":{server.amqp10_port}")
        # A 0-9-1 client there is answered as AMQP 1.0 answers a header it does not take.
        assert _exchange(server.amqp10_port, PROTOCOL_HEADER) == SASL_HEADER
        with socket.create_connection(("127.0.0.1", server.amqp10_port), timeout=5) as sock:
            sock.sendall(SASL_HEADER)
            assert sock.recv(8) == SASL_HEADER  # then the mechanisms
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(PROTOCOL_HEADER)  # the shared port still speaks 0-9-1
            start = sock.recv(4096)
        assert (start[0], start[7:11]) == (1, b"\x00\x0a\x00\x0a")  # connection.start
        assert server.errors == []


@pytest.mark.parametrize("garbage", [
    b"\xff" * 100, b"\x00\x00\x00\x08\x02\x00\x00\x00" * 3, b"\x00\x00\x00\x07\x02\x00\x00\x00",
    b"\x00\x00\x00\x14\x02\x01\x00\x00\x00\x53\x41\xd0\xff\xff\xff\xff\xff\xff\xff\xff",
])
def test_hostile_bytes_after_a_10_header_close_that_connection_alone(
        server: Server, garbage: bytes) -> None:
    _exchange(server.port, SASL_HEADER + garbage)
    _exchange(server.port, SASL_HEADER + b"\x00\x00\x00\x10\x02\x01\x00\x00" + garbage)
    assert server.errors == []
    pika.BlockingConnection(pika.URLParameters(server.url)).close()  # the listener goes on


def test_serve_amqp10_port_on_the_command_line() -> None:
    process = subprocess.Popen([sys.executable, "-m", "embroker", "serve", "--port", "0",
                                "--amqp10-port", "0", "--host", "127.0.0.1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "AMQP 0-9-1 and 1.0" in line
        port = int(line.split("AMQP 1.0 alone on ")[1].split(";")[0].rsplit(":", 1)[1])
        assert _exchange(port, PROTOCOL_HEADER) == SASL_HEADER
    finally:
        process.terminate()
        process.wait(10)
