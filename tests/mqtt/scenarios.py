"""MQTT scenarios with golden files (see :mod:`tests.mqtt.differential` for how packets are
written and normalised). Each scenario makes its names with the run's token, cleans up what it
made, and reads until the packets it expects came (a packet that should not come is waited for
the client's read timeout, and noted ``timeout``).

MQTT topics are the token then ``/...``; their AMQP routing keys the token then ``....``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pika

from tests.conformance.differential_kit import amqp091, cleanup, wait_for

from .differential import Peer, Scenario, normalise, queue_info, queue_state, session
from .wire import _packet, connect, puback, publish, subscribe, unsubscribe

# -- connecting -------------------------------------------------------------------------------


def connect_outcomes(peer: Peer) -> list[str]:
    """The CONNACK of each kind of CONNECT (credentials, vhosts, client ids, protocol names
    and levels), and whether the connection stays open after it; a packet before CONNECT; a
    second CONNECT."""
    t = peer.token
    lines: list[str] = []
    user, nopw, vhost = t + "u", t + "np", t + "vh"
    peer.add_vhost(vhost)
    peer.add_user(user, "pw", ".*", ".*", ".*", vhost=vhost)
    peer.add_user(nopw, None, ".*", ".*", ".*")
    cases: list[tuple[str, str, dict[str, Any]]] = [
        ("anonymous", t + "c", {}),
        ("guest", t + "c", {"user": "guest", "password": "guest"}),
        ("wrong password", t + "c", {"user": "guest", "password": "nope"}),
        ("user name without password", t + "c", {"user": "guest"}),
        ("password without user name", t + "c", {"password": "guest"}),
        ("empty password", t + "c", {"user": "guest", "password": ""}),
        ("user without a password", t + "c", {"user": nopw, "password": ""}),
        ("user without a password, no password", t + "c", {"user": nopw}),
        ("unknown user", t + "c", {"user": t + "nobody", "password": "pw"}),
        ("vhost:user", t + "c", {"user": f"{vhost}:{user}", "password": "pw"}),
        ("missing vhost", t + "c", {"user": f"{t}nope:guest", "password": "guest"}),
        ("user without access to /", t + "c", {"user": user, "password": "pw"}),
        ("MQTT 3.1 MQIsdp/3", t + "c", {"level": 3}),
        ("MQTT 3.1 client id of 24 chars", (t + "x" * 24)[:24], {"level": 3}),
        ("MQTT 3.1.1 client id of 30 chars", (t + "x" * 30)[:30], {}),
        ("level 5", t + "c", {"level": 5, "name": "MQTT"}),
        ("level 3 named MQTT", t + "c", {"level": 3, "name": "MQTT"}),
        ("level 4 named MQIsdp", t + "c", {"level": 4, "name": "MQIsdp"}),
        ("unknown name MQTX", t + "c", {"name": "MQTX"}),
        ("empty client id, clean session", "", {}),
        ("empty client id, clean session false", "", {"clean": False}),
        ("keep-alive 0", t + "c", {"keep_alive": 0}),
    ]
    try:
        for label, client_id, kwargs in cases:
            with session(peer, lines, label, connect=False) as s:
                s.connect(client_id, **kwargs)
                s.state()
        for label, packet in (("PINGREQ before CONNECT", b"\xc0\x00"),
                              ("PUBLISH before CONNECT", publish(t + "/x", b"x", qos=1)),
                              ("SUBSCRIBE before CONNECT", subscribe(1, (t + "/x", 0))),
                              ("DISCONNECT before CONNECT", b"\xe0\x00")):
            with session(peer, lines, label, connect=False) as s:
                s.send(packet)
                s.expect(1)
                s.state()
        with session(peer, lines, "CONNECT twice") as s:
            s.connect(t + "c", "again")
            s.state()
        with session(peer, lines, "reserved flag set", connect=False) as s:
            data = bytearray(connect(t + "c"))
            data[9] |= 1  # the connect flags' reserved bit
            s.send(bytes(data))
            s.expect(1)
            s.state()
    finally:
        cleanup(peer, users=[user, nopw], vhosts=[vhost])
    return lines


_STATS = {"garbage_collection", "recv_cnt", "recv_oct", "recv_oct_details", "reductions",
          "reductions_details", "send_cnt", "send_oct", "send_oct_details", "send_pend",
          "state", "channel_max", "frame_max", "timeout"}
_SHOWN = ("channels", "client_properties", "host", "peer_host", "protocol", "ssl", "type",
          "user", "user_who_performed_action", "variable_map", "vhost")


def management_view(peer: Peer) -> list[str]:
    """What the management API shows of an MQTT 3.1.1 and an MQTT 3.1 connection (its keys
    but the statistics ones, and their values but the node's, the ports' and times), and what
    ``rabbitmqctl list_connections`` and ``list_mqtt_connections`` list of them."""
    t = peer.token
    lines: list[str] = []
    with session(peer, lines, "311", t + "v4") as a, session(peer, lines, "31", t + "v3",
                                                           level=3) as b:
        for s, cid in ((a, t + "v4"), (b, t + "v3")):
            def mine(cid: str = cid) -> list[Any]:
                return [c for c in peer.api("/connections") or []
                        if (c.get("client_properties") or {}).get("client_id") == cid]
            found = wait_for(mine)
            if len(found) != 1:
                s.note(f"management API: {len(found)} connections")
                continue
            c = found[0]
            s.note(f"keys (but statistics): {sorted(set(c) - _STATS)}")
            s.note("values: " + normalise(repr({k: c.get(k) for k in _SHOWN}), t))
            expected = "{peer_host}:{peer_port} -> {host}:{port}".format(**c)
            s.note(f"name is 'peer -> local': {c['name'] == expected}; "
                   f"port is the MQTT port: {c['port'] == peer.mqtt_port}")
            s.note(f"frame_max={c.get('frame_max')} channel_max={c.get('channel_max')}")
            detail = peer.api(f"/connections/{quote(c['name'], safe='')}") or {}
            s.note(f"/connections/name has the same keys: "
                   f"{sorted(set(detail) - _STATS) == sorted(set(c) - _STATS)}")
        rows = [r for r in peer.ctl("list_connections", "user", "vhost", "protocol",
                                    "client_properties").splitlines() if t in r]
        lines.append(f"rabbitmqctl list_connections rows of ours: {normalise(repr(rows), t)}")
        out = peer.ctl("list_mqtt_connections", "client_id", "user", "vhost", "protocol")
        if out.startswith("exit "):
            lines.append(f"rabbitmqctl list_mqtt_connections: {out.split(':')[0]}")
        else:
            rows = sorted(r for r in out.splitlines() if t in r)
            lines.append(f"rabbitmqctl list_mqtt_connections rows of ours: "
                         f"{normalise(repr(rows), t)}")
    return lines


# -- publishing and subscribing ---------------------------------------------------------------


def qos_publish_subscribe(peer: Peer) -> list[str]:
    """SUBACK's granted QoS for 0, 1, 2 (and several topics in one SUBSCRIBE); publishes at
    QoS 0, 1 and 2 and what each subscriber gets; the QoS 1 delivery's packet ids."""
    t = peer.token
    topic = t + "/q"
    lines: list[str] = []
    with session(peer, lines, "s0") as s0, session(peer, lines, "s1") as s1, \
            session(peer, lines, "s2") as s2, session(peer, lines, "p") as p:
        s0.send(subscribe(1, (topic, 0)))
        s0.expect(1)
        s1.send(subscribe(2, (topic, 1)))
        s1.expect(1)
        s2.send(subscribe(300, (topic, 2)))
        s2.expect(1)
        p.send(subscribe(4, (t + "/m0", 0), (t + "/m1", 1), (t + "/m2", 2)))
        p.expect(1, "three topics")
        for qos, pid in ((0, 0), (1, 5), (2, 6)):
            p.send(publish(topic, f"qos{qos}".encode(), qos=qos, packet_id=pid or 1))
            p.read(f"qos{qos} publish")
            for s in (s0, s1, s2):
                s.messages(1, f"qos{qos}")
        s1.send(publish(topic, b"again", qos=1, packet_id=9))
        s1.messages(2, "own publish")
        for s in (s0, s2):
            s.messages(1, "own")
        for s in (s0, s1, s2, p):
            s.state()
    return lines


