"""A client connection to a virtual host: its channels and the exclusive queues it owns."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Final, final

from ..errors import ChannelError, ConnectionException, NotAllowed
from ._access import UNRESTRICTED, Grant
from ._channel import Channel
from ._kinds import DIRECT, ConnectionKind

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._node import Node
    from ._queue import Queue
    from ._vhost import VirtualHost

__all__ = ["INTERNAL_CHANNELS", "Connection", "channel_already_open"]

#: Where the ids of a connection's internal channels start: past the last channel number of
#: AMQP 0-9-1 (a short, 65535), so none is ever a channel a client opened.
INTERNAL_CHANNELS: Final = 1 << 16



def channel_already_open() -> ChannelError:
    """channel.open on a channel that is open: 504, a connection exception (RabbitMQ's text)."""
    return ChannelError("second 'channel.open' seen")


@final
class Connection:
    """The model's side of one client connection (the wire's or the in-process client's).

    Attributes:
        vhost: the virtual host it opened.
        user: the user name it authenticated as.
        access: the permission checks of its user in its vhost (:mod:`._access`).
        kind: what kind of client it serves (:class:`ConnectionKind`): which limits apply,
            how alarms hold it, how listings name its protocol.
        node: the node its client reached (:class:`~._node.Node`).
        client_properties: what the client said of itself in connection.start-ok.
        channels: its open channels by number.
        exclusive_queues: the exclusive queues it owns; they go when it closes.
    """

    def __init__(self, vhost: VirtualHost, *, user: str = "guest",
                 client_properties: dict[str, Any] | None = None, name: str | None = None,
                 access: Grant = UNRESTRICTED, kind: ConnectionKind = DIRECT,
                 node: Node | None = None) -> None:
        self.id = next(vhost.broker._connection_ids)  # 1, 2... in each broker
        self.vhost = vhost
        self.node = node if node is not None else vhost.broker.nodes[0]
        self.kind = kind
        self.user = user
        self.access = access
        #: Why the broker closed it (e.g. its user was deleted), and whom to tell: the owner
        #: (the wire's connection) sets ``on_closed_by_broker`` to send connection.close.
        self.closed_by: ConnectionException | None = None
        self.on_closed_by_broker: Callable[[ConnectionException], None] | None = None
        self.client_properties = dict(client_properties or {})
        self.name = name or f"connection {self.id}"
        self.channels: dict[int, Channel] = {}
        self.exclusive_queues: dict[str, Queue] = {}
        #: What the protocol layer knows of the connection (peer address, tuned limits...),
        #: for the event exchange's ``connection.created``; empty in-process.
        self.details: dict[str, Any] = {}
        self.is_open = True
        self._internal_ids = itertools.count(INTERNAL_CHANNELS)
        vhost.broker.connections[self.id] = self

    def consumer_unacked(self) -> int:
        """Consumer deliveries (not basic.get ones) its channels hold unsettled."""
        return sum(channel.consumer_unacked for channel in self.channels.values())

    @property
    def has_tracked_channels(self) -> bool:
        """Whether its channels are the ones RabbitMQ tracks and counts against a user's
        ``max-channels``: its kind's (:attr:`ConnectionKind.tracked_channels`: not an AMQP
        1.0 connection's sessions and links, nor a stream connection's), and not an unchecked
        in-process connection's."""
        return self.kind.tracked_channels and self.access is not UNRESTRICTED

    def open_channel(self, number: int) -> Channel:
        """Open channel ``number``.

        Raises:
            ChannelError: (504) that channel is open already.
            NotAllowed: (530) its user's ``max-channels`` is reached (its user limit:
                rabbit_reader:create_channel/2, v3.10.8, counting the user's channels on every
                connection).
        """
        if number in self.channels:
            raise channel_already_open()
        broker = self.vhost.broker
        if self.has_tracked_channels:
            limit = broker.user_limit(self.user, "max-channels")
            if limit is not None and (limit == 0 or sum(
                    len(c.channels) for c in broker.connections.values()
                    if c.user == self.user and c.has_tracked_channels) >= limit):
                raise NotAllowed(f"number of channels opened for user '{self.user}' has "
                                 f"reached the maximum allowed user limit of ({limit})")
        channel = self.channels[number] = Channel(self, number)
        events = self.vhost.broker.plugins.events
        if events is not None:
            events.channel_created(channel)
        return channel

    def open_internal_channel(self) -> Channel:
        """Open a channel of the broker's own on this connection, for a surface that has no
        channel numbers (AMQP 1.0's transactions and volatile queues, the stream protocol,
        the CLI): the model gives it an id past every 0-9-1 channel number
        (:data:`INTERNAL_CHANNELS` on; :attr:`Channel.internal` is true), counts it against
        no user's ``max-channels`` and announces it on no event exchange (RabbitMQ's stream
        connections and its CLI have no channel to announce)."""
        number = next(self._internal_ids)
        channel = self.channels[number] = Channel(self, number)
        return channel

    def close(self) -> None:
        """Close every channel (requeueing what they had not acknowledged) and delete the
        exclusive queues this connection owns. Closing twice does nothing."""
        if not self.is_open:
            return
        self.is_open = False
        for channel in list(self.channels.values()):
            channel.close()
        for queue in list(self.exclusive_queues.values()):
            if not queue.deleted:
                self.vhost.delete_queue_object(queue)
        self.exclusive_queues.clear()
        self.vhost.broker.connections.pop(self.id, None)
        events = self.vhost.broker.plugins.events
        if events is not None:
            events.connection_closed(self)

    def close_by_broker(self, error: ConnectionException) -> None:
        """Close it from the broker's side for ``error`` (320 CONNECTION_FORCED when its user is
        deleted): the owner is told, then it closes."""
        if not self.is_open:
            return
        self.closed_by = error
        if self.on_closed_by_broker is not None:
            self.on_closed_by_broker(error)
        self.close()

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return (f"<{self.name} to vhost '{self.vhost.name}' as '{self.user}', {state}, "
                f"{len(self.channels)} channels>")
