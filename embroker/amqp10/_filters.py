"""RabbitMQ 4's AMQP 1.0 filter expressions on stream receivers.

Two kinds, both applied by the broker to each message a stream receiver reads (unlike the
``rabbitmq:stream-filter`` Bloom filter, which chooses whole chunks):

* **Property filter expressions** (RabbitMQ 4.1+, v4.2.9 ``rabbit_amqp_filter_prop``, in 4.1.4
  ``rabbit_amqp_filtex``): ``amqp:properties-filter`` (``0x173``) and
  ``amqp:application-properties-filter`` (``0x174``), a map of field to value; a message
  passes when every field matches. String values may carry the modifiers ``&p:`` (prefix),
  ``&s:`` (suffix) and ``&&`` (a literal leading ``&``).
* **SQL filter expressions** (RabbitMQ 4.2+, ``rabbit_amqp_filter_sql`` with its lexer and
  parser): ``amqp:sql-filter`` (``0x120``) under the filter key ``sql-filter``, a conditional
  expression over ``header.priority``, ``properties.*`` (``p.*``) and application properties,
  with three-valued logic (the selector module's, shared).

Values are compared as RabbitMQ compares Erlang terms: strings, symbols, binaries and UUIDs
are all byte strings (``'abc' = 0x616263`` holds), integers and floats compare as numbers
(``1 = 1.0``), booleans only with booleans.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, final

from .. import _regex
from ..amqp10_common._definitions import Properties
from ..amqp10_common._message import parse_message, to_amqp10
from ..amqp10_common._types import Char, Described, Symbol, Timestamp, UInt, ULong
from ._selector import _and, _negate, _or

if TYPE_CHECKING:
    from ..model import Message

__all__ = [
    "APPLICATION_PROPERTIES_FILTER", "PROPERTIES_FILTER", "SQL_FILTER", "SQL_FILTER_KEY",
    "FilterView", "SqlError", "descriptor_is", "parse_property_filter", "parse_sql",
    "property_filters_match", "sql_filter", "to_sql", "view_of",
]

#: Descriptors of the filter expressions (``amqp10_filter.hrl``): (symbol, code).
PROPERTIES_FILTER: Final = ("amqp:properties-filter", 0x173)
APPLICATION_PROPERTIES_FILTER: Final = ("amqp:application-properties-filter", 0x174)
SQL_FILTER: Final = ("amqp:sql-filter", 0x120)
#: The filter-set key an SQL filter must have (``?FILTER_NAME_SQL``).
SQL_FILTER_KEY: Final = "sql-filter"

#: "Impose a limit on the complexity of each filter expression" (``?MAX_FILTER_FIELDS``).
MAX_FILTER_FIELDS: Final = 16
#: ``rabbit_amqp_filter_sql``'s limits: characters of an expression, tokens.
MAX_EXPRESSION_LENGTH: Final = 4096
MAX_TOKENS: Final = 200
#: The priority of a message that has none (``?DEFAULT_MSG_PRIORITY``).
DEFAULT_PRIORITY: Final = 4


class _Other:
    """A value RabbitMQ would not compare equal to any simple value (a list, a map...)."""

    __slots__ = ()


_OTHER: Final = _Other()


def _term(value: Any) -> Any:
    """A decoded AMQP value as the Erlang term RabbitMQ compares: every string kind a byte
    string, a UUID its 16 bytes, a char its code point."""
    if value is None or isinstance(value, (bool, bytes)):
        return value
    if isinstance(value, Char):
        return ord(value)
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, (int, float)):
        return value
    return _OTHER


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equal(a: Any, b: Any) -> bool:
    """Erlang's ``==`` on the terms :func:`_term` makes."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, bytes) and isinstance(b, bytes):
        return a == b
    return False


# -- the message as the filters see it ----------------------------------------------------------

@final
@dataclass(slots=True)
class FilterView:
    """What filters read of a message: its properties section (``None`` when it has none),
    its application properties as RabbitMQ's simple map (``mc_amqp``'s
    ``application_properties_as_simple_map``: the simple values only, keys as bytes) and its
    header's priority (``None`` when unset)."""

    properties: Properties | None
    application_properties: dict[bytes, Any]
    priority: int | None


