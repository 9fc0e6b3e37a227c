"""The JSON shapes of RabbitMQ 3.10's management API, made from the broker model.

Each function turns one model object into the object RabbitMQ's management plugin shows for it
(``rabbit_mgmt_format``), with its field names and value shapes, compared with a RabbitMQ 3.10.8
(tests/management). Counts (``messages``, ``messages_ready``, ``messages_unacknowledged``,
``consumers``) are the model's own, exact at the moment of the request (RabbitMQ's lag by the
statistics interval, 5 s); rates RabbitMQ samples are present with their shapes and 0.0;
Erlang-process figures (``memory``, ``reductions``, ``garbage_collection``) are 0.

Every function here runs under the broker's lock and only reads.
"""

from __future__ import annotations

import base64
import hashlib
import json
import json.encoder
import operator
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple, final
from urllib.parse import quote_plus

from ..fieldtypes import json_value
from ..model._kinds import STREAM
from ..model._names import NODE
from ..model._stats import MessageStats

if TYPE_CHECKING:
    from ..model import (
        Binding,
        Broker,
        Channel,
        Connection,
        Consumer,
        Exchange,
        Node,
        Queue,
        VirtualHost,
    )
    from ._samples import History

__all__ = ["ERLANG_VERSION", "FEATURE_FLAGS", "NODE", "QueueSnapshot", "binding_info",
           "cluster_state", "exchange_info", "feature_flags", "json_value", "placement_names",
           "properties_key", "queue_info", "queue_json", "queue_snapshot", "running_nodes",
           "vhost_info"]


#: The Erlang version a node reports (the management API's overview, ``rabbitmqctl
#: cluster_status``): none.
ERLANG_VERSION: Final = "none (embroker is Python)"

_RATE = {"rate": 0.0}
_GC = {"fullsweep_after": 0, "max_heap_size": 0, "min_bin_vheap_size": 0, "min_heap_size": 0,
       "minor_gcs": 0}


#: The message statistics RabbitMQ 3.10.8 keeps in two groups (``rabbit_core_metrics``'
#: tables): what a channel took from queues (``channel_queue_metrics``) and what it published
#: (``channel_exchange_metrics``). An object shows a group once something counted in it; a
#: vhost both, once anything did; the overview every one, always (checked live).
DELIVERY_STATS = ("ack", "deliver", "deliver_get", "deliver_no_ack", "get", "get_empty",
                  "get_no_ack", "redeliver")
PUBLISH_STATS = ("confirm", "drop_unroutable", "publish", "return_unroutable")
VHOST_STATS = (*DELIVERY_STATS, *PUBLISH_STATS)
OVERVIEW_STATS = (*VHOST_STATS, "disk_reads", "disk_writes")
#: What 3.10.8's API shows as 0 whatever its channel counted (live: after an empty basic.get
#: and unroutable publishes, on every object; its statistics collector does not sum them).
_SHOWN_AS_ZERO = ("drop_unroutable", "get_empty")


_COUNTS = operator.attrgetter(*MessageStats.__slots__)  # (one call: sampled every 5 s)
_ZEROES = dict.fromkeys(_SHOWN_AS_ZERO, 0)


def counted(counts: MessageStats) -> dict[str, int]:
    """Every message count of ``counts`` by the API's name (``deliver_get`` summed), as the
    API shows them (:data:`_SHOWN_AS_ZERO` at 0)."""
    values = dict(zip(MessageStats.__slots__, _COUNTS(counts), strict=True))
    values["deliver_get"] = counts.deliver_get
    values.update(_ZEROES)
    return values


def stat_names(counts: MessageStats, kind: str) -> tuple[str, ...]:
    """The ``message_stats`` keys RabbitMQ shows for an object of ``kind`` (``channel``,
    ``queue``, ``exchange``, ``vhost``) with these counts: none while nothing was counted."""
    if kind == "vhost":
        return VHOST_STATS if counts.published or counts.took else ()
    if kind == "exchange":
        return ("publish_in", "publish_out") if counts.publish_out else (
            ("publish_in",) if counts.publish_in else ())
    published = ("publish",) if kind == "queue" else PUBLISH_STATS
    return ((published if counts.published else ()) + (DELIVERY_STATS if counts.took else ()))


