"""An MQTT connection: bytes in, :class:`embroker.model.Channel` operations, bytes out.

Theory of operation
-------------------
RabbitMQ 3.10.8's MQTT plugin is an adapter over a direct connection: its reader
(``rabbit_mqtt_reader``) parses packets, its processor (``rabbit_mqtt_processor``) turns each
into calls on ``rabbit_channel``. So is this one (:data:`PACKETS`):

===========  ========================================================================================
packet       what it is in the model
===========  ========================================================================================
CONNECT      the vhost from the user name (``vhost:user``), the port or the settings; the kit's
             ``direct_connect``; the client id registered (:class:`~embroker.model.ClientIds`:
             another holder is closed); ``basic_qos`` (``prefetch``); the session's queue kept
             or deleted (clean session)
PUBLISH      ``basic_publish`` to the exchange (``amq.topic``) with the topic as routing key
             (``/`` → ``.``, ``+`` → ``*``), headers ``x-mqtt-publish-qos`` and
             ``x-mqtt-dup``; QoS 1 on a channel in confirm mode, PUBACK at the confirm; QoS 2
             taken as 1; RETAIN kept in the vhost's :class:`~embroker.model.RetainedMessages`
SUBSCRIBE    a queue per QoS (``mqtt-subscription-<client id>qos0``/``qos1``: declared and
             consumed once), ``queue_bind`` per topic filter; the retained message of each
             filter named exactly
UNSUBSCRIBE  ``queue_unbind``
PUBACK       ``basic_ack`` of the delivery it names
PINGREQ      PINGRESP
DISCONNECT   the end, without the will
===========  ========================================================================================

The will is published when the connection ends otherwise (the client vanished, or its keep-alive
ran out), as the plugin's ``send_will/1`` does. Under RabbitMQ 4's profile the message is
RabbitMQ 3.13+'s (:mod:`._v5`): no ``x-mqtt-*`` headers, the delivered QoS from the delivery
mode, the client id held per virtual host and a connection taken over sending its will.
Permissions (topic permissions with ``client_id``, ``username`` and ``vhost``) are the model's;
a refusal ends the connection.
"""

from __future__ import annotations

import base64
import enum
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from .._untrusted import log_text
from ..errors import AMQPError
from ..fieldtypes import Byte, Long
from ..kit import Client, DirectRefused, Endpoints, certificate_name, direct_connect
from ..model import AlarmBlocking, Cancelled, Confirmed, ConnectionKind, Delivered, Retained
from . import _packet5, _v5
from ._login import credentials_of, vhost_and_user
from ._packet import (
    Connect,
    Disconnect,
    PacketError,
    PacketReader,
    PingReq,
    PubAck,
    Publish,
    Subscribe,
    Unsubscribe,
    connack,
    pingresp,
    puback,
    publish,
    suback,
    unsuback,
)
from ._settings import MqttSettings

if TYPE_CHECKING:
    from .._transport import Accepted
    from ..model import Broker, Channel, Node
    from ..model import Connection as ModelConnection
    from ..model._events import ChannelEvent

__all__ = ["PACKETS", "MqttConnection", "MqttState", "mqtt_kind", "to_amqp", "to_mqtt"]

log = logging.getLogger("embroker.mqtt")

#: CONNACK's return codes (``?CONNACK_*``).
ACCEPTED, PROTOCOL_LEVEL, IDENTIFIER_REJECTED, UNAVAILABLE, BAD_CREDENTIALS, NOT_AUTHORIZED = \
    range(6)
#: The versions by protocol level, as the plugin names them (``human_readable_mqtt_version``).
VERSIONS: Final = {3: "3.1.0", 4: "3.1.1", 5: "5.0"}
#: The largest packet id; the next after it is 1 (``ensure_valid_mqtt_message_id/1``).
_MAX_ID: Final = 0xFFFF


