"""embroker.control._config: RabbitMQ 3.10's environment and rabbitmq.conf, read as embroker's
settings. Sources are named in each test (RabbitMQ 3.10.8: rabbit_env.erl,
rabbit_prelaunch_conf.erl, rabbit.schema; cuttlefish 3.0.1's conf_parse.peg)."""

from __future__ import annotations

from pathlib import Path

import pika
import pytest
from hypothesis import given
from hypothesis import strategies as st

from embroker import Broker
from embroker._listener_plugins import PROTOCOLS, ListenerPlugin
from embroker.control._config import (
    ConfigError,
    Listener,
    NodeSettings,
    parse_conf,
    read_node_settings,
)
from embroker.mqtt import MqttSettings
from embroker.server import Server
from embroker.stomp._settings import StompSettings
from embroker.tls import TLSOptions


@pytest.fixture
def etc(tmp_path: Path) -> Path:
    where = tmp_path / "etc" / "rabbitmq"
    where.mkdir(parents=True)
    return where


def read(etc: Path, conf: str | None = None, *, plugins: str | None = None,
         **env: str) -> NodeSettings:
    """The settings with SYS_PREFIX at the test's folder, ``conf`` as its rabbitmq.conf."""
    if conf is not None:
        (etc / "rabbitmq.conf").write_text(conf)
    if plugins is not None:
        (etc / "enabled_plugins").write_text(plugins)
    return read_node_settings({"SYS_PREFIX": str(etc.parents[1]), **env}, hostname="box")


# -- the environment ---------------------------------------------------------------------------

def test_defaults_are_rabbitmqs(etc: Path) -> None:
    """No file, no variable: rabbit@host, 5672 on every interface, guest/guest on /, no plugin."""
    s = read(etc)
    assert s.node_name == "rabbit@box"
    assert s.amqp_listeners == (Listener("auto", 5672),)
    assert (s.default_user, s.default_pass, s.default_vhost) == ("guest", "guest", "/")
    assert s.plugins == ()
    assert s.management_port is None
    assert s.stream_listeners == ()
    assert (s.heartbeat, s.frame_max, s.channel_max) == (60, 131072, 2047)
    assert s.dist_port == 25672
    assert s.unsupported == ()
    assert s.config_files == ()


def test_nodename_without_at_gets_the_host(etc: Path) -> None:
    """rabbit_env:nodename/1: a name without @ gets @ and the host."""
    assert read(etc, RABBITMQ_NODENAME="hare").node_name == "hare@box"
    assert read(etc, RABBITMQ_NODENAME="hare@elsewhere").node_name == "hare@elsewhere"


def test_unprefixed_variable_is_read_when_the_prefixed_one_is_unset(etc: Path) -> None:
    """rabbit_env:get_prefixed_env_var/1: RABBITMQ_X, else X; an empty value is unset."""
    assert read(etc, NODENAME="hare").node_name == "hare@box"
    assert read(etc, NODENAME="hare", RABBITMQ_NODENAME="").node_name == "hare@box"
    assert read(etc, NODENAME="hare", RABBITMQ_NODENAME="bunny").node_name == "bunny@box"


def test_node_port_and_address_make_the_amqp_listener(etc: Path) -> None:
    """rabbit_env: RABBITMQ_NODE_IP_ADDRESS (default auto) and RABBITMQ_NODE_PORT; the dist
    port defaults to the node port + 20000."""
    s = read(etc, RABBITMQ_NODE_PORT="5673", RABBITMQ_NODE_IP_ADDRESS="127.0.0.1")
    assert s.amqp_listeners == (Listener("127.0.0.1", 5673),)
    assert s.dist_port == 25673
    assert s.server_kwargs()["host"] == "127.0.0.1"
    assert s.server_kwargs()["port"] == 5673


def test_an_amqp_port_the_os_chooses_implies_a_control_port_the_os_chooses(etc: Path) -> None:
    """RABBITMQ_NODE_PORT=0 implies no fixed control port (20000 would be one every such node
    fights for, moving and saying so by chance); RABBITMQ_DIST_PORT still names one."""
    assert (read(etc, RABBITMQ_NODE_PORT="0").dist_port, read(etc).dist_port) == (0, 25672)
    assert read(etc, RABBITMQ_NODE_PORT="0", RABBITMQ_DIST_PORT="4000").dist_port == 4000


def test_bad_node_port_is_one_line(etc: Path) -> None:
    """rabbit_env:amqp_tcp_port/1: "Invalid value for $RABBITMQ_NODE_PORT"."""
    with pytest.raises(ConfigError, match=r"^Invalid value for \$RABBITMQ_NODE_PORT: 'x'$"):
        read(etc, RABBITMQ_NODE_PORT="x")


