"""The pytest plugin: fixtures and the ``embroker`` marker over :mod:`embroker.testing`.

Fixtures:

- ``broker``: a fresh in-memory broker per test, configured by the marker;
- ``amqp_server`` / ``amqp_url``: a loopback listener on it, started when asked for and stopped
  after the test (``amqp10_url`` is the same listener's URL for AMQP 1.0 clients,
  ``management_url`` its management HTTP API and console, ``stomp_url`` / ``stomp_address``
  its STOMP port and ``web_stomp_url`` its Web-STOMP one, ``mqtt_url`` / ``mqtt_address``
  its MQTT port and ``web_mqtt_url`` its Web-MQTT one; ``amqp_url_for(user, password,
  vhost=...)`` a URL as another user, made with the permissions asked);
  ``amqp_channel``: an in-process channel;
- a cluster (``@pytest.mark.embroker(nodes=3)``): ``amqp_servers`` a listener per node (its own
  ports), ``amqp_urls`` their AMQP URLs in node order (a client's list of addresses);
  ``amqp_server`` is the first node's; ``embroker_faults.stop_node(name)`` /
  ``start_node(name)`` stop and start a node as ``rabbitmqctl -n NAME stop_app`` does;
- ``memory_pika``: a real pika ``BlockingConnection`` over an in-memory link (no socket);
  ``memory_url``: the URL of the in-memory transports (aio-pika, aiormq, kombu);
- ``embroker_faults``: :class:`embroker.faults.Faults` for the test's broker and listener;
- ``embroker_expectations``: strict :class:`embroker.testing.Expectations`, checked after the test;
- ``shared_broker`` / ``shared_amqp_url``: one broker and listener for the whole session (for
  applications whose workers start slowly), reset to their baseline before each test;
- TLS (``pip install pytest-embroker[tls]``, trustme): ``embroker_tls`` a throwaway certificate
  authority and the server's files for the session; ``amqps_server`` / ``amqps_url`` a listener
  with an amqps port (it asks clients for a certificate and checks one sent);
  ``tls_client_context`` an ``ssl.SSLContext`` that trusts it; ``tls_client_certificate`` a
  client certificate's files for SASL EXTERNAL logins (docs/tls.md).

Strict mode (``embroker_strict`` ini option, or the marker's ``strict=``) fails a test at
teardown when it left client connections open, deliveries unacknowledged, consumers on a
stopped listener, listener errors or (``"unroutable"``) publishes that reached no queue. A failed
test's report gets an ``embroker`` section: the last routing decisions with their messages'
histories, what the broker refused and which connections it dropped (``broker.incidents``), and
the queues (``--embroker-trace N``).

With ``--embroker-reference URL`` the same tests run against a real RabbitMQ: ``broker`` is then
a :class:`embroker._reference.ReferenceBroker` on a vhost of its own, and what needs embroker's
internals (the virtual clock, ``explain()``...) skips with the reason.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import ssl
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

pytest.register_assert_rewrite("embroker.testing")

from embroker import Broker, Channel, DefinitionsError, Server  # noqa: E402
from embroker._listener_plugins import PROTOCOLS, ListenerPlugin, by_kind  # noqa: E402
from embroker.faults import Faults  # noqa: E402
from embroker.server import NodeServers  # noqa: E402
from embroker.testing import (  # noqa: E402
    Expectations,
    NeedsEmbroker,
    check_server,
    leaks,
    make_broker,
    url_as,
)
from embroker.tls import TLSOptions  # noqa: E402

if TYPE_CHECKING:
    from embroker import RoutingDecision
    from embroker._reference import Admin, ReferenceBroker
    from embroker.model import Broker as ModelBroker
    from embroker.testing import AnyBroker

__all__ = [
    "ClientCertificate",
    "TLSFiles",
    "amqp10_url",
    "amqp_channel",
    "amqp_server",
    "amqp_servers",
    "amqp_url",
    "amqp_url_for",
    "amqp_urls",
    "amqps_server",
    "amqps_url",
    "broker",
    "embroker_config",
    "embroker_expectations",
    "embroker_faults",
    "embroker_reference",
    "embroker_tls",
    "management_url",
    "memory_pika",
    "memory_url",
    "mqtt_address",
    "mqtt_url",
    "shared_amqp_url",
    "shared_broker",
    "stomp_address",
    "stomp_url",
    "tls_client_certificate",
    "tls_client_context",
    "web_mqtt_url",
    "web_stomp_url",
]

#: The marker's arguments, and what each does (the marker's help, and its error on a typo).
MARKER_ARGUMENTS = {
    "topology": "a RabbitMQ definitions file to load (relative to the test file) or a dict",
    "clock": "True for a ManualClock (the test moves time)",
    "vhosts": "extra virtual hosts",
    "users": "extra users {name: password} (guest/guest is always there)",
    "policies": "policies to set after the topology, each {name, pattern, definition[, priority, "
                "apply-to, vhost]} as a definitions file lists them",
    "operator_policies": "operator policies to set, in the same form",
    "ignore_unsupported": "True to load a topology without the runtime parameters embroker "
                          "cannot honour (shovels, federation upstreams) instead of refusing it",
    "strict": "True (or 'unroutable' to count unroutable publishes too): fail the test if it "
              "leaves connections, unacked deliveries or listener errors behind",
    "management": "True for a listener (amqp_server) that also serves the management HTTP API "
                  "and console on a free port (a test that asks for management_url gets one)",
    "stomp": "True for a listener (amqp_server) that also serves STOMP and Web-STOMP on free "
             "ports (a test that asks for stomp_url, stomp_address or web_stomp_url gets them)",
    "mqtt": "True for a listener (amqp_server) that also serves MQTT and Web-MQTT on free "
            "ports (a test that asks for mqtt_url, mqtt_address or web_mqtt_url gets them)",
    "plugins": "RabbitMQ plugins to enable, by RabbitMQ's names (rabbitmq_delayed_message_"
               "exchange, rabbitmq_consistent_hash_exchange, rabbitmq_sharding, rabbitmq_random_"
               "exchange, rabbitmq_recent_history_exchange, rabbitmq_event_exchange); adds to "
               "the embroker_plugins ini option",
    "random_seed": "what x-random exchanges draw from (broker.plugins.random.seed)",
    "nodes": "a cluster of N nodes (or of nodes with those names): a listener per node "
             "(amqp_servers, amqp_urls; amqp_server is the first node's), and "
             "embroker_faults.stop_node(name) / start_node(name)",
}

_MARKER_HELP = ("embroker(" + ", ".join(f"{k}=..." for k in MARKER_ARGUMENTS) + "): configure "
                "this test's broker: " + "; ".join(f"{k}: {v}" for k, v in MARKER_ARGUMENTS.items()))

_ADMIN = pytest.StashKey["Admin | None"]()
_LEAKS = pytest.StashKey[list[str]]()
_BROKERS = pytest.StashKey[list["AnyBroker"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("embroker")
    group.addoption("--embroker-reference", metavar="URL", default=None,
                    help="run the tests against this RabbitMQ: each test gets a vhost of its "
                         "own there, and fixtures that need embroker's internals skip")
    group.addoption("--embroker-management", metavar="URL", default=None,
                    help="the reference's management API (default http://HOST:15672/api with "
                         "the reference URL's credentials; rabbitmqctl when it does not answer)")
    group.addoption("--embroker-mqtt-port", metavar="N", type=int, default=None,
                    help="the reference's MQTT port (rabbitmq_mqtt's listener; default "
                         "EMBROKER_REFERENCE_MQTT_PORT, else RabbitMQ's 1883)")
    group.addoption("--embroker-trace", metavar="N", type=int, default=None,
                    help="how many routing decisions a failed test's report shows "
                         "(default 10; 0: no embroker section)")
    parser.addini("embroker_reference", "like --embroker-reference URL", default="")
    parser.addini("embroker_management", "like --embroker-management URL", default="")
    parser.addini("embroker_trace", "like --embroker-trace N", default="10")
    parser.addini("embroker_mqtt_port", "like --embroker-mqtt-port N", default="")
    parser.addini("embroker_strict", "strict mode for every test: true, unroutable or false "
                  "(another value stops the run)", default="false")
    parser.addini("embroker_plugins", "RabbitMQ plugins every test's broker enables (names "
                  "separated by spaces, commas or lines)", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)
    _check_options(config)


#: ``embroker_strict``'s values (any case), and what each means.
STRICT_VALUES = {"true": "strict", "yes": "strict", "on": "strict", "1": "strict",
                 "unroutable": "unroutable",
                 "false": None, "no": None, "off": None, "0": None, "": None}


def _usage(option: str, value: object, valid: str) -> pytest.UsageError:
    text = f"embroker: {option} = {value!r} is not a value it takes: {valid}"
    if isinstance(value, str) and "#" in value:
        text += (" (pytest keeps what follows a value on its line, comments included: put a "
                 "comment on a line of its own)")
    return pytest.UsageError(text)


def _check_options(config: pytest.Config) -> None:
    """Every ini and command-line option the plugin reads, read once before any test: a value
    it cannot read stops the run and says what it takes (a typo, or an inline comment, never
    turns an option quietly off)."""
    from embroker.model._plugins import PLUGINS

    strict = str(config.getini("embroker_strict"))
    if strict.strip().lower() not in STRICT_VALUES:
        raise _usage("embroker_strict", strict, "true, unroutable or false (also yes/no, on/off, "
                     "1/0)")
    _trace_count(config)
    unknown = [name for name in _plugins(config, None) if name not in PLUGINS]
    if unknown:
        raise _usage("embroker_plugins", " ".join(unknown), "RabbitMQ's names of the plugins "
                     f"embroker implements: {', '.join(PLUGINS)}")
    for option, ini, schemes in (("--embroker-reference", "embroker_reference",
                                  ("amqp", "amqps")),
                                 ("--embroker-management", "embroker_management",
                                  ("http", "https"))):
        given = config.getoption(option.lstrip("-").replace("-", "_"))
        name, value = (option, given) if given else (ini, str(config.getini(ini) or ""))
        if value and value.split("://", 1)[0].lower() not in schemes:
            raise _usage(name, value, f"a URL, {' or '.join(s + '://...' for s in schemes)}")


def _trace_count(config: pytest.Config) -> int:
    """How many routing decisions a failed test's report shows: ``--embroker-trace``, else
    the ini option, else 10."""
    count: int | None = config.getoption("embroker_trace")
    if count is None:
        text = str(config.getini("embroker_trace")).strip()
        if text and not text.isdigit():
            raise _usage("embroker_trace", config.getini("embroker_trace"),
                         "how many routing decisions a failed test's report shows, a whole "
                         "number (0: no embroker section)")
        return int(text or 10)
    if count < 0:
        raise _usage("--embroker-trace", count, "a whole number, 0 or more")
    return count


def _management(config: pytest.Config) -> str | None:
    """The reference's management API given by option or ini (``None``: its default)."""
    value = config.getoption("embroker_management") or config.getini("embroker_management")
    return str(value) if value else None


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    url = _reference(config)
    if not url:
        return None
    admin = _admin(config)
    if admin is None:
        return [f"embroker: reference RabbitMQ at {url}; neither its management API nor "
                "rabbitmqctl answers, so the tests share the URL's vhost and fixtures that "
                "read the broker skip"]
    return [f"embroker: reference RabbitMQ at {url}; a vhost per test, created and deleted "
            f"through {admin.description}; routing decisions from its firehose "
            "(amq.rabbitmq.trace)"]


