"""STOMP scenarios with golden files (see :mod:`tests.stomp.differential` for how frames are
written and normalised). Each scenario makes its names with the run's token, cleans up what it
made, and reads until the frames it expects came (a frame that should not come is waited for
the client's read timeout, and noted ``timeout``).
"""

from __future__ import annotations

import base64
import decimal
import hashlib
import struct

import pika

from tests.conformance.differential_kit import amqp091, cleanup

from .differential import Peer, Scenario, declare_status, queue_state, session


def _sub(dest: str, sid: str, *extra: tuple[str, str]) -> list[tuple[str, str]]:
    return [("destination", dest), ("id", sid), *extra]


# -- connecting -------------------------------------------------------------------------------


def connect_versions(peer: Peer) -> list[str]:
    """CONNECTED for each accept-version (none: 1.0), for STOMP as the command, and for
    heart-beat requests; then DISCONNECT with a receipt."""
    lines: list[str] = []
    cases: list[tuple[str, str | None, list[tuple[str, str]]]] = [
        ("no accept-version", None, []), ("1.0", "1.0", []), ("1.1", "1.1", []),
        ("1.2", "1.2", []), ("1.0,1.1", "1.0,1.1", []), ("1.1,1.2,2.0", "1.1,1.2,2.0", []),
        ("heart-beat 0,0", "1.2", [("heart-beat", "0,0")]),
        ("heart-beat 10000,0", "1.2", [("heart-beat", "10000,0")]),
        ("heart-beat 0,10000", "1.2", [("heart-beat", "0,10000")]),
        ("heart-beat 1500,500", "1.2", [("heart-beat", "1500,500")]),
    ]
    for label, version, extra in cases:
        with session(peer, lines, label, version=version, extra=extra,
                     note_connected=True) as s:
            s.state()
    with session(peer, lines, "STOMP command", login="-") as s:
        s.connect("STOMP", command="STOMP")
        s.state()
    with session(peer, lines, "no host header", host=None, note_connected=True) as s:
        s.state()
    return lines


def login_errors(peer: Peer) -> list[str]:
    """What a refused CONNECT gets, and whether the connection stays: wrong password, unknown
    user, no login, no passcode, a host that is no vhost (``host:127.0.0.1``), a vhost the user
    has no permission on, an unsupported version, a frame before CONNECT, CONNECT twice."""
    t = peer.token
    lines: list[str] = []
    user, vhost = t + "user", t + "vhost"
    peer.add_vhost(vhost)
    peer.add_user(user, "pw", ".*", ".*", ".*")
    try:
        for label, kwargs in (
                ("wrong password", {"passcode": "nope"}),
                ("unknown user", {"login": t + "nobody"}),
                ("no login", {"login": None}),
                ("no passcode", {"passcode": None}),
                ("host 127.0.0.1", {"host": "127.0.0.1"}),
                ("vhost without permission", {"login": user, "passcode": "pw",
                                              "host": vhost}),
                ("version 2.0", {"version": "2.0"}),
                ("version 1.3,2.0", {"version": "1.3,2.0"})):
            with session(peer, lines, label, **kwargs) as s:
                s.state()
        with session(peer, lines, "SEND before CONNECT", login="-") as s:
            s.send("SEND", [("destination", f"/queue/{t}x"), ("receipt", "r")], "x")
            s.expect(1)
            s.state()
        with session(peer, lines, "SUBSCRIBE before CONNECT", login="-") as s:
            s.send("SUBSCRIBE", _sub(f"/queue/{t}x", "0", ("receipt", "r")))
            s.expect(1)
            s.state()
        with session(peer, lines, "DISCONNECT before CONNECT", login="-") as s:
            s.state()
        with session(peer, lines, "CONNECT twice") as s:
            s.connect("again")
            s.state()
    finally:
        cleanup(peer, users=[user], vhosts=[vhost])
        with amqp091(peer) as ch:
            ch.queue_delete(t + "x")
    return lines


def header_order(peer: Peer) -> list[str]:
    """The order headers come in (the one scenario whose lines keep it): CONNECTED, RECEIPT,
    MESSAGE (from STOMP and from 0-9-1 with properties), ERROR."""
    t = peer.token
    q = t + "order"
    lines: list[str] = []
    with session(peer, lines, "c", login="-") as s:
        s.connect(ordered=True)
        s.send("SUBSCRIBE", _sub(f"/queue/{q}", "s1", ("receipt", "r1")))
        s.read(ordered=True)
        s.send("SEND", [("destination", f"/queue/{q}"), ("content-type", "text/plain"),
                        ("priority", "3"), ("my-header", "v"), ("persistent", "true")], "a")
        s.read(ordered=True)
        with amqp091(peer) as ch:
            ch.basic_publish("", q, b"b", pika.BasicProperties(
                content_type="text/plain", correlation_id="c1", reply_to="r",
                message_id="m1", headers={"h": "v"}, delivery_mode=2, priority=1,
                type="t", app_id="a"))
        s.read(ordered=True)
        s.send("FROB")
        s.read(ordered=True)
        s.state()
    cleanup(peer, [q])
    return lines


# -- destinations ----------------------------------------------------------------------------


