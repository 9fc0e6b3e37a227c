"""MQTT 5.0 on an :class:`~._connection.MqttConnection`, and the MQTT message as RabbitMQ 3.13+
keep it (embroker's RabbitMQ 4 profile only).

Theory of operation
-------------------
Under the profile the connection reads the CONNECT with :mod:`._packet5`; a level-5 client is
read by that codec from then on and its packets go to :data:`PACKETS` here, which reuse the
connection's 3.1.1 machinery (login, the session's queues, confirms) and answer with 5.0
packets. Each rule is RabbitMQ 4.0.5's (``rabbit_mqtt_processor``, ``mc_mqtt``,
``rabbit_mqtt_retainer``), 3.13.7's where they agree:

- CONNECT (``process_connect/5``): an Authentication Method is refused with 0x8C
  (``check_extended_auth/1``); an empty client id is allowed whatever Clean Start says and
  assigned (``ensure_client_id/3``); the Session Expiry Interval (absent: 0; 0xFFFFFFFF: the
  maximum) capped by ``max_session_expiry_interval_seconds`` becomes the queues' ``x-expires``
  (``queue_args/2``; 0: deleted with the connection), and a kept session's queue takes the new
  one (``maybe_update_session_expiry_interval/2``) and its subscriptions come back from its
  bindings (``init_subscriptions/2``); Receive Maximum caps the prefetch (``prefetch/1``);
  Topic Alias Maximum bounds the aliases sent; CONNACK carries
  :func:`~._packet5.connack_properties`. Every CONNECT deletes the client id's delayed will
  (``clear_will_msg/1``).
- PUBLISH (``process_request(?PUBLISH)``): QoS 2 is refused with DISCONNECT 0x9B; Topic Alias
  (``process_topic_alias_inbound/2``); the properties become AMQP 0-9-1 ones as
  ``mc_mqtt:convert_to(mc_amqpl)`` makes them (:func:`to_amqp_properties`) and the message
  itself is kept (:class:`Kept`); No Local drops the client's own queues (``drop_local/2``:
  :func:`excluded`); PUBACK 0x10 when a QoS 1 message reached no queue
  (``process_routing_confirm/3``).
- SUBSCRIBE: reason codes, the same filter with the same options changes nothing, Retain
  Handling, Subscription Identifiers (``maybe_add_subscription_ids/3``). A ``$share/`` filter
  has no clause of its own: it is bound as any other filter (CONNACK says Shared Subscription
  Available 0).
- UNSUBSCRIBE: 0x00, or 0x11 when no such subscription existed.
- DISCONNECT: a Session Expiry Interval changes the session queues' ``x-expires`` (none when
  CONNECT's was 0); a reason code over 0 sends the will (``process_request(?DISCONNECT)``),
  held in ``mqtt-will-<client id>`` for its Will Delay Interval (``maybe_send_will/2``).
- Deliveries (``deliver_one_to_client/3``): QoS the lower of the publisher's (the delivery
  mode) and the subscription's; an MQTT message as it was published (its Message Expiry
  Interval what is left), any other as ``mc_mqtt:convert_from(mc_amqpl)`` makes it
  (:func:`to_mqtt_properties`); RETAIN through Retain As Published subscriptions
  (``retain/3``); topic aliases out (``process_topic_alias_outbound/3``).
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from ..errors import AMQPError
from ..fieldtypes import Long
from ..model import Retained
from ..model._exchange import topic_matches
from . import _packet
from ._packet5 import (
    MAX_PACKET_SIZE_AUTHENTICATED,
    TOPIC_ALIAS_MAXIMUM,
    UINT_MAX,
    Connect,
    Disconnect,
    PingReq,
    Properties,
    PubAck,
    Publish,
    ReasonCode,
    Subscribe,
    Subscription,
    Unsubscribe,
    connack_properties,
    disconnect,
    pingresp,
    publish,
    suback,
    unsuback,
)
from ._packet5 import PacketReader as _Reader5
from ._packet5 import connack as connack5
from ._packet5 import puback as puback5

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..model import Message, Queue
    from ..model._events import Delivered
    from ._connection import MqttConnection

__all__ = ["PACKETS", "Kept", "Session", "connack", "deliver", "puback", "to_amqp_properties",
           "to_mqtt_properties"]

#: ``mqtt.max_session_expiry_interval_seconds``'s default (one day).
MAX_SESSION_EXPIRY: Final = 86_400
#: 3.10's CONNACK return codes as 5.0's reason codes (the connection speaks in the former).
_REASONS: Final = {0: 0x00, 1: 0x84, 2: 0x85, 3: 0x88, 4: 0x86, 5: 0x87}
#: Headers the broker's own MQTT machinery sets, not forwarded as User Properties.
_INTERNAL: Final = frozenset({"x-mqtt-publish-qos", "x-mqtt-dup"})
#: Where a session queue keeps its subscriptions' options (:attr:`Queue.protocol_state`).
_OPTIONS: Final = "mqtt-subscription-options"
#: The Will Message's delay starts ``Session Expiry - 5 ms`` at the latest, so the will goes out
#: before its queue expires (``maybe_send_will/2``).
_WILL_BEFORE_EXPIRY: Final = 0.005


@dataclass(slots=True)
class Session:
    """A level-5 connection's state."""

    session_expiry: int = 0
    receive_maximum: int = 0xFFFF
    #: The client's Maximum Packet Size: larger packets are not sent.
    maximum_packet_size: int = MAX_PACKET_SIZE_AUTHENTICATED
    assigned: str | None = None
    #: The will's AMQP properties (from its properties), and those properties.
    will: dict[str, Any] | None = None
    will_properties: Properties = field(default_factory=Properties)
    aliases: dict[int, str] = field(default_factory=dict)
    #: The client's Topic Alias Maximum (capped by the broker's), and the aliases sent.
    alias_maximum_out: int = 0
    aliases_out: dict[str, int] = field(default_factory=dict)
    #: Topic filter -> its subscription options (with the identifier, if any).
    subscriptions: dict[str, tuple[Subscription, int | None]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Kept:
    """What RabbitMQ 3.13+ keep of a message published over MQTT (``mc_mqtt``'s
    ``#mqtt_msg{}``), on :attr:`Message.native <embroker.model.Message.native>`: an MQTT
    subscriber gets its RETAIN flag and its properties as they were published (the AMQP
    properties beside them are ``mc_mqtt:convert_to(mc_amqpl)``'s, for other consumers)."""

    retain: bool
    #: A level-5 PUBLISH's properties (without its Topic Alias); ``None`` below level 5.
    properties: Properties | None
    #: When it was published (the broker's monotonic clock), and a will's delay in seconds.
    published: float = 0.0
    will_delay: int = 0

    def outgoing(self, now: float) -> Properties:
        """Its properties as a subscriber gets them (``mc_mqtt:protocol_state/2``): the
        Message Expiry Interval is what is left of it (a delayed will's waiting starts once
        its delay is over), the Will Delay Interval is gone."""
        props = self.properties
        if props is None:
            return _NO_PROPERTIES
        expiry = props.message_expiry_interval
        if expiry is not None:
            waited = now - self.published - self.will_delay
            expiry = max(0, expiry * 1000 - int(waited * 1000)) // 1000
        if expiry != props.message_expiry_interval or props.will_delay_interval is not None:
            props = replace(props, message_expiry_interval=expiry, will_delay_interval=None)
        return props


_NO_PROPERTIES: Final = Properties()


def publisher_qos(message: Message) -> int:
    """The QoS it was published with, as RabbitMQ 3.13+ read it from the message's durable
    annotation (``mc_mqtt:protocol_state/2``): delivery mode 2 is QoS 1, whoever published."""
    return 1 if message.properties.get("delivery_mode") == 2 else 0


def excluded(conn: MqttConnection, topic: str) -> tuple[str, ...]:
    """The client's own session queues a publish to ``topic`` must not reach
    (``drop_local/2``): those it reaches only through No Local subscriptions."""
    session = conn.v5
    if session is None or not any(sub.no_local for sub, _ in session.subscriptions.values()):
        return ()
    names = conn._queue_names()
    dropped = []
    for qos in (0, 1):
        matched = [sub for f, (sub, _) in session.subscriptions.items()
                   if sub.qos == qos and _matches(f, topic)]
        if matched and all(sub.no_local for sub in matched):
            dropped.append(names[qos])
    return tuple(dropped)


# -- properties ---------------------------------------------------------------------------------


def to_amqp_properties(properties: Properties) -> dict[str, Any]:
    """A PUBLISH's properties as AMQP 0-9-1 ones (``mc_mqtt:convert_to(mc_amqpl)``): Content
    Type if ASCII and at most 255 bytes; User Properties as longstr headers (names over 255
    bytes dropped; the first of equal names kept, the table sorted); Response Topic as
    ``x-reply-to-topic`` (as a routing key); Correlation Data as ``correlation_id`` if it is a
    valid shortstr, else the ``x-correlation-id`` header; Message Expiry Interval as
    ``expiration`` in milliseconds."""
    out: dict[str, Any] = {}
    content_type = properties.content_type
    if content_type is not None and content_type.isascii() and len(content_type) <= 255:
        out["content_type"] = content_type
    headers: dict[str, Any] = {}
    for name, value in properties.user_properties:
        if len(name.encode("utf-8", "surrogateescape")) <= 255 and name not in headers:
            headers[name] = value
    if properties.response_topic is not None:
        headers.setdefault("x-reply-to-topic",
                           properties.response_topic.replace("/", ".").replace("+", "*"))
    correlation = properties.correlation_data
    if correlation is not None:
        if len(correlation) <= 255 and _utf8_no_null(correlation):
            out["correlation_id"] = correlation.decode()
        else:
            headers.setdefault("x-correlation-id", correlation)
    if properties.message_expiry_interval is not None:
        out["expiration"] = str(properties.message_expiry_interval * 1000)
    if headers:
        out["headers"] = dict(sorted(headers.items()))
    return out


def _utf8_no_null(data: bytes) -> bool:
    # mc_util:is_valid_shortstr/1
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\x00" not in data


def _text(value: Any) -> str | None:
    # mc_mqtt:amqpl_field_to_utf8_string_pair/1: UTF-8 strings, numbers and booleans
    if isinstance(value, bytes):
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return None if "\x00" in text else text
    if isinstance(value, str):
        return None if "\x00" in value else value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(int(value)) if isinstance(value, int) else str(value)
    return None


def to_mqtt_properties(amqp: dict[str, Any]) -> Properties:
    """A message's AMQP 0-9-1 properties as a PUBLISH's (``mc_mqtt:convert_from(mc_amqpl)``):
    the inverse of :func:`to_amqp_properties`; every other header a UTF-8 string, number or
    boolean becomes a User Property (the broker's ``x-mqtt-*`` headers excepted)."""
    headers = dict(amqp.get("headers") or {})
    response = headers.pop("x-reply-to-topic", None)
    correlation = amqp.get("correlation_id")
    if isinstance(correlation, str):
        correlation_data: bytes | None = correlation.encode()
    else:
        kept = headers.pop("x-correlation-id", None)
        correlation_data = kept.encode() if isinstance(kept, str) else kept \
            if isinstance(kept, bytes) else None
    pairs = []
    for name, value in headers.items():
        text = _text(value)
        if name not in _INTERNAL and text is not None:
            pairs.append((name, text))
    expiration = amqp.get("expiration")
    content_type = amqp.get("content_type")
    reply = _text(response)
    return Properties(
        content_type=content_type if isinstance(content_type, str) else None,
        response_topic=None if reply is None else _to_mqtt(reply),
        correlation_data=correlation_data, user_properties=tuple(pairs),
        message_expiry_interval=int(expiration) // 1000
        if isinstance(expiration, str) and expiration.isdigit() else None)


# -- answers ------------------------------------------------------------------------------------


def _send(conn: MqttConnection, data: bytes) -> bool:
    # send/4: a packet over the client's Maximum Packet Size is not sent.
    session = conn.v5
    if session is not None and len(data) > session.maximum_packet_size:
        return False
    conn._write(data)
    return True


def connack(conn: MqttConnection, code: int, present: bool) -> None:
    """CONNACK (``send_conn_ack/6``): properties on success only."""
    session = conn.v5
    assert session is not None
    reason = _REASONS.get(code, code)
    if reason:
        _send(conn, connack5(reason))
        return
    _send(conn, connack5(0, present, connack_properties(
        session_expiry_interval=session.session_expiry,
        assigned_client_identifier=session.assigned, topic_alias_maximum=TOPIC_ALIAS_MAXIMUM,
        maximum_packet_size=MAX_PACKET_SIZE_AUTHENTICATED)))


def puback(conn: MqttConnection, packet_id: int, code: int) -> bytes:
    return puback5(packet_id, code)


# -- packets ------------------------------------------------------------------------------------


def _on_connect(conn: MqttConnection, packet: Connect) -> None:
    session = conn.v5
    assert session is not None
    if conn.model is not None:  # (a second CONNECT: the reader's codec does not read one)
        return
    conn.level = 5
    props = packet.properties
    if props.authentication_method is not None:  # check_extended_auth/1
        _send(conn, connack5(ReasonCode.BAD_AUTHENTICATION_METHOD))
        raise _end("extended_authentication_unsupported")
    asked = props.session_expiry_interval or 0
    session.session_expiry = MAX_SESSION_EXPIRY if asked == UINT_MAX else \
        min(asked, MAX_SESSION_EXPIRY)
    if props.receive_maximum is not None:
        session.receive_maximum = props.receive_maximum
    if props.maximum_packet_size is not None:
        session.maximum_packet_size = props.maximum_packet_size
    session.alias_maximum_out = min(props.topic_alias_maximum or 0, TOPIC_ALIAS_MAXIMUM)
    client_id = packet.client_id
    if not client_id:  # ensure_client_id/3
        client_id = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        session.assigned = client_id
    will = None
    if packet.will is not None:
        w = packet.will
        will = _packet.Will(w.topic, w.payload, w.qos, w.retain)
        session.will = to_amqp_properties(w.properties)
        session.will_properties = w.properties
    password = None if packet.password is None else \
        packet.password.decode("utf-8", "surrogateescape")
    conn._on_connect(_packet.Connect(5, packet.clean_start, packet.keep_alive, client_id, will,
                                     packet.username, password))
    if conn.state.value == "connected":
        assert isinstance(conn._reader, _Reader5)
        conn._reader.max_authenticated = MAX_PACKET_SIZE_AUTHENTICATED


def _on_publish(conn: MqttConnection, packet: Publish) -> None:
    session = conn.v5
    assert session is not None
    if packet.qos == 2:  # (process_request(?PUBLISH): QoS 2 is not supported at level 5)
        _send(conn, disconnect(ReasonCode.QOS_NOT_SUPPORTED))
        raise _end("QoS 2 at level 5")
    topic, props = packet.topic, packet.properties
    alias = props.topic_alias
    if alias is not None:  # process_topic_alias_inbound/2
        if not 0 < alias <= TOPIC_ALIAS_MAXIMUM:
            _send(conn, disconnect(ReasonCode.TOPIC_ALIAS_INVALID))
            raise _end(f"invalid Topic Alias {alias}")
        if topic:
            session.aliases[alias] = topic
        elif alias in session.aliases:
            topic = session.aliases[alias]
        else:
            _send(conn, disconnect(ReasonCode.PROTOCOL_ERROR))
            raise _end(f"unknown Topic Alias {alias}")
        props = replace(props, topic_alias=None)
    conn._publish(Publish(topic, packet.payload, packet.qos, packet.retain, packet.dup,
                          packet.packet_id, props), extra=to_amqp_properties(props))


def _on_puback(conn: MqttConnection, packet: PubAck) -> None:
    tag = conn._awaiting.pop(packet.packet_id, None)
    if tag is not None and conn.channel is not None:
        if packet.reason_code >= 0x80:  # (a refusal discards it: no requeue)
            conn.channel.basic_reject(tag, requeue=False)
        else:
            conn.channel.basic_ack(tag)


def _on_subscribe(conn: MqttConnection, packet: Subscribe) -> None:
    session = conn.v5
    channel = conn.channel
    assert session is not None
    assert channel is not None
    codes: list[int] = []
    retained: list[tuple[str, int]] = []
    ident = packet.subscription_identifier
    for sub in packet.subscriptions:
        qos = min(sub.qos, 1)  # maybe_downgrade_qos/1
        options = (Subscription(sub.topic_filter, qos, sub.no_local, sub.retain_as_published,
                                 sub.retain_handling), ident)
        old = session.subscriptions.get(sub.topic_filter)
        if old == options:  # (the same filter with the same options changes nothing)
            codes.append(qos)
            if sub.retain_handling == 0:
                retained.append((sub.topic_filter, qos))
            continue
        queue = conn._ensure_queue(qos)
        channel.queue_bind(queue, conn.settings.exchange, _to_amqp(sub.topic_filter))
        if old is not None and old[0].qos != qos:  # maybe_delete_old_subscription/3
            channel.queue_unbind(conn._queue_names()[old[0].qos], conn.settings.exchange,
                                 _to_amqp(sub.topic_filter))
            _kept_options(conn, old[0].qos).pop(sub.topic_filter, None)
        session.subscriptions[sub.topic_filter] = options
        _kept_options(conn, qos)[sub.topic_filter] = options
        conn._subscriptions[sub.topic_filter] = [qos]
        codes.append(qos)
        if sub.retain_handling < 2:
            retained.append((sub.topic_filter, qos))
    _send(conn, suback(packet.packet_id, codes))
    for topic_filter, granted in retained:
        _send_retained(conn, topic_filter, granted)


def _send_retained(conn: MqttConnection, topic: str, granted: int) -> None:
    # send_retained_message/3: the message retained for exactly that topic with the properties
    # it was published with (no Subscription Identifier), its Message Expiry Interval what is
    # left of it (rabbit_mqtt_retainer: gone once it has run out).
    kept = fetch_retained(conn, topic)
    if kept is None:
        return
    props = None
    if isinstance(kept.extra, Kept) and kept.extra.properties is not None:
        expiry = kept.extra.properties.message_expiry_interval
        waited = int(conn.broker.clock.monotonic() - kept.extra.published)
        props = replace(kept.extra.properties, message_expiry_interval=None if expiry is None
                        else max(0, expiry - waited))
    qos = min(granted, kept.qos, 1)
    packet_id = None
    if qos:
        packet_id = conn._next_id
        conn._next_id = 1 if packet_id >= 0xFFFF else packet_id + 1
    name, props = _alias_out(conn.v5, kept.topic, props)
    _send(conn, publish(name, kept.payload, qos=qos, retain=True, packet_id=packet_id,
                        properties=props))


def fetch_retained(conn: MqttConnection, topic: str) -> Retained | None:
    """The message retained for exactly ``topic``, unless its Message Expiry Interval has run
    out (``rabbit_mqtt_retainer``'s timer deletes it then), for a subscriber of any level."""
    assert conn.vhost is not None
    store = conn.broker.vhost(conn.vhost).retained
    kept = store.fetch(topic)
    if kept is not None and isinstance(kept.extra, Kept) and kept.extra.properties is not None:
        expiry = kept.extra.properties.message_expiry_interval
        if expiry is not None and conn.broker.clock.monotonic() - kept.extra.published >= expiry:
            store.clear(kept.topic)
            return None
    return kept


def retained(topic: str, qos: int, payload: bytes, kept: Kept) -> Retained:
    """What the vhost's retained store keeps of a retained publish (``#mqtt_msg{}``)."""
    return Retained(topic, qos, payload, kept if kept.properties else None)


def _kept_options(conn: MqttConnection, qos: int) -> dict[str, Any]:
    # The subscription options kept with the session queue of that QoS (RabbitMQ keeps them
    # in the bindings' arguments: binding_args_for_proto_ver/3).
    assert conn.vhost is not None
    queue = conn.broker.vhost(conn.vhost).queues.get(conn._queue_names()[qos])
    if queue is None:
        return {}
    options: dict[str, Any] = queue.protocol_state.setdefault(_OPTIONS, {})
    return options


def resume_subscriptions(conn: MqttConnection, queue: Queue) -> None:
    """A kept session's subscriptions, from its queue's bindings and the options kept with
    them (``init_subscriptions/2``)."""
    session = conn.v5
    assert session is not None
    qos = 1 if queue.name.endswith("qos1") else 0
    kept = queue.protocol_state.get(_OPTIONS, {})
    for binding in queue.bindings.values():
        if binding.source.name == conn.settings.exchange:
            topic_filter = _to_mqtt(binding.routing_key)
            options = kept.get(topic_filter) or \
                (Subscription(topic_filter, qos, False, False, 0), None)
            session.subscriptions.setdefault(topic_filter, options)
            conn._subscriptions.setdefault(topic_filter, [qos])


def _on_unsubscribe(conn: MqttConnection, packet: Unsubscribe) -> None:
    session = conn.v5
    channel = conn.channel
    assert session is not None
    assert channel is not None
    codes = []
    for topic_filter in packet.topic_filters:
        old = session.subscriptions.pop(topic_filter, None)
        conn._subscriptions.pop(topic_filter, None)
        if old is None:
            codes.append(ReasonCode.NO_SUBSCRIPTION_EXISTED)
            continue
        channel.queue_unbind(conn._queue_names()[old[0].qos], conn.settings.exchange,
                             _to_amqp(topic_filter))
        _kept_options(conn, old[0].qos).pop(topic_filter, None)
        codes.append(ReasonCode.SUCCESS)
    _send(conn, unsuback(packet.packet_id, [int(c) for c in codes]))


def _on_pingreq(conn: MqttConnection, packet: PingReq) -> None:
    _send(conn, pingresp())


def _on_disconnect(conn: MqttConnection, packet: Disconnect) -> None:
    # process_request(?DISCONNECT): a Session Expiry Interval changes the session queues'
    # x-expires (not when CONNECT's was 0: ignored); a reason code over 0 sends the will.
    session = conn.v5
    assert session is not None
    asked = packet.properties.session_expiry_interval
    if asked is not None and session.session_expiry and asked != session.session_expiry:
        expiry = MAX_SESSION_EXPIRY if asked == UINT_MAX else min(asked, MAX_SESSION_EXPIRY)
        session.session_expiry = expiry
        assert conn.vhost is not None
        queues = conn.broker.vhost(conn.vhost).queues
        for name in conn._queue_names():
            queue = queues.get(name)
            if queue is not None:  # (update_session_expiry_interval/2)
                queue.update_arguments({"x-expires": Long(expiry * 1000)})
    if packet.reason_code > 0:
        conn._send_will()
    conn._will = None
    conn._end()


def send_delayed_will(conn: MqttConnection, topic: str, payload: bytes, qos: int,
                      retain: bool) -> bool:
    """A will with a Will Delay Interval in a session that outlives the connection
    (``maybe_send_will/2``): it waits in ``mqtt-will-<client id>`` (``x-expires`` the Session
    Expiry Interval, dead-lettered to the exchange with the will's topic) for the shorter of
    the delay and the session; a CONNECT with the client id deletes that queue, and the will
    with it (``clear_will_msg/1``). Whether it was held so (else it goes out now)."""
    session, channel, model = conn.v5, conn.channel, conn.model
    if session is None or channel is None or model is None:
        return False
    delay = session.will_properties.will_delay_interval or 0
    if not delay or not session.session_expiry:
        return False
    name = f"mqtt-will-{conn.client_id}"
    key = _to_amqp(topic)
    try:
        channel.queue_declare(name, durable=True, auto_delete=False, arguments={
            "x-expires": Long(session.session_expiry * 1000),
            "x-dead-letter-exchange": conn.settings.exchange,
            "x-dead-letter-routing-key": key})
        # (check_publish_permitted/3: the will's topic on the exchange, as any publish)
        model.access.write_topic(conn.settings.exchange, key)
        ttl = min(delay, session.session_expiry - _WILL_BEFORE_EXPIRY)
        properties = {**(session.will or {}), "delivery_mode": 2,
                      "expiration": str(max(0, int(ttl * 1000)))}
        kept = Kept(retain, session.will_properties, conn.broker.clock.monotonic(), delay)
        channel.basic_publish("", name, payload, properties, native=kept,
                              origin=f"MQTT will to '{topic}'")
    except AMQPError as refused:  # (log_delayed_will_failure/3)
        conn._log_will_failure(refused)
    return True


def clear_will(conn: MqttConnection) -> bool:
    """A CONNECT deletes the client id's delayed will (``clear_will_msg/1``); whether it may
    (configure permission on that queue, asked only when it exists)."""
    assert conn.vhost is not None
    assert conn.model is not None
    name = f"mqtt-will-{conn.client_id}"
    if name not in conn.broker.vhost(conn.vhost).queues:
        return True
    channel = conn.model.open_internal_channel()
    try:
        channel.queue_delete(name)
    except AMQPError:
        return False
    finally:
        channel.close()
        conn.model.channels.pop(channel.number, None)
    return True


# -- deliveries ---------------------------------------------------------------------------------


def _matches(topic_filter: str, topic: str) -> bool:
    # Whether the subscription's binding matched the message's routing key: the topic
    # exchange's own rule (RabbitMQ hands the plugin the binding keys it matched).
    return topic_matches(_to_amqp(topic_filter), _to_amqp(topic))


def _alias_out(session: Session | None, topic: str,
               props: Properties | None) -> tuple[str, Properties | None]:
    # process_topic_alias_outbound/3: an alias for each new topic while the client's maximum
    # allows (none for a one-byte topic), then the alias alone.
    if session is None or not session.alias_maximum_out:
        return topic, props
    alias = session.aliases_out.get(topic)
    if alias is not None:
        return "", replace(props or _NO_PROPERTIES, topic_alias=alias)
    if len(session.aliases_out) < session.alias_maximum_out and len(topic.encode()) > 1:
        alias = session.aliases_out[topic] = len(session.aliases_out) + 1
        return topic, replace(props or _NO_PROPERTIES, topic_alias=alias)
    return topic, props


def deliver(conn: MqttConnection, event: Delivered) -> None:
    """A delivery to a level-5 client (``deliver_one_to_client/3``): QoS the lower of the
    publisher's and the subscription's; the filters of that queue's subscriptions matching the
    topic give the Subscription Identifiers and, with Retain As Published, the RETAIN flag."""
    session = conn.v5
    channel = conn.channel
    assert session is not None
    assert channel is not None
    message = event.message
    subscribed = 0 if event.consumer_tag == conn._consumers.get(0) else 1
    qos = min(publisher_qos(message), subscribed)
    if event.redelivered and qos == 0:  # (maybe_publish_to_client/4: at most once)
        if subscribed:
            channel.basic_ack(event.delivery_tag)
        return
    topic = _to_mqtt(event.routing_key)
    native = message.native
    kept = native if isinstance(native, Kept) else None
    props = kept.outgoing(conn.broker.clock.monotonic()) if kept is not None \
        else to_mqtt_properties(message.properties)
    matched = [options for f, options in session.subscriptions.items()
               if options[0].qos == subscribed and _matches(f, topic)]
    ids = tuple(ident for _, ident in matched if ident is not None)
    if ids:
        props = replace(props, subscription_identifiers=ids)
    retain = kept is not None and kept.retain and \
        any(sub.retain_as_published for sub, _ in matched)
    packet_id = conn._next_id if qos else None
    name, sent = _alias_out(session, topic, props)
    data = publish(name, message.body, qos=qos, retain=retain,
                   dup=event.redelivered and bool(qos), packet_id=packet_id, properties=sent)
    if packet_id is not None:  # (msg_id_to_packet_id/3: taken whether it is sent or not)
        conn._next_id = 1 if packet_id >= 0xFFFF else packet_id + 1
    if len(data) > session.maximum_packet_size:
        # send/2: too large for the client: discarded unsent (its alias, if new, is kept as
        # given, as the plugin keeps it)
        if subscribed:
            channel.basic_reject(event.delivery_tag, requeue=False)
        return
    (conn._deferred.append if conn._handling else conn._write)(data)
    if packet_id is None:
        if subscribed:
            channel.basic_ack(event.delivery_tag)
        return
    conn._awaiting[packet_id] = event.delivery_tag


def _to_amqp(topic: str) -> str:
    return topic.replace("/", ".").replace("+", "*")


def _to_mqtt(key: str) -> str:
    return key.replace("*", "+").replace(".", "/")


def _end(reason: str) -> Exception:
    from ._connection import _End
    return _End(reason)


#: Each level-5 packet's handler.
PACKETS: Final[dict[type, Callable[[MqttConnection, Any], None]]] = {
    Connect: _on_connect,
    Publish: _on_publish,
    PubAck: _on_puback,
    Subscribe: _on_subscribe,
    Unsubscribe: _on_unsubscribe,
    PingReq: _on_pingreq,
    Disconnect: _on_disconnect,
}