def view_of(message: Message) -> FilterView:
    """The message as a 1.0 receiver of the stream reads it.

    Runtime complexity: ``O(size of the message)``.
    """
    parsed = parse_message(to_amqp10(message, first_acquirer=True, delivery_count=0,
                                     annotations={}))
    app: dict[bytes, Any] = {}
    for key, value in parsed.application_properties.items():
        if type(key) is str:
            term = _term(value)
            if term is not _OTHER:
                app[key.encode()] = term
    header = parsed.header
    priority = header.priority if header is not None else None
    return FilterView(parsed.properties, app, priority)


def _property(view: FilterView, name: str) -> Any:
    props = view.properties
    return None if props is None else _term(getattr(props, name))


# -- property filter expressions (RabbitMQ 4.1+) -------------------------------------------------

_Affix = tuple[str, bytes]  # ("prefix" | "suffix", bytes)
_Parsed = tuple[str, tuple[tuple[Any, Any], ...]]  # (section, ((field, reference value), ...))


class _Invalid(Exception):
    pass


def _modifier(text: str) -> Any:
    """A string's modifier (``parse_string_modifier_prefix/1``): ``&s:`` a suffix, ``&p:`` a
    prefix, ``&&`` escapes a leading ``&``; any other leading ``&`` makes the filter invalid."""
    raw = text.encode()
    if raw.startswith(b"&s:"):
        return ("suffix", raw[3:])
    if raw.startswith(b"&p:"):
        return ("prefix", raw[3:])
    if raw.startswith(b"&&"):
        return raw[1:]
    if raw.startswith(b"&"):
        raise _Invalid(text)
    return raw


def _message_id(value: Any) -> Any:
    # parse_message_id/1: ulong, uuid, binary or string (with modifiers)
    if isinstance(value, ULong):
        return int(value)
    if isinstance(value, uuid.UUID):
        return value.bytes
    if type(value) is bytes:
        return value
    if type(value) is str:
        return _modifier(value)
    raise _Invalid(value)


def _utf8(value: Any) -> Any:
    if type(value) is str:
        return _modifier(value)
    raise _Invalid(value)


def _typed(kind: type[Any]) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        if type(value) is kind:
            return _term(value)
        raise _Invalid(value)
    return parse


#: The fields of ``amqp:properties-filter`` and how each reference value must be typed
#: (``rabbit_amqp_filter_prop:parse_props/2``).
_PROPERTY_FIELDS: Final[dict[str, tuple[str, Callable[[Any], Any]]]] = {
    "message-id": ("message_id", _message_id),
    "user-id": ("user_id", _typed(bytes)),
    "to": ("to", _utf8),
    "subject": ("subject", _utf8),
    "reply-to": ("reply_to", _utf8),
    "correlation-id": ("correlation_id", _message_id),
    "content-type": ("content_type", _typed(Symbol)),
    "content-encoding": ("content_encoding", _typed(Symbol)),
    "absolute-expiry-time": ("absolute_expiry_time", _typed(Timestamp)),
    "creation-time": ("creation_time", _typed(Timestamp)),
    "group-id": ("group_id", _utf8),
    "group-sequence": ("group_sequence", _typed(UInt)),
    "reply-to-group-id": ("reply_to_group_id", _utf8),
}


def descriptor_is(descriptor: Any, names: tuple[str, int]) -> bool:
    if isinstance(descriptor, Symbol):
        return str(descriptor) == names[0]
    return isinstance(descriptor, ULong) and int(descriptor) == names[1]


