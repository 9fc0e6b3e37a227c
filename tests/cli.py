"""``python -m embroker serve`` as a person runs it, for the tests of the command line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest


def _as_from_a_terminal() -> None:
    # A run of the tests started in the background (``pytest &`` from a script) ignores SIGINT,
    # and children inherit that: the command under test gets Ctrl-C's default back.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serve(*args: str, quiet: bool = True) -> subprocess.Popen[str]:
    """``embroker serve --port 0 --host 127.0.0.1 [--quiet] ARGS`` in a process of its own."""
    return subprocess.Popen(
        [sys.executable, "-m", "embroker", "serve", "--port", "0", "--host", "127.0.0.1",
         *(["--quiet"] if quiet else []), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_as_from_a_terminal)  # noqa: PLW1509 (no threads run it)


#: ``embroker serve`` with RabbitMQ's ports (the defaults 5672 and 15672) replaced by two the
#: test chose, and the plugin protocols' (STOMP's 61613, Web-STOMP's 15674, MQTT's 1883,
#: Web-MQTT's 15675) by ``argv[3]``, a JSON object by key (0: any free port): ``python -c``
#: with the program's constants changed, then its ``main``.
_WITH_DEFAULTS = ("import json, sys; import embroker.__main__ as cli; "
                  "cli._AMQP_PORT, cli._MANAGEMENT_PORT = int(sys.argv[1]), int(sys.argv[2]); "
                  "cli._DEFAULT_PORTS.update(json.loads(sys.argv[3])); "
                  "sys.exit(cli.main(['serve', *sys.argv[4:]]))")


def serve_with_defaults(amqp: int, management: int, *args: str, stomp: int = 0,
                        web_stomp: int = 0, mqtt: int = 0,
                        web_mqtt: int = 0) -> subprocess.Popen[str]:
    """``embroker serve --host 127.0.0.1 --quiet ARGS`` whose default ports are ``amqp``,
    ``management``, ``stomp``, ``web_stomp``, ``mqtt`` and ``web_mqtt`` instead of 5672,
    15672, 61613, 15674, 1883 and 15675 (which a test never binds: a RabbitMQ, or a mosquitto
    on 1883, may hold them, and the tests must not depend on it)."""
    defaults = {"stomp": stomp, "web_stomp": web_stomp, "mqtt": mqtt, "web_mqtt": web_mqtt}
    return subprocess.Popen(
        [sys.executable, "-c", _WITH_DEFAULTS, str(amqp), str(management),
         json.dumps(defaults), "--host", "127.0.0.1", "--quiet", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_as_from_a_terminal)  # noqa: PLW1509 (no threads run it)


def interrupt(proc: subprocess.Popen[str], timeout: float = 10) -> tuple[str, str]:
    """Ctrl-C: SIGINT, then what it printed. A process still running after ``timeout`` is
    killed (no listener outlives the test) and the test fails."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"embroker serve did not stop on SIGINT within {timeout} s:\n{out}{err}")
