"""RabbitMQ's tracing plugin (``rabbitmq_tracing``) over embroker's firehose: ``/api/traces``
and ``/api/trace-files``.

Theory of operation
-------------------
A trace is what ``rabbit_tracing_consumer`` is: a connection to the trace's vhost as the trace's
user (``tracer_connection_username``, guest by default, its password checked), whose channel
declares an exclusive server-named queue, binds it to ``amq.rabbitmq.trace`` with the trace's
``pattern`` and consumes it without acknowledgement; each copy the firehose publishes there
(:mod:`embroker.model._firehose`) is written to ``<name>.log`` in the tracing directory, in the
trace's ``format``: ``text`` (RabbitMQ's ``io_lib:format`` of the record, Erlang terms and all)
or ``json`` (one object a line; the payload base64, cut at ``max_payload_bytes``). Creating a
vhost's first trace turns its firehose on, deleting its last turns it off (``rabbit_trace``),
as RabbitMQ's plugin does.

Everything runs under the broker's lock, in whichever thread published (the model is
synchronous: a copy is delivered to the tracer as it is routed). A record is written to its
file at once (one ``write`` a message, flushed), so a test reads a complete file as soon as the
publish returned: RabbitMQ buffers up to 100 records and writes them when its mailbox is empty,
so its files lag a little.

Differences from RabbitMQ 3.10's plugin: a trace's JSON has each key once (RabbitMQ's lists
``format`` and ``pattern`` twice); a ``text`` record's Erlang terms that do not fit on their
line are broken one element a line (``io_lib_pretty`` breaks deeper terms more cleverly); a PUT of
a trace that exists is refused before anything changes (RabbitMQ replaces it, then fails to
start it, and answers 400 with the trace half-made).
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

from .. import _erlang
from .._hostfiles import UntrustedPath, append_file, temp_folder, trusted_folder
from .._untrusted import json_bytes
from ..fieldtypes import field_type
from ..kit import Destination, DestinationType, check_password, subscribe
from ..model import PROPERTY_NAMES, Delivered
from ..model._firehose import TRACE_EXCHANGE

if TYPE_CHECKING:
    from ..model import Broker, Channel, Connection, Message, Node

__all__ = ["Trace", "Tracing", "TracingError"]

_SEPARATOR = "=" * 80
#: Columns ``io_lib:format``'s ``~tp`` lets a term reach before it breaks it (measured on
#: RabbitMQ 3.10: 80 columns, the terms starting after "Properties:   ").
_WIDTH = 80


class TracingError(Exception):
    """A trace that cannot be made: RabbitMQ's reason (the management API's 400)."""


def _now() -> str:
    """RabbitMQ's ``rabbit_mgmt_format:now_to_str()``: local time to the millisecond."""
    return datetime.datetime.now().astimezone().isoformat(timespec="milliseconds")