def message_stats(counts: MessageStats, kind: str,
                  history: History | None = None) -> dict[str, Any] | None:
    """An object's ``message_stats`` (:func:`stat_names`), or ``None`` when it shows none."""
    names = stat_names(counts, kind)
    return stats(names, history, counted(counts)) if names else None


def stats(names: Iterable[str], history: History | None = None,
          values: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Counters and rates as RabbitMQ shows them (``{"ack": 0, "ack_details": {"rate":
    0.0}}``): each count from ``values`` (0 when it has none), each ``*_details`` from
    ``history`` when given (its samples with a range:
    :class:`~embroker.management._samples.History`)."""
    out: dict[str, Any] = {}
    for name in sorted(names):
        out[name] = values.get(name, 0) if values is not None else 0
        out[f"{name}_details"] = rate(history, name)
    return out


def rate(history: History | None = None, name: str = "") -> dict[str, Any]:
    """A sampled figure's ``*_details`` as RabbitMQ shows it: ``{"rate": r}`` (r from the last
    two samples), and with a range asked its ``samples``, ``avg`` and ``avg_rate``; without a
    ``history``, ``{"rate": 0.0}``."""
    if history is None:
        return dict(_RATE)
    return history.details(name)


def iso_time(epoch: float) -> str:
    """RabbitMQ's ``idle_since`` format: ``2026-11-24T09:24:54.154+00:00``."""
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch))
    return f"{text}.{int(epoch * 1000) % 1000:03d}+00:00"


# -- bindings -------------------------------------------------------------------------------------

def properties_key(routing_key: str, arguments: Mapping[str, Any]) -> str:
    """How RabbitMQ names a binding in URLs (``rabbit_mgmt_format:pack_binding_props``): the
    routing key's bytes, percent-encoded as ``quote_plus``, then ``~`` and a hash of the
    arguments when it has any (RabbitMQ hashes Erlang's term; embroker hashes the JSON: the
    same role, other characters; tools take it from a listing and give it back)."""
    key = quote_plus(routing_key.encode("utf-8", "surrogateescape"), safe="")
    if not arguments:
        return key
    digest = hashlib.md5(json.dumps(json_value(arguments), sort_keys=True).encode(),
                         usedforsecurity=False).digest()
    return f"{key}~{base64.urlsafe_b64encode(digest).decode().rstrip('=')}"


def binding_info(vhost: str, source: str, destination: str, kind: str, routing_key: str,
                 arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"source": source, "vhost": vhost, "destination": destination,
            "destination_type": kind, "routing_key": routing_key,
            "arguments": json_value(arguments),
            "properties_key": properties_key(routing_key, arguments)}


def bindings_of(vhost: VirtualHost, bindings: Iterable[Binding]) -> list[dict[str, Any]]:
    return [binding_info(vhost.name, b.source.name, b.destination.name, b.destination.kind,
                         b.routing_key, b.arguments) for b in bindings]


def default_binding(vhost: VirtualHost, queue: Queue) -> dict[str, Any]:
    """The default exchange's implicit binding of a queue (RabbitMQ lists it first)."""
    return binding_info(vhost.name, "", queue.name, "queue", queue.name, {})


# -- queues -----------------------------------------------------------------------------------------

def queue_type(queue: Queue) -> str:
    return str(queue.arguments.get("x-queue-type", "classic"))


def unacked_by_queue(connections: Iterable[Connection]) -> dict[int, tuple[int, int]]:
    """(count, body bytes) of the deliveries not yet settled, by ``id(queue)``: one walk over
    the channels for a whole listing."""
    found: dict[int, tuple[int, int]] = {}
    for connection in connections:
        for channel in connection.channels.values():
            for unacked in channel.outstanding():
                count, size = found.get(id(unacked.queue), (0, 0))
                found[id(unacked.queue)] = (count + 1, size + len(unacked.entry.message.body))
    return found