def test_dist_port_is_read_and_ignored(etc: Path) -> None:
    assert read(etc, RABBITMQ_DIST_PORT="4000").dist_port == 4000


def test_listeners_in_the_conf_replace_the_environments(etc: Path) -> None:
    """rabbit_env:context_to_app_env_vars1/2 sets tcp_listeners from the environment; the
    cuttlefish config is applied after it (rabbit_prelaunch_conf:setup/1)."""
    s = read(etc, "listeners.tcp.default = 5674\n", RABBITMQ_NODE_PORT="5673")
    assert s.amqp_listeners == (Listener("auto", 5674),)


def test_environment_default_user_wins_over_the_conf(etc: Path) -> None:
    """rabbit:get_default_data_param/1 takes the value whose origin is the environment."""
    s = read(etc, "default_user = a\ndefault_pass = b\ndefault_vhost = v\n",
             RABBITMQ_DEFAULT_USER="env-user", RABBITMQ_DEFAULT_PASS="env-pass")
    assert (s.default_user, s.default_pass, s.default_vhost) == ("env-user", "env-pass", "v")


def test_data_and_log_places_are_recorded(etc: Path) -> None:
    """rabbit_env: MNESIA_DIR defaults to MNESIA_BASE/NODENAME, the log to LOG_BASE/NODENAME.log."""
    s = read(etc, RABBITMQ_MNESIA_BASE="/data", RABBITMQ_LOG_BASE="/logs")
    assert s.mnesia_dir == "/data/rabbit@box"
    assert s.main_log_file == "/logs/rabbit@box.log"
    assert s.log_file == "/logs/rabbit@box.log"
    assert read(etc, RABBITMQ_MNESIA_DIR="/m").mnesia_dir == "/m"


def test_pid_file_is_rabbitmqs(etc: Path) -> None:
    """rabbit_env:pid_file/1: RABBITMQ_PID_FILE (or PID_FILE), else MNESIA_BASE/NODENAME.pid;
    keep_pid_file_on_exit/1: RABBITMQ_KEEP_PID_FILE_ON_EXIT (yes, true or 1)."""
    s = read(etc, RABBITMQ_MNESIA_BASE="/data")
    assert (s.pid_file, s.keep_pid_file_on_exit) == ("/data/rabbit@box.pid", False)
    assert read(etc).pid_file == str(etc.parents[1] / "var/lib/rabbitmq/mnesia/rabbit@box.pid")
    assert read(etc, RABBITMQ_PID_FILE="/run/r.pid").pid_file == "/run/r.pid"
    assert read(etc, PID_FILE="/run/r.pid").pid_file == "/run/r.pid"
    assert read(etc, RABBITMQ_KEEP_PID_FILE_ON_EXIT="yes").keep_pid_file_on_exit


def test_use_longname(etc: Path) -> None:
    assert read(etc, RABBITMQ_USE_LONGNAME="true").use_longname
    assert not read(etc, RABBITMQ_USE_LONGNAME="no").use_longname


# -- rabbitmq-env.conf -------------------------------------------------------------------------

def test_env_file_fills_what_the_environment_leaves_unset(etc: Path) -> None:
    """rabbitmq-env.conf(5): "the startup scripts get their values from the environment, from
    rabbitmq-env.conf and finally from the built-in default values"; names without the prefix."""
    (etc / "rabbitmq-env.conf").write_text(
        "# comment\nNODENAME=hare\nexport NODE_PORT='5680'\nLOG_BASE=\"/x/$NODENAME\"\n")
    s = read(etc)
    assert s.node_name == "hare@box"
    assert s.amqp_listeners[0].port == 5680
    assert s.log_base == "/x/hare"
    assert s.conf_env_file == str(etc / "rabbitmq-env.conf")
    assert read(etc, RABBITMQ_NODENAME="bunny").node_name == "bunny@box"


def test_env_file_other_shell_is_an_error_with_its_line(etc: Path) -> None:
    (etc / "rabbitmq-env.conf").write_text("NODENAME=hare\nif true; then :; fi\n")
    with pytest.raises(ConfigError, match=r"rabbitmq-env.conf:2: embroker reads only"):
        read(etc)


# -- plugins -----------------------------------------------------------------------------------

def test_missing_enabled_plugins_file_is_no_plugin(etc: Path) -> None:
    """rabbit_plugins:read_enabled/1: enoent -> []."""
    assert read(etc, RABBITMQ_ENABLED_PLUGINS_FILE=str(etc / "nope")).plugins == ()


def test_enabled_plugins_file_turns_on_management_and_stream(etc: Path) -> None:
    s = read(etc, plugins="%% comment\n[rabbitmq_management,rabbitmq_stream,\n"
             " rabbitmq_consistent_hash_exchange].\n")
    assert s.plugins == ("rabbitmq_consistent_hash_exchange", "rabbitmq_management",
                         "rabbitmq_stream")
    assert s.management_port == 15672
    assert s.stream_listeners == (Listener("auto", 5552),)
    assert s.broker_kwargs()["plugins"] == ("rabbitmq_consistent_hash_exchange",)


