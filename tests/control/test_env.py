"""The node's name, by the one rule the node names itself by and the tools find it by
(embroker.control._env.node_name: RabbitMQ 3.10.8's CLI, NodeName.create/2, and rabbit_env),
rabbitmq-env.conf included."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from embroker.control import _env
from embroker.control._config import ConfigError, read_node_settings
from embroker.control._env import NodeNameError, node_name, tool_node_name

SHORT = socket.gethostname().split(".")[0]


@pytest.fixture(autouse=True)
def _domain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_env, "_domain", lambda: "example.org")


def test_a_name_without_a_host_gets_this_ones() -> None:
    assert node_name({}) == f"rabbit@{SHORT}"
    assert node_name({}, given="hare") == f"hare@{SHORT}"
    assert node_name({}, given="@box") == "rabbit@box"  # (the CLI's split_node)
    assert node_name({"RABBITMQ_USE_LONGNAME": "true"}) == f"rabbit@{SHORT}.example.org"


def test_long_names_get_the_domain_and_short_names_refuse_a_dot() -> None:
    """Checked live on 3.10.8: ``rabbitmqctl -l -n rabbit@localhost ping`` pings
    rabbit@localhost.localdomain; ``-n rabbit@a.b`` is refused, reason short."""
    assert node_name({}, given="rabbit@localhost", longnames=True) == \
        "rabbit@localhost.example.org"
    assert node_name({}, given="rabbit@a.b", longnames=True) == "rabbit@a.b"
    with pytest.raises(NodeNameError) as refused:
        node_name({}, given="rabbit@a.b", operation="status")
    assert refused.value.code == 65
    assert refused.value.message == (
        "Error: operation status failed due to invalid node name (node: rabbit@a.b, reason: "
        "short).\nIf using FQDN node names, use the -l / --longnames argument")


def test_the_part_before_the_at_is_letters_digits_underscores_and_dashes() -> None:
    for bad in ("../x", "a b", "a/b@h", "é@h"):
        with pytest.raises(NodeNameError, match="node name head"):
            node_name({}, given=bad)
    assert node_name({}, given="a-b_9@h") == "a-b_9@h"


def test_the_tools_read_rabbitmq_env_conf_as_the_node_does(tmp_path: Path) -> None:
    """What rabbitmq-server names itself and what the tools call, for the same environments:
    equal, rabbitmq-env.conf's NODENAME and USE_LONGNAME included; the environment wins."""
    conf = tmp_path / "rabbitmq-env.conf"
    base = {"RABBITMQ_CONF_ENV_FILE": str(conf),
            "RABBITMQ_CONFIG_FILE": str(tmp_path / "none"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(tmp_path / "none")}
    for text, environ in (("NODENAME=rabbit@localhost\n", {}),
                          ("NODENAME=hare\n", {}),
                          ("NODENAME=hare\n", {"RABBITMQ_NODENAME": "bunny"}),
                          ("NODENAME=hare\nUSE_LONGNAME=true\n", {}),
                          ("", {"NODENAME": "plain"})):
        conf.write_text(text)
        env = {**base, **environ}
        assert tool_node_name(env) == read_node_settings(env).node_name, (text, environ)
    conf.write_text("NODENAME=hare\n")
    assert tool_node_name(base) == f"hare@{SHORT}"
    assert tool_node_name(base, given="other") == f"other@{SHORT}"


def test_a_node_name_rabbitmq_refuses_stops_the_node_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^Invalid node name! \.\./x@\S+: only "
                                          r"alphanumerics, _ and - may come before the @ "
                                          r"\(RABBITMQ_NODENAME\)$"):
        read_node_settings({"RABBITMQ_NODENAME": "../x",
                            "RABBITMQ_CONF_ENV_FILE": str(tmp_path / "none"),
                            "RABBITMQ_CONFIG_FILE": str(tmp_path / "none")})


def test_an_unreadable_rabbitmq_env_conf_is_one_line_for_the_tools(tmp_path: Path) -> None:
    conf = tmp_path / "rabbitmq-env.conf"
    conf.write_text("if true; then NODENAME=x; fi\n")
    with pytest.raises(Exception, match=r"rabbitmq-env\.conf:1: embroker reads only") as refused:
        tool_node_name({"RABBITMQ_CONF_ENV_FILE": str(conf)})
    assert getattr(refused.value, "code", None) == 78


def test_the_distribution_listens_where_inet_dist_use_interface_says(tmp_path: Path) -> None:
    """A machine's rabbitmq-env.conf may say ``export ERL_FLAGS="-kernel inet_dist_use_interface
    {127,0,0,1}"`` (this one's does: RabbitMQ's distribution listens on 127.0.0.1 only); the
    Erlang arguments are read in erl's order, the last wins; none: every interface."""
    conf = tmp_path / "rabbitmq-env.conf"
    base = {"RABBITMQ_CONF_ENV_FILE": str(conf), "RABBITMQ_CONFIG_FILE": str(tmp_path / "none"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(tmp_path / "none")}
    conf.write_text('export ERL_FLAGS="-kernel inet_dist_use_interface {127,0,0,1}"\n')
    assert read_node_settings(base).dist_interface == "127.0.0.1"
    conf.write_text("")
    assert read_node_settings(base).dist_interface == "auto"
    assert read_node_settings({
        **base, "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {0,0,0,0,0,0,0,1}",
        "ERL_AFLAGS": "-kernel inet_dist_use_interface {10,0,0,1}"}).dist_interface == "::1"
    settings = read_node_settings({**base, "RABBITMQ_NODE_PORT": "5673"})
    assert (settings.dist_port, settings.dist_port_given) == (25673, False)
    settings = read_node_settings({**base, "RABBITMQ_DIST_PORT": "4000"})
    assert (settings.dist_port, settings.dist_port_given) == (4000, True)
