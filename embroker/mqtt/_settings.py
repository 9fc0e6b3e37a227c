"""The MQTT plugin's settings (RabbitMQ 3.10.8's ``rabbitmq_mqtt`` application environment,
``rabbitmq.conf``'s ``mqtt.*`` keys), as a listener hands them to its MQTT connections.

A :class:`~embroker.server.Server` keeps them in ``port_settings["mqtt"]`` (the same object
for Web-MQTT, whose handler reads the MQTT plugin's environment too); a connection reads them
as it is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import final

__all__ = ["MqttSettings"]


@final
@dataclass(frozen=True, slots=True)
class MqttSettings:
    """What ``rabbitmq_mqtt`` is configured with (each default is RabbitMQ 3.10.8's).

    Attributes:
        default_user: ``(user, password)`` a CONNECT without credentials logs in with, when
            ``allow_anonymous`` (``mqtt.default_user``/``mqtt.default_pass``).
        allow_anonymous: a CONNECT without credentials logs in as the default user
            (``mqtt.allow_anonymous``).
        ssl_cert_login: over TLS, a CONNECT without credentials logs in as the client
            certificate's name (``mqtt.ssl_cert_login``).
        vhost: the virtual host of a user name that names none (``mqtt.vhost``).
        exchange: the exchange MQTT publishes to and subscribes at (``mqtt.exchange``).
        subscription_ttl: milliseconds a persistent session's queue outlives its connection
            (``mqtt.subscription_ttl``: its ``x-expires``; ``None``: forever).
        prefetch: the prefetch count of an MQTT connection's channel (``mqtt.prefetch``).
        login_timeout: seconds a connection may take to send CONNECT.
        port_to_vhost: the vhost a connection to a listener port logs in to
            (``mqtt_port_to_vhost_mapping``, a global parameter in RabbitMQ).
    """

    default_user: tuple[str, str] | None = ("guest", "guest")
    allow_anonymous: bool = True
    ssl_cert_login: bool = False
    vhost: str = "/"
    exchange: str = "amq.topic"
    subscription_ttl: int | None = 86_400_000
    prefetch: int = 10
    login_timeout: float = 10.0
    port_to_vhost: Mapping[str, str] = field(default_factory=dict)
