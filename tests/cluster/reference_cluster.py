"""A RabbitMQ cluster of one's own: the oracle of issue 48 (nodes that stop and start).

:func:`start_cluster` starts N extra nodes of the RabbitMQ installed here (3.10.8 from Debian) in
one cluster, beside the shared reference node ``rabbit@localhost``, which it never touches: each
node has its own name (``embroker-ref-XXXX-1@localhost``...), its own AMQP, management, stream and
distribution ports (free ones, on 127.0.0.1), its own config file, enabled-plugins file and data
and log folders, all in one folder made by :func:`tempfile.mkdtemp` (mode 0700) and removed by
:meth:`ReferenceCluster.close`.

Who runs the nodes, and the Erlang cookie. The nodes and ``rabbitmqctl`` must share one cookie,
and it is not changed or read here: as root, the nodes and the CLI run as the ``rabbitmq`` user
with its home (``/var/lib/rabbitmq``), as Debian's ``/usr/sbin/rabbitmqctl`` wrapper runs the
CLI (``su rabbitmq``), so all of them read ``/var/lib/rabbitmq/.erlang.cookie``; as another user
they run as that user with ``$HOME/.erlang.cookie``, which must exist (Erlang would otherwise
write a new one).

What makes it start fast. Measured on this machine (2 CPUs, shared with other work: load 2 to
9): three nodes up and clustered in 6.6 to 13.9 s, typically 8 to 9.5 s (``timings``); with
``join="ctl"`` 18 to 21 s. A node alone boots in 7.0 s with the stock install, 4.3 s here:

- the nodes run the stock scripts (``RABBITMQ_SCRIPTS_DIR`` pointing at links to them) from a
  home of their own whose ``plugins`` folder links only the applications the enabled plugins
  need (the closure of their ``.app`` files' ``applications``), because boot scans every
  application on ``ERL_LIBS`` for feature flags and boot steps (about 3 s for the 70 installed);
- the config file is in Erlang terms (``rabbitmq.config``): no Cuttlefish translation;
- the first node boots, then the others together, which find it through classic peer discovery
  (``cluster_nodes`` in their config: ``join="config"``, the default; joining a first node still
  booting can fail its schema check, seen on a loaded machine) or are joined after by
  ``rabbitmqctl stop_app; join_cluster; start_app`` (``join="ctl"``, each node in a thread:
  about 10 s more);
- readiness is the AMQP port listening (RabbitMQ opens its client listeners last in its boot),
  not a ``rabbitmqctl await_startup`` (about 1 s of CLI start each);
- :meth:`ReferenceCluster.close` kills the nodes' process groups (a graceful ``stop`` takes
  about 6 s a node) since their data is removed anyway.

With the management plugin enabled a ``stop_app`` takes about 5.5 s (its statistics handler holds
the ``rabbit`` application's stop for 5 s after the client connections are closed); without it
0.5 s. See /work/notes/cluster/reference-facts.md for what the cluster was used to record.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

#: Where Debian's package installs RabbitMQ (``sbin/`` scripts and ``plugins/``).
DEBIAN_HOMES = "/usr/lib/rabbitmq/lib"
#: The plugins every node enables unless told otherwise.
DEFAULT_PLUGINS = ("rabbitmq_management", "rabbitmq_stream")
#: The user RabbitMQ's Debian scripts run the node and the CLI as, when called by root.
SERVICE_USER = "rabbitmq"


class ReferenceClusterUnavailable(RuntimeError):
    """RabbitMQ is not installed here, or the cluster could not start (the reason says which)."""


def find_rabbitmq_home() -> Path | None:
    """The installed RabbitMQ's home (a folder with ``sbin/rabbitmq-server`` and ``plugins/``):
    ``$EMBROKER_RABBITMQ_HOME``, else the newest ``/usr/lib/rabbitmq/lib/rabbitmq_server-*``."""
    given = os.environ.get("EMBROKER_RABBITMQ_HOME")
    candidates = [Path(given)] if given else sorted(Path(DEBIAN_HOMES).glob("rabbitmq_server-*"))
    homes = [home for home in candidates
             if (home / "sbin" / "rabbitmq-server").is_file() and (home / "plugins").is_dir()]
    return homes[-1] if homes else None


def rabbitmq_version(home: Path) -> str:
    """The version of the ``rabbit`` application under ``home`` (``3.10.8``)."""
    for app in sorted((home / "plugins").glob("rabbit-*/ebin/rabbit.app")):
        found = re.search(r'\{vsn,\s*"([^"]+)"\}', app.read_text())
        if found:
            return found[1]
    return "unknown"


@dataclass(frozen=True)
class RefNode:
    """One node of the reference cluster: its name and ports (all on 127.0.0.1)."""

    name: str
    amqp_port: int
    management_port: int
    stream_port: int
    dist_port: int

    @property
    def url(self) -> str:
        """Its AMQP URL (guest/guest, the default vhost)."""
        return f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/%2F"

    @property
    def management_url(self) -> str:
        return f"http://127.0.0.1:{self.management_port}/api"

    def listening(self) -> bool:
        """Whether its AMQP port accepts a connection now (RabbitMQ opens it last in its boot
        and closes it first in ``stop_app``)."""
        try:
            socket.create_connection(("127.0.0.1", self.amqp_port), timeout=1).close()
        except OSError:
            return False
        return True


@dataclass(frozen=True)
class _Account:
    """Who the nodes and the CLI run as: ``user`` (None: the current one) with ``home``,
    whose ``.erlang.cookie`` they share."""

    user: str | None
    home: str

    @classmethod
    def here(cls) -> _Account:
        if os.geteuid() == 0:
            try:
                entry = pwd.getpwnam(SERVICE_USER)
            except KeyError as exc:
                raise ReferenceClusterUnavailable(f"no {SERVICE_USER!r} user to run the nodes as") from exc
            account = cls(SERVICE_USER, entry.pw_dir)
        else:
            account = cls(None, os.environ.get("HOME") or pwd.getpwuid(os.geteuid()).pw_dir)
        if not (Path(account.home) / ".erlang.cookie").is_file():
            raise ReferenceClusterUnavailable(
                f"no Erlang cookie at {account.home}/.erlang.cookie (the one rabbitmqctl uses); "
                "not making one")
        return account

    def popen_options(self) -> dict[str, Any]:
        if self.user is None:
            return {}
        return {"user": self.user, "group": self.user, "extra_groups": []}

    def give(self, path: Path) -> None:
        """Make ``path`` and what is under it the account's (when we are root)."""
        if self.user is None:
            return
        entry = pwd.getpwnam(self.user)
        for item in [path, *path.rglob("*")]:
            os.lchown(item, entry.pw_uid, entry.pw_gid)


