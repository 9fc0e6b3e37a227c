"""MQTT differential scenarios: what a raw MQTT client (:mod:`tests.mqtt.client`) observes of
embroker and of RabbitMQ 3.10.8's ``rabbitmq_mqtt`` plugin, compared through golden files
recorded from RabbitMQ.

A scenario is ``def name(peer: Peer) -> list[str]``: it sets the broker up through AMQP 0-9-1
(pika) and ``peer``'s user commands, talks MQTT with :class:`Session` connections, and returns
one line per observation. Its golden file, ``golden/<name>.txt``, holds RabbitMQ's lines;
offline embroker's lines are compared with it, and with ``EMBROKER_REFERENCE_URL`` the file is
checked against a fresh RabbitMQ run too. Record with ``python -m tests.mqtt.record [NAME...]``.
Peers, the 0-9-1 side and golden files work as for every protocol
(:mod:`tests.conformance.differential_kit`); this module is MQTT's part.

How a packet is written in a line (:func:`show`): its name, its first byte in hex (type and
flags), then its fields: ``CONNACK 0x20 sp=0 rc=0``, ``SUBACK 0x90 id=1 [1, 128]``,
``PUBLISH 0x32 'a/b' qos=1 retain=0 dup=0 id=1 b'payload'``, ``PUBACK 0x40 id=1``,
``UNSUBACK 0xb0 id=1``, ``PINGRESP 0xd0``; any other packet as its bytes in hex. ``closed`` is
the server closing the connection; ``timeout`` is nothing within the client's read timeout.
Whether a connection is still open after a packet is noted as ``state``: a PINGREQ is sent and
its answer read (``PINGRESP``: open; ``closed``: it was closed).

Normalised so that runs and brokers compare (:func:`normalise`): the run's unique name prefix
(:attr:`Peer.token`) is removed, and a client id the server made up (RabbitMQ 3.10's
``rabbit_mqtt_processor`` makes one for an empty client id: ``mqtt-`` then 22 base64 chars,
on embroker the same shape) becomes ``<generated>``.
"""

from __future__ import annotations

import io
import re
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, Protocol

from embroker import Broker
from embroker.server import Server
from tests.conformance import differential_kit as kit
from tests.raw_socket import Closed

from . import wire
from .client import Packet, RawMqtt

GOLDEN = kit.GoldenFiles("tests.mqtt", "MQTT plugin", "a raw MQTT client",
                         "packets as tests/mqtt/differential.py shows them")
#: How long the client waits for a packet (an expected one comes long before; one that should
#: not come is waited for this long).
READ_TIMEOUT = 1.0

_GENERATED = re.compile(r"mqtt-[A-Za-z0-9_+/=-]{22,24}")


class Peer(kit.ViewedPeer, Protocol):
    """A broker to run a scenario on (:class:`tests.conformance.differential_kit.Peer`): its
    MQTT port too, its management API (GET) and ``rabbitmqctl``."""

    mqtt_port: int

    def ctl(self, *argv: str) -> str:
        """``rabbitmqctl -q ARGV``'s output."""


class EmbrokerPeer(kit.EmbrokerAdmin):
    def __init__(self, broker: Broker, server: Server, node: str | None = None) -> None:
        super().__init__(broker, server, "m")
        self.mqtt_port = server.listener_port("mqtt")
        self._management = kit.ManagementAPI(
            f"http://{server.host}:{server.management_port}/api")
        self._node = node

    def api(self, path: str) -> Any:
        return self._management.get(path)

    def ctl(self, *argv: str) -> str:
        from embroker.control._ctl import run

        assert self._node is not None, "the embroker peer serves no node"
        out, err = io.StringIO(), io.StringIO()
        code = run("rabbitmqctl", ["-n", self._node, "-q", *argv], out=out, err=err)
        return out.getvalue() if code == 0 else f"exit {code}: {err.getvalue()}"


class ReferencePeer(kit.ReferenceAdmin):
    """RabbitMQ: users and vhosts made through its management API (port 15672)."""

    def __init__(self, url: str, mqtt_port: int = 1884) -> None:
        super().__init__(url, "m")
        self.mqtt_port = mqtt_port

    def ctl(self, *argv: str) -> str:
        done = subprocess.run(["rabbitmqctl", "-q", *argv], capture_output=True, text=True,
                              timeout=60, check=False)
        return done.stdout if done.returncode == 0 else \
            f"exit {done.returncode}: {done.stderr}"


# -- normalising and showing ----------------------------------------------------------------


