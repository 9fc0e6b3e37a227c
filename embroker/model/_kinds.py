"""Connection kinds: what kind of client a model connection serves, and which rules apply to it.

Each surface opens its model connections with its kind
(:meth:`Broker.open_connection(kind=...) <embroker.model.Broker.open_connection>`), and every
rule that differs by protocol reads the kind's flags, never a protocol's name or class: the
user's ``max-connections`` (``rabbit_reader:is_over_user_connection_limit/1``, which RabbitMQ
3.10.8's stream reader does not call), the user's ``max-channels`` (counted by
``rabbit_reader:create_channel/2`` over AMQP 0-9-1 channels only), how a resource alarm holds
its publishers, and how listings name its protocol. A new protocol (STOMP, MQTT: both blocked
by alarms and counted against ``max-connections`` in RabbitMQ) is one more
:class:`ConnectionKind`, with no edit to the model, the listener or the listings.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import final

__all__ = ["AMQP_091", "AMQP_10", "DIRECT", "STREAM", "AlarmBlocking", "ConnectionKind"]


@final
class AlarmBlocking(enum.Enum):
    """How a resource alarm holds a connection of a kind (RabbitMQ 3.10.8's readers)."""

    #: It is read until it publishes, then not until the alarm clears (``rabbit_reader``'s
    #: ``publish_received/1``, which also tells 0-9-1 clients ``connection.blocked``;
    #: ``rabbit_amqp1_0_reader``: ``blocking`` until a transfer, then ``blocked``).
    PUBLISHERS = "publishers"
    #: It is not read at all while one of its alarms lasts (``rabbit_stream_reader``: the
    #: socket is not re-armed, after the one read it was armed for).
    READING = "reading"
    #: An alarm does not hold it (embroker's in-process connections).
    NONE = "none"


@final
@dataclass(frozen=True, slots=True)
class ConnectionKind:
    """The kind of a model connection: its protocol's names and the rules that apply to it.

    Attributes:
        name: how embroker names the kind in texts and logs (``"AMQP 1.0"``).
        protocol: its ``protocol`` as RabbitMQ's management API lists it (``"AMQP 0-9-1"``,
            ``"AMQP 1-0"``, ``"stream"``, ``"Direct 0-9-1"``).
        protocol_term: its ``protocol`` as its reader reports it, unformatted (the event
            exchange's ``connection.created``: ``{0,9,1}`` for rabbit_reader's).
        user_connection_limit: whether its user's ``max-connections`` is checked when it opens.
        tracked_channels: whether its channels count against its user's ``max-channels``.
        alarm_blocking: how a resource alarm holds it.
        alarms: the alarms (``"disk"``, ``"memory"``) that hold it.
        direct: its protocol's plugin serves it over a direct connection of its own (RabbitMQ
            3.10's STOMP and MQTT plugins: ``amqp_connection:start`` with
            ``#amqp_params_direct{}``): the management API lists it with ``rabbit_direct``'s
            keys and ``type: direct``.
        listing: the name of its plugin's own ``rabbitmqctl`` listing
            (``stomp_connections``, ``mqtt_connections``), whose row its protocol layer keeps
            in the connection's ``details["listing"]``; ``None``: none.
    """

    name: str
    protocol: str
    protocol_term: str
    user_connection_limit: bool = True
    tracked_channels: bool = False
    alarm_blocking: AlarmBlocking = AlarmBlocking.PUBLISHERS
    alarms: frozenset[str] = frozenset({"disk", "memory"})
    direct: bool = False
    listing: str | None = None

    def blocked_by(self, alarms: Iterable[str]) -> bool:
        """Whether ``alarms`` (the alarms in effect) hold it."""
        return self.alarm_blocking is not AlarmBlocking.NONE and \
            not self.alarms.isdisjoint(alarms)

    def __str__(self) -> str:
        return self.name


#: AMQP 0-9-1 (rabbit_reader): every limit, and ``connection.blocked`` when it publishes.
AMQP_091 = ConnectionKind("AMQP 0-9-1", "AMQP 0-9-1", "{0,9,1}", tracked_channels=True)
#: AMQP 1.0 (RabbitMQ 3.10's rabbitmq_amqp1_0 plugin): its sessions and links are no tracked
#: channels (RabbitMQ 4's sessions check no user limit either); held once it sends a transfer.
AMQP_10 = ConnectionKind("AMQP 1.0", "AMQP 1-0", "{'AMQP',\"1.0\"}")
#: RabbitMQ's stream protocol (rabbit_stream_reader, v3.10.8 and v4.1.0): no user connection
#: limit, no channels; only the disk alarm holds it, and then it is not read at all.
STREAM = ConnectionKind("stream", "stream", "stream", user_connection_limit=False,
                        alarm_blocking=AlarmBlocking.READING, alarms=frozenset({"disk"}))
#: An in-process connection (RabbitMQ's direct connections: the Erlang client, the management
#: API's and the tools' own): checked as a 0-9-1 one, never held by an alarm.
DIRECT = ConnectionKind("direct", "Direct 0-9-1", "Direct 0-9-1", tracked_channels=True,
                        alarm_blocking=AlarmBlocking.NONE, alarms=frozenset())
