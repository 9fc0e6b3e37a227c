# ruff: noqa: E501  (a recording script: its case tables read best a line each)
"""Record what RabbitMQ 3.10.8's command-line tools print, as golden files.

Run against a live RabbitMQ 3.10.8 node (rabbit@localhost, AMQP on 127.0.0.1:5672,
management on 15672) whose tools (rabbitmqctl, rabbitmq-plugins, rabbitmq-diagnostics)
work for the current user:

    python tests/control/record_golden.py            # re-record every case
    python tests/control/record_golden.py list_      # only cases whose name contains "list_"

Every case becomes tests/control/golden/<tool>/<case>.json with the keys
argv (tool name first), exit, stdout, stderr and notes.  The tools run with stdin from
/dev/null and stdout/stderr as pipes (as a script runs them): ANSI escapes stay as the
tools print them in that situation.

The node may be shared: the script only creates objects of its own (vhost ctl-golden,
users ctl-golden-*, global parameter ctl-golden-gp), never touches guest, the default
vhost "/", alarms or watermarks (the watermark commands are only given invalid values or
the value the node already has), and removes its objects at the end, also on failure.
See golden/README.md for the state in words.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pika

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"

VHOST = "ctl-golden"
ADMIN = "ctl-golden-admin"
PLAIN = "ctl-golden-plain"
MULTI = "ctl-golden-multi"
TEMP_USER = "ctl-golden-temp"
PASSWORDS = {ADMIN: "admin-pw", PLAIN: "plain-pw", MULTI: "multi-pw"}
GLOBAL_PARAM = "ctl-golden-gp"
CONN_NAME = "ctl-golden-conn"
CONSUMER_TAG = "ctl-golden-consumer"
MISSING_NODE = "nosuchnode@localhost"

ENV = dict(os.environ)
ENV.pop("COLUMNS", None)
ENV.pop("LINES", None)

ONLY = sys.argv[1] if len(sys.argv) > 1 else None


# ---------------------------------------------------------------------------------------
# running the tools


def run(argv: list[str], timeout: float = 60, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        argv,
        check=False,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        env=ENV,
        timeout=timeout,
    )


def ctl(*args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """rabbitmqctl for setup/teardown (not recorded)."""
    p = run(["rabbitmqctl", *args])
    if check and p.returncode != 0:
        raise RuntimeError(f"rabbitmqctl {' '.join(args)} -> {p.returncode}\n{p.stdout!r}\n{p.stderr!r}")
    return p


def text(b: bytes) -> tuple[str, bool]:
    try:
        return b.decode("utf-8"), False
    except UnicodeDecodeError:
        return b.decode("latin-1"), True


recorded: list[str] = []

# patterns of run-dependent text: (regex, description)
VARIABLE_PATTERNS = [
    (r"<rabbit@[\w.-]+\.\d+\.\d+\.\d+>", "Erlang pids as <node.N.N.N> (table) differ per run"),
    (r"#PID<\d+\.\d+\.\d+>", "Erlang pids as #PID<N.N.N> (json) differ per run"),
    (r"127\.0\.0\.1:\d+ -> 127\.0\.0\.1:5672", "the client's ephemeral port in connection/channel names"),
    (r"rabbitmqcli-\d+-", "the CLI's own node name rabbitmqcli-<N>-<node>"),
    (r"Erlang cookie hash", "the Erlang cookie hash (per machine)"),
    (r"other nodes on", "the list of other Erlang nodes registered with epmd"),
    (r"@vm\b", "the host name 'vm' (short node names are completed with the machine's host name)"),
    (r"^\d\d:\d\d:\d\d\.\d{3} \[", "a log line with a wall-clock timestamp"),
    (r"/tmp/ctl-golden-", "a temporary path"),
    (r"Uptime|uptime", "uptime"),
    (r"rabbitmq-cluster-id-", "the value of internal_cluster_id (seen to change between runs on the shared node)"),
    (r"\b1[6-9]\d{11}\b", "millisecond timestamps (connected_at)"),
]


def auto_notes(s: str) -> list[str]:
    return [desc for rx, desc in VARIABLE_PATTERNS if re.search(rx, s, re.M)]


def case(
    tool: str,
    name: str,
    args: list[str],
    notes: str = "",
    *,
    stdin: bytes | None = None,
    timeout: float = 90,
    only_if: Callable[[], bool] | None = None,
) -> subprocess.CompletedProcess[bytes] | None:
    if ONLY and ONLY not in name and tool != ONLY:
        return None
    if only_if is not None and not only_if():
        print(f"skip {tool}/{name}: precondition not met")
        return None
    argv = [tool, *args]
    p = run(argv, timeout=timeout, stdin=stdin)
    out, out_latin = text(p.stdout)
    err, err_latin = text(p.stderr)
    doc: dict[str, Any] = {
        "argv": argv,
        "exit": p.returncode,
        "stdout": out,
        "stderr": err,
        "notes": notes,
    }
    auto = auto_notes(out + err)
    if auto:
        doc["notes"] = (notes + " " if notes else "") + "Variable: " + "; ".join(auto) + "."
    if stdin is not None:
        doc["stdin"] = stdin.decode()
    if out_latin or err_latin:
        doc["encoding_note"] = "stdout/stderr were not valid UTF-8; decoded as latin-1"
    d = GOLDEN / tool
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    recorded.append(f"{tool}/{name}")
    print(f"{tool}/{name}: exit {p.returncode}")
    return p


def rctl(name: str, args: list[str], notes: str = "", **kw: Any) -> subprocess.CompletedProcess[bytes] | None:
    return case("rabbitmqctl", name, args, notes, **kw)


def plugins(name: str, args: list[str], notes: str = "", **kw: Any) -> subprocess.CompletedProcess[bytes] | None:
    return case("rabbitmq-plugins", name, args, notes, **kw)


def diag(name: str, args: list[str], notes: str = "", **kw: Any) -> subprocess.CompletedProcess[bytes] | None:
    return case("rabbitmq-diagnostics", name, args, notes, **kw)


# ---------------------------------------------------------------------------------------
# the state


class Holder:
    """A pika connection kept open (heartbeat off, never pumped) in vhost ctl-golden:
    one channel, prefetch 1, one consumer on q.classic holding one unacknowledged message."""

    def __init__(self, name: str, consume: bool) -> None:
        params = pika.ConnectionParameters(
            host="127.0.0.1",
            port=5672,
            virtual_host=VHOST,
            credentials=pika.PlainCredentials(ADMIN, PASSWORDS[ADMIN]),
            heartbeat=0,
            client_properties={"connection_name": name},
        )
        self.conn = pika.BlockingConnection(params)
        self.ch = self.conn.channel()
        if consume:
            self.ch.basic_qos(prefetch_count=1)
            self.ch.basic_consume("q.classic", lambda *a: None, auto_ack=False, consumer_tag=CONSUMER_TAG)
        # pumped by its own thread (and only by it, until close()) so that a connection.close
        # from the broker is answered at once: otherwise the connection stays tracked while
        # RabbitMQ waits for close-ok, and close_all_connections counts it again.
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        try:
            while not self.stop.is_set() and self.conn.is_open:
                self.conn.process_data_events(time_limit=0.1)
        except Exception:
            pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        try:
            if self.conn.is_open:
                self.conn.close()
        except Exception:
            pass


def teardown() -> None:
    ctl("delete_vhost", VHOST, check=False)
    for u in (ADMIN, PLAIN, MULTI, TEMP_USER, "ctl-golden-q", "ctl-golden-nopw"):
        ctl("delete_user", u, check=False)
    ctl("clear_global_parameter", GLOBAL_PARAM, check=False)
    for v in ("ctl-golden-new", "ctl-golden-meta", "ctl-golden-escape"):
        ctl("delete_vhost", v, check=False)


def setup() -> Holder:
    teardown()
    ctl("add_vhost", VHOST)
    for u, pw in PASSWORDS.items():
        ctl("add_user", u, pw)
    ctl("set_user_tags", ADMIN, "administrator")
    ctl("set_user_tags", MULTI, "monitoring", "policymaker")
    ctl("set_permissions", "-p", VHOST, ADMIN, ".*", ".*", ".*")
    ctl("set_permissions", "-p", VHOST, PLAIN, "^q\\.", "^ex\\.", "^(q|ex)\\.")
    ctl("set_permissions", "-p", VHOST, MULTI, "", "", ".*")
    ctl("set_topic_permissions", "-p", VHOST, PLAIN, "ex.topic", "^a\\.", "^b\\.")
    ctl("set_topic_permissions", "-p", VHOST, MULTI, "amq.topic", ".*", ".*")
    ctl("set_policy", "-p", VHOST, "--priority", "1", "--apply-to", "queues", "p1", "^q\\.", '{"max-length":100}')
    ctl("set_operator_policy", "-p", VHOST, "--priority", "0", "--apply-to", "queues",
        "op1", "^q\\.args$", '{"max-length":50,"message-ttl":30000}')
    ctl("set_vhost_limits", "-p", VHOST, '{"max-connections":10,"max-queues":20}')
    ctl("set_user_limits", ADMIN, '{"max-connections":5,"max-channels":10}')
    ctl("set_global_parameter", GLOBAL_PARAM, '{"colour":"blue","n":1}')

    params = pika.ConnectionParameters(
        host="127.0.0.1", port=5672, virtual_host=VHOST,
        credentials=pika.PlainCredentials(ADMIN, PASSWORDS[ADMIN]),
        client_properties={"connection_name": "ctl-golden-setup"},
    )
    with pika.BlockingConnection(params) as c:
        ch = c.channel()
        ch.confirm_delivery()
        ch.queue_declare("q.classic", durable=True)
        ch.queue_declare("q.transient", durable=False, auto_delete=False)
        ch.queue_declare("q.args", durable=True, arguments={"x-max-length": 10, "x-message-ttl": 60000})
        ch.queue_declare("q.quorum", durable=True, arguments={"x-queue-type": "quorum"})
        ch.exchange_declare("ex.topic", "topic", durable=True)
        ch.exchange_declare("ex.fanout", "fanout", durable=False, auto_delete=True)
        ch.queue_bind("q.classic", "ex.topic", "classic.#")
        ch.queue_bind("q.quorum", "ex.topic", "quorum.*", arguments={"x-note": "golden", "n": 7})
        ch.exchange_bind("ex.fanout", "ex.topic", "fan.#")
        ch.queue_bind("q.transient", "ex.fanout", "")
        ch.queue_bind("q.args", "ex.fanout", "any key",
                      arguments={"flag": True, "list": [1, "two"], "table": {"k": "v"}})
        persistent = pika.BasicProperties(delivery_mode=2, content_type="text/plain")
        for i in range(1, 4):
            ch.basic_publish("", "q.classic", f"classic message {i}".encode(), persistent)
        for i in range(1, 3):
            ch.basic_publish("ex.topic", "quorum.x", f"quorum message {i}".encode(), persistent)
    holder = Holder(CONN_NAME, consume=True)
    time.sleep(6)  # let queue/connection statistics settle (they are emitted on timers)
    return holder


# ---------------------------------------------------------------------------------------
# the cases

LIST_NOTE = (f"State: see golden/README.md (vhost ctl-golden, held connection '{CONN_NAME}' with one "
             "consumer on q.classic, prefetch 1). Row order is RabbitMQ's (not sorted); compare "
             "rows as a set unless the note says otherwise.")
GLOBAL_NOTE = (" Lists objects of the whole node: on a shared node other work's objects appear "
               "too (rows not named ctl-golden* are not part of the golden state).")

# command -> (vhost scoped, explicit column selections)
LIST_COMMANDS: dict[str, tuple[bool, list[list[str]]]] = {
    "list_queues": (True, [
        ["name", "messages", "consumers", "durable", "arguments", "policy"],
        ["name", "type", "auto_delete", "exclusive", "messages_ready", "messages_unacknowledged",
         "policy", "state"],
    ]),
    "list_exchanges": (True, [["name", "type", "durable", "auto_delete", "internal", "arguments", "policy"]]),
    "list_bindings": (True, [["source_name", "source_kind", "destination_name", "destination_kind",
                              "routing_key", "arguments"]]),
    "list_connections": (False, [["name", "user", "vhost", "state", "channels", "protocol", "client_properties"],
                                 ["user", "vhost", "auth_mechanism", "ssl", "connected_at"]]),
    "list_channels": (False, [["name", "user", "vhost", "number", "consumer_count", "prefetch_count",
                               "messages_unacknowledged", "transactional", "confirm"]]),
    "list_consumers": (True, [["queue_name", "channel_pid", "consumer_tag", "ack_required", "prefetch_count",
                               "active", "activity_status", "arguments"]]),
    "list_users": (False, []),
    "list_vhosts": (False, [["name", "tracing", "cluster_state", "description", "tags", "default_queue_type"]]),
    "list_permissions": (True, []),
    "list_user_permissions": (False, []),
    "list_topic_permissions": (True, []),
    "list_user_topic_permissions": (False, []),
    "list_policies": (True, []),
    "list_operator_policies": (True, []),
    "list_vhost_limits": (True, []),
    "list_user_limits": (False, []),
    "list_parameters": (True, []),
    "list_global_parameters": (False, []),
}

VARIES = {
    "list_connections": "pids, peer_port, connected_at, client_properties' version fields vary",
    "list_channels": "channel pids/names (peer port) vary",
    "list_consumers": "channel_pid varies",
}


def list_cases() -> None:
    for cmd, (scoped, selections) in LIST_COMMANDS.items():
        note = LIST_NOTE + ("" if scoped else GLOBAL_NOTE)
        if cmd in VARIES:
            note += " Variable: " + VARIES[cmd] + "."
        rctl(f"help_{cmd}", ["help", cmd], "Help text: lists the accepted info items (columns).")
        if cmd in ("list_user_permissions", "list_user_topic_permissions"):
            base = [cmd, PLAIN]
            for u in (ADMIN, MULTI):
                rctl(f"{cmd}_{u}", [cmd, u], note)
            rctl(f"{cmd}_missing_user", [cmd, "ctl-golden-nosuch"], "User does not exist.")
        elif cmd == "list_user_limits":
            base = [cmd, "--user", ADMIN]
            rctl(f"{cmd}_all", [cmd], note + " Without --user it lists the limits of user guest (the default user), "
                 "not of all users.")
            rctl(f"{cmd}_{PLAIN}", [cmd, "--user", PLAIN], note + " This user has no limits.")
            rctl(f"{cmd}_missing_user", [cmd, "--user", "ctl-golden-nosuch"], "User does not exist.")
        elif scoped:
            base = [cmd, "-p", VHOST]
            rctl(f"{cmd}_missing_vhost", [cmd, "-p", "ctl-golden-nosuch"], "-p names a vhost that does not exist.")
        else:
            base = [cmd]
        rctl(f"{cmd}", base, note)
        rctl(f"{cmd}_q", [*base, "-q"], note + " -q (quiet).")
        rctl(f"{cmd}_s", [*base, "-s"], note + " -s (silent).")
        rctl(f"{cmd}_no_table_headers", [*base, "--no-table-headers"], note)
        rctl(f"{cmd}_json", [*base, "--formatter", "json"], note)
        rctl(f"{cmd}_q_json", [*base, "-q", "--formatter", "json"], note)
        rctl(f"{cmd}_table", [*base, "--formatter", "table"], note)
        for i, cols in enumerate(selections, 1):
            rctl(f"{cmd}_cols{i}", base + cols, note + " Explicit columns.")
            rctl(f"{cmd}_cols{i}_json", base + cols + ["--formatter", "json"], note + " Explicit columns.")
        if selections or cmd in ("list_users", "list_permissions", "list_policies"):
            rctl(f"{cmd}_unknown_column", [*base, "name", "nosuchcolumn"], "Unknown info item.")
    # formatters other than json/table, on one command each
    q = ["list_queues", "-p", VHOST, "name", "messages", "arguments", "durable"]
    for fmt in ("pretty_table", "csv", "erlang"):
        rctl(f"list_queues_{fmt}", [*q, "--formatter", fmt], LIST_NOTE)
    rctl("list_queues_bogus_formatter", [*q, "--formatter", "bogus"], "Unknown formatter.")
    rctl("list_users_pretty_table", ["list_users", "--formatter", "pretty_table"], LIST_NOTE + GLOBAL_NOTE)
    rctl("list_bindings_csv", ["list_bindings", "-p", VHOST, "--formatter", "csv"], LIST_NOTE)
    rctl("list_queues_all_columns_json",
         ["list_queues", "-p", VHOST, "--formatter", "json", "name", "durable", "auto_delete", "arguments",
          "policy", "pid", "owner_pid", "exclusive", "exclusive_consumer_pid", "exclusive_consumer_tag",
          "messages_ready", "messages_unacknowledged", "messages", "messages_ready_ram",
          "messages_unacknowledged_ram", "messages_ram", "messages_persistent", "message_bytes",
          "message_bytes_ready", "message_bytes_unacknowledged", "message_bytes_ram", "message_bytes_persistent",
          "head_message_timestamp", "disk_reads", "disk_writes", "consumers", "consumer_utilisation",
          "consumer_capacity", "memory", "slave_pids", "synchronised_slave_pids", "state", "type", "leader",
          "members", "online"],
         LIST_NOTE + " Variable: pids, memory, leader/members node, disk_reads/writes.")
    rctl("list_queues_online", ["list_queues", "-p", VHOST, "--online", "name"], LIST_NOTE)
    rctl("list_queues_offline", ["list_queues", "-p", VHOST, "--offline", "name"], LIST_NOTE)
    rctl("list_queues_local", ["list_queues", "-p", VHOST, "--local", "name"], LIST_NOTE)
    rctl("list_queues_timeout", ["list_queues", "-p", VHOST, "-t", "5", "name"], LIST_NOTE + " -t 5.")


ESC_VHOST = "ctl-golden-escape"
ESC_QUEUES = ["q.tab\there", "q.nl\nhere", "q.\u00fc\u00f1\u00ed", 'q."quoted" \\back', "q.comma,semi;"]


def escape_cases() -> None:
    """How names and argument values with special characters are printed."""
    ctl("add_vhost", ESC_VHOST)
    ctl("set_permissions", "-p", ESC_VHOST, ADMIN, ".*", ".*", ".*")
    try:
        # over the management HTTP API: pika 1.x frames a non-ASCII queue name with a wrong
        # length (the broker then waits for bytes that never come)
        for q in ESC_QUEUES:
            http("PUT", f"/api/queues/{ESC_VHOST}/{q}", {"durable": True})
        http("PUT", f"/api/queues/{ESC_VHOST}/q.argtypes", {"durable": True, "arguments": {
            "x-str": "tab\there \"q\" \u00fc", "x-neg": -5, "x-float": 1.5, "x-true": True,
            "x-false": False, "x-empty-list": [], "x-nested": {"a": [1, {"b": "c"}]}}})
        http("PUT", f"/api/exchanges/{ESC_VHOST}/ex.\u00fc tab\t", {"type": "direct", "durable": True})
        http("POST", f"/api/bindings/{ESC_VHOST}/e/ex.\u00fc tab\t/q/q.argtypes",
             {"routing_key": "rk with\ttab", "arguments": {"s": "v\nnl"}})
        time.sleep(2)
        note = ("Vhost ctl-golden-escape: queues " + json.dumps(ESC_QUEUES, ensure_ascii=False)
                + " and q.argtypes (arguments of many AMQP field types), exchange 'ex.\u00fc tab\\t' bound to "
                "q.argtypes with routing key 'rk with\\ttab' and arguments {s: 'v\\nnl'}; all declared over the "
                "management HTTP API (there the newline of 'q.nl\\nhere' is lost: the queue is named 'q.nlhere'). "
                "Integers given in JSON over HTTP become 'long' (pika's become 'signedint'). Compare rows as a set.")
        p = ["-p", ESC_VHOST]
        rctl("escape_list_queues", ["list_queues", *p, "name", "arguments"], note)
        rctl("escape_list_queues_json", ["list_queues", *p, "name", "arguments", "--formatter", "json"], note)
        rctl("escape_list_queues_csv", ["list_queues", *p, "name", "arguments", "--formatter", "csv"], note)
        rctl("escape_list_queues_pretty", ["list_queues", *p, "name", "--formatter", "pretty_table"], note)
        rctl("escape_list_queues_erlang", ["list_queues", *p, "name", "arguments", "--formatter", "erlang"], note)
        rctl("escape_list_exchanges", ["list_exchanges", *p, "name", "type"], note)
        rctl("escape_list_bindings", ["list_bindings", *p], note)
        rctl("escape_list_bindings_json", ["list_bindings", *p, "--formatter", "json"], note)
        rctl("escape_purge_queue", ["purge_queue", *p, "q.tab\there"], note)
        rctl("escape_delete_queue_missing", ["delete_queue", *p, "q.\u00fc-missing"], note)
    finally:
        ctl("delete_vhost", ESC_VHOST, check=False)


def http(method: str, path: str, body: Any) -> None:
    import base64
    import urllib.parse
    import urllib.request

    url = "http://127.0.0.1:15672" + "/".join(urllib.parse.quote(p, safe="") for p in path.split("/"))
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method=method)
    auth = base64.b64encode(f"{ADMIN}:{PASSWORDS[ADMIN]}".encode()).decode()
    req.add_header("Authorization", "Basic " + auth)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as r:
        r.read()


def info_items_summary() -> None:
    """derived/list_info_items.json: the columns each list command accepts (from its help)."""
    items: dict[str, Any] = {}
    for cmd in LIST_COMMANDS:
        f = GOLDEN / "rabbitmqctl" / f"help_{cmd}.json"
        if not f.exists():
            continue
        out = json.loads(f.read_text())["stdout"]
        m = re.search(r"must be one of ([^\n]+)", out)
        items[cmd] = m.group(1).split(", ") if m else None
    (GOLDEN / "derived").mkdir(parents=True, exist_ok=True)
    (GOLDEN / "derived" / "list_info_items.json").write_text(json.dumps(items, indent=2) + "\n")


def user_cases() -> None:
    rctl("add_user", ["add_user", TEMP_USER, "temp-pw"], "Creates ctl-golden-temp (deleted later).")
    rctl("add_user_exists", ["add_user", TEMP_USER, "temp-pw"], "User already exists.")
    rctl("add_user_no_password", ["add_user", "ctl-golden-nopw"],
         "No password argument, stdin is /dev/null. (If it created the user, teardown deletes it.)")
    ctl("delete_user", "ctl-golden-nopw", check=False)
    rctl("add_user_wrong_arity", ["add_user"], "Wrong arity.")
    rctl("change_password", ["change_password", TEMP_USER, "temp-pw2"], "")
    rctl("change_password_missing_user", ["change_password", "ctl-golden-nosuch", "x"], "")
    rctl("authenticate_user_ok", ["authenticate_user", TEMP_USER, "temp-pw2"], "")
    rctl("authenticate_user_wrong_password", ["authenticate_user", TEMP_USER, "wrong"], "")
    rctl("authenticate_user_missing_user", ["authenticate_user", "ctl-golden-nosuch", "x"], "")
    rctl("clear_password", ["clear_password", TEMP_USER], "")
    rctl("set_user_tags", ["set_user_tags", TEMP_USER, "monitoring", "management"], "")
    rctl("set_user_tags_none", ["set_user_tags", TEMP_USER], "No tags: clears them.")
    rctl("set_user_tags_missing_user", ["set_user_tags", "ctl-golden-nosuch", "monitoring"], "")
    rctl("set_user_limits", ["set_user_limits", TEMP_USER, '{"max-connections":3}'], "")
    rctl("set_user_limits_bad_json", ["set_user_limits", TEMP_USER, "{max-connections:3"], "")
    rctl("set_user_limits_unknown_limit", ["set_user_limits", TEMP_USER, '{"max-foo":3}'], "")
    rctl("set_user_limits_missing_user", ["set_user_limits", "ctl-golden-nosuch", '{"max-connections":3}'], "")
    rctl("clear_user_limits", ["clear_user_limits", TEMP_USER, "max-connections"], "")
    rctl("clear_user_limits_all", ["clear_user_limits", TEMP_USER, "all"], "")
    rctl("add_user_q", ["add_user", "-q", "ctl-golden-q", "pw"], "-q on a mutating command (user deleted right after).")
    rctl("delete_user_q", ["delete_user", "-q", "ctl-golden-q"], "")
    rctl("authenticate_user_cleared_password", ["authenticate_user", TEMP_USER, "temp-pw2"],
         "After clear_password.")
    rctl("delete_user", ["delete_user", TEMP_USER], "")
    rctl("delete_user_missing", ["delete_user", TEMP_USER], "User no longer exists.")


def vhost_cases() -> None:
    rctl("add_vhost", ["add_vhost", "ctl-golden-new"], "Creates vhost ctl-golden-new (deleted later).")
    rctl("add_vhost_exists", ["add_vhost", "ctl-golden-new"], "")
    rctl("add_vhost_with_metadata", ["add_vhost", "ctl-golden-meta", "--description", "golden meta",
                                     "--tags", "a,b", "--default-queue-type", "quorum"], "")
    rctl("list_vhosts_meta", ["list_vhosts", "name", "description", "tags", "default_queue_type", "--formatter",
                              "json"], "Includes ctl-golden-meta." + GLOBAL_NOTE)
    rctl("list_vhosts_meta_table", ["list_vhosts", "name", "description", "tags", "default_queue_type"],
         "Includes ctl-golden-meta." + GLOBAL_NOTE)
    ctl("delete_vhost", "ctl-golden-meta", check=False)
    rctl("delete_vhost", ["delete_vhost", "ctl-golden-new"], "")
    rctl("delete_vhost_missing", ["delete_vhost", "ctl-golden-new"], "")
    rctl("set_vhost_limits_other", ["set_vhost_limits", "-p", "ctl-golden-nosuch", '{"max-queues":1}'],
         "Missing vhost.")
    rctl("set_vhost_limits_bad_json", ["set_vhost_limits", "-p", VHOST, "{max-queues"], "")
    rctl("set_vhost_limits_unknown_limit", ["set_vhost_limits", "-p", VHOST, '{"max-foo":1}'], "")
    rctl("set_vhost_limits_negative", ["set_vhost_limits", "-p", VHOST, '{"max-queues":-1}'], "")
    rctl("set_vhost_limits", ["set_vhost_limits", "-p", VHOST, '{"max-connections":10,"max-queues":20}'],
         "Same value as the state's.")
    rctl("clear_vhost_limits_missing_vhost", ["clear_vhost_limits", "-p", "ctl-golden-nosuch"], "")
    rctl("clear_vhost_limits", ["clear_vhost_limits", "-p", VHOST], "Removes the limits; restored right after.")
    rctl("list_vhost_limits_after_clear", ["list_vhost_limits", "-p", VHOST], "")
    ctl("set_vhost_limits", "-p", VHOST, '{"max-connections":10,"max-queues":20}')
    rctl("trace_on", ["trace_on", "-p", VHOST], "")
    rctl("list_vhosts_tracing", ["list_vhosts", "name", "tracing"], "ctl-golden has tracing on." + GLOBAL_NOTE)
    rctl("trace_off", ["trace_off", "-p", VHOST], "")
    rctl("trace_on_missing_vhost", ["trace_on", "-p", "ctl-golden-nosuch"], "")


def permission_cases() -> None:
    rctl("set_permissions", ["set_permissions", "-p", VHOST, PLAIN, "^q\\.", "^ex\\.", "^(q|ex)\\."],
         "Same value as the state's.")
    rctl("set_permissions_missing_user", ["set_permissions", "-p", VHOST, "ctl-golden-nosuch", ".*", ".*", ".*"], "")
    rctl("set_permissions_missing_vhost", ["set_permissions", "-p", "ctl-golden-nosuch", PLAIN, ".*", ".*", ".*"], "")
    rctl("set_permissions_bad_regex", ["set_permissions", "-p", VHOST, PLAIN, "(", ".*", ".*"], "")
    rctl("set_permissions_wrong_arity", ["set_permissions", "-p", VHOST, PLAIN, ".*"], "")
    rctl("clear_permissions_missing_user", ["clear_permissions", "-p", VHOST, "ctl-golden-nosuch"], "")
    rctl("clear_permissions_missing_vhost", ["clear_permissions", "-p", "ctl-golden-nosuch", PLAIN], "")
    rctl("clear_permissions", ["clear_permissions", "-p", VHOST, MULTI], "Restored right after.")
    rctl("clear_permissions_again", ["clear_permissions", "-p", VHOST, MULTI], "User has no permissions now.")
    ctl("set_permissions", "-p", VHOST, MULTI, "", "", ".*")
    rctl("set_topic_permissions", ["set_topic_permissions", "-p", VHOST, PLAIN, "ex.topic", "^a\\.", "^b\\."],
         "Same value as the state's.")
    rctl("set_topic_permissions_missing_user",
         ["set_topic_permissions", "-p", VHOST, "ctl-golden-nosuch", "ex.topic", ".*", ".*"], "")
    rctl("set_topic_permissions_missing_vhost",
         ["set_topic_permissions", "-p", "ctl-golden-nosuch", PLAIN, "ex.topic", ".*", ".*"], "")
    rctl("set_topic_permissions_wrong_arity", ["set_topic_permissions", "-p", VHOST, PLAIN, "ex.topic"], "")
    rctl("clear_topic_permissions_one", ["clear_topic_permissions", "-p", VHOST, MULTI, "amq.topic"],
         "Restored right after.")
    rctl("clear_topic_permissions_all", ["clear_topic_permissions", "-p", VHOST, MULTI],
         "No topic permissions left for that user.")
    rctl("clear_topic_permissions_missing_user",
         ["clear_topic_permissions", "-p", VHOST, "ctl-golden-nosuch"], "")
    rctl("clear_topic_permissions_missing_vhost",
         ["clear_topic_permissions", "-p", "ctl-golden-nosuch", MULTI], "")
    ctl("set_topic_permissions", "-p", VHOST, MULTI, "amq.topic", ".*", ".*")


def policy_cases() -> None:
    p = ["-p", VHOST]
    rctl("set_policy", ["set_policy", *p, "--priority", "1", "--apply-to", "queues", "p1", "^q\\.",
                        '{"max-length":100}'], "Same value as the state's.")
    rctl("set_policy_bad_json", ["set_policy", *p, "p2", "^x", "{max-length"], "")
    rctl("set_policy_unknown_key", ["set_policy", *p, "p2", "^x", '{"no-such-key":1}'], "")
    rctl("set_policy_bad_value", ["set_policy", *p, "p2", "^x", '{"max-length":"ten"}'], "")
    rctl("set_policy_bad_apply_to", ["set_policy", *p, "--apply-to", "things", "p2", "^x", '{"max-length":1}'], "")
    rctl("set_policy_bad_priority", ["set_policy", *p, "--priority", "high", "p2", "^x", '{"max-length":1}'], "")
    rctl("set_policy_missing_vhost", ["set_policy", "-p", "ctl-golden-nosuch", "p2", "^x", '{"max-length":1}'], "")
    rctl("set_policy_wrong_arity", ["set_policy", *p, "p2", "^x"], "")
    rctl("set_policy_new", ["set_policy", *p, "--apply-to", "exchanges", "p2", "^ex\\.",
                            '{"alternate-exchange":"amq.fanout"}'], "Removed right after.")
    rctl("list_policies_two", ["list_policies", *p], "p1 and p2.")
    rctl("clear_policy", ["clear_policy", *p, "p2"], "")
    rctl("clear_policy_missing", ["clear_policy", *p, "p2"], "")
    rctl("set_operator_policy", ["set_operator_policy", *p, "--priority", "0", "--apply-to", "queues", "op1",
                                 "^q\\.args$", '{"max-length":50,"message-ttl":30000}'], "Same value as the state's.")
    rctl("set_operator_policy_not_allowed_key", ["set_operator_policy", *p, "op2", "^x",
                                                 '{"alternate-exchange":"amq.fanout"}'], "")
    rctl("set_operator_policy_apply_to_exchanges", ["set_operator_policy", *p, "--apply-to", "exchanges", "op2",
                                                    "^x", '{"max-length":1}'],
         "Accepted although max-length means nothing for exchanges. Removed right after.")
    rctl("list_operator_policies_two", ["list_operator_policies", *p], "op1 and op2.")
    rctl("clear_operator_policy", ["clear_operator_policy", *p, "op2"], "")
    rctl("clear_operator_policy_missing", ["clear_operator_policy", *p, "op2"], "")
    rctl("set_operator_policy_bad_apply_to", ["set_operator_policy", *p, "--apply-to", "things", "op2", "^x",
                                              '{"max-length":1}'], "")
    rctl("set_operator_policy_bad_json", ["set_operator_policy", *p, "op2", "^x", "{max"], "")
    rctl("set_policy_q", ["set_policy", "-q", *p, "--priority", "1", "--apply-to", "queues", "p1", "^q\\.",
                          '{"max-length":100}'], "-q on a mutating command. Same value as the state's.")
    rctl("set_parameter_unknown_component", ["set_parameter", *p, "federation-upstream", "up1",
                                             '{"uri":"amqp://localhost"}'], "federation plugin not enabled.")
    rctl("clear_parameter_missing", ["clear_parameter", *p, "federation-upstream", "up1"], "")
    rctl("set_global_parameter", ["set_global_parameter", GLOBAL_PARAM, '{"colour":"blue","n":1}'],
         "Same value as the state's.")
    rctl("set_global_parameter_bad_json", ["set_global_parameter", GLOBAL_PARAM, "{colour"], "")
    rctl("clear_global_parameter_missing", ["clear_global_parameter", "ctl-golden-nosuch"], "")


def queue_cases() -> None:
    p = ["-p", VHOST]
    rctl("purge_queue_missing", ["purge_queue", *p, "q.nosuch"], "")
    rctl("purge_queue_empty", ["purge_queue", *p, "q.transient"], "q.transient has 0 messages.")
    rctl("purge_queue_missing_vhost", ["purge_queue", "-p", "ctl-golden-nosuch", "q.classic"], "")
    rctl("delete_queue_missing", ["delete_queue", *p, "q.nosuch"], "")
    rctl("delete_queue_if_unused_in_use", ["delete_queue", *p, "--if-unused", "q.classic"],
         "q.classic has a consumer.")
    rctl("delete_queue_if_empty_not_empty", ["delete_queue", *p, "--if-empty", "q.quorum"],
         "q.quorum has 2 messages.")
    # a scratch queue for success cases
    with admin_channel() as ch:
        ch.queue_declare("q.scratch", durable=True)
        for _i in range(2):
            ch.basic_publish("", "q.scratch", b"x", pika.BasicProperties(delivery_mode=2))
    time.sleep(1)
    rctl("purge_queue", ["purge_queue", *p, "q.scratch"], "q.scratch: 2 messages.")
    rctl("delete_queue_if_empty", ["delete_queue", *p, "--if-empty", "q.scratch"], "q.scratch now empty.")
    with admin_channel() as ch:
        ch.queue_declare("q.scratch", durable=True)
        ch.basic_publish("", "q.scratch", b"x", pika.BasicProperties(delivery_mode=2))
    time.sleep(1)
    rctl("delete_queue", ["delete_queue", *p, "q.scratch"], "q.scratch with 1 message.")
    rctl("delete_queue_wrong_arity", ["delete_queue", *p], "")


class admin_channel:
    def __enter__(self) -> Any:
        params = pika.ConnectionParameters(
            host="127.0.0.1", port=5672, virtual_host=VHOST,
            credentials=pika.PlainCredentials(ADMIN, PASSWORDS[ADMIN]),
            client_properties={"connection_name": "ctl-golden-scratch"},
        )
        self.c = pika.BlockingConnection(params)
        return self.c.channel()

    def __exit__(self, *a: Any) -> None:
        self.c.close()


def connection_cases() -> None:
    p = ["-p", VHOST]
    rctl("close_connection_bad_pid", ["close_connection", "notapid", "go away"], "")
    rctl("close_connection_dead_pid", ["close_connection", "<rabbit@localhost.1.2.3>", "go away"],
         "A well-formed pid of no connection.")
    rctl("close_connection_wrong_arity", ["close_connection"], "")
    extra = Holder("ctl-golden-victim", consume=False)
    time.sleep(2)
    out = ctl("list_connections", "pid", "client_properties", "-s").stdout.decode()
    pid = next((line.split("\t")[0] for line in out.splitlines() if "ctl-golden-victim" in line), None)
    if pid:
        rctl("close_connection", ["close_connection", pid, "golden test"],
             "Variable: the pid in argv and stdout.")
    extra.close()
    extra = Holder("ctl-golden-victim2", consume=False)
    time.sleep(2)
    extra2 = Holder("ctl-golden-victim3", consume=False)
    time.sleep(2)
    # only ever with -p ctl-golden: without it close_all_connections closes vhost "/"
    time.sleep(3)  # connection tracking (which close_all_connections reads) is updated asynchronously
    rctl("close_all_connections_limit", ["close_all_connections", *p, "--limit", "1", "golden test"],
         "ctl-golden had 3 connections (held, victim2, victim3); closes 1 (which one is not defined).")
    time.sleep(5)
    rctl("close_all_connections", ["close_all_connections", *p, "golden test"],
         "Closes the 2 remaining connections in ctl-golden.")
    time.sleep(5)
    rctl("close_all_connections_none", ["close_all_connections", *p, "golden test"], "No connections left.")
    rctl("close_all_connections_missing_vhost", ["close_all_connections", "-p", "ctl-golden-nosuch", "x"], "")
    rctl("close_all_connections_no_reason", ["close_all_connections", *p], "Missing explanation argument.")
    extra.close()
    extra2.close()


def definitions_cases(tmp: Path) -> None:
    f = tmp / "defs.json"
    rctl("export_definitions_file", ["export_definitions", str(f)],
         "Variable: path in argv and stdout. The file holds every definition of the node.")
    if f.exists():
        doc = json.loads(f.read_text())
        shape = {k: (type(v).__name__, len(v) if isinstance(v, (list, dict)) else v) for k, v in doc.items()}
        (GOLDEN / "derived").mkdir(parents=True, exist_ok=True)
        (GOLDEN / "derived" / "export_definitions_shape.json").write_text(
            json.dumps({"top_level_keys": list(doc), "key_types": {k: s[0] for k, s in shape.items()},
                        "ctl_golden_only": filter_defs(doc)}, indent=2) + "\n")
    rctl("export_definitions_stdout", ["export_definitions", "-"],
         "Whole node's definitions (other work's objects, password hashes vary): compare the shape "
         "(top-level keys, per-object keys, JSON layout), not bytes.")
    rctl("export_definitions_stdout_json", ["export_definitions", "-", "--formatter", "json"],
         "Same as export_definitions_stdout, explicit --formatter json. Variable: as export_definitions_stdout.")
    rctl("export_definitions_erlang", ["export_definitions", "-", "--formatter", "erlang"],
         "Erlang term format; shape only.")
    rctl("export_definitions_bad_path", ["export_definitions", "/nonexistent-dir/defs.json"], "")
    rctl("export_definitions_no_arg", ["export_definitions"], "")
    # import: only objects inside ctl-golden
    imp = {
        "users": [], "vhosts": [{"name": VHOST}], "permissions": [], "topic_permissions": [],
        "parameters": [], "global_parameters": [], "policies": [],
        "queues": [{"name": "q.imported", "vhost": VHOST, "durable": True, "auto_delete": False,
                    "arguments": {"x-max-length": 5}}],
        "exchanges": [{"name": "ex.imported", "vhost": VHOST, "type": "direct", "durable": True,
                       "auto_delete": False, "internal": False, "arguments": {}}],
        "bindings": [{"source": "ex.imported", "vhost": VHOST, "destination": "q.imported",
                      "destination_type": "queue", "routing_key": "imp", "arguments": {}}],
    }
    fi = tmp / "import.json"
    fi.write_text(json.dumps(imp))
    fi.chmod(0o644)
    rctl("import_definitions_file", ["import_definitions", str(fi)],
         "Imports q.imported, ex.imported and a binding into ctl-golden (deleted right after). "
         "Variable: path. File content in notes of README.")
    rctl("import_definitions_stdin", ["import_definitions"], "Definitions on stdin.",
         stdin=json.dumps(imp).encode())
    time.sleep(3)  # the import is asynchronous
    with admin_channel() as ch:
        ch.queue_delete("q.imported")
        ch.exchange_delete("ex.imported")
    bad = tmp / "bad.json"
    bad.write_text("{not json")
    bad.chmod(0o644)
    rctl("import_definitions_bad_json", ["import_definitions", str(bad)], "Variable: path.")
    rctl("import_definitions_missing_file", ["import_definitions", "/nonexistent-dir/defs.json"], "")
    fv = tmp / "vhost_only.json"
    fv.write_text(json.dumps({"queues": [{"name": "q.imported2", "durable": True, "auto_delete": False,
                                          "arguments": {}}]}))
    fv.chmod(0o644)
    rctl("import_definitions_missing_vhost_field", ["import_definitions", str(fv)],
         "A queue object without vhost. Variable: path.")
    with admin_channel() as ch:
        ch.queue_delete("q.imported2")


def filter_defs(doc: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in doc.items():
        if isinstance(v, list):
            keep = [o for o in v if isinstance(o, dict) and (
                str(o.get("vhost", "")).startswith("ctl-golden") or str(o.get("name", "")).startswith("ctl-golden")
                or str(o.get("user", "")).startswith("ctl-golden"))]
            for o in keep:
                if "password_hash" in o:
                    o["password_hash"] = "<varies>"
            out[k] = keep
        else:
            out[k] = v
    return out


def node_cases() -> None:
    st = ctl("environment").stdout.decode()
    mem_ok = "{vm_memory_high_watermark,0.4}" in st
    disk_ok = "{disk_free_limit,50000000}" in st
    rctl("set_vm_memory_high_watermark_2", ["set_vm_memory_high_watermark", "2"], "Out of range.")
    rctl("set_vm_memory_high_watermark_abc", ["set_vm_memory_high_watermark", "abc"], "")
    rctl("set_vm_memory_high_watermark_negative", ["set_vm_memory_high_watermark", "-0.5"], "")
    rctl("set_vm_memory_high_watermark_absolute_bad", ["set_vm_memory_high_watermark", "absolute", "lots"], "")
    rctl("set_vm_memory_high_watermark_no_arg", ["set_vm_memory_high_watermark"], "")
    rctl("set_vm_memory_high_watermark_same", ["set_vm_memory_high_watermark", "0.4"],
         "Sets the value the node already has (0.4): no alarm.", only_if=lambda: mem_ok)
    rctl("set_disk_free_limit_abc", ["set_disk_free_limit", "abc"], "")
    rctl("set_disk_free_limit_mem_relative_bad", ["set_disk_free_limit", "mem_relative", "abc"], "")
    rctl("set_disk_free_limit_no_arg", ["set_disk_free_limit"], "")
    rctl("set_disk_free_limit_same", ["set_disk_free_limit", "50000000"],
         "Sets the value the node already has (50000000): no alarm.", only_if=lambda: disk_ok)
    rctl("await_startup", ["await_startup"], "Running node.")
    rctl("await_startup_timeout", ["await_startup", "--timeout", "5"], "Running node.")
    rctl("wait_pid", ["wait", "--pid", str(rabbit_os_pid())], "Variable: the OS pid in argv.")
    rctl("wait_missing_pidfile", ["wait", "/nonexistent-dir/rabbit.pid", "--timeout", "3"], "")
    rctl("wait_no_args", ["wait"], "")
    rctl("status", ["status"], "Variable: nearly every value (pids, uptime, memory, versions of runtime, paths).")
    rctl("status_json", ["status", "--formatter", "json"], "Variable: as status. One JSON object.")
    rctl("status_q", ["status", "-q"], "Variable: as status.")
    rctl("environment", ["environment"], "Shape only: an Erlang proplist of applications' environments.")
    rctl("version", ["version"], "")
    rctl("node_health_check", ["node_health_check"], "Deprecated command.")
    rctl("cluster_status", ["cluster_status"], "Variable: versions, uptime-free but listeners/pids per node.")
    rctl("cluster_status_json", ["cluster_status", "--formatter", "json"], "")
    rctl("unknown_command", ["no_such_command"], "")
    rctl("unknown_command_close_match", ["list_queue"], "Near miss of list_queues.")
    rctl("no_command", [], "No command at all: usage.")
    rctl("unknown_option", ["list_queues", "--no-such-option"], "")
    rctl("wrong_arity_list_queues", ["purge_queue"], "purge_queue without a queue name.")
    rctl("wrong_arity_too_many", ["add_vhost", "a", "b"], "")
    rctl("help", ["help"], "")
    rctl("help_list_queues_long", ["list_queues", "--help"], "")
    rctl("usage_help_flag", ["--help"], "--help alone: the usage on stdout, exit 0.")
    rctl("usage_h_flag", ["-h"], "-h alone: the usage on stderr, exit 64.")
    rctl("usage_help_version", ["help", "version"], "")
    rctl("usage_help_unknown", ["help", "nosuchcommand"], "")
    rctl("usage_version", ["version"], "")
    rctl("usage_version_flag", ["--version"], "")
    rctl("usage_version_json", ["version", "--formatter", "json"], "The default node's name appears.")
    rctl("missing_node_list_queues", ["-n", MISSING_NODE, "list_queues"], "Node not running.", timeout=120)
    rctl("missing_node_status", ["-n", MISSING_NODE, "status"], "Node not running.", timeout=120)
    rctl("missing_node_await_startup", ["-n", "nosuchnode", "await_startup", "--timeout", "2"],
         "Node not running; short node name (host completed).", timeout=120)
    rctl("missing_node_list_users_json", ["-n", MISSING_NODE, "list_users", "--formatter", "json"], "",
         timeout=120)
    rctl("missing_vhost_list_queues", ["list_queues", "-p", "ctl-golden-nosuch"], "")


def rabbit_os_pid() -> int:
    out = ctl("status", "--formatter", "json").stdout.decode()
    return int(json.loads(out)["pid"])


def plugin_cases() -> None:
    plugins("list", ["list"], "Variable: which plugins are enabled on the node.")
    plugins("list_e", ["list", "-e"], "")
    plugins("list_E", ["list", "-E"], "")
    plugins("list_v", ["list", "-v"], "Descriptions and dependencies.")
    plugins("list_m", ["list", "-m"], "Names only.")
    plugins("list_json", ["list", "--formatter", "json"], "")
    plugins("list_e_json", ["list", "-e", "--formatter", "json"], "")
    plugins("list_pattern", ["list", "management"], "Pattern (regex).")
    plugins("list_pattern_none", ["list", "nosuchpluginpattern"], "")
    plugins("list_q", ["list", "-q"], "")
    plugins("list_s", ["list", "-s"], "")
    plugins("enable_already_enabled", ["enable", "rabbitmq_management"], "Already enabled: no change.")
    plugins("enable_unknown", ["enable", "rabbitmq_nosuch"], "")
    plugins("disable_unknown", ["disable", "rabbitmq_nosuch"], "")
    plugins("disable_not_enabled", ["disable", "rabbitmq_shovel"], "rabbitmq_shovel is not enabled: no change.")
    plugins("enable_no_args", ["enable"], "")
    plugins("is_enabled", ["is_enabled", "rabbitmq_management"], "")
    plugins("is_enabled_not", ["is_enabled", "rabbitmq_shovel"], "")
    plugins("directories", ["directories"], "Variable: paths.")
    plugins("unknown_command", ["nosuchcommand"], "")
    plugins("usage_help", ["help"], "")
    plugins("usage_help_flag", ["--help"], "")
    plugins("usage_no_command", [], "")
    plugins("usage_version", ["version"], "")
    plugins("usage_help_list", ["help", "list"], "")
    plugins("missing_node_list", ["-n", MISSING_NODE, "list"], "Node not running: list works offline?",
            timeout=120)


def diagnostics_cases() -> None:
    diag("ping", ["ping"], "")
    diag("ping_q", ["ping", "-q"], "")
    diag("check_running", ["check_running"], "")
    diag("check_local_alarms", ["check_local_alarms"], "No alarms.")
    diag("check_alarms", ["check_alarms"], "No alarms.")
    diag("alarms", ["alarms"], "No alarms.")
    diag("alarms_json", ["alarms", "--formatter", "json"], "")
    diag("listeners", ["listeners"], "Variable: which listeners the node has.")
    diag("listeners_json", ["listeners", "--formatter", "json"], "")
    diag("check_port_connectivity", ["check_port_connectivity"], "")
    diag("check_port_listener_5672", ["check_port_listener", "5672"], "")
    diag("check_port_listener_1", ["check_port_listener", "1"], "No listener on port 1.")
    diag("check_port_listener_abc", ["check_port_listener", "abc"], "")
    diag("check_protocol_listener_amqp", ["check_protocol_listener", "amqp"], "")
    diag("check_protocol_listener_stomp", ["check_protocol_listener", "stomp"], "No stomp listener.")
    diag("check_virtual_hosts", ["check_virtual_hosts"], "")
    diag("check_certificate_expiration", ["check_certificate_expiration"], "No TLS listeners.")
    diag("is_running", ["is_running"], "")
    diag("server_version", ["server_version"], "")
    diag("server_version_json", ["server_version", "--formatter", "json"], "")
    diag("usage_help", ["help"], "")
    diag("usage_help_flag", ["--help"], "")
    diag("usage_no_command", [], "")
    diag("usage_version", ["version"], "")
    diag("status", ["status"], "Variable: as rabbitmqctl status.")
    diag("status_json", ["status", "--formatter", "json"], "Variable: as rabbitmqctl status.")
    diag("environment", ["environment"], "Shape only.")
    diag("memory_breakdown", ["memory_breakdown"], "Variable: all numbers.")
    diag("unknown_command", ["nosuchcommand"], "")
    for cmd in ("ping", "check_running", "check_local_alarms", "alarms", "listeners", "check_port_connectivity",
                "status", "check_port_listener"):
        args = [cmd] + (["5672"] if cmd == "check_port_listener" else [])
        diag(f"missing_node_{cmd}", ["-n", MISSING_NODE, *args], "Node not running.", timeout=120)
    diag("missing_node_ping_timeout", ["-n", MISSING_NODE, "ping", "--timeout", "2"], "", timeout=120)


def main() -> int:
    holder: Holder | None = None
    tmp = Path(tempfile.mkdtemp(prefix="ctl-golden-"))
    tmp.chmod(0o777)  # the Debian wrapper runs the CLI as user rabbitmq: it must read and write here
    if ONLY is None:  # a full run replaces every case (no stale files from renamed cases)
        for f in GOLDEN.glob("*/*.json"):
            f.unlink()
    try:
        holder = setup()
        list_cases()
        info_items_summary()
        escape_cases()
        user_cases()
        vhost_cases()
        permission_cases()
        policy_cases()
        queue_cases()
        definitions_cases(tmp)
        connection_cases()
        holder.close()
        node_cases()
        plugin_cases()
        diagnostics_cases()
    finally:
        if holder is not None:
            holder.close()
        teardown()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"recorded {len(recorded)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
