"""embroker._regex: re's answers (search, fullmatch) in time linear in the subject.

The oracle is ``re`` itself. For ``search`` it is "``re``'s ``match`` at some position"
(``any(p.match(s, i) ...)``), which is what ``re.search`` means: ``re.search`` itself has a
start-position shortcut that reads the pattern's global flags and misses ``(?a:\\W)`` in "é"
(pinned below)."""

from __future__ import annotations

import random
import re
import sys
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from embroker import _regex

# -- the differential property ------------------------------------------------------------------

ATOMS = ["a", "b", "A", ".", "\\n", "[ab]", "[^a]", "[a-b\\n]", "\\w", "\\W", "\\d", "\\D",
         "\\s", "\\S", "\\b", "\\B", "^", "$", "\\A", "\\Z", "(?:)", "é", "É", "_", "1", " ",
         "[^\\W_]", "[A-Z]", "[^\\n]"]
QUANTIFIERS = ["*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}", "{,2}"]
SCOPED = ["i", "-i", "m", "s", "a", "-s", "ms", "im"]


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map("|".join),
        inner.map(lambda x: f"({x})"),
        st.tuples(inner, st.sampled_from(QUANTIFIERS), st.booleans()).map(
            lambda t: f"(?:{t[0]}){t[1]}" + ("?" if t[2] else "")),
        st.tuples(st.sampled_from(ATOMS[:8]), st.sampled_from(QUANTIFIERS)).map("".join),
        st.tuples(st.sampled_from(SCOPED), inner).map(lambda t: f"(?{t[0]}:{t[1]})"),
    )