def queue_destinations(peer: Peer) -> list[str]:
    """``/queue/Q`` (declared by SEND and by SUBSCRIBE), ``/amq/queue/Q`` (an existing queue;
    a missing one refused), and how each queue then looks through 0-9-1."""
    t = peer.token
    q1, q2, q3, missing = t + "sent", t + "subscribed", t + "existing", t + "missing"
    lines: list[str] = []
    with amqp091(peer) as ch:
        ch.queue_declare(q3, arguments={"x-max-length": 10})
    try:
        with session(peer, lines) as s:
            s.send("SEND", [("destination", f"/queue/{q1}"), ("receipt", "r1")], "one")
            s.expect(1)
            lines.append(f"/queue/sent declared: {queue_state(peer, q1)}, durable "
                         f"{declare_status(peer, q1, durable=True)}")
            s.send("SUBSCRIBE", _sub(f"/queue/{q2}", "s2", ("receipt", "r2")))
            s.expect(1)
            lines.append(f"/queue/subscribed declared: {queue_state(peer, q2)}")
            s.send("SUBSCRIBE", _sub(f"/queue/{q1}", "s1"))
            s.expect(1, "subscribed to /queue/sent")
            s.send("SEND", [("destination", f"/queue/{q2}")], "two")
            s.expect(1)
            s.send("SEND", [("destination", f"/amq/queue/{q3}"), ("receipt", "r3")], "three")
            s.expect(1)
            s.send("SUBSCRIBE", _sub(f"/amq/queue/{q3}", "s3"))
            s.expect(1)
            lines.append(f"/amq/queue/existing: {queue_state(peer, q3)}, its arguments kept "
                         f"{declare_status(peer, q3, arguments={'x-max-length': 10})}")
            s.state()
        with session(peer, lines, "missing send") as s:
            s.send("SEND", [("destination", f"/amq/queue/{missing}"), ("receipt", "r")], "x")
            s.expect(1)
            s.state()
        with session(peer, lines, "missing subscribe") as s:
            s.send("SUBSCRIBE", _sub(f"/amq/queue/{missing}", "m", ("receipt", "r")))
            s.expect(1)
            s.state()
        lines.append(f"missing: {queue_state(peer, missing)}")
    finally:
        cleanup(peer, [q1, q2, q3])
    return lines


def topic_and_exchange_destinations(peer: Peer) -> list[str]:
    """``/topic/K`` (amq.topic, one queue per subscription), ``/exchange/X/K`` on a topic
    exchange, ``/exchange/X`` on a fanout exchange, ``/exchange/missing``."""
    t = peer.token
    topic, fanout = t + "topic-x", t + "fanout-x"
    lines: list[str] = []
    with amqp091(peer) as ch:
        ch.exchange_declare(topic, "topic")
        ch.exchange_declare(fanout, "fanout")
    try:
        with session(peer, lines, "a") as a, session(peer, lines, "b") as b:
            a.send("SUBSCRIBE", _sub(f"/topic/{t}k.*", "ta", ("receipt", "ra")))
            a.expect(1)
            b.send("SUBSCRIBE", _sub(f"/topic/{t}k.one", "tb", ("receipt", "rb")))
            b.expect(1)
            a.send("SEND", [("destination", f"/topic/{t}k.one")], "to both")
            a.send("SEND", [("destination", f"/topic/{t}k.two")], "to a")
            a.send("SEND", [("destination", f"/topic/{t}nobody"), ("receipt", "r0")], "lost")
            a.messages(3)
            b.expect(1)
            a.send("SUBSCRIBE", _sub(f"/exchange/{topic}/{t}x.#", "xa", ("receipt", "rxa")))
            a.expect(1)
            b.send("SUBSCRIBE", _sub(f"/exchange/{fanout}", "fb", ("receipt", "rfb")))
            b.expect(1)
            b.send("SEND", [("destination", f"/exchange/{topic}/{t}x.y")], "via topic-x")
            a.expect(1)
            a.send("SEND", [("destination", f"/exchange/{fanout}/any")], "via fanout-x")
            b.expect(1)
            a.send("SEND", [("destination", f"/exchange/{fanout}")], "fanout, no key")
            b.expect(1)
            a.state()
            b.state()
        for label, headers in (
                ("send /exchange/missing/k", [("destination", f"/exchange/{t}missing/k")]),
                ("subscribe /exchange/missing", _sub(f"/exchange/{t}missing", "0"))):
            with session(peer, lines, label) as s:
                s.send(label.split()[0].upper(), [*headers, ("receipt", "r")], "x")
                s.expect(1)
                s.state()
    finally:
        cleanup(peer, exchanges=[topic, fanout])
    return lines


def temp_queue_reply(peer: Peer) -> list[str]:
    """``reply-to:/temp-queue/N``: the service sees ``/reply-queue/amq.gen-...``, answers
    there, and the requester gets the reply on its temp queue without subscribing; a second
    request reuses the same temp queue; SEND to a ``/reply-queue/`` that does not exist."""
    t = peer.token
    svc = t + "service"
    lines: list[str] = []
    try:
        with session(peer, lines, "service") as service, \
                session(peer, lines, "client") as client:
            service.send("SUBSCRIBE", _sub(f"/queue/{svc}", "svc", ("receipt", "r")))
            service.expect(1)
            for n in (1, 2):
                client.send("SEND", [("destination", f"/queue/{svc}"),
                                     ("reply-to", "/temp-queue/answers"),
                                     ("correlation-id", f"c{n}")], f"request {n}")
                got = service.expect(1)
                request = got[0]
                reply_to = request.header("reply-to") if not isinstance(request, str) else None
                service.send("SEND", [("destination", reply_to or "/reply-queue/none"),
                                      ("correlation-id", f"c{n}")], f"reply {n}")
                client.expect(1)
            client.send("SEND", [("destination", "/temp-queue/other"), ("receipt", "rt")],
                        "to a temp queue")
            client.expect(1)
            client.state()
            service.state()
        with session(peer, lines, "stranger") as s:
            s.send("SEND", [("destination", "/reply-queue/amq.gen-AAAAAAAAAAAAAAAAAAAAAA"),
                            ("receipt", "r")], "x")
            s.expect(1)
            s.state()
        with session(peer, lines, "subscribe reply-queue") as s:
            s.send("SUBSCRIBE", _sub("/reply-queue/whatever", "0", ("receipt", "r")))
            s.expect(1)
            s.state()
        with session(peer, lines, "subscribe temp-queue") as s:
            s.send("SUBSCRIBE", _sub("/temp-queue/mine", "0", ("receipt", "r")))
            s.expect(1)
            s.state()
    finally:
        cleanup(peer, [svc])
    return lines


