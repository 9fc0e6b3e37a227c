"""RabbitMQ's tools against embroker and against RabbitMQ: ``rabbitmq-server`` to the first
confirmed publish, one ``rabbitmqctl list_queues`` round trip, and ``rabbitmqctl stop`` (a
process each time, as a script runs it; stop beside a ``list_vhosts`` on the same node, which
costs the tool's start and one call). RabbitMQ's figures use the local installation's tools
and its running node (the start of a RabbitMQ node of one's own is timed by
tests/server/private_node.py: ~10 s).

    python benchmarks/cli.py
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pika


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_to_publish(shims: Path, folder: Path) -> float:
    port = _free_port()
    env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}",
           "RABBITMQ_NODENAME": f"bench-{port}", "RABBITMQ_NODE_PORT": str(port),
           "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1", "RABBITMQ_CONFIG_FILE": str(folder / "no"),
           "RABBITMQ_LOG_BASE": str(folder), "RABBITMQ_MNESIA_BASE": str(folder),
           "RABBITMQ_ENABLED_PLUGINS_FILE": str(folder / "enabled_plugins"),
           "EMBROKER_NODES_DIR": str(folder / "nodes")}
    began = time.perf_counter()
    process = subprocess.Popen([str(shims / "rabbitmq-server")], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:  # (as tools that start a node do: poll the AMQP port, use it at once)
            try:
                connection = pika.BlockingConnection(
                    pika.ConnectionParameters("127.0.0.1", port, connection_attempts=1))
                break
            except pika.exceptions.AMQPConnectionError:
                time.sleep(0.01)
        return _first_publish(connection, began)
    finally:
        process.terminate()
        process.wait(10)


def _first_publish(connection: pika.BlockingConnection, began: float) -> float:
    """Seconds from ``began`` to a first publish confirmed on ``connection`` (then closed)."""
    channel = connection.channel()
    channel.confirm_delivery()
    channel.basic_publish("", "", b"first")
    elapsed = time.perf_counter() - began
    connection.close()
    return elapsed


def rabbitmq_start_to_publish() -> float | None:
    """The same with the local RabbitMQ: a node of its own (tests/server/private_node.py),
    timed from its start to the first confirmed publish; ``None`` without RabbitMQ."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.server.private_node import available, private_node

    if not available():
        return None
    began = time.perf_counter()
    with private_node() as node:
        if node is None:
            return None
        return _first_publish(pika.BlockingConnection(pika.URLParameters(node.url)), began)


def round_trip(command: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    return time.perf_counter() - began


def stop_beside_a_call(shims: Path, folder: Path, runs: int = 7) -> tuple[list[float],
                                                                          list[float]]:
    """``rabbitmqctl stop`` on a node ``rabbitmq-server`` started, and ``rabbitmqctl
    list_vhosts`` on the same node just before: seconds each, per run. The node's process is
    reaped by a thread of ours at once, as a shell or init reaps a detached node."""
    stops, calls = [], []
    for run in range(runs):
        env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}",
               "RABBITMQ_NODENAME": f"bench-stop-{run}@localhost", "RABBITMQ_NODE_PORT": "0",
               "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
               "RABBITMQ_CONFIG_FILE": str(folder / "no"),
               "RABBITMQ_CONF_ENV_FILE": str(folder / "no-env"),
               "RABBITMQ_LOG_BASE": str(folder), "RABBITMQ_MNESIA_BASE": str(folder),
               "RABBITMQ_ENABLED_PLUGINS_FILE": str(folder / "enabled_plugins"),
               "EMBROKER_NODES_DIR": str(folder / "nodes")}
        process = subprocess.Popen([str(shims / "rabbitmq-server")], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert process.stdout is not None
        while "completed" not in process.stdout.readline():
            pass
        reaper = threading.Thread(target=process.wait, daemon=True)
        reaper.start()
        calls.append(round_trip([str(shims / "rabbitmqctl"), "list_vhosts"], env))
        stops.append(round_trip([str(shims / "rabbitmqctl"), "stop"], env))
        reaper.join(10)
    return stops, calls


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def main() -> int:
    folder = Path(tempfile.mkdtemp())
    shims = folder / "bin"
    subprocess.run([sys.executable, "-m", "embroker", "shims", str(shims)], check=True,
                   capture_output=True)
    starts = [start_to_publish(shims, folder) for _ in range(3)]
    print(f"embroker rabbitmq-server to first confirmed publish: best {min(starts):.3f} s "
          f"(of {', '.join(f'{s:.3f}' for s in starts)})")
    reference = rabbitmq_start_to_publish()
    if reference is not None:
        print(f"RabbitMQ rabbitmq-server (a node of its own) to first confirmed publish: "
              f"{reference:.3f} s (ratio {reference / min(starts):.0f})")
    env = {**os.environ, "EMBROKER_NODES_DIR": str(folder / "nodes"),
           "RABBITMQ_NODENAME": "bench-ctl"}
    server = subprocess.Popen([sys.executable, "-m", "embroker", "serve", "--port", "0",
                               "--no-management", "--node", "bench-ctl", "--quiet"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert server.stdout is not None
    server.stdout.readline()
    ours = [round_trip([str(shims / "rabbitmqctl"), "list_queues"], env) for _ in range(5)]
    server.terminate()
    server.wait(10)
    print(f"embroker rabbitmqctl list_queues: best {min(ours):.3f} s")
    stops, calls = stop_beside_a_call(shims, folder)
    print(f"embroker rabbitmqctl stop: median {_median(stops):.3f} s, beside list_vhosts on "
          f"the same node {_median(calls):.3f} s: stop costs "
          f"{_median(stops) - _median(calls):+.3f} s more (of "
          f"{', '.join(f'{s:.3f}' for s in stops)})")
    real = shutil.which("rabbitmqctl", path="/usr/sbin:/usr/bin")
    if real is not None:
        theirs = [round_trip([real, "list_queues"], dict(os.environ)) for _ in range(5)]
        print(f"RabbitMQ rabbitmqctl list_queues: best {min(theirs):.3f} s "
              f"(ratio {min(theirs) / min(ours):.1f})")
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
