"""MQTT 3.1 and 3.1.1, as RabbitMQ 3.10.8's ``rabbitmq_mqtt`` and ``rabbitmq_web_mqtt``
plugins serve them: an adapter over :class:`embroker.model.Channel` and the adapter kit
(:mod:`embroker.kit`), served on the ``mqtt`` port kind (and over WebSocket on ``web_mqtt``:
:mod:`embroker._builtin_ports`).

- :mod:`._packet`: the packets, read and written (sans-IO, bounded);
- :mod:`._connection`: the connection, one table from packets to model operations;
- :mod:`._settings`: the plugin's settings (``mqtt.*`` in rabbitmq.conf).
"""

from ._connection import PACKETS, MqttConnection, MqttState, mqtt_kind, to_amqp, to_mqtt
from ._packet import PacketError, PacketReader
from ._settings import MqttSettings

__all__ = ["PACKETS", "MqttConnection", "MqttSettings", "MqttState", "PacketError",
           "PacketReader", "mqtt_kind", "to_amqp", "to_mqtt"]
