"""Erlang terms as RabbitMQ holds them, and the Erlang/OTP functions its plugins route with.

RabbitMQ's hashing exchanges pick a queue with Erlang/OTP's own functions, so a key lands on the
queue it lands on in production only if embroker computes exactly the same numbers:

- ``x-modulus-hash`` (the rabbitmq_sharding plugin): ``erlang:phash2(RoutingKeys, 2^27) rem N``
  over the *list* of the message's routing keys (:func:`phash2`);
- ``x-consistent-hash``: Google's jump consistent hash, ``erlang:phash2/1`` of the first routing
  key (a binary), of a header's ``{Type, Value}`` tuple or of a property value, then
  ``rand:seed_s(exs1024, {K, K, K})`` and ``rand:uniform_s/1`` draws
  (:func:`jump_consistent_hash`).

Ported from their specification, OTP's C and Erlang sources (``erts/emulator/beam/utils.c``:
``make_hash2``, ``block_hash``, ``atom.c``: ``atom_hash``; ``lib/stdlib/src/rand.erl``:
``exs1024_seed/1``, ``exs64_next/1``, ``exs1024_next/1``, ``uniform_s/1``), and checked against
``erl`` (OTP 25) on generated terms (``tests/model/test_erlterm.py``, with a committed file of
vectors for machines without Erlang).

Terms are plain Python values: a binary is ``bytes``, an integer ``int``, a float ``float``, a
tuple ``tuple``, a list ``list`` and an atom :class:`Atom` (a ``str``). :func:`field_term`
gives an AMQP field value as RabbitMQ's 0-9-1 parser decodes it, and :func:`term_key` sorts
terms in Erlang's term order (how RabbitMQ's ordered tables list bindings).

>>> phash2(b"abc"), phash2([b"a", b"b"], 2**27), phash2(Atom("undefined"))
(98228475, 3094894, 45914356)
>>> [jump_consistent_hash(phash2(b"order-17"), n) for n in (2, 4, 100)]
[1, 1, 11]
"""

from __future__ import annotations

import datetime
import decimal
import struct
from collections.abc import Mapping
from typing import Any, final

from .fieldtypes import field_type

__all__ = ["Atom", "Exs1024", "field_term", "jump_consistent_hash", "make_hash2", "phash2",
           "term_key"]

_M32 = 0xFFFFFFFF
_M64 = (1 << 64) - 1


