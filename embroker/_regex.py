"""Regular expressions matched in time linear in the subject, for patterns that users write.

Python's ``re`` backtracks: ``re.search(r"^(a+)+$", "a" * 22 + "!")`` takes a third of a second,
each added character doubles it, and a match cannot be interrupted (no time-out, the GIL held).
Users' patterns reach the broker as policy patterns, permission expressions (searched in queue,
exchange and routing-key names on every publish) and the management API's ``use_regex`` filter,
all on the loop that serves every client. This module matches them without backtracking.

Theory of operation
-------------------
:func:`compile` parses the pattern with Python's own parser (``re._parser``; ``sre_parse`` on
3.10), so the syntax, the flags and the syntax errors (:class:`re.error`, same texts) are
``re``'s. The parsed tree becomes a Thompson NFA: nodes that consume one character (a
*predicate*), nodes that split, zero-width *assertions* and one accepting node; a counted
repetition ``x{m,n}`` is spelled out as ``m`` copies of ``x`` and ``n - m`` optional ones.

The NFA runs as a DFA built lazily (the approach of RE2): a DFA state is the set of NFA nodes
a search may be at after some prefix of the subject (closed under splits; an ``int`` with a bit
per node) together with what the last character was (start of the subject, newline, word
character: all the assertions need to know of the past). A state's transition on a character
is computed the first time that character comes after that state, by following the NFA (the
assertions that hold between the two characters, then one step on the character: a few
operations on ``m``-bit integers per NFA node that takes part) and is then kept: a ``dict`` per
state, keyed by the subject's own items (one-character ``str``, or ``int`` for ``bytes``), whose
``__missing__`` computes and stores. A warm search is ``functools.reduce(operator.getitem,
subject, start)``: one dictionary look-up per character, in C. Two sink states map every
character to themselves: *found* (a match was reached: ``search`` is true whatever follows) and
*dead* (no thread is alive and none can start: false); a long subject is walked in slices of 64
characters and the walk stops at the end of the slice where a sink was reached.

Characters are first reduced to a bit mask: one bit for each distinct predicate of the pattern
(a literal, a class, ``.``...) and three for the context the assertions look at (newline, ASCII
word character, Unicode word character); transitions are computed once per (state, mask) and
then recorded per (state, character). A predicate is decided by ``re`` itself on that one
character: the item is written back as a one-character pattern (``[^a-c\\d]``, a literal as a
``\\U`` escape) and compiled with the flags in force at that point (``IGNORECASE``, ``ASCII``),
so case folding (``re``'s Unicode folds included: ``k`` matches KELVIN SIGN under ``(?i)``) and
the categories ``\\d \\w \\s`` are ``re``'s to the character, for ``str`` and ``bytes``. A
one-character pattern cannot backtrack.

Zero-width assertions are decided from the previous character (kept in the state) and the next
one (the character the transition is on, or the end of the subject): ``^ \\A \\b \\B``, ``$`` and
``\\Z``, with and without ``MULTILINE``, ``\\b`` with ``re``'s ASCII or Unicode word characters.
Python's ``$`` without ``MULTILINE`` also matches before a newline that ends the subject: a
thread that passes it before a newline carries a flag meaning "the subject must end after the
next character", and is dropped when another character comes. ``\\B`` never matches an empty
subject, as in ``re`` before Python 3.14 (the behaviour is read from ``re`` at import).

Supported: literals, ``.`` (with and without ``DOTALL``), classes and negated classes, the
categories, the anchors and boundaries above, groups (capturing or not: captures are not
reported), alternation, every repetition (``* + ? {m,n}`` and their lazy forms, which for a
yes/no answer are the greedy ones), the flags ``IGNORECASE MULTILINE DOTALL VERBOSE ASCII
UNICODE``, inline (``(?i)``) or scoped (``(?i:...)``, ``(?-i:...)``).

Refused with :class:`UnsupportedPattern` (a ``ValueError`` and a ``re.error``), naming the
construct: backreferences (``\\1``, ``(?P=name)``), lookahead and lookbehind, conditionals
(``(?(1)a|b)``), atomic groups and possessive quantifiers (Python 3.11+), ``LOCALE`` (its classes
depend on the locale at match time), and patterns whose NFA would exceed
:data:`MAX_NFA_NODES` nodes ("too complex", e.g. ``(?:a{100}){100}``). Backreferences are not
regular; the others could be matched in linear time but not by this simple construction.

The cost of compiling
---------------------
A client's pattern is compiled on the loop too, and compiling has costs of its own that the
NFA's bound does not reach: Python's parser recurses twice per nested group (1,000 nested
groups raised ``RecursionError``: a 500 from the management API), and ``re`` builds the bitmap
of a class a code point at a time (450 distinct classes as wide as Unicode, an 8 KB pattern,
took 3-10 s). So before anything is compiled, by this module's NFA or by ``re`` (the quick path,
and :func:`compile_set`'s fallback), :class:`PatternTooCostly` refuses, naming the bound: a
pattern longer than :data:`MAX_PATTERN_LENGTH`; groups nested deeper than :data:`MAX_NESTING`
(read from the text, as the parser reads it, before the parser runs); more than
:data:`MAX_CLASSES` distinct classes, or classes spanning more than :data:`MAX_CLASS_SPAN` code
points (read from the parsed tree, before any class is compiled). A count above
:data:`MAX_COUNT` (``a{65536}``) is refused as RabbitMQ's PCRE refuses it, with its text and
offset (``number too big in {} quantifier``), and a count too large for ``re`` is ``re.error``,
not ``OverflowError``: whatever the pattern, :func:`compile` returns or raises :class:`error`.
The bounds are far above what people write (the constants say why each is where it is);
within them, the dearest patterns found cost 10-16 ms of CPU to compile here (``(?i)`` and 16
classes beyond Latin-1 spanning a plane between them; 1,024 characters of groups), where the
issue's 450 classes took 3.6 s.

Guarantees, for a pattern of ``m`` NFA nodes (``m <= MAX_NFA_NODES``) and a subject of ``n``
characters:

- time: each character costs one look-up once its transition is known; computing a transition
  costs ``O(m)`` operations on ``m``-bit integers (``O(m * m / 64)`` machine words, in C) plus,
  for a character not seen before, one ``re`` call on that character per distinct predicate (at
  most ``m``). So a search is ``O(n)`` look-ups once warm and ``O(n * m * m / 64)`` word
  operations at worst, whatever the pattern. Compiling is ``O(m * m / 64)`` too (the split
  closures: Tarjan's components over the split edges).
- memory: each compiled pattern's cache (states, transitions, character masks, unions of
  successors) is counted in estimated bytes and emptied when it passes :data:`CACHE_BUDGET`, as
  RE2 does; after that the DFA is rebuilt as it is needed, so a pattern whose DFA would be
  exponential costs about one transition computation per character, as a plain NFA simulation
  would. The NFA itself holds ``m`` bit sets of ``m`` bits (``m * m / 8`` bytes: 0.5 MB at the
  limit). So memory is ``O(CACHE_BUDGET + m * m)`` per pattern.

Measured (``benchmarks/regex.py``, one shared core): a warm search of a 24-character name costs
0.15-0.2 microseconds through the quick path and about 0.9 on the DFA (``re``: 0.1-0.3);
``^(a+)+$`` against ``"a" * 10_000 + "!"`` 0.33 ms (``re``: 0.6 s at 24 characters); the worst
patterns found near the node limit, whose DFA never warms up, about 10-14 microseconds per
character (50-110 at 2,000 nodes, the limit this module was first measured with).

The caches are memo tables whose entries are pure functions of their keys: two threads sharing
a compiled pattern at worst compute an entry twice.

The quick path: a pattern of the shape :func:`_backtrack_safe` describes (one-character items
and assertions, at most one trailing repetition of a one-character item: ``^orders\\.``,
``.*``, ``^orders-.*$``) is given to ``re``, whose C loop runs it in ``O(n * k)`` steps, ``k``
at most :data:`QUICK_ITEMS` (the argument is in that function's docstring, and a test checks it
against a step-counting model of ``re``'s search). ``compile(..., quick=False)`` turns it off.
"""

