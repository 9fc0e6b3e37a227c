"""The management API's costs, and what a polling console costs the AMQP clients.

Run: python benchmarks/management.py [--queues N] [--messages M] [--rounds R]

- ``GET /api/queues`` with N queues (10,000 by default): R requests over one keep-alive
  connection (http.client, in this thread); the median, the fastest and the slowest, seconds;
- ``POST /api/exchanges/%2F/amq.default/publish``: requests per second over 2 s, R times;
- one poll's cost to the loop's thread: the console's request, and the dashboard's six, made
  in-process (no socket) on a broker like the one below, median of R;
- AMQP throughput of one listener: pika publishes M messages to a queue (no confirms, then one
  round trip) on a broker whose vhost has ``--console-queues`` queues (1,000 by default, bound
  to a topic exchange), in three conditions taken in turn, R times: alone; while a console
  polls (``GET /api/embroker/console`` every second with a queue chosen, as the page does);
  and while a client polls the RabbitMQ endpoints a dashboard would (``overview``,
  ``queues/%2F``, ``exchanges/%2F``, ``bindings/%2F``, ``connections``, ``channels`` every
  second: what the console asked before it had its own endpoint). The pollers run in another
  process, as a browser does; pika runs in this one, as in a test. Messages per second of each
  run, the medians, and each condition's spread (slowest to fastest, as a share of its
  median).

Timings only: nothing is asserted. Take them on a quiet machine (the load average is printed).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import statistics
import subprocess
import sys
import time

import pika

from embroker import Broker

AUTH = {"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode(),
        "content-type": "application/json"}
CONSOLE = ["embroker/console?since={since}&queue=bench"]
DASHBOARD = ["overview", "queues/%2F", "exchanges/%2F", "bindings/%2F", "connections",
             "channels"]

# The poller: another process, as a browser is. Polls the paths every second until stdin closes.
POLLER = r"""
import base64, http.client, json, sys, threading
port, paths = int(sys.argv[1]), json.loads(sys.argv[2])
auth = {"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
conn = http.client.HTTPConnection("127.0.0.1", port)
since = 0
print("polling", flush=True)
while not stop.is_set():
    for path in paths:
        conn.request("GET", "/api/" + path.format(since=since), headers=auth)
        body = conn.getresponse().read()
        if path.startswith("embroker/console"):
            since = json.loads(body)["trace"]["total"]
    stop.wait(1.0)
"""


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def get(conn: http.client.HTTPConnection, path: str) -> bytes:
    conn.request("GET", "/api/" + path, headers=AUTH)
    return conn.getresponse().read()


def queues_listing(count: int, rounds: int) -> list[float]:
    broker = Broker(trace_events=False)
    channel = broker.connect().channel()
    for i in range(count):
        channel.queue_declare(f"q-{i:05d}")
    with broker.serve(management=True) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.management_port)
        get(conn, "queues")
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            body = get(conn, "queues")
            times.append(time.perf_counter() - started)
        assert len(json.loads(body)) == count
        conn.close()
    return times


def publishes_per_second(seconds: float = 2.0) -> float:
    broker = Broker(trace_limit=1000)
    broker.connect().channel().queue_declare("sink")
    with broker.serve(management=True) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.management_port)
        body = json.dumps({"properties": {}, "routing_key": "sink", "payload": "x" * 100,
                           "payload_encoding": "string"})
        done = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            conn.request("POST", "/api/exchanges/%2F/amq.default/publish", body, AUTH)
            conn.getresponse().read()
            done += 1
        conn.close()
    return done / seconds


def poll_costs(queues: int, rounds: int) -> dict[str, float]:
    """The loop's time for one poll (the API called in-process, no socket), median seconds:
    what a poll takes from the thread that serves the AMQP clients, each second."""
    from embroker.management import ManagementAPI, Request

    broker = Broker(trace_limit=1000)
    channel = broker.connect().channel()
    channel.exchange_declare("events", "topic")
    for i in range(queues):
        channel.queue_declare(f"q-{i:05d}")
        channel.queue_bind(f"q-{i:05d}", "events", f"orders.{i}.*")
    channel.queue_declare("bench")
    for _ in range(1000):
        channel.basic_publish("", "bench", b"x" * 100)
    api = ManagementAPI(broker)
    headers = {"authorization": AUTH["Authorization"]}
    costs = {}
    for name, paths in (("console", [("embroker/console", {"since": str(broker.trace.total - 20),
                                                           "queue": "bench"})]),
                        ("dashboard", [(p, {}) for p in DASHBOARD])):
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            for path, query in paths:
                api(Request("GET", "/api/" + path, query, headers))
            times.append(time.perf_counter() - started)
        costs[name] = statistics.median(times)
    return costs


def amqp_run(messages: int, queues: int, poll: list[str] | None) -> float:
    broker = Broker(trace_limit=1000)
    channel = broker.connect().channel()
    channel.exchange_declare("events", "topic")
    for i in range(queues):
        channel.queue_declare(f"q-{i:05d}")
        channel.queue_bind(f"q-{i:05d}", "events", f"orders.{i}.*")
    with broker.serve(management=True) as server:
        poller = None
        if poll is not None:
            poller = subprocess.Popen(
                [sys.executable, "-c", POLLER, str(server.management_port), json.dumps(poll)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert poller.stdout is not None
            poller.stdout.readline()  # it polls
        connection = pika.BlockingConnection(pika.URLParameters(server.url))
        channel = connection.channel()
        channel.queue_declare("bench")
        body = b"x" * 100
        started = time.perf_counter()
        for _ in range(messages):
            channel.basic_publish("", "bench", body)
        channel.queue_declare("bench", passive=True)
        elapsed = time.perf_counter() - started
        connection.close()
        if poller is not None:
            assert poller.stdin is not None
            poller.stdin.close()
            poller.wait(timeout=30)
    return messages / elapsed


def spread(values: list[float]) -> str:
    middle = statistics.median(values)
    return f"{(max(values) - min(values)) / middle * 100:.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--console-queues", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"load average before: {load()} ({os.cpu_count()} cores)")
    times = queues_listing(args.queues, args.rounds)
    print(f"GET /api/queues, {args.queues} queues: median {statistics.median(times):.3f} s "
          f"(fastest {min(times):.3f}, slowest {max(times):.3f}; {args.rounds} requests)")
    rates = [publishes_per_second() for _ in range(args.rounds)]
    print(f"POST .../publish: median {statistics.median(rates):.0f} requests/s "
          f"(runs: {' '.join(f'{r:.0f}' for r in rates)})")
    costs = poll_costs(args.console_queues, args.rounds)
    print(f"one poll, {args.console_queues} queues, the loop's time: console "
          f"{costs['console'] * 1000:.1f} ms, dashboard {costs['dashboard'] * 1000:.1f} ms "
          f"(medians of {args.rounds}; once a second)")
    runs: dict[str, list[float]] = {"alone": [], "console": [], "dashboard": []}
    for _ in range(args.rounds):
        runs["alone"].append(amqp_run(args.messages, args.console_queues, None))
        runs["console"].append(amqp_run(args.messages, args.console_queues, CONSOLE))
        runs["dashboard"].append(amqp_run(args.messages, args.console_queues, DASHBOARD))
    alone = statistics.median(runs["alone"])
    for name, values in runs.items():
        middle = statistics.median(values)
        print(f"AMQP publish, msg/s, {name:9}: median {middle:.0f} "
              f"({(middle - alone) / alone * 100:+.1f}% of alone; spread {spread(values)}): "
              + " ".join(f"{r:.0f}" for r in values))
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
