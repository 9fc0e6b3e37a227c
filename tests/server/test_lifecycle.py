"""rabbitmqctl's stop_app, start_app and reset, and the resource alarms
(set_vm_memory_high_watermark, set_disk_free_limit), on a listener with real clients.

RabbitMQ 3.10.8's behaviour, checked live on a node of one's own (test_lifecycle_reference.py):
stop_app closes 0-9-1 clients with 320 "broker forced connection closure with reason
'shutdown'" and stops listening; start_app finds the durable topology and persistent messages;
reset while running is refused; alarms block with "low on memory" / "low on disk" / "low on
disk & memory"."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import aio_pika
import pika
import pytest
from pika.exceptions import AMQPConnectionError, ConnectionClosedByBroker

from embroker import Broker
from embroker.errors import PortInUse
from embroker.server import APP_RUNNING, DEFAULT_DISK_FREE_LIMIT, AppRunning, Server
from embroker.testing import wait_until

HUGE = 1_000_000 * 10**9  # 1000000GB: more than any disk holds
SHUTDOWN = "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"


def _connect(server: Server) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(server.url))


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False


def _closed_by_broker(conn: pika.BlockingConnection) -> tuple[int, str]:
    with pytest.raises(ConnectionClosedByBroker) as closed:
        wait_until(lambda: conn.process_data_events(0.01) and False)
    return closed.value.reply_code, closed.value.reply_text


# -- stop_app / start_app ---------------------------------------------------------------------


def test_stop_app_closes_clients_with_320_shutdown_and_every_port_stops_listening() -> None:
    broker = Broker()
    with broker.serve(management=True, stream_port=0, amqp10_port=0) as server:
        conn = _connect(server)
        server.stop_app()
        assert not server.app_running
        assert _closed_by_broker(conn) == (320, SHUTDOWN)
        for port in (server.port, server.management_port, server.stream_port,
                     server.amqp10_port):
            assert port is not None
            assert _refused(port)
        with pytest.raises(AMQPConnectionError):
            _connect(server)
        server.stop_app()  # (stopped already: nothing)
        server.start_app()
        assert server.app_running
        for port in (server.port, server.management_port, server.stream_port,
                     server.amqp10_port):
            assert port is not None
            assert not _refused(port)
        _connect(server).close()
    assert server.errors == []


def test_stop_app_aborts_amqp_1_0_connections_with_no_close_frame() -> None:
    """As RabbitMQ 3.10.8 (live, proton): the socket closes; proton says "connection
    aborted" and has no remote condition."""
    proton_utils = pytest.importorskip("proton.utils")
    broker = Broker()
    with broker.serve() as server:
        conn = proton_utils.BlockingConnection(server.amqp10_url, timeout=5)
        server.stop_app()
        with pytest.raises(pytest.importorskip("proton").ConnectionException,
                           match="connection aborted"):
            conn.wait(lambda: False, timeout=5)
        assert conn.conn.remote_condition is None
        assert broker.connections == {}
    assert server.errors == []


def test_stop_app_keeps_what_a_restart_keeps() -> None:
    broker = Broker()
    with broker.serve() as server:
        conn = _connect(server)
        ch = conn.channel()
        ch.exchange_declare("dx", "direct", durable=True)
        ch.exchange_declare("tx", "direct")
        ch.queue_declare("dq", durable=True)
        ch.queue_declare("tq")
        ch.queue_declare("eq", exclusive=True)
        ch.queue_bind("dq", "dx", "k")
        ch.basic_publish("", "dq", b"persistent", pika.BasicProperties(delivery_mode=2))
        ch.basic_publish("", "dq", b"transient")
        # (pika's publishes are not awaited: the broker has both before the app stops)
        wait_until(lambda: broker.queues["dq"].message_count == 2)
        server.stop_app()
        _closed_by_broker(conn)
        server.start_app()
        assert sorted(broker.queues) == ["dq"]
        assert "dx" in broker.exchanges
        assert "tx" not in broker.exchanges
        assert [m.body for m in broker.queues["dq"].messages] == [b"persistent"]
        assert [b.routing_key for b in broker.exchanges["dx"].bindings.values()] == ["k"]
    assert server.errors == []


