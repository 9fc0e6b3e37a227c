"""embroker: an embedded AMQP 0-9-1 broker with RabbitMQ's semantics, for tests."""

from __future__ import annotations

from ._broker import Broker as Broker
from ._version import __version__ as __version__
from .client import Channel as Channel
from .client import Connection as Connection
from .errors import AMQPError as AMQPError
from .errors import ChannelException as ChannelException
from .errors import ConnectionException as ConnectionException
from .errors import DefinitionsError as DefinitionsError
from .errors import PolicyError as PolicyError
from .errors import PolicyWarning as PolicyWarning
from .model import ManualClock as ManualClock
from .model import Message as Message
from .model import MessageEvent as MessageEvent
from .model import RoutingDecision as RoutingDecision
from .model import SystemClock as SystemClock
from .server import Server as Server

__all__ = [
    "AMQPError", "Broker", "Channel", "ChannelException", "Connection", "ConnectionException",
    "DefinitionsError", "ManualClock", "Message", "MessageEvent", "PolicyError", "PolicyWarning",
    "RoutingDecision", "Server", "SystemClock", "__version__",
]
