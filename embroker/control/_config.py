"""RabbitMQ 3.10's node configuration, read as embroker's settings: the environment
(``RABBITMQ_*``), ``rabbitmq-env.conf``, ``rabbitmq.conf`` (and ``conf.d/*.conf``), the
``enabled_plugins`` file. Pure: it reads files, never starts anything.

Theory of operation (RabbitMQ 3.10.8's ``rabbit_env.erl``, ``rabbit_prelaunch_conf.erl``,
``rabbit.erl``, ``rabbit_plugins.erl``; ``deps/rabbit/priv/schema/rabbit.schema``):

1. The environment, ``rabbitmq-env.conf`` and the node's name are read as
   :mod:`._env` says (the tools read them by the same rules): each ``RABBITMQ_X`` else ``X``;
   the file fills in only what the environment leaves unset.
2. The Erlang distribution's port (``RABBITMQ_DIST_PORT``, default the AMQP port given by
   ``RABBITMQ_NODE_PORT`` + 20000) and interface (``-kernel inet_dist_use_interface`` in the
   Erlang arguments: ``ERL_FLAGS``, ``RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS``...; default every
   interface) are where embroker's control port listens (:attr:`NodeSettings.dist_port`).
3. The main configuration file is ``RABBITMQ_CONFIG_FILE``, default
   ``$SYS_PREFIX/etc/rabbitmq/rabbitmq``: used as named when it exists (``.conf``: the new
   format), else with ``.config`` then ``.conf`` appended; none found is no error
   (``find_actual_main_config_file/1``). Then every file matching ``RABBITMQ_CONFIG_FILES``
   (default ``.../conf.d/*.conf``; a directory means all its files), sorted, later files
   overriding earlier ones. An Erlang-terms ``.config`` file and ``advanced.config``
   (``RABBITMQ_ADVANCED_CONFIG_FILE``) are not read: each is named in one line.
4. Precedence between the environment and the files: ``RABBITMQ_NODE_IP_ADDRESS`` and
   ``RABBITMQ_NODE_PORT`` make the AMQP listener the configuration starts from
   (``rabbit_env:context_to_app_env_vars1/2`` sets ``tcp_listeners``), which ``listeners.tcp.*``
   in rabbitmq.conf replace (the file is applied after); ``RABBITMQ_DEFAULT_USER``,
   ``_PASS`` and ``_VHOST`` win over ``default_user`` and company
   (``rabbit:get_default_data_param/1`` prefers a value whose origin is the environment).
5. Plugins: ``RABBITMQ_ENABLED_PLUGINS`` (a comma list, ``ALL``, or empty for none) replaces
   the ``enabled_plugins`` file (RabbitMQ rewrites the file with it); otherwise the file
   (``RABBITMQ_ENABLED_PLUGINS_FILE``, default ``.../enabled_plugins``), an Erlang list
   ``[rabbitmq_management,rabbitmq_stream].``; a missing file is no plugin
   (``rabbit_plugins:read_enabled/1``). The management listener exists only with
   ``rabbitmq_management`` (or a plugin that depends on it), the stream listeners only with
   ``rabbitmq_stream``.
6. A rabbitmq.conf key no schema of RabbitMQ 3.10.8 (or its bundled plugins) knows is an
   error, as cuttlefish refuses it; a known key embroker does not honour becomes one line of
   :attr:`NodeSettings.unsupported`.
"""

from __future__ import annotations

import glob
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, final

from .._listener_plugins import PROTOCOLS, ListenerPlugin
from ..amqp091._frames import FRAME_MAX_LIMIT
from ..model._plugins import PLUGINS
from ..mqtt._settings import MqttSettings
from ..stomp._settings import StompSettings
from ..tls import TLS_VERSIONS, TLSOptions
from ._env import ConfigError, NodeNameError, environment, node_name
from ._env import prefixed as _env
from ._env import yes as _yes
from ._keys import RABBITMQ_KEYS

__all__ = ["ConfigError", "Listener", "NodeSettings", "parse_conf", "read_node_settings"]


@final
@dataclass(frozen=True, slots=True)
class Listener:
    """Where a listener listens: ``host`` ``"auto"`` is every interface (RabbitMQ's default,
    ``rabbit_networking``'s ``auto``)."""

    host: str
    port: int


#: RabbitMQ's default ports (rabbit's and the plugins' application defaults).
AMQP_PORT: Final = 5672
MANAGEMENT_PORT: Final = 15672
STREAM_PORT: Final = 5552

#: The plugins RabbitMQ 3.10.8 ships (its ``plugins`` folder).
RABBITMQ_PLUGINS: Final = frozenset({
    "rabbitmq_amqp1_0", "rabbitmq_auth_backend_cache", "rabbitmq_auth_backend_http",
    "rabbitmq_auth_backend_ldap", "rabbitmq_auth_backend_oauth2", "rabbitmq_auth_mechanism_ssl",
    "rabbitmq_aws", "rabbitmq_consistent_hash_exchange", "rabbitmq_event_exchange",
    "rabbitmq_federation", "rabbitmq_federation_management", "rabbitmq_jms_topic_exchange",
    "rabbitmq_management", "rabbitmq_management_agent", "rabbitmq_mqtt",
    "rabbitmq_peer_discovery_aws", "rabbitmq_peer_discovery_common",
    "rabbitmq_peer_discovery_consul", "rabbitmq_peer_discovery_etcd",
    "rabbitmq_peer_discovery_k8s", "rabbitmq_prometheus", "rabbitmq_random_exchange",
    "rabbitmq_recent_history_exchange", "rabbitmq_sharding", "rabbitmq_shovel",
    "rabbitmq_shovel_management", "rabbitmq_stomp", "rabbitmq_stream", "rabbitmq_stream_common",
    "rabbitmq_stream_management", "rabbitmq_top", "rabbitmq_tracing", "rabbitmq_trust_store",
    "rabbitmq_web_dispatch", "rabbitmq_web_mqtt", "rabbitmq_web_mqtt_examples",
    "rabbitmq_web_stomp", "rabbitmq_web_stomp_examples"})

#: Plugins embroker serves without a broker plugin: what each brings in embroker.
SERVED_PLUGINS: Final = {
    "rabbitmq_management": "the management listener",
    "rabbitmq_management_agent": "the management API's statistics",
    "rabbitmq_web_dispatch": "the management listener",
    "rabbitmq_stream": "the stream listeners",
    "rabbitmq_stream_common": "the stream protocol",
    "rabbitmq_stream_management": "the management API's stream pages",
    "rabbitmq_amqp1_0": "AMQP 1.0 on the AMQP ports",
    **{plugin: f"the {title} listeners" for p in PROTOCOLS
       for plugin, title in ((p.plugin, p.title), (p.web_plugin, p.web_title))},
    "rabbitmq_auth_mechanism_ssl": "SASL EXTERNAL (auth_mechanisms.N = EXTERNAL)",
    "rabbitmq_tracing": "the management API's tracing",
}

