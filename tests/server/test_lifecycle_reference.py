"""stop_app, start_app, reset and the resource alarms, side by side with RabbitMQ: the same
scenario on a listener and on a RabbitMQ node of one's own (private_node.py: the shared node at
5672 is never stopped, reset or alarmed), what pika sees compared.

Runs when ``EMBROKER_REFERENCE_URL`` is set and RabbitMQ is installed here; one node for the
module (about 10 s to start)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pika
import pytest
from pika.exceptions import AMQPConnectionError, ChannelClosedByBroker, ConnectionClosedByBroker

from embroker import Broker
from embroker.server import AppRunning, Server
from embroker.testing import wait_until

from .private_node import PrivateNode, available, private_node

pytestmark = [
    pytest.mark.differential,
    pytest.mark.skipif(not os.environ.get("EMBROKER_REFERENCE_URL") or not available(),
                       reason="needs EMBROKER_REFERENCE_URL and rabbitmq-server (a RabbitMQ "
                              "node of its own)"),
]

HUGE = 1_000_000 * 10**9


class _Node(Protocol):
    """What a scenario does to a node: rabbitmqctl's commands, on RabbitMQ or a listener.
    (``reset`` returns the error text, "" when it reset.)"""

    url: str

    def stop_app(self) -> None: ...
    def start_app(self) -> None: ...
    def reset(self) -> str: ...
    def memory(self, fraction: float) -> None: ...
    def disk(self, limit: int) -> None: ...
    def users(self) -> list[str]: ...


class _Rabbit:
    def __init__(self, node: PrivateNode) -> None:
        self.node, self.url = node, node.url

    def _ok(self, *args: str) -> None:
        done = self.node.ctl(*args)
        assert done.returncode == 0, done.stderr

    def stop_app(self) -> None:
        self._ok("stop_app")

    def start_app(self) -> None:
        self._ok("start_app")

    def reset(self) -> str:
        done = self.node.ctl("reset")
        return "" if done.returncode == 0 else done.stderr.partition("Error: ")[2].splitlines()[0]

    def memory(self, fraction: float) -> None:
        self._ok("set_vm_memory_high_watermark", str(fraction))

    def disk(self, limit: int) -> None:
        self._ok("set_disk_free_limit", str(limit))

    def users(self) -> list[str]:
        out = self.node.ctl("list_users", "--quiet", "--no-table-headers").stdout
        return sorted(line.split("\t")[0] for line in out.splitlines() if line.strip())


class _Embroker:
    def __init__(self, server: Server) -> None:
        self.server, self.url = server, server.url

    def stop_app(self) -> None:
        self.server.stop_app()

    def start_app(self) -> None:
        self.server.start_app()

    def reset(self) -> str:
        try:
            self.server.reset()
        except AppRunning as refused:
            return str(refused)
        return ""

    def memory(self, fraction: float) -> None:
        self.server.set_vm_memory_high_watermark(fraction)

    def disk(self, limit: int) -> None:
        self.server.set_disk_free_limit(limit)

    def users(self) -> list[str]:
        return sorted(self.server.broker.users)


@pytest.fixture(scope="module")
def rabbit() -> Iterator[_Rabbit]:
    with private_node() as node:
        if node is None:
            pytest.skip("the private RabbitMQ node did not start")
        yield _Rabbit(node)


def _both(rabbit: _Rabbit, scenario: Callable[[_Node], Any]) -> tuple[Any, Any]:
    expected = scenario(rabbit)
    broker = Broker()
    with broker.serve() as server:
        got = scenario(_Embroker(server))
    assert server.errors == []
    return expected, got


def _connect(url: str) -> pika.BlockingConnection:
    return wait_until(lambda: _try_connect(url), timeout=30)


def _try_connect(url: str) -> pika.BlockingConnection | None:
    try:
        return pika.BlockingConnection(pika.URLParameters(url))
    except AMQPConnectionError:
        return None


def _survivors(url: str) -> dict[str, Any]:
    conn = _connect(url)
    found: dict[str, Any] = {}
    ch = conn.channel()
    for queue in ("dq", "tq", "eq"):
        try:
            found[queue] = ch.queue_declare(queue, passive=True).method.message_count
        except ChannelClosedByBroker as exc:
            found[queue] = exc.reply_code
            ch = conn.channel()
    for exchange in ("dx", "tx"):
        try:
            ch.exchange_declare(exchange, passive=True)
            found[exchange] = "exists"
        except ChannelClosedByBroker as exc:
            found[exchange] = exc.reply_code
            ch = conn.channel()
    if found["dq"] != 404:
        got = ch.basic_get("dq", auto_ack=False)
        found["dq body"] = got[2] if got[0] is not None else None
    conn.close()
    return found


def test_stop_app_start_app_and_reset_as_rabbitmq(rabbit: _Rabbit) -> None:
    def scenario(node: _Node) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        conn = _connect(node.url)
        ch = conn.channel()
        ch.exchange_declare("dx", "direct", durable=True)
        ch.exchange_declare("tx", "direct")
        ch.queue_declare("dq", durable=True)
        ch.queue_declare("tq")
        ch.queue_declare("eq", exclusive=True)
        ch.queue_bind("dq", "dx", "k")
        ch.basic_publish("", "dq", b"persistent", pika.BasicProperties(delivery_mode=2))
        ch.basic_publish("", "dq", b"transient")
        seen["reset while running"] = node.reset()
        node.stop_app()
        with pytest.raises(ConnectionClosedByBroker) as closed:
            wait_until(lambda: conn.process_data_events(0.01) and False)
        seen["closed"] = (closed.value.reply_code, closed.value.reply_text)
        seen["refused while stopped"] = _try_connect(node.url) is None
        node.start_app()
        seen["after start_app"] = _survivors(node.url)
        node.stop_app()
        seen["reset"] = node.reset()
        node.start_app()
        seen["after reset"] = _survivors(node.url)
        seen["users"] = node.users()
        return seen

    expected, got = _both(rabbit, scenario)
    assert got == expected


def test_alarms_block_publishers_as_rabbitmq(rabbit: _Rabbit) -> None:
    def scenario(node: _Node) -> dict[str, Any]:
        events: dict[str, list[str]] = {}
        conns: dict[str, pika.BlockingConnection] = {}
        for name in ("idle", "first", "late"):
            conn = conns[name] = _connect(node.url)
            log = events[name] = []
            conn.add_on_connection_blocked_callback(
                lambda _c, f, log=log: log.append(f.method.reason))
            conn.add_on_connection_unblocked_callback(
                lambda _c, _f, log=log: log.append("unblocked"))
        channels = {name: conn.channel() for name, conn in conns.items()}
        channels["idle"].queue_declare("alarmed")
        channels["idle"].queue_purge("alarmed")

        def pump_until(name: str, expected: list[str]) -> None:
            wait_until(lambda: all(c.process_data_events(0) or True for c in conns.values())
                       and events[name] == expected, timeout=15)

        node.memory(0)
        channels["first"].basic_publish("", "alarmed", b"1")
        pump_until("first", ["low on memory"])
        node.disk(HUGE)
        channels["late"].basic_publish("", "alarmed", b"2")
        pump_until("late", ["low on disk & memory"])
        node.memory(0.4)
        held = channels["idle"].queue_declare("alarmed", passive=True).method.message_count
        node.disk(50_000_000)
        pump_until("first", ["low on memory", "unblocked"])
        pump_until("late", ["low on disk & memory", "unblocked"])
        wait_until(lambda: channels["idle"].queue_declare(
            "alarmed", passive=True).method.message_count == 2, timeout=15)
        channels["idle"].queue_delete("alarmed")
        for conn in conns.values():
            conn.close()
        return {"events": events, "held while blocked": held}

    expected, got = _both(rabbit, scenario)
    assert got == expected
    assert got["events"]["idle"] == []
