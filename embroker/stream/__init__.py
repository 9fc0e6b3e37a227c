"""RabbitMQ's stream protocol (port 5552), sans-IO: the frames and a server connection.

:class:`StreamConnection` is fed bytes and returns bytes, calling the model as the AMQP layers
do; ``embroker.server`` puts it on a port of its own (``broker.serve(stream_port=0)``,
``embroker serve --stream-port N``). See docs/streams.md.
"""

from __future__ import annotations

from ._connection import EXPECTED as EXPECTED
from ._connection import INITIAL_FRAME_MAX as INITIAL_FRAME_MAX
from ._connection import MAX_UNREAD as MAX_UNREAD
from ._connection import MAX_UNSENT as MAX_UNSENT
from ._connection import RESUME_UNSENT as RESUME_UNSENT
from ._connection import State as State
from ._connection import StreamConnection as StreamConnection
from ._frames import Code as Code
from ._frames import Fields as Fields
from ._frames import FrameReader as FrameReader
from ._frames import Key as Key
from ._frames import StreamProtocolError as StreamProtocolError
from ._frames import Writer as Writer
from ._frames import chunk_frame as chunk_frame
from ._frames import response_key as response_key

__all__ = ["EXPECTED", "INITIAL_FRAME_MAX", "MAX_UNREAD", "MAX_UNSENT", "RESUME_UNSENT", "Code",
           "Fields", "FrameReader", "Key", "State", "StreamConnection", "StreamProtocolError",
           "Writer", "chunk_frame", "response_key"]