@final
class Trace:
    """One trace: its settings (as given), its consumer, and its log file."""

    def __init__(self, tracing: Tracing, vhost: str, name: str, settings: dict[str, Any],
                 connection: Connection, channel: Channel, queue: str) -> None:
        self.vhost = vhost
        self.name = name
        self.settings = settings
        self.connection = connection
        self.queue = queue
        self.format: str = settings["format"]
        limit = settings.get("max_payload_bytes")
        self.max_payload: int | None = limit if isinstance(limit, int) else None
        self.path = tracing.directory / f"{name}.log"
        self._file = append_file(self.path)  # (never through a planted link: _hostfiles)
        channel.listener = self._on_event

    def _on_event(self, event: object) -> None:
        if isinstance(event, Delivered):
            self.write(event.routing_key, event.message)

    def write(self, key: str, copy: Message) -> None:
        """Log one copy from the firehose (``publish.X`` or ``deliver.Q``)."""
        headers = copy.properties.get("headers") or {}
        published = key.startswith("publish.")
        body = copy.body if self.max_payload is None else copy.body[:self.max_payload]
        if self.format == "json":
            record = {
                "channel": int(headers.get("channel", 0)),
                "connection": str(headers.get("connection", "")),
                "exchange": str(headers.get("exchange_name", "")),
                "node": str(headers.get("node", "")),
                "payload": base64.b64encode(body).decode(),
                "properties": _json_properties(headers.get("properties") or {}),
                "queue": "none" if published else key[len("deliver."):],
                "routed_queues": ([str(q) for q in headers.get("routed_queues", [])]
                                  if published else "none"),
                "routing_keys": [str(k) for k in headers.get("routing_keys", [])],
                "timestamp": _now(), "type": "published" if published else "received",
                "user": str(headers.get("user", "")), "vhost": str(headers.get("vhost", "")),
            }
            data = json_bytes(json.dumps(record, separators=(",", ":"),
                                         ensure_ascii=False)) + b"\n"
        else:
            data = _text_record(key, headers, body, published)
        try:
            self._file.write(data)
            self._file.flush()
        except (OSError, ValueError):  # the file was deleted with its directory, or closed
            pass

    def info(self, queue: dict[str, Any] | None) -> dict[str, Any]:
        """The trace as ``GET /api/traces/{vhost}/{name}`` shows it."""
        shown = {k: v for k, v in self.settings.items() if k != "tracer_connection_password"}
        found: dict[str, Any] = {} if queue is None else {"queue": queue}
        found.update({"vhost": self.vhost, "name": self.name, **shown})
        return found

    def stop(self) -> None:
        if self.connection.is_open:
            self.connection.close()
        self._file.close()


