"""RabbitMQ 4's management node over AMQP 1.0: "HTTP over AMQP" requests on a link pair.

Theory of operation
-------------------
RabbitMQ 4's own AMQP 1.0 clients declare and delete queues, exchanges and bindings through the
node ``/management``: the client attaches a sender and a receiver with the same link name, both
with the link property ``paired`` (OASIS "Link Pair" CS 01), sends each request as a pre-settled
message whose ``to`` is an HTTP path (``/queues/orders``), ``subject`` an HTTP method, ``reply-to``
``$me`` and body an amqp-value, and receives one response per request on the other half: the
``subject`` is the status code, ``correlation-id`` the request's ``message-id``, the
application property ``http:response`` is ``"1.1"``, the body an amqp-value.

:class:`ManagementNode` answers one request at a time, sans-IO (request bytes in, response
bytes out), as RabbitMQ 4.1's ``rabbit_amqp_management:handle_request/5`` does, with its status
codes and texts. Every operation goes through the session's model channel: the same
declare, delete, purge and bind operations, with the same permission, exclusive-owner and
equivalence checks, as AMQP 0-9-1 (DESIGN.md rule 4). What is the management node's own is
what RabbitMQ checks before it calls those: the request's shape, the names it refuses (empty,
with CR or LF, ``amq.``-prefixed, the default exchange) and which refusal gets which status.

As in RabbitMQ 4, a request the user has no permission for ends the *session* with
``amqp:unauthorized-access`` (``rabbit_amqp_session:check_resource_access/4`` is not caught by
the management code). A request RabbitMQ has no clause for (it crashes the session) is answered
``400`` with what was not understood, so a test learns why.
"""

from __future__ import annotations

import base64
import re
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, final
from urllib.parse import quote, unquote_to_bytes

from .._erlterm import field_value_term, phash2
from ..amqp10_common._definitions import SECTION_AMQP_VALUE, Properties
from ..amqp10_common._errors import DecodeError, SessionError
from ..amqp10_common._message import value_from_091, value_to_091
from ..amqp10_common._types import Described, Symbol, UInt, ULong, decode_value, encode_value
from ..errors import AccessRefused, AMQPError, NotFound, PreconditionFailed, Refusal
from ..model._names import has_cr_lf, is_default_exchange, reserved

if TYPE_CHECKING:
    from ..model import Channel as ModelChannel
    from ..model import Queue

__all__ = ["MANAGEMENT_ADDRESS", "ManagementNode", "args_hash"]

#: The management node's address (rabbit_amqp_session: ``?MANAGEMENT_NODE_ADDRESS``).
MANAGEMENT_ADDRESS: Final = "/management"

_BINDING_SEGMENT = re.compile(
    r"^src=([0-9A-Za-z\-._~%]+);dst([eq])=([0-9A-Za-z\-._~%]+);"
    r"key=([0-9A-Za-z\-._~%]*);args=([0-9A-Za-z\-_]*)$")


class _Status(Exception):
    """A response other than success (``rabbit_amqp_management:throw/3``)."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def args_hash(arguments: dict[str, Any]) -> str:
    """How a binding's arguments are named in its path (``;args=...``): empty without arguments;
    else ``erlang:phash2`` of the sorted argument table, as 4 bytes, URL-safe base64 without
    padding (``rabbit_amqp_management:args_hash/1``)."""
    if not arguments:
        return ""
    raw = struct.pack(">I", _phash2_table(arguments))
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _phash2_table(arguments: dict[str, Any]) -> int:
    # erlang:phash2(Args, 1 bsl 32) of the table as RabbitMQ stores it: {Key, Type, Value}
    # tuples in lists:keysort/2 order of their keys (rabbit_binding:sort_args/1).
    table = sorted(field_value_term(arguments), key=lambda entry: entry[0])
    return phash2(table, 1 << 32)


def binding_location(source: str, kind: str, destination: str, key: str,
                     arguments: dict[str, Any]) -> str:
    """A binding's path (``rabbit_amqp_management:compose_binding_uri/5``)."""
    return (f"/bindings/src={quote(source, safe='')};dst{'q' if kind == 'queue' else 'e'}="
            f"{quote(destination, safe='')};key={quote(key, safe='')};args="
            f"{args_hash(arguments)}")


def _decode_segment(text: str) -> str:
    # cow_uri:urldecode/1: percent-decoding to UTF-8 bytes.
    return unquote_to_bytes(text).decode("utf-8", "surrogateescape")