PATTERNS = st.recursive(st.sampled_from(ATOMS), _extend, max_leaves=8)
FLAGS = st.sets(st.sampled_from([re.I, re.M, re.S, re.A])).map(lambda s: sum(s, 0))
SUBJECTS = st.text(alphabet="abAB\n_1 é", max_size=8)
PROPERTY = settings(max_examples=600, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _re_compile(pattern: str | bytes, flags: int) -> re.Pattern[str] | re.Pattern[bytes] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 3.10: global flags not at the start
            return re.compile(pattern, flags)
    except re.error:
        return None


def _agree(pattern: str | bytes, flags: int, subject: str | bytes) -> None:
    expected = _re_compile(pattern, flags)
    if expected is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(re.error):
                _regex.compile(pattern, flags)
        return
    searched = any(expected.match(subject, i) for i in range(len(subject) + 1))  # type: ignore[arg-type]
    whole = expected.fullmatch(subject) is not None  # type: ignore[arg-type]
    for quick in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled: Any = _regex.compile(pattern, flags, quick=quick)
        assert compiled.search(subject) == searched, (pattern, flags, subject, quick)
        assert compiled.fullmatch(subject) == whole, (pattern, flags, subject, quick)


@PROPERTY
@given(PATTERNS, FLAGS, SUBJECTS)
def test_search_and_fullmatch_agree_with_re_on_str(pattern: str, flags: int, subject: str) -> None:
    _agree(pattern, flags, subject)


@PROPERTY
@given(PATTERNS, FLAGS, SUBJECTS)
def test_search_and_fullmatch_agree_with_re_on_bytes(pattern: str, flags: int,
                                                     subject: str) -> None:
    _agree(pattern.encode("latin-1"), flags, subject.encode("latin-1"))


# Letters whose case folding is special in re: KELVIN SIGN, LONG S, dotless and dotted I, sharp
# s, sigma's three forms, MICRO SIGN and mu, OHM SIGN and omega, the ligature ﬅ/ﬆ.
FOLDING = ("kK\u212asS\u017fiI\u0131\u0130\u00df\u1e9e\u03c3\u03a3\u03c2\u00b5\u03bc\u039c"
           "\u2126\u03c9\ufb05\ufb06")
FOLDING_ATOMS = [*FOLDING, "[a-z]", "[^a-z]", "[k-s]", "[\u03c3-\u03c9]", "\\w", "[^\\w]", "."]


@PROPERTY
@given(st.lists(st.sampled_from(FOLDING_ATOMS), min_size=1, max_size=4).map("".join),
       st.sampled_from([re.I, re.I | re.A, 0]),
       st.text(alphabet=FOLDING + "a_", max_size=5))
def test_ignorecase_folds_as_re_does(pattern: str, flags: int, subject: str) -> None:
    _agree(pattern, flags, subject)


# -- hand-written cases: each construct -----------------------------------------------------------

CASES: list[tuple[str, int, str, bool]] = [
    # literals, ., classes
    ("abc", 0, "xxabcxx", True),
    ("abc", 0, "abxc", False),
    ("a.c", 0, "a\nc", False),
    ("a.c", re.S, "a\nc", True),
    ("(?s)a.c", 0, "a\nc", True),
    ("(?s:a.)c", 0, "a\nc", True),
    ("[b-d]", 0, "xcx", True),
    ("[^b-d]", 0, "bcd", False),
    ("[^b-d]", 0, "bcdq", True),
    # categories: re's Unicode for str, ASCII with re.A
    ("\\d", 0, "\u0663", True),          # ARABIC-INDIC DIGIT THREE
    ("\\d", re.A, "\u0663", False),
    ("\\w", 0, "\u00e9", True),
    ("\\w", re.A, "\u00e9", False),
    ("\\s", 0, "\u2003", True),          # EM SPACE
    ("\\s", re.A, "\u2003", False),
    ("[\\D]", 0, "1", False),
    ("\\S", 0, " \t\n", False),
    ("\\W", 0, "ab_", False),
    # anchors
    ("^b", 0, "a\nb", False),
    ("^b", re.M, "a\nb", True),
    ("(?m)^b", 0, "a\nb", True),
    ("\\Ab", re.M, "a\nb", False),
    ("a$", 0, "a\n", True),               # Python's $ before a final newline
    ("a$", 0, "a\n\n", False),
    ("a$", re.M, "a\n\n", True),
    ("a$\\n", 0, "a\n", True),
    ("a$\\n$", 0, "a\n", True),
    ("a$\\nb", 0, "a\nb", False),
    ("a\\Z", 0, "a\n", False),
    ("a\\Z", 0, "a", True),
    ("$", 0, "", True),
    ("^$", 0, "", True),
    ("^$", 0, "\n", True),
    ("^$", 0, "a", False),
    # word boundaries
    ("\\bfoo\\b", 0, "a foo.", True),
    ("\\bfoo\\b", 0, "afoo", False),
    ("\\Bfoo", 0, "afoo", True),
    ("\\b", 0, "", False),
    ("\\B", 0, "", re.search("\\B", "") is not None),   # never before Python 3.14
    ("\\B", 0, "a", False),
    ("\\B", 0, "..", True),
    ("\\b\u00e9", 0, " \u00e9", True),
    ("a\\b\u00e9", 0, "a\u00e9", False),          # é is a word character for str
    ("a\\b\u00e9", re.A, "a\u00e9", True),        # but not for ASCII
    ("(?a:a\\b)\u00e9", 0, "a\u00e9", True),
    # groups, alternation, repetition
    ("(?:ab)+c", 0, "ababc", True),
    ("(a|bc)d", 0, "xbcd", True),
    ("(a|bc)d", 0, "xbd", False),
    ("a{3}", 0, "aa", False),
    ("a{3}", 0, "aaa", True),
    ("^a{2,3}$", 0, "aaaa", False),
    ("^a{2,}$", 0, "aaaa", True),
    ("^a{,2}$", 0, "aaa", False),
    ("^a*?b+?$", 0, "aabb", True),
    ("^(?:a|)*$", 0, "aa", True),
    ("^(?:a*)*$", 0, "ab", False),
    # flags
    ("ABC", re.I, "xabcx", True),
    ("(?i)abc", 0, "ABC", True),
    ("(?i:a)b", 0, "AB", False),
    ("(?i:a)b", 0, "Ab", True),
    ("(?-i:a)b", re.I, "AB", False),
    ("(?-i:a)b", re.I, "aB", True),
    ("(?i)k", 0, "\u212a", True),          # KELVIN SIGN folds to k
    ("(?ia)k", 0, "\u212a", False),
    ("(?i)[a-z]", 0, "\u017f", True),      # LONG S
    ("(?x) a b # c", 0, "ab", True),
]


@pytest.mark.parametrize(("pattern", "flags", "subject", "expected"), CASES,
                         ids=[f"{p!r}-{f}-{s!r}" for p, f, s, _ in CASES])
def test_each_construct_answers_as_re(pattern: str, flags: int, subject: str,
                                      expected: bool) -> None:
    assert (re.search(pattern, subject, flags) is not None) == expected  # the case itself
    _agree(pattern, flags, subject)  # search and fullmatch, quick path and linear engine


BYTES_CASES: list[tuple[bytes, int, bytes, bool]] = [
    (b"\\w", 0, b"\xe9", False),           # bytes: ASCII classes
    (b"\\d", 0, b"7", True),
    (b"\\s", 0, b"\x85", False),
    (b"(?i)\xe9", 0, b"\xc9", False),      # ASCII case folding only
    (b"(?i)abc", 0, b"xABCx", True),
    (b"a\\b\xe9", 0, b"a\xe9", True),
    (b"^orders\\.", 0, b"orders.eu", True),
    (b"a$", 0, b"a\n", True),
    (b"[^\\x00-\\x7f]", 0, b"abc\xff", True),
]


@pytest.mark.parametrize(("pattern", "flags", "subject", "expected"), BYTES_CASES,
                         ids=[repr(case[0]) for case in BYTES_CASES])
def test_bytes_patterns_answer_as_re(pattern: bytes, flags: int, subject: bytes,
                                     expected: bool) -> None:
    assert (re.search(pattern, subject, flags) is not None) == expected
    _agree(pattern, flags, subject)


def test_bytearray_and_memoryview_subjects_are_searched_as_bytes() -> None:
    compiled = _regex.compile(b"b+c", quick=False)
    assert compiled.search(bytearray(b"abbc"))  # type: ignore[arg-type]
    assert compiled.search(memoryview(b"abbc"))  # type: ignore[arg-type]


def test_scoped_ascii_class_matches_where_re_match_does_though_re_search_misses_it() -> None:
    # re.search's start-position shortcut reads the pattern's global (Unicode) flags; re.match
    # and fullmatch run the pattern itself. This module answers as they do.
    assert re.match(r"(?a:\W)", "\u00e9") is not None
    assert _regex.compile(r"(?a:\W)").search("\u00e9")
    assert not _regex.compile(r"(?a:\W)").quick  # scoped flags never go to re


# -- what is refused --------------------------------------------------------------------------

UNSUPPORTED = [
    ("(a)\\1", "backreferences"),
    ("(?P<x>a)(?P=x)", "backreferences"),
    ("a(?=b)", "lookahead"),
    ("a(?!b)", "lookahead"),
    ("(?<=a)b", "lookbehind"),
    ("(?<!a)b", "lookbehind"),
    ("(a)?(?(1)b|c)", "conditional"),
    ("a{2001}", "too complex"),
    ("(?:a{100}){100}", "too complex"),
    ("(?:){65535}", "too complex"),
]
if sys.version_info >= (3, 11):
    UNSUPPORTED += [("(?>a+)b", "atomic groups"), ("a++b", "possessive"), ("a*+", "possessive")]


@pytest.mark.parametrize(("pattern", "what"), UNSUPPORTED, ids=[p for p, _ in UNSUPPORTED])
def test_what_a_linear_matcher_cannot_run_is_refused_by_name(pattern: str, what: str) -> None:
    re.compile(pattern)  # valid for re
    with pytest.raises(_regex.UnsupportedPattern, match=what) as raised:
        _regex.compile(pattern)
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value, re.error)


