"""A tool call while another local user holds idle sockets on the node's control port (issue 44,
item 8): one ``rabbitmqctl list_vhosts`` as a process (as a script runs it), and one call of the
tools' client in this process (the node's own part of it), with no socket held, with N idle
sockets held by another process, and while another process opens N more.

Before the handshake's bounds, the port's 64 slots held by others made each call wait for the
idle ones' 5 s request timeout (5 s with 64 sockets, 83 s with 600). Now a connection has 2 s
to prove it knows the cookie and at most 16 wait at once (a new one drops the oldest, which a
tool tries again): a tool that knows the cookie gets in at once.

    python benchmarks/control_flood.py [N] [RUNS]     (default 600 sockets, 5 runs)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from embroker import Broker
from embroker.control._client import call
from embroker.control._node import Node
from embroker.control._registry import lookup
from embroker.server import Server

NAME = "rabbit@flooded"

#: Another user's process: opens N idle connections to the port (no connect waited for), says
#: so, and holds them until its standard input closes.
_HOLDER = """
import socket, sys
port, count = int(sys.argv[1]), int(sys.argv[2])
held = []
for _ in range(count):
    sock = socket.socket()
    sock.setblocking(False)
    sock.connect_ex(("127.0.0.1", port))
    held.append(sock)
print("held", flush=True)
sys.stdin.read()
"""


def _holder(port: int, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _HOLDER, str(port), str(count)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(30)


def _process_call(env: dict[str, str]) -> float:
    began = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "embroker.control", "rabbitmqctl", "-n", NAME,
                             "-q", "list_vhosts"], env=env, capture_output=True, text=True,
                            timeout=300, check=False)
    elapsed = time.perf_counter() - began
    if result.returncode != 0:
        raise RuntimeError(f"rabbitmqctl failed ({result.returncode}): {result.stderr}")
    return elapsed


def _client_call() -> float:
    entry = lookup(NAME)
    assert entry is not None
    began = time.perf_counter()
    call(entry, "list", {"kind": "vhosts", "columns": ["name"]}, timeout=300)
    return time.perf_counter() - began


def _measure(env: dict[str, str], port: int, runs: int, flood: int | None,
             held: int | None) -> tuple[list[float], list[float]]:
    processes, clients = [], []
    for _ in range(runs):
        holder = _holder(port, held) if held else None
        if holder is not None:
            assert holder.stdout is not None
            holder.stdout.readline()
        try:
            for measure, into in ((lambda: _process_call(env), processes),
                                  (_client_call, clients)):
                flooder = _holder(port, flood) if flood else None  # (starts as the call does)
                try:
                    into.append(measure())
                finally:
                    if flooder is not None:
                        _release(flooder)
        finally:
            if holder is not None:
                _release(holder)
    return processes, clients


def _line(label: str, figures: tuple[list[float], list[float]]) -> str:
    processes, clients = figures
    return (f"  {label:<44} process {statistics.median(processes):7.3f} s (max "
            f"{max(processes):.3f}); client {1000 * statistics.median(clients):8.1f} ms (max "
            f"{1000 * max(clients):.1f})")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory() as folder:
        os.environ["EMBROKER_NODES_DIR"] = str(Path(folder) / "nodes")
        env = dict(os.environ)
        broker = Broker()
        with Server(broker) as server:
            node = Node(broker, server, NAME).start()
            port = node.control_port
            assert port is not None
            try:
                quiet = _measure(env, port, runs, None, None)
                before = _measure(env, port, runs, None, count)
                during = _measure(env, port, runs, count, None)
            finally:
                node.close()
    print(f"rabbitmqctl list_vhosts, median of {runs} (this machine, {os.cpu_count()} cores):")
    print(_line("no socket held", quiet))
    print(_line(f"{count} idle sockets held during the call", before))
    print(_line(f"{count} opened as the call starts", during))


if __name__ == "__main__":
    main()
