"""The port kinds embroker serves out of the box, each one registration
(:func:`embroker._transport.register_port_kind`): the transport core (``_transport.py``,
``server.py``) imports no protocol; this module, read the first time the registry is, brings
them in.

- ``amqp``: AMQP 0-9-1 and 1.0 on one port, sniffed from the protocol header
  (:class:`embroker._sniff.SniffingConnection`), as RabbitMQ's 5672 (5671 over TLS);
- ``amqp10``: AMQP 1.0 alone (its ports count as ``amqp`` ones in ``max_connections``);
- ``management``: RabbitMQ's management API and console over HTTP (``rabbitmq_management``);
- ``stream``: RabbitMQ's stream protocol (``rabbitmq_stream``);
- ``stomp``: STOMP 1.0-1.2 (``rabbitmq_stomp``: 61613, 61614 over TLS);
- ``web_stomp``: STOMP over WebSocket at ``/ws`` (``rabbitmq_web_stomp``: 15674);
- ``mqtt``: MQTT 3.1 and 3.1.1 (``rabbitmq_mqtt``: 1883, 8883 over TLS);
- ``web_mqtt``: MQTT over WebSocket at ``/ws`` (``rabbitmq_web_mqtt``: 15675);
- ``control``: a node's control port (``Server.serve_control``: the listener makes its
  connections).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._transport import Accepted, PortKind, register_port_kind

if TYPE_CHECKING:
    from ._transport import BrokerConnection, SansIOConnection

__all__: list[str] = []

#: The most connections RabbitMQ 3.10.8's management listener holds: it passes ranch (2.1.0)
#: no ``max_connections`` (rabbit_web_dispatch_sup.erl gives ranch the ``tcp_config`` socket
#: options alone), so ranch's defaults hold, 1024 a connection supervisor, and one supervisor
#: for each of its 10 acceptors (``num_conns_sups`` defaults to ``num_acceptors``).
RANCH_MAX_CONNECTIONS = 10 * 1024
#: Bytes of answers an HTTP (or stream) client may leave unread before the loop stops reading
#: its requests (as MAX_PENDING_OUTPUT of embroker.management: the same 4 MiB).
UNREAD = 4 * 1024 * 1024


def _amqp(accepted: Accepted) -> SansIOConnection:
    from ._sniff import SniffingConnection

    server = accepted.listener
    return SniffingConnection(accepted.broker, peer=accepted.peer, on_output=accepted.on_output,
                              heartbeat=server.heartbeat, frame_max=server.frame_max,
                              channel_max=server.channel_max,
                              handshake_timeout=accepted.policy.handshake_timeout,
                              loopback=accepted.loopback,
                              amqp10_only=accepted.policy.kind == "amqp10", tls=accepted.tls,
                              amqp10=server.amqp10, node=accepted.node)


def _management(accepted: Accepted) -> SansIOConnection:
    from .management._http import HostPolicy, HttpConnection

    server = accepted.listener
    management = server.management
    hosts: HostPolicy | None = server.management_hosts  # (from the server's addresses)
    assert management is not None
    assert hosts is not None
    if accepted.local not in hosts.own:  # the address the client asked for (0.0.0.0: which)
        hosts = HostPolicy(hosts.own | {accepted.local.lower()}, hosts.allowed)
    return HttpConnection(management.begin, screen=management.screen, hosts=hosts,
                          peer=accepted.peer, loopback=accepted.loopback,
                          server_header=management.server_header,
                          scheme="http" if accepted.policy.tls is None else "https")


def _stream(accepted: Accepted) -> BrokerConnection:
    from .stream import StreamConnection

    server = accepted.listener
    secure = accepted.policy.tls is not None
    host, port = server.stream_endpoint_of(server.node, tls=secure)
    return StreamConnection(accepted.broker, peer=accepted.peer, loopback=accepted.loopback,
                            advertised_host=host, advertised_port=port, tls=accepted.tls,
                            on_output=accepted.on_output, node=accepted.node,
                            endpoint_of=lambda node: server.stream_endpoint_of(node, tls=secure))


def _stomp(accepted: Accepted) -> BrokerConnection:
    from .stomp import StompConnection

    return StompConnection.serving(accepted)


#: STOMP's port kind; Web-STOMP is it over the WebSocket carrier. RabbitMQ's STOMP listener
#: takes ``connection_max`` (no limit; rabbit_stomp_sup.erl, v3.10.8), and STOMP connections
#: are broker ones, listed with the AMQP ones (rabbitmqctl list_connections, the management
#: API), open to faults, held by alarms.
STOMP = PortKind("stomp", _stomp, protocol="stomp", tls_protocol="stomp/ssl",
                 plugin="rabbitmq_stomp", limit="stomp", output_bound=UNREAD, locked=True,
                 broker=True, listed=True)


def _web_stomp() -> PortKind:
    from ._websocket import WEB_STOMP, websocket_port_kind

    return websocket_port_kind(STOMP, "web_stomp", WEB_STOMP, protocol="http/web-stomp",
                               tls_protocol="https/web-stomp", plugin="rabbitmq_web_stomp")


def _mqtt(accepted: Accepted) -> BrokerConnection:
    from .mqtt import MqttConnection

    return MqttConnection.serving(accepted)


#: MQTT's port kind; Web-MQTT is it over the WebSocket carrier. Its connections are broker
#: ones as STOMP's (RabbitMQ 3.10's MQTT plugin runs over a direct connection too).
MQTT = PortKind("mqtt", _mqtt, protocol="mqtt", tls_protocol="mqtt/ssl",
                plugin="rabbitmq_mqtt", limit="mqtt", output_bound=UNREAD, locked=True,
                broker=True, listed=True)


def _web_mqtt() -> PortKind:
    from ._websocket import WEB_MQTT, websocket_port_kind

    return websocket_port_kind(MQTT, "web_mqtt", WEB_MQTT, protocol="http/web-mqtt",
                               tls_protocol="https/web-mqtt", plugin="rabbitmq_web_mqtt")


for _kind in (
        # AMQP clients are broker connections the loop feeds under the lock and batches; no
        # limit (RabbitMQ's connection_max, infinity: tcp_listener_sup.erl).
        PortKind("amqp", _amqp, protocol="amqp", tls_protocol="amqp/ssl", limit="amqp",
                 locked=True, broker=True, listed=True, on_demand=False),
        PortKind("amqp10", _amqp, plugin="rabbitmq_amqp1_0", limit="amqp", locked=True,
                 broker=True, listed=True, on_demand=False),
        PortKind("management", _management, protocol="http", tls_protocol="https",
                 plugin="rabbitmq_management", limit="management",
                 max_connections=RANCH_MAX_CONNECTIONS, stranger=True, output_bound=UNREAD),
        # The stream plugin's listener takes RabbitMQ's connection_max (no limit; v3.10.8
        # rabbit_stream_sup.erl); its clients are no AMQP ones: not in server.connections.
        PortKind("stream", _stream, protocol="stream", tls_protocol="stream/ssl",
                 plugin="rabbitmq_stream", limit="stream", stranger=True, output_bound=UNREAD,
                 broker=True),
        STOMP, _web_stomp(), MQTT, _web_mqtt(),
        PortKind("control", None, output_bound=UNREAD, on_demand=False)):
    register_port_kind(_kind)
