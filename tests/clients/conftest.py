"""Helpers for the real-client tests (the broker and server fixtures are in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def wait_until(predicate, timeout: float = 5.0) -> None:
    """Poll ``predicate`` until it holds (for effects that cross the listener's thread)."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.001)


def node_packages(where: Path, script: Path, *packages: str) -> Path:
    """A folder with npm ``packages`` installed and the Node ``script`` copied in (for a
    module-scoped fixture); skips the test without node and npm or when npm cannot install."""
    import shutil
    import subprocess

    import pytest

    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("needs node and npm")
    done = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", *packages],
                          cwd=where, capture_output=True, text=True, timeout=180, check=False)
    if done.returncode != 0:
        pytest.skip(f"npm could not install {' and '.join(packages)}: "
                    f"{done.stderr.strip()[-200:]}")
    shutil.copy(script, where / script.name)
    return where


def run_node(where: Path, script: Path, *args: str) -> dict[str, Any]:
    """Run a Node script copied by :func:`node_packages`; the JSON on its last line."""
    import json
    import subprocess

    done = subprocess.run(["node", script.name, *args], cwd=where, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def raw_amqp_socket(port: int):
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
    expect(a.methods.ConnectionStart)
    sock.sendall(a.encode_method_frame(0, a.methods.ConnectionStartOk(
        client_properties={}, mechanism="PLAIN", response="\0guest\0guest", locale="en_US")))
    expect(a.methods.ConnectionTune)
    sock.sendall(a.encode_method_frame(0, a.methods.ConnectionTuneOk(channel_max=10, frame_max=131072,
                                                             heartbeat=0)))
    sock.sendall(a.encode_method_frame(0, a.methods.ConnectionOpen(virtual_host="/")))
    expect(a.methods.ConnectionOpenOk)
    sock.sendall(a.encode_method_frame(1, a.methods.ChannelOpen()))
    expect(a.methods.ChannelOpenOk)
    return sock
