"""MQTT differential scenarios: what a raw MQTT client (:mod:`tests.mqtt.client`) observes of
embroker and of RabbitMQ 3.10.8's ``rabbitmq_mqtt`` plugin, compared through golden files
recorded from RabbitMQ.

A scenario is ``def name(peer: Peer) -> list[str]``: it sets the broker up through AMQP 0-9-1
(pika) and ``peer``'s user commands, talks MQTT with :class:`Session` connections, and returns
one line per observation. Its golden file, ``golden/<name>.txt``, holds RabbitMQ's lines;
offline embroker's lines are compared with it, and with ``EMBROKER_REFERENCE_URL`` the file is
checked against a fresh RabbitMQ run too. Record with ``python -m tests.mqtt.record [NAME...]``.

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

import base64
import io
import json
import re
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

import pika

from . import wire
from .client import Packet, RawMqtt

GOLDEN_DIR = Path(__file__).parent / "golden"
RECORD_COMMAND = "python -m tests.mqtt.record"
#: How long the client waits for a packet (an expected one comes long before; one that should
#: not come is waited for this long).
READ_TIMEOUT = 1.0

_GENERATED = re.compile(r"mqtt-[A-Za-z0-9_+/=-]{22,24}")


class Peer(Protocol):
    """A broker to run a scenario on: its MQTT address, AMQP 0-9-1 URL, user commands, and
    its management API (GET) and ``rabbitmqctl``."""

    label: str
    #: The prefix of every name the scenario makes (normalised away in its lines).
    token: str
    host: str
    mqtt_port: int
    url091: str

    def add_user(self, name: str, password: str | None, configure: str, write: str, read: str,
                 vhost: str = "/") -> None: ...

    def set_topic_permissions(self, user: str, exchange: str, write: str, read: str,
                              vhost: str = "/") -> None: ...

    def delete_user(self, name: str) -> None: ...

    def add_vhost(self, name: str) -> None: ...

    def delete_vhost(self, name: str) -> None: ...

    def api(self, path: str) -> Any:
        """GET ``/api<path>`` of the management API, as JSON (None: 404)."""

    def ctl(self, *argv: str) -> str:
        """``rabbitmqctl -q ARGV``'s output."""


