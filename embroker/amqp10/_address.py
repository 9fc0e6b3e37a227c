"""Node addresses: where a 1.0 link sends to or takes from, in RabbitMQ's two sets of forms.

RabbitMQ 4's **v2** addresses (``rabbit_amqp_session``: ``ensure_source``, ``ensure_target_v2``,
``parse_target_v2_string0``), names percent-encoded (RFC 3986)::

    /queues/Q         a queue that must exist (as a target: the default exchange, key Q)
    /exchanges/X/K    an existing exchange with routing key K (target only)
    /exchanges/X      an existing exchange; each message's subject is its key (target only)
    (null target)     each message says where it goes in its ``to`` property (v2 forms)

The default exchange has no ``/exchanges/`` name (``""`` and ``amq.default`` are refused).

RabbitMQ 3.10's AMQP 1.0 plugin's **v1** addresses (``rabbit_routing_util:parse_endpoint/2``
and ``ensure_endpoint/5``, used by ``rabbit_amqp1_0_incoming_link`` and ``_outgoing_link``),
where ``%2F`` in a name stands for ``/`` and nothing else is decoded::

    Q                 (no ``/`` at all) as ``/queue/Q``
    /queue/Q          queue Q, **declared** when the link attaches (queue.declare: durable when
                      the terminus durability is configuration or unsettled-state, else not;
                      never exclusive or auto-delete; refused when Q exists otherwise)
    /queue            (target only) the default exchange; each message's subject is its key
    /amq/queue/Q      queue Q, which must exist
    /reply-queue/Q    as /amq/queue/Q (everything after the prefix is the name, ``%2F`` decoded)
    /exchange/X/K     an existing exchange X with key K; as a source, a private queue bound to
                      X with K (for ``/exchange/X``, the key ``""``)
    /exchange/X       as a target, each message's subject is its key
    /topic/K          ``/exchange/amq.topic/K``

The v1 grammar is the adapter kit's (:func:`embroker.kit.parse_destination`, the one STOMP
reads); which forms a link takes, what it makes of them and the refusals' texts are this module's.
Both sets are served together, as RabbitMQ 4 does while its ``amqp_address_v1`` deprecated
feature is permitted; where 3.10 and 4 differ on a v1 form, the v1 rules are 3.10's, except that
a refused address refuses the link (4's behaviour) instead of ending the session (3.10's).
Refusals carry RabbitMQ's texts (``Attach rejected: {invalid_destination,queue,"/a/b"}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import quote, unquote

from ..amqp10_common._errors import LinkError
from ..kit import DestinationError, DestinationType, parse_destination

__all__ = ["Node", "parse_address", "queue_address"]

Role = Literal["source", "target"]


@dataclass(frozen=True, slots=True)
class Node:
    """What an address names.

    Attributes:
        kind: ``"queue"`` or ``"exchange"``.
        name: the queue or exchange name (``""``, the default exchange, for the v1 ``/queue``
            target).
        key: the routing key for an exchange (``None``: each message's subject).
        declare: a v1 ``/queue/Q`` (or bare ``Q``) node: the queue is declared at attach.
        version: 2 for RabbitMQ 4's forms, 1 for the 3.x plugin's.
    """

    kind: str
    name: str
    key: str | None = None
    declare: bool = False
    version: int = 2


_INVALID: Final = "amqp:invalid-field"


def _attach_rejected(reason: str) -> LinkError:
    return LinkError(_INVALID, f"Attach rejected: {reason}")


def _erlang_string(text: str) -> str:
    """How Erlang's ``~p`` prints a (char list) string: ``"..."``, or ``[]`` when empty."""
    if not text:
        return "[]"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _erlang_binary(text: str) -> str:
    return "<<" + _erlang_string(text) + ">>" if text else "<<>>"


def _decode_v2(text: str, address: str) -> str:
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise _attach_rejected(f"{{bad_address,{_erlang_binary(address)}}}") from None


def _parse_v2(address: str, role: Role) -> Node:
    if address.startswith("/queues/"):
        name = _decode_v2(address[len("/queues/"):], address)
        if name:
            return Node("queue", name)
    else:  # /exchanges/, as a target (a source is a queue, as RabbitMQ 4's ensure_source)
        parts = address[len("/exchanges/"):].split("/")
        if len(parts) <= 2 and parts[0] not in ("", "amq.default"):
            name = _decode_v2(parts[0], address)
            return Node("exchange", name, _decode_v2(parts[1], address) if len(parts) == 2
                        else None)
    reason = "bad_address_string" if role == "target" else "bad_address"
    raise _attach_rejected(f"{{{reason},{_erlang_binary(address)}}}")


def _parse_v1(address: str, role: Role) -> Node:
    # The kit reads the grammar (rabbit_routing_util:parse_endpoint/2; the anonymous /queue
    # for a target only); what a 1.0 link makes of each form, and how a refusal is worded, is
    # the plugin's.
    try:
        destination = parse_destination(address, allow_anonymous_queue=role == "target")
    except DestinationError as exc:
        if exc.invalid and exc.type is not None:
            raise _attach_rejected(f"{{invalid_destination,{exc.type.value},"
                                   f"{_erlang_string(exc.rest)}}}") from None
        raise _attach_rejected(f"{{unknown_destination,{_erlang_string(address)}}}") from None
    kind, name = destination.type, destination.name
    if kind is DestinationType.EXCHANGE:
        key = destination.key
        return Node("exchange", name or "", "" if key is None and role == "source" else key,
                    version=1)
    if kind is DestinationType.TOPIC:
        return Node("exchange", "amq.topic", name, version=1)
    if kind is DestinationType.QUEUE:
        if name is None:  # the anonymous /queue: the subject is the queue's name
            return Node("exchange", "", None, version=1)
        return Node("queue", name, declare=True, version=1)
    if kind is DestinationType.TEMP_QUEUE:
        raise LinkError("amqp:not-implemented",
                        f"temporary queue destinations ('{address}') are not supported")
    return Node("queue", name or "", version=1)  # /amq/queue/Q, /reply-queue/Q


def parse_address(address: object, role: Role = "target", *, v1: bool = True) -> Node:
    """The node an address names, for a link's ``source`` or ``target``; ``v1=False`` refuses
    the v1 forms, as RabbitMQ 4 does when its ``amqp_address_v1`` deprecated feature is denied.

    Raises:
        LinkError: ``amqp:invalid-field`` for an address in none of the forms (RabbitMQ's
            ``Attach rejected: ...`` texts) or a v1 address when they are off;
            ``amqp:not-implemented`` for a 3.x temp-queue.

    >>> parse_address("/queues/a%2Fb")
    Node(kind='queue', name='a/b', key=None, declare=False, version=2)
    >>> parse_address("/queue/jobs", "source")
    Node(kind='queue', name='jobs', key=None, declare=True, version=1)
    >>> parse_address("/exchange/amq.topic", "source").key
    ''
    >>> try:
    ...     parse_address("/queue/a/b")
    ... except LinkError as refused:
    ...     print(refused)
    amqp:invalid-field: Attach rejected: {invalid_destination,queue,"/a/b"}
    """
    if not isinstance(address, str):
        raise _attach_rejected("{address_not_utf8_string," + repr(address) + "}")
    if address.startswith("/queues/") or (role == "target" and
                                          address.startswith("/exchanges/")):
        return _parse_v2(address, role)
    if not v1:  # rabbit_amqp_session:ensure_source/ensure_target, address_v1_permitted()
        raise _attach_rejected(f"{{amqp_address_v1_not_permitted,{_erlang_binary(address)}}}")
    return _parse_v1(address, role)


def queue_address(name: str) -> str:
    """The v2 address of a queue: ``/queues/`` and its percent-encoded name."""
    return "/queues/" + quote(name, safe="")
