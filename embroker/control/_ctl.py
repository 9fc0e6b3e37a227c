"""``rabbitmqctl`` and ``rabbitmq-diagnostics`` for embroker nodes: RabbitMQ 3.10.8's commands,
options, output and exit codes.

A command line is read as RabbitMQ's tools read it: options anywhere (``-n``/``--node``,
``-p``/``--vhost``, ``-q``/``--quiet``, ``-s``/``--silent``, ``-t``/``--timeout``,
``--formatter``, ``--no-table-headers`` and each command's own), then the command and its
arguments. The node is found in the registry (:mod:`._registry`), asked through its control
interface (:mod:`._client`), and its answer printed as RabbitMQ's tool prints it: the banner
(``Listing queues for vhost / ...``) unless ``-q``, the table's header unless ``-s`` or
``--no-table-headers``, the JSON formatter's rows; errors on stderr after ``Error:`` with the
tool's exit code (64 usage, 65 data, 69 node unreachable, 70 failure).

Rows come in the node's order, which is embroker's (creation order): RabbitMQ's is its
tables' hash order, which no script can rely on.
"""

from __future__ import annotations

import difflib
import os
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, final

from .._hostfiles import rewrite_file
from .._untrusted import json_dumps
from ._client import NodeUnreachable, call
from ._env import tool_node_name
from ._format import csv_rows, json_rows, table_rows, table_value
from ._help import BOLD, CLI_VERSION, PLAIN, usage
from ._protocol import (
    EX_DATAERR,
    EX_SOFTWARE,
    EX_TEMPFAIL,
    EX_UNAVAILABLE,
    EX_USAGE,
    INFO_KEYS,
    ControlError,
)
from ._registry import NodeEntry, UntrustedPath, lookup, nodes_dir

__all__ = ["Invocation", "run"]


#: Options that take a value, by every name they go by, and the name they are kept under.
_VALUED = {"-n": "node", "--node": "node", "-p": "vhost", "--vhost": "vhost",
           "-t": "timeout", "--timeout": "timeout", "--formatter": "formatter",
           "--apply-to": "apply_to", "--priority": "priority", "--limit": "limit",
           "--per-connection-delay": "delay", "--user": "user", "--format": "format",
           "--description": "description", "--tags": "tags",
           "--default-queue-type": "default_queue_type", "--unit": "unit", "-P": "pid",
           "--pid": "pid", "--erlang-cookie": "erlang_cookie", "--address": "address",
           "--vhost-pattern": "vhost_pattern", "--queue-pattern": "queue_pattern"}
#: Options that are flags.
_FLAGS = {"-q": "quiet", "--quiet": "quiet", "-s": "silent", "--silent": "silent",
          "--no-table-headers": "no_table_headers", "-l": "longnames",
          "--longnames": "longnames", "--online": "online", "--offline": "offline",
          "--local": "local", "-e": "if_empty", "--if-empty": "if_empty", "-u": "if_unused",
          "--if-unused": "if_unused", "--global": "global", "--idempotent": "idempotent",
          "--skip-if-unchanged": "skip_if_unchanged", "--no-wait": "no_wait",
          "--table-headers": "table_headers", "--help": "help", "-?": "help", "-h": "help",
          "--version": "version", "--errors-only": "errors_only"}


class UsageError(Exception):
    """A command line RabbitMQ's tool refuses before reaching the node (exit 64, or 65 for
    a bad argument's value)."""

    def __init__(self, message: str, code: int = EX_USAGE) -> None:
        super().__init__(message)
        self.code = code


@final
@dataclass
class Invocation:
    """One command line, read: the command, its arguments, the options, where output goes."""

    tool: str
    command: str
    arguments: list[str]
    options: dict[str, Any]
    out: IO[str]
    err: IO[str]
    environ: Mapping[str, str]
    given: list[str] = field(default_factory=list)

    @property
    def vhost(self) -> str:
        return str(self.options.get("vhost", "/"))

    @property
    def node(self) -> str:
        """The node meant, by the rule the node names itself by (:func:`._env.node_name`:
        ``-n``, ``-l``, ``RABBITMQ_NODENAME`` and rabbitmq-env.conf, as RabbitMQ's CLI).

        Raises:
            ControlError: RabbitMQ's CLI refuses the name (exit 65), or rabbitmq-env.conf
                cannot be read (78)."""
        given = self.options.get("node")
        return tool_node_name(self.environ, given=str(given) if given else None,
                              longnames=True if self.options.get("longnames") else None,
                              operation=self.command)

    @property
    def quiet(self) -> bool:
        return bool(self.options.get("quiet") or self.options.get("silent"))

    @property
    def timeout(self) -> float:
        value = self.options.get("timeout")
        try:
            return float(value) if value is not None else 60.0
        except ValueError:
            raise UsageError(f"invalid timeout: {value}") from None

    def say(self, line: str | None) -> None:
        """A banner or information line (not with ``-q``/``-s``)."""
        if line is not None and not self.quiet and \
                self.options.get("formatter") not in ("json", "csv"):
            print(line, file=self.out)

    def entry(self) -> NodeEntry:
        node = self.node
        try:
            found = lookup(node, nodes_dir(self.environ))
        except UntrustedPath as exc:  # (another user's folder: never read, one line)
            raise ControlError(f"the node registry cannot be trusted: {exc}", 77) from None
        if found is None:
            raise NodeUnreachable(node)
        return found

    def ask(self, operation: str, **arguments: Any) -> Any:
        return call(self.entry(), operation, arguments, timeout=self.timeout)


@final
@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    run: Callable[[Invocation], int | None]
    #: How many arguments: at least, at most (``None``: any number).
    arity: tuple[int, int | None] = (0, 0)
    #: The tools that have it.
    tools: tuple[str, ...] = ("rabbitmqctl",)
    #: Whether it takes ``--timeout`` (its usage says so).
    timeout: bool = True


COMMANDS: dict[str, Command] = {}


def command(name: str, usage: str, arity: tuple[int, int | None] = (0, 0),
            tools: tuple[str, ...] = ("rabbitmqctl",), *, timeout: bool = True
            ) -> Callable[[Callable[[Invocation], int | None]], Callable[[Invocation], int | None]]:
    def register(run: Callable[[Invocation], int | None]) -> Callable[[Invocation], int | None]:
        COMMANDS[name] = Command(name, usage, run, arity, tools, timeout)
        return run
    return register


# -- reading a command line ---------------------------------------------------------------------

def parse(tool: str, argv: Sequence[str]) -> tuple[str | None, list[str], dict[str, Any]]:
    """The command, its arguments and the options of a command line."""
    options: dict[str, Any] = {}
    positional: list[str] = []
    items = list(argv)
    index = 0
    while index < len(items):
        item = items[index]
        index += 1
        if item == "--":
            positional += items[index:]
            break
        name, sep, inline = item.partition("=") if item.startswith("--") else (item, "", "")
        if name in _VALUED:
            if sep:
                options[_VALUED[name]] = inline
            elif index < len(items):
                options[_VALUED[name]] = items[index]
                index += 1
            else:
                raise UsageError(f"option {name} needs a value")
        elif item in _FLAGS:
            options[_FLAGS[item]] = item if _FLAGS[item] == "help" else True
        elif item.startswith("-") and len(item) > 1 and not _number(item):
            raise UsageError(f"Invalid options for this command:\n{item} : ")
        else:
            positional.append(item)
    command_name = positional.pop(0) if positional else None
    return command_name, positional, options


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def usage_text(tool: str, spec: Command) -> str:
    return (f"\n{BOLD}Usage{PLAIN}\n\n{tool} [--node <node>] [--longnames] [--quiet] "
            f"{spec.usage}{' [--timeout <timeout>]' if spec.timeout else ''}\n")


