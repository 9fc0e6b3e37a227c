"""The broker model: vhosts, exchanges, queues, bindings, channels and consumers.

Pure Python objects with no sockets, threads or wall-clock reads; time comes from a
:class:`Clock`. Both the wire protocol and the in-process client drive :class:`Channel`.
"""

from __future__ import annotations

from ._access import HashedPassword as HashedPassword
from ._access import Permissions as Permissions
from ._access import TopicPermissions as TopicPermissions
from ._broker import Broker as Broker
from ._channel import Channel as Channel
from ._clock import Clock as Clock
from ._clock import ManualClock as ManualClock
from ._clock import SystemClock as SystemClock
from ._clock import Timer as Timer
from ._connection import Connection as Connection
from ._consumer import Browser as Browser
from ._consumer import Consumer as Consumer
from ._consumer import Credited as Credited
from ._consumer import Delivery as Delivery
from ._delayed import HeldMessage as HeldMessage
from ._events import Cancelled as Cancelled
from ._events import ChannelEvent as ChannelEvent
from ._events import Confirmed as Confirmed
from ._events import Delivered as Delivered
from ._events import Returned as Returned
from ._exchange import Binding as Binding
from ._exchange import Exchange as Exchange
from ._history import Fate as Fate
from ._history import MessageEvent as MessageEvent
from ._incidents import Incident as Incident
from ._kinds import AMQP_091 as AMQP_091
from ._kinds import AMQP_10 as AMQP_10
from ._kinds import DIRECT as DIRECT
from ._kinds import STREAM as STREAM
from ._kinds import AlarmBlocking as AlarmBlocking
from ._kinds import ConnectionKind as ConnectionKind
from ._message import PROPERTY_NAMES as PROPERTY_NAMES
from ._message import Message as Message
from ._message import QueuedMessage as QueuedMessage
from ._node import Node as Node
from ._node import NodeIdentity as NodeIdentity
from ._outcome import PublishOutcome as PublishOutcome
from ._plugins import Plugins as Plugins
from ._policy import Policy as Policy
from ._policy import QueueSettings as QueueSettings
from ._queue import Queue as Queue
from ._sessions import ClientIds as ClientIds
from ._sessions import Retained as Retained
from ._sessions import RetainedMessages as RetainedMessages
from ._trace import Explanation as Explanation
from ._trace import Outcome as Outcome
from ._trace import RoutingDecision as RoutingDecision
from ._tx import Transaction as Transaction
from ._vhost import DeclareOk as DeclareOk
from ._vhost import VirtualHost as VirtualHost

__all__ = [
    "AMQP_091",
    "AMQP_10",
    "DIRECT",
    "PROPERTY_NAMES",
    "STREAM",
    "AlarmBlocking",
    "Binding",
    "Broker",
    "Browser",
    "Cancelled",
    "Channel",
    "ChannelEvent",
    "ClientIds",
    "Clock",
    "Confirmed",
    "Connection",
    "ConnectionKind",
    "Consumer",
    "Credited",
    "DeclareOk",
    "Delivered",
    "Delivery",
    "Exchange",
    "Explanation",
    "Fate",
    "HashedPassword",
    "HeldMessage",
    "Incident",
    "ManualClock",
    "Message",
    "MessageEvent",
    "Node",
    "NodeIdentity",
    "Outcome",
    "Permissions",
    "Plugins",
    "Policy",
    "PublishOutcome",
    "Queue",
    "QueueSettings",
    "QueuedMessage",
    "Retained",
    "RetainedMessages",
    "Returned",
    "RoutingDecision",
    "SystemClock",
    "Timer",
    "TopicPermissions",
    "Transaction",
    "VirtualHost",
]
