"""``rabbitmq-queues`` for embroker nodes: RabbitMQ 3.10.8's commands for quorum queues'
membership and leadership (deps/rabbitmq_cli/lib/rabbitmq/cli/queues/commands/), with their
banners, tables, JSON and refusals, over :mod:`._queue_ops` on the node.

The command line is read as ``rabbitmqctl``'s (:mod:`._ctl`: ``-n``, ``-q``, ``-s``,
``--formatter``...); the commands register in its table under the tool ``rabbitmq-queues``
(``quorum_status`` and the two ``check_if_node_is_*`` health checks under
``rabbitmq-diagnostics`` too, as their ``scopes/0`` say).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from typing import Any

from .._untrusted import json_dumps, json_text
from ._ctl import APP_STOPPED, COMMANDS, Invocation, UsageError, command, usage_text
from ._format import json_rows, pretty_table, table_rows
from ._protocol import EX_UNAVAILABLE, EX_USAGE, ControlError

__all__: list[str] = []

_QUEUES = ("rabbitmq-queues",)
_BOTH = ("rabbitmq-queues", "rabbitmq-diagnostics")
#: quorum_status' columns (``rabbit_quorum_queue:status/2``).
STATUS_COLUMNS = ("Node Name", "Raft State", "Log Index", "Commit Index", "Snapshot Index",
                  "Term", "Machine Version")
#: The table grow and shrink print (grow_command.ex, shrink_command.ex).
RESULT_COLUMNS = ("vhost", "name", "size", "result")
#: rebalance's summary (``rabbit_amqqueue:maybe_migrate/3``).
REBALANCE_COLUMNS = ("Node name", "Number of quorum queues",
                     "Number of replicated classic queues")


def _running(inv: Invocation) -> None:
    """RequiresRabbitAppRunning: a validation failure (exit 64) when the node's app is stopped:
    RabbitMQ's line, the arguments given and the command's usage."""
    if not inv.ask("await_startup"):
        raise ControlError(f"Error: {APP_STOPPED}\nArguments given:\n\t{' '.join(inv.given)}\n"
                           + usage_text(inv.tool, COMMANDS[inv.command]).rstrip("\n"),
                           EX_USAGE, plain=True)


def _json(inv: Invocation, value: Any) -> None:
    """A map as the JSON formatter writes an Elixir map: keys in order."""
    print(json_dumps(value, separators=(",", ":"), sort_keys=True), file=inv.out)


#: Where RabbitMQ 3.10.8's function crashes on a stream (``rabbit_quorum_queue.erl``: its
#: ``case`` on the queue's type has no clause for one), as the crash's stack names it.
_CRASHES = {"quorum_status": ("status", 2, 990), "add_member": ("add_member", 4, 1043),
            "delete_member": ("delete_member", 3, 1103)}


def _refused(inv: Invocation, answer: Any, operation: str, classic: str) -> None:
    """Print a refusal the node answered (``{"error": reason}``) as RabbitMQ's tool does
    (exit 69): the command's own text for a classic queue, the reason's atom bare
    (``not_found``, ``node_not_running``, ``last_node``), and for a stream the ``case_clause``
    RabbitMQ's function crashes with (its queue record elided: ``...``)."""
    reason = answer["error"]
    if reason == "classic_queue_not_supported":
        text = classic
    elif reason == "stream_queue_not_supported":
        function, arity, line = _CRASHES[operation]
        resource = f'{{:resource, "{inv.vhost}", :queue, "{inv.arguments[0]}"}}'
        text = (f"{{{{:case_clause, {{:ok, {{:amqqueue, {resource}, ...}}}}}}, "
                f"[{{:rabbit_quorum_queue, :{function}, {arity}, [file: "
                f"'rabbit_quorum_queue.erl', line: {line}]}}]}}")
    else:
        text = reason
    raise ControlError(f"Error:\n{text}", EX_UNAVAILABLE, plain=True)


def _pretty(inv: Invocation, columns: tuple[str, ...], rows: list[list[Any]]) -> None:
    if inv.options.get("formatter") == "json":
        print(json_rows(columns, rows), file=inv.out)
        return
    print(pretty_table(columns, rows), end="", file=inv.out)


def _table(inv: Invocation, columns: tuple[str, ...], rows: list[list[Any]]) -> None:
    """The Table formatter: a header and tab-separated rows; an empty line for no rows (the
    JSON formatter: ``[]``)."""
    if inv.options.get("formatter") == "json":
        print(json_rows(columns, rows) if rows else "[]", file=inv.out)
        return
    headers = not (inv.options.get("silent") or inv.options.get("no_table_headers"))
    for line in table_rows(columns, rows, headers=headers) or [""]:
        print(line, file=inv.out)


