"""A topology check: load the definitions the production RabbitMQ was configured with
(``rabbitmqctl export_definitions``) and check that each routing key reaches the intended
queues. Nothing is published: ``assert_routes`` asks the routing model."""

from __future__ import annotations

import pytest

from embroker import Broker
from embroker.testing import assert_routes, route

pytestmark = pytest.mark.embroker(topology="definitions.json")  # next to this file

#: Routing key -> the queues a message published to the "shop" exchange must reach.
EXPECTED = {
    "order.eu.created": ["orders.audit"],
    "order.eu.paid": ["orders.audit", "orders.billing", "orders.shipping"],
    "order.us.address_changed": ["orders.audit", "orders.shipping"],
    "user.created": ["users.mailer"],
    "user.deleted": [],                       # matched the users exchange, no queue wants it
    "invoice.sent": ["shop.unrouted"],        # nothing matched: the alternate exchange took it
}


def test_routing_keys_reach_the_intended_queues(broker: Broker) -> None:
    assert_routes(broker, "shop", EXPECTED)


def test_a_typo_in_a_binding_is_explained(broker: Broker) -> None:
    with pytest.raises(AssertionError) as failure:
        assert_routes(broker, "shop", {"order.eu.payed": ["orders.billing"]})
    assert ("routing key 'order.eu.payed': expected ['orders.billing'], reaches "
            "['orders.audit']") in str(failure.value)
    explanation = route(broker, "shop", "order.eu.payed").explain()  # embroker says why
    assert ("no match -> queue 'orders.billing': pattern 'order.*.paid' does not match "
            "'order.eu.payed'") in explanation


def test_the_explanation_at_hand(broker: Broker) -> None:
    decision = route(broker, "shop", "user.deleted")
    assert decision.queues == ()
    print(decision.explain())                  # run with -s to read it
