"""STOMP differential scenarios: what a raw STOMP client (:mod:`tests.stomp.client`) observes
of embroker and of RabbitMQ 3.10.8's ``rabbitmq_stomp`` plugin, compared through golden files
recorded from RabbitMQ.

A scenario is ``def name(peer: Peer) -> list[str]``: it sets the broker up through AMQP 0-9-1
(pika) and ``peer``'s user commands, talks STOMP with :func:`stomp` connections, and returns
one line per observation. Its golden file, ``golden/<name>.txt``, holds RabbitMQ's lines;
offline embroker's lines are compared with it, and with ``EMBROKER_REFERENCE_URL`` the file is
checked against a fresh RabbitMQ run too. Record with ``python -m tests.stomp.record [NAME...]``.
Peers, the 0-9-1 side and golden files work as for every protocol
(:mod:`tests.conformance.differential_kit`); this module is STOMP's part.

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

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any, Protocol

from embroker import Broker
from embroker.server import Server
from tests.conformance import differential_kit as kit
from tests.raw_socket import Closed

from .client import Frame, RawStomp

GOLDEN = kit.GoldenFiles("tests.stomp", "STOMP plugin", "a raw STOMP client",
                         "headers sorted by name unless 'ordered'")
#: How long the client waits for a frame (an expected frame comes long before; a frame that
#: should not come is waited for this long).
READ_TIMEOUT = 1.0

_SESSION = re.compile(r"session-[A-Za-z0-9_-]{22}")
_GENERATED = re.compile(r"(amq\.gen|stomp-subscription)-[A-Za-z0-9_-]{22}")


class Peer(kit.Peer, Protocol):
    """A broker to run a scenario on (:class:`tests.conformance.differential_kit.Peer`): its
    STOMP port too."""

    stomp_port: int


class EmbrokerPeer(kit.EmbrokerAdmin):
    def __init__(self, broker: Broker, server: Server) -> None:
        super().__init__(broker, server, "s")
        self.stomp_port = server.listener_port("stomp")


class ReferencePeer(kit.ReferenceAdmin):
    """RabbitMQ: users and vhosts made through its management API (port 15672)."""

    def __init__(self, url: str, stomp_port: int = 61613) -> None:
        super().__init__(url, "s")
        self.stomp_port = stomp_port


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


class Session(kit.Session[Frame]):
    """A :class:`RawStomp` connection of a scenario, which writes its observations as lines."""

    raw: RawStomp

    def show(self, got: Frame | Closed) -> str:
        return show(got, self.peer.token)

    def send(self, command: str, headers: Sequence[tuple[str, str]] = (),
             body: bytes | str = b"", **kwargs: Any) -> None:
        self.raw.send(command, [(k, v) for k, v in headers], body, **kwargs)

    def read(self, label: str = "", *, ordered: bool = False) -> Frame | Closed:
        """Read a frame and note it (its headers in the order they came when ``ordered``)."""
        got = self.raw.read()
        self.note(f"{label + ' ' if label else ''}<- {show(got, self.peer.token, ordered=ordered)}")
        return got

    def until_closed(self, label: str = "") -> None:
        """Note every frame until the server closes the connection (or the read times out),
        sorted: for what comes from two sources at once (a receipt and an asynchronous
        channel error)."""
        seen = self.shown_until_closed()
        self.note(f"{label + ' ' if label else ''}until closed <- "
                  + " | ".join([*sorted(seen[:-1]), seen[-1]]))

    def state(self) -> str:
        """Whether the connection is still open: send ``DISCONNECT receipt:alive`` and note
        what comes until the server closes (a RECEIPT: it was open and logged in; ``closed``
        at once: it was closed already). The connection is closed after."""
        self.raw.send("DISCONNECT", [("receipt", "alive")])
        seen = self.shown_until_closed()
        self.note("DISCONNECT receipt:alive <- " + " | ".join(seen))
        self.raw.close()
        return seen[0]

    def connect(self, label: str = "CONNECT", *, note: bool = True, ordered: bool = False,
                login: str | None = "guest", passcode: str | None = "guest",
                host: str | None = "/", version: str | None = "1.2", command: str = "CONNECT",
                extra: Sequence[tuple[str, str]] = ()) -> Frame | Closed:
        """Send CONNECT (headers left out when None) and read the answer, noted when ``note``
        or when it is no CONNECTED."""
        got = self.raw.connect(login, passcode, host=host, accept_version=version,
                               command=command, extra=extra)
        if note or not (isinstance(got, Frame) and got.command == "CONNECTED"):
            self.note(f"{label} <- {show(got, self.peer.token, ordered=ordered)}")
        return got


@contextmanager
def session(peer: Peer, lines: list[str], name: str = "c", *, login: str | None = "guest",
            passcode: str | None = "guest", host: str | None = "/", version: str | None = "1.2",
            note_connected: bool = False,
            extra: Sequence[tuple[str, str]] = ()) -> Iterator[Session]:
    """A STOMP connection, logged in (:meth:`Session.connect`) unless ``login`` is ``"-"``."""
    with Session(peer, lines, name, RawStomp(peer.host, peer.stomp_port,
                                             timeout=READ_TIMEOUT)) as s:
        if login != "-":
            s.connect(note=note_connected, login=login, passcode=passcode, host=host,
                      version=version, extra=extra)
        yield s


# -- 0-9-1 on the side ----------------------------------------------------------------------

#: ``messages=N consumers=N`` of a queue, or the reply when it does not exist.
queue_state = partial(kit.queue_state, normalise=normalise)
#: Whether re-declaring a queue so is accepted (``ok``) or refused (the reply).
declare_status = partial(kit.declare_status, normalise=normalise)

Scenario = Callable[[Peer], list[str]]
