"""AMQP 1.0 protocol layer: sans-IO codec and server connection (no sockets here).

The codec, from bytes to values and frames::

    value, end = decode_value(data)                      # Part 1 types (see _types)
    reader = FrameReader(max_frame_size=512)             # then the negotiated size
    reader.feed(data); frame = reader.next_frame()       # Frame(type, channel, performative,
                                                         #       payload)

and back::

    encode_frame(channel, Flow(...))                     # performatives as data (_definitions)
    encode_transfer_frames(channel, Transfer(...), payload, max_frame_size)

:class:`ServerConnection` speaks the server side over the broker model: SASL, sessions, links,
flow control and settlement, bytes in and bytes out. Errors are
:class:`~embroker.amqp10.ProtocolError` subclasses carrying an AMQP 1.0 error condition.
"""

from __future__ import annotations

from embroker.amqp10._address import Node, parse_address, queue_address
from embroker.amqp10._connection import ConnectionState, ServerConnection
from embroker.amqp10._selector import Selector, SelectorError
from embroker.amqp10._session import serial_add, serial_diff
from embroker.amqp10_common._definitions import (
    COMPOSITES,
    Accepted,
    Attach,
    Begin,
    Close,
    Composite,
    Coordinator,
    Declare,
    Declared,
    DeleteOnClose,
    DeleteOnNoLinks,
    DeleteOnNoLinksOrMessages,
    DeleteOnNoMessages,
    Detach,
    Discharge,
    Disposition,
    End,
    Error,
    Flow,
    Header,
    Modified,
    Open,
    Properties,
    Received,
    Rejected,
    Released,
    SaslChallenge,
    SaslInit,
    SaslMechanisms,
    SaslOutcome,
    SaslResponse,
    Source,
    Target,
    TransactionalState,
    Transfer,
)
from embroker.amqp10_common._errors import (
    CONDITIONS,
    ConnectionError10,
    DecodeError,
    FramingError,
    LinkError,
    ProtocolError,
    SessionError,
)
from embroker.amqp10_common._frames import (
    AMQP_HEADER,
    EMPTY_FRAME,
    FRAME_AMQP,
    FRAME_SASL,
    MIN_MAX_FRAME_SIZE,
    SASL_HEADER,
    Frame,
    FrameReader,
    encode_frame,
    encode_transfer_frames,
)
from embroker.amqp10_common._message import (
    AMQP10_TYPE,
    ParsedMessage,
    from_stream,
    parse_message,
    to_amqp10,
    to_model,
    to_stream,
    value_from_091,
    value_to_091,
)
from embroker.amqp10_common._types import (
    Array,
    Byte,
    Char,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Int,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
    decode_value,
    encode_value,
    skip_value,
)

__all__ = [
    "AMQP10_TYPE", "AMQP_HEADER", "COMPOSITES", "CONDITIONS", "EMPTY_FRAME", "FRAME_AMQP",
    "FRAME_SASL", "MIN_MAX_FRAME_SIZE", "SASL_HEADER", "Accepted", "Array", "Attach", "Begin",
    "Byte", "Char", "Close", "Composite", "ConnectionError10", "ConnectionState", "Coordinator",
    "Decimal32", "Decimal64", "Decimal128", "Declare", "Declared", "DecodeError",
    "DeleteOnClose", "DeleteOnNoLinks", "DeleteOnNoLinksOrMessages", "DeleteOnNoMessages",
    "Described", "Detach", "Discharge", "Disposition", "End", "Error", "Float", "Flow", "Frame",
    "FrameReader", "FramingError", "Header", "Int", "LinkError", "Modified", "Node", "Open",
    "ParsedMessage", "Properties", "ProtocolError", "Received", "Rejected", "Released",
    "SaslChallenge", "SaslInit", "SaslMechanisms", "SaslOutcome", "SaslResponse", "Selector",
    "SelectorError", "ServerConnection", "SessionError", "Short", "Source", "Symbol", "Target",
    "Timestamp", "TransactionalState", "Transfer", "UByte", "UInt", "ULong", "UShort",
    "decode_value", "encode_frame", "encode_transfer_frames", "encode_value", "from_stream",
    "parse_address", "parse_message", "queue_address", "serial_add", "serial_diff", "skip_value",
    "to_amqp10", "to_model", "to_stream", "value_from_091", "value_to_091",
]