def parse_property_filter(value: Any) -> _Parsed | None:
    """A property filter expression as ``rabbit_amqp_filter_prop:parse/1`` reads it:
    ``("properties" | "application_properties", ((field, reference), ...))``, or ``None``
    when it is not one (another descriptor, an empty map or more than 16 fields, a field of
    the wrong type, an unknown property, a string starting with a lone ``&``).

    >>> from embroker.amqp10_common._types import Described, Symbol
    >>> parse_property_filter(Described(Symbol("amqp:properties-filter"),
    ...                                 {Symbol("subject"): "&p:order"}))
    ('properties', (('subject', ('prefix', b'order')),))
    """
    if not isinstance(value, Described) or not isinstance(value.value, dict):
        return None
    fields = value.value
    if not fields or len(fields) > MAX_FILTER_FIELDS:
        return None
    try:
        if descriptor_is(value.descriptor, PROPERTIES_FILTER):
            parsed = []
            for key, ref in fields.items():
                if type(key) is not Symbol or str(key) not in _PROPERTY_FIELDS:
                    return None
                name, parse = _PROPERTY_FIELDS[str(key)]
                parsed.append((name, parse(ref)))
            return ("properties", tuple(parsed))
        if descriptor_is(value.descriptor, APPLICATION_PROPERTIES_FILTER):
            app = []
            for key, ref in fields.items():
                if type(key) is not str:
                    return None  # the keys are strings (utf8), not symbols
                app.append((key.encode(), _modifier(ref) if type(ref) is str else _term(ref)))
            return ("application_properties", tuple(app))
    except _Invalid:
        return None
    return None


def _matches(ref: Any, value: Any) -> bool:
    """``match_simple_type/2``: a null reference matches anything; an affix matches a byte
    string; otherwise the values are equal as Erlang's ``==`` has them."""
    if ref is None:
        return True
    if isinstance(ref, tuple):
        kind, affix = ref
        if not isinstance(value, bytes):
            return False
        return value.startswith(affix) if kind == "prefix" else value.endswith(affix)
    return _equal(ref, value)


def property_filters_match(filters: Sequence[_Parsed], view: FilterView) -> bool:
    """Whether a message passes every property filter (``rabbit_amqp_filter_prop:eval/2``):
    each property field must match; each application-properties key must be present and
    match."""
    for section, fields in filters:
        if section == "properties":
            if not all(_matches(ref, _property(view, name)) for name, ref in fields):
                return False
        else:
            app = view.application_properties
            if not all(key in app and _matches(ref, app[key]) for key, ref in fields):
                return False
    return True


# -- SQL filter expressions (RabbitMQ 4.2+) ------------------------------------------------------

class SqlError(ValueError):
    """An SQL filter expression RabbitMQ 4.2 does not accept (it then ignores the filter)."""


_KEYWORDS: Final = ("AND", "OR", "NOT", "LIKE", "IN", "IS", "NULL", "ESCAPE", "TRUE",
                    "FALSE", "UTC")
#: Identifiers reserved in any case (``?KEYWORDS`` of the lexer): an identifier that is one of
#: them, lower-cased, is an error.
_RESERVED: Final = frozenset({"and", "or", "not", "like", "in", "is", "null", "escape", "true",
                              "false", "exists", "nan", "inf", "lower", "upper", "left",
                              "right", "substring", "utc", "date"})
_OPERATORS: Final = ("<>", "!=", "=", ">=", "<=", ">", "<", "+", "-", "*", "/", "%", "(", ")",
                     ",")

# The lexer's rules in their order (``rabbit_amqp_sql_lexer.xrl``): the longest match wins, the
# earlier rule on a tie.
_RULES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("space", re.compile(r"[ \t\f\n\r]+")),
    *((word, re.compile(word)) for word in _KEYWORDS),
    *((op, re.compile(re.escape(op))) for op in _OPERATORS),
    ("integer", re.compile(r"[0-9]+")),
    ("float", re.compile(r"[0-9]+\.[0-9]+(?:E[+\-]?[0-9]+)?")),
    ("string", re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")),
    ("binary", re.compile(r"0x(?:[0-9A-F][0-9A-F])+")),
    ("section", re.compile(r"[a-zA-Z][a-zA-Z_\-]*\.[a-zA-Z][a-zA-Z0-9_]*")),
    ("delimited", re.compile(r"\[(?:[^\[\]]|\[\[|\]\])*\]")),
    ("regular", re.compile(r"[a-zA-Z][a-zA-Z0-9_]*")),
)

#: ``rabbit_amqp_util:section_field_name_to_atom/1``: the fields a section identifier names.
_PROPERTY_NAMES: Final = frozenset({
    "message_id", "user_id", "to", "subject", "reply_to", "correlation_id", "content_type",
    "content_encoding", "absolute_expiry_time", "creation_time", "group_id", "group_sequence",
    "reply_to_group_id"})

_Token = tuple[str, Any]


def _is_control(char: str) -> bool:
    return ord(char) < 32 or ord(char) == 127