def test_locale_flag_is_refused() -> None:
    with pytest.raises(_regex.UnsupportedPattern, match="LOCALE"):
        _regex.compile(b"\\w", re.LOCALE)
    with pytest.raises(_regex.UnsupportedPattern, match="LOCALE"):
        _regex.compile(b"(?L)\\w")


def test_the_largest_pattern_allowed_compiles() -> None:
    compiled = _regex.compile(f"a{{{_regex.MAX_NFA_NODES - 1}}}")
    assert compiled.statistics().nfa_nodes == _regex.MAX_NFA_NODES
    assert compiled.search("a" * _regex.MAX_NFA_NODES)


@pytest.mark.parametrize("pattern", ["(", "[a", "a**", "(?P<1>a)", "\\", "a{2,1}", "(?z)"])
def test_syntax_errors_are_res_own(pattern: str) -> None:
    with pytest.raises(re.error) as expected:
        re.compile(pattern)
    with pytest.raises(type(expected.value)) as raised:
        _regex.compile(pattern)
    assert str(raised.value) == str(expected.value)


def test_flags_that_do_not_fit_the_pattern_are_refused_as_re_refuses_them() -> None:
    with pytest.raises(ValueError, match="cannot use LOCALE flag with a str pattern"):
        _regex.compile("a", re.LOCALE)
    with pytest.raises(ValueError, match="ASCII and UNICODE flags are incompatible"):
        _regex.compile("a", re.ASCII | re.UNICODE)
    with pytest.raises(ValueError, match="cannot use UNICODE flag with a bytes pattern"):
        _regex.compile(b"a", re.UNICODE)


