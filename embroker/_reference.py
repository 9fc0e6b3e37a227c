"""Reference mode: the same tests and helpers against a real RabbitMQ.

A :class:`ReferenceBroker` stands where an embroker :class:`~embroker.Broker` stands in a test
(``--embroker-reference URL``), so that ``published``, ``assert_routed``, ``queue_messages``,
``assert_dead_lettered`` and friends work against RabbitMQ:

- each test gets **its own virtual host**, created with the firehose tracer on and deleted after
  the test, through the management HTTP API when the node offers it, else with ``rabbitmqctl``
  (:func:`find_admin`; the report header says which);
- **routing decisions** come from RabbitMQ's firehose: a queue bound to ``amq.rabbitmq.trace``
  receives a copy of each publish with the queues it was routed to (``routed_queues``); reading
  them is settled by a marker publish (everything traced before it has been read when the marker
  comes back);
- **queue contents** are read without consuming them: ``basic.get`` without acknowledgement,
  then the channel closes and RabbitMQ puts them back where they were (marked redelivered, as
  any requeued message: RabbitMQ has no way to look without taking);
- **dead-lettered messages** are found by their ``x-death`` header, in the queues that hold
  them (and in deliveries the firehose reports);
- ``route``/``assert_routes`` publish probes in a scratch copy of the test's vhost (management
  API only), so nothing reaches the test's queues.

What RabbitMQ does not report skips the test that asks for it, with the reason
(:class:`~embroker.testing.NeedsEmbroker`): the virtual clock, ``explain()``, a message's history,
whether a publish was mandatory or a queue refused it.

Uses pika (a test dependency).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, final

from .errors import PolicyError
from .model import PROPERTY_NAMES, Message
from .model._message import MessageFields

if TYPE_CHECKING:
    import pika
    from pika.adapters.blocking_connection import BlockingChannel

    from .model import Outcome

__all__ = ["Admin", "ManagementAdmin", "RabbitmqctlAdmin", "ReferenceBroker", "ReferenceDecision",
           "find_admin"]

_TIMEOUT = 10.0


def _needs(what: str) -> Exception:
    from .testing import NeedsEmbroker
    return NeedsEmbroker(what)


# -- creating virtual hosts ---------------------------------------------------------------------

class _Target(NamedTuple):
    host: str
    port: int
    user: str
    password: str
    vhost: str
    scheme: str


def _parse(url: str) -> _Target:
    parts = urllib.parse.urlsplit(url)
    vhost = urllib.parse.unquote(parts.path[1:]) if len(parts.path) > 1 else "/"
    return _Target(parts.hostname or "localhost", parts.port or 5672,
                   urllib.parse.unquote(parts.username or "guest"),
                   urllib.parse.unquote(parts.password or "guest"), vhost, parts.scheme)


def _url_for(url: str, vhost: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + urllib.parse.quote(vhost, safe="")))


class Admin:
    """A way to create and delete virtual hosts on the reference node."""

    #: How the report header names it.
    description = ""

    def create_vhost(self, name: str, user: str) -> None:
        raise NotImplementedError

    def delete_vhost(self, name: str) -> None:
        raise NotImplementedError

    def queues(self, vhost: str) -> list[str]:
        """The names of the queues of ``vhost``."""
        raise NotImplementedError

    def unacked(self, vhost: str, queue: str) -> int | None:
        """Messages of ``queue`` delivered and not acknowledged, when known live."""
        return None

    def definitions(self, vhost: str) -> dict[str, Any] | None:
        """``vhost``'s definitions (exchanges, queues, bindings), when the admin can export."""
        return None

    def import_definitions(self, vhost: str, definitions: Mapping[str, Any]) -> None:
        raise _needs("copying a vhost's topology needs RabbitMQ's management API")

    def set_policy(self, vhost: str, name: str, pattern: str, definition: Mapping[str, Any], *,
                   priority: int | float, apply_to: str, operator: bool = False) -> None:
        """Set a policy (or an operator policy) in ``vhost``; :class:`PolicyError` with
        RabbitMQ's reason when it refuses."""
        raise NotImplementedError

    def user_exists(self, name: str) -> bool:
        raise NotImplementedError

    def add_user(self, name: str, password: str, tags: tuple[str, ...], vhost: str,
                 permissions: tuple[str, str, str]) -> None:
        """Make user ``name`` with ``tags``, and its permissions in ``vhost``."""
        raise NotImplementedError

    def delete_user(self, name: str) -> None:
        raise NotImplementedError


