"""Node's amqplib (the JavaScript client most Node services use) over amqps, with its own TLS
options: ``amqps://`` and ``ca``, ``cert``, ``key``. amqplib is installed from npm into a
temporary folder for the session; without node and npm (or the network) the test skips."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import trustme

from embroker import Broker
from embroker.tls import TLSOptions

SCRIPT = Path(__file__).resolve().parent / "node" / "amqps.js"


@pytest.fixture(scope="module")
def amqplib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("needs node and npm")
    where = tmp_path_factory.mktemp("amqplib")
    done = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund",
                           "amqplib@0.10"], cwd=where, capture_output=True, text=True,
                          timeout=180, check=False)
    if done.returncode != 0:
        pytest.skip(f"npm could not install amqplib: {done.stderr.strip()[-200:]}")
    shutil.copy(SCRIPT, where / "amqps.js")
    return where


def test_amqplib_publishes_and_gets_over_amqps_with_a_client_certificate(
        amqplib: Path, tmp_path: Path) -> None:
    ca = trustme.CA()
    server_cert = ca.issue_cert("localhost", "127.0.0.1")
    client_cert = ca.issue_cert("client", common_name="node")
    for name, pem in (("ca.pem", ca.cert_pem), ("server.pem", server_cert.cert_chain_pems[0]),
                      ("server.key", server_cert.private_key_pem),
                      ("client.pem", client_cert.cert_chain_pems[0]),
                      ("client.key", client_cert.private_key_pem)):
        pem.write_to_path(str(tmp_path / name))
    settings = TLSOptions(certfile=str(tmp_path / "server.pem"),
                          keyfile=str(tmp_path / "server.key"),
                          cacertfile=str(tmp_path / "ca.pem"), verify="verify_peer",
                          fail_if_no_peer_cert=True)
    with Broker().serve(tls=settings, tls_port=0) as server:
        url = f"amqps://guest:guest@localhost:{server.tls_port}"
        done = subprocess.run(
            ["node", "amqps.js", url, str(tmp_path / "ca.pem"), str(tmp_path / "client.pem"),
             str(tmp_path / "client.key")],
            cwd=amqplib, capture_output=True, text=True, timeout=60, check=False)
        assert json.loads(done.stdout.strip().splitlines()[-1]) == {"body": "from node"}, \
            done.stdout + done.stderr
        assert server.errors == []
