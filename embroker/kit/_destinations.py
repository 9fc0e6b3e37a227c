"""Destinations: RabbitMQ's ``/exchange``, ``/queue``, ``/amq/queue``, ``/topic``,
``/temp-queue`` and ``/reply-queue`` grammar, and the queues and bindings a destination needs.

Theory of operation
-------------------
RabbitMQ 3.10's protocol plugins (STOMP, Web-STOMP, the AMQP 1.0 plugin's v1 addresses) name
where a message goes, or where a subscriber reads from, with one grammar, parsed once in
``amqp_client``'s ``rabbit_routing_util`` (v3.10.8): ``parse_endpoint/2`` reads it,
``ensure_endpoint/5`` declares the queue it needs (a private queue for an exchange or topic
subscription), ``ensure_binding/3`` binds that queue, ``parse_routing/1`` gives the exchange and
routing key a message is published with. This module is that, over :class:`embroker.model.Channel`:

``parse_destination`` is a pure function of the text: a :class:`Destination` or a
:class:`DestinationError`, never another exception. The text is split at every ``/``::

    Q                  (no ``/`` at all) queue Q
    /queue/Q           queue Q (declared by ensure_endpoint)
    /queue             (allow_anonymous_queue only) no queue: each message's own key decides
    /amq/queue/Q       queue Q, which must exist (never declared)
    /topic/K           exchange amq.topic, key K (a subscription: a private queue bound with K)
    /exchange/X        exchange X, no key (``""`` when one is needed)
    /exchange/X/K      exchange X, key K
    /temp-queue/N      a temporary queue the protocol makes (STOMP's), named N by its client
    /reply-queue/Q     queue Q, which must exist; everything after the prefix is the name

In each name, ``%2F`` stands for ``/`` and nothing else is decoded (``rabbit_routing_util:
unescape/1``), so no escape is ever malformed; a name can hold ``/`` only as ``%2F`` (except
after ``/reply-queue/``) and can never hold the text ``%2F`` itself. RabbitMQ's two refusals are
kept apart by :class:`DestinationErrorKind`: an unknown prefix (``unknown_destination``) and a
known prefix without exactly the name segments it takes (``invalid_destination``, which carries
the prefix's type and what followed it, as RabbitMQ's ``to_url/1`` prints it). Each protocol
words these as RabbitMQ does for it: the kit raises, it never words a refusal.

The helpers that act only call :class:`~embroker.model.Channel` operations (``queue_declare``,
``queue_bind``, ``basic_consume``, ``basic_cancel``, ``queue_delete``, a passive
``exchange_declare``): the channel checks permissions and exclusive owners and words its
errors; the kit never decides an access question nor reads a queue's storage.
"""

from __future__ import annotations

import contextlib
import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, final

from ..errors import AMQPError

if TYPE_CHECKING:
    from ..model import Channel

__all__ = [
    "DESTINATION_PREFIXES",
    "Destination",
    "DestinationError",
    "DestinationErrorKind",
    "DestinationType",
    "Direction",
    "Subscription",
    "ensure_binding",
    "ensure_endpoint",
    "parse_destination",
    "private_queue",
    "subscribe",
]

#: Where a destination is used: ``"source"`` (a subscription reads from it) or ``"dest"`` (a
#: message is sent to it), ``ensure_endpoint/5``'s first argument.
Direction = Literal["source", "dest"]

_ESCAPE: Final = "%2F"


@enum.unique
class DestinationType(enum.Enum):
    """A destination's form; each value is RabbitMQ's atom for it (what its refusals print)."""

    #: ``/exchange/X`` or ``/exchange/X/K``.
    EXCHANGE = "exchange"
    #: ``/queue/Q``, a bare ``Q``, or (anonymous) ``/queue``.
    QUEUE = "queue"
    #: ``/amq/queue/Q``: a queue that must exist.
    AMQQUEUE = "amqqueue"
    #: ``/topic/K``: amq.topic with key K.
    TOPIC = "topic"
    #: ``/temp-queue/N``: a temporary queue the protocol makes.
    TEMP_QUEUE = "temp_queue"
    #: ``/reply-queue/Q``: a queue that must exist (a reply address).
    REPLY_QUEUE = "reply_queue"