def topic_translation(peer: Peer) -> list[str]:
    """MQTT topics and filters to routing keys and binding keys (``/`` to ``.``, ``+`` to
    ``*``, ``#``) and back, seen through 0-9-1 and through the subscription queue's bindings."""
    t = peer.token
    q = t + "tt"
    lines: list[str] = []
    with amqp091(peer) as ch:
        ch.queue_declare(q)
        ch.queue_bind(q, "amq.topic", t + ".#")
    try:
        with session(peer, lines, "s", t + "s") as s, session(peer, lines, "p") as p:
            s.send(subscribe(1, (t + "/+/c", 0), (t + "/#", 0), (t + "/x.y", 0)))
            s.expect(1)
            lines.append(f"subscription queue: {queue_info(peer, f'mqtt-subscription-{t}sqos0')}")
            for topic in (t + "/b/c", t + "/a.b", t + "/x.y", t + "//c", t + "/b/c/"):
                p.send(publish(topic, topic.encode(), qos=1))
                p.expect(1, f"publish {topic!r}")
                s.messages(1, f"from {topic!r}")
                s.quiet(f"more from {topic!r}")
                with amqp091(peer) as ch:
                    method, _, _ = ch.basic_get(q, auto_ack=True)
                    lines.append(normalise(
                        f"0-9-1 routing key of {topic!r}: "
                        f"{method.routing_key if method else None!r}", t))
            for key in (t + ".x.c", t + ".x/y", t + ".*", t + ".a.b.c.d"):
                with amqp091(peer) as ch:
                    ch.basic_publish("amq.topic", key, key.encode())
                s.messages(1, normalise(f"0-9-1 {key!r}", t))
                s.quiet("then")
                with amqp091(peer) as ch:
                    ch.queue_purge(q)
            s.state()
    finally:
        cleanup(peer, [q])
    return lines