def _erlang(value: Any) -> str:
    """An AMQP 1.0 value as RabbitMQ's ``~tp`` prints its typed term (for error texts)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Symbol):
        return f"{{symbol,{_erlang_binary(str(value))}}}"
    if isinstance(value, str):
        return f"{{utf8,{_erlang_binary(value)}}}"
    if isinstance(value, bytes):
        return f"{{binary,{_erlang_binary(value)}}}"
    if isinstance(value, int):
        kind = {ULong: "ulong", UInt: "uint"}.get(type(value), type(value).__name__.lower())
        return f"{{{'long' if kind == 'int' else kind},{int(value)}}}"
    if isinstance(value, float):
        return f"{{double,{value!r}}}"
    if isinstance(value, dict):
        return "{{map,[{}]}}".format(",".join(f"{{{_erlang(k)},{_erlang(v)}}}"
                                       for k, v in value.items()))
    if isinstance(value, list):
        return "{{list,[{}]}}".format(",".join(_erlang(v) for v in value))
    return repr(value)


def _erlang_binary(value: str | bytes) -> str:
    raw = value.encode() if isinstance(value, str) else value
    if all(32 <= b < 127 for b in raw):
        return '<<"{}">>'.format(raw.decode().replace("\\", "\\\\").replace('"', '\\"'))
    if isinstance(value, str):
        return f'<<"{value}"/utf8>>'
    return "<<{}>>".format(",".join(str(b) for b in raw))


def _arguments(value: Any, what: str) -> dict[str, Any]:
    """``arguments`` of a request as a 0-9-1 table (``args_amqp_to_amqpl/1``)."""
    if not isinstance(value, dict):
        raise _Status("400", f"bad {what} property {_erlang(value)}")
    table = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise _Status("400", f"unsupported argument {{{_erlang(key)},{_erlang(item)}}}")
        table[str(key)] = value_to_091(item)
    return table


def _amqp_arguments(table: dict[str, Any]) -> dict[Any, Any]:
    """A 0-9-1 table as the response's map (``args_amqpl_to_amqp/1``: utf8 keys)."""
    return {str(key): value_from_091(value) for key, value in table.items()}


def _topology(queue: Queue) -> dict[str, Any]:
    """A queue's ``leader`` and ``replicas``, from its placement, as RabbitMQ 4's
    ``rabbit_amqp_management:queue_topology/1`` (v4.0.5) finds them:

    - a classic queue: its home node, and it alone;
    - a quorum queue: its leader (no ``leader`` while the leader's node is down:
      ``rabbit_quorum_queue`` says ``''``), and every member, running or not, in the queue's
      order;
    - a stream: its writer's node, and every member, folded from the coordinator's map of
      members (by name) onto a list: in reverse order of name.
    """
    placement = queue.placement
    leader = placement.leader.name
    replicas = [member.name for member in placement.members]
    if queue.type.name == "quorum" and not placement.leader.running:
        return {"replicas": replicas}
    if queue.type.name == "stream":
        replicas.sort(reverse=True)
    return {"leader": leader, "replicas": replicas}