# -- acknowledgements -------------------------------------------------------------------------


def _fill(peer: Peer, queue: str, count: int) -> None:
    with amqp091(peer) as ch:
        ch.queue_declare(queue)
        for n in range(1, count + 1):
            ch.basic_publish("", queue, f"m{n}".encode())


def ack_auto_and_client(peer: Peer) -> list[str]:
    """ack:auto (nothing left), ack:client (ACK of the second acknowledges the first too),
    ack:client-individual (ACK of the second leaves the first); what is left unacknowledged
    comes back, redelivered, to the next subscriber."""
    t = peer.token
    lines: list[str] = []
    queues = []
    for mode in ("auto", "client", "client-individual"):
        q = f"{t}ack-{mode}"
        queues.append(q)
        _fill(peer, q, 3)
        with session(peer, lines, mode) as s:
            s.send("SUBSCRIBE", _sub(f"/amq/queue/{q}", "s", ("ack", mode)))
            got = s.expect(3)
            if mode != "auto" and not isinstance(got[1], str):
                s.send("ACK", [("id", got[1].header("ack") or ""), ("receipt", "a")])
                s.expect(1)
            lines.append(f"{mode}: while subscribed {queue_state(peer, q)}")
            s.state()
        lines.append(f"{mode}: after {queue_state(peer, q)}")
        with session(peer, lines, mode + " again") as s:
            s.send("SUBSCRIBE", _sub(f"/amq/queue/{q}", "s2", ("ack", "client-individual")))
            s.expect({"auto": 0, "client": 1, "client-individual": 2}[mode])
            s.quiet()
            s.state()
    cleanup(peer, queues)
    return lines


def nack_and_ack_versions(peer: Peer) -> list[str]:
    """NACK with requeue (default true, and false: dropped), NACK of a message id the
    subscription never had, ACK by ``message-id`` + ``subscription`` in 1.0/1.1."""
    t = peer.token
    lines: list[str] = []
    q = t + "nack"
    _fill(peer, q, 3)
    try:
        with session(peer, lines, "1.2") as s:
            s.send("SUBSCRIBE", _sub(f"/amq/queue/{q}", "s", ("ack", "client-individual")))
            got = [g for g in s.expect(3) if not isinstance(g, str)]
            s.send("NACK", [("id", got[0].header("ack") or ""), ("receipt", "n1")])
            s.expect(2, "NACK m1 (requeue by default)")
            s.send("NACK", [("id", got[1].header("ack") or ""), ("requeue", "false"),
                            ("receipt", "n2")])
            s.expect(1, "NACK m2 requeue:false")
            s.state()
        lines.append(f"left: {queue_state(peer, q)}")
        with session(peer, lines, "NACK an unknown delivery") as s:
            s.send("SUBSCRIBE", _sub(f"/queue/{q}-empty", "s", ("ack", "client-individual"),
                                     ("receipt", "r")))
            s.expect(1)
            s.send("NACK", [("id", "T_s@@session-AAAAAAAAAAAAAAAAAAAAAA@@99"),
                            ("receipt", "n3")])
            s.until_closed()
        for version in ("1.0", "1.1"):
            with session(peer, lines, version, version=version) as s:
                s.send("SUBSCRIBE", _sub(f"/amq/queue/{q}", "s", ("ack", "client")))
                got = [g for g in s.expect(2) if not isinstance(g, str)]
                if got:
                    s.send("ACK", [("message-id", got[-1].header("message-id") or ""),
                                   ("subscription", "s"), ("receipt", "a")])
                    s.expect(1)
                s.state()
            lines.append(f"after {version}: {queue_state(peer, q)}")
            _fill(peer, q, 2)
    finally:
        cleanup(peer, [q, q + "-empty"])
    return lines


def prefetch_count(peer: Peer) -> list[str]:
    """prefetch-count:2 with ack:client-individual: two messages, the third after an ACK."""
    t = peer.token
    q = t + "prefetch"
    lines: list[str] = []
    _fill(peer, q, 4)
    try:
        with session(peer, lines) as s:
            s.send("SUBSCRIBE", _sub(f"/amq/queue/{q}", "s", ("ack", "client-individual"),
                                     ("prefetch-count", "2")))
            got = s.expect(2)
            s.quiet("then (prefetch full)")
            if not isinstance(got[0], str):
                s.send("ACK", [("id", got[0].header("ack") or "")])
            s.expect(1, "after one ACK")
            s.quiet()
            lines.append(f"queue: {queue_state(peer, q)}")
            s.state()
    finally:
        cleanup(peer, [q])
    return lines


# -- transactions and receipts ---------------------------------------------------------------


