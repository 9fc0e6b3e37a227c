"""Queue and consumer arguments (``x-message-ttl`` ...), with RabbitMQ's checks and texts.

RabbitMQ checks the arguments of a queue when it creates it (``rabbit_amqqueue:declare_args/0``)
and prints the reason with Erlang's ``~p``: ``invalid arg 'x-max-length' for queue 'q' in vhost
'/': {value_negative,-1}``. When a queue or exchange is declared again, the new declaration must
be *equivalent* to the existing one (``rabbit_misc:assert_args_equivalence``): the same flags and
the same value, of the same type class, for each argument RabbitMQ compares.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Final

from .. import _erlang
from ..errors import PreconditionFailed
from ..fieldtypes import field_type
from ._queue_type import QUEUE_TYPES

__all__ = [
    "check_equivalent_arguments", "check_equivalent_field",
    "check_equivalent_queue_arguments", "parse_expiration",
    "validate_consumer_arguments", "validate_queue_arguments",
]

#: RabbitMQ's largest expiry or TTL, in milliseconds (ten years).
MAX_EXPIRY = 315_360_000_000
MAX_PRIORITY = 255


# -- equivalence of a new declaration with an existing one ----------------------------------------

def _show(value: Any) -> str:
    # How RabbitMQ's rabbit_misc:val/1 prints a value in "inequivalent arg" errors.
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


#: rabbit_misc:type_class/1: integers of any width are alike, floats alike, strings alike.
_TYPE_CLASSES = {
    "byte": "int", "short": "int", "signedint": "int", "long": "int", "unsignedbyte": "int",
    "unsignedshort": "int", "unsignedint": "int", "float": "float", "double": "float",
    "binary": "longstr",
}


def _type_class(value: Any) -> str:
    t = field_type(value)
    return _TYPE_CLASSES.get(t, t)


def _described_arg(value: Any) -> str:
    if value is None:
        return "none"
    return f"the value '{_show(value)}' of type '{field_type(value)}'"


def check_equivalent_field(resource: str, key: str, current: Any, received: Any) -> None:
    """Raise PreconditionFailed (406) ``inequivalent arg`` when a declared flag differs.

    Args:
        resource: how RabbitMQ names the queue or exchange, ``"queue 'q' in vhost '/'"``.
        key: the flag (``durable``, ``auto_delete``, ``type``...).
        current, received: its value in the existing and in the new declaration.
    """
    if current != received or type(current) is not type(received):
        raise PreconditionFailed(
            f"inequivalent arg '{key}' for {resource}: "
            f"received '{_show(received)}' but current is '{_show(current)}'")


def check_equivalent_arguments(resource: str, current: Mapping[str, Any],
                               received: Mapping[str, Any], keys: Iterable[str]) -> None:
    """Raise PreconditionFailed (406) ``inequivalent arg`` for the first of ``keys`` whose
    value (or type class: an int is an int whatever its width) differs between the existing
    declaration's arguments and the new one's, or is in one and not the other."""
    for key in keys:
        if key not in current and key not in received:
            continue
        have, want = current.get(key), received.get(key)
        if key in current and key in received:
            if _type_class(have) == _type_class(want) and have == want:
                continue
            check_equivalent_field(resource, key, have, want)
        else:
            raise PreconditionFailed(
                f"inequivalent arg '{key}' for {resource}: "
                f"received {_described_arg(want if key in received else None)} "
                f"but current is {_described_arg(have if key in current else None)}")


def check_equivalent_queue_arguments(resource: str, current: Mapping[str, Any],
                                     received: Mapping[str, Any], keys: Iterable[str]) -> None:
    """:func:`check_equivalent_arguments` over ``keys``, the existing queue's type's
    (:meth:`~._queue_type.QueueType.equivalence_keys`). As RabbitMQ, an explicit
    ``x-queue-type`` of "classic" and no type at all are the same."""
    if {current.get("x-queue-type"), received.get("x-queue-type")} == {None, "classic"}:
        current = {k: v for k, v in current.items() if k != "x-queue-type"}
        received = {k: v for k, v in received.items() if k != "x-queue-type"}
    check_equivalent_arguments(resource, current, received, keys)


# -- validation of new declarations ----------------------------------------------------------------

def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(value: Any, _args: Mapping[str, Any]) -> str | None:
    return None if _is_int(value) else f'"expected integer, got {field_type(value)}"'


def _non_negative(value: Any, args: Mapping[str, Any]) -> str | None:
    return _int(value, args) or (f"{{value_negative,{value}}}" if value < 0 else None)


def _expiry(value: Any) -> str | None:
    if value < 0:
        return f"{{value_negative,{value}}}"
    if value > MAX_EXPIRY:
        return f"{{value_too_large,{value}}}"
    return None


def _message_ttl(value: Any, args: Mapping[str, Any]) -> str | None:
    return _int(value, args) or _expiry(value)


def _expires(value: Any, args: Mapping[str, Any]) -> str | None:
    return _int(value, args) or (f"{{value_zero,{value}}}" if value == 0 else _expiry(value))


def _max_priority(value: Any, args: Mapping[str, Any]) -> str | None:
    return _non_negative(value, args) or (
        f"{{max_value_exceeded,{value}}}" if value > MAX_PRIORITY else None)


def _string_in(choices: tuple[str, ...], error: str) -> Callable[[Any, Mapping[str, Any]], str | None]:
    def check(value: Any, _args: Mapping[str, Any]) -> str | None:
        if not isinstance(value, str):
            return f"{{unacceptable_type,{field_type(value)}}}"
        return None if value in choices else error
    return check


def _longstr(value: Any, _args: Mapping[str, Any]) -> str | None:
    return None if isinstance(value, str) else f"{{unacceptable_type,{field_type(value)}}}"


def _dead_letter_routing_key(value: Any, args: Mapping[str, Any]) -> str | None:
    if not isinstance(value, str):
        return f"{{unacceptable_type,{field_type(value)}}}"
    return None if "x-dead-letter-exchange" in args else "routing_key_but_no_dlx_defined"


def _bool(value: Any, _args: Mapping[str, Any]) -> str | None:
    return None if isinstance(value, bool) else f"{{unacceptable_type,{field_type(value)}}}"


def _positive(value: Any, args: Mapping[str, Any]) -> str | None:
    return _non_negative(value, args) or (f"{{value_zero,{value}}}" if value == 0 else None)


def _max_age(value: Any, _args: Mapping[str, Any]) -> str | None:
    # rabbit_amqqueue:check_max_age_arg/2: a string, "<positive integer><Y|M|D|h|m|s>"
    if not isinstance(value, str):
        return f"{{unacceptable_type,{field_type(value)}}}"
    from ._stream import max_age_ms
    return None if max_age_ms(value) is not None else "invalid_max_age"


def _queue_version(value: Any, _args: Mapping[str, Any]) -> str | None:
    if not _is_int(value):
        return f'"expected integer, got {field_type(value)}"'
    return None if value in (1, 2) else f'"unsupported queue version \'{value}\'"'


def _queue_type(value: Any, _args: Mapping[str, Any]) -> str | None:
    if isinstance(value, str) and value in QUEUE_TYPES:
        return None
    if isinstance(value, str):
        return f'"unsupported queue type \'{value}\'"'
    return f"{{unacceptable_type,{field_type(value)}}}"


#: Every argument RabbitMQ 3.10 validates, in the order it does (rabbit_amqqueue's list).
_VALIDATORS: dict[str, Callable[[Any, Mapping[str, Any]], str | None]] = {
    "x-expires": _expires,
    "x-message-ttl": _message_ttl,
    "x-dead-letter-exchange": _longstr,
    "x-dead-letter-routing-key": _dead_letter_routing_key,
    "x-max-length": _non_negative,
    "x-max-length-bytes": _non_negative,
    "x-max-in-memory-length": _non_negative,
    "x-max-in-memory-bytes": _non_negative,
    "x-max-priority": _max_priority,
    "x-overflow": _string_in(("drop-head", "reject-publish", "reject-publish-dlx"),
                             "invalid_overflow"),
    "x-queue-mode": _string_in(("default", "lazy"), "invalid_queue_mode"),
    "x-queue-version": _queue_version,
    "x-dead-letter-strategy": _string_in(("at-most-once", "at-least-once"),
                                         "invalid_dlx_strategy"),
    "x-single-active-consumer": _bool,
    "x-queue-type": _queue_type,
    "x-quorum-initial-group-size": _positive,
    "x-max-age": _max_age,
    "x-stream-max-segment-size-bytes": _non_negative,
    "x-initial-cluster-size": _positive,
    "x-queue-leader-locator": _string_in(
        ("client-local", "balanced", "random", "least-leaders"), "invalid_queue_locator_arg"),
    "x-delivery-limit": lambda _value, _args: None,  # (no check in 3.10: any value is taken)
    "x-queue-master-locator": lambda _value, _args: None,  # (3.10 crashes on a bad one: 541)
}

#: The arguments each queue type takes (rabbit_queue_type capabilities, RabbitMQ 3.10: its
#: :class:`~._queue_type.QueueType`'s): the others of :data:`_VALIDATORS` are refused ("of
#: queue type rabbit_quorum_queue"); arguments RabbitMQ does not know at all (``x-foo``) are
#: kept and mean nothing.
QUEUE_TYPE_ARGUMENTS: dict[str, frozenset[str]] = {
    name: queue_type.queue_arguments for name, queue_type in QUEUE_TYPES.items()}


def validate_queue_arguments(resource: str, arguments: Mapping[str, Any], *,
                             durable: bool = False, exclusive: bool = False,
                             auto_delete: bool = False) -> None:
    """Raise PreconditionFailed (406) for an argument RabbitMQ would refuse at declare time,
    and for the queue types embroker does not implement. As RabbitMQ 3.10: the values of the
    arguments the queue's type takes first, then arguments of other types, then the queue's
    properties.

    Args:
        resource: how RabbitMQ names the queue, ``"queue 'q' in vhost '/'"``.
        arguments: the queue.declare arguments.
        durable, exclusive, auto_delete: the declared properties (quorum and stream queues
            must be durable, and may be neither exclusive nor auto-delete).
    """
    dlx = arguments.get("x-dead-letter-exchange")
    if dlx is not None and not isinstance(dlx, str):
        raise PreconditionFailed(
            f"invalid type '{field_type(dlx)}' for arg 'x-dead-letter-exchange' in {resource}")
    queue_type = arguments.get("x-queue-type", "classic")
    takes = QUEUE_TYPE_ARGUMENTS.get(queue_type, QUEUE_TYPE_ARGUMENTS["classic"])
    for key, check in _VALIDATORS.items():
        if key in arguments and key in takes:
            error = check(arguments[key], arguments)
            if error is not None:
                raise PreconditionFailed(f"invalid arg '{key}' for {resource}: {error}")
    kind = QUEUE_TYPES.get(queue_type)
    if kind is None:
        return  # (the x-queue-type check above refused it)
    for key in arguments:
        if key in _VALIDATORS and key not in takes:
            raise PreconditionFailed(f"invalid arg '{key}' for {resource} of queue type "
                                     f"{kind.module}")
    if kind.is_compatible(durable=durable, exclusive=exclusive, auto_delete=auto_delete):
        return
    for refused, prop in ((auto_delete, "auto-delete"), (exclusive, "exclusive-owner"),
                          (not durable, "non-durable")):
        if refused:
            raise PreconditionFailed(f"invalid property '{prop}' for {resource}")


#: ``rabbit_amqqueue:consume_args/0`` (v3.10.8): the basic.consume arguments with a check of
#: their type and value (``x-stream-offset``'s is the stream's own: the offset's parse).
_CONSUME_ARGS: Final[dict[str, Callable[[Any, Mapping[str, Any]], str | None]]] = {
    "x-priority": _int, "x-cancel-on-ha-failover": _bool}


def validate_consumer_arguments(resource: str, arguments: Mapping[str, Any],
                                taken: Collection[str] = ("x-priority",)) -> None:
    """Raise PreconditionFailed (406) for a basic.consume argument RabbitMQ refuses for its
    type or value, of those ``taken`` (the queue type's consumer arguments: ``x-priority``
    must be an integer, ``x-cancel-on-ha-failover`` a boolean;
    ``rabbit_amqqueue:check_arguments_type_and_value/3``); an argument of another type is the
    type's refusal (:meth:`~._queue_type.QueueType.check_consume`)."""
    for key, check in _CONSUME_ARGS.items():
        if key in arguments and key in taken:
            error = check(arguments[key], arguments)
            if error is not None:
                raise PreconditionFailed(f"invalid arg '{key}' for {resource}: {error}")


def parse_expiration(value: Any) -> float:
    """The ``expiration`` property (a string of milliseconds) in seconds.

    Raises:
        PreconditionFailed: (406) not a non-negative integer, with RabbitMQ's text
            (``invalid expiration 'soon': no_integer``), its Erlang term printed as RabbitMQ's
            ``~p`` prints it (long ones broken over two lines).
    """
    text = value if isinstance(value, str) else str(value)
    prefix = f"invalid expiration '{text}': "
    column = len(prefix.encode("utf-8", "surrogateescape"))
    # Erlang's string:to_integer over the bytes: an optional sign and digits, then the rest.
    match = re.match(r"[+-]?[0-9]+", text)
    if match is None:
        reason = "no_integer"
    else:
        number = int(match.group())
        rest = text[match.end():]
        if rest:
            reason = _erlang.pair("leftover_string",
                                  _erlang.string(rest.encode("utf-8", "surrogateescape")), column)
        elif number < 0:
            reason = _erlang.pair("value_negative", str(number), column)
        elif number > MAX_EXPIRY:
            reason = _erlang.pair("value_too_large", str(number), column)
        else:
            return number / 1000
    raise PreconditionFailed(prefix + reason)