from __future__ import annotations

import functools
import importlib
import operator
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, AnyStr, Final, Generic, final, overload

__all__ = ["CACHE_BUDGET", "MAX_CLASSES", "MAX_CLASS_SPAN", "MAX_COUNT", "MAX_NESTING",
           "MAX_NFA_NODES", "MAX_PATTERN_LENGTH", "QUICK_ITEMS", "Pattern", "PatternTooCostly",
           "Statistics", "UnsupportedPattern", "compile", "compile_set", "error"]

#: What :func:`compile` raises for a pattern it refuses: ``re``'s error (syntax), and its
#: subclasses :class:`UnsupportedPattern` and :class:`PatternTooCostly`.
error = re.error

# The parser of the running Python (one module under two names); typed loosely on purpose: its
# trees are converted to the NFA below at once and nothing else touches them.
_parser: Any = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")
_c: Any = importlib.import_module("re._constants" if sys.version_info >= (3, 11) else "sre_constants")

#: Patterns whose NFA would have more nodes are refused ("too complex"). The bound sets the worst
#: cost of a character whose transition is not cached yet (about 10 microseconds at 500 nodes,
#: 70-110 at 2,000 here): at 500, the worst pattern found costs 3-4 ms against a 255-character
#: name, one item of a management listing's step (a queue name is at most 255 bytes).
MAX_NFA_NODES: Final = 500

# What compiling may cost (see "The cost of compiling" in the module's docstring): bounds no
# pattern a person writes comes near, checked before anything is compiled.

#: The longest pattern, in characters (bytes for a ``bytes`` pattern). Compiling costs about
#: linear time in the length, Python's parser the most of it: the dearest shapes found (many
#: groups, ``(a)(a)...``) cost 9 ms of CPU at 1,024 characters here, 48 ms at 4,096 (the
#: bound RabbitMQ 4.2 puts on a client's SQL filter expression). PCRE refuses about 64 KB
#: ("regular expression is too large"); RabbitMQ's documented patterns are under 40
#: characters, and 1,024 still holds an alternation of some 60 queue names.
MAX_PATTERN_LENGTH: Final = 1024
#: The deepest nesting of groups. Python's parser recurses twice per group, this module's NFA
#: builder up to three times more, and ``re``'s compiler again: 50 levels stay far from Python's
#: recursion limit (1,000 frames, the listener's own stack included), where 1,000 nested groups
#: raised ``RecursionError``. PCRE (RabbitMQ 3.10.8, checked live) refused 799 nested groups
#: ("regular expression is too complicated"); patterns people write nest two or three deep.
MAX_NESTING: Final = 50
#: The most distinct character classes (``[...]``, ``[^x]``, and ``\d \w \s`` outside a
#: class): ``re`` compiles each one, 0.1-0.7 ms of CPU here (a class beyond Latin-1 makes it
#: build a bitmap of the whole Basic Multilingual Plane), so 16 cost about as much as the
#: longest pattern's parse. A class repeated costs nothing more; patterns people write have a
#: handful.
MAX_CLASSES: Final = 16
#: The most code points of the Basic Multilingual Plane the ranges of all classes span together,
#: a class repeated as often as it is written: ``re`` builds a class's bitmap a code point at a
#: time, 0.1 microsecond each here (``(?i)``: 0.17; 450 classes of the whole plane took 3.6 s
#: of CPU); beyond the BMP a range costs nothing. One plane's worth, 7-11 ms:
#: ``[\u0080-\uffff]`` fits, ``[^\x00-\x7f]`` or ``[\u4e00-\u9fff]`` are far below.
MAX_CLASS_SPAN: Final = 0x10000
#: The largest count of a counted repetition ``{m,n}``: PCRE's, whose text RabbitMQ answers with
#: beyond it ("number too big in {} quantifier"; ``re`` takes 4294967294).
MAX_COUNT: Final = 65535

#: Bytes (as estimated: see _ENTRY) of DFA cache a compiled pattern may hold before its cache is
#: emptied.
CACHE_BUDGET: Final = 1 << 20
# What a cache entry costs, about (a dict slot, its key and value objects), besides its bit sets.
_ENTRY: Final = 100
_STATE: Final = 400

# What re's \B does on an empty subject: never matches before Python 3.14.
_B_MATCHES_EMPTY: Final = re.search(r"\B", "") is not None

_FLAG_I: Final = int(re.IGNORECASE)
_FLAG_L: Final = int(re.LOCALE)
_FLAG_M: Final = int(re.MULTILINE)
_FLAG_S: Final = int(re.DOTALL)
_FLAG_U: Final = int(re.UNICODE)
_FLAG_A: Final = int(re.ASCII)
_TYPE_FLAGS: Final = _FLAG_A | _FLAG_L | _FLAG_U
# re.TEMPLATE (3.10 to 3.12: "disable backtracking") is not a flag this module can honour.
_FLAG_T: Final = int(getattr(_c, "SRE_FLAG_TEMPLATE", 0))


class UnsupportedPattern(re.error, ValueError):
    """A valid pattern that a linear-time matcher cannot run; the message says which construct.

    It is a ``ValueError`` and also a :class:`re.error`, so code that refuses what ``re.compile``
    refuses refuses this the same way.
    """


@final
class PatternTooCostly(re.error, ValueError):
    """A pattern refused before anything is compiled, because compiling it would cost more than
    the bounds allow (:data:`MAX_PATTERN_LENGTH`, :data:`MAX_NESTING`, :data:`MAX_CLASSES`,
    :data:`MAX_CLASS_SPAN`); the message names the bound and the pattern's figure:
    ``pattern too complex: nesting depth 500 exceeds the maximum of 50``. (No ``<`` or ``>``
    in them: the management API escapes those in a reason, as RabbitMQ's does.)

    Not an :class:`UnsupportedPattern`: :func:`compile_set` hands those to ``re``, never these.
    """


# -- the NFA ------------------------------------------------------------------------------------

# Node kinds.
_CHAR: Final = 0      # consumes one character whose mask has bit `arg`; then `out`
_SPLIT: Final = 1     # goes on at both `out` and `out2`
_ASSERT: Final = 2    # zero-width assertion `arg`; then `out`
_MATCH: Final = 3     # accepts

# Assertions.
_BEGIN_STRING: Final = 0    # \A, and ^ without MULTILINE
_BEGIN_LINE: Final = 1      # ^ with MULTILINE
_END_STRING: Final = 2      # \Z
_END: Final = 3             # $ without MULTILINE: at the end, or before a final newline
_END_LINE: Final = 4        # $ with MULTILINE
_BOUNDARY_A: Final = 5      # \b, ASCII word characters (bytes, or str with ASCII)
_NOT_BOUNDARY_A: Final = 6  # \B, likewise
_BOUNDARY_U: Final = 7      # \b, Unicode word characters
_NOT_BOUNDARY_U: Final = 8  # \B, likewise

