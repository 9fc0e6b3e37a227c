"""RabbitMQ's plugins that bring exchange types, enabled per broker as RabbitMQ enables them.

An exchange type a plugin brings exists only when its plugin is enabled
(``Broker(plugins=[...])``, ``embroker serve --plugin NAME``, the pytest marker's ``plugins=``);
without it a declare fails as RabbitMQ's does (``503 COMMAND_INVALID - unknown exchange type
'x-delayed-message'``). The plugins, by RabbitMQ's names:

=====================================  ===============================================================
plugin                                 what it brings
=====================================  ===============================================================
``rabbitmq_delayed_message_exchange``  ``x-delayed-message``: messages held for their ``x-delay``
                                       (:mod:`._delayed`)
``rabbitmq_consistent_hash_exchange``  ``x-consistent-hash``: a hash ring weighted by binding keys
``rabbitmq_sharding``                  ``x-modulus-hash`` (the sharding plugin's exchange type; its
                                       sharding policies are not modelled)
``rabbitmq_random_exchange``           ``x-random``: one binding picked at random
``rabbitmq_recent_history_exchange``   ``x-recent-history``: the last messages replayed to each new
                                       binding
``rabbitmq_event_exchange``            ``amq.rabbitmq.event``: the broker's events as messages
                                       (:mod:`._event_exchange`)
=====================================  ===============================================================

:class:`Plugins` is what a broker keeps of them: which are enabled, the exchange types they
make available, the random source ``x-random`` draws from (seeded, so routing is
reproducible), the messages the delayed-message exchange holds, and the event publisher.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, final

from ._exchange import EXCHANGE_TYPES, Exchange

if TYPE_CHECKING:
    from ._broker import Broker
    from ._delayed import DelayedMessages
    from ._event_exchange import EventPublisher

__all__ = ["DEFAULT_RANDOM_SEED", "PLUGINS", "PLUGIN_OF_TYPE", "Plugins", "check_plugins"]

#: Each plugin embroker implements, and the exchange types it brings.
PLUGINS: Mapping[str, tuple[str, ...]] = {
    "rabbitmq_delayed_message_exchange": ("x-delayed-message",),
    "rabbitmq_consistent_hash_exchange": ("x-consistent-hash",),
    "rabbitmq_sharding": ("x-modulus-hash",),
    "rabbitmq_random_exchange": ("x-random",),
    "rabbitmq_recent_history_exchange": ("x-recent-history",),
    "rabbitmq_event_exchange": (),
}

#: The plugin that brings each plugin exchange type.
PLUGIN_OF_TYPE: Mapping[str, str] = {
    xtype: plugin for plugin, types in PLUGINS.items() for xtype in types}

#: What ``x-random`` draws from until a test seeds it (``broker.plugins.random.seed(n)``).
DEFAULT_RANDOM_SEED = 0


def check_plugins(names: Iterable[str]) -> frozenset[str]:
    """The plugin names, checked.

    Raises:
        ValueError: a name that is no plugin embroker implements (the message lists them).
    """
    if isinstance(names, str):
        names = (names,)
    chosen = frozenset(names)
    unknown = sorted(chosen - set(PLUGINS))
    if unknown:
        raise ValueError(f"unknown plugin(s) {', '.join(map(repr, unknown))}: embroker "
                         f"implements {', '.join(PLUGINS)}")
    return chosen


def _plugin_types() -> dict[str, type[Exchange]]:
    from ._delayed import DelayedMessageExchange
    from ._plugin_exchanges import (
        ConsistentHashExchange,
        ModulusHashExchange,
        RandomExchange,
        RecentHistoryExchange,
    )

    return {cls.type: cls for cls in (DelayedMessageExchange, ConsistentHashExchange,
                                      ModulusHashExchange, RandomExchange,
                                      RecentHistoryExchange)}


@final
class Plugins:
    """The plugins a broker has enabled, and their state (``broker.plugins``).

    Attributes:
        enabled: the enabled plugins' names.
        exchange_types: every exchange type a declare may name: the built-in ones and those of
            the enabled plugins.
        random: where ``x-random`` exchanges draw from: seeded with
            :data:`DEFAULT_RANDOM_SEED`, so the same test routes the same way on every run;
            ``broker.plugins.random.seed(n)`` picks another sequence.
        delayed: the messages the delayed-message exchanges hold (``None`` without the plugin).
        events: what publishes the broker's events to ``amq.rabbitmq.event`` (``None``
            without the plugin).
    """

    def __init__(self, broker: Broker, names: Iterable[str]) -> None:
        self._broker = broker
        self.enabled = check_plugins(names)
        #: The plugin exchange types enabled once and disabled since: a declare of one is
        #: "invalid", not "unknown" (its atom exists in RabbitMQ's node by then).
        self.retired_types: frozenset[str] = frozenset()
        self.exchange_types: Mapping[str, type[Exchange]] = self._types()
        self.random = random.Random(DEFAULT_RANDOM_SEED)
        self.delayed: DelayedMessages | None = None
        self.events: EventPublisher | None = None
        self._start_state()

    def _types(self) -> dict[str, type[Exchange]]:
        types: dict[str, type[Exchange]] = dict(EXCHANGE_TYPES)
        for xtype, cls in _plugin_types().items():
            if PLUGIN_OF_TYPE[xtype] in self.enabled:
                types[xtype] = cls
        if self._broker.profile.rabbitmq4:  # built in since RabbitMQ 4.0, no plugin needed
            from ._plugin_exchanges import LocalRandomExchange

            types[LocalRandomExchange.type] = LocalRandomExchange
        return types

    def _start_state(self) -> None:
        if "rabbitmq_delayed_message_exchange" in self.enabled and self.delayed is None:
            from ._delayed import DelayedMessages

            self.delayed = DelayedMessages(self._broker)
        if "rabbitmq_event_exchange" in self.enabled and self.events is None:
            from ._event_exchange import EventPublisher

            self.events = EventPublisher(self._broker)

    def enable(self, name: str) -> bool:
        """``rabbitmq-plugins enable NAME`` on a running node: its exchange types can be
        declared from now on (and the event exchange starts publishing); whether it was off.

        Raises:
            ValueError: no plugin embroker implements has that name.
        """
        check_plugins((name,))
        with self._broker.locked():
            if name in self.enabled:
                return False
            self.enabled = self.enabled | {name}
            self.exchange_types = self._types()
            self.retired_types = self.retired_types - set(PLUGINS[name])
            self._start_state()
            if name == "rabbitmq_event_exchange":
                self.start()
            return True

    def disable(self, name: str) -> bool:
        """``rabbitmq-plugins disable NAME`` on a running node: its exchange types can no longer
        be declared ("invalid exchange type"), while the exchanges of those types declared
        already go on routing, as on RabbitMQ 3.10.8 (checked live with
        ``rabbitmq_consistent_hash_exchange``); whether it was on.

        Raises:
            ValueError: no plugin embroker implements has that name.
        """
        check_plugins((name,))
        with self._broker.locked():
            if name not in self.enabled:
                return False
            self.enabled = self.enabled - {name}
            self.exchange_types = self._types()
            self.retired_types = self.retired_types | set(PLUGINS[name])
            if name == "rabbitmq_event_exchange" and self.events is not None:
                self.events = None
            return True

    def start(self) -> None:
        """What the plugins set up once the broker's vhosts exist (the event exchange)."""
        if self.events is not None:
            self.events.start()

    def __contains__(self, name: object) -> bool:
        return name in self.enabled

    def __repr__(self) -> str:
        return f"<Plugins {sorted(self.enabled)}>"
