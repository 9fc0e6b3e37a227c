"""Exchanges and bindings, one class per exchange type.

Every type implements the same small interface, as RabbitMQ's ``rabbit_exchange_type`` does:
``validate_binding`` refuses a binding the type cannot use, ``route`` returns the bindings a
message matches (possibly with duplicates: the caller de-duplicates destinations), and
``mismatch`` says in words why one binding did not match (for routing explanations).

RabbitMQ's own types decide one routing key at a time (``route``); the types plugins bring
(``_plugin_exchanges``, ``_delayed``) see the whole message once (``route_message``: every
routing key, the headers and the properties, as a plugin's ``route/2`` sees the delivery) and
may say how they chose (a :class:`Choice`). A few act on a live publish beyond routing it
(``intercepts``: the delayed-message exchange holds the message, the recent-history exchange
keeps it), and on a new binding (``before_bind``: recent-history replays to it).
"""

from __future__ import annotations

import datetime
import decimal
import functools
import itertools
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, Union, final, overload

from typing_extensions import override

from .. import _erlang
from ..errors import PreconditionFailed
from ..fieldtypes import field_type, shown
from ._policy import Policy, alternate_exchange
from ._stats import MessageStats

if TYPE_CHECKING:
    from ._queue import Queue
    from ._vhost import VirtualHost

__all__ = [
    "Binding",
    "Bindings",
    "Choice",
    "DirectExchange",
    "Exchange",
    "FanoutExchange",
    "HeadersExchange",
    "TopicExchange",
    "TopicTrie",
    "freeze_table",
    "topic_matches",
]

Destination = Union["Queue", "Exchange"]


