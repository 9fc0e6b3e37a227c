"""A real Spark standalone cluster on this machine, for the tests and the benchmark.

:class:`StandaloneCluster` starts Spark's own master and workers from the installed pyspark
(``bin/spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), bound to
127.0.0.1 on free ports, in an environment without the caller's ``PYTHONPATH`` or virtual
environment, and stops them (the processes it started, by their ids).

:func:`executor_python` makes the interpreter the executors run: a new virtual environment
that has pyspark's worker dependencies (pyarrow, pandas and theirs, linked from this
environment) and not embroker, which reaches the executors only as the job ships it.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path, PurePath
from types import TracebackType

#: What pyspark's Python workers import for Arrow functions, with their dependencies.
WORKER_DISTRIBUTIONS = ("pyarrow", "pandas", "numpy", "python-dateutil", "pytz", "tzdata", "six")


def executor_python(folder: Path) -> Path:
    """A ``python3`` with pyspark's worker dependencies and without embroker (a virtual
    environment whose ``.pth`` names a folder of links to just those distributions)."""
    venv = folder / "executor-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    deps = folder / "executor-deps"
    deps.mkdir(parents=True, exist_ok=True)
    for name in WORKER_DISTRIBUTIONS:
        dist = importlib.metadata.distribution(name)
        tops = {PurePath(f).parts[0] for f in dist.files or ()}
        for top in sorted(tops):
            if top.endswith(".dist-info") or top in ("..", "__pycache__", "bin"):
                continue
            link = deps / top
            if not link.exists():
                link.symlink_to(Path(str(dist.locate_file(top))).resolve())
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "executor-deps.pth").write_text(f"{deps}\n")
    return venv / "bin" / "python3"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def clean_environment() -> dict[str, str]:
    """This process's environment without what would let a worker's Python find this
    project or this virtual environment."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
                        "SPARK_HOME", "PYTHONHOME")}
    venv_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    return env


class StandaloneCluster:
    """Spark's standalone master and ``workers`` workers (``cores`` and ``memory`` each); ``path``
    goes first on their ``PATH``; ``java_options`` for their JVMs."""

    def __init__(self, folder: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g",
                 path: tuple[Path, ...] = (), java_options: str = "") -> None:
        import pyspark

        self.folder = folder
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.spark_home = Path(pyspark.__file__).parent
        self.port = free_port()
        self.ui_port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen[bytes]] = []
        self.env = clean_environment()
        self.env.update(SPARK_HOME=str(self.spark_home), SPARK_LOCAL_IP="127.0.0.1",
                        SPARK_NO_DAEMONIZE="1")
        # Folders put first on the PATH of the workers and executors (where Spark's default
        # python3 is looked for).
        self.env["PATH"] = os.pathsep.join([*map(str, path), self.env["PATH"]])
        if java_options:  # the master's and workers' JVMs (executors take spark.executor.*)
            self.env["SPARK_DAEMON_JAVA_OPTS"] = java_options

    def _start(self, name: str, *args: str) -> None:
        log = (self.folder / f"{name}.log").open("wb")
        self.processes.append(subprocess.Popen(
            [str(self.spark_home / "bin" / "spark-class"), *args], stdout=log,
            stderr=subprocess.STDOUT, env=self.env, cwd=self.folder, start_new_session=True))

    def state(self) -> dict[str, object]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as answer:
            state: dict[str, object] = json.loads(answer.read())
            return state

    def start(self, timeout: float = 180) -> StandaloneCluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.ui_port))
        for n in range(self.workers):
            work = self.folder / f"worker-{n}"
            work.mkdir(exist_ok=True)
            self._start(f"worker-{n}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--port", str(free_port()), "--webui-port", str(free_port()),
                        "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work),
                        self.url)
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError, ValueError):
                if self.state().get("aliveworkers") == self.workers:
                    return self
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                self.stop()
                logs = "\n".join((self.folder / f).read_text(errors="replace")[-2000:]
                                 for f in os.listdir(self.folder) if f.endswith(".log"))
                raise RuntimeError(f"the standalone cluster did not start:\n{logs}")
            time.sleep(0.5)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)  # the process group it leads
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self.processes.clear()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