def _reference(config: pytest.Config) -> str | None:
    value = config.getoption("embroker_reference") or config.getini("embroker_reference")
    return str(value) if value else None


def _admin(config: pytest.Config) -> Admin | None:
    if _ADMIN not in config.stash:
        from embroker._reference import find_admin

        url = _reference(config)
        config.stash[_ADMIN] = find_admin(url, _management(config)) if url else None
    return config.stash[_ADMIN]


def _skip_in_reference(request: pytest.FixtureRequest, what: str) -> None:
    url = _reference(request.config)
    if url:
        pytest.skip(f"{what} needs embroker's internals: not available with the reference "
                    f"RabbitMQ ({url})")


# -- the marker ---------------------------------------------------------------------------------

@pytest.fixture
def embroker_reference(request: pytest.FixtureRequest) -> str | None:
    """The reference RabbitMQ URL, or ``None`` when the tests run on embroker."""
    return _reference(request.config)


@pytest.fixture
def embroker_config(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The keyword arguments of the ``embroker`` markers on this test (closest last wins);
    override it to configure every broker of a folder."""
    config: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("embroker"))):
        if marker.args:
            pytest.fail(f"@pytest.mark.embroker takes keyword arguments only, not "
                        f"{marker.args!r}; its arguments are {', '.join(MARKER_ARGUMENTS)}",
                        pytrace=False)
        unknown = sorted(set(marker.kwargs) - set(MARKER_ARGUMENTS))
        if unknown:
            pytest.fail(f"@pytest.mark.embroker got unknown argument(s) {', '.join(unknown)}; "
                        "its arguments are:\n" + "\n".join(
                            f"  {k}: {v}" for k, v in MARKER_ARGUMENTS.items()), pytrace=False)
        config.update(marker.kwargs)
    return config


def _strict(request: pytest.FixtureRequest, config: dict[str, Any]) -> str | None:
    """``None`` (not strict), ``"strict"`` or ``"unroutable"``."""
    value: Any = config.get("strict")
    if value is None:  # (the ini value, checked at configure time)
        return STRICT_VALUES[str(request.config.getini("embroker_strict")).strip().lower()]
    if value is True:
        return "strict"
    if value == "unroutable":
        return "unroutable"
    if value in (False, None):
        return None
    pytest.fail(f"@pytest.mark.embroker(strict={value!r}): strict is True, False or "
                "'unroutable'", pytrace=False)
    return None  # not reached


def _plugins(config: pytest.Config, marked: Any) -> list[str]:
    """The ini option's plugins, then the marker's (a name or a list of names)."""
    names = str(config.getini("embroker_plugins") or "").replace(",", " ").split()
    if isinstance(marked, str):
        marked = [marked]
    for name in marked or ():
        if name not in names:
            names.append(name)
    return names


def _remember(request: pytest.FixtureRequest, broker: AnyBroker) -> None:
    request.node.stash.setdefault(_BROKERS, []).append(broker)


# -- fixtures -----------------------------------------------------------------------------------

@pytest.fixture
def broker(request: pytest.FixtureRequest,
           embroker_config: dict[str, Any]) -> Iterator[Broker]:
    """A fresh in-memory :class:`~embroker.Broker` for this test (see the ``embroker`` marker);
    with ``--embroker-reference``, a vhost of the reference RabbitMQ behind the same helpers."""
    config = dict(embroker_config)
    strict = _strict(request, config)
    config.pop("strict", None)
    config.pop("management", None)  # the listener's (amqp_server), not the broker's
    for protocol in PROTOCOLS:  # (stomp=True, mqtt=True: the listener's too)
        config.pop(protocol.kind, None)
    if _reference(request.config):
        yield _reference_broker(request, config)  # type: ignore[misc]  # the same helpers work
        return
    config["plugins"] = _plugins(request.config, config.get("plugins"))
    refused: DefinitionsError | None = None
    try:
        made = make_broker(base=request.path.parent, **config)
    except DefinitionsError as error:  # (the model's one error: what is wrong, on one line)
        refused = error
    if refused is not None:  # (out of the except: no "during handling" of it)
        pytest.fail(f"@pytest.mark.embroker(topology={config.get('topology')!r}): cannot load "
                    f"the topology: {refused.line}", pytrace=False)
    _remember(request, made)
    yield made
    if strict is not None:
        found = request.node.stash.get(_LEAKS, [])
        found += [p for p in leaks(made, unroutable=strict == "unroutable") if p not in found]
        if found:
            pytest.fail(f"strict mode: the test left {len(found)} thing(s) behind:\n"
                        + "\n".join(f"- {p}" for p in found), pytrace=False)


def _reference_broker(request: pytest.FixtureRequest, config: dict[str, Any]) -> ReferenceBroker:
    from embroker._reference import ReferenceBroker
    from embroker.testing import _topology_path

    url = _reference(request.config)
    assert url is not None
    cluster = config.get("nodes", 1) not in (1, None)  # (RabbitMQ's own nodes: not made here)
    for key, why in (("clock", "the virtual clock (clock=True)"),
                     ("vhosts", "extra vhosts (vhosts=...)"), ("users", "extra users (users=...)"),
                     ("nodes", "a cluster of nodes (nodes=...)")):
        if config.get(key) if key != "nodes" else cluster:
            pytest.skip(f"{why} needs embroker's internals: not available with the reference "
                        f"RabbitMQ ({url})")
    admin = _admin(request.config)
    if admin is None:
        pytest.skip(f"the reference RabbitMQ ({url}) offers neither its management API nor "
                    "rabbitmqctl: no vhost of its own for this test, no routing decisions")
    reference = ReferenceBroker(url, admin, request.node.nodeid)
    request.addfinalizer(reference.close)
    topology = config.get("topology")
    if topology is not None:
        reference.load_definitions(topology if isinstance(topology, dict)
                                   else _topology_path(topology, request.path.parent))
    for key, setter in (("policies", reference.set_policy),
                        ("operator_policies", reference.set_operator_policy)):
        for item in config.get(key) or ():
            if item.get("vhost", "/") != "/":
                pytest.skip(f"a policy in vhost {item['vhost']!r}: each test has one vhost of the "
                            f"reference RabbitMQ ({url})")
            setter(item["name"], item["pattern"], item["definition"],
                   priority=item.get("priority", 0),
                   apply_to=item.get("apply-to", item.get("apply_to", "all")))
    _remember(request, reference)
    return reference


@pytest.fixture
def amqp_server(request: pytest.FixtureRequest, broker: Broker,
                embroker_config: dict[str, Any]) -> Iterator[Server]:
    """A loopback listener on ``broker`` for this test; raises the listener's errors after it.
    It serves the management HTTP API too (on a free port, ``server.management_url``) when the
    test asks for ``management_url`` or is marked ``@pytest.mark.embroker(management=True)``,
    and STOMP and Web-STOMP (free ports: ``server.stomp_url``, ``server.web_stomp_url``) when
    it asks for ``stomp_url``, ``stomp_address`` or ``web_stomp_url`` or is marked
    ``stomp=True``, MQTT and Web-MQTT likewise (``mqtt_url``, ``mqtt_address``,
    ``web_mqtt_url``; ``mqtt=True``)."""
    _skip_in_reference(request, "the amqp_server fixture")
    if len(broker.nodes) > 1:  # (a cluster: the first node's, of a listener per node)
        servers: NodeServers = request.getfixturevalue("amqp_servers")
        yield servers[0]
        return
    strict = _strict(request, embroker_config)
    with broker.serve(**_listener_settings(request, embroker_config)) as server:
        yield server
        if strict is not None:  # before the listener closes what the test left open
            request.node.stash[_LEAKS] = leaks(broker, unroutable=strict == "unroutable")
    check_server(server)


def _listener_settings(request: pytest.FixtureRequest,
                       embroker_config: dict[str, Any]) -> dict[str, Any]:
    """What the test's listeners serve besides AMQP: the management API when the test asks for
    ``management_url`` or the marker says ``management=True``; a plugin protocol's ports when
    it asks for one of its fixtures or the marker names it (free ports)."""
    management = bool(embroker_config.get("management")) or \
        "management_url" in request.fixturenames
    asked = set(request.fixturenames)
    ports: dict[str, Any] = {f"{kind}_port": 0 for p in PROTOCOLS for kind in (p.kind, p.web_kind)
             if embroker_config.get(p.kind) or _fixtures(p) & asked}
    return {"management": management, **ports}


@pytest.fixture
def amqp_servers(request: pytest.FixtureRequest, broker: Broker,
                 embroker_config: dict[str, Any]) -> Iterator[NodeServers]:
    """A loopback listener per node of this test's broker (``@pytest.mark.embroker(nodes=3)``),
    each on free ports of its own, in the order of ``broker.nodes``
    (:class:`~embroker.server.NodeServers`: ``amqp_servers.server(name)``,
    ``amqp_servers.stop_node(name)``); serving what ``amqp_server`` would (the management API,
    STOMP, MQTT as asked). Raises the listeners' errors after the test. A broker of one node:
    its ``amqp_server`` alone."""
    _skip_in_reference(request, "the amqp_servers fixture")
    if len(broker.nodes) == 1:
        yield NodeServers([request.getfixturevalue("amqp_server")])
        return
    strict = _strict(request, embroker_config)
    with broker.serve_nodes(**_listener_settings(request, embroker_config)) as servers:
        yield servers
        if strict is not None:  # before the listeners close what the test left open
            request.node.stash[_LEAKS] = leaks(broker, unroutable=strict == "unroutable")
    for server in servers:
        check_server(server)


@pytest.fixture
def amqp_urls(request: pytest.FixtureRequest) -> list[str]:
    """The AMQP URL of each node of this test's broker, in node order: a client's list of
    addresses (pika: ``[pika.URLParameters(url) for url in amqp_urls]``); with a reference
    RabbitMQ, its one URL (``amqp_url``)."""
    if _reference(request.config):
        return [request.getfixturevalue("amqp_url")]
    servers: NodeServers = request.getfixturevalue("amqp_servers")
    return servers.urls


@pytest.fixture
def amqp_url(request: pytest.FixtureRequest) -> str:
    """An AMQP URL for real clients: this test's listener, or this test's vhost of the
    reference RabbitMQ (its URL itself when no vhost can be made there)."""
    url_option = _reference(request.config)
    if url_option:
        if _admin(request.config) is None:
            return url_option
        reference: Any = request.getfixturevalue("broker")
        url: str = reference.url
        return url
    server: Server = request.getfixturevalue("amqp_server")
    return server.url


@pytest.fixture
def amqp_url_for(request: pytest.FixtureRequest) -> Callable[..., str]:
    """A factory of AMQP URLs as other users of this test's listener:
    ``amqp_url_for("checkout", "s3cret", vhost="shop", configure="^$", write="^orders$",
    read="^$", tags=())`` makes the user (and the vhost) with those permissions (all, by
    default) and returns ``amqp://checkout:s3cret@127.0.0.1:PORT/shop``
    (:func:`embroker.testing.url_as`). With a reference RabbitMQ, the user is made in the node
    for the test (with its permissions in the test's vhost) and deleted after it."""
    where: Any = request.getfixturevalue("broker" if _reference(request.config)
                                         else "amqp_server")

    def url_for(user: str, password: str, vhost: str = "/", **permissions: Any) -> str:
        return url_as(where, user, password, vhost=vhost, **permissions)
    return url_for


@pytest.fixture
def management_url(request: pytest.FixtureRequest) -> str:
    """The URL of RabbitMQ's management HTTP API and console (``http://HOST:PORT/``; the API
    is under ``api/``, guest/guest): this test's listener (``amqp_server``, which then serves
    it on a free port), or the reference RabbitMQ's (``--embroker-management``, by default
    ``http://HOST:15672/``), where this test's vhost is the ``broker`` fixture's ``vhost``."""
    url_option = _reference(request.config)
    if url_option:
        from embroker._reference import _parse

        management = _management(request.config)
        if management:
            return management.rstrip("/").removesuffix("/api") + "/"
        return f"http://{_parse(url_option).host}:15672/"
    server: Server = request.getfixturevalue("amqp_server")
    return server.management_url


def _fixtures(p: ListenerPlugin) -> frozenset[str]:
    """The fixtures that make the test's listener serve a plugin protocol and its Web- one
    (``stomp_url``, ``stomp_address``, ``web_stomp_url``; ``mqtt_url``...)."""
    return frozenset({f"{p.kind}_url", f"{p.kind}_address", f"{p.web_kind}_url"})


#: Where the reference's MQTT listener is when neither option nor ini says (a machine whose
#: 1883 another MQTT broker holds moves the plugin's: .ci/run sets 1884 there).
REFERENCE_MQTT_PORT_VARIABLE = "EMBROKER_REFERENCE_MQTT_PORT"


def reference_port(config: pytest.Config, p: ListenerPlugin, *, web: bool = False) -> int:
    """The reference RabbitMQ's port of a plugin protocol: its plugin's default (61613,
    15674, 15675), but MQTT's, which ``--embroker-mqtt-port`` (the ``embroker_mqtt_port`` ini
    option, the ``EMBROKER_REFERENCE_MQTT_PORT`` variable) gives, else 1883."""
    if web:
        return p.web_port
    if p.kind == "mqtt":
        given = config.getoption("embroker_mqtt_port") or config.getini("embroker_mqtt_port") \
            or os.environ.get(REFERENCE_MQTT_PORT_VARIABLE)
        if given:
            try:
                return int(str(given))
            except ValueError:
                raise _usage("embroker_mqtt_port", given, "a port number") from None
    return p.port


def _reference_host(url: str) -> str:
    from embroker._reference import _parse

    host = _parse(url).host
    return f"[{host}]" if ":" in host else host


def _url(request: pytest.FixtureRequest, kind: str, *, web: bool = False) -> str:
    """A plugin protocol's URL: the test's listener's (which then serves it on a free port),
    or the reference's."""
    p = by_kind(kind)
    url = _reference(request.config)
    if url:
        port = reference_port(request.config, p, web=web)
        scheme, path = ("ws", "/ws") if web else (p.scheme, "")
        return f"{scheme}://{_reference_host(url)}:{port}{path}"
    server: Server = request.getfixturevalue("amqp_server")
    found = getattr(server, f"{p.web_kind if web else p.kind}_url")
    assert isinstance(found, str)
    return found


def _address(request: pytest.FixtureRequest, kind: str) -> tuple[str, int]:
    """``(HOST, PORT)`` of a plugin protocol's port, the same as its URL's."""
    p = by_kind(kind)
    url = _reference(request.config)
    if url:
        from embroker._reference import _parse

        return _parse(url).host, reference_port(request.config, p)
    server: Server = request.getfixturevalue("amqp_server")
    port = server.listener_port(kind)
    assert port is not None
    return server.host, port


@pytest.fixture
def stomp_url(request: pytest.FixtureRequest) -> str:
    """``stomp://HOST:PORT`` of STOMP (a STOMP client logs in with CONNECT's ``login`` and
    ``passcode``, guest/guest): this test's listener (``amqp_server``, which then serves STOMP
    on a free port), or the reference RabbitMQ's ``rabbitmq_stomp`` port (61613)."""
    return _url(request, "stomp")


@pytest.fixture
def stomp_address(request: pytest.FixtureRequest) -> tuple[str, int]:
    """``(HOST, PORT)`` of STOMP, as STOMP clients take it (stomp.py:
    ``stomp.Connection([stomp_address])``): the same port as ``stomp_url``."""
    return _address(request, "stomp")


@pytest.fixture
def web_stomp_url(request: pytest.FixtureRequest) -> str:
    """``ws://HOST:PORT/ws``: STOMP over WebSocket (subprotocols ``v12.stomp``, ``v11.stomp``,
    ``v10.stomp``), on this test's listener (a free port) or the reference RabbitMQ's
    ``rabbitmq_web_stomp`` port (15674)."""
    return _url(request, "stomp", web=True)


@pytest.fixture
def mqtt_url(request: pytest.FixtureRequest) -> str:
    """``mqtt://HOST:PORT`` of MQTT 3.1/3.1.1 (a client logs in with CONNECT's user name and
    password, guest/guest, or none: the plugin's default user): this test's listener
    (``amqp_server``, which then serves MQTT on a free port), or the reference RabbitMQ's
    ``rabbitmq_mqtt`` port (``--embroker-mqtt-port``, default 1883)."""
    return _url(request, "mqtt")


@pytest.fixture
def mqtt_address(request: pytest.FixtureRequest) -> tuple[str, int]:
    """``(HOST, PORT)`` of MQTT, as MQTT clients take it (paho:
    ``client.connect(*mqtt_address)``): the same port as ``mqtt_url``."""
    return _address(request, "mqtt")


@pytest.fixture
def web_mqtt_url(request: pytest.FixtureRequest) -> str:
    """``ws://HOST:PORT/ws``: MQTT over WebSocket (subprotocol ``mqtt``; paho:
    ``Client(transport="websockets")``, ``ws_set_options(path="/ws")``), on this test's
    listener (a free port) or the reference RabbitMQ's ``rabbitmq_web_mqtt`` port (15675)."""
    return _url(request, "mqtt", web=True)


@pytest.fixture
def amqp10_url(request: pytest.FixtureRequest) -> str:
    """An AMQP URL for AMQP 1.0 clients (proton: ``amqp://USER:PASSWORD@HOST:PORT``): this
    test's listener, which serves 0-9-1 and 1.0 on one port, or the reference RabbitMQ."""
    url = _reference(request.config)
    if url:
        return url.rstrip("/")
    server: Server = request.getfixturevalue("amqp_server")
    return server.amqp10_url


@pytest.fixture
def amqp_channel(request: pytest.FixtureRequest, broker: Broker) -> Iterator[Channel]:
    """An in-process channel on ``broker`` (pika's method names, no socket); with a reference
    RabbitMQ, a pika channel on the test's vhost."""
    connection = broker.connect()
    yield connection.channel()
    if connection.is_open:
        connection.close()


@pytest.fixture
def memory_pika(request: pytest.FixtureRequest, broker: Broker) -> Iterator[Any]:
    """A real ``pika.BlockingConnection`` to ``broker`` over an in-memory link (no socket,
    no thread; pika's timers on the broker's clock), closed after the test. A connection the
    broker or a fault ended is not this fixture's error: the failure report says why it
    ended (``embroker`` section)."""
    import pika.exceptions

    _skip_in_reference(request, "an in-memory pika connection (memory_pika)")
    connection = broker.pika_connection()
    yield connection
    if connection.is_open:
        with contextlib.suppress(pika.exceptions.AMQPConnectionError):
            connection.close()  # (pika hears only now that its connection is gone)


@pytest.fixture
def memory_url(request: pytest.FixtureRequest, broker: Broker) -> str:
    """A URL naming ``broker`` for the in-memory transports of aiormq and aio-pika
    (``aio_pika.connect(memory_url, connection_class=embroker.memory.aio.Connection)``) and
    kombu (``embroker://``): no socket, no thread."""
    _skip_in_reference(request, "an in-memory transport (memory_url)")
    return broker.memory_url


@pytest.fixture
def memory_urls(request: pytest.FixtureRequest, broker: Broker) -> list[str]:
    """:func:`memory_url` of each node of this test's broker, in node order (a cluster:
    ``@pytest.mark.embroker(nodes=3)``): a client's list of addresses, with no socket; a
    stopped node refuses its clients as its closed port would."""
    _skip_in_reference(request, "an in-memory transport (memory_urls)")
    return broker.memory_urls


@pytest.fixture
def embroker_faults(request: pytest.FixtureRequest, broker: Broker) -> Iterator[Faults]:
    """:class:`embroker.faults.Faults` for this test's broker and its listener (started for
    it; a cluster's: a listener per node, ``stop_node``/``start_node``); disarmed after the
    test."""
    _skip_in_reference(request, "injecting faults (embroker_faults)")
    served: Server | NodeServers = request.getfixturevalue(
        "amqp_server" if len(broker.nodes) == 1 else "amqp_servers")
    faults = Faults(broker, served)
    yield faults
    faults.clear()


@pytest.fixture
def embroker_expectations(request: pytest.FixtureRequest,
                          broker: Broker) -> Iterator[Expectations]:
    """Strict expectations on what this test publishes (respx-like): declare them with
    ``embroker_expectations.published(...)``; after the test, anything published that no
    expectation covers, or an expectation not met, fails it."""
    expectations = Expectations(broker)
    yield expectations
    report = getattr(request.node, "rep_call", None)
    if report is None or report.passed:
        expectations.verify()


# -- TLS -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TLSFiles:
    """A throwaway certificate authority and a server certificate it issued for ``localhost``
    and ``127.0.0.1``, as PEM files (``embroker_tls``)."""

    #: The authority (a ``trustme.CA``): it issues more certificates.
    ca: Any
    cacertfile: str
    certfile: str
    keyfile: str

    def options(self, **more: Any) -> TLSOptions:
        """:class:`~embroker.tls.TLSOptions` with these files (and ``more`` settings)."""
        return TLSOptions(certfile=self.certfile, keyfile=self.keyfile,
                          cacertfile=self.cacertfile, **more)

    def client_context(self) -> ssl.SSLContext:
        """A client-side context that trusts the authority (and checks the host name)."""
        return ssl.create_default_context(cafile=self.cacertfile)


@dataclass(frozen=True)
class ClientCertificate:
    """A client certificate's files (``tls_client_certificate``): ``certfile`` holds the
    certificate, ``keyfile`` its key, ``pemfile`` both; ``user`` the name SASL EXTERNAL logs in
    as with RabbitMQ's default ``ssl_cert_login_from`` (its distinguished name)."""

    certfile: str
    keyfile: str
    pemfile: str
    user: str

    def context(self, files: TLSFiles) -> ssl.SSLContext:
        """A client context that trusts ``files``' authority and presents this certificate."""
        context = files.client_context()
        context.load_cert_chain(self.pemfile)
        return context


@pytest.fixture(scope="session")
def embroker_tls(tmp_path_factory: pytest.TempPathFactory) -> TLSFiles:
    """A throwaway certificate authority and server certificate for the session (trustme)."""
    trustme = pytest.importorskip(
        "trustme", reason="the TLS fixtures need trustme: pip install pytest-embroker[tls]")
    ca = trustme.CA()
    leaf = ca.issue_cert("localhost", "127.0.0.1", "::1")
    where = tmp_path_factory.mktemp("embroker-tls")
    ca.cert_pem.write_to_path(str(where / "ca.pem"))
    leaf.cert_chain_pems[0].write_to_path(str(where / "server.pem"))
    leaf.private_key_pem.write_to_path(str(where / "server.key"))
    return TLSFiles(ca, str(where / "ca.pem"), str(where / "server.pem"),
                    str(where / "server.key"))


@pytest.fixture
def amqps_server(request: pytest.FixtureRequest, broker: Broker,
                 embroker_tls: TLSFiles) -> Iterator[Server]:
    """A loopback listener on ``broker`` with an amqps port (``server.tls_url``) besides the
    plain one, which asks clients for a certificate and checks one sent (``verify_peer``,
    without ``fail_if_no_peer_cert``); raises the listener's errors after the test."""
    _skip_in_reference(request, "the amqps_server fixture")
    with broker.serve(tls=embroker_tls.options(verify="verify_peer"), tls_port=0) as server:
        yield server
    check_server(server)


@pytest.fixture
def amqps_url(amqps_server: Server) -> str:
    """``amqps://guest:guest@localhost:PORT/`` of this test's listener (``localhost``: the name
    its certificate holds)."""
    return f"amqps://guest:guest@localhost:{amqps_server.tls_port}/"


@pytest.fixture
def tls_client_context(embroker_tls: TLSFiles) -> ssl.SSLContext:
    """A client ``ssl.SSLContext`` that trusts ``embroker_tls``'s authority."""
    return embroker_tls.client_context()


@pytest.fixture
def tls_client_certificate(embroker_tls: TLSFiles,
                           tmp_path: Path) -> Callable[[str], ClientCertificate]:
    """Issue a client certificate: ``tls_client_certificate("app")`` gives the files of one
    whose common name is ``app`` (organization ``embroker``)."""
    def issue(common_name: str) -> ClientCertificate:
        leaf = embroker_tls.ca.issue_cert(common_name, common_name=common_name,
                                          organization_name="embroker",
                                          organization_unit_name="tests")
        base = tmp_path / f"client-{common_name}"
        leaf.cert_chain_pems[0].write_to_path(f"{base}.pem")
        leaf.private_key_pem.write_to_path(f"{base}.key")
        leaf.private_key_and_cert_chain_pem.write_to_path(f"{base}-with-key.pem")
        return ClientCertificate(f"{base}.pem", f"{base}.key", f"{base}-with-key.pem",
                                 f"CN={common_name},OU=tests,O=embroker")

    return issue


# -- a broker for the whole session ---------------------------------------------------------------

@pytest.fixture(scope="session")
def _embroker_session(request: pytest.FixtureRequest) -> Iterator[tuple[Broker, Server]]:
    if _reference(request.config):
        pytest.skip("a shared broker reset between tests needs embroker's internals "
                    "(broker.reset()): not available with the reference RabbitMQ")
    shared = make_broker(plugins=_plugins(request.config, None))
    with shared.serve() as server:
        yield shared, server
    check_server(server)


@pytest.fixture(scope="session")
def shared_amqp_url(_embroker_session: tuple[Broker, Server]) -> str:
    """The URL of a listener on the session's shared broker: start slow workers on it once, in
    a session fixture, and use ``shared_broker`` in the tests."""
    return _embroker_session[1].url


@pytest.fixture
def shared_broker(request: pytest.FixtureRequest,
                  _embroker_session: tuple[Broker, Server]) -> Broker:
    """The session's broker, reset to its baseline for this test (``broker.reset()``): the
    trace and every queue emptied, what earlier tests declared gone. The baseline is the
    topology when the first test asked for it (after the session fixtures it needs, such as
    workers, were set up)."""
    shared = _embroker_session[0]
    if getattr(shared, "_baseline", None) is None:
        shared.mark_baseline()
    shared.reset()
    _remember(request, shared)
    return shared


# -- reports --------------------------------------------------------------------------------------

@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    # A helper that needs embroker's internals, called on a reference RabbitMQ: skip with why.
    try:
        return (yield)
    except NeedsEmbroker as exc:
        pytest.skip(str(exc))


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any],
                         request: pytest.FixtureRequest) -> Generator[None, object, object]:
    # The same in a fixture (one that moves the virtual clock, say).
    try:
        return (yield)
    except NeedsEmbroker as exc:
        pytest.skip(str(exc))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]  # (for embroker_expectations)
    if report.failed and not getattr(report, "wasxfail", None):
        brokers = item.stash.get(_BROKERS, [])
        if brokers:
            count = _trace_count(item.config)
            if count > 0:
                with contextlib.suppress(Exception):  # a report must never fail the run
                    report.sections.append(("embroker", "\n\n".join(
                        _state(b, count) for b in brokers)))
    return report