#: Plugins that bring up the management listener (rabbitmq_management and its dependents).
_MANAGEMENT_PLUGINS = frozenset({"rabbitmq_management", "rabbitmq_stream_management",
                                 "rabbitmq_shovel_management", "rabbitmq_federation_management",
                                 "rabbitmq_tracing"})
_STREAM_PLUGINS = frozenset({"rabbitmq_stream", "rabbitmq_stream_management"})

def _web_plugins(p: ListenerPlugin) -> frozenset[str]:
    """The plugins that bring up a protocol's Web- listeners (``rabbitmq_web_mqtt`` and its
    examples); they, and the protocol's own plugin, bring up its plain ones (the Web- plugin
    depends on it)."""
    return frozenset({p.web_plugin, f"{p.web_plugin}_examples"})


@final
@dataclass(frozen=True, slots=True)
class NodeSettings:
    """What a RabbitMQ 3.10 node would be, as embroker's settings
    (:func:`read_node_settings`).

    Attributes:
        node_name: ``name@host`` (``RABBITMQ_NODENAME``; default ``rabbit@`` the short host
            name, or the long one with ``RABBITMQ_USE_LONGNAME``).
        use_longname: ``RABBITMQ_USE_LONGNAME`` (1, yes or true).
        dist_port: ``RABBITMQ_DIST_PORT`` (default the AMQP port + 20000; 0, any free port,
            when the AMQP port is 0): where the node's control port listens (RabbitMQ's
            tools reach a node there).
        dist_port_given: whether ``RABBITMQ_DIST_PORT`` named it (a port only implied by
            the default gives way to a free one when it is taken).
        dist_interface: where the distribution listens: ``"auto"`` (every interface,
            Erlang's default) or the address of ``-kernel inet_dist_use_interface``.
        amqp_listeners, tls_listeners: the AMQP 0-9-1/1.0 listeners, plain and TLS
            (``listeners.tcp.*``, ``listeners.ssl.*``, ``RABBITMQ_NODE_*``).
        stream_listeners, stream_tls_listeners: ``stream.listeners.tcp.*`` / ``.ssl.*``
            (default 5552 / none); empty without the stream plugin.
        management_port, management_ip: ``management.tcp.port`` (or the older
            ``management.listener.port``), default 15672, ``None`` without the plugin.
        management_tls_port: ``management.ssl.port``; ``None`` unless set (and the plugin on).
        management_plugin_port, stream_plugin_port: where ``rabbitmq-plugins enable`` opens
            the management (stream) listener on the running node: the configured port
            (``management.tcp.port``, the first ``stream.listeners.tcp.*``), read whether or
            not the plugin is on at start, else RabbitMQ's 15672 (5552); ``None``:
            ``stream.listeners.tcp = none``, or only ``management.ssl.port`` set. See
            :attr:`plugin_ports`.
        management_plugin_tls_port, stream_plugin_tls_port: the same for the TLS listeners
            (``management.ssl.port``, the first ``stream.listeners.ssl.*``; ``None``: none).
            See :attr:`plugin_tls_ports`.
        protocol_listeners, protocol_tls_listeners: the plugin protocols' listeners
            (:data:`embroker._listener_plugins.PROTOCOLS`), by port kind: ``stomp``
            (``stomp.listeners.tcp.*`` / ``.ssl.*``, default 61613 / none), ``mqtt``
            (``mqtt.listeners.*``, 1883 / none), ``web_stomp`` (``web_stomp.tcp.port``, or
            the older ``web_stomp.port``, default 15674 / ``web_stomp.ssl.port``, none unless
            set), ``web_mqtt`` (``web_mqtt.tcp.port``, 15675 / ``web_mqtt.ssl.port``); a
            kind is left out without its plugin (the Web- plugin brings the plain one, which
            it depends on).
        protocol_plugin_ports, protocol_plugin_tls_ports: where ``rabbitmq-plugins enable``
            opens each of their plugins' listener on the running node (``rabbitmq_mqtt``:
            the first ``mqtt.listeners.tcp.*``), as the management and stream ones.
        port_settings: the plugin protocols' settings, by port kind (``Server.port_settings``):
            ``stomp`` (:attr:`stomp`) and ``mqtt`` (:attr:`mqtt`).
        tls: ``ssl_options.*``, ``None`` without a certificate.
        management_tls: ``management.ssl.*`` files, when given.
        web_tls: ``web_stomp.ssl.*`` and ``web_mqtt.ssl.*`` files, when given, by port kind.
        stream_advertised_host, stream_advertised_port: ``stream.advertised_*``.
        default_user, default_pass, default_vhost, default_user_tags, default_permissions:
            the user and vhost RabbitMQ creates on first start (guest, guest, /,
            administrator, ``.*`` thrice), none when definitions are loaded at start.
        loopback_users: users that may only connect over loopback (``guest``).
        heartbeat, frame_max, channel_max: what connection.tune offers (60, 131072, 2047).
        handshake_timeout: seconds (``handshake_timeout`` is in milliseconds: 10000).
        max_message_size: bytes (``None``: embroker's default, RabbitMQ's 128 MiB).
        auth_mechanisms, ssl_cert_login_from: SASL.
        definitions: the definitions files or folders to load at start
            (``load_definitions``, ``management.load_definitions``,
            ``definitions.local.path``).
        plugins: every enabled plugin, by RabbitMQ's name, sorted.
        cluster_name: ``cluster_name`` (``None``: unset).
        vm_memory_high_watermark: ``("relative", 0.4)`` (RabbitMQ's default) or
            ``("absolute", bytes)``.
        disk_free_limit: ``("absolute", 50000000)`` (the default) or ``("relative", x)``.
        log_file, log_file_level, log_console, log_console_level: ``log.file`` (``None``:
            ``log.file = false``), ``log.file.level``, ``log.console``,
            ``log.console.level``, for the node to honour.
        mnesia_base, mnesia_dir, log_base, main_log_file: the data and log places
            (``RABBITMQ_MNESIA_BASE``, ``_MNESIA_DIR``, ``_LOG_BASE``, ``_LOGS``).
        pid_file, keep_pid_file_on_exit: where the node writes its process id
            (``RABBITMQ_PID_FILE``, default ``MNESIA_BASE/NODENAME.pid``) and whether it
            leaves it when it stops (``RABBITMQ_KEEP_PID_FILE_ON_EXIT``).
        config_files: the rabbitmq.conf files read, in order.
        conf_env_file: the rabbitmq-env.conf read, ``None`` if there was none.
        advanced_config_file: an advanced.config present (not honoured).
        unsupported: one line per setting RabbitMQ knows and embroker does not honour
            (``rabbitmq.conf:7: cluster_formation.peer_discovery_backend: not honoured by
            embroker``), for the node to print.
    """

    node_name: str
    use_longname: bool = False
    dist_port: int = AMQP_PORT + 20000
    dist_port_given: bool = False
    dist_interface: str = "auto"
    amqp_listeners: tuple[Listener, ...] = (Listener("auto", AMQP_PORT),)
    tls_listeners: tuple[Listener, ...] = ()
    stream_listeners: tuple[Listener, ...] = ()
    stream_tls_listeners: tuple[Listener, ...] = ()
    management_port: int | None = None
    management_ip: str | None = None
    management_tls_port: int | None = None
    management_plugin_port: int | None = MANAGEMENT_PORT
    stream_plugin_port: int | None = STREAM_PORT
    management_plugin_tls_port: int | None = None
    stream_plugin_tls_port: int | None = None
    protocol_listeners: Mapping[str, tuple[Listener, ...]] = field(default_factory=dict)
    protocol_tls_listeners: Mapping[str, tuple[Listener, ...]] = field(default_factory=dict)
    protocol_plugin_ports: Mapping[str, int | None] = field(default_factory=lambda: {
        plugin: port for p in PROTOCOLS
        for plugin, port in ((p.plugin, p.port), (p.web_plugin, p.web_port))})
    protocol_plugin_tls_ports: Mapping[str, int | None] = field(default_factory=dict)
    port_settings: Mapping[str, Any] = field(default_factory=lambda: {
        "stomp": StompSettings(), "mqtt": MqttSettings()})
    tls: TLSOptions | None = None
    management_tls: TLSOptions | None = None
    web_tls: Mapping[str, TLSOptions] = field(default_factory=dict)
    stream_advertised_host: str | None = None
    stream_advertised_port: int | None = None
    default_user: str = "guest"
    default_pass: str = "guest"
    default_vhost: str = "/"
    default_user_tags: tuple[str, ...] = ("administrator",)
    default_permissions: tuple[str, str, str] = (".*", ".*", ".*")
    loopback_users: tuple[str, ...] = ("guest",)
    heartbeat: int = 60
    frame_max: int = 131072
    channel_max: int = 2047
    handshake_timeout: float = 10.0
    max_message_size: int | None = None
    auth_mechanisms: tuple[str, ...] = ("PLAIN", "AMQPLAIN")
    ssl_cert_login_from: str = "distinguished_name"
    definitions: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    cluster_name: str | None = None
    vm_memory_high_watermark: tuple[Literal["relative", "absolute"], float] = ("relative", 0.4)
    disk_free_limit: tuple[Literal["relative", "absolute"], float] = ("absolute", 50_000_000)
    log_file: str | None = None
    log_file_level: str = "info"
    log_console: bool = False
    log_console_level: str = "info"
    mnesia_base: str = "/var/lib/rabbitmq/mnesia"
    mnesia_dir: str = ""
    log_base: str = "/var/log/rabbitmq"
    main_log_file: str = ""
    pid_file: str = ""
    keep_pid_file_on_exit: bool = False
    config_files: tuple[str, ...] = ()
    conf_env_file: str | None = None
    advanced_config_file: str | None = None
    unsupported: tuple[str, ...] = field(default=())

    @property
    def stomp(self) -> StompSettings:
        """The STOMP plugin's settings (``stomp.default_user``, ``stomp.default_pass``,
        ``stomp.default_vhost``, ``stomp.implicit_connect``, ``stomp.ssl_cert_login``,
        ``stomp.default_topic_exchange``, ``stomp.default_nack_requeue``,
        ``stomp.hide_server_info``, ``stomp.login_timeout``), which Web-STOMP reads too."""
        settings: StompSettings = self.port_settings["stomp"]
        return settings

    @property
    def mqtt(self) -> MqttSettings:
        """The MQTT plugin's settings (``mqtt.default_user``, ``mqtt.default_pass``,
        ``mqtt.allow_anonymous``, ``mqtt.vhost``, ``mqtt.exchange``,
        ``mqtt.subscription_ttl``, ``mqtt.prefetch``, ``mqtt.ssl_cert_login``,
        ``mqtt.login_timeout``), which Web-MQTT reads too."""
        settings: MqttSettings = self.port_settings["mqtt"]
        return settings

    @property
    def plugin_ports(self) -> dict[str, int | None]:
        """Where each listener plugin listens when enabled on the running node, by plugin
        (``Node(plugin_ports=...)``)."""
        return {"rabbitmq_management": self.management_plugin_port,
                "rabbitmq_stream": self.stream_plugin_port, **self.protocol_plugin_ports}

    @property
    def plugin_tls_ports(self) -> dict[str, int | None]:
        """Where each listener plugin listens over TLS when enabled on the running node
        (``Node(plugin_tls_ports=...)``); none without TLS settings."""
        tls = self._tls is not None
        return {plugin: port if tls else None for plugin, port in (
            ("rabbitmq_management", self.management_plugin_tls_port),
            ("rabbitmq_stream", self.stream_plugin_tls_port),
            *self.protocol_plugin_tls_ports.items())}

    @property
    def _tls(self) -> TLSOptions | None:
        """The TLS ports' settings: embroker's listener has one for all of them
        (``ssl_options``, else the management's, Web-STOMP's or Web-MQTT's own files)."""
        return next((t for t in (self.tls, self.management_tls, *self.web_tls.values())
                     if t is not None), None)

    @property
    def broker_plugins(self) -> tuple[str, ...]:
        """The enabled plugins that are embroker broker plugins (``Broker(plugins=...)``)."""
        return tuple(p for p in self.plugins if p in PLUGINS)

    @property
    def seeds_default_data(self) -> bool:
        """Whether the default user and vhost are created: not when definitions are loaded at
        start ("Will not seed default virtual host and user: have definitions to load",
        ``rabbit:maybe_insert_default_data/0``)."""
        return not self.definitions

    def broker_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``embroker.Broker(...)``.

        The default user gets full permissions on every vhost (``Broker(users=...)``); the node
        applies :attr:`default_user_tags` and narrower :attr:`default_permissions` after
        (``broker.set_user_tags``, ``broker.set_permissions``), and loads
        :attr:`definitions`. The memory watermark is passed when absolute (embroker counts
        the message bodies held), not when relative (a share of the machine's memory).
        """
        seed = self.seeds_default_data
        kwargs: dict[str, Any] = {
            "vhosts": (self.default_vhost,) if seed else (),
            "users": {self.default_user: self.default_pass} if seed else {},
            "loopback_users": self.loopback_users,
            "plugins": self.broker_plugins,
            "auth_mechanisms": self.auth_mechanisms,
            "ssl_cert_login_from": self.ssl_cert_login_from,
            "max_message_size": self.max_message_size,
        }
        if self.cluster_name is not None:
            kwargs["server_properties"] = {"cluster_name": self.cluster_name}
        kind, value = self.vm_memory_high_watermark
        if kind == "absolute":
            kwargs["memory_high_watermark"] = int(value)
        return kwargs

    def server_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``embroker.server.Server(broker, ...)``.

        embroker listens on one host for all its ports, one port of each kind: the first
        AMQP listener's host (``"auto"``, every interface, becomes ``0.0.0.0``: embroker's
        listener takes one address family per host) and port; the other listeners are lines of
        :attr:`unsupported`. With ``listeners.tcp = none`` the AMQP port is any free port
        (embroker always has one).
        """
        first = self.amqp_listeners[0] if self.amqp_listeners else None
        host = first.host if first is not None else "localhost"
        kwargs: dict[str, Any] = {
            "host": "0.0.0.0" if host == "auto" else host,
            "port": first.port if first is not None else 0,
            "heartbeat": self.heartbeat,
            "handshake_timeout": self.handshake_timeout,
            "frame_max": self.frame_max,
            "channel_max": self.channel_max,
            "tls": self._tls,
            "tls_port": self.tls_listeners[0].port if self.tls_listeners else None,
            "management_port": self.management_port,
            "management_tls_port": self.management_tls_port,
            "stream_port": self.stream_listeners[0].port if self.stream_listeners else None,
            "stream_tls_port": self.stream_tls_listeners[0].port
            if self.stream_tls_listeners else None,
            "stream_advertised_host": self.stream_advertised_host,
            "stream_advertised_port": self.stream_advertised_port,
            "amqp10": "rabbitmq_amqp1_0" in self.plugins,
            "listeners": {kind: found[0].port
                          for kind, found in self.protocol_listeners.items() if found},
            "tls_listeners": {kind: found[0].port
                              for kind, found in self.protocol_tls_listeners.items() if found},
            "port_settings": dict(self.port_settings),
        }
        if kwargs["tls"] is None:
            kwargs["tls_port"] = kwargs["stream_tls_port"] = kwargs["management_tls_port"] = None
            kwargs["tls_listeners"] = {}
        return kwargs


# -- the environment: embroker.control._env (the tools read it too) ----------------------------

# -- rabbitmq.conf ----------------------------------------------------------------------------

_WORD = r"(?:\\\.|[A-Za-z0-9_-])+"
_SETTING = re.compile(rf"[ \t]*({_WORD}(?:\.{_WORD})*)[ \t]*=[ \t]*(.*)")
_INCLUDE = re.compile(r"[ \t]*include[ \t]+\S")


@final
@dataclass(frozen=True, slots=True)
class Setting:
    """One ``key = value`` line of a rabbitmq.conf."""

    key: tuple[str, ...]
    value: str
    file: str
    line: int

    @property
    def name(self) -> str:
        return ".".join(self.key)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def parse_conf(text: str, file: str = "rabbitmq.conf") -> list[Setting]:
    """The settings of a rabbitmq.conf, in order, as cuttlefish's grammar reads them
    (``conf_parse.peg``): ``key = value``, keys of dot-separated words (letters, digits,
    ``_``, ``-``, ``\\.`` for a dot inside a word), a value up to a ``#`` or the end of the
    line, or between single quotes, ``#`` comments, blank lines.

    Raises:
        ConfigError: a line that is none of those (``include`` lines too: embroker does not
            follow them), naming ``file`` and the line. Nothing else.
    """
    settings: list[Setting] = []
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.removesuffix("\r")
        stripped = line.strip(" \t")
        if not stripped or stripped.startswith("#"):
            continue
        if _INCLUDE.match(line):
            raise ConfigError(f"{file}:{number}: include is not supported by embroker: "
                              "put the settings in this file, or in conf.d/*.conf")
        match = _SETTING.fullmatch(line)
        if match is None:
            raise ConfigError(f"{file}:{number}: syntax error: expected 'key = value', got "
                              f"{stripped[:60]!r}")
        rest = match.group(2)
        if rest.startswith("'"):
            end = rest.find("'", 1)
            tail = rest[end + 1:].strip(" \t") if end > 0 else "x"
            if end < 0 or (tail and not tail.startswith("#")):
                raise ConfigError(f"{file}:{number}: syntax error: a quoted value must end "
                                  "with ' and nothing but a comment after it")
            value = rest[1:end]
        else:
            value = rest.split("#", 1)[0].rstrip(" \t")
            if not value:
                raise ConfigError(f"{file}:{number}: syntax error: no value for "
                                  f"{match.group(1)!r}")
        key = tuple(word.replace("\\.", ".") for word in re.findall(_WORD, match.group(1)))
        settings.append(Setting(key, value, file, number))
    return settings


def _known(key: tuple[str, ...]) -> bool:
    return any(_matches(pattern, key) for pattern in _PATTERNS.get(len(key), ()))


def _matches(pattern: tuple[str, ...], key: tuple[str, ...]) -> bool:
    return all(p.startswith("$") or p == k for p, k in zip(pattern, key, strict=True))


_PATTERNS: dict[int, list[tuple[str, ...]]] = {}
for _pattern in RABBITMQ_KEYS:
    _parts = tuple(_pattern.split("."))
    _PATTERNS.setdefault(len(_parts), []).append(_parts)


# -- values -----------------------------------------------------------------------------------

def _bad(s: Setting, expected: str) -> ConfigError:
    return ConfigError(f"{s.where}: {s.name} = {s.value!r}: expected {expected}")


def _int(s: Setting, *, low: int = 0, high: int | None = None) -> int:
    if not re.fullmatch(r"-?[0-9]+", s.value):
        raise _bad(s, "an integer")
    value = int(s.value)
    if value < low or (high is not None and value > high):
        raise _bad(s, f"an integer from {low}" + (f" to {high}" if high is not None else ""))
    return value


def _float(s: Setting) -> float:
    try:
        return float(s.value)
    except ValueError:
        raise _bad(s, "a number such as 0.4") from None


def _bool(s: Setting) -> bool:
    if s.value not in ("true", "false"):
        raise _bad(s, "true or false")
    return s.value == "true"


def _choice(s: Setting, *choices: str) -> str:
    if s.value not in choices:
        raise _bad(s, " or ".join(choices))
    return s.value


def _bytesize(s: Setting) -> int:
    """cuttlefish's bytesize: an integer, or with KB, MB, GB (1024-based, either case)."""
    match = re.fullmatch(r"([0-9]+)([kKmMgG][bB])?", s.value)
    if match is None:
        raise _bad(s, "a size such as 131072 or 128KB")
    unit = (match.group(2) or "").lower()
    return int(match.group(1)) * {"": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3}[unit]


def _frame_max(s: Setting) -> int:
    """``frame_max``: a bytesize that connection.tune can offer. rabbit.schema takes any size
    and RabbitMQ's node then offers its low 32 bits (its codec truncates the long); embroker
    refuses one that does not fit instead, naming the bound."""
    value = _bytesize(s)
    if value > FRAME_MAX_LIMIT:
        raise _bad(s, f"a size from 0 to {FRAME_MAX_LIMIT} bytes (connection.tune carries it "
                      "in 32 bits; 0: no limit)")
    return value


def _heartbeat(s: Setting) -> int:
    """``heartbeat``: seconds connection.tune can offer, a short (as ``frame_max``, RabbitMQ's
    schema takes any integer and its node offers the low 16 bits; embroker refuses one that
    does not fit, naming the bound)."""
    value = _int(s)
    if value > 65535:
        raise _bad(s, "a number of seconds from 0 to 65535 (connection.tune carries it in 16 "
                      "bits; 0: no heartbeats)")
    return value


#: rabbit_resource_monitor_misc:parse_information_unit/1's units.
_INFO_UNITS = {"": 1, "k": 1024, "kib": 1024, "m": 1024**2, "mib": 1024**2, "g": 1024**3,
               "gib": 1024**3, "kb": 1000, "mb": 1000**2, "gb": 1000**3}


def _information(s: Setting) -> int:
    match = re.fullmatch(r"([0-9]+)([A-Za-z]+)?", s.value)
    unit = (match.group(2) or "").lower() if match else ""
    if match is None or unit not in _INFO_UNITS:
        raise _bad(s, "a number of bytes, with a unit such as 2GB, 512MiB or 50MB")
    return int(match.group(1)) * _INFO_UNITS[unit]


def _listener(s: Setting) -> Listener:
    """cuttlefish's ``[integer, ip]``: a port (every interface), or ``address:port``."""
    if re.fullmatch(r"[0-9]+", s.value):
        return Listener("auto", _int(s, high=65535))
    host, sep, port = s.value.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise _bad(s, "a port, or an IP address and a port (127.0.0.1:5672, ::1:5672)") \
            from None
    if not sep or not re.fullmatch(r"[0-9]+", port) or int(port) > 65535:
        raise _bad(s, "a port, or an IP address and a port (127.0.0.1:5672, ::1:5672)")
    return Listener(host, int(port))


# -- the whole ---------------------------------------------------------------------------------

def _main_config_file(base: str) -> tuple[str, str] | None:
    """(file, "cuttlefish" or "erlang"), as rabbit_prelaunch_conf:find_actual_main_config_file."""
    if os.path.isfile(base):
        if base.endswith(".config"):
            return base, "erlang"
        if base.endswith(".conf"):
            return base, "cuttlefish"
        text = Path(base).read_text(encoding="utf-8", errors="replace").strip()
        return base, ("erlang" if text.startswith("[") and text.endswith(".") else "cuttlefish")
    if os.path.isfile(base + ".config"):
        return base + ".config", "erlang"
    if os.path.isfile(base + ".conf"):
        return base + ".conf", "cuttlefish"
    return None


def _additional_config_files(pattern: str) -> list[str]:
    if os.path.isdir(pattern):
        pattern = os.path.join(pattern, "*")
    return sorted(f for f in glob.glob(pattern) if os.path.isfile(f))


_ATOM = re.compile(r"\s*(?:([a-z][A-Za-z0-9_@]*)|'((?:[^'\\]|\\.)*)')\s*")


def read_enabled_plugins(path: str) -> list[str]:
    """The plugins an ``enabled_plugins`` file lists (``[rabbitmq_management].``); none when
    it does not exist (rabbit_plugins:read_enabled/1).

    Raises:
        ConfigError: a file that is not one Erlang list of atoms ending with a dot.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the enabled plugins file: {exc}") from None
    text = re.sub(r"%[^\n]*", "", text).strip()
    if not text:
        return []
    if not (text.startswith("[") and text.endswith(".")
            and text[:-1].rstrip().endswith("]")):
        raise ConfigError(f"{path}: malformed enabled plugins file: expected a list of "
                          "plugin names such as [rabbitmq_management,rabbitmq_stream].")
    inner = text[1:-1].rstrip()[:-1].strip()
    names: list[str] = []
    for item in inner.split(",") if inner else []:
        match = _ATOM.fullmatch(item)
        if match is None:
            raise ConfigError(f"{path}: malformed enabled plugins file: {item.strip()!r} "
                              "is no plugin name")
        names.append(match.group(1) or match.group(2))
    return names


def read_node_settings(environ: Mapping[str, str], *,
                       hostname: str | None = None) -> NodeSettings:
    """The settings of the node RabbitMQ 3.10 would start with ``environ`` (see the module's
    docstring for the rules and their sources).

    Args:
        environ: the environment (``os.environ``).
        hostname: the host name node names default to (default: this machine's, short or
            long as ``RABBITMQ_USE_LONGNAME`` says).

    Raises:
        ConfigError: one line, naming the file and line where there is one: a variable or a
            setting RabbitMQ would refuse, a rabbitmq.conf key RabbitMQ does not know, a file
            that cannot be read.
    """
    sys_prefix = environ.get("SYS_PREFIX", "")
    etc = os.path.join(sys_prefix or "/", "etc", "rabbitmq")
    environ, conf_env_file = environment(environ)
    unsupported: list[str] = []

    longname = _yes(_env(environ, "RABBITMQ_USE_LONGNAME") or "")
    try:
        node = node_name(environ, longnames=longname, hostname=hostname)
    except NodeNameError as exc:
        raise ConfigError(f"Invalid node name! {exc.reason} (RABBITMQ_NODENAME)") from None

    def port_var(var: str, default: int) -> int:
        value = _env(environ, var)
        if value is None:
            return default
        if not value.isdigit() or int(value) > 65535:
            raise ConfigError(f"Invalid value for ${var}: {value!r}")
        return int(value)

    node_port = port_var("RABBITMQ_NODE_PORT", AMQP_PORT)
    # (an AMQP port the OS chooses, 0, implies a control port the OS chooses too: 20000 would
    # be one fixed port every such node fights for)
    dist_port = port_var("RABBITMQ_DIST_PORT", node_port + 20000 if node_port else 0)
    dist_port_given = _env(environ, "RABBITMQ_DIST_PORT") is not None
    ip = _env(environ, "RABBITMQ_NODE_IP_ADDRESS") or "auto"
    amqp_listeners: tuple[Listener, ...] = (Listener(ip, node_port),)

    mnesia_base = _env(environ, "RABBITMQ_MNESIA_BASE") or os.path.join(
        sys_prefix or "/", "var", "lib", "rabbitmq", "mnesia")
    mnesia_dir = _env(environ, "RABBITMQ_MNESIA_DIR") or os.path.join(mnesia_base, node)
    pid_file = _env(environ, "RABBITMQ_PID_FILE") or os.path.join(mnesia_base, f"{node}.pid")
    keep_pid_file = _yes(_env(environ, "RABBITMQ_KEEP_PID_FILE_ON_EXIT") or "")
    log_base = _env(environ, "RABBITMQ_LOG_BASE") or os.path.join(
        sys_prefix or "/", "var", "log", "rabbitmq")
    main_log_file = _env(environ, "RABBITMQ_LOGS") or os.path.join(log_base, f"{node}.log")

    # Plugins.
    listed = _env(environ, "RABBITMQ_ENABLED_PLUGINS", keep_empty=True)
    if listed is None:
        plugins_file = _env(environ, "RABBITMQ_ENABLED_PLUGINS_FILE") or \
            os.path.join(etc, "enabled_plugins")
        enabled = read_enabled_plugins(plugins_file)
    elif listed == "ALL":
        enabled = sorted(RABBITMQ_PLUGINS)
    else:
        enabled = [p.strip() for p in listed.split(",") if p.strip()]
    plugins = tuple(sorted(set(enabled)))
    for plugin in plugins:
        if plugin in PLUGINS or plugin in SERVED_PLUGINS:
            continue
        if plugin in RABBITMQ_PLUGINS:
            unsupported.append(f"plugin {plugin}: not implemented by embroker")
        else:
            unsupported.append(f"plugin {plugin}: no such plugin in RabbitMQ 3.10 (ignored)")
    management_on = bool(_MANAGEMENT_PLUGINS & set(plugins))
    stream_on = bool(_STREAM_PLUGINS & set(plugins))

    # Configuration files.
    config_base = _env(environ, "RABBITMQ_CONFIG_FILE") or os.path.join(etc, "rabbitmq")
    main = _main_config_file(config_base)
    files: list[str] = []
    if main is not None and main[1] == "erlang":
        unsupported.append(f"{main[0]}: the Erlang-terms configuration format is not read by "
                           "embroker (use rabbitmq.conf)")
    elif main is not None:
        files.append(main[0])
    files += _additional_config_files(
        _env(environ, "RABBITMQ_CONFIG_FILES") or os.path.join(etc, "conf.d", "*.conf"))
    advanced = _env(environ, "RABBITMQ_ADVANCED_CONFIG_FILE") or \
        os.path.join(etc, "advanced.config")
    advanced_file = advanced if os.path.isfile(advanced) else None
    if advanced_file is not None:
        unsupported.append(f"{advanced_file}: advanced.config is not honoured by embroker")

    settings: dict[str, Setting] = {}
    for path in files:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read it: {exc}") from None
        for setting in parse_conf(text, path):
            if not _known(setting.key):
                raise ConfigError(f"{setting.where}: {setting.name}: no such setting in "
                                  "RabbitMQ 3.10 (cuttlefish refuses unknown settings)")
            settings.pop(setting.name, None)  # later wins, and keeps its place
            settings[setting.name] = setting

    values = _Values(settings, unsupported)
    return values.build(
        node_name=node, use_longname=longname, dist_port=dist_port,
        dist_port_given=dist_port_given, dist_interface=_dist_interface(environ),
        amqp_listeners=amqp_listeners, management_on=management_on, stream_on=stream_on,
        plugins=plugins, environ=environ, mnesia_base=mnesia_base, mnesia_dir=mnesia_dir,
        pid_file=pid_file, keep_pid_file_on_exit=keep_pid_file,
        log_base=log_base, main_log_file=main_log_file, config_files=tuple(files),
        conf_env_file=conf_env_file, advanced_config_file=advanced_file)


#: ``-kernel inet_dist_use_interface {127,0,0,1}`` in an Erlang command line.
_DIST_INTERFACE = re.compile(r"-kernel\s+inet_dist_use_interface\s+[\"']?\{([0-9a-fA-Fx#,\s]*)\}")


def _dist_interface(environ: Mapping[str, str]) -> str:
    """The address ``-kernel inet_dist_use_interface`` gives the Erlang distribution, in the
    order ``erl`` reads its arguments (``ERL_AFLAGS``, the server script's
    ``RABBITMQ_SERVER_ERL_ARGS``, ``_ADDITIONAL_ERL_ARGS`` and ``_START_ARGS``, ``ERL_FLAGS``,
    ``ERL_ZFLAGS``: the last wins); ``"auto"`` (every interface) when none does."""
    found = "auto"
    texts = [environ.get("ERL_AFLAGS") or "",
             *(_env(environ, f"RABBITMQ_SERVER_{v}") or ""
               for v in ("ERL_ARGS", "ADDITIONAL_ERL_ARGS", "START_ARGS")),
             environ.get("ERL_FLAGS") or "", environ.get("ERL_ZFLAGS") or ""]
    for text in texts:
        for match in _DIST_INTERFACE.finditer(text):
            parts = [p.strip() for p in match.group(1).split(",")]
            try:
                numbers = [int(p.replace("16#", "0x"), 0) for p in parts]
                address = ipaddress.ip_address(
                    bytes(numbers) if len(numbers) == 4 else
                    b"".join(n.to_bytes(2, "big") for n in numbers))
            except (ValueError, OverflowError):
                raise ConfigError(f"inet_dist_use_interface {{{match.group(1)}}}: no IP "
                                  "address") from None
            found = str(address)
    return found


class _Values:
    """The settings read, taken key by key; what is left over is unsupported."""

    def __init__(self, settings: Mapping[str, Setting], unsupported: list[str]) -> None:
        self.settings = dict(settings)
        self.unsupported = unsupported

    def take(self, name: str) -> Setting | None:
        return self.settings.pop(name, None)

    def prefix(self, prefix: str) -> list[Setting]:
        """Settings ``prefix.X`` (one more segment), in the order cuttlefish sorts them."""
        found = sorted((s for n, s in self.settings.items()
                        if len(s.key) == prefix.count(".") + 2 and n.startswith(prefix + ".")),
                       key=lambda s: s.key)
        for s in found:
            del self.settings[s.name]
        return found

    def listeners(self, prefix: str, default: tuple[Listener, ...]) -> tuple[Listener, ...]:
        none = self.take(prefix)
        items = self.prefix(prefix)
        if none is not None:
            _choice(none, "none")
            return ()
        return tuple(_listener(s) for s in items) if items else default

    def tls(self, prefix: str) -> TLSOptions | None:
        files = {k: self.take(f"{prefix}.{k}") for k in
                 ("certfile", "keyfile", "cacertfile", "password", "verify",
                  "fail_if_no_peer_cert")}
        versions = self.prefix(f"{prefix}.versions")
        ciphers = self.prefix(f"{prefix}.ciphers")
        if files["certfile"] is None:
            for s in [*(s for s in files.values() if s is not None), *versions, *ciphers]:
                self.unsupported.append(f"{s.where}: {s.name}: no {prefix}.certfile, so no "
                                        "TLS: not used")
            return None
        for v in versions:
            _choice(v, *TLS_VERSIONS)
        verify = _choice(files["verify"], "verify_peer", "verify_none") \
            if files["verify"] is not None else "verify_none"
        extra: dict[str, Any] = {"versions": tuple(v.value for v in versions)} \
            if versions else {}
        return TLSOptions(
            **extra, certfile=files["certfile"].value,
            keyfile=files["keyfile"].value if files["keyfile"] else None,
            cacertfile=files["cacertfile"].value if files["cacertfile"] else None,
            password=files["password"].value if files["password"] else None,
            verify="verify_peer" if verify == "verify_peer" else "verify_none",
            fail_if_no_peer_cert=_bool(files["fail_if_no_peer_cert"])
            if files["fail_if_no_peer_cert"] else False,
            ciphers=":".join(c.value for c in ciphers) or None)

    def protocols(self, kw: dict[str, Any], plugins: tuple[str, ...]) -> None:
        """The plugin protocols' listeners (STOMP's, MQTT's, and over WebSocket) and their
        plugins' settings, into ``kw``: each one table row (``PROTOCOLS``)."""
        listeners: dict[str, tuple[Listener, ...]] = {}
        tls_listeners: dict[str, tuple[Listener, ...]] = {}
        plugin_ports: dict[str, int | None] = {}
        plugin_tls_ports: dict[str, int | None] = {}
        web_tls: dict[str, TLSOptions] = {}
        for p in PROTOCOLS:
            web_on = bool(_web_plugins(p) & set(plugins))
            on = web_on or p.plugin in plugins
            plain = self.listeners(f"{p.kind}.listeners.tcp", (Listener("auto", p.port),))
            secure = self.listeners(f"{p.kind}.listeners.ssl", ())
            plugin_ports[p.plugin] = plain[0].port if plain else None
            plugin_tls_ports[p.plugin] = secure[0].port if secure else None
            # (rabbit_web_stomp_listener, rabbit_web_mqtt_app: tcp_config's port, else the
            # older root port where there is one, else the default; a TLS listener only with
            # the ssl port)
            older = self.take(f"{p.web_kind}.port")
            port = self.take(f"{p.web_kind}.tcp.port") or older
            tls_port = self.take(f"{p.web_kind}.ssl.port")
            if (files := self.tls(f"{p.web_kind}.ssl")) is not None:
                web_tls[p.web_kind] = files
            plugin_ports[p.web_plugin] = _int(port, high=65535) if port else p.web_port
            plugin_tls_ports[p.web_plugin] = _int(tls_port, high=65535) \
                if tls_port is not None else None
            if on:
                listeners[p.kind], tls_listeners[p.kind] = plain, secure
            if web_on:
                web_port, web_tls_port = plugin_ports[p.web_plugin], plugin_tls_ports[p.web_plugin]
                listeners[p.web_kind] = (Listener("auto", web_port),) \
                    if web_port is not None else ()
                tls_listeners[p.web_kind] = (Listener("auto", web_tls_port),) \
                    if web_tls_port is not None else ()
        kw.update(protocol_listeners=listeners, protocol_tls_listeners=tls_listeners,
                  protocol_plugin_ports=plugin_ports, protocol_plugin_tls_ports=plugin_tls_ports,
                  web_tls=web_tls,
                  port_settings={"stomp": self.stomp_settings(), "mqtt": self.mqtt_settings()})

    def _default_user(self, prefix: str) -> dict[str, Any]:
        """``PREFIX.default_user`` and ``PREFIX.default_pass`` (each guest when the other is
        given alone: the plugin's application default)."""
        user, password = self.take(f"{prefix}.default_user"), self.take(f"{prefix}.default_pass")
        if user is None and password is None:
            return {}
        return {"default_user": (user.value if user else "guest",
                                 password.value if password else "guest")}

    def _settings(self, prefix: str, *, texts: tuple[str, ...] = (),
                  flags: tuple[str, ...] = ()) -> dict[str, Any]:
        """A plugin's settings: the default user, ``PREFIX.NAME`` texts and flags, and
        ``PREFIX.login_timeout`` (milliseconds there, seconds here)."""
        given = self._default_user(prefix)
        for name in texts:
            if (s := self.take(f"{prefix}.{name}")) is not None:
                given[name] = s.value
        for name in flags:
            if (s := self.take(f"{prefix}.{name}")) is not None:
                given[name] = _bool(s)
        if (s := self.take(f"{prefix}.login_timeout")) is not None:
            given["login_timeout"] = _int(s) / 1000
        return given

    def stomp_settings(self) -> StompSettings:
        return StompSettings(**self._settings(
            "stomp", texts=("default_vhost", "default_topic_exchange"),
            flags=("implicit_connect", "ssl_cert_login", "default_nack_requeue",
                   "hide_server_info")))

    def mqtt_settings(self) -> MqttSettings:
        given = self._settings("mqtt", texts=("vhost", "exchange"),
                               flags=("allow_anonymous", "ssl_cert_login"))
        if (s := self.take("mqtt.subscription_ttl")) is not None:
            # (undefined and infinity: no x-expires, the queue stays)
            given["subscription_ttl"] = None if s.value in ("undefined", "infinity") \
                else _int(s)
        if (s := self.take("mqtt.prefetch")) is not None:
            given["prefetch"] = _int(s)
        return MqttSettings(**given)

    def build(self, *, environ: Mapping[str, str], management_on: bool, stream_on: bool,
              amqp_listeners: tuple[Listener, ...], **given: Any) -> NodeSettings:
        kw: dict[str, Any] = dict(given)
        kw["amqp_listeners"] = amqp_listeners = self.listeners("listeners.tcp", amqp_listeners)
        kw["tls_listeners"] = self.listeners("listeners.ssl", ())
        kw["tls"] = self.tls("ssl_options")
        for extra in amqp_listeners[1:]:
            self.unsupported.append(f"AMQP listener {extra.host}:{extra.port}: embroker "
                                    "serves one AMQP port (the first listener's)")
        stream = self.listeners("stream.listeners.tcp", (Listener("auto", STREAM_PORT),))
        stream_tls = self.listeners("stream.listeners.ssl", ())
        kw["stream_listeners"] = stream if stream_on else ()
        kw["stream_plugin_port"] = stream[0].port if stream else None
        kw["stream_plugin_tls_port"] = stream_tls[0].port if stream_tls else None
        kw["stream_tls_listeners"] = stream_tls if stream_on else ()
        if (s := self.take("stream.advertised_host")) is not None:
            kw["stream_advertised_host"] = s.value
        if (s := self.take("stream.advertised_port")) is not None:
            kw["stream_advertised_port"] = _int(s, low=1, high=65535)

        self.protocols(kw, given["plugins"])

        port = self.take("management.tcp.port") or self.take("management.listener.port")
        ip = self.take("management.tcp.ip") or self.take("management.listener.ip")
        tls_port = self.take("management.ssl.port")
        kw["management_tls"] = self.tls("management.ssl")
        # (as at start: a management.ssl.port alone means no plain listener)
        kw["management_plugin_port"] = _int(port, high=65535) if port else \
            None if tls_port is not None else MANAGEMENT_PORT
        kw["management_plugin_tls_port"] = _int(tls_port, high=65535) \
            if tls_port is not None else None
        if management_on:
            kw["management_port"] = _int(port, high=65535) if port else MANAGEMENT_PORT
            kw["management_ip"] = ip.value if ip else None
            if tls_port is not None:
                kw["management_tls_port"] = _int(tls_port, high=65535)
                kw["management_port"] = _int(port, high=65535) if port else None

        simple: dict[str, tuple[str, Any]] = {
            "default_user": ("default_user", str), "default_pass": ("default_pass", str),
            "default_vhost": ("default_vhost", str), "cluster_name": ("cluster_name", str),
            "heartbeat": ("heartbeat", _heartbeat),
            "frame_max": ("frame_max", _frame_max),
            "channel_max": ("channel_max", lambda s: _int(s, high=65535)),
            "max_message_size": ("max_message_size",
                                 lambda s: _int(s, low=1, high=512 * 1024 * 1024)),
            "ssl_cert_login_from": ("ssl_cert_login_from", lambda s: _choice(
                s, "distinguished_name", "common_name")),
        }
        for key, (attr, convert) in simple.items():
            s = self.take(key)
            if s is not None:
                kw[attr] = convert(s) if convert is not str else s.value
        if (s := self.take("handshake_timeout")) is not None:
            if s.value == "infinity":
                self.unsupported.append(f"{s.where}: handshake_timeout = infinity: not "
                                        "honoured by embroker (10 s)")
            else:
                kw["handshake_timeout"] = _int(s) / 1000
        tags = self.prefix("default_user_tags")
        if tags:
            kw["default_user_tags"] = tuple(t.key[-1] for t in tags if _bool(t))
        perms = {p.key[-1]: p.value for p in self.prefix("default_permissions")}
        if perms:
            kw["default_permissions"] = (perms.get("configure", ".*"), perms.get("write", ".*"),
                                         perms.get("read", ".*"))
        none = self.take("loopback_users")
        users = self.prefix("loopback_users")
        if none is not None:
            _choice(none, "none")
            kw["loopback_users"] = ()
        elif users:
            kw["loopback_users"] = tuple(u.key[-1] for u in users if _bool(u))
        mechanisms = self.prefix("auth_mechanisms")
        if mechanisms:
            for m in mechanisms:
                _choice(m, "PLAIN", "AMQPLAIN", "EXTERNAL")
            kw["auth_mechanisms"] = tuple(m.value for m in mechanisms)
        definitions = [s for s in (self.take("load_definitions"),
                                   self.take("management.load_definitions"),
                                   self.take("definitions.local.path")) if s is not None]
        for s in definitions:
            if not os.path.exists(s.value):
                raise ConfigError(f"{s.where}: {s.name} = {s.value!r}: no such file or "
                                  "directory")
        kw["definitions"] = tuple(dict.fromkeys(s.value for s in definitions))
        relative, absolute = (self.take("vm_memory_high_watermark.relative"),
                              self.take("vm_memory_high_watermark.absolute"))
        if absolute is not None and relative is None:
            kw["vm_memory_high_watermark"] = ("absolute", _information(absolute))
        elif relative is not None:
            kw["vm_memory_high_watermark"] = ("relative", _float(relative))
        relative, absolute = (self.take("disk_free_limit.relative"),
                              self.take("disk_free_limit.absolute"))
        if absolute is not None and relative is None:
            kw["disk_free_limit"] = ("absolute", _information(absolute))
        elif relative is not None:
            kw["disk_free_limit"] = ("relative", _float(relative))
        if (s := self.take("log.file")) is not None:
            kw["log_file"] = None if s.value == "false" else s.value
        else:
            kw["log_file"] = given["main_log_file"]
        if (s := self.take("log.file.level")) is not None:
            kw["log_file_level"] = s.value
        if (s := self.take("log.console")) is not None:
            kw["log_console"] = _bool(s)
        if (s := self.take("log.console.level")) is not None:
            kw["log_console_level"] = s.value

        # The environment's default user and vhost win over the file's.
        for var, attr in (("RABBITMQ_DEFAULT_USER", "default_user"),
                          ("RABBITMQ_DEFAULT_PASS", "default_pass"),
                          ("RABBITMQ_DEFAULT_VHOST", "default_vhost")):
            value = _env(environ, var)
            if value is not None:
                kw[attr] = value
        for s in self.settings.values():
            self.unsupported.append(f"{s.where}: {s.name}: not honoured by embroker")
        kw["unsupported"] = tuple(self.unsupported)
        return NodeSettings(**kw)