@final
class Atom(str):
    """An Erlang atom (``Atom("undefined")``); a ``str`` with its own type, so that it hashes and
    sorts as an atom, not as a binary."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Atom({str.__repr__(self)})"


UNDEFINED = Atom("undefined")
TRUE = Atom("true")
FALSE = Atom("false")


# -- AMQP field values as RabbitMQ decodes them ---------------------------------------------------

def field_value_term(value: Any) -> Any:
    """The Erlang value RabbitMQ's parser makes of an AMQP field value (without its type): a
    string or byte array a binary, a boolean the atom ``true``/``false``, a timestamp its
    seconds, a decimal ``{Scale, Unscaled}``, a table a list of ``{Key, Type, Value}``, an array
    a list of ``{Type, Value}``, void ``undefined``."""
    if isinstance(value, bool):
        return TRUE if value else FALSE
    if value is None:
        return UNDEFINED
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, Mapping):
        return [(str(k).encode("utf-8", "surrogateescape"), Atom(field_type(v)),
                 field_value_term(v)) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return [field_term(v) for v in value]
    if isinstance(value, datetime.datetime):
        return int(value.timestamp())
    if isinstance(value, decimal.Decimal):
        sign, digits, exponent = value.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        return (-int(exponent), unscaled)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"not an AMQP field value: {value!r}")


def field_term(value: Any) -> tuple[Atom, Any]:
    """``{Type, Value}``: what ``rabbit_misc:table_lookup/2`` returns for a header.

    >>> field_term("eu"), field_term(5), field_term(True)
    ((Atom('longstr'), b'eu'), (Atom('signedint'), 5), (Atom('bool'), Atom('true')))
    """
    return (Atom(field_type(value)), field_value_term(value))


# -- Erlang's term order ------------------------------------------------------------------------

def term_key(term: Any) -> tuple[Any, ...]:
    """A sort key that orders terms as Erlang compares them: number < atom < tuple < [] <
    list < binary; tuples by size, then element by element; lists element by element;
    binaries byte by byte; numbers by value.

    >>> sorted([b"b", Atom("a"), 3, (1,), [], [1]], key=term_key)
    [3, Atom('a'), (1,), [], [1], b'b']
    """
    if isinstance(term, Atom):
        return (1, str(term))
    if isinstance(term, bool):
        raise TypeError("a Python bool is no Erlang term: use TRUE / FALSE")
    if isinstance(term, (int, float)):
        return (0, term)
    if isinstance(term, tuple):
        return (6, len(term), tuple(term_key(t) for t in term))
    if isinstance(term, list):
        return (8, tuple(term_key(t) for t in term)) if term else (7,)
    if isinstance(term, (bytes, bytearray)):
        return (9, bytes(term))
    raise TypeError(f"no Erlang term: {term!r}")


# -- erlang:phash2 -------------------------------------------------------------------------------

_HCONST = 0x9E3779B9  # the golden ratio, Bob Jenkins' arbitrary value
# (_HCONST * n) mod 2^32, the constants make_hash2 uses for each kind of term.
_HC = {n: (_HCONST * n) & _M32 for n in range(2, 23)}
_NIL_DEF = 0x2  # the NIL tag's number (erl_term.h), hashed for [] after other terms
_EMPTY_LIST_HASH = 3468870702  # [] on its own


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    # Bob Jenkins' mix of three 32-bit words (lookup2), every operation modulo 2^32.
    a = ((a - b - c) & _M32) ^ (c >> 13)
    b = ((b - c - a) & _M32) ^ ((a << 8) & _M32)
    c = ((c - a - b) & _M32) ^ (b >> 13)
    a = ((a - b - c) & _M32) ^ (c >> 12)
    b = ((b - c - a) & _M32) ^ ((a << 16) & _M32)
    c = ((c - a - b) & _M32) ^ (b >> 5)
    a = ((a - b - c) & _M32) ^ (c >> 3)
    b = ((b - c - a) & _M32) ^ ((a << 10) & _M32)
    c = ((c - a - b) & _M32) ^ (b >> 15)
    return a, b, c


def _hash_2(x: int, y: int, const: int, h: int) -> int:
    """UINT32_HASH_2: two 32-bit words mixed into the running hash."""
    _a, _b, h = _mix((const + x) & _M32, (const + y) & _M32, h)
    return h


def _sint32_hash(x: int, h: int) -> int:
    # A small integer (28 bits): a negative one is mixed twice, its magnitude first.
    if x < 0:
        h = _hash_2(-x & _M32, 0, _HCONST, h)
    return _hash_2(x & _M32, 0, _HCONST, h)


def block_hash(data: bytes, initval: int) -> int:
    """Bob Jenkins' lookup2 hash of ``data`` (12 bytes at a time), seeded with ``initval``."""
    a = b = _HCONST
    c = initval
    length = len(data)
    pos = 0
    while length - pos >= 12:
        a = (a + int.from_bytes(data[pos:pos + 4], "little")) & _M32
        b = (b + int.from_bytes(data[pos + 4:pos + 8], "little")) & _M32
        c = (c + int.from_bytes(data[pos + 8:pos + 12], "little")) & _M32
        a, b, c = _mix(a, b, c)
        pos += 12
    c = (c + length) & _M32
    rest = data[pos:]
    # The last bytes: up to 4 into a, 4 into b, and 3 into c above its lowest byte (which holds
    # the length).
    a = (a + int.from_bytes(rest[0:4], "little")) & _M32
    b = (b + int.from_bytes(rest[4:8], "little")) & _M32
    c = (c + (int.from_bytes(rest[8:11], "little") << 8)) & _M32
    return _mix(a, b, c)[2]


def atom_hash(name: str) -> int:
    """An atom's hash value: hashpjw (the Dragon Book's) over its UTF-8 name, a two-byte
    latin-1 character counting as the one character it is."""
    data = name.encode("utf-8")
    h = 0
    i = 0
    while i < len(data):
        v = data[i]
        i += 1
        if i < len(data) and (v & 0xFE) == 0xC2 and (data[i] & 0xC0) == 0x80:
            v = ((v << 6) | (data[i] & 0x3F)) & 0xFF
            i += 1
        h = (h << 4) + v
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
            h ^= g
    return h & _M32


def _is_small28(x: int) -> bool:
    return -(1 << 27) <= x < (1 << 27)


def _is_byte(term: Any) -> bool:
    return type(term) is int and 0 <= term <= 255


def make_hash2(term: Any) -> int:
    """OTP's ``make_hash2``: the 32-bit hash ``erlang:phash2`` reduces.

    Raises:
        TypeError: ``term`` holds something that is no Erlang term here (a pid, a map...).
    """
    if isinstance(term, Atom):
        return atom_hash(term)
    if type(term) is int and _is_small28(term):
        return _sint32_hash(term, 0)
    h = 0
    stack: list[Any] = [term]
    while stack:
        t = stack.pop()
        if isinstance(t, list):
            if not t:
                h = _EMPTY_LIST_HASH if h == 0 else _hash_2(_NIL_DEF, 0, _HC[2], h)
                continue
            # A run of bytes (a string) is hashed four at a time; the first other element is
            # hashed next, the rest of the list after it.
            i, count, word = 0, 0, 0
            while i < len(t) and _is_byte(t[i]):
                word = ((word << 8) + t[i]) & _M32
                if count == 3:
                    h = _hash_2(word, 0, _HC[4], h)
                    count = word = 0
                else:
                    count += 1
                i += 1
            if count:
                h = _hash_2(word, 0, _HC[4], h)
            if i < len(t):
                stack.append(t[i + 1:])
                stack.append(t[i])
            else:
                stack.append([])  # the tail: []
            continue
        if isinstance(t, tuple):
            h = _hash_2(len(t), 0, _HC[9], h)
            stack.extend(reversed(t))
            continue
        if isinstance(t, (bytes, bytearray)):
            con = (_HC[13] + h) & _M32
            h = block_hash(bytes(t), con) if t else con
            continue
        if isinstance(t, Atom):
            ah = atom_hash(t)
            h = ah if h == 0 else _hash_2(ah, 0, _HC[3], h)
            continue
        if isinstance(t, bool):
            raise TypeError("a Python bool is no Erlang term: use TRUE / FALSE")
        if isinstance(t, int):
            if _is_small28(t):
                h = _sint32_hash(t, h)
                continue
            # A bignum: its magnitude in 64-bit digits, each as two 32-bit words.
            con = _HC[10] if t < 0 else _HC[11]
            magnitude = -t if t < 0 else t
            while True:
                digit = magnitude & _M64
                h = _hash_2(digit & _M32, digit >> 32, con, h)
                magnitude >>= 64
                if not magnitude:
                    break
            continue
        if isinstance(t, float):
            bits = struct.unpack("<Q", struct.pack("<d", t if t != 0.0 else 0.0))[0]
            h = _hash_2(bits >> 32, bits & _M32, _HC[12], h)
            continue
        raise TypeError(f"no Erlang term make_hash2 knows here: {t!r}")
    return h


