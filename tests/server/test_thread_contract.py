"""The thread-safety contract (issue #20, item 7; docs/threads.md): one public way to hold the
broker still, reads that are snapshots taken under it, the listener's own state changed only by
its loop, and bounded listener errors that keep no frames alive."""

from __future__ import annotations

import gc
import re
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pika
import pytest

from embroker import Broker
from embroker._sniff import SniffingConnection
from embroker.faults import Faults
from embroker.server import Server
from embroker.testing import check_server, leaks, wait_until

ROOT = Path(__file__).resolve().parents[2]

#: How long a reader is given to get past a broker held by the test: long enough for a thread
#: that does not wait for the lock to finish its read (it takes well under a millisecond).
WINDOW = 0.3


def _connect(server: Server, name: str | None = None) -> pika.BlockingConnection:
    params = pika.URLParameters(server.url)
    if name is not None:
        params.client_properties = {"connection_name": name}
    return pika.BlockingConnection(params)


# -- one public way to hold the broker still --------------------------------------------------------

def test_no_code_outside_the_model_takes_the_private_lock() -> None:
    """Everything outside ``embroker/model/`` holds the broker through ``broker.locked()``."""
    private = re.compile(r"\._lock\b")
    offenders = []
    for folder in (ROOT / "embroker", ROOT / "pytest_plugin"):
        for path in sorted(folder.rglob("*.py")):
            if (ROOT / "embroker" / "model") in path.parents:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if private.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_broker_locked_is_reentrant_and_holds_every_other_thread() -> None:
    broker = Broker()
    ch = broker.connect().channel()
    ch.queue_declare("q")
    done = threading.Event()

    def publish() -> None:
        broker.connect().channel().basic_publish("", "q", b"from another thread")
        done.set()

    with broker.locked(), broker.locked():  # reentrant
        thread = threading.Thread(target=publish)
        thread.start()
        assert not done.wait(WINDOW)  # the other thread waits for the broker
        assert broker.queues["q"].message_count == 0
    thread.join(5)
    assert done.is_set()
    assert broker.queues["q"].message_count == 1


# -- documented reads are snapshots taken under the lock --------------------------------------------

def _readers(broker: Broker, server: Server) -> dict[str, Callable[[], object]]:
    decision = broker.trace[-1]
    message = broker.queues["q"].messages[0]
    return {
        "trace[-1]": lambda: broker.trace[-1],
        "trace[-2:]": lambda: broker.trace[-2:],
        "list(trace)": lambda: list(broker.trace),
        "reversed(trace)": lambda: list(reversed(broker.trace)),
        "decision.history()": decision.history,
        "decision.fate()": decision.fate,
        "decision.explain()": decision.explain,
        "decision.queues": lambda: decision.queues,
        "decision.outcome": lambda: decision.outcome,
        "repr(decision)": lambda: repr(decision),
        "broker.history(message)": lambda: broker.history(message),
        "broker.queues": lambda: broker.queues,
        "queue.messages": lambda: broker.queues["q"].messages,
        "server.connections": lambda: server.connections,
        "list(server.errors)": lambda: list(server.errors),
    }


def test_documented_reads_wait_while_a_test_holds_the_broker(broker: Broker,
                                                              server: Server) -> None:
    """Each read is taken under the broker's lock, so it cannot see the model half-way through a
    change: while the test holds ``broker.locked()``, a reader in another thread waits."""
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"one")
    ch.basic_publish("", "q", b"two")
    connection = _connect(server, "reader-test")
    results: dict[str, object] = {}
    errors: dict[str, BaseException] = {}

    def run(name: str, read: Callable[[], object]) -> None:
        try:
            results[name] = read()
        except BaseException as exc:  # reported below
            errors[name] = exc

    readers = _readers(broker, server)
    with broker.locked():
        threads = {name: threading.Thread(target=run, args=(name, read))
                   for name, read in readers.items()}
        for thread in threads.values():
            thread.start()
        threads["trace[-1]"].join(WINDOW)
        not_waiting = sorted(name for name, thread in threads.items() if not thread.is_alive())
    for thread in threads.values():
        thread.join(5)
    connection.close()
    assert not_waiting == []
    assert errors == {}
    assert set(results) == set(readers)


def test_history_waits_for_an_event_list_being_truncated(broker: Broker) -> None:
    """A message keeps 32 events: past that the oldest half goes and a ``truncated`` event takes
    its place, in two steps. A reader in another thread never sees the first step alone."""
    ch = broker.connect().channel()
    ch.queue_declare("q")
    ch.basic_publish("", "q", b"m")
    decision = broker.trace[-1]
    for _ in range(31):
        ch.basic_nack(ch.basic_get("q").delivery_tag, requeue=True)
    seen: list[list[str]] = []
    with broker.locked():
        events = decision.message.history
        assert events is not None
        del events[:16]  # the model half-way through the truncation, under the lock
        reader = threading.Thread(target=lambda: seen.append([e.kind for e in decision.history()]))
        reader.start()
        reader.join(WINDOW)
        events.insert(0, ("truncated", None, 0.0, 16))
    reader.join(5)
    assert seen
    assert seen[0][0] == "truncated"


# -- the listener's own state ---------------------------------------------------------------------

class _Recording(dict[int, Any]):
    """The listener's table of clients, recording who changes it and whether under the lock."""

    def __init__(self, server: Server) -> None:
        super().__init__()
        self.server = server
        self.changes: list[tuple[str, bool, bool]] = []

    def _note(self, what: str) -> None:
        lock = self.server.broker._lock  # the test looks inside: is it held by this thread?
        self.changes.append((what, threading.get_ident() == self.server._loop_ident,
                             lock._is_owned()))  # type: ignore[attr-defined]

    def __setitem__(self, key: int, value: Any) -> None:
        self._note("add")
        super().__setitem__(key, value)

    def pop(self, key: int, default: Any = None) -> Any:
        self._note("remove")
        return super().pop(key, default)

    def __delitem__(self, key: int) -> None:
        self._note("remove")
        super().__delitem__(key)


