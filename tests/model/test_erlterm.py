"""The Erlang/OTP ports of ``embroker._erlterm`` against Erlang itself.

- With ``erl`` on the PATH (Erlang/OTP 25, as RabbitMQ 3.10 runs on), Hypothesis generates
  terms (binaries, integers small and big, floats, atoms, tuples, lists, strings), sends each
  batch to one ``erl`` process in Erlang's external term format, and compares
  ``erlang:phash2/1``, ``erlang:phash2/2``, ``rand:seed_s(exs1024, ...)`` / ``rand:uniform_s/1``
  draws and the consistent-hash plugin's jump consistent hash with the ports. Without ``erl``
  those tests skip.
- ``data/erlterm_vectors.json`` holds what ``erl`` answered for a fixed set of terms and keys,
  so the offline suite checks the ports too. Refresh it with
  ``python -m tests.model.test_erlterm`` (needs ``erl``).
"""

from __future__ import annotations

import json
import math
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embroker._erlterm import (
    FALSE,
    TRUE,
    UNDEFINED,
    Atom,
    Exs1024,
    field_term,
    jump_consistent_hash,
    phash2,
    term_key,
)

VECTORS = Path(__file__).parent / "data" / "erlterm_vectors.json"
ERL = shutil.which("erl")
needs_erl = pytest.mark.skipif(ERL is None, reason="erl (Erlang/OTP) is not installed")

#: The bucket counts the jump hash is checked with.
BUCKETS = (2, 3, 5, 8, 13, 100, 1000)
#: The ranges phash2/2 is checked with (2^27 is the modulus-hash plugin's).
RANGES = (1, 7, 1000, 2**27, 2**32)


# -- Erlang's external term format (what erl reads with binary_to_term/1) ----------------------

def etf(term: Any) -> bytes:
    """``term_to_binary(Term)`` of a term as ``_erlterm`` represents it."""
    return b"\x83" + _etf(term)


def _etf(term: Any) -> bytes:
    if isinstance(term, Atom):
        name = str(term).encode()
        return b"\x77" + bytes([len(name)]) + name
    if isinstance(term, bool):
        raise TypeError("bool")
    if isinstance(term, int):
        if 0 <= term <= 255:
            return b"\x61" + bytes([term])
        if -(2**31) <= term < 2**31:
            return b"\x62" + struct.pack(">i", term)
        magnitude = abs(term)
        digits = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "little")
        return b"\x6e" + bytes([len(digits), 1 if term < 0 else 0]) + digits
    if isinstance(term, float):
        return b"\x46" + struct.pack(">d", term)
    if isinstance(term, tuple):
        return b"\x68" + bytes([len(term)]) + b"".join(_etf(t) for t in term)
    if isinstance(term, list):
        if not term:
            return b"\x6a"
        return b"\x6c" + struct.pack(">I", len(term)) + b"".join(_etf(t) for t in term) + b"\x6a"
    if isinstance(term, bytes):
        return b"\x6d" + struct.pack(">I", len(term)) + term
    raise TypeError(term)


# -- asking erl ---------------------------------------------------------------------------------

_ERL_PROGRAM = r"""
J = fun J(_K, 1) -> 0;
        J(K, N) ->
            Loop = fun L(B, Jn, _S) when Jn >= N -> B;
                       L(_B0, Jn, S0) -> {R, S} = rand:uniform_s(S0),
                                         L(Jn, trunc((Jn + 1) / R), S)
                   end,
            Loop(-1, 0, rand:seed_s(exs1024, {K, K, K}))
    end,
Draws = fun(K) -> {Xs, _} = lists:mapfoldl(fun(_, S) -> rand:uniform_s(S) end,
                                            rand:seed_s(exs1024, {K, K, K}), lists:seq(1, 20)),
                  Xs end,
Loop = fun Loop() ->
    case io:get_line("") of
        eof -> ok;
        Line ->
            [Kind, Hex] = string:split(string:trim(Line), " "),
            T = binary_to_term(binary:decode_hex(list_to_binary(Hex))),
            Out = case Kind of
                "hash" -> [integer_to_list(H) || H <- [erlang:phash2(T) |
                                                      [erlang:phash2(T, R) || R <- RANGES]]];
                "jump" -> [integer_to_list(J(T, N)) || N <- BUCKETS];
                "draw" -> [float_to_list(X, [short]) || X <- Draws(T)]
            end,
            io:format("[~s]~n", [lists:join(",", Out)]),
            Loop()
    end
end,
Loop(),
halt().
"""


def ask_erl(requests: list[tuple[str, Any]]) -> list[list[Any]]:
    """One erl process for a batch: ``("hash", term)``, ``("jump", key)``, ``("draw", key)``."""
    assert ERL is not None
    program = (_ERL_PROGRAM.replace("RANGES", "[" + ",".join(map(str, RANGES)) + "]")
               .replace("BUCKETS", "[" + ",".join(map(str, BUCKETS)) + "]"))
    lines = "".join(f"{kind} {etf(term).hex()}\n" for kind, term in requests)
    done = subprocess.run([ERL, "-noshell", "-eval", program], input=lines, text=True,
                          capture_output=True, timeout=120, check=True)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(answers) == len(requests), done.stdout + done.stderr
    return answers


