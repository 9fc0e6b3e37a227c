"""What RabbitMQ's own UI needs of the API before it starts, and what its node page shows:
``/api/extensions`` lists the page scripts of the plugins embroker serves, as RabbitMQ 3.10.8
lists them (without ``dispatcher.js`` the UI never leaves its login page); ``/api/nodes``
names the files the node started from: the rabbitmq.conf ``rabbitmq-server`` read and its log
file, ``<stderr>`` for ``embroker serve``, none for a broker served in process."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from embroker.server import Server

from ..control.test_ctl import _node_then_management, _shims_env
from .record import reference_base
from .test_ui_static import _www

REFERENCE = os.environ.get("EMBROKER_REFERENCE_URL")
GUEST = "Basic " + base64.b64encode(b"guest:guest").decode()
ROOT = Path(__file__).parents[2]


def _json(url: str) -> Any:
    request = urllib.request.Request(url, headers={"authorization": GUEST})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def _text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return str(answer.read().decode())


def test_extensions_are_the_management_routers_and_the_tracing_page(served: Server) -> None:
    """``rabbit_mgmt_wm_extensions``: each extension module's ``web_ui/0``, the management
    plugin's first; ``stream.js`` not, as on a RabbitMQ without rabbitmq_stream_management
    (embroker serves no ``/api/stream/*``)."""
    assert _json(served.management_url + "api/extensions") == [
        {"javascript": "dispatcher.js"}, {"javascript": "tracing.js"}]


@pytest.mark.skipif(not REFERENCE, reason="EMBROKER_REFERENCE_URL is not set")
def test_extensions_are_the_references(served: Server) -> None:
    """The reference with rabbitmq_management and rabbitmq_tracing on (``.ci/run`` enables
    them; rabbitmq_stream_management it does not) answers the same list."""
    assert REFERENCE is not None
    assert _json(reference_base(REFERENCE) + "/extensions") == _json(
        served.management_url + "api/extensions")


def test_a_broker_served_in_process_names_no_files_and_its_data_folder(
        served: Server) -> None:
    """No configuration file was read and nothing set up a log (RabbitMQ names what its
    handlers write to: none); the data folder is the one the disk monitor watches."""
    (node,) = _json(served.management_url + "api/nodes")
    assert (node["config_files"], node["log_files"], node["db_dir"]) == (
        [], [], served.data_dir)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_names_stderr_and_serves_the_ui_with_the_console_under_console(
        tmp_path: Path) -> None:
    """``embroker serve --management-ui DIR``: RabbitMQ's UI at ``/``, the console at
    ``/console/``, said on the first line; it logs to stderr, which ``/api/nodes`` names as
    RabbitMQ names a console handler's."""
    www = _www(tmp_path / "www")
    port = _free_port()
    node = subprocess.Popen(
        [sys.executable, "-m", "embroker", "serve", "--port", "0", "--management-port",
         str(port), "--management-ui", str(www), "--node", f"uiserve-{os.getpid()}@localhost"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert node.stdout is not None
        first = node.stdout.readline()
        assert f"management API and RabbitMQ's UI (console under /console/) on " \
               f"http://127.0.0.1:{port}/" in first
        base = f"http://127.0.0.1:{port}/"
        assert _text(base) == (www / "index.html").read_text()
        assert "console.js" in _text(base + "console/")
        (entry,) = _json(base + "api/nodes")
        assert (entry["config_files"], entry["log_files"], entry["db_dir"]) == (
            [], ["<stderr>"], str(tmp_path))
    finally:
        node.terminate()
        _out, err = node.communicate(timeout=30)
    assert "have no js/tracing.js, which /api/extensions announces" in err


def test_rabbitmq_server_names_its_conf_and_log_and_serves_the_ui_from_its_variable(
        tmp_path: Path) -> None:
    """``rabbitmq-server``: ``/api/nodes`` names the rabbitmq.conf it read (its absolute path,
    as ``rabbit_config:config_files/0``) and its log file; ``EMBROKER_MANAGEMENT_UI`` (embroker's
    variable: RabbitMQ has none) serves RabbitMQ's UI at ``/``. The management plugin enabled
    on the running node (``rabbitmq-plugins enable``) has them too."""
    www = _www(tmp_path / "www")
    port = _free_port()
    env = {**_shims_env(tmp_path, f"management.tcp.port = {port}\n", name="uinode"),
           "EMBROKER_MANAGEMENT_UI": str(www), "PYTHONPATH": str(ROOT)}
    with _node_then_management(env, tmp_path):
        base = f"http://127.0.0.1:{port}/"
        (entry,) = _json(base + "api/nodes")
        log = tmp_path / "log" / f"{env['RABBITMQ_NODENAME']}.log"
        assert (entry["config_files"], entry["log_files"]) == (
            [str(tmp_path / "rabbitmq.conf")], [str(log)])
        assert entry["db_dir"] == str(tmp_path)  # (the nearest folder that exists on the
        assert _text(base) == (www / "index.html").read_text()  # way to the data folder)
        assert "console.js" in _text(base + "console/")
