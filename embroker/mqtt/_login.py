"""Who an MQTT CONNECT logs in as, and to which virtual host (RabbitMQ 3.10.8's
``rabbit_mqtt_processor``: ``creds/3`` and ``get_vhost/3``). The login itself is the adapter
kit's (:func:`embroker.kit.direct_connect`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..kit import certificate_name

if TYPE_CHECKING:
    from ..model import Broker
    from ._settings import MqttSettings

__all__ = ["credentials_of", "vhost_and_user"]


def credentials_of(broker: Broker, settings: MqttSettings, tls: Any, username: str | None,
                   password: str | None) -> tuple[str, str | None, bool] | None:
    """``creds/3``: the user name and password; else (``ssl_cert_login``) the TLS client
    certificate's name, with no password; else (``allow_anonymous``) the default user; else
    ``None`` (refused). The last item says whether the name is the certificate's."""
    if username is not None or password is not None:
        if username is None or password is None:
            return None
        return username, password, False
    if settings.ssl_cert_login:
        name = certificate_name(broker, tls)
        if name is not None:
            return name, None, True
    if settings.allow_anonymous and settings.default_user is not None:
        return settings.default_user[0], settings.default_user[1], False
    return None


def vhost_and_user(broker: Broker, settings: MqttSettings, port: int, user: str,
                   certificate: str | None) -> tuple[str, str]:
    """``get_vhost/3``: without a client certificate, ``vhost:user`` (split at the last
    colon), else the port's vhost, else the settings'; with one, the certificate's vhost
    (global parameter ``mqtt_default_vhosts``), else the port's, else the user name's or the
    settings'. The port's vhost is the global parameter ``mqtt_port_to_vhost_mapping`` (read
    at each login, as RabbitMQ reads it), else the listener's settings.

    Returns:
        The virtual host and the user name.
    """
    parameters = broker.global_parameters()
    by_port = parameters.get("mqtt_port_to_vhost_mapping")
    if not isinstance(by_port, dict):
        by_port = settings.port_to_vhost
    port_vhost = by_port.get(str(port))
    by_certificate = parameters.get("mqtt_default_vhosts")
    if certificate is not None:
        if isinstance(by_certificate, dict) and certificate in by_certificate:
            return str(by_certificate[certificate]), user
        if port_vhost is not None:
            return str(port_vhost), user
    vhost, colon, name = user.rpartition(":")
    if colon:
        return vhost, name
    if port_vhost is not None and certificate is None:
        return str(port_vhost), user
    return settings.vhost, user