# Context bits of a character (the low bits of its mask) and of a state's previous character.
_NL: Final = 1      # "\n"
_WA: Final = 2      # an ASCII word character
_WU: Final = 4      # a Unicode word character
_START: Final = 8   # (previous only) nothing: the start of the subject
_CONTEXT_BITS: Final = 3

# Which context bits each assertion reads (before, after).
_READS: Final = {
    _BEGIN_STRING: (_START, 0), _BEGIN_LINE: (_START | _NL, 0), _END_STRING: (0, 0),
    _END: (0, _NL), _END_LINE: (0, _NL),
    _BOUNDARY_A: (_START | _WA, _WA), _NOT_BOUNDARY_A: (_START | _WA, _WA),
    _BOUNDARY_U: (_START | _WU, _WU), _NOT_BOUNDARY_U: (_START | _WU, _WU),
}

_CATEGORY_TEXT: Final = {
    _c.CATEGORY_DIGIT: "\\d", _c.CATEGORY_NOT_DIGIT: "\\D",
    _c.CATEGORY_SPACE: "\\s", _c.CATEGORY_NOT_SPACE: "\\S",
    _c.CATEGORY_WORD: "\\w", _c.CATEGORY_NOT_WORD: "\\W",
}


def _unsupported_opcodes() -> dict[Any, str]:
    names = {
        "GROUPREF": "backreferences", "GROUPREF_EXISTS": "conditional groups '(?(...)...)'",
        "ATOMIC_GROUP": "atomic groups '(?>...)'", "POSSESSIVE_REPEAT": "possessive quantifiers",
        "GROUPREF_IGNORE": "backreferences",
    }
    return {getattr(_c, name): text for name, text in names.items() if hasattr(_c, name)}


_UNSUPPORTED: Final = _unsupported_opcodes()


class _Predicates:
    """The distinct one-character tests of a pattern, each a bit of a character's mask."""

    def __init__(self, is_bytes: bool) -> None:
        self.is_bytes = is_bytes
        self.bits: dict[tuple[str, int], int] = {}
        # Exact literals: the item itself -> the bits of the literals it is.
        self.literals: dict[object, int] = {}
        # Everything else: (bit, test of one subject item).
        self.tests: list[tuple[int, Callable[[Any], bool]]] = []
        self.always = 0

    def bit(self, source: str, flags: int, literal: int | None) -> int:
        """The bit of the test ``source`` (a one-character pattern, written for str) under
        ``flags``; ``literal`` is the code point when the test is equality with it."""
        key = (source, flags)
        found = self.bits.get(key)
        if found is not None:
            return found
        bit = len(self.bits)
        self.bits[key] = bit
        value = 1 << (bit + _CONTEXT_BITS)
        if literal is not None:
            item: object = literal if self.is_bytes else chr(literal)
            self.literals[item] = self.literals.get(item, 0) | value
        elif source == "(?s:.)":
            self.always |= value
        elif source == ".":
            newline: object = 10 if self.is_bytes else "\n"
            self.tests.append((value, lambda item: item != newline))
        else:
            self.tests.append((value, _one_character_test(source, flags, self.is_bytes)))
        return bit


def _one_character_test(source: str, flags: int, is_bytes: bool) -> Callable[[Any], bool]:
    """The test of one subject item by ``re`` on the one-character pattern ``source``, compiled
    the first time it is used: a pattern that ``re`` runs instead (the quick path, or
    :func:`compile_set` for what the NFA refuses) never pays for its classes twice."""
    compiled: Callable[[Any], Any] | None = None

    def test(item: Any) -> bool:
        nonlocal compiled
        if compiled is None:
            fullmatch: Callable[[Any], Any] = (
                re.compile(source.encode("latin-1"), flags).fullmatch if is_bytes
                else re.compile(source, flags).fullmatch)
            compiled = fullmatch
        return compiled(bytes((item,)) if is_bytes else item) is not None
    return test


def _combine_flags(flags: int, add: int, remove: int) -> int:
    # What re's compiler does for a scoped (?flags-flags:...) group.
    if add & _TYPE_FLAGS:
        flags &= ~_TYPE_FLAGS
    return (flags | add) & ~remove