def _argument_error(inv: Invocation, spec: Command, reason: str, code: int = EX_USAGE) -> int:
    print(f"Error (argument validation): {reason}\nArguments given:\n\t"
          f"{' '.join(inv.given)}\n{usage_text(inv.tool, spec)}", end="", file=inv.err)
    return code


def _unreachable(inv: Invocation, exc: NodeUnreachable | None = None) -> int:
    node = inv.node
    host = node.partition("@")[2]
    reason = exc.reason if exc is not None else None
    print(f"Error: unable to perform an operation on node '{node}'. Please see diagnostics "
          "information and suggestions below.\n\nMost common reasons for this are:\n\n"
          " * Target node is unreachable (e.g. due to hostname resolution, TCP connection or "
          "firewall issues)\n * CLI tool fails to authenticate with the server (e.g. due to "
          "CLI tool's Erlang cookie not matching that of the server)\n * Target node is not "
          "running\n\nIn addition to the diagnostics info below:\n\n * See the CLI, clustering "
          "and networking guides on https://rabbitmq.com/documentation.html to learn more\n"
          " * Consult server logs on node " + node + "\n * If target node is configured to use "
          "long node names, don't forget to use --longnames with CLI tools\n\nDIAGNOSTICS\n"
          f"===========\n\nattempted to contact: ['{node}']\n\n{node}:\n  * unable to connect "
          f"to the embroker node: " + (reason or f"no node named {node.partition('@')[0]!r} is "
                                       f"registered on {host} (EMBROKER_NODES_DIR)") + "\n",
          file=inv.err)
    return EX_UNAVAILABLE


