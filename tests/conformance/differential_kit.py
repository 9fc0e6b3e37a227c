"""What the differential harnesses of STOMP, MQTT and AMQP 1.0 share (``tests/<protocol>/
differential.py`` and ``test_differential.py``): each protocol's own files keep its client,
how it shows what it saw, and its scenarios.

- **Peers.** A scenario runs on a *peer*, embroker or the reference RabbitMQ: its AMQP 0-9-1
  URL, a unique name prefix (:attr:`Peer.token`), and the user and vhost commands scenarios
  set up with (:class:`EmbrokerAdmin`: straight on the broker; :class:`ReferenceAdmin`:
  through RabbitMQ's management API, :class:`ManagementAPI`). A protocol's peers add its
  address.
- **0-9-1 on the side.** :func:`amqp091`, :func:`queue_state`, :func:`declare_status`,
  :func:`queue_info` (the management API's view of a queue), :func:`wait_for`,
  :func:`cleanup`; what they report is normalised as the protocol's lines are (its
  ``normalise(text, token)``).
- **Sessions.** :class:`Session`: a raw connection (:class:`tests.raw_socket.RawSocket`) that
  notes what it reads, one line each; the protocol's session says how a packet or frame is
  shown and adds its commands.
- **Golden files.** :class:`GoldenFiles` (where a protocol's are, and the comments that head
  them) and :class:`GoldenFileTests`, the tests every protocol's golden files get: offline,
  embroker's lines equal each file; with the reference (:func:`reference_url`), each file
  equals a fresh RabbitMQ run. :mod:`tests.conformance.recording` records them.
"""

from __future__ import annotations

import base64
import difflib
import importlib
import json
import os
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar
from urllib.parse import quote, urlsplit

import pika
import pytest
from typing_extensions import Self

from embroker import Broker
from embroker.server import Server
from tests.raw_socket import Closed

from . import golden
from .recording import REFERENCE_ENV, server_properties

#: A protocol's normalisation of a line: the text, and the run's token to remove from it.
Normalise = Callable[[str, str], str]

_ROOT = Path(__file__).parents[2]


# -- peers ----------------------------------------------------------------------------------


class Peer(Protocol):
    """A broker to run a scenario on: its AMQP 0-9-1 URL and the user commands scenarios
    need (a protocol's own ``Peer`` adds its address)."""

    label: str
    #: The prefix of every name the scenario makes (normalised away in its lines).
    token: str
    host: str
    url091: str

    def add_user(self, name: str, password: str | None, configure: str, write: str, read: str,
                 vhost: str = "/") -> None:
        """A user (None: without a password) with these permissions on ``vhost``."""

    def set_topic_permissions(self, user: str, exchange: str, write: str, read: str,
                              vhost: str = "/") -> None: ...

    def delete_user(self, name: str) -> None: ...

    def add_vhost(self, name: str) -> None:
        """A vhost, guest with every permission on it (as RabbitMQ's management API gives
        them to the user who makes one)."""

    def delete_vhost(self, name: str) -> None: ...


class ViewedPeer(Peer, Protocol):
    """A peer whose management API a scenario reads."""

    def api(self, path: str) -> Any:
        """GET ``/api<path>`` of the management API, as JSON (None: 404)."""


class PeerAt(Protocol):
    """How a protocol's peer is made from the broker's URL (its ``ReferencePeer``)."""

    def __call__(self, url: str) -> Peer: ...


def new_token(prefix: str) -> str:
    """A run's unique name prefix: ``prefix``, six hex digits and a dash."""
    return f"{prefix}{uuid.uuid4().hex[:6]}-"


class ManagementAPI:
    """A management API (``base``: ``http://host:port/api``), as ``user``."""

    def __init__(self, base: str, user: str = "guest", password: str = "guest") -> None:
        self.base = base
        self._auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def get(self, path: str) -> Any:
        """GET ``path``, as JSON (None: 404)."""
        request = urllib.request.Request(self.base + path,
                                         headers={"Authorization": self._auth})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def call(self, method: str, path: str, body: Any = None) -> None:
        """``method path`` with ``body`` as JSON.

        Raises:
            RuntimeError: the API answered with an error.
            OSError: the API does not answer.
        """
        request = urllib.request.Request(
            self.base + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": self._auth, "content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10):
                return
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {path}: {exc.code} {exc.read()!r}") from None


