"""MQTT 3.1 and 3.1.1 (and 5.0 under the RabbitMQ 4 profile), as RabbitMQ's ``rabbitmq_mqtt``
and ``rabbitmq_web_mqtt`` plugins serve them: an adapter over :class:`embroker.model.Channel`
and the adapter kit (:mod:`embroker.kit`), served on the ``mqtt`` port kind (and over
WebSocket on ``web_mqtt``: :mod:`embroker._builtin_ports`).

See docs/mqtt.md.
"""

from ._settings import MqttSettings

__all__ = ["MqttSettings"]