def _props(props: pika.BasicProperties) -> str:
    headers = props.headers
    return (f"delivery_mode={props.delivery_mode} "
            f"headers={dict(sorted(headers.items())) if headers else headers!r}"
            + "".join(f" {f}={getattr(props, f)!r}" for f in (
                "content_type", "priority", "message_id", "expiration")
                      if getattr(props, f) is not None))


def amqp091_interop(peer: Peer) -> list[str]:
    """MQTT publishes seen by 0-9-1 (``x-mqtt-publish-qos``, ``x-mqtt-dup``, delivery_mode),
    and 0-9-1 publishes (with and without those headers) seen by MQTT subscribers at QoS 0
    and 1."""
    t = peer.token
    q = t + "i"
    lines: list[str] = []
    with amqp091(peer) as ch:
        ch.queue_declare(q)
        ch.queue_bind(q, "amq.topic", t + ".i")
    try:
        with session(peer, lines, "p") as p:
            for label, kwargs in (("qos0", {}), ("qos1", {"qos": 1}),
                                  ("qos1 dup", {"qos": 1, "dup": True}),
                                  ("qos0 dup", {"dup": True}),
                                  ("qos1 retain", {"qos": 1, "retain": True})):
                p.send(publish(t + "/i", label.encode(), packet_id=3, **kwargs))
                if kwargs.get("qos"):
                    p.expect(1, label)
                with amqp091(peer) as ch:
                    got = wait_for(lambda ch=ch: _get(ch, q), 5)  # type: ignore[misc]
                    method, props, body = got or (None, None, None)
                    lines.append(f"{label}: 0-9-1 gets {body!r} " + (
                        f"{method.routing_key[len(t):]!r} redelivered={method.redelivered} "
                        f"{_props(props)}" if method else "nothing"))
            p.send(publish(t + "/i", b"", qos=1, retain=True, packet_id=4))
            p.expect(1, "clear retained")
            p.state()
        for label, props in (
                    ("plain", pika.BasicProperties()),
                    ("persistent", pika.BasicProperties(delivery_mode=2)),
                    ("x-mqtt-publish-qos 1", pika.BasicProperties(
                        headers={"x-mqtt-publish-qos": 1})),
                    ("x-mqtt-publish-qos 0 persistent", pika.BasicProperties(
                        delivery_mode=2, headers={"x-mqtt-publish-qos": 0})),
                    ("x-mqtt-publish-qos 2", pika.BasicProperties(
                        headers={"x-mqtt-publish-qos": 2})),
                    ("x-mqtt-dup true", pika.BasicProperties(
                        headers={"x-mqtt-publish-qos": 1, "x-mqtt-dup": True})),
                    ("x-mqtt-publish-qos as string", pika.BasicProperties(
                        headers={"x-mqtt-publish-qos": "1"})),
                    ("x-mqtt-retain", pika.BasicProperties(headers={"retain": True}))):
            with session(peer, lines, f"{label}, s1") as s1, \
                    session(peer, lines, f"{label}, s0") as s0:
                s1.send(subscribe(1, (t + "/j", 1)))
                s1.expect(1)
                s0.send(subscribe(1, (t + "/j", 0)))
                s0.expect(1)
                with amqp091(peer) as ch:
                    ch.basic_publish("amq.topic", t + ".j", label.encode(), props)
                s1.messages(1)
                s0.messages(1)
                s1.state()
                s0.state()
    finally:
        cleanup(peer, [q])
    return lines