@final
class ManagementAdmin(Admin):
    """The management HTTP API (``rabbitmq_management``)."""

    def __init__(self, base: str, user: str, password: str) -> None:
        self.base = base.rstrip("/")
        self._auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.description = f"the management HTTP API ({self.base})"

    def _call(self, method: str, path: str, body: Any = None, timeout: float = _TIMEOUT) -> Any:
        request = urllib.request.Request(
            self.base + path, method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": self._auth, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    @staticmethod
    def _q(name: str) -> str:
        return urllib.parse.quote(name, safe="")

    def answers(self) -> bool:
        try:
            return bool(self._call("GET", "/overview", timeout=2))
        except (OSError, ValueError):
            return False

    def create_vhost(self, name: str, user: str) -> None:
        self._call("PUT", f"/vhosts/{self._q(name)}", {"tracing": True})
        self._call("PUT", f"/permissions/{self._q(name)}/{self._q(user)}",
                   {"configure": ".*", "write": ".*", "read": ".*"})

    def delete_vhost(self, name: str) -> None:
        with contextlib.suppress(urllib.error.HTTPError):
            self._call("DELETE", f"/vhosts/{self._q(name)}")

    def queues(self, vhost: str) -> list[str]:
        return sorted(q["name"] for q in self._call("GET", f"/queues/{self._q(vhost)}?columns=name"))

    def definitions(self, vhost: str) -> dict[str, Any] | None:
        found: dict[str, Any] = self._call("GET", f"/definitions/{self._q(vhost)}")
        return found

    def import_definitions(self, vhost: str, definitions: Mapping[str, Any]) -> None:
        self._call("POST", f"/definitions/{self._q(vhost)}", dict(definitions))

    def user_exists(self, name: str) -> bool:
        try:
            self._call("GET", f"/users/{self._q(name)}")
        except urllib.error.HTTPError as refused:
            if refused.code == 404:
                return False
            raise
        return True

    def add_user(self, name: str, password: str, tags: tuple[str, ...], vhost: str,
                 permissions: tuple[str, str, str]) -> None:
        self._call("PUT", f"/users/{self._q(name)}", {"password": password,
                                                       "tags": ",".join(tags)})
        configure, write, read = permissions
        self._call("PUT", f"/permissions/{self._q(vhost)}/{self._q(name)}",
                   {"configure": configure, "write": write, "read": read})

    def delete_user(self, name: str) -> None:
        with contextlib.suppress(urllib.error.HTTPError):
            self._call("DELETE", f"/users/{self._q(name)}")

    def set_policy(self, vhost: str, name: str, pattern: str, definition: Mapping[str, Any], *,
                   priority: int | float, apply_to: str, operator: bool = False) -> None:
        kind = "operator-policies" if operator else "policies"
        try:
            self._call("PUT", f"/{kind}/{self._q(vhost)}/{self._q(name)}",
                       {"pattern": pattern, "definition": dict(definition),
                        "priority": priority, "apply-to": apply_to})
        except urllib.error.HTTPError as refused:
            raise _policy_error(_management_reason(refused)) from None


@final
class RabbitmqctlAdmin(Admin):
    """``rabbitmqctl`` on the machine the tests run on (the node must be local)."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.description = f"rabbitmqctl ({command})"

    def _run(self, *args: str) -> str:
        done = subprocess.run([self.command, "-q", *args], capture_output=True, text=True,
                              timeout=60, check=False)
        if done.returncode:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def answers(self) -> bool:
        try:
            self._run("list_vhosts")
        except (OSError, RuntimeError, subprocess.SubprocessError):
            return False
        return True

    def create_vhost(self, name: str, user: str) -> None:
        self._run("add_vhost", name)
        self._run("set_permissions", "-p", name, user, ".*", ".*", ".*")
        self._run("trace_on", "-p", name)

    def delete_vhost(self, name: str) -> None:
        with contextlib.suppress(RuntimeError):
            self._run("delete_vhost", name)

    def user_exists(self, name: str) -> bool:
        return name in (line.split("\t")[0] for line in
                        self._run("list_users", "--no-table-headers").splitlines())

    def add_user(self, name: str, password: str, tags: tuple[str, ...], vhost: str,
                 permissions: tuple[str, str, str]) -> None:
        self._run("add_user", name, password)
        self._run("set_user_tags", name, *tags)
        self._run("set_permissions", "-p", vhost, name, *permissions)

    def delete_user(self, name: str) -> None:
        with contextlib.suppress(RuntimeError):
            self._run("delete_user", name)

    def queues(self, vhost: str) -> list[str]:
        return sorted(line.split("\t")[0] for line in
                      self._run("list_queues", "-p", vhost, "--no-table-headers", "name")
                      .splitlines() if line.strip())

    def set_policy(self, vhost: str, name: str, pattern: str, definition: Mapping[str, Any], *,
                   priority: int | float, apply_to: str, operator: bool = False) -> None:
        try:
            self._run("set_operator_policy" if operator else "set_policy", "-p", vhost,
                      "--priority", str(priority), "--apply-to", apply_to, name, pattern,
                      json.dumps(dict(definition)))
        except RuntimeError as refused:
            raise _policy_error(str(refused).partition("Error:\n")[2] or str(refused)) from None

    def unacked(self, vhost: str, queue: str) -> int | None:
        for line in self._run("list_queues", "-p", vhost, "--no-table-headers", "name",
                              "messages_unacknowledged").splitlines():
            name, _, count = line.partition("\t")
            if name == queue and count.strip().isdigit():
                return int(count)
        return None


def _management_reason(refused: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(refused.read() or b"{}")
    except ValueError:
        body = {}
    return str(body.get("reason") or refused)


def _policy_error(text: str) -> PolicyError:
    # RabbitMQ's text is "Validation failed", a blank line, then the reason (as embroker's).
    text = text.strip()
    _, blank, reason = text.partition("\n\n")
    return PolicyError(text, reason if blank else None)


def find_admin(url: str, management_url: str | None = None) -> Admin | None:
    """How to create virtual hosts on the node of ``url``: its management API (at
    ``management_url``, by default ``http://HOST:15672/api`` with the URL's credentials), else
    ``rabbitmqctl`` if it is installed and reaches the node; ``None`` when neither does."""
    target = _parse(url)
    base = management_url or f"http://{target.host}:15672/api"
    management = ManagementAdmin(base, target.user, target.password)
    if management.answers():
        return management
    command = shutil.which("rabbitmqctl")
    if command is not None and target.host in ("localhost", "127.0.0.1", "::1"):
        ctl = RabbitmqctlAdmin(command)
        if ctl.answers():
            return ctl
    return None


# -- decisions from the firehose ----------------------------------------------------------------

@final
class ReferenceDecision(MessageFields):
    """A routing decision as RabbitMQ's firehose reports it: the publish and the queues it was
    routed to. The attributes the helpers read are those of :class:`~embroker.RoutingDecision`;
    what RabbitMQ does not report raises :class:`~embroker.testing.NeedsEmbroker`."""

    __slots__ = ("dead_letter", "exchange", "keys", "message", "queues", "vhost")

    def __init__(self, exchange: str, keys: tuple[str, ...], queues: tuple[str, ...],
                 properties: dict[str, Any], body: bytes, *,
                 dead_letter: tuple[str, str] | None = None) -> None:
        self.vhost = "/"  # the test's own vhost stands for "/"
        self.exchange = exchange
        self.keys = keys or ("",)
        self.queues = queues
        self.dead_letter = dead_letter
        self.message = Message(exchange, self.keys[0], properties, body,
                               routing_keys=self.keys if len(self.keys) > 1 else None)

    mandatory = False
    error = None

    @property
    def refused(self) -> tuple[tuple[str, str], ...]:
        raise _needs("whether a queue refused a publish is not in RabbitMQ's firehose")

    @property
    def outcome(self) -> Outcome:
        """``"routed"`` or ``"unroutable"`` (the firehose does not say whether a publish was
        mandatory, nor whether a queue refused it)."""
        return "routed" if self.queues else "unroutable"

    @property
    def routed(self) -> bool:
        return bool(self.queues)

    def json(self) -> Any:
        return json.loads(self.message.body)

    def explain(self) -> str:
        raise _needs("explain() tells embroker's routing model")

    def history(self) -> list[Any]:
        raise _needs("a message's history is recorded by embroker's model")

    def fate(self) -> list[Any]:
        raise _needs("a message's fate is recorded by embroker's model")

    @property
    def nacked(self) -> bool:
        raise _needs("whether a publish was nacked is not in RabbitMQ's firehose")

    def __repr__(self) -> str:
        target = f"queues {list(self.queues)}" if self.queues else self.outcome
        return (f"<RoutingDecision exchange={self.exchange!r} routing_key={self.routing_key!r}"
                f" -> {target} (RabbitMQ)>")


def _properties(props: Any) -> dict[str, Any]:
    """pika's BasicProperties (or the firehose's table) as embroker's properties dict."""
    if isinstance(props, Mapping):
        return {k: v for k, v in props.items() if k in PROPERTY_NAMES and v is not None}
    return {name: getattr(props, name) for name in PROPERTY_NAMES
            if getattr(props, name, None) is not None}


def _dead_letter_of(properties: Mapping[str, Any]) -> tuple[str, str] | None:
    deaths = (properties.get("headers") or {}).get("x-death")
    if isinstance(deaths, list) and deaths and isinstance(deaths[0], Mapping):
        queue, reason = deaths[0].get("queue"), deaths[0].get("reason")
        if isinstance(queue, str) and isinstance(reason, str):
            return queue, reason
    return None


@final
class ReferenceBroker:
    """A real RabbitMQ, one virtual host of it for one test, behind the testing helpers.

    Args:
        url: the reference node (``amqp://guest:guest@127.0.0.1:5672/``).
        admin: how to create the vhost (:func:`find_admin`).
        name: a hint for the vhost's name (the test's name).
    """

    def __init__(self, url: str, admin: Admin, name: str = "test") -> None:
        import pika  # a test dependency: only reference mode needs it

        self._pika = pika
        self.admin = admin
        self.target = _parse(url)
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)[:60].strip("-") or "test"
        self.vhost = f"embroker-{slug}-{uuid.uuid4().hex[:8]}"
        #: The AMQP URL of this test's vhost.
        self.url = _url_for(url, self.vhost)
        self._base_url = url
        self._marker = f"embroker.settle.{uuid.uuid4().hex}"
        self._markers = 0
        self._decisions: list[ReferenceDecision] = []
        self._dead: dict[tuple[Any, ...], ReferenceDecision] = {}
        self._opened: list[pika.BlockingConnection] = []
        self._users: list[str] = []  # made for this test (url_as): deleted after it
        admin.create_vhost(self.vhost, self.target.user)
        try:
            self._connection = self._connect("embroker-reference")
            self._channel = self._connection.channel()
            self._firehose = self._channel.queue_declare("", exclusive=True).method.queue
            self._channel.queue_bind(self._firehose, "amq.rabbitmq.trace", "publish.#")
            self._channel.queue_bind(self._firehose, "amq.rabbitmq.trace", "deliver.#")
        except BaseException:
            admin.delete_vhost(self.vhost)
            raise

    def __repr__(self) -> str:
        return f"<ReferenceBroker vhost {self.vhost!r} on {self.target.host}:{self.target.port}>"

    def _connect(self, name: str) -> pika.BlockingConnection:
        params = self._pika.URLParameters(self.url)
        params.client_properties = {"connection_name": name}
        return self._pika.BlockingConnection(params)

    def connect(self) -> pika.BlockingConnection:
        """A pika connection to this test's vhost (closed after the test). pika's channel has
        the method names of embroker's in-process client."""
        connection = self._connect("embroker-reference-test")
        self._opened.append(connection)
        return connection

    def close(self) -> None:
        """Close the connections, delete the users made for the test and the vhost (with
        everything in it)."""
        for connection in [*self._opened, self._connection]:
            with contextlib.suppress(Exception):
                if connection.is_open:
                    connection.close()
        for user in self._users:
            self.admin.delete_user(user)
        self.admin.delete_vhost(self.vhost)

    def user_url(self, user: str, password: str, *, vhost: str = "/",
                 permissions: tuple[str, str, str] = (".*", ".*", ".*"),
                 tags: tuple[str, ...] = ()) -> str:
        """:func:`embroker.testing.url_as` on the reference: a user of the node, made for this
        test (deleted after it) with its permissions in this test's vhost. A user the node had
        already is not touched: a test's users are its own.

        Raises:
            ValueError: the node has a user of that name that this test did not make.
        """
        name = self._vhost(vhost)
        if user in self._users:
            self.admin.delete_user(user)
            self._users.remove(user)
        elif self.admin.user_exists(user):
            raise ValueError(f"the reference RabbitMQ has a user {user!r} already: a test makes "
                             "users of its own (choose another name)")
        self.admin.add_user(user, password, tags, name, permissions)
        self._users.append(user)
        parts = urllib.parse.urlsplit(self.url)
        address = parts.netloc.rpartition("@")[2]
        credentials = f"{urllib.parse.quote(user, safe='')}:{urllib.parse.quote(password, safe='')}"
        return urllib.parse.urlunsplit(parts._replace(netloc=f"{credentials}@{address}"))

    # -- the trace -------------------------------------------------------------------------------

    def _drain(self, until: str | None = None, timeout: float = _TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while True:
            method, props, body = self._channel.basic_get(self._firehose, auto_ack=True)
            if method is None:
                if until is None or time.monotonic() >= deadline:
                    return
                self._connection.process_data_events(0.002)
                continue
            headers = props.headers or {}
            if method.routing_key.startswith("publish."):
                keys = tuple(str(k) for k in headers.get("routing_keys") or ())
                if keys and keys[0].startswith(self._marker):
                    if keys[0] == until:
                        return
                    continue
                properties = _properties(headers.get("properties") or {})
                self._decisions.append(ReferenceDecision(
                    str(headers.get("exchange_name", "")), keys,
                    tuple(str(q) for q in headers.get("routed_queues") or ()), properties, body))
            else:
                properties = _properties(headers.get("properties") or {})
                queue = method.routing_key[len("deliver."):]
                self._saw_dead_letter(queue, tuple(str(k) for k in headers.get("routing_keys")
                                                   or ()), properties, body)

    def _saw_dead_letter(self, queue: str, keys: tuple[str, ...], properties: dict[str, Any],
                         body: bytes) -> None:
        origin = _dead_letter_of(properties)
        if origin is None:
            return
        deaths = properties.get("headers", {}).get("x-death")
        key = (queue, body, repr(deaths))
        if key not in self._dead:
            exchange = ""
            self._dead[key] = ReferenceDecision(exchange, keys, (queue,), properties, body,
                                                dead_letter=origin)

    def settle(self, timeout: float = 5.0) -> None:
        """Read every routing decision RabbitMQ traced so far (a marker publish goes through
        the firehose after them)."""
        self._markers += 1
        marker = f"{self._marker}.{self._markers}"
        self._channel.basic_publish("amq.direct", marker, b"")
        self._drain(until=marker, timeout=timeout)

    async def settle_async(self, timeout: float = 5.0) -> None:
        """:meth:`settle` for asyncio tests (the event loop runs while it waits)."""
        await asyncio.get_running_loop().run_in_executor(None, self.settle, timeout)

    async def wait_until_drained_async(self, queue: str, timeout: float = 5.0, *,
                                       vhost: str = "/") -> None:
        """:meth:`wait_until_drained` for asyncio tests."""
        await asyncio.get_running_loop().run_in_executor(
            None, lambda: self.wait_until_drained(queue, timeout, vhost=vhost))

    @property
    def trace(self) -> list[ReferenceDecision]:
        """The publishes RabbitMQ traced in this vhost, oldest first, and the dead-lettered
        messages found so far."""
        self.settle()
        return [*self._decisions, *self._dead.values()]

    def scan_dead_letters(self) -> None:
        """Look into every queue of the vhost for dead-lettered messages (``x-death``)."""
        for queue in self.admin.queues(self.vhost):
            with contextlib.suppress(AssertionError):
                for message in self.queue_messages(queue):
                    self._saw_dead_letter(queue, message.keys, message.properties, message.body)

    # -- queues --------------------------------------------------------------------------------

    def _vhost(self, vhost: str) -> str:
        if vhost != "/":
            raise _needs(f"vhost {vhost!r}: each test has one vhost of the reference RabbitMQ")
        return self.vhost

    @contextlib.contextmanager
    def _scratch_channel(self) -> Iterator[BlockingChannel]:
        channel = self._connection.channel()
        try:
            yield channel
        finally:
            if channel.is_open:
                channel.close()

    def queue_messages(self, queue: str, *, vhost: str = "/") -> list[Message]:
        """The ready messages of ``queue``, in order, looked at without consuming them (taken
        with basic.get without acknowledgement and put back by closing the channel: RabbitMQ
        marks them redelivered).

        Raises:
            AssertionError: there is no such queue.
        """
        self._vhost(vhost)
        found: list[Message] = []
        try:
            with self._scratch_channel() as channel:
                while True:
                    method, props, body = channel.basic_get(queue, auto_ack=False)
                    if method is None:
                        break
                    found.append(Message(method.exchange, method.routing_key,
                                         _properties(props), body))
        except self._pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code != 404:
                raise
            raise AssertionError(f"no queue {queue!r} in vhost '/'; the queues are "
                                 f"{self.admin.queues(self.vhost)}") from None
        return found

    def wait_until_drained(self, queue: str, timeout: float = 5.0, *, vhost: str = "/") -> None:
        """Wait until ``queue`` holds no ready message (and, when ``rabbitmqctl`` can tell, no
        unacknowledged one)."""
        from ._settle import SettleTimeout

        self._vhost(vhost)
        deadline = time.monotonic() + timeout
        while True:
            with self._scratch_channel() as channel:
                ready = channel.queue_declare(queue, passive=True).method.message_count
            unacked = self.admin.unacked(self.vhost, queue) if not ready else None
            if not ready and not unacked:
                return
            if time.monotonic() >= deadline:
                raise SettleTimeout(f"queue {queue!r} was not drained", timeout,
                                    [f"queue {queue!r} holds {ready} ready and {unacked or 0} "
                                     "unacknowledged message(s) (RabbitMQ)"])
            self._connection.process_data_events(0.01)

    # -- topology ------------------------------------------------------------------------------

    def load_definitions(self, source: Any) -> None:
        """Declare the exchanges, queues and bindings of a definitions document in this vhost,
        then set its policies and operator policies (its vhost fields are ignored: everything
        goes into the test's vhost)."""
        if not isinstance(source, Mapping):
            with open(source, encoding="utf-8") as file:
                source = json.load(file)
        with self._scratch_channel() as channel:
            for x in source.get("exchanges", ()):
                channel.exchange_declare(x["name"], x.get("type", "direct"),
                                         durable=x.get("durable", True),
                                         auto_delete=x.get("auto_delete", False),
                                         internal=x.get("internal", False),
                                         arguments=x.get("arguments") or None)
            for q in source.get("queues", ()):
                channel.queue_declare(q["name"], durable=q.get("durable", True),
                                      auto_delete=q.get("auto_delete", False),
                                      arguments=q.get("arguments") or None)
            for b in source.get("bindings", ()):
                if b.get("destination_type", "queue") == "queue":
                    channel.queue_bind(b["destination"], b["source"], b.get("routing_key", ""),
                                       arguments=b.get("arguments") or None)
                else:
                    channel.exchange_bind(b["destination"], b["source"],
                                          b.get("routing_key", ""),
                                          arguments=b.get("arguments") or None)
        for key, operator in (("policies", False), ("operator_policies", True)):
            for p in source.get(key, ()):
                self._set_policy(p["name"], p["pattern"], p["definition"], p.get("priority", 0),
                                 p.get("apply-to", "all"), "/", operator=operator)

    def set_policy(self, name: str, pattern: str, definition: Mapping[str, Any] | str, *,
                   priority: int | float = 0, apply_to: str = "all", vhost: str = "/") -> None:
        """:meth:`Broker.set_policy <embroker.Broker.set_policy>` on this test's vhost of the
        reference (RabbitMQ validates it)."""
        self._set_policy(name, pattern, definition, priority, apply_to, vhost, operator=False)

    def set_operator_policy(self, name: str, pattern: str, definition: Mapping[str, Any] | str,
                            *, priority: int | float = 0, apply_to: str = "all",
                            vhost: str = "/") -> None:
        """:meth:`Broker.set_operator_policy <embroker.Broker.set_operator_policy>` on this
        test's vhost of the reference."""
        self._set_policy(name, pattern, definition, priority, apply_to, vhost, operator=True)

    def _set_policy(self, name: str, pattern: str, definition: Mapping[str, Any] | str,
                    priority: int | float, apply_to: str, vhost: str, *, operator: bool) -> None:
        if isinstance(definition, str):
            definition = json.loads(definition)
        assert isinstance(definition, Mapping)
        self.admin.set_policy(self._vhost(vhost), name, pattern, definition, priority=priority,
                              apply_to=apply_to, operator=operator)

    def route_many(self, exchange: str, probes: list[tuple[str, Mapping[str, Any] | None]],
                   ) -> list[ReferenceDecision]:
        """Where messages published to ``exchange`` with these (routing key, headers) would go:
        published, as probes, in a scratch copy of this vhost's topology, so that nothing
        reaches the test's queues."""
        definitions = self.admin.definitions(self.vhost)
        if definitions is None:
            raise _needs("route() on RabbitMQ copies the vhost's topology, which needs the "
                         "management API")
        scratch = ReferenceBroker(self._base_url, self.admin, f"scratch-{self.vhost}")
        try:
            scratch.admin.import_definitions(scratch.vhost, {
                k: definitions.get(k, []) for k in ("exchanges", "queues", "bindings")})
            for key, headers in probes:
                props = self._pika.BasicProperties(headers=dict(headers) if headers else None)
                scratch._channel.basic_publish(exchange, key, b"", props)
            decisions = scratch.trace
        finally:
            scratch.close()
        return decisions[:len(probes)]

