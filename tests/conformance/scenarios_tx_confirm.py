"""Scenarios: publisher confirms, transactions, channel.flow.

In confirm mode every publish waits for its basic.ack/nack (as pika's BlockingChannel does); the
transcript shows the confirm, and a basic.return, right after the publish, in arrival order.
"""

from __future__ import annotations

from typing import Any

from .harness import ChannelProxy, QueueDeclareOk, Session, wire_only

NOT_TX = "PRECONDITION_FAILED - channel is not transactional"


def _ready(ch: ChannelProxy, q: str) -> Any:
    r = ch.queue_declare(q, passive=True)
    return r.message_count if isinstance(r, QueueDeclareOk) else r


def _new_confirms(ch: ChannelProxy, since: int) -> list[tuple[int, bool, bool]]:
    return [tuple(c) for c in ch.confirms[since:]]  # type: ignore[misc]


def scenario_confirm_acks_from_one(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    s.expect(ch.confirm_delivery(), None)
    for i in range(3):
        ch.basic_publish("", q, f"m{i}".encode())
    s.expect(_new_confirms(ch, 0), [(1, False, True), (2, False, True), (3, False, True)],
             "sequence numbers count from 1")
    ch.basic_publish("", s.name("nowhere"), b"dropped")
    s.expect(_new_confirms(ch, 3), [(4, False, True)], "an unroutable message is acked too")
    s.expect(ch.confirm_delivery(), None, "confirm.select again is fine")
    ch.basic_publish("", q, b"m3")
    s.expect(_new_confirms(ch, 4), [(5, False, True)], "and does not restart the count")
    s.expect(s.channel().drain(q), [b"m0", b"m1", b"m2", b"m3"])


def scenario_confirm_per_channel(s: Session) -> None:
    ch1, ch2 = s.channel(), s.channel()
    q = s.name("q")
    ch1.queue_declare(q)
    ch1.confirm_delivery()
    ch1.basic_publish("", q, b"a")
    ch2.confirm_delivery()
    ch2.basic_publish("", q, b"b")
    ch1.basic_publish("", q, b"c")
    s.expect((_new_confirms(ch1, 0), _new_confirms(ch2, 0)),
             ([(1, False, True), (2, False, True)], [(1, False, True)]))


def scenario_confirm_mandatory_unroutable(s: Session) -> None:
    """basic.return comes before the basic.ack of the same message."""
    ch = s.channel()
    ch.confirm_delivery()
    q = s.name("q")
    ch.queue_declare(q)
    ch.basic_publish("", q, b"routed", mandatory=True)
    ch.basic_publish("", s.name("nowhere"), b"lost", mandatory=True)
    s.expect([e.what.strip() for e in s.transcript[-2:]], ["<- basic.return", "<- basic.ack"],
             "return, then ack")
    s.expect(_new_confirms(ch, 0), [(1, False, True), (2, False, True)])
    s.expect([r.body for r in ch.returned], [b"lost"])


def scenario_confirm_publish_to_missing_exchange(s: Session) -> None:
    ch = s.channel()
    ch.confirm_delivery()
    r = ch.basic_publish(s.name("missing"), "k", b"m")
    s.expect_error(r, 404, "NOT_FOUND - no exchange 'missing' in vhost '/'", scope="channel")
    s.expect(ch.confirms, [], "no confirm for it")


def scenario_confirm_nack_reject_publish_overflow(s: Session) -> None:
    """x-overflow=reject-publish: a message the full queue refuses is nacked."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q, arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
    ch.confirm_delivery()
    ch.basic_publish("", q, b"m0")
    ch.basic_publish("", q, b"m1")
    s.expect(_new_confirms(ch, 0), [(1, False, True), (2, True, False)],
             "RabbitMQ sends a lone nack with multiple=true, a lone ack with multiple=false")
    s.expect(s.channel().drain(q), [b"m0"])


def scenario_tx_commit_and_rollback_publishes(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    s.expect(ch.tx_select(), None)
    ch.basic_publish("", q, b"m0")
    ch.basic_publish("", q, b"m1")
    s.expect(_ready(ch, q), 0, "publishes are held until commit")
    s.expect(ch.tx_commit(), None)
    s.expect(_ready(ch, q), 2)
    ch.basic_publish("", q, b"rolled back")
    s.expect(ch.tx_rollback(), None)
    s.expect(_ready(ch, q), 2)
    s.expect(ch.tx_commit(), None, "an empty commit is fine")
    s.expect(ch.tx_select(), None, "tx.select again is fine")
    s.expect(s.channel().drain(q), [b"m0", b"m1"])


def scenario_tx_rollback_keeps_acked_messages_unacked(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    for body in (b"m0", b"m1", b"m2"):
        ch.basic_publish("", q, body)
    ch.tx_select()
    for _ in range(3):
        ch.basic_get(q)
    ch.basic_ack(1)
    ch.basic_reject(2, requeue=True)
    s.expect(_ready(ch, q), 0, "the reject is held too")
    ch.tx_rollback()
    s.expect(_ready(ch, q), 0, "rolled back: still unacked, not requeued")
    s.expect(ch.basic_ack(1), None, "the rolled-back ack's tag is still outstanding")
    s.expect(ch.basic_ack(3), None)
    ch.tx_commit()
    ch.close()
    ch = s.channel()
    s.expect(ch.drain(q, ack=False), [b"m1"], "only m1 was never acked")


def scenario_tx_acks_with_consumer(s: Session) -> None:
    """An ack inside a transaction frees the prefetch slot only at commit."""
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    for body in (b"m0", b"m1"):
        ch.basic_publish("", q, body)
    ch.tx_select()
    ch.basic_qos(prefetch_count=1)
    ch.basic_consume(q)
    s.expect([d.body for d in ch.wait_deliveries(1)], [b"m0"])
    ch.basic_ack(1)
    s.expect(_ready(ch, q), 1, "m1 still waits")
    ch.tx_commit()
    s.expect([(d.delivery_tag, d.body) for d in ch.wait_deliveries(1)], [(2, b"m1")])


def scenario_tx_mandatory_return_at_commit(s: Session) -> None:
    ch = s.channel()
    ch.tx_select()
    ch.basic_publish("", s.name("nowhere"), b"lost", mandatory=True)
    s.expect(ch.returned, [], "nothing is routed before the commit")
    ch.tx_commit()
    s.expect([(r.reply_code, r.body) for r in ch.returned], [(312, b"lost")])
    ch.basic_publish("", s.name("nowhere"), b"never", mandatory=True)
    ch.tx_rollback()
    s.expect(len(ch.returned), 1, "a rolled-back publish is not returned")


def scenario_tx_commit_without_select(s: Session) -> None:
    s.expect_error(s.channel().tx_commit(), 406, NOT_TX, scope="channel")
    s.expect_error(s.channel().tx_rollback(), 406, NOT_TX, scope="channel")


def scenario_tx_and_confirm_exclude_each_other(s: Session) -> None:
    ch = s.channel()
    ch.tx_select()
    s.expect_error(ch.confirm_delivery(), 406,
                   "PRECONDITION_FAILED - cannot switch from tx to confirm mode", scope="channel")
    ch = s.channel()
    ch.confirm_delivery()
    s.expect_error(ch.tx_select(), 406,
                   "PRECONDITION_FAILED - cannot switch from confirm to tx mode", scope="channel")


def scenario_confirm_select_no_wait(s: Session) -> None:
    """confirm.select with no-wait: the channel confirms (tx.select is refused), no select-ok."""
    ch = s.channel()
    s.expect(ch.confirm_delivery(no_wait=True), None, "no select-ok")
    s.expect_error(ch.tx_select(), 406, "PRECONDITION_FAILED - cannot switch from confirm to tx mode")


def scenario_tx_channel_close_discards_uncommitted(s: Session) -> None:
    ch = s.channel()
    q = s.name("q")
    ch.queue_declare(q)
    ch.basic_publish("", q, b"m0")
    ch.tx_select()
    ch.basic_get(q)
    ch.basic_ack(1)
    ch.basic_publish("", q, b"uncommitted")
    ch.close()
    s.expect(s.channel().drain(q, ack=False), [b"m0"],
             "the held ack is dropped (m0 requeued), the held publish too")


@wire_only("the in-process client has no channel.flow")
def scenario_channel_flow(s: Session) -> None:
    ch = s.channel()
    s.expect(ch.flow(True), True)
    s.expect_error(ch.flow(False), 540, "NOT_IMPLEMENTED - active=false", scope="connection")