def _get(ch: Any, q: str) -> Any:
    got = ch.basic_get(q, auto_ack=True)
    return got if got[0] is not None else None


# -- retained messages ------------------------------------------------------------------------


def retained_messages(peer: Peer) -> list[str]:
    """Retained messages: delivered on SUBSCRIBE to the exact topic only (not to a wildcard
    filter), with the retain flag and which QoS; a live retained publish; clearing with an
    empty payload."""
    t = peer.token
    lines: list[str] = []
    with session(peer, lines, "p") as p:
        p.send(publish(t + "/r", b"r1", qos=1, retain=True, packet_id=1))
        p.expect(1, "retain qos1")
        p.send(publish(t + "/r0", b"r0", qos=0, retain=True))
        p.state()
        for name, topic, qos in (("exact qos1", t + "/r", 1), ("exact qos0", t + "/r", 0),
                                 ("qos0 message at qos1", t + "/r0", 1),
                                 ("wildcard +", t + "/+", 1), ("wildcard #", t + "/#", 1)):
            with session(peer, lines, name) as s:
                s.send(subscribe(1, (topic, qos)))
                s.expect(1)
                s.messages(1)
                s.state()
        with session(peer, lines, "live") as s:
            s.send(subscribe(1, (t + "/r", 1)))
            s.expect(1)
            s.messages(1, "retained")
            p.send(publish(t + "/r", b"r2", qos=1, retain=True, packet_id=2))
            p.expect(1, "retain again")
            s.messages(1, "live")
            p.send(publish(t + "/r", b"", qos=1, retain=True, packet_id=3))
            p.expect(1, "clear")
            s.messages(1, "clearing")
            s.state()
        p.send(publish(t + "/r0", b"", retain=True))
        with session(peer, lines, "after clearing") as s:
            s.send(subscribe(1, (t + "/r", 1), (t + "/r0", 1)))
            s.expect(1)
            s.quiet()
        p.state()
    return lines


# -- sessions -----------------------------------------------------------------------------------