def _section_identifier(text: str) -> Any:
    section, _, name = text.partition(".")
    if section in ("header", "h"):
        if name == "priority":
            return "priority"
    elif section in ("properties", "p"):
        if name in _PROPERTY_NAMES:
            return name
    elif section in ("application_properties", "a"):
        return name.encode()
    raise SqlError(f"unsupported field name {text!r}")


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        best, kind = 0, ""
        for name, pattern in _RULES:
            match = pattern.match(text, pos)
            if match is not None and match.end() - pos > best:
                best, kind = match.end() - pos, name
        if not best:
            raise SqlError(f"illegal character {text[pos]!r}")
        chars = text[pos:pos + best]
        pos += best
        if kind == "space":
            continue
        if kind == "integer":
            tokens.append(("integer", int(chars)))
        elif kind == "float":
            tokens.append(("float", float(chars)))
        elif kind == "string":
            quote = chars[0]
            tokens.append(("string", chars[1:-1].replace(quote * 2, quote).encode()))
        elif kind == "binary":
            tokens.append(("binary", bytes.fromhex(chars[2:])))
        elif kind == "section":
            tokens.append(("identifier", _section_identifier(chars)))
        elif kind == "delimited":
            inner = chars[1:-1]
            if any(_is_control(c) for c in inner):
                raise SqlError("illegal control character in identifier")
            tokens.append(("identifier",
                           inner.replace("[[", "[").replace("]]", "]").encode()))
        elif kind == "regular":
            if chars.lower() in _RESERVED:
                raise SqlError(f"unsupported identifier {chars!r}")
            tokens.append(("identifier", chars.encode()))
        elif kind in ("TRUE", "FALSE"):
            tokens.append(("boolean", kind == "TRUE"))
        else:
            tokens.append(("<>" if kind == "!=" else kind, None))
    return tokens


# The syntax tree, as tuples in the shape of RabbitMQ's: ("integer" | "float" | "string" |
# "binary" | "boolean", value), ("identifier", name) (a str names a header or properties field,
# bytes an application property), ("utc",), ("and" | "or" | comparison | arithmetic, a, b),
# ("not", a), ("unary_plus" | "unary_minus", a), ("in", a, (b, ...)), ("is_null", a),
# ("like", a, pattern, escape or None).
Ast = tuple[Any, ...]

_COMPARISONS: Final = ("=", "<>", ">", "<", ">=", "<=")