def ours(kind: str, term: Any) -> list[Any]:
    if kind == "hash":
        return [phash2(term), *(phash2(term, r) for r in RANGES)]
    if kind == "jump":
        return [jump_consistent_hash(term, n) for n in BUCKETS]
    state = Exs1024((term, term, term))
    return [float(repr(state.uniform())) for _ in range(20)]


def erl_answer(kind: str, raw: list[Any]) -> list[Any]:
    return [float(x) for x in raw] if kind == "draw" else raw


# -- terms --------------------------------------------------------------------------------------

ATOMS = [Atom(a) for a in ("undefined", "true", "false", "longstr", "signedint", "long", "bool",
                           "table", "array", "void", "double", "float", "timestamp", "decimal",
                           "binary", "byte", "short", "unsignedbyte", "unsignedshort",
                           "unsignedint", "a", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "é")]

integers = st.one_of(st.integers(-300, 300), st.integers(-(2**28), 2**28),
                     st.integers(-(2**70), 2**70), st.sampled_from(
                         [2**27 - 1, 2**27, -(2**27), -(2**27) - 1, 2**59, 2**64 - 1, 2**64]))
floats = st.floats(allow_nan=False, allow_infinity=False)
leaves = st.one_of(st.binary(max_size=40), integers, floats, st.sampled_from(ATOMS))
terms = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=5).map(tuple),
    st.lists(inner, max_size=5),
    st.lists(st.integers(0, 255), max_size=9),  # strings: lists of bytes
), max_leaves=12)
keys = st.integers(0, 2**27 - 1)  # what phash2/1 gives the jump hash


# -- offline: the committed vectors -------------------------------------------------------------

def decode(value: Any) -> Any:
    kind, data = next(iter(value.items()))
    if kind == "bin":
        return bytes.fromhex(data)
    if kind == "atom":
        return Atom(data)
    if kind == "int":
        return int(data)
    if kind == "float":
        return struct.unpack(">d", bytes.fromhex(data))[0]
    if kind == "tuple":
        return tuple(decode(v) for v in data)
    return [decode(v) for v in data]


def encode(term: Any) -> Any:
    if isinstance(term, Atom):
        return {"atom": str(term)}
    if isinstance(term, int):
        return {"int": str(term)}
    if isinstance(term, float):
        return {"float": struct.pack(">d", term).hex()}
    if isinstance(term, bytes):
        return {"bin": term.hex()}
    if isinstance(term, tuple):
        return {"tuple": [encode(t) for t in term]}
    return {"list": [encode(t) for t in term]}


def test_the_committed_vectors_hold() -> None:
    """Every term and key of ``data/erlterm_vectors.json``, as erl answered for it."""
    document = json.loads(VECTORS.read_text())
    assert len(document["vectors"]) >= 500
    for entry in document["vectors"]:
        term = decode(entry["term"])
        assert ours(entry["kind"], term) == erl_answer(entry["kind"], entry["erl"]), entry


def test_doc_examples_are_what_erl_says() -> None:
    """A few values written down from ``erl -noshell -eval 'io:format(...)'`` (OTP 25)."""
    assert phash2(b"abc") == 98228475
    assert phash2([b"a", b"b"], 2**27) == 3094894
    assert phash2(UNDEFINED) == 45914356
    assert phash2((Atom("longstr"), b"x")) == 14442427
    assert phash2(1.5) == 10380315
    assert phash2(1 << 40) == 13893919
    assert phash2(-5) == 115015680
    assert phash2([]) == 113427502
    assert Exs1024((1, 1, 1)).uniform() == 0.35999833001572473
    assert [jump_consistent_hash(phash2(b"order-17"), n) for n in (2, 3, 4, 5, 10, 100)] == \
        [1, 1, 1, 1, 1, 11]


def test_field_terms_are_what_rabbitmq_decodes() -> None:
    """``rabbit_binary_parser`` turns a header into ``{Type, Value}``: strings and byte arrays
    binaries, booleans atoms, tables lists of ``{Key, Type, Value}``, arrays lists of
    ``{Type, Value}``, decimals ``{Scale, Unscaled}``, void ``undefined``."""
    import decimal

    from embroker.fieldtypes import Long

    assert field_term("eu") == (Atom("longstr"), b"eu")
    assert field_term(b"\x00") == (Atom("binary"), b"\x00")
    assert field_term(True) == (Atom("bool"), TRUE)
    assert field_term(False) == (Atom("bool"), FALSE)
    assert field_term(Long(5)) == (Atom("long"), 5)
    assert field_term(2**40) == (Atom("long"), 2**40)
    assert field_term(1.5) == (Atom("double"), 1.5)
    assert field_term(None) == (Atom("void"), UNDEFINED)
    assert field_term(decimal.Decimal("1.25")) == (Atom("decimal"), (2, 125))
    assert field_term({"a": 1}) == (Atom("table"), [(b"a", Atom("signedint"), 1)])
    assert field_term(["x", 2]) == (Atom("array"), [(Atom("longstr"), b"x"),
                                                    (Atom("signedint"), 2)])