def test_malformed_enabled_plugins_file_is_an_error(etc: Path) -> None:
    with pytest.raises(ConfigError, match="malformed enabled plugins file"):
        read(etc, plugins="rabbitmq_management\n")


def test_enabled_plugins_variable_replaces_the_file(etc: Path) -> None:
    """rabbit_prelaunch_enabled_plugins_file: RABBITMQ_ENABLED_PLUGINS rewrites the file;
    "" is none, ALL is every plugin."""
    assert read(etc, plugins="[rabbitmq_management].",
                RABBITMQ_ENABLED_PLUGINS="rabbitmq_stream").plugins == ("rabbitmq_stream",)
    assert read(etc, plugins="[rabbitmq_management].", RABBITMQ_ENABLED_PLUGINS="").plugins == ()
    every = read(etc, RABBITMQ_ENABLED_PLUGINS="ALL")
    assert "rabbitmq_management" in every.plugins
    assert every.management_port == 15672
    assert "plugin rabbitmq_federation: not implemented by embroker" in every.unsupported
    assert "plugin rabbitmq_mqtt: not implemented by embroker" not in every.unsupported


def test_management_and_stream_settings_need_their_plugin(etc: Path) -> None:
    conf = "management.tcp.port = 15000\nstream.listeners.tcp.1 = 5000\n"
    off = read(etc, conf)
    assert off.management_port is None
    assert off.stream_listeners == ()
    on = read(etc, conf, RABBITMQ_ENABLED_PLUGINS="rabbitmq_management,rabbitmq_stream")
    assert on.management_port == 15000
    assert on.stream_listeners == (Listener("auto", 5000),)


def test_plugin_ports_are_the_configured_ones_with_the_plugin_off_at_start(etc: Path) -> None:
    """Where rabbitmq-plugins enable opens a listener plugin on the running node: the
    configured port, read whether or not the plugin is on at start (issue 44: RabbitMQ's
    defaults were opened instead), else RabbitMQ's 15672 and 5552; the first stream listener's;
    ``stream.listeners.tcp = none``: no plain stream port to open."""
    protocols = {"rabbitmq_stomp": 61613, "rabbitmq_web_stomp": 15674, "rabbitmq_mqtt": 1883,
                 "rabbitmq_web_mqtt": 15675}
    assert read(etc).plugin_ports == {"rabbitmq_management": 15672, "rabbitmq_stream": 5552,
                                      **protocols}
    off = read(etc, "management.tcp.port = 15000\nstream.listeners.tcp.1 = 5000\n"
                    "stream.listeners.tcp.2 = 5001\n")
    assert off.plugin_ports == {"rabbitmq_management": 15000, "rabbitmq_stream": 5000, **protocols}
    on = read(etc, "management.tcp.port = 15000\n", RABBITMQ_ENABLED_PLUGINS="rabbitmq_management")
    assert on.plugin_ports["rabbitmq_management"] == on.management_port == 15000
    assert read(etc, "management.listener.port = 15999\n").plugin_ports[
        "rabbitmq_management"] == 15999
    assert read(etc, "stream.listeners.tcp = none\n").plugin_ports == {
        "rabbitmq_management": 15672, "rabbitmq_stream": None, **protocols}


def test_plugin_tls_ports_are_the_configured_ones_and_an_ssl_port_alone_means_no_plain_one(
        etc: Path) -> None:
    """``management.ssl.port`` alone: the plugin enabled on the running node listens over TLS
    there and nowhere else (as at start; it opened a plain 15672 instead); the first
    ``stream.listeners.ssl.*`` likewise, beside the plain stream port; none without TLS
    settings."""
    tls = "ssl_options.certfile = /c.pem\nssl_options.keyfile = /k.pem\n"
    s = read(etc, tls + "management.ssl.port = 15671\nstream.listeners.ssl.default = 5551\n")
    assert s.plugin_ports == {"rabbitmq_management": None, "rabbitmq_stream": 5552,
                              "rabbitmq_stomp": 61613, "rabbitmq_web_stomp": 15674,
                              "rabbitmq_mqtt": 1883, "rabbitmq_web_mqtt": 15675}
    assert s.plugin_tls_ports == {"rabbitmq_management": 15671, "rabbitmq_stream": 5551,
                                  "rabbitmq_stomp": None, "rabbitmq_web_stomp": None,
                                  "rabbitmq_mqtt": None, "rabbitmq_web_mqtt": None}
    both = read(etc, tls + "management.ssl.port = 15671\nmanagement.tcp.port = 15000\n")
    assert both.plugin_ports["rabbitmq_management"] == 15000
    assert both.plugin_tls_ports["rabbitmq_management"] == 15671
    assert read(etc, "management.ssl.port = 15671\n").plugin_tls_ports == {
        "rabbitmq_management": None, "rabbitmq_stream": None, "rabbitmq_stomp": None,
        "rabbitmq_web_stomp": None, "rabbitmq_mqtt": None, "rabbitmq_web_mqtt": None}


