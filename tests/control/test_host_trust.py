"""The tools and the node as a hostile local user meets them (issue 44, items 2, 3, 5, 6, 7, 8,
13): a registry folder or file planted in the temporary folder, a process without the cookie
listening where a registry file points, a node of another name, symlinks where the log and the
shims are written, idle sockets on the control port; and the node names and ports the tools
and the server must agree on.

The other user is ``nobody`` (uid 65534): the suite runs as root in CI, so a planted folder or
file is really chowned to it; without root, the owner checks are skipped and the mode checks
(a folder others can write) still run."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from embroker import Broker
from embroker.control._config import read_node_settings
from embroker.control._ctl import run
from embroker.control._node import Node
from embroker.control._plugins_cli import main as plugins_main
from embroker.control._registry import NodeEntry, lookup, register
from embroker.server import Server

NOBODY = 65534
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                             reason="planting another user's file needs root (chown)")
HOST = socket.gethostname().split(".")[0]


def _tool(*argv: str, environ: dict[str, str], tool: str = "rabbitmqctl") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(tool, list(argv), out=out, err=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


def _isolated(tmp_path: Path, **more: str) -> dict[str, str]:
    """An environment that keeps the machine's RabbitMQ files out (its rabbitmq-env.conf names
    rabbit@localhost), as docs/rabbitmq-tools.md tells a CI job to."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RABBITMQ_")}
    env.update({"EMBROKER_NODES_DIR": str(tmp_path / "nodes"),
                "RABBITMQ_CONF_ENV_FILE": str(tmp_path / "no-rabbitmq-env.conf"),
                "RABBITMQ_CONFIG_FILE": str(tmp_path / "no-rabbitmq"),
                "RABBITMQ_ENABLED_PLUGINS_FILE": str(tmp_path / "enabled_plugins"),
                "RABBITMQ_LOG_BASE": str(tmp_path / "log"),
                "RABBITMQ_MNESIA_BASE": str(tmp_path / "mnesia")})
    env.update(more)
    return env


@contextmanager
def _shared_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary folder as /tmp is (1777, root's), the process's own (TMPDIR), and no
    EMBROKER_NODES_DIR: the registry goes where it goes by default."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.delenv("EMBROKER_NODES_DIR", raising=False)
    yield shared


@contextmanager
def _node(name: str, **kwargs: object) -> Iterator[Node]:
    broker = Broker()
    with Server(broker) as server, Node(broker, server, name, **kwargs) as node:  # type: ignore[arg-type]
        yield node
        assert server.errors == []


# -- the registry: item 6 -----------------------------------------------------------------------

@as_root
def test_a_registry_folder_another_user_made_first_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another user makes embroker-UID/nodes in the temporary folder first (mode 777): the
    node does not write into it, and says so in one line; the tools refuse it too."""
    with _shared_temp(tmp_path, monkeypatch) as shared:
        planted = shared / f"embroker-{os.geteuid()}" / "nodes"
        planted.mkdir(parents=True)
        for level in (planted.parent, planted):
            level.chmod(0o777)
            os.chown(level, NOBODY, NOBODY)
        broker = Broker()
        with Server(broker) as server, \
                pytest.raises(Exception, match=r"belongs to nobody \(uid 65534\)") as refused:
            Node(broker, server, "rabbit@victim").start()
        assert "\n" not in str(refused.value)
        assert list(planted.iterdir()) == []
        code, _out, err = _tool("-n", "rabbit@victim", "list_users",
                                environ={**os.environ, "TMPDIR": str(shared)})
        assert code == 77
        assert "the node registry cannot be trusted" in err
        assert "belongs to nobody (uid 65534)" in err


def test_a_registry_folder_others_can_write_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "open-nodes"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(folder))
    broker = Broker()
    with Server(broker) as server, \
            pytest.raises(Exception, match=r"can be written by others \(mode 0777\)"):
        Node(broker, server, "rabbit@victim").start()
    assert list(folder.iterdir()) == []


@contextmanager
def _fake_node() -> Iterator[tuple[int, list[bytes]]]:
    """A process without the node's cookie listening on a port: it keeps every byte it is sent
    and answers anything as embroker's node once did (200, a result)."""
    received: list[bytes] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                sock, _ = listener.accept()
            except OSError:
                continue
            with sock:
                sock.settimeout(1.0)
                try:
                    while data := sock.recv(65536):
                        received.append(data)
                        sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                     b"content-length: 15\r\n\r\n{\"result\":null}")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], received
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@as_root
def test_a_registry_file_another_user_planted_is_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The attacker's node file (its pid alive, its port, its cookie) in the user's registry:
    ignored as if it were not there. The tool says the node is not running and sends the
    password nowhere; the user's node of that name starts."""
    folder = tmp_path / "nodes"
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(folder))
    folder.mkdir(mode=0o700)
    with _fake_node() as (port, received):
        planted = folder / "rabbit@victim.json"
        planted.write_text(json.dumps({"name": "rabbit@victim", "pid": os.getppid(),
                                       "control_port": port, "cookie": "attacker's",
                                       "ports": {}}))
        os.chown(planted, NOBODY, NOBODY)
        code, _out, _err = _tool("-n", "rabbit@victim", "add_user", "ci", "SECRET-PASSWORD",
                                 environ=dict(os.environ))
        assert code == 69
        assert not any(b"SECRET-PASSWORD" in data for data in received)
        with _node("rabbit@victim") as node:  # (a planted live pid does not stop it)
            entry = lookup("rabbit@victim")
            assert entry is not None
            assert entry.control_port == node.control_port


