"""The adapter kit: what every protocol shares beside :class:`embroker.model.Channel`.

RabbitMQ 3.10's protocol plugins (STOMP, MQTT, Web-STOMP, AMQP 1.0) each drive
``rabbit_channel`` and share a few helpers beside it in ``amqp_client``: ``rabbit_routing_util``
(a destination's grammar and the queues and bindings it needs) and ``rabbit_direct`` (login,
counted and announced as for every protocol). This package is their home here. A protocol
package imports the kit and the model, never another protocol package; the kit imports the
model only.
"""

from ._confirms import coalesce, runs
from ._destinations import (
    DESTINATION_PREFIXES,
    Destination,
    DestinationError,
    DestinationErrorKind,
    DestinationType,
    Direction,
    Subscription,
    ensure_binding,
    ensure_endpoint,
    parse_destination,
    private_queue,
    subscribe,
)
from ._endpoints import Endpoints
from ._login import (
    Client,
    DirectRefused,
    LoginRefused,
    PeerCertificate,
    certificate_name,
    check_password,
    decode_amqplain,
    decode_plain,
    direct_connect,
    direct_login,
    external_check,
    login,
    login_anonymous,
    login_password,
)

__all__ = [
    "DESTINATION_PREFIXES", "Client", "Destination", "DestinationError", "DestinationErrorKind",
    "DestinationType", "DirectRefused", "Direction", "Endpoints", "LoginRefused",
    "PeerCertificate", "Subscription", "certificate_name", "check_password", "coalesce",
    "decode_amqplain", "decode_plain", "direct_connect", "direct_login", "ensure_binding",
    "ensure_endpoint", "external_check", "login", "login_anonymous", "login_password",
    "parse_destination", "private_queue", "runs", "subscribe",
]
