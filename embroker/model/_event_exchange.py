"""The event exchange (plugin rabbitmq_event_exchange): the broker's events as messages.

Theory of operation
-------------------
RabbitMQ 3.10 notifies ``rabbit_event`` of what happens in the broker (a queue created, a
consumer cancelled, a connection closed, a user added...); with the plugin enabled, each event
becomes a message published to ``amq.rabbitmq.event``, a durable internal topic exchange the
plugin declares in *one* virtual host (``/``, RabbitMQ's default vhost: events from every vhost
go there), with:

- the routing key the event's name (``queue.created``, ``consumer.deleted``...);
- ``delivery_mode`` 2, ``timestamp`` the event's time in seconds, an empty body;
- headers: the event's properties as ``rabbit_exchange_type_event:fmt_proplist/1`` writes them,
  followed by ``timestamp_in_ms``. Atoms and binaries are strings, integers longs, a resource
  its ``name`` and ``vhost``, a list of pairs a table, another list an array, pids and other
  terms their printed form (``{<<"x-message-ttl">>,signedint,1000}`` for an argument).

:class:`EventPublisher` has one method per event, called by the model where the event happens,
with the properties in the order RabbitMQ lists them (measured on 3.10.8, ``scenarios_events``).
Like the plugin it publishes nothing while the exchange has no binding, and an event that
happens while it publishes one is not published (no event about its own publishing).
``user_who_performed_action`` is the connection's user, ``rmq-internal`` for what the broker does
on its own (auto-delete, exclusive queues going with their connection), ``rmq-cli`` for the
Broker's rabbitmqctl-like commands. Pids are made up (``<rabbit@embroker.1.N.0>``), one per
connection, channel and queue.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, final

from .. import _erlang
from ..fieldtypes import Long, field_type
from ._exchange import TopicExchange
from ._message import Message

if TYPE_CHECKING:
    from ._broker import Broker
    from ._channel import Channel
    from ._connection import Connection
    from ._consumer import Consumer
    from ._exchange import Binding, Exchange
    from ._policy import Policy
    from ._queue import Queue
    from ._vhost import VirtualHost

__all__ = ["CLI_USER", "EVENT_EXCHANGE", "INTERNAL_USER", "EventPublisher"]

#: The exchange the plugin publishes to.
EVENT_EXCHANGE = "amq.rabbitmq.event"
#: Who RabbitMQ says performed what the broker does on its own.
INTERNAL_USER = "rmq-internal"
#: Who performs rabbitmqctl's commands (the Broker's methods of the same names).
CLI_USER = "rmq-cli"


def _term(key: str, value: Any) -> str:
    # ~p of an argument {Key, Type, Value}, on one line (the plugin formats with a huge width).
    return (f"{{{_erlang.binary(key.encode('utf-8', 'surrogateescape'), 0)},{field_type(value)},"
            f"{_erlang.field_value(value)}}}")


def arguments_array(arguments: Mapping[str, Any], *, sort: bool = False) -> list[str]:
    """An arguments table as an event shows it: each ``{Key,Type,Value}`` printed."""
    items = list(arguments.items())
    if sort:  # bindings' arguments are stored sorted (rabbit_binding:sort_args/1)
        items.sort(key=lambda kv: kv[0].encode("utf-8", "surrogateescape"))
    return [_term(k, v) for k, v in items]


def _value(value: Any) -> Any:
    # fmt/2: integers are longs; the rest travel as they are (strings, bools, tables, arrays).
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, Mapping):
            return {k: _value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [_value(v) for v in value]
        return value
    return Long(value)


@final
class EventPublisher:
    """Publishes the broker's events to ``amq.rabbitmq.event`` (``broker.plugins.events``).

    Attributes:
        vhost: the virtual host of the event exchange (``/``).
        published: how many events were published (routed to some queue or not).
    """

    def __init__(self, broker: Broker, vhost: str = "/") -> None:
        self._broker = broker
        self.vhost = vhost
        self.published = 0
        self._busy = False
        self._pids: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()
        self._numbers = itertools.count(1)

    def start(self) -> None:
        """Declare the exchange, in its vhost (made if need be), as the plugin's ``register/0``."""
        host = self._broker.add_vhost(self.vhost)
        if EVENT_EXCHANGE not in host.exchanges:
            host.exchanges[EVENT_EXCHANGE] = TopicExchange(host, EVENT_EXCHANGE, durable=True,
                                                           internal=True)

    def pid(self, thing: object) -> str:
        """The made-up Erlang pid of a connection, channel or queue."""
        pid = self._pids.get(thing)
        if pid is None:
            pid = self._pids[thing] = f"<{self._broker.node.name}.1.{next(self._numbers)}.0>"
        return pid

    # -- publishing ----------------------------------------------------------------------------

    def emit(self, name: str, fields: Iterable[tuple[str, Any]]) -> None:
        """Publish event ``name`` with its header fields (in RabbitMQ's order; the timestamp
        is added), unless nothing is bound or an event is being published."""
        if self._busy:
            return
        host = self._broker.vhosts.get(self.vhost)
        exchange = host.exchanges.get(EVENT_EXCHANGE) if host is not None else None
        if host is None or exchange is None or not exchange.bindings:
            return
        millis = int(self._broker.clock.time() * 1000)
        headers = {key: _value(value) for key, value in fields}
        headers["timestamp_in_ms"] = Long(millis)
        message = Message(EVENT_EXCHANGE, name, {"delivery_mode": 2, "headers": headers,
                                                 "timestamp": millis // 1000}, b"")
        self._busy = True
        try:
            host.publish_from_broker(exchange, message)
            self.published += 1
        finally:
            self._busy = False

    # -- the events, with their properties in RabbitMQ's order ---------------------------------

    def queue_created(self, queue: Queue, user: str) -> None:
        fields: list[tuple[str, Any]] = [("user_who_performed_action", user)]
        owner = queue.exclusive_owner
        arguments = arguments_array(queue.arguments)
        if queue.type.replicated:  # (declared by rabbit_quorum_queue, rabbit_stream_queue)
            fields += [("arguments", arguments), ("type", queue.type.module),
                       ("exclusive", owner is not None)]
        else:
            fields += [("exclusive", owner is not None),
                       ("owner_pid", self.pid(owner) if owner is not None else ""),
                       ("arguments", arguments)]
        fields += [("auto_delete", queue.auto_delete), ("durable", queue.durable),
                   ("name", queue.name), ("vhost", queue.vhost.name)]
        self.emit("queue.created", fields)

    def queue_deleted(self, queue: Queue, user: str) -> None:
        self.emit("queue.deleted", [("user_who_performed_action", user), ("name", queue.name),
                                    ("vhost", queue.vhost.name)])

    def exchange_created(self, exchange: Exchange, user: str) -> None:
        policy = exchange.policy.name if exchange.policy is not None else ""
        self.emit("exchange.created", [
            ("user_who_performed_action", user), ("policy", policy),
            ("arguments", arguments_array(exchange.arguments)), ("internal", exchange.internal),
            ("auto_delete", exchange.auto_delete), ("durable", exchange.durable),
            ("type", exchange.type), ("name", exchange.name), ("vhost", exchange.vhost.name)])

    def exchange_delete_started(self, exchange: Exchange, user: str) -> None:
        """A deletion asked for (not an auto-delete) is wrapped in the runtime parameter
        RabbitMQ 3.10 sets while it deletes: ``parameter.set`` ``exchange-delete-in-progress``."""
        self.emit("parameter.set", [
            ("user_who_performed_action", user), ("value", True), ("name", exchange.name),
            ("component", "exchange-delete-in-progress"), ("vhost", exchange.vhost.name)])

    def exchange_deleted(self, exchange: Exchange, user: str) -> None:
        self.emit("exchange.deleted", [("user_who_performed_action", user),
                                       ("name", exchange.name), ("vhost", exchange.vhost.name)])

    def exchange_delete_finished(self, exchange: Exchange, user: str) -> None:
        self.emit("parameter.cleared", [
            ("user_who_performed_action", user), ("name", exchange.name),
            ("component", "exchange-delete-in-progress"), ("vhost", exchange.vhost.name)])

    def _binding(self, event: str, binding: Binding, user: str) -> None:
        dest = binding.destination
        self.emit(event, [
            ("user_who_performed_action", user), ("vhost", binding.source.vhost.name),
            ("arguments", arguments_array(binding.arguments, sort=True)),
            ("routing_key", binding.routing_key), ("destination_kind", dest.kind),
            ("destination_name", dest.name), ("source_kind", "exchange"),
            ("source_name", binding.source.name)])

    def binding_created(self, binding: Binding, user: str) -> None:
        self._binding("binding.created", binding, user)

    def binding_deleted(self, binding: Binding, user: str) -> None:
        self._binding("binding.deleted", binding, user)

    def consumer_created(self, consumer: Consumer) -> None:
        channel = consumer.channel
        self.emit("consumer.created", [
            ("user_who_performed_action", channel.connection.user),
            ("arguments", arguments_array(consumer.arguments)),
            ("prefetch_count", consumer.prefetch), ("queue", consumer.queue.name),
            ("vhost", consumer.queue.vhost.name), ("channel", self.pid(channel)),
            ("ack_required", not consumer.no_ack), ("exclusive", consumer.exclusive),
            ("consumer_tag", consumer.tag)])

    def consumer_deleted(self, consumer: Consumer, user: str | None) -> None:
        """``consumer.deleted``; ``user`` ``None`` when its queue was deleted (RabbitMQ says
        nobody then)."""
        fields: list[tuple[str, Any]] = [] if user is None else [
            ("user_who_performed_action", user)]
        fields += [("queue", consumer.queue.name), ("vhost", consumer.queue.vhost.name),
                   ("channel", self.pid(consumer.channel)), ("consumer_tag", consumer.tag)]
        self.emit("consumer.deleted", fields)

    def channel_created(self, channel: Channel) -> None:
        connection = channel.connection
        self.emit("channel.created", [
            ("user_who_performed_action", connection.user), ("vhost", connection.vhost.name),
            ("user", connection.user), ("number", channel.number),
            ("connection", self.pid(connection)),
            ("name", f"{_display(connection)} ({channel.number})"), ("pid", self.pid(channel))])

    def channel_closed(self, channel: Channel) -> None:
        self.emit("channel.closed", [("user_who_performed_action", channel.connection.user),
                                     ("pid", self.pid(channel))])

    def connection_created(self, connection: Connection) -> None:
        details: Mapping[str, Any] = getattr(connection, "details", None) or {}
        properties = arguments_array(connection.client_properties)
        fields: list[tuple[str, Any]] = [
            ("user_who_performed_action", connection.user), ("node", connection.node.name),
            ("connected_at", int(self._broker.clock.time() * 1000)),
            ("client_properties", properties)]
        if details:
            fields += [
                ("channel_max", details.get("channel_max", 0)),
                ("frame_max", details.get("frame_max", 0)),
                ("timeout", details.get("heartbeat", 0)),
                ("vhost", connection.vhost.name), ("user", connection.user),
                ("protocol", connection.kind.protocol_term), ("ssl_hash", ""),
                ("ssl_cipher", ""),
                ("ssl_key_exchange", ""), ("ssl_protocol", ""),
                ("auth_mechanism", details.get("mechanism", "PLAIN")),
                ("peer_cert_validity", ""), ("peer_cert_issuer", ""), ("peer_cert_subject", ""),
                ("ssl", False), ("peer_host", _erlang_ip(details.get("peer_host", ""))),
                ("host", _erlang_ip(details.get("host", ""))),
                ("peer_port", details.get("peer_port", 0)), ("port", details.get("port", 0)),
                ("name", _display(connection)), ("pid", self.pid(connection)),
                ("type", "network")]
        else:  # an in-process connection: RabbitMQ's direct (Erlang client) connections
            fields += [("vhost", connection.vhost.name), ("user", connection.user),
                       ("protocol", "Direct 0-9-1"), ("name", _display(connection)),
                       ("pid", self.pid(connection)), ("type", "direct")]
        self.emit("connection.created", fields + _user_provided_name(connection))

    def connection_closed(self, connection: Connection) -> None:
        self.emit("connection.closed", [
            ("client_properties", arguments_array(connection.client_properties)),
            ("node", connection.node.name), ("pid", self.pid(connection)), ("name", _display(connection)),
            *_user_provided_name(connection)])

    def authentication(self, user: str, details: Mapping[str, Any], *,
                       failed: bool = False, error: str | None = None) -> None:
        """``user.authentication.success`` or ``.failure`` (with RabbitMQ's reason, ``error``,
        as the char list it is: an array of longs) for a login (:mod:`embroker.kit._login`).
        ``details``: the peer (``peer_host``, ``peer_port``, ``host``, ``port``), its
        ``mechanism``, ``protocol`` (the reader's, ``{0,9,1}`` by default) and ``ssl``; or
        ``connection_type: direct`` alone (rabbit_direct's event: the name only). A user
        ``""`` (none known) is left out, as RabbitMQ leaves out ``''``."""
        fields: list[tuple[str, Any]] = []
        if failed:
            reason = error if error is not None else f"user '{user}' - invalid credentials"
            fields.append(("error", [ord(c) for c in reason]))
        if details.get("connection_type") != "direct":
            peer = f"{details.get('peer_host', '')}:{details.get('peer_port', 0)}"
            fields += [("ssl", bool(details.get("ssl", False))),
                       ("auth_mechanism", details.get("mechanism", "PLAIN")),
                       ("protocol", details.get("protocol", "{0,9,1}")),
                       ("peer_port", details.get("peer_port", 0)),
                       ("peer_host", _erlang_ip(details.get("peer_host", ""))),
                       ("connection_name",
                        f"{peer} -> {details.get('host', '')}:{details.get('port', 0)}"),
                       ("host", _erlang_ip(details.get("host", "")))]
        if user:
            fields.append(("name", user))
        fields.append(("connection_type", details.get("connection_type", "network")))
        self.emit("user.authentication.failure" if failed else "user.authentication.success",
                  fields)

    def vhost_added(self, vhost: VirtualHost, user: str = CLI_USER) -> None:
        """A new vhost: its standard exchanges, then ``vhost.created``."""
        for exchange in vhost.exchanges.values():
            if not exchange.name.startswith("amq.rabbitmq.") or exchange.name == \
                    "amq.rabbitmq.trace":
                self.exchange_created(exchange, user)
        self.vhost_created(vhost.name, user)

    def vhost_created(self, name: str, user: str) -> None:
        self.emit("vhost.created", [
            ("tags", []), ("description", ""), ("user_who_performed_action", user),
            # (rabbit_vhost:vhost_cluster_state/1, v3.10.8: each running node, running, the
            # latest to join first: management.views.running_nodes)
            ("cluster_state", {node.name: "running" for node in reversed(self._broker.nodes)
                               if node.running}), ("tracing", False),
            ("metadata", "#{description => <<>>,tags => []}"),
            ("default_queue_type", "undefined"), ("name", name)])

    def user_event(self, event: str, name: str, **extra: Any) -> None:
        """``user.created``, ``user.deleted``, ``user.password.changed``,
        ``user.password.cleared``, ``user.tags.set`` (with ``tags``)."""
        fields: list[tuple[str, Any]] = [("user_who_performed_action", CLI_USER)]
        if "tags" in extra:
            fields.append(("tags", list(extra["tags"])))
        fields.append(("name", name))
        self.emit(event, fields)

    def permission_set(self, user: str, vhost: str, configure: str, write: str,
                       read: str) -> None:
        self.emit("permission.created", [
            ("user_who_performed_action", CLI_USER), ("read", read), ("write", write),
            ("configure", configure), ("vhost", vhost), ("user", user)])

    def permission_cleared(self, user: str, vhost: str) -> None:
        self.emit("permission.deleted", [("user_who_performed_action", CLI_USER),
                                         ("vhost", vhost), ("user", user)])

    def topic_permission_set(self, user: str, vhost: str, exchange: str, write: str,
                             read: str) -> None:
        self.emit("topic.permission.created", [
            ("user_who_performed_action", CLI_USER), ("read", read), ("write", write),
            ("exchange", exchange), ("vhost", vhost), ("user", user)])

    def topic_permission_cleared(self, user: str, vhost: str) -> None:
        self.emit("topic.permission.deleted", [("user_who_performed_action", CLI_USER),
                                               ("vhost", vhost), ("user", user)])

    def policy_set(self, policy: Policy, vhost: str, *, operator: bool) -> None:
        value = [("apply-to", policy.apply_to), ("priority", policy.priority),
                 ("definition", dict(policy.definition)), ("pattern", policy.pattern)]
        if operator:
            self.emit("parameter.set", [
                ("user_who_performed_action", CLI_USER), ("value", dict(reversed(value))),
                ("name", policy.name), ("component", "operator_policy"), ("vhost", vhost)])
        self.emit("policy.set", [*value, ("user_who_performed_action", CLI_USER),
                                 ("vhost", vhost), ("name", policy.name)])

    def policy_cleared(self, name: str, vhost: str, *, operator: bool) -> None:
        fields = [("user_who_performed_action", CLI_USER), ("vhost", vhost), ("name", name)]
        if operator:
            self.emit("parameter.cleared", [
                ("user_who_performed_action", CLI_USER), ("name", name),
                ("component", "operator_policy"), ("vhost", vhost)])
            self.emit("operator.policy.cleared", fields)
        else:
            self.emit("policy.cleared", fields)


def _display(connection: Connection) -> str:
    # RabbitMQ names a network connection "peer -> local"; embroker's names say "connection
    # PEER" (the wire) or "connection N" (in-process).
    details: Mapping[str, Any] = getattr(connection, "details", None) or {}
    if details.get("peer_host"):
        return (f"{details['peer_host']}:{details.get('peer_port', 0)} -> "
                f"{details.get('host', '')}:{details.get('port', 0)}")
    return connection.name


def _user_provided_name(connection: Connection) -> list[tuple[str, Any]]:
    # The client's connection_name property, when it gave one (a string).
    name = connection.client_properties.get("connection_name")
    return [("user_provided_name", name)] if isinstance(name, str) else []


def _erlang_ip(host: str) -> str:
    # inet's tuple, printed: 127.0.0.1 -> {127,0,0,1}.
    parts = host.split(".")
    if len(parts) == 4 and all(p.isdigit() for p in parts):
        return "{" + ",".join(str(int(p)) for p in parts) + "}"
    return host