def test_a_process_without_the_cookie_gets_no_password(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's own registry file names a port another process holds now (the node died,
    its pid reused): that process cannot prove it knows the cookie, so the tool sends it no
    argument, and says why."""
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    with _fake_node() as (port, received):
        register(NodeEntry("rabbit@victim", os.getpid(), port, NodeEntry.new_cookie()))
        code, _out, err = _tool("-n", "rabbit@victim", "add_user", "ci", "SECRET-PASSWORD",
                                environ=dict(os.environ))
        assert code == 69
        assert not any(b"SECRET-PASSWORD" in data for data in received)
        assert not any(b"cookie" in data.lower() for data in received)
        assert "does not speak embroker's control protocol" in err


def test_rabbitmq_plugins_says_why_it_did_not_reach_the_node(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rabbitmq-plugins, as rabbitmqctl: a process on the node's port that cannot prove it is
    the node is refused, and the diagnostics say so (they said only that the node was not
    registered)."""
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    (tmp_path / "enabled_plugins").write_text("[].\n")
    environ = {**os.environ, "RABBITMQ_ENABLED_PLUGINS_FILE": str(tmp_path / "enabled_plugins")}
    with _fake_node() as (port, _received):
        register(NodeEntry("rabbit@victim", os.getpid(), port, NodeEntry.new_cookie()))
        out, err = io.StringIO(), io.StringIO()
        code = plugins_main(["-n", "rabbit@victim", "enable", "rabbitmq_management"], out=out,
                            err=err, environ=environ)
    assert code == 69
    assert "does not speak embroker's control protocol" in err.getvalue()