@final
class Tracing:
    """The traces of one broker's management API, and their directory.

    Args:
        broker: the broker whose firehose they read.
        directory: where the logs go (made when the first trace starts); ``None``: a temporary
            directory of its own, removed by :meth:`close` (RabbitMQ's default is
            ``/var/tmp/rabbitmq-tracing``).
        node: the node its tracers connect to (the management API's listener's).
    """

    def __init__(self, broker: Broker, directory: str | os.PathLike[str] | None = None, *,
                 node: Node | None = None) -> None:
        self.broker = broker
        #: The node its tracers' connections open on (``None``: the first): the management
        #: API's listener's.
        self.node = node
        self._given = Path(directory) if directory is not None else None
        self._temporary: Path | None = None
        self.traces: dict[tuple[str, str], Trace] = {}

    @property
    def directory(self) -> Path:
        """Where the logs are (a temporary directory is made the first time it is asked for,
        when none was given). A directory given is checked as every folder embroker writes in
        (:mod:`embroker._hostfiles`): RabbitMQ's default, ``/var/tmp/rabbitmq-tracing``, is in
        a shared folder, where another user could have made it first.

        Raises:
            UntrustedPath: the directory given belongs to another user or others can write it.
        """
        if self._given is not None:
            return trusted_folder(self._given, create=True,
                                  fix="remove it, or give a trace directory of your own")
        if self._temporary is None:
            self._temporary = temp_folder("embroker-tracing-")
        return self._temporary

    def _forget_gone(self) -> None:
        for key, trace in list(self.traces.items()):
            if key[0] not in self.broker.vhosts:
                trace.stop()
                del self.traces[key]

    def listed(self, vhost: str | None = None) -> list[Trace]:
        """The traces (of ``vhost``), in the order they were made. Under the broker's lock."""
        self._forget_gone()
        return [t for t in self.traces.values() if vhost is None or t.vhost == vhost]

    def get(self, vhost: str, name: str) -> Trace | None:
        self._forget_gone()
        return self.traces.get((vhost, name))

    def create(self, vhost: str, name: str, settings: dict[str, Any]) -> Trace:
        """Start a trace (under the broker's lock). ``settings`` is the PUT's body, checked.

        Raises:
            TracingError: RabbitMQ's reason: a trace of that name exists, the tracer's user
                cannot log in or has no permission to read the firehose, or a name that is
                no file name.
        """
        if (vhost, name) in self.traces:
            raise TracingError("Something went wrong trying to start the trace - check the "
                               "logs.")
        if not name or "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
            raise TracingError(f"a trace's name is its log file's: {name!r} cannot be one")
        broker = self.broker
        user = settings.get("tracer_connection_username") or "guest"
        password = settings.get("tracer_connection_password")
        password = "guest" if password is None and user == "guest" else password
        if password is not None and check_password(broker, str(user), str(password)):
            raise TracingError(f"the tracer's user '{user}' cannot log in (Something went "
                               "wrong trying to start the trace - check the logs.)")
        from ..errors import AMQPError

        was_tracing = any(t.vhost == vhost for t in self.traces.values())
        host = broker.vhosts[vhost]
        try:
            connection = broker.open_connection(
                vhost, user=str(user), client_properties={"product": "rabbitmq_tracing"},
                name=f"tracer {name}", node=self.node)
        except AMQPError as refused:
            raise TracingError(f"the tracer cannot connect: {refused}") from None
        try:
            channel = connection.open_channel(1)
            # rabbit_tracing_consumer's subscription: an exclusive server-named queue (not
            # auto-delete), bound to the firehose with the pattern; it goes with the connection.
            subscription = subscribe(channel, Destination(
                DestinationType.EXCHANGE, TRACE_EXCHANGE, str(settings["pattern"])),
                exclusive=True, auto_delete=False)
            trace = Trace(self, vhost, name, settings, connection, channel, subscription.queue)
            subscription.consume(no_ack=True)
        except (AMQPError, OSError, UntrustedPath) as refused:
            connection.close()
            raise TracingError(f"the tracer cannot start: {refused}") from None
        if not was_tracing:
            host.tracing = True
        self.traces[(vhost, name)] = trace
        return trace

    def delete(self, vhost: str, name: str) -> None:
        """Stop a trace (under the broker's lock); the vhost's last one turns its firehose
        off. Its log file stays."""
        trace = self.traces.pop((vhost, name))
        trace.stop()
        if vhost in self.broker.vhosts and not any(t.vhost == vhost
                                                   for t in self.traces.values()):
            self.broker.vhosts[vhost].tracing = False

    # -- the files -------------------------------------------------------------------------------

    def files(self) -> list[dict[str, Any]]:
        """``GET /api/trace-files``: each file of the directory, name and size."""
        if self._given is None and self._temporary is None:
            return []
        try:
            directory = self.directory
        except UntrustedPath:  # (nothing in it is listed: it is not the user's)
            return []
        found = []
        for path in sorted(directory.iterdir()):
            if path.is_file():
                found.append({"name": path.name, "size": path.stat().st_size})
        return found

    def file(self, name: str) -> Path | None:
        """The file ``name`` of the directory (``None``: no such file, or a name that would
        leave the directory)."""
        if self._given is None and self._temporary is None:
            return None
        if not name or "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
            return None
        try:
            path = self.directory / name
        except UntrustedPath:
            return None
        return path if path.is_file() and not path.is_symlink() else None

    def close(self) -> None:
        """Stop every trace; a temporary directory goes with its logs."""
        for vhost, name in list(self.traces):
            self.delete(vhost, name)
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None


# -- the records ---------------------------------------------------------------------------------

def _ordered(properties: dict[str, Any]) -> list[tuple[str, Any]]:
    # The firehose's table lists the properties in the reverse of their AMQP order (rabbit_trace
    # folds them into a list).
    return [(name, properties[name]) for name in reversed(PROPERTY_NAMES)
            if name in properties and properties[name] is not None]


def _json_properties(properties: dict[str, Any]) -> dict[str, Any]:
    from .views import json_value

    return {name: json_value(value) for name, value in _ordered(properties)}