def _free_ports(count: int) -> list[int]:
    """``count`` distinct ports nothing listens on now (all held open until all are chosen)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
        return ports


def _application_closure(plugins_dir: Path, roots: Iterable[str]) -> dict[str, Path]:
    """The applications of ``plugins_dir`` that ``roots`` need, by name (from each ``.app``
    file's ``applications`` and ``included_applications``; OTP's own are not in the folder)."""
    folders: dict[str, Path] = {}
    for folder in plugins_dir.iterdir():
        named = re.fullmatch(r"(.+)-[0-9][^-]*", folder.name)
        if named and folder.is_dir():
            folders[named[1]] = folder
    needed: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        app = todo.pop()
        if app in needed or app not in folders:
            continue
        needed[app] = folders[app]
        text = (folders[app] / "ebin" / f"{app}.app").read_text()
        for key in ("applications", "included_applications"):
            listed = re.search(r"\{" + key + r",\s*\[([^\]]*)\]", text)
            if listed:
                todo.extend(name.strip() for name in listed[1].split(",") if name.strip())
    return needed


def _node_config(node: RefNode, seed: str | None) -> str:
    """The node's ``rabbitmq.config`` (Erlang terms: no Cuttlefish at boot)."""
    rabbit = [f'{{tcp_listeners, [{{"127.0.0.1", {node.amqp_port}}}]}}']
    if seed is not None:
        # Classic peer discovery: join the seed at first boot, retrying every 100 ms for 60 s
        # while the seed, started at the same time, comes up.
        rabbit += [f"{{cluster_nodes, {{['{seed}'], disc}}}}",
                   "{cluster_formation, [{discovery_retry_limit, 600}, {discovery_retry_interval, 100}]}"]
    management = f'[{{tcp_config, [{{ip, "127.0.0.1"}}, {{port, {node.management_port}}}]}}]'
    stream = f'[{{tcp_listeners, [{{"127.0.0.1", {node.stream_port}}}]}}]'
    return (f"[{{rabbit, [{', '.join(rabbit)}]}},\n"
            f" {{rabbitmq_management, {management}}},\n"
            f" {{rabbitmq_stream, {stream}}}].\n")


