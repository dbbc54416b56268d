"""Which of the scrubber's ~300 keywords are in a text: what decides the rules that run on it.

Checking ~300 keywords one `in` at a time read the text ~300 times; `Keywords` finds
them with one trie-shaped regex per first character (~40), each of which the regex
engine skips through to that character's occurrences, compiled once a process has read
enough text to make it worth it (until then its few keywords are looked up one by one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def _trie(words: Iterable[str]) -> str:
    root: dict[str, dict] = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:
        alts = [re.escape(ch) + emit(node[ch]) for ch in sorted(k for k in node if k)]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 and "" not in node else "(?:" + "|".join(alts) + ")"
        # greedy: the longest keyword at a position, whose prefixes are keywords too
        return body + ("?" if "" in node else "")

    return emit(root)


# Until a group's regex has read this many characters' worth of text, its keywords are
# looked up one `in` at a time: ~0.12 µs a character slower than the regex, whose
# compilation costs ~0.25 ms a group (8 ms for all: most of a short session's scan).
LOOKUP_BUDGET = 65536


class _Group:
    """The keywords that start with one character, and their regex once it pays."""

    __slots__ = ("first", "words", "read", "rx")

    def __init__(self, first: str, words: list[str]):
        self.first, self.words, self.read = first, words, 0
        self.rx: re.Pattern[str] | None = None

    def compile(self) -> re.Pattern[str]:
        """The group's trie regex, compiled now and kept."""
        rests = [w[1:] for w in self.words]
        pattern = re.escape(self.first) + "(?=(" + _trie(rests) + "))"
        self.rx = re.compile(pattern, re.DOTALL)
        return self.rx


class Keywords:
    """Which of a fixed set of keywords occur in a text, found in one pass."""

    def __init__(self, words: Iterable[str], budget: int = LOOKUP_BUDGET):
        self.words = sorted(set(words))
        self.budget = budget
        # One regex per first character: a pattern that starts with a literal is searched
        # by skipping to that character in C, where one trie over all the keywords was
        # tried at nearly every position (their first characters cover the alphabet):
        # 2.2x faster on scrub_corpus_gen's session. The lookahead sees the longest
        # keyword at every occurrence, and every keyword starting there is a prefix of it.
        # Each is compiled only once the text it has read makes it worth it (a short
        # session never does): before that, its keywords are looked up one by one.
        by_first: dict[str, list[str]] = {}
        for w in self.words:
            by_first.setdefault(w[0], []).append(w)
        self._groups = [_Group(first, words) for first, words in by_first.items()]
        self._inside: dict[str, frozenset[str]] = {}

    def _inside_of(self, word: str) -> frozenset[str]:
        # A keyword found implies every keyword inside it (`apikey` holds `key`).
        inside = self._inside.get(word)
        if inside is None:
            inside = self._inside[word] = frozenset(k for k in self.words if k in word)
        return inside

    def present(self, low: str) -> set[str]:
        """The keywords that are substrings of low."""
        found: set[str] = set()
        for group in self._groups:
            if group.first not in low:
                continue
            rx = group.rx
            if rx is None:
                group.read += len(low)
                if group.read <= self.budget:
                    found.update(w for w in group.words if w in low)
                    continue
                rx = group.compile()
            for rest in set(rx.findall(low)):
                found.update(self._inside_of(group.first + rest))
        return found