def _atom(name: str) -> str:
    """An atom as Elixir's ``inspect`` writes it: ``:rabbit@host``, ``:"rabbit-2@host"``."""
    return f":{name}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_@]*[?!]?", name) else f':"{name}"'


def _cell(value: Any) -> Any:
    return "" if value is None else value


@command("quorum_status", "quorum_status [--vhost <vhost>] <queue>", (1, 1), _BOTH,
         timeout=False)
def _quorum_status(inv: Invocation) -> None:
    _running(inv)
    queue = inv.arguments[0]
    inv.say(f"Status of quorum queue {queue} on node {inv.node} ...")
    answer = inv.ask("quorum_status", vhost=inv.vhost, queue=queue)
    if "error" in answer:
        _refused(inv, answer, "quorum_status", "Cannot get quorum status of a classic queue")
    _pretty(inv, STATUS_COLUMNS, [[_cell(m[c]) for c in STATUS_COLUMNS]
                                  for m in answer["members"]])


def _member_change(operation: str, classic_text: str) -> Callable[[Invocation], None]:
    """add_member's or delete_member's run: its banner, the node's change, ``ok`` in JSON."""
    def run(inv: Invocation) -> None:
        _running(inv)
        queue, node = inv.arguments
        if operation == "add_member":
            inv.say(f"Adding a replica for queue {queue} on node {node}...")
        else:
            inv.say(f"Removing a replica of queue {queue} on node {node}...")
        answer = inv.ask(operation, vhost=inv.vhost, queue=queue, node=node)
        if "error" in answer:
            _refused(inv, answer, operation, classic_text)
        if inv.options.get("formatter") == "json":
            _json(inv, {"result": "ok", "node": inv.node})
    return run


command("add_member", "add_member [--vhost <vhost>] <queue> <node>", (2, 2), _QUEUES)(
    _member_change("add_member", "Cannot add members to a classic queue"))
# (delete_member_command.ex says "add" too)
command("delete_member", "delete_member [--vhost <vhost>] <queue> <node>", (2, 2), _QUEUES,
        timeout=False)(
    _member_change("delete_member", "Cannot add members to a classic queue"))


def _result(error: str | None) -> str:
    """A grow's or shrink's result column (format_result/1)."""
    if error is None:
        return "ok"
    if error == "last_node":
        return "error: the last node cannot be removed"
    return f"error: {error}"


@command("grow", "grow <node> <all | even> [--vhost-pattern <pattern>] "
         "[--queue-pattern <pattern>]", (2, 2), _QUEUES, timeout=False)
def _grow(inv: Invocation) -> None:
    node, strategy = inv.arguments
    if strategy not in ("all", "even"):  # (RabbitMQ's tool prints this reason quoted)
        raise UsageError(f"\"strategy '{strategy}' is not recognised.\"")
    _running(inv)
    inv.say(f"Growing {strategy} quorum queues on {node}...")
    found = inv.ask("grow", node=node, strategy=strategy,
                    vhost_pattern=str(inv.options.get("vhost_pattern", ".*")),
                    queue_pattern=str(inv.options.get("queue_pattern", ".*")))
    if inv.options.get("errors_only"):
        # (grow_command.ex keeps the results matching {:errors, _, _}, which none is)
        found = []
    _table(inv, RESULT_COLUMNS, [[r["vhost"], r["name"], r["size"],
                                  _result(r["error"])] for r in found])


@command("shrink", "shrink <node> [--errors-only]", (1, 1), _QUEUES, timeout=False)
def _shrink(inv: Invocation) -> None:
    _running(inv)
    node = inv.arguments[0]
    inv.say(f"Shrinking quorum queues on {node}...")
    found = inv.ask("shrink", node=node)
    for failed in (r for r in found if r["error"] is not None):
        # (the node's warning, which reaches the tool's stderr: rabbit_quorum_queue:shrink_all/1)
        stamp = datetime.datetime.now().strftime("%H:%M:%S.%f")[:12]
        print(f"\n{stamp} [warning] queue '{json_text(failed['name'])}' in vhost "
              f"'{json_text(failed['vhost'])}': "
              f"failed to remove member (replica) on node {_atom(node)}, error: "
              f":{failed['error']}",
              file=inv.err)
    if inv.options.get("errors_only"):
        found = [r for r in found if r["error"] is not None]
    _table(inv, RESULT_COLUMNS, [[r["vhost"], r["name"], r["size"],
                                  _result(r["error"])] for r in found])


