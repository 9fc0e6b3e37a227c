"""AMQP 1.0 differential scenarios: what proton observes of embroker and of RabbitMQ 3.10's 1.0
plugin, compared through golden files recorded from RabbitMQ.

A scenario is ``def name(peer: Peer) -> list[str]``: it sets the broker up through AMQP 0-9-1
(pika) and ``peer``'s user commands, then opens AMQP 1.0 links with :func:`probe`, one connection
each, and returns one line per observation. Its golden file, ``golden/<name>.txt``, holds
RabbitMQ's lines; offline embroker's lines are compared with it, and with
``EMBROKER_REFERENCE_URL`` the file is checked against a fresh RabbitMQ run too. Record with
``python -m tests.amqp10.record [NAME...]`` (see :mod:`tests.amqp10.record`).

What a probe reports, and how it is normalised so that the two brokers compare:

- the messages a receiver got, the outcomes a sender's messages got, and the first error
  (condition and description) the client saw on the link, its session or its connection;
- not *where* the error came: RabbitMQ 3.10 ends the session for a refused link (it hangs
  proton's blocking API; fixed in RabbitMQ 4, which refuses the link as Part 2 section 2.6.3
  says, and embroker does), and refuses a publish it may not make at the first transfer, where
  RabbitMQ 4 and embroker refuse the link when it attaches;
- RabbitMQ 3.10's descriptions carry its 0-9-1 reply name first (``ACCESS_REFUSED - ...``: the
  plugin runs over 0-9-1 channels); RabbitMQ 4's, and embroker's, are the explanation alone;
- the run's unique name prefix is removed.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

import pika
from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

GOLDEN_DIR = Path(__file__).parent / "golden"
RECORD_COMMAND = "python -m tests.amqp10.record"
_REPLY_NAME = re.compile(r"^[A-Z_]+ - ")


class Peer(Protocol):
    """A broker to run a scenario on: its AMQP URLs and the user commands scenarios need."""

    label: str
    #: The prefix of every name the scenario makes (normalised away in its lines).
    token: str
    url091: str
    #: The AMQP 1.0 URL, without credentials (each probe logs in as its own user).
    url10: str

    def add_user(self, name: str, password: str, configure: str, write: str,
                 read: str) -> None: ...

    def delete_user(self, name: str) -> None: ...


class EmbrokerPeer:
    label = "embroker"

    def __init__(self, broker: Any, server: Any) -> None:
        self.broker = broker
        self.token = f"d{uuid.uuid4().hex[:6]}-"
        self.url091 = server.url
        self.url10 = "amqp://" + server.amqp10_url.split("@", 1)[1]

    def add_user(self, name: str, password: str, configure: str, write: str, read: str) -> None:
        self.broker.add_user(name, password)
        self.broker.set_permissions(name, configure, write, read)

    def delete_user(self, name: str) -> None:
        self.broker.delete_user(name)


class ReferencePeer:
    """RabbitMQ: users made through its management API (``rabbitmq_management``, which CI
    enables), else with ``rabbitmqctl``."""

    label = "RabbitMQ"

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.token = f"d{uuid.uuid4().hex[:6]}-"
        self.url091 = url
        self.url10 = f"amqp://{parts.hostname or '127.0.0.1'}:{parts.port or 5672}"
        credentials = f"{parts.username or 'guest'}:{parts.password or 'guest'}"
        self._auth = "Basic " + base64.b64encode(credentials.encode()).decode()
        self._api = f"http://{parts.hostname or '127.0.0.1'}:15672/api"

    def _http(self, method: str, path: str, body: Any = None) -> bool:
        request = urllib.request.Request(
            self._api + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": self._auth, "content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10):
                return True
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {path}: {exc.code} {exc.read()!r}") from None
        except OSError:
            return False

    def _ctl(self, *args: str) -> None:
        ctl = shutil.which("rabbitmqctl")
        if ctl is None:
            raise RuntimeError("neither the management API nor rabbitmqctl is available to "
                               "make users on the reference")
        subprocess.run([ctl, "-q", *args], check=True, capture_output=True, timeout=120)

    def add_user(self, name: str, password: str, configure: str, write: str, read: str) -> None:
        if self._http("PUT", f"/users/{quote(name, safe='')}",
                      {"password": password, "tags": ""}):
            self._http("PUT", f"/permissions/%2F/{quote(name, safe='')}",
                       {"configure": configure, "write": write, "read": read})
            return
        self._ctl("add_user", name, password)
        self._ctl("set_permissions", "-p", "/", name, configure, write, read)

    def delete_user(self, name: str) -> None:
        if not self._http("DELETE", f"/users/{quote(name, safe='')}"):
            self._ctl("delete_user", name)


# -- probes -----------------------------------------------------------------------------------------


def probe(peer: Peer, role: str, address: str | None, *, user: str = "guest",
          password: str = "guest", send: Sequence[str] = (), receive: int = 0,
          copy: bool = False, durable: int = 0, subject: str | None = None,
          timeout: float = 5.0) -> list[Any]:
    """Open one link (``role``: ``"sender"`` or ``"receiver"``) on a connection of its own as
    ``user``, send ``send`` (strings, with ``subject``) or receive up to ``receive`` messages
    (browsing with ``copy``), and return what the client saw, normalised (module docstring).
    ``durable`` is the terminus durability (0 none, 1 configuration, 2 unsettled-state)."""
    handler = _Probe(peer.url10, user, password, role, address, list(send), receive, copy,
                     durable, subject, timeout)
    Container(handler).run()
    return [_normalise(event, peer.token) for event in handler.events]


def _normalise(event: Any, token: str) -> Any:
    if isinstance(event, tuple):
        return tuple(_normalise(part, token) for part in event)
    if isinstance(event, str):
        return _REPLY_NAME.sub("", event).replace(token, "")
    return event


class _Probe(MessagingHandler):
    """The client side of :func:`probe`."""

    def __init__(self, url: str, user: str, password: str, role: str,
                 address: str | None, send: list[str], receive: int, copy: bool,
                 durable: int, subject: str | None, timeout: float) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=True)
        self.url, self.user, self.password = url, user, password
        self.role, self.address, self.to_send, self.receive = role, address, send, receive
        self.copy, self.durable, self.subject, self.timeout = copy, durable, subject, timeout
        self.events: list[Any] = []
        self.outstanding = 0
        self.finished = False

    def on_start(self, event: Any) -> None:
        self.conn = event.container.connect(self.url, user=self.user,
                                            password=self.password, allowed_mechs="PLAIN")
        container = event.container
        if self.role == "sender":
            self.link = container.create_sender(self.conn, self.address)
            self.link.target.durability = self.durable
        else:
            self.link = container.create_receiver(self.conn, self.address)
            self.link.source.durability = self.durable
            if self.copy:
                self.link.source.distribution_mode = 1  # proton: 1 copy, 2 move
        self.timer = container.schedule(self.timeout, self)

    def done(self) -> None:
        if not self.finished:
            self.finished = True
            self.timer.cancel()
            self.conn.close()

    def on_timer_task(self, event: Any) -> None:
        self.events.append("timeout")
        self.finished = True
        self.conn.close()

    def on_link_opened(self, event: Any) -> None:
        if self.role == "receiver":
            if event.link.remote_source is None or (event.link.remote_source.address is None \
                    and not event.link.remote_source.dynamic):
                return  # refused: the detach follows
            if self.receive:
                event.link.flow(self.receive)
            else:
                self.done()

    def on_sendable(self, event: Any) -> None:
        if self.role != "sender" or event.link.remote_target is None:
            return
        if not self.to_send and not self.outstanding:
            self.done()
        while self.to_send and event.sender.credit:
            event.sender.send(Message(body=self.to_send.pop(0), subject=self.subject))
            self.outstanding += 1

    def _settled(self, outcome: Any) -> None:
        self.events.append(outcome)
        self.outstanding -= 1
        if not self.outstanding and not self.to_send:
            self.done()

    def on_accepted(self, event: Any) -> None:
        self._settled("accepted")

    def on_released(self, event: Any) -> None:
        self._settled("released")

    def on_rejected(self, event: Any) -> None:
        condition = event.delivery.remote.condition
        self._settled(("rejected", condition and condition.name,
                       condition and condition.description))

    def on_message(self, event: Any) -> None:
        body = event.message.body
        self.events.append(("message", bytes(body) if isinstance(body, memoryview) else body))
        if not event.delivery.settled:
            self.accept(event.delivery)
        self.receive -= 1
        if not self.receive:
            self.done()

    def _error(self, endpoint: Any) -> None:
        condition = endpoint.remote_condition
        if condition is not None and not self.finished:
            self.events.append(("error", condition.name, condition.description))
        self.done()

    def on_link_remote_close(self, event: Any) -> None:
        self._error(event.link)

    def on_link_error(self, event: Any) -> None:
        pass  # reported by on_link_remote_close

    def on_session_remote_close(self, event: Any) -> None:
        self._error(event.session)

    def on_session_error(self, event: Any) -> None:
        pass

    def on_connection_remote_close(self, event: Any) -> None:
        self._error(event.connection)

    def on_connection_error(self, event: Any) -> None:
        pass

    def on_transport_error(self, event: Any) -> None:
        condition = event.transport.condition
        if not self.finished:
            self.events.append(("transport error", condition and condition.name))
        self.finished = True



# -- 0-9-1 on the side ------------------------------------------------------------------------------


@contextmanager
def amqp091(peer: Peer) -> Iterator[Any]:
    """A pika channel on ``peer`` (for set-up and for observations through 0-9-1)."""
    conn = pika.BlockingConnection(pika.URLParameters(peer.url091))
    try:
        yield conn.channel()
    finally:
        if conn.is_open:
            conn.close()


def declare_status(peer: Peer, queue: str, **kwargs: Any) -> str:
    """Whether re-declaring ``queue`` with these properties is accepted (``ok``) or refused (the
    reply text): how a scenario reads a queue's durability through 0-9-1."""
    with amqp091(peer) as ch:
        try:
            ch.queue_declare(queue, **kwargs)
            return "ok"
        except pika.exceptions.ChannelClosedByBroker as exc:
            return _normalise(exc.reply_text, peer.token)


def cleanup(peer: Peer, queues: Sequence[str] = (), users: Sequence[str] = ()) -> None:
    for name in users:
        with suppress(Exception):  # cleaning up is not an observation
            peer.delete_user(name)
    if queues:
        with amqp091(peer) as ch:
            for name in queues:
                ch.queue_delete(name)


# -- golden files ---------------------------------------------------------------------------------

Scenario = Callable[[Peer], list[str]]


def path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.txt"


def comments(name: str, version: str) -> list[str]:
    return [f"{version}'s AMQP 1.0 plugin: what proton saw in the scenario {name} "
            "(tests/amqp10/scenarios.py).",
            "embroker is compared with it offline (tests/amqp10/test_differential.py).",
            f"Re-record: {RECORD_COMMAND} {name}"]


def line(label: str, events: list[Any]) -> str:
    return f"{label} -> {events!r}"
