"""Fuzzing the parser (h11's invariant): any input either parses, or raises the codec's own
errors (``ConnectionException`` subclasses), never anything else, and never hangs; fed in one
chunk or one byte at a time, the outcome is the same. The fused ``CommandReader`` gives the same
commands and the same error as ``FrameParser`` + ``ContentAssembler`` on every input.

CI runs a few thousand examples; ``EMBROKER_FUZZ_EXAMPLES`` raises the count for a longer run.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embroker.amqp091 import (
    PROTOCOL_HEADER,
    Command,
    CommandReader,
    Frame,
    FrameParser,
    parse_protocol_header,
)
from embroker.amqp091._assembly import ContentAssembler
from embroker.errors import ConnectionException
from tests.strategies import frame_streams

EXAMPLES = int(os.environ.get("EMBROKER_FUZZ_EXAMPLES", "1000"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def outcome(data: bytes, *, bytewise: bool) -> tuple[list[Frame], list[Command], str | None]:
    """Frames and commands until the first error; the error as ``"Class: text"``."""
    parser = FrameParser(4096)
    assembler = ContentAssembler(max_body_size=1 << 16)
    frames: list[Frame] = []
    commands: list[Command] = []
    chunks = [data[i:i + 1] for i in range(len(data))] if bytewise else [data]
    try:
        for chunk in chunks:
            for frame in parser.feed(chunk):
                frames.append(frame)
                command = assembler.add(frame)
                if command is not None:
                    commands.append(command)
    except ConnectionException as exc:
        return frames, commands, f"{type(exc).__name__}: {exc.text}"
    return frames, commands, None


def reader_outcome(data: bytes, *, bytewise: bool) -> tuple[list[Command], str | None]:
    """The same with the fused ``CommandReader``."""
    reader = CommandReader(4096, max_body_size=1 << 16)
    commands: list[Command] = []
    chunks = [data[i:i + 1] for i in range(len(data))] if bytewise else [data]
    try:
        for chunk in chunks:
            commands.extend(reader.feed(chunk))
    except ConnectionException as exc:
        return commands, f"{type(exc).__name__}: {exc.text}"
    return commands, None


def check(data: bytes) -> None:
    whole = outcome(data, bytewise=False)  # anything but ConnectionException fails the test
    assert reader_outcome(data, bytewise=False) == whole[1:]
    if len(data) <= 1024:
        assert outcome(data, bytewise=True) == whole
        assert reader_outcome(data, bytewise=True) == whole[1:]


@settings(FUZZ, max_examples=2 * EXAMPLES)
@given(data=st.binary(max_size=600))
def test_random_bytes_parse_or_raise_connection_exceptions(data: bytes) -> None:
    check(data)


def _plausible_header() -> st.SearchStrategy[bytes]:
    """Random frames that get past the frame header checks, to exercise the payload decoders."""
    return st.builds(
        lambda t, ch, payload: bytes([t]) + ch.to_bytes(2, "big")
        + len(payload).to_bytes(4, "big") + payload + b"\xce",
        st.sampled_from([1, 1, 1, 2, 3, 8]),
        st.integers(0, 2),
        st.one_of(st.binary(max_size=200),
                  st.builds(lambda ids, rest: ids + rest,
                            st.sampled_from([bytes([0, c, 0, m]) for c, m in (
                                (10, 10), (10, 11), (10, 40), (20, 40), (40, 10), (50, 10),
                                (60, 20), (60, 40), (60, 60), (60, 120), (85, 10))]),
                            st.binary(max_size=120))),
    )


@FUZZ
@given(frames=st.lists(_plausible_header(), max_size=4))
def test_random_payloads_parse_or_raise_connection_exceptions(frames: list[bytes]) -> None:
    check(b"".join(frames))


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    stream, _ = draw(frame_streams(max_commands=3))
    data = bytearray(stream)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set":
            data[at] = draw(st.sampled_from([0x00, 0x01, 0x02, 0x03, 0x08, 0xCE, 0xFF]))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 8))]
        else:
            del data[at:]
    return bytes(data)


@FUZZ
@given(data=mutated())
def test_mutated_valid_streams_parse_or_raise_connection_exceptions(data: bytes) -> None:
    check(data)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=12))
def test_protocol_header_never_fails(data: bytes) -> None:
    result: Any = parse_protocol_header(data)
    assert result is None or result.data == data[:8]
    assert parse_protocol_header(PROTOCOL_HEADER + data) is not None
