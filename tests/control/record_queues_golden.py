"""Record what RabbitMQ 3.10.8's ``rabbitmq-queues`` prints, as golden files
(tests/control/golden/rabbitmq-queues/<scenario>/<case>.json, with record_golden.py's keys:
argv, exit, stdout, stderr, notes). Run from the repository's root:

    python -m tests.control.record_queues_golden            # cluster: three nodes of one's own
    python -m tests.control.record_queues_golden single     # the shared node rabbit@localhost

``cluster`` needs RabbitMQ 3.10.8 installed (tests/cluster/reference_cluster.py starts the
cluster, its nodes named ``rabbit-1@localhost``...; killed and removed at the end); ``single``
the shared reference node (AMQP on 127.0.0.1:5672, its tools working for this user), where it
declares three ``queues-golden-*`` queues and deletes them after.

Each session is one of :data:`tests.control.queues_scenario.SCENARIOS`, run in order on one
evolving state. What varies between runs: the Raft indexes and terms in ``quorum_status``,
the timestamps of the node's log lines (compared masked).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pika

from tests.cluster.reference_cluster import ReferenceCluster, start_cluster
from tests.control.queues_scenario import (
    NODES,
    SCENARIOS,
    SINGLE_QUEUES,
    Declare,
    Publish,
    replay,
)

GOLDEN = Path(__file__).resolve().parent / "golden" / "rabbitmq-queues"


class Reference:
    """The reference cluster as :class:`tests.control.queues_scenario.Cluster`. Its nodes may
    have other names than the scenario's (the package fixture's ``embroker-ref-XXXX-N``): the
    command lines are given theirs, the outputs show the scenario's."""

    def __init__(self, cluster: ReferenceCluster) -> None:
        self.cluster = cluster
        self.names = dict(zip(NODES, (node.name for node in cluster.nodes), strict=True))

    def _connection(self, node: int, vhost: str = "/") -> pika.BlockingConnection:
        return pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", self.cluster.node(node).amqp_port, vhost,
            pika.PlainCredentials("guest", "guest")))

    def declare(self, step: Declare) -> None:
        with self._connection(step.node, step.vhost) as connection:
            connection.channel().queue_declare(step.queue, durable=True,
                                               arguments=step.arguments or None)

    def publish(self, step: Publish) -> None:
        with self._connection(step.node) as connection:
            channel = connection.channel()
            channel.confirm_delivery()
            for index in range(step.count):
                channel.basic_publish("", step.queue, f"m{index}".encode())

    def add_vhost(self, name: str) -> None:
        self.cluster.ctl(0, "add_vhost", name)
        self.cluster.ctl(0, "set_permissions", "-p", name, "guest", ".*", ".*", ".*")

    def stop_app(self, node: int) -> None:
        self.cluster.stop_app(node)

    def settle(self, seconds: float) -> None:
        time.sleep(seconds)  # a real cluster's Raft: a transfer of leadership settling

    def tool(self, node: str, args: tuple[str, ...]) -> tuple[int, str, str]:
        started = time.monotonic()
        done = self.cluster.ctl(self.names[node], *(self.names.get(a, a) for a in args),
                                check=False, tool="rabbitmq-queues")
        print(f"{' '.join(args)}: exit {done.returncode} ({time.monotonic() - started:.1f} s)",
              flush=True)
        return done.returncode, self._ours(done.stdout), self._ours(done.stderr)

    def _ours(self, text: str) -> str:
        for ours, theirs in self.names.items():
            if ours != theirs:
                text = text.replace(f':"{theirs}"', f':"{ours}"').replace(theirs, ours)
        return text

    def clean(self) -> None:
        """Remove what the scenario made (after every node runs again)."""
        self.cluster.restore()
        for step in SCENARIOS["cluster"]:
            if isinstance(step, Declare) and step.vhost == "/":
                self.cluster.ctl(0, "delete_queue", step.queue, check=False)
        self.cluster.ctl(0, "delete_vhost", "qv", check=False)


class Shared:
    """The shared reference node ``rabbit@localhost`` as a cluster of one."""

    def __init__(self) -> None:
        self.connection = pika.BlockingConnection(pika.URLParameters(
            "amqp://guest:guest@127.0.0.1:5672/%2F"))

    def declare(self, step: Declare) -> None:
        self.connection.channel().queue_declare(step.queue, durable=True,
                                                arguments=step.arguments or None)

    def publish(self, step: Publish) -> None:
        raise NotImplementedError

    def add_vhost(self, name: str) -> None:
        raise NotImplementedError

    def stop_app(self, node: int) -> None:
        raise NotImplementedError

    def settle(self, seconds: float) -> None:
        time.sleep(seconds)

    def tool(self, node: str, args: tuple[str, ...]) -> tuple[int, str, str]:
        done = subprocess.run(["rabbitmq-queues", "-n", node, *args], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, check=False, timeout=120)
        print(f"{' '.join(args)}: exit {done.returncode}", flush=True)
        return done.returncode, done.stdout, done.stderr

    def close(self) -> None:
        channel = self.connection.channel()
        for name in SINGLE_QUEUES:
            channel.queue_delete(name)
        self.connection.close()


def _write(scenario: str, records: dict[str, dict[str, object]]) -> None:
    folder = GOLDEN / scenario
    folder.mkdir(parents=True, exist_ok=True)
    for name, record in records.items():
        (folder / f"{name}.json").write_text(json.dumps(record, indent=2, ensure_ascii=False)
                                             + "\n")


def main(argv: list[str]) -> int:
    if argv == ["single"]:
        shared = Shared()
        try:
            _write("single", replay(shared, "single"))
        finally:
            shared.close()
        return 0
    cluster = start_cluster(3, prefix="rabbit")
    try:
        records = replay(Reference(cluster), "cluster")
    finally:
        cluster.close()
    _write("cluster", records)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
