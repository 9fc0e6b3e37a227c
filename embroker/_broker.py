"""The public :class:`Broker`: the model's broker plus the ways in (in-process client, listener)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, final

from . import _baseline, _settle, model
from ._listener_plugins import PROTOCOLS
from .client import Connection
from .model import ManualClock, Message, MessageEvent, RoutingDecision
from .model._history import events_of
from .server import NodeServers, Server, node_ports

if TYPE_CHECKING:
    import ssl
    from collections.abc import Collection, Mapping

    import pika

    from .memory import MemoryConnection
    from .memory.pika import BlockingConnection
    from .model import Node
    from .tls import TLSOptions

__all__ = ["Broker"]


@final
class Broker(model.Broker):
    """An embedded AMQP 0-9-1 broker with RabbitMQ's semantics.

    >>> broker = Broker()
    >>> ch = broker.connect().channel()
    >>> ch.exchange_declare("events", "topic")
    >>> ch.queue_declare("audit").queue
    'audit'
    >>> ch.queue_bind("audit", "events", "order.*")
    >>> ch.basic_publish("events", "order.created", b"{}")
    >>> broker.trace[-1].queues
    ('audit',)
    >>> broker.queues["audit"].messages[0].body
    b'{}'
    """

    def connect(self, vhost: str = "/", *, user: str | None = None,
                client_properties: dict[str, Any] | None = None,
                node: Node | str | None = None) -> Connection:
        """Open an in-process connection (no socket) to ``vhost``.

        Args:
            vhost: the virtual host.
            user: a user whose permissions every call is checked against, as on the wire (no
                password: the test vouches for it). Without one, nothing is checked.
            node: the node of the cluster it connects to (a :class:`~embroker.model.Node` of
                :attr:`nodes` or its name; the first by default).

        Raises:
            NotAllowed: (530) no such virtual host, or ``user`` has no access to it.
            KeyError: no node of the cluster is called ``node``.
        """
        return Connection(self, vhost, user=user, client_properties=client_properties,
                          node=node)

    # -- quiescence ------------------------------------------------------------------------------

    def settle(self, timeout: float = 5.0) -> None:
        """Wait until nothing is in flight: every connection's input read and processed, every
        frame the broker owes written, consumers with room given what their queues hold, and
        no timer due. A barrier for tests instead of sleeps.

        Raises:
            SettleTimeout: (an AssertionError) ``timeout`` seconds passed; says what was busy.
        """
        __tracebackhide__ = True
        _settle.settle(self, timeout)

    async def settle_async(self, timeout: float = 5.0) -> None:
        """``await broker.settle_async()``: :meth:`settle` that lets the event loop run."""
        __tracebackhide__ = True
        await _settle.settle_async(self, timeout)

    def wait_until_drained(self, queue: str, timeout: float = 5.0, *, vhost: str = "/") -> None:
        """Wait until ``queue`` holds nothing ready and nothing unacknowledged.

        Raises:
            SettleTimeout: ``timeout`` seconds passed; says what the queue still holds.
        """
        __tracebackhide__ = True
        _settle.wait_until_drained(self, queue, timeout, vhost=vhost)

    async def wait_until_drained_async(self, queue: str, timeout: float = 5.0, *,
                                       vhost: str = "/") -> None:
        """``await``-able :meth:`wait_until_drained`."""
        __tracebackhide__ = True
        await _settle.wait_until_drained_async(self, queue, timeout, vhost=vhost)

    # -- a shared broker -----------------------------------------------------------------------

    def mark_baseline(self) -> None:
        """Remember the topology now (exchanges, queues, bindings of every vhost) as what
        :meth:`reset` returns to."""
        self._baseline = _baseline.take(self)

    def reset(self) -> None:
        """Return to the baseline (:meth:`mark_baseline`): the trace is forgotten, every ready
        message purged, what was declared since deleted and what was deleted declared again.
        Connections and their consumers stay (workers keep running), and so do unacknowledged
        deliveries. Without a marked baseline, the topology stays as it is (it becomes the
        baseline) and the rest is reset."""
        baseline: _baseline.Baseline | None = getattr(self, "_baseline", None)
        if baseline is None:
            self.mark_baseline()
            baseline = self._baseline
        _baseline.reset(self, baseline)

    # -- typed access ----------------------------------------------------------------------------

    @property
    def manual_clock(self) -> ManualClock:
        """The broker's clock as a :class:`~embroker.ManualClock` (typed, for
        ``broker.manual_clock.advance(5)`` under ``mypy --strict``).

        Raises:
            TypeError: the broker's clock is not a ManualClock.
        """
        clock = self.clock
        if not isinstance(clock, ManualClock):
            raise TypeError(f"this broker's clock is {clock!r}, not a ManualClock: make the "
                            "broker with clock=ManualClock() (@pytest.mark.embroker(clock=True))")
        return clock

    # -- messages ------------------------------------------------------------------------------

    def history(self, message: Message) -> list[MessageEvent]:
        """What happened to ``message`` (one found in a queue, or a delivery's ``.message``)
        since it was routed: deliveries, acks, requeues, expiry, dead-lettering..., oldest first.
        Empty for a message that was never routed, or when the broker records no events. A
        snapshot taken under the broker's lock."""
        with self.locked():
            return events_of(message.history)

    def decision_of(self, message: Message) -> RoutingDecision | None:
        """The routing decision that put ``message`` where it is, if the trace still has it."""
        events = message.history
        for decision in reversed(self.trace):
            if decision.message is message or (events is not None and decision._events is events):
                return decision
        return None

    # -- in-memory transports --------------------------------------------------------------

    def pika_connection(self, parameters: pika.connection.Parameters
                        | Sequence[pika.connection.Parameters] | None = None, *,
                        heartbeat: int = 60, name: str | None = None) -> BlockingConnection:
        """A real ``pika.BlockingConnection`` to this broker over an in-memory link: no
        socket, no thread; the broker's side runs in the calling thread, and pika's timers
        (heartbeats, ``sleep``) on the broker's clock. See docs/memory.md.

        Args:
            parameters: pika's parameters (credentials, virtual host, client properties), or
                a list of them, one per node (:attr:`memory_urls`): the first whose node runs
                is used, as pika walks its list of addresses.
            heartbeat: the heartbeat the broker offers (seconds of its clock; 0: none).
            name: the link's name for logs and faults (``"memory:N"`` by default).

        Raises:
            ImportError: pika is not installed.
            pika.exceptions.AMQPConnectionError: the broker refused the connection.
        """
        from .memory.pika import BlockingConnection

        return BlockingConnection(self, parameters, heartbeat=heartbeat, name=name)

    @property
    def memory_url(self) -> str:
        """A URL naming this broker for the in-memory transports of aiormq and aio-pika
        (``aio_pika.connect(broker.memory_url, connection_class=embroker.memory.aio.Connection)``,
        or :meth:`aio_pika_connection`); no host is ever resolved. Heartbeats off."""
        from .memory import memory_url

        return memory_url(self)

    @property
    def memory_urls(self) -> list[str]:
        """:attr:`memory_url` of each node of the cluster, in node order: a client's list of
        addresses (``[pika.URLParameters(u) for u in broker.memory_urls]`` for
        :meth:`pika_connection`, one of them for aio-pika); a stopped node refuses its
        clients as its closed port would."""
        from .memory import memory_url

        return [memory_url(self, node=node) for node in self.nodes]

    @property
    def kombu_urls(self) -> list[str]:
        """:attr:`kombu_url` of each node of the cluster, in node order: kombu's failover list
        (``kombu.Connection(";".join(broker.kombu_urls))``)."""
        from .memory import kombu_url

        self.kombu_url  # noqa: B018 (registers embroker:// with kombu, when it is there)
        return [kombu_url(self, node=node) for node in self.nodes]

    @property
    def kombu_url(self) -> str:
        """kombu's (and Celery's) URL of this broker through the ``embroker://`` transport,
        which it registers with kombu (needs kombu): ``kombu.Connection(broker.kombu_url)``,
        ``Celery(broker=broker.kombu_url)``."""
        from .memory import kombu_url

        try:
            from .memory import kombu as _kombu  # registers embroker://
        except ImportError:  # without kombu the URL is still a URL
            pass
        else:
            _kombu.register()
        return kombu_url(self)

    async def aio_pika_connection(self, vhost: str = "/", *, robust: bool = False,
                                  name: str | None = None, node: model.Node | None = None,
                                  **kwargs: Any) -> Any:
        """A real ``aio_pika.Connection`` (``robust``: ``RobustConnection``) to this broker
        (to its ``node``: the first by default; a robust connection whose node stops retries
        it until it starts) over an in-memory link driven by the running event loop: no
        socket, no thread. ``kwargs`` go to ``aio_pika.connect``.

        Raises:
            ImportError: aio-pika is not installed.
        """
        from .memory.aio import connect

        return await connect(self, vhost, robust=robust, name=name, node=node, **kwargs)

    @property
    def memory_connections(self) -> list[MemoryConnection]:
        """The in-memory client connections open on this broker, oldest first, each with
        the faults a test can inject (as ``server.connections`` for TCP clients)."""
        from .memory import MemoryConnection, MemoryLink

        with self.locked():
            return [MemoryConnection(link) for link in self.transports.of(MemoryLink)]

    def serve(self, host: str = "127.0.0.1", port: int = 0, *, heartbeat: int = 60,
              amqp10_port: int | None = None, management: bool | int = False,
              stream_port: int | None = None,
              max_connections: Mapping[str, int | None] | None = None,
              management_allow_hosts: Collection[str] = (),
              stream_advertised_host: str | None = None,
              stream_advertised_port: int | None = None,
              tls: ssl.SSLContext | TLSOptions | None = None, tls_port: int | None = None,
              stream_tls_port: int | None = None,
              management_tls_port: int | None = None, stomp_port: int | None = None,
              stomp_tls_port: int | None = None, web_stomp_port: int | None = None,
              web_stomp_tls_port: int | None = None, mqtt_port: int | None = None,
              mqtt_tls_port: int | None = None, web_mqtt_port: int | None = None,
              web_mqtt_tls_port: int | None = None,
              listeners: Mapping[str, int] | None = None,
              tls_listeners: Mapping[str, int] | None = None,
              port_settings: Mapping[str, Any] | None = None,
              node: Node | str | None = None) -> Server:
        """Start a listener that real AMQP 0-9-1 and AMQP 1.0 clients can connect to (one port
        serves both, told apart by the protocol header, as RabbitMQ's).

        Use it as a context manager, or call ``.stop()``::

            with broker.serve() as server:
                pika.BlockingConnection(pika.URLParameters(server.url))

        Args:
            host: the address to listen on; ``"localhost"`` listens on 127.0.0.1 and ::1.
            port: the port; 0 takes any free one (see ``server.port`` / ``server.url``).
            heartbeat: the heartbeat interval offered to clients, in seconds (0: none).
            amqp10_port: also listen on this port for AMQP 1.0 alone (0: any free port; see
                ``server.amqp10_port`` / ``server.amqp10_url``).
            management: also serve RabbitMQ's management HTTP API and the console, from the
                same thread: ``True`` on any free port, or that port number (see
                ``server.management_url``; docs/management.md).
            stream_port: also serve RabbitMQ's stream protocol on this port (0: any free
                port; see ``server.stream_port``; docs/streams.md).
            stream_advertised_host, stream_advertised_port: the host and port the stream
                protocol's Open and Metadata name (RabbitMQ's ``stream.advertised_host`` and
                ``stream.advertised_port``); by default, as RabbitMQ's, the host part of the
                node's name (``localhost``) and the stream port (``server.stream_url``).
            max_connections: the most connections a port holds, by kind (``"amqp"``,
                ``"management"``, ``"stream"``; ``None``: no limit); a kind left out keeps
                RabbitMQ's default (``embroker.server.default_max_connections``).
            management_allow_hosts: more names the management port answers for (``Host``)
                and whose pages it answers (``Origin``), besides its own address,
                ``localhost`` and loopback addresses; ``"*"``: any (docs/management.md).
            tls: the TLS ports' settings: :class:`~embroker.tls.TLSOptions` (RabbitMQ's
                ``ssl_options``) or a server-side ``ssl.SSLContext`` (docs/tls.md).
            tls_port: serve amqps on this port (0: any free port; ``server.tls_url``): AMQP
                0-9-1 and 1.0 over TLS, as RabbitMQ's ``listeners.ssl``.
            stream_tls_port, management_tls_port: the stream protocol and the management API
                over TLS (RabbitMQ's ``stream.listeners.ssl`` and ``management.ssl.port``).
            stomp_port, stomp_tls_port: serve STOMP on this port (0: any free port; RabbitMQ's
                61613), and over TLS (61614; needs ``tls``): ``server.stomp_url``.
            web_stomp_port, web_stomp_tls_port: STOMP over WebSocket at ``/ws`` (RabbitMQ's
                15674), and over TLS (``wss``; RabbitMQ's ``web_stomp.ssl.port``):
                ``server.web_stomp_url``.
            mqtt_port, mqtt_tls_port: serve MQTT 3.1 and 3.1.1 on this port (RabbitMQ's
                1883), and over TLS (8883; needs ``tls``): ``server.mqtt_url``.
            web_mqtt_port, web_mqtt_tls_port: MQTT over WebSocket at ``/ws`` (RabbitMQ's
                15675), and over TLS (``wss``; ``web_mqtt.ssl.port``, 15676 in RabbitMQ's
                documentation): ``server.web_mqtt_url``.
            listeners, tls_listeners: more ports of registered kinds, by kind's name
                (``{"stomp": 0}``), plain and over TLS (``Server(listeners=...)``).
            port_settings: each registered kind's settings, by its name
                (``{"stomp": StompSettings(default_user=None)}``: ``server.port_settings``).
            node: the node of the cluster it serves (a :class:`~embroker.model.Node` of
                :attr:`nodes` or its name; the first by default): its clients connect to
                that node, and ``server.stop_app()`` stops it (:meth:`serve_nodes` serves
                every node).

        Raises:
            PortInUse: the port is taken.
            ValueError: ``max_connections`` names no kind of port, or a limit under 1;
                ``node`` is no node of the cluster.
        """
        management_port = None if management is False else (
            0 if management is True else int(management))
        plain, secure = dict(listeners or {}), dict(tls_listeners or {})
        given = {"stomp": stomp_port, "stomp_tls": stomp_tls_port,
                 "web_stomp": web_stomp_port, "web_stomp_tls": web_stomp_tls_port,
                 "mqtt": mqtt_port, "mqtt_tls": mqtt_tls_port, "web_mqtt": web_mqtt_port,
                 "web_mqtt_tls": web_mqtt_tls_port}
        for protocol in PROTOCOLS:  # (stomp_port=..., web_stomp_tls_port=..., mqtt_port=...)
            for key, kind, tls_port_of_kind in protocol.kinds:
                if (number := given[key]) is not None:
                    (secure if tls_port_of_kind else plain)[kind] = number
        return Server(self, host, port, heartbeat=heartbeat, amqp10_port=amqp10_port,
                      management_port=management_port, stream_port=stream_port,
                      max_connections=max_connections,
                      management_allow_hosts=management_allow_hosts,
                      stream_advertised_host=stream_advertised_host,
                      stream_advertised_port=stream_advertised_port, tls=tls,
                      tls_port=tls_port, stream_tls_port=stream_tls_port,
                      management_tls_port=management_tls_port, listeners=plain,
                      tls_listeners=secure, port_settings=port_settings, node=node).start()

    def serve_nodes(self, host: str = "127.0.0.1", **settings: Any) -> NodeServers:
        """Start a listener on every node of the cluster (``Broker(nodes=3)``), each with its
        own ports and loop thread, as a cluster's nodes each have their listeners: a client's
        list of addresses is a list of nodes.

        Use it as a context manager, or call ``.stop()``::

            with broker.serve_nodes() as servers:
                parameters = [pika.URLParameters(url) for url in servers.urls]
                pika.BlockingConnection(parameters)      # node 1, else node 2...
                servers.stop_node("embroker-2@localhost")   # rabbitmqctl -n ... stop_app

        Args:
            host: the address every node listens on.
            settings: :meth:`serve`'s keyword arguments, for each node: a port given as 0
                (``port=0``, ``management=True``, ``stomp_port=0``...) is any free port for
                each node; another number is the first node's, and the next nodes take the
                numbers after it (``port=5672``: 5672, 5673, 5674, as RabbitMQ's guide to a
                local cluster numbers them).

        Returns:
            The listeners, started, in the order of :attr:`nodes`
            (:class:`~embroker.server.NodeServers`).

        Raises:
            PortInUse: a port is taken (the listeners started before it are stopped).
            ValueError: as :meth:`serve`, or ``node`` given (each node is served).
        """
        if "node" in settings:
            raise ValueError("serve_nodes serves every node: serve(node=...) serves one")
        servers: list[Server] = []
        try:
            for index, node in enumerate(self.nodes):
                servers.append(self.serve(host, node=node, **node_ports(settings, index)))
        except BaseException:
            for server in servers:
                server.stop()
            raise
        return NodeServers(servers)
