"""What the console shows (``/api/embroker/console``: embroker's own, not RabbitMQ's; read-only).

One request per poll answers everything the page shows of one vhost: the vhosts the user may
look at (those the ``is_authorized_vhost`` rule lets it into: every one for an administrator,
else those it has permissions in), a summary, the chosen vhost's exchanges, queues and bindings
(at most :data:`CONSOLE_OBJECTS` of each kind), connections with their channels, the routing
decisions after ``since`` and the ready messages of ``queue``.

A routing decision's exchange, routing keys, queues and outcome are shown to whoever may look at
the vhost (they are what the vhost's bindings say); what its message carried — the body, and the
explanation and history that quote its headers and follow it — only to a user who could get the
message: an administrator, or a user with read permission on a queue it reached (as
``basic.get`` checks it). For the others the decision says ``"hidden"`` and why. The ready
messages of a queue are browsed through a model channel as the user, so they need read
permission on that queue (``Channel.browse``).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..model._access import Rule
from ..model._history import events_of
from ..model._names import reserved
from . import views
from ._routes import Call, HttpError, bad_request, not_found, route

if TYPE_CHECKING:
    from ..model import Connection, Exchange, Queue, VirtualHost
    from ..model._message import QueuedMessage
    from ._api import ManagementAPI

#: How many exchanges and queues the console's graph shows (the first by name; it says how many
#: more): a page for a person, whose cost must stay small whatever the broker holds.
CONSOLE_OBJECTS = 200
#: How many new routing decisions of its vhost one poll of the console takes (the newest), and
#: how far back in the trace it looks for them.
CONSOLE_DECISIONS = 100
CONSOLE_SCAN = 2000
#: How many ready messages of the chosen queue it shows.
CONSOLE_MESSAGES = 50
#: What a decision shows instead of what its message carried, to a user who could not get it.
HIDDEN = "hidden: you may not read any queue this message reached"


def _shown(api: ManagementAPI, call: Call) -> list[str]:
    """The vhosts the console lets ``call``'s user choose: those a listing covers."""
    return [vhost.name for vhost in api.listed(call)]


def _chosen(api: ManagementAPI, call: Call) -> str | None:
    """The vhost a poll shows, the one its rule looks at: the query's ``vhost``, else ``/`` or
    the first the user may choose (``None``: it may choose none)."""
    shown = _shown(api, call)
    if not shown:
        return None
    return call.request.query.get("vhost") or ("/" if "/" in shown else shown[0])


@route("GET", "embroker/console", Rule.VHOST, vhost=_chosen)
def _console(api: ManagementAPI, call: Call) -> Any:
    """Everything the console shows, in one request per poll (the module's documentation)."""
    query = call.request.query
    try:
        since = int(query.get("since", "0"))
    except ValueError:
        raise bad_request("since must be an integer") from None
    broker = api.broker
    with broker.locked():
        shown = _shown(api, call)
        name = _chosen(api, call)
        if name is None or name not in broker.vhosts:
            raise not_found()
        vhost = broker.vhosts[name]
        queues = vhost.queues
        shown_q = heapq.nsmallest(CONSOLE_OBJECTS, queues)
        exchanges = _exchanges(vhost, [queues[n] for n in shown_q])
        shown_x = exchanges[:CONSOLE_OBJECTS]
        unacked = views.unacked_by_queue(broker.connections.values())
        drawn = {*(x.name for x in shown_x), *shown_q}
        bindings = [{"source": b.source.name, "destination": b.destination.name,
                     "destination_type": b.destination.kind, "routing_key": b.routing_key}
                    for x in shown_x for b in x.bindings.values()
                    if b.destination.name in drawn]
        ready = sum(q.message_count for q in queues.values())
        wire = api.wire()
        connections = []
        for connection in broker.connections.values():
            if not (connection.is_open and connection.vhost.name in shown and
                    api.sees_items_of(call, connection.user)):
                continue
            connections.append({
                "name": _connection_name(api, connection, wire),
                "client": str(connection.client_properties.get("product", "")),
                "user": connection.user, "vhost": connection.vhost.name,
                "channels": sorted(views.amqp_channels(connection))})
        answer: dict[str, Any] = {
            "vhosts": shown, "vhost": name,
            "summary": {"connections": len(connections), "queues": len(queues),
                        "exchanges": len(exchanges),
                        "messages": ready + sum(unacked.get(id(q), (0, 0))[0]
                                                for q in queues.values())},
            "exchanges": [{"name": x.name, "type": x.type} for x in shown_x],
            "queues": [_queue(queues[n], unacked.get(id(queues[n]), (0, 0))[0])
                       for n in shown_q],
            "bindings": bindings, "connections": connections,
            "trace": _decisions_since(api, since, name, call),
        }
        chosen = query.get("queue")
        if chosen:
            try:
                answer["messages"] = _peek(api, call, name, chosen)
            except HttpError as refused:  # (no read permission there, say): the rest stands
                answer["messages_refused"] = refused.reason
    return answer


