"""How many connections the listener holds, and what each costs, next to RabbitMQ.

Opens N AMQP connections (a raw socket each, handshake done, one channel open) to an embroker
listener running in its own process, and to the reference RabbitMQ when it answers, and prints
the server's resident memory per connection (the growth of its RSS divided by N) and how long
opening them took.

    python benchmarks/connections.py [-n 2000]

The file-descriptor limits of this process and of the server are raised to their hard limit.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import time
from urllib.parse import urlparse

from embroker.amqp091 import PROTOCOL_HEADER, encode_method_frame
from embroker.amqp091.methods import ChannelOpen, ConnectionOpen, ConnectionStartOk, ConnectionTuneOk

SERVER = """
import resource, sys
from embroker import Broker
_soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
server = Broker().serve(heartbeat=0)
print(server.port, flush=True)
sys.stdin.read()
"""


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def open_connections(port: int, n: int) -> list[socket.socket]:
    handshake = (encode_method_frame(0, ConnectionTuneOk(channel_max=2047, frame_max=131072))
                 + encode_method_frame(0, ConnectionOpen(virtual_host="/"))
                 + encode_method_frame(1, ChannelOpen()))
    start_ok = encode_method_frame(0, ConnectionStartOk(
        client_properties={}, mechanism="PLAIN", response="\0guest\0guest", locale="en_US"))
    socks = []
    for _ in range(n):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            sock.sendall(PROTOCOL_HEADER)
            sock.recv(65536)
            sock.sendall(start_ok)
            sock.recv(65536)
            sock.sendall(handshake)
            got = b""
            while b"\x00\x14\x00\x0b" not in got:  # channel.open-ok
                chunk = sock.recv(65536)
                if not chunk:
                    raise OSError("closed")
                got += chunk
        except OSError:  # the server stopped answering (its own limits): report what it held
            sock.close()
            break
        socks.append(sock)
    return socks


def measure(label: str, port: int, pid: int, n: int) -> None:
    before = rss_kib(pid)
    started = time.perf_counter()
    socks = open_connections(port, n)
    elapsed = time.perf_counter() - started
    time.sleep(1.0)  # let the server settle (RabbitMQ's processes grow lazily)
    after = rss_kib(pid)
    held = len(socks)
    note = "" if held == n else f"  (stopped answering after {held}: its own fd limit?)"
    print(f"{label:<10} {held:>6} connections in {elapsed:5.1f} s  "
          f"{(after - before) / max(held, 1):6.1f} KiB each  (RSS {before / 1024:.0f} -> "
          f"{after / 1024:.0f} MiB){note}", flush=True)
    for sock in socks:
        sock.close()


def rabbitmq_pid() -> int | None:
    out = subprocess.run(["pgrep", "-f", "beam.smp.*rabbit"], capture_output=True, text=True,
                         check=False)
    pids = [int(p) for p in out.stdout.split()]
    return pids[0] if pids else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000)
    args = parser.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        measure("embroker", port, server.pid, args.n)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(10)
    url = os.environ.get("EMBROKER_REFERENCE_URL", "amqp://guest:guest@127.0.0.1:5672/")
    pid = rabbitmq_pid()
    if pid is None:
        print("RabbitMQ   not measured: no beam.smp process of RabbitMQ on this machine")
        return 0
    measure("RabbitMQ", urlparse(url).port or 5672, pid, args.n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