class MqttState(enum.Enum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    CLOSED = "closed"


@cache
def mqtt_kind(version: str, web: bool = False) -> ConnectionKind:
    """The model's kind of an MQTT connection (``MQTT 3.1.1``, ``Web MQTT 3.1.1``): a direct
    connection, not read at all while a resource alarm lasts (``rabbit_mqtt_reader``'s
    ``control_throttle/1``), counted against ``max-connections``."""
    name = "Web MQTT" if web else "MQTT"
    return ConnectionKind(name, f"{name} {version}", f"{{'{name}',\"{version}\"}}",
                          alarm_blocking=AlarmBlocking.READING, direct=True,
                          listing="mqtt_connections")


def to_amqp(topic: str) -> str:
    """An MQTT topic (filter) as a routing key (``rabbit_mqtt_util:to_amqp/1``)."""
    return topic.replace("/", ".").replace("+", "*")


def to_mqtt(routing_key: str) -> str:
    """A routing key as an MQTT topic (``rabbit_mqtt_util:to_mqtt/1``)."""
    return routing_key.replace("*", "+").replace(".", "/")


def _client_id() -> str:
    # rabbit_mqtt_util:gen_client_id/0: a guid in URL-safe base64, no padding.
    return base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")


@dataclass(slots=True)
class _Will:
    topic: str
    payload: bytes
    qos: int
    retain: bool


class _End(Exception):
    """The connection ends (the plugin's reader stops), after what was sent."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MqttConnection:
    """One MQTT connection (a :class:`embroker._transport.BrokerConnection`).

    Args:
        broker: the model broker.
        settings: the plugin's settings.
        peer, local: the client's address and the one it reached (``host:port``).
        loopback: whether it came over a loopback interface.
        tls: its TLS session on a TLS port (``ssl_cert_login``).
        on_output: called (under the broker's lock) when output is ready that its own input
            did not cause (a delivery).
        web: it is carried by a WebSocket (Web-MQTT).
    """

    stops_silently = True  # (the reader stops: MQTT 3.1.1 has no close to send)

    def __init__(self, broker: Broker, *, settings: MqttSettings | None = None,
                 peer: str = "", local: str = "", loopback: bool = True, tls: Any = None,
                 on_output: Callable[[], None] | None = None, web: bool = False,
                 node: Node | None = None) -> None:
        self.broker = broker
        #: The node its client reached (``None``: the first): its model connection's.
        self.node = node
        self.settings = settings if settings is not None else MqttSettings()
        self.peer, self.local, self.loopback, self.tls, self.web = peer, local, loopback, tls, web
        self._on_output = on_output
        self.state = MqttState.CONNECTING
        self.level = 4
        self.user: str | None = None
        self.vhost: str | None = None
        self.client_id: str | None = None
        self.model: ModelConnection | None = None
        self.channel: Channel | None = None
        self._publisher: Channel | None = None  # QoS 1 publishes, in confirm mode
        self._publisher_died = False
        self.client_properties: dict[str, Any] = {"product": "MQTT client"}
        self.failure: BaseException | None = None
        self.should_close = False
        #: Whether a resource alarm holds it from being read (set by its listener).
        self.held_by_alarm = broker.holds(self.kind)
        self._reader: PacketReader | _packet5.PacketReader = PacketReader()
        #: RabbitMQ 4's profile: the CONNECT's bytes, until its level picks the reader.
        self._sniffed: bytearray | None = bytearray() if broker.profile.rabbitmq4 else None
        #: The MQTT 5.0 session's state (a level-5 CONNECT under RabbitMQ 4's profile).
        self.v5: _v5.Session | None = None
        self._out: list[bytes] = []
        self._clean = True
        self._will: _Will | None = None
        self._consumers: dict[int, str] = {}  # QoS -> consumer tag
        self._subscriptions: dict[str, list[int]] = {}  # topic filter -> QoS of each
        self._awaiting: dict[int, int] = {}  # packet id -> delivery tag
        self._unacked: dict[int, int] = {}  # publish sequence -> packet id
        self._acked: set[int] = set()  # sequences confirmed, their PUBACKs not sent yet
        self._handling = False  # a packet is being handled: its deliveries wait (_deferred)
        self._deferred: list[bytes] = []
        self._next_id = 1
        self._keep_alive = 0
        now = broker.clock.monotonic()
        self._login_deadline = now + self.settings.login_timeout
        self._last_received = now

    @classmethod
    def serving(cls, accepted: Accepted) -> MqttConnection:
        """The connection serving a socket an ``mqtt`` (or ``web_mqtt``) port accepted."""
        settings = getattr(accepted.listener, "port_settings", {}).get("mqtt")
        return cls(accepted.broker, settings=settings, peer=accepted.peer,
                   local=accepted.local_address, loopback=accepted.loopback, tls=accepted.tls,
                   on_output=accepted.on_output, web=accepted.policy.kind == "web_mqtt",
                   node=accepted.node)

    # -- BrokerConnection ----------------------------------------------------------------------

    @property
    def kind(self) -> ConnectionKind:
        return mqtt_kind(VERSIONS.get(self.level, "3.1.1"), self.web)

    @property
    def channel_numbers(self) -> tuple[int, ...]:
        return tuple(c.number for c in (self.channel, self._publisher) if c is not None)

    @property
    def has_output(self) -> bool:
        return bool(self._out) or self.should_close

    @property
    def blocked(self) -> bool:
        """Not read while a resource alarm lasts (the plugin's reader is ``blocked``)."""
        return self.held_by_alarm

    def data_to_send(self) -> bytes:
        data = b"".join(self._out)
        self._out.clear()
        return data

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the client (``b""``: it closed the socket: the will goes out)."""
        if not data:
            self._lost(will=True)
            return
        if self.state is MqttState.CLOSED or self.should_close:
            return
        self._last_received = self.broker.clock.monotonic()
        try:
            if self._sniffed is not None:
                self._sniffed += data
                if not self._sniff():
                    return
            else:
                self._reader.feed(data)
            while not self.should_close:
                packet = self._reader.next()
                if packet is None:
                    break
                self._handle(packet)
        except (PacketError, _packet5.PacketError) as error:
            log.error("MQTT cannot parse a frame on connection %s: %s", log_text(self.peer),
                      log_text(error.reason))
            if isinstance(error, _packet5.PacketError) and error.reason_code is not None:
                self._disconnect(error.reason_code)
            self._end()
        except _End as end:
            log.error("MQTT connection %s is closing: %s", log_text(self.peer),
                      log_text(end.reason))
            self._end()
        except AMQPError as refused:  # (the channel died: the plugin's reader stops)
            log.error("MQTT connection %s is closing: %s", log_text(self.peer),
                      log_text(refused.reply_text))
            self._end()

    def _sniff(self) -> bool:
        # Under RabbitMQ 4's profile the CONNECT's level picks the codec: 3.13's for a level-5
        # client (read by _packet5 from then on), 3.10's for levels 3 and 4 (whose bytes stay
        # as they were). Whether the bytes are read now (False: wait for more).
        assert self._sniffed is not None
        probe = _packet5.PacketReader()
        probe.feed(bytes(self._sniffed))
        try:
            first = probe.next()
        except _packet5.PacketError:
            first = None
        else:
            if first is None:
                return False
        sniffed, self._sniffed = bytes(self._sniffed), None
        if isinstance(first, _packet5.Connect) and first.level == 5:
            self._reader = probe
            self.v5 = _v5.Session()
            self._handle(first)
        else:
            self._reader.feed(sniffed)
        return True

    def tick(self) -> None:
        """The login timeout and the keep-alive, on the broker's clock."""
        if self.state is MqttState.CLOSED or self.should_close:
            return
        now = self.broker.clock.monotonic()
        if self.state is MqttState.CONNECTING:
            if now >= self._login_deadline:
                log.error("closing MQTT connection %s (login timeout)", log_text(self.peer))
                self._end()
            return
        if self.held_by_alarm:  # (rabbit_heartbeat:pause_monitor)
            self._last_received = now
        elif self._keep_alive and now - self._last_received >= 2 * self._keep_alive:
            log.error("closing MQTT connection %s (keepalive timeout)", log_text(self.peer))
            self._disconnect(_packet5.ReasonCode.KEEP_ALIVE_TIMEOUT)
            self._lost(will=True)

    def internal_error(self, error: AMQPError) -> None:
        self._end()

    def close(self, error: AMQPError) -> None:
        """The broker closes it (``close_connection``, a fault): the socket ends, no will."""
        self._end()
        self._notify()

    def publishers_blocked(self, reason: str) -> None:
        """(An alarm holds MQTT from reading: :attr:`held_by_alarm`, set by the listener.)"""

    def publishers_unblocked(self) -> None:
        """(See :meth:`publishers_blocked`.)"""

    def on_restart(self) -> None:
        self._end()

    def killed(self, reason: str) -> None:
        log.info("MQTT connection %s ended: %s", log_text(self.peer), log_text(reason))

    def connection_lost(self) -> None:
        """The socket is gone (the listener dropped it): as the client closing it."""
        self._lost(will=True)

    # -- the end -------------------------------------------------------------------------------

    def _disconnect(self, code: int) -> None:
        # send_disconnect/2: a DISCONNECT with a reason code, to a level-5 client only.
        if self.v5 is not None and self.state is not MqttState.CLOSED and not self.should_close:
            self._write(_packet5.disconnect(code))

    def _notify(self) -> None:
        if self._on_output is not None:
            self._on_output()

    def _lost(self, *, will: bool) -> None:
        if self.state is MqttState.CLOSED:
            return
        if will:
            self._send_will()
        self._end()

    def _end(self) -> None:
        # close_connection/1: the client id unregistered, the model connection closed.
        self.should_close = True
        if self.state is MqttState.CLOSED:
            return
        self.state = MqttState.CLOSED
        if self.client_id is not None:
            self.broker.client_ids.unregister(self.client_id, self, scope=self._id_scope)
        if self.model is not None:
            self.model.close()
            self.model = None

    def _send_will(self) -> None:
        # send_will/1: published if its topic may be written; retained if it says so. At
        # level 5 a Will Delay Interval may hold it (_v5.send_delayed_will).
        will, self._will = self._will, None
        if will is None or self.channel is None or self.model is None or \
                not self.model.is_open:
            return
        session = self.v5
        if session is not None and _v5.send_delayed_will(self, will.topic, will.payload,
                                                         will.qos, will.retain):
            return
        packet: Publish | _packet5.Publish = \
            Publish(will.topic, will.payload, will.qos, will.retain) if session is None else \
            _packet5.Publish(will.topic, will.payload, will.qos, will.retain,
                             properties=session.will_properties)
        try:
            self._publish(packet, will=True, extra=session.will if session is not None else None)
        except AMQPError as refused:
            self._log_will_failure(refused)

    def _log_will_failure(self, refused: AMQPError) -> None:
        log.warning("Could not send last will: %s", log_text(refused.reply_text))

    # -- packets -------------------------------------------------------------------------------

    def _handle(self, packet: Any) -> None:
        # One packet: its answer, then the deliveries it caused (they reach the plugin's
        # reader after it has answered).
        if self.state is MqttState.CONNECTING and \
                not isinstance(packet, (Connect, _packet5.Connect)):
            raise _End("connect_expected")
        self._handling = True
        try:
            (_v5.PACKETS if self.v5 is not None else PACKETS)[type(packet)](self, packet)
        finally:
            self._handling = False
            deferred, self._deferred = self._deferred, []
            self._out.extend(deferred)

    def _write(self, data: bytes) -> None:
        self._out.append(data)

    def _connack(self, code: int, present: bool = False) -> None:
        if self.v5 is not None:
            _v5.connack(self, code, present)
        else:
            self._write(connack(code, present))

    def _puback(self, packet_id: int, code: int = 0) -> None:
        self._write(puback(packet_id) if self.v5 is None else _v5.puback(self, packet_id, code))

    def _on_connect(self, packet: Connect) -> None:
        if self.model is not None:  # (a second CONNECT: connack_dup_auth)
            self._connack(ACCEPTED, self._session_present())
            return
        self.level = packet.level
        client_id = packet.client_id or _client_id()
        if not packet.client_id and not packet.clean_session:
            self._connack(IDENTIFIER_REJECTED)
            raise _End("invalid_client_id")
        self.client_properties = {"client_id": client_id, "product": "MQTT client"}
        credentials = credentials_of(self.broker, self.settings, self.tls, packet.username,
                                     packet.password)
        if credentials is None:
            self.broker.access.attempts.record("mqtt", False, address=self._ends.peer_host,
                                               user=packet.username or "")
            self._connack(BAD_CREDENTIALS)
            raise _End("unauthenticated")
        user, password, certificate = credentials
        vhost, user = vhost_and_user(self.broker, self.settings, self._ends.port, user,
                                     certificate_name(self.broker, self.tls))
        code = self._login(vhost, user, password, certificate, client_id,
                           packet.clean_session)
        if code != ACCEPTED:
            self._connack(code)
            raise _End("login refused")
        self.client_id, self._clean = client_id, packet.clean_session
        # register_client_id/4: RabbitMQ 3.13+ hold an id per vhost and send the old
        # connection's will, unless this one keeps its session with a delayed will of its own
        delays_will = self.v5 is not None and bool(self.v5.will_properties.will_delay_interval)
        self.broker.client_ids.register(client_id, self, self._duplicate, scope=self._id_scope,
                                        notice=packet.clean_session or not delays_will)
        assert self.model is not None
        self.channel = self.model.open_channel(1)
        self.channel.listener = self._on_event
        self.channel.basic_qos(prefetch_count=self.settings.prefetch if self.v5 is None
                                else min(self.settings.prefetch, self.v5.receive_maximum))
        self._keep_alive = packet.keep_alive
        if packet.will is not None:
            w = packet.will
            self._will = _Will(w.topic, w.payload, w.qos, w.retain)
        self.state = MqttState.CONNECTED
        if isinstance(self._reader, PacketReader):
            self._reader.max_packet = self.broker.max_message_size + 64 * 1024
        if self.broker.profile.rabbitmq4 and not _v5.clear_will(self):
            self._connack(NOT_AUTHORIZED)
            raise _End("cannot delete the delayed will")
        try:
            present = self._clean_or_resume()
        except AMQPError:
            self._connack(UNAVAILABLE)
            raise _End("cannot start the session") from None
        self._connack(ACCEPTED, present)

    def _login(self, vhost: str, user: str, password: str | None, certificate: bool,
               client_id: str, packet_clean: bool) -> int:
        # process_login/4: the vhost must exist (else "bad user name or password"), then the
        # direct connection's login in rabbit_direct's order.
        client = Client("mqtt", peer_host=self._ends.peer_host, peer_port=self._ends.peer_port,
                        loopback=self.loopback, tls=self.tls)
        try:
            self.model = direct_connect(
                self.broker, vhost, client, user=user, password=None if certificate else password,
                kind=self.kind, client_properties=dict(self.client_properties),
                name=self._ends.name, topic_variables={"client_id": client_id}, node=self.node,
                details={"peer_host": self._ends.peer_host, "peer_port": self._ends.peer_port,
                         "host": self._ends.host, "port": self._ends.port, "channel_max": 1,
                         "frame_max": 0, "ssl": self.tls is not None,
                         "variable_map": {"client_id": client_id},
                         # (list_mqtt_connections: its reader's adapter info keeps the
                         # protocol's version N/A, checked live)
                         "listing": {"client_id": client_id, "protocol": {
                             "$raw": f"{{'{'Web MQTT' if self.web else 'MQTT'}', N/A}}"},
                             "clean_sess": packet_clean, "exchange": self.settings.exchange,
                             "ssl_login_name": "none"}})
        except DirectRefused as refused:
            log.error("MQTT login failed for user '%s': %s", log_text(user),
                      log_text(refused.reason))
            if refused.why in ("vhost", "credentials"):
                return BAD_CREDENTIALS
            return NOT_AUTHORIZED
        self.user, self.vhost = user, vhost
        self.model.on_closed_by_broker = self.close
        return ACCEPTED

    @property
    def _id_scope(self) -> str | None:
        return self.vhost if self.broker.profile.rabbitmq4 else None

    def _duplicate(self, send_will: bool) -> None:
        # mqtt_machine's notify_connection(OldPid, duplicate_id): the reader stops, without
        # its will in 3.10; RabbitMQ 3.13+'s duplicate_id says whether the will goes out.
        log.warning("MQTT disconnecting client %s with duplicate id '%s'", log_text(self.peer),
                    log_text(self.client_id or ""))
        self._disconnect(_packet5.ReasonCode.SESSION_TAKEN_OVER)
        if send_will and self.broker.profile.rabbitmq4:
            self._send_will()
        self._end()
        self._notify()

    def _queue_names(self) -> tuple[str, str]:
        # rabbit_mqtt_util:subcription_queue_name/1
        base = f"mqtt-subscription-{self.client_id}qos"
        return base + "0", base + "1"

    def _session_present(self) -> bool:
        assert self.vhost is not None
        return self._queue_names()[1] in self.broker.vhost(self.vhost).queues

    def _clean_or_resume(self) -> bool:
        # maybe_clean_sess/1: a persistent session's queue is consumed again; a clean one's
        # is deleted.
        present = self._session_present()
        if not present:
            return False
        if self._clean:
            assert self.model is not None
            channel = self.model.open_internal_channel()
            try:
                channel.queue_delete(self._queue_names()[1])
            finally:
                channel.close()
                self.model.channels.pop(channel.number, None)
            return False
        self._ensure_queue(1)
        return True

    def _ensure_queue(self, qos: int) -> str:
        # ensure_queue/2: each QoS's queue declared and consumed once per connection.
        name = self._queue_names()[qos]
        if qos in self._consumers:
            return name
        channel = self.channel
        assert channel is not None
        if qos == 0:
            channel.queue_declare(name, durable=False, auto_delete=True)
        else:
            ttl = self.settings.subscription_ttl
            arguments: dict[str, Any] = {}
            auto_delete = self._clean
            existing = None
            if self.v5 is not None:  # (queue_args/2: the Session Expiry Interval)
                auto_delete = self.v5.session_expiry == 0
                if self.v5.session_expiry:
                    arguments["x-expires"] = Long(self.v5.session_expiry * 1000)
                assert self.vhost is not None
                existing = self.broker.vhost(self.vhost).queues.get(name)
            elif ttl is not None and not self._clean:
                arguments["x-expires"] = Long(ttl)
            if existing is None:
                channel.queue_declare(name, durable=True, auto_delete=auto_delete,
                                      arguments=arguments)
                if self.v5 is None:  # (a session downgrade: its subscriptions' options go)
                    assert self.vhost is not None
                    self.broker.vhost(self.vhost).queues[name].protocol_state.clear()
            else:  # handle_clean_start/3: consumed as it is, its x-expires the session's now
                if existing.arguments.get("x-expires") != arguments.get("x-expires"):
                    existing.update_arguments({"x-expires": arguments.get("x-expires")})
                _v5.resume_subscriptions(self, existing)
        tag = channel.basic_consume(name, no_ack=qos == 0)
        self._consumers[qos] = tag
        channel.start_consumer(tag)
        return name

    def _on_publish(self, packet: Publish) -> None:
        self._publish(packet)

    def _publish(self, packet: Publish | _packet5.Publish, *, will: bool = False,
                 extra: dict[str, Any] | None = None) -> None:
        # check_publish/3 (the topic permission: a refusal ends the connection), amqp_pub/2
        # (QoS 2 taken as 1), and the retainer.
        qos = min(packet.qos, 1)
        channel = self.channel
        model = self.model
        assert channel is not None
        assert model is not None
        key = to_amqp(packet.topic)
        model.access.write_topic(self.settings.exchange, key)
        kept = exclude = None
        if self.broker.profile.rabbitmq4:
            # RabbitMQ 3.13+ keep the MQTT message (mc_mqtt): AMQP consumers get its
            # conversion, without the x-mqtt-* headers; an MQTT subscriber gets it as sent.
            properties = dict(extra) if extra else {}
            kept = _v5.Kept(packet.retain, packet.properties
                            if isinstance(packet, _packet5.Publish) else None,
                            self.broker.clock.monotonic())
            exclude = _v5.excluded(self, packet.topic)
        else:
            properties = {"headers": {"x-mqtt-publish-qos": Byte(qos), "x-mqtt-dup": packet.dup}}
        properties["delivery_mode"] = 2 if qos else 1
        confirmed = qos == 1 and packet.packet_id is not None and not will
        if confirmed:
            if self._publisher_died:  # (the plugin casts to a dead channel: nothing comes)
                return
            channel = self._confirming()
        try:
            outcome = channel.basic_publish(self.settings.exchange, key, packet.payload,
                                            properties, native=kept, exclude=exclude or (),
                                            origin=f"MQTT PUBLISH to '{packet.topic}'")
        except AMQPError as refused:
            if not confirmed:
                raise
            # QoS 1 goes on a channel of its own, in confirm mode: the plugin's reader is not
            # linked to it, so its death ends nothing; that publish gets no PUBACK, and nor
            # does any QoS 1 publish after it (checked live against RabbitMQ 3.10.8).
            log.error("MQTT connection %s: its QoS 1 channel died: %s", log_text(self.peer),
                      log_text(refused.reply_text))
            self._publisher_died = True
            return
        if confirmed and packet.packet_id is not None:
            if self.v5 is not None and not outcome.routed:  # (process_routing_confirm/3)
                self._puback(packet.packet_id, _packet5.ReasonCode.NO_MATCHING_SUBSCRIBERS)
            else:
                self._unacked[outcome.seq] = packet.packet_id
            self._flush_pubacks()
        if packet.retain:
            assert self.vhost is not None
            topic = to_mqtt(packet.topic)
            self.broker.vhost(self.vhost).retained.retain(
                Retained(topic, qos, packet.payload) if kept is None
                else _v5.retained(topic, qos, packet.payload, kept))

    def _confirming(self) -> Channel:
        if self._publisher is None:
            assert self.model is not None
            self._publisher = self.model.open_channel(2)
            self._publisher.listener = self._on_event
            self._publisher.confirm_select()
        return self._publisher

    def _flush_pubacks(self) -> None:
        for seq in sorted(self._acked):
            packet_id = self._unacked.pop(seq, None)
            if packet_id is not None:
                self._puback(packet_id)
        self._acked.clear()

    def _on_subscribe(self, packet: Subscribe) -> None:
        channel = self.channel
        assert channel is not None
        granted = []
        for topic, asked in packet.topics:
            if asked > 2:  # (supported_subs_qos/1 has no clause for it: the processor dies)
                raise _End(f"SUBSCRIBE asking QoS {asked}")
            qos = min(asked, 1)
            queue = self._ensure_queue(qos)
            channel.queue_bind(queue, self.settings.exchange, to_amqp(topic))
            self._subscriptions.setdefault(topic, []).append(qos)
            granted.append(qos)
        self._write(suback(packet.packet_id, granted))
        # (the retained message of each filter named exactly, packet ids from the larger of
        # SUBSCRIBE's and the connection's counter)
        next_id = _valid_id(max(packet.packet_id, self._next_id))
        for topic, asked in reversed(packet.topics):
            kept = _v5.fetch_retained(self, to_mqtt(topic))
            if kept is None:
                continue
            qos = min(asked, kept.qos, 1)
            self._write(publish(kept.topic, kept.payload, qos=qos, retain=True,
                                packet_id=next_id if qos else None))
            if qos:
                next_id += 1
        self._next_id = next_id

    def _on_unsubscribe(self, packet: Unsubscribe) -> None:
        channel = self.channel
        assert channel is not None
        names = self._queue_names()
        for topic in packet.topics:
            for qos in sorted(set(self._subscriptions.pop(topic, []))):
                channel.queue_unbind(names[qos], self.settings.exchange, to_amqp(topic))
        self._write(unsuback(packet.packet_id))

    def _on_puback(self, packet: PubAck) -> None:
        tag = self._awaiting.pop(packet.packet_id, None)
        if tag is not None and self.channel is not None:
            self.channel.basic_ack(tag)

    def _on_pingreq(self, packet: PingReq) -> None:
        self._write(pingresp())

    def _on_disconnect(self, packet: Disconnect) -> None:
        self._will = None
        self._end()

    # -- the model's events ----------------------------------------------------------------------

    def _on_event(self, event: ChannelEvent) -> None:
        if isinstance(event, Delivered):
            self._deliver(event)
            if not self._handling:
                self._notify()
        elif isinstance(event, Confirmed) and event.ack:  # (a nack: no PUBACK, as the plugin)
            tag = event.delivery_tag
            self._acked.update([seq for seq in self._unacked if seq <= tag] if event.multiple
                               else [tag])
        elif isinstance(event, Cancelled):  # (its queue was deleted: the reader stops)
            log.error("MQTT connection %s: subscription cancelled", log_text(self.peer))
            self._end()
            self._notify()

    def _deliver(self, event: Delivered) -> None:
        # amqp_callback/2
        if self.v5 is not None:
            _v5.deliver(self, event)
            return
        channel = self.channel
        assert channel is not None
        headers = event.message.headers
        dup = event.redelivered or headers.get("x-mqtt-dup") is True
        if event.consumer_tag == self._consumers.get(0):
            delivery_qos, subscription_qos = 0, 0
        elif self.broker.profile.rabbitmq4:  # (RabbitMQ 3.13+: the durable annotation)
            delivery_qos, subscription_qos, dup = \
                _v5.publisher_qos(event.message), 1, event.redelivered
        else:
            published = headers.get("x-mqtt-publish-qos")
            if published is None:
                delivery_qos = 1
            elif isinstance(published, Byte):
                delivery_qos = min(int(published), 1)
            else:  # (delivery_qos/3 reads a byte field only: anything else ends the reader)
                log.error("MQTT connection %s: x-mqtt-publish-qos %r is no byte",
                          log_text(self.peer), published)
                self._end()
                self._notify()
                return
            subscription_qos = 1
        if dup and delivery_qos == 0:
            if subscription_qos == 1:
                channel.basic_ack(event.delivery_tag)
            return
        topic = to_mqtt(event.routing_key)
        write = self._deferred.append if self._handling else self._write
        if delivery_qos == 0:
            write(publish(topic, event.message.body, dup=dup))
            if subscription_qos == 1:
                channel.basic_ack(event.delivery_tag)
            return
        packet_id = self._next_id
        write(publish(topic, event.message.body, qos=1, dup=dup, packet_id=packet_id))
        self._awaiting[packet_id] = event.delivery_tag
        self._next_id = _valid_id(packet_id + 1)

    # -- who it is -------------------------------------------------------------------------------

    @property
    def _ends(self) -> Endpoints:
        return Endpoints(self.peer, self.local)


def _valid_id(packet_id: int) -> int:
    return 1 if packet_id >= _MAX_ID else packet_id


#: Each packet's handler (what it is in the model: see the module's notes).
PACKETS: Final[dict[type, Callable[[MqttConnection, Any], None]]] = {
    Connect: MqttConnection._on_connect,
    Publish: MqttConnection._on_publish,
    PubAck: MqttConnection._on_puback,
    Subscribe: MqttConnection._on_subscribe,
    Unsubscribe: MqttConnection._on_unsubscribe,
    PingReq: MqttConnection._on_pingreq,
    Disconnect: MqttConnection._on_disconnect,
}
