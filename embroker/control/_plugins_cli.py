"""``rabbitmq-plugins`` for embroker nodes: ``list``, ``is_enabled``, ``enable``, ``disable``
and ``directories``, printed as RabbitMQ 3.10.8's tool prints them.

The plugins are the ones embroker has: the exchange types (``rabbitmq_consistent_hash_exchange``
and the others of ``Broker(plugins=...)``) and the listeners (``rabbitmq_management``,
``rabbitmq_stream``, and ``rabbitmq_amqp1_0``: AMQP 1.0 on the AMQP ports, which ``embroker
serve`` serves by default and ``rabbitmq-server`` as its enabled-plugins file says). As
RabbitMQ's tool, ``enable`` and
``disable`` write the enabled-plugins file its own environment names
(``RABBITMQ_ENABLED_PLUGINS_FILE``, else /etc/rabbitmq/enabled_plugins), refusing a node that
uses another, then the running node applies the configuration at once: an exchange type's
plugin starts or stops, a listener's port (management, stream, STOMP, Web-STOMP, MQTT,
Web-MQTT) opens or closes. ``--offline``
writes the file alone.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from .. import _regex
from .._hostfiles import UntrustedPath, rewrite_file
from .._listener_plugins import PROTOCOLS
from ._client import NodeUnreachable
from ._ctl import COMMANDS, Invocation, UsageError, _unreachable, parse
from ._help import BOLD, PLAIN, usage
from ._protocol import EX_DATAERR, EX_SOFTWARE, EX_UNAVAILABLE, EX_USAGE, ControlError

__all__ = ["main"]

#: The plugins embroker has (for ``--offline``, which asks no node): the exchange types' and
#: the listeners'.
_AVAILABLE = tuple(sorted((
    "rabbitmq_amqp1_0", "rabbitmq_consistent_hash_exchange",
    "rabbitmq_delayed_message_exchange", "rabbitmq_event_exchange", "rabbitmq_management",
    "rabbitmq_random_exchange", "rabbitmq_recent_history_exchange", "rabbitmq_sharding",
    "rabbitmq_stream", *(plugin for p in PROTOCOLS for plugin in (p.plugin, p.web_plugin)))))

_USAGES = {
    "list": "list [pattern] [--verbose] [--minimal] [--enabled] [--implicitly-enabled]",
    "enable": "enable <plugin1> [ <plugin2>] | --all [--offline] [--online]",
    "disable": "disable <plugin1> [ <plugin2>] | --all [--offline] [--online]",
    "is_enabled": "is_enabled <plugin1> [ <plugin2>] [--offline] [--online]",
    "directories": "directories [--offline] [--online]",
}


def _version(state: dict[str, Any]) -> str:
    return str(state.get("rabbitmq_version") or state.get("version"))


def _list(inv: Invocation, state: dict[str, Any]) -> None:
    pattern = inv.arguments[0] if inv.arguments else ".*"
    try:  # (a client's pattern: compiled within embroker._regex's bounds, as the broker's are)
        compiled = _regex.compile_set(pattern)
    except _regex.error as exc:
        # RabbitMQ's tool crashes on its banner's heels: Regex.compile!'s match error.
        inv.say(f'Listing plugins with pattern "{pattern}" ...')
        raise ControlError(f"{{:badmatch, {{:error, {{'{exc.msg}', {exc.pos or 0}}}}}}}",
                           EX_SOFTWARE) from None
    enabled = set(state["enabled"])
    names = [n for n in state["available"] if compiled.search(n)]
    if inv.options.get("enabled") or inv.options.get("implicit"):
        names = [n for n in names if n in enabled]
    if inv.options.get("formatter") == "json":
        version = [ord(c) for c in _version(state)]
        print(json.dumps({"format": "normal", "plugins": [
            {"enabled": "enabled" if n in enabled else "not_enabled", "name": n,
             "running": n in enabled, "running_version": version if n in enabled else "",
             "version": version} for n in names]}, separators=(",", ":")), file=inv.out)
        return
    inv.say(f'Listing plugins with pattern "{pattern}" ...')
    if inv.options.get("minimal"):
        for name in names:
            print(name, file=inv.out)
        return
    if not inv.quiet:
        print(" Configured: E = explicitly enabled; e = implicitly enabled\n"
              f" | Status: * = running on {inv.node}\n |/", file=inv.out)
    width = max(map(len, names), default=0)
    for name in names:
        mark = "[E*]" if name in enabled else "[  ]"
        print(f"{mark} {name.ljust(width)} {_version(state)}", file=inv.out)


#: Where RabbitMQ's tools read and write the enabled plugins without
#: ``RABBITMQ_ENABLED_PLUGINS_FILE`` (Debian's and the generic packages' path).
DEFAULT_ENABLED_PLUGINS_FILE = "/etc/rabbitmq/enabled_plugins"


def _write_enabled(path: Path, names: Sequence[str]) -> None:
    """The file as RabbitMQ writes it: an Erlang list of atoms (in place, its owner and mode
    kept; never through a link: embroker._hostfiles.rewrite_file)."""
    rewrite_file(path, ("[" + ",".join(names) + "].\n").encode())


def _change(inv: Invocation, state: dict[str, Any] | None, enable: bool) -> int | None:
    """``enable``/``disable``: the tool's enabled-plugins file is written (the one its own
    environment names, as RabbitMQ's), then, on line, the running node applies it."""
    available = sorted(state["available"]) if state is not None else sorted(_AVAILABLE)
    wanted = available if inv.options.get("all") else list(inv.arguments)
    inv.say(f"{'Enabling' if enable else 'Disabling'} plugins on node {inv.node}:\n"
            + "\n".join(wanted))
    unknown = [n for n in wanted if n not in available]
    if enable and unknown:
        raise ControlError("{:plugins_not_found, [" + ", ".join(f":{n}" for n in unknown)
                           + "]}", EX_SOFTWARE)
    path = Path(inv.environ.get("RABBITMQ_ENABLED_PLUGINS_FILE")
                or DEFAULT_ENABLED_PLUGINS_FILE)
    if state is not None and state["file"] and Path(state["file"]) != path:
        raise ControlError(f" Could not update enabled plugins file at {path}: target node "
                           f"{inv.node} uses a different path ({state['file']})", EX_DATAERR,
                           plain=True)
    before = set(state["enabled"]) if state is not None else _read_enabled(path)
    configured = sorted(before | set(wanted) if enable else before - set(wanted))
    if configured:
        print("The following plugins have been configured:\n"
              + "".join(f"  {n}\n" for n in configured), end="", file=inv.out)
    else:
        print("All plugins have been disabled.", file=inv.out)
    before_bytes: bytes | None = None
    if state is None or state["file"]:
        try:
            before_bytes = path.read_bytes() if path.exists() else None
            _write_enabled(path, configured)
        except OSError as exc:
            raise ControlError(f"Could not update enabled plugins file at {path}: "
                               f"{exc.strerror}", EX_SOFTWARE) from None
        except UntrustedPath as exc:
            raise ControlError(f"Could not update enabled plugins file: {exc}",
                               EX_SOFTWARE) from None
    if state is None:
        print("Offline change; changes will take effect at broker restart.", file=inv.out)
        return None
    print(f"Applying plugin configuration to {inv.node}...", file=inv.out)
    try:
        applied = inv.ask("apply_plugins", enabled=configured)
    except ControlError:
        # The node refused (a listener's port is taken) and changed nothing: the file is put
        # back as it was, so that the node's next start does not fail on it (RabbitMQ's keeps
        # the new list).
        if state["file"]:
            _restore(path, before_bytes)
        raise
    if not applied["started"] and not applied["stopped"]:
        print("Plugin configuration unchanged.", file=inv.out)
        return None
    for key, verb in (("started", "enabled"), ("stopped", "disabled")):
        if applied[key]:
            print(f"The following plugins have been {verb}:\n"
                  + "".join(f"  {n}\n" for n in applied[key])
                  + f"\n{'started' if key == 'started' else 'stopped'} {len(applied[key])} "
                  "plugins.", file=inv.out)
    return None


