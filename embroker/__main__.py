"""``python -m embroker``: the command line."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import ssl
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from . import Broker, __version__
from ._listener_plugins import PROTOCOLS
from ._transport import PORT_KINDS
from .analytics._cli import add_commands as add_analytics_commands
from .control._node import Node
from .control._protocol import ControlError
from .control._registry import NodeNameInUse, UntrustedPath
from .errors import DefinitionsError
from .model._plugins import PLUGINS
from .server import PortInUse, Server
from .stomp._settings import StompSettings
from .tls import TLS_VERSIONS, TLSOptions

if TYPE_CHECKING:
    from .management import ManagementUI


def _user(text: str) -> tuple[str, str]:
    name, sep, password = text.partition(":")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME:PASSWORD, got {text!r}")
    return name, password


def _limit(text: str) -> tuple[str, int | None]:
    kind, sep, value = text.partition("=")  # (checked here too: a usage error at once)
    if not sep or kind not in PORT_KINDS:
        raise argparse.ArgumentTypeError(
            f"expected KIND=N with KIND one of {', '.join(PORT_KINDS)}, got {text!r}")
    if value == "infinity":
        return kind, None
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(
            f"expected a number of connections (1 or more) or infinity, got {text!r}")
    return kind, int(value)


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # --vhost and --user add to the defaults (/ and guest/guest) unless told otherwise.
    vhosts = [] if args.no_default_vhost else ["/"]
    vhosts += [v for v in args.vhost or () if v not in vhosts]
    users = {} if args.no_default_user else {"guest": "guest"}
    users.update(dict(args.user or ()))
    if not vhosts and not args.definitions:
        print("embroker: --no-default-vhost needs at least one --vhost NAME", file=sys.stderr)
        return 2
    if not users and not args.definitions:
        print("embroker: --no-default-user needs at least one --user NAME:PASSWORD",
              file=sys.stderr)
        return 2
    try:
        broker = Broker(vhosts=tuple(vhosts), users=users, as_rabbitmq=args.as_rabbitmq,
                        server_properties=dict(args.server_property or ()),
                        deprecated_features=dict.fromkeys(args.deny or (), False) or None,
                        plugins=args.plugin or (),
                        auth_mechanisms=args.auth_mechanism or ("PLAIN", "AMQPLAIN"),
                        ssl_cert_login_from=args.ssl_cert_login_from, nodes=args.nodes)
    except ValueError as exc:
        print(f"embroker: {exc}", file=sys.stderr)
        return 2
    ignored: list[str] = []
    for path in args.definitions or []:
        # As RabbitMQ's load_definitions setting: loaded before clients can connect.
        try:
            ignored += [f"{path}: {item}" for item in broker.load_definitions(
                path, ignore_unsupported=args.ignore_unsupported)]
        except DefinitionsError as exc:  # (the model's one error for a document)
            print(f"embroker: cannot load the definitions {path}: {exc.line}", file=sys.stderr)
            return 1
    for item in ignored:
        print(f"embroker: ignored from {item}", file=sys.stderr)
    ui = None
    if args.management_ui:
        ui = _management_ui(args)
        if ui is None:
            return 1
    for name, _password in args.user or ():
        broker.set_user_tags(name, "administrator")  # as RabbitMQ's default user
    servers: list[Server] = []
    for index in range(len(broker.nodes)):  # (a cluster: each node its listeners)
        server = _listen(broker, args, index)
        if server is None:
            for started in servers:
                started.stop()
            return 1
        servers.append(server)
    # The URL names a user and a vhost that exist: the first --user given (else guest), and /
    # (else the first vhost); no credentials when the users came from definitions only. No
    # password either (the line ends up in CI logs), but guest's, which is no secret.
    credentials = ""
    if users:
        user = args.user[0][0] if args.user else next(iter(users))
        credentials = quote(user, safe="") + (
            ":guest" if (user, users[user]) == ("guest", "guest") else "") + "@"
    vhost = "/" if "/" in broker.vhosts else next(iter(broker.vhosts), "/")
    served = [_served(broker, server, args, credentials, vhost, ui) for server in servers]
    plugins = f"; plugins: {', '.join(sorted(broker.plugins.enabled))}" \
        if broker.plugins.enabled else ""

    nodes: list[Node] = []

    def give_up() -> int:
        for node in nodes:
            node.close()
        for server in servers:
            server.stop()
        return 1

    try:
        for server in servers:
            # (an AMQP port the OS chose, asked as 0 or moved off a taken 5672, implies no
            # control port: the OS chooses that one too, as nothing names it)
            asked = (_AMQP_PORT if args.port is None else args.port) + len(nodes)
            nodes.append(_node(broker, server, args.node, nodes[0] if nodes else None,
                               implied=args.port != 0 and server.port == asked))
    except NodeNameInUse as exc:
        taken = args.node if not nodes else exc  # (the name given, else a next node's)
        print(f"embroker: node name {taken} is taken by another running embroker; give another "
              "with --node", file=sys.stderr)
        return give_up()
    except ControlError as exc:  # (a node name RabbitMQ refuses: its reason, as rabbitmq-server)
        reason = getattr(exc, "reason", None)
        print(f"embroker: Invalid node name! {reason}" if reason else
              f"embroker: {exc.message.splitlines()[0]}", file=sys.stderr)
        return give_up()
    except PortInUse as exc:
        print(f"embroker: {exc}: RABBITMQ_DIST_PORT names it for the node's control port "
              "(where rabbitmqctl reaches the node) and another process holds it, perhaps a "
              "RabbitMQ node; choose another RABBITMQ_DIST_PORT, or unset it for a free port",
              file=sys.stderr)
        return give_up()
    except UntrustedPath as exc:
        print(f"embroker: the node registry cannot be trusted: {exc}", file=sys.stderr)
        return give_up()

    # What is alive now (the interpreter's modules, classes and functions, embroker's and the
    # definitions loaded) lives as long as the process: out of the garbage collector's sight,
    # each full collection walks only what comes after. (A full collection stops the loop: 43
    # ms with 5,000 queues before, 12 ms after, measured here.) A process of its own only:
    # frozen objects are never collected, so a test's process keeps its collector as it is.
    gc.collect()
    gc.freeze()

    about = (f"vhosts: {', '.join(broker.vhosts)}; users: {', '.join(broker.users)}{plugins}")
    try:
        if len(servers) == 1:
            _serve_node(servers[0], nodes[0], served[0], about)
        else:
            _serve_cluster(servers, nodes, served, about)
    finally:
        for node in nodes:
            node.close()
    print("embroker stopped", flush=True)
    return 0


def _management_ui(args: argparse.Namespace) -> ManagementUI | None:
    """RabbitMQ's UI from ``--management-ui``'s folders (``None``, said why: it cannot be)."""
    from .management import ManagementUI

    if args.no_management:
        print("embroker: --management-ui needs the management API (leave out --no-management)",
              file=sys.stderr)
        return None
    try:
        ui = ManagementUI(args.management_ui)
    except (UntrustedPath, ValueError, OSError) as exc:
        print(f"embroker: cannot serve the management UI: {exc}", file=sys.stderr)
        return None
    for line in ui.missing():
        print(f"embroker: {line}", file=sys.stderr)
    return ui


def _served(broker: Broker, server: Server, args: argparse.Namespace, credentials: str,
            vhost: str, ui: ManagementUI | None = None) -> tuple[str, str]:
    """A node's AMQP URL, and what else it serves in words (its management API set up as
    asked: ``--rabbitmqadmin``, ``--trace-dir``, ``--management-ui``)."""
    host = f"[{server.host}]" if ":" in server.host else server.host
    url = (f"amqp://{credentials}{host}:{server.port}/"
           + ("" if vhost == "/" else quote(vhost, safe="")))
    also = f", AMQP 1.0 alone on amqp://{credentials}{host}:{server.amqp10_port}" \
        if server.amqp10_port is not None else ""
    if server.tls_port is not None:
        also += f", amqps://{credentials}{host}:{server.tls_port}/"
    if server.stream_port is not None:
        also += f", the stream protocol on {server.stream_url}"
    if server.stream_tls_port is not None:
        also += f", the stream protocol over TLS on {server.stream_tls_url}"
    if server.management is not None:
        server.management.rabbitmqadmin = args.rabbitmqadmin
        server.management.ui = ui
        server.management.log_files = ("<stderr>",)  # (RabbitMQ's name: logging's stream)
        if args.trace_dir is not None:
            from .management._tracing import Tracing

            server.management.tracing = Tracing(broker, args.trace_dir, node=server.node)
        also += ("; management API and RabbitMQ's UI (console under /console/) on "
                 if ui is not None else "; management API and console on ") + " and ".join(
            url for url in (server.management_port is not None and server.management_url,
                            server.management_tls_port is not None and server.management_tls_url)
            if url)
    for protocol in PROTOCOLS:  # (STOMP on stomp://..., Web-STOMP on ws://.../ws; MQTT...)
        served = [f"{_TITLES[key]} on {getattr(server, f'{key}_url')}"
                  for key, _kind, _tls in protocol.kinds
                  if getattr(server, f"{key}_port") is not None]
        if served:
            also += "; " + ", ".join(served)
    return url, also


def _serve_node(server: Server, node: Node, served: tuple[str, str], about: str) -> None:
    """Serve one node in this thread until Ctrl-C, SIGTERM or ``rabbitmqctl stop``."""
    def stop(*_: object) -> None:
        threading.Thread(target=server.stop, daemon=True).start()

    url, also = served
    try:  # (Ctrl-C as soon as the line is out, before the loop runs: a clean stop too)
        print(f"embroker {__version__} listening on {url} (AMQP 0-9-1 and 1.0{also}; {about}; "
              f"node {node.name}; Ctrl-C stops)", flush=True)
        signal.signal(signal.SIGTERM, stop)
        server.serve_forever()
    except KeyboardInterrupt:
        server.stop()


def _serve_cluster(servers: list[Server], nodes: list[Node], served: list[tuple[str, str]],
                   about: str) -> None:
    """Serve a cluster's nodes, each in a thread of its own, until Ctrl-C or SIGTERM (every
    node) or until each node has stopped (``rabbitmqctl -n NODE stop`` stops its application,
    then its listener)."""
    done = threading.Event()

    def stop_all() -> None:
        for server in servers:
            server.stop()
        done.set()

    def stopper(server: Server) -> Callable[[], None]:
        def stop_node() -> None:
            server.stop_app()  # (the others see the node go: its queues down, leaders moved)
            server.stop()
            if not any(s.running for s in servers):
                done.set()
        return stop_node

    for server, node in zip(servers, nodes, strict=True):
        node.on_stop = stopper(server)
    for server in servers:  # (each node served before the lines name it)
        server.start()
    try:
        print(f"embroker {__version__}: a cluster of {len(servers)} nodes ({about}; Ctrl-C "
              "stops)", flush=True)
        for (url, also), node in zip(served, nodes, strict=True):
            print(f"  node {node.name} listening on {url} (AMQP 0-9-1 and 1.0{also})",
                  flush=True)
        signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=stop_all,
                                                                  daemon=True).start())
        while not done.wait(0.5):  # (a signal the OS gave a loop thread is handled here,
            pass                   # in the main thread, only once it wakes)
    except KeyboardInterrupt:
        stop_all()


def _node(broker: Broker, server: Server, name: str | None, first: Node | None = None,
          implied: bool = True) -> Node:
    """The node RabbitMQ's tools reach this broker as (``embroker ctl``, ``rabbitmqctl`` from
    ``embroker shims``): ``--node``, else ``RABBITMQ_NODENAME`` (rabbitmq-env.conf's
    included), else ``rabbit@<host>``, by the rule the tools find it by
    (:func:`embroker.control._env.node_name`); a default name another embroker has is made
    unique with this process's id (said on standard error), as a default port is. The next
    nodes of a cluster (``first``: the first's) are numbered after it: ``rabbit-2@<host>``...

    Its control port listens where RabbitMQ's distribution would: ``RABBITMQ_DIST_PORT``, else
    the AMQP port + 20000 (when ``implied``: the AMQP port is the one asked for, not one the
    OS chose, whose + 20000 would be a stranger's), else any free port, on the listener's
    host; a port only implied, when taken (by the machine's RabbitMQ, 25672), gives way to a
    free one, said once.

    Raises:
        ControlError: the name is refused (RabbitMQ's CLI's text), or RABBITMQ_DIST_PORT is
            no port.
        NodeNameInUse: ``name`` is taken.
        PortInUse: the port RABBITMQ_DIST_PORT names is taken.
    """
    from .control._env import prefixed, tool_node_name
    from .control._protocol import ControlError

    index = broker.nodes.index(server.node)  # (its place in the cluster)
    if first is None:
        chosen = tool_node_name(os.environ, given=name)
    else:
        local, _at, host = first.name.partition("@")
        chosen = f"{local}-{index + 1}@{host}"
    given = prefixed(os.environ, "RABBITMQ_DIST_PORT")
    if given is not None and (not given.isdigit() or int(given) + index > 65535):
        raise ControlError(f"Invalid value for $RABBITMQ_DIST_PORT: {given!r}", 78)
    implied_port = server.port + 20000 if implied and server.port + 20000 <= 65535 else 0
    dist = (server.host, int(given) + index if given is not None else implied_port,
            given is not None)
    try:
        node = Node(broker, server, chosen, dist=dist).start()
    except NodeNameInUse:
        if name:
            raise
        local, _at, host = chosen.partition("@")
        other = f"{local}-{os.getpid()}@{host}"
        print(f"embroker: node name {chosen} is taken by another embroker; this one is "
              f"{other} (rabbitmqctl -n {other})", file=sys.stderr)
        node = Node(broker, server, other, dist=dist).start()
    if node.dist_moved is not None:
        print(f"embroker: port {node.dist_moved} (the Erlang distribution's, where "
              "rabbitmqctl reaches a RabbitMQ node) is in use, perhaps by RabbitMQ: node "
              f"{node.name}'s control port is {node.control_port} instead, which the node "
              "registry tells the tools (RABBITMQ_DIST_PORT=N chooses)", file=sys.stderr,
              flush=True)
    return node


#: RabbitMQ's AMQP and management ports: ``serve``'s defaults.
_AMQP_PORT = 5672
_MANAGEMENT_PORT = 15672
#: The plugin protocols' ports ``serve`` takes by default, as the management port: STOMP's
#: 61613, Web-STOMP's 15674, MQTT's 1883, Web-MQTT's 15675 (by key: ``--stomp-port``...).
_DEFAULT_PORTS = {key: port for p in PROTOCOLS
                  for key, port in ((p.kind, p.port), (p.web_kind, p.web_port))}
#: What each plugin protocol's ports are called (``"mqtt_tls"``: ``"MQTT over TLS"``).
_TITLES = {key: (p.web_title if kind == p.web_kind else p.title) + (" over TLS" if tls else "")
           for p in PROTOCOLS for key, kind, tls in p.kinds}
#: What ``serve``'s help says each plugin protocol is.
_SERVES = {"stomp": "STOMP 1.0-1.2", "mqtt": "MQTT 3.1 and 3.1.1"}


def _option(key: str) -> str:
    """The option naming a plugin protocol's port (``"web_mqtt_tls"``:
    ``--web-mqtt-tls-port``)."""
    return "--" + key.replace("_", "-") + "-port"


#: What moves a port the user named, for the line that says it is taken.
_ADVICE = {
    "amqp": "choose another with --port N, or --port 0 for any free port",
    "amqp10": "choose another with --amqp10-port N, or --amqp10-port 0 for any free port",
    "management": "choose another with --management-port N, --management-port 0 for any free "
                  "port, or --no-management",
    "stream": "choose another with --stream-port N, or --stream-port 0 for any free port",
    "tls": "choose another with --tls-port N, or --tls-port 0 for any free port",
    "stream_tls": "choose another with --stream-tls-port N, or --stream-tls-port 0 for any "
                  "free port",
    "management_tls": "choose another with --management-tls-port N, or "
                      "--management-tls-port 0 for any free port",
    **{key: f"choose another with {_option(key)} N, {_option(key)} 0 for any free port"
       + ("" if tls else f", or --no-{key.replace('_', '-')}")
       for p in PROTOCOLS for key, _kind, tls in p.kinds}}
#: What each port a default implies serves, and the option that chooses it, for the line that
#: says it moved.
_MOVED = {"amqp": ("AMQP", "--port N"), "management": ("the management API", "--management-port N"),
          **{key: (_TITLES[key], f"{_option(key)} N") for key in _DEFAULT_PORTS}}
#: The ports of registered kinds ``serve`` may open: the key in ``ports`` -> (kind, TLS).
_KIND_PORTS = {key: (kind, tls) for p in PROTOCOLS for key, kind, tls in p.kinds}


def _listen(broker: Broker, args: argparse.Namespace, index: int = 0) -> Server | None:
    """The listener of the broker's node at ``index`` on the ports asked for; ``None`` (and
    one line on standard error saying why and what to do) when it cannot have them.

    A port the user named must be had. A port only implied by a default never stops ``serve``
    from starting beside a RabbitMQ: 5672 when ``--port`` is not given, and 15672 (61613,
    15674, 1883, 15675) when ``--management-port`` (``--stomp-port``, ``--web-stomp-port``,
    ``--mqtt-port``, ``--web-mqtt-port``) is not given and the AMQP port is RabbitMQ's 5672
    (another ``--port`` implies any free port for them, as ``--port 5673`` beside a RabbitMQ
    means); taken, each becomes any free port, said on standard error (MQTT's 1883 often is:
    a mosquitto holds it on many machines).

    The next nodes of a cluster (``--nodes``) take the numbers after the first node's, named
    or implied (5673, 15673...; as RabbitMQ's guide to a local cluster numbers them), by the
    same rules; 0 stays any free port.
    """
    rabbitmq_amqp = args.port in (None, _AMQP_PORT)
    ports: dict[str, int | None] = {
        "amqp": args.port if args.port is not None else _AMQP_PORT,
        "amqp10": args.amqp10_port,
        "management": None if args.no_management else (
            args.management_port if args.management_port is not None
            else _MANAGEMENT_PORT if rabbitmq_amqp else 0),
        "stream": args.stream_port, "tls": args.tls_port,
        "stream_tls": args.stream_tls_port, "management_tls": args.management_tls_port}
    for key, default in _DEFAULT_PORTS.items():  # (STOMP's, Web-STOMP's, MQTT's... --no-X)
        given = getattr(args, f"{key}_port")
        ports[key] = None if getattr(args, f"no_{key}") else (
            given if given is not None else default if rabbitmq_amqp else 0)
        ports[f"{key}_tls"] = getattr(args, f"{key}_tls_port")
    # (the node's: each number but 0 moved on; the advertised stream port too)
    ports = {key: number + index if number else number for key, number in ports.items()}
    advertised = args.stream_advertised_port
    advertised = advertised + index if advertised else advertised
    tls: ssl.SSLContext | None = None
    if args.certfile is not None:
        options = TLSOptions(certfile=args.certfile, keyfile=args.keyfile,
                             cacertfile=args.cacertfile, password=args.key_password,
                             verify="verify_peer" if args.verify_peer else "verify_none",
                             fail_if_no_peer_cert=args.fail_if_no_peer_cert,
                             versions=tuple(args.tls_version or TLS_VERSIONS))
        try:
            tls = options.context()
        except (OSError, ssl.SSLError) as exc:
            files = ", ".join(f for f in (args.certfile, args.keyfile, args.cacertfile) if f)
            print(f"embroker: cannot use the TLS files {files}: "
                  f"{getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
            return None
    elif any(ports[k] is not None for k in ("tls", "stream_tls", "management_tls",
                                            *(f"{key}_tls" for key in _DEFAULT_PORTS))):
        print("embroker: a TLS port needs a certificate: --certfile FILE (and --keyfile FILE "
              "unless the key is in it)", file=sys.stderr)
        return None
    implied = {"amqp": args.port is None,
               "management": not args.no_management and args.management_port is None,
               **{key: not getattr(args, f"no_{key}") and getattr(args, f"{key}_port") is None
                  for key in _DEFAULT_PORTS}}
    settings = {"stomp": StompSettings(default_user=args.stomp_default_user)} \
        if args.stomp_default_user is not None else {}
    moved: list[tuple[str, int]] = []
    while True:
        kinds: dict[bool, dict[str, int]] = {False: {}, True: {}}
        for key, (kind, secure) in _KIND_PORTS.items():
            if (number := ports[key]) is not None:
                kinds[secure][kind] = number
        try:
            server = Server(broker, args.host, ports["amqp"] or 0, heartbeat=args.heartbeat,
                            amqp10_port=ports["amqp10"], management_port=ports["management"],
                            stream_port=ports["stream"],
                            max_connections=dict(args.max_connections or ()),
                            management_allow_hosts=args.management_allow_host or (),
                            stream_advertised_host=args.stream_advertised_host,
                            stream_advertised_port=advertised,
                            tls=tls, tls_port=ports["tls"],
                            stream_tls_port=ports["stream_tls"],
                            management_tls_port=ports["management_tls"],
                            listeners=kinds[False], tls_listeners=kinds[True],
                            port_settings=settings, node=broker.nodes[index])
        except PortInUse as exc:
            # The first port bound, in Server's order, that has the number: the one taken.
            kind = next((k for k, port in ports.items() if port and port == exc.port), "amqp")
            if implied.get(kind):
                implied[kind] = False
                moved.append((kind, exc.port))
                ports[kind] = 0
                continue
            print(f"embroker: {exc} (another broker, perhaps RabbitMQ, is listening there); "
                  f"{_ADVICE[kind]}", file=sys.stderr)
            return None
        except OSError as exc:
            print(f"embroker: cannot listen on {args.host}: {exc.strerror or exc}",
                  file=sys.stderr)
            return None
        except ValueError as exc:
            print(f"embroker: {exc}", file=sys.stderr)
            return None
        break
    for kind, port in moved:
        what, option = _MOVED[kind]
        now = server.port if kind == "amqp" else server.listener_port(kind)
        clients = f", and clients of port {port} reach the other broker" if kind == "amqp" \
            else ""
        print(f"embroker: port {port} on {args.host} is in use (another broker, perhaps "
              f"RabbitMQ, is listening there): {what} is served on port {now} instead"
              f"{clients} ({option} chooses)", file=sys.stderr, flush=True)
    return server


def _demo(_args: argparse.Namespace) -> int:
    broker = Broker()
    ch = broker.connect().channel()
    ch.exchange_declare("events", "topic")
    ch.queue_declare("audit")
    ch.queue_bind("audit", "events", "order.*")
    ch.queue_declare("eu-orders")
    ch.queue_bind("eu-orders", "events", "order.*.eu")
    for key in ("order.created", "order.created.eu", "invoice.paid"):
        ch.basic_publish("events", key, b"{}", properties={"content_type": "application/json"})
        print(broker.trace[-1].explain(), end="\n\n")
    print(broker.queues["audit"])
    print(broker.queues["eu-orders"])
    return 0


#: RabbitMQ's command-line tools (embroker.control), by the names ``embroker`` takes them under:
#: each reads its own command line, as RabbitMQ's does.
_TOOLS = {"ctl": "rabbitmqctl", "rabbitmqctl": "rabbitmqctl",
          "diagnostics": "rabbitmq-diagnostics", "rabbitmq-diagnostics": "rabbitmq-diagnostics",
          "queues": "rabbitmq-queues", "rabbitmq-queues": "rabbitmq-queues",
          "plugins": "rabbitmq-plugins", "rabbitmq-plugins": "rabbitmq-plugins",
          "rabbitmq-server": "rabbitmq-server"}


def _tool(name: str, argv: list[str]) -> int:
    from .control.__main__ import main as tool_main  # (the shims' own dispatch)

    return tool_main([name, *argv])


def _shims(args: argparse.Namespace) -> int:
    from .control._shims import write_shims

    try:
        written = write_shims(args.dir)
    except UntrustedPath as exc:
        print(f"embroker: cannot write the shims: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"embroker: cannot write the shims in {args.dir}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in _TOOLS:  # (before argparse: their options are RabbitMQ's)
        return _tool(_TOOLS[argv[0]], argv[1:])
    parser = argparse.ArgumentParser(
        prog="embroker", description="An embedded AMQP 0-9-1 broker with RabbitMQ's semantics "
        "(also: python -m embroker).")
    parser.add_argument("--version", action="version", version=f"embroker {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run a broker that AMQP 0-9-1 and 1.0 clients connect to")
    serve.add_argument("--host", default="localhost",
                       help="address to listen on; localhost (the default) means 127.0.0.1 and ::1")
    serve.add_argument("--port", type=int, default=None,
                       help="port to listen on (0 for any free port); default 5672, as "
                            "RabbitMQ, or any free port when 5672 is taken (said on standard "
                            "error)")
    serve.add_argument("--vhost", action="append", metavar="NAME",
                       help="a virtual host to create besides / (repeatable)")
    serve.add_argument("--user", action="append", type=_user, metavar="NAME:PASSWORD",
                       help="an administrator (tag administrator, as RabbitMQ's default user: "
                            "full permissions on every vhost, and every management API "
                            "operation), besides guest:guest (which may only connect from this "
                            "machine) (repeatable)")
    serve.add_argument("--no-default-vhost", action="store_true",
                       help="do not create the vhost / (give --vhost)")
    serve.add_argument("--no-default-user", action="store_true",
                       help="do not accept guest:guest (give --user)")
    serve.add_argument("--definitions", action="append", metavar="FILE",
                       help="a RabbitMQ definitions file to load at start (rabbitmqctl "
                            "export_definitions): vhosts, users, permissions, topology, "
                            "policies, operator policies, limits (repeatable)")
    serve.add_argument("--ignore-unsupported", action="store_true",
                       help="with --definitions: leave out the runtime parameters embroker "
                            "cannot honour (shovels, federation upstreams) and list them, "
                            "instead of refusing the file")
    serve.add_argument("--amqp10-port", type=int, default=None, metavar="N",
                       help="also listen on port N for AMQP 1.0 alone (the main port serves "
                            "AMQP 1.0 too)")
    serve.add_argument("--stream-port", type=int, default=None, metavar="N",
                       help="also serve RabbitMQ's stream protocol on port N (RabbitMQ's is "
                            "5552; 0 for any free port); none unless asked for")
    serve.add_argument("--stream-advertised-host", default=None, metavar="NAME",
                       help="the host the stream protocol's Open and Metadata name (RabbitMQ's "
                            "stream.advertised_host); default localhost, the host part of the "
                            "node's name, as RabbitMQ's")
    serve.add_argument("--stream-advertised-port", type=int, default=None, metavar="N",
                       help="the port they name (stream.advertised_port); default the stream "
                            "port")
    serve.add_argument("--tls-port", type=int, default=None, metavar="N",
                       help="also serve amqps (AMQP 0-9-1 and 1.0 over TLS) on port N "
                            "(RabbitMQ's is 5671; 0 for any free port); needs --certfile")
    serve.add_argument("--stream-tls-port", type=int, default=None, metavar="N",
                       help="also serve the stream protocol over TLS on port N (RabbitMQ's is "
                            "5551)")
    serve.add_argument("--management-tls-port", type=int, default=None, metavar="N",
                       help="also serve the management API over HTTPS on port N (RabbitMQ's "
                            "is 15671)")
    serve.add_argument("--certfile", default=None, metavar="FILE",
                       help="the TLS ports' certificate, PEM, its chain after it "
                            "(ssl_options.certfile)")
    serve.add_argument("--keyfile", default=None, metavar="FILE",
                       help="its private key, PEM (ssl_options.keyfile); default: in "
                            "--certfile")
    serve.add_argument("--key-password", default=None, metavar="PASSWORD",
                       help="the key's password (ssl_options.password)")
    serve.add_argument("--cacertfile", default=None, metavar="FILE",
                       help="the authorities client certificates are checked against "
                            "(ssl_options.cacertfile)")
    serve.add_argument("--verify-peer", action="store_true",
                       help="ask clients for a certificate and check one sent "
                            "(ssl_options.verify = verify_peer)")
    serve.add_argument("--fail-if-no-peer-cert", action="store_true",
                       help="with --verify-peer, refuse a client without a certificate "
                            "(ssl_options.fail_if_no_peer_cert = true)")
    serve.add_argument("--tls-version", action="append", metavar="VERSION",
                       choices=("tlsv1.3", "tlsv1.2", "tlsv1.1", "tlsv1"),
                       help="a TLS version the TLS ports take (ssl_options.versions.N; "
                            "repeat it); default all four, as RabbitMQ 3.10")
    serve.add_argument("--auth-mechanism", action="append", metavar="NAME",
                       choices=("PLAIN", "AMQPLAIN", "EXTERNAL"),
                       help="a SASL mechanism AMQP clients are offered, in order (repeat it; "
                            "RabbitMQ's auth_mechanisms.N); default PLAIN and AMQPLAIN; "
                            "EXTERNAL logs in by client certificate, over TLS only")
    serve.add_argument("--ssl-cert-login-from", default="distinguished_name",
                       choices=("distinguished_name", "common_name"),
                       help="EXTERNAL's user name: the certificate's subject or its common name "
                            "(ssl_cert_login_from)")
    serve.add_argument("--management-port", type=int, default=None, metavar="N",
                       help="serve RabbitMQ's management HTTP API and the console on port N "
                            "(0 for any free port); default 15672, as RabbitMQ, when --port "
                            "is left at 5672, else any free port; any free port too when "
                            "15672 is taken")
    serve.add_argument("--no-management", action="store_true",
                       help="serve no management API")
    for p in PROTOCOLS:  # --stomp-port, --no-stomp, ..., --web-mqtt-tls-port
        kind, web = p.kind.replace("_", "-"), p.web_kind.replace("_", "-")
        serve.add_argument(f"--{kind}-port", type=int, default=None, metavar="N",
                           help=f"serve {_SERVES[p.kind]} on port N (0 for any free port); "
                                f"default {p.port}, as RabbitMQ's {p.plugin}, when --port is "
                                f"left at 5672, else any free port; any free port too when "
                                f"{p.port} is taken")
        serve.add_argument(f"--no-{kind}", action="store_true",
                           help=f"serve no {p.title} port")
        serve.add_argument(f"--{kind}-tls-port", type=int, default=None, metavar="N",
                           help=f"also serve {p.title} over TLS on port N (RabbitMQ's is "
                                f"{p.tls_port}); needs --certfile")
        serve.add_argument(f"--{web}-port", type=int, default=None, metavar="N",
                           help=f"serve {p.title} over WebSocket (ws://HOST:N/ws) on port N; "
                                f"default {p.web_port}, as RabbitMQ's {p.web_plugin}, by the "
                                f"rule of --{kind}-port")
        serve.add_argument(f"--no-{web}", action="store_true",
                           help=f"serve no {p.web_title} port")
        serve.add_argument(f"--{web}-tls-port", type=int, default=None, metavar="N",
                           help=f"also serve {p.web_title} over TLS (wss://HOST:N/ws) on port "
                                f"N (RabbitMQ's {p.web_kind}.ssl.port, {p.web_tls_port} in its "
                                "documentation); needs --certfile")
    serve.add_argument("--stomp-default-user", type=_user, default=None,
                       metavar="NAME:PASSWORD",
                       help="the user a STOMP CONNECT without login logs in as (RabbitMQ's "
                            "stomp.default_user and stomp.default_pass; default guest:guest)")
    serve.add_argument("--management-allow-host", action="append", metavar="NAME",
                       help="answer management requests addressed to NAME (Host) or made by "
                            "its pages (Origin), besides this broker's address, localhost "
                            "and loopback addresses; NAME:PORT for one port; * for any "
                            "(repeatable; see docs/management.md)")
    serve.add_argument("--max-connections", action="append", type=_limit,
                       metavar="KIND=N",
                       help="the most connections a port holds, KIND one of amqp, management, "
                            "stream, N a number or infinity (repeatable); defaults as "
                            "RabbitMQ: infinity, but management: 10240 or a quarter of "
                            "ulimit -n, the fewer, and stream: a quarter of ulimit -n; "
                            "management and stream ports together: half of ulimit -n")
    serve.add_argument("--rabbitmqadmin", type=Path, default=None, metavar="PATH",
                       help="a copy of RabbitMQ's rabbitmqadmin script to serve at "
                            "/cli/rabbitmqadmin (embroker ships none)")
    serve.add_argument("--management-ui", type=Path, action="append", default=None,
                       metavar="DIR",
                       help="serve RabbitMQ's own management UI from DIR at / (embroker's "
                            "console moves to /console/): its www folder, e.g. a RabbitMQ "
                            "install's plugins/rabbitmq_management-3.10.8/priv/www, then "
                            "rabbitmq_tracing-3.10.8/priv/www for its Tracing page "
                            "(repeatable: the first DIR that has a file serves it; embroker "
                            "ships none of RabbitMQ's files)")
    serve.add_argument("--trace-dir", type=Path, default=None, metavar="DIR",
                       help="where the tracing plugin's logs go (/api/traces, /api/trace-files; "
                            "default: a temporary directory, removed when embroker stops)")
    serve.add_argument("--heartbeat", type=int, default=60,
                       help="heartbeat interval offered to clients, seconds (0 for none)")
    serve.add_argument("--as-rabbitmq", metavar="VERSION",
                       help="present the broker to clients as that RabbitMQ version (product "
                            "RabbitMQ), for clients and tools that check the product; a "
                            "RabbitMQ 4 version (4.1.x) behaves as RabbitMQ 4 where it differs")
    serve.add_argument("--deny-deprecated-feature", dest="deny", action="append",
                       metavar="NAME",
                       help="with a RabbitMQ 4 version, deny one of its deprecated features "
                            "(repeatable; as deprecated_features.permit.NAME = false), e.g. "
                            "amqp_address_v1")
    serve.add_argument("--server-property", action="append", type=_property, metavar="KEY=VALUE",
                       help="a server property clients see in connection.start (repeatable), "
                            "e.g. cluster_name=dev")
    serve.add_argument("--plugin", action="append", metavar="NAME",
                       help="enable a RabbitMQ plugin, by RabbitMQ's name (repeatable): "
                            + ", ".join(PLUGINS))
    serve.add_argument("--node", default=None, metavar="NAME",
                       help="the node name RabbitMQ's tools reach this broker by "
                            "(rabbitmqctl -n NAME; default RABBITMQ_NODENAME or rabbit@HOST)")
    serve.add_argument("--nodes", type=int, default=1, metavar="N",
                       help="run a cluster of N nodes in this process, each with its own "
                            "listeners: the next nodes on the ports after the first's (5673, "
                            "5674...; management 15673, 15674...; each any free port when a "
                            "default one is taken), named after it (rabbit-2@HOST, "
                            "rabbit-3@HOST...: rabbitmqctl -n reaches each); default 1")
    serve.add_argument("--quiet", action="store_true", help="log only warnings and errors")
    serve.set_defaults(run=_serve)
    demo = commands.add_parser("demo", help="route a few messages in-process and explain each")
    demo.set_defaults(run=_demo)
    add_analytics_commands(commands)  # analyze, capture (embroker.analytics; Spark when run)
    shims = commands.add_parser(
        "shims", help="write rabbitmqctl, rabbitmq-diagnostics, rabbitmq-queues, "
        "rabbitmq-plugins and rabbitmq-server into DIR, each running embroker's (put DIR first "
        "on PATH); also `embroker ctl ...`, `embroker diagnostics ...`, `embroker queues ...`, "
        "`embroker plugins ...`, `embroker rabbitmq-server`")
    shims.add_argument("dir", type=Path, metavar="DIR")
    shims.set_defaults(run=_shims)
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