def _freeze(value: Any) -> Any:
    # Hashable form of a field value; keeps bool apart from int and str apart from bytes.
    if isinstance(value, dict):
        return ("F", tuple(sorted((k, _freeze(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("A", tuple(_freeze(v) for v in value))
    if isinstance(value, bool):
        return ("t", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ("x", bytes(value))
    return (type(value).__name__, value)


def freeze_table(table: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """A hashable, order-independent form of a field table, for binding identity."""
    if not table:
        return ()
    return tuple(sorted((k, _freeze(v)) for k, v in table.items()))


def binding_key(source: str, kind: str, destination: str, routing_key: str,
                arguments: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What identifies a binding: both ends, the routing key and the arguments."""
    return (source, kind, destination, routing_key, freeze_table(arguments))


@final
class Binding:
    """A binding from ``source`` to a queue or exchange ``destination``.

    Bindings are identified, as in RabbitMQ, by source, destination, routing key *and* arguments.
    """

    __slots__ = ("_arguments", "destination", "key", "routing_key", "source")

    def __init__(self, source: Exchange, destination: Destination, routing_key: str,
                 arguments: dict[str, Any]) -> None:
        self.source = source
        self.destination = destination
        self.routing_key = routing_key
        # Most bindings have no arguments: no empty dict is kept for them (64 bytes each).
        self._arguments = arguments or None
        self.key = binding_key(source.name, destination.kind, destination.name, routing_key,
                               arguments)

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments it was bound with (a new empty dict each time when there are none)."""
        arguments = self._arguments
        return {} if arguments is None else arguments

    def describe(self) -> str:
        """``"exchange 'x' -> queue 'q' with key 'a.b'"``, and the arguments when there are any."""
        dest = f"{self.destination.kind} '{self.destination.name}'"
        args = f" arguments {self.arguments!r}" if self.arguments else ""
        return f"exchange '{self.source.name}' -> {dest} with key '{self.routing_key}'{args}"

    def __repr__(self) -> str:
        return f"<Binding {self.describe()}>"


@final
class Choice(list[Binding]):
    """The bindings a plugin exchange routed a message to, with how it chose them in words
    (``"the hash of routing key 'k' fell in bucket 3 of 6: queue 'q2' (buckets 2-3)"``), for
    the routing explanation."""

    __slots__ = ("note",)

    def __init__(self, bindings: Iterable[Binding] = (), note: str = "") -> None:
        super().__init__(bindings)
        self.note = note


#: How many bindings make one piece of an exchange's :class:`Bindings` snapshot.
_PIECE = 256


@final
class Bindings(Sequence["Binding"]):
    """An exchange's bindings as they were at one moment, in the order they were made: what
    the routing trace keeps of each exchange a message passed through (``explain()`` reads it).

    Made of pieces of :data:`_PIECE` bindings each, shared with the snapshots before and after
    it: after a change the next snapshot copies the piece that changed and the list of pieces,
    ``O(N / 256 + 256)`` for N bindings, not all N (a publish after each bind of an exchange of
    100,000 bindings copied them all, 1.8 ms, and the trace kept 800 KB for it:
    ``docs/scale.md``). Reads are a tuple's: ``len`` O(1), iteration O(N), an index
    O(N / 256)."""

    __slots__ = ("_len", "_pieces")

    def __init__(self, pieces: tuple[tuple[Binding, ...], ...] = ()) -> None:
        self._pieces = pieces
        self._len = sum(len(piece) for piece in pieces)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Binding]:
        return itertools.chain.from_iterable(self._pieces)

    @overload
    def __getitem__(self, index: int) -> Binding: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Binding, ...]: ...

    def __getitem__(self, index: int | slice) -> Binding | tuple[Binding, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("binding index out of range")
        for piece in self._pieces:
            if index < len(piece):
                return piece[index]
            index -= len(piece)
        raise IndexError("binding index out of range")  # (not reached)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Bindings, tuple)):
            return len(self) == len(other) and all(a is b or a == b
                                                   for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Bindings({list(self)!r})"


class Exchange:
    """An exchange of some type; the subclasses implement routing.

    Attributes:
        name, type, durable, auto_delete, internal, arguments: as declared.
        bindings: the bindings whose source is this exchange, in the order they were made.
    """

    type: ClassVar[str]
    kind: ClassVar[str] = "exchange"
    #: Whether ``route`` decides for one routing key at a time (RabbitMQ's own types); a type
    #: that routes the whole message at once (the plugins' types) overrides ``route_message``.
    per_key: ClassVar[bool] = True
    #: Whether a live publish through it calls :meth:`intercept` (not a what-if routing).
    intercepts: ClassVar[bool] = False
    #: ``((self, snapshot, False),)``, the visit a routing decision records, kept while the
    #: bindings' snapshot stays the same (the routing fast path of ``VirtualHost.route``).
    _visit: tuple[tuple[Exchange, Bindings, bool]] | None = None

    def __init__(self, vhost: VirtualHost, name: str, *, durable: bool = False,
                 auto_delete: bool = False, internal: bool = False,
                 arguments: dict[str, Any] | None = None) -> None:
        self.vhost = vhost
        self.name = name
        self.durable = durable
        self.auto_delete = auto_delete
        self.internal = internal
        self.arguments: dict[str, Any] = dict(arguments or {})
        self.bindings: dict[tuple[Any, ...], Binding] = {}
        #: Bindings whose destination is this exchange (exchange-to-exchange).
        self.incoming: dict[tuple[Any, ...], Binding] = {}
        self._snapshot: Bindings | None = None
        # The bindings in pieces of at most _PIECE, in order (an empty piece stays until the
        # pieces are remade), each piece's tuple as the last snapshot took it (None: changed
        # since), and the piece each binding is in.
        self._pieces: list[list[Binding]] = []
        self._frozen: list[tuple[Binding, ...] | None] = []
        self._piece_of: dict[tuple[Any, ...], int] = {}
        #: What was published to it and passed on (``message_stats``: :mod:`._stats`).
        self.stats = MessageStats()
        #: The policy and operator policy that apply to it (set by its vhost's policies).
        self.policy: Policy | None = None
        self.operator_policy: Policy | None = None
        #: Where unroutable messages go: its ``alternate-exchange`` argument, else its policy's.
        self.alternate_exchange: str | None = alternate_exchange(name, self.arguments, None)

    def apply_policies(self, policy: Policy | None, operator_policy: Policy | None) -> None:
        """Take the policy and operator policy that now apply (its alternate exchange may
        change)."""
        self.policy, self.operator_policy = policy, operator_policy
        self.alternate_exchange = alternate_exchange(self.name, self.arguments, policy)

    # -- the type interface --------------------------------------------------------------------

    @classmethod
    def validate(cls, vhost: VirtualHost, arguments: Mapping[str, Any]) -> None:
        """The type's checks of a new exchange's arguments (``validate/1``), before it is made;
        raises the AMQP error the type raises."""

    def validate_binding(self, routing_key: str, arguments: Mapping[str, Any]) -> None:
        """Raise :class:`PreconditionFailed` for a binding this type cannot use."""

    def route(self, routing_key: str, headers: Mapping[str, Any] | None) -> Sequence[Binding]:
        """The bindings a message with this key and headers matches; may repeat a binding."""
        raise NotImplementedError

    def mismatch(self, binding: Binding, routing_key: str,
                 headers: Mapping[str, Any] | None) -> str | None:
        """Why ``binding`` does not match, in words; ``None`` when it matches."""
        raise NotImplementedError

    def route_message(self, keys: Sequence[str], headers: Mapping[str, Any] | None,
                      properties: Mapping[str, Any] | None) -> Sequence[Binding]:
        """The bindings a message matches, given every routing key it has (the routing key, then
        those of ``CC`` and ``BCC``), its headers and its properties; may repeat a binding, and
        may be a :class:`Choice` that says how it chose. By default, :meth:`route` for each
        key."""
        if len(keys) == 1:
            return self.route(keys[0], headers)
        found: list[Binding] = []
        for key in keys:
            found.extend(self.route(key, headers))
        return found

    def intercept(self, message: Any, routing: Any) -> str | None:
        """A live publish reached this exchange (only for types with ``intercepts``): act on
        it beyond routing it; return why the exchange keeps the message from its bindings now
        (the delayed-message exchange holds it), or ``None`` to route it as usual."""
        return None

    def before_bind(self, binding: Binding) -> None:
        """A new binding is about to be added (after ``validate_binding``); raising refuses it."""

    def restarted(self) -> None:
        """The broker restarted and this (durable) exchange survived: rebuild what RabbitMQ
        rebuilds, forget what it forgets."""

    def _check(self) -> None:
        """Assert the type's own invariants (for tests)."""

    def forget_messages(self) -> None:
        """Drop the messages it keeps itself (``broker.reset()``: a recent-history exchange's
        history)."""

    def _bound(self, binding: Binding) -> None:
        """Index a new binding (types with an index override this)."""

    def _unbound(self, binding: Binding) -> None:
        """Remove a binding from the index."""

    # -- bookkeeping ---------------------------------------------------------------------------

    def add_binding(self, binding: Binding) -> bool:
        """Add ``binding``; returns False when an identical binding exists already."""
        if binding.key in self.bindings:
            return False
        self.bindings[binding.key] = binding
        pieces = self._pieces
        if not pieces or len(pieces[-1]) >= _PIECE:
            pieces.append([])
            self._frozen.append(None)
        pieces[-1].append(binding)
        self._frozen[-1] = None
        self._piece_of[binding.key] = len(pieces) - 1
        self._snapshot = None
        self._bound(binding)
        return True

    def remove_binding(self, key: tuple[Any, ...]) -> Binding | None:
        binding = self.bindings.pop(key, None)
        if binding is not None:
            index = self._piece_of.pop(key)
            piece = self._pieces[index]
            del piece[next(i for i, b in enumerate(piece) if b is binding)]
            self._frozen[index] = None
            if len(self._pieces) > 2 * len(self.bindings) // _PIECE + 2:
                self._remake_pieces()  # (mostly empty pieces: O(N), once per N/2 removals)
            self._snapshot = None
            self._unbound(binding)
        return binding

    def _remake_pieces(self) -> None:
        every = list(self.bindings.values())
        self._pieces = [every[i:i + _PIECE] for i in range(0, len(every), _PIECE)]
        self._frozen = [None] * len(self._pieces)
        self._piece_of = {binding.key: i // _PIECE for i, binding in enumerate(every)}

    def snapshot(self) -> Bindings:
        """The current bindings (:class:`Bindings`), shared until they change and sharing the
        pieces that did not change with the snapshots before: cheap to keep in a trace."""
        if self._snapshot is None:
            frozen = self._frozen
            for index, piece in enumerate(frozen):
                if piece is None:
                    frozen[index] = tuple(self._pieces[index])
            self._snapshot = Bindings(tuple(frozen))  # type: ignore[arg-type]
        return self._snapshot

    def __repr__(self) -> str:
        flags = [f for f, on in (("durable", self.durable), ("auto_delete", self.auto_delete),
                                 ("internal", self.internal)) if on]
        extra = f" {' '.join(flags)}" if flags else ""
        return (f"<{self.type} exchange '{self.name}' in vhost '{self.vhost.name}'{extra}, "
                f"{len(self.bindings)} bindings>")


@final
class DirectExchange(Exchange):
    """Routes to the bindings whose key equals the routing key. The default exchange is one."""

    type = "direct"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._by_key: dict[str, list[Binding]] = {}

    @override
    def _bound(self, binding: Binding) -> None:
        self._by_key.setdefault(binding.routing_key, []).append(binding)

    @override
    def _unbound(self, binding: Binding) -> None:
        same = self._by_key[binding.routing_key]
        same.remove(binding)
        if not same:
            del self._by_key[binding.routing_key]

    @override
    def route(self, routing_key: str, headers: Mapping[str, Any] | None) -> Sequence[Binding]:
        return self._by_key.get(routing_key, ())

    @override
    def mismatch(self, binding: Binding, routing_key: str,
                 headers: Mapping[str, Any] | None) -> str | None:
        if binding.routing_key == routing_key:
            return None
        return f"binding key '{binding.routing_key}' is not the routing key '{routing_key}'"


@final
class FanoutExchange(Exchange):
    """Routes to every binding, whatever the key."""

    type = "fanout"

    @override
    def route(self, routing_key: str, headers: Mapping[str, Any] | None) -> Sequence[Binding]:
        return self.snapshot()

    @override
    def mismatch(self, binding: Binding, routing_key: str,
                 headers: Mapping[str, Any] | None) -> str | None:
        return None


def split_topic(key: str) -> list[str]:
    """Split a routing or binding key into words as RabbitMQ does: ``""`` has no words at all,
    while ``"a."`` has two, the second one empty."""
    return key.split(".") if key else []


T = TypeVar("T")


class _TrieNode(Generic[T]):
    # ``tail``: the words below this node that only one pattern has, kept here rather than as a
    # node each until a second pattern branches from them (then the first becomes a node of its
    # own); a node with a tail has no children. ``children`` and ``values`` are None until the
    # node needs one (a leaf has no children, a branch usually no values), and are never empty
    # but in the root (whose children stay a dict).
    __slots__ = ("children", "tail", "values")

    def __init__(self, tail: tuple[str, ...] = (), values: list[T] | None = None) -> None:
        self.children: dict[str, _TrieNode[T]] | None = None
        self.tail = tail
        self.values = values


def _words_kept(words: list[str]) -> tuple[str, ...]:
    return tuple(map(sys.intern, words))


@final
class TopicTrie(Generic[T]):
    """Topic patterns (``*`` is exactly one word, ``#`` zero or more) in a trie of words, as
    RabbitMQ's ``rabbit_db_topic_exchange`` keeps them: matching a key costs what the patterns
    that could match cost, not what all of them do. The one topic matcher of embroker.

    The words of a pattern that no other pattern shares are kept together in one node (a
    compressed trie), interned: a binding costs a node, not one per word. (A new branch's own
    word is not interned: it is usually the word that makes the pattern unique, and interning
    it would only add to the interpreter's table.)

    >>> trie = TopicTrie[str]()
    >>> trie.add("order.*", "any order"); trie.add("#.eu", "europe")
    >>> sorted(trie.match("order.eu")), trie.match("order.created.us")
    (['any order', 'europe'], [])
    """

    __slots__ = ("_root",)

    def __init__(self) -> None:
        self._root: _TrieNode[T] = _TrieNode()
        self._root.children = {}

    def add(self, pattern: str, value: T) -> None:
        words = split_topic(pattern)
        n = len(words)
        node, i = self._root, 0
        while True:
            tail = node.tail
            if tail:
                if tail == tuple(words[i:]):
                    node.values.append(value)  # type: ignore[union-attr]
                    return
                # A second pattern branches from this tail: its first word becomes a node.
                node.children = {tail[0]: _TrieNode(tail[1:], node.values)}
                node.tail, node.values = (), None
            if i == n:
                if node.values is None:
                    node.values = [value]
                else:
                    node.values.append(value)
                return
            children = node.children
            if children is None:
                children = node.children = {}
            word = words[i]
            child = children.get(word)
            if child is None:
                children[word] = _TrieNode(_words_kept(words[i + 1:]), [value])
                return
            node, i = child, i + 1

    def remove(self, pattern: str, value: T) -> None:
        words = split_topic(pattern)
        n = len(words)
        path: list[_TrieNode[T]] = []  # the nodes above ``node``, the root first
        node, i = self._root, 0
        while i < n and not node.tail:
            child = node.children.get(words[i]) if node.children is not None else None
            if child is None:
                raise KeyError(pattern)
            path.append(node)
            node, i = child, i + 1
        if node.tail != tuple(words[i:]) or node.values is None:
            raise KeyError(pattern)
        node.values.remove(value)
        if node.values:
            return
        node.values = None
        # Prune the branch left empty; the key of the node at depth d is words[d - 1].
        while path and node.children is None and node.values is None:
            parent = path.pop()
            del parent.children[words[len(path)]]  # type: ignore[union-attr]
            if not parent.children and path:
                parent.children = None
            node = parent
        # Then keep the trie compressed: a node with no values and one child that has no
        # children takes that child's words (its parent then may take its own).
        while path:
            children = node.children
            if children is not None:
                if node.values is not None or len(children) != 1:
                    break
                (word, child), = children.items()
                if child.children is not None:
                    break
                node.tail = (sys.intern(word), *child.tail)
                node.values, node.children = child.values, None
            node = path.pop()

    def match(self, key: str) -> list[T]:
        """The values of every pattern ``key`` matches (a value twice if two patterns match)."""
        words = split_topic(key)
        out: list[T] = []
        _trie_match(self._root, words, 0, len(words), out, set())
        return out

    def _check(self) -> int:
        """Assert the trie's invariants (for tests); the number of values it holds."""
        root = self._root
        assert not root.tail
        assert root.children is not None
        assert root.values is None or root.values
        return _check_node(root, True)


def _check_node(node: _TrieNode[T], root: bool = False) -> int:
    children, values = node.children, node.values
    assert values is None or values, "an empty list of values is kept"
    if not root:
        assert children is None or children, "an empty dict of children is kept"
        assert children is not None or values, "an empty node is kept"
        assert not (node.tail and children is not None), "a node with a tail has children"
        if values is None and children is not None and len(children) == 1:
            only = next(iter(children.values()))
            assert only.children is not None, "a chain of single children is not compressed"
    for word in node.tail:
        assert word is sys.intern(word), f"word {word!r} not interned"
    count = len(values or ())
    for child in (children or {}).values():
        count += _check_node(child)
    return count


def _trie_match(node: _TrieNode[T], words: list[str], i: int, n: int, out: list[T],
                seen: set[tuple[int, ...]], p: int = 0) -> None:
    children = node.children
    if children is None:
        # A leaf: do what matching would do on the chain of nodes its tail stands for, from
        # the tail's p-th word on (each of those nodes has the one child tail[p] and no values),
        # for the same values in the same order. The node after tail[p - 1] is known as
        # (id(node), p, ...) in ``seen``.
        tail = node.tail
        if not tail:
            if i == n:
                out.extend(node.values)  # type: ignore[arg-type]
            return
        k = len(tail)
        while p < k:
            word = tail[p]
            p += 1
            if word == "#":
                for j in range(i, n + 1):
                    mark: tuple[int, ...] = (id(node), p, j)
                    if mark not in seen:
                        seen.add(mark)
                        _trie_match(node, words, j, n, out, seen, p)
                if i < n and words[i] == "#":  # (the key's word '#' names the '#' child too)
                    _trie_match(node, words, i + 1, n, out, seen, p)
                return
            if i == n:
                return
            key_word = words[i]
            i += 1
            if word == "*":
                if key_word == "*":  # (the key's word '*' names the '*' child, then '*' again)
                    _trie_match(node, words, i, n, out, seen, p)
            elif word != key_word:
                return
        if i == n:
            out.extend(node.values)  # type: ignore[arg-type]
        return
    hash_node = children.get("#")
    if hash_node is not None:
        # '#' swallows zero or more words: continue below it from every later position (once
        # per node and position, so runs of '#' stay polynomial).
        for j in range(i, n + 1):
            mark = (id(hash_node), j)
            if mark not in seen:
                seen.add(mark)
                _trie_match(hash_node, words, j, n, out, seen)
    if i == n:
        if node.values is not None:
            out.extend(node.values)
        return
    child = children.get(words[i])
    if child is not None:
        _trie_match(child, words, i + 1, n, out, seen)
    star = children.get("*")
    if star is not None:
        _trie_match(star, words, i + 1, n, out, seen)


@functools.lru_cache(maxsize=1024)
def _single_pattern(pattern: str) -> TopicTrie[bool]:
    trie = TopicTrie[bool]()
    trie.add(pattern, True)
    return trie


def topic_matches(pattern: str, key: str) -> bool:
    """Whether the topic ``pattern`` matches the routing ``key``, as a topic exchange decides.

    >>> topic_matches("order.#", "order"), topic_matches("*", "")
    (True, False)
    """
    return bool(_single_pattern(pattern).match(key))


@final
class TopicExchange(Exchange):
    """Routes by pattern: ``*`` is exactly one word, ``#`` zero or more words (a
    :class:`TopicTrie` of its bindings)."""

    type = "topic"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._trie = TopicTrie[Binding]()

    @override
    def _bound(self, binding: Binding) -> None:
        self._trie.add(binding.routing_key, binding)

    @override
    def _unbound(self, binding: Binding) -> None:
        self._trie.remove(binding.routing_key, binding)

    @override
    def _check(self) -> None:
        assert self._trie._check() == len(self.bindings), "the trie and the bindings differ"

    @override
    def route(self, routing_key: str, headers: Mapping[str, Any] | None) -> Sequence[Binding]:
        return self._trie.match(routing_key)

    @override
    def mismatch(self, binding: Binding, routing_key: str,
                 headers: Mapping[str, Any] | None) -> str | None:
        if topic_matches(binding.routing_key, routing_key):
            return None
        reason = _topic_reason(split_topic(binding.routing_key), split_topic(routing_key))
        return f"pattern '{binding.routing_key}' does not match '{routing_key}' ({reason})"


def _topic_reason(pattern: list[str], words: list[str]) -> str:
    if "#" not in pattern and len(pattern) != len(words):
        return f"the pattern has {len(pattern)} words, the key {len(words)}"
    for i, (p, w) in enumerate(zip(pattern, words, strict=False)):
        if p == "#":
            break
        if p not in ("*", w):
            return f"word {i + 1} is '{w}', the pattern wants '{p}'"
    return "no way to place the '#' wildcards"


# -- headers ---------------------------------------------------------------------------------

_X_MATCH_KINDS = ("all", "any", "all-with-x", "any-with-x")
_PRESENT = object()  # a binding argument without a value (void): the header need only be there


def _erlang_value(value: Any) -> Any:
    """A header value as RabbitMQ compares it (Erlang ``==``): numbers by value whatever their
    wire type, strings and byte arrays both as binaries, timestamps as integers, booleans apart
    from numbers, decimals by scale and digits."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp())
    if isinstance(value, decimal.Decimal):
        sign, digits, exponent = value.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        return ("decimal", -int(exponent), unscaled)
    if isinstance(value, dict):
        return ("table", tuple((k, _erlang_typed(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("array", tuple(_erlang_typed(v) for v in value))
    return value


def _erlang_typed(value: Any) -> Any:
    # Inside tables and arrays Erlang compares the AMQP type tags too: a signedint 1 is not a
    # long 1 there.
    return (field_type(value), _erlang_value(value))


@final
class HeadersExchange(Exchange):
    """Routes on the ``headers`` property against each binding's arguments (``x-match``)."""

    type = "headers"

    @override
    def validate_binding(self, routing_key: str, arguments: Mapping[str, Any]) -> None:
        if "x-match" not in arguments:
            return
        kind = arguments["x-match"]
        if isinstance(kind, str):
            if kind not in _X_MATCH_KINDS:
                raise PreconditionFailed(
                    f'Invalid x-match field value <<"{kind}">>; '
                    "expected all, any, all-with-x, or any-with-x")
            return
        raise PreconditionFailed(
            f"Invalid x-match field type {field_type(kind)} (value {_erlang.field_value(kind)}); "
            "expected longstr")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Each binding's match kind and its patterns, normalised once at bind time.
        self._compiled: dict[tuple[Any, ...], tuple[Binding, _CompiledMatch]] = {}

    @override
    def _bound(self, binding: Binding) -> None:
        self._compiled[binding.key] = (binding, _compile_match(binding.arguments))

    @override
    def _unbound(self, binding: Binding) -> None:
        del self._compiled[binding.key]

    @override
    def route(self, routing_key: str, headers: Mapping[str, Any] | None) -> Sequence[Binding]:
        data = headers or {}
        normalised: dict[str, Any] = {}  # each header converted once for all bindings
        return [binding for binding, compiled in self._compiled.values()
                if _compiled_matches(compiled, data, normalised)]

    @override
    def mismatch(self, binding: Binding, routing_key: str,
                 headers: Mapping[str, Any] | None) -> str | None:
        data = headers or {}
        if headers_match(binding.arguments, data):
            return None
        kind, patterns = _header_patterns(binding.arguments)
        if not patterns:
            return "x-match 'any' with no header to match never matches"
        reasons = []
        for key, want in patterns.items():
            if key not in data:
                reasons.append(f"header '{key}' is missing")
            elif want is not None and _erlang_value(want) != _erlang_value(data[key]):
                got, wanted = shown(data[key]), shown(want)
                if got == wanted:  # (equal as JSON, apart in AMQP: 1 as a long, 1 as a short)
                    got, wanted = _typed(data[key]), _typed(want)
                reasons.append(f"header '{key}' is {got}, the binding wants {wanted}")
        return f"x-match {kind}: " + "; ".join(reasons)


def _typed(value: Any) -> str:
    """A header value shown with the AMQP type of each number in it: ``{"a": 1 (long)}``."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{shown(k)}: {_typed(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_typed(v) for v in value) + "]"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{shown(value)} ({field_type(value)})"
    return shown(value)


def _header_patterns(arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    kind = arguments.get("x-match", "all")
    if kind not in _X_MATCH_KINDS:
        kind = "all"  # RabbitMQ treats an unknown value as "all" (legacy bindings)
    with_x = kind.endswith("-with-x")
    patterns = {k: v for k, v in arguments.items()
                if k != "x-match" and (with_x or not k.startswith("x-"))}
    return kind, patterns


#: A binding's arguments ready for matching: whether all patterns must match (else any), and
#: each header name with the value it wants (as Erlang compares it) or ``_PRESENT``.
_CompiledMatch = tuple[bool, tuple[tuple[str, Any], ...]]


def _compile_match(arguments: Mapping[str, Any]) -> _CompiledMatch:
    kind, patterns = _header_patterns(arguments)
    return kind.startswith("all"), tuple(
        (k, _PRESENT if v is None else _erlang_value(v)) for k, v in patterns.items())


def _compiled_matches(compiled: _CompiledMatch, headers: Mapping[str, Any],
                      normalised: dict[str, Any]) -> bool:
    match_all, patterns = compiled
    for key, want in patterns:
        if key in headers:
            if want is _PRESENT:
                hit = True
            else:
                have = normalised.get(key, _PRESENT)
                if have is _PRESENT:
                    have = normalised[key] = _erlang_value(headers[key])
                hit = have == want
        else:
            hit = False
        if hit != match_all:  # all: the first miss decides; any: the first hit
            return hit
    return match_all


def headers_match(arguments: Mapping[str, Any], headers: Mapping[str, Any]) -> bool:
    """RabbitMQ's header matching: a binding argument with no value (``None``, AMQP void) asks
    only for the header to be present; any other value must equal the header's value."""
    return _compiled_matches(_compile_match(arguments), headers, {})


EXCHANGE_TYPES: dict[str, type[Exchange]] = {
    cls.type: cls for cls in (DirectExchange, FanoutExchange, TopicExchange, HeadersExchange)
}

