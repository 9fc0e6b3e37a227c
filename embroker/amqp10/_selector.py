"""JMS message selectors (the filter ``apache.org:selector-filter:string``).

The SQL-92 conditional expression subset of the JMS specification (section 3.8.1): literals
(strings in single quotes with ``''`` for a quote, exact and approximate numbers, ``TRUE`` and
``FALSE``), identifiers, parentheses, ``NOT``/``AND``/``OR``, comparisons (``= <> < <= > >=``),
arithmetic (``+ - * /``, unary ``+``/``-``), ``[NOT] BETWEEN a AND b``,
``[NOT] IN ('a', 'b')``, ``[NOT] LIKE 'pattern' [ESCAPE 'c']`` (``%`` any run, ``_`` one
character) and ``IS [NOT] NULL``, with SQL's three-valued logic: a comparison with a missing
value is *unknown*, and a message is selected only when the whole expression is true.

Identifiers name message header fields (``JMSMessageID``, ``JMSCorrelationID``, ``JMSPriority``,
``JMSDeliveryMode`` (``'PERSISTENT'`` or ``'NON_PERSISTENT'``), ``JMSTimestamp`` (ms),
``JMSType``, ``JMSReplyTo``, ``JMSXUserID``, ``JMSXGroupID``) or else application properties
(the message's headers in the broker). Keywords are case-insensitive; identifiers are not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar, final

from .. import _regex

if TYPE_CHECKING:
    from ..model import Message

__all__ = ["MAX_SELECTOR_LENGTH", "MAX_SELECTOR_NESTING", "MAX_SELECTOR_TOKENS", "Selector",
           "SelectorError"]

_Value = Any
_Eval = Callable[["Message"], _Value]
_UNKNOWN: Final = None
_T = TypeVar("_T")

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<string>'(?:[^']|'')*')
    | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[lLfFdD]?)
    | (?P<ident>[A-Za-z_$][A-Za-z0-9_$.]*)
    | (?P<op><>|<=|>=|[=<>()+\-*/,])
    )""", re.X)
_KEYWORDS: Final = frozenset({"AND", "OR", "NOT", "BETWEEN", "IN", "LIKE", "ESCAPE", "IS",
                              "NULL", "TRUE", "FALSE"})


class SelectorError(ValueError):
    """A selector that does not parse, or costs more than the bounds allow."""


#: A selector's bounds: the SQL filter expression's own (RabbitMQ 4.2's rabbit_amqp_filter_sql,
#: for the same kind of client expression: characters, tokens), and a nesting depth of
#: parentheses. The parser descends eight calls per parenthesis and the evaluator one per
#: operator of a chain: 400 nested parentheses ran the parser out of Python's stack (an
#: amqp:internal-error), a chain of 800 ORs would have run each message's evaluation out of it.
MAX_SELECTOR_LENGTH: Final = 4096
MAX_SELECTOR_TOKENS: Final = 200
MAX_SELECTOR_NESTING: Final = 32


def _header(message: Message, name: str) -> _Value:
    p = message.properties
    if name == "JMSDeliveryMode":
        return "PERSISTENT" if p.get("delivery_mode") == 2 else "NON_PERSISTENT"
    if name == "JMSPriority":
        priority = p.get("priority")
        return priority if isinstance(priority, int) else 4
    if name == "JMSTimestamp":
        timestamp = p.get("timestamp")
        return timestamp * 1000 if isinstance(timestamp, int) else _UNKNOWN
    key = _HEADERS[name]
    return p.get(key)


_HEADERS: Final = {"JMSMessageID": "message_id", "JMSCorrelationID": "correlation_id",
                   "JMSType": "type", "JMSReplyTo": "reply_to", "JMSXUserID": "user_id",
                   "JMSXGroupID": "app_id", "JMSDeliveryMode": "", "JMSPriority": "",
                   "JMSTimestamp": ""}


