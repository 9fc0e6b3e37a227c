"""Per-test overhead of pytest-embroker's fixtures, next to starting a RabbitMQ node.

Run: python benchmarks/fixtures.py [--n N] [--rabbitmq]

- ``broker``: a fresh in-memory broker (what the ``broker`` fixture does: ``make_broker()``);
- ``broker + topology``: the same, loading a small definitions file (the marker's ``topology=``);
- ``amqp_url``: a listener started on that broker, one pika BlockingConnection opened and closed
  on it, the listener stopped (what a test that uses ``amqp_url`` pays, and its client);
- ``listener only``: ``broker.serve()`` then ``stop()``, no client;
- ``broker + strict``: a fresh broker, a test's worth of in-process work (a queue, 10 publishes
  consumed and acked), then strict mode's teardown check (``leaks()``: settle, then look for
  open connections, unacked deliveries, listener errors, unroutable publishes); next to the same
  work without the check;
- ``shared broker reset``: ``broker.reset()`` of a broker with the example topology (3 exchanges,
  5 queues, 6 bindings) after a test declared a queue and published 10 messages: what the
  ``shared_broker`` fixture pays per test;
- ``event recording``: in-process publish -> basic.get (auto-ack) and publish -> consume -> ack,
  in messages/s, with the lifecycle events recorded (the default) and with
  ``Broker(trace_events=False)``: what recording each message's history costs;
- ``--rabbitmq``: a second RabbitMQ node started on port 5673 (own node name, config, data and log
  folders under a temporary folder, no plugins) until pika connects, then stopped with
  ``rabbitmqctl -n NODE stop``. The shared node on 5672 is never touched. Off by default.

Figures are medians and 90th percentiles in milliseconds. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pika

from embroker import Broker
from embroker.testing import leaks, make_broker

TOPOLOGY = Path(__file__).resolve().parent.parent / "tests" / "examples" / "topology" / "definitions.json"


def measure(step: Callable[[], None], n: int) -> list[float]:
    for _ in range(min(20, n)):  # warm up
        step()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1000)
    return times


def show(name: str, times: list[float]) -> None:
    times = sorted(times)
    p90 = times[int(len(times) * 0.9) - 1] if len(times) >= 10 else times[-1]
    print(f"{name:<22} median {statistics.median(times):9.3f} ms   p90 {p90:9.3f} ms   (n={len(times)})")


def fresh_broker() -> None:
    make_broker()


def broker_with_topology() -> None:
    make_broker(topology=TOPOLOGY)


def listener_only() -> None:
    server = make_broker().serve()
    server.stop()


def _a_test(broker: Broker) -> None:
    ch = broker.connect().channel()
    ch.queue_declare("jobs")
    for n in range(10):
        ch.basic_publish("", "jobs", b"%d" % n)
    for _ in range(10):
        delivery = ch.basic_get("jobs")
        assert delivery is not None
        ch.basic_ack(delivery.delivery_tag)


def broker_and_work() -> None:
    _a_test(make_broker())


def broker_and_work_strict() -> None:
    broker = make_broker()
    _a_test(broker)
    assert leaks(broker, unroutable=True) == []


_SHARED = make_broker(topology=TOPOLOGY)
_SHARED.mark_baseline()


def shared_reset() -> None:
    ch = _SHARED.connect().channel()
    ch.queue_declare("scratch")
    for n in range(10):
        ch.basic_publish("shop", "order.eu.paid", b"%d" % n)
    _SHARED.reset()


def rate(events: bool, consume: bool, n: int = 20_000, repeat: int = 5) -> float:
    """Messages/s, best of ``repeat`` (in CPU time): publish -> get (auto-ack), or publish ->
    consume -> ack."""
    best = float("inf")
    for _ in range(repeat):
        ch = Broker(trace_limit=1000, trace_events=events).connect().channel()
        ch.queue_declare("q")
        publish = ch.basic_publish
        if consume:
            ch.basic_consume("q", lambda c, d, p, b: c.basic_ack(d.delivery_tag))
            start = time.process_time()
            for _ in range(n):
                publish("", "q", b"m" * 100)
        else:
            get = ch.basic_get
            start = time.process_time()
            for _ in range(n):
                publish("", "q", b"m" * 100)
                get("q", auto_ack=True)
        best = min(best, time.process_time() - start)
    return n / best


def amqp_url_with_pika() -> None:
    broker = make_broker()
    with broker.serve() as server:
        connection = pika.BlockingConnection(pika.URLParameters(server.url))
        connection.close()


def rabbitmq_node_start(port: int = 5673) -> float | str:
    """Seconds from launching a separate RabbitMQ node until pika connects to it."""
    server = shutil.which("rabbitmq-server")
    ctl = shutil.which("rabbitmqctl")
    if server is None or ctl is None:
        return "not measured: rabbitmq-server is not installed"
    node = f"embroker-bench-{os.getpid()}@localhost"
    with tempfile.TemporaryDirectory(prefix="embroker-bench-") as tmp:
        base = Path(tmp)
        (base / "rabbitmq.conf").write_text(f"listeners.tcp.local = 127.0.0.1:{port}\n")
        (base / "rabbitmq-env.conf").write_text("")
        (base / "enabled_plugins").write_text("[].\n")
        os.chmod(tmp, 0o777)
        env = {**os.environ, "RABBITMQ_NODENAME": node,
               "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
               "RABBITMQ_CONF_ENV_FILE": str(base / "rabbitmq-env.conf"),
               "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
               "RABBITMQ_MNESIA_BASE": str(base / "mnesia"), "RABBITMQ_LOG_BASE": str(base / "log"),
               "RABBITMQ_DIST_PORT": str(port + 20000), "ERL_EPMD_ADDRESS": "127.0.0.1"}
        start = time.perf_counter()
        launched = subprocess.Popen([server], env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        try:
            url = f"amqp://guest:guest@127.0.0.1:{port}/?connection_attempts=1"
            while True:
                if launched.poll() is not None:
                    return f"not measured: the node exited ({launched.returncode})"
                if time.perf_counter() - start > 120:
                    return "not measured: the node did not answer within 120 s"
                try:
                    pika.BlockingConnection(pika.URLParameters(url)).close()
                    return time.perf_counter() - start
                except pika.exceptions.AMQPError:
                    time.sleep(0.05)
        finally:
            subprocess.run([ctl, "-n", node, "stop"], env=env, capture_output=True, timeout=60,
                           check=False)
            try:
                launched.wait(30)
            except subprocess.TimeoutExpired:
                launched.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="iterations per fixture")
    parser.add_argument("--rabbitmq", action="store_true",
                        help="also time a second RabbitMQ node's start (port 5673)")
    args = parser.parse_args()
    show("broker", measure(fresh_broker, args.n))
    show("broker + topology", measure(broker_with_topology, args.n))
    show("listener only", measure(listener_only, args.n))
    show("amqp_url + pika", measure(amqp_url_with_pika, args.n))
    show("broker + 10 messages", measure(broker_and_work, args.n))
    show("  ... + strict check", measure(broker_and_work_strict, args.n))
    show("shared broker reset", measure(shared_reset, args.n))
    print("event recording (messages/s, best of 5; on = the default)")
    for consume, what in ((False, "publish -> get"), (True, "publish -> consume -> ack")):
        on, off = rate(True, consume), rate(False, consume)
        print(f"  {what:<26} on {on:10,.0f}   off {off:10,.0f}   cost {1 - on / off:6.1%}")
    if args.rabbitmq:
        result = rabbitmq_node_start()
        if isinstance(result, float):
            print(f"{'rabbitmq node start':<22} {result * 1000:9.0f} ms (once; until pika connects)")
        else:
            print(f"{'rabbitmq node start':<22} {result}")


if __name__ == "__main__":
    main()