class EmbrokerAdmin:
    """An embroker peer's part that every protocol's shares: its 0-9-1 URL, and users and
    vhosts made straight on its broker."""

    label = "embroker"

    def __init__(self, broker: Broker, server: Server, prefix: str) -> None:
        self.broker = broker
        self.token = new_token(prefix)
        self.host = server.host
        self.url091 = server.url

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


class ReferenceAdmin:
    """The reference RabbitMQ's part that every protocol's peer shares: its 0-9-1 URL, and
    users and vhosts made through its management API (port 15672), as the URL's user."""

    label = "RabbitMQ"

    def __init__(self, url: str, prefix: str) -> None:
        parts = urlsplit(url)
        self.token = new_token(prefix)
        self.host = parts.hostname or "127.0.0.1"
        self.url091 = url
        self.management = ManagementAPI(f"http://{self.host}:15672/api",
                                        parts.username or "guest", parts.password or "guest")

    def add_user(self, name: str, password: str | None, configure: str, write: str, read: str,
                 vhost: str = "/") -> None:
        body: dict[str, Any] = {"tags": ""}
        if password is None:
            body["password_hash"] = ""
        else:
            body["password"] = password
        self.management.call("PUT", f"/users/{quote(name, safe='')}", body)
        self.management.call(
            "PUT", f"/permissions/{quote(vhost, safe='')}/{quote(name, safe='')}",
            {"configure": configure, "write": write, "read": read})

    def set_topic_permissions(self, user: str, exchange: str, write: str, read: str,
                              vhost: str = "/") -> None:
        self.management.call(
            "PUT", f"/topic-permissions/{quote(vhost, safe='')}/{quote(user, safe='')}",
            {"exchange": exchange, "write": write, "read": read})

    def delete_user(self, name: str) -> None:
        self.management.call("DELETE", f"/users/{quote(name, safe='')}")

    def add_vhost(self, name: str) -> None:
        self.management.call("PUT", f"/vhosts/{quote(name, safe='')}")
        self.management.call("PUT", f"/permissions/{quote(name, safe='')}/guest",
                             {"configure": ".*", "write": ".*", "read": ".*"})

    def delete_vhost(self, name: str) -> None:
        self.management.call("DELETE", f"/vhosts/{quote(name, safe='')}")

    def api(self, path: str) -> Any:
        return self.management.get(path)


@contextmanager
def served(serve: Callable[[Broker], Server]) -> Iterator[tuple[Broker, Server]]:
    """A fresh broker and ``serve(broker)``'s server; after, the server has met no error and
    the broker's invariants hold."""
    broker = Broker()
    with serve(broker) as server:
        yield broker, server
        assert server.errors == []
    broker._check()


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


def queue_state(peer: Peer, queue: str, normalise: Normalise) -> str:
    """``messages=N consumers=N`` of a queue, or the reply code and text when it does not
    exist."""
    with amqp091(peer) as ch:
        try:
            ok = ch.queue_declare(queue, passive=True).method
            return f"messages={ok.message_count} consumers={ok.consumer_count}"
        except pika.exceptions.ChannelClosedByBroker as exc:
            return normalise(f"{exc.reply_code} {exc.reply_text}", peer.token)


def declare_status(peer: Peer, queue: str, normalise: Normalise, **kwargs: Any) -> str:
    """Whether re-declaring ``queue`` with ``kwargs`` (``queue_declare``'s) is accepted
    (``ok``) or refused (the reply code and text): how a scenario reads a queue's properties
    through 0-9-1."""
    with amqp091(peer) as ch:
        try:
            ch.queue_declare(queue, **kwargs)
            return "ok"
        except pika.exceptions.ChannelClosedByBroker as exc:
            return normalise(f"{exc.reply_code} {exc.reply_text}", peer.token)