#: Each form's prefix (RabbitMQ's ``rabbit_routing_prefixes.hrl``), by its type.
_PREFIXES: Final = {
    DestinationType.EXCHANGE: "/exchange/",
    DestinationType.QUEUE: "/queue/",
    DestinationType.AMQQUEUE: "/amq/queue/",
    DestinationType.TOPIC: "/topic/",
    DestinationType.TEMP_QUEUE: "/temp-queue/",
    DestinationType.REPLY_QUEUE: "/reply-queue/",
}
#: Every prefix a destination can start with (``rabbit_routing_util:all_dest_prefixes/0``).
DESTINATION_PREFIXES: Final = tuple(_PREFIXES.values())

_TYPES_BY_SEGMENT: Final = {"exchange": DestinationType.EXCHANGE,
                            "queue": DestinationType.QUEUE,
                            "topic": DestinationType.TOPIC,
                            "temp-queue": DestinationType.TEMP_QUEUE}


@enum.unique
class DestinationErrorKind(enum.Enum):
    """Why a destination was refused. RabbitMQ has two reasons: ``unknown_destination``
    (:attr:`UNKNOWN_PREFIX`) and ``invalid_destination`` (the next three, which
    :attr:`DestinationError.invalid` groups)."""

    #: Not a bare name and no known prefix (RabbitMQ's ``unknown_destination``).
    UNKNOWN_PREFIX = "unknown prefix"
    #: A prefix with nothing after it (``/queue``, ``/exchange``, ``/topic``).
    MISSING_NAME = "missing name"
    #: A prefix followed by an empty name (``/queue/``, ``/exchange//k``).
    EMPTY_NAME = "empty name"
    #: More segments than the prefix takes (``/queue/a/b``, ``/exchange/x/k/z``).
    EXTRA_SEGMENTS = "extra segments"
    #: A form that has no endpoint for this use (``ensure_endpoint``'s ``invalid_endpoint``:
    #: a ``/temp-queue``, which the protocol makes itself, or a ``/queue`` with no name as a
    #: subscription).
    INVALID_ENDPOINT = "invalid endpoint"
    #: :meth:`Destination.render` of a name the grammar cannot carry (empty, or holding the
    #: text ``%2F``, which would read back as ``/``).
    UNREPRESENTABLE = "unrepresentable"


@final
class DestinationError(ValueError):
    """A destination that cannot be used; every refusal of this module.

    Attributes:
        kind: why.
        destination: the text refused (``""`` for :meth:`Destination.render`'s refusals).
        type: the form the prefix names, ``None`` when it named none.
        rest: what followed the prefix, as RabbitMQ's ``to_url/1`` joins it (``""`` when
            nothing did, ``"/a/b"`` for ``/queue/a/b``).
    """

    def __init__(self, kind: DestinationErrorKind, destination: str,
                 type: DestinationType | None = None, rest: str = "") -> None:
        self.kind = kind
        self.destination = destination
        self.type = type
        self.rest = rest
        if kind is DestinationErrorKind.UNKNOWN_PREFIX:
            text = f"unknown destination {destination!r}"
        elif type is not None:
            text = f"invalid {type.value} destination {destination!r} ({kind.value})"
        else:
            text = f"{kind.value}: {destination!r}"
        super().__init__(text)

    @property
    def invalid(self) -> bool:
        """A known prefix without the name segments it takes: RabbitMQ's
        ``invalid_destination`` (then :attr:`type` and :attr:`rest` are its two terms)."""
        return self.kind in (DestinationErrorKind.MISSING_NAME, DestinationErrorKind.EMPTY_NAME,
                             DestinationErrorKind.EXTRA_SEGMENTS)


