"""What a session protocol keeps beside queues (:mod:`embroker.model._sessions`): client ids
node-wide (RabbitMQ 3.10's ``mqtt_machine``) or per virtual host (3.13+'s ``pg`` groups), and
a queue's own arguments changed in place (``rabbit_amqqueue:update/2``)."""

from __future__ import annotations

from embroker.fieldtypes import Long
from embroker.model import Broker, ClientIds, ManualClock


def test_a_second_holder_takes_the_id_and_the_first_is_told_what_it_said() -> None:
    ids = ClientIds()
    told: list[object] = []
    assert not ids.register("c", "first", told.append)
    assert ids.register("c", "second", told.append, notice="send the will")
    assert told == ["send the will"]
    assert ids.owner("c") == "second"
    ids.unregister("c", "first")  # (no longer the holder: nothing changes)
    assert ids.owner("c") == "second"


def test_ids_in_different_scopes_are_different_ids() -> None:
    ids = ClientIds()
    told: list[object] = []
    ids.register("c", "here", told.append, scope="/")
    assert not ids.register("c", "there", told.append, scope="other")
    assert not ids.register("c", "node-wide", told.append)
    assert told == []
    assert (ids.owner("c", scope="/"), ids.owner("c", scope="other")) == ("here", "there")
    ids.unregister("c", "here", scope="/")
    assert ids.owner("c", scope="/") is None


def test_a_queues_arguments_change_in_place_and_apply_as_a_policy_change_does() -> None:
    clock = ManualClock()
    broker = Broker(clock=clock)
    ch = broker.open_connection().open_channel(1)
    ch.queue_declare("q", arguments={"x-expires": Long(10_000), "x-max-length": 5})
    queue = broker.queues["q"]
    clock.advance(8)
    queue.update_arguments({"x-expires": Long(20_000), "x-max-length": None})
    assert queue.arguments == {"x-expires": Long(20_000)}
    clock.advance(19)  # (the countdown started again at the change)
    broker.tick()
    assert "q" in broker.queues
    clock.advance(1)
    broker.tick()
    assert "q" not in broker.queues
