"""A node that stops and starts: what it costs a test, and what the cluster costs a broker of one.

Run: python benchmarks/cluster.py [--queues N] [--messages N]

- **stop + start**: a three-node broker with N queues (a third classic durable homed on the node
  that stops, a third quorum led there, a third classic on another node), M persistent messages
  in each and a consumer on each node; the time of ``node.stop()`` then ``node.start()`` (best of
  5, each on a fresh broker: the setup is not timed), in milliseconds.
- **publish, one node**: publish -> route -> enqueue through the default exchange on a broker
  of one node (``Broker()``) and on the first node of a three-node broker with every node
  running, messages/s in CPU time (best of 3): what the cluster's checks add to the hot path.

Nothing is asserted: see the figures.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from embroker.model import Broker


def cluster(queues: int, messages: int) -> tuple[Broker, Callable[[], None]]:
    """A three-node broker with ``queues`` queues around its second node, and what stops and
    starts that node."""
    broker = Broker(nodes=3, trace_limit=1)
    channels = [broker.open_connection(node=node).open_channel(1) for node in broker.nodes]
    for i in range(queues):
        kind = i % 3
        on = channels[0] if kind == 2 else channels[1]
        arguments = {"x-queue-type": "quorum"} if kind == 1 else {}
        on.queue_declare(f"q{i}", durable=True, arguments=arguments)
        for m in range(messages):
            on.basic_publish("", f"q{i}", b"m%d" % m, {"delivery_mode": 2})
    for channel in channels:
        channel.basic_qos(prefetch_count=1)
        for i in range(0, queues, 7):
            channel.start_consumer(channel.basic_consume(f"q{i}"))
    node = broker.nodes[1]

    def stop_and_start() -> None:
        node.stop()
        node.start()

    return broker, stop_and_start


def stop_start_ms(queues: int, messages: int, repeat: int = 5) -> float:
    fastest = float("inf")
    for _ in range(repeat):
        _broker, run = cluster(queues, messages)
        start = time.perf_counter()
        run()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest * 1000


def publish_rate(nodes: int, n: int, repeat: int = 3) -> float:
    fastest = float("inf")
    for _ in range(repeat):
        broker = Broker(nodes=nodes, trace_limit=1000)
        channel = broker.open_connection().open_channel(1)
        channel.queue_declare("q")
        body = b"x" * 100
        start = time.process_time()
        for _ in range(n):
            channel.basic_publish("", "q", body)
        fastest = min(fastest, time.process_time() - start)
    return n / fastest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=30)
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--publishes", type=int, default=100_000)
    args = parser.parse_args()
    print(f"stop + start of a node, {args.queues} queues of {args.messages} messages: "
          f"{stop_start_ms(args.queues, args.messages):.3f} ms")
    for queues in (300, 3000):
        print(f"stop + start of a node, {queues} queues of {args.messages} messages: "
              f"{stop_start_ms(queues, args.messages, repeat=3):.3f} ms")
    one, three = publish_rate(1, args.publishes), publish_rate(3, args.publishes)
    print(f"publish, a broker of one node:    {one:,.0f} msg/s")
    print(f"publish, a node of three running: {three:,.0f} msg/s ({three / one:.2f}x)")


if __name__ == "__main__":
    main()