def transactions(peer: Peer) -> list[str]:
    """SEND in a transaction arrives at COMMIT and not at ABORT; an ACK in an aborted
    transaction is forgotten, in a committed one done; errors: COMMIT/ABORT/SEND of an unknown
    transaction, BEGIN without a transaction header, BEGIN of one begun already."""
    t = peer.token
    q, q2 = t + "tx", t + "tx-acks"
    lines: list[str] = []
    _fill(peer, q2, 2)
    try:
        with session(peer, lines, "sender") as s, session(peer, lines, "receiver") as r:
            r.send("SUBSCRIBE", _sub(f"/queue/{q}", "s", ("receipt", "sub")))
            r.expect(1)
            s.send("BEGIN", [("transaction", "tx1"), ("receipt", "b1")])
            s.expect(1)
            s.send("SEND", [("destination", f"/queue/{q}"), ("transaction", "tx1"),
                            ("receipt", "s1")], "committed")
            r.quiet("before COMMIT")
            s.send("COMMIT", [("transaction", "tx1"), ("receipt", "c1")])
            s.messages(2, "after COMMIT")
            r.expect(1, "after COMMIT")
            s.send("BEGIN", [("transaction", "tx2")])
            s.send("SEND", [("destination", f"/queue/{q}"), ("transaction", "tx2")], "aborted")
            s.send("ABORT", [("transaction", "tx2"), ("receipt", "a2")])
            s.expect(1)
            r.quiet("after ABORT")
            s.state()
            r.state()
        with session(peer, lines, "acker") as s:
            s.send("SUBSCRIBE", _sub(f"/amq/queue/{q2}", "s", ("ack", "client-individual")))
            got = [g for g in s.expect(2) if not isinstance(g, str)]
            s.send("BEGIN", [("transaction", "tx3")])
            s.send("ACK", [("id", got[0].header("ack") or ""), ("transaction", "tx3")])
            s.send("ABORT", [("transaction", "tx3"), ("receipt", "a3")])
            s.expect(1)
            s.send("BEGIN", [("transaction", "tx4")])
            s.send("ACK", [("id", got[1].header("ack") or ""), ("transaction", "tx4")])
            s.send("COMMIT", [("transaction", "tx4"), ("receipt", "c4")])
            s.expect(1)
            s.state()
        lines.append(f"after ACK aborted, ACK committed: {queue_state(peer, q2)}")
        for label, frames in (
                ("COMMIT unknown", [("COMMIT", [("transaction", "nope")])]),
                ("ABORT unknown", [("ABORT", [("transaction", "nope")])]),
                ("SEND in unknown", [("SEND", [("destination", f"/queue/{q}"),
                                               ("transaction", "nope")])]),
                ("ACK in unknown", [("ACK", [("id", "T_s@@session-AAAAAAAAAAAAAAAAAAAAAA@@1"),
                                             ("transaction", "nope")])]),
                ("BEGIN without transaction", [("BEGIN", [])]),
                ("COMMIT without transaction", [("COMMIT", [])]),
                ("BEGIN twice", [("BEGIN", [("transaction", "t")]),
                                 ("BEGIN", [("transaction", "t")])])):
            with session(peer, lines, label) as s:
                for command, headers in frames:
                    s.send(command, [*headers, ("receipt", "r")], "x" if command == "SEND"
                           else b"")
                s.expect(len(frames))
                s.state()
        lines.append(f"tx queue: {queue_state(peer, q)}")
    finally:
        cleanup(peer, [q, q2])
    return lines


def receipts(peer: Peer) -> list[str]:
    """A receipt for each frame that asks for one (SEND, SUBSCRIBE, ACK, NACK, BEGIN, COMMIT,
    ABORT, UNSUBSCRIBE, DISCONNECT), and a receipt id that needs escaping, in 1.2 and 1.0."""
    t = peer.token
    lines: list[str] = []
    try:
        for version in ("1.2", "1.0"):
            q = f"{t}receipts-{version}"
            with session(peer, lines, version, version=version) as s:
                s.send("SUBSCRIBE", _sub(f"/queue/{q}", "s", ("ack", "client-individual"),
                                         ("receipt", "subscribe")))
                s.expect(1)
                s.send("SEND", [("destination", f"/queue/{q}"), ("receipt", "send")], "a")
                s.send("SEND", [("destination", f"/queue/{q}"), ("receipt", "send")], "b")
                got = [g for g in s.messages(4) if g.command == "MESSAGE"]
                ack = "id" if version == "1.2" else "message-id"
                if len(got) == 2:
                    key = "ack" if version == "1.2" else "message-id"
                    s.send("ACK", [(ack, got[0].header(key) or ""), ("subscription", "s"),
                                   ("receipt", "ack")])
                    s.expect(1)
                    s.send("NACK", [(ack, got[1].header(key) or ""), ("subscription", "s"),
                                    ("requeue", "false"), ("receipt", "nack")])
                    s.expect(1)
                for command in ("BEGIN", "COMMIT", "BEGIN", "ABORT"):
                    s.send(command, [("transaction", "t"), ("receipt", command.lower())])
                    s.expect(1)
                s.send("SEND", [("destination", f"/queue/{q}"),
                                ("receipt", "r:1\\x\ny" if version == "1.2" else "r:1 x")],
                       "escaped", escape_as="1.2" if version == "1.2" else None)
                s.messages(2)
                s.send("UNSUBSCRIBE", [("id", "s"), ("receipt", "unsubscribe")])
                s.expect(1)
                s.send("DISCONNECT", [("receipt", "disconnect")])
                s.expect(2)
    finally:
        cleanup(peer, [f"{t}receipts-1.2", f"{t}receipts-1.0"])
    return lines


