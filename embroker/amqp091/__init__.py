"""AMQP 0-9-1 protocol layer: sans-IO codec and connection state (no sockets here).

The codec, from bytes to commands::

    header = parse_protocol_header(first_bytes)          # AMQP 0-9-1? another version? 1.0?
    reader = CommandReader(max_frame_size=FRAME_MIN_SIZE)  # then reader.frame_max = tuned value
    for command in reader.feed(data):                    # Command(channel, method, properties,
        ...                                              #         raw_properties, body)

``CommandReader`` is ``FrameParser`` (bytes to frames) and ``ContentAssembler`` (frames to
commands) fused into one loop for speed; the two layers stay available on their own.

and back::

    sock.send(encode_method_frame(channel, QueueDeclareOk(queue="q")))
    sock.send(encode_message(channel, BasicDeliver(...), body, frame_max, properties={...}))

and the server side of a connection, sans-IO::

    conn = ServerConnection(broker, loopback=True)       # fed bytes, hands back bytes
    conn.receive_data(data); sock.send(conn.data_to_send())

Method classes (``BasicPublish``, ``QueueDeclare``...) are in :mod:`embroker.amqp091.methods`,
generated from the table in ``_spec.py``; field tables and properties decode to plain ``dict``
values (see ``_fields`` and ``_properties`` for the type rules). Errors are the connection exceptions of
:mod:`embroker.errors` (501, 502, 503, 504, 505), never anything else.
"""

from __future__ import annotations

from ..fieldtypes import Timestamp as Timestamp
from . import methods as methods
from ._assembly import Command as Command
from ._assembly import CommandReader as CommandReader
from ._connection import ConnectionState as ConnectionState
from ._connection import ServerConnection as ServerConnection
from ._fields import decode_table as decode_table
from ._fields import encode_table as encode_table
from ._frames import FRAME_MIN_SIZE as FRAME_MIN_SIZE
from ._frames import PROTOCOL_HEADER as PROTOCOL_HEADER
from ._frames import BodyFrame as BodyFrame
from ._frames import Frame as Frame
from ._frames import FrameParser as FrameParser
from ._frames import HeaderFrame as HeaderFrame
from ._frames import HeartbeatFrame as HeartbeatFrame
from ._frames import MethodFrame as MethodFrame
from ._frames import ProtocolHeaderKind as ProtocolHeaderKind
from ._frames import encode_message as encode_message
from ._frames import encode_method_frame as encode_method_frame
from ._frames import parse_protocol_header as parse_protocol_header
from ._method import Method as Method

__all__ = [
    "FRAME_MIN_SIZE",
    "PROTOCOL_HEADER",
    "BodyFrame",
    "Command",
    "CommandReader",
    "ConnectionState",
    "Frame",
    "FrameParser",
    "HeaderFrame",
    "HeartbeatFrame",
    "Method",
    "MethodFrame",
    "ProtocolHeaderKind",
    "ServerConnection",
    "Timestamp",
    "decode_table",
    "encode_message",
    "encode_method_frame",
    "encode_table",
    "methods",
    "parse_protocol_header"
]
