"""A scripted workload and the ``message_stats`` the management API shows for it (issue #50,
part 3): what RabbitMQ 3.10.8 counts per channel, exchange, queue and vhost, recorded in
``golden/message_stats.json`` and compared with embroker's by ``test_message_stats.py``.

    python -m tests.management.message_stats        (records the golden file from the
                                                      reference, EMBROKER_REFERENCE_URL)

The workload runs in a vhost of its own (deleted after), so that the vhost's counts are the
workload's alone. Counts only: each ``*_details`` is replaced by its keys (rates are timing).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pika

GOLDEN = Path(__file__).parent / "golden" / "message_stats.json"
#: RabbitMQ's statistics come every 5 s (collect_statistics_interval): the reference's answers
#: are read until two reads 6 s apart agree, within this bound.
SETTLE_BOUND_SECONDS = 40.0


class Api:
    """The management API at ``base`` (``http://host:port/api``) as guest."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path, data=data, method=method,
            headers={"content-type": "application/json",
                     "authorization": "Basic " + base64.b64encode(b"guest:guest").decode()})
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
        return json.loads(raw) if raw else None


def workload(amqp_url: str, vhost: str) -> list[pika.BlockingConnection]:
    """The scripted traffic; returns the connection, still open (its channels' statistics are
    read while they live)."""
    parts = urllib.parse.urlsplit(amqp_url)
    params = pika.ConnectionParameters(parts.hostname or "127.0.0.1", parts.port or 5672, vhost,
                                       pika.PlainCredentials("guest", "guest"))
    connection = pika.BlockingConnection(params)
    confirming = connection.channel()  # channel 1
    plain = connection.channel()  # channel 2
    for queue in ("q1", "q2", "q3", "q4", "q5"):
        confirming.queue_declare(queue)
    confirming.queue_declare("idle")
    confirming.exchange_declare("x1", "direct")
    confirming.queue_bind("q1", "x1", "k")
    confirming.queue_bind("q2", "x1", "k")
    confirming.confirm_delivery()
    confirming.basic_publish("", "q1", b"1")  # one queue
    confirming.basic_publish("x1", "k", b"2")  # two queues
    with contextlib.suppress(pika.exceptions.UnroutableError):
        confirming.basic_publish("x1", "nowhere", b"3", mandatory=True)  # returned
    confirming.basic_publish("x1", "nowhere", b"4")  # dropped
    plain.basic_publish("x1", "nowhere", b"5")  # dropped, no confirms
    plain.basic_publish("", "q3", b"6")
    plain.basic_publish("", "q3", b"7")
    plain.basic_publish("", "q4", b"8")  # a queue only published to
    plain.basic_publish("", "q5", b"9")
    getting = connection.channel()  # channel 3: only takes
    assert getting.basic_get("q5", auto_ack=True)[0] is not None
    assert plain.basic_get("q1", auto_ack=True)[0] is not None  # get_no_ack
    method, _, _ = plain.basic_get("q1")  # get, then requeued
    plain.basic_nack(method.delivery_tag, requeue=True)
    method, _, _ = plain.basic_get("q1")  # get, redelivered
    plain.basic_ack(method.delivery_tag)
    assert plain.basic_get("q1")[0] is None  # get_empty
    received: list[int] = []
    plain.basic_qos(prefetch_count=10)

    def on_q2(channel: Any, deliver: Any, _properties: Any, _body: bytes) -> None:
        channel.basic_ack(deliver.delivery_tag)
        received.append(1)

    plain.basic_consume("q2", on_q2, consumer_tag="acking")  # deliver
    plain.basic_consume("q3", lambda *_: received.append(1), auto_ack=True,
                        consumer_tag="auto")  # deliver_no_ack
    deadline = time.monotonic() + 10
    while len(received) < 3 and time.monotonic() < deadline:
        connection.process_data_events(0.1)
    plain.basic_cancel("acking")
    plain.basic_cancel("auto")
    return [connection]


def counts(stats: Any) -> Any:
    """``message_stats`` with each ``*_details`` replaced by its sorted keys."""
    if not isinstance(stats, dict):
        return stats
    return {key: sorted(value) if key.endswith("_details") and isinstance(value, dict)
            else value for key, value in sorted(stats.items())}


def read(api: Api, vhost: str) -> dict[str, Any]:
    """What the API shows of the workload: each channel's, exchange's, queue's and the
    vhost's ``message_stats`` (counts), by a name of the workload's own."""
    v = urllib.parse.quote(vhost, safe="")
    seen: dict[str, Any] = {}
    for channel in api.call("GET", f"/vhosts/{v}/channels"):
        one = api.call("GET", "/channels/" + urllib.parse.quote(channel["name"], safe=""))
        seen[f"channel {channel['number']}"] = counts(one.get("message_stats"))
    for exchange in ("x1", "amq.default", "amq.topic"):
        one = api.call("GET", f"/exchanges/{v}/{exchange}")
        seen[f"exchange {exchange}"] = counts(one.get("message_stats"))
    for queue in ("q1", "q2", "q3", "q4", "q5", "idle"):
        seen[f"queue {queue}"] = counts(api.call("GET", f"/queues/{v}/{queue}").get(
            "message_stats"))
    seen["vhost"] = counts(api.call("GET", f"/vhosts/{v}").get("message_stats"))
    return seen


def run(base: str, amqp_url: str, *, settle: bool) -> dict[str, Any]:
    """The workload in a new vhost of ``base``'s broker, and what its API shows of it (read
    until it stops changing when ``settle``: the reference counts every 5 s)."""
    api = Api(base)
    vhost = f"mgmt-stats-{uuid.uuid4().hex[:8]}"
    api.call("PUT", f"/vhosts/{vhost}", {})
    api.call("PUT", f"/permissions/{vhost}/guest",
             {"configure": ".*", "write": ".*", "read": ".*"})
    connections: list[pika.BlockingConnection] = []
    try:
        if settle:
            time.sleep(6)
        idle = counts(api.call("GET", f"/vhosts/{urllib.parse.quote(vhost, safe='')}").get(
            "message_stats"))
        connections = workload(amqp_url, vhost)
        seen = read(api, vhost)
        if settle:
            deadline = time.monotonic() + SETTLE_BOUND_SECONDS
            while True:
                time.sleep(6)
                again = read(api, vhost)
                if again == seen or time.monotonic() > deadline:
                    break
                seen = again
        return {"vhost before the workload": idle, **seen}
    finally:
        for connection in connections:
            if connection.is_open:
                connection.close()
        with contextlib.suppress(urllib.error.HTTPError):
            api.call("DELETE", f"/vhosts/{vhost}")


def main() -> int:
    url = os.environ.get("EMBROKER_REFERENCE_URL", "amqp://guest:guest@127.0.0.1:5672/")
    host = urllib.parse.urlsplit(url).hostname or "127.0.0.1"
    seen = run(f"http://{host}:15672/api", url, settle=True)
    GOLDEN.write_text(json.dumps(seen, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