@final
class QueueSnapshot(NamedTuple):
    """What the API shows of a queue, read under the broker's lock (:func:`queue_snapshot`):
    plain values, which a listing may turn into JSON after the lock is let go."""

    vhost: str
    name: str
    arguments: Any
    auto_delete: bool
    durable: bool
    exclusive: bool
    owner: str | None
    type: str
    ready: int
    ready_bytes: int
    unacked: int
    unacked_bytes: int
    persistent: int
    persistent_bytes: int
    consumers: int
    exclusive_tag: str | None
    active_tag: str | None
    policy: str | None
    operator_policy: str | None
    effective_policy_definition: Any
    declared_at: float
    #: The node it is on: a classic queue's home, a quorum queue's or a stream's leader
    #: (:attr:`Queue.placement <embroker.model.Queue.placement>`).
    node: str = NODE
    #: Its members' names, in its placement's order (a classic queue's: its home).
    members: tuple[str, ...] = (NODE,)
    #: Those of its members whose node runs.
    online: tuple[str, ...] = (NODE,)
    #: Its leader's name while its node runs, else ``""`` (``rabbit_quorum_queue:leader/1``:
    #: ``''`` when the leader's Ra server is not alive).
    leader: str = NODE
    #: Whether its home node is stopped (:attr:`Queue.down <embroker.model.Queue.down>`).
    down: bool = False
    #: Its ``message_stats`` keys (:func:`stat_names`) and its counts (:func:`counted`).
    stat_names: tuple[str, ...] = ()
    counts: Mapping[str, int] | None = None


def queue_snapshot(queue: Queue, unacked: tuple[int, int] | None = None) -> QueueSnapshot:
    """Read ``queue`` (under the broker's lock; ``unacked``: count and bytes of its
    unacknowledged deliveries, :func:`unacked_by_queue`)."""
    (ready, ready_bytes, unacked_count, unacked_bytes, persistent,
     persistent_bytes) = queue.type.message_counts(
        queue, unacked if unacked is not None else (queue.unacked, 0))
    active = queue.active_consumer if queue.single_active else None
    exclusive_tag = next((c.tag for c in queue.consumers if c.exclusive), None) \
        if queue.consumer_count else None
    owner = queue.exclusive_owner
    return QueueSnapshot(
        queue.vhost.name, queue.name, json_value(queue.arguments) if queue.arguments else {},
        queue.auto_delete, queue.durable, queue.exclusive,
        owner.name if queue.exclusive and owner is not None else None, queue_type(queue),
        ready, ready_bytes, unacked_count, unacked_bytes, persistent, persistent_bytes,
        queue.consumer_count, exclusive_tag, active.tag if active is not None else None,
        queue.policy.name if queue.policy else None,
        queue.operator_policy.name if queue.operator_policy else None,
        json_value(queue.effective_policy_definition), queue.declared_at,
        *placement_names(queue), queue.down, stat_names(queue.stats, "queue"),
        counted(queue.stats))


def placement_names(queue: Queue) -> tuple[str, tuple[str, ...], tuple[str, ...], str]:
    """Where ``queue`` lives, by name, as :class:`QueueSnapshot` keeps it: its node (a classic
    queue's home, a replicated queue's leader: ``rabbit_mgmt_format:strip_queue_pids/1`` and
    ``format_queue_stats({leader, _})``, v3.10.8), its members, those running, and its leader
    while it runs (else ``""``).

    The running members come in the members' order for a quorum queue
    (``rabbit_quorum_queue:online/1``) and in reverse order of name for a stream
    (``rabbit_stream_queue:i(online, _)`` folds the coordinator's map of members, by name,
    onto a list)."""
    placement = queue.placement
    leader = placement.leader
    members = tuple(member.name for member in placement.members)
    online = tuple(member.name for member in placement.members if member.running)
    if queue.type.name == "stream":
        online = tuple(sorted(online, reverse=True))
    return leader.name, members, online, leader.name if leader.running else ""


