"""The shape of the statistics' history a range asks (``?lengths_age=60&lengths_incr=5``...),
the values masked: which ``*_details`` an answer has, their keys, how many samples, whether the
samples are ``incr`` apart on multiples of it, newest first, whether the newest is at or after
the request's time (``range_ceil``) or at or before it (``range``), and whether ``avg`` and
``avg_rate`` follow from the samples (``rabbit_mgmt_stats:average/3``).

    python -m tests.management.samples_shape

records RabbitMQ's (``EMBROKER_REFERENCE_URL``'s node, management on 15672) into
``golden/samples_shape.json``; test_samples_reference.py checks embroker's against it.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "golden" / "samples_shape.json"
RECORD_COMMAND = "python -m tests.management.samples_shape"
#: How long the scenario waits for samples (two statistics intervals and more).
WAIT_SECONDS = 12.0

_ALL = "lengths_age={a}&lengths_incr={i}&msg_rates_age={a}&msg_rates_incr={i}" \
       "&data_rates_age={a}&data_rates_incr={i}&node_stats_age={a}&node_stats_incr={i}"

#: (A range whose first point RabbitMQ may or may not fill, depending on where its own samples
#: fall between two points, is not asked: with age 10 and incr 10 on a queue 12 s old, its
#: oldest point is missing when the queue's first samples were kept as one run of equal values
#: (``exometer_slide:take_since/6``'s drop entries) and fall before it; embroker's samples are
#: on the multiples of the interval, and the point is there.)
#: (label, path with {queue} {node} {connection} {channel}, query, incr seconds: 0 for none,
#: or negative when the age is no multiple of it, the newest sample's time then depending on
#: the request's own)
REQUESTS: list[tuple[str, str, str, int]] = [
    ("queue 60/5", "/queues/%2F/{queue}", _ALL.format(a=60, i=5), 5),
    ("queue 30/7", "/queues/%2F/{queue}", _ALL.format(a=30, i=7), -7),
    ("queue no range", "/queues/%2F/{queue}", "", 0),
    ("queue age only", "/queues/%2F/{queue}", "lengths_age=60", 0),
    ("queue not a number", "/queues/%2F/{queue}", "lengths_age=x&lengths_incr=5", 0),
    ("queue age 0", "/queues/%2F/{queue}", "lengths_age=0&lengths_incr=5", 0),
    ("queue too many samples", "/queues/%2F/{queue}", "msg_rates_age=5010&msg_rates_incr=10",
     0),
    ("queue 501 samples, coarse bucket", "/queues/%2F/{queue}",
     "msg_rates_age=5005&msg_rates_incr=10", 10),
    ("overview lengths only", "/overview", "lengths_age=60&lengths_incr=5", 5),
    ("queue 500 samples", "/queues/%2F/{queue}", "lengths_age=500&lengths_incr=1", 1),
    ("vhost 60/5", "/vhosts/%2F", _ALL.format(a=60, i=5), 5),
    ("overview 60/5", "/overview", _ALL.format(a=60, i=5), 5),
    ("overview msg_rates only", "/overview", "msg_rates_age=60&msg_rates_incr=5", 5),
    ("node 60/5", "/nodes/{node}", _ALL.format(a=60, i=5), 5),
    ("connection 60/5", "/connections/{connection}", _ALL.format(a=60, i=5), 5),
    ("channel 60/5", "/channels/{channel}", _ALL.format(a=60, i=5), 5),
]


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def detail_shape(details: dict[str, Any], incr: int, after: int) -> dict[str, Any]:
    """The masked shape of one ``*_details`` (``incr`` in seconds; ``after``: the time the
    answer came, in ms)."""
    shape: dict[str, Any] = {"keys": sorted(details)}
    samples = details.get("samples")
    if samples is None:
        return shape
    stamps = [s["timestamp"] for s in samples]
    values = [s["sample"] for s in samples]
    shape["count"] = len(samples)
    shape["sample_keys"] = sorted({key for s in samples for key in s})
    ends = incr > 0
    incr = abs(incr)
    shape["newest_first_incr_apart"] = all(
        a - b == incr * 1000 for a, b in itertools.pairwise(stamps))
    shape["on_multiples_of_incr"] = all(t % (incr * 1000) == 0 for t in stamps)
    if stamps and ends:
        shape["newest"] = "after the request" if stamps[0] > after else "at or before it"
    if len(samples) > 1:
        shape["avg_is_mean"] = _close(details["avg"], sum(values) / len(values))
        shape["avg_rate_is_slope"] = _close(
            details["avg_rate"], (values[0] - values[-1]) * 1000 / (stamps[0] - stamps[-1]))
        # (the rate: between the two newest samples, or 0.0)
        slope = (values[0] - values[1]) * 1000 / (stamps[0] - stamps[1])
        shape["rate_is_last_slope_or_0"] = _close(details["rate"], slope) or \
            details["rate"] == 0.0
    return shape


def walk(answer: Any, prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every ``*_details`` with a ``rate`` in ``answer``, by its path."""
    if isinstance(answer, dict):
        for key, value in answer.items():
            path = f"{prefix}{key}"
            if key.endswith("_details") and isinstance(value, dict) and "rate" in value:
                yield path, value
            elif isinstance(value, dict):
                yield from walk(value, path + ".")


