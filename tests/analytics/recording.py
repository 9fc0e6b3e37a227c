"""Ground truth from a real RabbitMQ: a topology, messages published through it, and what the
tracing plugin and the firehose recorded about where each went.

``python -m tests.analytics.recording DIR`` records into DIR (the committed files are in
``tests/analytics/data``); ``test_live.py`` records anew when ``EMBROKER_REFERENCE_URL`` is set.
It needs, on the local node, the ``rabbitmq_management`` and ``rabbitmq_tracing`` plugins and
``rabbitmqctl`` (run as root), and works in a fresh vhost of its own, deleted at the end.

What the topology exercises: topic bindings that overlap (one queue reached twice), an
alternate exchange on the exchange published to (and one given by a policy), an
exchange-to-exchange binding into an
*internal* headers exchange, headers bindings on typed values (int, float, bool, string, byte
string, timestamp, void, ``any``/``all``/``any-with-x``), an alternate exchange that fires
mid-path (on an exchange reached through an exchange-to-exchange binding), a fanout and topic
pair bound to each other both ways (a cycle), CC and BCC, the default exchange (with a key that
names no queue), and mandatory and unroutable messages.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

#: Exchanges: name, type, internal, arguments.
EXCHANGES = [
    ("events", "topic", False, {"alternate-exchange": "unrouted"}),
    ("unrouted", "fanout", False, {}),
    ("audit", "headers", True, {}),
    ("regional", "direct", False, {"alternate-exchange": "regional-ae"}),
    ("regional-ae", "fanout", False, {}),
    ("broadcast", "fanout", False, {}),
    ("mirror", "topic", False, {}),
    ("hx", "headers", False, {}),
    ("dead-end", "direct", False, {}),
    ("policy-x", "direct", False, {}),
]

#: A policy giving ``policy-x`` its alternate exchange (policies: name, pattern, definition).
POLICIES = [("ae-policy", "^policy-x$", {"alternate-exchange": "unrouted"})]

QUEUES = ["orders", "eu", "unrouted-q", "audit-critical", "audit-eu", "audit-tenant", "eu-shipping",
          "shipping-fallback", "b1", "b2", "mirror-q", "idle", "typed-int", "typed-str",
          "typed-float", "typed-bool", "typed-bytes", "typed-ts", "presence"]

#: Bindings: source, destination kind, destination, key, arguments.
BINDINGS: list[tuple[str, str, str, str, dict[str, Any]]] = [
    ("events", "queue", "orders", "orders.*.created", {}),
    ("events", "queue", "orders", "orders.#", {}),
    ("events", "queue", "eu", "*.eu.*", {}),
    ("events", "queue", "idle", "never.used", {}),
    ("unrouted", "queue", "unrouted-q", "", {}),
    ("events", "exchange", "audit", "billing.#", {}),
    ("audit", "queue", "audit-critical", "", {"x-match": "all", "level": 3, "critical": True}),
    ("audit", "queue", "audit-eu", "", {"x-match": "any", "region": "eu", "country": "de"}),
    ("audit", "queue", "audit-tenant", "", {"x-match": "any-with-x", "x-tenant": "acme"}),
    ("events", "exchange", "regional", "*.*.shipped", {}),
    ("regional", "queue", "eu-shipping", "orders.eu.shipped", {}),
    ("regional-ae", "queue", "shipping-fallback", "", {}),
    ("events", "exchange", "broadcast", "all.#", {}),
    ("broadcast", "queue", "b1", "", {}),
    ("broadcast", "queue", "b2", "", {}),
    ("broadcast", "exchange", "mirror", "", {}),
    ("mirror", "exchange", "broadcast", "#", {}),
    ("mirror", "queue", "mirror-q", "mirror.#", {}),
    ("hx", "queue", "typed-int", "", {"n": 300}),
    ("hx", "queue", "typed-str", "", {"n": "300"}),
    ("hx", "queue", "typed-float", "", {"x-match": "all", "f": 1.5}),
    ("hx", "queue", "typed-bool", "", {"flag": True}),
    ("hx", "queue", "typed-bytes", "", {"raw": "abc"}),
    ("hx", "queue", "typed-ts", "", {"ts": datetime.datetime(2024, 1, 2, 3, 4, 5,
                                                             tzinfo=datetime.timezone.utc)}),
    ("hx", "queue", "presence", "", {"x-match": "any", "v": None}),
]

#: Messages: exchange, routing key, headers (None: no headers), mandatory.
MESSAGES: list[tuple[str, str, dict[str, Any] | None, bool]] = [
    ("events", "orders.eu.created", None, False),
    ("events", "orders.us.created", {"trace-id": "a1"}, False),
    ("events", "users.us.deleted", None, False),
    ("events", "billing.eu.invoice", {"level": 3, "critical": True, "region": "eu"}, False),
    ("events", "billing.us.invoice", {"level": 3.0, "critical": True}, False),
    ("events", "billing.us.invoice", {"level": "3", "critical": True}, True),
    ("events", "billing.de.refund", {"country": "de", "amount": decimal.Decimal("12.50")}, False),
    ("events", "billing.x", {"x-tenant": "acme"}, False),
    ("events", "orders.us.shipped", None, False),
    ("events", "orders.eu.shipped", None, False),
    ("events", "all.hello", None, False),
    ("broadcast", "mirror.x", None, False),
    ("mirror", "mirror.y", None, False),
    ("mirror", "other", None, True),
    ("events", "orders.eu.created", {"CC": ["users.x.y"], "BCC": ["all.bcc", "orders.us.created"]},
     False),
    ("events", "users.a.b", {"BCC": ["billing.bcc"], "level": 3, "critical": True}, False),
    ("", "orders", {"CC": ["b1", "ghost"]}, False),
    ("", "ghost-queue", None, True),
    ("", "idle", None, False),
    ("dead-end", "k", None, True),
    ("dead-end", "k", None, False),
    ("policy-x", "nothing-bound", None, False),
    ("hx", "", {"n": 300}, False),
    ("hx", "", {"n": 300.0}, False),
    ("hx", "", {"n": "300"}, False),
    ("hx", "", {"n": 70000}, False),
    ("hx", "", {"f": 1.5, "flag": True}, False),
    ("hx", "", {"flag": 1}, False),
    ("hx", "", {"raw": bytearray(b"abc")}, False),
    ("hx", "", {"raw": bytearray(b"\xff\x00")}, False),
    ("hx", "", {"ts": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)}, False),
    ("hx", "", {"ts": 1704164645}, False),
    ("hx", "", {"v": None}, False),
    ("hx", "", {"v": "anything", "nested": {"a": [1, "x", None]}, "big": 2**40}, False),
    ("hx", "", {}, True),
]


def api(method: str, path: str, body: Any = None, *, base: str = "http://127.0.0.1:15672/api",
        user: str = "guest", password: str = "guest") -> Any:
    """Call RabbitMQ's management API; returns the decoded JSON (or the raw bytes)."""
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    request = urllib.request.Request(
        base + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": f"Basic {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        data = response.read()
        if response.headers.get("content-type", "").startswith("application/json") and data:
            return json.loads(data)
        return data


def management_answers() -> bool:
    try:
        api("GET", "/overview")
    except (OSError, urllib.error.URLError):
        return False
    return True


def _declare(channel: Any) -> None:
    for name, xtype, internal, arguments in EXCHANGES:
        if internal:  # amqpstorm's declare has no 'internal' flag
            channel.rpc_request(_internal_declare(name, xtype))
        else:
            channel.exchange.declare(name, xtype, arguments=arguments)
    for name in QUEUES:
        channel.queue.declare(name)
    for source, kind, destination, key, arguments in BINDINGS:
        if kind == "queue":
            channel.queue.bind(destination, source, key, arguments=arguments)
        else:
            channel.exchange.bind(destination, source, key, arguments=arguments)


def _internal_declare(name: str, xtype: str) -> Any:
    from pamqp import commands

    return commands.Exchange.Declare(exchange=name, exchange_type=xtype, internal=True)


def _publish(channel: Any) -> None:
    import amqpstorm

    for number, (exchange, key, headers, mandatory) in enumerate(MESSAGES):
        properties: dict[str, Any] = {"message_id": f"m{number}"}
        if headers is not None:
            properties["headers"] = headers
        message = amqpstorm.Message.create(channel, b"body of " + key.encode(), properties=properties)
        with contextlib.suppress(amqpstorm.AMQPMessageError):  # returned: recorded all the same
            message.publish(key, exchange, mandatory=mandatory)


def record(out: Path, *, amqp_host: str = "127.0.0.1", amqp_port: int = 5672) -> dict[str, Path]:
    """Record the scenario into ``out``: ``definitions.json`` (rabbitmqctl's export, this vhost
    only, without users), ``definitions-api.json`` (the management API's export of the vhost),
    ``tracing.log`` and ``tracing-text.log`` (the tracing plugin's logs, JSON and text formats, of
    the same messages) and ``capture.parquet`` (``embroker
    capture``). Returns the paths and the vhost name (``vhost.txt``)."""
    import amqpstorm

    from embroker.analytics._capture import capture

    out.mkdir(parents=True, exist_ok=True)
    vhost = f"embroker-analytics-{os.getpid()}"
    quoted = urllib.parse.quote(vhost, safe="")
    trace = f"embroker-analytics-{os.getpid()}"
    api("PUT", f"/vhosts/{quoted}")
    try:
        api("PUT", f"/permissions/{quoted}/guest", {"configure": ".*", "write": ".*", "read": ".*"})
        for name, pattern, definition in POLICIES:
            api("PUT", f"/policies/{quoted}/{name}", {"pattern": pattern, "definition": definition,
                                                      "apply-to": "exchanges", "priority": 1})
        connection = amqpstorm.Connection(amqp_host, "guest", "guest", port=amqp_port,
                                          virtual_host=vhost)
        channel = connection.channel()
        _declare(channel)
        channel.confirm_deliveries()
        ready = threading.Event()
        counted: list[int] = []
        url = f"amqp://guest:guest@{amqp_host}:{amqp_port}/{quoted}"
        worker = threading.Thread(target=lambda: counted.append(capture(
            url, str(out / "capture.parquet"), count=len(MESSAGES), duration=60,
            enable_tracing=True, ready=ready.set)))
        worker.start()
        if not ready.wait(30):
            raise RuntimeError("the capture did not start")
        for name, kind in ((trace, "json"), (f"{trace}-text", "text")):
            api("PUT", f"/traces/{quoted}/{name}", {
                "format": kind, "pattern": "#", "tracer_connection_username": "guest",
                "tracer_connection_password": "guest"})
        time.sleep(1)  # the tracing plugin's consumer binds asynchronously
        _publish(channel)
        channel.basic.get("orders", no_ack=True)  # one delivery: a "received" line in the log
        worker.join(90)
        time.sleep(1)
        connection.close()
        (out / "tracing.log").write_bytes(api("GET", f"/trace-files/{trace}.log"))
        (out / "tracing-text.log").write_bytes(api("GET", f"/trace-files/{trace}-text.log"))
        exported = subprocess.run(["rabbitmqctl", "export_definitions", "-", "--format", "json"],
                                  check=True, capture_output=True, text=True).stdout
        document = json.loads(exported[exported.index("{"):])
        mine = {key: [item for item in value if item.get("vhost") == vhost]
                if isinstance(value, list) and key not in ("users", "vhosts", "global_parameters")
                else value for key, value in document.items()}
        mine["vhosts"] = [v for v in document.get("vhosts", []) if v.get("name") == vhost]
        for key in ("users", "permissions", "topic_permissions", "global_parameters"):
            mine[key] = []
        (out / "definitions.json").write_text(json.dumps(mine, indent=1) + "\n")
        (out / "definitions-api.json").write_text(
            json.dumps(api("GET", f"/definitions/{quoted}"), indent=1) + "\n")
        (out / "vhost.txt").write_text(vhost + "\n")
        if counted != [len(MESSAGES)]:
            raise RuntimeError(f"the capture got {counted} messages, {len(MESSAGES)} were published")
    finally:
        for path in (f"/traces/{quoted}/{trace}", f"/trace-files/{trace}.log",
                     f"/traces/{quoted}/{trace}-text", f"/trace-files/{trace}-text.log",
                     f"/vhosts/{quoted}"):
            with contextlib.suppress(urllib.error.HTTPError):
                api("DELETE", path)
    return {name: out / name for name in ("definitions.json", "definitions-api.json",
                                          "tracing.log", "tracing-text.log", "capture.parquet",
                                          "vhost.txt")}


if __name__ == "__main__":
    for path in record(Path(sys.argv[1])).values():
        print(path)
