"""RabbitMQ's environment as the node and the tools read it alike: the ``RABBITMQ_*``
variables, ``rabbitmq-env.conf``, and the node's name. Light on purpose (the tools import it,
and nothing of the broker).

Theory of operation (RabbitMQ 3.10.8: ``rabbit_env.erl``; the CLI's
``RabbitMQ.CLI.Core.Config`` and ``NodeName``; OTP's ``net_kernel``):

1. Each variable ``RABBITMQ_X`` is read from the environment, else as ``X`` without the prefix
   (``rabbit_env:get_prefixed_env_var/1``); an empty value counts as unset (but
   ``RABBITMQ_ENABLED_PLUGINS=""``, which means no plugin).
2. ``rabbitmq-env.conf`` (``RABBITMQ_CONF_ENV_FILE``, default
   ``$SYS_PREFIX/etc/rabbitmq/rabbitmq-env.conf``) fills in only the variables the
   environment leaves unset: "In order of preference, the startup scripts get their values
   from the environment, from rabbitmq-env.conf and finally from the built-in default values"
   (rabbitmq-env.conf(5)). RabbitMQ sources it with ``sh``; embroker reads its assignments
   (``NAME=value``, ``export NAME=value``, quotes, ``$NAME``/``${NAME}``) and refuses any other
   shell line, naming it. The node (``rabbit_env:get_context/0``) and the tools (the CLI's
   ``Config.get_system_option(:node)`` reads the same context) read it alike.
3. The node's name is :func:`node_name`, the one function both use: ``-n NAME`` (the tools'),
   else ``RABBITMQ_NODENAME`` (or ``NODENAME`` from the file), else ``rabbit``; completed and
   checked as the CLI's ``NodeName.create/2`` does: without ``@HOST``, this host (its short
   name, or with ``RABBITMQ_USE_LONGNAME``/``-l`` its name and domain); with long names a
   host without a dot gets the domain (``/etc/resolv.conf``'s, else ``localdomain``); with
   short names a host with a dot is refused; the part before the ``@`` may hold only letters,
   digits, ``_`` and ``-`` (OTP's ``net_kernel`` refuses any other: "Invalid node name!").
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from ._protocol import EX_DATAERR, ControlError

__all__ = ["ConfigError", "NodeNameError", "environment", "node_name", "prefixed",
           "read_env_file", "short_host", "tool_node_name", "yes"]

#: ``EX_CONFIG`` (sysexits.h): what a tool exits with when RabbitMQ's environment is unreadable.
EX_CONFIG: Final = 78


class ConfigError(Exception):
    """A configuration RabbitMQ would refuse to start with; the message is one line, naming the
    file and line where there is one (``/etc/rabbitmq/rabbitmq.conf:3: ...``)."""


class NodeNameError(ControlError):
    """A node name RabbitMQ's CLI refuses (``{:error, {:node_name, Reason}}``): its text, exit
    65 (``reason`` is its first line, for the node's own refusal)."""

    def __init__(self, reason: str, text: str) -> None:
        super().__init__(text, EX_DATAERR, plain=True)
        self.reason = reason


_LONGNAMES_HINT = "If using FQDN node names, use the -l / --longnames argument"


def prefixed(environ: Mapping[str, str], name: str, *, keep_empty: bool = False) -> str | None:
    """``RABBITMQ_X``, else ``X`` (rabbit_env:get_prefixed_env_var/1); empty is unset."""
    for key in (name, name.removeprefix("RABBITMQ_")):
        value = environ.get(key)
        if value is not None and (value or keep_empty):
            return value
    return None


def yes(value: str) -> bool:
    """rabbit_env's ``value_is_yes/1``."""
    return value.strip().lower() in ("1", "yes", "true")


_SH_ASSIGN = re.compile(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)")
_SH_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def _sh_value(text: str, known: Mapping[str, str], where: str) -> str:
    out: list[str] = []
    i = 0

    def expand(s: str) -> str:
        return _SH_VAR.sub(lambda m: known.get(m.group(1) or m.group(2), ""), s)

    while i < len(text):
        c = text[i]
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise ConfigError(f"{where}: unterminated quote")
            out.append(text[i + 1:end])
            i = end + 1
        elif c == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise ConfigError(f"{where}: unterminated quote")
            out.append(expand(text[i + 1:end]))
            i = end + 1
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            break
        elif c.isspace():
            if text[i:].strip() and not text[i:].strip().startswith("#"):
                raise ConfigError(f"{where}: embroker reads only variable assignments "
                                  "(NAME=value) from rabbitmq-env.conf")
            break
        else:
            j = i
            while j < len(text) and text[j] not in "'\"" and not text[j].isspace():
                j += 1
            out.append(expand(text[i:j]))
            i = j
    return "".join(out)


def read_env_file(path: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables ``rabbitmq-env.conf`` at ``path`` sets (as written: ``NODENAME``,
    ``RABBITMQ_NODE_PORT``...).

    Raises:
        ConfigError: a line that is no assignment, or a file that cannot be read.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it: {exc}") from None
    known = dict(environ)
    found: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _SH_ASSIGN.fullmatch(stripped)
        if match is None:
            raise ConfigError(f"{path}:{number}: embroker reads only variable assignments "
                              f"(NAME=value) from rabbitmq-env.conf, not {stripped!r}")
        value = _sh_value(match.group(2), known, f"{path}:{number}")
        known[match.group(1)] = found[match.group(1)] = value
    return found


def _merge_env_file(environ: Mapping[str, str], file_vars: Mapping[str, str]) -> dict[str, str]:
    """The environment, then rabbitmq-env.conf for what it leaves unset (rabbit_env's
    re-export: a variable already set, prefixed or not, is kept)."""
    merged = dict(environ)
    for name, value in file_vars.items():
        bare = name.removeprefix("RABBITMQ_")
        if environ.get("RABBITMQ_" + bare) or environ.get(bare):
            continue
        merged[name] = value
    return merged


def environment(environ: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """``environ`` with ``rabbitmq-env.conf`` read into what it leaves unset, and the file read
    (``None``: there was none).

    Raises:
        ConfigError: the file cannot be read, or holds a line that is no assignment.
    """
    sys_prefix = environ.get("SYS_PREFIX", "")
    etc = os.path.join(sys_prefix or "/", "etc", "rabbitmq")
    path = prefixed(environ, "RABBITMQ_CONF_ENV_FILE") or os.path.join(etc, "rabbitmq-env.conf")
    if not os.path.isfile(path):
        return dict(environ), None
    return _merge_env_file(environ, read_env_file(path, environ)), path


# -- the node's name ----------------------------------------------------------------------------

_HEAD = re.compile(r"[0-9A-Za-z_\-]+")
_HOST = re.compile(r"[!-\xff]*")


def short_host() -> str:
    """This machine's short host name (``inet_db:gethostname/0``)."""
    return socket.gethostname().split(".")[0] or "localhost"


def _domain() -> str:
    """The resolver's domain, as ``inet_db:res_option(domain)`` after the CLI's
    ``do_load_resolv``: ``/etc/resolv.conf``'s ``domain``, else the host name's own, else
    ``localdomain`` (the CLI's guess off macOS)."""
    try:
        for line in Path("/etc/resolv.conf").read_text(errors="replace").splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] == "domain":
                return words[1]
    except OSError:
        pass
    return socket.gethostname().partition(".")[2] or "localdomain"


def node_name(environ: Mapping[str, str], *, given: str | None = None,
              longnames: bool | None = None, hostname: str | None = None,
              operation: str = "") -> str:
    """The full name of the node ``environ`` (already read with :func:`environment`) and a
    tool's ``-n`` (``given``) and ``-l`` (``longnames``) mean: the one rule the node names
    itself by and the tools find it by (see the module's docstring).

    Args:
        hostname: the host a name without one gets (default: this machine's).
        operation: the tool's command, for the text of a refusal.

    Raises:
        NodeNameError: RabbitMQ's CLI refuses the name (its text; exit 65).
    """
    if longnames is None:
        longnames = yes(prefixed(environ, "RABBITMQ_USE_LONGNAME") or "")
    name = given or prefixed(environ, "RABBITMQ_NODENAME") or "rabbit"
    head, at, host = name.partition("@")
    if at and not head:  # (the CLI's split_node: "@host" is the default name on that host)
        head = "rabbit"
    if not at:
        host = hostname or (f"{short_host()}.{_domain()}" if longnames else short_host())
    elif longnames and "." not in host:
        host = f"{host}.{_domain()}"
    elif not longnames and "." in host:
        raise NodeNameError(
            f"{head}@{host}: a short node name's host has no dot",
            f"Error: operation {operation or 'status'} failed due to invalid node name (node: "
            f"{name}, reason: short)."
            f"\n{_LONGNAMES_HINT}")
    if not _HOST.fullmatch(host):
        raise NodeNameError(
            f"{head}@{host}: hostname is invalid",
            "Unsupported node name: hostname is invalid (possibly contains unsupported "
            f"characters).\n{_LONGNAMES_HINT}.")
    if not _HEAD.fullmatch(head):
        raise NodeNameError(
            f"{head}@{host}: only alphanumerics, _ and - may come before the @",
            "Unsupported node name: node name head (the part before the @) is invalid. Only "
            f"alphanumerics, _ and - characters are allowed.\n{_LONGNAMES_HINT}")
    return f"{head}@{host}"


def tool_node_name(environ: Mapping[str, str], *, given: str | None = None,
                   longnames: bool | None = None, operation: str = "") -> str:
    """:func:`node_name` for a tool: ``environ`` is the process's, read with
    ``rabbitmq-env.conf`` here.

    Raises:
        ControlError: the name is refused (:class:`NodeNameError`, exit 65), or
            ``rabbitmq-env.conf`` cannot be read (exit 78).
    """
    try:
        merged, _file = environment(environ)
    except ConfigError as exc:
        raise ControlError(str(exc), EX_CONFIG) from None
    return node_name(merged, given=given, longnames=longnames, operation=operation)
