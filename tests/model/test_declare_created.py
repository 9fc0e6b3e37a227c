"""Declares say whether they created: ``exchange_declare`` returns it, ``queue_declare``'s
``DeclareOk.created`` carries it. The management API answers 201 or 204 (and RabbitMQ 4's 1.0
management node 201 or 200) from it, instead of looking the name up before declaring."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.errors import AccessRefused
from embroker.model import Channel


def _channel(broker: Broker, user: str | None = None) -> Channel:
    return broker.open_connection("/", user=user).open_channel(1)


def test_an_exchange_declare_says_it_created_only_the_first_time() -> None:
    ch = _channel(Broker())
    assert ch.exchange_declare("x", "topic") is True
    assert ch.exchange_declare("x", "topic") is False
    assert ch.exchange_declare("x", passive=True) is False
    assert ch.exchange_declare("amq.direct", durable=True) is False


def test_a_queue_declare_says_it_created_only_the_first_time() -> None:
    ch = _channel(Broker())
    assert ch.queue_declare("q").created is True
    assert ch.queue_declare("q").created is False
    assert ch.queue_declare("q", passive=True).created is False
    assert ch.queue_declare("").created is True  # a server-named queue is always new


def test_declaring_a_direct_reply_to_address_creates_nothing() -> None:
    ch = _channel(Broker())
    assert ch.queue_declare("amq.rabbitmq.reply-to").created is False


def test_a_refused_declare_creates_nothing() -> None:
    broker = Broker()
    broker.add_user("app", "secret")
    broker.set_permissions("app", configure="^$", write=".*", read=".*")
    ch = _channel(broker, user="app")
    with pytest.raises(AccessRefused):
        ch.queue_declare("q")
    assert "q" not in broker.queues


def test_asking_whether_an_exchange_exists_checks_permission_first() -> None:
    """RabbitMQ 4's 1.0 management node (rabbit_amqp_management, PUT /exchanges): configure
    permission, then the lookup: a user without it learns nothing of what exists."""
    broker = Broker()
    broker.add_user("app", "secret")
    broker.set_permissions("app", configure="^mine", write=".*", read=".*")
    _channel(broker).exchange_declare("theirs", "fanout")
    ch = _channel(broker, user="app")
    assert ch.check_exchange_declare("mine") is False
    ch.exchange_declare("mine")
    assert ch.check_exchange_declare("mine") is True
    for name in ("theirs", "absent"):
        with pytest.raises(AccessRefused) as refused:
            ch.check_exchange_declare(name)
        assert refused.value.text == \
            f"access to exchange '{name}' in vhost '/' refused for user 'app'"
    assert "absent" not in broker.exchanges
