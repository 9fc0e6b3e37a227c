"""Targeted mutations of embroker's rules: does the offline suite notice when a rule breaks?

    python tools/mutate.py                  every mutation, the default tests
    python tools/mutate.py --list           the mutations, and whether each still applies
    python tools/mutate.py 'qos_*' tx_commit_without_select     some (names or shell patterns)
    python tools/mutate.py --tests-from 382f4f5                 the suite as it was at a commit
    python tools/mutate.py --tests tests/model tests/conformance  other tests
    python tools/mutate.py 'mgmt_*' 'rule_*' --tests tests/management/test_api.py \
        tests/management/test_differential.py tests/model/test_access.py \
        tests/management/test_routes.py      the authorization mutants, the route table last

Each mutation is a rule of RabbitMQ's that embroker models, broken on purpose: a file, an exact
snippet of its source (it must occur exactly once) and what replaces it. The script copies the
checkout (tracked and untracked files, as they are on disk) to a temporary directory, runs the
tests there once unmutated (they must pass), then once per mutation with that one change
applied to the copy, and reports each mutant *killed* (a test failed: the suite knows the rule)
or *survived* (nothing failed: no test pins the rule). The checkout itself is never modified.
Tests run offline (``EMBROKER_REFERENCE_URL`` removed), stopping at the first failure.

When the code changes, a snippet may no longer be found: the mutation is then reported *stale*
(with the file and snippet) and the exit status is 2; update it to the new code. Exit status 1
when a mutant survived, 0 when all were killed.

Not run in CI: a full run takes about ten minutes (a survivor runs the whole subset).
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The offline tests each mutant runs by default, fastest to fail first (the management API's
#: route table and the stream permission order first: seconds, and what pins the
#: authorization mutants; the management API's answers after the model's).
DEFAULT_TESTS = ("tests/management/test_routes.py", "tests/stream/test_permission_order.py",
                 "tests/amqp091/test_assembly.py", "tests/amqp091/test_fast_paths.py",
                 "tests/model", "tests/kit", "tests/test_layers.py", "tests/test_seams.py",
                 "tests/control/test_control_port.py",
                 "tests/test_websocket.py", "tests/test_testing.py", "tests/conformance",
                 "tests/server", "tests/stomp", "tests/mqtt", "tests/clients", "tests/amqp10",
                 "tests/management/test_api.py",
                 "tests/management/test_differential.py", "tests/management/test_samples.py")
#: A mutant that runs longer than this (an endless loop, say) counts as killed.
TIMEOUT_SECONDS = 900


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to the repository root
    find: str  # an exact snippet of the file, found exactly once
    replace: str
    rule: str  # the rule the mutant breaks

    def apply(self, source: str) -> str:
        count = source.count(self.find)
        if count != 1:
            where = "not found" if count == 0 else f"found {count} times"
            raise StaleMutation(f"{self.name}: snippet {where} in {self.file} (the code "
                                f"changed: update the mutation in tools/mutate.py)\n"
                                f"  snippet: {self.find!r}")
        return source.replace(self.find, self.replace)


class StaleMutation(Exception):
    pass


CHANNEL = "embroker/model/_channel.py"
QUEUE = "embroker/model/_queue.py"
QUORUM = "embroker/model/_queue_quorum.py"
STREAM_QUEUE = "embroker/model/_queue_stream.py"
QUEUE_TYPE = "embroker/model/_queue_type.py"
STREAM_COMMANDS = "embroker/model/_stream_commands.py"
VHOST = "embroker/model/_vhost.py"
EXCHANGE = "embroker/model/_exchange.py"
DEADLETTER = "embroker/model/_deadletter.py"
TX = "embroker/model/_tx.py"
ARGUMENTS = "embroker/model/_arguments.py"
CONSUMER = "embroker/model/_consumer.py"
DISPATCH = "embroker/amqp091/_dispatch.py"
ACCESS = "embroker/model/_access.py"
MANAGEMENT = "embroker/management/_api.py"


def _mgmt(module: str) -> str:
    """A resource module of the management API (``users``: ``_users.py``)."""
    return f"embroker/management/_{module}.py"

M = Mutation
MUTATIONS: list[Mutation] = [
    # -- qos and prefetch ----------------------------------------------------------------------
    M("qos_not_global_keeps_the_channel_limit", CHANNEL,
      '            self.prefetch_count = prefetch_count\n            self.global_prefetch = 0\n',
      '            self.prefetch_count = prefetch_count\n',
      "basic.qos(global=false) lifts the channel's global limit"),
    M("global_limit_lets_auto_ack_consumers_through", QUEUE,
      '                    if not consumer.channel.global_limit_reached():',
      '                    if consumer.no_ack or not consumer.channel.global_limit_reached():',
      "a reached global limit holds back auto-ack consumers too"),
    M("global_limit_off_by_one", CHANNEL,
      'self._volume >= self.global_prefetch',
      'self._volume > self.global_prefetch',
      "a global limit of N allows N unacked deliveries"),
    M("prefetch_off_by_one", CONSUMER,
      'self.unacked < self.prefetch',
      'self.unacked <= self.prefetch',
      "a prefetch of N allows N unacked deliveries per consumer"),
    M("passed_over_consumer_keeps_its_place", QUEUE,
      '                self._groups[consumer.priority].append(consumer)',
      '                self._groups[consumer.priority].appendleft(consumer)',
      "a consumer passed over for lack of room rejoins behind the others"),
    M("no_round_robin", QUEUE,
      "                group.rotate(-1)\n", "",
      "consumers of a queue take turns"),
    M("consumer_priority_lowest_first", QUEUE,
      "self._priorities = sorted(self._groups, reverse=True)",
      "self._priorities = sorted(self._groups)",
      "higher x-priority consumers get messages first"),
    # -- acknowledgements ----------------------------------------------------------------------
    M("auto_ack_get_takes_no_delivery_tag", CHANNEL,
      '        self._next_tag = tag + 1\n        for stats in (self.stats, q.stats, '
      'self.vhost.stats):\n            if no_ack:',
      '        self._next_tag = tag + (0 if no_ack else 1)\n        for stats in (self.stats, '
      'q.stats, self.vhost.stats):\n            if no_ack:',
      "every basic.get-ok takes a delivery tag, auto-ack or not"),
    M("ack_multiple_zero_is_unknown", CHANNEL,
      "            if delivery_tag == 0:\n                taken = list(unacked.items())",
      "            if delivery_tag == 0 and False:\n                taken = list(unacked.items())",
      "ack(0, multiple=true) acknowledges everything outstanding"),
    M("ack_multiple_excludes_the_tag", CHANNEL,
      "                taken.append((tag, item))\n                if tag == delivery_tag:\n"
      "                    return taken",
      "                if tag == delivery_tag:\n                    unacked[tag] = item\n"
      "                    unacked.move_to_end(tag, last=False)\n                    return taken\n"
      "                taken.append((tag, item))",
      "ack(N, multiple=true) includes N"),
    M("unknown_delivery_tag_ignored", CHANNEL,
      "        except KeyError:\n            raise PreconditionFailed(f\"unknown delivery tag "
      "{delivery_tag}\") from None",
      "        except KeyError:\n            return []",
      "an unknown delivery tag is a 406 channel error"),
    M("nack_always_requeues", CHANNEL,
      'Settlement.REQUEUE if requeue else Settlement.REJECT, "basic.nack",',
      'Settlement.REQUEUE, "basic.nack",',
      "nack(requeue=false) drops (or dead-letters) the message"),
    M("reject_always_requeues", CHANNEL,
      'Settlement.REQUEUE if requeue else Settlement.REJECT, "basic.reject",',
      'Settlement.REQUEUE, "basic.reject",',
      "reject(requeue=false) drops (or dead-letters) the message"),
    M("requeued_not_redelivered", QUEUE,
      "            entry.redelivered = True\n", "            entry.redelivered = False\n",
      "a requeued message comes back with redelivered=true"),
    M("requeue_to_the_back", QUEUE,
      "            ready.put_back(entry)", "            ready.append(entry)",
      "a requeued message goes back to its original position"),
    M("channel_close_drops_unacked", CHANNEL,
      'self._return_to_queues(  # requeued first, then the others take over\n            taken,',
      'self._return_to_queues(  # requeued first, then the others take over\n            [],',
      "closing a channel requeues its unacked messages"),
    M("get_ok_counts_unacked_too", CHANNEL,
      '                        q.message_count)',
      '                        q.message_count + q.unacked)',
      "get-ok's message-count counts ready messages only"),
    # -- confirms and transactions -------------------------------------------------------------
    M("confirm_acks_a_refused_publish", CHANNEL,
      'new_confirmed((self.number, self._publish_seq, not accepted, accepted))',
      'new_confirmed((self.number, self._publish_seq, False, True))',
      "a publish a queue refused (overflow reject-publish) is nacked"),
    M("confirm_sequence_does_not_grow", CHANNEL,
      '        self._publish_seq += 1\n',
      '        self._publish_seq = 1\n',
      "confirms count publishes from 1 on the channel"),
    M("confirm_after_tx_allowed", CHANNEL,
      "        if self.tx_mode:\n            raise PreconditionFailed(\"cannot switch from tx",
      "        if False:\n            raise PreconditionFailed(\"cannot switch from tx",
      "confirm.select on a transactional channel is a 406"),
    M("tx_publish_not_held", CHANNEL,
      '            if held is not None:\n                vhost.check_routing_headers(message)',
      '            if False:\n                vhost.check_routing_headers(message)',
      "a publish in a transaction waits for tx.commit"),
    M("tx_ack_not_held", CHANNEL,
      '        if held is not None:\n            held._hold(HeldSettlement(',
      '        if False:\n            held._hold(HeldSettlement(',
      "an ack in a transaction waits for tx.commit"),
    M("tx_rollback_forgets_acks", CHANNEL,
      "        if restored:\n", "        if False:\n",
      "tx.rollback makes the transaction's acked messages unacked again"),
    M("tx_commit_without_select", CHANNEL,
      "        if not self.tx_mode:\n            raise PreconditionFailed(\"channel is not "
      "transactional\")",
      "        if False:\n            raise PreconditionFailed(\"channel is not transactional\")",
      "tx.commit / rollback without tx.select is a 406"),
    M("transaction_commits_settlements_first", TX,
      "        for record in self._take():\n            if isinstance(record, HeldPublish):",
      "        for record in sorted(self._take(), key=lambda r: isinstance(r, HeldPublish)):\n"
      "            if isinstance(record, HeldPublish):",
      "a transaction commits its publishes and settlements in the order they were given"),
    # -- publishing and consumers --------------------------------------------------------------
    M("mandatory_unroutable_not_returned", CHANNEL,
      '        if not mandatory:\n            self.stats.drop_unroutable += 1\n',
      '        if True:\n            self.stats.drop_unroutable += 1\n',
      "a mandatory message that reaches no queue is returned (312 NO_ROUTE)"),
    M("user_id_not_checked", CHANNEL,
      'if user_id is not None and user_id != self.connection.user and \\',
      'if False and \\',
      "a user_id property other than the connection's user is a 406"),
    M("consumer_tag_reuse_allowed", CHANNEL,
      "        if consumer_tag in self.consumers:  # RabbitMQ's order",
      "        if False:  # RabbitMQ's order",
      "reusing a consumer tag on a channel is a 530 connection error"),
    M("exclusive_consumer_not_enforced", CHANNEL,
      "exclusive or any(c.exclusive for c in q.consumers)", "False",
      "an exclusive consumer keeps others off its queue"),
    M("auto_delete_queue_kept_after_last_consumer", CHANNEL,
      "if queue.auto_delete and not queue.consumer_count and not queue.deleted:",
      "if False:",
      "an auto-delete queue goes with its last consumer"),
    # -- queue declaration and deletion ----------------------------------------------------------
    M("equivalence_ignores_x_max_priority", QUEUE_TYPE,
      '"x-max-length", "x-max-length-bytes", "x-max-priority", "x-overflow"',
      '"x-max-length", "x-max-length-bytes", "x-overflow"',
      "redeclaring a queue with another x-max-priority is a 406"),
    M("equivalence_ignores_durable", VHOST,
      'check_equivalent_field(where, "durable", queue.durable, durable)',
      'pass',
      "redeclaring a queue with another durable flag is a 406"),
    M("exchange_equivalence_ignores_alternate_exchange", VHOST,
      'check_equivalent_arguments(where, exchange.arguments, arguments, ("alternate-exchange",))',
      'pass',
      "redeclaring an exchange with another alternate-exchange is a 406"),
    M("amq_queue_names_allowed", VHOST,
      "        elif reserved(name):\n            raise AccessRefused(f\"queue name",
      "        elif False:\n            raise AccessRefused(f\"queue name",
      "queue names starting with amq. are refused (403)"),
    M("exclusive_queue_open_to_all", VHOST,
      "if queue.exclusive_owner is not None and queue.exclusive_owner is not connection:",
      "if False:",
      "another connection may not use an exclusive queue (405)"),
    M("delete_if_unused_ignored", VHOST,
      "if if_unused and queue.consumer_count:", "if False:",
      "queue.delete(if_unused) of a queue with consumers is a 406"),
    M("delete_if_empty_ignored", VHOST,
      "if if_empty and queue.message_count:", "if False:",
      "queue.delete(if_empty) of a queue with messages is a 406"),
    M("purge_counts_unacked", QUEUE,
      "        count = len(self._ready)\n        self._ready.clear()",
      "        count = len(self._ready) + self.unacked\n        self._ready.clear()",
      "purge-ok counts the ready messages it dropped"),
    # -- exchanges and routing -----------------------------------------------------------------
    M("exchange_delete_if_unused_ignored", VHOST,
      "if if_unused and exchange.bindings:", "if False:",
      "exchange.delete(if_unused) of an exchange with bindings is a 406"),
    M("auto_delete_exchange_kept", VHOST,
      "if source.auto_delete and not source.bindings and self.exchanges.get(",
      "if False and self.exchanges.get(",
      "an auto-delete exchange goes with its last binding"),
    M("routed_queues_in_binding_order", VHOST,
      "return sorted(queues, key=_queue_name)", "return list(queues)",
      "a message reaches its queues in the order of their names"),
    M("alternate_exchange_even_when_routed", VHOST,
      "if not found and current.alternate_exchange is not None:",
      "if current.alternate_exchange is not None:",
      "the alternate exchange gets only what the exchange could not route"),
    M("publish_to_internal_exchange_allowed", VHOST,
      "if exchange is None or exchange.internal:", "if exchange is None:",
      "publishing to an internal exchange is a 403"),
    M("bcc_header_kept", VHOST,
      "        if \"BCC\" in headers:\n            stripped",
      "        if False:\n            stripped",
      "the BCC header is removed before delivery"),
    M("topic_hash_needs_a_word", EXCHANGE,
      "        for j in range(i, n + 1):\n            mark = (id(hash_node), j)",
      "        for j in range(i + 1, n + 1):\n            mark = (id(hash_node), j)",
      "# matches zero or more words"),
    M("topic_tail_hash_needs_a_word", EXCHANGE,
      "                for j in range(i, n + 1):\n                    mark: tuple",
      "                for j in range(i + 1, n + 1):\n                    mark: tuple",
      "# in a pattern's unshared words (a leaf's tail) matches zero or more words too"),
    M("topic_tail_word_matches_any_word", EXCHANGE,
      "            elif word != key_word:\n                return\n",
      "            elif word != key_word and False:\n                return\n",
      "a literal word in a pattern's unshared words (a leaf's tail) matches that word only"),
    M("topic_star_matches_no_word", EXCHANGE,
      "        _trie_match(star, words, i + 1, n, out, seen)",
      "        _trie_match(star, words, i + 1, n, out, seen)\n"
      "        _trie_match(star, words, i, n, out, seen)",
      "* matches exactly one word"),
    M("topic_empty_key_is_one_word", EXCHANGE,
      "return key.split(\".\") if key else []", "return key.split(\".\")",
      "an empty routing key has no words"),
    M("headers_all_and_any_swapped", EXCHANGE,
      'return kind.startswith("all"), tuple(',
      'return kind.startswith("any"), tuple(',
      "x-match all needs every header, any one of them"),
    M("headers_x_arguments_always_matched", EXCHANGE,
      "(with_x or not k.startswith(\"x-\"))", "True",
      "x-match all/any ignore x- binding arguments (only -with-x match them)"),
    M("headers_bool_equals_number", EXCHANGE,
      "    if isinstance(value, bool):\n        return (\"bool\", value)\n",
      "",
      "a boolean header does not match a number"),
    # -- TTL, expiry, length limits, priorities ----------------------------------------------------
    M("ttl0_not_delivered_to_a_waiting_consumer", QUEUE,
      "if self._consumer_count and not self._ready:", "if False:",
      "a message a consumer can take at once is delivered, even with a TTL of 0"),
    M("shorter_message_ttl_ignored", QUEUE,
      "if expiration is not None and (ttl is None or expiration < ttl):",
      "if expiration is not None and ttl is None:",
      "the shorter of the queue's and the message's TTL applies"),
    M("expired_dead_lettered_as_maxlen", QUEUE,
      "self._dead_letter(expired, \"expired\")", "self._dead_letter(expired, \"maxlen\")",
      "an expired message is dead-lettered with reason expired"),
    M("queue_expires_while_consumed", QUEUE,  # both guards: either one keeps the rule
      "        if not self._consumer_count and not self.deleted:\n            self._idle_timer"
      " = self._clock.call_at(self._clock.monotonic() + self._expires,\n"
      "                                                   self._expired)\n\n"
      "    def _expired(self) -> None:\n        self._idle_timer = None\n"
      "        if not self.deleted and not self._consumer_count:",
      "        if not self.deleted:\n            self._idle_timer"
      " = self._clock.call_at(self._clock.monotonic() + self._expires,\n"
      "                                                   self._expired)\n\n"
      "    def _expired(self) -> None:\n        self._idle_timer = None\n"
      "        if not self.deleted:",
      "x-expires does not count down while the queue has consumers"),
    M("get_does_not_renew_x_expires", QUEUE,
      "        if self._expires is not None:\n            self.touch()\n",
      "",
      "basic.get restarts the x-expires countdown"),
    M("reject_publish_ignored", QUEUE,
      "if limited and self._overflow != \"drop-head\" and self._refuses(",
      "if False and self._refuses(",
      "x-overflow reject-publish refuses a publish to a full queue"),
    M("quorum_refuses_at_the_limit", QUORUM,
      "            blocked = self._over_limit()\n",
      "            blocked = self._over_limit(1)\n",
      "a quorum queue takes one message over its limit before it blocks a publisher"),
    M("quorum_lets_go_at_once", QUORUM,
      "len(self._ready) <= int(max_length * _LOW_LIMIT)",
      "len(self._ready) <= max_length",
      "a blocked quorum publisher waits until the queue is at 80% of its limit"),
    M("modified_failed_not_counted", CHANNEL,
      "            if settlement.failed:\n",
      "            if False:\n",
      "AMQP 1.0 modified(delivery-failed) counts a failed delivery"),
    M("max_length_off_by_one", QUEUE,
      "len(self._ready) + extra_messages > self._max_length",
      "len(self._ready) + extra_messages >= self._max_length",
      "x-max-length N keeps N ready messages"),
    M("drop_head_dead_lettered_as_expired", QUEUE,
      "self._dead_letter(dropped, \"maxlen\")", "self._dead_letter(dropped, \"expired\")",
      "a message pushed out by a length limit is dead-lettered with reason maxlen"),
    M("reject_publish_dlx_not_dead_lettered", QUEUE,
      "            if self._overflow == \"reject-publish-dlx\":\n",
      "            if False:\n",
      "x-overflow reject-publish-dlx dead-letters the refused message"),
    M("priority_queue_is_fifo", QUEUE,
      "_PriorityReady(max_priority) if max_priority else _FifoReady())", "_FifoReady())",
      "x-max-priority delivers higher priorities first"),
    M("priority_not_capped", QUEUE,
      "priority = min(priority, self._max) if isinstance(priority, int) else 0",
      "priority = priority if isinstance(priority, int) else 0",
      "a priority above x-max-priority counts as x-max-priority"),
    M("quorum_delivery_limit_off_by_one", QUORUM,
      "entry.delivery_count > limit", "entry.delivery_count >= limit",
      "x-delivery-limit N allows N redeliveries"),
    # -- what each queue type decides (#48) ----------------------------------------------------
    M("quorum_deliveries_without_count", QUORUM,
      "    rewrites_deliveries: ClassVar[bool] = True\n", "",
      "a quorum queue's redelivery carries x-delivery-count"),
    M("quorum_requeue_keeps_position_without_limit", QUORUM,
      "            if limit is None and not closed:\n                # RabbitMQ 3.10",
      "            if False:\n                # RabbitMQ 3.10",
      "a quorum queue without a delivery limit returns a message to its back"),
    M("quorum_reject_publish_dlx_kept", QUORUM,
      '        if self._overflow == "reject-publish-dlx":\n',
      '        if False:\n',
      "reject-publish-dlx is not a quorum overflow: the queue drops its head"),
    M("quorum_policy_change_drops_by_the_old_overflow", QUORUM,
      "        super()._policies_changed(self._overflow)", "        super()._policies_changed(overflow)",
      "a quorum queue's policy change drops its head only under the new overflow"),
    M("stream_retention_waits_for_a_segment", STREAM_QUEUE,
      "        self.log.apply_retention()  # (osiris", "        pass  # (osiris",
      "a stream's policy lowering its retention removes old segments at once"),
    M("stream_takes_global_qos", QUEUE_TYPE,
      "        if global_prefetch:\n            raise NotImplementedAMQP(f\"{queue.resource} does "
      "not support global qos\")\n        parse_offset_spec",
      "        if False:\n            raise NotImplementedAMQP(f\"{queue.resource} does "
      "not support global qos\")\n        parse_offset_spec",
      "a stream refuses a consumer on a channel with a global qos"),
    M("stream_takes_auto_ack", QUEUE_TYPE,
      "        if no_ack:\n", "        if False:\n",
      "a stream refuses an automatic-acknowledgement consumer"),
    M("stream_takes_basic_get", QUEUE_TYPE,
      '        raise NotImplementedAMQP(f"basic.get not supported by stream queues',
      '        return\n        raise NotImplementedAMQP(f"basic.get not supported by stream queues',
      "basic.get on a stream is refused (540)"),
    M("policy_keys_a_type_refuses_apply", "embroker/model/_policy.py",
      "if keys & queue_type.unsupported_policies(rabbitmq4=self.rabbitmq4)))",
      "if keys & frozenset()))",
      "a policy with a key a queue type refuses does not apply to a queue of that type"),
    M("stream_listed_as_its_ready_messages", QUEUE_TYPE,
      "        return len(log), log.size, 0, 0, 0, 0\n",
      "        return 0, 0, 0, 0, 0, 0\n",
      "a stream's listing shows the messages its log keeps"),
    M("quorum_declared_without_a_majority", QUEUE_TYPE,
      "        return quorate(queue)\n\n    def check_consume(",
      "        return True\n\n    def check_consume(",
      "a quorum queue is not created without a majority of its members running"),
    M("stream_rolled_back_delivery_requeued", QUEUE_TYPE,
      "    requeues = False\n", "",
      "a stream's rolled-back acknowledgements stay unacknowledged: nothing goes back"),
    # -- dead-lettering ------------------------------------------------------------------------
    M("x_death_count_not_incremented", DEADLETTER,
      'updated = {**entry, "count": _wrap_int64(count + 1)}',
      'updated = {**entry, "count": _wrap_int64(count)}',
      "a repeated death at the same queue for the same reason increments its count"),
    M("expiration_kept_when_dead_lettered", DEADLETTER,
      "expiration = properties.pop(\"expiration\", None)\n    if expiration is not None:",
      "expiration = properties.get(\"expiration\")\n    if expiration is not None:",
      "a dead-lettered message loses its expiration (kept as original-expiration)"),
    M("no_x_first_death_headers", DEADLETTER,
      '        headers["x-first-death-reason"] = reason\n',
      '',
      "the first death sets x-first-death-reason"),
    M("dead_letter_routing_key_ignored", DEADLETTER,
      "    if routing_key is not None:\n        headers.pop(\"CC\", None)",
      "    if False:\n        headers.pop(\"CC\", None)",
      "x-dead-letter-routing-key replaces the routing key"),
    M("x_death_routing_keys_without_cc", DEADLETTER,
      "\"routing-keys\": [message.keys[0], *_header_routes(headers)],",
      "\"routing-keys\": [message.keys[0]],",
      "x-death routing-keys lists the CC and BCC keys too"),
    M("dead_letter_cycles_not_detected", VHOST,
      "            if reason != \"rejected\":\n                headers = dead.headers",
      "            if False:\n                headers = dead.headers",
      "a dead-letter cycle without a rejection drops the message"),
    # -- argument validation -------------------------------------------------------------------
    M("negative_ttl_accepted", ARGUMENTS,
      "    if value < 0:\n        return f\"{{value_negative,{value}}}\"\n    if value > MAX_EXPIRY:",
      "    if value > MAX_EXPIRY:",
      "a negative TTL or expiry is a 406"),
    M("max_priority_limit_off_by_one", ARGUMENTS,
      "if value > MAX_PRIORITY", "if value > MAX_PRIORITY + 1",
      "x-max-priority above 255 is a 406"),
    M("expiration_leftover_accepted", ARGUMENTS,
      "        if rest:\n", "        if False:\n",
      "an expiration with trailing characters is a 406"),
    # -- the protocol layer: no-wait -------------------------------------------------------------
    M("queue_purge_ignores_no_wait", DISPATCH,
      'QueuePurgeOk(message_count=count), no_wait=True)',
      'QueuePurgeOk(message_count=count), no_wait=False)',
      "queue.purge with no-wait gets no purge-ok"),
    M("queue_declare_ignores_no_wait", DISPATCH,
      'consumer_count=ok.consumer_count), no_wait=True)',
      'consumer_count=ok.consumer_count), no_wait=False)',
      "queue.declare with no-wait gets no declare-ok"),
    M("exchange_bind_ignores_no_wait", DISPATCH,
      'ExchangeBindOk(), no_wait=True)',
      'ExchangeBindOk(), no_wait=False)',
      "exchange.bind with no-wait gets no bind-ok"),
    M("basic_cancel_ignores_no_wait", DISPATCH,
      'BasicCancelOk(consumer_tag=m.consumer_tag), no_wait=True)',
      'BasicCancelOk(consumer_tag=m.consumer_tag), no_wait=False)',
      "basic.cancel with no-wait gets no cancel-ok"),
    # -- the management API's authorization table (a route's rule, per method) ----------------
    M("mgmt_delete_user_any_user", _mgmt("users"),
      '@route("DELETE", "users/{user}", Rule.ADMIN)',
      '@route("DELETE", "users/{user}", Rule.ANY)',
      "only an administrator deletes a user (DELETE /api/users/:user)"),
    M("mgmt_delete_queue_any_user", _mgmt("queues"),
      '@route("DELETE", "queues/{vhost}/{name}", Rule.VHOST)',
      '@route("DELETE", "queues/{vhost}/{name}", Rule.ANY)',
      "deleting a queue needs access to its vhost (is_authorized_vhost)"),
    M("mgmt_definitions_to_monitors", _mgmt("definitions"),
      '@route("GET", "definitions", Rule.ADMIN)',
      '@route("GET", "definitions", Rule.MONITOR)',
      "only an administrator exports the definitions (the users' password hashes)"),
    M("mgmt_users_to_monitors", _mgmt("users"),
      '@route("GET", "users", Rule.ADMIN)',
      '@route("GET", "users", Rule.MONITOR)',
      "only an administrator lists the users"),
    M("mgmt_operator_policy_to_policymakers", _mgmt("policies"),
      '@route("PUT", "operator-policies/{vhost}/{name}", Rule.ADMIN, body=_POLICY)',
      '@route("PUT", "operator-policies/{vhost}/{name}", Rule.POLICIES, body=_POLICY)',
      "only an administrator sets an operator policy"),
    M("mgmt_policy_to_vhost_users", _mgmt("policies"),
      '@route("PUT", "policies/{vhost}/{name}", Rule.POLICIES, body=_POLICY)',
      '@route("PUT", "policies/{vhost}/{name}", Rule.VHOST, body=_POLICY)',
      "setting a policy needs the policymaker tag, not only access to the vhost"),
    M("mgmt_nodes_to_any_user", _mgmt("node"),
      '@route("GET", "nodes", Rule.MONITOR)',
      '@route("GET", "nodes", Rule.ANY)',
      "only monitors and administrators see the nodes"),
    M("mgmt_queue_actions_to_vhost_users", _mgmt("queues"),
      '@route("POST", "queues/{vhost}/{name}/actions", Rule.ADMIN,',
      '@route("POST", "queues/{vhost}/{name}/actions", Rule.VHOST,',
      "only an administrator runs a queue's mirroring actions"),
    M("mgmt_console_any_vhost", _mgmt("console"),
      '@route("GET", "embroker/console", Rule.VHOST, vhost=_chosen)',
      '@route("GET", "embroker/console", Rule.ANY)',
      "the console shows a vhost only to a user the vhost rule lets in"),
    M("mgmt_console_rule_ignores_the_query", _mgmt("console"),
      '@route("GET", "embroker/console", Rule.VHOST, vhost=_chosen)',
      '@route("GET", "embroker/console", Rule.VHOST)',
      "the console's vhost rule looks at the vhost its query names"),
    # -- the rules themselves (AccessControl.authorize) ------------------------------------------
    M("mgmt_monitor_closes_connections", MANAGEMENT,
      'delete=call.request.method == "DELETE",',
      'delete=False,',
      "a monitor reads everyone's connections but closes only its own (a DELETE is not a GET)"),
    M("rule_owner_delete_like_get", ACCESS,
      "            if not delete and \"monitoring\" in tags:\n",
      "            if \"monitoring\" in tags:\n",
      "is_authorized_user: monitoring users may read another user's item, not delete it"),
    M("rule_vhost_lets_monitors_in", ACCESS,
      "        if rule is Rule.VHOST_VISIBLE:\n            in_vhost = in_vhost or",
      "        if rule in (Rule.VHOST_VISIBLE, Rule.VHOST):\n            in_vhost = in_vhost or",
      "is_authorized_vhost lets a monitor into a vhost only with permissions there"),
    M("rule_policies_without_policymaker", ACCESS,
      'if not (in_vhost and "policymaker" in tags):',
      'if not in_vhost:',
      "is_authorized_policies needs the policymaker tag"),
    M("rule_global_parameters_to_anyone", ACCESS,
      '        if rule is Rule.GLOBAL_PARAMETERS:\n            if "policymaker" not in tags:',
      '        if rule is Rule.GLOBAL_PARAMETERS:\n            if False:',
      "is_authorized_global_parameters needs the policymaker tag"),
    # -- the dispatcher's order (route, method, credentials, rule, body, handler) ---------------
    M("mgmt_body_before_authorization", MANAGEMENT,
      "        call = Call(request, self._authenticate(request), params)\n"
      "        self._authorize(method, call)\n",
      "        call = Call(request, self._authenticate(request), params)\n"
      "        if method.body is not None and request.body:\n"
      "            call.body = method.body.read(request.body)\n"
      "        self._authorize(method, call)\n",
      "a refused user is told so before its body is read (is_authorized before the body)"),
    M("mgmt_existence_before_permission", MANAGEMENT,
      "            owner = method.owner(self, call) if method.owner is not None else NO_ITEM\n",
      "            owner = method.owner(self, call) if method.owner is not None else NO_ITEM\n"
      "            if method.owner is not None and owner is NO_ITEM and \"name\" in call.params:\n"
      "                raise not_found()\n",
      "a user refused another user's connection learns nothing of whether it exists"),
    M("mgmt_rule_before_credentials", MANAGEMENT,
      "        if method.rule is Rule.PUBLIC:\n",
      "        if method.rule is not Rule.ADMIN:\n",
      "every route but /api/auth asks for credentials"),
    # -- the stream operations' check order (permission, then existence) ----------------------
    M("stream_delete_existence_first", STREAM_COMMANDS,
      "        self.connection.access.queue_delete(name)\n        self._stream_log(name)\n",
      "        self._stream_log(name)\n        self.connection.access.queue_delete(name)\n",
      "stream Delete checks configure permission before the stream exists"),
    M("stream_reader_existence_first", STREAM_COMMANDS,
      "        self.connection.access.read_queue(name)\n        return self._stream_log(name)\n\n"
      "    def stream_writer",
      "        log = self._stream_log(name)\n        self.connection.access.read_queue(name)\n"
      "        return log\n\n    def stream_writer",
      "stream Subscribe checks read permission before the stream exists"),
    M("stream_writer_existence_first", STREAM_COMMANDS,
      "        self.connection.access.write_queue(name)\n        if taken:",
      "        self._stream_log(name)\n        self.connection.access.write_queue(name)\n"
      "        if taken:",
      "stream DeclarePublisher checks write permission before the stream exists"),
    M("stream_writer_taken_after_existence", STREAM_COMMANDS,
      "        if taken:\n            raise PreconditionFailed(f\"publisher already declared on "
      "stream '{name}'\")\n        return self._stream_log(name)\n",
      "        log = self._stream_log(name)\n        if taken:\n            raise "
      "PreconditionFailed(f\"publisher already declared on stream '{name}'\")\n        return log\n",
      "stream DeclarePublisher refuses a publisher id in use before it looks for the stream"),
    M("stream_publish_existence_first", STREAM_COMMANDS,
      "        self.connection.access.write_queue(name)\n        log = self._stream_log(name)\n",
      "        log = self._stream_log(name)\n        self.connection.access.write_queue(name)\n",
      "a stream publish checks write permission before the stream exists"),
    M("stream_query_offset_existence_first", STREAM_COMMANDS,
      "        self.connection.access.read_queue(name)\n"
      "        return self._stream_log(name).offsets.get(reference)\n",
      "        offsets = self._stream_log(name).offsets\n"
      "        self.connection.access.read_queue(name)\n        return offsets.get(reference)\n",
      "stream QueryOffset checks read permission before the stream exists"),
    M("stream_store_offset_existence_first", STREAM_COMMANDS,
      "        self.connection.access.write_queue(name)\n"
      "        self._stream_log(name).store_offset(reference, offset)\n",
      "        log = self._stream_log(name)\n"
      "        self.connection.access.write_queue(name)\n        log.store_offset(reference, offset)\n",
      "stream StoreOffset checks write permission before the stream exists"),
    M("stream_store_offset_needs_read", STREAM_COMMANDS,
      "        self.connection.access.write_queue(name)\n"
      "        self._stream_log(name).store_offset(reference, offset)\n",
      "        self.connection.access.read_queue(name)\n"
      "        self._stream_log(name).store_offset(reference, offset)\n",
      "stream StoreOffset needs write permission (RabbitMQ 3.10.8), not read"),
    M("stream_publisher_sequence_existence_first", STREAM_COMMANDS,
      "        self.connection.access.read_queue(name)\n"
      "        return max(self._stream_log(name).writers.get(reference, 0), 0)\n",
      "        writers = self._stream_log(name).writers\n"
      "        self.connection.access.read_queue(name)\n"
      "        return max(writers.get(reference, 0), 0)\n",
      "stream QueryPublisherSequence checks read permission before the stream exists"),
    M("stream_create_arguments_before_permission", STREAM_COMMANDS,
      "        self.connection.access.queue_declare(self.vhost, name, {})\n"
      "        declared = create_arguments(arguments)\n",
      "        declared = create_arguments(arguments)\n"
      "        self.connection.access.queue_declare(self.vhost, name, {})\n",
      "stream Create checks configure permission before its arguments"),
    # -- streams: sub-entries and osiris' tracking (#37) ---------------------------------------
    M("sub_batch_compressed_records_read", "embroker/model/_stream.py",
      "        if self.compression:\n            return None\n        data, records, pos",
      "        data, records, pos",
      "a compressed sub-batch's records are not the broker's to read"),
    M("sub_batch_skipped_under_3_10_too", STREAM_QUEUE,
      "if chunk.unparsed and (not rabbitmq4 or chunk.malformed):",
      "if chunk.unparsed and chunk.malformed:",
      "RabbitMQ 3.10's AMQP readers crash (541) on a chunk with a compressed sub-batch"),
    M("store_offset_takes_no_offset", "embroker/model/_stream.py",
      "        self.offsets[reference] = offset\n        self._roll()\n",
      "        self.offsets[reference] = offset\n        return\n",
      "a StoreOffset writes a tracking chunk that takes an offset"),
    M("tracking_chunks_sent_to_readers", "embroker/model/_stream.py",
      "if chunk.kind != CHUNK_USER or not chunk_matches(chunk, self.filter):",
      "if not chunk_matches(chunk, self.filter):",
      "no reader is sent a tracking chunk"),
    # -- the adapter kit's destinations (#45) ------------------------------------------------------
    M("subscription_close_keeps_private_queue", "embroker/kit/_destinations.py",
      "            with contextlib.suppress(AMQPError):\n"
      "                self.channel.queue_delete(self.queue)\n",
      "            pass\n",
      "a subscription's private queue (a 1.0 link's, an exchange source's) goes with it"),
    # -- TLS and EXTERNAL (#38) ----------------------------------------------------------------
    M("external_offered_without_tls", "embroker/model/_broker.py",
      'return tuple(m for m in self.auth_mechanisms if m != "EXTERNAL" or tls)',
      "return tuple(self.auth_mechanisms)",
      "EXTERNAL is offered over TLS alone"),
    M("external_dn_in_certificate_order", "embroker/model/_access.py",
      "for key, value in rdn) for rdn in reversed(subject))",
      "for key, value in rdn) for rdn in subject)",
      "EXTERNAL's DN puts the last attribute first, as rabbit_cert_info"),
    M("external_needs_no_user", ACCESS,
      '        refused = None if name in self.users else "credentials"\n',
      '        refused = None\n',
      "EXTERNAL logs in only as an existing user"),
    M("tls_output_unbounded", "embroker/_tls.py",
      "        if not self.flush() or not self.handshaken:\n",
      "        if not self.handshaken:\n",
      "no plaintext is taken while ciphertext waits for the socket"),
    # RabbitMQ's command-line tools (#39): the node's cookie, the registry, what the tools
    # print, the plugins a running node takes, the reader's alarm.
    M("control_port_without_cookie", "embroker/control/_handshake.py",
      "                not hmac.compare_digest(fields[1], expected):\n",
      "                False:\n",
      "the control port refuses a request without the node's cookie"),
    M("registry_takes_a_live_nodes_name", "embroker/control/_registry.py",
      "    if other is not None and other.pid != entry.pid and other.alive:\n",
      "    if False:\n",
      "a live node's name is not taken by another"),
    M("json_formatter_banner", "embroker/control/_ctl.py",
      '                self.options.get("formatter") not in ("json", "csv"):\n',
      '                self.options.get("formatter") not in ("csv",):\n',
      "rabbitmqctl prints no banner with --formatter json"),
    M("disabled_plugin_type_unknown", "embroker/model/_vhost.py",
      '            adjective = "invalid" if type_ == "" or type_ in self.broker.plugins.retired_types \\\n',
      '            adjective = "invalid" if type_ == "" \\\n',
      "a disabled plugin's exchange type is 'invalid', not 'unknown'"),
    M("alarm_unblocks_connections_never_told", "embroker/amqp091/_connection.py",
      "        if self._told_blocked:\n            self._told_blocked = False\n",
      "        if True:\n            self._told_blocked = False\n",
      "connection.unblocked goes only to the connections told connection.blocked"),
    # -- the adapter kit: login ----------------------------------------------------------------
    M("login_skips_the_success_event", "embroker/kit/_login.py",
      '    if refused is None:\n        _announce(broker, client, mechanism, user)\n        return user\n',
      '    if refused is None:\n        return user\n',
      "every protocol's successful login emits user.authentication.success (the kit's login)"),
    # -- connection kinds ----------------------------------------------------------------------
    M("registered_kind_not_told_of_alarms", "embroker/_listener_node.py",
      "            if client.protocol.kind.alarm_blocking is AlarmBlocking.PUBLISHERS:\n",
      "            if client.protocol.kind.name.startswith(\"AMQP\") and \\\n"
      "                    client.protocol.kind.alarm_blocking is AlarmBlocking.PUBLISHERS:\n",
      "every broker connection of every port kind is told of an alarm (not only AMQP's)"),
    M("kind_user_connection_limit_ignored", "embroker/model/_broker.py",
      "                if kind.user_connection_limit:\n",
      "                if (details or {}).get(\"protocol\") != \"stream\":\n",
      "a connection kind's user_connection_limit decides whether max-connections applies"),
    # The model's operations in place of the surfaces' workarounds (#45).
    M("publish_outcome_ignored", "embroker/amqp10/_incoming.py",
      "        if not published.routed:\n            return _RELEASED\n",
      "",
      "an AMQP 1.0 transfer that reached no queue is released (the model's publish outcome)"),
    # -- STOMP (#46): the kit's and the model's rules it stands on, and its own order -----------
    M("direct_connect_checks_the_vhost_after_the_login", "embroker/kit/_login.py",
      "    try:\n        host.policies.check_connection_limit(user)\n"
      "    except NotAllowed as refused:\n        raise DirectRefused(\"vhost limit\", user, "
      "refused.text) from None\n",
      "",
      "a direct connection (STOMP's) checks the vhost and its connection limit before the "
      "login"),
    M("topic_read_permission_never_asked", "embroker/model/_access.py",
      "            self._access.check_topic(self.user, self.vhost, exchange, routing_key, "
      "\"read\",\n",
      "            return None and self._access.check_topic(self.user, self.vhost, exchange, "
      "routing_key, \"read\",\n",
      "a STOMP /topic subscription asks the topic permission read first"),
    M("stomp_deliveries_before_the_receipt", "embroker/stomp/_connection.py",
      "        if self._handling:\n            self._deferred.append(data)\n",
      "        if False:\n            self._deferred.append(data)\n",
      "the messages a STOMP frame causes are delivered after its receipt"),
    M("stomp_send_receipt_before_its_confirm", "embroker/stomp/_commands.py",
      "        if receipt is not None:  # (its confirm is among those of this read: "
      "_flush_receipts)\n            self._receipts[outcome.seq] = receipt\n",
      "",
      "a STOMP SEND's receipt is sent once its publish is confirmed"),
    M("stomp_durable_subscription_named_at_random", "embroker/stomp/_mapping.py",
      "    if subscription_id is None:\n",
      "    if True:\n",
      "a durable STOMP subscription's queue is named from its key and id, the same on every "
      "connection"),
    # -- MQTT (#47): the model's session stores and the plugin's own rules --------------------
    M("client_id_registry_keeps_both", "embroker/model/_sessions.py",
      "        if held is not None and held[0] is not owner:\n            held[1](notice)\n",
      "        if held is not None and held[0] is not owner:\n            pass\n",
      "a second MQTT connection with a client id in use closes the first"),
    M("retained_message_never_cleared", "embroker/model/_sessions.py",
      "        if message.payload:\n            self._by_topic[message.topic] = message\n"
      "        else:\n            self._by_topic.pop(message.topic, None)\n",
      "        self._by_topic[message.topic] = message\n",
      "an empty retained MQTT publish clears its topic"),
    M("mqtt_qos_2_granted", "embroker/mqtt/_connection.py",
      "            qos = min(asked, 1)\n            queue = self._ensure_queue(qos)\n",
      "            qos = asked\n            queue = self._ensure_queue(min(qos, 1))\n",
      "a QoS 2 MQTT subscription is granted QoS 1, as RabbitMQ 3.10"),
    M("mqtt_will_sent_after_disconnect", "embroker/mqtt/_connection.py",
      "    def _on_disconnect(self, packet: Disconnect) -> None:\n        self._will = None\n",
      "    def _on_disconnect(self, packet: Disconnect) -> None:\n        self._send_will()\n",
      "an MQTT will goes out when the client vanishes, not after DISCONNECT"),
    M("mqtt5_no_local_ignored", "embroker/mqtt/_v5.py",
      "        if matched and all(sub.no_local for sub in matched):\n",
      "        if False:\n",
      "an MQTT 5 No Local subscription does not get its own client's publishes"),
    M("mqtt5_retain_as_published_ignored", "embroker/mqtt/_v5.py",
      "    retain = kept is not None and kept.retain and \\\n",
      "    retain = False and \\\n",
      "an MQTT 5 Retain As Published subscription gets the RETAIN flag as published"),
    M("mqtt5_topic_alias_out_never_reused", "embroker/mqtt/_v5.py",
      "    if alias is not None:\n        return \"\", replace(props or _NO_PROPERTIES, "
      "topic_alias=alias)\n",
      "",
      "a topic the broker gave an alias is sent as its alias alone"),
    # -- the cluster (#48): nodes, placement, node stop ---------------------------------------
    M("down_queue_reachable", "embroker/model/_vhost.py",
      "        if queue.down:\n            raise self.unreachable(queue)\n        if self.across(",
      "        if self.across(",
      "a durable classic queue whose home node is stopped is refused with 404 'home node ... "
      "is down or inaccessible'"),
    M("down_queue_routed", "embroker/model/_channel.py",
      "                      if not queue.down and not vhost.across(queue, node)]\n",
      "                      if not vhost.across(queue, node)]\n",
      "a publish to a queue whose node is stopped reaches nothing"),
    M("quorum_leader_stays_on_a_stopped_node", "embroker/model/_cluster.py",
      "        queue.placement = Placement(running[0], members, placement.term + 1)\n",
      "        pass\n",
      "a quorum queue led by a stopped node is led by a running member while it has a "
      "majority"),
    M("quorum_leader_without_a_majority", "embroker/model/_cluster.py",
      "    running = [n for n in members if n.running and majority(members, n)]\n",
      "    running = [n for n in members if n.running]\n",
      "a quorum queue without a majority of its members running has no leader"),
    M("partition_classic_queue_reachable_across", "embroker/model/_vhost.py",
      "        return viewer is not None and not queue.type.replicated and (",
      "        return False and not queue.type.replicated and (",
      "a classic queue homed across a partition is down for the other side's clients"),
    M("partition_transient_queue_down_not_gone", "embroker/model/_vhost.py",
      "            if queue.durable and queue.exclusive_owner is None:\n                raise "
      "self.unreachable(queue)\n            raise self.missing(",
      "            if True:\n                raise self.unreachable(queue)\n            raise "
      "self.missing(",
      "a transient classic queue across a partition is gone ('no queue') for the other side"),
    M("partition_quorum_consumer_across_served", "embroker/model/_partition.py",
      "            queue.suspect(consumer)\n", "            pass\n",
      "a quorum consumer cut off from its queue's leader is served nothing (suspected)"),
    M("partition_classic_consumer_across_kept", "embroker/model/_partition.py",
      "            consumer.channel.cancel_by_broker(consumer)\n", "            pass\n",
      "a classic queue's consumer across a partition is cancelled"),
    M("partition_heals_classic_queues_at_once", "embroker/model/_partition.py",
      "        self._cut.clear()\n", "        self._cut.clear()\n        self._uncounted.clear()\n",
      "after a partition heals (ignore) the nodes keep not counting each other until one "
      "restarts"),
    M("quorum_takes_global_qos", QUEUE_TYPE,
      "        self.check_consume_arguments(queue, arguments)\n        if global_prefetch:\n",
      "        self.check_consume_arguments(queue, arguments)\n        if False:\n",
      "a quorum queue refuses a consumer on a channel with global qos (540)"),
    M("consumer_argument_of_another_type_taken", QUEUE_TYPE,
      "            if key in others:\n", "            if False:\n",
      "a consumer argument another queue type takes and this one does not is a 406"),
    M("restart_drops_quorum_transient_messages", "embroker/model/_vhost.py",
      "                if queue.type.keeps_every_message:\n                    continue\n", "",
      "a restart keeps a quorum queue's transient messages"),
    M("classic_queue_placed_anywhere", "embroker/model/_queue_type.py",
      "        home = local\n",
      "        home = nodes[-1]\n",
      "a classic queue lives on the node that declared it"),
    # -- the WebSocket carrier -----------------------------------------------------------------
    # -- the hot paths' shortcuts (issue #49): each gives what the general code gives ----------
    M("repeated_publish_decoded_on_channel_zero", "embroker/amqp091/_assembly.py",
      "if channel and payload == self._last_payload:",
      "if payload == self._last_payload:",
      "a method frame on channel 0 is refused even when it repeats the last publish"),
    M("repeated_method_decoded_from_a_stale_cache", "embroker/amqp091/_assembly.py",
      "                                self._last_payload, self._last_content = payload, method",
      "                                self._last_payload, self._last_content = payload, method\n"
      "                                self._last_payload = payload[:-1] + bytes([payload[-1] ^ 1])",
      "a publish that differs from the last one (in its flags) is decoded afresh"),
    M("no_properties_header_takes_extra_bytes", "embroker/amqp091/_assembly.py",
      "if not flags and end == pos + 21:",
      "if not flags and end >= pos + 21:",
      "a content header with bytes after a zero flag word is a syntax error (502)"),
    M("unmade_decision_loses_its_history", "embroker/model/_trace.py",
      "                decision._events = events\n",
      "",
      "a decision made late shares the events its message recorded before"),
    M("unmade_decision_keeps_a_large_message_out_of_the_budget", "embroker/model/_trace.py",
      "        if (len(message.body) >= self.LARGE_BODY or (properties",
      "        if (False and len(message.body) >= self.LARGE_BODY or (properties",
      "a large routed message counts against the trace's byte budget at once"),
    M("unmade_decisions_read_out_of_order", "embroker/model/_trace.py",
      "            fields.reverse()\n",
      "",
      "decisions made late keep their publish order"),
    M("deliver_tail_kept_across_exchanges", "embroker/amqp091/_connection.py",
      "if tail[1] != routing_key or tail[0] != exchange or tail[2] is None:",
      "if tail[1] != routing_key or tail[2] is None:",
      "a delivery from another exchange with the same routing key names its own exchange"),
    M("deliver_head_kept_across_consumers", "embroker/amqp091/_connection.py",
      "if head[0] != consumer_tag or head[1] is None:",
      "if head[1] is None:",
      "each delivery names its own consumer's tag"),
    M("idle_tick_deadline_kept_after_a_read", "embroker/_listener_loop.py",
      "        client.tick_at = 0.0  # (what it read may move its deadlines: _tick looks again)\n",
      "",
      "a connection the heartbeat look passes by is looked at again once it reads"),
    M("idle_tick_deadline_kept_after_a_write", "embroker/_listener_loop.py",
      "        client.tick_at = 0.0  # (as _read: what it writes moves its heartbeat's deadline)\n",
      "",
      "a connection the heartbeat look passes by is looked at again once it writes (a close "
      "the broker sends it has a timeout)"),
    M("sampler_repeat_noted_after_a_late_tick", "embroker/management/_samples.py",
      "            if row == self.row and ts - self.at == step:",
      "            if row == self.row:",
      "a sample after missed ticks is added at once: the missed slots take the value before it"),
    M("sampler_noted_run_added_as_one_sample", "embroker/management/_samples.py",
      "                bucket.carry(self.at)",
      "                bucket.add(self.at, self.row)",
      "the samples only noted fill every slot that fell due, each with the run's value"),
    M("topic_trie_chain_not_merged_after_removal", EXCHANGE,
      "        while path:\n            children = node.children\n",
      "        while False:\n            children = node.children\n",
      "removing a pattern leaves the trie as adding the others afresh would make it"),
    M("topic_trie_tail_star_takes_no_literal_star", EXCHANGE,
      '                if key_word == "*":',
      "                if False:",
      "a key whose word is a literal '*' matches a pattern's '*' twice, as the trie of a node "
      "per word matched it"),
    M("binding_piece_kept_after_removal", EXCHANGE,
      "            self._frozen[index] = None\n",
      "",
      "a snapshot after an unbind no longer holds the binding (its piece is taken anew)"),
    M("binding_piece_kept_after_addition", EXCHANGE,
      "        self._frozen[-1] = None\n",
      "",
      "a snapshot after a bind holds the new binding"),
    M("websocket_oversized_message_passed_on", "embroker/_websocket.py",
      "                if len(self._message) + len(piece) > limit:\n",
      "                if False:\n",
      "a WebSocket message over max_message is refused with close 1009, the inner connection "
      "sees none of it"),
]


# --------------------------------------------------------------------------------------------
# Running them


def copy_checkout(dest: Path, tests_from: str | None) -> None:
    """The checkout's files as they are on disk (tracked and untracked, not ignored) into
    ``dest``; with ``tests_from``, ``tests/`` as it was at that commit instead."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if tests_from and name.startswith("tests/"):
            continue
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    if tests_from:
        archive = subprocess.run(["git", "archive", tests_from, "tests"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


@dataclass
class Outcome:
    status: str  # "killed", "survived", "stale"
    seconds: float
    detail: str  # the first failing test, or why stale


def _default_sigint() -> None:
    """Started in the background from a shell, this script inherits SIGINT ignored, and so would
    the tests' subprocesses (a test that stops ``embroker serve`` with SIGINT would hang)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_tests(copy: Path, tests: list[str]) -> tuple[int | None, str, float]:
    """(pytest's exit status or None on timeout, its output, seconds) in ``copy``, offline."""
    env = {k: v for k, v in os.environ.items() if k != "EMBROKER_REFERENCE_URL"}
    env["PYTHONPATH"] = os.pathsep.join([str(copy), str(copy / "pytest_plugin")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    shutil.rmtree(copy / ".hypothesis", ignore_errors=True)  # no examples saved by a mutant
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "--no-header", "-p", "no:cacheprovider",
             *tests], check=False, cwd=copy, env=env, capture_output=True, text=True,
            timeout=TIMEOUT_SECONDS, preexec_fn=_default_sigint)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return None, out, time.monotonic() - start
    return done.returncode, done.stdout + done.stderr, time.monotonic() - start


_FIRST_FAILURE = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


def first_failure(output: str) -> str:
    m = _FIRST_FAILURE.search(output)
    if m:
        return m.group(1)
    tail = [line for line in output.splitlines() if line.strip()]
    return tail[-1] if tail else "(no output)"


def run_mutant(copy: Path, mutation: Mutation, tests: list[str]) -> Outcome:
    path = copy / mutation.file
    original = path.read_text(encoding="utf-8")
    try:
        mutated = mutation.apply(original)
    except StaleMutation as exc:
        return Outcome("stale", 0.0, str(exc))
    path.write_text(mutated, encoding="utf-8")
    try:
        status, output, seconds = run_tests(copy, tests)
    finally:
        path.write_text(original, encoding="utf-8")
    if status is None:
        return Outcome("killed", seconds, f"timeout after {TIMEOUT_SECONDS} s")
    if status == 0:
        return Outcome("survived", seconds, "")
    return Outcome("killed", seconds, first_failure(output))


def selected(patterns: list[str]) -> list[Mutation]:
    if not patterns:
        return list(MUTATIONS)
    names = [m.name for m in MUTATIONS]
    unknown = [p for p in patterns if not fnmatch.filter(names, p)]
    if unknown:
        raise SystemExit(f"no mutation called {', '.join(unknown)} (see --list)")
    return [m for m in MUTATIONS if any(fnmatch.fnmatchcase(m.name, p) for p in patterns)]


def list_mutations(mutations: list[Mutation]) -> int:
    stale = 0
    for m in mutations:
        try:
            m.apply((ROOT / m.file).read_text(encoding="utf-8"))
            state = "ok   "
        except StaleMutation:
            state = "STALE"
            stale += 1
        print(f"{state} {m.name:<48} {m.file:<34} {m.rule}")
    print(f"{len(mutations)} mutations, {stale} stale")
    return 2 if stale else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/mutate.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="mutations (names or shell patterns)")
    parser.add_argument("--list", action="store_true", help="list the mutations and stop")
    parser.add_argument("--tests", nargs="+", default=list(DEFAULT_TESTS), metavar="PATH",
                        help=f"what each mutant runs (default: {' '.join(DEFAULT_TESTS)})")
    parser.add_argument("--tests-from", metavar="COMMIT",
                        help="run the tests/ folder as it was at COMMIT (the code as it is)")
    args = parser.parse_args(argv)
    mutations = selected(args.names)
    if args.list:
        return list_mutations(mutations)

    with tempfile.TemporaryDirectory(prefix="embroker-mutate-") as tmp:
        copy = Path(tmp)
        copy_checkout(copy, args.tests_from)
        suite = f"{' '.join(args.tests)}" + (f" (tests/ of {args.tests_from})"
                                              if args.tests_from else "")
        print(f"suite: {suite}; the unmutated copy first", flush=True)
        status, output, seconds = run_tests(copy, args.tests)
        if status != 0:
            print(output[-3000:])
            print(f"the unmutated suite does not pass (status {status}): fix that first")
            return 2
        print(f"unmutated: passes in {seconds:.0f} s", flush=True)
        outcomes: dict[str, Outcome] = {}
        for m in mutations:
            outcome = outcomes[m.name] = run_mutant(copy, m, args.tests)
            print(f"{outcome.status:<8} {m.name:<48} {outcome.seconds:5.0f} s  {outcome.detail}",
                  flush=True)

    counts = {s: sum(1 for o in outcomes.values() if o.status == s)
              for s in ("killed", "survived", "stale")}
    print(f"\n{len(mutations)} mutants: {counts['killed']} killed, {counts['survived']} survived,"
          f" {counts['stale']} stale")
    for m in mutations:
        if outcomes[m.name].status == "survived":
            print(f"  survived: {m.name} ({m.file}): {m.rule}")
    if counts["stale"]:
        return 2
    return 1 if counts["survived"] else 0


if __name__ == "__main__":
    sys.exit(main())