def test_amqp10_is_served_with_its_plugin_only(etc: Path) -> None:
    """As RabbitMQ 3.10: AMQP 1.0 is the rabbitmq_amqp1_0 plugin's, which the enabled-plugins
    file decides (issue 44: always served, and listed as enabled)."""
    assert read(etc, plugins="[].\n").server_kwargs()["amqp10"] is False
    assert read(etc, plugins="[rabbitmq_amqp1_0].\n").server_kwargs()["amqp10"] is True
    assert read(etc, RABBITMQ_ENABLED_PLUGINS="ALL").server_kwargs()["amqp10"] is True


def test_old_style_management_listener_port(etc: Path) -> None:
    s = read(etc, "management.listener.port = 15999\n",
             RABBITMQ_ENABLED_PLUGINS="rabbitmq_management")
    assert s.management_port == 15999


# -- rabbitmq.conf: files ----------------------------------------------------------------------

def test_config_file_with_or_without_extension(etc: Path, tmp_path: Path) -> None:
    """rabbit_prelaunch_conf:find_actual_main_config_file/1: the name as given, else with
    .config, then .conf appended."""
    (tmp_path / "my.conf").write_text("heartbeat = 5\n")
    assert read(etc, RABBITMQ_CONFIG_FILE=str(tmp_path / "my")).heartbeat == 5
    assert read(etc, RABBITMQ_CONFIG_FILE=str(tmp_path / "my.conf")).heartbeat == 5
    assert read(etc, RABBITMQ_CONFIG_FILE=str(tmp_path / "none")).config_files == ()


def test_conf_d_files_are_read_after_the_main_file_in_order(etc: Path) -> None:
    """RABBITMQ_CONFIG_FILES, default conf.d/*.conf, sorted; later settings win."""
    (etc / "conf.d").mkdir()
    (etc / "conf.d" / "20-b.conf").write_text("heartbeat = 20\n")
    (etc / "conf.d" / "10-a.conf").write_text("heartbeat = 10\nchannel_max = 9\n")
    s = read(etc, "heartbeat = 1\n")
    assert s.heartbeat == 20
    assert s.channel_max == 9
    assert [Path(f).name for f in s.config_files] == ["rabbitmq.conf", "10-a.conf", "20-b.conf"]


def test_erlang_config_and_advanced_config_are_named_not_read(etc: Path) -> None:
    (etc / "rabbitmq.config").write_text("[{rabbit, [{heartbeat, 5}]}].\n")
    (etc / "advanced.config").write_text("[].\n")
    s = read(etc)
    assert s.heartbeat == 60
    assert s.advanced_config_file == str(etc / "advanced.config")
    assert any("Erlang-terms" in line for line in s.unsupported)
    assert any("advanced.config is not honoured" in line for line in s.unsupported)


# -- rabbitmq.conf: the format -----------------------------------------------------------------

def test_parse_comments_quotes_and_escaped_dots() -> None:
    """cuttlefish conf_parse.peg: a value ends at #; '...' keeps a #; \\. is a dot in a word."""
    got = parse_conf("# c\n  a.b = 1 # c\nc = 'x#y'  \nd\\.e.f=2\r\n\t\n")
    assert [(s.key, s.value, s.line) for s in got] == [
        (("a", "b"), "1", 2), (("c",), "x#y", 3), (("d.e", "f"), "2", 4)]


@pytest.mark.parametrize(("text", "message"), [
    ("heartbeat 60\n", "rabbitmq.conf:1: syntax error"),
    ("\n\nheartbeat =\n", "rabbitmq.conf:3: syntax error: no value"),
    ("include conf.d/*.conf\n", "rabbitmq.conf:1: include is not supported"),
    ("a = 'open\n", "rabbitmq.conf:1: syntax error: a quoted value"),
])
def test_parse_errors_name_the_file_and_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match="^" + message):
        parse_conf(text)


@given(st.text())
def test_parse_raises_only_config_error(text: str) -> None:
    """Any text parses or raises ConfigError (h11's fuzzing invariant); errors are one line."""
    try:
        parse_conf(text)
    except ConfigError as exc:
        message = str(exc)
    else:
        return
    assert "\n" not in message


def test_unknown_key_is_an_error(etc: Path) -> None:
    """cuttlefish refuses a setting no schema maps."""
    with pytest.raises(ConfigError, match=r"rabbitmq.conf:2: heartbeats: no such setting"):
        read(etc, "heartbeat = 1\nheartbeats = 2\n")


