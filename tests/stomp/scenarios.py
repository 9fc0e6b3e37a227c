"""STOMP scenarios with golden files (see :mod:`tests.stomp.differential` for how frames are
written and normalised). Each scenario makes its names with the run's token, cleans up what it
made, and reads until the frames it expects came (a frame that should not come is waited for
the client's read timeout, and noted ``timeout``).
"""

from __future__ import annotations

import base64
import hashlib
import struct

import pika

from .differential import (
    Peer,
    Scenario,
    amqp091,
    cleanup,
    declare_status,
    queue_state,
    session,
)


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
            with session(peer, lines, label, **kwargs) as s:  # type: ignore[arg-type]
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


#: Every scenario with a golden file, by name.
SCENARIOS: dict[str, Scenario] = {
    scenario.__name__: scenario
    for scenario in (connect_versions, login_errors, header_order)}

__all__ = ["SCENARIOS", "base64", "declare_status", "hashlib", "queue_state", "struct"]