def test_the_node_proves_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry file for node A that points at node B (B's port and cookie): the call is
    refused, and B runs nothing (a call never reaches a node the caller did not mean)."""
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    with _node("rabbit@b") as b:
        other = lookup("rabbit@b")
        assert other is not None
        register(NodeEntry("rabbit@a", os.getpid(), other.control_port, other.cookie))
        code, _out, err = _tool("-n", "rabbit@a", "add_user", "ci", "pw",
                                environ=dict(os.environ))
        assert code == 69
        assert "ci" not in b.broker.users
        assert "is not node rabbit@a" in err


def test_idle_sockets_on_the_control_port_keep_no_tool_waiting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """600 idle sockets held on the control port before a call, 600 more before the next:
    each call answers within its own 5 s timeout (the port's 64 slots held by others made
    each call wait 5 s, and 83 s with 600 sockets). (The figures: benchmarks/control_flood.py.)"""
    monkeypatch.setenv("EMBROKER_NODES_DIR", str(tmp_path / "nodes"))
    held: list[socket.socket] = []

    def hold(count: int, port: int) -> None:
        for _ in range(count):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            held.append(sock)

    try:
        with _node("rabbit@flooded") as node:
            assert node.control_port is not None
            hold(600, node.control_port)
            assert _tool("-n", "rabbit@flooded", "-t", "5", "list_vhosts", "-s",
                         environ=dict(os.environ)) == (0, "/\n", "")
            hold(600, node.control_port)
            assert _tool("-n", "rabbit@flooded", "-t", "5", "add_vhost", "after",
                         environ=dict(os.environ))[0] == 0
            assert "after" in node.broker.vhosts
    finally:
        for sock in held:
            sock.close()


# -- node names: items 2 and 13 -----------------------------------------------------------------

def test_the_tools_reach_the_node_rabbitmq_env_conf_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rabbitmq-env.conf says NODENAME=hare@localhost: rabbitmq-server names its node so, and
    the tools call that node, not another embroker on the machine named rabbit@HOST (they
    read rabbitmq-env.conf as RabbitMQ's CLI does)."""
    conf = tmp_path / "rabbitmq-env.conf"
    conf.write_text("NODENAME=hare@localhost\n")
    env = _isolated(tmp_path, RABBITMQ_CONF_ENV_FILE=str(conf))
    settings = read_node_settings(env)
    assert settings.node_name == "hare@localhost"
    monkeypatch.setenv("EMBROKER_NODES_DIR", env["EMBROKER_NODES_DIR"])
    with _node(f"rabbit@{HOST}") as decoy, _node(settings.node_name) as meant:
        assert _tool("add_vhost", "ci", environ=env)[0] == 0
        assert "ci" in meant.broker.vhosts
        assert "ci" not in decoy.broker.vhosts


def test_a_bad_node_name_is_refused_with_rabbitmqs_text(tmp_path: Path) -> None:
    """RABBITMQ_NODENAME=../x: the CLI's refusal (exit 65), and one line from rabbitmq-server
    (exit 78), no traceback."""
    env = _isolated(tmp_path, RABBITMQ_NODENAME="../x")
    code, _out, err = _tool("status", environ=env)
    assert (code, err) == (65, "Unsupported node name: node name head (the part before the @) "
                               "is invalid. Only alphanumerics, _ and - characters are "
                               "allowed.\nIf using FQDN node names, use the -l / --longnames "
                               "argument\n")
    server = subprocess.run([sys.executable, "-m", "embroker.control", "rabbitmq-server"],
                            env=env, capture_output=True, text=True, timeout=60, check=False)
    assert server.returncode == 78
    assert server.stderr.startswith("embroker: Invalid node name! ../x@")
    assert server.stderr.count("\n") == 1


# -- rabbitmq-server: items 3, 5, 7, 13 ---------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def _held(port: int = 0) -> Iterator[int]:
    """A port a socket of the test listens on (as the machine's RabbitMQ holds 25672)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        yield sock.getsockname()[1]


def _wait_for(name: str, process: subprocess.Popen[str], env: dict[str, str]) -> NodeEntry:
    deadline = time.monotonic() + 30
    folder = Path(env["EMBROKER_NODES_DIR"])
    while time.monotonic() < deadline:
        if (folder / f"{name}.json").exists():
            return NodeEntry(**json.loads((folder / f"{name}.json").read_text()))
        if process.poll() is not None:
            break
        time.sleep(0.05)  # (a real process starting: polled against a deadline)
    process.kill()
    _out, err = process.communicate()
    raise AssertionError(f"node {name} did not start: {err}")


@contextmanager
def _rabbitmq_server(env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen([sys.executable, "-m", "embroker.control", "rabbitmq-server",
                                *args], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
        try:
            process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def test_a_failed_detached_start_says_why_in_the_node_log(tmp_path: Path) -> None:
    """rabbitmq-server -detached on a port that is taken exits 0, as RabbitMQ's; the reason is
    in the node's log, as RabbitMQ writes it (BOOT FAILED), for await_startup's user to
    find."""
    with _held() as port:
        env = _isolated(tmp_path, RABBITMQ_NODENAME="detached", RABBITMQ_NODE_PORT=str(port),
                        RABBITMQ_NODE_IP_ADDRESS="127.0.0.1")
        result = subprocess.run([sys.executable, "-m", "embroker.control", "rabbitmq-server",
                                 "-detached"], env=env, capture_output=True, text=True,
                                timeout=60, check=False)
        assert result.returncode == 0
        log = tmp_path / "log" / f"detached@{HOST}.log"
        deadline = time.monotonic() + 20
        text = ""
        while "BOOT FAILED" not in text and time.monotonic() < deadline:
            time.sleep(0.05)  # (the detached process starting: polled against a deadline)
            text = log.read_text() if log.exists() else ""
    assert "[ERROR] embroker.control: BOOT FAILED\n" in text
    assert f"port {port} on 127.0.0.1 is in use" in text


def test_the_log_fallback_never_follows_a_planted_symlink(tmp_path: Path) -> None:
    """The configured log is a symlink another user planted, and so is the old fallback's
    predictable name in the temporary folder: the node logs into a folder of the user's own,
    and the file the links point to is left as it was."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    victim = tmp_path / "victim-bashrc"
    victim.write_text("precious\n")
    name = f"logfall@{HOST}"
    links = [shared / "planted.log", shared / f"embroker-{name}.log"]
    for link in links:
        link.symlink_to(victim)
        if os.geteuid() == 0:
            os.lchown(link, NOBODY, NOBODY)
    env = _isolated(tmp_path, RABBITMQ_NODENAME="logfall", RABBITMQ_NODE_PORT="0",
                    RABBITMQ_NODE_IP_ADDRESS="127.0.0.1", TMPDIR=str(shared),
                    RABBITMQ_LOGS=str(links[0]))
    with _rabbitmq_server(env) as process:
        entry = _wait_for(name, process, env)
        assert _tool("-n", name, "add_vhost", "logged", environ=env)[0] == 0
        socket.create_connection(("127.0.0.1", entry.ports["amqp"]), timeout=5).close()
        process.terminate()  # (the node logged the connection, and its stop)
        _out, err = process.communicate(timeout=20)
    assert victim.read_text() == "precious\n"
    private = shared / f"embroker-{os.geteuid()}" / "log"
    assert f"logging to {private / (name + '.log')}" in err
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert stat.S_IMODE((private / f"{name}.log").stat().st_mode) == 0o600


def test_the_control_port_is_where_rabbitmq_distribution_listens(tmp_path: Path) -> None:
    """RABBITMQ_DIST_PORT names the control port; without it, the AMQP port + 20000 (as
    RabbitMQ's rabbit_env); `rabbitmq-diagnostics listeners` names it."""
    dist = _free_port()
    env = _isolated(tmp_path, RABBITMQ_NODENAME="dist", RABBITMQ_NODE_PORT="0",
                    RABBITMQ_NODE_IP_ADDRESS="127.0.0.1", RABBITMQ_DIST_PORT=str(dist))
    with _rabbitmq_server(env) as process:
        entry = _wait_for(f"dist@{HOST}", process, env)
        assert entry.control_port == dist
        code, out, _err = _tool("-n", "dist", "listeners", environ=env,
                                tool="rabbitmq-diagnostics")
        assert code == 0
        assert f"Interface: [::], port: {dist}, protocol: clustering" in out
    for _ in range(20):  # an AMQP port whose + 20000 is free
        amqp = _free_port()
        if amqp + 20000 <= 65535 and _bindable(amqp + 20000):
            break
    env = _isolated(tmp_path, RABBITMQ_NODENAME="implied", RABBITMQ_NODE_PORT=str(amqp),
                    RABBITMQ_NODE_IP_ADDRESS="127.0.0.1")
    with _rabbitmq_server(env) as process:
        assert _wait_for(f"implied@{HOST}", process, env).control_port == amqp + 20000


def _bindable(port: int) -> bool:
    try:
        with _held(port):
            return True
    except OSError:
        return False


def test_an_implied_dist_port_that_is_taken_gives_way(tmp_path: Path) -> None:
    """The machine's RabbitMQ holds the port the default implies (25672 beside 5672): the node
    starts all the same, on a free port the registry tells the tools, said once; a port
    RABBITMQ_DIST_PORT names and cannot have is one line with the fix, exit 75."""
    for _ in range(50):
        amqp = _free_port()
        if amqp + 20000 <= 65535 and _bindable(amqp + 20000):
            break
    with _held(amqp + 20000) as taken:
        env = _isolated(tmp_path, RABBITMQ_NODENAME="beside", RABBITMQ_NODE_PORT=str(amqp),
                        RABBITMQ_NODE_IP_ADDRESS="127.0.0.1")
        with _rabbitmq_server(env) as process:
            entry = _wait_for(f"beside@{HOST}", process, env)
            assert entry.control_port != taken
            assert _tool("-n", "beside", "list_vhosts", "-s", environ=env) == (0, "/\n", "")
            process.terminate()
            _out, err = process.communicate(timeout=20)
        assert err.count(f"port {taken} (the Erlang distribution's") == 1
        assert f"control port is {entry.control_port} instead" in err
        env = _isolated(tmp_path, RABBITMQ_NODENAME="named", RABBITMQ_NODE_PORT="0",
                        RABBITMQ_NODE_IP_ADDRESS="127.0.0.1", RABBITMQ_DIST_PORT=str(taken))
        with _rabbitmq_server(env) as process:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pytest.fail("the node started without the port RABBITMQ_DIST_PORT names")
            err = process.stderr.read() if process.stderr is not None else ""
        assert process.returncode == 75
        assert err == (f"ERROR: could not bind to distribution port {taken} on host {HOST}: it "
                       "is in use (by a RabbitMQ node?); choose another RABBITMQ_DIST_PORT, or "
                       "unset it for a free port\n")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="a folder root cannot read needs root without CAP_DAC_OVERRIDE "
                           "(setpriv)")
