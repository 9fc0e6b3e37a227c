"""AMQP 1.0 differential scenarios: what proton observes of embroker and of RabbitMQ 3.10's 1.0
plugin, compared through golden files recorded from RabbitMQ.

A scenario is ``def name(peer: Peer) -> list[str]``: it sets the broker up through AMQP 0-9-1
(pika) and ``peer``'s user commands, then opens AMQP 1.0 links with :func:`probe`, one connection
each, and returns one line per observation. Its golden file, ``golden/<name>.txt``, holds
RabbitMQ's lines; offline embroker's lines are compared with it, and with
``EMBROKER_REFERENCE_URL`` the file is checked against a fresh RabbitMQ run too. Record with
``python -m tests.amqp10.record [NAME...]`` (see :mod:`tests.amqp10.record`).
Peers, the 0-9-1 side and golden files work as for every protocol
(:mod:`tests.conformance.differential_kit`); this module is AMQP 1.0's part.

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

import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from embroker import Broker
from embroker.server import Server
from tests.conformance import differential_kit as kit

GOLDEN = kit.GoldenFiles("tests.amqp10", "AMQP 1.0 plugin", "proton")
_REPLY_NAME = re.compile(r"^[A-Z_]+ - ")


class Peer(kit.Peer, Protocol):
    """A broker to run a scenario on (:class:`tests.conformance.differential_kit.Peer`): its
    AMQP 1.0 URL too."""

    #: The AMQP 1.0 URL, without credentials (each probe logs in as its own user).
    url10: str


class EmbrokerPeer(kit.EmbrokerAdmin):
    def __init__(self, broker: Broker, server: Server) -> None:
        super().__init__(broker, server, "d")
        self.url10 = "amqp://" + server.amqp10_url.split("@", 1)[1]


class ReferencePeer(kit.ReferenceAdmin):
    """RabbitMQ: users made through its management API (``rabbitmq_management``, which CI
    enables), else with ``rabbitmqctl``."""

    def __init__(self, url: str) -> None:
        super().__init__(url, "d")
        parts = urlsplit(url)
        self.url10 = f"amqp://{parts.hostname or '127.0.0.1'}:{parts.port or 5672}"

    def _ctl(self, *args: str) -> None:
        ctl = shutil.which("rabbitmqctl")
        if ctl is None:
            raise RuntimeError("neither the management API nor rabbitmqctl is available to "
                               "make users on the reference")
        subprocess.run([ctl, "-q", *args], check=True, capture_output=True, timeout=120)

    def add_user(self, name: str, password: str | None, configure: str, write: str, read: str,
                 vhost: str = "/") -> None:
        try:
            super().add_user(name, password, configure, write, read, vhost)
        except OSError:  # (the management API does not answer)
            assert password is not None, "rabbitmqctl makes users with a password"
            self._ctl("add_user", name, password)
            self._ctl("set_permissions", "-p", vhost, name, configure, write, read)

    def delete_user(self, name: str) -> None:
        try:
            super().delete_user(name)
        except OSError:
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


def declare_status(peer: Peer, queue: str, **kwargs: Any) -> str:
    """Whether re-declaring ``queue`` with these properties is accepted (``ok``) or refused (the
    reply text alone, normalised as the probes' are): how a scenario reads a queue's durability
    through 0-9-1."""
    return kit.declare_status(
        peer, queue, lambda reply, token: _normalise(reply.partition(" ")[2], token), **kwargs)


Scenario = Callable[[Peer], list[str]]


def line(label: str, events: list[Any]) -> str:
    return f"{label} -> {events!r}"