def test_subjects_of_the_other_type_are_refused_as_re_refuses_them() -> None:
    for quick in (True, False):
        with pytest.raises(TypeError, match="cannot use a string pattern on a bytes-like object"):
            _regex.compile("a", quick=quick).search(b"a")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="cannot use a bytes pattern on a string-like object"):
            _regex.compile(b"a", quick=quick).search("a")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _regex.compile(3)  # type: ignore[call-overload]


def test_a_pattern_keeps_its_source_and_flags() -> None:
    compiled = _regex.compile("(?i)^orders\\.", re.M)
    assert compiled.pattern == "(?i)^orders\\."
    assert compiled.flags == re.compile("(?i)^orders\\.", re.M).flags
    assert "orders" in repr(compiled)


# -- the catastrophic cases: bounded work -------------------------------------------------------

CATASTROPHIC = ["^(a+)+$", "^(a|a)*$", "^(a*)*$", "(x+x+)+y", "^(a|aa)+$", "(.*a){12}$",
                "^(\\w+\\s?)*$"]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_patterns_that_make_re_backtrack_exponentially_cost_a_bounded_number_of_states(
        pattern: str) -> None:
    compiled = _regex.compile(pattern)
    assert not compiled.quick
    subject = "a" * 5000 + "!"
    assert compiled.search(subject) is False
    statistics = compiled.statistics()
    # A handful of states, each transition computed once: the rest is look-ups.
    assert statistics.states <= 40
    assert statistics.transitions_computed <= 60
    # Warm, the same search computes nothing new.
    compiled.search(subject)
    assert compiled.statistics().transitions_computed == statistics.transitions_computed


def test_the_issues_request_pattern_rejects_the_issues_queue_name() -> None:
    # GET /api/queues?name=^(a%2B)%2B$&use_regex=true against 'a' * 22 + '!': re took 0.33 s.
    compiled = _regex.compile("^(a+)+$")
    assert not compiled.search("a" * 22 + "!")
    assert compiled.search("a" * 22)
    assert compiled.statistics().transitions_computed <= 6


def test_a_pattern_with_an_exponential_dfa_stays_within_its_cache_budget() -> None:
    # [ab]*a[ab]{12}: the DFA must remember the last 13 characters, 2**13 states.
    budget = 20_000
    compiled = _regex.compile("[ab]*a[ab]{12}c", cache_budget=budget)
    rng = random.Random(7)
    subject = "".join(rng.choice("ab") for _ in range(3000))
    highest = 0
    for end in range(100, 3001, 100):
        assert not compiled.search(subject[:end])
        highest = max(highest, compiled.statistics().cache_bytes)
    statistics = compiled.statistics()
    assert statistics.flushes > 0
    assert highest <= budget + 2_000   # the budget, passed by at most one step's entries
    assert compiled.search(subject + "c") == (re.search("[ab]*a[ab]{12}c", subject + "c")
                                              is not None)