def queue_info(peer: ViewedPeer, queue: str, normalise: Normalise, vhost: str = "/") -> str:
    """What the management API says of a queue: durable, auto_delete, exclusive, arguments,
    and its bindings (source, routing key)."""
    where = f"/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}"
    q = peer.api(where)
    if q is None:
        return "no such queue"
    bindings = peer.api(f"{where}/bindings")
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


def cleanup(peer: Peer, queues: Sequence[str] = (), *, exchanges: Sequence[str] = (),
            users: Sequence[str] = (), vhosts: Sequence[str] = ()) -> None:
    """Delete what a scenario made: users and vhosts (quietly), then queues and exchanges."""
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


# -- sessions -------------------------------------------------------------------------------

Got = TypeVar("Got")
Got_co = TypeVar("Got_co", covariant=True)


class RawReader(Protocol[Got_co]):
    """A raw client: what it reads, one packet or frame at a time."""

    def read(self) -> Got_co | Closed: ...

    def close(self) -> None: ...


class Session(Generic[Got]):
    """A raw connection of a scenario (``raw``), which writes its observations as lines:
    ``name: text``. What came is shown by :meth:`show` (the protocol's); ``closed`` is the
    server closing the connection, ``timeout`` nothing within the client's read timeout."""

    def __init__(self, peer: Peer, lines: list[str], name: str, raw: RawReader[Got]) -> None:
        self.peer, self.lines, self.name, self.raw = peer, lines, name, raw

    def show(self, got: Got | Closed) -> str:
        """What came, as a line."""
        raise NotImplementedError

    def note(self, text: str) -> None:
        self.lines.append(f"{self.name}: {text}")

    def read(self, label: str = "") -> Got | Closed:
        """Read a packet or frame and note it."""
        got = self.raw.read()
        self.note(f"{label + ' ' if label else ''}<- {self.show(got)}")
        return got

    def expect(self, count: int, label: str = "") -> list[Got | Closed]:
        """Read ``count`` packets or frames (fewer when the connection closes or times out),
        noted."""
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

    def messages(self, count: int, label: str = "") -> list[Got]:
        """Read ``count`` packets or frames, noted sorted (deliveries to several subscriptions
        interleave as they please)."""
        got = [self.raw.read() for _ in range(count)]
        for line in sorted(self.show(g) for g in got):
            self.note(f"{label + ' ' if label else ''}<- {line}")
        return [g for g in got if not isinstance(g, str)]

    def shown_until_closed(self, last: Callable[[Got], bool] = lambda got: False) -> list[str]:
        """Every packet or frame shown, until the server closes the connection (or the read
        times out), or until one ``last`` says ends it."""
        seen = []
        while True:
            got = self.raw.read()
            seen.append(self.show(got))
            if isinstance(got, str) or last(got):
                return seen

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- golden files ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GoldenFiles:
    """A protocol's golden files, ``golden/<scenario>.txt`` in its test package: RabbitMQ's
    lines, after comments saying what they are."""

    #: The protocol's test package (``tests.mqtt``): its scenarios, recorder and tests.
    package: str
    #: Whose lines they are, after RabbitMQ's version (``"MQTT plugin"``).
    plugin: str
    #: Who saw them (``"a raw MQTT client"``).
    observer: str
    #: How they are written, if the comments say it.
    shown: str = ""

    @property
    def directory(self) -> Path:
        return _ROOT.joinpath(*self.package.split("."), "golden")

    @property
    def record_command(self) -> str:
        return f"python -m {self.package}.record"

    def path(self, name: str) -> Path:
        return self.directory / f"{name}.txt"

    def names(self) -> set[str]:
        """The scenarios that have a golden file."""
        return {p.stem for p in self.directory.glob("*.txt")}

    def comments(self, name: str, version: str) -> list[str]:
        """The comments that head scenario ``name``'s file, recorded from ``version``."""
        folder = self.package.replace(".", "/")
        shown = f"; {self.shown}" if self.shown else ""
        return [f"{version}'s {self.plugin}: what {self.observer} saw in the scenario {name} "
                f"({folder}/scenarios.py{shown}).",
                f"embroker is compared with it offline ({folder}/test_differential.py).",
                f"Re-record: {self.record_command} {name}"]

    def recorded(self, name: str) -> list[str]:
        """RabbitMQ's lines for scenario ``name``; fails the test when there is no file."""
        lines = golden.read(self.path(name))
        if lines is None:
            pytest.fail(f"no golden file {golden.relative(self.path(name))}: record it with "
                        f"EMBROKER_REFERENCE_URL=amqp://guest:guest@127.0.0.1:5672/ "
                        f"{self.record_command} {name}", pytrace=False)
        return lines


