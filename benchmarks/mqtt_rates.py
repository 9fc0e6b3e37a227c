"""MQTT: paho-mqtt against embroker's MQTT listener and against the reference RabbitMQ's MQTT
plugin (127.0.0.1:1884; a mosquitto holds 1883 there).

Run: python benchmarks/mqtt_rates.py [--messages N] [--repeat R] [--quick]

embroker runs as ``Server(Broker(), listeners={"mqtt": 0})`` in a process of its own (see
_rates.py). The client is paho-mqtt 2.x, MQTT 3.1.1, on its network thread (``loop_start``),
keep-alive 60 s, 100 QoS 1 messages in flight at most (paho's default is 20). Each run uses a
fresh embroker and, on both sides, unique topics and client ids; 100-byte payloads:

- publish, QoS 0: N QoS 0 PUBLISH packets, then one at QoS 1; timed until its PUBACK (the
  packets before it are routed by then on embroker; on RabbitMQ QoS 0 goes by another channel,
  so a few may still be in its queue's way). A 0-9-1 queue bound to the topic takes them, and
  holds all N + 1 before the run ends (checked, not timed); it is deleted after;
- publish, QoS 1: N QoS 1 PUBLISH packets, until the N-th PUBACK;
- subscribe, QoS 1, kept session: a client with ``clean_session=False`` subscribes at QoS 1
  and disconnects; N QoS 1 messages are published meanwhile (not timed); then it connects
  again and is timed until the N-th message (paho PUBACKs each; the plugin's prefetch is 10).
  A clean session with the same id ends the session after. (No QoS 0 line: a session with
  only QoS 0 subscriptions is not kept, on RabbitMQ 3.10.8 as on embroker);
- publish + subscribe, QoS 0 / QoS 1: one client subscribed to a topic at that QoS, another
  publishing N messages to it at that QoS (QoS 1: until each PUBACK too); until the N-th
  arrives.

Each line runs ``--repeat`` times (3) on each side, alternating, and shows the fastest run in
messages per second, the ratio embroker / RabbitMQ, and the smallest server CPU per message
(embroker only). ``--quick`` is 2,000 messages, once. If the reference does not answer on 1884
its column says so. Nothing here is asserted: it prints a table.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import _rates
import paho.mqtt.client as mqtt
import pika
from _rates import Run, Side, timed
from paho.mqtt import __version__ as paho_version
from paho.mqtt.enums import CallbackAPIVersion

PAYLOAD = b"x" * 100
IN_FLIGHT = 100
TIMEOUT = 120.0
REFERENCE = ("127.0.0.1", 1884)


class _Client:
    """A connected paho client (MQTT 3.1.1) counting messages and PUBACKs, with events for the
    N-th of each."""

    def __init__(self, side: Side, client_id: str, clean_session: bool = True,
                 expect: int = 0) -> None:
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id,
                                  clean_session=clean_session, reconnect_on_failure=False)
        self.client.max_inflight_messages_set(IN_FLIGHT)
        self.client.max_queued_messages_set(0)  # (no limit)
        self.received = self.published = 0
        self.expected_messages, self.expected_acks = expect, 0  # (a kept session's come at once)
        self.all_received, self.all_acked = threading.Event(), threading.Event()
        self.subscribed, self.connected = threading.Event(), threading.Event()
        self.client.on_connect = lambda *_: self.connected.set()
        self.client.on_subscribe = lambda *_: self.subscribed.set()
        self.client.on_message = self._on_message
        self.client.on_publish = self._on_publish
        self.client.connect("127.0.0.1", side.port, 60)
        self.client.loop_start()
        _wait(self.connected, "CONNACK")

    def _on_message(self, *_: Any) -> None:
        self.received += 1
        if self.received == self.expected_messages:
            self.all_received.set()

    def _on_publish(self, *_: Any) -> None:
        self.published += 1
        if self.published == self.expected_acks:
            self.all_acked.set()

    def subscribe(self, topic: str, qos: int) -> None:
        self.subscribed.clear()
        self.client.subscribe(topic, qos)
        _wait(self.subscribed, "SUBACK")

    def publish(self, topic: str, n: int, qos: int) -> None:
        """N PUBLISH packets; back once paho has sent (QoS 0) or had acknowledged (1) all."""
        self.expected_acks = self.published + n
        self.all_acked.clear()
        for _ in range(n):
            self.client.publish(topic, PAYLOAD, qos)
        _wait(self.all_acked, f"{n} publishes ({self.published} done)")

    def expect(self, n: int) -> None:
        self.expected_messages = self.received + n
        self.all_received.clear()

    def wait_messages(self) -> None:
        _wait(self.all_received, f"{self.expected_messages} messages ({self.received} came)")

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def _wait(event: threading.Event, what: str) -> None:
    if not event.wait(TIMEOUT):
        raise TimeoutError(f"no {what}")


@contextlib.contextmanager
def _client(side: Side, client_id: str | None = None,
            clean_session: bool = True) -> Iterator[_Client]:
    client = _Client(side, client_id or f"bench-{uuid.uuid4().hex[:8]}", clean_session)
    try:
        yield client
    finally:
        client.close()


def _topic() -> str:
    return f"embroker-bench/{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def _bound_queue(side: Side, topic: str) -> Iterator[Callable[[], int]]:
    """A 0-9-1 queue bound to ``topic`` at ``amq.topic``; yields its message count."""
    amqp = pika.BlockingConnection(pika.URLParameters(side.amqp_url))
    channel = amqp.channel()
    name = f"embroker-bench-{uuid.uuid4().hex[:8]}"
    channel.queue_declare(name)
    channel.queue_bind(name, "amq.topic", topic.replace("/", "."))
    try:
        yield lambda: channel.queue_declare(name, passive=True).method.message_count
    finally:
        channel.queue_delete(name)
        amqp.close()


def _until(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.01)


def publish_qos0(side: Side, n: int) -> Run:
    topic = _topic()
    with _bound_queue(side, topic) as count, _client(side) as client:
        def body() -> None:
            client.publish(topic, n, qos=0)
            client.publish(topic, 1, qos=1)

        run = timed(side, n, lambda: None, body)
        _until(lambda: count() == n + 1, f"{n + 1} messages in the queue")
        return run


def publish_qos1(side: Side, n: int) -> Run:
    topic = _topic()
    with _bound_queue(side, topic) as count, _client(side) as client:
        run = timed(side, n, lambda: None, lambda: client.publish(topic, n, qos=1))
        _until(lambda: count() == n, f"{n} messages in the queue")
        return run


def subscribe_kept_session(side: Side, n: int) -> Run:
    topic, client_id = _topic(), f"bench-keeper-{uuid.uuid4().hex[:8]}"
    with _client(side, client_id, clean_session=False) as keeper:
        keeper.subscribe(topic, 1)
    with _client(side) as publisher:
        publisher.publish(topic, n, qos=1)
    received: list[_Client] = []

    def connect_and_receive() -> None:
        received.append(_Client(side, client_id, clean_session=False, expect=n))
        received[0].wait_messages()

    try:
        return timed(side, n, lambda: None, connect_and_receive)
    finally:
        for client in received:
            client.close()
        with _client(side, client_id, clean_session=True):
            pass  # (ends the kept session: its queues go)


def _publish_and_subscribe(qos: int) -> Callable[[Side, int], Run]:
    def workload(side: Side, n: int) -> Run:
        topic = _topic()
        with _client(side) as subscriber, _client(side) as publisher:
            subscriber.subscribe(topic, qos)
            subscriber.expect(n)

            def body() -> None:
                publisher.publish(topic, n, qos)
                subscriber.wait_messages()

            return timed(side, n, lambda: None, body)
    return workload


LINES: list[tuple[str, Callable[[Side, int], Run]]] = [
    ("publish, QoS 0", publish_qos0),
    (f"publish, QoS 1 ({IN_FLIGHT} in flight)", publish_qos1),
    ("subscribe, QoS 1, kept session", subscribe_kept_session),
    ("publish + subscribe, QoS 0", _publish_and_subscribe(0)),
    ("publish + subscribe, QoS 1", _publish_and_subscribe(1)),
]


def main() -> None:
    _rates.main(__doc__, LINES, kind="mqtt", reference=REFERENCE,
                client=f"paho-mqtt {paho_version} (MQTT 3.1.1)", size=len(PAYLOAD))


if __name__ == "__main__":
    main()
