"""Stream queues (``x-queue-type: stream``): an append-only log read from an offset.

Theory of operation
-------------------
RabbitMQ keeps a stream in osiris, a log of *chunks* (the messages written together, with the
offset of the first one and a timestamp) in *segments* (files of at most
``x-stream-max-segment-size-bytes``). Every message gets the next offset, from 0, and keeps it:
consumers read from an offset they choose (``x-stream-offset``) and nothing they do removes a
message. Only retention does, and only a whole segment at a time, the oldest first, never the
segment being written:

- ``x-max-length-bytes``: when a new segment is opened, the oldest segments go while the log
  holds more bytes than that;
- ``x-max-age``: when a new segment is opened, and (embroker) when the broker's clock reaches
  the moment a closed segment's newest chunk gets older than that, the segments that old go.

Afterwards the log's first offset (what ``first`` reads from) is the first offset of its oldest
segment. A consumer whose place was removed goes on at the new first offset.

osiris also writes what it tracks (each writer's last sequence, each consumer's stored offset)
into the log: in a chunk's trailer, in a chunk of its own for a stored offset that comes with
no message, and as a snapshot at the start of each new segment. Those chunks take an offset
each and no reader is sent them (:data:`CHUNK_TRACKING_DELTA`, :data:`CHUNK_TRACKING_SNAPSHOT`).

Sizes are counted as osiris counts them for a chunk (a 48-byte header, then per message a 4-byte
size and the message), with the message counted as its body and its routing key and header
names (embroker does not encode 0-9-1 messages as AMQP 1.0 in the model): retention cuts at
segment boundaries in the same way as RabbitMQ's, not at byte-identical places. RabbitMQ applies
retention asynchronously (an ``osiris_retention`` process); embroker does it at once.

Each publish through AMQP 0-9-1 or 1.0 is one chunk; a stream-protocol ``publish`` frame's
entries are the chunks osiris' writer makes of a burst (:meth:`StreamLog.batches`).

A chunk holds *entries* and counts *records*: a simple entry is one record, a
:class:`SubBatch` (a stream-protocol client's sub-entry batching) is as many records as it says,
stored and delivered to stream-protocol readers as it came (osiris never decompresses one).
Offsets count records. An AMQP consumer is given each record of an uncompressed sub-batch as a
message of its own; a compressed one it cannot read (see :attr:`Chunk.messages`).

A :class:`ChunkReader` (a stream-protocol subscription) is sent whole chunks as its credit
allows; its owner may pause it (RabbitMQ's reader sends chunks with ``sendfile``, paced by its
socket: embroker's connection pauses its readers while too much of its output is unwritten) and
resume it, its credit and position kept. Who else must hear that a stream is gone (a connection
with publishers on it: RabbitMQ's reader monitors the stream's member) registers a callback in
:attr:`StreamLog.monitors`.
"""

from __future__ import annotations

import itertools
import re
import secrets
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, final
from weakref import WeakKeyDictionary

from ..errors import InternalError, PreconditionFailed

if TYPE_CHECKING:
    from ._clock import Clock, Timer
    from ._message import Message

__all__ = ["Chunk", "ChunkReader", "FilterSpec", "OffsetSpec", "SacMember", "StreamLog", "SubBatch",
           "chunk_matches", "consumer_filter", "create_arguments", "max_age_ms",
           "parse_offset_spec"]

#: osiris' default ``max_segment_size_bytes`` (RabbitMQ's stream default: 500 MB).
DEFAULT_SEGMENT_SIZE: Final = 500_000_000
#: osiris v1's chunk header (``?HEADER_SIZE_B``).
CHUNK_HEADER_SIZE: Final = 48
#: The size field in front of each simple entry of a chunk.
ENTRY_HEADER_SIZE: Final = 4
#: The header of a sub-batch entry: type and compression, records, uncompressed and stored size.
SUB_BATCH_HEADER_SIZE: Final = 11

#: The largest ``x-stream-max-segment-size-bytes`` a stream is declared with (RabbitMQ 3.10.8's
#: ``?MAX_STREAM_MAX_SEGMENT_SIZE``, rabbit_common/include/rabbit.hrl).
MAX_SEGMENT_SIZE: Final = 3_000_000_000