class _RecordingSet(set[Any]):
    """The listener's set of clients with output, recording which thread changes it."""

    def __init__(self, server: Server) -> None:
        super().__init__()
        self.server = server
        self.threads: list[tuple[str, bool]] = []

    def _note(self, what: str) -> None:
        self.threads.append((what, threading.get_ident() == self.server._loop_ident))

    def add(self, item: Any) -> None:
        self._note("add")
        super().add(item)

    def discard(self, item: Any) -> None:
        self._note("discard")
        super().discard(item)

    def pop(self) -> Any:
        self._note("pop")
        return super().pop()


@pytest.fixture
def unstarted(broker: Broker) -> Iterator[Server]:
    server = Server(broker)
    yield server
    server.stop()


def test_clients_change_only_on_the_loop_thread_under_the_lock(
        broker: Broker, unstarted: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    server = unstarted
    recording = server._clients = _Recording(server)
    server.start()
    first = _connect(server, "first")
    second = _connect(server, "second")
    first.close()
    Faults(broker, server).kill_connection("second")
    wait_until(lambda: not server.connections)
    third = _connect(server, "third")

    def broken(self: SniffingConnection, *args: object) -> None:
        raise RuntimeError("injected bug")

    # A bug met on the test's thread (telling the client it is blocked, then even closing it
    # with 541) drops the connection: on the loop's thread all the same.
    monkeypatch.setattr(SniffingConnection, "publishers_blocked", broken)
    monkeypatch.setattr(SniffingConnection, "internal_error", broken)
    broker.block_publishers()
    wait_until(lambda: not server.connections)
    monkeypatch.undo()
    broker.unblock_publishers()
    with pytest.raises(pika.exceptions.AMQPConnectionError):
        third.channel()
    assert [str(e) for e in server.errors] == ["injected bug", "injected bug"]
    server.errors.clear()
    assert [what for what, _loop, _locked in recording.changes] == ["add", "add", "remove",
                                                                     "remove", "add", "remove"]
    assert [(loop, locked) for _what, loop, locked in recording.changes] == [(True, True)] * 6
    del second


def test_output_set_changes_only_on_the_loop_thread(broker: Broker, unstarted: Server) -> None:
    server = unstarted
    recording = server._dirty = _RecordingSet(server)
    server.start()
    got: list[bytes] = []
    connection = _connect(server, "consumer")
    channel = connection.channel()
    channel.queue_declare("q")
    channel.basic_consume("q", lambda _ch, _m, _p, body: got.append(body), auto_ack=True)
    ch = broker.connect().channel()
    for n in range(5):  # deliveries caused by the test's thread
        ch.basic_publish("", "q", str(n).encode())
    broker.block_publishers()  # so are connection.blocked...
    broker.unblock_publishers()
    wait_until(lambda: connection.process_data_events(0.01) or len(got) == 5)
    connection.close()
    assert recording.threads
    assert [what for what, loop in recording.threads if not loop] == []


# -- listener errors: bounded, and holding no frames ------------------------------------------------

def _timer_bugs(broker: Broker, server: Server, count: int,
                bug: Callable[[int], None] | None = None) -> None:
    def fail(n: int) -> None:
        raise RuntimeError(f"bug {n}")

    with broker.locked():
        now = broker.clock.monotonic()
        for n in range(count):
            broker.clock.call_at(now, lambda n=n: (bug or fail)(n))  # type: ignore[misc]
    server._wake()
    wait_until(lambda: server.errors.total == count)


def test_errors_keep_a_count_and_the_last_twenty(broker: Broker, server: Server) -> None:
    _timer_bugs(broker, server, 50)
    assert server.errors.total == 50
    assert len(server.errors) == 20
    assert server.errors.dropped == 30
    assert [str(e) for e in server.errors] == [f"bug {n}" for n in range(30, 50)]
    assert str(server.errors[-1]) == "bug 49"
    assert "30 earlier" in repr(server.errors)
    server.errors.clear()
    assert server.errors == []
    assert server.errors.total == 0


class _Marker:
    """Something a failing frame held."""


def test_errors_keep_no_frames_alive(broker: Broker, server: Server) -> None:
    markers: list[weakref.ref[_Marker]] = []

    def bug(n: int) -> None:
        held = _Marker()  # a local of the frame that raises
        markers.append(weakref.ref(held))
        raise ValueError(f"failed holding {type(held).__name__} {n}")

    _timer_bugs(broker, server, 1, bug)
    (error,) = server.errors
    gc.collect()
    assert markers[0]() is None
    assert error.__traceback__ is None
    # What the traceback said is kept as text: the error shows where it happened.
    assert "in bug" in server.errors.traceback(0)
    assert "raise ValueError" in server.errors.traceback(0)
    server.errors.clear()


def test_strict_mode_and_check_server_say_how_many_errors_were_dropped(
        broker: Broker, server: Server) -> None:
    _timer_bugs(broker, server, 25)
    problems = [p for p in leaks(broker) if "listener error" in p]
    assert problems[0] == ("5 earlier listener error(s) not kept (25 in all; the last 20 "
                           "follow)")
    assert problems[1:] == [f"listener error: RuntimeError: bug {n}" for n in range(5, 25)]
    with pytest.raises(AssertionError, match=r"met 25 unexpected error\(s\) \(the last 20 "
                                             r"kept\)") as raised:
        check_server(server)
    assert str(raised.value.__cause__) == "bug 5"
    server.errors.clear()