def test_many_distinct_characters_do_not_grow_the_cache_past_its_budget() -> None:
    budget = 50_000
    compiled = _regex.compile("\\w+\\s\\d", cache_budget=budget, quick=False)
    subject = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 5000))
    assert not compiled.search(subject)
    assert compiled.statistics().flushes > 0
    assert compiled.statistics().cache_bytes <= budget + 2_000
    assert compiled.search(subject + " \u0663")


def test_a_long_subject_stops_once_the_answer_is_known() -> None:
    compiled = _regex.compile("^(?:orders|invoices)\\.")
    assert not compiled.quick
    tail = "".join(chr(code) for code in range(0x4E00, 0x4E00 + 100_000))
    assert compiled.search("orders." + tail)
    assert not compiled.search("payments." + tail)
    # The walk stopped after the first slice of 64 characters: the sinks recorded no more of
    # the 100,000 distinct characters that follow.
    assert compiled.statistics().flushes == 0
    assert compiled.statistics().cache_bytes < 2 * 64 * 100 + 10 * 1000


# -- the quick path: what is given to re, and why that is linear ----------------------------------

QUICK = ["^orders\\.", "^amq\\.", ".*", "^orders-.*$", "shipped", "paid$", "\\.eu-", "^$", "",
         "a|b", "^[a-z0-9_]+$", "(?i)^Orders\\b", "x\\b.*", "^x.*$", "^(a)(.*)$", "\\Aa+?\\Z",
         "^x.{0,5}$"]
NOT_QUICK = ["^(a+)+$", "a*b", "x.*$", "(?m)^x.*$", "a{2,}", "^a{2,}$", "(ab|cd)", "^(?:a|b)+c",
             "(?i:a)", "(?a:\\w)", "a" * 33, "^a*$b", "a?b?", ".*x", "[ab]+c"]


@pytest.mark.parametrize("pattern", QUICK)
def test_patterns_safe_for_backtracking_go_to_re(pattern: str) -> None:
    assert _regex.compile(pattern).quick


@pytest.mark.parametrize("pattern", NOT_QUICK)
def test_patterns_that_could_backtrack_stay_on_the_dfa(pattern: str) -> None:
    assert not _regex.compile(pattern).quick


def test_quick_off_keeps_every_pattern_on_the_dfa() -> None:
    assert not _regex.compile("^orders\\.", quick=False).quick


# A model of re's search, for the shapes the quick path's rule speaks of (a sequence of one-
# character items and assertions with at most one repetition of a one-character item anywhere):
# each start position in turn; items matched without choice; the repetition takes as many
# characters as it can, then gives them back one at a time, trying what follows. It counts steps.
_MODEL_ATOMS: dict[str, Callable[[str], bool]] = {
    "a": lambda c: c == "a", "b": lambda c: c == "b", ".": lambda c: c != "\n",
    "[ab]": lambda c: c in "ab",
}
_MODEL_ASSERTIONS = {"^", "$", "\\b"}


def _model_steps(items: list[tuple[str, ...]], subject: str) -> tuple[bool, int]:
    n = len(subject)
    steps = 0

    def holds(assertion: str, position: int) -> bool:
        if assertion == "^":
            return position == 0
        if assertion == "$":
            return position == n or (position == n - 1 and subject[position] == "\n")
        word = [position > 0 and subject[position - 1].isalnum(),
                position < n and subject[position].isalnum()]
        return word[0] != word[1]

    def attempt(index: int, position: int) -> bool:
        nonlocal steps
        while index < len(items):
            steps += 1
            item = items[index]
            if item[0] == "char":
                if position < n and _MODEL_ATOMS[item[1]](subject[position]):
                    position += 1
                    index += 1
                    continue
                return False
            if item[0] == "assert":
                if not holds(item[1], position):
                    return False
                index += 1
                continue
            _, atom, low, high = item
            count = 0
            while (count < int(high) and position + count < n
                   and _MODEL_ATOMS[atom](subject[position + count])):
                count += 1
                steps += 1
            if count < int(low):
                return False
            for taken in range(count, int(low) - 1, -1):
                steps += 1
                if attempt(index + 1, position + taken):
                    return True
            return False
        return True

    for start in range(n + 1):
        if attempt(0, start):
            return True, steps
    return False, steps