def answer_shape(status: int, body: Any, incr: int, after: int) -> dict[str, Any]:
    """The masked shape of one answer."""
    if status != 200:
        return {"status": status, "body": body}
    shapes = {path: detail_shape(details, incr, after) for path, details in walk(body)}
    for path, masked in shapes.items():
        if path.endswith("_avg_time_details"):
            # (rabbit_mgmt_stats:avg_time_details/1: an operation's average time, whose avg
            # and rates are no function of its samples)
            for key in ("avg_is_mean", "avg_rate_is_slope", "rate_is_last_slope_or_0"):
                masked.pop(key, None)
    shape: dict[str, Any] = {"status": status, "details": shapes}
    if "churn_rates" in body:
        shape["churn_rates_empty"] = not body["churn_rates"]
    return shape


def run(get: Callable[[str], tuple[int, Any]], now_ms: Callable[[], int],
        names: dict[str, str]) -> dict[str, Any]:
    """Every request of :data:`REQUESTS` through ``get`` (a path with its query -> status and
    JSON), shaped."""
    found: dict[str, Any] = {}
    for label, path, query, incr in REQUESTS:
        target = path.format(**{k: urllib.parse.quote(v, safe="") for k, v in names.items()})
        status, body = get(target + (f"?{query}" if query else ""))
        found[label] = answer_shape(status, body, incr, now_ms())
    return found


# -- recording from RabbitMQ ------------------------------------------------------------------------

def _reference_get(base: str, auth: str) -> Callable[[str], tuple[int, Any]]:
    def get(target: str) -> tuple[int, Any]:
        request = urllib.request.Request(base + target, headers={"authorization": auth})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())
    return get


def record(url: str) -> dict[str, Any]:
    """Run the scenario on RabbitMQ (``url``: its AMQP URL): a queue of three messages published
    on a channel that stays open, the samples waited for, then every request."""
    import pika

    parts = urllib.parse.urlsplit(url)
    base = f"http://{parts.hostname or '127.0.0.1'}:15672/api"
    credentials = f"{parts.username or 'guest'}:{parts.password or 'guest'}"
    auth = "Basic " + base64.b64encode(credentials.encode()).decode()
    get = _reference_get(base, auth)
    queue = f"samples-{uuid.uuid4().hex[:8]}"
    tag = f"samples-shape-{uuid.uuid4().hex[:8]}"
    params = pika.URLParameters(url)
    params.client_properties = {"connection_name": tag}
    connection = pika.BlockingConnection(params)
    try:
        channel = connection.channel()
        channel.queue_declare(queue)
        for _ in range(3):
            channel.basic_publish("", queue, b"x")
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            connection.process_data_events(time_limit=0.5)
        _, listed = get("/connections")
        name = next(c["name"] for c in listed if c.get("user_provided_name") == tag)
        _, overview = get("/overview")
        names = {"queue": queue, "node": overview["node"], "connection": name,
                 "channel": f"{name} (1)"}
        return run(get, lambda: int(time.time() * 1000), names)
    finally:
        try:
            connection.channel().queue_delete(queue)
        finally:
            connection.close()


def main() -> int:
    url = os.environ.get("EMBROKER_REFERENCE_URL", "amqp://guest:guest@127.0.0.1:5672/")
    shapes = record(url)
    document = {"recorded_from": "RabbitMQ 3.10.8's management API",
                "command": RECORD_COMMAND, "requests": [list(r) for r in REQUESTS],
                "shapes": shapes}
    GOLDEN.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"recorded {GOLDEN.name}: {len(shapes)} requests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