def _state(broker: AnyBroker, count: int) -> str:
    """The last ``count`` routing decisions with their messages' histories, and the queues."""
    from embroker import model

    decisions: list[RoutingDecision] = list(broker.trace)  # type: ignore[arg-type]
    shown = decisions[-count:]
    lines = [f"{broker!r}: the last {len(shown)} of {len(decisions)} routing decision(s)"]
    for decision in shown:
        lines.append(f"- {decision!r}")
        with contextlib.suppress(NeedsEmbroker):
            if decision.outcome in ("refused", "returned", "unroutable"):
                # why it went nowhere, and the name meant where one is missing
                lines.extend(f"    {line}" for line in decision.explain().splitlines()[1:])
                continue
            lines.extend(f"    {event}" for event in decision.history())
            lines.extend(f"    now: {fate}" for fate in decision.fate())
    if isinstance(broker, model.Broker):
        lines.extend(_incidents(broker))
        with broker.locked():
            queues = [q for v in broker.vhosts.values() for q in v.queues.values()]
        lines.append(f"queues ({len(queues)}):" if queues else "no queues")
        for queue in queues:
            lines.append(f"  {queue!r}")
            for position, message in enumerate(queue.messages[:count], 1):
                lines.append(f"    {position}. {message!r}")
            if queue.message_count > count:
                lines.append(f"    ... and {queue.message_count - count} more")
    return "\n".join(lines)



