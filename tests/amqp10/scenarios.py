"""AMQP 1.0 scenarios with golden files (see :mod:`tests.amqp10.differential`): who may browse,
consume from and send to a queue, and what RabbitMQ 3.x's v1 addresses declare and refuse.

Each probe opens its own connection and link; a queue a probe may take a message from holds one
message of its own, so that the brokers' different readings of ``copy`` (RabbitMQ 3.10 ignores
the distribution mode and consumes; embroker and RabbitMQ 4 browse) leave nothing different for
the next probe to see.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.differential_kit import amqp091, cleanup

from .differential import Peer, Scenario, declare_status, line, probe

#: Three users, each without one of the three permissions (as rabbitmqctl set_permissions).
USERS: dict[str, tuple[str, str, str]] = {
    "noread": (".*", ".*", ""), "nowrite": (".*", "", ".*"), "noconf": ("", ".*", ".*")}

#: What a probe does: how it opens its link, and what it sends or takes.
MODES: dict[str, dict[str, Any]] = {
    "browse": {"role": "receiver", "copy": True, "receive": 1},
    "consume": {"role": "receiver", "receive": 1},
    "send": {"role": "sender", "send": ["x"]},
}


def access_browse_consume_send(peer: Peer) -> list[str]:
    """Read permission for browsing (distribution-mode copy) as for consuming, write permission
    (on the default exchange) for sending, and, for the v1 form ``/queue/Q``, configure
    permission: the 3.x plugin declares the queue for every link to it."""
    t = peer.token
    lines, queues = [], []
    for user, (configure, write, read) in USERS.items():
        peer.add_user(t + user, "pw", configure, write, read)
    try:
        with amqp091(peer) as ch:
            for user in USERS:
                for mode in MODES:
                    for form in ("/amq/queue/", "/queue/"):
                        q = f"{t}{user}-{mode}-{form.strip('/').replace('/', '-')}"
                        ch.queue_declare(q)
                        ch.basic_publish("", q, b"m")
                        queues.append(q)
        for user in USERS:
            for mode, how in MODES.items():
                for form in ("/amq/queue/", "/queue/"):
                    q = f"{t}{user}-{mode}-{form.strip('/').replace('/', '-')}"
                    events = probe(peer, address=form + q, user=t + user, password="pw", **how)
                    lines.append(line(f"{user} {mode} {form}Q", events))
    finally:
        cleanup(peer, queues, users=[t + user for user in USERS])
    return lines


def exclusive_queue_of_another_connection(peer: Peer) -> list[str]:
    """Another connection's exclusive queue can be neither browsed nor consumed (405
    RESOURCE_LOCKED); it can be sent to (publishing to an exclusive queue is allowed), except
    through ``/queue/Q``, whose declare is refused as locked."""
    t = peer.token
    q = t + "mine"
    lines = []
    with amqp091(peer) as owner:
        owner.queue_declare(q, exclusive=True)
        owner.basic_publish("", q, b"secret")
        for mode, how in MODES.items():
            for form in ("/amq/queue/", "/queue/"):
                lines.append(line(f"{mode} {form}Q", probe(peer, address=form + q, **how)))
        lines.append(line("ready, seen by the owner",
                          [owner.queue_declare(q, passive=True).method.message_count]))
    return lines


def v1_addresses(peer: Peer) -> list[str]:
    """RabbitMQ 3.x's v1 addresses: ``/queue/Q`` (or a bare ``Q``) declares Q, durable when the
    terminus durability is not none, and refuses a Q declared otherwise; ``%2F`` stands for
    ``/``; ``/amq/queue/Q`` and ``/exchange/X/K`` need what they name; ``/queue`` sends by
    subject; malformed forms are refused with the plugin's texts."""
    t = peer.token
    q1, q2, q3, q4, q5 = (t + n for n in ("new", "durable", "source", "bare", "a/b"))
    lines = []

    def note(label: str, events: list[Any]) -> None:
        lines.append(line(label, events))

    try:
        note("send /queue/new", probe(peer, "sender", "/queue/" + q1, send=["1"]))
        note("new is not durable", [declare_status(peer, q1, durable=False),
                                    declare_status(peer, q1, durable=True)])
        note("send /queue/durable, terminus durability 1",
             probe(peer, "sender", "/queue/" + q2, send=["2"], durable=1))
        note("durable is durable", [declare_status(peer, q2, durable=True)])
        note("send /queue/durable, durability none",
             probe(peer, "sender", "/queue/" + q2, send=["3"]))
        note("receive /queue/durable, durability none",
             probe(peer, "receiver", "/queue/" + q2, receive=1))
        note("receive /queue/source", probe(peer, "receiver", "/queue/" + q3))
        note("source was declared", [declare_status(peer, q3, passive=True)])
        note("send bare name", probe(peer, "sender", q4, send=["4"]))
        note("bare was declared", [declare_status(peer, q4, passive=True)])
        note("send /queue/a%2Fb", probe(peer, "sender", "/queue/" + q5.replace("/", "%2F"),
                                        send=["5"]))
        note("a/b was declared", [declare_status(peer, q5, passive=True)])
        note("send /queue by subject", probe(peer, "sender", "/queue", send=["6"],
                                             subject=q1))
        with amqp091(peer) as ch:
            note("counts", [ch.queue_declare(q, passive=True).method.message_count
                            for q in (q1, q2, q4, q5)])
        for role, address in (("sender", "/queue/a/b"), ("sender", "/exchange//k"),
                              ("sender", "/exchange"), ("sender", "/queue/"),
                              ("receiver", "/queue"), ("sender", "no/such/form"),
                              ("receiver", f"/amq/queue/{t}missing"),
                              ("sender", f"/exchange/{t}missing/k"),
                              ("receiver", f"/exchange/{t}missing/k")):
            note(f"{role} {address.replace(t, '')}",
                 probe(peer, role, address, send=["x"] if role == "sender" else []))
    finally:
        cleanup(peer, [q1, q2, q3, q4, q5])
    return lines


#: Every scenario with a golden file, by name.
SCENARIOS: dict[str, Scenario] = {
    scenario.__name__: scenario
    for scenario in (access_browse_consume_send, exclusive_queue_of_another_connection,
                     v1_addresses)}
