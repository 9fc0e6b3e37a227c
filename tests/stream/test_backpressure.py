"""A stream connection's output is bounded (issue #34): its subscriptions stop being sent chunks
while too much of its output is unwritten, as RabbitMQ's reader is paced by its socket
(``sendfile``), and go on, in turns, once it is written; nothing is lost or sent twice.

Sans-IO: a driver plays the listener, which keeps what the socket did not take and says how
much after each write (``StreamConnection.written``); its "socket" takes nothing until the
test lets it.
"""

from __future__ import annotations

from embroker import Broker
from embroker.stream import (
    MAX_UNREAD,
    MAX_UNSENT,
    RESUME_UNSENT,
    FrameReader,
    Key,
    StreamConnection,
    Writer,
)

CHUNK_BODY = 64 * 1024
CHUNKS = 64  # (a 4 MiB stream)
SUBSCRIPTIONS = 20


class Driver:
    """What the listener does for one stream client, with a socket that takes nothing until
    :meth:`drain`."""

    def __init__(self, broker: Broker) -> None:
        self.conn = StreamConnection(broker, peer="test")
        self.conn.on_output = self.on_output
        self.held = bytearray()  # (the listener's wbuf)
        self.dirty = False
        self.reader = FrameReader(0)
        self.correlation = 0
        #: Each subscription's Deliver frames, by the first offset of their chunk.
        self.delivered: dict[int, list[int]] = {}
        self.most_held = 0

    def on_output(self) -> None:
        self.dirty = True

    def write(self) -> None:
        """The listener's write: take the output, keep what the socket does not take (here:
        all of it), say how much; again while the connection says it has more."""
        self.dirty = True
        while self.dirty:
            self.dirty = False
            self.held += self.conn.data_to_send()
            self.conn.written(len(self.held))
            self.most_held = max(self.most_held, len(self.held))

    def send(self, frame: bytes) -> None:
        self.conn.receive_data(frame)
        self.write()

    def drain(self, limit: int | None = None) -> None:
        """The client reads ``limit`` bytes (all by default); they are parsed."""
        taken = bytes(self.held[:limit])
        del self.held[:len(taken)]
        self.reader.feed(taken)
        while (frame := self.reader.next_frame()) is not None:
            key, _version, body = frame
            if key == Key.DELIVER:
                self.delivered.setdefault(body[0], []).append(
                    int.from_bytes(body[1 + 24:1 + 32], "big"))
        self.write()

    def request(self, key: int) -> Writer:
        self.correlation += 1
        return Writer(key).uint32(self.correlation)

    def open(self) -> None:
        self.send(self.request(Key.PEER_PROPERTIES).properties({}).frame())
        self.send(self.request(Key.SASL_HANDSHAKE).frame())
        self.send(self.request(Key.SASL_AUTHENTICATE).string("PLAIN")
                  .bytes_(b"\0guest\0guest").frame())
        self.send(Writer(Key.TUNE).uint32(1_048_576).uint32(0).frame())
        self.send(self.request(Key.OPEN).string("/").frame())
        self.drain()

    def subscribe(self, subscription: int, credit: int) -> None:
        self.send(self.request(Key.SUBSCRIBE).uint8(subscription).string("s").uint16(1)
                  .uint16(credit).properties({}).frame())


def stream_of(broker: Broker, chunks: int) -> None:
    """Stream ``s`` with ``chunks`` chunks of 64 KiB (each publish is one)."""
    with broker.connect() as client:
        channel = client.channel()
        channel.queue_declare("s", durable=True, arguments={"x-queue-type": "stream"})
        for i in range(chunks):
            channel.basic_publish("", "s", bytes([i % 256]) * CHUNK_BODY)


#: The largest Deliver frame of such a chunk (a chunk goes whole: the bound is passed by one).
FRAME = 4 + 4 + 1 + 48 + 4 + CHUNK_BODY + 200


def _subscribed_to_all() -> tuple[Broker, Driver]:
    """A stream of CHUNKS chunks and one connection with SUBSCRIPTIONS subscriptions from its
    first offset, credit for all of it, that has written nothing yet."""
    broker = Broker()
    stream_of(broker, CHUNKS)
    driver = Driver(broker)
    driver.open()
    for subscription in range(SUBSCRIPTIONS):
        driver.subscribe(subscription, 1000)
    return broker, driver