def test_known_keys_embroker_does_not_honour_are_listed_with_their_line(etc: Path) -> None:
    s = read(etc, "heartbeat = 1\ncluster_partition_handling = autoheal\n"
             "cluster_formation.classic_config.nodes.1 = rabbit@a\n")
    assert s.unsupported == (
        f"{etc}/rabbitmq.conf:2: cluster_partition_handling: not honoured by embroker",
        f"{etc}/rabbitmq.conf:3: cluster_formation.classic_config.nodes.1: not honoured by "
        "embroker")


def test_bad_value_is_an_error_with_its_line(etc: Path) -> None:
    with pytest.raises(ConfigError, match=r"rabbitmq.conf:1: heartbeat = 'soon': expected an "
                                          "integer"):
        read(etc, "heartbeat = soon\n")


# -- rabbitmq.conf: the settings ---------------------------------------------------------------

def test_listeners_port_or_address_and_none(etc: Path) -> None:
    """rabbit.schema: listeners.tcp.$name is [integer, ip]; listeners.tcp = none is no listener."""
    s = read(etc, "listeners.tcp.default = 127.0.0.1:5673\nlisteners.tcp.v6 = ::1:5674\n")
    assert s.amqp_listeners == (Listener("127.0.0.1", 5673), Listener("::1", 5674))
    assert any("AMQP listener ::1:5674" in line for line in s.unsupported)
    assert read(etc, "listeners.tcp = none\n").amqp_listeners == ()
    with pytest.raises(ConfigError, match="expected a port"):
        read(etc, "listeners.tcp.default = localhost:5672\n")


def test_tls_options_and_listener(etc: Path) -> None:
    s = read(etc, "listeners.ssl.default = 5671\nssl_options.certfile = /c.pem\n"
             "ssl_options.keyfile = /k.pem\nssl_options.cacertfile = /ca.pem\n"
             "ssl_options.verify = verify_peer\nssl_options.fail_if_no_peer_cert = true\n"
             "ssl_options.versions.1 = tlsv1.3\nssl_options.versions.2 = tlsv1.2\n"
             "ssl_options.password = secret\n")
    assert s.tls == TLSOptions(certfile="/c.pem", keyfile="/k.pem", cacertfile="/ca.pem",
                               password="secret", verify="verify_peer",
                               fail_if_no_peer_cert=True, versions=("tlsv1.3", "tlsv1.2"))
    assert s.tls_listeners == (Listener("auto", 5671),)
    assert s.server_kwargs()["tls_port"] == 5671


def test_users_permissions_and_loopback(etc: Path) -> None:
    """rabbit.schema: default_user_tags.$tag and loopback_users.$user are true/false;
    loopback_users = none empties the list."""
    s = read(etc, "default_user_tags.administrator = false\ndefault_user_tags.monitoring = true\n"
             "default_permissions.configure = ^$\nloopback_users.guest = false\n"
             "loopback_users.local = true\n")
    assert s.default_user_tags == ("monitoring",)
    assert s.default_permissions == ("^$", ".*", ".*")
    assert s.loopback_users == ("local",)
    assert read(etc, "loopback_users = none\n").loopback_users == ()


def test_sizes_units_and_tuning(etc: Path) -> None:
    """cuttlefish bytesize (KB = 1024) for frame_max; parse_information_unit for watermarks
    (MB = 10^6, MiB = 2^20); handshake_timeout in milliseconds."""
    s = read(etc, "frame_max = 64KB\nchannel_max = 0\nhandshake_timeout = 2500\n"
             "max_message_size = 1024\nvm_memory_high_watermark.absolute = 2MiB\n"
             "disk_free_limit.absolute = 1GB\nauth_mechanisms.1 = AMQPLAIN\n"
             "auth_mechanisms.2 = PLAIN\nssl_cert_login_from = common_name\n"
             "cluster_name = dev\n")
    assert (s.frame_max, s.channel_max, s.handshake_timeout) == (65536, 0, 2.5)
    assert s.vm_memory_high_watermark == ("absolute", 2 * 1024**2)
    assert s.disk_free_limit == ("absolute", 10**9)
    assert s.auth_mechanisms == ("AMQPLAIN", "PLAIN")
    kwargs = s.broker_kwargs()
    assert kwargs["memory_high_watermark"] == 2 * 1024**2
    assert kwargs["server_properties"] == {"cluster_name": "dev"}
    assert kwargs["ssl_cert_login_from"] == "common_name"
    assert kwargs["max_message_size"] == 1024
    assert read(etc, "vm_memory_high_watermark.relative = 0.6\n").vm_memory_high_watermark \
        == ("relative", 0.6)