def normalise(text: str, token: str) -> str:
    return _GENERATED.sub("<generated>", text.replace(token, ""))


def show(got: Packet | str, token: str) -> str:
    """A packet as a line (module docstring), or ``closed``/``timeout``."""
    if isinstance(got, str):
        return got
    head = f"0x{got.raw[0]:02x}"
    try:
        name, fields = wire.parse(got.raw)[0]
    except Exception:  # (not a packet wire.parse reads)
        return f"? {got.raw.hex()}"
    if name == "CONNACK":
        text = f"{name} {head} sp={int(fields[0])} rc={fields[1]}"
        if len(got.raw) != 4:
            text += f" raw={got.raw.hex()}"
    elif name == "PUBLISH":
        topic, payload, qos, retain, dup, packet_id = fields
        text = (f"{name} {head} {topic!r} qos={qos} retain={int(retain)} dup={int(dup)}"
                + (f" id={packet_id}" if qos else "") + f" {payload!r}")
    elif name in ("PUBACK", "UNSUBACK"):
        text = f"{name} {head} id={fields}"
    elif name == "SUBACK":
        text = f"{name} {head} id={fields[0]} {fields[1]}"
    elif name == "PINGRESP":
        text = f"{name} {head}"
    else:
        text = f"? {got.raw.hex()}"
    return normalise(text, token)


# -- connections ----------------------------------------------------------------------------


class Session(kit.Session[Packet]):
    """A :class:`RawMqtt` connection of a scenario, which writes its observations as lines
    (normalised)."""

    raw: RawMqtt

    def show(self, got: Packet | Closed) -> str:
        return show(got, self.peer.token)

    def note(self, text: str) -> None:
        self.lines.append(normalise(f"{self.name}: {text}", self.peer.token))

    def send(self, data: bytes) -> None:
        self.raw.send(data)

    def messages(self, count: int, label: str = "", *, ack: bool = True) -> list[Packet]:
        """Read ``count`` packets, noted sorted; QoS 1 deliveries are acknowledged when
        ``ack``."""
        packets = super().messages(count, label)
        if ack:
            for p in packets:
                if p.name == "PUBLISH" and p.fields[2] == 1:
                    self.send(wire.puback(p.fields[5]))
        return packets

    def state(self, label: str = "state") -> str:
        """Whether the connection is still open: PINGREQ, and its answer noted
        (``PINGRESP``: open, ``closed``: closed). Packets before the PINGRESP are noted too."""
        self.raw.send(wire.PINGREQ)
        seen = self.shown_until_closed(lambda got: got.name == "PINGRESP")
        self.note(f"{label} <- " + " | ".join(seen))
        return seen[-1]

    def connect(self, client_id: str, label: str = "CONNECT", *, note: bool = True,
                **kwargs: Any) -> Packet | Closed:
        """Send CONNECT (:func:`tests.mqtt.wire.connect`'s arguments) and read the answer,
        noted when ``note`` or when it is not an accepting CONNACK."""
        self.raw.send(wire.connect(client_id, **kwargs))
        got = self.raw.read()
        accepted = isinstance(got, Packet) and got.name == "CONNACK" and got.fields[1] == 0
        if note or not accepted:
            self.note(f"{label} <- {show(got, self.peer.token)}")
        return got

    def disconnect(self) -> None:
        """DISCONNECT, then wait for the server to close."""
        self.raw.send(wire.DISCONNECT)
        self.raw.read()
        self.raw.close()


@contextmanager
def session(peer: Peer, lines: list[str], name: str = "c", client_id: str | None = None, *,
            connect: bool = True, note_connack: bool = False,
            **kwargs: Any) -> Iterator[Session]:
    """An MQTT connection, CONNECTed (as ``client_id``, default the token and ``name``)
    unless ``connect`` is false."""
    with Session(peer, lines, name, RawMqtt(peer.host, peer.mqtt_port,
                                            timeout=READ_TIMEOUT)) as s:
        if connect:
            s.connect(client_id if client_id is not None else peer.token + name,
                      note=note_connack, **kwargs)
        yield s


# -- 0-9-1 on the side ----------------------------------------------------------------------

#: ``messages=N consumers=N`` of a queue, or the reply when it does not exist.
queue_state = partial(kit.queue_state, normalise=normalise)
#: What the management API says of a queue (its properties and bindings).
queue_info = partial(kit.queue_info, normalise=normalise)

Scenario = Callable[[Peer], list[str]]