@dataclass
class ReferenceCluster:
    """A running RabbitMQ cluster of one's own (see the module's docstring); a context manager
    that :meth:`close`\\ s it."""

    nodes: tuple[RefNode, ...]
    base: Path
    version: str
    plugins: tuple[str, ...]
    _home: Path
    _account: _Account
    _processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: Seconds each phase of the start took (``boot``, ``join``, ``total``).
    timings: dict[str, float] = field(default_factory=dict)

    # -- nodes ---------------------------------------------------------------------------
    def node(self, which: int | str) -> RefNode:
        """A node by index (0 is the first) or by name (full or before the ``@``)."""
        if isinstance(which, int):
            return self.nodes[which]
        for node in self.nodes:
            if which in (node.name, node.name.partition("@")[0]):
                return node
        raise KeyError(which)

    def _folder(self, node: RefNode) -> Path:
        return self.base / node.name.partition("@")[0]

    def _env(self, node: RefNode | None = None) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
               "HOME": self._account.home, "LANG": "C.UTF-8",
               "ERL_EPMD_ADDRESS": "127.0.0.1",
               "ERL_FLAGS": "-kernel inet_dist_use_interface {127,0,0,1}",
               "RABBITMQ_CONF_ENV_FILE": str(self.base / "rabbitmq-env.conf")}
        if node is None:
            return env
        folder = self._folder(node)
        return {**env,
                "RABBITMQ_SCRIPTS_DIR": str(self.base / "home" / "sbin"),
                "RABBITMQ_PLUGINS_DIR": str(self.base / "home" / "plugins"),
                "RABBITMQ_NODENAME": node.name,
                "RABBITMQ_CONFIG_FILE": str(folder / "rabbitmq.config"),
                "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.base / "enabled_plugins"),
                "RABBITMQ_MNESIA_BASE": str(folder / "mnesia"),
                "RABBITMQ_LOG_BASE": str(folder / "log"),
                "RABBITMQ_DIST_PORT": str(node.dist_port)}

    def _launch(self, node: RefNode) -> None:
        folder = self._folder(node)
        with (folder / "stdout.log").open("ab") as out:
            self._processes[node.name] = subprocess.Popen(
                [str(self.base / "home" / "sbin" / "rabbitmq-server")], env=self._env(node),
                cwd=folder, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, **self._account.popen_options())

    def log(self, which: int | str) -> str:
        """A node's log file so far (for a failure's message)."""
        node = self.node(which)
        path = self._folder(node) / "log" / f"{node.name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def wait_listening(self, which: int | str, timeout: float = 60) -> None:
        """Wait until a node's AMQP port listens (its boot or ``start_app`` is done).

        Raises:
            ReferenceClusterUnavailable: it did not within ``timeout`` seconds, or its VM ended.
        """
        node = self.node(which)
        deadline = time.monotonic() + timeout
        while not node.listening():
            process = self._processes.get(node.name)
            if process is not None and process.poll() is not None:
                raise ReferenceClusterUnavailable(f"{node.name} exited ({process.returncode}); "
                                                  f"its log ends:\n{self.log(node.name)[-3000:]}")
            if time.monotonic() > deadline:
                raise ReferenceClusterUnavailable(f"{node.name} did not listen within {timeout} s")
            time.sleep(0.05)  # a real node booting: polled against a deadline

    # -- tools ---------------------------------------------------------------------------
    def ctl(self, which: int | str, *args: str, timeout: float = 120,
            check: bool = True, tool: str = "rabbitmqctl") -> subprocess.CompletedProcess[str]:
        """``rabbitmqctl -n NODE ARGS`` (or another of RabbitMQ's tools) as the nodes' account.

        Raises:
            subprocess.CalledProcessError: it failed and ``check`` is true.
        """
        node = self.node(which)
        return subprocess.run([str(self._home / "sbin" / tool), "-n", node.name, *args],
                              env=self._env(), cwd=self.base, capture_output=True, text=True,
                              timeout=timeout, check=check, **self._account.popen_options())

    def stop_app(self, which: int | str) -> None:
        """``rabbitmqctl -n NODE stop_app``: RabbitMQ stops on the node, its VM stays up."""
        self.ctl(which, "stop_app")

    def start_app(self, which: int | str) -> None:
        """``rabbitmqctl -n NODE start_app``, then wait until its AMQP port listens."""
        self.ctl(which, "start_app")
        self.wait_listening(which)

    def restore(self) -> None:
        """``start_app`` on every node whose AMQP port does not listen (after a test stopped it)."""
        _in_threads(lambda node: self.start_app(node.name),
                    [node for node in self.nodes if not node.listening()])

    def api(self, which: int | str, path: str, *, method: str = "GET", body: Any = None,
            timeout: float = 30) -> Any:
        """A management API call on a node as guest (``path`` after ``/api``): the JSON it
        answers (None when it answers nothing).

        Raises:
            urllib.error.HTTPError: the API answered an error status.
        """
        node = self.node(which)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(node.management_url + path, data=data, method=method)
        request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def running_nodes(self, which: int | str = 0) -> list[str]:
        """The cluster's running nodes as a node sees them: its management API's, else
        ``rabbitmqctl cluster_status``'s (about 1 s of CLI start)."""
        if "rabbitmq_management" in self.plugins:
            return sorted(entry["name"] for entry in self.api(which, "/nodes") if entry.get("running"))
        status = json.loads(self.ctl(which, "cluster_status", "--formatter", "json").stdout)
        return sorted(status["running_nodes"])

    # -- the end -------------------------------------------------------------------------
    def close(self) -> None:
        """Kill every node (its whole process group) and remove the cluster's folder. Idempotent."""
        for process in self._processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
        for process in self._processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=30)
        self._processes.clear()
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> ReferenceCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _prepare_home(base: Path, home: Path, plugins: Sequence[str]) -> None:
    """A RabbitMQ home of the cluster's own: links to the stock scripts, and a ``plugins``
    folder of links to only the applications that ``rabbit`` and ``plugins`` need."""
    scripts = base / "home" / "sbin"
    scripts.mkdir(parents=True)
    for script in ("rabbitmq-server", "rabbitmq-env", "rabbitmq-defaults"):
        (scripts / script).symlink_to(home / "sbin" / script)
    linked = base / "home" / "plugins"
    linked.mkdir()
    for folder in _application_closure(home / "plugins", ["rabbit", *plugins]).values():
        (linked / folder.name).symlink_to(folder)