# -- durable topic subscriptions and subscription headers -------------------------------------


def _erlang_string(text: str) -> bytes:
    data = text.encode()
    return b"\x6a" if not data else b"\x6b" + struct.pack(">H", len(data)) + data


def subscription_queue_name(routing_key: str, subscription_id: str) -> str:
    """The queue RabbitMQ 3.10's STOMP plugin names for a durable topic subscription:
    ``stomp-subscription-`` and the base64url md5 of the term ``{RoutingKey, Id}`` (both
    strings) in the external term format."""
    term = b"\x83\x68\x02" + _erlang_string(routing_key) + _erlang_string(subscription_id)
    digest = base64.urlsafe_b64encode(hashlib.md5(term).digest()).rstrip(b"=").decode()
    return f"stomp-subscription-{digest}"


def durable_topic_subscription(peer: Peer) -> list[str]:
    """SUBSCRIBE /topic/K with persistent:true (or durable:true) and an id: a durable queue
    named from K and the id (:func:`subscription_queue_name`), but auto-delete unless the
    frame says auto-delete:false: only then does it keep the messages while the subscriber is
    away; UNSUBSCRIBE with persistent:true deletes it, without it leaves it; x-queue-name
    names it; persistent:true (or durable:true) without an id is refused."""
    t = peer.token
    key = t + "news"
    variants = {"d1": [("persistent", "true")], "d2": [("durable", "true")],
                "d3": [("persistent", "true"), ("auto-delete", "false")],
                "d4": [("durable", "true"), ("auto-delete", "false")]}
    names = {sid: subscription_queue_name(key, sid) for sid in variants}
    lines: list[str] = []
    try:
        for sid, headers in variants.items():
            with session(peer, lines, f"{sid} {headers}") as s:
                s.send("SUBSCRIBE", _sub(f"/topic/{key}", sid, *headers, ("receipt", "r")))
                s.expect(1)
                lines.append(f"{sid} queue md5({{K, Id}}) while subscribed: "
                             f"{queue_state(peer, names[sid])}")
                s.state()
            lines.append(f"{sid} after the subscriber left: {queue_state(peer, names[sid])}")
        with session(peer, lines, "publisher") as p:
            for n in (1, 2):
                p.send("SEND", [("destination", f"/topic/{key}")], f"while away {n}")
            p.state()
        for sid in ("d3", "d4"):
            lines.append(f"{sid} kept: {queue_state(peer, names[sid])}")
        for sid, unsubscribe in (("d3", [("persistent", "true")]), ("d4", [])):
            with session(peer, lines, f"{sid} back") as s:
                s.send("SUBSCRIBE", _sub(f"/topic/{key}", sid, *variants[sid]))
                s.expect(2)
                s.send("UNSUBSCRIBE", [("id", sid), *unsubscribe, ("receipt", "u")])
                s.expect(1)
                s.state()
            lines.append(f"{sid} after UNSUBSCRIBE {unsubscribe}: "
                         f"{queue_state(peer, names[sid])}")
        with session(peer, lines, "d1 back") as s:
            s.send("SUBSCRIBE", _sub(f"/topic/{key}", "d1", *variants["d1"],
                                     ("receipt", "r")))
            s.expect(1)
            s.send("UNSUBSCRIBE", [("id", "d1"), ("persistent", "true"), ("receipt", "u")])
            s.expect(1)
            s.state()
        with session(peer, lines, "named") as s:
            s.send("SUBSCRIBE", _sub(f"/topic/{key}", "d5", ("persistent", "true"),
                                     ("x-queue-name", t + "chosen"), ("receipt", "r")))
            s.expect(1)
            lines.append(f"x-queue-name while subscribed: {queue_state(peer, t + 'chosen')}")
            s.state()
        for label, headers in (("persistent:true without id",
                                [("destination", f"/topic/{key}"), ("persistent", "true")]),
                               ("durable:true without id",
                                [("destination", f"/topic/{key}"), ("durable", "true")])):
            with session(peer, lines, label) as s:
                s.send("SUBSCRIBE", [*headers, ("receipt", "r")])
                s.expect(1)
                s.state()
    finally:
        cleanup(peer, [*names.values(), t + "chosen"])
    return lines