def persistent_session(peer: Peer) -> list[str]:
    """Clean session false: session present, the ``mqtt-subscription-<id>qos1`` (and qos0)
    queues and their arguments, messages kept while away, an unacknowledged delivery again
    on reconnect; a clean session's queues; clean session deleting them."""
    t = peer.token
    cid = t + "ps"
    q1, q0 = f"mqtt-subscription-{cid}qos1", f"mqtt-subscription-{cid}qos0"
    lines: list[str] = []
    try:
        with session(peer, lines, "first", cid, clean=False, note_connack=True) as a:
            a.send(subscribe(1, (t + "/p", 1), (t + "/p0", 0)))
            a.expect(1)
            a.disconnect()
        lines.append(f"qos1 queue away: {queue_info(peer, q1)}")
        lines.append(f"qos0 queue away: {queue_info(peer, q0)}")
        with session(peer, lines, "p") as p:
            p.send(publish(t + "/p", b"kept1", qos=1, packet_id=1))
            p.expect(1)
            p.send(publish(t + "/p", b"kept0", qos=0))
            p.send(publish(t + "/p0", b"kept00", qos=1, packet_id=2))
            p.expect(1)
            wait_for(lambda: queue_state(peer, q1) == "messages=2 consumers=0", 3)
            lines.append(f"qos1 queue: {queue_state(peer, q1)}")
            with session(peer, lines, "second", cid, clean=False, note_connack=True) as a:
                a.messages(3)
                a.quiet()
                p.send(publish(t + "/p", b"unacked", qos=1, packet_id=3))
                p.expect(1)
                a.messages(1, "not acknowledged", ack=False)
                a.disconnect()
            with session(peer, lines, "third", cid, clean=False, note_connack=True) as a:
                a.messages(1)
                a.quiet()
                a.disconnect()
        with session(peer, lines, "clean", cid, note_connack=True) as a:
            lines.append(f"qos1 queue after a clean CONNECT: {queue_info(peer, q1)}")
            a.send(subscribe(1, (t + "/p", 1), (t + "/p0", 0)))
            a.expect(1)
            lines.append(f"clean session's qos1 queue: {queue_info(peer, q1)}")
            lines.append(f"clean session's qos0 queue: {queue_info(peer, q0)}")
            a.disconnect()
        wait_for(lambda: queue_info(peer, q1) == "no such queue", 3)
        lines.append(f"qos1 queue after the clean session: {queue_info(peer, q1)}")
        with session(peer, lines, "fourth", cid, clean=False, note_connack=True) as a:
            a.disconnect()
    finally:
        with session(peer, [], "cleanup", cid):
            pass
    return lines


def duplicate_client_id(peer: Peer) -> list[str]:
    """A second connection with the same client id closes the first; then the same with the
    two connections in two vhosts (is the registry vhost-wide or node-wide?)."""
    t = peer.token
    vhost = t + "dv"
    lines: list[str] = []
    peer.add_vhost(vhost)
    try:
        with session(peer, lines, "A", t + "dup") as a, \
                session(peer, lines, "B", t + "dup", note_connack=True) as b:
            a.read("after B")
            a.state("A state")
            b.state("B state")
        with session(peer, lines, "A /", t + "dup2") as a, \
                session(peer, lines, "B vhost", t + "dup2", note_connack=True,
                        user=f"{vhost}:guest", password="guest") as b:
            a.read("after B")
            a.state("A state")
            b.state("B state")
        with session(peer, lines, "C", t + "dup3", clean=False) as a:
            a.send(subscribe(1, (t + "/d", 1)))
            a.expect(1)
            with session(peer, lines, "D", t + "dup3", clean=False, note_connack=True) as b:
                a.read("after D")
                b.state("D state")
                b.disconnect()
    finally:
        with session(peer, [], "cleanup", t + "dup3"):
            pass
        cleanup(peer, vhosts=[vhost])
    return lines