def _decode_properties(body: Any, what: str, booleans: tuple[str, ...],
                       strings: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise _Status("400", f"bad {what} property {_erlang(body)}")
    decoded: dict[str, Any] = {}
    for key, value in body.items():
        name = key if isinstance(key, str) and not isinstance(key, Symbol) else None
        if name in booleans and isinstance(value, bool):
            decoded[name] = value
        elif name in strings and isinstance(value, str) and not isinstance(value, Symbol):
            decoded[name] = str(value)
        elif name == "arguments":
            decoded[name] = _arguments(value, what)
        else:
            raise _Status("400", f"bad {what} property {{{_erlang(key)},{_erlang(value)}}}")
    return decoded


def _prohibit_cr_lf(name: str) -> None:
    if has_cr_lf(name):
        raise _Status("400", f"Bad name '{name}': line feed and carriage return characters "
                             "not allowed")


def _sections(request: bytes) -> tuple[Properties | None, Any]:
    """The properties and amqp-value body of a request, in whatever order its sections come
    (``rabbit_amqp_management:decode_req/2`` looks at each section alone: proton's Message
    with no body puts its amqp-value null before the properties)."""
    properties, body = None, None
    pos = 0
    try:
        while pos < len(request):
            section, pos = decode_value(request, pos)
            if isinstance(section, Properties):
                properties = section
            elif isinstance(section, Described) and section.descriptor in (
                    SECTION_AMQP_VALUE, "amqp:amqp-value:*"):
                body = section.value
    except DecodeError as exc:
        raise SessionError("amqp:decode-error", exc.description) from None
    return properties, body


@final
class ManagementNode:
    """The management node of one session: requests in, responses out (module docstring).

    Args:
        channel: the session's model channel (its connection's user and vhost).
    """

    def __init__(self, channel: ModelChannel) -> None:
        self.channel = channel
        self._routes: dict[tuple[str, str], Callable[[list[str], dict[str, str], Any],
                                                     tuple[str, Any]]] = {
            ("GET", "queues"): self._get_queue, ("PUT", "queues"): self._put_queue,
            ("DELETE", "queues"): self._delete_queue, ("PUT", "exchanges"): self._put_exchange,
            ("DELETE", "exchanges"): self._delete_exchange,
            ("POST", "bindings"): self._post_binding, ("DELETE", "bindings"): self._delete_binding,
            ("GET", "bindings"): self._get_bindings,
        }

    def handle(self, request: bytes) -> bytes:
        """Answer one request message with the response message's sections.

        Raises:
            SessionError: ``amqp:unauthorized-access``, a request the user may not make (the
                session ends, as in RabbitMQ 4); ``amqp:decode-error``, a request that is not a
                message with ``properties`` (message-id, to, subject, reply-to ``$me``).
        """
        properties, body = _sections(request)
        if properties is None or not isinstance(properties.to, str) or \
                not isinstance(properties.subject, str) or properties.reply_to != "$me":
            raise SessionError("amqp:decode-error", "a management request needs properties "
                               "with 'to' (the path), 'subject' (the method) and reply-to "
                               "'$me'")
        try:
            status, response = self._dispatch(properties.subject, properties.to, body)
        except _Status as exc:
            status, response = exc.status, exc.reason
        return self._response(status, properties.message_id, response)

    @staticmethod
    def _response(status: str, message_id: Any, body: Any) -> bytes:
        out = bytearray(b"\x00\x53\x73")  # properties: subject = status, correlation-id
        encode_value([None, None, None, status, None, message_id], out)
        out += b"\x00\x53\x74"
        encode_value({"http:response": "1.1"}, out)
        out += b"\x00\x53\x77"
        encode_value(body, out)
        return bytes(out)

    def _dispatch(self, method: str, target: str, body: Any) -> tuple[str, Any]:
        path, _, query_text = target.partition("?")
        segments = path.split("/")
        if segments[:1] != [""] or len(segments) < 2:
            raise _Status("400", f"failed to normalize URI '{target}'")
        segments = segments[1:]
        query: dict[str, str] = {}
        if query_text:
            for pair in query_text.split("&"):
                key, _, value = pair.partition("=")
                query[_decode_segment(key)] = _decode_segment(value)
        handler = self._routes.get((method, segments[0]))
        if handler is None:
            raise _Status("400", f"unsupported request: {method} {target} (RabbitMQ 4's "
                                 "management node takes queues, exchanges and bindings)")
        return handler(segments, query, body)

    # -- errors from the model ----------------------------------------------------------------------

    def _model(self, call: Callable[[], Any], *, conflict: str = "409",
               not_found: str = "400") -> Any:
        """Run a model operation; its refusals become statuses as RabbitMQ 4 maps them: no
        permission ends the session, a precondition is a conflict, the rest a bad request."""
        try:
            return call()
        except AccessRefused as exc:
            if exc.reason is Refusal.PERMISSION:
                raise SessionError("amqp:unauthorized-access", exc.text) from None
            raise _Status("403", exc.text) from None
        except PreconditionFailed as exc:
            raise _Status(conflict, exc.text) from None
        except NotFound as exc:
            raise _Status(not_found, exc.text) from None
        except AMQPError as exc:
            raise _Status("400", exc.text) from None

    # -- queues ------------------------------------------------------------------------------------

    def _queue_name(self, segments: list[str], *, messages: bool = False) -> str:
        expected = 3 if messages else 2
        if len(segments) != expected or (messages and segments[2] != "messages"):
            raise _Status("400", f"unsupported request path /{'/'.join(segments)}")
        return _decode_segment(segments[1])

    def _encode_queue(self, name: str) -> dict[Any, Any]:
        queue = self.channel.vhost.lookup_queue(name, self.channel.connection.node)
        kind = queue.arguments.get("x-queue-type", "classic")
        return {**_topology(queue),
                "message_count": ULong(queue.message_count),
                "consumer_count": UInt(queue.consumer_count), "name": queue.name,
                "vhost": self.channel.vhost.name, "durable": queue.durable,
                "auto_delete": queue.auto_delete, "exclusive": queue.exclusive,
                "type": kind if isinstance(kind, str) else "classic",
                "arguments": _amqp_arguments(queue.arguments)}

    def _get_queue(self, segments: list[str], query: dict[str, str], body: Any) -> tuple[str, Any]:
        name = self._queue_name(segments)
        try:
            return "200", self._encode_queue(name)
        except NotFound:
            raise _Status("404", f"queue '{name}' in vhost '{self.channel.vhost.name}' not "
                                 "found") from None

    def _put_queue(self, segments: list[str], query: dict[str, str], body: Any) -> tuple[str, Any]:
        name = self._queue_name(segments)
        spec: dict[str, Any] = {"durable": True, "exclusive": False, "auto_delete": False,
                                "arguments": {}}
        spec.update(_decode_properties(body, "queue", ("durable", "exclusive", "auto_delete")))
        if not name:
            raise _Status("400", "declare queue with empty name not allowed")
        _prohibit_cr_lf(name)
        vhost = self.channel.vhost
        if reserved(name):
            raise _Status("403", f"{vhost.resource('queue', name)} starts with reserved "
                                 "prefix 'amq.'")
        declared = self._model(lambda: self.channel.queue_declare(
            name, durable=spec["durable"], exclusive=spec["exclusive"],
            auto_delete=spec["auto_delete"], arguments=spec["arguments"]),
            conflict="409", not_found="400")
        return ("201" if declared.created else "200"), self._encode_queue(name)

    def _delete_queue(self, segments: list[str], query: dict[str, str],
                      body: Any) -> tuple[str, Any]:
        if len(segments) == 3:
            name = self._queue_name(segments, messages=True)
            try:
                purged = self._model(lambda: self.channel.queue_purge(name), not_found="404")
            except _Status as exc:
                raise exc from None
            return "200", {"message_count": ULong(purged)}
        name = self._queue_name(segments)
        _prohibit_cr_lf(name)
        deleted = self._model(lambda: self.channel.queue_delete(name))
        return "200", {"message_count": ULong(deleted)}

    # -- exchanges ---------------------------------------------------------------------------------

    def _exchange_name(self, segments: list[str]) -> str:
        if len(segments) != 2:
            raise _Status("400", f"unsupported request path /{'/'.join(segments)}")
        return _decode_segment(segments[1])

    def _put_exchange(self, segments: list[str], query: dict[str, str],
                      body: Any) -> tuple[str, Any]:
        name = self._exchange_name(segments)
        spec: dict[str, Any] = {"durable": True, "auto_delete": False, "type": "direct",
                                "internal": False, "arguments": {}}
        spec.update(_decode_properties(body, "exchange", ("durable", "auto_delete", "internal"),
                                       ("type",)))
        channel = self.channel
        vhost = channel.vhost
        # check_type/1 first: any refusal is a 400 (line 200)
        self._model(lambda: vhost.exchange_type(spec["type"]), conflict="400")
        if is_default_exchange(name):
            raise _Status("403", "operation not permitted on the default exchange")
        if not self._model(lambda: channel.check_exchange_declare(
                name, spec["type"], spec["arguments"])):
            _prohibit_cr_lf(name)
            if reserved(name):
                raise _Status("403", f"{vhost.resource('exchange', name)} starts with "
                                     "reserved prefix 'amq.'")
        self._model(lambda: channel.exchange_declare(
            name, spec["type"], durable=spec["durable"], auto_delete=spec["auto_delete"],
            internal=spec["internal"], arguments=spec["arguments"]))
        return "204", None

    def _delete_exchange(self, segments: list[str], query: dict[str, str],
                         body: Any) -> tuple[str, Any]:
        name = self._exchange_name(segments)
        _prohibit_cr_lf(name)
        vhost = self.channel.vhost
        if is_default_exchange(name):
            raise _Status("403", "operation not permitted on the default exchange")
        if reserved(name):
            raise _Status("403", f"{vhost.resource('exchange', name)} starts with reserved "
                                 "prefix 'amq.'")
        self._model(lambda: self.channel.exchange_delete(name))
        return "204", None

    # -- bindings ----------------------------------------------------------------------------------

    def _binding_checks(self, source: str, kind: str, destination: str) -> None:
        # rabbit_amqp_management:binding_checks/5: the names first; the permissions are the
        # model's, checked again by the bind itself.
        for name in (source, destination):
            if name == "" and (name is source or kind == "exchange"):
                raise _Status("403", "operation not permitted on the default exchange")
            _prohibit_cr_lf(name)

    def _bind(self, add: bool, source: str, kind: str, destination: str, key: str,
              arguments: dict[str, Any]) -> None:
        channel = self.channel
        if kind == "queue":
            call = channel.queue_bind if add else channel.queue_unbind
            self._model(lambda: call(destination, source, key, arguments), conflict="400")
        else:
            xcall = channel.exchange_bind if add else channel.exchange_unbind
            self._model(lambda: xcall(destination, source, key, arguments), conflict="400")

    def _post_binding(self, segments: list[str], query: dict[str, str],
                      body: Any) -> tuple[str, Any]:
        if not isinstance(body, dict):
            raise _Status("400", f"bad binding field {_erlang(body)}")
        fields: dict[str, Any] = {}
        for key, value in body.items():
            name = key if isinstance(key, str) and not isinstance(key, Symbol) else None
            if name in ("source", "destination_queue", "destination_exchange",
                        "binding_key") and isinstance(value, str) \
                    and not isinstance(value, Symbol):
                fields[name] = str(value)
            elif name == "arguments":
                fields[name] = _arguments(value, "binding")
            else:
                raise _Status("400", f"bad binding field {{{_erlang(key)},{_erlang(value)}}}")
        kind = "queue" if "destination_queue" in fields else "exchange"
        destination = fields.get(f"destination_{kind}")
        if "source" not in fields or "binding_key" not in fields or destination is None or \
                "arguments" not in fields:
            raise _Status("400", "a binding needs source, destination_queue or "
                                 "destination_exchange, binding_key and arguments")
        self._binding_checks(fields["source"], kind, destination)
        self._bind(True, fields["source"], kind, destination, fields["binding_key"],
                   fields["arguments"])
        return "204", None

    def _delete_binding(self, segments: list[str], query: dict[str, str],
                        body: Any) -> tuple[str, Any]:
        if len(segments) != 2:
            raise _Status("400", f"unsupported request path /{'/'.join(segments)}")
        match = _BINDING_SEGMENT.match(segments[1])
        if match is None:
            raise _Status("400", f"bad binding path segment '{segments[1]}'")
        source, kind_char, destination, key = (
            _decode_segment(g) if i != 1 else g for i, g in enumerate(match.groups()[:4]))
        wanted = match.group(5)
        kind = "queue" if kind_char == "q" else "exchange"
        self._binding_checks(source, kind, destination)
        for arguments in self._bindings(source, kind, destination, key):
            if args_hash(arguments) == wanted:
                self._bind(False, source, kind, destination, key, arguments)
                break
        return "204", None

    def _bindings(self, source: str, kind: str, destination: str,
                  key: str) -> list[dict[str, Any]]:
        """The arguments of each binding from ``source`` to ``destination`` with ``key``."""
        vhost = self.channel.vhost
        exchange = vhost.exchanges.get(source)
        if exchange is None:
            return []
        return [dict(binding.arguments) for binding in exchange.bindings.values()
                if binding.destination.kind == kind and binding.destination.name == destination
                and binding.routing_key == key]

    def _get_bindings(self, segments: list[str], query: dict[str, str],
                      body: Any) -> tuple[str, Any]:
        if len(segments) != 1 or "src" not in query or "key" not in query:
            raise _Status("400", f"unsupported request path /{'/'.join(segments)}")
        if "dste" in query:
            kind, destination = "exchange", query["dste"]
        elif "dstq" in query:
            kind, destination = "queue", query["dstq"]
        else:
            raise _Status("400", f"missing 'dste' or 'dstq' in query: {query!r}")
        source, key = query["src"], query["key"]
        return "200", [
            {"source": source, f"destination_{kind}": destination, "binding_key": key,
             "arguments": _amqp_arguments(arguments),
             "location": binding_location(source, kind, destination, key, arguments)}
            for arguments in self._bindings(source, kind, destination, key)]

