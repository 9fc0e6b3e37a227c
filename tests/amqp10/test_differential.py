"""Differential scenarios: the same proton sessions against embroker and against the reference
RabbitMQ 3.10 with its AMQP 1.0 plugin, where that plugin is correct (shared notes: it is on
the happy path; it does not echo closed detaches, ends sessions on link errors, has no
``modified`` and breaks ``drain``: none of that is compared here).

- ``scenarios.py``'s scenarios have golden files (RabbitMQ's observations, recorded with
  ``python -m tests.amqp10.record``): offline embroker is compared with them; with
  ``EMBROKER_REFERENCE_URL`` each file is checked against a fresh RabbitMQ run too.
- The live comparisons below run only with the reference.

A reference that is configured and does not answer, over 0-9-1 or over 1.0 (its
``rabbitmq_amqp1_0`` plugin off), fails the tests that need it: a broken setup, not a reason to
check less (as the 0-9-1 conformance tests).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pika
import pytest

from embroker import Broker
from tests.conformance import differential_kit as kit

proton = pytest.importorskip("proton")
from proton import Message  # noqa: E402
from proton.reactor import AtMostOnce  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

from .differential import GOLDEN, EmbrokerPeer, ReferencePeer  # noqa: E402
from .scenarios import SCENARIOS  # noqa: E402

pytestmark = pytest.mark.differential

Scenario = Callable[[BlockingConnection, str], list[Any]]
_reachability: dict[str, str | None] = {}


def reference_problem(url: str) -> str | None:
    """Why the reference at ``url`` cannot be used for AMQP 1.0 (None: it can)."""
    if url not in _reachability:
        why = None
        try:
            BlockingConnection(url.rstrip("/"), timeout=5, allowed_mechs="PLAIN").close()
        except Exception as exc:
            why = (f"EMBROKER_REFERENCE_URL={url.rsplit('@', 1)[-1]} is set but does not answer "
                   f"AMQP 1.0 ({exc!r}): start it, and rabbitmq-plugins enable rabbitmq_amqp1_0 "
                   "(or unset EMBROKER_REFERENCE_URL to check the golden files alone)")
        _reachability[url] = why
    return _reachability[url]


@pytest.fixture(scope="module")
def reference() -> str:
    return kit.reference_url(reference_problem)


@pytest.fixture(scope="module")
def embroker_peer() -> Iterator[EmbrokerPeer]:
    with kit.served(Broker.serve) as (broker, server):
        yield EmbrokerPeer(broker, server)


class TestGoldenFiles(kit.GoldenFileTests):
    files = GOLDEN
    scenarios = SCENARIOS
    reference_peer = ReferencePeer


def run(scenario: Scenario, url091: str, url10: str) -> list[Any]:
    queue = f"embroker-amqp10-diff-{uuid.uuid4().hex[:8]}"
    admin = pika.BlockingConnection(pika.URLParameters(url091))
    try:
        admin.channel().queue_declare(queue)
        c = BlockingConnection(url10, timeout=5, allowed_mechs="PLAIN",
                               container_id="embroker-diff")
        try:
            return scenario(c, f"/amq/queue/{queue}")
        finally:
            c.close()
    finally:
        admin.channel().queue_delete(queue)
        admin.close()


def compare(scenario: Scenario, reference: str) -> list[Any]:
    broker = Broker()
    with broker.serve() as server:
        ours = run(scenario, server.url, server.amqp10_url)
        assert server.errors == []
    theirs = run(scenario, reference, reference.rstrip("/"))
    assert ours == theirs
    return ours


def seen(m: Message) -> tuple[Any, ...]:
    body = bytes(m.body) if isinstance(m.body, memoryview) else m.body
    return (body, m.id, m.subject, m.durable, m.priority, m.properties, m.content_type,
            m.first_acquirer, m.delivery_count, m.correlation_id, m.reply_to)


def three_messages(c: BlockingConnection, address: str) -> list[Any]:
    sender = c.create_sender(address)
    sender.send(Message(body="hello-1"))
    sender.send(Message(body="hello-2", id="m-2", subject="greet", durable=True,
                        properties={"color": "red", "n": 2}))
    sender.send(Message(body=b"\x00\x01binary-3", content_type="application/octet-stream",
                        correlation_id="c-3", reply_to="/queue/replies"))
    receiver = c.create_receiver(address, credit=10)
    got = []
    for _ in range(3):
        got.append(seen(receiver.receive(timeout=5)))
        receiver.accept()
    return got


def test_send_receive_accept_with_properties(reference: str) -> None:
    got = compare(three_messages, reference)
    assert [g[0] for g in got] == ["hello-1", "hello-2", b"\x00\x01binary-3"]


def released_and_rejected(c: BlockingConnection, address: str) -> list[Any]:
    sender = c.create_sender(address)
    for i in range(4):
        sender.send(Message(body=f"d-{i}"))
    receiver = c.create_receiver(address, credit=4)
    got = []
    for how in ("accept", "release", "reject", "release"):
        got.append(seen(receiver.receive(timeout=5)))
        if how == "release":
            receiver.release(delivered=False)  # released (3.10 has no modified outcome)
        else:
            getattr(receiver, how)()
    for _ in range(2):
        got.append(seen(receiver.receive(timeout=5)))
        receiver.accept()
    return got


def test_released_messages_come_back_and_rejected_ones_do_not(reference: str) -> None:
    got = compare(released_and_rejected, reference)
    assert [(g[0], g[7]) for g in got[4:]] == [("d-1", False), ("d-3", False)]


def presettled(c: BlockingConnection, address: str) -> list[Any]:
    c.create_sender(address, options=AtMostOnce()).send(Message(body="fire-and-forget"))
    receiver = c.create_receiver(address, credit=1, options=AtMostOnce())
    m = receiver.receive(timeout=5)
    return [seen(m), receiver.link.remote_snd_settle_mode]


def test_pre_settled_send_and_receive(reference: str) -> None:
    compare(presettled, reference)


def large(c: BlockingConnection, address: str) -> list[Any]:
    c.create_sender(address).send(Message(body=b"x" * 70000))
    receiver = c.create_receiver(address, credit=1)
    m = receiver.receive(timeout=5)
    receiver.accept()
    body = m.body
    assert isinstance(body, (bytes, memoryview))
    return [len(body)]


def test_a_multi_frame_message(reference: str) -> None:
    assert compare(large, reference) == [70000]