def test_a_data_folder_the_node_cannot_read_does_not_stop_it(tmp_path: Path) -> None:
    """RABBITMQ_MNESIA_BASE in a folder the node cannot read (root without its capability to
    read anything, the folder nobody's, 0700): the node starts, as embroker keeps nothing
    there (it was a traceback)."""
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    os.chown(locked, NOBODY, NOBODY)
    env = _isolated(tmp_path, RABBITMQ_NODENAME="unreadable", RABBITMQ_NODE_PORT="0",
                    RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
                    RABBITMQ_MNESIA_BASE=str(locked / "mnesia"))
    process = subprocess.Popen(
        ["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-m",
         "embroker.control", "rabbitmq-server"], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(f"unreadable@{HOST}", process, env)
        assert _tool("-n", "unreadable", "status", environ=env)[0] == 0
    finally:
        process.terminate()
        _out, err = process.communicate(timeout=20)
    assert "Traceback" not in err


# -- the shims: item 8 --------------------------------------------------------------------------

def _shims(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "embroker", "shims", str(folder)],
                          capture_output=True, text=True, timeout=60, check=False)


def test_shims_never_follow_a_symlink_in_their_folder(tmp_path: Path) -> None:
    """A symlink named rabbitmqctl in the folder, pointing at the user's .bashrc: the shim
    replaces the link; the .bashrc keeps its content and its mode."""
    folder = tmp_path / "bin"
    folder.mkdir()
    bashrc = tmp_path / ".bashrc"
    bashrc.write_text("export PS1='$ '\n")
    bashrc.chmod(0o644)
    (folder / "rabbitmqctl").symlink_to(bashrc)
    result = _shims(folder)
    assert result.returncode == 0, result.stderr
    assert bashrc.read_text() == "export PS1='$ '\n"
    assert stat.S_IMODE(bashrc.stat().st_mode) == 0o644
    shim = folder / "rabbitmqctl"
    assert not shim.is_symlink()
    assert stat.S_IMODE(shim.stat().st_mode) == 0o755
    assert "-m embroker.control rabbitmqctl" in shim.read_text()


