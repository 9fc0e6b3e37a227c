"""A stream's own rules: what RabbitMQ 3.10's ``rabbit_stream_queue`` over ``osiris`` does
where a classic queue keeps ready messages (see :mod:`._queue` for what they share).

Theory of operation
-------------------
A stream keeps its messages in a log (:class:`~._stream.StreamLog`): a publish appends to it,
and each consumer reads on from its own offset (its ``x-stream-offset`` argument says where it
starts) while it has room; every delivery carries its ``x-stream-offset``. Nothing goes back to
a stream: a requeue returns only the consumer's credit. A stream takes none of the classic and
quorum keys of its policies (``unsupported_policies``), and its retention from its arguments and
policies, the lowest of each (``update_stream_conf/2``). Its listing shows the messages its log
keeps, none of them "taken".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, final

from ..errors import InternalError
from ..fieldtypes import Long
from ._message import Message, QueuedMessage
from ._queue import Queue
from ._stream import (
    DEFAULT_SEGMENT_SIZE,
    Entry,
    StreamLog,
    chunk_matches,
    consumer_filter,
    max_age_ms,
    parse_offset_spec,
)

if TYPE_CHECKING:
    from ._consumer import Consumer

__all__ = ["StreamQueue"]


@final
class StreamQueue(Queue):
    """A stream (``x-queue-type`` stream): see the module's notes."""

    __slots__ = ()

    def _open_log(self) -> StreamLog:
        """A new stream's log, from its arguments (validated when it was declared)."""
        args = self.arguments
        max_bytes = args.get("x-max-length-bytes")
        max_age = args.get("x-max-age")
        segment = args.get("x-stream-max-segment-size-bytes")
        return StreamLog(self.vhost.broker.clock,
                         max_bytes=max_bytes if isinstance(max_bytes, int) else None,
                         max_age=max_age_ms(max_age) if isinstance(max_age, str) else None,
                         segment_size=segment if isinstance(segment, int)
                         else DEFAULT_SEGMENT_SIZE)

    @property
    def log(self) -> StreamLog:
        """Its log (:attr:`stream`, never ``None`` here)."""
        log = self.stream
        assert log is not None
        return log

    def _use_settings(self) -> None:
        super()._use_settings()
        # A stream takes none of the classic and quorum keys of its policies (its type's
        # unsupported_policies), and the retention keys from its arguments and policies, the
        # lowest of each as RabbitMQ 3.10's rabbit_stream_queue:update_stream_conf/2 does.
        self._max_length = self._max_bytes = self._ttl = self._expires = None
        self._delivery_limit = None
        self.dead_letter_exchange = self.dead_letter_routing_key = None
        definitions = [p.definition for p in (self.policy, self.operator_policy)
                       if p is not None]

        def lowest(key: str, convert: Any) -> int | None:
            values = [convert(d[key]) for d in definitions if key in d]
            values.append(convert(self.arguments.get("x-" + key)))
            found = [v for v in values if v is not None]
            return min(found) if found else None

        def as_int(value: Any) -> int | None:
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        def as_age(value: Any) -> int | None:
            return max_age_ms(value) if isinstance(value, str) else None

        log = self.log
        log.max_bytes = lowest("max-length-bytes", as_int)
        log.max_age = lowest("max-age", as_age)
        log.segment_size = lowest("stream-max-segment-size-bytes", as_int) or DEFAULT_SEGMENT_SIZE


    def _policies_changed(self, overflow: str) -> None:
        self.log.apply_retention()  # (osiris re-evaluates when its retention changes)

    @property
    def messages(self) -> list[Message]:
        """Every message its log keeps (a snapshot taken under the broker's lock)."""
        with self.vhost.broker._lock:
            return self.log.messages()

    def add_consumer(self, consumer: Consumer) -> None:
        """Add a consumer; it reads from where its ``x-stream-offset`` argument says.

        Raises:
            InternalError: (541) its ``x-stream-offset`` is not one (as RabbitMQ 3.10 answers).
        """
        log = self.log
        position = log.start_offset(parse_offset_spec(consumer.arguments.get("x-stream-offset"),
                                                      log.now_ms()))
        super().add_consumer(consumer)
        self.stream_positions[consumer] = position

    def publish(self, message: Message, expiration: float | None = None,
                publisher: object | None = None) -> bool:
        """Append a routed message to the log (see :meth:`append_chunk`); always taken."""
        self.append_chunk((message,), writer=self.log.amqp_writer(publisher))
        return True

    def requeue(self, entries: Iterable[QueuedMessage], *, closed: bool = False) -> None:
        """Nothing goes back to a stream: only the credit."""
        self.unacked -= sum(1 for _entry in entries)

    def stop_timers(self) -> None:
        super().stop_timers()
        self.log.stop()

    def append_chunk(self, messages: tuple[Message | None, ...],
                     raw: tuple[Entry, ...] | None = None,
                     filter_values: tuple[str | None, ...] | None = None, *,
                     writer: tuple[str, int] | None = None) -> int:
        """Write messages to a stream as one chunk (one per record, see
        :class:`~._stream.Chunk`; ``writer`` as :meth:`~._stream.StreamLog.append` takes it)
        and deliver them to the consumers that have room; returns the offset of the first.

        Runtime complexity: ``O(m + c)`` for ``m`` messages and ``c`` consumers.
        """
        if filter_values is None and self.vhost.broker.profile.rabbitmq4:
            # RabbitMQ 3.13+: an AMQP message's x-stream-filter-value header is its filter value
            # (v4.1.4 rabbit_stream_queue:stream_message/1)
            filter_values = tuple(_filter_value(m) for m in messages if m is not None)
        chunk = self.log.append(messages, raw, filter_values, writer=writer)
        if self._consumer_count:
            self.dispatch()
        return chunk.first_offset

    def dispatch(self) -> None:
        """Each consumer reads on from its own offset while it has room."""
        stream = self.log
        positions = self.stream_positions
        rabbitmq4 = self.vhost.broker.profile.rabbitmq4
        for consumer in list(positions):
            # RabbitMQ 3.13+: a consumer's x-stream-filter skips the chunks that do not match
            spec = consumer_filter(consumer.arguments) if rabbitmq4 else None
            while consumer in positions and consumer.has_capacity():
                offset = max(positions[consumer], stream.first_offset)
                chunk = stream.chunk_at(offset)
                if chunk is None:
                    break
                if not chunk_matches(chunk, spec):
                    positions[consumer] = chunk.next_offset
                    continue
                message = chunk.messages[offset - chunk.first_offset]
                if chunk.unparsed and (not rabbitmq4 or chunk.malformed):
                    # a sub-batch it cannot read: RabbitMQ 3.10's reader crashes on the chunk
                    # (osiris hands it the sub-batch unparsed), 4.x's on a malformed one (v4.1.0
                    # rabbit_stream_queue:stream_entries/5 parses every sub-batch of a chunk it
                    # reads), before any of its records goes: the consumer's connection, 541
                    consumer.channel.connection.close_by_broker(InternalError(""))
                    break
                positions[consumer] = offset + 1
                if message is None:
                    continue  # nothing there for AMQP readers (a compressed sub-batch...)
                keep = consumer.message_filter
                if keep is not None and not keep(message):
                    continue  # RabbitMQ 4.1+: filtered out per message, no credit taken
                headers = {**(message.properties.get("headers") or {}),
                           "x-stream-offset": Long(offset)}
                copy = message.with_headers(headers)
                # the message as its protocol wrote it goes with it: a stream keeps an AMQP 1.0
                # message whole (its subject, to...), the offset added as an annotation
                copy.native = message.native
                entry = QueuedMessage(copy, offset)
                self.unacked += 1
                consumer.deliver(self, entry)


    def _check(self) -> None:
        super()._check()
        self.log._check()
        assert not self._ready
        assert set(self.stream_positions) == set(self.consumers)


def _filter_value(message: Message) -> str | None:
    value = (message.properties.get("headers") or {}).get("x-stream-filter-value")
    return value if isinstance(value, str) else None