def run(tool: str, argv: Sequence[str], *, out: IO[str] | None = None,
        err: IO[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run one command line of ``tool`` (``rabbitmqctl``, ``rabbitmq-diagnostics`` or
    ``rabbitmq-queues``); its exit code."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    environ = os.environ if environ is None else environ
    given = [a for a in argv if a not in ("-q", "--quiet", "-s", "--silent")]
    try:
        name, arguments, options = parse(tool, argv)
    except UsageError as exc:
        print(f"Error (argument validation): {exc}\nArguments given:\n\t{' '.join(given)}",
              file=err)
        return EX_USAGE
    known = [c for c, s in COMMANDS.items() if tool in s.tools]
    if name is None and options.get("version"):
        name = "version"
    if name is None or (name == "help" and not arguments):
        # As RabbitMQ's: the usage on stdout and 0 when asked for (help, --help), on stderr
        # and 64 with no command (-h and -? alone too).
        asked = name == "help" or options.get("help") == "--help"
        print(usage(tool, known), end="", file=out if asked else err)
        return 0 if asked else EX_USAGE
    if name == "help":
        name, options["help"] = arguments[0], True
        arguments = []
        if name not in known:
            print(f"Error:\n\nCommand '{name}' not found.", file=err)
            return EX_USAGE
    spec = COMMANDS.get(name)
    if spec is None or tool not in spec.tools:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"Did you mean '{close[0]}'? \n" if close else ""
        if close:
            print(f"\nCommand '{name}' not found. \n{hint}", file=err)
        else:
            print(f"\nCommand '{name}' not found. \n" + usage(tool, known), end="", file=err)
        return EX_USAGE
    inv = Invocation(tool, name, arguments, options, out, err, environ, given)
    if options.get("help"):
        print(usage_text(tool, spec), file=out)
        return 0
    formatter = options.get("formatter", "table")
    if formatter not in ("table", "json", "csv"):
        print(f"Error: the {formatter!r} formatter is not supported by embroker's {tool} "
              "(table, json, csv)", file=err)
        return EX_USAGE
    low, high = spec.arity
    if len(arguments) < low:
        return _argument_error(inv, spec, "not enough arguments.")
    if high is not None and len(arguments) > high:
        return _argument_error(inv, spec, "too many arguments.")
    try:
        if spec.name not in ("stop", "await_startup", "wait", "ping", "version"):  # (no node)
            inv.entry()
        code = spec.run(inv)
    except UsageError as exc:
        return _argument_error(inv, spec, str(exc), exc.code)
    except NodeUnreachable as exc:
        return _unreachable(inv, exc)
    except ControlError as exc:
        print(exc.message if exc.plain else f"Error:\n{exc.message}", file=err)
        return exc.code
    return code or 0


# -- printing -----------------------------------------------------------------------------------

def _rows(inv: Invocation, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    if inv.options.get("formatter") == "json":
        print(json_rows(columns, rows), file=inv.out)
        return
    if inv.options.get("formatter") == "csv":
        print(csv_rows(columns, rows), end="", file=inv.out)
        return
    headers = not (inv.options.get("silent") or inv.options.get("no_table_headers"))
    for line in table_rows(columns, rows, headers=headers):
        print(line, file=inv.out)


def _dict_rows(inv: Invocation, columns: Sequence[str], found: Sequence[Mapping[str, Any]]
               ) -> None:
    _rows(inv, columns, [[item.get(c, "") for c in columns] for item in found])


# -- listings -----------------------------------------------------------------------------------

def _listing(kind: str, banner: Callable[[Invocation], str], *, vhost: bool = True,
             timeout_line: bool = False) -> Callable[[Invocation], int | None]:
    allowed, _default = INFO_KEYS[kind]

    def run_listing(inv: Invocation) -> int | None:
        columns = [c for a in inv.arguments for c in a.split(",") if c]
        unknown = [c for c in columns if c not in allowed]
        if unknown:
            raise UsageError(f"Info key(s) {','.join(unknown)} are not supported")
        if timeout_line:
            inv.say(f"Timeout: {inv.timeout:.1f} seconds ...")
        inv.say(banner(inv))
        arguments: dict[str, Any] = {"kind": kind, "columns": columns or None}
        if kind == "queues":  # (which queues: see the node's _listed_queues)
            arguments.update({flag: bool(inv.options.get(flag))
                              for flag in ("online", "offline", "local")})
        if vhost:
            arguments["vhost"] = inv.vhost
        try:
            rows = inv.ask("list", **arguments)
        except ControlError as exc:
            if exc.code == EX_DATAERR and vhost:  # (RabbitMQ lists nothing of a missing vhost)
                rows = []
            else:
                raise
        _rows(inv, columns or list(_default), rows)
        return None
    return run_listing


command("list_queues", "list_queues [--vhost <vhost>] [--online] [--offline] [--local] "
        "[--no-table-headers] [<column>, ...]", (0, None), ("rabbitmqctl", "rabbitmq-diagnostics"))(
    _listing("queues", lambda inv: f"Listing queues for vhost {inv.vhost} ...",
             timeout_line=True))
command("list_exchanges", "list_exchanges [--vhost <vhost>] [--no-table-headers] [<column> ...]",
        (0, None), ("rabbitmqctl", "rabbitmq-diagnostics"))(
    _listing("exchanges", lambda inv: f"Listing exchanges for vhost {inv.vhost} ..."))
command("list_bindings", "list_bindings [--vhost <vhost>] [--no-table-headers] [<column> ...]",
        (0, None), ("rabbitmqctl", "rabbitmq-diagnostics"))(
    _listing("bindings", lambda inv: f"Listing bindings for vhost {inv.vhost}..."))
command("list_connections", "list_connections [--no-table-headers] [<column> ...]", (0, None),
        ("rabbitmqctl", "rabbitmq-diagnostics"))(
    _listing("connections", lambda inv: "Listing connections ...", vhost=False))
command("list_stomp_connections", "list_stomp_connections [--no-table-headers] [<column> ...]",
        (0, None), ("rabbitmqctl",))(
    _listing("stomp_connections", lambda inv: "Listing STOMP connections ...", vhost=False))
command("list_mqtt_connections", "list_mqtt_connections [--no-table-headers] [<column> ...]",
        (0, None), ("rabbitmqctl",))(
    _listing("mqtt_connections", lambda inv: "Listing MQTT connections ...", vhost=False))
command("list_channels", "list_channels [--no-table-headers] [<column> ...]", (0, None),
        ("rabbitmqctl", "rabbitmq-diagnostics"))(
    _listing("channels", lambda inv: "Listing channels ...", vhost=False))
command("list_consumers", "list_consumers [--vhost <vhost>] [--no-table-headers] [<column> ...]",
        (0, None), ("rabbitmqctl", "rabbitmq-diagnostics"))(
    _listing("consumers", lambda inv: f"Listing consumers in vhost {inv.vhost} ..."))
command("list_vhosts", "list_vhosts [--no-table-headers] [<column> ...]", (0, None),
        ("rabbitmqctl", "rabbitmq-diagnostics"))(
    _listing("vhosts", lambda inv: "Listing vhosts ...", vhost=False))


@command("list_users", "list_users [--no-table-headers]")
def _list_users(inv: Invocation) -> None:
    inv.say("Listing users ...")
    _dict_rows(inv, ("user", "tags"), inv.ask("list_users"))


@command("list_permissions", "list_permissions [--vhost <vhost>] [--no-table-headers]")
def _list_permissions(inv: Invocation) -> None:
    inv.say(f'Listing permissions for vhost "{inv.vhost}" ...')
    _dict_rows(inv, ("user", "configure", "write", "read"),
               inv.ask("list_permissions", vhost=inv.vhost))


@command("list_user_permissions", "list_user_permissions [--no-table-headers] <username>", (1, 1))
def _list_user_permissions(inv: Invocation) -> None:
    user = inv.arguments[0]
    inv.say(f'Listing permissions for user "{user}" ...')
    _dict_rows(inv, ("vhost", "configure", "write", "read"),
               inv.ask("list_user_permissions", user=user))


@command("list_topic_permissions", "list_topic_permissions [--vhost <vhost>] [--no-table-headers]")
def _list_topic_permissions(inv: Invocation) -> None:
    inv.say(f'Listing topic permissions for vhost "{inv.vhost}" ...')
    _dict_rows(inv, ("user", "exchange", "write", "read"),
               inv.ask("list_topic_permissions", vhost=inv.vhost))


@command("list_user_topic_permissions",
         "list_user_topic_permissions [--no-table-headers] <username>", (1, 1))
def _list_user_topic_permissions(inv: Invocation) -> None:
    user = inv.arguments[0]
    inv.say(f'Listing topic permissions for user "{user}" ...')
    found = inv.ask("list_user_topic_permissions", user=user)
    inv.options["no_table_headers"] = True  # (RabbitMQ's prints no header here)
    _dict_rows(inv, ("vhost", "exchange", "write", "read"), found)


_POLICY_COLUMNS = ("vhost", "name", "pattern", "apply-to", "definition", "priority")


def _json_text(value: Any) -> str:
    """A value RabbitMQ keeps as JSON text (a policy's definition, a runtime parameter's
    value), as every formatter prints it: that text (the json formatter's too, a string:
    ``"definition":"{\\"max-length\\":100}"``, recorded live)."""
    return json_dumps(value, separators=(",", ":"))


def _policy_rows(inv: Invocation, found: list[dict[str, Any]]) -> None:
    for item in found:
        item["definition"] = _json_text(item["definition"])
    _dict_rows(inv, _POLICY_COLUMNS, found)


@command("list_policies", "list_policies [--vhost <vhost>] [--no-table-headers]")
def _list_policies(inv: Invocation) -> None:
    inv.say(f'Listing policies for vhost "{inv.vhost}" ...')
    _policy_rows(inv, inv.ask("list_policies", vhost=inv.vhost))


@command("list_operator_policies", "list_operator_policies [--vhost <vhost>] [--no-table-headers]")
def _list_operator_policies(inv: Invocation) -> None:
    inv.say(f'Listing operator policy overrides for vhost "{inv.vhost}" ...')
    _policy_rows(inv, inv.ask("list_operator_policies", vhost=inv.vhost))


def _limits_text(limits: Mapping[str, Any]) -> str:
    """Limits as RabbitMQ's tools print them: the JSON of an Erlang map, keys in order."""
    return json_dumps(dict(limits), separators=(",", ":"), sort_keys=True)


@command("list_vhost_limits", "list_vhost_limits [--vhost <vhost>] [--global] [--no-table-headers]")
def _list_vhost_limits(inv: Invocation) -> None:
    every = bool(inv.options.get("global"))
    inv.say("Listing limits for all vhosts ..." if every
            else f'Listing limits for vhost "{inv.vhost}" ...')
    found = inv.ask("list_vhost_limits", vhost=inv.vhost, **{"global": every})
    if every:
        _rows(inv, ("vhost", "limits"), [[f["vhost"], _limits_text(f["limits"])] for f in found])
        return
    limits = found[0]["limits"]
    text = _limits_text(limits) if limits else ""  # (none: an empty line)
    if inv.options.get("formatter") == "json":
        print(json_dumps({"node": inv.node, "result": "ok", "value": text},
                         separators=(",", ":")), file=inv.out)
    else:
        print(text, file=inv.out)


@command("list_user_limits", "list_user_limits [--user <username>] [--global]")
def _list_user_limits(inv: Invocation) -> None:
    every = bool(inv.options.get("global"))
    user = None if every else str(inv.options.get("user", "guest"))  # (its default user)
    inv.say("Listing limits for all users ..." if every
            else f'Listing limits for user "{user}" ...')
    found = inv.ask("list_user_limits", user=user)
    if every:
        _rows(inv, ("user", "limits"), [[f["user"], _limits_text(f["limits"])] for f in found])
        return
    text = _limits_text(found[0]["limits"])
    if inv.options.get("formatter") == "json":
        print(json_dumps({"message": text}, separators=(",", ":")), file=inv.out)
    else:
        print(text, file=inv.out)


@command("list_parameters", "list_parameters [--vhost <vhost>] [--no-table-headers]")
def _list_parameters(inv: Invocation) -> None:
    inv.say(f'Listing runtime parameters for vhost "{inv.vhost}" ...')
    found = inv.ask("list_parameters", vhost=inv.vhost)
    for item in found:
        item["value"] = _json_text(item["value"])
    _dict_rows(inv, ("component", "name", "value"), found)


@command("list_global_parameters", "list_global_parameters [--no-table-headers]")
def _list_global_parameters(inv: Invocation) -> None:
    inv.say("Listing global runtime parameters ...")
    found = inv.ask("list_global_parameters")
    for item in found:
        item["value"] = _json_text(item["value"])
    _dict_rows(inv, ("name", "value"), found)


# -- users, vhosts, permissions -----------------------------------------------------------------

def _simple(name: str, usage: str, arity: tuple[int, int | None],
            banner: Callable[[Invocation], str], operation: str,
            arguments: Callable[[Invocation], dict[str, Any]],
            done: Callable[[Invocation], str] | None = None) -> None:
    """A command that asks one operation and prints its banner (and ``done`` after)."""
    def run_simple(inv: Invocation) -> None:
        inv.say(banner(inv))
        inv.ask(operation, **arguments(inv))
        if done is not None:  # (not with -q: add_user's advice is no output to parse)
            inv.say(done(inv))
    command(name, usage, arity)(run_simple)


def _password(inv: Invocation) -> str:
    """The password argument, else a line of standard input, as RabbitMQ's add_user takes it
    (for passwords kept out of the process list)."""
    if len(inv.arguments) > 1:
        return inv.arguments[1]
    print("Password: ", file=inv.out)
    line = sys.stdin.readline() if not sys.stdin.isatty() else ""
    if not line.strip():
        raise ControlError("Password is not provided via argument or stdin", EX_DATAERR)
    return line.rstrip("\n")


_simple("add_user", "add_user <username> <password>", (1, 2),
        lambda inv: f'Adding user "{inv.arguments[0]}" ...', "add_user",
        lambda inv: {"user": inv.arguments[0], "password": _password(inv)},
        lambda inv: "Done. Don't forget to grant the user permissions to some virtual hosts! "
                    "See 'rabbitmqctl help set_permissions' to learn more.")
_simple("delete_user", "delete_user <username>", (1, 1),
        lambda inv: f'Deleting user "{inv.arguments[0]}" ...', "delete_user",
        lambda inv: {"user": inv.arguments[0]})
_simple("change_password", "change_password <username> <password>", (2, 2),
        lambda inv: f'Changing password for user "{inv.arguments[0]}" ...', "change_password",
        lambda inv: {"user": inv.arguments[0], "password": inv.arguments[1]})
_simple("clear_password", "clear_password <username>", (1, 1),
        lambda inv: f'Clearing password for user "{inv.arguments[0]}" ...', "clear_password",
        lambda inv: {"user": inv.arguments[0]})
_simple("set_user_tags", "set_user_tags <username> <tag> [...]", (1, None),
        lambda inv: f'Setting tags for user "{inv.arguments[0]}" to '
                    f'[{", ".join(inv.arguments[1:])}] ...', "set_user_tags",
        lambda inv: {"user": inv.arguments[0], "tags": inv.arguments[1:]})
_simple("authenticate_user", "authenticate_user <username> <password>", (2, 2),
        lambda inv: f'Authenticating user "{inv.arguments[0]}" ...', "authenticate_user",
        lambda inv: {"user": inv.arguments[0], "password": inv.arguments[1]},
        lambda inv: "Success")
_simple("add_vhost", 'add_vhost <vhost> [--description <description> --tags "<tag1>,<tag2>,<...>" '
        "--default-queue-type <quorum|classic|stream>]", (1, 1),
        lambda inv: f'Adding vhost "{inv.arguments[0]}" ...', "add_vhost",
        lambda inv: {"vhost": inv.arguments[0]})
_simple("delete_vhost", "delete_vhost <vhost>", (1, 1),
        lambda inv: f'Deleting vhost "{inv.arguments[0]}" ...', "delete_vhost",
        lambda inv: {"vhost": inv.arguments[0]})
_simple("set_permissions", "set_permissions [--vhost <vhost>] <username> <conf> <write> <read>",
        (4, 4), lambda inv: f'Setting permissions for user "{inv.arguments[0]}" in vhost '
                            f'"{inv.vhost}" ...', "set_permissions",
        lambda inv: {"user": inv.arguments[0], "configure": inv.arguments[1],
                     "write": inv.arguments[2], "read": inv.arguments[3], "vhost": inv.vhost})
_simple("clear_permissions", "clear_permissions [--vhost <vhost>] <username>", (1, 1),
        lambda inv: f'Clearing permissions for user "{inv.arguments[0]}" in vhost '
                    f'"{inv.vhost}" ...', "clear_permissions",
        lambda inv: {"user": inv.arguments[0], "vhost": inv.vhost})
_simple("set_topic_permissions",
        "set_topic_permissions [--vhost <vhost>] <username> <exchange> <write> <read>", (4, 4),
        lambda inv: f'Setting topic permissions on "{inv.arguments[1]}" for user '
                    f'"{inv.arguments[0]}" in vhost "{inv.vhost}" ...', "set_topic_permissions",
        lambda inv: {"user": inv.arguments[0], "exchange": inv.arguments[1],
                     "write": inv.arguments[2], "read": inv.arguments[3], "vhost": inv.vhost})
_simple("clear_topic_permissions",
        "clear_topic_permissions [--vhost <vhost>] <username> [<exchange>]", (1, 2),
        lambda inv: (f'Clearing topic permissions on "{inv.arguments[1]}" for user '
                     f'"{inv.arguments[0]}" in vhost "{inv.vhost}" ...')
        if len(inv.arguments) == 2 else (f'Clearing topic permissions for user '
                                         f'"{inv.arguments[0]}" in vhost "{inv.vhost}" ...'),
        "clear_topic_permissions",
        lambda inv: {"user": inv.arguments[0], "vhost": inv.vhost,
                     "exchange": inv.arguments[1] if len(inv.arguments) == 2 else None})


# -- policies, limits, parameters ---------------------------------------------------------------

def _priority(inv: Invocation) -> int:
    text = str(inv.options.get("priority", "0"))
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"invalid priority: {text}") from None


def _set_policy(operator: bool) -> Callable[[Invocation], None]:
    def run_set_policy(inv: Invocation) -> None:
        name, pattern, definition = inv.arguments
        kind = "operator policy override" if operator else "policy"
        inv.say(f'Setting {kind} "{name}" for pattern "{pattern}" to "{definition}" with '
                f'priority "{inv.options.get("priority", 0)}" for vhost "{inv.vhost}" ...')
        inv.ask("set_policy", name=name, pattern=pattern, definition=definition,
                priority=_priority(inv), apply_to=str(inv.options.get("apply_to", "all")),
                vhost=inv.vhost, operator=operator)
    return run_set_policy


command("set_policy", "set_policy [--vhost <vhost>] [--priority <priority>] [--apply-to "
        "<apply-to>] <name> <pattern> <definition>", (3, 3))(_set_policy(False))
command("set_operator_policy", "set_operator_policy [--vhost <vhost>] [--priority <priority>] "
        "[--apply-to <apply-to>] <name> <pattern> <definition>", (3, 3))(_set_policy(True))
_simple("clear_policy", "clear_policy [--vhost <vhost>] <name>", (1, 1),
        lambda inv: f'Clearing policy "{inv.arguments[0]}" on vhost "{inv.vhost}" ...',
        "clear_policy", lambda inv: {"name": inv.arguments[0], "vhost": inv.vhost})
_simple("clear_operator_policy", "clear_operator_policy [--vhost <vhost>] <name>", (1, 1),
        lambda inv: f'Clearing operator policy "{inv.arguments[0]}" on vhost "{inv.vhost}" ...',
        "clear_policy",
        lambda inv: {"name": inv.arguments[0], "vhost": inv.vhost, "operator": True})
_simple("set_vhost_limits", "set_vhost_limits [--vhost <vhost>] <definition>", (1, 1),
        lambda inv: f'Setting vhost limits to "{inv.arguments[0]}" for vhost "{inv.vhost}" ...',
        "set_vhost_limits", lambda inv: {"definition": inv.arguments[0], "vhost": inv.vhost})
_simple("clear_vhost_limits", "clear_vhost_limits [--vhost <vhost>]", (0, 0),
        lambda inv: f'Clearing vhost "{inv.vhost}" limits ...', "clear_vhost_limits",
        lambda inv: {"vhost": inv.vhost})
_simple("set_user_limits", "set_user_limits <username> <definition>", (2, 2),
        lambda inv: f'Setting user limits to "{inv.arguments[1]}" for user '
                    f'"{inv.arguments[0]}" ...', "set_user_limits",
        lambda inv: {"user": inv.arguments[0], "definition": inv.arguments[1]})
_simple("clear_user_limits", "clear_user_limits <username> <limit_type> | all", (2, 2),
        lambda inv: (f'Clearing all limits for user "{inv.arguments[0]}" ...'
                     if inv.arguments[1] == "all" else
                     f'Clearing "{inv.arguments[1]}" limit for user "{inv.arguments[0]}" ...'),
        "clear_user_limits", lambda inv: {"user": inv.arguments[0], "limit": inv.arguments[1]})
_simple("set_parameter", "set_parameter [--vhost <vhost>] <component_name> <name> <value>",
        (3, 3), lambda inv: f'Setting runtime parameter "{inv.arguments[1]}" for component '
                            f'"{inv.arguments[0]}" to "{inv.arguments[2]}" in vhost '
                            f'"{inv.vhost}" ...', "set_parameter",
        lambda inv: {"component": inv.arguments[0], "name": inv.arguments[1],
                     "value": inv.arguments[2], "vhost": inv.vhost})
_simple("clear_parameter", "clear_parameter [--vhost <vhost>] <component_name> <name>", (2, 2),
        lambda inv: f'Clearing runtime parameter "{inv.arguments[1]}" for component '
                    f'"{inv.arguments[0]}" on vhost "{inv.vhost}" ...', "clear_parameter",
        lambda inv: {"component": inv.arguments[0], "name": inv.arguments[1],
                     "vhost": inv.vhost})


# -- queues, connections, tracing, definitions --------------------------------------------------

@command("purge_queue", "purge_queue <queue>", (1, 1))
def _purge_queue(inv: Invocation) -> None:
    inv.say(f"Purging queue '{inv.arguments[0]}' in vhost '{inv.vhost}' ...")
    inv.ask("purge_queue", queue=inv.arguments[0], vhost=inv.vhost)


@command("delete_queue", "delete_queue <queue_name> [--if-empty|-e] [--if-unused|-u]", (1, 1))
def _delete_queue(inv: Invocation) -> None:
    name = inv.arguments[0]
    conditions = [text for key, text in (("if_empty", "if queue is empty"),
                                         ("if_unused", "if queue is unused"))
                  if inv.options.get(key)]
    inv.say(f"Deleting queue '{name}' on vhost '{inv.vhost}' "
            + (" and ".join(conditions) + " " if conditions else "") + "...")
    count = inv.ask("delete_queue", queue=name, vhost=inv.vhost,
                    if_empty=bool(inv.options.get("if_empty")),
                    if_unused=bool(inv.options.get("if_unused")))
    print(f"Queue was successfully deleted with {count} ready messages", file=inv.out)


@command("close_connection", "close_connection <connection pid> <explanation>", (2, 2))
def _close_connection(inv: Invocation) -> None:
    pid, reason = inv.arguments
    inv.say(f"Closing connection {pid}, reason: {reason}...")
    inv.ask("close_connection", pid=pid, reason=reason)


@command("close_all_connections", "close_all_connections [--vhost <vhost> --limit <limit>] "
         "[-n <node> --global] [--per-connection-delay <delay>] <explanation>", (1, 1))
def _close_all_connections(inv: Invocation) -> None:
    reason = inv.arguments[0]
    every = bool(inv.options.get("global"))
    limit = int(inv.options.get("limit", 0) or 0)
    if every:
        inv.say(f"Closing all connections to node {inv.node} (across all vhosts), reason: "
                f"{reason}...")
    elif limit == 0:
        inv.say(f"Closing all connections in vhost {inv.vhost}, reason: {reason}...")
    else:
        inv.say(f"Closing {limit} connections in vhost {inv.vhost}, reason: {reason}...")
    closed = inv.ask("close_all_connections", reason=reason,
                     vhost=None if every else inv.vhost, limit=limit or None)
    print(f"Closed {len(closed)} connections", file=inv.out)


@command("trace_on", "trace_on [--vhost <vhost>]")
def _trace_on(inv: Invocation) -> None:
    inv.say(f'Starting tracing for vhost "{inv.vhost}" ...')
    inv.ask("trace", vhost=inv.vhost, on=True)
    print(f'Trace enabled for vhost {inv.vhost}', file=inv.out)


@command("trace_off", "trace_off [--vhost <vhost>]")
def _trace_off(inv: Invocation) -> None:
    inv.say(f'Stopping tracing for vhost "{inv.vhost}" ...')
    inv.ask("trace", vhost=inv.vhost, on=False)
    print(f'Trace disabled for vhost {inv.vhost}', file=inv.out)


@command("export_definitions", 'export_definitions <file_path | "-"> [--format <json | erlang>]',
         (1, 1))
def _export_definitions(inv: Invocation) -> None:
    path = inv.arguments[0]
    document = inv.ask("export_definitions")
    text = json_dumps(document, separators=(",", ":"))
    if path == "-":
        print(text, file=inv.out)
        return
    inv.say(f'Exporting definitions in JSON to a file at "{path}" ...')
    try:
        rewrite_file(path, text.encode(), mode=0o600)  # (it holds the users' password hashes)
    except OSError as exc:
        raise ControlError(f"could not write to {path}: {exc.strerror}", EX_SOFTWARE) from None
    except UntrustedPath as exc:
        raise ControlError(f"could not write to {path}: {exc}", EX_SOFTWARE) from None


@command("import_definitions", 'import_definitions <file_path | "-"> [--format <json | erlang>] '
         "[--skip-if-unchanged]", (0, 1))
def _import_definitions(inv: Invocation) -> None:
    """RabbitMQ's checks of the file are the tool's (its texts, exit 65); the document is read
    and checked by the node's model (``Broker.load_definitions``), which says what is wrong
    with it: the file by its absolute path (the node is this user's, on this machine), standard
    input as its text."""
    path = inv.arguments[0] if inv.arguments else "-"
    if path == "-":
        inv.say("Importing definitions in JSON from standard input ...")
        raw = getattr(sys.stdin, "buffer", None)
        text = raw.read().decode("utf-8", "surrogateescape") if raw is not None else \
            sys.stdin.read()
        inv.ask("import_definitions", text=text)
    else:
        file = Path(path)
        if not file.exists():
            raise UsageError(f"Bad argument: File {path} does not exist", EX_DATAERR)
        inv.say(f'Importing definitions in JSON from a file at "{path}" ...')
        if file.is_dir():
            raise ControlError(f"Path {path} is a directory", EX_DATAERR)
        if not os.access(file, os.R_OK):
            raise ControlError(f"No permissions to read from file {path} or its parent "
                               "directory", EX_DATAERR)
        if file.stat().st_size == 0:
            raise ControlError(f"File {path} is zero-sized", EX_DATAERR)
        inv.ask("import_definitions", path=os.path.abspath(file))
    print("Successfully started definition import. This process is asynchronous and can "
          "take some time.", file=inv.out)


# -- the node -----------------------------------------------------------------------------------

@command("version", "version", (0, 0), ("rabbitmqctl", "rabbitmq-diagnostics"), timeout=False)
def _version(inv: Invocation) -> None:
    """The tools' own version (RabbitMQ's: no node is asked)."""
    formatter = inv.options.get("formatter")
    if formatter == "json":
        print(json_dumps({"node": inv.node, "result": "ok", "value": {"version": CLI_VERSION}},
                         separators=(",", ":")), file=inv.out)
    elif formatter == "csv":
        print(f'"version"\n"{CLI_VERSION}"', file=inv.out)
    else:
        print(CLI_VERSION, file=inv.out)


@command("ping", "ping", (0, 0), ("rabbitmqctl", "rabbitmq-diagnostics"))
def _ping(inv: Invocation) -> None:
    inv.say(f"Will ping {inv.node}. This only checks if the OS process is running and "
            "registered with epmd. Timeout: 60000 ms.")
    try:
        inv.ask("ping")
    except NodeUnreachable:
        raise ControlError(f"Failed to connect and authenticate to {inv.node} in "
                           f"{int(inv.timeout * 1000)} ms", EX_UNAVAILABLE) from None
    print("Ping succeeded", file=inv.out)


@command("await_startup", "await_startup", (0, 0), ("rabbitmqctl", "rabbitmq-diagnostics"))
def _await_startup(inv: Invocation) -> None:
    deadline = time.monotonic() + (inv.timeout if "timeout" in inv.options else 300.0)
    while True:
        try:
            if inv.ask("await_startup"):
                return
        except NodeUnreachable:
            if time.monotonic() >= deadline:
                raise
        if time.monotonic() >= deadline:
            raise ControlError(f"Error: timed out while waiting for the rabbit application "
                               f"to start on node {inv.node}", EX_SOFTWARE, plain=True)
        time.sleep(0.05)


@command("wait", "wait [<pidfile>] [--pid|-P <pid>]", (0, 1))
def _wait(inv: Invocation) -> None:
    """As RabbitMQ's: the pid file's pid (or ``--pid``), then the node's application; a pid
    file that does not appear in time is exit 75 with the timeout in milliseconds."""
    pid = inv.options.get("pid")
    timed_out = ControlError(f"Error: operation wait on node {inv.node} timed out. Timeout "
                             f"value used: {int(inv.timeout * 1000)}", EX_TEMPFAIL, plain=True)
    if inv.arguments:
        path = Path(inv.arguments[0])
        inv.say(f"Waiting for pid file '{path}' to appear")
        deadline = time.monotonic() + inv.timeout
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            pid = path.read_text().strip()
        except OSError:
            raise timed_out from None
        inv.say(f"pid is {pid}")
    inv.say(f"Waiting for erlang distribution on node '{inv.node}' while OS process "
            f"'{pid}' is running")
    inv.say(f"Waiting for applications 'rabbit_and_plugins' to start on node '{inv.node}'")
    _await_startup(inv)
    inv.say(f"Applications 'rabbit_and_plugins' are running on node '{inv.node}'")


_simple("stop_app", "stop_app", (0, 0),
        lambda inv: f"Stopping rabbit application on node {inv.node} ...", "stop_app",
        lambda inv: {})
_simple("start_app", "start_app", (0, 0), lambda inv: f"Starting node {inv.node} ...",
        "start_app", lambda inv: {})
_simple("reset", "reset", (0, 0), lambda inv: f"Resetting node {inv.node} ...", "reset",
        lambda inv: {})
_simple("force_reset", "force_reset", (0, 0),  # (one node: a reset)
        lambda inv: f"Forcefully resetting node {inv.node} ...", "reset", lambda inv: {})


@command("join_cluster", "join_cluster [--disc|--ram] <existing_cluster_member>", (1, 1))
def _join_cluster(inv: Invocation) -> int | None:
    """As RabbitMQ 3.10.8's (live: a node whose application runs is refused before the banner,
    64 with the usage; a member of its own cluster is "already a member", 0). embroker's nodes
    form a cluster in one process: a node of another is refused, 69, with why."""
    member = inv.arguments[0]
    try:
        inv.ask("join_cluster", member=member)
    except ControlError as exc:
        if exc.code == EX_USAGE:
            print(f"Error: {exc.message}\nArguments given:\n\t{' '.join(inv.given)}\n"
                  f"{usage_text(inv.tool, COMMANDS['join_cluster'])}", end="", file=inv.err)
            return EX_USAGE
        inv.say(f"Clustering node {inv.node} with {member}")
        raise
    inv.say(f"Clustering node {inv.node} with {member}")
    inv.say("The node is already a member of this cluster")
    return None


_simple("forget_cluster_node", "forget_cluster_node [--offline] <existing_cluster_member_node>",
        (1, 1), lambda inv: f"Removing node {inv.arguments[0]} from the cluster",
        "forget_cluster_node", lambda inv: {"node": inv.arguments[0]})


@command("stop", "stop [--idempotent] [<pidfile>]", (0, 1))
def _stop(inv: Invocation) -> int | None:
    """As RabbitMQ's (``rabbit:stop_and_halt`` by rpc): it returns once the node is down (its
    ports closed, its name free), not when its process has ended (a parent may not have
    reaped it yet); with a pid file, once that process has ended too (RabbitMQ's
    ``OsPid.wait_for_os_process_death``)."""
    pidfile = inv.arguments[0] if inv.arguments else None
    inv.say(f"Stopping and halting node {inv.node}"
            + (f" (will monitor pid file {pidfile})" if pidfile else "") + " ...")
    try:
        entry = inv.entry()
    except NodeUnreachable:
        if inv.options.get("idempotent"):
            print(f"Node {inv.node} is no longer running", file=inv.out)
            return None
        raise
    pid = _pid_from_file(pidfile) if pidfile is not None else None
    call(entry, "stop", timeout=inv.timeout)
    deadline = time.monotonic() + inv.timeout
    if not _poll(lambda: not _node_up(entry), deadline):
        raise ControlError(f"Error: operation stop on node {inv.node} timed out. Timeout value "
                           f"used: {int(inv.timeout * 1000)}", EX_TEMPFAIL, plain=True)
    if pid is not None and pidfile is not None:
        _poll(lambda: not process_alive(pid), float("inf"))
        print(f"process {pid} (take from pid file {pidfile}) is no longer running",
              file=inv.out)
    return None


def _pid_from_file(path: str) -> int:
    """The pid a node's pid file holds (RabbitMQ's ``OsPid.read_pid_from_file``: its leading
    digits)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ControlError(f"could not read pid from file {path}. Error: "
                           f"{(exc.strerror or str(exc)).lower()}", EX_SOFTWARE) from None
    digits = text.lstrip()[:len(text.lstrip()) - len(text.lstrip().lstrip("0123456789"))]
    if not digits:
        raise ControlError(f"could not read pid from file {path}. File contents: {text}",
                           EX_SOFTWARE)
    return int(digits)


#: How soon the tools look again at what they wait for (a node going down, its process
#: ending): at first, then twice as late each time, up to the most.
POLL_INTERVAL, POLL_INTERVAL_MAX = 0.01, 0.1


def _poll(done: Callable[[], bool], deadline: float) -> bool:
    """Wait until ``done()``; whether it came before ``deadline`` (``time.monotonic()``)."""
    interval = POLL_INTERVAL
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
        interval = min(interval * 2, POLL_INTERVAL_MAX)
    return True


def _node_up(entry: NodeEntry) -> bool:
    """Whether the node still serves: its control port accepts (a node that stops closes every
    port at once; the probe closes at once, which the node sees and drops) and its process
    runs."""
    if not process_alive(entry.pid):
        return False
    try:
        socket.create_connection(("127.0.0.1", entry.control_port), timeout=1).close()
    except OSError:
        return False
    return True


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, ended but not reaped by its parent, does
    not)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # (no /proc: the kill says it runs)
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


_UNITS = {"kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2, "gb": 1000**3,
          "gib": 1024**3, "tb": 1000**4, "tib": 1024**4, "pb": 1000**5, "pib": 1024**5,
          "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}


def parse_bytes(text: str) -> int | None:
    """An amount of memory as RabbitMQ's tools take it (``1000000``, ``50MB``, ``2GiB``,
    ``1k``): bytes, or ``None`` when it is not one."""
    stripped = text.strip()
    digits = len(stripped) - len(stripped.lstrip("0123456789"))
    number, unit = stripped[:digits], stripped[digits:].lower()
    if not number:
        return None
    if not unit:
        return int(number)
    factor = _UNITS.get(unit)
    return int(number) * factor if factor is not None else None


@command("set_vm_memory_high_watermark",
         "set_vm_memory_high_watermark <fraction> | absolute <value>", (1, 2))
def _set_vm_memory_high_watermark(inv: Invocation) -> None:
    if inv.arguments[0] == "absolute":
        if len(inv.arguments) != 2:
            raise UsageError("not enough arguments.")
        amount = parse_bytes(inv.arguments[1])
        if amount is None:
            raise UsageError("Bad argument.", EX_DATAERR)
        inv.say(f"Setting memory threshold on {inv.node} to {inv.arguments[1]} bytes ...")
        inv.ask("set_vm_memory_high_watermark", absolute=amount)
        return
    if len(inv.arguments) != 1:
        raise UsageError("too many arguments.")
    try:
        fraction = float(inv.arguments[0])
    except ValueError:
        raise UsageError("Bad argument: The threshold should be a fraction between 0.0 and "
                         "1.0", EX_DATAERR) from None
    if not 0.0 <= fraction <= 1.0:
        raise UsageError("Bad argument: The threshold should be a fraction between 0.0 and 1.0",
                         EX_DATAERR)
    inv.say(f"Setting memory threshold on {inv.node} to {inv.arguments[0]} ...")
    inv.ask("set_vm_memory_high_watermark", fraction=fraction)


@command("set_disk_free_limit", "set_disk_free_limit <disk_limit> | mem_relative <fraction>",
         (1, 2))
def _set_disk_free_limit(inv: Invocation) -> None:
    if inv.arguments[0] == "mem_relative":
        if len(inv.arguments) != 2:
            raise UsageError("not enough arguments.")
        try:
            fraction = float(inv.arguments[1])
        except ValueError:
            raise UsageError("Bad argument.", EX_DATAERR) from None
        inv.say(f"Setting disk free limit on {inv.node} to {inv.arguments[1]} times the "
                "total RAM ...")
        inv.ask("set_disk_free_limit", mem_relative=fraction)
        return
    if len(inv.arguments) != 1:
        raise UsageError("too many arguments.")
    amount = parse_bytes(inv.arguments[0])
    if amount is None:
        raise UsageError("Bad argument.", EX_DATAERR)
    inv.say(f"Setting disk free limit on {inv.node} to {inv.arguments[0]} bytes ...")
    inv.ask("set_disk_free_limit", absolute=amount)


@command("status", "status [--unit <unit>]", (0, 0), ("rabbitmqctl", "rabbitmq-diagnostics"))
def _status(inv: Invocation) -> None:
    inv.say(f"Status of node {inv.node} ...")
    status = inv.ask("status")
    if inv.options.get("formatter") == "json":
        print(json_dumps(status, separators=(",", ":")), file=inv.out)
        return
    out = inv.out

    def bold(text: str) -> str:
        return f"{BOLD}{text}{PLAIN}"

    print(f"{bold('Runtime')}\n\nOS PID: {status['pid']}\nOS: {sys.platform.capitalize()}\n"
          f"Uptime (seconds): {status['uptime']}\nIs under maintenance?: false\n"
          f"RabbitMQ version: {status['rabbitmq_version']}\n"
          f"Node name: {status['node']}\nembroker version: {status['version']}\n", file=out)
    plugins = status["plugins"]
    print(f"{bold('Plugins')}\n\nEnabled plugin file: {plugins['file']}\nEnabled plugins:\n",
          file=out)
    for name in plugins["enabled"]:
        print(f" * {name}", file=out)
    print(f"\n{bold('Data directory')}\n\nNode data directory: {status['data_dir']}\n", file=out)
    print(f"{bold('Config files')}\n", file=out)
    for path in status["config_files"]:
        print(f" * {path}", file=out)
    print(f"\n{bold('Log file(s)')}\n", file=out)
    if status["log_file"]:
        print(f" * {status['log_file']}", file=out)
    print(f"\n{bold('Alarms')}\n", file=out)
    print("\n".join(f"{alarm} alarm" for alarm in status["alarms"]) or
          "(none)", file=out)
    watermark = status.get("vm_memory_high_watermark")
    print(f"\n{bold('Memory')}\n\nTotal memory used: {status.get('memory_used')} bytes\n"
          f"Memory high watermark setting: {table_value(watermark)}\n", file=out)
    print(f"{bold('Free Disk Space')}\n\nLow free disk space watermark: "
          f"{table_value(status.get('disk_free_limit'))} bytes\n", file=out)
    print(f"{bold('Totals')}\n\nConnection count: {status['connections']}\n"
          f"Queue count: {status['queues']}\nVirtual host count: {status['vhosts']}\n",
          file=out)
    print(f"{bold('Listeners')}\n", file=out)
    for listener in status["listeners"]:
        print(f"Interface: {listener['interface']}, port: {listener['port']}, protocol: "
              f"{listener['protocol']}, purpose: {listener['purpose']}", file=out)


#: What RabbitMQ's tools say where a command needs the application running on a node where
#: it is stopped (rabbitmqctl.ex, format_validation_error(:rabbit_app_is_stopped), v3.10.8).
APP_STOPPED = ("this command requires the 'rabbit' app to be running on the target node. Start "
               "it with 'rabbitmqctl start_app'.")
#: How cluster_status names an alarm's resource (RabbitMQ's CLI ``Core.Alarms.alarm_lines/2``).
_ALARM_LINES = {"memory": "Memory alarm on node {}", "disk": "Free disk space alarm on node {}"}


@command("cluster_status", "cluster_status", (0, 0), ("rabbitmqctl", "rabbitmq-diagnostics"))
def _cluster_status(inv: Invocation) -> None:
    """As RabbitMQ 3.10.8's (``cluster_status_command.ex``): the JSON formatter's map, or its
    sections, each node list sorted, each per-node map in order of node name. It needs the
    node's RabbitMQ application running (RequiresRabbitAppRunning: exit 64)."""
    if not inv.ask("await_startup"):
        raise ControlError(f"Error: {APP_STOPPED}", EX_USAGE, plain=True)
    inv.say(f"Cluster status of node {inv.node} ...")
    status = inv.ask("cluster_status")
    if inv.options.get("formatter") == "json":
        print(json_dumps(status, separators=(",", ":"), sort_keys=True), file=inv.out)
        return

    def section(title: str, lines: Sequence[str]) -> list[str]:
        return [f"\n{BOLD}{title}{PLAIN}\n", *lines]

    def by_node(mapping: Mapping[str, Any]) -> list[tuple[str, Any]]:
        return sorted(mapping.items())

    lines = [f"{BOLD}Basics{PLAIN}\n", f"Cluster name: {status['cluster_name']}"]
    lines += section("Disk Nodes", sorted(status["disk_nodes"]))
    if status["ram_nodes"]:
        lines += section("RAM Nodes", sorted(status["ram_nodes"]))
    lines += section("Running Nodes", sorted(status["running_nodes"]))
    lines += section("Versions", [
        f"{node}: {v['rabbitmq_name']} {v['rabbitmq_version']} on Erlang {v['erlang_version']}"
        for node, v in by_node(status["versions"])])
    lines += section("Maintenance status", [f"Node: {node}, status: {state}"
                                            for node, state in by_node(status["maintenance_status"])])
    lines += section("Alarms", [_ALARM_LINES.get(a["resource"], "{} alarm").format(a["node"])
                                for a in status["alarms"]] or ["(none)"])
    lines += section("Network Partitions", [
        f"Node {node} cannot communicate with {', '.join(peers)}"
        for node, peers in by_node(status["partitions"])] or ["(none)"])
    lines += section("Listeners", [
        f"Node: {node}, interface: {x['interface']}, port: {x['port']}, protocol: "
        f"{x['protocol']}, purpose: {x['purpose']}"
        for node, listeners in by_node(status["listeners"]) for x in listeners]
        if status["listeners"] else ["(none)"])
    lines += section("Feature flags", [f"Flag: {flag['name']}, state: {flag['state']}"
                                       for flag in status["feature_flags"]] or ["(none)"])
    print("\n".join(lines), file=inv.out)


# -- rabbitmq-diagnostics -----------------------------------------------------------------------

_DIAGNOSTICS = ("rabbitmq-diagnostics",)


@command("check_running", "check_running", (0, 0), _DIAGNOSTICS)
def _check_running(inv: Invocation) -> None:
    inv.say(f"Checking if RabbitMQ is running on node {inv.node} ...")
    if not inv.ask("await_startup"):
        raise ControlError(f"Error:\nRabbitMQ on node {inv.node} is not running or has not "
                           "fully booted yet (check with is_booting)", EX_SOFTWARE, plain=True)
    print(f"RabbitMQ on node {inv.node} is fully booted and running", file=inv.out)


@command("is_running", "is_running", (0, 0), _DIAGNOSTICS)
def _is_running(inv: Invocation) -> None:
    inv.say(f"Asking node {inv.node} for its status ...")
    if inv.ask("await_startup"):
        print(f"RabbitMQ on node {inv.node} is fully booted and running", file=inv.out)
    else:
        print(f"RabbitMQ on node {inv.node} is not running or has not fully booted yet",
              file=inv.out)


@command("server_version", "server_version", (0, 0), _DIAGNOSTICS)
def _server_version(inv: Invocation) -> None:
    inv.say(f"Asking node {inv.node} for its RabbitMQ version...")
    version = inv.ask("status")["rabbitmq_version"]
    if inv.options.get("formatter") == "json":  # (RabbitMQ's: no node key here)
        print(json_dumps({"result": "ok", "value": version}, separators=(",", ":")),
              file=inv.out)
    else:
        print(version, file=inv.out)


@command("check_virtual_hosts", "check_virtual_hosts", (0, 0), _DIAGNOSTICS)
def _check_virtual_hosts(inv: Invocation) -> None:
    inv.say(f"Checking if all vhosts are running on node {inv.node} ...")
    inv.ask("ping")  # (an embroker vhost cannot be down: it is objects in the broker)
    print(f"Node {inv.node} reported all vhosts as running", file=inv.out)


@command("check_local_alarms", "check_local_alarms", (0, 0), _DIAGNOSTICS)
def _check_local_alarms(inv: Invocation) -> None:
    inv.say(f"Asking node {inv.node} to report any local resource alarms ...")
    alarms = inv.ask("alarms")
    if alarms:
        raise ControlError("Error:\n" + "\n".join(
            f"Node {inv.node} reported an alarm: {alarm}" for alarm in alarms), 69, plain=True)
    print(f"Node {inv.node} reported no local alarms", file=inv.out)


@command("alarms", "alarms", (0, 0), _DIAGNOSTICS)
def _alarms(inv: Invocation) -> None:
    inv.say(f"Asking node {inv.node} to report any known resource alarms ...")
    alarms = inv.ask("cluster_alarms")  # (every node's, each with its node)
    if inv.options.get("formatter") == "json":
        print(json_dumps([{"node": a["node"], "resource": a["resource"],
                           "type": "resource_alarm"} for a in alarms],
                         separators=(",", ":")), file=inv.out)
        return
    if not alarms:
        print(f"Node {inv.node} reported no alarms, local or clusterwide", file=inv.out)
    for alarm in alarms:
        print(f"{alarm['resource']} alarm on node {alarm['node']}", file=inv.out)


@command("listeners", "listeners", (0, 0), _DIAGNOSTICS)
def _listeners(inv: Invocation) -> None:
    inv.say(f"Asking node {inv.node} to report its protocol listeners ...")
    found = inv.ask("listeners")
    if inv.options.get("formatter") == "json":
        print(json_dumps(found, separators=(",", ":")), file=inv.out)
        return
    for listener in found:
        print(f"Interface: {listener['interface']}, port: {listener['port']}, protocol: "
              f"{listener['protocol']}, purpose: {listener['purpose']}", file=inv.out)


@command("check_port_connectivity", "check_port_connectivity", (0, 0), _DIAGNOSTICS)
def _check_port_connectivity(inv: Invocation) -> None:
    import socket

    inv.say(f"Testing TCP connections to all active listeners on node {inv.node} ...")
    found = inv.ask("listeners")
    for listener in found:
        try:
            socket.create_connection(("127.0.0.1", listener["port"]), timeout=inv.timeout).close()
        except OSError:
            raise ControlError(f"Error:\nConnection to ports of the following listeners on node "
                               f"{inv.node} failed: port {listener['port']}", EX_SOFTWARE,
                               plain=True) from None
    print(f"Successfully connected to ports "
          f"{', '.join(sorted(str(listener['port']) for listener in found))} on node "
          f"{inv.node}.", file=inv.out)


@command("check_port_listener", "check_port_listener <port>", (1, 1), _DIAGNOSTICS)
def _check_port_listener(inv: Invocation) -> None:
    try:
        port = int(inv.arguments[0])
    except ValueError:
        raise UsageError("port must be a number") from None
    inv.say(f"Checking if node {inv.node} has a listener on port {port} ...")
    if not any(listener["port"] == port for listener in inv.ask("listeners")):
        raise ControlError(f"Error:\nNo listener for port {port} is active on node "
                           f"{inv.node}. Found listeners that use the following ports: "
                           f"{', '.join(str(x['port']) for x in inv.ask('listeners'))}",
                           EX_SOFTWARE, plain=True)
    print(f"A listener for port {port} is running on node {inv.node}.", file=inv.out)


@command("environment", "environment", (0, 0), ("rabbitmqctl", "rabbitmq-diagnostics"))
def _environment(inv: Invocation) -> None:
    inv.say(f"Application environment of node {inv.node} ...")
    print(json_dumps(inv.ask("environment"), separators=(",", ":")), file=inv.out)


# rabbitmq-queues' commands (and the ones rabbitmq-diagnostics shares with it) join the table.
from . import _queues_cli  # noqa: E402,F401
