"""Real clients over TCP against a three-node cluster (``Broker(nodes=3)``, a listener per node):
what each client observes when the node it is connected to stops (``servers.stop_node``, as
``rabbitmqctl -n NODE stop_app``). Where a behaviour follows RabbitMQ 3.10.8, the comment names
the fact of /work/notes/cluster/reference-facts.md it follows from (§a: a stopping node's
clients get connection.close 320; §c: its transient, auto-delete and exclusive queues are
deleted; §d1: a quorum queue's new leader carries on and the stopped node's consumers'
deliveries come back redelivered, with ``x-delivery-count``).

Every wait is bounded (``wait_until``, ``asyncio.wait_for``); the clients' retry intervals are
made small so that a reconnection takes milliseconds, not their default seconds."""

from __future__ import annotations

import asyncio
import select
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import aio_pika
import pika
import pytest
from aio_pika.abc import AbstractIncomingMessage
from celery import Celery
from celery.contrib.testing.worker import start_worker
from kombu import Connection, Queue
from pika.exceptions import ChannelClosedByBroker, ConnectionClosedByBroker, StreamLostError
from yarl import URL

from embroker import Broker
from embroker.server import NodeServers
from embroker.testing import wait_until

T = TypeVar("T")

TIMEOUT = 10.0  # (a bound on each wait, reached only when something is wrong: a loaded CI machine)
FIRST = "embroker@localhost"
SHUTDOWN = "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"
QUORUM = {"x-queue-type": "quorum"}


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` with an overall bound, so a lost reply fails the test instead of hanging it."""
    return asyncio.run(asyncio.wait_for(coro, 2 * TIMEOUT))


async def async_wait_until(predicate: Any, timeout: float = TIMEOUT) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.001)


def _pump(conn: pika.BlockingConnection, predicate: Callable[[], object]) -> None:
    """Let pika read what has arrived until ``predicate`` holds (bounded)."""
    wait_until(lambda: conn.process_data_events(0.01) or predicate(), TIMEOUT)


def _closed_by_broker(conn: pika.BlockingConnection) -> tuple[int, str]:
    with pytest.raises(ConnectionClosedByBroker) as closed:
        wait_until(lambda: conn.process_data_events(0.01) and False, TIMEOUT)
    return closed.value.reply_code, closed.value.reply_text


# -- aio-pika: the robust connection ------------------------------------------------------------

class NextAddressConnection(aio_pika.RobustConnection):
    """aio-pika (10.2 here) takes one URL and reconnects to it; an application that knows the
    cluster's addresses moves its robust connection to the next one when it is lost."""

    def __init__(self, addresses: list[URL]) -> None:
        super().__init__(addresses[0])
        self.addresses = addresses

    async def _on_connection_close(self, closing: asyncio.Future[Any]) -> None:
        at = self.addresses.index(self.url)
        self.url = self.addresses[(at + 1) % len(self.addresses)]
        await super()._on_connection_close(closing)


def _keep(seen: list[AbstractIncomingMessage]) -> Callable[[AbstractIncomingMessage],
                                                           Awaitable[None]]:
    async def on_message(message: AbstractIncomingMessage) -> None:
        seen.append(message)
    return on_message


def _refused(caplog: pytest.LogCaptureFixture) -> list[str]:
    """aio-pika's log lines for its failed reconnection attempts."""
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("aio_pika") and str(r.msg).startswith("Connection attempt to")
            and "failed" in str(r.msg)]


def _robust(urls: list[str]) -> list[URL]:
    return [URL(url).update_query(reconnect_interval="0.02") for url in urls]


def test_aiopika_robust_consumer_of_a_quorum_queue_gets_its_unacked_message_again_on_the_next_node(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    """A robust connection moved to the next address when its node stops: its robust channel
    declares the quorum queue again there and consumes with the same tag, and gets the
    delivery it had not acknowledged again."""
    broker, servers = served_cluster

    async def scenario() -> list[tuple[bytes, bool, object]]:
        addresses = _robust(servers.urls)
        conn = NextAddressConnection(addresses)
        await conn.connect(timeout=TIMEOUT)
        channel = await conn.channel()
        await channel.set_qos(prefetch_count=1)
        queue = await channel.declare_queue("jobs", durable=True, arguments=QUORUM)
        assert broker.queues["jobs"].placement.leader is broker.nodes[0]
        await channel.default_exchange.publish(aio_pika.Message(b"job"), "jobs")
        seen: list[AbstractIncomingMessage] = []
        tag = await queue.consume(_keep(seen))
        await async_wait_until(lambda: len(seen) == 1)

        servers.stop_node(FIRST)
        # §a: the stopped node's clients are closed with 320; §d1: the quorum queue's new leader
        # is a live member, and the stopped node's consumer's unacked delivery comes back,
        # redelivered with x-delivery-count 1, to the consumer the robust channel declared again.
        await async_wait_until(lambda: len(seen) == 2)
        assert broker.queues["jobs"].placement.leader is not broker.nodes[0]
        assert [len(node.connections) for node in broker.nodes] == [0, 1, 0]
        assert conn.url == addresses[1]
        assert broker.queues["jobs"].consumer_count == 1
        assert broker.queues["jobs"].consumers[0].tag == tag  # (re-subscribed with its own tag)
        await seen[1].ack()
        await async_wait_until(lambda: broker.queues["jobs"].unacked == 0)
        assert broker.queues["jobs"].message_count == 0
        await conn.close()
        return [(m.body, bool(m.redelivered), (m.headers or {}).get("x-delivery-count"))
                for m in seen]

    assert run(scenario()) == [(b"job", False, None), (b"job", True, 1)]


def test_aiopika_robust_connection_to_one_address_retries_it_until_that_node_starts_again(
        served_cluster: tuple[Broker, NodeServers], caplog: pytest.LogCaptureFixture) -> None:
    """aio-pika's own reconnection goes back to the one URL it was given: while its node is
    stopped every attempt is refused (§a: the stopped node's listener is closed); when the node
    starts, the robust channel declares its quorum queue again and consumes, and the delivery it
    had not acknowledged comes back redelivered (§d1)."""
    broker, servers = served_cluster

    async def scenario() -> list[tuple[bytes, bool]]:
        url = _robust(servers.urls[:1])[0]
        conn = await aio_pika.connect_robust(url, timeout=TIMEOUT)
        channel = await conn.channel()
        queue = await channel.declare_queue("jobs", durable=True, arguments=QUORUM)
        await channel.default_exchange.publish(aio_pika.Message(b"job"), "jobs")
        seen: list[AbstractIncomingMessage] = []
        await queue.consume(_keep(seen))
        await async_wait_until(lambda: len(seen) == 1)
        reconnected = asyncio.Event()
        conn.reconnect_callbacks.add(lambda _conn: reconnected.set())

        servers.stop_node(FIRST)
        await async_wait_until(lambda: len(_refused(caplog)) >= 2)  # (it retries, refused)
        assert "Connect call failed" in _refused(caplog)[0]
        assert not reconnected.is_set()
        assert all(not node.connections for node in broker.nodes)
        servers.start_node(FIRST)
        await asyncio.wait_for(reconnected.wait(), TIMEOUT)
        await async_wait_until(lambda: len(seen) == 2)
        assert [len(node.connections) for node in broker.nodes] == [1, 0, 0]
        await seen[1].ack()
        await async_wait_until(lambda: broker.queues["jobs"].unacked == 0)
        await conn.close()
        return [(m.body, bool(m.redelivered)) for m in seen]

    assert run(scenario()) == [(b"job", False), (b"job", True)]


# -- kombu: failover between the URLs of one connection -----------------------------------------

def test_kombu_failover_publishes_on_the_next_url_after_its_node_stops(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    """kombu's ``;``-separated URLs with ``failover_strategy="round-robin"``: ``ensure`` catches
    the reset of the stopped node's socket (§a: its 320, then a reset, which py-amqp meets
    writing the publish before it reads the close: ConnectionResetError, as on the reference
    cluster, tests/cluster/golden/clients/kombu_failover.txt), reconnects to the next URL and
    publishes there again; a ``SimpleQueue`` on a quorum queue (§d1: kept by its new leader)
    gets both messages there."""
    broker, servers = served_cluster
    with Connection(";".join(servers.urls), failover_strategy="round-robin",
                    connect_timeout=TIMEOUT,
                    transport_options={"confirm_publish": True}) as conn:
        conn.ensure_connection(max_retries=1)
        assert [len(node.connections) for node in broker.nodes] == [1, 0, 0]
        queue = conn.SimpleQueue("tasks", queue_args=QUORUM)
        producer = queue.producer
        failed: list[Exception] = []
        publish = conn.ensure(producer, producer.publish, max_retries=3, interval_start=0,
                              interval_step=0.01, interval_max=0.01,
                              errback=lambda exc, _interval: failed.append(exc))
        publish({"n": 1}, routing_key="tasks", serializer="json")

        servers.stop_node(FIRST)
        publish({"n": 2}, routing_key="tasks", serializer="json")
        assert [type(exc) for exc in failed] == [ConnectionResetError]
        assert conn.as_uri().endswith(f":{servers[1].port}//")
        assert [len(node.connections) for node in broker.nodes] == [0, 1, 0]
        assert broker.queues["tasks"].message_count == 2
        with conn.SimpleQueue("tasks", queue_args=QUORUM) as again:
            got = [again.get(timeout=TIMEOUT) for _ in range(2)]
            assert [m.payload for m in got] == [{"n": 1}, {"n": 2}]
            for message in got:
                message.ack()
        queue.close()


def test_kombu_without_confirms_fails_over_when_the_close_has_arrived_before_its_publish(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    """Without publisher confirms, once the stopped node's 320 (§a) and the reset that follows
    it are in its socket, ``ensure`` meets the reset (ConnectionResetError: seen live on the
    reference cluster, whose sockets linger 0) and publishes on the next URL. (A publish
    written before the close arrives is lost without an error, as on RabbitMQ, whose reader
    ignores every frame but channel 0's once it has sent connection.close: rabbit_reader.erl
    3.10.8, ``handle_frame`` when ``?IS_STOPPING``; only confirms tell.)"""
    broker, servers = served_cluster
    with Connection(";".join(servers.urls), failover_strategy="round-robin",
                    connect_timeout=TIMEOUT) as conn:
        queue = conn.SimpleQueue("tasks", queue_args=QUORUM)
        failed: list[Exception] = []
        publish = conn.ensure(queue.producer, queue.producer.publish, max_retries=3,
                              interval_start=0, errback=lambda exc, _i: failed.append(exc))
        publish({"n": 1}, routing_key="tasks", serializer="json")
        wait_until(lambda: broker.queues["tasks"].message_count == 1, TIMEOUT)
        sock = conn.connection.sock

        servers.stop_node(FIRST)
        wait_until(lambda: select.select([sock], [], [], 0)[0], TIMEOUT)  # (the 320 is there)
        publish({"n": 2}, routing_key="tasks", serializer="json")
        assert [type(exc) for exc in failed] == [ConnectionResetError]
        assert [len(node.connections) for node in broker.nodes] == [0, 1, 0]
        wait_until(lambda: broker.queues["tasks"].message_count == 2, TIMEOUT)
        queue.close()


# -- pika: what a client on another node sees of the stopped node's queues ----------------------

def test_pika_exclusive_and_auto_delete_queues_of_a_stopped_node_are_gone_elsewhere(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    """§c: a stopping node's transient queues (exclusive; non-durable auto-delete) are deleted
    cluster-wide: 404 "no queue" from another node; a durable auto-delete one is kept, down
    (404 "home node ... is down"); the same name declared again on the live node is a new
    queue there."""
    broker, servers = served_cluster
    on_first = pika.BlockingConnection(pika.URLParameters(servers.urls[0]))
    declaring = on_first.channel()
    declaring.queue_declare("ex", exclusive=True)
    declaring.queue_declare("ad", auto_delete=True)
    declaring.queue_declare("dad", durable=True, auto_delete=True)
    declaring.basic_consume("ad", lambda *_: None)  # (auto-delete: deleted at its last cancel)
    on_second = pika.BlockingConnection(pika.URLParameters(servers.urls[1]))

    servers.stop_node(FIRST)
    assert _closed_by_broker(on_first) == (320, SHUTDOWN)  # §a
    refusals = {}
    for name in ("ex", "ad", "dad"):
        with pytest.raises(ChannelClosedByBroker) as refused:
            on_second.channel().queue_declare(name, passive=True)
        refusals[name] = (refused.value.reply_code, refused.value.reply_text)
    assert refusals == {
        "ex": (404, "NOT_FOUND - no queue 'ex' in vhost '/'"),
        "ad": (404, "NOT_FOUND - no queue 'ad' in vhost '/'"),
        "dad": (404, f"NOT_FOUND - home node '{FIRST}' of durable queue 'dad' in vhost '/' "
                     f"is down or inaccessible"),
    }
    on_second.channel().queue_declare("ex", exclusive=True)
    assert broker.queues["ex"].placement.leader is broker.nodes[1]
    on_second.close()


def test_pika_publisher_on_a_stopped_node_is_closed_and_its_next_publish_is_not_confirmed(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    """The publisher's connection gets 320 (§a), then a reset, and no confirm for anything
    after the stop: pika, writing its next publish before it reads the close, meets the reset
    (StreamLostError, as on the reference cluster: tests/cluster/golden/clients/
    pika_with_an_address_list.txt), and that publish reached no queue; what was confirmed
    before is in the quorum queue, read from another node (§d1)."""
    broker, servers = served_cluster
    publisher = pika.BlockingConnection(pika.URLParameters(servers.urls[0]))
    channel = publisher.channel()
    channel.confirm_delivery()
    channel.queue_declare("orders", durable=True, arguments=QUORUM)
    channel.basic_publish("", "orders", b"confirmed")  # (returns once acked)

    servers.stop_node(FIRST)
    with pytest.raises(StreamLostError):
        channel.basic_publish("", "orders", b"after the stop")
    assert not channel.is_open
    reader = pika.BlockingConnection([pika.URLParameters(url) for url in servers.urls])
    assert [len(node.connections) for node in broker.nodes] == [0, 1, 0]
    read = reader.channel()
    assert read.queue_declare("orders", durable=True, arguments=QUORUM).method.message_count == 1
    _, _, body = read.basic_get("orders", auto_ack=True)
    assert body == b"confirmed"
    reader.close()


def test_pika_consumer_elsewhere_of_a_classic_queue_homed_on_the_stopped_node_stays_cancelled(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    """§b: a consumer on another node of a durable classic queue homed on the stopping node gets
    basic.cancel (its channel stays open, its tag is gone), and nothing subscribes it again
    when the node starts; the queue is back with its persistent messages, the one delivered
    and not acknowledged first, redelivered."""
    broker, servers = served_cluster
    on_first = pika.BlockingConnection(pika.URLParameters(servers.urls[0]))
    declaring = on_first.channel()
    declaring.queue_declare("dq", durable=True)
    for body in (b"c1", b"c2"):
        declaring.basic_publish("", "dq", body, pika.BasicProperties(delivery_mode=2))
    on_second = pika.BlockingConnection(pika.URLParameters(servers.urls[1]))
    consumer = on_second.channel()
    consumer.basic_qos(prefetch_count=1)
    cancelled: list[str] = []
    consumer.add_on_cancel_callback(lambda frame: cancelled.append(frame.method.consumer_tag))
    seen: list[tuple[bytes, bool]] = []
    tag = consumer.basic_consume("dq", lambda _ch, method, _props, body: seen.append(
        (body, method.redelivered)))
    _pump(on_second, lambda: seen)

    servers.stop_node(FIRST)
    _pump(on_second, lambda: cancelled)
    assert cancelled == [tag]
    assert consumer.consumer_tags == []
    assert consumer.is_open
    servers.start_node(FIRST)
    assert broker.queues["dq"].consumer_count == 0
    again = on_second.channel()
    got = [again.basic_get("dq", auto_ack=True) for _ in range(2)]
    assert [(body, method.redelivered) for method, _, body in got] == [
        (b"c1", True), (b"c2", False)]
    assert seen == [(b"c1", False)]
    on_second.close()


# -- Celery: a worker whose node stops while a task runs ----------------------------------------

def test_celery_acks_late_task_running_when_its_node_stops_runs_again_on_the_next_node(
        served_cluster: tuple[Broker, NodeServers]) -> None:
    """A worker (solo pool, ``task_acks_late``) consuming a quorum queue led by its own node: the
    node stops while the task runs (§a: 320), so the task's ack cannot be sent; the new leader
    (§d1) gives the delivery back, and the worker, having failed over to the next URL, runs the
    task again with ``redelivered`` set: at least once, never lost.

    The queue is declared beforehand and named to Celery with ``no_declare``: a queue that Celery
    knows as quorum turns on its native delayed delivery step (Celery 5.5+), which on each
    restart sets itself up on every URL of the list in turn, the stopped node's included
    (celery/worker/consumer/delayed_delivery.py: 3 retries 1 s apart), so that the worker
    consumes again only seconds later."""
    broker, servers = served_cluster
    declaring = pika.BlockingConnection(pika.URLParameters(servers.urls[0]))
    declaring.channel().queue_declare("tasks", durable=True, arguments=QUORUM)
    declaring.close()
    app = Celery("failover", broker=";".join(servers.urls), backend=None,
                        set_as_current=False)
    app.conf.update(broker_failover_strategy="round-robin", broker_heartbeat=0,
                    broker_transport_options={"interval_start": 0, "interval_step": 0.01,
                                              "interval_max": 0.01},
                    task_queues=[Queue("tasks", no_declare=True)], task_default_queue="tasks",
                    task_acks_late=True, worker_prefetch_multiplier=1)
    runs: list[tuple[int, bool]] = []
    started, release = threading.Event(), threading.Event()

    @app.task(bind=True)
    def job(self: Any, n: int) -> int:
        runs.append((n, bool(self.request.delivery_info.get("redelivered"))))
        started.set()
        release.wait(TIMEOUT)
        return n

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=TIMEOUT):
        job.delay(1)
        assert started.wait(TIMEOUT)
        assert broker.queues["tasks"].unacked == 1
        servers.stop_node(FIRST)
        release.set()
        wait_until(lambda: len(runs) == 2, TIMEOUT)
        wait_until(lambda: broker.queues["tasks"].unacked == 0, TIMEOUT)
        assert broker.queues["tasks"].placement.leader is not broker.nodes[0]
        assert [len(node.connections) for node in broker.nodes] == [0, 1, 0]
        assert broker.queues["tasks"].message_count == 0
    assert runs == [(1, False), (1, True)]
