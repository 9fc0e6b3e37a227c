"""The topic trie's compact form (#49): a pattern's unshared words kept in one node, dicts and
lists made only when needed; it matches exactly as the plain trie of one node per word did (the
same values, in the same order, with the same repeats) and as the reference matcher says, and
is left empty when every pattern is removed."""

from __future__ import annotations

import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from embroker.model._exchange import TopicTrie, split_topic

from ..oracles import topic_matches


class PlainTrie:
    """The trie as it was before it was compacted (a node per word, each with a dict and a
    list), kept as the reference for the order in which ``match`` returns values."""

    def __init__(self) -> None:
        self.root: tuple[dict[str, Any], list[int]] = ({}, [])

    def add(self, pattern: str, value: int) -> None:
        node = self.root
        for word in split_topic(pattern):
            node = node[0].setdefault(word, ({}, []))
        node[1].append(value)

    def remove(self, pattern: str, value: int) -> None:
        node = self.root
        for word in split_topic(pattern):
            node = node[0][word]
        node[1].remove(value)

    def match(self, key: str) -> list[int]:
        words = split_topic(key)
        out: list[int] = []
        seen: set[tuple[int, int]] = set()

        def walk(node: tuple[dict[str, Any], list[int]], i: int) -> None:
            children = node[0]
            hash_node = children.get("#")
            if hash_node is not None:
                for j in range(i, len(words) + 1):
                    if (id(hash_node), j) not in seen:
                        seen.add((id(hash_node), j))
                        walk(hash_node, j)
            if i == len(words):
                out.extend(node[1])
                return
            for child in (children.get(words[i]), children.get("*")):
                if child is not None:
                    walk(child, i + 1)
        walk(self.root, 0)
        return out


def shape(trie: TopicTrie[int]) -> object:
    """The trie's nodes as nested tuples (order of children aside)."""
    def of(node: Any) -> object:
        children = node.children
        kids = None if children is None else sorted((w, of(c)) for w, c in children.items())
        return (node.tail, node.values, kids)
    return of(trie._root)


words = st.sampled_from(["a", "b", "", "*", "#"])
patterns = st.lists(st.sampled_from(["a", "", "*", "#"]), max_size=4).map(".".join)
keys = st.lists(words, max_size=6).map(".".join)
# A few patterns: some the prefixes of one another (chains to compress and to split), and others.
pools = st.tuples(st.lists(st.sampled_from(["a", "", "*", "#"]), max_size=5),
                  st.lists(patterns, max_size=4)).map(
    lambda drawn: [".".join(drawn[0][:k]) for k in range(len(drawn[0]) + 1)] + drawn[1])


@settings(max_examples=500, deadline=None)
@given(pools,
       st.lists(st.tuples(st.booleans(), st.integers(0, 99), st.integers(0, 3)), max_size=40),
       st.lists(keys, min_size=1, max_size=5))
def test_trie_after_adds_and_removes_matches_as_the_plain_trie_and_the_oracle(
        pool: list[str], ops: list[tuple[bool, int, int]], probes: list[str]) -> None:
    trie, plain = TopicTrie[int](), PlainTrie()
    bound: list[tuple[str, int]] = []
    for n, (adding, which, pick) in enumerate(ops):
        # A few patterns, often sharing words; each binding a value of its own (as each
        # Binding is), and the same pattern bound several times.
        pattern, value = pool[which % len(pool)], n
        if adding:
            trie.add(pattern, value)
            plain.add(pattern, value)
            bound.append((pattern, value))
        elif bound:
            pattern, value = bound.pop(pick % len(bound))
            trie.remove(pattern, value)
            plain.remove(pattern, value)
        assert trie._check() == len(bound)
    for key in probes:
        found = trie.match(key)
        assert found == plain.match(key)
        assert set(found) == {v for p, v in bound if topic_matches(p, key)}
    # The same patterns added afresh make the very same nodes: removing undoes what adding did.
    fresh = TopicTrie[int]()
    for pattern, value in bound:
        fresh.add(pattern, value)
    assert shape(trie) == shape(fresh)
    for pattern, value in list(bound):
        trie.remove(pattern, value)
    assert trie._check() == 0
    assert trie._root.children == {}
    assert trie._root.values is None


def test_unshared_words_stay_in_one_node_until_a_second_pattern_branches() -> None:
    trie = TopicTrie[str]()
    trie.add("k1.*.created", "one")
    leaf = trie._root.children["k1"]  # type: ignore[index]
    assert (leaf.tail, leaf.children, leaf.values) == (("*", "created"), None, ["one"])
    assert leaf.tail[1] is sys.intern("created")
    trie.add("k1.*.deleted", "two")
    star = trie._root.children["k1"].children["*"]  # type: ignore[index]
    assert star.children["created"].tail == ()  # type: ignore[index]
    assert star.children["deleted"].values == ["two"]  # type: ignore[index]
    assert trie.match("k1.eu.created") == ["one"]
    assert trie.match("k1.eu.deleted") == ["two"]
    trie.remove("k1.*.deleted", "two")
    leaf = trie._root.children["k1"]  # type: ignore[index]
    assert (leaf.tail, leaf.children, leaf.values) == (("*", "created"), None, ["one"])


def test_a_pattern_ending_inside_another_ones_tail_splits_it() -> None:
    trie = TopicTrie[str]()
    trie.add("a.#.b", "long")
    trie.add("a.#", "short")
    assert trie.match("a.x.b") == ["long", "short"]
    assert trie.match("a") == ["short"]
    trie.remove("a.#.b", "long")
    assert trie._root.children["a"].tail == ("#",)  # type: ignore[index]
    assert trie._check() == 1


def test_removing_a_pattern_that_is_not_there_raises() -> None:
    trie = TopicTrie[str]()
    trie.add("a.b.c", "x")
    for pattern in ("a.b", "a.b.c.d", "a.x.c", "z"):
        try:
            trie.remove(pattern, "x")
        except KeyError:
            pass
        else:
            raise AssertionError(pattern)
    assert trie.match("a.b.c") == ["x"]
