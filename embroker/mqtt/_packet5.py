"""MQTT 5.0 packets (and 3.1/3.1.1 as the same codec reads them): a sans-IO reader and the
server's writers, as RabbitMQ 3.13's ``rabbit_mqtt_packet`` reads and writes them (for
embroker's RabbitMQ 4 profile; 3.10's codec is :mod:`._packet`).

Theory of operation
-------------------
A packet is a fixed header (type in the high four bits of the first byte, flags in the low
four), a remaining length (a variable byte integer of at most four bytes) and that many bytes.
:class:`PacketReader` is stateful as the plugin's parser is: the first packet must be a CONNECT
whose flags are ``0000`` (anything else closes the connection), and the CONNECT's protocol
level (3, 4 or 5, with the names ``MQIsdp``, ``MQTT``, ``MQTT``) decides how every later packet
is read: properties only at level 5.

Refusals. The plugin's parser crashes on most malformed input and its reader
(``rabbit_mqtt_reader:process_received_bytes/2``) then closes the socket without a word;
:class:`PacketError` says so with ``reason_code`` ``None``. The one refusal answered first is a
packet other than CONNECT over ``mqtt.max_packet_size_authenticated``: a level-5 client gets
DISCONNECT 0x95 (Packet too large), so ``reason_code`` is 0x95 then (``None`` below level 5,
where ``send_disconnect/2`` sends nothing). A CONNECT over
``mqtt.max_packet_size_unauthenticated`` is closed on without a CONNACK. Both bounds compare
the *remaining* length, and are checked as soon as it is read (before the body comes).

What the parser takes that the spec refuses (kept, to answer as RabbitMQ does): a property
given twice (the last one wins; User Property accumulates, in order), any property in any
packet, non-minimal variable byte integers (a property's may even take five bytes, the fifth
without its continuation bit: ``parse_variable_byte_integer/3``), a packet identifier 0, the
reserved CONNECT flag, PUBACK/PINGREQ/DISCONNECT flags, SUBSCRIBE and UNSUBSCRIBE flags whose
QoS bits are ``01`` whatever their DUP and RETAIN bits, the subscription options' reserved
bits, and bytes after a SUBSCRIBE's or UNSUBSCRIBE's last whole entry (ignored). Refused here
although the parser takes them, because the processor then crashes (the connection closes
without a reply, the same outcome): a PUBLISH with QoS 3 (``maybe_downgrade_qos/1``), and a
subscription with QoS 3 or Retain Handling 3.

Not read at all, as the plugin does not: PUBREC, PUBREL, PUBCOMP (its CONNACK says Maximum
QoS 1, so a client never owes them; the parser has no clause for them), AUTH (thrown as
``extended_authentication_unsupported`` as soon as its header is read), a second CONNECT, and
the server's own packets. One difference: the plugin's DISCONNECT clauses look at the bytes
already received, so a level-5 DISCONNECT with properties that arrives in two TCP segments
crashes it; this reader waits for the whole packet whatever the split.

Strings are ``str`` (:mod:`._wire`'s rule: the plugin does not validate them here); Binary
Data (payload, will payload, password, Correlation Data, Authentication Data) is ``bytes``.

Writing: each writer gives the bytes ``rabbit_mqtt_packet:serialise/2`` gives, including its
quirk that a level-5 PUBACK always carries its reason code and a property length of 0 (the
clause meant to omit them compares the atom ``reason_code`` with 0). One thing cannot be
read from the source: the plugin writes properties in the iteration order of an Erlang map,
which OTP 26 leaves unspecified for atom keys; :func:`write_properties` writes them in
ascending identifier order (User Properties in their own order, Subscription Identifiers as
given), which the spec allows.

Design note: what MqttConnection needs from this codec for 3.13's semantics
--------------------------------------------------------------------------
- Bounds: construct the reader with :data:`MAX_PACKET_SIZE_UNAUTHENTICATED` and the
  authenticated bound (3.13: :data:`MAX_PACKET_SIZE_AUTHENTICATED`; 4.x: 16 MiB); on a
  PacketError send :func:`disconnect` ``(error.reason_code)`` if it is set, then close.
- CONNECT (``rabbit_mqtt_processor:process_connect/5``): levels 3 and 4 keep their 3.1.1 rules
  (read by this same reader); refuse an Authentication Method with 0x8C; an empty client id
  gets a generated one, echoed as Assigned Client Identifier; Session Expiry Interval (absent
  = 0, 0xFFFFFFFF = the maximum) is capped by ``mqtt.max_session_expiry_interval_seconds``
  (86400) and becomes the session queues' ``x-expires``; Receive Maximum caps the prefetch
  (``min(prefetch, RM)``); the client's Maximum Packet Size bounds what the server sends (an
  over-large PUBLISH is dropped and its delivery discarded, any other packet just dropped:
  compare ``len()`` of the written bytes); Topic Alias Maximum (capped by
  ``mqtt.topic_alias_maximum``, 16) enables outbound aliases. CONNACK:
  :func:`connack_properties` gives exactly the properties 3.13 sends on success; a failed
  CONNACK carries none and Session Present 0; level 3/4 maps reason codes to return codes
  (:func:`connect_return_code`).
- Will: its properties (Will Delay Interval, Message Expiry Interval, and the PUBLISH ones)
  travel with the will message; a delayed will is a message with a TTL in a queue.
- PUBLISH in: QoS 2 at level 5 is answered with DISCONNECT 0x9B (at 3/4 it is downgraded to
  1). Topic Alias: 0 or above the maximum -> DISCONNECT 0x94; an empty topic with an unknown
  alias -> DISCONNECT 0x82; otherwise the alias maps (or re-maps) to the topic. Properties
  become the message's: Message Expiry Interval -> per-message TTL; Correlation Data,
  Content Type, Response Topic, Payload Format Indicator -> AMQP properties; User Properties
  -> AMQP headers (``mc_mqtt``: for AMQP 0-9-1 longstr headers, names over 255 bytes dropped,
  the table sorted by name with duplicates removed; for AMQP 1.0 the first occurrence of a name
  wins and ``x-`` names go to message annotations); the reverse way, headers become User
  Properties. The CONNECT's User Properties are the connection's (listed, not forwarded).
- PUBACK out: 0x00 once confirmed, 0x10 (No matching subscribers) when a QoS 1 message routes
  nowhere, 0x83 when a queue rejects it.
- PUBACK in: a reason code >= 0x80 discards the delivery (no requeue).
- PUBLISH out: Subscription Identifiers of every matching subscription that has one; Topic
  Alias out when enabled (aliases 1.. in first-use order, only for topics over 1 byte; once
  aliased, the topic is sent empty); remaining Message Expiry Interval; RETAIN only with Retain As
  Published; No Local filters the connection's own messages.
- SUBSCRIBE: SUBACK codes are granted QoS (2 downgraded to 1) or 0x87/0x97/0x80 at level 5
  (0x80 at 3/4, masked to two bits at level 3); Retain Handling 0/1/2 decides whether retained
  messages are sent (1: only for a new subscription); the same filter with the same options
  changes nothing. An empty SUBSCRIBE gets an empty SUBACK, then the plugin crashes (closes).
- UNSUBSCRIBE: UNSUBACK codes at level 5: 0x00, 0x11 (No subscription existed), 0x87, 0x80.
- DISCONNECT in: reason code > 0 publishes the will; a Session Expiry Interval changes the
  session's (ignored if CONNECT's was 0). DISCONNECT out (level 5 only): 0x8E session taken
  over, 0x8B shutting down, 0x8D keep-alive timeout, 0xA0 maximum connect time, 0x9B, 0x94,
  0x82, 0x95 as above.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Any, Final, final

from ._wire import Body, PacketError, PacketType, Reader, pingresp, unread, utf8, varint

__all__ = ["MAX_PACKET_SIZE_AUTHENTICATED", "MAX_PACKET_SIZE_UNAUTHENTICATED", "TOPIC_ALIAS_MAXIMUM",
           "Connect", "Disconnect", "PacketError", "PacketReader", "PacketType", "PingReq",
           "Properties", "PubAck", "Publish", "ReasonCode", "Subscribe", "Subscription",
           "Unsubscribe", "Will", "connack", "connack_properties", "connect_return_code",
           "disconnect", "pingresp", "puback", "publish", "suback", "unsuback",
           "write_properties"]

#: ``mqtt.max_packet_size_unauthenticated`` (the bound on a CONNECT's remaining length), as the
#: plugin's application environment sets it in 3.13 and 4.x.
MAX_PACKET_SIZE_UNAUTHENTICATED: Final = 65_536
#: ``mqtt.max_packet_size_authenticated`` in 3.13 (the protocol's own bound); RabbitMQ 4.x sets
#: 16 MiB (16_777_216), the broker's ``max_message_size``.
MAX_PACKET_SIZE_AUTHENTICATED: Final = 268_435_455
#: ``mqtt.topic_alias_maximum``'s default.
TOPIC_ALIAS_MAXIMUM: Final = 16
#: The largest variable byte integer (``?VARIABLE_BYTE_INTEGER_MAX``).
VARIABLE_BYTE_INTEGER_MAX: Final = 0x0FFFFFFF
#: A Session Expiry Interval that never expires.
UINT_MAX: Final = 0xFFFFFFFF
#: The protocol names each level must carry (``?PROTOCOL_NAMES``).
PROTOCOLS: Final = {3: "MQIsdp", 4: "MQTT", 5: "MQTT"}


class ReasonCode(enum.IntEnum):
    """The MQTT 5.0 reason codes the plugin names (``rabbit_mqtt_packet.hrl``)."""

    SUCCESS = 0x00  # also Normal disconnection, Granted QoS 0
    GRANTED_QOS_1 = 0x01
    GRANTED_QOS_2 = 0x02
    DISCONNECT_WITH_WILL_MESSAGE = 0x04
    NO_MATCHING_SUBSCRIBERS = 0x10
    NO_SUBSCRIPTION_EXISTED = 0x11
    CONTINUE_AUTHENTICATION = 0x18
    RE_AUTHENTICATE = 0x19
    UNSPECIFIED_ERROR = 0x80
    MALFORMED_PACKET = 0x81
    PROTOCOL_ERROR = 0x82
    IMPLEMENTATION_SPECIFIC_ERROR = 0x83
    UNSUPPORTED_PROTOCOL_VERSION = 0x84
    CLIENT_IDENTIFIER_NOT_VALID = 0x85
    BAD_USER_NAME_OR_PASSWORD = 0x86
    NOT_AUTHORIZED = 0x87
    SERVER_UNAVAILABLE = 0x88
    SERVER_BUSY = 0x89
    BANNED = 0x8A
    SERVER_SHUTTING_DOWN = 0x8B
    BAD_AUTHENTICATION_METHOD = 0x8C
    KEEP_ALIVE_TIMEOUT = 0x8D
    SESSION_TAKEN_OVER = 0x8E
    TOPIC_FILTER_INVALID = 0x8F
    TOPIC_NAME_INVALID = 0x90
    PACKET_IDENTIFIER_IN_USE = 0x91
    PACKET_IDENTIFIER_NOT_FOUND = 0x92
    RECEIVE_MAXIMUM_EXCEEDED = 0x93
    TOPIC_ALIAS_INVALID = 0x94
    PACKET_TOO_LARGE = 0x95
    MESSAGE_RATE_TOO_HIGH = 0x96
    QUOTA_EXCEEDED = 0x97
    ADMINISTRATIVE_ACTION = 0x98
    PAYLOAD_FORMAT_INVALID = 0x99
    RETAIN_NOT_SUPPORTED = 0x9A
    QOS_NOT_SUPPORTED = 0x9B
    USE_ANOTHER_SERVER = 0x9C
    SERVER_MOVED = 0x9D
    SHARED_SUBSCRIPTIONS_NOT_SUPPORTED = 0x9E
    CONNECTION_RATE_EXCEEDED = 0x9F
    MAXIMUM_CONNECT_TIME = 0xA0
    SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED = 0xA1
    WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED = 0xA2


def connect_return_code(reason_code: int) -> int:
    """The 3.1/3.1.1 CONNACK return code a level-3/4 client gets for a reason code
    (``connect_reason_code_to_return_code/1``)."""
    return {0x00: 0, 0x84: 1, 0x85: 2, 0x86: 4, 0x87: 5, 0x97: 5}.get(reason_code, 3)


# -- properties ---------------------------------------------------------------------------------

_BYTE, _U16, _U32, _VBI, _STR, _BIN, _PAIR = range(7)

#: Each property the plugin reads (``parse_prop/2``) and writes: identifier -> (field, type).
_PROPERTIES: Final[dict[int, tuple[str, int]]] = {
    0x01: ("payload_format_indicator", _BYTE),
    0x02: ("message_expiry_interval", _U32),
    0x03: ("content_type", _STR),
    0x08: ("response_topic", _STR),
    0x09: ("correlation_data", _BIN),
    0x0B: ("subscription_identifiers", _VBI),
    0x11: ("session_expiry_interval", _U32),
    0x12: ("assigned_client_identifier", _STR),
    0x13: ("server_keep_alive", _U16),
    0x15: ("authentication_method", _STR),
    0x16: ("authentication_data", _BIN),
    0x17: ("request_problem_information", _BYTE),
    0x18: ("will_delay_interval", _U32),
    0x19: ("request_response_information", _BYTE),
    0x1A: ("response_information", _STR),
    0x1C: ("server_reference", _STR),
    0x1F: ("reason_string", _STR),
    0x21: ("receive_maximum", _U16),
    0x22: ("topic_alias_maximum", _U16),
    0x23: ("topic_alias", _U16),
    0x24: ("maximum_qos", _BYTE),
    0x25: ("retain_available", _BYTE),
    0x26: ("user_properties", _PAIR),
    0x27: ("maximum_packet_size", _U32),
    0x28: ("wildcard_subscription_available", _BYTE),
    0x29: ("subscription_identifier_available", _BYTE),
    0x2A: ("shared_subscription_available", _BYTE),
}


@final
@dataclass(frozen=True, slots=True)
class Properties:
    """A packet's properties: ``None`` (or empty) for those absent.

    ``subscription_identifiers``: a client sends at most one (in SUBSCRIBE; read, the last one
    given wins, as in the plugin's map); the server may send several in a PUBLISH.
    """

    payload_format_indicator: int | None = None
    message_expiry_interval: int | None = None
    content_type: str | None = None
    response_topic: str | None = None
    correlation_data: bytes | None = None
    subscription_identifiers: tuple[int, ...] = ()
    session_expiry_interval: int | None = None
    assigned_client_identifier: str | None = None
    server_keep_alive: int | None = None
    authentication_method: str | None = None
    authentication_data: bytes | None = None
    request_problem_information: int | None = None
    will_delay_interval: int | None = None
    request_response_information: int | None = None
    response_information: str | None = None
    server_reference: str | None = None
    reason_string: str | None = None
    receive_maximum: int | None = None
    topic_alias_maximum: int | None = None
    topic_alias: int | None = None
    maximum_qos: int | None = None
    retain_available: int | None = None
    #: Name and value pairs in the packet's order, duplicates kept.
    user_properties: tuple[tuple[str, str], ...] = ()
    maximum_packet_size: int | None = None
    wildcard_subscription_available: int | None = None
    subscription_identifier_available: int | None = None
    shared_subscription_available: int | None = None

    def __bool__(self) -> bool:
        return self != _NONE


_NONE: Final = Properties()


# -- packets read -------------------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class Will:
    """A CONNECT's will (its properties: level 5 only)."""

    topic: str
    payload: bytes
    qos: int
    retain: bool
    properties: Properties = _NONE


@final
@dataclass(frozen=True, slots=True)
class Connect:
    level: int
    clean_start: bool
    keep_alive: int
    client_id: str
    properties: Properties = _NONE
    will: Will | None = None
    username: str | None = None
    password: bytes | None = None


@final
@dataclass(frozen=True, slots=True)
class Publish:
    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False
    dup: bool = False
    packet_id: int | None = None
    properties: Properties = _NONE


@final
@dataclass(frozen=True, slots=True)
class PubAck:
    packet_id: int
    reason_code: int = 0
    properties: Properties = _NONE


@final
@dataclass(frozen=True, slots=True)
class Subscription:
    """A topic filter and its subscription options."""

    topic_filter: str
    qos: int
    no_local: bool = False
    retain_as_published: bool = False
    retain_handling: int = 0


@final
@dataclass(frozen=True, slots=True)
class Subscribe:
    packet_id: int
    subscriptions: tuple[Subscription, ...] = ()
    properties: Properties = _NONE

    @property
    def subscription_identifier(self) -> int | None:
        """The identifier every subscription of the packet takes (``None``: none)."""
        ids = self.properties.subscription_identifiers
        return ids[-1] if ids else None


@final
@dataclass(frozen=True, slots=True)
class Unsubscribe:
    packet_id: int
    topic_filters: tuple[str, ...] = ()
    properties: Properties = _NONE


@final
@dataclass(frozen=True, slots=True)
class PingReq:
    pass


@final
@dataclass(frozen=True, slots=True)
class Disconnect:
    reason_code: int = 0
    properties: Properties = _NONE


Packet = Connect | Publish | PubAck | Subscribe | Unsubscribe | PingReq | Disconnect


class _Body(Body):
    """A packet's bytes, with MQTT 5.0's four-byte and variable byte integers."""

    __slots__ = ()

    def uint32(self) -> int:
        value: int = struct.unpack(">I", self.take(4))[0]
        return value

    def varint(self) -> int:
        # parse_variable_byte_integer/3: a fifth byte is read if it ends the integer.
        value = 0
        for shift in range(0, 35, 7):
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise PacketError("malformed_variable_byte_integer")


def _read_properties(body: _Body, level: int) -> Properties:
    # parse_props/2, parse_prop/2
    if level < 5:
        return _NONE
    data = _Body(body.take(body.varint()))
    if data.done:
        return _NONE
    values: dict[str, Any] = {}
    pairs: list[tuple[str, str]] = []
    while not data.done:
        ident = data.byte()
        spec = _PROPERTIES.get(ident)
        if spec is None:
            raise PacketError(f"invalid_property_id {ident:#04x}")
        name, kind = spec
        if kind == _PAIR:
            key = data.string()
            pairs.append((key, data.string()))
            continue
        value = _read_value(data, kind)
        if kind == _VBI:
            value = (value,)
        elif name == "maximum_packet_size" and value == 0:
            raise PacketError("Maximum Packet Size 0")
        values[name] = value
    if pairs:
        values["user_properties"] = tuple(pairs)
    return Properties(**values)


def _read_value(data: _Body, kind: int) -> Any:
    if kind == _BYTE:
        return data.byte()
    if kind == _U16:
        return data.uint16()
    if kind == _U32:
        return data.uint32()
    if kind == _VBI:
        return data.varint()
    if kind == _STR:
        return data.string()
    return data.binary()


@final
class PacketReader(Reader[Packet]):
    """Packets from a byte stream (see the module's notes).

    Args:
        max_unauthenticated: the most a CONNECT's remaining length may be.
        max_authenticated: the most any other packet's remaining length may be.
    """

    __slots__ = ("level", "max_authenticated", "max_unauthenticated")

    def __init__(self, max_unauthenticated: int = MAX_PACKET_SIZE_UNAUTHENTICATED,
                 max_authenticated: int = MAX_PACKET_SIZE_AUTHENTICATED) -> None:
        super().__init__()
        self.max_unauthenticated = max_unauthenticated
        self.max_authenticated = max_authenticated
        #: The CONNECT's protocol level (3, 4 or 5), ``None`` until it is read.
        self.level: int | None = None

    def _next(self) -> Packet | None:
        # rabbit_mqtt_packet:parse/2, parse_remaining_len/5, check_max_packet_size/2
        buffer = self._buffer
        if not buffer:
            return None
        first = buffer[0]
        kind = first >> 4
        if self.level is None and first != 0x10:
            raise PacketError(f"first packet {first:#04x}, not a CONNECT with flags 0000")
        header = self._remaining_length("malformed_remaining_length")
        if header is None:
            return None
        start, length = header
        if kind == PacketType.CONNECT:
            if length > self.max_unauthenticated:
                raise PacketError(f"connect_packet_too_large: {length} bytes over "
                                  f"mqtt.max_packet_size_unauthenticated {self.max_unauthenticated}")
        elif length > self.max_authenticated:
            raise PacketError(
                f"packet of {length} bytes over mqtt.max_packet_size_authenticated "
                f"{self.max_authenticated}", 0x95 if self.level == 5 else None)
        if kind == PacketType.AUTH and self.level == 5:
            raise PacketError("extended_authentication_unsupported")
        data = self._take(start, length)
        if data is None:
            return None
        body = _Body(data)
        if self.level is None:
            packet = _connect(body)
            self.level = packet.level
            return packet
        return _parse(kind, first & 0x0F, body, self.level)


def _connect(body: _Body) -> Connect:
    # parse_connect/1
    name = body.string()
    level = body.byte()
    flags = body.byte()
    keep_alive = body.uint16()
    if PROTOCOLS.get(level) != name:
        raise PacketError(f"protocol name {name!r} and level {level} not paired")
    properties = _read_properties(body, level)
    client_id = body.string()
    will = None
    if flags & 0x04:
        will_properties = _read_properties(body, level)
        topic = body.string()
        will = Will(topic, body.binary(), (flags >> 3) & 3, bool(flags & 0x20), will_properties)
    username = body.string() if flags & 0x80 else None
    password = body.binary() if flags & 0x40 else None
    if not body.done:
        raise PacketError("CONNECT longer than its fields")
    return Connect(level, bool(flags & 0x02), keep_alive, client_id, properties, will, username,
                   password)


def _parse(kind: int, flags: int, body: _Body, level: int) -> Packet:
    # parse_packet/4
    if kind == PacketType.PUBLISH:
        qos, topic, packet_id = body.publish_header(flags)
        properties = _read_properties(body, level)
        return Publish(topic, body.rest(), qos, bool(flags & 1), bool(flags & 8), packet_id,
                       properties)
    if kind == PacketType.PUBACK:
        packet_id = body.uint16()
        if body.done:
            return PubAck(packet_id)
        if level < 5:
            raise PacketError("PUBACK longer than its packet id")
        code = body.byte()
        properties = _NONE if body.done else _read_properties(body, level)
        if not body.done:
            raise PacketError("PUBACK longer than its properties")
        return PubAck(packet_id, code, properties)
    if kind in (PacketType.SUBSCRIBE, PacketType.UNSUBSCRIBE):
        if (flags >> 1) & 3 != 1:
            raise PacketError(f"{PacketType(kind).name} with QoS bits not 01")
        packet_id = body.uint16()
        properties = _read_properties(body, level)
        if kind == PacketType.UNSUBSCRIBE:
            filters = []
            while (entry := _entry(body, 0)) is not None:
                filters.append(entry[0])
            return Unsubscribe(packet_id, tuple(filters), properties)
        subscriptions = []
        while (entry := _entry(body, 1)) is not None:
            topic_filter, options = entry
            qos, handling = options & 3, (options >> 4) & 3
            if qos == 3 or handling == 3:
                raise PacketError(f"subscription options {options:#04x}: QoS or Retain "
                                  "Handling 3")
            subscriptions.append(Subscription(topic_filter, qos, bool(options & 4),
                                              bool(options & 8), handling))
        return Subscribe(packet_id, tuple(subscriptions), properties)
    if kind == PacketType.PINGREQ:
        if not body.done:
            raise PacketError("PINGREQ with a body")
        return PingReq()
    if kind == PacketType.DISCONNECT:
        if body.done:
            return Disconnect()
        if level < 5:
            raise PacketError("DISCONNECT with a body")
        code = body.byte()
        properties = _NONE if body.done else _read_properties(body, level)
        if not body.done:
            raise PacketError("DISCONNECT longer than its properties")
        return Disconnect(code, properties)
    raise unread(kind, PacketType.AUTH)


def _entry(body: _Body, extra: int) -> tuple[str, int] | None:
    """The next topic filter (and options byte), or ``None`` when the rest holds no whole
    entry: the plugin's binary comprehension stops there, ignoring what is left."""
    data, at = body.data, body.offset
    if at + 2 > len(data) or at + 2 + (data[at] << 8 | data[at + 1]) + extra > len(data):
        body.offset = len(data)
        return None
    return body.string(), (body.byte() if extra else 0)


# -- writing ------------------------------------------------------------------------------------


# :mod:`._wire`'s writers bound nothing, as 3.10's; these bound what 3.13's serialise functions
# have no clause for.


def _varint(n: int) -> bytes:
    # serialise_variable_byte_integer/1: at most ?VARIABLE_BYTE_INTEGER_MAX
    if not 0 <= n <= VARIABLE_BYTE_INTEGER_MAX:
        raise ValueError(f"{n} is no variable byte integer")
    return varint(n)


def _binary(data: bytes) -> bytes:
    if len(data) > 0xFFFF:  # serialise_binary/1
        raise ValueError(f"{len(data)} bytes: binary data takes at most 65535")
    return struct.pack(">H", len(data)) + data


def _string(value: str) -> bytes:
    return _binary(utf8(value))


def _packet(first: int, body: bytes) -> bytes:
    # _wire.packet, its remaining length bounded
    return bytes((first,)) + _varint(len(body)) + body


def write_properties(properties: Properties | None, level: int = 5) -> bytes:
    """A property length and the properties (``serialise_props/2``): nothing below level 5,
    ``00`` when there are none; in ascending identifier order (see the module's notes)."""
    if level < 5:
        return b""
    out = bytearray()
    if properties:
        for ident, (name, kind) in _PROPERTIES.items():
            value = getattr(properties, name)
            if kind == _PAIR:
                for key, text in value:
                    out += bytes([ident]) + _string(key) + _string(text)
            elif kind == _VBI:
                for number in value:
                    out += bytes([ident]) + _varint(number)
            elif value is not None:
                out.append(ident)
                if kind == _BYTE:
                    out.append(value)
                elif kind == _U16:
                    out += struct.pack(">H", value)
                elif kind == _U32:
                    out += struct.pack(">I", value)
                elif kind == _STR:
                    out += _string(value)
                else:
                    out += _binary(value)
    return _varint(len(out)) + bytes(out)


def connack_properties(*, session_expiry_interval: int,
                       assigned_client_identifier: str | None = None,
                       topic_alias_maximum: int = TOPIC_ALIAS_MAXIMUM,
                       maximum_packet_size: int = MAX_PACKET_SIZE_AUTHENTICATED) -> Properties:
    """The properties 3.13 sends in a successful level-5 CONNACK (``process_connect/5``):
    Maximum QoS 1, Topic Alias Maximum, Maximum Packet Size (the authenticated bound), Shared
    Subscription Available 0, the Session Expiry Interval granted, and the Assigned Client
    Identifier when the client sent an empty one. Not sent: Receive Maximum, Retain Available,
    Server Keep Alive, Wildcard and Subscription Identifier availability (all default to
    available or unchanged)."""
    return Properties(maximum_qos=1, topic_alias_maximum=topic_alias_maximum,
                      maximum_packet_size=maximum_packet_size, shared_subscription_available=0,
                      session_expiry_interval=session_expiry_interval,
                      assigned_client_identifier=assigned_client_identifier)


def connack(code: int, session_present: bool = False, properties: Properties | None = None,
            *, level: int = 5) -> bytes:
    """CONNACK: a reason code at level 5 (a return code below: :func:`connect_return_code`)."""
    return _packet(0x20, bytes([1 if session_present else 0, code])
                   + write_properties(properties, level))


def publish(topic: str, payload: bytes, *, qos: int = 0, retain: bool = False,
            dup: bool = False, packet_id: int | None = None,
            properties: Properties | None = None, level: int = 5) -> bytes:
    """PUBLISH; ``topic`` may be empty when ``properties`` carry a Topic Alias."""
    if qos and packet_id is None:
        raise ValueError(f"a QoS {qos} PUBLISH needs a packet id")
    first = 0x30 | (8 if dup else 0) | (qos << 1) | (1 if retain else 0)
    head = _string(topic) + (struct.pack(">H", packet_id) if qos else b"")
    return _packet(first, head + write_properties(properties, level) + payload)


def puback(packet_id: int, reason_code: int = 0, properties: Properties | None = None, *,
           level: int = 5) -> bytes:
    """PUBACK: at level 5 always with its reason code and properties (see the module's
    notes), ``40 04 id id 00 00`` for a plain success."""
    body = struct.pack(">H", packet_id)
    if level == 5:
        body += bytes([reason_code]) + write_properties(properties, level)
    return _packet(0x40, body)


def suback(packet_id: int, reason_codes: list[int], properties: Properties | None = None, *,
           level: int = 5) -> bytes:
    """SUBACK: at level 3 each code is cut to its low two bits (0x80 becomes 0)."""
    codes = bytes(c & 3 for c in reason_codes) if level == 3 else bytes(reason_codes)
    return _packet(0x90, struct.pack(">H", packet_id) + write_properties(properties, level) + codes)


def unsuback(packet_id: int, reason_codes: list[int] | None = None,
             properties: Properties | None = None, *, level: int = 5) -> bytes:
    """UNSUBACK: its reason codes at level 5 only."""
    codes = bytes(reason_codes or ()) if level == 5 else b""
    return _packet(0xB0, struct.pack(">H", packet_id) + write_properties(properties, level) + codes)


def disconnect(reason_code: int = 0, properties: Properties | None = None) -> bytes:
    """DISCONNECT (level 5 only): ``e0 00`` for a normal disconnection without properties."""
    if reason_code == 0 and not properties:
        return b"\xe0\x00"
    return _packet(0xE0, bytes([reason_code]) + write_properties(properties))