class _Nfa:
    """A Thompson NFA, built right to left: each item is compiled knowing its successor."""

    def __init__(self, is_bytes: bool) -> None:
        self.is_bytes = is_bytes
        self.kind: list[int] = []
        self.arg: list[int] = []
        self.out: list[int] = []
        self.out2: list[int] = []
        self.predicates = _Predicates(is_bytes)
        self.prev_reads = _START
        self.next_reads = 0
        # The parsed tree is alive while the NFA is built, so an item's id names it.
        self._item_bits: dict[tuple[Any, int, int], int] = {}
        self.size = 0  # nodes, and copies of repeated items that create none (``(?:){9999}``)

    def _grow(self, amount: int = 1) -> None:
        self.size += amount
        if self.size > MAX_NFA_NODES:
            raise UnsupportedPattern(f"pattern too complex: its automaton would exceed "
                                     f"{MAX_NFA_NODES} nodes (large counted repetitions?)")

    def node(self, kind: int, arg: int = 0, out: int = -1, out2: int = -1) -> int:
        self._grow()
        self.kind.append(kind)
        self.arg.append(arg)
        self.out.append(out)
        self.out2.append(out2)
        return len(self.kind) - 1

    def sequence(self, items: Any, flags: int, after: int) -> int:
        for op, av in reversed(list(items)):
            after = self.item(op, av, flags, after)
        return after

    def item(self, op: Any, av: Any, flags: int, after: int) -> int:
        if op is _c.LITERAL or op is _c.NOT_LITERAL or op is _c.ANY or op is _c.IN:
            return self.node(_CHAR, self._predicate(op, av, flags), after)
        if op is _c.AT:
            return self._assertion(av, flags, after)
        if op is _c.SUBPATTERN:
            _group, add, remove, body = av
            return self.sequence(body, _combine_flags(flags, add, remove), after)
        if op is _c.BRANCH:
            starts = [self.sequence(alternative, flags, after) for alternative in av[1]]
            start = starts[-1]
            for other in reversed(starts[:-1]):
                start = self.node(_SPLIT, 0, other, start)
            return start
        if op is _c.MAX_REPEAT or op is _c.MIN_REPEAT:
            low, high, body = av
            return self._repeat(low, None if high is _c.MAXREPEAT else high, body, flags, after)
        if op is _c.ASSERT or op is _c.ASSERT_NOT:
            direction = "lookahead" if av[0] == 1 else "lookbehind"
            raise UnsupportedPattern(f"{direction} assertions are not supported by the "
                                     "linear-time matcher")
        what = _UNSUPPORTED.get(op, f"the construct {op}")
        raise UnsupportedPattern(f"{what} are not supported by the linear-time matcher"
                                 if op in _UNSUPPORTED else
                                 f"{what} is not supported by the linear-time matcher")

    def _repeat(self, low: int, high: int | None, body: Any, flags: int, after: int) -> int:
        if high is None:
            loop = self.node(_SPLIT, 0, -1, after)
            first = self.sequence(body, flags, loop)
            self.out[loop] = first
            # x+ is x then back to the split; x* is the split first. Further copies for x{m,}.
            start = first if low >= 1 else loop
            required = max(low - 1, 0)
        else:
            start = after
            for _ in range(high - low):
                start = self.node(_SPLIT, 0, self.sequence(body, flags, start), after)
            required = low
        for _ in range(required):
            nodes = len(self.kind)
            start = self.sequence(body, flags, start)
            if len(self.kind) == nodes:
                self._grow()  # an empty item: no node, but a copy all the same
        return start

    def _assertion(self, at: Any, flags: int, after: int) -> int:
        multiline = bool(flags & _FLAG_M)
        unicode = not self.is_bytes and not flags & _FLAG_A
        if at is _c.AT_BEGINNING:
            kind = _BEGIN_LINE if multiline else _BEGIN_STRING
        elif at is _c.AT_BEGINNING_STRING:
            kind = _BEGIN_STRING
        elif at is _c.AT_END:
            kind = _END_LINE if multiline else _END
        elif at is _c.AT_END_STRING:
            kind = _END_STRING
        elif at is _c.AT_BOUNDARY:
            kind = _BOUNDARY_U if unicode else _BOUNDARY_A
        elif at is _c.AT_NON_BOUNDARY:
            kind = _NOT_BOUNDARY_U if unicode else _NOT_BOUNDARY_A
        else:
            raise UnsupportedPattern(f"the assertion {at} is not supported by the linear-time "
                                     "matcher")
        before, following = _READS[kind]
        self.prev_reads |= before
        self.next_reads |= following
        return self.node(_ASSERT, kind, after)

    def _predicate(self, op: Any, av: Any, flags: int) -> int:
        """The bit of a one-character item (each copy of a repeated item is the same object:
        its bit is looked up, not written again)."""
        key = (op, id(av), flags)
        bit = self._item_bits.get(key)
        if bit is None:
            bit = self._item_bits[key] = self._write_predicate(op, av, flags)
        return bit

    def _write_predicate(self, op: Any, av: Any, flags: int) -> int:
        """The bit of a one-character item, written back as a one-character pattern."""
        ignore = flags & _FLAG_I
        test_flags = flags & (_FLAG_I | _FLAG_A)
        if op is _c.ANY:
            return self.predicates.bit("(?s:.)" if flags & _FLAG_S else ".", 0, None)
        if op is _c.LITERAL:
            return self.predicates.bit(self._char(av), test_flags, None if ignore else av)
        if op is _c.NOT_LITERAL:
            return self.predicates.bit(f"[^{self._char(av)}]", test_flags, None)
        parts = []
        for kind, value in av:
            if kind is _c.NEGATE:
                parts.append("^")
            elif kind is _c.LITERAL:
                parts.append(self._char(value))
            elif kind is _c.RANGE:
                parts.append(f"{self._char(value[0])}-{self._char(value[1])}")
            elif kind is _c.CATEGORY and value in _CATEGORY_TEXT:
                parts.append(_CATEGORY_TEXT[value])
            else:
                raise UnsupportedPattern(f"the class item {kind} is not supported by the "
                                         "linear-time matcher")
        return self.predicates.bit(f"[{''.join(parts)}]", test_flags, None)

    def _char(self, code: int) -> str:
        return f"\\x{code:02x}" if self.is_bytes else f"\\U{code:08x}"


# -- the cost of compiling ------------------------------------------------------------------------

# re's whitespace in VERBOSE mode, and the flag letters of (?aiLmsux-imsx:...).
_WHITESPACE: Final = frozenset(" \t\n\r\v\f")
_FLAG_LETTERS: Final = frozenset("aiLmsux")
_DIGITS: Final = frozenset("0123456789")


def _check_text(pattern: str | bytes, flags: int) -> None:
    """Refuses, before it is parsed, a pattern too long, nested too deep for the parsers'
    recursion, or with a count PCRE refuses (the module's docstring)."""
    text = pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern
    if len(text) > MAX_PATTERN_LENGTH:
        unit = "bytes" if isinstance(pattern, bytes) else "characters"
        raise PatternTooCostly(f"pattern too long: {len(text)} {unit} exceed the maximum of "
                               f"{MAX_PATTERN_LENGTH}")
    verbose = bool(flags & re.VERBOSE)
    deepest, passed, turned_on = _scan(text, pattern, verbose)
    if turned_on and not verbose:
        # Python 3.10 parses the whole pattern again as VERBOSE when a (?x) comes late; 3.11
        # refuses such a flag where it is: either way, no more than the deeper of the two.
        again, again_passed, _ = _scan(text, pattern, True)
        if again > deepest:
            deepest, passed = again, again_passed
    if deepest > MAX_NESTING:
        raise PatternTooCostly(f"pattern too complex: nesting depth {deepest} exceeds the "
                               f"maximum of {MAX_NESTING}", pattern, passed)


def _scan(text: str, pattern: str | bytes, verbose: bool) -> tuple[int, int, bool]:
    """The deepest nesting of groups in ``text`` as ``re``'s parser reads it, the position of the
    group that first passed :data:`MAX_NESTING` (or -1), and whether a global ``(?x)`` turned
    VERBOSE on; raises PCRE's error for a count above :data:`MAX_COUNT`.

    It reads what the parser reads, in its units: a backslash and the character after it are
    one (in classes and comments too), a class ends at a ``]`` that is not its first item,
    ``(?#...)`` ends at its ``)``, and in VERBOSE (as a scoped ``(?x:``, a ``(?-x:`` or a
    global ``(?x)`` sets it) whitespace is nothing and ``#`` begins a comment that ends with
    the line. Up to the first syntax error the parser meets, the depth is the parser's own;
    past it the parser stops, whatever the scan reads there. A ``)`` in a class is no group's
    end, nor a ``[`` in a comment a class's start: each is read as the parser reads it."""
    n = len(text)
    depth = deepest = 0
    passed = -1
    turned_on = False
    outer: list[bool] = []  # the VERBOSE of each open group's surroundings
    i = 0
    while i < n:
        char = text[i]
        if char == "\\":
            i += 2
        elif verbose and char in _WHITESPACE:
            i += 1
        elif verbose and char == "#":
            i += 1
            while i < n and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif char == "[":
            i += 1
            if i < n and text[i] == "^":
                i += 1
            first = True
            while i < n and (first or text[i] != "]"):
                i += 2 if text[i] == "\\" else 1
                first = False
            i += 1
        elif char == "(" and text.startswith("(?#", i):
            i += 3
            while i < n and text[i] != ")":
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif char == "(":
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth > MAX_NESTING and passed < 0:
                    passed = i
            outer.append(verbose)
            i += 1
            if text.startswith("?", i):
                add_end = i + 1
                while add_end < n and text[add_end] in _FLAG_LETTERS:
                    add_end += 1
                end = add_end
                if end < n and text[end] == "-":
                    end += 1
                    while end < n and text[end] in _FLAG_LETTERS:
                        end += 1
                added, removed = text[i + 1:add_end], text[add_end + 1:end]
                if end < n and text[end] == ":" and (added or removed):
                    verbose = ("x" in added or verbose) and "x" not in removed
                    i = end + 1
                elif end < n and text[end] == ")" and added and end == add_end:
                    # global flags: no group, VERBOSE from here on
                    depth -= 1
                    outer.pop()
                    if "x" in added:
                        verbose = turned_on = True
                    i = end + 1
        elif char == ")":
            if outer:
                verbose = outer.pop()
                depth -= 1
            i += 1
        elif char == "{":
            _check_count(text, pattern, i)
            i += 1
        else:
            i += 1
    return deepest, passed, turned_on