@final
class _Parser:
    """``rabbit_amqp_sql_parser.yrl`` as a recursive descent: OR below AND below NOT below the
    comparisons (not associative), then ``+ -``, then ``* / %``, then unary ``+ -`` on a
    primary."""

    __slots__ = ("pos", "tokens")

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self, offset: int = 0) -> str | None:
        at = self.pos + offset
        return self.tokens[at][0] if at < len(self.tokens) else None

    def take(self, kind: str) -> _Token:
        if self.peek() != kind:
            found = self.peek()
            raise SqlError(f"syntax error before {found!r}" if found else
                           "syntax error at the end")
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def selector(self) -> Ast:
        ast = self.logical()
        if self.pos != len(self.tokens):
            raise SqlError(f"syntax error before {self.peek()!r}")
        return ast

    def logical(self) -> Ast:
        left = self.conjunction()
        while self.peek() == "OR":
            self.pos += 1
            left = ("or", left, self.conjunction())
        return left

    def conjunction(self) -> Ast:
        left = self.negation()
        while self.peek() == "AND":
            self.pos += 1
            left = ("and", left, self.negation())
        return left

    def negation(self) -> Ast:
        if self.peek() == "NOT":
            self.pos += 1
            return ("not", self.negation())
        return self.comparison()

    def comparison(self) -> Ast:
        start = self.pos
        left = self.additive()
        kind = self.peek()
        if kind in _COMPARISONS:
            self.pos += 1
            return (kind, left, self.additive())
        if kind == "IS":
            # ``identifier_expr IS [NOT] NULL``: a bare identifier only
            if self.pos - start != 1 or self.tokens[start][0] != "identifier":
                raise SqlError("syntax error before 'IS'")
            self.pos += 1
            negate = self.peek() == "NOT"
            if negate:
                self.pos += 1
            self.take("NULL")
            return ("not", ("is_null", left)) if negate else ("is_null", left)
        negate = kind == "NOT" and self.peek(1) in ("LIKE", "IN")
        if negate:
            self.pos += 1
            kind = self.peek()
        if kind == "LIKE":
            self.pos += 1
            pattern = self.take("string")[1]
            escape = None
            if self.peek() == "ESCAPE":
                self.pos += 1
                escape = self.take("string")[1].decode()
                if len(escape) != 1:
                    raise SqlError("ESCAPE must be a single-character string literal")
            test: Ast = ("like", left, pattern.decode(), escape)
        elif kind == "IN":
            self.pos += 1
            self.take("(")
            values = [self.additive()]
            while self.peek() == ",":
                self.pos += 1
                values.append(self.additive())
            self.take(")")
            test = ("in", left, tuple(values))
        else:
            return left
        return ("not", test) if negate else test

    def additive(self) -> Ast:
        left = self.multiplicative()
        while (kind := self.peek()) in ("+", "-"):
            self.pos += 1
            left = (kind, left, self.multiplicative())
        return left

    def multiplicative(self) -> Ast:
        left = self.unary()
        while (kind := self.peek()) in ("*", "/", "%"):
            self.pos += 1
            left = (kind, left, self.unary())
        return left

    def unary(self) -> Ast:
        kind = self.peek()
        if kind in ("+", "-"):
            self.pos += 1
            return ("unary_plus" if kind == "+" else "unary_minus", self.primary())
        return self.primary()

    def primary(self) -> Ast:
        kind = self.peek()
        if kind == "(":
            self.pos += 1
            inner = self.logical()
            self.take(")")
            return inner
        if kind == "UTC":
            self.pos += 1
            self.take("(")
            self.take(")")
            return ("utc",)
        if kind in ("integer", "float", "string", "binary", "boolean", "identifier"):
            token = self.tokens[self.pos]
            self.pos += 1
            return token
        raise SqlError(f"syntax error before {kind!r}" if kind else "syntax error at the end")


def parse_sql(text: str) -> Ast:
    """An SQL filter expression's syntax tree, checked as ``rabbit_amqp_filter_sql:parse/1``
    checks it: at most 4096 characters and 200 tokens, keywords in capitals (other spellings
    of a keyword are errors, as are ``exists``, ``nan``, ``inf``, ``lower``, ``upper``,
    ``left``, ``right``, ``substring`` and ``date``), valid LIKE patterns.

    Raises:
        SqlError: RabbitMQ 4.2 would not accept it (and would ignore the filter).

    >>> parse_sql("p.subject = 'a' AND n > 1")
    ('and', ('=', ('identifier', 'subject'), ('string', b'a')), ('>', ('identifier', b'n'), ('integer', 1)))
    """
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise SqlError(f"SQL expression length {len(text)} exceeds maximum length "
                       f"{MAX_EXPRESSION_LENGTH}")
    tokens = _tokenize(text)
    if len(tokens) > MAX_TOKENS:
        raise SqlError(f"SQL expression with {len(tokens)} tokens exceeds token limit "
                       f"{MAX_TOKENS}")
    ast = _Parser(tokens).selector()
    _check_patterns(ast)
    return ast


def _children(ast: Ast) -> list[Ast]:
    kind = ast[0]
    if kind in ("integer", "float", "string", "binary", "boolean", "identifier", "utc"):
        return []
    if kind == "in":
        return [ast[1], *ast[2]]
    if kind == "like":
        return [ast[1]]
    return list(ast[1:])


def _check_patterns(ast: Ast) -> None:
    if ast[0] == "like":
        _compile_pattern(ast[2], ast[3])
    for child in _children(ast):
        _check_patterns(child)


_Pattern = tuple[Any, ...]


def _check_char(char: str) -> str:
    if _is_control(char):
        raise SqlError(f"illegal control character {ord(char)} in LIKE pattern")
    return char