def _is_number(value: _Value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@final
class Selector:
    """A parsed selector.

    Raises:
        SelectorError: the text is not a selector.

    >>> Selector("color = 'red' AND n > 1").matches_values({"color": "red", "n": 2})
    True
    """

    __slots__ = ("_eval", "_pos", "_tokens", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        if len(text) > MAX_SELECTOR_LENGTH:
            raise SelectorError(f"length {len(text)} exceeds the maximum length of "
                                f"{MAX_SELECTOR_LENGTH}")
        self._tokens: list[tuple[str, str]] = _tokenize(text)
        _check_bounds(self._tokens)
        self._pos = 0
        expression = self._or()
        if self._pos != len(self._tokens):
            raise SelectorError(f"unexpected {self._tokens[self._pos][1]!r}")
        self._eval: _Eval = expression

    def matches(self, message: Message) -> bool:
        """Whether the message is selected (the expression is true, not false or unknown)."""
        try:
            return self._eval(message) is True
        except (TypeError, ZeroDivisionError, ValueError):
            return False

    def matches_values(self, headers: dict[str, Any]) -> bool:
        """The same against application properties alone (for tests and docs)."""
        from ..model import Message
        return self.matches(Message("", "", {"headers": headers}, b""))

    def __repr__(self) -> str:
        return f"Selector({self.text!r})"

    # -- parsing (recursive descent, lowest precedence first) ------------------------------------

    def _peek(self) -> tuple[str, str] | None:
        return self._tokens[self._pos] if self._pos < len(self._tokens) else None

    def _keyword(self, *words: str) -> str | None:
        token = self._peek()
        if token is not None and token[0] == "ident" and token[1].upper() in words:
            self._pos += 1
            return token[1].upper()
        return None

    def _op(self, *ops: str) -> str | None:
        token = self._peek()
        if token is not None and token[0] == "op" and token[1] in ops:
            self._pos += 1
            return token[1]
        return None

    def _expect_op(self, op: str) -> None:
        if self._op(op) is None:
            raise SelectorError(f"expected {op!r}")

    def _or(self) -> _Eval:
        left = self._and()
        while self._keyword("OR"):
            right = self._and()
            left = _or(left, right)
        return left

    def _and(self) -> _Eval:
        left = self._not()
        while self._keyword("AND"):
            right = self._not()
            left = _and(left, right)
        return left

    def _not(self) -> _Eval:
        if self._keyword("NOT"):
            inner = self._not()
            return lambda m: _negate(inner(m))
        return self._comparison()

    def _comparison(self) -> _Eval:
        left = self._sum()
        op = self._op("=", "<>", "<", "<=", ">", ">=")
        if op is not None:
            return _compare(op, left, self._sum())
        if self._keyword("IS"):
            negate = self._keyword("NOT") is not None
            if not self._keyword("NULL"):
                raise SelectorError("expected NULL after IS")
            return (lambda m: left(m) is not None) if negate else (lambda m: left(m) is None)
        negate = self._keyword("NOT") is not None
        if self._keyword("BETWEEN"):
            low = self._sum()
            if not self._keyword("AND"):
                raise SelectorError("expected AND in BETWEEN")
            high = self._sum()
            test = _and(_compare(">=", left, low), _compare("<=", left, high))
        elif self._keyword("IN"):
            self._expect_op("(")
            values = [self._string()]
            while self._op(","):
                values.append(self._string())
            self._expect_op(")")
            test = _in(left, frozenset(values))
        elif self._keyword("LIKE"):
            pattern = self._string()
            escape = self._string() if self._keyword("ESCAPE") else None
            if escape is not None and len(escape) != 1:
                raise SelectorError("ESCAPE takes one character")
            test = _like(left, _like_regex(pattern, escape))
        elif negate:
            raise SelectorError("expected BETWEEN, IN or LIKE after NOT")
        else:
            return left
        return (lambda m: _negate(test(m))) if negate else test

    def _string(self) -> str:
        token = self._peek()
        if token is None or token[0] != "string":
            raise SelectorError("expected a string literal")
        self._pos += 1
        return token[1][1:-1].replace("''", "'")

    def _sum(self) -> _Eval:
        left = self._product()
        while (op := self._op("+", "-")) is not None:
            left = _arithmetic(op, left, self._product())
        return left

    def _product(self) -> _Eval:
        left = self._unary()
        while (op := self._op("*", "/")) is not None:
            left = _arithmetic(op, left, self._unary())
        return left

    def _unary(self) -> _Eval:
        if self._op("-"):
            inner = self._unary()
            return lambda m: -v if _is_number(v := inner(m)) else _UNKNOWN
        if self._op("+"):
            return self._unary()
        return self._primary()

    def _primary(self) -> _Eval:
        token = self._peek()
        if token is None:
            raise SelectorError("unexpected end of selector")
        kind, text = token
        self._pos += 1
        if kind == "op" and text == "(":
            inner = self._or()
            self._expect_op(")")
            return inner
        if kind == "string":
            value: _Value = text[1:-1].replace("''", "'")
            return lambda m: value
        if kind == "number":
            number = text.rstrip("lLfFdD")
            parsed: _Value = float(number) if any(c in number for c in ".eE") else int(number)
            return lambda m: parsed
        if kind == "ident":
            upper = text.upper()
            if upper in ("TRUE", "FALSE"):
                flag = upper == "TRUE"
                return lambda m: flag
            if upper in _KEYWORDS:
                raise SelectorError(f"unexpected {text}")
            if text in _HEADERS:
                return lambda m: _header(m, text)
            return lambda m: m.headers.get(text)
        raise SelectorError(f"unexpected {text!r}")


def _check_bounds(tokens: list[tuple[str, str]]) -> None:
    """Refuses, before parsing, a selector nested deeper than :data:`MAX_SELECTOR_NESTING` or
    longer than :data:`MAX_SELECTOR_TOKENS` tokens."""
    depth = deepest = 0
    for kind, text in tokens:
        if kind == "op" and text == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif kind == "op" and text == ")":
            depth -= 1
    if deepest > MAX_SELECTOR_NESTING:
        raise SelectorError(f"nesting depth {deepest} exceeds the maximum of "
                            f"{MAX_SELECTOR_NESTING}")
    if len(tokens) > MAX_SELECTOR_TOKENS:
        raise SelectorError(f"{len(tokens)} tokens exceed the token limit of "
                            f"{MAX_SELECTOR_TOKENS}")


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise SelectorError(f"cannot read the selector at {text[pos:pos + 10]!r}")
        kind = match.lastgroup
        assert kind is not None
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    if not tokens:
        raise SelectorError("empty selector")
    return tokens


# SQL's three-valued logic, shared with the AMQP SQL filter expressions (``_sql``): true,
# false and unknown (``None``); AND and OR look at their right side only when the left does
# not decide (RabbitMQ 4.2's rabbit_amqp_filter_sql:eval0/2 evaluates them the same way).

def _negate(value: _Value) -> _Value:
    return None if value is None else not value


def _and(left: Callable[[_T], _Value], right: Callable[[_T], _Value]) -> Callable[[_T], _Value]:
    def test(m: _T) -> _Value:
        a = left(m)
        if a is False:
            return False
        b = right(m)
        if b is False:
            return False
        return True if a is True and b is True else _UNKNOWN
    return test


def _or(left: Callable[[_T], _Value], right: Callable[[_T], _Value]) -> Callable[[_T], _Value]:
    def test(m: _T) -> _Value:
        a = left(m)
        if a is True:
            return True
        b = right(m)
        if b is True:
            return True
        return False if a is False and b is False else _UNKNOWN
    return test


_COMPARE: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "=": lambda a, b: a == b, "<>": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def _compare(op: str, left: _Eval, right: _Eval) -> _Eval:
    compare = _COMPARE[op]

    def test(m: Message) -> _Value:
        a, b = left(m), right(m)
        if a is None or b is None:
            return _UNKNOWN
        if _is_number(a) and _is_number(b):
            return compare(a, b)
        if type(a) is not type(b) or (op not in ("=", "<>") and not isinstance(a, str)):
            # Strings and booleans compare only for (in)equality, with their own kind.
            if isinstance(a, str) and isinstance(b, str):
                return compare(a, b) if op in ("=", "<>") else _UNKNOWN
            return _UNKNOWN
        if isinstance(a, str) and op not in ("=", "<>"):
            return _UNKNOWN
        return compare(a, b)
    return test


def _arithmetic(op: str, left: _Eval, right: _Eval) -> _Eval:
    def compute(m: Message) -> _Value:
        a, b = left(m), right(m)
        if not (_is_number(a) and _is_number(b)):
            return _UNKNOWN
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if isinstance(a, int) and isinstance(b, int):
            return int(a / b)
        return a / b
    return compute


def _in(left: _Eval, values: frozenset[str]) -> _Eval:
    def test(m: Message) -> _Value:
        value = left(m)
        if value is None:
            return _UNKNOWN
        return isinstance(value, str) and value in values
    return test


def _like_regex(pattern: str, escape: str | None) -> _regex.Pattern[str]:
    """A LIKE pattern as a regular expression, matched by :mod:`embroker._regex` (the pattern
    is a client's: ``'%a%a%a%a%b'`` would backtrack polynomially in ``re`` on every message).

    Raises:
        SelectorError: a pattern too large for the linear-time matcher.
    """
    out = []
    chars = iter(pattern)
    for char in chars:
        if escape is not None and char == escape:
            out.append(re.escape(next(chars, "")))
        elif char == "%":
            out.append(".*")
        elif char == "_":
            out.append(".")
        else:
            out.append(re.escape(char))
    try:
        return _regex.compile("".join(out), re.S)
    except _regex.error as exc:
        raise SelectorError(f"LIKE pattern {pattern!r}: {exc}") from None


def _like(left: _Eval, regex: _regex.Pattern[str]) -> _Eval:
    def test(m: Message) -> _Value:
        value = left(m)
        if value is None:
            return _UNKNOWN
        return isinstance(value, str) and regex.fullmatch(value)
    return test