def subscription_headers(peer: Peer) -> list[str]:
    """durable, auto-delete and exclusive headers, x-queue-type and x- arguments on SUBSCRIBE
    to /queue/Q, x-queue-name on /topic/K, and a SUBSCRIBE that does not match the queue."""
    t = peer.token
    lines: list[str] = []
    made: list[str] = []

    def subscribe(label: str, queue: str, *extra: tuple[str, str]) -> None:
        made.append(queue)
        with session(peer, lines, label) as s:
            s.send("SUBSCRIBE", _sub(f"/queue/{queue}", "s", *extra, ("receipt", "r")))
            s.expect(1)
            s.state()

    try:
        subscribe("durable:false", t + "transient", ("durable", "false"))
        lines.append(f"transient: durable false {declare_status(peer, t + 'transient')}")
        subscribe("auto-delete:true", t + "autodel", ("auto-delete", "true"))
        lines.append(f"autodel after the subscriber left: {queue_state(peer, t + 'autodel')}")
        subscribe("x- arguments", t + "args", ("x-max-length", "2"),
                  ("x-message-ttl", "60000"), ("x-dead-letter-exchange", "dlx"),
                  ("x-max-priority", "5"), ("x-expires", "600000"),
                  ("x-max-length-bytes", "1000"), ("x-dead-letter-routing-key", "dead"),
                  ("x-overflow", "reject-publish"))
        lines.append("args declared with them as integers: " + declare_status(
            peer, t + "args", durable=True, arguments={
                "x-max-length": 2, "x-message-ttl": 60000, "x-dead-letter-exchange": "dlx",
                "x-max-priority": 5, "x-expires": 600000, "x-max-length-bytes": 1000,
                "x-dead-letter-routing-key": "dead"}))
        lines.append("args with x-overflow too: " + declare_status(
            peer, t + "args", durable=True, arguments={
                "x-max-length": 2, "x-message-ttl": 60000, "x-dead-letter-exchange": "dlx",
                "x-max-priority": 5, "x-expires": 600000, "x-max-length-bytes": 1000,
                "x-dead-letter-routing-key": "dead", "x-overflow": "reject-publish"}))
        subscribe("x-queue-type quorum", t + "quorum", ("x-queue-type", "quorum"))
        lines.append("quorum is quorum: " + declare_status(
            peer, t + "quorum", durable=True, arguments={"x-queue-type": "quorum"}))
        subscribe("x-max-length not a number", t + "badarg", ("x-max-length", "many"))
        lines.append(f"badarg: {queue_state(peer, t + 'badarg')}")
        made.append(t + "excl")
        with session(peer, lines, "exclusive owner") as owner:
            owner.send("SUBSCRIBE", _sub(f"/queue/{t}excl", "s", ("exclusive", "true"),
                                         ("receipt", "r")))
            owner.expect(1)
            lines.append(f"excl while the owner is here: {queue_state(peer, t + 'excl')}")
            with session(peer, lines, "exclusive other") as other:
                other.send("SUBSCRIBE", _sub(f"/queue/{t}excl", "s", ("exclusive", "true"),
                                             ("receipt", "r")))
                other.expect(1)
                other.state()
            owner.state()
        lines.append(f"excl after the owner left: {queue_state(peer, t + 'excl')}")
        subscribe("durable:false on a durable queue", t + "args", ("durable", "false"))
        with session(peer, lines, "topic x-queue-name") as s:
            made.append(t + "topicq")
            s.send("SUBSCRIBE", _sub(f"/topic/{t}k", "s", ("x-queue-name", t + "topicq"),
                                     ("receipt", "r")))
            s.expect(1)
            lines.append(f"topicq while subscribed: {queue_state(peer, t + 'topicq')}")
            s.state()
        lines.append(f"topicq after: {queue_state(peer, t + 'topicq')}")
    finally:
        cleanup(peer, made)
    return lines


# -- errors -----------------------------------------------------------------------------------


def frame_errors(peer: Peer) -> list[str]:
    """One bad frame per connection: the ERROR (or nothing) it gets, and whether the
    connection stays open."""
    t = peer.token
    q = t + "errors"
    lines: list[str] = []
    bogus_ack = "T_nosub@@session-AAAAAAAAAAAAAAAAAAAAAA@@1"
    cases: list[tuple[str, list[tuple[str, list[tuple[str, str]]]]]] = [
        ("SEND unknown destination", [("SEND", [("destination", "/nowhere/x")])]),
        ("SUBSCRIBE unknown destination", [("SUBSCRIBE", _sub("/nowhere/x", "0"))]),
        ("SEND bare name", [("SEND", [("destination", t + "bare")])]),
        ("SEND /queue/a/b", [("SEND", [("destination", f"/queue/{t}a/b")])]),
        ("SUBSCRIBE /queue/a/b", [("SUBSCRIBE", _sub(f"/queue/{t}a/b", "0"))]),
        ("SEND /queue/", [("SEND", [("destination", "/queue/")])]),
        ("SUBSCRIBE /topic/", [("SUBSCRIBE", _sub("/topic/", "0"))]),
        ("SEND /exchange/", [("SEND", [("destination", "/exchange/")])]),
        ("SEND /amq/queue/", [("SEND", [("destination", "/amq/queue/")])]),
        ("SEND without destination", [("SEND", [])]),
        ("SUBSCRIBE without destination", [("SUBSCRIBE", [("id", "0")])]),
        ("SUBSCRIBE without id", [("SUBSCRIBE", [("destination", f"/queue/{q}")])]),
        ("bad command", [("FROBNICATE", [])]),
        ("lower-case command", [("send", [("destination", f"/queue/{q}")])]),
        ("message-id on SEND", [("SEND", [("destination", f"/queue/{q}"),
                                          ("message-id", "mine")])]),
        ("ACK of an unknown subscription", [("ACK", [("id", bogus_ack)])]),
        ("ACK of a malformed id", [("ACK", [("id", "garbage")])]),
        ("ACK without id", [("ACK", [])]),
        ("NACK of an unknown subscription", [("NACK", [("id", bogus_ack)])]),
        ("UNSUBSCRIBE unknown id", [("UNSUBSCRIBE", [("id", "nope")])]),
        ("UNSUBSCRIBE without id", [("UNSUBSCRIBE", [])]),
        ("duplicate subscription id", [("SUBSCRIBE", _sub(f"/queue/{q}", "dup")),
                                       ("SUBSCRIBE", _sub(f"/queue/{q}", "dup"))]),
        ("CONNECTED from the client", [("CONNECTED", [])]),
    ]
    try:
        for label, frames in cases:
            with session(peer, lines, label) as s:
                for command, headers in frames:
                    s.send(command, [*headers, ("receipt", "r")],
                           "x" if command == "SEND" else b"")
                s.expect(len(frames))
                s.state()
        with session(peer, lines, "garbage bytes") as s:
            s.raw.send_raw(b"\x00\x01\x02 not a frame\n\n\x00")
            s.expect(1)
            s.state()
        with session(peer, lines, "CONNECT with content-length:x", login="-") as s:
            s.raw.send_raw(b"CONNECT\nlogin:guest\npasscode:guest\ncontent-length:x\n\n\x00")
            s.expect(1)
            s.state()
        lines.append(f"errors queue: {queue_state(peer, q)}; bare: "
                     f"{queue_state(peer, t + 'bare')}")
    finally:
        cleanup(peer, [q, t + "a/b", t + "bare"])
    return lines


