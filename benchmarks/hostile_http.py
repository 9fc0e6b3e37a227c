"""An AMQP client's round trip while a hostile HTTP client hammers the management API.

Run: python benchmarks/hostile_http.py [--queues N] [--seconds S] [--clients C] [--no-reference]

The broker is ``embroker serve --port 0 --management-port 0``, a process of its own as users run
it, holding N queues (5,000 by default, declared through pika; ``a`` * 22 + ``!`` among them,
the issue's name). Another process makes AMQP round trips (pika: a passive ``queue.declare``, one
frame each way) for S seconds in each condition, and reports their median, 99th percentile and
slowest, in milliseconds; C more processes (1 by default) send one kind of request to the
management port back to back, each on its own keep-alive connection:

- ``quiet``: nothing;
- ``regex``: ``GET /api/queues?name=^(a+)+$&use_regex=true`` (the issue's: re backtracks 2^n
  steps on a name of n a's and a "!"; 0.33 s for 22);
- ``listing``: ``GET /api/queues`` (every queue's JSON);
- ``sorted page``: ``GET /api/queues?sort=name&sort_reverse=true&page=3&page_size=500``;
- ``definitions``: ``GET /api/definitions``;
- ``bad bodies``: ``PUT /api/queues/%2F/x`` with ``{"arguments": [1, 2]}``;
- ``regex classes``: ``GET /api/queues?name=...&use_regex=true`` with an 8 KB expression of 450
  distinct classes as wide as Unicode (``[\\u0100-\\U0010ffff][\\u0101-\\U0010ffff]...``: Python's
  ``re`` builds each one's bitmap a code point at a time, 2.9-3.2 s in all, issue 44);
- ``regex nesting``: the same with 1,000 nested groups (``((((...a...))))``: Python's parser
  recursed until ``RecursionError``, a 500);
- ``policy classes``: ``PUT /api/policies/%2F/bench-hostile`` whose pattern is that 8 KB
  expression (a policymaker's; ``message-ttl`` as its definition);
- ``permission nesting``: ``PUT /api/permissions/%2F/guest`` whose ``configure`` expression
  is the 1,000 nested groups (an administrator's);
- ``regex 1 KB``: ``GET /api/queues?name=a?a?...&use_regex=true``, 1,024 characters, the longest
  expression embroker's bounds let its parser read (refused after, as too large for the DFA).

With a reference RabbitMQ answering on 127.0.0.1 (5672, and 15672 for its management API;
``--no-reference``: not), the same N queues are declared there (a vhost of the run's own,
deleted at the end) and the same conditions run against it: the ratio column is embroker's
median round trip over RabbitMQ's.

Timings only: nothing is asserted. Take them on a quiet machine (the load average is printed).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
import uuid

#: Issue 44's costly expressions: 1,000 nested groups, and (WIDE_CLASSES, made afresh for each
#: request by the hostile client) 450 distinct classes spanning Unicode, 8,550 characters.
NESTED = "(" * 1000 + "a" + ")" * 1000

CONDITIONS: dict[str, tuple[str, str, str | None]] = {
    "quiet": ("", "", None),
    "regex": ("GET", "/api/queues/{vhost}?name=%5E(a%2B)%2B%24&use_regex=true&columns=name",
              None),
    "listing": ("GET", "/api/queues/{vhost}", None),
    "sorted page": ("GET", "/api/queues/{vhost}?sort=name&sort_reverse=true&page=3"
                           "&page_size=500", None),
    "definitions": ("GET", "/api/definitions", None),
    "bad bodies": ("PUT", "/api/queues/{vhost}/x", '{"arguments": [1, 2]}'),
    "regex classes": ("GET", "/api/queues/{vhost}?name=WIDE_CLASSES&use_regex=true&columns=name",
                      None),
    "regex nesting": ("GET", "/api/queues/{vhost}?name=" + urllib.parse.quote(NESTED)
                      + "&use_regex=true&columns=name", None),
    "policy classes": ("PUT", "/api/policies/{vhost}/bench-hostile", json.dumps(
        {"pattern": "WIDE_CLASSES", "definition": {"message-ttl": 3600000}})),
    "permission nesting": ("PUT", "/api/permissions/{vhost}/guest", json.dumps(
        {"configure": NESTED, "write": ".*", "read": ".*"})),
    "regex 1 KB": ("GET", "/api/queues/{vhost}?name=" + urllib.parse.quote("a?" * 512)
                   + "&use_regex=true&columns=name", None),
}

# The AMQP client: round trips for `seconds`, then their times (ms) as JSON on stdout.
ROUND_TRIPS = r"""
import json, sys, time, pika
url, queue, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
parameters = pika.URLParameters(url)
parameters.socket_timeout = parameters.stack_timeout = 120  # (waits out a stalled broker)
connection = pika.BlockingConnection(parameters)
channel = connection.channel()
for _ in range(50):  # warm up
    channel.queue_declare(queue, passive=True)
times, end = [], time.perf_counter() + seconds
while time.perf_counter() < end:
    start = time.perf_counter()
    channel.queue_declare(queue, passive=True)
    times.append((time.perf_counter() - start) * 1000)
connection.close()
print(json.dumps(times))
"""

# The hostile client: one request, back to back, until stdin closes; prints how many it made.
# A WIDE_CLASSES in the request is replaced by issue 44's expression, its classes starting at
# other code points each time (Python's re keeps the last 512 patterns it compiled).
HAMMER = r"""
import base64, http.client, json, sys, threading, urllib.parse
port, method, path, body = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] or None
user = sys.argv[5]
auth = {"Authorization": "Basic " + base64.b64encode(user.encode()).decode(),
        "content-type": "application/json"}
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
count = 0
print("ready", flush=True)
def wide(n):
    return "".join(f"[\\u{0x100 + (n * 450 + i) % 4096:04x}-\\U0010ffff]" for i in range(450))