def test_start_app_refuses_a_port_taken_meanwhile_and_stays_stopped() -> None:
    broker = Broker()
    with broker.serve() as server:
        server.stop_app()
        squatter = socket.socket()
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", server.port))
        squatter.listen(1)
        try:
            with pytest.raises(PortInUse) as taken:
                server.start_app()
            assert taken.value.port == server.port
            assert not server.app_running
        finally:
            squatter.close()
        server.start_app()
        _connect(server).close()
    assert server.errors == []


def test_stop_app_and_start_app_work_from_the_loops_own_thread() -> None:
    broker = Broker()
    with broker.serve() as server:
        conn = _connect(server)
        server._on_loop(server.stop_app)
        assert _closed_by_broker(conn)[0] == 320
        server._on_loop(server.start_app)
        _connect(server).close()
    assert server.errors == []


def test_stop_app_and_start_app_on_a_listener_not_started() -> None:
    broker = Broker()
    server = Server(broker)
    server.stop_app()
    assert _refused(server.port)
    server.start_app()
    with server:
        _connect(server).close()


def test_pika_reconnects_after_start_app() -> None:
    broker = Broker()
    with broker.serve() as server:
        conn = _connect(server)
        conn.channel().queue_declare("work", durable=True)
        server.stop_app()
        _closed_by_broker(conn)
        server.start_app()

        def reconnect() -> pika.BlockingConnection | None:
            try:
                return _connect(server)
            except AMQPConnectionError:
                return None
        again = wait_until(reconnect)
        assert again.channel().queue_declare("work", passive=True).method.message_count == 0
        again.close()
    assert server.errors == []


def test_aio_pika_connect_robust_recovers_after_start_app() -> None:
    broker = Broker()

    async def scenario(server: Server) -> bytes:
        conn = await aio_pika.connect_robust(server.url, reconnect_interval=0.05, timeout=5)
        reconnected = asyncio.Event()
        conn.reconnect_callbacks.add(lambda *_args: reconnected.set())
        ch = await conn.channel()
        queue = await ch.declare_queue("robust", durable=True)
        await asyncio.get_running_loop().run_in_executor(None, server.stop_app)
        await asyncio.get_running_loop().run_in_executor(None, server.start_app)
        await asyncio.wait_for(reconnected.wait(), 10)
        await ch.default_exchange.publish(aio_pika.Message(b"after"), "robust")
        got = await asyncio.wait_for(queue.get(no_ack=True), 5)
        await conn.close()
        return got.body

    with broker.serve() as server:
        assert asyncio.run(scenario(server)) == b"after"
    assert server.errors == []


# -- reset -------------------------------------------------------------------------------------


def test_reset_while_the_app_runs_is_refused_with_rabbitmqs_text() -> None:
    broker = Broker()
    with broker.serve() as server:
        with pytest.raises(AppRunning) as refused:
            server.reset()
        assert str(refused.value) == APP_RUNNING
        assert "Stop it with 'rabbitmqctl stop_app'" in APP_RUNNING


def test_reset_leaves_the_broker_as_constructed_with_its_plugins() -> None:
    broker = Broker(vhosts=("/", "v1"), users={"guest": "guest", "ops": "pw"},
                    plugins=["rabbitmq_consistent_hash_exchange"])
    with broker.serve() as server:
        ch = broker.connect().channel()
        ch.exchange_declare("dx", "x-consistent-hash", durable=True)
        ch.queue_declare("dq", durable=True)
        broker.add_vhost("extra")
        broker.add_user("bob", "pw")
        broker.set_user_tags("guest", "monitoring")
        broker.set_policy("p", ".*", {"max-length": 5})
        broker.set_vhost_limits({"max-connections": 10})
        broker.set_global_parameter("cluster_name", "renamed")
        server.stop_app()
        server.force_reset()
        server.start_app()
        fresh = Broker(vhosts=("/", "v1"), users={"guest": "guest", "ops": "pw"},
                       plugins=["rabbitmq_consistent_hash_exchange"])
        assert sorted(broker.vhosts) == ["/", "v1"]
        assert sorted(broker.users) == ["guest", "ops"]
        assert broker.access.users["guest"].tags == ["administrator"]
        assert sorted(broker.exchanges) == sorted(fresh.exchanges)
        assert broker.queues == {}
        assert broker.vhost("/").policies.policies == {}
        assert broker.list_vhost_limits() == {}
        assert broker.server_properties["cluster_name"] == fresh.server_properties["cluster_name"]
        assert "rabbitmq_consistent_hash_exchange" in broker.plugins
        conn = _connect(server)
        conn.channel().exchange_declare("again", "x-consistent-hash")
        conn.close()
    assert server.errors == []