def _exchanges(vhost: VirtualHost, queues: list[Queue]) -> list[Exchange]:
    """The exchanges the graph draws: the default exchange first (a retry loop goes through
    it), then the vhost's own by name, with the ``amq.*`` ones something uses (a binding from
    them, or a queue's dead letters)."""
    used = {q.dead_letter_exchange for q in queues}
    builtin = [x for x in vhost.exchanges.values() if reserved(x.name)
               and (x.bindings or x.name in used)]
    own = [x for x in vhost.exchanges.values() if x.name and not reserved(x.name)]
    return [vhost.exchanges[""], *sorted([*builtin, *own], key=lambda x: x.name)]


def _queue(queue: Queue, unacked: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": queue.name, "ready": queue.message_count,
                             "unacked": unacked, "consumers": queue.consumer_count}
    if queue.dead_letter_exchange is not None:  # (its own argument, or a policy's)
        entry["dead_letter_exchange"] = queue.dead_letter_exchange
        entry["dead_letter_routing_key"] = queue.dead_letter_routing_key
    return entry


def _connection_name(api: ManagementAPI, connection: Connection, wire: Any) -> str:
    """What the console calls a connection: the name its client gave it, else RabbitMQ's."""
    given = connection.client_properties.get("connection_name")
    return str(given or api.identity(connection, wire)[0])


def _decisions_since(api: ManagementAPI, since: int, vhost: str, call: Call
                     ) -> dict[str, Any]:
    """The decisions of ``vhost`` after ``since`` (at most :data:`CONSOLE_DECISIONS`, the
    newest, among the last :data:`CONSOLE_SCAN` of the trace: another vhost's traffic does
    not crowd them out unless it is that busy)."""
    trace = api.broker.trace
    total = trace.total
    first = total - len(trace)
    start = max(since, first, total - CONSOLE_SCAN)
    decisions = trace[start - first:] if start - first < len(trace) else []
    mine = [(offset, d) for offset, d in enumerate(decisions)
            if d.vhost == vhost][-CONSOLE_DECISIONS:]
    found = []
    for offset, decision in mine:
        entry: dict[str, Any] = {
            "id": start + offset + 1, "vhost": decision.vhost,
            "exchange": decision.exchange, "routing_keys": list(decision.keys),
            "queues": list(decision.queues), "outcome": str(decision.outcome)}
        if api.sees_message(call, decision.vhost, decision.queues):
            entry.update({
                "explain": str(decision.explain(suggest=False)),
                "history": [str(event) for event in decision.history()],
                "payload": decision.message.body[:200].decode("utf-8", "replace")})
        else:
            entry.update({"explain": HIDDEN, "history": [], "payload": HIDDEN,
                          "hidden": True})
        found.append(entry)
    return {"total": total, "decisions": found}


def _peek(api: ManagementAPI, call: Call, vhost: str, name: str) -> dict[str, Any]:
    """The first ready messages of queue ``name`` and those delivered and not acknowledged
    yet, each with its consumer (or ``basic.get``): read permission on the queue, as for a
    look at its ready messages (:meth:`Channel.browse <embroker.model.Channel.browse>`)."""
    with api.channel(call, vhost) as channel:  # (read permission, then that it exists)
        entries = channel.browse(name).take(CONSOLE_MESSAGES)
    queue = api.broker.vhosts[vhost].queues[name]
    held = itertools.islice(_unacked_in(api, queue), CONSOLE_MESSAGES)
    return {"ready": [_message(e) for e in entries], "unacked": list(held)}


def _unacked_in(api: ManagementAPI, queue: Queue) -> Iterator[dict[str, Any]]:
    wire = api.wire()
    for connection in api.broker.connections.values():
        for number, channel in views.amqp_channels(connection).items():
            for tag, (held, entry, consumer) in channel.unacked():
                if held is queue:
                    yield {**_message(entry), "delivery_tag": tag, "channel": number,
                           "connection": _connection_name(api, connection, wire),
                           "consumer": consumer.tag if consumer else None}


def _message(entry: QueuedMessage) -> dict[str, Any]:
    """A message as RabbitMQ's management shows a message it got (exchange, routing key,
    properties with their headers as its JSON), its body's start and what happened to it."""
    message = entry.message
    return {"redelivered": entry.redelivered, "exchange": message.exchange,
            "routing_key": message.routing_key,
            "properties": views.json_value(message.properties),
            "payload": message.body[:2000].decode("utf-8", "replace"),
            "payload_bytes": len(message.body),
            "history": [str(event) for event in events_of(message.history)]}
