"""The node's pid file (RABBITMQ_PID_FILE): written by ``rabbitmq-server`` as RabbitMQ's
prelaunch writes it (``rabbit_prelaunch:write_pid_file/1``, v3.10.8: the folder made, the pid
without a newline; a failure is one warning and the node goes on), removed when the node stops
(``remove_pid_file/1``, unless RABBITMQ_KEEP_PID_FILE_ON_EXIT), so that ``rabbitmqctl wait
PIDFILE`` and ``rabbitmqctl stop PIDFILE`` work as with RabbitMQ. Checked live on a node of its
own: the file holds ``3353`` (no newline) while the node runs and is gone after
``rabbitmqctl stop``, which then prints ``process 3353 (take from pid file ...) is no longer
running``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from embroker.control._registry import lookup
from embroker.control._server_cli import remove_pid_file, write_pid_file

from .test_ctl import _shims_env, _tool


def test_the_pid_is_written_with_its_folders_and_no_newline(tmp_path: Path) -> None:
    path = tmp_path / "run" / "rabbitmq" / "node.pid"
    assert write_pid_file(path) is None
    assert path.read_text() == str(os.getpid())
    remove_pid_file(path)
    assert not path.exists()
    assert (tmp_path / "run" / "rabbitmq").is_dir()  # (RabbitMQ leaves its folder too)


def test_a_pid_file_that_cannot_be_written_is_one_line_as_rabbitmqs_warning(
        tmp_path: Path) -> None:
    """filelib:ensure_dir/1 and file:write_file/2 failing: RabbitMQ's warnings, with
    file:format_error/1's reason."""
    (tmp_path / "a-file").write_text("")
    assert write_pid_file(tmp_path / "a-file" / "node.pid") == (
        f'Failed to create PID file "{tmp_path}/a-file/node.pid" directory: not a directory')
    (tmp_path / "a-folder.pid").mkdir()
    assert write_pid_file(tmp_path / "a-folder.pid") == (
        f'Failed to write PID file "{tmp_path}/a-folder.pid": illegal operation on a directory')


@pytest.mark.parametrize("plant", ["symlink", "hard link"])
def test_a_planted_link_is_replaced_never_written_through(tmp_path: Path, plant: str) -> None:
    """A pid file in a shared folder is not written through a link someone planted there (it
    would overwrite the link's target): a new file takes the link's place (as the shims and
    the registry's files, embroker._hostfiles.write_file), and the target keeps its bytes."""
    target = tmp_path / "victim"
    target.write_text("precious\n")
    link = tmp_path / "node.pid"
    if plant == "symlink":
        link.symlink_to(target)
    else:
        link.hardlink_to(target)
    assert write_pid_file(link) is None
    assert target.read_text() == "precious\n"
    assert not link.is_symlink()
    assert link.read_text() == str(os.getpid())
    remove_pid_file(link)
    assert not link.exists()
    assert target.read_text() == "precious\n"


def test_a_running_processs_pid_file_is_left_alone(tmp_path: Path) -> None:
    """Another process's pid file (the machine's RabbitMQ node of that name, say, whose file
    is MNESIA_BASE/NODENAME.pid too) is neither overwritten nor removed; a stale one (its
    process gone) is replaced."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path = tmp_path / "node.pid"
        path.write_text(str(other.pid))
        assert write_pid_file(path) == (
            f'Failed to write PID file "{path}": it holds the pid of process {other.pid}, '
            "which runs")
        remove_pid_file(path)
        assert path.read_text() == str(other.pid)
    finally:
        other.kill()
        other.wait()
    assert write_pid_file(path) is None
    assert path.read_text() == str(os.getpid())


def test_wait_and_stop_with_the_pid_file_of_a_node_rabbitmq_server_started(
        tmp_path: Path) -> None:
    """A CI job's steps (issue 44: the pid file was never written, so ``rabbitmqctl wait
    PIDFILE`` timed out with exit 75): rabbitmq-server -detached writes RABBITMQ_PID_FILE;
    rabbitmqctl wait reads it and waits for the node; rabbitmqctl stop PIDFILE stops the node
    and waits for that process; the file is gone after."""
    env = _shims_env(tmp_path, name="pidfile")
    pid_file = tmp_path / "run" / "node.pid"
    env["RABBITMQ_PID_FILE"] = str(pid_file)
    assert _tool(env, "rabbitmq-server", "-detached").returncode == 0
    try:
        waited = _tool(env, "rabbitmqctl", "wait", str(pid_file), "--timeout", "20")
        assert waited.returncode == 0, waited.stderr
        pid = pid_file.read_text()
        assert f"pid is {pid}\n" in waited.stdout
        entry = lookup(env["RABBITMQ_NODENAME"])
        assert entry is not None
        assert entry.pid == int(pid)
    finally:
        stopped = _tool(env, "rabbitmqctl", "stop", str(pid_file))
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == (
        f"Stopping and halting node {env['RABBITMQ_NODENAME']} (will monitor pid file "
        f"{pid_file}) ...\nprocess {pid} (take from pid file {pid_file}) is no longer running\n")
    assert not pid_file.exists()


@pytest.mark.parametrize("keep", ["", "true"])
def test_the_default_pid_file_is_mnesia_base_nodename_pid(tmp_path: Path, keep: str) -> None:
    """Without RABBITMQ_PID_FILE: $RABBITMQ_MNESIA_BASE/$NODENAME.pid (rabbit_env); a node
    stopped by a signal removes it too, unless RABBITMQ_KEEP_PID_FILE_ON_EXIT."""
    env = {**_shims_env(tmp_path, name="pidfile-default"),
           "RABBITMQ_KEEP_PID_FILE_ON_EXIT": keep}
    node = subprocess.Popen(["rabbitmq-server"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert node.stdout is not None
    while "completed" not in node.stdout.readline():
        assert node.poll() is None
    pid_file = tmp_path / "data" / f"{env['RABBITMQ_NODENAME']}.pid"
    assert pid_file.read_text() == str(node.pid)
    node.terminate()
    _out, err = node.communicate(timeout=30)
    assert node.returncode == 0, err
    assert pid_file.exists() == bool(keep)
