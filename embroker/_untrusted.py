"""Text a client chose, on its way out of the broker: into JSON, and into a log line.

Theory of operation
-------------------
A client chooses much of the text the broker later writes: its client properties, queue and
exchange names, arguments, routing keys, headers, consumer tags, login names, close reasons.
AMQP 0-9-1 says nothing of their bytes, and RabbitMQ checks only some of them: the short strings
of methods without content, which Erlang must read as UTF-8 (``rabbit_binary_parser:
assert_utf8``; embroker's decoder asks :func:`erlang_utf8`, and a surrogate's encoding passes).
embroker decodes every other wire string with ``surrogateescape``
(:mod:`embroker.amqp091._fields`), so that any bytes survive a round trip: a byte that is no
UTF-8 becomes a lone surrogate (U+DC80 to U+DCFF), which no JSON encoder can write as UTF-8 and
which a log line must not carry either (AMQP 1.0 and the stream protocol write it as the byte
it stands for, as RabbitMQ passes such bytes on). This module is the one place that decides
what such text becomes:

- in JSON (:func:`json_bytes`, :func:`json_dumps`): what RabbitMQ 3.10's JSON encoder (jsx)
  writes for bytes that are no UTF-8: U+FFFD, one for each sequence it cannot read (a lead byte
  and the continuation bytes that follow it, or one stray byte). A table's string value is first
  read as RabbitMQ's management API reads it (:func:`utf8_safe`, ``rabbit_misc:utf8_safe``):
  itself when Erlang's ``xmerl_ucs`` reads it as UTF-8, else ``"Not UTF-8, base64 is: ..."``
  (:func:`embroker.fieldtypes.json_value` applies it to every table). Valid UTF-8 with control
  characters stays what it is, escaped by JSON itself (``\\n``, ``\\u001b``), as RabbitMQ's.
  Both were read live on a RabbitMQ 3.10.8 (tests/management/test_wire_strings.py);
- from JSON a client sent (:func:`json_loads`): a lone surrogate its escapes make
  (``"\\ud800"``) is U+FFFD, as jsx reads it, so that no such text gets in that way;
- in a log line (:func:`log_text`): every control character, line or paragraph separator,
  bidirectional override, surrogate and backslash escaped in Python's notation (``\\n``,
  ``\\x1b``, ``\\xff`` for a byte that was no UTF-8), so that one log call writes one line and a
  client cannot forge another (a login name ``"bob\\n2026-01-01 [INFO] ..."``).

Nothing here runs for the common text: ASCII, or UTF-8 that encodes, is written as it is (the
JSON fix-up is an error handler of the UTF-8 encoder, which runs only when a surrogate is met).
"""

from __future__ import annotations

import base64
import codecs
import json
import re
from typing import Any, Final

__all__ = ["encodes", "erlang_utf8", "json_bytes", "json_dumps", "json_loads", "json_text",
           "log_text", "utf8_safe"]

#: What RabbitMQ's management API writes for a table value that is no UTF-8, before its base64.
NOT_UTF8: Final = "Not UTF-8, base64 is: "

_REPLACEMENT: Final = "\ufffd"
#: The name of the UTF-8 encoder's error handler that writes JSON's replacements.
_JSON_ERRORS: Final = "embroker.json"
#: ... and the one that gives a client's bytes back (:func:`_raw`).
_RAW_ERRORS: Final = "embroker.raw"


def _sequence(data: bytes, start: int) -> tuple[int, bool]:
    """The UTF-8-shaped sequence at ``data[start]``, as Erlang reads it: its length (a lead byte
    and as many of the continuation bytes it calls for as follow it; one for any other byte),
    and whether ``xmerl_ucs:from_utf8`` takes it as a character (complete and not overlong:
    surrogates and code points up to 0x1FFFFF pass, as they do in RabbitMQ)."""
    lead = data[start]
    if 0xC0 <= lead <= 0xDF:
        need, lowest = 1, 0x80
    elif 0xE0 <= lead <= 0xEF:
        need, lowest = 2, 0x800
    elif 0xF0 <= lead <= 0xF7:
        need, lowest = 3, 0x10000
    else:
        return 1, lead < 0x80
    end = start + 1
    while end < len(data) and end - start <= need and 0x80 <= data[end] <= 0xBF:
        end += 1
    if end - start - 1 < need:
        return end - start, False
    code = lead & (0x3F >> need)
    for byte in data[start + 1:end]:
        code = code << 6 | (byte & 0x3F)
    return end - start, code >= lowest