def _compile_pattern(pattern: str, escape: str | None) -> _Pattern:
    """A LIKE pattern as ``transform_pattern/2`` compiles it: no wildcard an exact match, one
    ``%`` (and no ``_``) a prefix and/or suffix match, otherwise an anchored regular expression
    (``%`` any run, as short as possible, ``_`` one character, neither across a newline)."""
    chars: list[str] = []
    percent = -1
    regex = False
    it = iter(pattern)
    for char in it:
        if char == escape:
            following = next(it, None)
            if following is None:
                raise SqlError("invalid escape at the end of the LIKE pattern")
            chars.append(_check_char(following))
        elif char == "_" or (char == "%" and percent >= 0):
            regex = True
            break
        elif char == "%":
            percent = len(chars)
        else:
            chars.append(_check_char(char))
    if not regex:
        text = "".join(chars)
        if percent < 0:
            return ("exact", text.encode())
        if percent == 0:
            return ("suffix", text.encode())
        if percent == len(chars):
            return ("prefix", text.encode())
        return ("prefix_suffix", "".join(chars[:percent]).encode(),
                "".join(chars[percent:]).encode())
    out = []
    it = iter(pattern)
    for char in it:
        if char == escape:
            following = next(it, None)
            if following is None:
                raise SqlError("invalid escape at the end of the LIKE pattern")
            out.append(re.escape(_check_char(following)))
        elif char == "%":
            out.append(".*?")
        elif char == "_":
            out.append(".")
        else:
            out.append(re.escape(_check_char(char)))
    try:  # (a client's pattern: matched in linear time, never by backtracking)
        return ("regex", _regex.compile("^" + "".join(out) + "$"))
    except _regex.error as exc:
        raise SqlError(f"LIKE pattern too large: {exc}") from None


def _like(subject: bytes, pattern: _Pattern) -> Any:
    kind = pattern[0]
    if kind == "exact":
        return subject == pattern[1]
    if kind == "prefix":
        return subject.startswith(pattern[1])
    if kind == "suffix":
        return subject.endswith(pattern[1])
    if kind == "prefix_suffix":
        prefix, suffix = pattern[1], pattern[2]
        return (len(subject) >= len(prefix) + len(suffix) and subject.startswith(prefix)
                and subject.endswith(suffix))
    try:
        text = subject.decode()
    except UnicodeDecodeError:
        return None  # not UTF-8: unknown
    return pattern[1].search(text)


# -- evaluation ----------------------------------------------------------------------------------

_Value = Any
_Eval = Callable[[FilterView], _Value]


def _compare(op: str, a: _Value, b: _Value) -> _Value:
    """``compare/3``: unknown with a missing side; ``=``/``<>`` as Erlang's ``==``; an
    ordering between two numbers or two byte strings, and false between other kinds."""
    if a is None or b is None:
        return None
    if op == "=":
        return _equal(a, b)
    if op == "<>":
        return not _equal(a, b)
    if not ((_is_number(a) and _is_number(b)) or (isinstance(a, bytes) and isinstance(b, bytes))):
        return False
    if op == ">":
        return a > b
    if op == "<":
        return a < b
    if op == ">=":
        return a >= b
    return a <= b


def _arithmetic(op: str, a: _Value, b: _Value) -> _Value:
    """``arithmetic/3``: numbers only, else unknown; ``/`` always a float (Erlang's ``/``) and
    unknown by zero; ``%`` integers only, the remainder taking the dividend's sign (``rem``)."""
    if not (_is_number(a) and _is_number(b)):
        return None
    try:
        if op == "+":
            result = a + b
        elif op == "-":
            result = a - b
        elif op == "*":
            result = a * b
        elif op == "/":
            if b == 0:
                return None
            result = a / b
        else:
            if not (isinstance(a, int) and isinstance(b, int)) or b == 0:
                return None
            remainder = abs(a) % abs(b)
            return -remainder if a < 0 else remainder
    except OverflowError:
        return None
    if isinstance(result, float) and not math.isfinite(result):
        return None  # Erlang raises badarith: RabbitMQ's reader would fail, embroker says unknown
    return result


def _field(name: str, view: FilterView) -> _Value:
    if name == "priority":
        return view.priority if view.priority is not None else DEFAULT_PRIORITY
    return _property(view, name)


