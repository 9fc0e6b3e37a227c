"""The AMQP 0-9-1 method table, as data.

Every class and method of AMQP 0-9-1 as RabbitMQ implements it (the specification plus RabbitMQ's
extensions: ``exchange.bind``/``unbind``, ``basic.nack``, ``confirm.*``, ``connection.blocked``/
``unblocked`` and ``connection.update-secret``/``update-secret-ok``), one row per method: class id,
method id, name, arguments (spec name, wire type, default), whether the method is synchronous and
which methods answer it, and whether it carries content.

Nothing here encodes or decodes anything. ``_codegen.py`` turns this table into ``_methods.py``
(slotted, typed method classes with specialised encoders and decoders, the way RabbitMQ and pamqp
generate their framing code), and a test checks that the generated module is up to date.

Names: argument names are the spec's, in snake_case (``routing-key`` -> ``routing_key``,
``no-wait`` -> ``no_wait``, ``reserved-1`` -> ``reserved_1``; ``global`` -> ``global_`` because
``global`` is a Python keyword). Where RabbitMQ's own spec file names a field differently from the
0-9-1 specification (``nowait`` in ``confirm.select``, ``ticket`` for the reserved shorts), the
0-9-1 name wins, so that every method spells "no wait" the same way.

Wire types (section 4.2.5 of the specification): ``bit`` (packed, low bit first, into octets),
``octet`` (uint8), ``short`` (uint16), ``long`` (uint32), ``longlong`` (uint64), ``shortstr``
(uint8 length + UTF-8), ``longstr`` (uint32 length + bytes), ``table`` (field table),
``timestamp`` (uint64 seconds).
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "CLASSES",
    "METHODS",
    "WIRE_TYPES",
    "ArgumentSpec",
    "MethodSpec",
    "WireType",
]

WireType = Literal["bit", "octet", "short", "long", "longlong", "shortstr", "longstr", "table",
                   "timestamp"]

#: Every wire type a method argument or a property can have.
WIRE_TYPES: Final = ("bit", "octet", "short", "long", "longlong", "shortstr", "longstr", "table",
                     "timestamp")

#: Class ids and names (section 1.4 of the reference; 85 ``confirm`` is RabbitMQ's extension).
CLASSES: Final = {10: "connection", 20: "channel", 40: "exchange", 50: "queue", 60: "basic",
                  85: "confirm", 90: "tx"}


@dataclass(frozen=True)
class ArgumentSpec:
    """One method argument: its spec name, wire type and default value.

    The default is what a method class uses when the argument is not given: the spec's default
    where it names one (``exchange.declare`` type ``direct``, ``connection.open`` virtual host
    ``/``, ``basic.reject`` requeue true...), else the zero of the type (``0``, ``""``, ``False``,
    an empty table).
    """

    name: str
    type: WireType
    default: int | str | bool | None = None

    @property
    def attribute(self) -> str:
        """The Python attribute name: ``routing-key`` -> ``routing_key``, ``global`` -> ``global_``."""
        name = self.name.replace("-", "_")
        return name + "_" if keyword.iskeyword(name) else name

    @property
    def default_value(self) -> int | str | bool | None:
        """The default, with the zero of the type filled in (``None`` stands for an empty table)."""
        if self.default is not None:
            return self.default
        if self.type == "bit":
            return False
        if self.type in ("shortstr", "longstr"):
            return ""
        return None if self.type == "table" else 0


@dataclass(frozen=True)
class MethodSpec:
    """One method: where it lives, what it carries, and who answers it."""

    class_id: int
    method_id: int
    #: Dotted spec name, ``"basic.publish"``.
    name: str
    #: One line from the reference.
    doc: str
    arguments: tuple[ArgumentSpec, ...]
    #: True when the sender waits for one of ``replies`` (``synchronous="1"`` in the spec).
    synchronous: bool = False
    #: Dotted names of the methods that answer this one, in spec order.
    replies: tuple[str, ...] = ()
    #: True for the methods that are followed by a content header and bodies.
    content: bool = False

    @property
    def class_name(self) -> str:
        return self.name.split(".")[0]

    @property
    def method_name(self) -> str:
        return self.name.split(".")[1]

    @property
    def python_name(self) -> str:
        """CapWords class name: ``basic.get-ok`` -> ``BasicGetOk``."""
        return "".join(part.capitalize() for part in self.name.replace(".", "-").split("-"))

    @property
    def index(self) -> int:
        """``class_id << 16 | method_id``: the first four bytes of the method payload."""
        return self.class_id << 16 | self.method_id


def _a(name: str, type_: WireType, default: int | str | bool | None = None) -> ArgumentSpec:
    return ArgumentSpec(name, type_, default)


def _m(class_id: int, method_id: int, name: str, doc: str, *arguments: ArgumentSpec,
       replies: tuple[str, ...] = (), content: bool = False) -> MethodSpec:
    return MethodSpec(class_id, method_id, name, doc, arguments, synchronous=bool(replies),
                      replies=replies, content=content)


_RESERVED_SHORT = _a("reserved-1", "short")   # the access ticket of AMQP 0-8, always 0

#: Every method, in class and method id order.
METHODS: Final[tuple[MethodSpec, ...]] = (
    # connection (10): work with socket connections
    _m(10, 10, "connection.start", "Start connection negotiation.",
       _a("version-major", "octet", 0), _a("version-minor", "octet", 9),
       _a("server-properties", "table"), _a("mechanisms", "longstr", "PLAIN"),
       _a("locales", "longstr", "en_US"),
       replies=("connection.start-ok",)),
    _m(10, 11, "connection.start-ok", "Select security mechanism and locale.",
       _a("client-properties", "table"), _a("mechanism", "shortstr", "PLAIN"),
       _a("response", "longstr"), _a("locale", "shortstr", "en_US")),
    _m(10, 20, "connection.secure", "Security mechanism challenge.",
       _a("challenge", "longstr"),
       replies=("connection.secure-ok",)),
    _m(10, 21, "connection.secure-ok", "Security mechanism response.",
       _a("response", "longstr")),
    _m(10, 30, "connection.tune", "Propose connection tuning parameters.",
       _a("channel-max", "short"), _a("frame-max", "long"), _a("heartbeat", "short"),
       replies=("connection.tune-ok",)),
    _m(10, 31, "connection.tune-ok", "Negotiate connection tuning parameters.",
       _a("channel-max", "short"), _a("frame-max", "long"), _a("heartbeat", "short")),
    _m(10, 40, "connection.open", "Open connection to virtual host.",
       _a("virtual-host", "shortstr", "/"), _a("reserved-1", "shortstr"),
       _a("reserved-2", "bit"),
       replies=("connection.open-ok",)),
    _m(10, 41, "connection.open-ok", "Signal that connection is ready.",
       _a("reserved-1", "shortstr")),
    _m(10, 50, "connection.close", "Request a connection close.",
       _a("reply-code", "short"), _a("reply-text", "shortstr"), _a("class-id", "short"),
       _a("method-id", "short"),
       replies=("connection.close-ok",)),
    _m(10, 51, "connection.close-ok", "Confirm a connection close."),
    _m(10, 60, "connection.blocked", "Indicate that connection is blocked (RabbitMQ).",
       _a("reason", "shortstr")),
    _m(10, 61, "connection.unblocked", "Indicate that connection is unblocked (RabbitMQ)."),
    _m(10, 70, "connection.update-secret", "Update secret (RabbitMQ).",
       _a("new-secret", "longstr"), _a("reason", "shortstr"),
       replies=("connection.update-secret-ok",)),
    _m(10, 71, "connection.update-secret-ok", "Update secret response (RabbitMQ)."),
    # channel (20): work with channels
    _m(20, 10, "channel.open", "Open a channel for use.",
       _a("reserved-1", "shortstr"),
       replies=("channel.open-ok",)),
    _m(20, 11, "channel.open-ok", "Signal that the channel is ready.",
       _a("reserved-1", "longstr")),
    _m(20, 20, "channel.flow", "Enable/disable flow from peer.",
       _a("active", "bit"),
       replies=("channel.flow-ok",)),
    _m(20, 21, "channel.flow-ok", "Confirm a flow method.",
       _a("active", "bit")),
    _m(20, 40, "channel.close", "Request a channel close.",
       _a("reply-code", "short"), _a("reply-text", "shortstr"), _a("class-id", "short"),
       _a("method-id", "short"),
       replies=("channel.close-ok",)),
    _m(20, 41, "channel.close-ok", "Confirm a channel close."),
    # exchange (40): work with exchanges
    _m(40, 10, "exchange.declare", "Verify exchange exists, create if needed.",
       _RESERVED_SHORT, _a("exchange", "shortstr"), _a("type", "shortstr", "direct"),
       _a("passive", "bit"), _a("durable", "bit"), _a("auto-delete", "bit"),
       _a("internal", "bit"), _a("no-wait", "bit"), _a("arguments", "table"),
       replies=("exchange.declare-ok",)),
    _m(40, 11, "exchange.declare-ok", "Confirm exchange declaration."),
    _m(40, 20, "exchange.delete", "Delete an exchange.",
       _RESERVED_SHORT, _a("exchange", "shortstr"), _a("if-unused", "bit"),
       _a("no-wait", "bit"),
       replies=("exchange.delete-ok",)),
    _m(40, 21, "exchange.delete-ok", "Confirm deletion of an exchange."),
    _m(40, 30, "exchange.bind", "Bind exchange to an exchange (RabbitMQ).",
       _RESERVED_SHORT, _a("destination", "shortstr"), _a("source", "shortstr"),
       _a("routing-key", "shortstr"), _a("no-wait", "bit"), _a("arguments", "table"),
       replies=("exchange.bind-ok",)),
    _m(40, 31, "exchange.bind-ok", "Confirm bind successful (RabbitMQ)."),
    _m(40, 40, "exchange.unbind", "Unbind an exchange from an exchange (RabbitMQ).",
       _RESERVED_SHORT, _a("destination", "shortstr"), _a("source", "shortstr"),
       _a("routing-key", "shortstr"), _a("no-wait", "bit"), _a("arguments", "table"),
       replies=("exchange.unbind-ok",)),
    # 51, not 41: RabbitMQ's spec file numbers it so.
    _m(40, 51, "exchange.unbind-ok", "Confirm unbind successful (RabbitMQ)."),
    # queue (50): work with queues
    _m(50, 10, "queue.declare", "Declare queue, create if needed.",
       _RESERVED_SHORT, _a("queue", "shortstr"), _a("passive", "bit"), _a("durable", "bit"),
       _a("exclusive", "bit"), _a("auto-delete", "bit"), _a("no-wait", "bit"),
       _a("arguments", "table"),
       replies=("queue.declare-ok",)),
    _m(50, 11, "queue.declare-ok", "Confirms a queue definition.",
       _a("queue", "shortstr"), _a("message-count", "long"), _a("consumer-count", "long")),
    _m(50, 20, "queue.bind", "Bind queue to an exchange.",
       _RESERVED_SHORT, _a("queue", "shortstr"), _a("exchange", "shortstr"),
       _a("routing-key", "shortstr"), _a("no-wait", "bit"), _a("arguments", "table"),
       replies=("queue.bind-ok",)),
    _m(50, 21, "queue.bind-ok", "Confirm bind successful."),
    _m(50, 30, "queue.purge", "Purge a queue.",
       _RESERVED_SHORT, _a("queue", "shortstr"), _a("no-wait", "bit"),
       replies=("queue.purge-ok",)),
    _m(50, 31, "queue.purge-ok", "Confirms a queue purge.",
       _a("message-count", "long")),
    _m(50, 40, "queue.delete", "Delete a queue.",
       _RESERVED_SHORT, _a("queue", "shortstr"), _a("if-unused", "bit"),
       _a("if-empty", "bit"), _a("no-wait", "bit"),
       replies=("queue.delete-ok",)),
    _m(50, 41, "queue.delete-ok", "Confirm deletion of a queue.",
       _a("message-count", "long")),
    _m(50, 50, "queue.unbind", "Unbind a queue from an exchange.",
       _RESERVED_SHORT, _a("queue", "shortstr"), _a("exchange", "shortstr"),
       _a("routing-key", "shortstr"), _a("arguments", "table"),
       replies=("queue.unbind-ok",)),
    _m(50, 51, "queue.unbind-ok", "Confirm unbind successful."),
    # basic (60): work with basic content
    _m(60, 10, "basic.qos", "Specify quality of service.",
       _a("prefetch-size", "long"), _a("prefetch-count", "short"), _a("global", "bit"),
       replies=("basic.qos-ok",)),
    _m(60, 11, "basic.qos-ok", "Confirm the requested qos."),
    _m(60, 20, "basic.consume", "Start a queue consumer.",
       _RESERVED_SHORT, _a("queue", "shortstr"), _a("consumer-tag", "shortstr"),
       _a("no-local", "bit"), _a("no-ack", "bit"), _a("exclusive", "bit"), _a("no-wait", "bit"),
       _a("arguments", "table"),
       replies=("basic.consume-ok",)),
    _m(60, 21, "basic.consume-ok", "Confirm a new consumer.",
       _a("consumer-tag", "shortstr")),
    _m(60, 30, "basic.cancel", "End a queue consumer.",
       _a("consumer-tag", "shortstr"), _a("no-wait", "bit"),
       replies=("basic.cancel-ok",)),
    _m(60, 31, "basic.cancel-ok", "Confirm a cancelled consumer.",
       _a("consumer-tag", "shortstr")),
    _m(60, 40, "basic.publish", "Publish a message.",
       _RESERVED_SHORT, _a("exchange", "shortstr"), _a("routing-key", "shortstr"),
       _a("mandatory", "bit"), _a("immediate", "bit"),
       content=True),
    _m(60, 50, "basic.return", "Return a failed message.",
       _a("reply-code", "short"), _a("reply-text", "shortstr"), _a("exchange", "shortstr"),
       _a("routing-key", "shortstr"),
       content=True),
    _m(60, 60, "basic.deliver", "Notify the client of a consumer message.",
       _a("consumer-tag", "shortstr"), _a("delivery-tag", "longlong"), _a("redelivered", "bit"),
       _a("exchange", "shortstr"), _a("routing-key", "shortstr"),
       content=True),
    _m(60, 70, "basic.get", "Direct access to a queue.",
       _RESERVED_SHORT, _a("queue", "shortstr"), _a("no-ack", "bit"),
       replies=("basic.get-ok", "basic.get-empty")),
    _m(60, 71, "basic.get-ok", "Provide client with a message.",
       _a("delivery-tag", "longlong"), _a("redelivered", "bit"), _a("exchange", "shortstr"),
       _a("routing-key", "shortstr"), _a("message-count", "long"),
       content=True),
    _m(60, 72, "basic.get-empty", "Indicate no messages available.",
       _a("reserved-1", "shortstr")),
    _m(60, 80, "basic.ack", "Acknowledge one or more messages.",
       _a("delivery-tag", "longlong"), _a("multiple", "bit")),
    _m(60, 90, "basic.reject", "Reject an incoming message.",
       _a("delivery-tag", "longlong"), _a("requeue", "bit", True)),
    _m(60, 100, "basic.recover-async", "Redeliver unacknowledged messages (deprecated).",
       _a("requeue", "bit")),
    _m(60, 110, "basic.recover", "Redeliver unacknowledged messages.",
       _a("requeue", "bit"),
       replies=("basic.recover-ok",)),
    _m(60, 111, "basic.recover-ok", "Confirm recovery."),
    _m(60, 120, "basic.nack", "Reject one or more incoming messages (RabbitMQ).",
       _a("delivery-tag", "longlong"), _a("multiple", "bit"), _a("requeue", "bit", True)),
    # confirm (85): publisher confirms (RabbitMQ)
    _m(85, 10, "confirm.select", "Put the channel in confirm mode (RabbitMQ).",
       _a("no-wait", "bit"),
       replies=("confirm.select-ok",)),
    _m(85, 11, "confirm.select-ok", "Acknowledge confirm mode (RabbitMQ)."),
    # tx (90): work with transactions
    _m(90, 10, "tx.select", "Select standard transaction mode.",
       replies=("tx.select-ok",)),
    _m(90, 11, "tx.select-ok", "Confirm transaction mode."),
    _m(90, 20, "tx.commit", "Commit the current transaction.",
       replies=("tx.commit-ok",)),
    _m(90, 21, "tx.commit-ok", "Confirm a successful commit."),
    _m(90, 30, "tx.rollback", "Abandon the current transaction.",
       replies=("tx.rollback-ok",)),
    _m(90, 31, "tx.rollback-ok", "Confirm successful rollback."),
)
