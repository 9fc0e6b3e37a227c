"""``python -m embroker``: the command line."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from urllib.parse import quote

from . import Broker, __version__
from .analytics._cli import add_commands as add_analytics_commands
from .errors import AMQPError, DefinitionsError
from .model._plugins import PLUGINS
from .server import PortInUse, Server


def _user(text: str) -> tuple[str, str]:
    name, sep, password = text.partition(":")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME:PASSWORD, got {text!r}")
    return name, password


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
                        plugins=args.plugin or ())
    except ValueError as exc:
        print(f"embroker: {exc}", file=sys.stderr)
        return 2
    ignored: list[str] = []
    for path in args.definitions or []:
        # As RabbitMQ's load_definitions setting: loaded before clients can connect.
        try:
            ignored += [f"{path}: {item}" for item in broker.load_definitions(
                path, ignore_unsupported=args.ignore_unsupported)]
        except (OSError, DefinitionsError, AMQPError) as exc:
            print(f"embroker: cannot load the definitions {path}: {exc}", file=sys.stderr)
            return 1
    for item in ignored:
        print(f"embroker: ignored from {item}", file=sys.stderr)
    # The management API: port 15672 as RabbitMQ's, any free one when --port 0 asks for any.
    management_port = None if args.no_management else (
        args.management_port if args.management_port is not None
        else (0 if args.port == 0 else 15672))
    for name, _password in args.user or ():
        broker.set_user_tags(name, "administrator")  # as RabbitMQ's default user
    try:
        server = Server(broker, args.host, args.port, heartbeat=args.heartbeat,
                        amqp10_port=args.amqp10_port, management_port=management_port,
                        stream_port=args.stream_port)
    except PortInUse as exc:
        if management_port and exc.port == management_port and exc.port != args.port:
            advice = ("choose another with --management-port N, --management-port 0 for any "
                      "free port, or --no-management")
        else:
            advice = "choose another with --port N, or --port 0 for any free port"
        print(f"embroker: {exc} (another broker, perhaps RabbitMQ, is listening there); "
              f"{advice}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"embroker: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    # The URL names a user and a vhost that exist: the first --user given (else guest), and /
    # (else the first vhost); no credentials when the users came from definitions only.
    credentials = ""
    if users:
        user = args.user[0][0] if args.user else next(iter(users))
        credentials = f"{quote(user, safe='')}:{quote(users[user], safe='')}@"
    vhost = "/" if "/" in broker.vhosts else next(iter(broker.vhosts), "/")
    host = f"[{server.host}]" if ":" in server.host else server.host
    url = (f"amqp://{credentials}{host}:{server.port}/"
           + ("" if vhost == "/" else quote(vhost, safe="")))
    also = f", AMQP 1.0 alone on {server.amqp10_url}" if server.amqp10_port is not None else ""
    if server.stream_port is not None:
        also += f", the stream protocol on port {server.stream_port}"
    if server.management is not None:
        server.management.rabbitmqadmin = args.rabbitmqadmin
        if args.trace_dir is not None:
            from .management._tracing import Tracing

            server.management.tracing = Tracing(broker, args.trace_dir)
        also += f"; management API and console on {server.management_url}"
    plugins = f"; plugins: {', '.join(sorted(broker.plugins.enabled))}" \
        if broker.plugins.enabled else ""
    print(f"embroker {__version__} listening on {url} (AMQP 0-9-1 and 1.0{also}; vhosts: "
          f"{', '.join(broker.vhosts)}; users: {', '.join(broker.users)}{plugins}; "
          "Ctrl-C stops)", flush=True)

    def stop(*_: object) -> None:
        threading.Thread(target=server.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.stop()
    print("embroker stopped", flush=True)
    return 0


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="embroker", description="An embedded AMQP 0-9-1 broker with RabbitMQ's semantics "
        "(also: python -m embroker).")
    parser.add_argument("--version", action="version", version=f"embroker {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run a broker that AMQP 0-9-1 and 1.0 clients connect to")
    serve.add_argument("--host", default="localhost",
                       help="address to listen on; localhost (the default) means 127.0.0.1 and ::1")
    serve.add_argument("--port", type=int, default=5672,
                       help="port to listen on (default 5672, as RabbitMQ; 0 for any free port)")
    serve.add_argument("--vhost", action="append", metavar="NAME",
                       help="a virtual host to create besides / (repeatable)")
    serve.add_argument("--user", action="append", type=_user, metavar="NAME:PASSWORD",
                       help="a user with full permissions on every vhost, besides guest:guest "
                            "(which may only connect from this machine) (repeatable)")
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
    serve.add_argument("--management-port", type=int, default=None, metavar="N",
                       help="serve RabbitMQ's management HTTP API and the console on port N "
                            "(default 15672 as RabbitMQ; any free port when --port is 0)")
    serve.add_argument("--no-management", action="store_true",
                       help="serve no management API")
    serve.add_argument("--rabbitmqadmin", type=Path, default=None, metavar="PATH",
                       help="a copy of RabbitMQ's rabbitmqadmin script to serve at "
                            "/cli/rabbitmqadmin (embroker ships none)")
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
    serve.add_argument("--quiet", action="store_true", help="log only warnings and errors")
    serve.set_defaults(run=_serve)
    demo = commands.add_parser("demo", help="route a few messages in-process and explain each")
    demo.set_defaults(run=_demo)
    add_analytics_commands(commands)  # analyze, capture (embroker.analytics; Spark when run)
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