def _restore(path: Path, content: bytes | None) -> None:
    """The enabled-plugins file as it was (``None``: there was none)."""
    try:
        if content is None:
            path.unlink(missing_ok=True)
        else:
            rewrite_file(path, content)
    except (OSError, UntrustedPath) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        print(f"Could not restore enabled plugins file at {path}: {reason}", file=sys.stderr)


def _read_enabled(path: Path) -> set[str]:
    """The plugins an enabled-plugins file lists (none when it is missing)."""
    try:
        text = path.read_text()
    except OSError:
        return set()
    return {name.strip() for name in text.strip().rstrip(".").strip("[]").split(",")
            if name.strip()}


def _is_enabled(inv: Invocation, state: dict[str, Any]) -> None:
    for name in inv.arguments:
        inv.say(f"Asking node {inv.node} if plugin {name} is enabled...")
        if name not in state["enabled"]:
            raise ControlError(f"Plugin {name} is not enabled on node {inv.node}. Enabled "
                               f"plugins and dependencies: {', '.join(state['enabled'])}",
                               EX_UNAVAILABLE)
        print(f"Plugin {name} is enabled on node {inv.node}", file=inv.out)


def main(argv: Sequence[str], *, out: IO[str] | None = None, err: IO[str] | None = None,
         environ: Any = None) -> int:
    """Run one ``rabbitmq-plugins`` command line; its exit code."""
    import os

    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    flags = {"-e": "enabled", "--enabled": "enabled", "-E": "enabled",
             "--implicitly-enabled": "implicit", "-m": "minimal", "--minimal": "minimal",
             "-v": "verbose", "--verbose": "verbose", "--all": "all", "--offline": "offline",
             "--online": "online"}
    options: dict[str, Any] = {flags[a]: True for a in argv if a in flags}
    try:
        name, arguments, parsed = parse("rabbitmq-plugins", [a for a in argv if a not in flags])
    except UsageError as exc:
        print(f"Error: {exc}", file=err)
        return EX_USAGE
    options.update(parsed)
    inv = Invocation("rabbitmq-plugins", name or "", arguments, options, out, err,
                     os.environ if environ is None else environ, list(argv))
    if name is None and options.get("version"):
        name = "version"
    if name == "version":  # (the tools' own version: no node is asked)
        return COMMANDS["version"].run(inv) or 0
    if name is None or (name == "help" and not arguments):
        # As RabbitMQ's: the usage on stdout and 0 when asked for (help, --help), on stderr
        # and 64 with no command (-h and -? alone too).
        asked = name == "help" or options.get("help") == "--help"
        print(usage("rabbitmq-plugins", _USAGES), end="", file=out if asked else err)
        return 0 if asked else EX_USAGE
    if name == "help" or (options.get("help") and name in _USAGES):
        wanted = arguments[0] if name == "help" else name
        if wanted not in (*_USAGES, "help", "version"):
            print(f"Error:\n\nCommand '{wanted}' not found.", file=err)
            return EX_USAGE
        print(f"\n{BOLD}Usage{PLAIN}\n\nrabbitmq-plugins [--node <node>] [--longnames] "
              f"[--quiet] {_USAGES.get(wanted, wanted)}\n", file=out)
        return 0
    if name not in _USAGES:
        close = difflib.get_close_matches(name, list(_USAGES), n=1)
        if close:
            print(f"\nCommand '{name}' not found. \nDid you mean '{close[0]}'? \n", file=err)
        else:
            print(f"\nCommand '{name}' not found. \n" + usage("rabbitmq-plugins", _USAGES),
                  end="", file=err)
        return EX_USAGE
    if name in ("enable", "disable", "is_enabled") and not arguments and \
            not options.get("all"):
        print(f"Error (argument validation): not enough arguments.\nArguments given:\n\t"
              f"{' '.join(argv)}\n\n{BOLD}Usage{PLAIN}\n\nrabbitmq-plugins [--node <node>] "
              f"[--longnames] [--quiet] {_USAGES[name]}", file=err)
        return EX_USAGE
    if name in ("enable", "disable") and options.get("offline"):
        try:
            return _change(inv, None, name == "enable") or 0
        except ControlError as exc:
            print(exc.message if exc.plain else f"Error:\n{exc.message}", file=err)
            return exc.code
    try:
        state = inv.ask("plugins")
        if name == "list":
            _list(inv, state)
        elif name == "is_enabled":
            _is_enabled(inv, state)
        elif name == "directories":
            print(f"Listing plugin directories used by node {inv.node}\nPlugin archives "
                  f"directory: (built into embroker)\nPlugin expansion directory: (none)\n"
                  f"Enabled plugins file: {state['file']}", file=out)
        else:
            return _change(inv, state, name == "enable") or 0
    except NodeUnreachable as exc:
        return _unreachable(inv, exc)
    except ControlError as exc:
        print(exc.message if exc.plain else f"Error:\n{exc.message}", file=err)
        return exc.code
    return 0