while not stop.is_set():
    sent_path, sent_body = path, body
    if "WIDE_CLASSES" in path + (body or ""):
        pattern = wide(count)
        sent_path = path.replace("WIDE_CLASSES", urllib.parse.quote(pattern))
        sent_body = body and body.replace("WIDE_CLASSES", json.dumps(pattern)[1:-1])
    conn.request(method, sent_path, body=sent_body, headers=auth)
    conn.getresponse().read()
    count += 1
print(count, flush=True)
"""


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run_condition(amqp_url: str, http_port: int, vhost: str, name: str, seconds: float,
                  clients: int, user: str) -> tuple[list[float], int]:
    method, path, body = CONDITIONS[name]
    hammers = []
    for _ in range(clients if method else 0):
        hammer = subprocess.Popen(
            [sys.executable, "-c", HAMMER, str(http_port), method,
             path.format(vhost=urllib.parse.quote(vhost, safe="")), body or "", user],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert hammer.stdout is not None
        hammer.stdout.readline()  # ready
        hammers.append(hammer)
    try:
        out = subprocess.run([sys.executable, "-c", ROUND_TRIPS, amqp_url, "bench", str(seconds)],
                             capture_output=True, text=True, check=True).stdout
    finally:
        requests = 0
        for hammer in hammers:
            stdout, _ = hammer.communicate("", timeout=600)
            requests += int(stdout.split()[-1])
    return json.loads(out), requests


def report(name: str, times: list[float], requests: int, ours: float | None = None) -> float:
    """A line of the table (with ``ours``, embroker's median for the same condition: the
    ratio of it to this median); returns the median."""
    median = percentile(times, 0.5)
    ratio = f"{ours / median:8.2f}" if ours is not None and median else " " * 8
    print(f"  {name:18} {len(times):8} {median:8.3f} {percentile(times, 0.99):8.3f} "
          f"{max(times):9.2f} {requests:9} {ratio}")
    return median


def declare(url: str, queues: int) -> None:
    import pika

    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.queue_declare("bench")
    channel.queue_declare("a" * 22 + "!")
    for i in range(queues - 2):
        channel.queue_declare(f"q-{i:05d}")
    connection.close()


def embroker_side(queues: int, seconds: float, clients: int) -> dict[str, float]:
    served = subprocess.Popen([sys.executable, "-m", "embroker", "serve", "--port", "0",
                               "--management-port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        assert served.stdout is not None
        line = served.stdout.readline()
        amqp = re.search(r"(amqp://\S+?:\d+)/", line)
        http = re.search(r"http://\S+?:(\d+)/", line)
        assert amqp is not None, line
        assert http is not None, line
        url, port = amqp.group(1) + "/", int(http.group(1))
        declare(url, queues)
        medians = {}
        print(f"embroker serve ({queues} queues)")
        print(f"  {'condition':18} {'trips':>8} {'median':>8} {'p99':>8} {'slowest':>9} "
              f"{'requests':>9}")
        for name in CONDITIONS:
            times, requests = run_condition(url, port, "/", name, seconds, clients,
                                            "guest:guest")
            medians[name] = report(name, times, requests)
        return medians
    finally:
        served.terminate()
        served.wait(10)


def reference_side(queues: int, seconds: float, clients: int, ours: dict[str, float]) -> None:
    vhost = f"bench-{uuid.uuid4().hex[:8]}"
    base = "http://127.0.0.1:15672/api"
    auth = "Basic " + base64.b64encode(b"guest:guest").decode()

    def call(method: str, path: str, body: object = None) -> None:
        request = urllib.request.Request(base + path, method=method, headers={
            "authorization": auth, "content-type": "application/json"},
            data=json.dumps(body).encode() if body is not None else None)
        urllib.request.urlopen(request, timeout=60).read()
    try:
        call("GET", "/overview")
    except OSError:
        print("(no reference RabbitMQ's management API on 127.0.0.1:15672)")
        return
    quoted = urllib.parse.quote(vhost, safe="")
    call("PUT", f"/vhosts/{quoted}", {})
    try:
        declare(f"amqp://guest:guest@127.0.0.1:5672/{quoted}", queues)
        print(f"RabbitMQ ({queues} queues in a vhost of its own; ratio: embroker's median over "
              "RabbitMQ's)")
        print(f"  {'condition':18} {'trips':>8} {'median':>8} {'p99':>8} {'slowest':>9} "
              f"{'requests':>9} {'ratio':>8}")
        for name in CONDITIONS:
            times, requests = run_condition(
                f"amqp://guest:guest@127.0.0.1:5672/{quoted}", 15672, vhost, name, seconds,
                clients, "guest:guest")
            report(name, times, requests, ours[name])
    finally:
        call("DELETE", f"/vhosts/{quoted}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queues", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--conditions", default=",".join(CONDITIONS),
                        help="which conditions, comma-separated (quiet is always run)")
    args = parser.parse_args()
    wanted = {"quiet", *args.conditions.split(",")}
    for name in list(CONDITIONS):
        if name not in wanted:
            del CONDITIONS[name]
    print(f"load {load()}; {os.cpu_count()} CPUs; round trips in ms (a passive queue.declare); "
          f"{args.clients} hostile client(s), {args.seconds:g} s a condition")
    ours = embroker_side(args.queues, args.seconds, args.clients)
    if not args.no_reference:
        reference_side(args.queues, args.seconds, args.clients, ours)
    print(f"load {load()}")


if __name__ == "__main__":
    main()