def test_shims_refuse_a_folder_others_can_write(tmp_path: Path) -> None:
    folder = tmp_path / "open-bin"
    folder.mkdir()
    folder.chmod(0o777)
    result = _shims(folder)
    assert result.returncode == 1
    assert result.stderr.startswith(f"embroker: cannot write the shims: {folder} can be written "
                                    "by others (mode 0777)")
    assert result.stderr.count("\n") == 1
    assert list(folder.iterdir()) == []


@as_root
def test_shims_refuse_a_folder_another_user_owns(tmp_path: Path) -> None:
    folder = tmp_path / "their-bin"
    folder.mkdir(mode=0o755)
    os.chown(folder, NOBODY, NOBODY)
    result = _shims(folder)
    assert result.returncode == 1
    assert "belongs to nobody (uid 65534), not to you" in result.stderr
    assert list(folder.iterdir()) == []


# -- the tracing plugin's files -----------------------------------------------------------------

def test_a_trace_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    """rabbitmq_tracing's default folder is /var/tmp/rabbitmq-tracing, a shared place: one
    others can write (or another user made) is refused, never written in."""
    from embroker.management._tracing import Tracing, TracingError

    folder = tmp_path / "rabbitmq-tracing"
    folder.mkdir()
    folder.chmod(0o777)
    broker = Broker()
    tracing = Tracing(broker, folder)
    with broker.locked(), pytest.raises(TracingError, match="can be written by others"):
        tracing.create("/", "t", {"format": "text", "pattern": "#"})
    assert list(folder.iterdir()) == []