def last_will(peer: Peer) -> list[str]:
    """The will is published when the connection drops (a TCP close, no DISCONNECT), not after
    DISCONNECT; its QoS and retain flag; a will to a topic nobody reads."""
    t = peer.token
    lines: list[str] = []
    with session(peer, lines, "s1") as s1, session(peer, lines, "s0") as s0:
        s1.send(subscribe(1, (t + "/w", 1)))
        s1.expect(1)
        s0.send(subscribe(1, (t + "/w", 0)))
        s0.expect(1)
        for label, will, ending in (
                ("qos1 will, TCP close", (t + "/w", b"gone1", 1, False), "close"),
                ("qos0 will, TCP close", (t + "/w", b"gone0", 0, False), "close"),
                ("qos1 will, DISCONNECT", (t + "/w", b"bye", 1, False), "disconnect"),
                ("retained will, TCP close", (t + "/w", b"kept", 1, True), "close")):
            with session(peer, lines, label, will=will) as a:
                if ending == "close":
                    a.raw.abort()
                else:
                    a.disconnect()
            s1.messages(1, label)
            s0.messages(1, label)
        with session(peer, lines, "later") as s:
            s.send(subscribe(1, (t + "/w", 1)))
            s.expect(1)
            s.messages(1, "retained will")
            s.send(publish(t + "/w", b"", qos=1, retain=True, packet_id=2))
            s.messages(2, "clear")
        s1.messages(1, "cleared")
        s0.messages(1, "cleared")
        s1.state()
        s0.state()
    return lines


def unsubscribe_and_ping(peer: Peer) -> list[str]:
    """UNSUBSCRIBE (of a subscription, of none), PINGREQ, and a client getting its own
    publishes."""
    t = peer.token
    lines: list[str] = []
    with session(peer, lines, "c", t + "un") as s:
        s.send(subscribe(1, (t + "/u", 1), (t + "/v", 0)))
        s.expect(1)
        s.send(publish(t + "/u", b"own", qos=1, packet_id=2))
        s.messages(2, "own publish")
        s.send(unsubscribe(3, t + "/u"))
        s.expect(1)
        lines.append(f"qos1 queue: {queue_info(peer, f'mqtt-subscription-{t}unqos1')}")
        s.send(publish(t + "/u", b"after", qos=1, packet_id=4))
        s.expect(1)
        s.quiet()
        s.send(unsubscribe(5, t + "/never", t + "/v"))
        s.expect(1)
        s.send(publish(t + "/v", b"after", qos=0))
        s.quiet()
        s.send(b"\xc0\x00")
        s.expect(1, "PINGREQ")
        s.state()
    return lines


# -- permissions ------------------------------------------------------------------------------


def topic_permissions(peer: Peer) -> list[str]:
    """Topic permissions on amq.topic with ``{username}``, ``{client_id}`` and ``{vhost}`` in
    their write and read expressions: allowed and refused publishes (QoS 1 and 0), allowed and
    refused subscriptions; whether each refusal closes the connection."""
    t = peer.token
    vhost, user, cid = t + "tv", t + "tu", t + "tc"
    lines: list[str] = []
    peer.add_vhost(vhost)
    peer.add_user(user, "pw", ".*", ".*", ".*", vhost=vhost)
    peer.set_topic_permissions(user, "amq.topic", r"^{username}\.w$|^{client_id}\.c$|^{vhost}\.v$",
                               r"^{client_id}\.r$|^{username}\.r\..*", vhost=vhost)
    login: dict[str, Any] = {"user": f"{vhost}:{user}", "password": "pw"}
    try:
        for label, packet in (
                ("publish {username}", publish(user + "/w", b"x", qos=1)),
                ("publish {client_id}", publish(cid + "/c", b"x", qos=1)),
                ("publish {vhost}", publish(vhost + "/v", b"x", qos=1)),
                ("publish refused qos1", publish(t + "other/w", b"x", qos=1)),
                ("publish refused qos0", publish(t + "other/w", b"x")),
                ("subscribe {client_id}", subscribe(1, (cid + "/r", 1))),
                ("subscribe {username} #", subscribe(1, (user + "/r/#", 0))),
                ("subscribe refused", subscribe(1, (t + "other/r", 1))),
                ("subscribe refused and allowed", subscribe(1, (t + "other/r", 0),
                                                             (cid + "/r", 0)))):
            with session(peer, lines, label, cid, **login) as s:
                s.send(packet)
                s.expect(1)
                s.state()
    finally:
        cleanup(peer, users=[user], vhosts=[vhost])
    return lines


