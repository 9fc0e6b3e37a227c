"""What a real client observes when the node it is connected to stops, on two clusters: the
reference (three RabbitMQ 3.10.8 nodes, ``rabbitmqctl -n NODE stop_app``) and embroker's served
cluster (``broker.serve_nodes()``, ``servers.stop_node``). A scenario drives pika, aio-pika or
kombu over TCP through :class:`Nodes` and writes what the client saw as lines (which node it
connected to, each publish's confirm or error, each delivery's redelivered flag, what a queue
declare answers afterwards); :mod:`tests.cluster.test_client_recovery` compares them with the
golden file recorded from the reference.

Every wait is bounded (:data:`TIMEOUT`), polled at small intervals; the clients' retry
intervals are made small so that a reconnection takes milliseconds on embroker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aio_pika
import pika
import pika.exceptions
from aio_pika.abc import AbstractIncomingMessage
from kombu import Connection
from yarl import URL

#: A bound on each wait, reached only when something is wrong (the reference's stop_app takes
#: about 5.5 s and a restarted node's listener under a second).
TIMEOUT = 30.0
QUORUM = {"x-queue-type": "quorum"}


@dataclass
class Nodes:
    """A three-node cluster as a scenario sees it: each node's AMQP URL (node 1 first), how to
    stop and start a node (by index), and the queue name to use for ``name``."""

    urls: list[str]
    stop: Callable[[int], None]
    start: Callable[[int], None]
    prefix: str = ""

    def q(self, name: str) -> str:
        return self.prefix + name

    def which(self, port: int) -> str:
        """``nodeN``: the node listening on ``port``."""
        ports = [URL(url).port for url in self.urls]
        return f"node{ports.index(port) + 1}"

    def declare(self, node: int, queue: str) -> str:
        """A passive queue.declare on a connection of its own to ``node``: ``ok MESSAGES
        CONSUMERS`` or the code and text it was refused with."""
        connection = pika.BlockingConnection(pika.URLParameters(self.urls[node]))
        try:
            ok = connection.channel().queue_declare(queue, passive=True).method
            return f"ok {ok.message_count} {ok.consumer_count}"
        except pika.exceptions.ChannelClosedByBroker as error:
            return f"{error.reply_code} {error.reply_text}"
        finally:
            if connection.is_open:
                connection.close()


def _poll(predicate: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {TIMEOUT} s")
        time.sleep(0.005)


# -- pika: a list of addresses -------------------------------------------------------------------


def pika_with_an_address_list(nodes: Nodes, out: list[str]) -> None:
    """pika's ``BlockingConnection`` given every node's address, connected to node 1, with
    publisher confirms, a quorum queue (led by node 1) holding one delivery unacknowledged,
    an exclusive and an auto-delete queue; node 1 stops. The application opens its connection
    again with the same list."""
    qq, ex, ad = nodes.q("qq"), nodes.q("ex"), nodes.q("ad")
    params = [pika.URLParameters(url) for url in nodes.urls]
    for each in params:
        each.retry_delay = 0.01
    connection = pika.BlockingConnection(params)
    out.append(f"connected to {nodes.which(connection._impl.params.port)}")
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare(qq, durable=True, arguments=QUORUM)
    channel.queue_declare(ex, exclusive=True)
    channel.queue_declare(ad, auto_delete=True)
    channel.basic_consume(ad, lambda *_: None)
    for body in (b"m1", b"m2"):
        channel.basic_publish("", qq, body)  # (returns once confirmed)
    channel.basic_qos(prefetch_count=1)
    seen: list[str] = []
    channel.basic_consume(qq, lambda _ch, method, _props, body: seen.append(
        f"{body.decode()} redelivered={method.redelivered}"))
    _poll(lambda: connection.process_data_events(0.01) or seen, "the first delivery")
    out.append(f"delivered, not acknowledged: {seen}")
    nodes.stop(0)
    try:
        channel.basic_publish("", qq, b"m3")
        out.append("publish m3 after the stop: confirmed")
    except pika.exceptions.ConnectionClosedByBroker as error:
        out.append(f"publish m3 after the stop: {type(error).__name__} "
                   f"{error.reply_code} {error.reply_text}")
    except pika.exceptions.AMQPError as error:
        out.append(f"publish m3 after the stop: {type(error).__name__}")
    again = pika.BlockingConnection(params)
    out.append(f"connected again to {nodes.which(again._impl.params.port)}")
    for name, queue in (("exclusive", ex), ("auto-delete", ad)):
        out.append(f"{name} queue: {nodes.declare(1, queue)}")
    # (the quorum queue's counts are left out: RabbitMQ answers {ok, 0, 0} while its record
    # still names the stopped leader, v3.10.8 rabbit_quorum_queue:stat/2: seen live)
    out.append(f"quorum queue: {nodes.declare(1, qq).split(' ')[0]}")
    channel = again.channel()
    channel.basic_qos(prefetch_count=10)
    got: list[str] = []

    def deliver(ch: Any, method: Any, properties: Any, body: bytes) -> None:
        count = (properties.headers or {}).get("x-delivery-count")
        got.append(f"{body.decode()} redelivered={method.redelivered} x-delivery-count={count}")
        ch.basic_ack(method.delivery_tag)

    channel.basic_consume(qq, deliver)
    _poll(lambda: again.process_data_events(0.01) or len(got) >= 2, "two deliveries")
    again.process_data_events(0.1)
    out.append(f"consumed on the new connection: {got}")
    again.close()


# -- aio-pika: the robust connection --------------------------------------------------------------


def aiopika_robust_connection(nodes: Nodes, out: list[str]) -> None:
    """aio-pika's ``connect_robust`` (10.2: one URL, node 1's), a robust channel with a quorum
    queue (led by node 1) and an exclusive queue, one delivery unacknowledged; node 1 stops and
    starts again: where it reconnects, what its robust channel restores (the consumer with its
    tag, the exclusive queue declared again) and the delivery it gets again."""
    qq, ex = nodes.q("qq"), nodes.q("ex")

    async def scenario() -> None:
        url = URL(nodes.urls[0]).update_query(reconnect_interval="0.02")
        connection = await aio_pika.connect_robust(url, timeout=TIMEOUT)
        reconnected = asyncio.Event()
        connection.reconnect_callbacks.add(lambda *_: reconnected.set())
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=1)
        queue = await channel.declare_queue(qq, durable=True, arguments=QUORUM)
        await channel.declare_queue(ex, exclusive=True)
        await channel.default_exchange.publish(aio_pika.Message(b"job"), qq)
        seen: list[AbstractIncomingMessage] = []

        async def keep(message: AbstractIncomingMessage) -> None:
            seen.append(message)

        tag = await queue.consume(keep)
        await _until(lambda: seen)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, nodes.stop, 0)
        out.append(f"reconnected while node1 is stopped: {reconnected.is_set()}")
        out.append(f"exclusive queue while node1 is stopped: "
                   f"{await loop.run_in_executor(None, nodes.declare, 1, ex)}")
        await loop.run_in_executor(None, nodes.start, 0)
        await asyncio.wait_for(reconnected.wait(), TIMEOUT)
        await _until(lambda: len(seen) >= 2)
        transport = connection.transport
        assert transport is not None
        assert transport.connection.url.port is not None
        out.append(f"reconnected to {nodes.which(transport.connection.url.port)}")
        out.append("deliveries: " + str([
            f"{m.body.decode()} redelivered={m.redelivered} "
            f"x-delivery-count={(m.headers or {}).get('x-delivery-count')!r} "
            f"same tag={m.consumer_tag == tag}" for m in seen]))
        await seen[-1].ack()
        out.append(f"exclusive queue after: {await loop.run_in_executor(None, nodes.declare, 1, ex)}")
        out.append(f"quorum queue after: {await loop.run_in_executor(None, nodes.declare, 1, qq)}")
        await connection.close()

    asyncio.run(asyncio.wait_for(scenario(), 4 * TIMEOUT))


async def _until(predicate: Callable[[], object]) -> None:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {TIMEOUT} s")
        await asyncio.sleep(0.005)


# -- kombu: failover between the URLs of one connection -------------------------------------------


def kombu_failover(nodes: Nodes, out: list[str]) -> None:
    """kombu's ``;``-joined URLs with ``failover_strategy="round-robin"`` and publisher
    confirms, publishing to a quorum queue through ``Connection.ensure``; node 1 stops between
    two publishes: what ``ensure``'s errback is told, which URL it goes on with, what the queue
    holds."""
    tasks = nodes.q("tasks")
    with Connection(";".join(nodes.urls), failover_strategy="round-robin",
                    connect_timeout=TIMEOUT,
                    transport_options={"confirm_publish": True}) as connection:
        connection.ensure_connection(max_retries=1)
        out.append(f"connected to {nodes.which(connection.connection.sock.getpeername()[1])}")
        queue = connection.SimpleQueue(tasks, queue_args=QUORUM)
        producer = queue.producer
        failed: list[str] = []
        publish = connection.ensure(
            producer, producer.publish, max_retries=3, interval_start=0, interval_step=0.01,
            interval_max=0.01, errback=lambda exc, _interval: failed.append(_error(exc)))
        publish({"n": 1}, routing_key=tasks, serializer="json")
        nodes.stop(0)
        publish({"n": 2}, routing_key=tasks, serializer="json")
        out.append(f"ensure's errback was told: {failed}")
        out.append(f"goes on with {nodes.which(connection.connection.sock.getpeername()[1])}")
        # (its counts left out, as pika_with_an_address_list's: the new leader's record)
        out.append(f"the queue from node3: {nodes.declare(2, tasks).split(' ')[0]}")
        with connection.SimpleQueue(tasks, queue_args=QUORUM) as again:
            got = [again.get(timeout=TIMEOUT) for _ in range(2)]
            out.append(f"got: {[(m.payload, m.delivery_info['redelivered']) for m in got]}")
            for message in got:
                message.ack()
        queue.close()


def _error(exc: BaseException) -> str:
    # What ensure's errback was told: py-amqp's 320 has a code and a text, a reset neither.
    code = getattr(exc, "reply_code", None)
    return f"{type(exc).__name__} " + (str(exc) if code is None else
                                       f"{code} {getattr(exc, 'reply_text', '')}")


SCENARIOS: dict[str, Callable[[Nodes, list[str]], None]] = {
    scenario.__name__: scenario for scenario in (
        pika_with_an_address_list, aiopika_robust_connection, kombu_failover)}
#: The queues each scenario declares (removed from the reference after it).
QUEUES: dict[str, list[str]] = {
    "pika_with_an_address_list": ["qq", "ex", "ad"],
    "aiopika_robust_connection": ["qq", "ex"],
    "kombu_failover": ["tasks"],
}


def run(scenario: Callable[[Nodes, list[str]], None], nodes: Nodes,
        names: list[str]) -> list[str]:
    """The lines of ``scenario``, node names (``names``, node 1's first) written ``node1``...
    and queue names without the run's prefix."""
    lines: list[str] = []
    scenario(nodes, lines)
    text = "\n".join(lines)
    for index, name in enumerate(names, 1):
        text = text.replace(name, f"node{index}")
    if nodes.prefix:
        text = text.replace(nodes.prefix, "")
    return text.split("\n")