@command("check_if_node_is_quorum_critical", "check_if_node_is_quorum_critical", (0, 0), _BOTH)
def _check_if_node_is_quorum_critical(inv: Invocation) -> int | None:
    """A failed health check (``{:error, :check_failed, ...}``, rabbitmqctl.ex's
    format_error/3): exit 69, its text (or JSON) on stderr with no ``Error:``, nothing with
    ``-s``."""
    _running(inv)
    inv.say(f"Checking if node {inv.node} is critical for quorum of any quorum queues ...")
    found = inv.ask("quorum_critical")
    json = inv.options.get("formatter") == "json"
    if found == "single_node_cluster":
        if json:
            _json(inv, {"result": "ok", "message": "Target node seems to be the only one in a "
                        "single node cluster, the check does not apply"})
        elif not inv.options.get("silent"):
            print(f"Node {inv.node} seems to be the only one in a single node cluster, the "
                  "check does not apply", file=inv.out)
        return None
    if not found:
        if json:
            _json(inv, {"result": "ok"})
        elif not inv.options.get("silent"):
            print(f"Node {inv.node} reported no quorum queues with minimum quorum",
                  file=inv.out)
        return None
    if json:
        print(json_dumps({"result": "error", "queues": found, "message": f"Node {inv.node} "
                          "reported local queues with minimum online quorum"},
                         separators=(",", ":"), sort_keys=True), file=inv.err)
    elif not inv.options.get("silent"):
        print("\n".join(f"{q['readable_name']} would lose quorum if node {inv.node} is stopped"
                        for q in found), file=inv.err)
    return EX_UNAVAILABLE


@command("check_if_node_is_mirror_sync_critical", "check_if_node_is_mirror_sync_critical",
         (0, 0), _BOTH)
def _check_if_node_is_mirror_sync_critical(inv: Invocation) -> None:
    """embroker's classic queues are never mirrored: none can be critical."""
    _running(inv)
    inv.say(f"Checking if node {inv.node} is critical for data safety of any classic "
            "mirrored queues ...")
    single = inv.ask("single_node_cluster")
    if inv.options.get("formatter") == "json":
        _json(inv, {"result": "ok", "message": "Target node seems to be the only one in a "
                    "single node cluster, the check does not apply"} if single
              else {"result": "ok"})
    elif not inv.options.get("silent"):
        print(f"Node {inv.node} seems to be the only one in a single node cluster, the check "
              "does not apply" if single else f"Node {inv.node} reported no classic mirrored "
              "queues without online synchronised mirrors", file=inv.out)


#: The types rebalance takes (3.10.8's: no streams).
_REBALANCE_TYPES = ("all", "classic", "quorum")


@command("rebalance", "rebalance < all | classic | quorum > [--vhost-pattern <pattern>] "
         "[--queue-pattern <pattern>]", (1, 1), _QUEUES, timeout=False)
def _rebalance(inv: Invocation) -> None:
    kind = inv.arguments[0]
    if kind not in _REBALANCE_TYPES:  # (validate/2's {:error, ...}: 69; 3.10 has no streams')
        raise ControlError(f"Error:\ntype {kind} is not supported. Try one of all, classic, "
                           "quorum.", EX_UNAVAILABLE, plain=True)
    _running(inv)
    # (banner/2's clauses match atoms, the tool passes the type as a string: the last one)
    inv.say(f"Re-balancing leaders of {kind} queues...")
    found = inv.ask("rebalance", type=kind,
                    vhost_pattern=str(inv.options.get("vhost_pattern", ".*")),
                    queue_pattern=str(inv.options.get("queue_pattern", ".*")))
    if inv.options.get("formatter") == "json":  # (DefaultOutput's {:ok, value}: proplists)
        _json(inv, {"node": inv.node, "result": "ok", "value": [
            [[c, r[c]] for c in REBALANCE_COLUMNS] for r in found]})
    elif found:
        _pretty(inv, REBALANCE_COLUMNS, [[r[c] for c in REBALANCE_COLUMNS] for r in found])
    else:  # (an empty list is no stream: PrettyTable's format_output/2 of [])
        print(pretty_table(("Output",), [["[]"]]), end="", file=inv.out)