def test_term_order() -> None:
    """Erlang's term order: number < atom < tuple < [] < list < binary; tuples by size first."""
    ordered = [-1, 2.5, 3, Atom("a"), Atom("b"), (9,), (1, 1), [], [1], [1, 0], [2], b"", b"a"]
    shuffled = [ordered[(i * 5) % len(ordered)] for i in range(len(ordered))]
    assert sorted(shuffled, key=term_key) == ordered


# -- with erl: generated terms ------------------------------------------------------------------

@needs_erl
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.data_too_large])
@given(st.lists(terms, min_size=40, max_size=80), st.lists(keys, min_size=10, max_size=20))
def test_phash2_and_jump_hash_agree_with_erl(batch: list[Any], jump_keys: list[int]) -> None:
    """phash2/1, phash2/2 over several ranges, exs1024 draws and the jump consistent hash, on
    generated terms and keys: one erl process per example, 50 to 100 terms each."""
    requests: list[tuple[str, Any]] = [("hash", t) for t in batch]
    requests += [("jump", k) for k in jump_keys] + [("draw", k) for k in jump_keys[:3]]
    for (kind, term), answer in zip(requests, ask_erl(requests), strict=True):
        assert ours(kind, term) == erl_answer(kind, answer), (kind, term)


@needs_erl
def test_every_amqp_header_type_hashes_as_in_erl() -> None:
    """The ``{Type, Value}`` tuple of every AMQP field type, as the consistent-hash exchange
    hashes a header (``hash-header``)."""
    import datetime
    import decimal

    from embroker.fieldtypes import (
        Byte,
        Float32,
        Long,
        Short,
        Timestamp,
        UnsignedByte,
        UnsignedInt,
        UnsignedShort,
    )

    values = ["", "eu", "é" * 30, b"\x00\xff", 0, -1, 7, 2**31 - 1, -(2**31), 2**40, Long(3),
              Short(-4), Byte(5), UnsignedByte(200), UnsignedShort(60000), UnsignedInt(2**32 - 1),
              1.5, -0.0, Float32(0.25), True, False, None, decimal.Decimal("-3.141"),
              datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
              Timestamp(2**40), {"a": 1, "b": ["x", {"c": None}]}, [], {}, [1, "two", 3.0]]
    requests = [("hash", field_term(v)) for v in values]
    for (kind, term), answer in zip(requests, ask_erl(requests), strict=True):
        assert ours(kind, term) == answer, term


# -- refreshing the vectors ---------------------------------------------------------------------

def main() -> int:
    """Ask erl for a fixed, seeded set of terms and keys and write ``data/erlterm_vectors.json``."""
    if ERL is None:
        print("erl is not installed", file=sys.stderr)
        return 2
    import random

    from hypothesis.strategies import SearchStrategy

    def examples(strategy: SearchStrategy[Any], n: int, seed: int) -> list[Any]:
        found: list[Any] = []

        @settings(max_examples=n, database=None, derandomize=True, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(strategy)
        def collect(value: Any) -> None:
            found.append(value)

        random.seed(seed)
        collect()
        return found

    requests: list[tuple[str, Any]] = [("hash", t) for t in examples(terms, 400, 1)]
    requests += [("hash", field_term(v)) for v in
                 ["", "eu", b"\x00", 0, -1, 2**40, 1.5, True, None, {"a": [1, "b"]}]]
    requests += [("hash", [k.encode() for k in keys]) for keys in
                 (["a"], ["order.created"], ["a", "b", "c"], ["x"] * 10)]
    jump = sorted(set(examples(keys, 120, 2)) | {0, 1, 2**27 - 1})
    requests += [("jump", k) for k in jump] + [("draw", k) for k in jump[:10]]
    answers = ask_erl(requests)
    vectors = [{"kind": kind, "term": encode(term), "erl": answer}
               for (kind, term), answer in zip(requests, answers, strict=True)]
    for v in vectors:  # erl's floats as written; they read back exactly
        if v["kind"] == "draw":
            assert all(math.isfinite(float(x)) for x in v["erl"])
    VECTORS.write_text(json.dumps({
        "about": "erlang:phash2/1,2, rand exs1024 draws and the consistent-hash plugin's jump "
                 "hash, as erl (Erlang/OTP 25) computed them; written by "
                 "python -m tests.model.test_erlterm",
        "ranges": list(RANGES), "buckets": list(BUCKETS), "vectors": vectors,
    }, indent=None, separators=(",", ":")) + "\n")
    print(f"{VECTORS}: {len(vectors)} vectors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