#: Three users, each without one of the three permissions (as rabbitmqctl set_permissions).
USERS: dict[str, tuple[str, str, str]] = {
    "noconf": ("", ".*", ".*"), "nowrite": (".*", "", ".*"), "noread": (".*", ".*", "")}


def access_refused(peer: Peer) -> list[str]:
    """What each user without one permission may do over STOMP: SEND and SUBSCRIBE to a new
    /queue/Q, to existing ones through /amq/queue/Q (an empty one to subscribe to: no delivery
    races the receipt), to /topic/K and /exchange/X/K."""
    t = peer.token
    lines: list[str] = []
    made: list[str] = []
    for user, (configure, write, read) in USERS.items():
        peer.add_user(t + user, "pw", configure, write, read)
    with amqp091(peer) as ch:
        ch.exchange_declare(t + "x", "topic")
        for user in USERS:
            for name in ("existing", "empty"):
                ch.queue_declare(f"{t}{user}-{name}")
                made.append(f"{t}{user}-{name}")
    try:
        for user in USERS:
            made.append(f"{t}{user}-new")
            for command, dest in (("SEND", f"/queue/{t}{user}-new"),
                                  ("SUBSCRIBE", f"/queue/{t}{user}-new"),
                                  ("SEND", f"/amq/queue/{t}{user}-existing"),
                                  ("SUBSCRIBE", f"/amq/queue/{t}{user}-empty"),
                                  ("SEND", f"/topic/{t}k"),
                                  ("SUBSCRIBE", f"/topic/{t}k"),
                                  ("SEND", f"/exchange/{t}x/k"),
                                  ("SUBSCRIBE", f"/exchange/{t}x/k")):
                label = f"{user} {command} {dest.replace(t, '')}"
                with session(peer, lines, label, login=t + user, passcode="pw") as s:
                    s.send(command, [("destination", dest), ("id", "0"), ("receipt", "r")],
                           "x" if command == "SEND" else b"")
                    s.expect(1)
                    s.state()
        lines.append("counts: " + ", ".join(f"{q.replace(t, '')} {queue_state(peer, q)}"
                                            for q in made))
    finally:
        cleanup(peer, made, exchanges=[t + "x"], users=[t + user for user in USERS])
    return lines


# -- header escaping ---------------------------------------------------------------------------


def header_escaping(peer: Peer) -> list[str]:
    """Headers with escapes, colons and surrounding whitespace, sent in 1.2, 1.1 and 1.0 to a
    topic that a 1.2, a 1.1 and a 1.0 subscriber each read (as on the wire: RabbitMQ escapes
    for every version, and reads escapes in every version); an unknown escape sequence; a
    header repeated (the first counts)."""
    t = peer.token
    dest = f"/topic/{t}esc"
    lines: list[str] = []
    values = [("plain", "v"), ("colon", "a:b:c"), ("newline", "a\nb"), ("backslash", "a\\b"),
              ("carriage-return", "a\rb"), ("spaces", "  padded  "), ("tab", "\tlead"),
              ("col:on", "in the name"), ("repeated", "first"), ("repeated", "second")]
    by_version = {
        "1.2": values, "1.1": [(k, v) for k, v in values if k != "carriage-return"],
        # 1.0 has no escapes; written raw: a backslash sequence in a value is read as one
        "1.0": [("plain", "v"), ("colon", "a:b:c"), ("spaces", "  padded  "),
                ("tab", "\tlead"), ("raw-escape", "a\\nb"), ("repeated", "first"),
                ("repeated", "second")]}
    subscribers = {}
    for version in ("1.2", "1.1", "1.0"):
        s = session(peer, lines, f"reader {version}", version=version)
        subscribers[version] = (s, s.__enter__())
    try:
        for _, r in subscribers.values():
            r.send("SUBSCRIBE", _sub(dest, "s", ("receipt", "r")))
            r.expect(1)
        for version in ("1.2", "1.1", "1.0"):
            with session(peer, lines, f"writer {version}", version=version) as w:
                w.send("SEND", [("destination", dest), *by_version[version]], f"from {version}",
                       escape_as=None if version == "1.0" else version)
                for _, r in subscribers.values():
                    r.expect(1)
                w.state()
        for version in ("1.2", "1.0"):
            with session(peer, lines, f"unknown escape {version}", version=version) as w:
                w.raw.send_raw(f"SEND\ndestination:{dest}\nx:a\\tb\n\n".encode()
                               + b"bad escape\x00")
                w.expect(1)
                w.state()
            subscribers["1.2"][1].quiet()
    finally:
        for context, _ in subscribers.values():
            context.__exit__(None, None, None)
    return lines


# -- interoperation with AMQP 0-9-1 ------------------------------------------------------------


