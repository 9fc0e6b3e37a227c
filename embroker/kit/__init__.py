"""The adapter kit: what every protocol shares beside :class:`embroker.model.Channel`.

RabbitMQ 3.10's protocol plugins (STOMP, MQTT, Web-STOMP, AMQP 1.0) each drive
``rabbit_channel`` and share a few helpers beside it in ``amqp_client``: ``rabbit_routing_util``
(a destination's grammar and the queues and bindings it needs) and ``rabbit_direct`` (login,
counted and announced as for every protocol). This package is their home here. A protocol
package imports the kit and the model, never another protocol package; the kit imports the
model only.
"""

from ._destinations import DESTINATION_PREFIXES as DESTINATION_PREFIXES
from ._destinations import Destination as Destination
from ._destinations import DestinationError as DestinationError
from ._destinations import DestinationErrorKind as DestinationErrorKind
from ._destinations import DestinationType as DestinationType
from ._destinations import Direction as Direction
from ._destinations import Subscription as Subscription
from ._destinations import ensure_binding as ensure_binding
from ._destinations import ensure_endpoint as ensure_endpoint
from ._destinations import parse_destination as parse_destination
from ._destinations import private_queue as private_queue
from ._destinations import subscribe as subscribe

__all__ = [
    "DESTINATION_PREFIXES", "Destination", "DestinationError", "DestinationErrorKind",
    "DestinationType", "Direction", "Subscription", "ensure_binding", "ensure_endpoint",
    "parse_destination", "private_queue", "subscribe",
]
