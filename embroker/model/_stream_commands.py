"""The stream protocol's commands on a channel: RabbitMQ 3.10.8's ``rabbit_stream_manager``
(create, delete, lookup, route, partitions) and the checks its ``rabbit_stream_reader`` makes
before each command, over the model's streams (:mod:`._queue_stream`).

Theory of operation
-------------------
Each command as RabbitMQ 3.10.8's rabbit_stream_reader and rabbit_stream_manager check it: the
permission it needs on the stream's queue resource first, then that the stream exists, then the
rest; so a user without the permission learns nothing of which streams exist. Metadata, Route
and Partitions check no permission (RabbitMQ's neither: checked live). A name that is not a
stream's (no queue, or a queue of another type) is no stream: 404.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ChannelException, InternalError, NotFound, PreconditionFailed
from ..fieldtypes import Long
from ._arguments import check_equivalent_field, check_equivalent_queue_arguments
from ._message import Message
from ._names import reserved, without_cr_lf
from ._queue_stream import StreamQueue
from ._stream import MAX_SEGMENT_SIZE, Entry, StreamLog, create_arguments

if TYPE_CHECKING:
    from ._connection import Connection
    from ._exchange import Binding
    from ._node import Node
    from ._vhost import VirtualHost

__all__ = ["StreamCommands"]


class StreamCommands:
    """The stream protocol's commands, which :class:`~._channel.Channel` takes on."""

    connection: Connection
    vhost: VirtualHost

    def _stream_log(self, name: str) -> StreamLog:
        return self._stream_queue(name).log

    def _stream_queue(self, name: str) -> StreamQueue:
        q = self.vhost.queues.get(name)
        if not isinstance(q, StreamQueue):
            raise NotFound(f"no {self.vhost.resource('queue', name)} (stream)")
        return q

    def stream_create(self, name: str, arguments: dict[str, str]) -> bool:
        """Create the stream ``name`` (the stream protocol's Create, its arguments as given:
        :func:`~._stream.create_arguments`); returns whether it was created, ``False`` when
        an equivalent stream exists (STREAM_ALREADY_EXISTS). RabbitMQ 3.10.8's order
        (rabbit_stream_reader, rabbit_stream_manager:create_stream/4): the name (``\r`` and
        ``\n`` taken out of it), configure permission, the arguments, then an existing queue
        of that name, then the declaration's own checks.

        Raises:
            PreconditionFailed: (406) an empty or ``amq.`` name; bad arguments; a queue of
                that name that is not the stream these arguments declare (another type, other
                arguments, exclusive...).
            AccessRefused: (403) no configure permission on the name.
            InternalError: (541) an argument that crashes RabbitMQ's stream manager (an
                integer that is not one, an ``x-max-age`` that does not start with digits): it
                takes the client's connection down, nothing is created.
        """
        name = without_cr_lf(name)
        if not name or reserved(name):
            raise PreconditionFailed(f"'{name}' is not a correct name for a stream")
        self.connection.access.queue_declare(self.vhost, name, {})
        declared = create_arguments(arguments)
        found = self.vhost.queues.get(name)
        if found is not None:
            # rabbit_amqqueue:assert_equivalence/5 with a durable, non auto-delete queue of no
            # owner: any difference is the manager's validation_failed.
            where = self.vhost.resource("queue", name)
            if found.exclusive_owner is not None:
                raise PreconditionFailed(f"{where} is exclusive to another connection")
            try:
                check_equivalent_field(where, "durable", found.durable, True)
                check_equivalent_field(where, "auto_delete", found.auto_delete, False)
                check_equivalent_queue_arguments(
                    where, found.arguments, declared,
                    found.type.equivalence_keys(rabbitmq4=self.vhost.broker.profile.rabbitmq4))
            except ChannelException as exc:
                raise PreconditionFailed(exc.reply_text) from None
            return False
        size = declared.get("x-stream-max-segment-size-bytes")
        if size is not None and size > MAX_SEGMENT_SIZE:  # (rabbit_stream_queue:declare/2)
            raise PreconditionFailed("Exceeded max value for x-stream-max-segment-size-bytes")
        max_age = declared.get("x-max-age")
        if max_age is not None and not "0" <= max_age[:1] <= "9":
            # (rabbit_amqqueue:check_max_age/1: list_to_integer("") in the stream manager)
            raise InternalError(f"stream argument 'max-age' has no number: {max_age!r}")
        self.vhost.declare_queue(name, self.connection, durable=True, arguments=declared)
        return True

    def stream_delete(self, name: str) -> None:
        """Delete the stream ``name`` (the stream protocol's Delete): configure permission,
        then that it is a stream (rabbit_stream_manager:delete_stream/3).

        Raises:
            AccessRefused: (403) no configure permission on the name.
            NotFound: (404) no such queue, or a queue that is not a stream.
        """
        self.connection.access.queue_delete(name)
        self._stream_log(name)
        self.vhost.delete_queue(name, self.connection)

    def stream_topology(self, name: str) -> tuple[Node | None, tuple[Node, ...]]:
        """Where stream ``name`` runs, for Metadata (``rabbit_stream_manager:topology/2``, no
        permission checked: RabbitMQ 3.10.8 answers a user with none): its leader (``None``
        while the leader's node is down) and its replicas, the other members whose node runs,
        by name (the coordinator's map of members, folded in order).

        Raises:
            NotFound: (404) no such stream.
        """
        self._stream_log(name)
        placement = self.vhost.queues[name].placement
        leader = placement.leader
        replicas = sorted((m for m in placement.members if m is not leader and m.running),
                          key=lambda m: m.name)
        return (leader if leader.running else None), tuple(replicas)

    def stream_reader(self, name: str) -> StreamLog:
        """The log of stream ``name``, to subscribe to it: read permission, then that it
        exists (rabbit_stream_reader's subscribe; the subscription id is checked after).

        Raises:
            AccessRefused: (403) no read permission on it.
            NotFound: (404) no such stream.
        """
        self.connection.access.read_queue(name)
        return self._stream_log(name)

    def stream_writer(self, name: str, *, taken: bool = False) -> StreamLog:
        """The log of stream ``name``, to declare a publisher on it: write permission, then
        ``taken`` (the publisher id, or the reference on this stream, is already in use on the
        connection), then that the stream exists (rabbit_stream_reader's declare_publisher).

        Before all of it, the disk alarm: while it lasts no publisher is declared
        (rabbit_stream_reader v3.10.8: its declare_publisher clause for a connection under a
        resource alarm, which only the disk alarm raises for streams, comes first).

        Raises:
            AccessRefused: (403) no write permission on it.
            PreconditionFailed: (406) ``taken``, or the disk alarm.
            NotFound: (404) no such stream.
        """
        if "disk" in self.vhost.broker.alarms:
            raise PreconditionFailed(f"cannot create publisher on stream '{name}', connection "
                                     "is blocked because of resource alarm")
        self.connection.access.write_queue(name)
        if taken:
            raise PreconditionFailed(f"publisher already declared on stream '{name}'")
        return self._stream_log(name)

    def stream_publish(self, name: str, messages: tuple[Message, ...],
                       raw: tuple[bytes, ...] | None = None,
                       filter_values: tuple[str | None, ...] | None = None) -> int:
        """Write messages to stream ``name`` as one chunk (with their filter values, RabbitMQ
        3.13+); returns the offset of the first. Write permission, then that the stream
        exists. (A stream-protocol publisher publishes with :meth:`stream_publish_batch`.)

        Raises:
            AccessRefused: (403) no write permission on it.
            NotFound: (404) no such stream.
        """
        self.connection.access.write_queue(name)
        return self._stream_queue(name).append_chunk(messages, raw, filter_values)

    def stream_publish_batch(self, name: str, entries: Sequence[tuple[int, str | None, Entry]],
                             decode: Callable[[bytes], tuple[dict[str, Any], bytes]], *,
                             reference: str = "", filtered: bool = False) -> list[int]:
        """A stream-protocol Publish of one publisher: its ``(publishing id, filter value,
        entry)`` entries, the new ones written to stream ``name`` in the chunks osiris' writer
        makes of them (:meth:`StreamLog.batches <._stream.StreamLog.batches>`). An entry is a
        message's bytes or a :class:`~._stream.SubBatch` of records; each record is kept as
        ``decode`` reads its bytes for AMQP consumers (when the broker can read it), the entry
        as it came for stream readers. Returns the publishing ids confirmed, in order: one per
        entry. A publisher with a ``reference`` is deduplicated as osiris' writer tracking
        does: an id not above the last one written for the reference is confirmed and not
        written again. Write permission, then that the stream exists (rabbit_stream_reader's
        publish), before anything is written.

        Raises:
            AccessRefused: (403) no write permission on it.
            NotFound: (404) no such stream.
        """
        self.connection.access.write_queue(name)
        log = self._stream_log(name)
        last = log.writers.get(reference, -1) if reference else -1
        confirmed: list[int] = []
        written: list[tuple[Entry, tuple[Message | None, ...], str | None, int]] = []
        for publishing_id, value, entry in entries:
            confirmed.append(publishing_id)
            if reference and publishing_id <= last:
                continue  # a duplicate: confirmed, not written again
            if isinstance(entry, bytes):
                messages: tuple[Message | None, ...] = (Message("", name, *decode(entry)),)
            else:  # a sub-batch: its records at the offsets it counts (osiris' parse_records)
                records = (entry.records() or [])[:entry.count]
                messages = (*(Message("", name, *decode(r)) for r in records),
                            *(None,) * (entry.count - len(records)))
            last = max(last, publishing_id)
            written.append((entry, messages, value, last))
        if written:  # (in the chunks osiris' writer makes of one burst)
            queue = self._stream_queue(name)
            start = 0
            for size in log.batches(len(written)):
                batch = written[start:start + size]
                queue.append_chunk(tuple(m for _e, ms, _v, _l in batch for m in ms),
                                   tuple(e for e, _ms, _v, _l in batch),
                                   tuple(v for _e, _ms, v, _l in batch) if filtered else None,
                                   writer=(reference, batch[-1][3]) if reference else None)
                start += size
        return confirmed

    def stream_publisher_sequence(self, name: str, reference: str) -> int:
        """The last publishing id written by publisher ``reference`` (0 for none):
        QueryPublisherSequence, read permission, then that the stream exists.

        Raises:
            AccessRefused: (403) no read permission on it.
            NotFound: (404) no such stream.
        """
        self.connection.access.read_queue(name)
        return max(self._stream_log(name).writers.get(reference, 0), 0)

    def stream_query_offset(self, name: str, reference: str) -> int | None:
        """The offset consumer ``reference`` stored, or ``None``: QueryOffset, read
        permission, then that the stream exists.

        Raises:
            AccessRefused: (403) no read permission on it.
            NotFound: (404) no such stream.
        """
        self.connection.access.read_queue(name)
        return self._stream_log(name).offsets.get(reference)

    def stream_store_offset(self, name: str, reference: str, offset: int) -> None:
        """Store consumer ``reference``'s offset: StoreOffset, *write* permission (RabbitMQ
        3.10.8 checks write: a user who may only read cannot store), then that the stream
        exists.

        Raises:
            AccessRefused: (403) no write permission on it.
            NotFound: (404) no such stream.
        """
        self.connection.access.write_queue(name)
        self._stream_log(name).store_offset(reference, offset)

    def super_stream_route(self, super_stream: str, routing_key: str) -> list[str]:
        """The streams a message with ``routing_key`` reaches through exchange
        ``super_stream``, in name order (``rabbit_stream_manager:route/3``: the exchange
        routes it as a publish would, then the queues that are streams; no permission).

        Raises:
            NotFound: (404) no such exchange.
        """
        exchange = self.vhost.lookup_exchange(super_stream)
        queues = self.vhost._route(exchange, [routing_key], None)[0]
        return [q.name for q in queues if isinstance(q, StreamQueue)]

    def super_stream_partitions(self, super_stream: str) -> list[str]:
        """The streams bound to exchange ``super_stream``, by their bindings'
        ``x-stream-partition-order`` (``rabbit_stream_manager:partitions/2``, no permission).

        Raises:
            NotFound: (404) no such exchange.
        """
        exchange = self.vhost.lookup_exchange(super_stream)
        bindings = sorted((b for b in exchange.bindings.values()
                           if isinstance(b.destination, StreamQueue)),
                          key=_partition_order)
        return list(dict.fromkeys(b.destination.name for b in bindings))

    def super_stream_create(self, name: str, partitions: Sequence[str],
                            binding_keys: Sequence[str], arguments: dict[str, str]) -> bool:
        """CreateSuperStream (RabbitMQ 3.13+, the RabbitMQ 4 profile): a durable direct
        exchange ``name`` (``x-super-stream``), a stream per partition (``arguments`` as
        Create takes them, ``queue-leader-locator`` ``balanced`` unless given) and a binding
        from the exchange to each, with its binding key and ``x-stream-partition-order``.
        Returns ``False`` when an exchange or queue of those names exists
        (STREAM_ALREADY_EXISTS). RabbitMQ 4.1.0's order (rabbit_stream_reader,
        rabbit_stream_manager:create_super_stream/6): the name (``\r`` and ``\n`` taken
        out), the permissions, then the partitions and keys, the vhost's queue limit, an
        existing exchange, existing queues; what was created is taken back if a partition
        fails.

        Raises:
            PreconditionFailed: (406) an empty or ``amq.`` name; as many binding keys as
                partitions wanted; duplicate or bad partition names; the queue limit.
            AccessRefused: (403) :meth:`Grant.super_stream <._access.Grant.super_stream>`.
        """
        name = without_cr_lf(name)
        if not name or reserved(name):
            raise PreconditionFailed(f"'{name}' is not a correct name for a super stream")
        self.connection.access.super_stream(name, partitions)
        if len(partitions) != len(binding_keys):
            raise PreconditionFailed("There must be the same number of partitions and binding "
                                     "keys")
        if len(set(partitions)) != len(partitions):
            raise PreconditionFailed(f"Duplicate partition names found {list(partitions)}")
        bad = [p for p in partitions if not without_cr_lf(p) or reserved(without_cr_lf(p))]
        if bad:
            raise PreconditionFailed(f"{bad} is not a correct partition names")
        vhost = self.vhost
        limit = vhost.policies.limits.get("max-queues")
        if isinstance(limit, int) and limit >= 0 and len(vhost.queues) + len(partitions) > limit:
            raise PreconditionFailed(
                f"Cannot declare super stream {name} with {len(partitions)} partition(s) "
                f"because queue limit {limit} in vhost '{vhost.name}' is reached")
        if name in vhost.exchanges or any(without_cr_lf(p) in vhost.queues for p in partitions):
            return False
        user = self.connection.user
        vhost.declare_exchange(name, "direct", durable=True,
                               arguments={"x-super-stream": True}, user=user)
        created: list[str] = []
        given = {"queue-leader-locator": "balanced", **arguments}
        try:
            for partition in partitions:
                partition = without_cr_lf(partition)
                vhost.declare_queue(partition, self.connection, durable=True,
                                    arguments=create_arguments(given))
                created.append(partition)
            for order, (partition, key) in enumerate(zip(created, binding_keys, strict=True)):
                vhost.bind(name, "queue", partition, key,
                           {"x-stream-partition-order": Long(order)}, self.connection)
        except ChannelException:
            for partition in created:  # (the manager's rollback operations)
                vhost.delete_queue(partition, None)
            vhost.delete_exchange(name, user=user)
            raise
        return True

    def super_stream_delete(self, name: str) -> None:
        """DeleteSuperStream (the RabbitMQ 4 profile): the exchange, then its partitions.
        RabbitMQ 4.1.0's order: the permissions (over the partitions the exchange has, none
        when it does not exist), then that it exists.

        Raises:
            AccessRefused: (403) :meth:`Grant.super_stream <._access.Grant.super_stream>`.
            NotFound: (404) no such exchange.
        """
        try:
            partitions = self.super_stream_partitions(name)
        except NotFound:
            partitions = []
        self.connection.access.super_stream(name, partitions)
        self.vhost.lookup_exchange(name)
        self.vhost.delete_exchange(name, user=self.connection.user)
        for partition in partitions:
            self.vhost.delete_queue(partition, None)

    def stream_stats(self, name: str) -> dict[str, int]:
        """StreamStats (the RabbitMQ 4 profile): ``first_chunk_id`` and ``committed_chunk_id``,
        the offsets of the stream's first and last chunks (-1 when it has none, as osiris'
        ``get_stats``). Read permission, then that the stream exists (rabbit_stream_reader).

        Raises:
            AccessRefused: (403) no read permission on it.
            NotFound: (404) no such stream.
        """
        self.connection.access.read_queue(name)
        log = self._stream_log(name)
        first = next(iter(log.chunks), None)
        last = next((segment[-1] for segment in reversed(log.segments) if segment), None)
        return {"first_chunk_id": first.first_offset if first is not None else -1,
                "committed_chunk_id": last.first_offset if last is not None else -1}


def _partition_order(binding: Binding) -> int:
    order = binding.arguments.get("x-stream-partition-order")
    return order if isinstance(order, int) else 0