@final
@dataclass(frozen=True, slots=True)
class Destination:
    """A parsed destination.

    Attributes:
        type: its form.
        name: the queue or exchange name, or (``/topic/K``) the key K, decoded; ``None`` only
            for the anonymous ``/queue``.
        key: an ``/exchange/X/K``'s key K, decoded; ``None`` when the destination gave none.
    """

    type: DestinationType
    name: str | None
    key: str | None = None

    @property
    def routing(self) -> tuple[str, str]:
        """The exchange and routing key a message sent here is published with, or a
        subscription's queue is bound with (``rabbit_routing_util:parse_routing/1``): an
        exchange and its key (``""`` when none was given); amq.topic and the topic; for the
        queue forms, the default exchange and the queue's name.

        >>> parse_destination("/topic/a.b").routing
        ('amq.topic', 'a.b')
        >>> parse_destination("/exchange/x").routing
        ('x', '')
        """
        if self.type is DestinationType.EXCHANGE:
            return self.name or "", self.key or ""
        if self.type is DestinationType.TOPIC:
            return "amq.topic", self.name or ""
        return "", self.name or ""

    def render(self) -> str:
        """The destination as text, ``/`` in names written ``%2F``: what
        :func:`parse_destination` reads back as this destination.

        Raises:
            DestinationError: (:attr:`~DestinationErrorKind.UNREPRESENTABLE`) an empty name,
                or a name or key that holds the text ``%2F``.

        >>> Destination(DestinationType.EXCHANGE, "a/b", "k").render()
        '/exchange/a%2Fb/k'
        """
        if self.type is DestinationType.QUEUE and self.name is None:
            return "/queue"
        text = _PREFIXES[self.type] + _escape(self.name)
        if self.key is not None:
            if self.type is not DestinationType.EXCHANGE:
                raise DestinationError(DestinationErrorKind.UNREPRESENTABLE, "", self.type)
            text += "/" + _escape(self.key, empty=True)
        return text


def _escape(name: str | None, *, empty: bool = False) -> str:
    if name is None or (not name and not empty) or _ESCAPE in name:
        raise DestinationError(DestinationErrorKind.UNREPRESENTABLE, "")
    return name.replace("/", _ESCAPE)


def _unescape(name: str) -> str:
    # rabbit_routing_util:unescape/1: each "%2F" (that case only) is a "/"; nothing else.
    return name.replace(_ESCAPE, "/")


def _to_url(segments: list[str]) -> str:
    # rabbit_routing_util:to_url/1: the segments after the prefix, each after a "/".
    return "".join("/" + segment for segment in segments)


def parse_destination(destination: str, *, allow_anonymous_queue: bool = False) -> Destination:
    """Read a destination (``rabbit_routing_util:parse_endpoint/2``, v3.10.8).

    Args:
        destination: the text.
        allow_anonymous_queue: ``/queue`` alone is a destination with no name (a sender's:
            each message's own key names the queue); otherwise it is refused.

    Returns:
        The destination, names decoded (``%2F`` is ``/``).

    Raises:
        DestinationError: an unknown prefix, or a prefix without exactly the name segments it
            takes. Any other exception is a bug.

    Complexity: O(len(destination)).

    >>> parse_destination("/exchange/amq.topic/a.%2F")
    Destination(type=<DestinationType.EXCHANGE: 'exchange'>, name='amq.topic', key='a./')
    >>> parse_destination("jobs")
    Destination(type=<DestinationType.QUEUE: 'queue'>, name='jobs', key=None)
    >>> parse_destination("/queue/a/b").rest
    Traceback (most recent call last):
    ...
    embroker.kit._destinations.DestinationError: invalid queue destination '/queue/a/b' (extra segments)
    """
    segments = destination.split("/")
    if len(segments) == 1:
        return Destination(DestinationType.QUEUE, _unescape(destination))
    first, kind = segments[0], segments[1]
    if first == "" and kind in _TYPES_BY_SEGMENT:
        return _parse_rest(destination, _TYPES_BY_SEGMENT[kind], segments[2:],
                           allow_anonymous_queue)
    if first == "" and kind == "amq" and len(segments) > 2 and segments[2] == "queue":
        return _parse_rest(destination, DestinationType.AMQQUEUE, segments[3:],
                           allow_anonymous_queue)
    if first == "" and kind == "reply-queue" and len(segments) > 2:
        # Everything after the prefix is one segment: a reply queue's name may hold "/".
        return _parse_rest(destination, DestinationType.REPLY_QUEUE,
                           [destination[len("/reply-queue/"):]], allow_anonymous_queue)
    raise DestinationError(DestinationErrorKind.UNKNOWN_PREFIX, destination)