def phash2(term: Any, range_: int | None = None) -> int:
    """``erlang:phash2(Term)`` (27 bits), or ``erlang:phash2(Term, Range)``.

    Raises:
        ValueError: ``range_`` is not in 1..2^32.
    """
    h = make_hash2(term)
    if range_ is None:
        return h & ((1 << 27) - 1)
    if not 1 <= range_ <= 1 << 32:
        raise ValueError("phash2's range is 1..2^32")
    return h if range_ == 1 << 32 else h % range_


# -- rand: exs1024 ------------------------------------------------------------------------------

def _exs64_next(r: int) -> tuple[int, int]:
    # xorshift64*: the generator exs1024 seeds from.
    r1 = r ^ (r >> 12)
    r2 = r1 ^ ((r1 & ((1 << 39) - 1)) << 25)
    r3 = r2 ^ (r2 >> 27)
    return (r3 * 2685821657736338717) & _M64, r3


def _mask21(x: int) -> int:
    return x & ((1 << 21) - 1)


@final
class Exs1024:
    """``rand``'s exs1024 generator (xorshift1024*), seeded from an integer triple as
    ``rand:seed_s(exs1024, {A1, A2, A3})`` does; :meth:`uniform` is ``rand:uniform_s/1``.

    >>> Exs1024((1, 1, 1)).uniform()
    0.35999833001572473
    """

    __slots__ = ("_ahead", "_behind")

    def __init__(self, seed: tuple[int, int, int]) -> None:
        a1, a2, a3 = seed
        b1 = _mask21((_mask21(a1) + 1) * 2097131)
        b2 = _mask21((_mask21(a2) + 1) * 2097133)
        b3 = _mask21((_mask21(a3) + 1) * 2097143)
        r = (b1 << 43) | (b2 << 22) | (b3 << 1) | 1
        words = []
        for _ in range(16):
            x, r = _exs64_next(r)
            words.append(x)
        words.reverse()  # built by prepending, as the Erlang list is
        # The state as rand keeps it: the words still ahead, and those behind (newest first).
        self._ahead: list[int] = words
        self._behind: list[int] = []

    def next(self) -> int:
        """The next 64-bit output (``exs1024_next/1``)."""
        if len(self._ahead) == 1:
            self._ahead = [self._ahead[0], *reversed(self._behind)]
            self._behind = []
        s0, s1 = self._ahead[0], self._ahead[1]
        s11 = s1 ^ ((s1 & ((1 << 33) - 1)) << 31)
        s12 = s11 ^ (s11 >> 11)
        s01 = s0 ^ (s0 >> 30)
        ns1 = s01 ^ s12
        self._ahead = [ns1, *self._ahead[2:]]
        self._behind.insert(0, s0)
        return (ns1 * 1181783497276652981) & _M64

    def uniform(self) -> float:
        """A float in [0.0, 1.0): the output over 2^64, as exs1024's ``max`` handler divides."""
        return float(self.next()) / 18446744073709551616.0


def jump_consistent_hash(key: int, buckets: int) -> int:
    """The bucket (0..buckets-1) the consistent-hash plugin's ``jump_consistent_hash/2`` picks for
    an integer key (``phash2`` of the value hashed on): one bucket needs no draw, else jumps
    forward with exs1024 draws seeded ``{Key, Key, Key}`` until past the last bucket.

    Raises:
        ValueError: no buckets.
    """
    if buckets < 1:
        raise ValueError("no buckets to hash to")
    if buckets == 1:
        return 0
    state = Exs1024((key, key, key))
    b, j = -1, 0
    while j < buckets:
        b = j
        r = state.uniform()
        if r == 0.0:
            # Erlang would fail with badarith here (a 2^-64 chance per draw): the last bucket
            # reached is kept instead.
            break
        j = int((b + 1) / r)
    return b