# -- resource alarms ---------------------------------------------------------------------------


def _watch(conn: pika.BlockingConnection) -> list[str]:
    events: list[str] = []
    conn.add_on_connection_blocked_callback(lambda _c, f: events.append(f.method.reason))
    conn.add_on_connection_unblocked_callback(lambda _c, _f: events.append("unblocked"))
    return events


def _until(conn: pika.BlockingConnection, events: list[str], expected: list[str]) -> None:
    wait_until(lambda: conn.process_data_events(0) or events == expected)


def _publisher(server: Server) -> tuple[pika.BlockingConnection, Any, list[str]]:
    conn = _connect(server)
    events = _watch(conn)
    ch = conn.channel()
    ch.queue_declare("q")
    return conn, ch, events


def _count(broker: Broker) -> int:
    return broker.queues["q"].message_count


def test_a_memory_watermark_of_0_blocks_a_publisher_at_once_and_0_4_unblocks() -> None:
    broker = Broker()
    with broker.serve() as server:
        conn, ch, events = _publisher(server)
        server.set_vm_memory_high_watermark(0)
        assert server.alarms == ["memory"]
        assert server.vm_memory_limit == 0
        assert server.memory_used() > 0
        ch.queue_declare("q", passive=True)  # (a round trip: nothing said until it publishes)
        assert events == []
        ch.basic_publish("", "q", b"held")
        _until(conn, events, ["low on memory"])
        assert _count(broker) == 0
        server.set_vm_memory_high_watermark(0.4)
        assert server.alarms == []
        _until(conn, events, ["low on memory", "unblocked"])
        wait_until(lambda: _count(broker) == 1)
        server.set_vm_memory_high_watermark(absolute=1)
        assert server.alarms == ["memory"]
        assert server.vm_memory_high_watermark is None
        server.set_vm_memory_high_watermark(absolute=2**60)  # (at most the RAM)
        assert server.alarms == []
        conn.close()
    assert server.errors == []


def test_a_huge_disk_free_limit_blocks_a_publisher_at_once_and_50mb_unblocks() -> None:
    broker = Broker()
    with broker.serve() as server:
        assert server.disk_free_limit == DEFAULT_DISK_FREE_LIMIT == 50_000_000
        conn, ch, events = _publisher(server)
        server.set_disk_free_limit(HUGE)
        assert server.alarms == ["disk"]
        ch.basic_publish("", "q", b"held")
        _until(conn, events, ["low on disk"])
        server.set_disk_free_limit(50_000_000)
        assert server.alarms == []
        assert server.disk_free is not None
        _until(conn, events, ["low on disk", "unblocked"])
        wait_until(lambda: _count(broker) == 1)
        server.set_disk_free_limit(mem_relative=1_000_000.0)
        assert server.alarms == ["disk"]
        server.set_disk_free_limit(mem_relative=0.0)
        assert server.alarms == []
        conn.close()
    assert server.errors == []


def test_two_alarms_block_each_publisher_once_and_unblock_when_the_last_clears() -> None:
    broker = Broker()
    with broker.serve() as server:
        first, first_ch, first_events = _publisher(server)
        server.set_vm_memory_high_watermark(0)
        first_ch.basic_publish("", "q", b"1")
        _until(first, first_events, ["low on memory"])
        server.set_disk_free_limit(HUGE)  # (the blocked one is not told again)
        assert server.alarms == ["disk", "memory"]
        late, late_ch, late_events = _publisher(server)
        late_ch.basic_publish("", "q", b"2")
        _until(late, late_events, ["low on disk & memory"])
        server.set_vm_memory_high_watermark(0.4)
        assert server.alarms == ["disk"]
        assert broker.publishers_blocked
        assert _count(broker) == 0
        server.set_disk_free_limit(50_000_000)
        _until(first, first_events, ["low on memory", "unblocked"])
        _until(late, late_events, ["low on disk & memory", "unblocked"])
        wait_until(lambda: _count(broker) == 2)
        first.close()
        late.close()
    assert server.errors == []