def _parse_rest(destination: str, type_: DestinationType, rest: list[str],
                allow_anonymous_queue: bool) -> Destination:
    # rabbit_routing_util:parse_endpoint0/3: what follows a known prefix.
    if type_ is DestinationType.EXCHANGE:
        if rest and rest[0] and len(rest) <= 2:
            return Destination(type_, _unescape(rest[0]),
                               _unescape(rest[1]) if len(rest) == 2 else None)
        kind = (DestinationErrorKind.MISSING_NAME if not rest else
                DestinationErrorKind.EMPTY_NAME if not rest[0] else
                DestinationErrorKind.EXTRA_SEGMENTS)
    else:
        if not rest and type_ is DestinationType.QUEUE and allow_anonymous_queue:
            return Destination(type_, None)
        if len(rest) == 1 and rest[0]:
            return Destination(type_, _unescape(rest[0]))
        kind = (DestinationErrorKind.MISSING_NAME if not rest else
                DestinationErrorKind.EXTRA_SEGMENTS if len(rest) > 1 else
                DestinationErrorKind.EMPTY_NAME)
    raise DestinationError(kind, destination, type_, _to_url(rest))


# -- queues and bindings ---------------------------------------------------------------------


def ensure_endpoint(channel: Channel, destination: Destination,
                    direction: Direction = "source", *, durable: bool | None = None,
                    exclusive: bool | None = None, auto_delete: bool | None = None,
                    arguments: dict[str, Any] | None = None,
                    check_exchange: bool = False, queue: str = "") -> str | None:
    """Declare what a destination needs (``rabbit_routing_util:ensure_endpoint/5``): for a
    subscription (``source``) to an exchange or topic, a private queue named by the server;
    for ``/queue/Q`` either way, Q itself; nothing for the other forms.

    The queue is declared as RabbitMQ's ``queue_declare_method/3`` builds it: durable when
    ``durable`` (by default, true for ``/queue/Q``, false for a private queue), otherwise
    exclusive and auto-delete; ``exclusive`` and ``auto_delete``, when given, decide those
    two. (RabbitMQ also remembers which ``/queue/Q`` it declared, not to declare them twice;
    a caller that wants that keeps its own set.)

    Args:
        channel: the channel the declares run on, as its connection's user.
        destination: what to ensure.
        direction: ``"source"`` (a subscription) or ``"dest"`` (where messages are sent).
        check_exchange: an exchange must exist (a passive exchange.declare first).
        queue: the private queue's name (``""``: the server names it); RabbitMQ's
            ``subscription_queue_name_gen`` parameter, which STOMP gives.

    Returns:
        The queue's name (``/amq/queue/Q``'s and ``/reply-queue/Q``'s as given, undeclared), or
        ``None`` when the destination needs no queue (an exchange or topic to send to, the
        anonymous ``/queue``).

    Raises:
        DestinationError: (:attr:`~DestinationErrorKind.INVALID_ENDPOINT`) a ``/temp-queue``,
            which the protocol makes itself.
        AMQPError: the channel's refusal (a missing exchange, no configure permission, a queue
            declared otherwise, ...), as the channel words it.
    """
    kind = destination.type
    if kind in (DestinationType.EXCHANGE, DestinationType.TOPIC):
        if kind is DestinationType.EXCHANGE and check_exchange:
            channel.exchange_declare(destination.name or "", passive=True)
        if direction == "dest":
            return None
        return channel.queue_declare(queue, **_declare_flags(
            bool(durable), exclusive, auto_delete), arguments=arguments).queue
    if kind is DestinationType.QUEUE:
        if destination.name is None:
            return None
        channel.queue_declare(destination.name, **_declare_flags(
            True if durable is None else durable, exclusive, auto_delete), arguments=arguments)
        return destination.name
    if kind in (DestinationType.AMQQUEUE, DestinationType.REPLY_QUEUE):
        return destination.name
    raise DestinationError(DestinationErrorKind.INVALID_ENDPOINT, destination.render(), kind)


def _declare_flags(durable: bool, exclusive: bool | None,
                   auto_delete: bool | None) -> dict[str, bool]:
    flags = {"durable": True, "exclusive": False, "auto_delete": False} if durable else {
        "durable": False, "exclusive": True, "auto_delete": True}
    if exclusive is not None:
        flags["exclusive"] = exclusive
    if auto_delete is not None:
        flags["auto_delete"] = auto_delete
    return flags


def ensure_binding(channel: Channel, queue: str, exchange: str, routing_key: str) -> None:
    """Bind ``queue`` to ``exchange`` with ``routing_key`` (``rabbit_routing_util:
    ensure_binding/3``); nothing for the default exchange ``""``, which every queue is bound
    to by its name already.

    Raises:
        AMQPError: the channel's refusal (no such exchange or queue, no permission).
    """
    if exchange:
        channel.queue_bind(queue, exchange, routing_key)