# Erlang terms as ``~tp`` lays them out (io_lib_pretty), for what a trace prints: lists, tuples
# and leaves (binaries, atoms, numbers). A term fits on its line when it ends, with what must
# follow it there (a comma or closing brackets), before column 80; a list that does not fit
# puts its elements one a line, under the first; a tuple that does not fit puts its elements on
# its line while they fit, the rest on the next lines under the first (measured on RabbitMQ
# 3.10.8: golden/tracing_text.log).

_Term = tuple[str, Any]  # ("list" | "tuple", [terms]) or ("leaf", text) or ("binary", bytes)


def _flat(term: _Term) -> str:
    kind, value = term
    if kind == "leaf":
        return str(value)
    if kind == "binary":
        return _erlang.binary(value, 0)
    inner = ",".join(_flat(t) for t in value)
    return f"[{inner}]" if kind == "list" else f"{{{inner}}}"


def _fits(text: str, column: int, tail: int) -> bool:
    return "\n" not in text and column + len(text) + tail < _WIDTH


def _pretty(term: _Term, column: int, tail: int = 1) -> str:
    kind, value = term
    flat = _flat(term)
    if kind == "binary":
        return _erlang.binary(value, column)
    if kind == "leaf" or _fits(flat, column, tail) or not value:
        return flat
    opening, closing = ("[", "]") if kind == "list" else ("{", "}")
    inner = column + 1
    if kind == "list":
        parts = [_pretty(t, inner, 1 if i < len(value) - 1 else tail + 1)
                 for i, t in enumerate(value)]
        return opening + (",\n" + " " * inner).join(parts) + closing
    out, at = opening, inner
    for i, t in enumerate(value):
        last = i == len(value) - 1
        after = tail + 1 if last else 1
        piece = _flat(t)
        if i and not _fits(piece, at, after):
            out += "\n" + " " * inner
            at = inner
        piece = _pretty(t, at, after)
        out += piece + ("" if last else ",")
        at = (len(piece) - piece.rfind("\n") - 1 if "\n" in piece else at + len(piece)) + 1
    return out + closing


def _value_term(value: Any) -> _Term:
    """An AMQP field value as RabbitMQ holds it: tables of ``{Key,type,Value}``, arrays of
    ``{type,Value}``, strings and byte arrays as binaries."""
    if isinstance(value, dict):
        return ("list", [("tuple", [_binary_term(k), ("leaf", field_type(v)), _value_term(v)])
                         for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return ("list", [("tuple", [("leaf", field_type(v)), _value_term(v)]) for v in value])
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return _binary_term(value)
    return ("leaf", _erlang.field_value(value))


def _binary_term(value: Any) -> _Term:
    data = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
    return ("binary", data)


def _text_record(key: str, headers: dict[str, Any], body: bytes, published: bool) -> bytes:
    properties: _Term = ("list", [
        ("tuple", [_binary_term(name), ("leaf", field_type(value)), _value_term(value)])
        for name, value in _ordered(headers.get("properties") or {})])
    routing_keys: _Term = ("list", [_binary_term(k) for k in headers.get("routing_keys", [])])
    lines = [
        "", _SEPARATOR, f"{_now()}: Message {'published' if published else 'received'}", "",
        f"Node:         {headers.get('node', '')}",
        f"Connection:   {headers.get('connection', '')}",
        f"Virtual host: {headers.get('vhost', '')}",
        f"User:         {headers.get('user', '')}",
        f"Channel:      {int(headers.get('channel', 0))}",
        f"Exchange:     {headers.get('exchange_name', '')}",
        "Routing keys: " + _pretty(routing_keys, 14),
    ]
    if published:
        routed: _Term = ("list", [_binary_term(q) for q in headers.get("routed_queues", [])])
        lines.append("Routed queues: " + _pretty(routed, 15))
    else:
        lines.append(f"Queue:        {key[len('deliver.'):]}")
    lines += ["Properties:   " + _pretty(properties, 14), "Payload: ", ""]
    return "\n".join(lines).encode("utf-8", "surrogateescape") + body + b"\n"