def _check_count(text: str, pattern: str | bytes, brace: int) -> None:
    """PCRE's refusal of a count above :data:`MAX_COUNT` in ``{m}``, ``{m,}`` or ``{m,n}`` (the
    forms it takes as a count), at PCRE's offset: just after the digit that passed it."""
    n = len(text)
    i = brace + 1
    numbers = []
    for _ in range(2):
        start = i
        while i < n and text[i] in _DIGITS:
            i += 1
        numbers.append((start, i))
        if i < n and text[i] == "," and len(numbers) == 1:
            i += 1
            continue
        break
    if i >= n or text[i] != "}" or numbers[0][0] == numbers[0][1]:
        return  # a literal brace for PCRE
    for start, end in numbers:
        value = 0
        for position in range(start, end):
            value = value * 10 + ord(text[position]) - 48
            if value > MAX_COUNT:
                raise error("number too big in {} quantifier", pattern, position + 1)


def _check_tree(tree: Any) -> None:
    """Refuses a parsed pattern whose classes would cost too much to compile (the module's
    docstring): more than :data:`MAX_CLASSES` distinct ones, or ranges spanning more than
    :data:`MAX_CLASS_SPAN` code points of the Basic Multilingual Plane in all."""
    classes: set[tuple[Any, ...]] = set()
    span = 0
    todo = [tree]
    while todo:
        for op, av in todo.pop():
            if op is _c.IN:
                classes.add(tuple(av))
                for kind, value in av:
                    if kind is _c.RANGE and value[0] <= 0xFFFF:
                        span += min(value[1], 0xFFFF) - value[0] + 1
            elif op is _c.NOT_LITERAL:
                classes.add((op, av))
            elif op is _c.SUBPATTERN:
                todo.append(av[3])
            elif op is _c.BRANCH:
                todo.extend(av[1])
            elif op in _REPEATS:
                todo.append(av[2])
            elif op is _c.ASSERT or op is _c.ASSERT_NOT:
                todo.append(av[1])
            elif op is _GROUPREF_EXISTS:
                todo.extend(branch for branch in av[1:] if branch is not None)
            elif op is _ATOMIC_GROUP:
                todo.append(av)
    if len(classes) > MAX_CLASSES:
        raise PatternTooCostly(f"pattern too complex: {len(classes)} distinct character "
                               f"classes exceed the maximum of {MAX_CLASSES}")
    if span > MAX_CLASS_SPAN:
        raise PatternTooCostly(f"pattern too complex: its character classes span {span} code "
                               f"points, more than the maximum of {MAX_CLASS_SPAN}")


