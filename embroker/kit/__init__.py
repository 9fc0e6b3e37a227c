"""The adapter kit: what every protocol shares beside :class:`embroker.model.Channel`.

RabbitMQ 3.10's protocol plugins (STOMP, MQTT, Web-STOMP, AMQP 1.0) each drive
``rabbit_channel`` and share a few helpers beside it in ``amqp_client``: ``rabbit_routing_util``
(a destination's grammar and the queues and bindings it needs) and ``rabbit_direct`` (login,
counted and announced as for every protocol). This package is their home here. A protocol
package imports the kit and the model, never another protocol package; the kit imports the
model only.
"""

from ._login import Client as Client
from ._login import LoginRefused as LoginRefused
from ._login import PeerCertificate as PeerCertificate
from ._login import decode_amqplain as decode_amqplain
from ._login import decode_plain as decode_plain
from ._login import direct_login as direct_login
from ._login import external_check as external_check
from ._login import login as login
from ._login import login_anonymous as login_anonymous
from ._login import login_password as login_password

__all__ = ["Client", "LoginRefused", "PeerCertificate", "decode_amqplain", "decode_plain",
           "direct_login", "external_check", "login", "login_anonymous", "login_password"]
