"""The stream protocol under resource alarms, as rabbit_stream_reader (v3.10.8) takes them:
the disk alarm stops a connection being read (its heartbeat monitor paused) and refuses new
publishers with PRECONDITION_FAILED; the memory alarm does nothing to streams. The refusal is
checked against a RabbitMQ node of its own (the shared reference is never alarmed)."""

from __future__ import annotations

import os
import uuid

import pytest

from embroker import Broker, ManualClock
from embroker.stream import State, StreamConnection
from embroker.stream._frames import Code, Fields, Key, Writer

from ..server.private_node import available, free_port, private_node
from .test_raw_frames import RawClient

HUGE = 10**18  # (a disk free limit no disk has: the disk alarm at once)


def _declare_publisher(c: RawClient, stream: str, publisher: int) -> int:
    key, body = c.exchange(c.request(Key.DECLARE_PUBLISHER).uint8(publisher).string("")
                           .string(stream).frame())
    assert key == Key.DECLARE_PUBLISHER | 0x8000
    f = Fields(body)
    f.uint32()
    return f.uint16()


def _stream(c: RawClient) -> str:
    name = f"embroker-alarm-{uuid.uuid4().hex[:8]}"
    c.open()
    c.exchange(c.request(Key.CREATE).string(name).properties({}).frame())
    return name


def test_the_disk_alarm_refuses_publishers_and_holds_the_connection_until_it_clears() -> None:
    broker = Broker()
    with broker.serve(stream_port=0) as server:
        assert server.stream_port is not None
        c = RawClient("127.0.0.1", server.stream_port)
        stream = _stream(c)
        server.set_disk_free_limit(HUGE)
        # (as RabbitMQ's reader, armed for one more packet when the alarm came: that one is
        # read, and answered; what comes after it waits for the alarm's end)
        assert _declare_publisher(c, stream, 1) == Code.PRECONDITION_FAILED
        c.sock.sendall(c.request(Key.DECLARE_PUBLISHER).uint8(2).string("").string(stream)
                       .frame())
        server.set_disk_free_limit(50_000_000)
        key, body = c.next()
        assert key == Key.DECLARE_PUBLISHER | 0x8000
        assert Fields(body[4:]).uint16() == Code.OK
        c.close()
    assert server.errors == []


def test_the_memory_alarm_does_nothing_to_streams() -> None:
    broker = Broker()
    with broker.serve(stream_port=0) as server:
        assert server.stream_port is not None
        c = RawClient("127.0.0.1", server.stream_port)
        stream = _stream(c)
        server.set_vm_memory_high_watermark(0)
        assert _declare_publisher(c, stream, 1) == Code.OK
        server.set_vm_memory_high_watermark(0.4)
        c.close()
    assert server.errors == []


def test_a_connection_held_by_the_disk_alarm_misses_no_heartbeat() -> None:
    """Read once more after the alarm, then held; rabbit_heartbeat:pause_monitor: what is not
    read cannot count as missed."""
    clock = ManualClock()
    broker = Broker(clock=clock)
    conn = StreamConnection(broker)
    conn.state = State.OPENED
    conn.heartbeat = 60
    assert not conn.blocked
    conn.disk_alarm = True
    assert not conn.blocked  # (one more read: the one its socket was armed for)
    conn.receive_data(Writer(Key.HEARTBEAT).frame())
    assert conn.blocked
    clock.advance(10 * 60)
    conn.tick()
    assert not conn.should_close
    conn.disk_alarm = False
    assert not conn.blocked


@pytest.mark.skipif(not os.environ.get("EMBROKER_REFERENCE_URL") or not available(),
                    reason="needs RabbitMQ installed here (EMBROKER_REFERENCE_URL)")
def test_rabbitmq_refuses_a_publisher_during_the_disk_alarm_as_embroker_does() -> None:
    port = free_port()
    with private_node(f"stream.listeners.tcp.default = {port}\n",
                      plugins=["rabbitmq_stream"], ready_port=port) as node:
        assert node is not None, "the private node did not start"
        c = RawClient("127.0.0.1", port)
        stream = _stream(c)
        assert node.ctl("set_disk_free_limit", "1000000000GB").returncode == 0
        codes = [_declare_publisher(c, stream, 1)]
        assert node.ctl("set_disk_free_limit", "50MB").returncode == 0
        codes.append(_declare_publisher(c, stream, 2))
        c.close()
    assert codes == [Code.PRECONDITION_FAILED, Code.OK]
