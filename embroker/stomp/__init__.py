"""STOMP 1.0, 1.1 and 1.2, as RabbitMQ 3.10.8's ``rabbitmq_stomp`` and ``rabbitmq_web_stomp``
plugins serve them: an adapter over :class:`embroker.model.Channel` and the adapter kit
(:mod:`embroker.kit`), served on the ``stomp`` port kind (and over WebSocket on
``web_stomp``: :mod:`embroker._builtin_ports`).

- :mod:`._frame`: the frames, read and written (sans-IO, bounded);
- :mod:`._mapping`: headers to AMQP properties and back, message ids, durable subscriptions'
  queue names;
- :mod:`._connection`: the connection, one table from commands to model operations;
- :mod:`._settings`: the plugin's settings (``stomp.*`` in rabbitmq.conf).

See docs/stomp.md.
"""

from ._connection import COMMANDS, StompConnection, StompState, stomp_kind
from ._frame import Frame, FrameError, FrameReader, encode_frame
from ._settings import StompSettings

__all__ = ["COMMANDS", "Frame", "FrameError", "FrameReader", "StompConnection",
           "StompSettings", "StompState", "encode_frame", "stomp_kind"]
