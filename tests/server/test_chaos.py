"""A bounded chaos test (issue #10): publishers with confirms and consumers, as processes killed
with SIGKILL at random points, and raw sockets reset in the middle of a frame. Nothing confirmed
is lost, nothing is delivered twice unless flagged redelivered, and the listener records no
error. ``EMBROKER_CHAOS_SECONDS`` sets how long it runs (15 s by default); the random points
come from a fixed seed, so a failure can be replayed."""

from __future__ import annotations

import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import IO

import pytest

from embroker import Broker
from embroker.amqp091 import PROTOCOL_HEADER, encode_method_frame
from embroker.amqp091.methods import (
    BasicPublish,
    ChannelOpen,
    ConnectionOpen,
    ConnectionStartOk,
    ConnectionTuneOk,
)
from embroker.testing import wait_until

CLIENT = Path(__file__).with_name("chaos_client.py")
QUEUE = "chaos"
SECONDS = float(os.environ.get("EMBROKER_CHAOS_SECONDS", "15"))
SEED = 20261123


class _Process:
    def __init__(self, role: str, url: str, arg: str, folder: Path, n: int) -> None:
        self.role = role
        self.output_path = folder / f"{role}-{n}.out"
        self._output: IO[bytes] = self.output_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(CLIENT), role, url, QUEUE, arg], stdout=self._output,
            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._output.close()

    def lines(self) -> list[list[str]]:
        # The last line may be cut by the kill: only whole lines count.
        text = self.output_path.read_text()
        whole = text if text.endswith("\n") else text[:text.rfind("\n") + 1]
        return [line.split() for line in whole.splitlines()]


def _reset_mid_frame(port: int, rng: random.Random) -> None:
    """A raw client that opens a channel, starts a basic.publish frame and resets the socket."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        sock.sendall(PROTOCOL_HEADER)
        sock.recv(65536)
        sock.sendall(encode_method_frame(0, ConnectionStartOk(
            client_properties={}, mechanism="PLAIN", response="\0guest\0guest", locale="en_US")))
        sock.recv(65536)
        sock.sendall(encode_method_frame(0, ConnectionTuneOk(channel_max=2047, frame_max=131072))
                     + encode_method_frame(0, ConnectionOpen(virtual_host="/"))
                     + encode_method_frame(1, ChannelOpen()))
        frame = encode_method_frame(1, BasicPublish(routing_key=QUEUE))
        sock.sendall(frame[:rng.randrange(1, len(frame))])
    finally:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # RST


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_killed_clients_lose_and_duplicate_nothing() -> None:
    rng = random.Random(SEED)
    broker = Broker()
    with broker.connect() as setup:
        setup.channel().queue_declare(QUEUE)
    with tempfile.TemporaryDirectory() as tmp, broker.serve() as server:
        folder = Path(tmp)
        spawned = 0

        def spawn(role: str) -> _Process:
            nonlocal spawned
            spawned += 1
            arg = f"p{spawned}" if role == "publisher" else str(rng.choice([1, 10, 100]))
            return _Process(role, server.url, arg, folder, spawned)

        live = [spawn("publisher"), spawn("publisher"), spawn("consumer"), spawn("consumer")]
        finished: list[_Process] = []
        resets = kills = 0
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(0.2, 0.8))
            if rng.random() < 0.25:
                _reset_mid_frame(server.port, rng)
                resets += 1
                continue
            victim = live.pop(rng.randrange(len(live)))
            victim.kill()
            kills += 1
            finished.append(victim)
            live.append(spawn(victim.role))
        for process in live:
            process.kill()
        finished.extend(live)
        wait_until(lambda: not broker.connections, timeout=10)
        confirmed: set[str] = set()
        deliveries: dict[str, list[int]] = defaultdict(list)
        for process in finished:
            for line in process.lines():
                if line[0] == "confirmed":
                    confirmed.add(line[1])
                else:
                    deliveries[line[1]].append(int(line[2]))
        left = {m.body.decode() for m in broker.queues[QUEUE].messages}
        broker._check()
    assert server.errors == []
    assert kills > 5
    assert resets > 0
    assert len(confirmed) > 100, "the publishers barely ran"
    lost = confirmed - set(deliveries) - left
    assert not lost, f"{len(lost)} confirmed messages neither consumed nor queued: {sorted(lost)[:5]}"
    unflagged_twice = {m for m, flags in deliveries.items() if flags.count(0) > 1}
    assert not unflagged_twice, f"delivered twice without the redelivered flag: {unflagged_twice}"
    print(f"chaos: {kills} kills, {resets} resets, {len(confirmed)} confirmed, "
          f"{sum(map(len, deliveries.values()))} deliveries "
          f"({sum(f.count(1) for f in deliveries.values())} redelivered), {len(left)} left, "
          f"0 lost")