def reference_url(problem: Callable[[str], str | None]) -> str:
    """The reference RabbitMQ's URL (``EMBROKER_REFERENCE_URL``): the test skips without one,
    and fails when ``problem(url)`` says why the reference cannot be used (a configured
    reference that does not answer is a broken setup, not a reason to check less)."""
    url = os.environ.get(REFERENCE_ENV)
    if not url:
        pytest.skip(f"{REFERENCE_ENV} is not set")
    if (why := problem(url)) is not None:
        pytest.fail(why, pytrace=False)
    return url


class GoldenFileTests:
    """The tests of a protocol's golden files. Its ``test_differential`` module subclasses
    this as ``TestGoldenFiles``, setting :attr:`files`, :attr:`scenarios`,
    :attr:`known_differences` and :attr:`reference_peer`, and gives two fixtures:
    ``embroker_peer`` (a peer on embroker serving the protocol) and ``reference`` (the
    reference's URL, from :func:`reference_url`)."""

    files: ClassVar[GoldenFiles]
    #: Each scenario by name: a function of a peer, its lines.
    scenarios: ClassVar[Mapping[str, Callable[[Any], list[str]]]]
    #: Where embroker differs from RabbitMQ on purpose, by scenario: the line embroker shows
    #: in place of RabbitMQ's.
    known_differences: ClassVar[Mapping[str, Mapping[str, str]]] = {}
    #: The protocol's peer on the reference RabbitMQ, made from its URL (at its port).
    reference_peer: ClassVar[PeerAt]

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "name" in metafunc.fixturenames:
            metafunc.parametrize("name", list(self.scenarios))

    def test_golden(self, name: str, embroker_peer: Any) -> None:
        """embroker's observations equal RabbitMQ's, as recorded in the scenario's golden
        file."""
        recorded = self.files.recorded(name)
        known = self.known_differences.get(name, {})
        seen = [known.get(line, line) for line in self.scenarios[name](embroker_peer)]
        if seen != recorded:
            pytest.fail("embroker differs from RabbitMQ:\n" + "\n".join(difflib.unified_diff(
                recorded, seen, fromfile=f"RabbitMQ ({golden.relative(self.files.path(name))})",
                tofile="embroker", lineterm="", n=1)), pytrace=False)

    def test_golden_file_is_what_rabbitmq_does(self, name: str, reference: str) -> None:
        """With the reference, each golden file still holds what RabbitMQ does."""
        assert self.scenarios[name](self.reference_peer(reference)) == \
            golden.read(self.files.path(name))

    def test_every_golden_file_belongs_to_a_scenario(self) -> None:
        assert self.files.names() == set(self.scenarios)

    def test_the_recorder_refuses_embroker_even_presenting_itself_as_rabbitmq(self) -> None:
        record = importlib.import_module(f"{self.files.package}.record")
        for broker in (Broker(), Broker(as_rabbitmq="3.10.8")):
            with broker.serve() as server:
                assert golden.says_embroker(server_properties(server.url))
                with pytest.raises(SystemExit) as refused:
                    record.main(["--url", server.url, "--check"])
                assert refused.value.code == 2
        assert not golden.says_embroker({"product": "RabbitMQ", "version": "3.10.8",
                                         "cluster_name": "rabbit@vm"})
