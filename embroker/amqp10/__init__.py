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

from embroker import amqp10_common
from embroker.amqp10._address import Node, parse_address, queue_address
from embroker.amqp10._connection import ConnectionState, ServerConnection
from embroker.amqp10._selector import Selector, SelectorError
from embroker.amqp10._session import serial_add, serial_diff
from embroker.amqp10_common import *  # noqa: F403  (the codec, as this package always gave it)

__all__ = ["ConnectionState", "Node", "Selector", "SelectorError", "ServerConnection",
           "parse_address", "queue_address", "serial_add", "serial_diff"]
__all__ += amqp10_common.__all__