_ITEM = st.one_of(st.sampled_from(sorted(_MODEL_ATOMS)).map(lambda a: ("char", a)),
                  st.sampled_from(sorted(_MODEL_ASSERTIONS)).map(lambda a: ("assert", a)))
_REPEAT = st.tuples(st.just("repeat"), st.sampled_from(sorted(_MODEL_ATOMS)),
                    st.sampled_from(["0", "1", "2"]), st.sampled_from(["1", "3", "999999"]))


def _source(items: list[tuple[str, ...]]) -> str:
    parts = []
    for item in items:
        if item[0] == "repeat":
            high = "" if item[3] == "999999" else item[3]
            parts.append(f"{item[1]}{{{item[2]},{high}}}")
        else:
            parts.append(item[1])
    return "".join(parts)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ITEM, max_size=8), st.none() | st.tuples(st.integers(0, 8), _REPEAT),
       st.sampled_from(["a" * 40, "ab" * 20, "a" * 39 + "\n", ("aab\n" * 10),
                        "".join(random.Random(3).choice("ab\n") for _ in range(40))]))
def test_what_the_quick_path_accepts_costs_linear_steps_in_a_model_of_re(
        items: list[tuple[str, ...]], repeat: tuple[int, tuple[str, ...]] | None,
        subject: str) -> None:
    if repeat is not None:
        items = [*items[:repeat[0]], repeat[1], *items[repeat[0]:]]
    pattern = _source(items)
    assume(int(repeat[1][2]) <= int(repeat[1][3]) if repeat else True)
    compiled = _regex.compile(pattern)
    matched, steps = _model_steps(items, subject)
    assert matched == (re.search(pattern, subject) is not None)  # the model is re's answer
    if compiled.quick:
        n = len(subject)
        assert steps <= 2 * (len(items) + 2) * (n + 1), (pattern, subject, steps)


@pytest.mark.parametrize(("pattern", "items", "subject"), [
    ("a*b", [("repeat", "a", "0", "999999"), ("char", "b")], "a" * 40),
    ("a.{0,}$", [("char", "a"), ("repeat", ".", "0", "999999"), ("assert", "$")], "a" * 39 + "\nb"),
    ("a{40,}", [("repeat", "a", "40", "999999")], "a" * 39 + "b"),
])
def test_the_model_sees_the_quadratic_cost_of_what_the_rule_refuses(
        pattern: str, items: list[tuple[str, ...]], subject: str) -> None:
    assert not _regex.compile(pattern).quick
    _, steps = _model_steps(items, subject)
    assert steps > 2 * (len(items) + 2) * (len(subject) + 1)


# -- the cost of compiling: bounded before the work -----------------------------------------------

#: Issue 44's expressions: 450 distinct classes as wide as Unicode (8,550 characters: Python's re
#: builds each class's bitmap a code point at a time, 7 s here), and 1,000 nested groups (re's
#: parser recursed until RecursionError); 500 nested groups are within the length bound, and
#: as deep as the parser could go.
WIDE_CLASSES = "".join(f"[\\u{0x100 + i:04x}-\\U0010ffff]" for i in range(450))
NESTED = "(" * 1000 + "a" + ")" * 1000
DEEP = "(" * 500 + "a" + ")" * 500