@pytest.mark.parametrize("value", ["99999999999999999999999", "4GB", "4294967296"])
def test_a_frame_max_connection_tune_cannot_carry_is_one_line(etc: Path, value: str) -> None:
    """rabbit.schema takes frame_max as any bytesize, and RabbitMQ 3.10.8's node then offers
    its low 32 bits in connection.tune (a long: rabbit_framing_amqp_0_9_1 truncates it; pika
    still connected to a node of its own with 99999999999999999999999, which offers
    4135583743).
    embroker refuses it at start with one line instead (issue 44: accepted, then every
    connection failed with 541)."""
    with pytest.raises(ConfigError) as refused:
        read(etc, f"frame_max = {value}\n")
    assert str(refused.value) == (
        f"{etc / 'rabbitmq.conf'}:1: frame_max = '{value}': expected a size from 0 to "
        "4294967295 bytes (connection.tune carries it in 32 bits; 0: no limit)")
    assert read(etc, "frame_max = 4294967295\n").frame_max == 4294967295


def test_rabbitmq_server_refuses_such_a_frame_max_with_one_line(
        etc: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from embroker.control._server_cli import main

    (etc / "rabbitmq.conf").write_text("frame_max = 99999999999999999999999\n")
    monkeypatch.setenv("SYS_PREFIX", str(etc.parents[1]))
    assert main([]) == 78
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "frame_max = '99999999999999999999999': expected a size from 0 to 4294967295" in err


@pytest.mark.parametrize("value", ["65536", "99999999999999999999999"])
def test_a_heartbeat_connection_tune_cannot_carry_is_one_line(etc: Path, value: str) -> None:
    """The same trap as frame_max's: rabbit.schema takes any integer, connection.tune carries
    a short (16 bits); embroker refuses it at start with one line."""
    with pytest.raises(ConfigError) as refused:
        read(etc, f"heartbeat = {value}\n")
    assert str(refused.value) == (
        f"{etc / 'rabbitmq.conf'}:1: heartbeat = '{value}': expected a number of seconds from "
        "0 to 65535 (connection.tune carries it in 16 bits; 0: no heartbeats)")
    assert read(etc, "heartbeat = 65535\n").heartbeat == 65535


@pytest.mark.parametrize("heartbeat", [-1, 65536])
def test_the_servers_heartbeat_is_bounded_by_connection_tune(heartbeat: int) -> None:
    with pytest.raises(ValueError, match=r"heartbeat: 0 \(no heartbeats\) or up to 65535"):
        Server(Broker(), heartbeat=heartbeat)


@pytest.mark.parametrize("frame_max", [-1, 2**32])
def test_the_servers_frame_max_is_bounded_by_connection_tune(frame_max: int) -> None:
    with pytest.raises(ValueError, match=r"frame_max: 0 \(no limit\) or up to 4294967295"):
        Server(Broker(), frame_max=frame_max)


def test_definitions_mean_no_default_user(etc: Path, tmp_path: Path) -> None:
    """rabbit:maybe_insert_default_data/0: no default vhost and user when definitions load."""
    defs = tmp_path / "defs.json"
    defs.write_text("{}")
    s = read(etc, f"load_definitions = {defs}\n")
    assert s.definitions == (str(defs),)
    assert s.broker_kwargs()["users"] == {}
    assert s.broker_kwargs()["vhosts"] == ()
    with pytest.raises(ConfigError, match="no such file or directory"):
        read(etc, "management.load_definitions = /no/such.json\n")


def test_log_settings_are_kept_for_the_node(etc: Path) -> None:
    s = read(etc, "log.file = false\nlog.console = true\nlog.console.level = debug\n")
    assert s.log_file is None
    assert s.log_console
    assert s.log_console_level == "debug"


# -- the kwargs work ---------------------------------------------------------------------------

def test_kwargs_build_a_broker_and_server_pika_logs_in(etc: Path) -> None:
    """Broker(**broker_kwargs()) and Server(broker, **server_kwargs()) with ports 0; pika logs
    in as the default user and reports the frame_max and channel_max offered."""
    s = read(etc, "listeners.tcp.default = 127.0.0.1:0\nmanagement.tcp.port = 0\n"
             "stream.listeners.tcp.1 = 0\nframe_max = 65536\nchannel_max = 7\n",
             RABBITMQ_ENABLED_PLUGINS="rabbitmq_management,rabbitmq_stream",
             RABBITMQ_DEFAULT_USER="app", RABBITMQ_DEFAULT_PASS="pw")
    broker = Broker(**s.broker_kwargs())
    server = Server(broker, **s.server_kwargs())
    server.start()
    try:
        assert server.management_port
        assert server.stream_port
        conn = pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", server.port, credentials=pika.PlainCredentials("app", "pw")))
        try:
            assert conn._impl.params.frame_max == 65536
            assert conn._impl.params.channel_max == 7
        finally:
            conn.close()
    finally:
        server.stop()


def test_every_interface_becomes_0000(etc: Path) -> None:
    """RabbitMQ's default listener is every interface; embroker's Server gets 0.0.0.0."""
    s = read(etc, RABBITMQ_NODE_PORT="0")
    assert s.server_kwargs()["host"] == "0.0.0.0"
    with Server(Broker(**s.broker_kwargs()), **s.server_kwargs()) as server:
        assert server.port > 0


# -- STOMP and Web-STOMP (issue 46), MQTT and Web-MQTT (issue 47): one table ------------------

each = pytest.mark.parametrize("p", PROTOCOLS, ids=[p.kind for p in PROTOCOLS])


@each
def test_listeners_need_their_plugin_and_the_web_plugin_brings_the_plain_one(
        etc: Path, p: ListenerPlugin) -> None:
    """``stomp.listeners.*`` and ``web_stomp.*`` ports (``mqtt.listeners.*``,
    ``web_mqtt.*``), as RabbitMQ 3.10.8's schemas map them: the protocol's listeners with its
    plugin (or the Web- plugin, which depends on it), the Web- ones with the Web- plugin; the
    defaults 61613 and 15674 (1883 and 15675)."""
    conf = (f"{p.kind}.listeners.tcp.1 = 62000\n{p.kind}.listeners.ssl.1 = 62001\n"
            f"{p.web_kind}.tcp.port = 16000\n{p.web_kind}.ssl.port = 16001\n"
            "ssl_options.certfile = /c.pem\n")
    off = read(etc, conf)
    assert (off.protocol_listeners, off.protocol_tls_listeners) == ({}, {})
    assert off.server_kwargs()["listeners"] == {}
    assert (off.plugin_ports[p.plugin], off.plugin_tls_ports[p.plugin]) == (62000, 62001)
    assert (off.plugin_ports[p.web_plugin], off.plugin_tls_ports[p.web_plugin]) == \
        (16000, 16001)
    plain = read(etc, conf, RABBITMQ_ENABLED_PLUGINS=p.plugin)
    assert plain.protocol_listeners == {p.kind: (Listener("auto", 62000),)}
    assert plain.protocol_tls_listeners == {p.kind: (Listener("auto", 62001),)}
    assert plain.server_kwargs()["listeners"] == {p.kind: 62000}
    assert plain.server_kwargs()["tls_listeners"] == {p.kind: 62001}
    web = read(etc, conf, RABBITMQ_ENABLED_PLUGINS=p.web_plugin)
    assert web.server_kwargs()["listeners"] == {p.kind: 62000, p.web_kind: 16000}
    assert web.server_kwargs()["tls_listeners"] == {p.kind: 62001, p.web_kind: 16001}
    assert not any(p.kind in line for line in web.unsupported)
    defaults = read(etc, "", RABBITMQ_ENABLED_PLUGINS=p.web_plugin)
    assert defaults.server_kwargs()["listeners"] == {p.kind: p.port, p.web_kind: p.web_port}
    assert defaults.server_kwargs()["tls_listeners"] == {}
    assert read(etc, f"{p.kind}.listeners.tcp = none\n",
                RABBITMQ_ENABLED_PLUGINS=p.plugin).server_kwargs()["listeners"] == {}
    assert read(etc, f"{p.web_kind}.tcp.port = 0\n", RABBITMQ_ENABLED_PLUGINS=p.web_plugin
                ).server_kwargs()["listeners"][p.web_kind] == 0  # (any free port)


def test_web_stomp_port_the_older_key(etc: Path) -> None:
    assert read(etc, "web_stomp.port = 16500\n").plugin_ports["rabbitmq_web_stomp"] == 16500


def test_every_plugin_protocol_at_once(etc: Path) -> None:
    both = read(etc, "", RABBITMQ_ENABLED_PLUGINS="rabbitmq_web_stomp,rabbitmq_mqtt")
    assert both.server_kwargs()["listeners"] == {"stomp": 61613, "web_stomp": 15674,
                                                 "mqtt": 1883}
    assert both.plugin_ports["rabbitmq_web_mqtt"] == 15675
    assert set(both.server_kwargs()["port_settings"]) == {"stomp", "mqtt"}


@each
def test_a_tls_port_needs_tls_settings_and_the_web_plugin_brings_its_own(
        etc: Path, p: ListenerPlugin) -> None:
    """``stomp.listeners.ssl`` (``mqtt.listeners.ssl``) takes ``ssl_options`` (as the amqps
    listener); the Web- plugin's TLS listener takes ``web_stomp.ssl.*`` (``web_mqtt.ssl.*``)
    files (embroker's listener has one TLS context for all its TLS ports: ``ssl_options``
    when given); none without any."""
    bare = read(etc, f"{p.kind}.listeners.ssl.1 = 62001\n", RABBITMQ_ENABLED_PLUGINS=p.plugin)
    assert bare.server_kwargs()["tls_listeners"] == {}
    assert bare.plugin_tls_ports[p.plugin] is None
    web = read(etc, f"{p.web_kind}.ssl.port = 16001\n{p.web_kind}.ssl.certfile = /w.pem\n"
                    f"{p.web_kind}.ssl.keyfile = /w.key\n",
               RABBITMQ_ENABLED_PLUGINS=p.web_plugin)
    files = web.web_tls[p.web_kind]
    assert files.certfile == "/w.pem"
    kwargs = web.server_kwargs()
    assert kwargs["tls"] is files
    assert kwargs["tls_listeners"] == {p.web_kind: 16001}


def test_stomp_settings_are_read_into_stomp_settings(etc: Path) -> None:
    s = read(etc, "stomp.default_user = app\nstomp.default_pass = s3cret\n"
                  "stomp.default_vhost = shop\nstomp.implicit_connect = true\n"
                  "stomp.ssl_cert_login = true\nstomp.default_topic_exchange = events\n"
                  "stomp.default_nack_requeue = false\nstomp.hide_server_info = true\n"
                  "stomp.login_timeout = 2500\n")
    assert s.stomp == StompSettings(
        default_user=("app", "s3cret"), default_vhost="shop", implicit_connect=True,
        ssl_cert_login=True, default_topic_exchange="events", default_nack_requeue=False,
        hide_server_info=True, login_timeout=2.5)
    assert s.server_kwargs()["port_settings"] == {"stomp": s.stomp, "mqtt": MqttSettings()}
    assert s.unsupported == ()
    assert read(etc, "").stomp == StompSettings()
    assert read(etc, "stomp.default_user = app\n").stomp.default_user == ("app", "guest")
    with pytest.raises(ConfigError, match=r"stomp\.implicit_connect = 'yes': expected true or"):
        read(etc, "stomp.implicit_connect = yes\n")
    with pytest.raises(ConfigError, match=r"stomp\.login_timeout = 'soon': expected an integer"):
        read(etc, "stomp.login_timeout = soon\n")


def test_mqtt_settings_are_read_into_mqtt_settings(etc: Path) -> None:
    s = read(etc, "mqtt.default_user = app\nmqtt.default_pass = s3cret\n"
                  "mqtt.allow_anonymous = false\nmqtt.vhost = shop\nmqtt.exchange = events\n"
                  "mqtt.subscription_ttl = 60000\nmqtt.prefetch = 5\n"
                  "mqtt.ssl_cert_login = true\nmqtt.login_timeout = 2500\n")
    assert s.mqtt == MqttSettings(
        default_user=("app", "s3cret"), allow_anonymous=False, vhost="shop",
        exchange="events", subscription_ttl=60000, prefetch=5, ssl_cert_login=True,
        login_timeout=2.5)
    assert s.server_kwargs()["port_settings"] == {"stomp": StompSettings(), "mqtt": s.mqtt}
    assert s.unsupported == ()
    assert read(etc, "").mqtt == MqttSettings()
    assert read(etc, "mqtt.default_pass = pw\n").mqtt.default_user == ("guest", "pw")
    for forever in ("infinity", "undefined"):
        assert read(etc, f"mqtt.subscription_ttl = {forever}\n").mqtt.subscription_ttl is None
    with pytest.raises(ConfigError, match=r"mqtt\.allow_anonymous = 'yes': expected true or"):
        read(etc, "mqtt.allow_anonymous = yes\n")
    with pytest.raises(ConfigError, match=r"mqtt\.prefetch = 'many': expected an integer"):
        read(etc, "mqtt.prefetch = many\n")
    # What embroker does not honour of the plugin's keys is said, as any other.
    (line,) = read(etc, "mqtt.sparkplug = true\n").unsupported
    assert line.endswith("mqtt.sparkplug: not honoured by embroker")


@each
def test_kwargs_serve_the_protocol_and_its_web_one_with_their_settings(
        etc: Path, p: ListenerPlugin) -> None:
    given = {"stomp": ("stomp.default_vhost = shop\n", StompSettings(default_vhost="shop")),
             "mqtt": ("mqtt.vhost = shop\n", MqttSettings(vhost="shop"))}
    conf, settings = given[p.kind]
    s = read(etc, f"listeners.tcp.default = 127.0.0.1:0\n{p.kind}.listeners.tcp.1 = 0\n"
                  f"{p.web_kind}.tcp.port = 0\n{conf}", RABBITMQ_ENABLED_PLUGINS=p.web_plugin)
    with Server(Broker(**s.broker_kwargs()), **s.server_kwargs()) as server:
        assert server.listener_port(p.kind)
        assert server.listener_port(p.web_kind)
        assert server.port_settings[p.kind] == settings