def queue_info(queue: Queue | QueueSnapshot, unacked: tuple[int, int] | None = None, *,
               lengths: History | None = None, msg_rates: History | None = None,
               data_rates: History | None = None) -> dict[str, Any]:
    """A queue as ``GET /api/queues/{vhost}`` lists it, from the queue (under the broker's lock)
    or its :class:`QueueSnapshot` (anywhere). :func:`queue_json` writes the same object's
    JSON text faster.

    ``idle_since`` is when the queue was declared: RabbitMQ's is when the queue last went idle
    (its statistics saw no traffic), which embroker does not follow (it would cost every
    publish and delivery a clock read)."""
    q = queue if isinstance(queue, QueueSnapshot) else queue_snapshot(queue, unacked)
    if q.down:
        return _down(q)
    info: dict[str, Any] = {"arguments": q.arguments, "auto_delete": q.auto_delete}
    if q.type == "classic":
        info["backing_queue_status"] = {
            "avg_ack_egress_rate": 0.0, "avg_ack_ingress_rate": 0.0, "avg_egress_rate": 0.0,
            "avg_ingress_rate": 0.0, "delta": ["delta", "undefined", 0, 0, "undefined"],
            "len": q.ready, "mode": "default", "next_deliver_seq_id": 0, "next_seq_id": 0,
            "q1": 0, "q2": 0, "q3": 0, "q4": q.ready, "target_ram_count": "infinity",
            "version": 1}
    info.update({
        "consumer_capacity": 1.0 if q.consumers else 0,
        "consumer_utilisation": 1.0 if q.consumers else 0,
        "consumers": q.consumers, "durable": q.durable,
        "effective_policy_definition": q.effective_policy_definition,
        "exclusive": q.exclusive, "exclusive_consumer_tag": q.exclusive_tag,
        "garbage_collection": dict(_GC), "head_message_timestamp": None,
        "idle_since": iso_time(q.declared_at),
        "memory": 0,
        "message_bytes": q.ready_bytes + q.unacked_bytes, "message_bytes_paged_out": 0,
        "message_bytes_persistent": q.persistent_bytes, "message_bytes_ram": q.ready_bytes,
        "message_bytes_ready": q.ready_bytes, "message_bytes_unacknowledged": q.unacked_bytes,
        "message_stats": stats(q.stat_names, msg_rates, q.counts),
        "messages": q.ready + q.unacked, "messages_details": rate(lengths, "messages"),
        "messages_paged_out": 0, "messages_persistent": q.persistent,
        "messages_ram": q.ready + q.unacked, "messages_ready": q.ready,
        "messages_ready_details": rate(lengths, "messages_ready"),
        "messages_ready_ram": q.ready, "messages_unacknowledged": q.unacked,
        "messages_unacknowledged_details": rate(lengths, "messages_unacknowledged"),
        "messages_unacknowledged_ram": q.unacked,
        "name": q.name, "node": q.node,
        "operator_policy": q.operator_policy, "policy": q.policy,
        "recoverable_slaves": None, "reductions": 0,
        "reductions_details": rate(data_rates, "reductions"),
        "single_active_consumer_tag": q.active_tag,
        "state": "running", "type": q.type, "vhost": q.vhost,
    })
    if not q.stat_names:  # (nothing passed through it yet: RabbitMQ shows no statistics)
        del info["message_stats"]
    if q.owner is not None:
        info["owner_pid_details"] = {"name": q.owner}
    if q.type == "quorum":
        return _quorum(info, q)
    if q.type == "stream":
        # rabbit_stream_queue:i/2 (v3.10.8): readers are asked of every member ({Node, 0}
        # from one that has none).
        return {key: value for key, value in info.items() if key in _STREAM_KEYS} | {
            "members": list(q.members), "online": list(q.online),
            "readers": dict.fromkeys(q.members, 0)}
    return info


def _down(q: QueueSnapshot) -> dict[str, Any]:
    # A classic queue whose home node is stopped: its record without statistics (checked live
    # on a 3-node RabbitMQ 3.10.8: these keys alone, state down; rabbit_amqqueue:info_down/2).
    return {"arguments": q.arguments, "auto_delete": q.auto_delete, "durable": q.durable,
            "exclusive": q.exclusive, "name": q.name, "node": q.node, "state": "down",
            "type": q.type, "vhost": q.vhost}


#: What RabbitMQ 3.10.8 shows of a classic queue and not of a quorum queue (checked live:
#: absent, not null).
_CLASSIC_ONLY = frozenset({
    "exclusive_consumer_tag", "head_message_timestamp", "idle_since",
    "message_bytes_paged_out", "messages_paged_out", "messages_ready_ram",
    "messages_unacknowledged_ram", "recoverable_slaves", "single_active_consumer_tag"})
#: What it shows of a stream (the same).
_STREAM_KEYS = frozenset({
    "arguments", "auto_delete", "consumers", "durable", "effective_policy_definition",
    "exclusive", "garbage_collection", "memory", "message_stats", "messages",
    "messages_details", "messages_ready", "messages_ready_details", "messages_unacknowledged",
    "messages_unacknowledged_details", "name", "node", "operator_policy", "owner_pid_details",
    "policy", "reductions", "reductions_details", "state", "type", "vhost"})