@final
class Subscription:
    """A queue a subscriber reads from, and what was made for it: a private queue (when
    :attr:`own_queue`) and the consumer :meth:`consume` started. :meth:`close` undoes them.

    Attributes:
        channel: the channel it was made on.
        queue: the queue's name.
        own_queue: the queue was declared for this subscription (server-named).
        consumer_tag: the consumer :meth:`consume` started (``""``: none).
    """

    __slots__ = ("channel", "closed", "consumer_tag", "own_queue", "queue")

    def __init__(self, channel: Channel, queue: str, *, own_queue: bool) -> None:
        self.channel = channel
        self.queue = queue
        self.own_queue = own_queue
        self.consumer_tag = ""
        self.closed = False

    def consume(self, consumer_tag: str = "", **options: Any) -> str:
        """Consume the queue: :meth:`Channel.basic_consume` with ``options``; returns the tag.

        Raises:
            AMQPError: the channel's refusal (no read permission, an exclusive consumer, ...).
        """
        self.consumer_tag = self.channel.basic_consume(self.queue, consumer_tag, **options)
        return self.consumer_tag

    def close(self) -> None:
        """Cancel the consumer and delete the private queue (with its binding), each if still
        there; closing twice does nothing. A queue already gone, or a channel that refuses now,
        is not an error here: an exclusive private queue goes with its connection anyway."""
        if self.closed:
            return
        self.closed = True
        if self.consumer_tag and self.channel.is_open:
            self.channel.basic_cancel(self.consumer_tag)
        if self.own_queue:
            with contextlib.suppress(AMQPError):
                self.channel.queue_delete(self.queue)

    def __repr__(self) -> str:
        return (f"<Subscription queue={self.queue!r} own_queue={self.own_queue} "
                f"consumer_tag={self.consumer_tag!r}>")


def private_queue(channel: Channel, *, durable: bool = False, exclusive: bool | None = None,
                  auto_delete: bool | None = None,
                  arguments: dict[str, Any] | None = None) -> Subscription:
    """A server-named queue of the subscriber's own, declared as :func:`ensure_endpoint`
    declares one (exclusive and auto-delete unless said otherwise), not bound: deleted by the
    subscription's :meth:`~Subscription.close`.

    Raises:
        AMQPError: the channel's refusal (no configure permission on the generated name).
    """
    name = channel.queue_declare("", **_declare_flags(durable, exclusive, auto_delete),
                                 arguments=arguments).queue
    return Subscription(channel, name, own_queue=True)


def subscribe(channel: Channel, destination: Destination, *, durable: bool | None = None,
              exclusive: bool | None = None, auto_delete: bool | None = None,
              arguments: dict[str, Any] | None = None,
              check_exchange: bool = False, queue: str = "") -> Subscription:
    """What a subscriber to ``destination`` reads from, made as RabbitMQ's plugins make it
    (``ensure_endpoint(source, ...)`` then ``ensure_binding(Queue, parse_routing(Dest))``): to
    an exchange or topic, a private queue bound with the destination's key; to a queue, that
    queue (``/queue/Q`` declared). Nothing is consumed yet: :meth:`Subscription.consume`.

    A binding refused leaves nothing behind: the private queue is deleted before the error
    goes on. ``queue`` names the private queue (:func:`ensure_endpoint`).

    Raises:
        DestinationError: (:attr:`~DestinationErrorKind.INVALID_ENDPOINT`) a destination with
            no queue to read (``/temp-queue/N``, the anonymous ``/queue``).
        AMQPError: the channel's refusal, as the channel words it.
    """
    name = ensure_endpoint(channel, destination, "source", durable=durable,
                           exclusive=exclusive, auto_delete=auto_delete,
                           arguments=arguments, check_exchange=check_exchange, queue=queue)
    if name is None:
        raise DestinationError(DestinationErrorKind.INVALID_ENDPOINT, "/queue",
                               destination.type)
    subscription = Subscription(channel, name, own_queue=destination.type in (
        DestinationType.EXCHANGE, DestinationType.TOPIC))
    exchange, key = destination.routing
    try:
        ensure_binding(channel, name, exchange, key)
    except AMQPError:
        subscription.close()
        raise
    return subscription