def test_consumers_go_on_untold_while_publishers_are_blocked() -> None:
    broker = Broker()
    with broker.serve() as server:
        consumer = _connect(server)
        events = _watch(consumer)
        ch = consumer.channel()
        ch.queue_declare("q")
        got: list[bytes] = []
        ch.basic_consume("q", lambda _ch, _m, _p, body: got.append(body), auto_ack=True)
        server.set_disk_free_limit(HUGE)
        broker.connect().channel().basic_publish("", "q", b"in-process")
        wait_until(lambda: consumer.process_data_events(0) or got == [b"in-process"])
        ch.basic_qos(prefetch_count=10)  # (a round trip)
        assert events == []
        server.set_disk_free_limit(50_000_000)
        consumer.close()
    assert server.errors == []


def test_aio_pika_is_blocked_as_it_publishes_and_unblocked(
        caplog: pytest.LogCaptureFixture) -> None:
    broker = Broker()

    async def scenario(server: Server) -> None:
        conn = await aio_pika.connect(server.url, timeout=5)
        unblocked: asyncio.Event = conn.transport.connection._Connection__connection_unblocked
        ch = await conn.channel()
        await ch.declare_queue("q")
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, server.set_vm_memory_high_watermark, 0)
        # (confirmed: the ack comes once the publish is read, after the alarm)
        published = asyncio.ensure_future(
            ch.default_exchange.publish(aio_pika.Message(b"held"), "q"))
        for _ in range(500):
            if not unblocked.is_set():
                break
            await asyncio.sleep(0.01)  # (the client's loop reads the frame meanwhile)
        assert not unblocked.is_set()
        assert _count(broker) == 0
        await loop.run_in_executor(None, server.set_vm_memory_high_watermark, 0.4)
        await asyncio.wait_for(unblocked.wait(), 5)
        await asyncio.wait_for(published, 5)
        assert _count(broker) == 1
        await conn.close()

    with caplog.at_level(logging.WARNING, logger="aiormq.connection"), broker.serve() as server:
        asyncio.run(scenario(server))
    told = [r.getMessage() for r in caplog.records if "blocked by" in r.getMessage()]
    assert len(told) == 1
    assert told[0].endswith("was blocked by: 'low on memory'")
    assert server.errors == []


def test_alarms_end_at_stop_app_and_the_limits_are_the_configured_ones_at_start_app() -> None:
    broker = Broker()
    with broker.serve() as server:
        limit = server.vm_memory_limit
        server.set_vm_memory_high_watermark(0)
        server.set_disk_free_limit(HUGE)
        server.stop_app()
        assert server.alarms == []
        assert not broker.publishers_blocked
        with pytest.raises(RuntimeError, match="requires the 'rabbit' app to be running"):
            server.set_vm_memory_high_watermark(0)
        server.start_app()
        assert server.alarms == []
        assert (server.vm_memory_high_watermark, server.vm_memory_limit) == (0.4, limit)
        assert server.disk_free_limit == 50_000_000
    assert server.errors == []


def test_a_connection_never_told_blocked_is_not_told_unblocked() -> None:
    """connection.unblocked goes to the connections told connection.blocked, no others
    (rabbit_reader: only a blocked reader unblocks; live on 3.10.8, the reference test)."""
    broker = Broker()
    with broker.serve() as server:
        publisher, channel, told = _publisher(server)
        idle = _connect(server)
        idle_told = _watch(idle)
        server.set_vm_memory_high_watermark(0)
        channel.basic_publish("", "q", b"held")
        _until(publisher, told, ["low on memory"])
        server.set_vm_memory_high_watermark(0.4)
        _until(publisher, told, ["low on memory", "unblocked"])
        idle.channel().close()  # (a round trip: anything sent to it is read by now)
        idle.process_data_events(0)  # (and its callbacks, pika's, are run here)
        assert idle_told == []
        idle.close()
        publisher.close()
    assert server.errors == []