COSTLY = [
    (WIDE_CLASSES, r"^pattern too long: 8550 characters exceed the maximum of 1024$"),
    (NESTED, r"^pattern too long: 2001 characters exceed the maximum of 1024$"),
    (DEEP, r"^pattern too complex: nesting depth 500 exceeds the maximum of 50 at position 50$"),
    ("(?:" * 60 + ")" * 60,
     r"^pattern too complex: nesting depth 60 exceeds the maximum of 50 at position 150$"),
    ("".join(f"[a\\u{0x100 + i:04x}]" for i in range(17)),
     r"^pattern too complex: 17 distinct character classes exceed the maximum of 16$"),
    ("x[\\u0001-\\uffff]y[\\u0001-\\uffff]",
     r"^pattern too complex: its character classes span 131070 code points, "
     r"more than the maximum of 65536$"),
    # What hides a group from a careless scan hides nothing from this one: a ')' in a class, a
    # '[' in a verbose comment, a '#' outside the verbose group.
    ("([)]" * 255, r"^pattern too complex: nesting depth 255 exceeds the maximum of 50"),
    ("(?x:#[\n)#" + DEEP + "\n]", r"^pattern too complex: nesting depth 500 exceeds the maximum"),
    ("(?x)#[\n" + DEEP, r"^pattern too complex: nesting depth 500 exceeds the maximum of 50"),
]


@pytest.mark.parametrize(("pattern", "message"), COSTLY, ids=[
    "450 wide classes", "1000 nested groups", "500 nested groups", "60 non-capturing", "17 classes",
    "2 classes as wide as the BMP", "parentheses in classes", "verbose comment", "verbose"])
@pytest.mark.parametrize("entry", [_regex.compile, _regex.compile_set])
def test_a_pattern_too_costly_to_compile_is_refused_before_with_the_bound_it_passed(
        pattern: str, message: str, entry: Callable[[str], Any]) -> None:
    """Refused by a scan of its text and of its parsed tree, before re or the NFA compile
    anything; compile_set does not hand it to re either (as it does what the DFA cannot run)."""
    with pytest.raises(_regex.PatternTooCostly, match=message) as raised:
        entry(pattern)
    assert isinstance(raised.value, re.error)
    assert isinstance(raised.value, ValueError)
    assert not isinstance(raised.value, _regex.UnsupportedPattern)


def test_bytes_patterns_are_bounded_alike() -> None:
    with pytest.raises(_regex.PatternTooCostly,
                       match=r"pattern too long: 1025 bytes exceed the maximum of 1024"):
        _regex.compile_set(b"a" * 1025)
    with pytest.raises(_regex.PatternTooCostly, match=r"nesting depth 500 exceeds the maximum"):
        _regex.compile_set(DEEP.encode())


def test_what_re_alone_can_run_is_bounded_too() -> None:
    """A lookahead sends compile_set's pattern to re: the bounds hold before that."""
    with pytest.raises(_regex.PatternTooCostly, match="nesting depth"):
        _regex.compile_set("(?!amq\\.)" + DEEP)
    with pytest.raises(_regex.PatternTooCostly, match="character classes span"):
        _regex.compile_set("^(?!amq\\.)[\\u0001-\\uffff]x[\\u0001-\\uffff]")


def test_patterns_at_the_bounds_compile() -> None:
    assert _regex.compile_set("a" * _regex.MAX_PATTERN_LENGTH).search("a" * 1024)
    nested = "(" * _regex.MAX_NESTING + "a" + ")" * _regex.MAX_NESTING
    assert _regex.compile(nested).search("a")
    assert _regex.compile_set("(?=a)" + nested).search("a")
    classes = "".join(f"[a\\u{0x100 + i:04x}]" for i in range(_regex.MAX_CLASSES))
    assert _regex.compile_set(classes).search("a" * _regex.MAX_CLASSES)
    assert _regex.compile("[\\u0000-\\uffff][\\U00010000-\\U0010ffff]").search("a\U0001f600")
    assert _regex.compile("[\\u0000-\\uffff]{2}").search("ab")  # (one class, repeated)
    assert _regex.compile_set("^(?:" + "|".join(f"q{i}-[0-9]+" for i in range(60)) + ")$"
                              ).search("q59-7")  # (the same class, 60 times: one class)


@pytest.mark.parametrize(("pattern", "position"), [
    ("a{65536}", 7), ("a{1,65536}", 9), ("a{65536,}", 7), ("xy{99999999999}", 8),
    ("a\\\\{99999}", 9)])