def _raw(text: str) -> bytes:
    """The bytes ``text`` stands for: UTF-8, each ``surrogateescape`` surrogate (U+DC80 to
    U+DCFF) its byte again, any other lone surrogate (from a JSON ``\\ud800``) its own three
    bytes."""
    return text.encode("utf-8", _RAW_ERRORS)


def _raw_errors(error: UnicodeError) -> tuple[bytes, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    out = bytearray()
    for char in error.object[error.start:error.end]:
        code = ord(char)
        out += bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF else \
            char.encode("utf-8", "surrogatepass")
    return bytes(out), error.end


def _replaced(data: bytes) -> str:
    """``data`` read as UTF-8, each sequence that is no UTF-8 (:func:`_sequence`) one U+FFFD:
    what jsx, RabbitMQ's JSON encoder, writes for it (``\\xed\\xa0\\x80``, a surrogate's
    encoding: one; ``\\xff\\xfe``: two)."""
    out: list[str] = []
    start = 0
    while True:
        try:
            out.append(data[start:].decode("utf-8"))
            return "".join(out)
        except UnicodeDecodeError as bad:
            at = start + bad.start
            out.append(data[start:at].decode("utf-8"))
            out.append(_REPLACEMENT)
            start = at + _sequence(data, at)[0]


def _json_errors(error: UnicodeError) -> tuple[bytes, int]:
    """The UTF-8 encoder's error handler for JSON text: a run of surrogates becomes what
    :func:`_replaced` makes of the bytes they stand for (as bytes: the encoder takes no text
    but ASCII from a handler)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text, end = error.object, error.end
    while end < len(text) and 0xD800 <= ord(text[end]) <= 0xDFFF:
        end += 1
    return _replaced(_raw(text[error.start:end])).encode("utf-8"), end


codecs.register_error(_JSON_ERRORS, _json_errors)
codecs.register_error(_RAW_ERRORS, _raw_errors)


def json_text(text: str) -> str:
    """``text`` with each run of surrogates replaced as RabbitMQ's JSON encoder replaces bytes
    that are no UTF-8 (:func:`_replaced`): text any JSON encoder writes as UTF-8.

    >>> json_text("q-\\udced\\udca0\\udc80"), json_text("k\\udcff\\udcfe"), json_text("caf\\xe9")
    ('q-\\ufffd', 'k\\ufffd\\ufffd', 'café')
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", _JSON_ERRORS).decode("utf-8")
    return text


def json_bytes(text: str) -> bytes:
    """JSON text (written with ``ensure_ascii=False``) as the UTF-8 bytes the broker sends or
    writes: what a client chose and is no UTF-8 replaced as :func:`json_text` says. The one
    way every JSON the broker writes becomes bytes (the management API, the console, trace
    files, exported definitions).

    >>> json_bytes('{"name":"q\\udcff"}')
    b'{"name":"q\\xef\\xbf\\xbd"}'
    """
    return text.encode("utf-8", _JSON_ERRORS)


def json_dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)``, its strings first made writable (:func:`json_text`)
    when any is not: for JSON text that is printed or escaped to ASCII (``ensure_ascii``, the
    default, would write a surrogate as ``\\udcff``, which strict parsers refuse).

    >>> json_dumps({"k\\udcff": ["\\udced\\udca0\\udc80", 1]})
    '{"k\\\\ufffd": ["\\\\ufffd", 1]}'
    """
    text = json.dumps(value, **options)
    if options.get("ensure_ascii", True):
        if "\\ud" not in text:  # (an astral character's escaped pair also has one: rare)
            return text
    elif encodes(text):
        return text
    return json.dumps(_writable(value), **options)


#: A JSON escape of a surrogate (half of a pair, or a lone one).
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")
_SURROGATE_ESCAPE_BYTES: Final = re.compile(rb"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def json_loads(text: str | bytes, **options: Any) -> Any:
    """``json.loads(text, **options)`` for JSON a client sent (a management API body, a
    definitions file), each lone surrogate its escapes make (``"\\ud800"``, which JSON allows and
    no UTF-8 can carry) read as U+FFFD, as RabbitMQ's JSON decoder (jsx) reads it; an escaped
    pair is its character. The one way JSON from outside becomes text in the broker, so that
    what it holds can always be written again (to AMQP, to JSON, to a log).

    >>> found = json_loads('{"a\\\\ud800": ["\\\\udcff", "\\\\ud83d\\\\ude00"]}')
    >>> found == {"a\\ufffd": ["\\ufffd", "\\U0001f600"]}
    True
    """
    value = json.loads(text, **options)
    found = _SURROGATE_ESCAPE.search(text) if isinstance(text, str) else \
        _SURROGATE_ESCAPE_BYTES.search(text)
    return value if found is None else _without_lone_surrogates(value)


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(_REPLACEMENT, value)
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    return value


def encodes(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8: it holds no lone surrogate (what a 0-9-1
    string that was no UTF-8 decodes to, with ``surrogateescape``, or half a pair a JSON
    escape made).

    >>> encodes("caf\\u00e9"), encodes("q\\udcff")
    (True, False)
    """
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _writable(value: Any) -> Any:
    if isinstance(value, str):
        return json_text(value)
    if isinstance(value, dict):
        return {json_text(k) if isinstance(k, str) else k: _writable(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_writable(v) for v in value]
    return value


def erlang_utf8(data: bytes) -> bool:
    """Whether RabbitMQ reads ``data`` as UTF-8 (``xmerl_ucs:from_utf8/1``, which its 0-9-1
    decoder asks of every short string of a method without content, and its management API of
    every table value): each sequence complete and not overlong (:func:`_sequence`).

    >>> erlang_utf8("é".encode()), erlang_utf8(b"\\xed\\xa0\\x80"), erlang_utf8(b"\\xc0\\x80")
    (True, True, False)
    """
    at = 0
    while at < len(data):
        if data[at] < 0x80:
            at += 1
            continue
        length, readable = _sequence(data, at)
        if not readable:
            return False
        at += length
    return True


def utf8_safe(value: str | bytes | bytearray | memoryview) -> str:
    """A table's string value (a long string, or a byte array) as RabbitMQ's management API
    writes it (``rabbit_misc:utf8_safe/1``): its text when Erlang reads its bytes as UTF-8
    (``xmerl_ucs``: complete, not overlong; a surrogate's or a code point's past U+10FFFF
    encoding passes, and becomes U+FFFD in the JSON, :func:`json_text`), else ``"Not UTF-8,
    base64 is: "`` and the base64 of its bytes, in lines of 76 characters (MIME's).

    >>> utf8_safe("\\udcff\\udcfe"), utf8_safe(b"\\xed\\xa0\\x80"), utf8_safe("a\\nb")
    ('Not UTF-8, base64 is: //4=', '\\ufffd', 'a\\nb')
    """
    if isinstance(value, str):
        if encodes(value):
            return value
        data = _raw(value)
    else:
        data = bytes(value)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    if erlang_utf8(data):
        return _replaced(data)
    encoded = base64.b64encode(data).decode("ascii")
    return NOT_UTF8 + "\n".join(encoded[i:i + 76] for i in range(0, len(encoded), 76))


#: What a log line must not carry raw: C0 and C1 control characters and DEL, the line and
#: paragraph separators, bidirectional controls (which reorder what a reader sees), lone
#: surrogates, and the backslash (so that an escape in the line is always the broker's).
_UNSAFE_IN_LOG: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\\\\\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]")
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _log_escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was no UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def log_text(text: object) -> str:
    """``text`` (a client's: a name, a reason, a property) made fit for one log line: control
    characters, separators, bidirectional controls, surrogates and backslashes escaped as
    Python writes them, everything else as it is. Every log call that writes text a client
    chose passes it through here.

    >>> log_text("bob\\r\\n2026-01-01 [info] \\x1b[31mroot\\x1b[0m"), log_text("caf\\xe9 \\udcff\\\\")
    ('bob\\\\r\\\\n2026-01-01 [info] \\\\x1b[31mroot\\\\x1b[0m', 'café \\\\xff\\\\\\\\')
    """
    text = text if isinstance(text, str) else str(text)
    if _UNSAFE_IN_LOG.search(text) is None:
        return text
    return _UNSAFE_IN_LOG.sub(_log_escape, text)