def _build(ast: Ast, now_ms: Callable[[], int]) -> _Eval:
    kind = ast[0]
    if kind in ("integer", "float", "string", "binary", "boolean"):
        value = ast[1]
        return lambda v: value
    if kind == "identifier":
        name = ast[1]
        if isinstance(name, bytes):
            return lambda v: v.application_properties.get(name)
        return lambda v: _field(name, v)
    if kind == "utc":
        return lambda v: now_ms()
    if kind == "and":
        return _and(_build(ast[1], now_ms), _build(ast[2], now_ms))
    if kind == "or":
        return _or(_build(ast[1], now_ms), _build(ast[2], now_ms))
    if kind == "not":
        operand = _build(ast[1], now_ms)

        def negation(v: FilterView) -> _Value:
            value = operand(v)
            return _negate(value) if isinstance(value, bool) else None  # else unknown
        return negation
    if kind in _COMPARISONS:
        left, right = _build(ast[1], now_ms), _build(ast[2], now_ms)
        return lambda v: _compare(kind, left(v), right(v))
    if kind in ("+", "-", "*", "/", "%"):
        left, right = _build(ast[1], now_ms), _build(ast[2], now_ms)
        return lambda v: _arithmetic(kind, left(v), right(v))
    if kind in ("unary_plus", "unary_minus"):
        inner = _build(ast[1], now_ms)
        sign = 1 if kind == "unary_plus" else -1

        def signed(v: FilterView) -> _Value:
            value = inner(v)
            return (value if sign == 1 else -value) if _is_number(value) else None
        return signed
    if kind == "in":
        left = _build(ast[1], now_ms)
        values = [_build(item, now_ms) for item in ast[2]]

        def member(v: FilterView) -> _Value:
            value = left(v)
            if value is None:
                return None
            return any(_equal(item(v), value) for item in values)
        return member
    if kind == "is_null":
        inner = _build(ast[1], now_ms)
        return lambda v: inner(v) is None
    if kind == "like":
        subject = _build(ast[1], now_ms)
        pattern = _compile_pattern(ast[2], ast[3])

        def like(v: FilterView) -> _Value:
            value = subject(v)
            return _like(value, pattern) if isinstance(value, bytes) else None
        return like
    raise AssertionError(kind)


def sql_filter(ast: Ast, now_ms: Callable[[], int]) -> Callable[[FilterView], bool]:
    """The predicate of a parsed expression: a message passes when the expression is true
    (false and unknown do not pass). ``now_ms`` is ``UTC()``: the broker clock's time in
    milliseconds."""
    test = _build(ast, now_ms)
    return lambda view: test(view) is True


def to_sql(ast: Ast) -> str:
    """The expression text of a syntax tree, every operation in parentheses (for messages and
    tests: ``parse_sql(to_sql(t)) == t``)."""
    kind = ast[0]
    if kind == "integer":
        return str(ast[1])
    if kind == "float":
        mantissa, _, exponent = repr(ast[1]).upper().partition("E")
        if "." not in mantissa:
            mantissa += ".0"
        return mantissa + ("E" + exponent.lstrip("+") if exponent else "")
    if kind == "string":
        text: str = ast[1].decode()
        return "'" + text.replace("'", "''") + "'"
    if kind == "binary":
        hexed: str = ast[1].hex()
        return "0x" + hexed.upper()
    if kind == "boolean":
        return "TRUE" if ast[1] else "FALSE"
    if kind == "identifier":
        name = ast[1]
        if isinstance(name, bytes):
            return "[" + name.decode().replace("[", "[[").replace("]", "]]") + "]"
        return "header.priority" if name == "priority" else f"properties.{name}"
    if kind == "utc":
        return "UTC()"
    if kind == "not":
        return f"(NOT {to_sql(ast[1])})"
    if kind in ("unary_plus", "unary_minus"):
        sign = "+" if kind == "unary_plus" else "-"
        return f"{sign}({to_sql(ast[1])})"
    if kind == "in":
        return f"({to_sql(ast[1])} IN ({', '.join(to_sql(a) for a in ast[2])}))"
    if kind == "is_null":
        return f"({to_sql(ast[1])} IS NULL)"
    if kind == "like":
        pattern = "'" + ast[2].replace("'", "''") + "'"
        escape = "" if ast[3] is None else " ESCAPE '" + ast[3].replace("'", "''") + "'"
        return f"({to_sql(ast[1])} LIKE {pattern}{escape})"
    word = {"and": "AND", "or": "OR"}.get(kind, kind)
    return f"({to_sql(ast[1])} {word} {to_sql(ast[2])})"