def test_a_count_past_65535_is_refused_as_rabbitmqs_pcre_refuses_it(pattern: str,
                                                                     position: int) -> None:
    """PCRE's limit and its text and offset (RabbitMQ 3.10.8 refused each of these policy
    patterns with them); Python's re takes counts to 4294967294."""
    with pytest.raises(re.error) as raised:
        _regex.compile_set(pattern)
    assert (raised.value.msg, raised.value.pos) == ("number too big in {} quantifier", position)
    assert not isinstance(raised.value, _regex.PatternTooCostly)


@pytest.mark.parametrize("pattern", ["a{,70000}", "[a{99999}]", "a\\{99999}", "a{65535}",
                                     "(?x)# {99999}\na"])
def test_what_pcre_takes_as_no_count_is_not_refused_as_one(pattern: str) -> None:
    _regex.compile_set(pattern)


def test_a_count_too_large_for_re_is_its_error_not_an_overflow() -> None:
    with pytest.raises(re.error, match="the repetition number is too large"):
        _regex.compile_set("x{,99999999999}")


def _deep(depth: int, call: Callable[[], Any]) -> Any:
    """``call()`` under ``depth`` more frames (a listener's stack is deeper than a test's)."""
    return call() if depth == 0 else _deep(depth - 1, call)


REGEX_TEXT = st.lists(st.sampled_from([*"()[]{}\\|*+?^$.#-:,=!<>Pxiams0123456789ab \n",
                                        "(?", "(?x)", "(?x:", "(?-x:", "(?#", "\\u0100",
                                        "-\\uffff]", "{9", "99999999", "(?P<n>", "[^", "\\"]),
                      max_size=40).map("".join)
DEEP_OR_WIDE = st.tuples(st.integers(0, 600), st.integers(0, 300), REGEX_TEXT).map(
    lambda t: "(" * t[0] + "[\\u0001-\\u%04x]" % (t[1] * 200 + 1) + t[2] + ")" * t[0])


@PROPERTY
@given(st.one_of(st.text(max_size=80), REGEX_TEXT, DEEP_OR_WIDE,
                 st.binary(max_size=80), REGEX_TEXT.map(lambda s: s.encode("utf-8"))))
def test_any_pattern_compiles_within_the_bounds_or_is_refused_with_res_error(
        pattern: str | bytes) -> None:
    """Whatever a client sends: a compiled pattern, or re.error (a syntax error, a construct
    the DFA cannot run, a bound passed); never another exception (RecursionError, an
    OverflowError...), at the depth of a listener's stack."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for entry in (_regex.compile, _regex.compile_set):
            try:
                compiled = _deep(300, lambda: entry(pattern))  # noqa: B023 (called at once)
            except re.error:
                continue
            assert len(pattern) <= _regex.MAX_PATTERN_LENGTH
            subject: Any = b"ab" if isinstance(pattern, bytes) else "ab"
            compiled.search(subject)


@PROPERTY
@given(REGEX_TEXT, st.booleans())
def test_the_scan_never_reads_a_shallower_nesting_than_res_parser_recurses_to(
        pattern: str, verbose: bool) -> None:
    """The nesting bound stands in for the parser's recursion: up to the parser's first error,
    the scan's depth is at least the number of groups the parser has open (counted here by
    wrapping its _parse_sub, entered once per group and once for the whole)."""
    parser: Any = _regex._parser
    original = parser._parse_sub
    open_groups = deepest = 0

    def counting(*args: Any) -> Any:
        nonlocal open_groups, deepest
        deepest = max(deepest, open_groups)
        open_groups += 1
        try:
            return original(*args)
        finally:
            open_groups -= 1

    parser._parse_sub = counting
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parser.parse(pattern, re.X if verbose else 0)
    except re.error:
        pass
    finally:
        parser._parse_sub = original
    try:
        scanned, _, turned_on = _regex._scan(pattern, pattern, verbose)
        if turned_on and not verbose:
            scanned = max(scanned, _regex._scan(pattern, pattern, True)[0])
    except re.error:
        return  # (a count PCRE refuses: refused before the parser runs)
    assert scanned >= deepest, (pattern, scanned, deepest)