def _quorum(info: dict[str, Any], q: QueueSnapshot) -> dict[str, Any]:
    # rabbit_quorum_queue:i/2 (v3.10.8): the leader, or '' (null here: rabbit_mgmt_format's
    # format_nulls) while it is down; the members in the queue's order, online the members
    # whose Ra server is alive, open_files asked of every member.
    found = {key: value for key, value in info.items() if key not in _CLASSIC_ONLY}
    found.update({"leader": q.leader or None, "members": list(q.members),
                  "online": list(q.online),
                  "open_files": dict.fromkeys(q.members, 0),
                  "messages_dlx": 0, "message_bytes_dlx": 0,
                  "single_active_consumer_ctag": q.active_tag})
    return dict(sorted(found.items()))


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_STRING: Any = json.encoder.encode_basestring  # C when it can


def _fragment(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is str:
        return str(_STRING(value))
    if type(value) is dict and not value:
        return "{}"
    return _ENCODER.encode(value)


# The constant parts of a queue's JSON, written once.
_BACKING = _fragment({"avg_ack_egress_rate": 0.0, "avg_ack_ingress_rate": 0.0,
                      "avg_egress_rate": 0.0, "avg_ingress_rate": 0.0,
                      "delta": ["delta", "undefined", 0, 0, "undefined"]})[:-1]
_GC_JSON = _fragment(_GC)
_RATE_JSON = _fragment(_RATE)


def queue_json(q: QueueSnapshot) -> str:
    """The JSON text of :func:`queue_info` (the same object; written from fragments, several
    times faster than ``json.dumps`` of the dict, for listings of thousands of queues)."""
    if q.type != "classic" or q.down:  # (fewer of them: written whole)
        return _fragment(queue_info(q))
    dump = _fragment
    consumers = q.consumers
    capacity = "1.0" if consumers else "0"
    parts = ['{"arguments":', dump(q.arguments), ',"auto_delete":',
             "true" if q.auto_delete else "false"]
    if q.type == "classic":
        parts += [',"backing_queue_status":', _BACKING, ',"len":', str(q.ready),
                  ',"mode":"default","next_deliver_seq_id":0,"next_seq_id":0,"q1":0,"q2":0,'
                  '"q3":0,"q4":', str(q.ready), ',"target_ram_count":"infinity","version":1}']
    total = q.ready + q.unacked
    parts += [
        ',"consumer_capacity":', capacity, ',"consumer_utilisation":', capacity,
        ',"consumers":', str(consumers), ',"durable":', "true" if q.durable else "false",
        ',"effective_policy_definition":', dump(q.effective_policy_definition),
        ',"exclusive":', "true" if q.exclusive else "false",
        ',"exclusive_consumer_tag":', dump(q.exclusive_tag),
        ',"garbage_collection":', _GC_JSON, ',"head_message_timestamp":null',
        ',"idle_since":"', iso_time(q.declared_at), '","memory":0',
        ',"message_bytes":', str(q.ready_bytes + q.unacked_bytes),
        ',"message_bytes_paged_out":0,"message_bytes_persistent":', str(q.persistent_bytes),
        ',"message_bytes_ram":', str(q.ready_bytes), ',"message_bytes_ready":',
        str(q.ready_bytes), ',"message_bytes_unacknowledged":', str(q.unacked_bytes),
        *([',"message_stats":', dump(stats(q.stat_names, values=q.counts))]
          if q.stat_names else []),
        ',"messages":', str(total), ',"messages_details":', _RATE_JSON,
        ',"messages_paged_out":0,"messages_persistent":', str(q.persistent),
        ',"messages_ram":', str(total), ',"messages_ready":', str(q.ready),
        ',"messages_ready_details":', _RATE_JSON, ',"messages_ready_ram":', str(q.ready),
        ',"messages_unacknowledged":', str(q.unacked),
        ',"messages_unacknowledged_details":', _RATE_JSON,
        ',"messages_unacknowledged_ram":', str(q.unacked),
        ',"name":', dump(q.name), ',"node":', dump(q.node),
        ',"operator_policy":', dump(q.operator_policy), ',"policy":', dump(q.policy),
        ',"recoverable_slaves":null,"reductions":0,"reductions_details":', _RATE_JSON,
        ',"single_active_consumer_tag":', dump(q.active_tag),
        ',"state":"running","type":', dump(q.type), ',"vhost":', dump(q.vhost)]
    if q.owner is not None:
        parts += [',"owner_pid_details":{"name":', dump(q.owner), "}"]
    parts.append("}")
    return "".join(parts)


# -- exchanges --------------------------------------------------------------------------------------

def exchange_info(exchange: Exchange, user: str) -> dict[str, Any]:
    """An exchange as ``GET /api/exchanges/{vhost}`` lists it."""
    info: dict[str, Any] = {
        "arguments": json_value(exchange.arguments), "auto_delete": exchange.auto_delete,
        "durable": exchange.durable, "internal": exchange.internal, "name": exchange.name,
    }
    found = message_stats(exchange.stats, "exchange")
    if found is not None:
        info["message_stats"] = found
    if exchange.policy is not None:
        info["policy"] = exchange.policy.name
    info.update({"type": exchange.type, "user_who_performed_action": user,
                 "vhost": exchange.vhost.name})
    return info


# -- connections, channels, consumers -------------------------------------------------------------

def channel_name(connection_name: str, number: int) -> str:
    return f"{connection_name} ({number})"


def consumer_info(consumer: Consumer, connection_name: str, peer: tuple[str, int],
                  user: str) -> dict[str, Any]:
    queue = consumer.queue
    if queue.single_active:
        status = "single_active" if queue.active_consumer is consumer else "waiting"
    else:
        status = "up"
    return {
        "arguments": json_value(consumer.arguments),
        "channel_details": {
            "connection_name": connection_name,
            "name": channel_name(connection_name, consumer.channel.number),
            "node": consumer.channel.connection.node.name,
            "number": consumer.channel.number, "peer_host": peer[0], "peer_port": peer[1],
            "user": user},
        "ack_required": not consumer.no_ack, "active": status != "waiting",
        "activity_status": status, "consumer_tag": consumer.tag,
        "exclusive": consumer.exclusive, "prefetch_count": consumer.prefetch,
        "queue": {"name": queue.name, "vhost": queue.vhost.name},
    }


def channel_info(channel: Channel, connection_name: str, peer: tuple[str, int], user: str,
                 who: str, *, msg_rates: History | None = None,
                 data_rates: History | None = None) -> dict[str, Any]:
    """A channel as ``/api/channels`` shows it; ``msg_rates``, ``data_rates``: its history for
    the ranges asked (``message_stats``, ``reductions``)."""
    outstanding = channel.outstanding()
    info = {
        "acks_uncommitted": 0, "confirm": channel.confirm_mode,
        "connection_details": {"name": connection_name, "peer_host": peer[0],
                               "peer_port": peer[1]},
        "consumer_count": len(channel.consumers), "garbage_collection": dict(_GC),
        "global_prefetch_count": channel.global_prefetch,
        "idle_since": iso_time(time.time()),
        "messages_unacknowledged": len(outstanding), "messages_uncommitted": 0,
        "messages_unconfirmed": 0, "name": channel_name(connection_name, channel.number),
        "node": channel.connection.node.name, "number": channel.number,
        "pending_raft_commands": 0,
        "prefetch_count": channel.prefetch_count, "reductions": 0,
        "reductions_details": rate(data_rates, "reductions"), "state": "running",
        "transactional": channel.tx_mode,
        "user": user, "user_who_performed_action": who, "vhost": channel.vhost.name,
    }
    found = message_stats(channel.stats, "channel", msg_rates)
    if found is not None:
        info["message_stats"] = found
    return info


# -- vhosts -----------------------------------------------------------------------------------------

def vhost_info(vhost: VirtualHost, metadata: Mapping[str, Any], tracing: bool,
               unacked: Mapping[int, tuple[int, int]], *, lengths: History | None = None,
               msg_rates: History | None = None,
               data_rates: History | None = None) -> dict[str, Any]:
    """A vhost as ``/api/vhosts`` shows it; ``lengths``, ``msg_rates``, ``data_rates``: its
    history for the ranges asked (the counts' details, ``message_stats``',
    ``recv_oct``/``send_oct``'s)."""
    ready = sum(q.message_count for q in vhost.queues.values())
    pending = sum(unacked.get(id(q), (0, 0))[0] for q in vhost.queues.values())
    description = str(metadata.get("description", ""))
    tags = list(metadata.get("tags", []))
    info = {
        "cluster_state": cluster_state(vhost.broker), "default_queue_type": "undefined",
        "description": description, "messages": ready + pending,
        "messages_details": rate(lengths, "messages"),
        "messages_ready": ready, "messages_ready_details": rate(lengths, "messages_ready"),
        "messages_unacknowledged": pending,
        "messages_unacknowledged_details": rate(lengths, "messages_unacknowledged"),
        "metadata": {"description": description, "tags": tags}, "name": vhost.name,
        "recv_oct": 0, "recv_oct_details": rate(data_rates, "recv_oct"), "send_oct": 0,
        "send_oct_details": rate(data_rates, "send_oct"), "tags": tags, "tracing": tracing,
    }
    found = message_stats(vhost.stats, "vhost", msg_rates)
    if found is not None:
        info["message_stats"] = found
    return info


def running_nodes(broker: Broker, viewer: Node | None = None) -> list[str]:
    """The running nodes' names as RabbitMQ 3.10.8 lists them (``rabbit_mnesia:
    cluster_nodes(running)``: Mnesia's running nodes, the latest to join first; checked live
    on a 3-node cluster, which ``rabbitmqctl cluster_status`` and a vhost's ``cluster_state``
    list from the third node to the first): the cluster's order, reversed. ``viewer``: the
    node asked, which after a partition does not count the other side's nodes."""
    network = broker.network
    return [node.name for node in reversed(broker.nodes) if node.running
            and (viewer is None or network.sees(viewer, node))]


def cluster_state(broker: Broker) -> dict[str, str]:
    """A vhost's ``cluster_state``: each running node, ``running`` (``rabbit_vhost:
    vhost_cluster_state/1``, v3.10.8, asks ``rabbit_nodes:all_running()``: a stopped node is
    not named; an embroker vhost runs wherever its node does)."""
    return dict.fromkeys(running_nodes(broker), "running")


#: RabbitMQ 3.10.8's feature flags (rabbit_core_ff, rabbit_mgmt_ff), each a capability
#: embroker has: quorum queues, streams, user limits, vhost metadata, the statistics'
#: ``get_empty`` and ``drop_unroutable``... so each is enabled.
FEATURE_FLAGS: Final = (
    ("classic_mirrored_queue_version", "Support setting version for classic mirrored queues",
     "", "rabbit"),
    ("drop_unroutable_metric", "Count unroutable publishes to be dropped in stats", "",
     "rabbitmq_management_agent"),
    ("empty_basic_get_metric", "Count AMQP `basic.get` on empty queues in stats", "",
     "rabbitmq_management_agent"),
    ("implicit_default_bindings",
     "Default bindings are now implicit, instead of being stored in the database", "",
     "rabbit"),
    ("maintenance_mode_status", "Maintenance mode status", "", "rabbit"),
    ("quorum_queue", "Support queues of type `quorum`",
     "https://www.rabbitmq.com/quorum-queues.html", "rabbit"),
    ("stream_queue", "Support queues of type `stream`", "https://www.rabbitmq.com/stream.html",
     "rabbit"),
    ("user_limits", "Configure connection and channel limits for a user", "", "rabbit"),
    ("virtual_host_metadata", "Virtual host metadata (description, tags, etc)", "", "rabbit"),
)


def feature_flags() -> list[dict[str, Any]]:
    """The feature flags, as ``/api/feature-flags`` and ``rabbitmqctl cluster_status`` list
    them (``rabbit_ff_extra:cli_info/0``'s fields): every one enabled."""
    return [{"name": name, "desc": desc, "doc_url": doc_url, "state": "enabled",
             "stability": "stable", "provided_by": provided_by}
            for name, desc, doc_url, provided_by in FEATURE_FLAGS]


def is_stream(connection: Connection) -> bool:
    """Whether ``connection`` came over the stream protocol (which has no AMQP channels)."""
    return connection.kind is STREAM


def amqp_channels(connection: Connection) -> dict[int, Channel]:
    """``connection``'s AMQP channels as RabbitMQ lists them: a stream connection's model
    channel is embroker's own, not one the client opened."""
    return {} if is_stream(connection) else connection.channels
