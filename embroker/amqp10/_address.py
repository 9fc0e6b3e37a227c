"""Node addresses: where a 1.0 link sends to or takes from, in RabbitMQ's forms.

RabbitMQ 4's v2 addresses (names percent-encoded, RFC 3986)::

    /queues/Q         a queue (as a target: the default exchange with routing key Q)
    /exchanges/X/K    an exchange with routing key K (target only)
    /exchanges/X      an exchange; each message's subject is its routing key (target only)
    (null target)     each message says where it goes in its ``to`` property (one of the above)

and the 3.x plugin's forms, taken as aliases: ``/queue/Q`` and ``/amq/queue/Q`` for
``/queues/Q``, ``/exchange/X/K`` and ``/exchange/X`` for ``/exchanges/...``, ``/topic/K`` for
``/exchanges/amq.topic/K``. As a *source*, ``/exchange/X/K`` and ``/topic/K`` consume from a
private queue bound with K, which goes away with the link. Queues and exchanges must exist (v2
semantics): embroker never declares a queue because a link named it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, unquote

from ._errors import LinkError

__all__ = ["Node", "parse_address", "queue_address"]

_V1_PREFIXES: Final = ("/queue/", "/amq/queue/")


@dataclass(frozen=True, slots=True)
class Node:
    """What an address names.

    Attributes:
        kind: ``"queue"`` or ``"exchange"``.
        name: the queue or exchange name.
        key: the routing key for an exchange (``None``: each message's subject).
    """

    kind: str
    name: str
    key: str | None = None


def _segment(text: str, address: str) -> str:
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise LinkError("amqp:invalid-field",
                        f"address '{address}' is not valid percent-encoded UTF-8") from None


def parse_address(address: object) -> Node:
    """The node an address names.

    Raises:
        LinkError: ``amqp:invalid-field``, an address in none of the known forms.
    """
    if not isinstance(address, str):
        raise LinkError("amqp:invalid-field", f"address {address!r} is not a string")
    if address.startswith("/queues/"):
        rest = address[len("/queues/"):]
        if rest and "/" not in rest:
            return Node("queue", _segment(rest, address))
    elif address.startswith("/exchanges/"):
        parts = address[len("/exchanges/"):].split("/")
        if len(parts) == 1 and parts[0]:
            return Node("exchange", _segment(parts[0], address))
        if len(parts) == 2 and parts[0]:
            return Node("exchange", _segment(parts[0], address), _segment(parts[1], address))
    for prefix in _V1_PREFIXES:
        if address.startswith(prefix) and len(address) > len(prefix):
            return Node("queue", address[len(prefix):])
    if address.startswith("/exchange/"):
        name, _, key = address[len("/exchange/"):].partition("/")
        if name:
            return Node("exchange", name, key if _ else None)
    if address.startswith("/topic/") and len(address) > len("/topic/"):
        return Node("exchange", "amq.topic", address[len("/topic/"):])
    raise LinkError("amqp:invalid-field",
                    f"address '{address}' is not /queues/Q, /exchanges/X/K or /exchanges/X "
                    "(or a 3.x form: /queue/Q, /amq/queue/Q, /exchange/X/K, /topic/K)")


def queue_address(name: str) -> str:
    """The v2 address of a queue: ``/queues/`` and its percent-encoded name."""
    return "/queues/" + quote(name, safe="")
