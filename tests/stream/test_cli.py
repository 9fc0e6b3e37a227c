"""``embroker serve --stream-port 0``: the stream listener from the command line."""

from __future__ import annotations

import re

from tests.cli import interrupt, serve
from tests.stream.interop import SCRIPTS, run


def test_cli_serves_the_stream_protocol() -> None:
    proc = serve("--no-management", "--stream-port", "0", quiet=False)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        # (the URL names the host the node advertises, as RabbitMQ's: its clients stay on it)
        match = re.search(r"the stream protocol on rabbitmq-stream://guest:guest@localhost:"
                          r"(\d+)/%2f", line)
        assert match is not None, line
        transcript = run(SCRIPTS["deduplication"], "localhost", int(match.group(1)))
        assert transcript[0] == ("sequence", 4)
    finally:
        _out, err = interrupt(proc)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
