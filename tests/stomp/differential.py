"""STOMP differential scenarios: what a raw STOMP client (:mod:`tests.stomp.client`) observes
of embroker and of RabbitMQ 3.10.8's ``rabbitmq_stomp`` plugin, compared through golden files
recorded from RabbitMQ.

A scenario is ``def name(peer: Peer) -> list[str]``: it sets the broker up through AMQP 0-9-1
(pika) and ``peer``'s user commands, talks STOMP with :func:`stomp` connections, and returns
one line per observation. Its golden file, ``golden/<name>.txt``, holds RabbitMQ's lines;
offline embroker's lines are compared with it, and with ``EMBROKER_REFERENCE_URL`` the file is
checked against a fresh RabbitMQ run too. Record with ``python -m tests.stomp.record [NAME...]``.

How a frame is written in a line (:func:`show`): its command, then its headers as
``name:value`` strings *sorted by name* (a stable sort: repeated names keep their order; the
``header_order`` scenario alone writes them in the order they came, marked ``ordered``), then
its body (bytes ``repr``). Header names and values are as on the wire (escapes not read).
``closed`` is the server closing the connection; ``timeout`` is nothing within the client's read
timeout. After an ERROR, scenarios note whether the connection stays open: they send
``DISCONNECT receipt:alive`` and note what comes until the connection closes (a RECEIPT: it
was open; ``closed`` alone: it was closed already).

Normalised so that runs and brokers compare (:func:`normalise`), in header values and bodies:

- the run's unique name prefix (:attr:`Peer.token`) is removed;
- session ids ``session-<22 base64url chars>`` (in CONNECTED, and in MESSAGE's ``message-id``
  and ``ack``) become ``session-*``;
- server-named queues ``amq.gen-<22 chars>`` (``/temp-queue/`` reply-to, exclusive topic
  queues) become ``amq.gen-*``; ``stomp-subscription-<22 chars>`` (named from an md5 of the
  destination and subscription id) become ``stomp-subscription-*`` (the ``durable_topic``
  scenario checks the md5 derivation itself);
- ``content-length`` stays (a normalised name has the same length as the original), and so
  does ``server:RabbitMQ/3.10.8`` (embroker presents itself the same on STOMP).
"""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

import pika

from .client import Frame, RawStomp

GOLDEN_DIR = Path(__file__).parent / "golden"
RECORD_COMMAND = "python -m tests.stomp.record"
#: How long the client waits for a frame (an expected frame comes long before; a frame that
#: should not come is waited for this long).
READ_TIMEOUT = 1.0

_SESSION = re.compile(r"session-[A-Za-z0-9_-]{22}")
_GENERATED = re.compile(r"(amq\.gen|stomp-subscription)-[A-Za-z0-9_-]{22}")


class Peer(Protocol):
    """A broker to run a scenario on: its STOMP address, AMQP 0-9-1 URL and user commands."""

    label: str
    #: The prefix of every name the scenario makes (normalised away in its lines).
    token: str
    host: str
    stomp_port: int
    url091: str

    def add_user(self, name: str, password: str, configure: str, write: str, read: str,
                 vhost: str = "/") -> None: ...

    def delete_user(self, name: str) -> None: ...

    def add_vhost(self, name: str) -> None: ...

    def delete_vhost(self, name: str) -> None: ...


class EmbrokerPeer:
    label = "embroker"

    def __init__(self, broker: Any, server: Any) -> None:
        self.broker = broker
        self.token = f"s{uuid.uuid4().hex[:6]}-"
        self.host = server.host
        self.stomp_port = server.listener_port("stomp")
        self.url091 = server.url

    def add_user(self, name: str, password: str, configure: str, write: str, read: str,
                 vhost: str = "/") -> None:
        self.broker.add_user(name, password)
        self.broker.set_permissions(name, configure, write, read, vhost=vhost)

    def delete_user(self, name: str) -> None:
        self.broker.delete_user(name)

    def add_vhost(self, name: str) -> None:
        self.broker.add_vhost(name)

    def delete_vhost(self, name: str) -> None:
        self.broker.delete_vhost(name)