_REPEATS: Final = frozenset(getattr(_c, name) for name in (
    "MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_c, name))
_GROUPREF_EXISTS: Final = _c.GROUPREF_EXISTS
_ATOMIC_GROUP: Final = getattr(_c, "ATOMIC_GROUP", object())
# Python 3.10's parser: what it raises when VERBOSE is turned on inside a (?-x:...).
_VERBOSE_RESTART: Final[type[BaseException]] = getattr(_parser, "Verbose", OverflowError)


def _parse(pattern: str | bytes, flags: int, *, whole: bool) -> tuple[_Nfa, int, int, bool]:
    """The NFA of ``pattern``: (nfa, start node, the pattern's flags, whether ``re`` may run
    it: see :func:`_backtrack_safe`); with ``whole``, it accepts only at the end of the subject
    (for ``fullmatch``)."""
    if flags & _FLAG_T:
        raise UnsupportedPattern("the TEMPLATE flag is not supported by the linear-time matcher")
    _check_text(pattern, flags)
    try:
        tree = _parser.parse(pattern, flags)
    except (OverflowError, _VERBOSE_RESTART) as exc:  # (not re.error: re's own oversights)
        raise error(str(exc) or "the VERBOSE flag turned on inside (?-x:...)") from None
    _check_tree(tree)
    flags = int(tree.state.flags)
    if flags & _FLAG_L:
        raise UnsupportedPattern("the LOCALE flag is not supported by the linear-time matcher "
                                 "(its classes depend on the locale when matching)")
    nfa = _Nfa(isinstance(pattern, bytes))
    accept = nfa.node(_MATCH)
    if whole:
        accept = nfa.node(_ASSERT, _END_STRING, accept)
    start = nfa.sequence(tree, flags, accept)
    return nfa, start, flags, _backtrack_safe(tree, flags)


#: The most items (characters, classes, assertions) a pattern that ``re`` runs may have.
QUICK_ITEMS: Final = 32


def _backtrack_safe(tree: Any, flags: int) -> bool:
    r"""Whether ``re`` matches ``tree`` in linear time: the quick path's rule.

    The pattern must be, once groups are opened, a sequence of at most :data:`QUICK_ITEMS`
    one-character items (literals, classes, ``.``) and assertions, except for at most one
    repetition of a one-character item with a minimum of 0 or 1; only assertions may follow
    that repetition, and if any does, the pattern must begin with ``\A`` (or ``^`` without
    MULTILINE). No alternation, no scoped flags (``(?a:...)``: ``re.search``'s start-position
    optimisations read the pattern's global flags, and ``re.search(r"(?a:\W)", "é")`` says no
    where ``re.match`` says yes).

    Why it is linear: ``re`` searches by trying a match at each start position in turn. A
    match attempt over one-character items and assertions has no choice to make: it costs at
    most one step per item, ``k`` in all. The repetition is the only choice: ``re`` takes as
    many characters as it can (at most ``n`` steps), then gives them back one at a time, each
    time trying what follows. Nothing follows: the attempt has matched (minimum 0), or failed
    at its first character (minimum 1), so the search ends the first time it gets past the
    repetition's first character, after ``O(n)``. Assertions follow: each give-back costs
    ``O(k)`` and the attempt ``O(n * k)``, but only the attempt at position 0 gets past the
    leading ``\A``, each other one fails at its first item. So a search costs at most
    ``O(n * k)`` steps of ``re``'s C loop, ``k <= QUICK_ITEMS``; ``fullmatch``, one attempt,
    ``O(n * k)`` too. (``re.search(r"a*b", "a" * n)`` is quadratic: a repetition followed by
    a character; ``re.search(r"x.*$", ...)`` too, unanchored; both are refused.)
    """
    items: list[tuple[Any, Any, int]] = []

    def flatten(sequence: Any, flags: int) -> bool:
        for op, av in sequence:
            if op is _c.SUBPATTERN:
                _group, add, remove, body = av
                if add or remove or not flatten(body, flags):
                    return False
            else:
                items.append((op, av, flags))
        return True

    if not flatten(tree, flags) or len(items) > QUICK_ITEMS:
        return False
    repeat = None
    for index, (op, av, _flags) in enumerate(items):
        if op in _ONE_CHARACTER or op is _c.AT:
            continue
        if (op is _c.MAX_REPEAT or op is _c.MIN_REPEAT) and repeat is None:
            low, _high, body = av
            if low > 1 or len(body) != 1 or body[0][0] not in _ONE_CHARACTER:
                return False
            repeat = index
            continue
        return False
    if repeat is None or repeat == len(items) - 1:
        return True
    if any(op is not _c.AT for op, _, _ in items[repeat + 1:]):
        return False
    op, av, first_flags = items[0]
    return op is _c.AT and (av is _c.AT_BEGINNING_STRING
                            or (av is _c.AT_BEGINNING and not first_flags & _FLAG_M))


_ONE_CHARACTER: Final = frozenset((_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN))


# -- the lazy DFA --------------------------------------------------------------------------------


class _State(dict[Any, "_State"]):
    """A DFA state: its transitions, keyed by subject item, computed when first missing."""

    __slots__ = ("accepts", "by_mask", "dfa", "final", "pending", "prev", "threads")

    def __init__(self, dfa: _Dfa, threads: int, pending: int, prev: int, *,
                 final: bool | None = None) -> None:
        super().__init__()
        self.dfa = dfa
        #: The NFA nodes the search is at (a bit per node), closed under splits.
        self.threads = threads
        #: Nodes reached past a ``$`` before a newline: alive only if the subject ends after
        #: that newline, so they die at the next character.
        self.pending = pending
        #: The context bits of the previous character (_START at the start of the subject).
        self.prev = prev
        self.by_mask: dict[int, _State] = {}
        #: Whether a subject that ends here matches (None: not computed yet).
        self.accepts = final
        #: A sink: every character leads back here, the answer is ``accepts``.
        self.final = final is not None

    def __missing__(self, item: Any) -> _State:
        return self.dfa.transition(self, item)


@final
@dataclass(frozen=True)
class Statistics:
    """What a compiled pattern's DFA cache holds and has done (see :meth:`Pattern.statistics`)."""

    #: NFA nodes of the pattern (with the repeated items spelled out).
    nfa_nodes: int
    #: DFA states in the cache now.
    states: int
    #: Transitions computed by following the NFA (on a (state, character mask) not yet known),
    #: since the pattern was compiled.
    transitions_computed: int
    #: Transitions recorded for a character whose mask's transition was known.
    transitions_recorded: int
    #: Times the cache passed its budget and was emptied.
    flushes: int
    #: Bytes the cache holds now, as estimated (out of the budget).
    cache_bytes: int


def _iter_bits(bits: int) -> list[int]:
    """The positions of the set bits of ``bits``."""
    positions = []
    while bits:
        low = bits & -bits
        positions.append(low.bit_length() - 1)
        bits ^= low
    return positions


# The positions of the set bits of each byte.
_BYTE_BITS: Final = [tuple(bit for bit in range(8) if byte >> bit & 1) for byte in range(256)]


def _split_closures(nfa: _Nfa) -> list[int]:
    """For each node, the nodes other than splits it reaches through splits alone (itself if it
    is not a split), as a bit set: Tarjan's strongly connected components over the split edges
    (loops of splits are cycles), each component's set the union of its members' and of the
    sets of the components it leads to, which come first."""
    kind, out, out2 = nfa.kind, nfa.out, nfa.out2
    count = len(kind)
    closures = [0] * count
    index = [-1] * count
    low = [0] * count
    on_stack = [False] * count
    stack: list[int] = []
    counter = 0

    def successors(node: int) -> tuple[int, ...]:
        return (out[node], out2[node]) if kind[node] == _SPLIT else ()

    for root in range(count):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        while work:
            node, position = work[-1]
            if position == 0 and index[node] < 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack[node] = True
            following = successors(node)
            if position < len(following):
                work[-1] = (node, position + 1)
                successor = following[position]
                if index[successor] < 0:
                    work.append((successor, 0))
                elif on_stack[successor]:
                    low[node] = min(low[node], index[successor])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component.append(member)
                    if member == node:
                        break
                members = set(component)
                bits = 0
                for member in component:
                    if kind[member] != _SPLIT:
                        bits |= 1 << member
                    for successor in successors(member):
                        if successor not in members:
                            bits |= closures[successor]
                for member in component:
                    closures[member] = bits
    return closures


class _Dfa:
    """The lazily built DFA of one NFA, for ``search`` (any start) or ``fullmatch``.

    Sets of NFA nodes are ``int`` bit sets: a closure or a step is a few operations on
    ``m``-bit integers per node that takes part, not a Python loop over the NFA."""

    def __init__(self, nfa: _Nfa, start: int, search: bool, budget: int) -> None:
        self.nfa = nfa
        self.search = search
        self.budget = budget
        closures = _split_closures(nfa)
        kind, arg, out = nfa.kind, nfa.arg, nfa.out
        # What a node that consumes or passes leads to: the split closure of its successor.
        self._then = [closures[out[node]] if kind[node] in (_CHAR, _ASSERT) else 0
                      for node in range(len(kind))]
        self._accept = 1 << kind.index(_MATCH)
        # The character nodes of each predicate, and the assertion nodes of each kind.
        self._char_nodes: list[int] = [0] * len(nfa.predicates.bits)
        self._assertion_nodes: dict[int, int] = {}
        for node, node_kind in enumerate(kind):
            if node_kind == _CHAR:
                self._char_nodes[arg[node]] |= 1 << node
            elif node_kind == _ASSERT:
                self._assertion_nodes[arg[node]] = self._assertion_nodes.get(arg[node], 0) | 1 << node
        self._assertions = 0
        for nodes in self._assertion_nodes.values():
            self._assertions |= nodes
        # A search restarts at every position, unless no thread started after the first
        # position can get anywhere (every path from the start passes \A, or ^ without
        # MULTILINE): then the DFA can die.
        self.restart_threads = closures[start] if search and _restart_useful(nfa, start) else 0
        predicates = nfa.predicates
        self._literals = predicates.literals
        self._tests = predicates.tests
        self._always = predicates.always
        self._next_reads = nfa.next_reads & (_NL | _WA | _WU)
        self._prev_reads = nfa.prev_reads & (_NL | _WA | _WU)
        self._word_ascii, self._word_unicode, self._newline = _context_tests(nfa.is_bytes)
        self.states: dict[tuple[int, int, int], _State] = {}
        self.masks: dict[Any, int] = {}
        self._chars_of_mask: dict[int, int] = {}
        self._byte_unions: dict[int, int] = {}
        self._bytes = (len(kind) + 7) // 8
        self.cached = 0
        self.computed = 0
        self.recorded = 0
        self.flushes = 0
        # The sinks: a match was reached (a search is true whatever follows), and nothing is
        # alive and nothing can start (false).
        self.found = _State(self, 0, 0, 0, final=True)
        self.dead = _State(self, 0, 0, 0, final=False)
        initial = 0 if self.restart_threads else closures[start]
        self.initial = self._state(initial, 0, _START)

    # -- cache ----------------------------------------------------------------------------------

    def _state(self, threads: int, pending: int, prev: int) -> _State:
        key = (threads, pending, prev)
        state = self.states.get(key)
        if state is None:
            state = _State(self, threads, pending, prev)
            self.states[key] = state
            self.cached += _STATE + (threads.bit_length() + pending.bit_length()) // 8
        return state

    def _flush(self) -> None:
        for state in (*self.states.values(), self.found, self.dead):
            state.clear()
            state.by_mask.clear()
        self.states.clear()
        self.masks.clear()
        self._chars_of_mask.clear()
        self._byte_unions.clear()
        self.cached = 0
        self.flushes += 1
        # The initial state stays (its transitions were cleared with the rest).
        initial = self.initial
        self.states[(initial.threads, initial.pending, initial.prev)] = initial
        self.cached += _STATE + initial.threads.bit_length() // 8

    # -- characters -----------------------------------------------------------------------------

    def mask(self, item: Any) -> int:
        """The bits of the predicates ``item`` passes, and of its context (the low bits)."""
        mask = self.masks.get(item)
        if mask is None:
            mask = self._literals.get(item, 0) | self._always
            for value, test in self._tests:
                if test(item):
                    mask |= value
            reads = self._next_reads | self._prev_reads
            if reads & _NL and self._newline(item):
                mask |= _NL
            if reads & _WA and self._word_ascii(item):
                mask |= _WA
            if reads & _WU and self._word_unicode(item):
                mask |= _WU
            self.masks[item] = mask
            self.cached += _ENTRY
        return mask

    def _chars(self, mask: int) -> int:
        """The character nodes whose predicate a character of ``mask`` passes."""
        nodes = self._chars_of_mask.get(mask)
        if nodes is None:
            nodes = 0
            for bit in _iter_bits(mask >> _CONTEXT_BITS):
                nodes |= self._char_nodes[bit]
            self._chars_of_mask[mask] = nodes
            self.cached += _ENTRY + self._bytes
        return nodes

    def _successors(self, nodes: int) -> int:
        """The union of what ``nodes`` lead to: bit by bit for a few nodes, else by bytes of the
        bit set, each (byte position, byte) union computed once and kept."""
        then = self._then
        following = 0
        if nodes.bit_count() <= 16:
            for node in _iter_bits(nodes):
                following |= then[node]
            return following
        unions = self._byte_unions
        for position, byte in enumerate(nodes.to_bytes(self._bytes, "little")):
            if byte:
                key = position << 8 | byte
                union = unions.get(key)
                if union is None:
                    union = 0
                    for bit in _BYTE_BITS[byte]:
                        union |= then[position << 3 | bit]
                    unions[key] = union
                    self.cached += _ENTRY + self._bytes
                following |= union
        return following

    # -- transitions ----------------------------------------------------------------------------

    def transition(self, state: _State, item: Any) -> _State:
        """The state after ``state`` on the subject item ``item``, computed and recorded."""
        if self.cached > self.budget:
            self._flush()
        if state.final:
            state[item] = state
            self.cached += _ENTRY
            return state
        mask = self.mask(item)
        following = state.by_mask.get(mask)
        if following is None:
            following = self._step(state, mask)
            state.by_mask[mask] = following
            self.cached += _ENTRY
            self.computed += 1
        else:
            self.recorded += 1
        state[item] = following
        self.cached += _ENTRY
        return following

    def _step(self, state: _State, mask: int) -> _State:
        # Pending threads had to be at the end of the subject: a character came, they die.
        threads, pending = self._close(state.threads | self.restart_threads, 0, state.prev,
                                       mask, at_end=False)
        if self.search and threads & self._accept:
            return self.found
        chars = self._chars(mask)
        following = self._successors(threads & chars)
        following_pending = pending & self._accept  # the $ before the final newline
        if pending:
            following_pending |= self._successors(pending & chars)
        following_pending &= ~following
        if not following and not following_pending and not self.restart_threads:
            return self.dead
        if self.search and following & self._accept:
            return self.found
        return self._state(following, following_pending, mask & self._prev_reads)

    def accepts_at_end(self, state: _State) -> bool:
        """Whether the subject matches when it ends in ``state`` (recorded on the state)."""
        accepts = state.accepts
        if accepts is None:
            threads, pending = self._close(state.threads | self.restart_threads, state.pending,
                                           state.prev, 0, at_end=True)
            accepts = bool((threads | pending) & self._accept)
            state.accepts = accepts
        return accepts

    def _close(self, threads: int, pending: int, prev: int, mask: int, *,
               at_end: bool) -> tuple[int, int]:
        """``threads`` and ``pending`` with what the assertions they are at let through,
        between the character described by ``prev`` and the one of ``mask`` (or the end)."""
        assertions = self._assertions
        if not (threads | pending) & assertions:
            return threads, pending
        passing = 0
        conditional = 0
        for assertion, nodes in self._assertion_nodes.items():
            result = _passes(assertion, prev, mask, at_end)
            if result == 1:
                passing |= nodes
            elif result == 3:
                conditional |= nodes
        then = self._then
        done = 0
        while True:
            todo = threads & (passing | conditional) & ~done
            if not todo:
                break
            done |= todo
            for node in _iter_bits(todo):
                if passing >> node & 1:
                    threads |= then[node]
                else:
                    pending |= then[node]
        done = 0
        while True:
            todo = pending & (passing | conditional) & ~done
            if not todo:
                break
            done |= todo
            for node in _iter_bits(todo):
                pending |= then[node]
        return threads, pending & ~threads


def _passes(assertion: int, prev: int, mask: int, at_end: bool) -> int:
    """0: the assertion fails; 1: it holds; 3: it holds if the subject ends after the next
    character (Python's ``$`` before a newline)."""
    if assertion == _BEGIN_STRING:
        return 1 if prev & _START else 0
    if assertion == _BEGIN_LINE:
        return 1 if prev & (_START | _NL) else 0
    if assertion == _END_STRING:
        return 1 if at_end else 0
    if assertion == _END:
        return 1 if at_end else 3 if mask & _NL else 0
    if assertion == _END_LINE:
        return 1 if at_end or mask & _NL else 0
    word = _WA if assertion in (_BOUNDARY_A, _NOT_BOUNDARY_A) else _WU
    before = bool(prev & word)
    after = not at_end and bool(mask & word)
    if assertion in (_BOUNDARY_A, _BOUNDARY_U):
        return 1 if before != after else 0
    if prev & _START and at_end:
        return 1 if _B_MATCHES_EMPTY else 0
    return 1 if before == after else 0


def _restart_useful(nfa: _Nfa, start: int) -> bool:
    """Whether a thread started after the first character can reach a character or the
    accepting node: every assertion but \\A (and ^ without MULTILINE) is taken as passing."""
    seen = set()
    stack = [start]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        kind = nfa.kind[node]
        if kind in (_CHAR, _MATCH):
            return True
        if kind == _SPLIT:
            stack.extend((nfa.out[node], nfa.out2[node]))
        elif nfa.arg[node] != _BEGIN_STRING:
            stack.append(nfa.out[node])
    return False


def _context_tests(is_bytes: bool) -> tuple[Callable[[Any], bool], Callable[[Any], bool],
                                            Callable[[Any], bool]]:
    """Tests of one subject item: ASCII word character, Unicode word character, newline (the
    word characters as re's \\b sees them)."""
    if is_bytes:
        word = re.compile(rb"\w").fullmatch
        table = [word(bytes((code,))) is not None for code in range(256)]
        return table.__getitem__, table.__getitem__, (10).__eq__
    ascii_word = re.compile(r"\w", re.ASCII).fullmatch
    unicode_word = re.compile(r"\w").fullmatch
    return (lambda item: ascii_word(item) is not None,
            lambda item: unicode_word(item) is not None,
            "\n".__eq__)


# -- the public API ------------------------------------------------------------------------------

_reduce = functools.reduce
_getitem = operator.getitem
# Subjects are walked in slices of this many items, so that a long one stops soon after its
# answer is known (a sink is reached) without a test per character.
_SLICE: Final = 64


def _run(dfa: _Dfa, subject: Any) -> bool:
    """Walks ``subject`` through ``dfa``: one look-up per item, in C."""
    state: _State = dfa.initial
    if len(subject) <= _SLICE:
        state = _reduce(_getitem, subject, state)
    else:
        for begin in range(0, len(subject), _SLICE):
            state = _reduce(_getitem, subject[begin:begin + _SLICE], state)
            if state.final:
                break
    accepts = state.accepts
    return dfa.accepts_at_end(state) if accepts is None else accepts


@final
class Pattern(Generic[AnyStr]):
    """A compiled pattern (see :func:`compile`): ``search`` and ``fullmatch`` answer yes or no
    in time linear in the subject.

    >>> compile(r"^orders\\.").search("orders.eu")
    True
    >>> compile(b"^(a+)+$").search(b"a" * 10_000 + b"!")
    False
    """

    __slots__ = ("_budget", "_fullmatch", "_given_flags", "_nfa", "_re", "_search_dfa",
                 "_subject_type", "flags", "pattern")

    def __init__(self, pattern: AnyStr, flags: int, budget: int, quick: bool) -> None:
        nfa, start, parsed_flags, safe = _parse(pattern, flags, whole=False)
        #: The pattern's source, as given.
        self.pattern: AnyStr = pattern
        #: The flags in force: those given, those set inline, and UNICODE for str (as re's).
        self.flags = parsed_flags
        self._budget = budget
        self._subject_type: type = bytes if isinstance(pattern, bytes) else str
        self._given_flags = flags
        self._nfa: tuple[_Nfa, int] | None = (nfa, start)
        self._search_dfa: _Dfa | None = None
        self._fullmatch: _Dfa | None = None
        #: ``re``'s compiled pattern, when it is safe to run (see :func:`_backtrack_safe`).
        self._re: re.Pattern[AnyStr] | None = (re.compile(pattern, flags) if quick and safe
                                                    else None)

    def __repr__(self) -> str:
        return f"embroker._regex.compile({self.pattern!r})"

    @property
    def quick(self) -> bool:
        """Whether ``re`` runs this pattern (it is on the quick path's safe list)."""
        return self._re is not None

    def search(self, subject: AnyStr) -> bool:
        """Whether the pattern matches anywhere in ``subject`` (``re.search(...) is not
        None``; Erlang's ``re:run`` answering ``match``).

        Runtime complexity: ``O(len(subject))`` dictionary look-ups once the DFA is warm;
        ``O(len(subject) * nodes)`` at worst.

        Raises:
            TypeError: a ``str`` subject for a ``bytes`` pattern, or the other way round.
        """
        quick = self._re
        if quick is not None:
            return quick.search(subject) is not None
        dfa = self._search_dfa
        if dfa is None:
            dfa = self._search
        if subject.__class__ is not self._subject_type:
            subject = self._check(subject)
        return _run(dfa, subject)

    def fullmatch(self, subject: AnyStr) -> bool:
        """Whether the whole of ``subject`` matches (``re.fullmatch(...) is not None``).

        Runtime complexity: as :meth:`search`.

        Raises:
            TypeError: a ``str`` subject for a ``bytes`` pattern, or the other way round.
        """
        quick = self._re
        if quick is not None:
            return quick.fullmatch(subject) is not None
        dfa = self._fullmatch
        if dfa is None:
            nfa, start, _, _ = _parse(self.pattern, self._given_flags, whole=True)
            dfa = self._fullmatch = _Dfa(nfa, start, search=False, budget=self._budget)
        if subject.__class__ is not self._subject_type:
            subject = self._check(subject)
        return _run(dfa, subject)

    @property
    def _search(self) -> _Dfa:
        dfa = self._search_dfa
        if dfa is None:
            assert self._nfa is not None
            nfa, start = self._nfa
            dfa = self._search_dfa = _Dfa(nfa, start, search=True, budget=self._budget)
            self._nfa = None
        return dfa

    def _check(self, subject: Any) -> Any:
        if self._subject_type is str:
            if isinstance(subject, str):
                return subject
            raise TypeError("cannot use a string pattern on a bytes-like object")
        if isinstance(subject, str):
            raise TypeError("cannot use a bytes pattern on a string-like object")
        if isinstance(subject, bytearray):
            return subject
        return bytes(memoryview(subject))

    def statistics(self) -> Statistics:
        """The search DFA's cache: states, transitions computed and recorded, flushes."""
        dfa = self._search
        return Statistics(nfa_nodes=len(dfa.nfa.kind), states=len(dfa.states),
                          transitions_computed=dfa.computed, transitions_recorded=dfa.recorded,
                          flushes=dfa.flushes, cache_bytes=dfa.cached)


@overload
def compile(pattern: str, flags: int = 0, *, cache_budget: int = CACHE_BUDGET,
            quick: bool = True) -> Pattern[str]: ...
@overload
def compile(pattern: bytes, flags: int = 0, *, cache_budget: int = CACHE_BUDGET,
            quick: bool = True) -> Pattern[bytes]: ...
def compile(pattern: str | bytes, flags: int = 0, *,
            cache_budget: int = CACHE_BUDGET, quick: bool = True) -> Pattern[str] | Pattern[bytes]:
    """Compiles ``pattern`` (``re``'s syntax and flags) for matching in linear time.

    Args:
        pattern: the regular expression, ``str`` or ``bytes``.
        flags: ``re`` flags (``re.IGNORECASE``...), or'ed.
        cache_budget: the bytes of DFA cache the pattern may hold before the cache is emptied
            (see the module's docstring); smaller costs time, not correctness.
        quick: let ``re`` run the pattern when it is safe to (:func:`_backtrack_safe`); with
            False, the DFA always does (the answers are the same).

    Returns:
        The compiled :class:`Pattern`.

    Raises:
        re.error: a syntax error, as ``re.compile`` raises it (``OverflowError`` too, as
            ``re.error``); a count above :data:`MAX_COUNT`, with PCRE's text.
        PatternTooCostly: a pattern too costly to compile (the module's docstring: "The cost
            of compiling"), before anything is compiled.
        UnsupportedPattern: a construct the linear-time matcher cannot run (backreferences,
            lookaround, conditionals, atomic groups, possessive quantifiers, LOCALE), or a
            pattern too complex (see :data:`MAX_NFA_NODES`).
        ValueError: flags that do not fit the pattern (``re``'s).
        TypeError: a pattern that is neither ``str`` nor ``bytes``.
    """
    if isinstance(pattern, str):  # (two branches: each makes its own Pattern type)
        return Pattern(pattern, flags, cache_budget, quick)
    if isinstance(pattern, bytes):
        return Pattern(pattern, flags, cache_budget, quick)
    raise TypeError("first argument must be string or compiled pattern")


@functools.lru_cache(maxsize=4096)
def compile_set(pattern: AnyStr) -> Pattern[AnyStr] | re.Pattern[AnyStr]:
    r"""A pattern an administrator or a policymaker set (a permission expression, a policy's
    pattern), compiled for :meth:`search`\ es on every name it meets: by :func:`compile` when
    a linear-time engine can match it, else by Python's :mod:`re` (lookarounds and back
    references, which RabbitMQ's PCRE takes and users write: ``^(?!amq\.).*``), whose
    backtracking is then the setter's to answer for. ``search`` is truthy when it matches,
    either way. Cached (the same pattern is met on every publish). A pattern too costly to
    compile (:class:`PatternTooCostly`) is refused before either engine sees it.

    Raises:
        re.error: a pattern Python's ``re`` does not compile either, or one refused before
            (:class:`PatternTooCostly`, a count above :data:`MAX_COUNT`).
    """
    try:
        return compile(pattern)
    except UnsupportedPattern:
        return re.compile(pattern)
