"""Regular expressions: Python's ``re`` against ``embroker._regex`` (linear time, a lazy DFA).

Run: python benchmarks/regex.py [--number N] [--re-sizes 20,22,24] [--sizes 1000,10000]

Four tables, every figure the best of 5 runs:

- typical searches, warm (the pattern compiled and searched once before timing): permission
  checks (``^orders\\.`` on a 20-odd-character name), policy patterns, ``.*``, unanchored
  literals; microseconds per search for ``re``, for ``_regex`` (``re`` where the quick path
  takes the pattern, the DFA otherwise) and for the DFA alone (``quick=False``);
- the catastrophic pattern of issue #34, ``^(a+)+$`` against ``"a" * n + "!"``: ``re`` for small
  n (each added character doubles its time), ``_regex`` for large n, cold (compile and first
  search) and warm;
- patterns whose DFA never warms up (exponentially many states, near the NFA node limit):
  microseconds per character of a random 2,000-character subject, the transitions computed and
  the cache flushes;
- compiling: microseconds per ``compile`` for ``re`` (its cache bypassed) and ``_regex``.

Nothing is asserted: see the figures.
"""

from __future__ import annotations

import argparse
import random
import re
import time
import timeit
from collections.abc import Callable
from typing import Any

from embroker import _regex

TYPICAL: list[tuple[str, str, str]] = [
    # (what, pattern, subject)
    ("permission, match", r"^orders\.", "orders.eu-west-1.shipped"),
    ("permission, miss", r"^orders\.", "invoices.eu-west-1.paid"),
    ("permission, bytes", r"^orders\.", "orders.eu-west-1.shipped"),
    ("permission, alternatives", r"^(orders|invoices)\.", "invoices.eu-west-1.paid"),
    ("permission, empty (^$)", "^$", "orders.eu-west-1.shipped"),
    ("all (.*)", ".*", "orders.eu-west-1.shipped"),
    ("policy ^amq\\.", r"^amq\.", "orders.eu-west-1.shipped"),
    ("policy ^orders-.*$", r"^orders-.*$", "orders-eu-west-1-shipped"),
    ("policy, suffix", r"^orders\..*\.shipped$", "orders.eu-west-1.shipped"),
    ("unanchored literal, hit", "shipped", "orders.eu-west-1.shipped"),
    ("unanchored literal, miss", "returned", "orders.eu-west-1.shipped"),
    ("unanchored class", r"[0-9]+\.", "orders.eu-west-1.shipped"),
    ("ignore case", r"(?i)^ORDERS\.", "orders.eu-west-1.shipped"),
    ("word boundary", r"\bwest\b", "orders.eu-west-1.shipped"),
]


def per_call(call: Callable[[], object], number: int) -> float:
    """Microseconds per call, the best of 5 runs of ``number`` calls."""
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6


def once(call: Callable[[], object]) -> float:
    """Seconds of one call, the best of 5."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def row(what: str, pattern: str, text: str, number: int) -> str:
    source: Any = pattern.encode() if "bytes" in what else pattern
    subject: Any = text.encode() if "bytes" in what else text
    compiled_re = re.compile(source)
    ours = _regex.compile(source)
    dfa = _regex.compile(source, quick=False)
    assert ours.search(subject) == dfa.search(subject) == (compiled_re.search(subject) is not None)
    return (f"{what:28} {pattern:24} {len(subject):4} "
            f"{per_call(lambda: compiled_re.search(subject), number):7.2f} "
            f"{per_call(lambda: ours.search(subject), number):7.2f} "
            f"{per_call(lambda: dfa.search(subject), number):7.2f} "
            f"{'re' if ours.quick else 'DFA':>5}")


def typical(number: int) -> None:
    print(f"typical searches, warm (microseconds per search, best of 5 x {number:,})")
    print(f"{'what':28} {'pattern':24} {'len':>4} {'re':>7} {'_regex':>7} {'DFA':>7} {'path':>5}")
    for what, pattern, text in TYPICAL:
        print(row(what, pattern, text, number))


def catastrophic(re_sizes: list[int], sizes: list[int]) -> None:
    pattern = r"^(a+)+$"
    print(f"\n{pattern} against 'a' * n + '!' (milliseconds, best of 5)")
    print(f"{'engine':8} {'n':>7} {'cold':>10} {'warm':>10} {'transitions computed':>22}")
    compiled_re = re.compile(pattern)
    for n in re_sizes:
        subject = "a" * n + "!"
        seconds = once(lambda: compiled_re.search(subject))  # noqa: B023 (called at once)
        print(f"{'re':8} {n:7,} {'':>10} {seconds * 1000:10.2f}")
    for n in sizes:
        subject = "a" * n + "!"

        def cold() -> object:
            return _regex.compile(pattern).search(subject)  # noqa: B023 (called at once)

        compiled = _regex.compile(pattern)
        compiled.search(subject)
        warm = once(lambda: compiled.search(subject))  # noqa: B023 (called at once)
        print(f"{'_regex':8} {n:7,} {once(cold) * 1000:10.3f} {warm * 1000:10.3f} "
              f"{compiled.statistics().transitions_computed:22}")


def cold_dfas() -> None:
    rng = random.Random(1)
    subject = "".join(rng.choice("ab") for _ in range(2000))
    print("\npatterns whose DFA never warms up, a random 2,000-character subject over 'ab' "
          "(compiling included)")
    print(f"{'pattern':28} {'nodes':>6} {'us/char':>9} {'computed':>9} {'flushes':>8}")
    for pattern in ["[ab]*a[ab]{20}c", "[ab]*a[ab]{200}c", "[ab]*a[ab]{450}c",
                    "(?:[ab]*a[ab]{8}){20}c", "(?:.*a.{0,15}){15}c", "(?:.*a.{0,30}){30}c"]:
        try:
            compiled = _regex.compile(pattern)
        except _regex.UnsupportedPattern as refused:
            print(f"{pattern:28} refused: {refused}")
            continue
        seconds = once(lambda: _regex.compile(pattern).search(subject))  # noqa: B023
        compiled.search(subject)
        statistics = compiled.statistics()
        print(f"{pattern:28} {statistics.nfa_nodes:6} {seconds / len(subject) * 1e6:9.1f} "
              f"{statistics.transitions_computed:9} {statistics.flushes:8}")


def compiling(number: int) -> None:
    print("\ncompiling (microseconds per compile)")
    print(f"{'pattern':28} {'re':>9} {'_regex':>9}")
    for pattern in [r"^orders\.", r"^(orders|invoices)\..*$", r"^[a-z0-9_-]{1,64}$",
                    r"^(a+)+$", r"[ab]*a[ab]{200}c"]:
        def re_uncached() -> object:
            re.purge()  # re keeps the last 512 patterns it compiled
            return re.compile(pattern)  # noqa: B023 (called at once)

        re_compile = per_call(re_uncached, max(number // 100, 10))
        ours = per_call(lambda: _regex.compile(pattern), max(number // 100, 10))  # noqa: B023
        print(f"{pattern:28} {re_compile:9.1f} {ours:9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--number", type=int, default=20_000,
                        help="searches per timing run (typical table)")
    parser.add_argument("--re-sizes", default="20,22,24",
                        help="n for re on the catastrophic pattern (doubles per character)")
    parser.add_argument("--sizes", default="1000,10000", help="n for _regex on it")
    args = parser.parse_args()
    typical(args.number)
    catastrophic([int(n) for n in args.re_sizes.split(",") if n],
                 [int(n) for n in args.sizes.split(",") if n])
    cold_dfas()
    compiling(args.number)


if __name__ == "__main__":
    main()