class ReferencePeer:
    """RabbitMQ: users and vhosts made through its management API (port 15672)."""

    label = "RabbitMQ"

    def __init__(self, url: str, stomp_port: int = 61613) -> None:
        parts = urlsplit(url)
        self.token = f"s{uuid.uuid4().hex[:6]}-"
        self.host = parts.hostname or "127.0.0.1"
        self.stomp_port = stomp_port
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

    def add_user(self, name: str, password: str, configure: str, write: str, read: str,
                 vhost: str = "/") -> None:
        self._http("PUT", f"/users/{quote(name, safe='')}", {"password": password, "tags": ""})
        self._http("PUT", f"/permissions/{quote(vhost, safe='')}/{quote(name, safe='')}",
                   {"configure": configure, "write": write, "read": read})

    def delete_user(self, name: str) -> None:
        self._http("DELETE", f"/users/{quote(name, safe='')}")

    def add_vhost(self, name: str) -> None:
        self._http("PUT", f"/vhosts/{quote(name, safe='')}")

    def delete_vhost(self, name: str) -> None:
        self._http("DELETE", f"/vhosts/{quote(name, safe='')}")


# -- normalising and showing ----------------------------------------------------------------


def normalise(text: str, token: str) -> str:
    text = text.replace(token, "")
    text = _SESSION.sub("session-*", text)
    return _GENERATED.sub(lambda m: m.group(1) + "-*", text)


def show(got: Frame | str, token: str, *, ordered: bool = False) -> str:
    """A frame as a line (module docstring), or ``closed``/``timeout``."""
    if isinstance(got, str):
        return got
    headers = got.headers if ordered else sorted(got.headers, key=lambda kv: kv[0])
    shown = [normalise(f"{k}:{v}", token) for k, v in headers]
    body = got.body
    with suppress(UnicodeDecodeError):
        body = normalise(body.decode(), token).encode()
    return f"{got.command}{' ordered' if ordered else ''} {shown!r} {body!r}"


# -- connections ----------------------------------------------------------------------------