#: What the report adds under an incident of this reply text: how it comes about.
_WHY = {
    "FRAME_ERROR - missed heartbeats from client": (
        "the client sent nothing for two heartbeat intervals while it ran: its library sends "
        "heartbeats only while its I/O loop runs (pika: process_data_events; py-amqp and "
        "kombu: heartbeat_check); heartbeat=0 turns them off"),
    "FRAME_ERROR - handshake timeout": (
        "the client opened a socket and did not finish the AMQP handshake within the "
        "listener's handshake_timeout (10 s)"),
}


def _incidents(broker: ModelBroker) -> list[str]:
    """What the broker refused (channel and connection errors, with the method) and which
    connections it dropped, when (the broker's clock) and, for a drop, why that happens."""
    from embroker import ManualClock

    incidents = list(broker.incidents)
    if not incidents:
        return []
    lines = [f"closed by the broker ({len(incidents)}):"]
    manual = isinstance(broker.clock, ManualClock)
    for incident in incidents:
        when = (f"t={incident.at:.3f} (broker clock)" if manual else
                datetime.datetime.fromtimestamp(incident.wall).strftime("%H:%M:%S.%f")[:-3])
        lines.append(f"- at {when}: {incident}")
        lines.extend(f"    {why}" for text, why in _WHY.items()
                     if incident.reply_text.startswith(text))
    return lines
