"""The composite types of AMQP 1.0 as data: performatives, SASL frames, termini, outcomes...

Each composite is a described list (Part 1 section 1.4). Its class lists its fields in order in
``FIELDS`` (the spec's name with ``-`` as ``_``, the wire type, whether it is mandatory, whether
it is ``multiple``, the default); one generic decoder and one generic encoder work from those
tables. Decoding checks every field's type and turns a wrong one into ``amqp:decode-error`` and
a missing mandatory one into ``amqp:invalid-field``; trailing fields left out take their
defaults, as the spec allows (proton trims trailing nulls, RabbitMQ pads them). Encoding leaves
out trailing fields that are null or at their default.

``COMPOSITES`` maps both descriptor forms (the ulong code and the symbolic name) to the class.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, ClassVar, Final, NamedTuple

from ._errors import ConnectionError10, DecodeError
from ._types import (
    Array,
    Described,
    Symbol,
    UByte,
    UInt,
    ULong,
    UShort,
    _w_binary,
    _w_bool,
    _w_string,
    _w_symbol,
    _w_timestamp,
    _w_ubyte,
    _w_uint,
    _w_ulong,
    _w_ushort,
    encode_value,
    set_describer,
)

__all__ = [
    "COMPOSITES", "Accepted", "Attach", "Begin", "Close", "Coordinator", "Declare", "Declared",
    "DeleteOnClose", "DeleteOnNoLinks", "DeleteOnNoLinksOrMessages", "DeleteOnNoMessages",
    "Detach", "Discharge", "Disposition", "End", "Error", "Flow", "Header", "Modified", "Open",
    "Properties", "Received", "Rejected", "Released", "SaslChallenge", "SaslInit",
    "SaslMechanisms", "SaslOutcome", "SaslResponse", "Source", "Target", "TransactionalState",
    "Transfer",
]


class Field(NamedTuple):
    name: str
    wire: str
    mandatory: bool = False
    multiple: bool = False
    default: Any = None


class Composite:
    """A described list with named fields (the base of every class here)."""

    __slots__ = ()
    CODE: ClassVar[int]
    NAME: ClassVar[str]
    FIELDS: ClassVar[tuple[Field, ...]]

    @classmethod
    def from_list(cls, items: list[Any]) -> Any:
        """Build from the decoded list, checking types (see the module docstring).

        Raises:
            DecodeError: a field of the wrong type.
            ConnectionError10: ``amqp:invalid-field``, a mandatory field is missing.
        """
        plan = _PLANS.get(cls) or _plan(cls)
        values = []
        count = len(items)
        if count < len(plan):
            # Fields left out take their defaults (the dataclass's), unless mandatory.
            for f, *_rest in plan[count:_MANDATORY[cls]]:
                if f.mandatory:
                    raise ConnectionError10(
                        "amqp:invalid-field",
                        f"{cls.NAME}: mandatory field '{f.name.replace('_', '-')}' is missing")
            plan = plan[:count]
        for value, (f, check, mandatory, multiple, default) in zip(items, plan, strict=False):
            if value is None:
                if mandatory:
                    raise ConnectionError10(
                        "amqp:invalid-field",
                        f"{cls.NAME}: mandatory field '{f.name.replace('_', '-')}' is missing")
                values.append(default)
            elif multiple:
                values.append(tuple(check(cls, f, v) for v in value)
                              if isinstance(value, list) else (check(cls, f, value),))
            else:
                values.append(check(cls, f, value))
        return cls(*values)

    def encode_into(self, out: bytearray) -> None:
        """Append the described list to ``out``."""
        out += _DESCRIPTORS[self.CODE]
        plan = _PLANS.get(type(self)) or _plan(type(self))
        values = [getattr(self, f.name) for f, *_rest in plan]
        last = len(values)
        while last:
            value = values[last - 1]
            f, _check, mandatory, _multiple, default = plan[last - 1]
            if value is None or (not mandatory and value == default):
                last -= 1
            else:
                break
        if not last:
            out.append(0x45)
            return
        body = bytearray()
        for i in range(last):
            value = values[i]
            if value is None:
                body.append(0x40)
                continue
            f = plan[i][0]
            if plan[i][3]:  # multiple
                if len(value) == 1:
                    _WRITE[f.wire](value[0], body)
                else:
                    encode_value(Array(None, [_symbolize(f, v) for v in value]), body)
            else:
                _WRITE[f.wire](value, body)
        if len(body) + 1 < 256 and last < 256:
            out += bytes((0xC0, len(body) + 1, last))
        else:
            out += b"\xd0" + (len(body) + 4).to_bytes(4, "big") + last.to_bytes(4, "big")
        out += body

    def encode(self) -> bytes:
        out = bytearray()
        self.encode_into(out)
        return bytes(out)


_Plan = tuple[tuple[Field, Any, bool, bool, Any], ...]
#: Each class's fields with their check function, looked up once.
_PLANS: dict[type[Composite], _Plan] = {}


#: How many leading fields of each class hold all its mandatory ones.
_MANDATORY: dict[type[Composite], int] = {}


def _plan(cls: type[Composite]) -> _Plan:
    plan = tuple((f, _CHECKS[f.wire], f.mandatory, f.multiple, f.default) for f in cls.FIELDS)
    _MANDATORY[cls] = max((i + 1 for i, f in enumerate(cls.FIELDS) if f.mandatory), default=0)
    _PLANS[cls] = plan
    return plan


def _symbolize(f: Field, value: Any) -> Any:
    return Symbol(value) if f.wire == "symbol" else value


def composite_for(descriptor: Any) -> type[Composite] | None:
    """The composite class a descriptor names (a ulong code or a symbol), if any."""
    if isinstance(descriptor, (ULong, Symbol)):
        return COMPOSITES.get(descriptor)
    return None


def _describe(descriptor: Any, value: Any) -> Any:
    cls = composite_for(descriptor)
    if cls is None:
        return Described(descriptor, value)
    if not isinstance(value, list):
        raise DecodeError(f"{cls.NAME} is a described list, got {type(value).__name__}")
    return cls.from_list(value)


# -- field type checks (decoding) ---------------------------------------------------------------

def _bad(cls: type[Composite], f: Field, value: Any, expected: str) -> DecodeError:
    return DecodeError(f"{cls.NAME}: field '{f.name.replace('_', '-')}' must be {expected}, "
                       f"not {type(value).__name__}")


def _unsigned(bits: int, kind: type[int]) -> Any:
    limit = 1 << bits

    def check(cls: type[Composite], f: Field, value: Any) -> int:
        if type(value) is kind:
            return value
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < limit:
            raise _bad(cls, f, value, f"a {bits}-bit unsigned integer")
        return kind(value)
    return check


def _boolean(cls: type[Composite], f: Field, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _bad(cls, f, value, "a boolean")
    return value


def _string(cls: type[Composite], f: Field, value: Any) -> str:
    if not isinstance(value, str):
        raise _bad(cls, f, value, "a string")
    return value


def _symbol(cls: type[Composite], f: Field, value: Any) -> Symbol:
    if not isinstance(value, str):
        raise _bad(cls, f, value, "a symbol")
    return Symbol(value)


def _binary(cls: type[Composite], f: Field, value: Any) -> bytes:
    if not isinstance(value, bytes):
        raise _bad(cls, f, value, "binary")
    return value


def _map(cls: type[Composite], f: Field, value: Any) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise _bad(cls, f, value, "a map")
    return value


def _timestamp(cls: type[Composite], f: Field, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _bad(cls, f, value, "a timestamp")
    return value


def _any(cls: type[Composite], f: Field, value: Any) -> Any:
    return value


def _composite(*kinds: str) -> Any:
    def check(cls: type[Composite], f: Field, value: Any) -> Any:
        classes = tuple(COMPOSITES_BY_NAME[k] for k in kinds)
        if not isinstance(value, classes):
            raise _bad(cls, f, value, " or ".join(kinds))
        return value
    return check


def _lifetime(cls: type[Composite], f: Field, value: Any) -> Any:
    if not isinstance(value, (DeleteOnClose, DeleteOnNoLinks, DeleteOnNoMessages,
                              DeleteOnNoLinksOrMessages)):
        raise _bad(cls, f, value, "a lifetime policy")
    return value


def _message_id(cls: type[Composite], f: Field, value: Any) -> Any:
    if not isinstance(value, (str, bytes, uuid.UUID)) and not (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        raise _bad(cls, f, value, "a message id (ulong, uuid, binary or string)")
    return value


_CHECKS: Final[dict[str, Any]] = {
    "ubyte": _unsigned(8, UByte), "ushort": _unsigned(16, UShort), "uint": _unsigned(32, UInt),
    "ulong": _unsigned(64, ULong), "boolean": _boolean, "string": _string, "symbol": _symbol,
    "binary": _binary, "map": _map, "timestamp": _timestamp, "*": _any,
    "error": _composite("error"), "source": _composite("source"),
    "target": _composite("target", "coordinator"),
    "delivery-state": _composite("received", "accepted", "rejected", "released", "modified",
                                 "declared", "transactional-state"),
    "outcome": _composite("accepted", "rejected", "released", "modified"),
    "lifetime-policy": _lifetime, "message-id": _message_id,
}

_WRITE: Final[dict[str, Any]] = {
    "ubyte": _w_ubyte, "ushort": _w_ushort, "uint": _w_uint, "ulong": _w_ulong,
    "boolean": _w_bool, "string": _w_string, "symbol": _w_symbol, "binary": _w_binary,
    "timestamp": _w_timestamp, "map": encode_value, "*": encode_value, "error": encode_value,
    "source": encode_value, "target": encode_value, "delivery-state": encode_value,
    "outcome": encode_value, "lifetime-policy": encode_value, "message-id": encode_value,
}


# -- the tables ---------------------------------------------------------------------------------
# Part 2 section 2.7 (performatives), 2.8.14 (error); Part 3 sections 3.2 (message sections),
# 3.4 (delivery states), 3.5 (termini); Part 4 (transactions); Part 5 section 5.3 (SASL).

@dataclass(slots=True)
class Open(Composite):
    CODE = 0x10
    NAME = "open"
    FIELDS = (Field("container_id", "string", True), Field("hostname", "string"),
              Field("max_frame_size", "uint", default=0xFFFFFFFF),
              Field("channel_max", "ushort", default=65535),
              Field("idle_time_out", "uint"),
              Field("outgoing_locales", "symbol", multiple=True),
              Field("incoming_locales", "symbol", multiple=True),
              Field("offered_capabilities", "symbol", multiple=True),
              Field("desired_capabilities", "symbol", multiple=True),
              Field("properties", "map"))
    container_id: str = ""
    hostname: str | None = None
    max_frame_size: int = 0xFFFFFFFF
    channel_max: int = 65535
    idle_time_out: int | None = None
    outgoing_locales: tuple[str, ...] | None = None
    incoming_locales: tuple[str, ...] | None = None
    offered_capabilities: tuple[str, ...] | None = None
    desired_capabilities: tuple[str, ...] | None = None
    properties: dict[Any, Any] | None = None


@dataclass(slots=True)
class Begin(Composite):
    CODE = 0x11
    NAME = "begin"
    FIELDS = (Field("remote_channel", "ushort"), Field("next_outgoing_id", "uint", True),
              Field("incoming_window", "uint", True), Field("outgoing_window", "uint", True),
              Field("handle_max", "uint", default=0xFFFFFFFF),
              Field("offered_capabilities", "symbol", multiple=True),
              Field("desired_capabilities", "symbol", multiple=True),
              Field("properties", "map"))
    remote_channel: int | None = None
    next_outgoing_id: int = 0
    incoming_window: int = 0
    outgoing_window: int = 0
    handle_max: int = 0xFFFFFFFF
    offered_capabilities: tuple[str, ...] | None = None
    desired_capabilities: tuple[str, ...] | None = None
    properties: dict[Any, Any] | None = None


@dataclass(slots=True)
class Attach(Composite):
    CODE = 0x12
    NAME = "attach"
    FIELDS = (Field("name", "string", True), Field("handle", "uint", True),
              Field("role", "boolean", True), Field("snd_settle_mode", "ubyte", default=2),
              Field("rcv_settle_mode", "ubyte", default=0), Field("source", "source"),
              Field("target", "target"), Field("unsettled", "map"),
              Field("incomplete_unsettled", "boolean", default=False),
              Field("initial_delivery_count", "uint"), Field("max_message_size", "ulong"),
              Field("offered_capabilities", "symbol", multiple=True),
              Field("desired_capabilities", "symbol", multiple=True),
              Field("properties", "map"))
    name: str = ""
    handle: int = 0
    role: bool = False
    snd_settle_mode: int = 2
    rcv_settle_mode: int = 0
    source: Source | None = None
    target: Target | Coordinator | None = None
    unsettled: dict[Any, Any] | None = None
    incomplete_unsettled: bool = False
    initial_delivery_count: int | None = None
    max_message_size: int | None = None
    offered_capabilities: tuple[str, ...] | None = None
    desired_capabilities: tuple[str, ...] | None = None
    properties: dict[Any, Any] | None = None


@dataclass(slots=True)
class Flow(Composite):
    CODE = 0x13
    NAME = "flow"
    FIELDS = (Field("next_incoming_id", "uint"), Field("incoming_window", "uint", True),
              Field("next_outgoing_id", "uint", True), Field("outgoing_window", "uint", True),
              Field("handle", "uint"), Field("delivery_count", "uint"),
              Field("link_credit", "uint"), Field("available", "uint"),
              Field("drain", "boolean", default=False), Field("echo", "boolean", default=False),
              Field("properties", "map"))
    next_incoming_id: int | None = None
    incoming_window: int = 0
    next_outgoing_id: int = 0
    outgoing_window: int = 0
    handle: int | None = None
    delivery_count: int | None = None
    link_credit: int | None = None
    available: int | None = None
    drain: bool = False
    echo: bool = False
    properties: dict[Any, Any] | None = None


@dataclass(slots=True)
class Transfer(Composite):
    CODE = 0x14
    NAME = "transfer"
    FIELDS = (Field("handle", "uint", True), Field("delivery_id", "uint"),
              Field("delivery_tag", "binary"), Field("message_format", "uint"),
              Field("settled", "boolean"), Field("more", "boolean", default=False),
              Field("rcv_settle_mode", "ubyte"), Field("state", "delivery-state"),
              Field("resume", "boolean", default=False),
              Field("aborted", "boolean", default=False),
              Field("batchable", "boolean", default=False))
    handle: int = 0
    delivery_id: int | None = None
    delivery_tag: bytes | None = None
    message_format: int | None = None
    settled: bool | None = None
    more: bool = False
    rcv_settle_mode: int | None = None
    state: Any = None
    resume: bool = False
    aborted: bool = False
    batchable: bool = False


@dataclass(slots=True)
class Disposition(Composite):
    CODE = 0x15
    NAME = "disposition"
    FIELDS = (Field("role", "boolean", True), Field("first", "uint", True),
              Field("last", "uint"), Field("settled", "boolean", default=False),
              Field("state", "delivery-state"), Field("batchable", "boolean", default=False))
    role: bool = False
    first: int = 0
    last: int | None = None
    settled: bool = False
    state: Any = None
    batchable: bool = False


@dataclass(slots=True)
class Detach(Composite):
    CODE = 0x16
    NAME = "detach"
    FIELDS = (Field("handle", "uint", True), Field("closed", "boolean", default=False),
              Field("error", "error"))
    handle: int = 0
    closed: bool = False
    error: Error | None = None


@dataclass(slots=True)
class End(Composite):
    CODE = 0x17
    NAME = "end"
    FIELDS = (Field("error", "error"),)
    error: Error | None = None


@dataclass(slots=True)
class Close(Composite):
    CODE = 0x18
    NAME = "close"
    FIELDS = (Field("error", "error"),)
    error: Error | None = None


@dataclass(slots=True)
class Error(Composite):
    CODE = 0x1D
    NAME = "error"
    FIELDS = (Field("condition", "symbol", True), Field("description", "string"),
              Field("info", "map"))
    condition: str = ""
    description: str | None = None
    info: dict[Any, Any] | None = None


@dataclass(slots=True)
class Received(Composite):
    CODE = 0x23
    NAME = "received"
    FIELDS = (Field("section_number", "uint", True), Field("section_offset", "ulong", True))
    section_number: int = 0
    section_offset: int = 0


@dataclass(slots=True)
class Accepted(Composite):
    CODE = 0x24
    NAME = "accepted"
    FIELDS = ()


@dataclass(slots=True)
class Rejected(Composite):
    CODE = 0x25
    NAME = "rejected"
    FIELDS = (Field("error", "error"),)
    error: Error | None = None


@dataclass(slots=True)
class Released(Composite):
    CODE = 0x26
    NAME = "released"
    FIELDS = ()


@dataclass(slots=True)
class Modified(Composite):
    CODE = 0x27
    NAME = "modified"
    FIELDS = (Field("delivery_failed", "boolean"), Field("undeliverable_here", "boolean"),
              Field("message_annotations", "map"))
    delivery_failed: bool | None = None
    undeliverable_here: bool | None = None
    message_annotations: dict[Any, Any] | None = None


@dataclass(slots=True)
class Source(Composite):
    CODE = 0x28
    NAME = "source"
    FIELDS = (Field("address", "*"), Field("durable", "uint", default=0),
              Field("expiry_policy", "symbol", default="session-end"),
              Field("timeout", "uint", default=0), Field("dynamic", "boolean", default=False),
              Field("dynamic_node_properties", "map"),
              Field("distribution_mode", "symbol"), Field("filter", "map"),
              Field("default_outcome", "outcome"),
              Field("outcomes", "symbol", multiple=True),
              Field("capabilities", "symbol", multiple=True))
    address: Any = None
    durable: int = 0
    expiry_policy: str = "session-end"
    timeout: int = 0
    dynamic: bool = False
    dynamic_node_properties: dict[Any, Any] | None = None
    distribution_mode: str | None = None
    filter: dict[Any, Any] | None = None
    default_outcome: Any = None
    outcomes: tuple[str, ...] | None = None
    capabilities: tuple[str, ...] | None = None


@dataclass(slots=True)
class Target(Composite):
    CODE = 0x29
    NAME = "target"
    FIELDS = (Field("address", "*"), Field("durable", "uint", default=0),
              Field("expiry_policy", "symbol", default="session-end"),
              Field("timeout", "uint", default=0), Field("dynamic", "boolean", default=False),
              Field("dynamic_node_properties", "map"),
              Field("capabilities", "symbol", multiple=True))
    address: Any = None
    durable: int = 0
    expiry_policy: str = "session-end"
    timeout: int = 0
    dynamic: bool = False
    dynamic_node_properties: dict[Any, Any] | None = None
    capabilities: tuple[str, ...] | None = None


@dataclass(slots=True)
class DeleteOnClose(Composite):
    CODE = 0x2B
    NAME = "delete-on-close"
    FIELDS = ()


@dataclass(slots=True)
class DeleteOnNoLinks(Composite):
    CODE = 0x2C
    NAME = "delete-on-no-links"
    FIELDS = ()


@dataclass(slots=True)
class DeleteOnNoMessages(Composite):
    CODE = 0x2D
    NAME = "delete-on-no-messages"
    FIELDS = ()


@dataclass(slots=True)
class DeleteOnNoLinksOrMessages(Composite):
    CODE = 0x2E
    NAME = "delete-on-no-links-or-messages"
    FIELDS = ()


@dataclass(slots=True)
class Coordinator(Composite):
    CODE = 0x30
    NAME = "coordinator"
    FIELDS = (Field("capabilities", "symbol", multiple=True),)
    capabilities: tuple[str, ...] | None = None


@dataclass(slots=True)
class Declare(Composite):
    CODE = 0x31
    NAME = "declare"
    FIELDS = (Field("global_id", "*"),)
    global_id: Any = None


@dataclass(slots=True)
class Discharge(Composite):
    CODE = 0x32
    NAME = "discharge"
    FIELDS = (Field("txn_id", "binary", True), Field("fail", "boolean"))
    txn_id: bytes = b""
    fail: bool | None = None


@dataclass(slots=True)
class Declared(Composite):
    CODE = 0x33
    NAME = "declared"
    FIELDS = (Field("txn_id", "binary", True),)
    txn_id: bytes = b""


@dataclass(slots=True)
class TransactionalState(Composite):
    CODE = 0x34
    NAME = "transactional-state"
    FIELDS = (Field("txn_id", "binary", True), Field("outcome", "outcome"))
    txn_id: bytes = b""
    outcome: Any = None


@dataclass(slots=True)
class SaslMechanisms(Composite):
    CODE = 0x40
    NAME = "sasl-mechanisms"
    FIELDS = (Field("sasl_server_mechanisms", "symbol", True, True),)
    sasl_server_mechanisms: tuple[str, ...] = ()


@dataclass(slots=True)
class SaslInit(Composite):
    CODE = 0x41
    NAME = "sasl-init"
    FIELDS = (Field("mechanism", "symbol", True), Field("initial_response", "binary"),
              Field("hostname", "string"))
    mechanism: str = ""
    initial_response: bytes | None = None
    hostname: str | None = None


@dataclass(slots=True)
class SaslChallenge(Composite):
    CODE = 0x42
    NAME = "sasl-challenge"
    FIELDS = (Field("challenge", "binary", True),)
    challenge: bytes = b""


@dataclass(slots=True)
class SaslResponse(Composite):
    CODE = 0x43
    NAME = "sasl-response"
    FIELDS = (Field("response", "binary", True),)
    response: bytes = b""


@dataclass(slots=True)
class SaslOutcome(Composite):
    CODE = 0x44
    NAME = "sasl-outcome"
    FIELDS = (Field("code", "ubyte", True), Field("additional_data", "binary"))
    code: int = 0
    additional_data: bytes | None = None


@dataclass(slots=True)
class Header(Composite):
    CODE = 0x70
    NAME = "header"
    FIELDS = (Field("durable", "boolean", default=False), Field("priority", "ubyte"),
              Field("ttl", "uint"), Field("first_acquirer", "boolean", default=False),
              Field("delivery_count", "uint", default=0))
    durable: bool = False
    priority: int | None = None
    ttl: int | None = None
    first_acquirer: bool = False
    delivery_count: int = 0


@dataclass(slots=True)
class Properties(Composite):
    CODE = 0x73
    NAME = "properties"
    FIELDS = (Field("message_id", "message-id"), Field("user_id", "binary"),
              Field("to", "string"), Field("subject", "string"),
              Field("reply_to", "string"), Field("correlation_id", "message-id"),
              Field("content_type", "symbol"), Field("content_encoding", "symbol"),
              Field("absolute_expiry_time", "timestamp"), Field("creation_time", "timestamp"),
              Field("group_id", "string"), Field("group_sequence", "uint"),
              Field("reply_to_group_id", "string"))
    message_id: Any = None
    user_id: bytes | None = None
    to: str | None = None
    subject: str | None = None
    reply_to: str | None = None
    correlation_id: Any = None
    content_type: str | None = None
    content_encoding: str | None = None
    absolute_expiry_time: int | None = None
    creation_time: int | None = None
    group_id: str | None = None
    group_sequence: int | None = None
    reply_to_group_id: str | None = None


_ALL: Final[tuple[type[Composite], ...]] = (
    Open, Begin, Attach, Flow, Transfer, Disposition, Detach, End, Close, Error, Received,
    Accepted, Rejected, Released, Modified, Source, Target, DeleteOnClose, DeleteOnNoLinks,
    DeleteOnNoMessages, DeleteOnNoLinksOrMessages, Coordinator, Declare, Discharge, Declared,
    TransactionalState, SaslMechanisms, SaslInit, SaslChallenge, SaslResponse, SaslOutcome,
    Header, Properties,
)

#: The composite class for each descriptor: the ulong code and the symbolic name
#: (``amqp:open:list``, ``amqp:sasl-init:list``, ``amqp:declare:list``...).
COMPOSITES: Final[dict[Any, type[Composite]]] = {}
COMPOSITES_BY_NAME: Final[dict[str, type[Composite]]] = {}
_DESCRIPTORS: Final[dict[int, bytes]] = {}
for _cls in _ALL:
    COMPOSITES[ULong(_cls.CODE)] = _cls
    COMPOSITES[Symbol(f"amqp:{_cls.NAME}:list")] = _cls
    COMPOSITES_BY_NAME[_cls.NAME] = _cls
    _DESCRIPTORS[_cls.CODE] = b"\x00\x53" + bytes((_cls.CODE,))

#: The descriptor codes of the message sections (Part 3 section 3.2).
SECTION_HEADER: Final = 0x70
SECTION_DELIVERY_ANNOTATIONS: Final = 0x71
SECTION_MESSAGE_ANNOTATIONS: Final = 0x72
SECTION_PROPERTIES: Final = 0x73
SECTION_APPLICATION_PROPERTIES: Final = 0x74
SECTION_DATA: Final = 0x75
SECTION_AMQP_SEQUENCE: Final = 0x76
SECTION_AMQP_VALUE: Final = 0x77
SECTION_FOOTER: Final = 0x78
SECTION_NAMES: Final = {
    "amqp:header:list": 0x70, "amqp:delivery-annotations:map": 0x71,
    "amqp:message-annotations:map": 0x72, "amqp:properties:list": 0x73,
    "amqp:application-properties:map": 0x74, "amqp:data:binary": 0x75,
    "amqp:amqp-sequence:list": 0x76, "amqp:amqp-value:*": 0x77, "amqp:footer:map": 0x78,
}

set_describer(_describe)
