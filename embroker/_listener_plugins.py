"""The protocols RabbitMQ serves through a plugin pair: STOMP (``rabbitmq_stomp``,
``rabbitmq_web_stomp``) and MQTT (``rabbitmq_mqtt``, ``rabbitmq_web_mqtt``), each on a
registered port kind (``stomp``, ``mqtt``: :mod:`embroker._builtin_ports`), over TLS, and
over WebSocket at ``/ws`` on a kind of its own (``web_stomp``, ``web_mqtt``).

One table (:data:`PROTOCOLS`) that ``serve``'s options, ``Broker.serve``, ``Server``'s
properties, ``rabbitmq-server``'s configuration, ``rabbitmq-plugins`` and
``rabbitmq-diagnostics listeners`` and the pytest plugin read, so that each protocol is one
row, not code of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, final

__all__ = ["PROTOCOLS", "ListenerPlugin", "by_kind"]


@final
@dataclass(frozen=True, slots=True)
class ListenerPlugin:
    """A protocol served by a plugin on a port kind and by its Web- plugin over WebSocket.

    Attributes:
        kind: the port kind (``"mqtt"``), also the name of ``serve``'s options
            (``--mqtt-port``), ``Broker.serve``'s arguments (``mqtt_port``),
            ``Server``'s properties (``mqtt_url``) and the settings' key in
            ``Server.port_settings``; its WebSocket kind is :attr:`web_kind`.
        title: what people call it (``"MQTT"``; ``"Web-MQTT"`` over WebSocket).
        port, tls_port, web_port, web_tls_port: RabbitMQ's ports (the plugins' defaults;
            the TLS ones as its documentation gives them).
        scheme, tls_scheme: the URLs' schemes (``mqtt://``, ``mqtts://``).
        application, web_application: the plugins' Erlang applications (RabbitMQ names them
            when a listener cannot start).
        purposes: what ``rabbitmq-diagnostics listeners`` says each listener is for
            (plain, TLS, WebSocket, WebSocket over TLS).
    """

    kind: str
    title: str
    port: int
    tls_port: int
    web_port: int
    web_tls_port: int
    scheme: str
    tls_scheme: str
    application: str
    web_application: str
    purposes: tuple[str, str, str, str]

    @property
    def web_kind(self) -> str:
        return f"web_{self.kind}"

    @property
    def web_title(self) -> str:
        return f"Web-{self.title}"

    @property
    def plugin(self) -> str:
        return f"rabbitmq_{self.kind}"

    @property
    def web_plugin(self) -> str:
        return f"rabbitmq_web_{self.kind}"

    @property
    def protocols(self) -> tuple[str, str, str, str]:
        """RabbitMQ's protocol names of the listeners (plain, TLS, WebSocket, WebSocket over
        TLS), as the port kinds carry them."""
        return (self.kind, f"{self.kind}/ssl", f"http/web-{self.kind}",
                f"https/web-{self.kind}")

    @property
    def kinds(self) -> tuple[tuple[str, str, bool], ...]:
        """``(key, kind, TLS)`` of its four ports: the key names the port in ``serve``'s
        options, ``Broker.serve``'s arguments and ``Server``'s properties (``mqtt_tls``:
        ``--mqtt-tls-port``, ``mqtt_tls_port=``, ``server.mqtt_tls_port``)."""
        return ((self.kind, self.kind, False), (f"{self.kind}_tls", self.kind, True),
                (self.web_kind, self.web_kind, False),
                (f"{self.web_kind}_tls", self.web_kind, True))


#: STOMP and MQTT (RabbitMQ 3.10.8's plugins; the texts are rabbitmq-diagnostics').
PROTOCOLS: Final = (
    ListenerPlugin("stomp", "STOMP", 61613, 61614, 15674, 15673, "stomp", "stomp+ssl",
                   "rabbit_stomp", "rabbit_web_stomp_app",
                   ("STOMP", "STOMP over TLS", "STOMP over WebSockets",
                    "STOMP over WebSockets and TLS (HTTPS)")),
    ListenerPlugin("mqtt", "MQTT", 1883, 8883, 15675, 15676, "mqtt", "mqtts",
                   "rabbit_mqtt", "rabbit_web_mqtt_app",
                   ("MQTT", "MQTT over TLS", "MQTT over WebSockets",
                    "MQTT over WebSockets and TLS (HTTPS)")),
)


def by_kind(kind: str) -> ListenerPlugin:
    """The row of a protocol by its port kind (``"mqtt"``)."""
    return next(p for p in PROTOCOLS if p.kind == kind)
