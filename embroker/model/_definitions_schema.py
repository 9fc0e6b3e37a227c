"""What a definitions document may hold: the one place its JSON and each section's fields are
checked, before anything of it is loaded.

Theory of operation
-------------------
:func:`parse` reads a document's bytes as RabbitMQ's definitions routes read a body: empty is
an empty document; anything else must be JSON (UTF-8, no ``NaN`` or ``1e400``, which Erlang's
decoder refuses too) whose top is an object. Two bounds are embroker's own: a document has at
most :data:`MAX_BYTES` bytes (the management API's default body bound, so a document goes
through every route alike) and nests at most :data:`MAX_DEPTH` levels deep (an AMQP table in
its arguments may nest as deep as on the wire, :data:`~embroker.amqp091._fields.MAX_NESTING`).

:func:`check` then reads a document (parsed, or a mapping a Python caller built) section by
section, item by item, field by field, as :data:`SECTIONS` declares them: each field has one
JSON type, some are required, every item is an object. It returns the document as the loader
uses it: each section a list of items holding only the fields the loader reads, of the types
declared, ``null`` read as absent. So nothing in a document can make the loader raise anything
but the refusals of the model's own operations (an unknown vhost or user, a queue argument or a
policy RabbitMQ refuses), which :func:`~._definitions.load_definitions` turns into
:class:`~embroker.errors.DefinitionsError` as well.

RabbitMQ 3.10.8 checks none of this before it starts: a field of the wrong type fails where it
is first used, with a 500 or an Erlang stack trace, after the sections before it were imported,
and an item that is not an object is skipped. embroker refuses such a document whole, with a
text that names the field (``queues[0].name must be a string, not 5``), and changes nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, final

from .._untrusted import encodes, json_loads
from ..errors import DefinitionsError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "NOT_JSON", "SECTIONS", "VHOST_SECTIONS", "check",
           "no_such_vhost", "parse", "read"]

#: The largest document read, in bytes (RabbitMQ's ``management.http.max_body_size`` default,
#: which bounds a document posted to the management API: the same bound for every route).
MAX_BYTES: Final = 20 * 1024 * 1024
#: How deep a document's JSON may nest: the document, a section, an item, its arguments, and
#: within those an AMQP table as deep as the wire allows (100).
MAX_DEPTH: Final = 128
#: The reason RabbitMQ's management API gives for a body that is no JSON object.
NOT_JSON: Final = "failed_to_parse_json"
#: The sections a vhost's own definitions have (``POST /api/definitions/{vhost}``, RabbitMQ's
#: ``apply_defs/4``): the others are ignored there.
VHOST_SECTIONS: Final = ("exchanges", "parameters", "policies", "queues", "bindings")

Reader = Callable[[Any, str], Any]


def _show(value: Any) -> str:
    """A value in a message: its JSON, ASCII (a control character escaped), cut at 80."""
    try:
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def no_such_vhost(name: str | None) -> DefinitionsError:
    """An item in a vhost that does not exist (``None``: an item that names none, where the
    caller names none either), with the texts of ``rabbit_definitions:format/1`` and
    RabbitMQ's term as the reason."""
    if name is None:
        return DefinitionsError("Virtual host does not exist and is not specified in "
                                "definitions file.", reason=["no_such_vhost", "undefined"])
    return DefinitionsError(f'Please create virtual host "{name}" prior to importing '
                            "definitions.", reason=["no_such_vhost", name])


def _refuse(where: str, expected: str, value: Any) -> DefinitionsError:
    return DefinitionsError(f"{where} must be {expected}, not {_show(value)}")


# -- field readers: a JSON value (and where it is) -> what the loader uses ----------------------

def _text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    raise _refuse(where, "a string", value)


def _queue_name(value: Any, where: str) -> str:
    """A queue's name: not empty (RabbitMQ 3.10.8's import makes a queue named ``""``, checked
    live, which a client can reach only by accident: embroker refuses it)."""
    if value == "":
        raise DefinitionsError(f"{where} is empty: a queue needs a name")
    return _text(value, where)


