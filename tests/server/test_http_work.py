"""How the listener steps the answers the management API works out in steps: a few at once,
each in turn, within a budget a turn; the others wait in line, costing nothing."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from embroker import Broker
from embroker import _listener_loop as loop_module
from embroker._listener import _Client
from embroker.server import Server


class _Work:
    """An HTTP connection's stand-in whose answer takes ``steps`` steps."""

    def __init__(self, name: str, steps: int, log: list[str]) -> None:
        self.name, self.left, self.log = name, steps, log
        self.has_output = self.should_close = False

    @property
    def has_work(self) -> bool:
        return self.left > 0

    def work(self) -> None:
        self.log.append(self.name)
        self.left -= 1


@pytest.fixture
def listener() -> Any:
    server = Server(Broker())
    yield server
    server.stop()


def _served(sock: socket.socket, name: str, work: _Work) -> _Client:
    """A listener's client of ``sock`` whose connection is ``work``."""
    return _Client(sock, name, lambda _client: work)


def test_a_few_answers_are_worked_out_at_once_each_in_turn_the_others_wait(
        listener: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_module, "_WORK_PER_TURN", 1.0)  # (every active one a turn)
    log: list[str] = []
    sockets = []
    for name in "abcdef":
        sock, other = socket.socketpair()
        sockets += [sock, other]
        client = _served(sock, name, _Work(name, 2, log))
        listener._working.append(client)
    try:
        listener._work()
        assert log == ["a", "b", "c", "d"]  # _ACTIVE_WORK of them; e and f wait
        listener._work()
        assert log[4:] == ["a", "b", "c", "d"]
        listener._work()  # a to d are done: e and f begin
        assert log[8:] == ["e", "f"]
        assert [c.peer for c in listener._working] == ["e", "f"]
    finally:
        for sock in sockets:
            sock.close()


def test_the_budget_of_a_turn_leaves_the_rest_first_in_line(
        listener: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_module, "_WORK_PER_TURN", -1.0)  # (one step a turn)
    log: list[str] = []
    sockets = []
    for name in "abc":
        sock, other = socket.socketpair()
        sockets += [sock, other]
        listener._working.append(_served(sock, name, _Work(name, 5, log)))
    try:
        for _ in range(3):
            listener._work()
        assert log == ["a", "b", "c"]  # each in turn, one a turn
    finally:
        for sock in sockets:
            sock.close()