def queue_permissions(peer: Peer) -> list[str]:
    """A user without configure, write or read permission: CONNECT, SUBSCRIBE (its queue
    declared and bound), PUBLISH; whether each refusal closes the connection."""
    t = peer.token
    lines: list[str] = []
    users = {"no configure": ("", ".*", ".*"), "no write": (".*", "", ".*"),
             "no read": (".*", ".*", ""), "own queues only": (
                 f"^mqtt-subscription-{t}.*", f"^mqtt-subscription-{t}.*|^amq\\.topic$",
                 f"^mqtt-subscription-{t}.*|^amq\\.topic$")}
    names = {label: f"{t}q{i}" for i, label in enumerate(users)}
    for label, (configure, write, read) in users.items():
        peer.add_user(names[label], "pw", configure, write, read)
    try:
        for label in users:
            login: dict[str, Any] = {"user": names[label], "password": "pw"}
            for what, packet in (("subscribe", subscribe(1, (t + "/qp", 1))),
                                 ("publish qos1", publish(t + "/qp", b"x", qos=1)),
                                 ("publish qos0", publish(t + "/qp", b"x"))):
                with session(peer, lines, f"{label} {what}", t + "qp",
                             note_connack=True, **login) as s:
                    s.send(packet)
                    s.expect(1)
                    s.state()
    finally:
        with session(peer, [], "cleanup", t + "qp"):
            pass
        cleanup(peer, users=list(names.values()))
    return lines


# -- malformed packets ------------------------------------------------------------------------


def malformed_packets(peer: Peer) -> list[str]:
    """Packets a broker must refuse: SUBSCRIBE with bad flags, a requested QoS of 3, no topic;
    PUBLISH with QoS 3, a wildcard topic, a QoS 1 packet id of 0; a reserved packet type;
    garbage before and after CONNECT; a remaining length of five bytes; PUBREL and PUBREC
    (QoS 2's, which the plugin does not read).

    RabbitMQ 3.10.8 closes at once on some (SUBSCRIBE's flags, PUBLISH QoS 3), but after a
    reserved packet type, PUBREL, PUBREC or a five-byte remaining length its connection
    neither answers PINGREQ nor closes: it closes when the keep-alive runs out (checked live:
    keep-alive 2 s, closed after 6 s; keep-alive 0, still open after 25 s)."""
    t = peer.token
    lines: list[str] = []
    cases: list[tuple[str, bytes, bool]] = [
        ("SUBSCRIBE flags 0", _packet(0x80, b"\x00\x01" + b"\x00\x03a/b\x00"), True),
        ("SUBSCRIBE requested qos 3", subscribe(1, (t + "/m", 3)), True),
        ("SUBSCRIBE no topic", _packet(0x82, b"\x00\x01"), True),
        ("UNSUBSCRIBE flags 0", _packet(0xA0, b"\x00\x01\x00\x03a/b"), True),
        ("PUBLISH qos 3", _packet(0x36, b"\x00\x03a/b\x00\x01x"), True),
        ("PUBLISH wildcard topic", publish(t + "/+", b"x", qos=1), True),
        ("PUBLISH packet id 0", publish(t + "/m", b"x", qos=1, packet_id=0), True),
        ("reserved type 0", b"\x00\x00", True),
        ("reserved type 15", b"\xf0\x00", True),
        ("garbage after CONNECT", b"\xff\xff\xff\xff\xff\xff", True),
        ("five-byte remaining length", b"\x30\xff\xff\xff\xff\x7f", True),
        ("garbage before CONNECT", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", False),
        ("PUBREL", _packet(0x62, b"\x00\x01"), True),
        ("PUBREC", _packet(0x50, b"\x00\x01"), True),
        ("PUBACK of nothing", puback(77), True),
    ]
    for label, data, logged_in in cases:
        with session(peer, lines, label, connect=logged_in) as s:
            s.send(data)
            s.expect(1)
            s.state()
    return lines


#: Every scenario with a golden file, by name.
SCENARIOS: dict[str, Scenario] = {
    scenario.__name__: scenario
    for scenario in (connect_outcomes, management_view, qos_publish_subscribe,
                     topic_translation, amqp091_interop, retained_messages,
                     persistent_session, duplicate_client_id, last_will, unsubscribe_and_ping,
                     topic_permissions, queue_permissions, malformed_packets)}