def from_amqp091(peer: Peer) -> list[str]:
    """A message published with pika with every basic property and headers of each type pika
    writes (string, int, long, bool, decimal (pika has no float), table, array, bytes, void),
    read by a 1.2 and a 1.0 STOMP subscriber: which headers they get, and how."""
    t = peer.token
    q = t + "from091"
    lines: list[str] = []
    properties = pika.BasicProperties(
        content_type="application/json", content_encoding="gzip",
        headers={"s": "text", "i": 42, "neg": -7, "long": 2 ** 40, "t": True, "f": False,
                 "decimal": decimal.Decimal("1.5"), "table": {"k": "v", "n": 1}, "list": ["a", 1],
                 "bytes": b"raw", "empty": "", "none": None, "colon:key": "a:b",
                 "nl": "a\nb", "destination": "/queue/spoofed", "message-id": "spoofed"},
        delivery_mode=2, priority=7, correlation_id="corr", reply_to="replies",
        expiration="600000", message_id="mid", timestamp=1700000000, type="kind",
        user_id="guest", app_id="app", cluster_id="cluster")
    _fill(peer, q, 0)
    try:
        with amqp091(peer) as ch:
            ch.basic_publish("", q, b'{"a": 1}', properties)
            ch.basic_publish("", q, b"bare")
            ch.basic_publish("", q, b"\x00binary\x00",
                             pika.BasicProperties(reply_to="/exchange/x/y"))
        for version in ("1.2", "1.0"):
            with session(peer, lines, version, version=version) as s:
                s.send("SUBSCRIBE", _sub(f"/amq/queue/{q}", "s", ("ack", "client")))
                got = [g for g in s.expect(3) if not isinstance(g, str)]
                if version == "1.0" and got:  # (1.2 leaves them unacknowledged: requeued)
                    s.send("ACK", [("message-id", got[-1].header("message-id") or ""),
                                   ("receipt", "a")])
                    s.expect(1)
                s.state()
    finally:
        cleanup(peer, [q])
    return lines


def _properties(props: pika.BasicProperties) -> str:
    fields = ("content_type", "content_encoding", "delivery_mode", "priority",
              "correlation_id", "reply_to", "expiration", "message_id", "timestamp", "type",
              "user_id", "app_id", "cluster_id")
    shown = {f: getattr(props, f) for f in fields if getattr(props, f) is not None}
    headers = props.headers
    return f"{shown!r} headers={dict(sorted(headers.items())) if headers else headers!r}"


def to_amqp091(peer: Peer) -> list[str]:
    """SENDs with each header STOMP maps to a property, user headers, and the reply-to forms,
    read with pika (basic.get): the properties and headers, as their types."""
    t = peer.token
    q = t + "to091"
    lines: list[str] = []
    sends: list[tuple[str, list[tuple[str, str]], bytes]] = [
        ("all mapped", [("content-type", "text/plain; charset=utf-8"),
                        ("content-encoding", "identity"), ("persistent", "true"),
                        ("priority", "5"), ("correlation-id", "corr"),
                        ("reply-to", "/queue/replies"), ("expiration", "600000"),
                        ("amqp-message-id", "mid"), ("timestamp", "1700000000"),
                        ("type", "kind"), ("user-id", "guest"), ("app-id", "app")],
         b"all"),
        ("user headers", [("x-custom", "1"), ("my-header", "v"), ("number", "42"),
                          ("bool", "true"), ("empty", ""), ("colon", "a:b")], b"user"),
        ("content-length", [], b"with\x00nul"),
        ("persistent false", [("persistent", "false")], b"p"),
        ("reply-to /temp-queue/", [("reply-to", "/temp-queue/t1")], b"r1"),
        ("reply-to /exchange/x/k", [("reply-to", "/exchange/x/k")], b"r2"),
        ("reply-to plain", [("reply-to", "plain")], b"r3"),
        ("priority not a number", [("priority", "high")], b"p2"),
        ("user-id of another user", [("user-id", "mallory")], b"u"),
        ("session header", [("session", "mine"), ("subscription", "mine"),
                            ("redelivered", "true")], b"s"),
    ]
    _fill(peer, q, 0)
    try:
        for label, headers, body in sends:
            with session(peer, lines, label) as s:
                s.send("SEND", [("destination", f"/amq/queue/{q}"), *headers,
                                ("receipt", "r")], body, content_length=b"\x00" in body)
                s.expect(1)
                s.state()
            with amqp091(peer) as ch:
                method, props, got = ch.basic_get(q, auto_ack=True)
                if method is None:
                    lines.append(f"{label}: nothing in the queue")
                else:
                    lines.append(f"{label}: {got!r} {normalise_properties(props, t)}")
    finally:
        cleanup(peer, [q])
    return lines


def normalise_properties(props: pika.BasicProperties, token: str) -> str:
    from .differential import normalise

    return normalise(_properties(props), token)


#: Every scenario with a golden file, by name.
SCENARIOS: dict[str, Scenario] = {
    scenario.__name__: scenario
    for scenario in (connect_versions, login_errors, header_order, queue_destinations,
                     topic_and_exchange_destinations, temp_queue_reply, ack_auto_and_client,
                     nack_and_ack_versions, prefetch_count, transactions, receipts,
                     durable_topic_subscription, subscription_headers, frame_errors,
                     access_refused, header_escaping, from_amqp091, to_amqp091)}

__all__ = ["SCENARIOS", "base64", "declare_status", "hashlib", "queue_state", "struct"]