class Session:
    """A :class:`RawStomp` connection of a scenario, which writes its observations as lines."""

    def __init__(self, peer: Peer, lines: list[str], name: str) -> None:
        self.peer, self.lines, self.name = peer, lines, name
        self.raw = RawStomp(peer.host, peer.stomp_port, timeout=READ_TIMEOUT)

    def note(self, text: str) -> None:
        self.lines.append(f"{self.name}: {text}")

    def send(self, command: str, headers: Sequence[tuple[str, str]] = (),
             body: bytes | str = b"", **kwargs: Any) -> None:
        self.raw.send(command, [(k, v) for k, v in headers], body, **kwargs)

    def read(self, label: str = "", *, ordered: bool = False) -> Frame | str:
        """Read a frame and note it."""
        got = self.raw.read()
        self.note(f"{label + ' ' if label else ''}<- {show(got, self.peer.token, ordered=ordered)}")
        return got

    def expect(self, count: int, label: str = "") -> list[Frame | str]:
        """Read ``count`` frames (fewer when the connection closes or times out), noted."""
        out = []
        for _ in range(count):
            got = self.read(label)
            out.append(got)
            if isinstance(got, str):
                break
        return out

    def quiet(self, label: str = "") -> None:
        """Note what comes within the read timeout (``timeout``: nothing, as expected)."""
        self.read(label or "then")

    def messages(self, count: int, label: str = "") -> list[Frame]:
        """Read ``count`` frames, noting them sorted by body (deliveries to several
        subscriptions interleave as they please)."""
        got = [self.raw.read() for _ in range(count)]
        shown = sorted(show(g, self.peer.token) for g in got)
        for line in shown:
            self.note(f"{label + ' ' if label else ''}<- {line}")
        return [g for g in got if isinstance(g, Frame)]

    def until_closed(self, label: str = "") -> None:
        """Note every frame until the server closes the connection (or the read times out),
        sorted: for what comes from two sources at once (a receipt and an asynchronous
        channel error)."""
        seen = []
        while True:
            got = self.raw.read()
            seen.append(show(got, self.peer.token))
            if isinstance(got, str):
                break
        self.note(f"{label + ' ' if label else ''}until closed <- "
                  + " | ".join([*sorted(seen[:-1]), seen[-1]]))

    def state(self) -> str:
        """Whether the connection is still open: send ``DISCONNECT receipt:alive`` and note
        what comes until the server closes (a RECEIPT: it was open and logged in; ``closed``
        at once: it was closed already). The connection is closed after."""
        self.raw.send("DISCONNECT", [("receipt", "alive")])
        seen = []
        while True:
            got = self.raw.read()
            seen.append(show(got, self.peer.token))
            if isinstance(got, str):
                break
        self.note("DISCONNECT receipt:alive <- " + " | ".join(seen))
        self.raw.close()
        return seen[0]

    def connect(self, label: str = "CONNECT", *, note: bool = True, ordered: bool = False,
                login: str | None = "guest", passcode: str | None = "guest",
                host: str | None = "/", version: str | None = "1.2", command: str = "CONNECT",
                extra: Sequence[tuple[str, str]] = ()) -> Frame | str:
        """Send CONNECT (headers left out when None) and read the answer, noted when ``note``
        or when it is no CONNECTED."""
        headers = [(k, v) for k, v in (("accept-version", version), ("host", host),
                                       ("login", login), ("passcode", passcode))
                   if v is not None]
        self.raw.send(command, headers + list(extra), escape_as=None)
        got = self.raw.read()
        if note or not (isinstance(got, Frame) and got.command == "CONNECTED"):
            self.note(f"{label} <- {show(got, self.peer.token, ordered=ordered)}")
        return got

    def close(self) -> None:
        self.raw.close()


@contextmanager
def session(peer: Peer, lines: list[str], name: str = "c", *, login: str | None = "guest",
            passcode: str | None = "guest", host: str | None = "/", version: str | None = "1.2",
            note_connected: bool = False,
            extra: Sequence[tuple[str, str]] = ()) -> Iterator[Session]:
    """A STOMP connection, logged in (:meth:`Session.connect`) unless ``login`` is ``"-"``."""
    s = Session(peer, lines, name)
    try:
        if login != "-":
            s.connect(note=note_connected, login=login, passcode=passcode, host=host,
                      version=version, extra=extra)
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


def declare_status(peer: Peer, queue: str, **kwargs: Any) -> str:
    """Whether re-declaring ``queue`` so is accepted (``ok``) or refused (the reply)."""
    with amqp091(peer) as ch:
        try:
            ch.queue_declare(queue, **kwargs)
            return "ok"
        except pika.exceptions.ChannelClosedByBroker as exc:
            return normalise(f"{exc.reply_code} {exc.reply_text}", peer.token)


def cleanup(peer: Peer, queues: Sequence[str] = (), exchanges: Sequence[str] = (),
            users: Sequence[str] = (), vhosts: Sequence[str] = ()) -> None:
    for name in users:
        with suppress(Exception):  # cleaning up is not an observation
            peer.delete_user(name)
    for name in vhosts:
        with suppress(Exception):
            peer.delete_vhost(name)
    if queues or exchanges:
        with amqp091(peer) as ch:
            for name in queues:
                ch.queue_delete(name)
            for name in exchanges:
                ch.exchange_delete(name)


# -- golden files ---------------------------------------------------------------------------

Scenario = Callable[[Peer], list[str]]


def path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.txt"


def comments(name: str, version: str) -> list[str]:
    return [f"{version}'s STOMP plugin: what a raw STOMP client saw in the scenario {name} "
            "(tests/stomp/scenarios.py; headers sorted by name unless 'ordered').",
            "embroker is compared with it offline (tests/stomp/test_differential.py).",
            f"Re-record: {RECORD_COMMAND} {name}"]
