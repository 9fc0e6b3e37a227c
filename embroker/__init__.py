"""embroker: an embedded AMQP 0-9-1 broker with RabbitMQ's semantics, for tests.

The names below are imported when first used (PEP 562), so that ``import embroker`` costs
nothing until one is: a tool that only talks to a running node (``rabbitmqctl`` from
``embroker shims``) starts in the time Python itself takes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__

if TYPE_CHECKING:
    from ._broker import Broker as Broker
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

#: Where each public name lives.
_HOMES = {
    "Broker": "._broker", "Channel": ".client", "Connection": ".client",
    "AMQPError": ".errors", "ChannelException": ".errors", "ConnectionException": ".errors",
    "DefinitionsError": ".errors", "PolicyError": ".errors", "PolicyWarning": ".errors",
    "ManualClock": ".model", "Message": ".model", "MessageEvent": ".model",
    "RoutingDecision": ".model", "SystemClock": ".model", "Server": ".server",
}

__all__ = [
    "AMQPError", "Broker", "Channel", "ChannelException", "Connection", "ConnectionException",
    "DefinitionsError", "ManualClock", "Message", "MessageEvent", "PolicyError", "PolicyWarning",
    "RoutingDecision", "Server", "SystemClock", "__version__",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'embroker' has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value  # (once: later lookups find it directly)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