#: The stream protocol's Create arguments and the queue arguments they become, integers or
#: strings (rabbit_stream_manager:stream_queue_arguments/2, v3.10.8).
_CREATE_ARGUMENTS: Final = {
    "max-length-bytes": ("x-max-length-bytes", True),
    "max-age": ("x-max-age", False),
    "stream-max-segment-size-bytes": ("x-stream-max-segment-size-bytes", True),
    "initial-cluster-size": ("x-initial-cluster-size", True),
    "queue-leader-locator": ("x-queue-leader-locator", False),
}
#: rabbit_queue_location:queue_leader_locators/0 (v3.10.8), the deprecated ones included.
_LEADER_LOCATORS: Final = frozenset({"client-local", "balanced", "random", "least-leaders"})
#: What Erlang's ``binary_to_integer/1`` reads.
_ERLANG_INTEGER: Final = re.compile(r"[+-]?[0-9]+")

#: rabbit_amqqueue:unit_value_in_ms/1.
_UNIT_MS: Final = {"Y": 365 * 86_400_000, "M": 30 * 86_400_000, "D": 86_400_000,
                   "h": 3_600_000, "m": 60_000, "s": 1000}
_MAX_AGE: Final = re.compile(r"([0-9]*)(.*)", re.DOTALL)
#: The made-up process numbers of AMQP writers (:meth:`StreamLog.amqp_writer`).
_PIDS: Final = itertools.count()

#: What a consumer starts from: ``"first"``, ``"last"``, ``"next"``, an offset, or
#: ``("timestamp", milliseconds since the epoch)``.
OffsetSpec = str | int | tuple[str, int]


def max_age_ms(value: str) -> int | None:
    """``x-max-age`` (``"7D"``, ``"12h"``...) in milliseconds, as RabbitMQ 3.10's
    ``rabbit_amqqueue:check_max_age/1`` reads it (Y, M, D, h, m, s; a positive number);
    ``None`` when it is not one (RabbitMQ: ``invalid_max_age``).

    >>> max_age_ms("1D"), max_age_ms("90s"), max_age_ms("0D"), max_age_ms("1X")
    (86400000, 90000, None, None)
    """
    match = _MAX_AGE.fullmatch(value)
    if match is None or not match.group(1) or int(match.group(1)) <= 0:
        return None
    unit = _UNIT_MS.get(match.group(2))
    return None if unit is None else int(match.group(1)) * unit


def create_arguments(given: dict[str, str]) -> dict[str, Any]:
    """The queue arguments of a stream-protocol Create with ``given`` arguments, as RabbitMQ
    3.10.8's stream manager makes and checks them (``rabbit_stream_manager``:
    ``stream_queue_arguments/2`` then ``validate_stream_queue_arguments/1``): the arguments it
    knows, with or without their ``x-`` (``max-age``...), become ``x-`` arguments and
    ``x-queue-type: stream``; the others are ignored.

    >>> create_arguments({"max-age": "1h", "x-max-length-bytes": "100", "foo": "bar"})
    {'x-queue-type': 'stream', 'x-max-age': '1h', 'x-max-length-bytes': 100}

    Raises:
        InternalError: (541) a value that must be an integer is not one: RabbitMQ's stream
            manager crashes (``binary_to_integer``), and the client's connection with it.
        PreconditionFailed: (406) ``initial-cluster-size`` not positive, or an unknown
            ``queue-leader-locator``.
    """
    arguments: dict[str, Any] = {"x-queue-type": "stream"}
    for key, value in given.items():
        known = _CREATE_ARGUMENTS.get(key.removeprefix("x-"))
        if known is None:
            continue
        name, integer = known
        if not integer:
            arguments[name] = value
        elif _ERLANG_INTEGER.fullmatch(value):
            arguments[name] = int(value)
        else:
            raise InternalError(f"stream argument '{key}' is not an integer: {value!r}")
    size = arguments.get("x-initial-cluster-size")
    if size is not None and size <= 0:
        raise PreconditionFailed(f"invalid initial-cluster-size: {size}")
    locator = arguments.get("x-queue-leader-locator")
    if locator is not None and locator not in _LEADER_LOCATORS:
        raise PreconditionFailed(f"invalid queue-leader-locator: '{locator}'")
    return arguments