def test_subscriptions_stop_while_the_output_is_unwritten_and_go_on_in_order_once_written(
) -> None:
    """One connection, 20 subscriptions from the first offset, credit for all 64 chunks each,
    a client that reads nothing: what is held stays within the bound (instead of 20 x 4 MiB).
    Then it reads: every subscription gets every chunk, in order, once; a publish made while
    they were paused comes after."""
    broker, driver = _subscribed_to_all()
    with broker.connect() as other:
        other.channel().basic_publish("", "s", b"late")  # (offset 64, while they are paused)
    assert driver.most_held <= MAX_UNSENT + FRAME
    assert driver.conn.unsent == len(driver.held)
    assert not driver.conn.blocked
    while driver.held:
        driver.drain()
        assert len(driver.held) <= MAX_UNSENT + FRAME
    assert driver.delivered == {s: list(range(CHUNKS + 1)) for s in range(SUBSCRIPTIONS)}
    assert driver.most_held <= MAX_UNSENT + FRAME


def test_they_go_on_in_turns() -> None:
    """Each time the output is written, the chunks go to the subscriptions from the next one
    on: none is sent its whole stream while another has been sent nothing."""
    _broker, driver = _subscribed_to_all()
    while driver.held:
        driver.drain()
        counts = [len(driver.delivered.get(s, [])) for s in range(SUBSCRIPTIONS)]
        assert max(counts) < CHUNKS or min(counts) > 0, counts
    assert all(len(driver.delivered[s]) == CHUNKS for s in range(SUBSCRIPTIONS))


def test_a_partial_write_resumes_them_once_little_is_left() -> None:
    """The readers stay paused while more than RESUME_UNSENT is unwritten, and their credit is
    kept (a Credit adds to it); once little enough is left they go on."""
    broker = Broker()
    stream_of(broker, CHUNKS)
    driver = Driver(broker)
    driver.open()
    driver.subscribe(1, 10)
    driver.subscribe(2, 60)
    before = len(driver.held)
    assert before >= MAX_UNSENT
    driver.send(Writer(Key.CREDIT).uint8(1).uint16(100).frame())
    assert len(driver.held) == before  # (paused: the credit waits)
    driver.drain(before - RESUME_UNSENT - 1)
    assert len(driver.held) == RESUME_UNSENT + 1  # (not yet)
    driver.drain(1)
    assert len(driver.held) > RESUME_UNSENT  # (they went on)
    while driver.held:
        driver.drain()
    assert driver.delivered == {1: list(range(CHUNKS)), 2: list(range(60))}


def test_a_driver_that_never_reports_gets_everything_as_before() -> None:
    """A driver that takes the output and never says what it wrote (written) is taken to
    write it all: the chunks come as fast as it asks for them."""
    broker = Broker()
    stream_of(broker, CHUNKS)
    driver = Driver(broker)
    driver.open()
    conn = driver.conn
    conn._paced = False  # (the driver above reports: this one does not)
    conn.receive_data(driver.request(Key.SUBSCRIBE).uint8(1).string("s").uint16(1)
                      .uint16(1000).properties({}).frame())
    out = bytearray()
    while conn.has_output:
        data = conn.data_to_send()
        assert len(data) <= MAX_UNSENT + FRAME  # (at most the bound in one call)
        out += data
    driver.reader.feed(bytes(out))
    offsets = []
    while (frame := driver.reader.next_frame()) is not None:
        if frame[0] == Key.DELIVER:
            offsets.append(int.from_bytes(frame[2][1 + 24:1 + 32], "big"))
    assert offsets == list(range(CHUNKS))


def test_a_client_that_reads_nothing_is_not_read_from_past_max_unread() -> None:
    """Its answers pile up too: past MAX_UNREAD unwritten bytes the connection is blocked (its
    driver stops reading from the client), and no longer once they are written."""
    broker = Broker()
    stream_of(broker, CHUNKS)
    driver = Driver(broker)
    driver.open()
    driver.subscribe(1, 1000)
    metadata = driver.request(Key.METADATA).strings(["x" * 200] * 1000).frame()
    requests = 0
    while not driver.conn.blocked:
        driver.send(metadata)
        requests += 1
    assert MAX_UNREAD < len(driver.held) <= MAX_UNREAD + len(metadata) + 100
    assert requests > 5
    while driver.held:
        driver.drain()
    assert not driver.conn.blocked
    assert driver.delivered == {1: list(range(CHUNKS))}