def _boolean(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    raise _refuse(where, "true or false", value)


def _object(value: Any, where: str) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    raise _refuse(where, "an object", value)


def _table(value: Any, where: str) -> dict[str, Any]:
    """Arguments: an object (``[]``, Erlang's empty list of pairs, is none:
    ``rabbit_definitions:args/1``)."""
    if value == []:
        return {}
    return _object(value, where)


def _tags(value: Any, where: str) -> list[str]:
    """Tags: ``"a,b"`` or ``["a", "b"]``."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(tag, str) for tag in value):
        return [tag for tag in value if tag]
    raise _refuse(where, 'a list of strings or a string ("a,b")', value)


def _flag(value: Any, where: str) -> bool:
    """A legacy ``administrator`` (``rabbit_misc:parse_bool``): ``true``/``false``, as JSON or
    as text."""
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return bool(value == "true")
    raise _refuse(where, "true or false", value)


def _destination_type(value: Any, where: str) -> str:
    if value in ("queue", "exchange"):
        return str(value)
    raise _refuse(where, '"queue" or "exchange"', value)


def _anything(value: Any, where: str) -> Any:
    """Any JSON value, checked by the model's operation that takes it (a policy's pattern and
    definition, a runtime parameter's value: RabbitMQ's validation texts are the model's)."""
    return value


def _metadata(value: Any, where: str) -> dict[str, Any]:
    """A vhost's ``metadata``: its description, tags and default queue type."""
    return _item(_object(value, where), where, _METADATA)


@final
@dataclass(frozen=True)
class Field:
    """One field of an item: how its value is read, and whether an item must have it."""

    read: Reader
    required: bool = False


_TEXT, _NAME = Field(_text), Field(_text, required=True)
_BOOLEAN, _TABLE = Field(_boolean), Field(_table)
_METADATA: Final = {"description": _TEXT, "tags": Field(_tags),
                    "default_queue_type": _TEXT}

#: Each section's fields: those RabbitMQ's import reads (``rabbit_definitions``,
#: ``rabbit_auth_backend_internal:put_user/3``), and what their values must be.
SECTIONS: Final[dict[str, dict[str, Field]]] = {
    "users": {"name": _NAME, "password": _TEXT, "password_hash": _TEXT,
              "hashing_algorithm": _TEXT, "tags": Field(_tags),
              "administrator": Field(_flag), "limits": Field(_object)},
    "vhosts": {"name": _NAME, "description": _TEXT, "tags": Field(_tags),
               "metadata": Field(_metadata), "tracing": _BOOLEAN},
    "permissions": {"user": _NAME, "vhost": _TEXT, "configure": _NAME, "write": _NAME,
                    "read": _NAME},
    "topic_permissions": {"user": _NAME, "vhost": _TEXT, "exchange": _NAME, "write": _NAME,
                          "read": _NAME},
    "parameters": {"vhost": _TEXT, "component": _NAME, "name": _NAME,
                   "value": Field(_anything, required=True)},
    "global_parameters": {"name": _NAME, "value": Field(_anything, required=True)},
    "policies": {"vhost": _TEXT, "name": _TEXT, "pattern": Field(_anything),
                 "definition": Field(_anything), "priority": Field(_anything),
                 "apply-to": Field(_anything)},
    "queues": {"name": Field(_queue_name, required=True), "vhost": _TEXT, "type": _TEXT, "durable": _BOOLEAN,
               "auto_delete": _BOOLEAN, "arguments": _TABLE},
    "exchanges": {"name": _NAME, "vhost": _TEXT, "type": _NAME, "durable": _BOOLEAN,
                  "auto_delete": _BOOLEAN, "internal": _BOOLEAN, "arguments": _TABLE},
    "bindings": {"source": _NAME, "vhost": _TEXT, "destination": _NAME,
                 "destination_type": Field(_destination_type, required=True),
                 "routing_key": _TEXT,
                 "arguments": _TABLE},
}
#: The top-level fields read besides the sections (the exporter's version decides how a
#: password hash without ``hashing_algorithm`` was made).
_TOP: Final = {"rabbit_version": _TEXT, "rabbitmq_version": _TEXT}


def _item(item: Mapping[str, Any], where: str, fields: Mapping[str, Field]) -> dict[str, Any]:
    """The fields of ``item`` that ``fields`` names, each read (``null``: absent)."""
    out: dict[str, Any] = {}
    for key, field in fields.items():
        value = item.get(key)
        if value is None:
            if field.required:
                raise DefinitionsError(f"{where} has no {key!r}: {_show(item)}")
            continue
        out[key] = field.read(value, f"{where}.{key}" if where else key)
    return out


# -- the document as a whole -----------------------------------------------------------------------

def _not_json(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: Erlang's JSON decoder refuses it
        raise ValueError(f"{text} is out of range")
    return value


def parse(raw: bytes) -> Any:
    """The JSON value of a document's bytes (empty: ``{}``), bounded (see the module's
    documentation); :func:`check` says whether it is a document.

    Raises:
        DefinitionsError: too big, not UTF-8, not JSON, nested too deep (``reason``:
            ``failed_to_parse_json``, RabbitMQ's).
    """
    if len(raw) > MAX_BYTES:
        raise DefinitionsError(f"a definitions document has at most {MAX_BYTES} bytes; this "
                               f"one has {len(raw)}")
    if not raw:
        return {}  # (RabbitMQ's decode(<<"">>))
    try:
        return json_loads(raw.decode("utf-8"), parse_constant=_not_json, parse_float=_finite)
    except UnicodeDecodeError as exc:
        raise DefinitionsError(f"not JSON: not UTF-8 text ({exc.reason} at byte {exc.start})",
                               reason=NOT_JSON) from None
    except RecursionError:
        raise DefinitionsError(f"not a definitions document: nested more than {MAX_DEPTH} "
                               "levels deep", reason=NOT_JSON) from None
    except ValueError as exc:
        raise DefinitionsError(f"not JSON: {exc}", reason=NOT_JSON) from None


def read(raw: bytes) -> dict[str, Any]:
    """A document's bytes as RabbitMQ's definitions routes decode them before anything else:
    JSON whose top is an object (empty: ``{}``).

    Raises:
        DefinitionsError: too big, not JSON, not an object (``reason``:
            ``failed_to_parse_json``).
    """
    document = parse(raw)
    if not isinstance(document, dict):
        raise DefinitionsError(f"a definitions document is a JSON object, not {_show(document)}",
                               reason=NOT_JSON)
    return document


def _fine(document: Any) -> bool:
    """Whether ``document`` is JSON no deeper than :data:`MAX_DEPTH` (see :func:`_walk`): the
    quick look, which keeps no path (a 20,000-item export in 0.2 s, where :func:`_walk` takes
    0.7 s); :func:`_walk` looks again when it says no, to say where."""
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        values: Iterable[Any]
        if type(container) is dict:
            for key in container:
                if type(key) is not str or not encodes(key):
                    return False
            values = container.values()
        elif type(container) is list:
            values = container
        else:
            return False  # (another mapping: the careful walk)
        for value in values:
            kind = type(value)
            if kind is str:
                if not encodes(value):
                    return False
            elif kind is dict or kind is list:
                stack.append((value, depth + 1))
            elif kind is float:
                if not math.isfinite(value):
                    return False
            elif not (value is None or kind is bool or kind is int):
                return False
    return True


def _walk(document: Any) -> None:
    """Refuse what no JSON document holds, or more deeply nested than :data:`MAX_DEPTH`: a
    mapping with keys other than strings, a value that is no JSON value (a Python caller's
    ``bytes``, an infinite float), text that cannot be UTF-8 (a lone surrogate, which
    ``"\\ud800"`` in JSON is). Iterative: a deep document costs no Python stack."""
    if _fine(document):
        return
    stack: list[tuple[Any, int, Any]] = [(document, 1, None)]
    while stack:
        value, depth, parent = stack.pop()
        if depth > MAX_DEPTH:
            raise DefinitionsError(f"not a definitions document: nested more than {MAX_DEPTH} "
                                   f"levels deep (at {_path(parent)})", reason=NOT_JSON)
        if isinstance(value, str):
            _utf8(value, parent)
        elif isinstance(value, Mapping):
            for key, inner in value.items():
                if not isinstance(key, str):
                    raise DefinitionsError(f"{_path(parent) or 'the document'} has a key that "
                                           f"is no string: {key!r}")
                _utf8(key, parent)
                stack.append((inner, depth + 1, (parent, key)))
        elif isinstance(value, list):
            stack.extend((inner, depth + 1, (parent, index)) for index, inner in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise DefinitionsError(f"{_path(parent)} is {value}, which JSON has not")
        elif not (value is None or isinstance(value, (bool, int, float))):
            raise DefinitionsError(f"{_path(parent) or 'the document'} is no JSON value: "
                                   f"{type(value).__name__}")


def _utf8(text: str, parent: Any) -> None:
    if not encodes(text):
        raise DefinitionsError(f"{_path(parent) or 'the document'} has text that is not "
                               f"Unicode (a lone surrogate): {_show(text)}")


def _path(link: Any) -> str:
    """``queues[0].arguments`` from the chain of (parent, key) links :func:`_walk` keeps."""
    parts: list[str] = []
    while link is not None:
        link, key = link
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return "".join(reversed(parts)).lstrip(".")


def check(document: Any, *, scoped: bool = False) -> dict[str, Any]:
    """The document as the loader reads it (see the module's documentation); ``scoped``: a
    vhost's own definitions, which have :data:`VHOST_SECTIONS` only (others are ignored, and
    an item's ``vhost``: the vhost is the caller's).

    Raises:
        DefinitionsError: what is wrong, the first thing found (``reason``
            ``failed_to_parse_json`` for a document that is not an object, as RabbitMQ's).
    """
    if not isinstance(document, Mapping):
        raise DefinitionsError(f"a definitions document is a JSON object, not {_show(document)}",
                               reason=NOT_JSON)
    _walk(document)
    out: dict[str, Any] = {} if scoped else _item(document, "", _TOP)
    for section, fields in SECTIONS.items():
        if scoped and section not in VHOST_SECTIONS:
            continue
        items = document.get(section)
        if items is None:
            out[section] = []
            continue
        if not isinstance(items, list):
            raise _refuse(section, "a list of objects", items)
        if scoped:
            fields = {k: f for k, f in fields.items() if k != "vhost"}
        checked = []
        for index, item in enumerate(items):
            where = f"{section}[{index}]"
            if not isinstance(item, Mapping):
                raise _refuse(where, "an object", item)
            checked.append(_item(item, where, fields))
        out[section] = checked
    for index, user in enumerate(out.get("users", ())):
        if "tags" not in user and "administrator" not in user:  # (put_user/3)
            raise DefinitionsError(f"users[{index}] ({user['name']!r}) has no 'tags'",
                                   reason="tags_not_present")
        if "password" in user and "password_hash" in user:
            raise DefinitionsError(f"user {user['name']!r} has both password and password_hash",
                                   reason="both_password_and_password_hash_are_provided")
    return out