def parse_offset_spec(value: Any, now_ms: int) -> OffsetSpec:
    """The ``x-stream-offset`` consumer argument as RabbitMQ 3.10 reads it
    (``rabbit_stream_queue:parse_offset_arg/1``): none is ``next``; ``first``, ``last``,
    ``next``; a timestamp (a ``datetime``, seconds); an interval string such as ``"1D"`` (that
    long before ``now_ms``); any integer is an offset.

    Raises:
        InternalError: (541, closes the connection) anything else: RabbitMQ's channel does not
            expect the error its stream queue returns and answers ``INTERNAL_ERROR``.
    """
    import datetime

    if value is None:
        return "next"
    if isinstance(value, str | bytes):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if text in ("first", "last", "next"):
            return text
        ms = max_age_ms(text)
        if ms is None:
            raise InternalError("")
        return ("timestamp", now_ms - ms)
    if isinstance(value, datetime.datetime):
        seconds = value.replace(tzinfo=datetime.timezone.utc).timestamp() \
            if value.tzinfo is None else value.timestamp()
        return ("timestamp", int(seconds) * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise InternalError("")


#: The chunk sizes of osiris' writer (a gen_batch_server, its default batch sizes): what one
#: burst of writes becomes, measured on RabbitMQ 3.10.8 (a Publish of 4,999 messages is chunks of
#: 32, 64, 128, 256, 512, 1,024, 2,048 and 935; of 20,000, up to 8,192 then 3,648; three of 100,
#: confirmed one after the other, 32, 64, 4, then 64, 36 twice).
WRITER_BATCH_MIN: Final = 32
WRITER_BATCH_MAX: Final = 8192

#: osiris' chunk types (osiris_log.erl, v1.3.1): messages; what tracking took in with no message
#: to carry it (a stored offset); what tracking holds, at the start of a segment. Each takes an
#: offset; readers are sent user chunks only.
CHUNK_USER: Final = 0
CHUNK_TRACKING_DELTA: Final = 1
CHUNK_TRACKING_SNAPSHOT: Final = 2
#: How many writers' sequences a tracking snapshot keeps, the latest (osiris_tracking's
#: ``?MAX_SEQUENCES``).
MAX_SEQUENCES: Final = 255


def sequence_size(writer: str) -> int:
    """The bytes of a writer's sequence in a chunk's trailer (osiris_tracking:flush/1: type, id
    size, id, sequence)."""
    return 10 + len(writer.encode())


@final
class SubBatch:
    """A sub-entry of a stream-protocol Publish (osiris' SubBatchEntry): ``count`` records a
    client batched into one entry, compressed as its 3-bit ``compression`` says (0 none, 1
    gzip, 2 snappy, 3 lz4, 4 zstd, 7 the client's own: the broker takes any, as osiris does)
    into ``data``; ``uncompressed_size`` is what the client says they take uncompressed.

    >>> SubBatch(0, 2, 10, bytes.fromhex("00000001" "61" "00000001" "62")).records()
    [b'a', b'b']
    >>> SubBatch(1, 2, 10, b"gzip").records() is None  # compressed: only clients read it
    True
    """

    __slots__ = ("compression", "count", "data", "uncompressed_size")

    def __init__(self, compression: int, count: int, uncompressed_size: int, data: bytes) -> None:
        self.compression = compression
        self.count = count
        self.uncompressed_size = uncompressed_size
        self.data = data

    @property
    def size(self) -> int:
        """Its bytes in a chunk, header included."""
        return SUB_BATCH_HEADER_SIZE + len(self.data)

    def records(self) -> list[bytes] | None:
        """Its records, when the broker can read them: uncompressed, and ``data`` simple
        entries (a size whose top bit is 0, then the bytes), however many ``count`` says;
        else ``None``. (RabbitMQ 3.10's osiris would also read a nested uncompressed sub-batch;
        embroker, as 4.x, does not.)"""
        if self.compression:
            return None
        data, records, pos = self.data, [], 0
        while pos < len(data):
            if pos + 4 > len(data) or data[pos] & 0x80:
                return None
            end = pos + 4 + int.from_bytes(data[pos:pos + 4], "big")
            if end > len(data):
                return None
            records.append(data[pos + 4:end])
            pos = end
        return records

    def __repr__(self) -> str:
        return f"<SubBatch of {self.count} records, compression {self.compression}>"


#: What a chunk keeps of each entry for stream-protocol readers: a simple entry's bytes, or a
#: sub-batch.
Entry = bytes | SubBatch


@final
class Chunk:
    """Entries written to a stream together: the offset of the first record, when
    (milliseconds since the epoch), and their size as osiris counts it."""

    __slots__ = ("filter_values", "first_offset", "kind", "malformed", "messages", "raw", "size",
                 "timestamp", "trailer", "unfiltered", "unparsed")

    def __init__(self, first_offset: int, timestamp: int, messages: Sequence[Message | None],
                 raw: Sequence[Entry] | None = None,
                 filter_values: Sequence[str | None] | None = None, *,
                 trailer: int = 0) -> None:
        self.first_offset = first_offset
        self.timestamp = timestamp
        #: Its osiris chunk type (:data:`CHUNK_USER`, or a tracking chunk's: :meth:`tracking`).
        self.kind = CHUNK_USER
        #: The bytes of its trailer: the sequences of the writers whose messages it holds
        #: (osiris writes them; RabbitMQ's readers send the trailer's size, not its bytes).
        self.trailer = trailer
        #: One per offset, as AMQP consumers get it, ``None`` where they get nothing: the
        #: records of a sub-batch the broker cannot read, and the offsets a sub-batch counts
        #: past the records it holds (a record past its count is not kept).
        self.messages: tuple[Message | None, ...] = tuple(messages)
        #: Whether it holds a sub-batch osiris hands its readers unparsed (compressed, or not
        #: simple entries): RabbitMQ 3.10's AMQP readers crash on the chunk.
        self.unparsed = False
        #: Whether one of those is uncompressed (not simple entries): RabbitMQ 4.x's AMQP
        #: readers crash on the chunk too (they skip a compressed one).
        self.malformed = False
        values = list(filter_values) if filter_values is not None else [None] * len(messages)
        #: The filter values of its messages (RabbitMQ 3.13+: osiris keeps them in the chunk's
        #: Bloom filter), and whether some message has none.
        self.filter_values: frozenset[str] = frozenset(v for v in values if v is not None)
        self.unfiltered = any(v is None for v in values)
        #: Each entry as a stream-protocol publisher sent it (osiris keeps them as they came),
        #: or ``None`` for messages published over AMQP (one entry each).
        self.raw: tuple[Entry, ...] | None = tuple(raw) if raw is not None else None
        if self.raw is None:
            self.size = CHUNK_HEADER_SIZE + trailer + sum(
                ENTRY_HEADER_SIZE + message_size(m) for m in self.messages if m is not None)
        else:
            self.size = CHUNK_HEADER_SIZE + trailer + sum(
                ENTRY_HEADER_SIZE + len(e) if isinstance(e, bytes) else e.size for e in self.raw)
            for e in self.raw:
                if isinstance(e, SubBatch) and e.records() is None:
                    self.unparsed = True
                    self.malformed = self.malformed or not e.compression

    @classmethod
    def tracking(cls, first_offset: int, timestamp: int, kind: int, size: int) -> Chunk:
        """A tracking chunk (:data:`CHUNK_TRACKING_DELTA` or :data:`CHUNK_TRACKING_SNAPSHOT`)
        of ``size`` bytes of tracking data, in one entry: one offset, nothing to read."""
        chunk = cls(first_offset, timestamp, (None,))
        chunk.kind = kind
        chunk.size = CHUNK_HEADER_SIZE + ENTRY_HEADER_SIZE + size
        return chunk

    @property
    def next_offset(self) -> int:
        return self.first_offset + len(self.messages)

    @property
    def entries(self) -> int:
        """How many entries it holds (a sub-batch is one)."""
        return len(self.raw) if self.raw is not None else len(self.messages)

    def __repr__(self) -> str:
        return f"<Chunk {self.first_offset}..{self.next_offset - 1} at {self.timestamp}>"


#: A reader's filter (RabbitMQ 3.13+): the filter values it wants, and whether it also wants
#: the chunks with messages that have none (``match-unfiltered``).
FilterSpec = tuple[frozenset[str], bool]


def chunk_matches(chunk: Chunk, spec: FilterSpec | None) -> bool:
    """Whether a reader with ``spec`` is sent ``chunk`` (all of it: the client filters its
    messages). As osiris' Bloom filters decide, without their false positives: a chunk with
    one of the values, or (match-unfiltered) with a message that has none.

    >>> c = Chunk(0, 0, [], filter_values=["eu", None])
    >>> chunk_matches(c, (frozenset({"eu"}), False)), chunk_matches(c, (frozenset({"us"}), False))
    (True, False)
    >>> chunk_matches(c, (frozenset({"us"}), True)), chunk_matches(c, None)
    (True, True)
    """
    if spec is None:
        return True
    values, match_unfiltered = spec
    return bool(chunk.filter_values & values) or (match_unfiltered and chunk.unfiltered)


def consumer_filter(arguments: dict[str, Any]) -> FilterSpec | None:
    """An AMQP consumer's filter from its arguments, as RabbitMQ 4.1.4 reads them
    (``rabbit_stream_queue:filter_spec/1``): ``x-stream-filter`` a string or an array of
    strings (others in it ignored), ``x-stream-match-unfiltered`` a boolean (else false);
    no ``x-stream-filter``, no filter."""
    given = arguments.get("x-stream-filter")
    if isinstance(given, str):
        values = frozenset({given})
    elif isinstance(given, list | tuple):
        values = frozenset(v for v in given if isinstance(v, str))
    else:
        return None
    match = arguments.get("x-stream-match-unfiltered")
    return values, match if isinstance(match, bool) else False


def message_size(message: Message) -> int:
    """How many bytes embroker counts for a message in a stream (see the module's notes)."""
    headers = message.properties.get("headers") or {}
    return len(message.body) + len(message.routing_key) + sum(len(k) for k in headers)


@final
class ChunkReader:
    """A reader of whole chunks (a stream-protocol subscription): from its offset, one chunk per
    unit of credit, handed to ``on_chunk`` (who holds it hears of a deletion through the
    stream's :attr:`StreamLog.monitors`).

    Attributes:
        position: the offset of the next message it has not been sent.
        credit: how many more chunks it may be sent.
        paused: whether it is sent nothing for now, whatever its credit (:meth:`pause`).
    """

    __slots__ = ("credit", "filter", "log", "on_chunk", "paused", "position")

    def __init__(self, log: StreamLog, position: int, credit: int,
                 on_chunk: Callable[[Chunk], None],
                 filter_spec: FilterSpec | None = None) -> None:
        self.log = log
        self.position = position
        self.credit = credit
        self.on_chunk = on_chunk
        #: Its filter (RabbitMQ 3.13+), or ``None``: the chunks that do not match are skipped
        #: and take no credit.
        self.filter = filter_spec
        self.paused = False

    def pause(self) -> None:
        """Send nothing more until :meth:`resume` (its owner's output waits to be written);
        ``on_chunk`` may call it, and is then not called again."""
        self.paused = True

    def resume(self) -> None:
        """Send again: the chunks its credit allows go out at once."""
        self.paused = False
        self.pump()

    def add_credit(self, credit: int) -> None:
        """More credit: the chunks it allows go out at once."""
        self.credit += credit
        self.pump()

    def pump(self) -> None:
        """Send the chunks its credit allows (the whole chunk that holds its position first,
        as osiris sends a chunk whole: the client skips what is before its offset)."""
        log = self.log
        while self.credit > 0 and not self.paused and self in log.readers:
            position = max(self.position, log.first_offset)
            chunk = log.chunk_at(position)
            if chunk is None:
                return
            self.position = chunk.next_offset
            if chunk.kind != CHUNK_USER or not chunk_matches(chunk, self.filter):
                continue
            self.credit -= 1
            self.on_chunk(chunk)

    def close(self) -> None:
        """Stop reading (unsubscribe)."""
        if self in self.log.readers:
            self.log.readers.remove(self)


@final
class SacMember:
    """A member of a single-active-consumer group: ``activate`` is called when it becomes the
    active one after another left."""

    __slots__ = ("activate",)

    def __init__(self, activate: Callable[[], None]) -> None:
        self.activate = activate


@final
class StreamLog:
    """The log of one stream: segments of chunks, the first and next offsets, retention.

    Args:
        clock: the broker's clock (chunk timestamps, ``x-max-age``).
        max_bytes: ``x-max-length-bytes``, or ``None``.
        max_age: ``x-max-age`` in milliseconds, or ``None``.
        segment_size: ``x-stream-max-segment-size-bytes``.
    """

    __slots__ = ("__weakref__", "_age_timer", "_amqp_writers", "_clock", "_segment_bytes",
                 "batch_size", "first_offset", "groups",
                 "max_age", "max_bytes", "monitors",
                 "next_offset", "offsets", "on_truncate", "readers", "segment_size", "segments",
                 "writers")

    def __init__(self, clock: Clock, *, max_bytes: int | None = None, max_age: int | None = None,
                 segment_size: int = DEFAULT_SEGMENT_SIZE) -> None:
        self._clock = clock
        self.max_bytes = max_bytes
        self.max_age = max_age
        self.segment_size = segment_size
        #: The segments, oldest first; the last one is written to. Never empty.
        self.segments: list[list[Chunk]] = [[]]
        self._segment_bytes = 0  # of the segment being written
        #: The offset of the oldest message kept (what ``first`` reads from).
        self.first_offset = 0
        #: The offset the next message will get.
        self.next_offset = 0
        self._age_timer: Timer | None = None
        #: Called after retention removed segments (the queue moves its readers on).
        self.on_truncate: Any = None
        #: Its chunk readers (stream-protocol subscriptions), in the order they came.
        self.readers: list[ChunkReader] = []
        #: Who is told when the stream is deleted (after its readers), by owner: a
        #: stream-protocol connection with publishers or subscriptions on it (RabbitMQ's
        #: reader monitors the stream's member while it has either).
        self.monitors: dict[object, Callable[[], None]] = {}
        #: Writer -> its last sequence written, the latest last (osiris' writer tracking): a
        #: stream-protocol publisher's reference and its last publishing id (deduplication),
        #: or an AMQP writer's id (:meth:`amqp_writer`) and how many it wrote.
        self.writers: dict[str, int] = {}
        self._amqp_writers: WeakKeyDictionary[object, str] = WeakKeyDictionary()
        #: How many entries osiris' writer takes into its next chunk (:meth:`batches`).
        self.batch_size = WRITER_BATCH_MIN
        #: Consumer reference -> the offset it stored (StoreOffset: osiris' offset tracking).
        self.offsets: dict[str, int] = {}
        #: Single active consumer groups (RabbitMQ 3.11+): name -> members in the order they
        #: came, the first one active (rabbit_stream_sac_coordinator, for one stream).
        self.groups: dict[str, list[SacMember]] = {}

    def __len__(self) -> int:
        """How many messages it holds."""
        return self.next_offset - self.first_offset

    @property
    def chunks(self) -> Iterator[Chunk]:
        for segment in self.segments:
            yield from segment

    @property
    def size(self) -> int:
        """Its bytes, as osiris counts its chunks."""
        return sum(chunk.size for chunk in self.chunks)

    def now_ms(self) -> int:
        return int(self._clock.time() * 1000)

    # -- writing -------------------------------------------------------------------------------

    def batches(self, count: int) -> list[int]:
        """The chunk sizes osiris' writer makes of ``count`` entries written in one burst (a
        stream-protocol Publish): each chunk takes up to :attr:`batch_size` entries; a full one
        doubles it (up to :data:`WRITER_BATCH_MAX`), another halves it (down to
        :data:`WRITER_BATCH_MIN`), as gen_batch_server's batch size adapts.

        >>> from embroker import SystemClock
        >>> StreamLog(SystemClock()).batches(4999)
        [32, 64, 128, 256, 512, 1024, 2048, 935]
        >>> log = StreamLog(SystemClock())
        >>> log.batches(100), log.batches(100), log.batches(100)
        ([32, 64, 4], [64, 36], [64, 36])
        """
        sizes: list[int] = []
        while count:
            size = min(count, self.batch_size)
            sizes.append(size)
            count -= size
            self.batch_size = min(2 * self.batch_size, WRITER_BATCH_MAX) \
                if size == self.batch_size else max(self.batch_size // 2, WRITER_BATCH_MIN)
        return sizes

    def append(self, messages: Sequence[Message | None], raw: Sequence[Entry] | None = None,
               filter_values: Sequence[str | None] | None = None, *,
               writer: tuple[str, int] | None = None) -> Chunk:
        """Write ``messages`` (one per record; see :class:`Chunk` for ``raw``) as one chunk;
        returns it. ``writer``: who wrote them and the sequence of the last (osiris tracks it,
        in the chunk's trailer). Opens a new segment first when the one being written is full.

        Runtime complexity: ``O(m)`` for ``m`` messages, plus ``O(s + w)`` for ``s`` segments
        and ``w`` writers at a roll-over.
        """
        self._roll()
        trailer = 0
        if writer is not None:
            self.writers.pop(writer[0], None)  # (the latest last)
            self.writers[writer[0]] = writer[1]
            trailer = sequence_size(writer[0])
        chunk = Chunk(self.next_offset, self.now_ms(), messages, raw, filter_values,
                      trailer=trailer)
        self._add(chunk)
        for reader in list(self.readers):
            reader.pump()
        return chunk

    def store_offset(self, reference: str, offset: int) -> None:
        """Consumer ``reference`` stores ``offset`` (StoreOffset): osiris tracks it and, having
        no message to carry it, writes a tracking chunk, which takes an offset."""
        self.offsets[reference] = offset
        self._roll()
        self._add(Chunk.tracking(self.next_offset, self.now_ms(), CHUNK_TRACKING_DELTA,
                                 2 + len(reference.encode()) + 8))

    def amqp_writer(self, publisher: object | None) -> tuple[str, int]:
        """The writer an AMQP publisher (a channel, a dead-lettering queue, ``None`` for the
        broker) is to this stream, and its next sequence: RabbitMQ's stream client names
        itself after its process and a GUID (``<0.12345.0>_`` and 22 characters:
        rabbit_stream_queue:init/1, v3.10.8), and counts its writes."""
        key = self if publisher is None else publisher
        name = self._amqp_writers.get(key)
        if name is None:
            pid = 10_000 + next(_PIDS) % 90_000  # (a node that has run a while: 5 digits)
            name = self._amqp_writers[key] = f"<0.{pid}.0>_{secrets.token_urlsafe(16)}"
        return name, self.writers.get(name, 0) + 1

    def _roll(self) -> None:
        # A new segment when the one being written is full. osiris first writes what its
        # tracking holds, if anything, as the new segment's first chunk (a snapshot: offsets
        # below the first are dropped, the latest MAX_SEQUENCES writers kept:
        # osiris_log:evaluate_tracking_snapshot/2 and osiris_tracking:snapshot/3, v1.3.1);
        # then retention runs.
        if not self.segments[-1] or self._segment_bytes < self.segment_size:
            return
        self.segments.append([])
        self._segment_bytes = 0
        if self.writers or self.offsets:
            first = self.first_offset
            self.offsets = {r: o for r, o in self.offsets.items() if o >= first}
            for writer in list(self.writers)[:-MAX_SEQUENCES]:
                del self.writers[writer]
            size = (sum(sequence_size(w) + 8 for w in self.writers)
                    + sum(2 + len(r.encode()) + 8 for r in self.offsets))
            self._add(Chunk.tracking(self.next_offset, self.now_ms(), CHUNK_TRACKING_SNAPSHOT,
                                     size))
        self.apply_retention()

    def _add(self, chunk: Chunk) -> None:
        self.segments[-1].append(chunk)
        self._segment_bytes += chunk.size
        self.next_offset = chunk.next_offset

    def reader(self, spec: OffsetSpec, credit: int, on_chunk: Callable[[Chunk], None],
               filter_spec: FilterSpec | None = None) -> ChunkReader:
        """A new chunk reader from where ``spec`` says (see :meth:`start_offset`); the chunks
        its credit allows go out at once."""
        reader = ChunkReader(self, self.start_offset(spec), credit, on_chunk, filter_spec)
        self.readers.append(reader)
        reader.pump()
        return reader

    def apply_retention(self) -> None:
        """Remove the oldest closed segments that ``x-max-length-bytes`` or ``x-max-age`` no
        longer keep (never the segment being written)."""
        segments = self.segments
        removed = 0
        if self.max_bytes is not None:
            total = sum(c.size for seg in segments for c in seg)
            while len(segments) - removed > 1 and total > self.max_bytes:
                total -= sum(c.size for c in segments[removed])
                removed += 1
        if self.max_age is not None:
            oldest_kept = self.now_ms() - self.max_age
            while (len(segments) - removed > 1 and segments[removed]
                   and segments[removed][-1].timestamp < oldest_kept):
                removed += 1
        if removed:
            del segments[:removed]
            first = segments[0][0].first_offset if segments[0] else self.next_offset
            self.first_offset = first
            if self.on_truncate is not None:
                self.on_truncate()
        self._arm_age_timer()

    def _arm_age_timer(self) -> None:
        # x-max-age on the broker's clock: when the oldest closed segment gets too old.
        if self._age_timer is not None:
            self._age_timer.cancel()
            self._age_timer = None
        if self.max_age is None or len(self.segments) < 2 or not self.segments[0]:
            return
        due_ms = self.segments[0][-1].timestamp + self.max_age
        delay = max(0.0, due_ms / 1000 - self._clock.time()) + 0.001
        self._age_timer = self._clock.call_at(self._clock.monotonic() + delay,
                                              self._age_expired)

    def _age_expired(self) -> None:
        self._age_timer = None
        self.apply_retention()

    def join_group(self, name: str, member: SacMember) -> bool:
        """Register a single-active-consumer member; returns whether it is the active one
        (the first of its group)."""
        group = self.groups.setdefault(name, [])
        group.append(member)
        return len(group) == 1

    def leave_group(self, name: str, member: SacMember) -> None:
        """A member goes; if it was active, the next one (the earliest to come) is activated."""
        group = self.groups.get(name)
        if group is None or member not in group:
            return
        was_active = group[0] is member
        group.remove(member)
        if not group:
            del self.groups[name]
        elif was_active:
            group[0].activate()

    def stop(self) -> None:
        """The stream is deleted: its timer must not fire, its readers read no more, its
        monitors are told."""
        if self._age_timer is not None:
            self._age_timer.cancel()
            self._age_timer = None
        self.readers = []
        monitors, self.monitors = self.monitors, {}
        for monitor in monitors.values():
            monitor()

    # -- reading -------------------------------------------------------------------------------

    def start_offset(self, spec: OffsetSpec) -> int:
        """Where a reader asking for ``spec`` starts, as osiris places it: ``first`` the first
        offset kept, ``last`` the first offset of the last chunk, ``next`` the next offset; an
        offset within the log, else the nearest end of it; a timestamp the first chunk written
        at or after it (else ``next``)."""
        if spec == "first":
            return self.first_offset
        if spec == "next":
            return self.next_offset
        if spec == "last":  # (the last user chunk: osiris' last_user_chunk_location)
            for segment in reversed(self.segments):
                for chunk in reversed(segment):
                    if chunk.kind == CHUNK_USER:
                        return chunk.first_offset
            return self.next_offset
        if isinstance(spec, tuple):
            for chunk in self.chunks:
                if chunk.timestamp >= spec[1]:
                    return chunk.first_offset
            return self.next_offset
        if isinstance(spec, int):
            return min(max(spec, self.first_offset), self.next_offset)
        raise ValueError(f"not an offset spec: {spec!r}")

    def chunk_at(self, offset: int) -> Chunk | None:
        """The chunk holding ``offset``, or ``None``.

        Runtime complexity: ``O(log c)`` for ``c`` chunks in its segment.
        """
        for segment in self.segments:
            if segment and segment[0].first_offset <= offset < segment[-1].next_offset:
                lo, hi = 0, len(segment) - 1
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    if segment[mid].first_offset <= offset:
                        lo = mid
                    else:
                        hi = mid - 1
                return segment[lo]
        return None

    def read(self, offset: int) -> Message | None:
        """The message at ``offset``, or ``None`` when it is not (or no longer) in the log, or
        is a record of a sub-batch the broker cannot read."""
        chunk = self.chunk_at(offset)
        return None if chunk is None else chunk.messages[offset - chunk.first_offset]

    def messages(self) -> list[Message]:
        """Every message kept, oldest first (not the records of sub-batches the broker cannot
        read)."""
        return [m for chunk in self.chunks for m in chunk.messages if m is not None]

    def _check(self) -> None:
        chunks = list(self.chunks)
        assert self.segments, "no segment"
        assert all(self.segments[:-1]), "only the last segment may be empty"
        expected = self.first_offset
        for chunk in chunks:
            assert chunk.first_offset == expected, f"{chunk!r}: offsets not contiguous"
            expected = chunk.next_offset
        assert expected == self.next_offset
        assert self._segment_bytes == sum(c.size for c in self.segments[-1])