def _in_threads(work: Callable[[RefNode], None], nodes: Iterable[RefNode]) -> None:
    """Run ``work`` for every node at once; re-raise the first failure."""
    errors: list[BaseException] = []

    def run(node: RefNode) -> None:
        try:
            work(node)
        except BaseException as exc:  # re-raised below, in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(node,)) for node in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def start_cluster(size: int = 3, *, prefix: str | None = None,
                  plugins: Sequence[str] = DEFAULT_PLUGINS,
                  join: Literal["config", "ctl"] = "config", timeout: float = 120) -> ReferenceCluster:
    """Start ``size`` RabbitMQ nodes in one cluster (see the module's docstring).

    Args:
        size: how many nodes.
        prefix: the start of their names (``PREFIX-1@localhost``...; default
            ``embroker-ref-XXXX`` with four random hex digits, so that two runs never meet).
        plugins: what every node enables.
        join: how the others join the first: ``"config"`` (classic peer discovery at their
            first boot) or ``"ctl"`` (``rabbitmqctl stop_app; join_cluster; start_app``).
        timeout: seconds each node may take to listen, and the cluster to form.

    Returns:
        The running cluster; its ``timings`` say how long the start took.

    Raises:
        ReferenceClusterUnavailable: RabbitMQ is not installed, no cookie, or it did not start.
    """
    started = time.monotonic()
    home = find_rabbitmq_home()
    if home is None:
        raise ReferenceClusterUnavailable(f"no RabbitMQ installed under {DEBIAN_HOMES} "
                                          "(or $EMBROKER_RABBITMQ_HOME)")
    account = _Account.here()
    prefix = prefix or f"embroker-ref-{uuid.uuid4().hex[:4]}"
    ports = iter(_free_ports(4 * size))
    nodes = tuple(RefNode(f"{prefix}-{index}@localhost", next(ports), next(ports), next(ports),
                          next(ports)) for index in range(1, size + 1))
    base = Path(tempfile.mkdtemp(prefix="embroker-refcluster-"))  # mode 0700
    cluster = ReferenceCluster(nodes, base, rabbitmq_version(home), tuple(plugins), home, account)
    atexit.register(cluster.close)
    try:
        _prepare_home(base, home, plugins)
        (base / "rabbitmq-env.conf").write_text("# the cluster's own: /etc/rabbitmq's is not read\n")
        (base / "enabled_plugins").write_text(f"[{','.join(plugins)}].\n")
        seed = nodes[0].name if join == "config" else None
        for index, node in enumerate(nodes):
            folder = base / node.name.partition("@")[0]
            folder.mkdir()
            (folder / "rabbitmq.config").write_text(_node_config(node, seed if index else None))
        account.give(base)
        # The first node boots alone: a node that joins it while it is still booting can find
        # its tables before their feature flags' migrations and fail its schema check
        # (schema_integrity_check_failed, table_attributes_mismatch: seen on a loaded machine).
        cluster._launch(nodes[0])
        cluster.wait_listening(nodes[0].name, timeout)
        for node in nodes[1:]:
            cluster._launch(node)
        _in_threads(lambda node: cluster.wait_listening(node.name, timeout), nodes[1:])
        cluster.timings["boot"] = time.monotonic() - started
        if join == "ctl":
            def join_first(node: RefNode) -> None:
                cluster.ctl(node.name, "stop_app")
                cluster.ctl(node.name, "join_cluster", nodes[0].name)
                cluster.start_app(node.name)
            _in_threads(join_first, nodes[1:])
        _wait_formed(cluster, timeout)
        cluster.timings["join"] = time.monotonic() - started - cluster.timings["boot"]
        cluster.timings["total"] = time.monotonic() - started
    except BaseException:
        cluster.close()
        raise
    return cluster


def _wait_formed(cluster: ReferenceCluster, timeout: float) -> None:
    want = sorted(node.name for node in cluster.nodes)
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while True:
        with contextlib.suppress(OSError, urllib.error.URLError, ValueError, subprocess.SubprocessError):
            seen = cluster.running_nodes(0)
            if seen == want:
                return
        if time.monotonic() > deadline:
            raise ReferenceClusterUnavailable(f"the cluster did not form within {timeout} s: "
                                              f"running {seen}, wanted {want}")
        time.sleep(0.05)  # a real cluster forming: polled against a deadline


@contextlib.contextmanager
def reference_cluster(size: int = 3, **options: Any) -> Iterator[ReferenceCluster]:
    """:func:`start_cluster` as a context manager: closed (killed, its files removed) after."""
    cluster = start_cluster(size, **options)
    try:
        yield cluster
    finally:
        cluster.close()
