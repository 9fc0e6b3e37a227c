"""What clients without credentials cost `embroker serve` in memory (issue 44, item 10).

Run: python benchmarks/hostile_memory.py [--clients N] [--streams N]

Each condition starts its own ``embroker serve --port 0 --management-port 0 --stream-port 0``
(a process of its own, as users run it), lets it settle, reads its resident memory (``VmRSS``
of /proc/PID/status), runs the condition, and reports how much the resident memory grew, at its
peak (``VmHWM``, the high-water mark) and once the clients are done and closed, in MiB:

- ``idle http``: N HTTP connections that send nothing (what a connection costs, for scale);
- ``GET / body``: N clients without credentials, each ``GET /`` with a 20 MiB body
  (``Content-Length``, then the whole body as fast as the socket takes it);
- ``GET /api/auth body``: the same on ``GET /api/auth`` (a route that needs no login);
- ``idle stream``: M stream-protocol connections that send nothing;
- ``half frames``: M stream-protocol connections, each sending the header of a 1 MiB frame
  (before any login) and all of its body but the last byte.

N is 20 and M 50 by default. Memory figures only: nothing is asserted (Linux: /proc).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import socket
import struct
import subprocess
import sys
import threading
import time

BODY = 20 * 1024 * 1024
FRAME = 1024 * 1024


def _status(pid: int, field: str) -> float:
    """A field of /proc/PID/status, in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise LookupError(field)


def _serve() -> tuple[subprocess.Popen[str], int, int]:
    served = subprocess.Popen([sys.executable, "-m", "embroker", "serve", "--port", "0",
                               "--management-port", "0", "--stream-port", "0", "--quiet"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert served.stdout is not None
    line = served.stdout.readline()
    http = re.search(r"http://\S+?:(\d+)/", line)
    stream = re.search(r"rabbitmq-stream://\S+?:(\d+)/", line)
    assert http is not None, line
    assert stream is not None, line
    return served, int(http.group(1)), int(stream.group(1))


def _send_all(sock: socket.socket, data: bytes) -> None:
    """Send ``data`` whatever the server answers meanwhile (it may close)."""
    with contextlib.suppress(OSError):
        sock.sendall(data)


def _http_bodies(port: int, path: str, clients: int) -> list[socket.socket]:
    socks, threads = [], []
    body = b" " * BODY
    for _ in range(clients):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n"
                     f"Content-Length: {BODY}\r\n\r\n".encode())
        socks.append(sock)
        thread = threading.Thread(target=_send_all, args=(sock, body), daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join(120)
    return socks


def _half_frames(port: int, clients: int) -> list[socket.socket]:
    socks = []
    for _ in range(clients):
        sock = socket.create_connection(("127.0.0.1", port))
        # A PeerProperties frame (key 17, version 1) announcing FRAME bytes, all but one sent.
        _send_all(sock, struct.pack(">IHHI", FRAME, 17, 1, 1) + b"\0" * (FRAME - 9))
        socks.append(sock)
    return socks


def _idle(port: int, clients: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port)) for _ in range(clients)]


def run(name: str, attack: str, clients: int) -> None:
    served, http, stream = _serve()
    try:
        time.sleep(1.0)
        start = _status(served.pid, "VmRSS")
        if attack == "http-idle":
            socks = _idle(http, clients)
        elif attack == "stream-idle":
            socks = _idle(stream, clients)
        elif attack == "frames":
            socks = _half_frames(stream, clients)
        else:
            socks = _http_bodies(http, attack, clients)
        time.sleep(1.5)  # (what the loop reads meanwhile)
        during = _status(served.pid, "VmRSS")
        for sock in socks:
            sock.close()
        time.sleep(1.5)
        peak = _status(served.pid, "VmHWM")
        after = _status(served.pid, "VmRSS")
        print(f"  {name:20} {clients:8} {start:9.1f} {peak - start:+9.1f} "
              f"{during - start:+9.1f} {after - start:+9.1f}")
    finally:
        served.terminate()
        served.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--streams", type=int, default=50)
    args = parser.parse_args()
    print("embroker serve: resident memory at start, and its growth (MiB) at the peak, with "
          "the clients connected, and after they closed")
    print(f"  {'condition':20} {'clients':>8} {'start':>9} {'peak':>9} {'connected':>9} "
          f"{'after':>9}")
    run("idle http", "http-idle", args.clients)
    run("GET / body", "/", args.clients)
    run("GET /api/auth body", "/api/auth", args.clients)
    run("idle stream", "stream-idle", args.streams)
    run("half frames", "frames", args.streams)


if __name__ == "__main__":
    main()