def _get(url: str, auth: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": auth})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


_GUEST = "Basic " + base64.b64encode(b"guest:guest").decode()


class EmbrokerPeer:
    label = "embroker"

    def __init__(self, broker: Any, server: Any, node: str | None = None) -> None:
        self.broker = broker
        self.token = f"m{uuid.uuid4().hex[:6]}-"
        self.host = server.host
        self.mqtt_port = server.listener_port("mqtt")
        self.url091 = server.url
        self._api = f"http://{server.host}:{server.management_port}/api"
        self._node = node

    def add_user(self, name: str, password: str | None, configure: str, write: str, read: str,
                 vhost: str = "/") -> None:
        from embroker.model import HashedPassword

        self.broker.add_user(name, password if password is not None else HashedPassword(""))
        self.broker.set_permissions(name, configure, write, read, vhost=vhost)

    def set_topic_permissions(self, user: str, exchange: str, write: str, read: str,
                              vhost: str = "/") -> None:
        self.broker.set_topic_permissions(user, exchange, write, read, vhost=vhost)

    def delete_user(self, name: str) -> None:
        self.broker.delete_user(name)

    def add_vhost(self, name: str) -> None:
        self.broker.add_vhost(name)
        self.broker.set_permissions("guest", ".*", ".*", ".*", vhost=name)

    def delete_vhost(self, name: str) -> None:
        self.broker.delete_vhost(name)

    def api(self, path: str) -> Any:
        return _get(self._api + path, _GUEST)

    def ctl(self, *argv: str) -> str:
        from embroker.control._ctl import run

        assert self._node is not None, "the embroker peer serves no node"
        out, err = io.StringIO(), io.StringIO()
        code = run("rabbitmqctl", ["-n", self._node, "-q", *argv], out=out, err=err)
        return out.getvalue() if code == 0 else f"exit {code}: {err.getvalue()}"


class ReferencePeer:
    """RabbitMQ: users and vhosts made through its management API (port 15672)."""

    label = "RabbitMQ"

    def __init__(self, url: str, mqtt_port: int = 1884) -> None:
        parts = urlsplit(url)
        self.token = f"m{uuid.uuid4().hex[:6]}-"
        self.host = parts.hostname or "127.0.0.1"
        self.mqtt_port = mqtt_port
        self.url091 = url
        credentials = f"{parts.username or 'guest'}:{parts.password or 'guest'}"
        self._auth = "Basic " + base64.b64encode(credentials.encode()).decode()
        self._api = f"http://{self.host}:15672/api"

    def _http(self, method: str, path: str, body: Any = None) -> None:
        request = urllib.request.Request(
            self._api + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": self._auth, "content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10):
                return
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {path}: {exc.code} {exc.read()!r}") from None

    def add_user(self, name: str, password: str | None, configure: str, write: str, read: str,
                 vhost: str = "/") -> None:
        body: dict[str, Any] = {"tags": ""}
        if password is None:
            body["password_hash"] = ""
        else:
            body["password"] = password
        self._http("PUT", f"/users/{quote(name, safe='')}", body)
        self._http("PUT", f"/permissions/{quote(vhost, safe='')}/{quote(name, safe='')}",
                   {"configure": configure, "write": write, "read": read})

    def set_topic_permissions(self, user: str, exchange: str, write: str, read: str,
                              vhost: str = "/") -> None:
        self._http("PUT", f"/topic-permissions/{quote(vhost, safe='')}/{quote(user, safe='')}",
                   {"exchange": exchange, "write": write, "read": read})

    def delete_user(self, name: str) -> None:
        self._http("DELETE", f"/users/{quote(name, safe='')}")

    def add_vhost(self, name: str) -> None:
        self._http("PUT", f"/vhosts/{quote(name, safe='')}")
        self._http("PUT", f"/permissions/{quote(name, safe='')}/guest",
                   {"configure": ".*", "write": ".*", "read": ".*"})

    def delete_vhost(self, name: str) -> None:
        self._http("DELETE", f"/vhosts/{quote(name, safe='')}")

    def api(self, path: str) -> Any:
        return _get(self._api + path, self._auth)

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


class Session:
    """A :class:`RawMqtt` connection of a scenario, which writes its observations as lines."""

    def __init__(self, peer: Peer, lines: list[str], name: str) -> None:
        self.peer, self.lines, self.name = peer, lines, name
        self.raw = RawMqtt(peer.host, peer.mqtt_port, timeout=READ_TIMEOUT)

    def note(self, text: str) -> None:
        self.lines.append(normalise(f"{self.name}: {text}", self.peer.token))

    def send(self, data: bytes) -> None:
        self.raw.send(data)

    def read(self, label: str = "", *, timeout: float | None = None) -> Packet | str:
        """Read a packet and note it."""
        got = self.raw.read(timeout)
        self.note(f"{label + ' ' if label else ''}<- {show(got, self.peer.token)}")
        return got

    def expect(self, count: int, label: str = "") -> list[Packet | str]:
        """Read ``count`` packets (fewer when the connection closes or times out), noted."""
        out = []
        for _ in range(count):
            got = self.read(label)
            out.append(got)
            if isinstance(got, str):
                break
        return out

    def messages(self, count: int, label: str = "", *, ack: bool = True) -> list[Packet]:
        """Read ``count`` packets, noted sorted (deliveries from several subscriptions
        interleave as they please); QoS 1 deliveries are acknowledged when ``ack``."""
        got = [self.raw.read() for _ in range(count)]
        for line in sorted(show(g, self.peer.token) for g in got):
            self.note(f"{label + ' ' if label else ''}<- {line}")
        packets = [g for g in got if isinstance(g, Packet)]
        if ack:
            for p in packets:
                if p.name == "PUBLISH" and p.fields[2] == 1:
                    self.send(wire.puback(p.fields[5]))
        return packets

    def quiet(self, label: str = "") -> None:
        """Note what comes within the read timeout (``timeout``: nothing, as expected)."""
        self.read(label or "then")

    def state(self, label: str = "state") -> str:
        """Whether the connection is still open: PINGREQ, and its answer noted
        (``PINGRESP``: open, ``closed``: closed). Packets before the PINGRESP are noted too."""
        self.raw.send(wire.PINGREQ)
        seen = []
        while True:
            got = self.raw.read()
            seen.append(show(got, self.peer.token))
            if isinstance(got, str) or got.name == "PINGRESP":
                break
        self.note(f"{label} <- " + " | ".join(seen))
        return seen[-1]

    def until_closed(self, label: str = "") -> None:
        """Note every packet until the server closes the connection (or the read times
        out)."""
        seen = []
        while True:
            got = self.raw.read()
            seen.append(show(got, self.peer.token))
            if isinstance(got, str):
                break
        self.note(f"{label + ' ' if label else ''}until closed <- " + " | ".join(seen))

    def connect(self, client_id: str, label: str = "CONNECT", *, note: bool = True,
                **kwargs: Any) -> Packet | str:
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

    def close(self) -> None:
        self.raw.close()


@contextmanager
def session(peer: Peer, lines: list[str], name: str = "c", client_id: str | None = None, *,
            connect: bool = True, note_connack: bool = False,
            **kwargs: Any) -> Iterator[Session]:
    """An MQTT connection, CONNECTed (as ``client_id``, default the token and ``name``)
    unless ``connect`` is false."""
    s = Session(peer, lines, name)
    try:
        if connect:
            s.connect(client_id if client_id is not None else peer.token + name,
                      note=note_connack, **kwargs)
        yield s
    finally:
        s.close()


# -- 0-9-1 on the side ----------------------------------------------------------------------


@contextmanager
def amqp091(peer: Peer) -> Iterator[Any]:
    """A pika channel on ``peer`` (set-up, observations through 0-9-1)."""
    conn = pika.BlockingConnection(pika.URLParameters(peer.url091))
    try:
        yield conn.channel()
    finally:
        if conn.is_open:
            conn.close()


def queue_state(peer: Peer, queue: str) -> str:
    """``messages=N consumers=N`` of a queue, or the reply text when it does not exist."""
    with amqp091(peer) as ch:
        try:
            ok = ch.queue_declare(queue, passive=True).method
            return f"messages={ok.message_count} consumers={ok.consumer_count}"
        except pika.exceptions.ChannelClosedByBroker as exc:
            return normalise(f"{exc.reply_code} {exc.reply_text}", peer.token)


def queue_info(peer: Peer, queue: str, vhost: str = "/") -> str:
    """What the management API says of a queue: durable, auto_delete, exclusive, arguments,
    and its bindings (source, routing key)."""
    q = peer.api(f"/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}")
    if q is None:
        return "no such queue"
    bindings = peer.api(f"/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}/bindings")
    shown = sorted((b["source"], b["routing_key"]) for b in bindings or [])
    return normalise(f"durable={q['durable']} auto_delete={q['auto_delete']} "
                     f"exclusive={q['exclusive']} arguments={dict(sorted(q['arguments'].items()))}"
                     f" bindings={shown}", peer.token)


def wait_for(condition: Callable[[], Any], timeout: float = 10.0) -> Any:
    """``condition()`` once it is true (polled), else its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def cleanup(peer: Peer, queues: Sequence[str] = (), users: Sequence[str] = (),
            vhosts: Sequence[str] = ()) -> None:
    for name in users:
        with suppress(Exception):  # cleaning up is not an observation
            peer.delete_user(name)
    for name in vhosts:
        with suppress(Exception):
            peer.delete_vhost(name)
    if queues:
        with amqp091(peer) as ch:
            for name in queues:
                ch.queue_delete(name)


# -- golden files ---------------------------------------------------------------------------

Scenario = Callable[[Peer], list[str]]


def path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.txt"


def comments(name: str, version: str) -> list[str]:
    return [f"{version}'s MQTT plugin: what a raw MQTT client saw in the scenario {name} "
            "(tests/mqtt/scenarios.py; packets as tests/mqtt/differential.py shows them).",
            "embroker is compared with it offline (tests/mqtt/test_differential.py).",
            f"Re-record: {RECORD_COMMAND} {name}"]
