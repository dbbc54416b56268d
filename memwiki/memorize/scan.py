"""Fast regex scanning for the scrubber, with exactly the matches `finditer` gives.

Two tricks, both exact:

- Keywords: every rule runs only where one of its keywords is in the lower-cased text
  (scrub_keywords.py finds which are).
- Anchors: most rules need a literal (`password`, `kind:`, `BEGIN`) at a bounded
  distance from where their match starts, yet `finditer` tries the regex at every
  position (gitleaks' `[\\w.-]{0,50}?password…` costs 50 steps a character). `anchor`
  reads that literal and bound from the parsed regex; `finditer` then tries the regex
  only at the positions a literal occurrence allows, in order, which yields the same
  matches, since a match always holds one of the literals. The scrubber's anchors are
  worked out ahead of time (ANCHORS_FILE).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as P  # type: ignore[attr-defined]
from typing import Any, Generic, NamedTuple, TypeVar

# An anchor is worth it only when its literal is rare enough and the bound small enough:
# otherwise trying the regex around every occurrence costs more than one finditer.
MIN_LITERAL = 3
MAX_LEAD = 64


class Anchor(NamedTuple):  # a NamedTuple, not a dataclass: ~0.4 ms less to import
    """Every match holds one of `lits` at most `lead` characters after its start."""

    lits: tuple[str, ...]  # as the pattern spells them, longest first
    lead: int
    literals: tuple[str, ...]  # lower case; all ASCII, or () when one is not
    # `[class]*\Z` when everything before the literal is one character class (gitleaks'
    # `[\w.-]{0,50}?password`): a match starts inside the run of it that ends at the literal
    run_source: str | None = None
    run_flags: int = 0

    @property
    def finder(self) -> re.Pattern[str]:
        """A regex for the literals wherever the pattern's engine could match them."""
        # IGNORECASE on the pattern's own engine finds every place a literal can match
        # there (and more, which only costs a try); DOTALL so that no literal is missed.
        return _compiled("|".join(map(re.escape, self.lits)), re.IGNORECASE | re.DOTALL)

    @property
    def run(self) -> re.Pattern[str] | None:
        """`[class]*\\Z` for the class every character before the literal is in, if one."""
        return None if self.run_source is None else _compiled(self.run_source, self.run_flags)


_compiled = cache(re.compile)


def _width(item: tuple) -> int:
    return int(P.SubPattern(P.State(), [item]).getwidth()[1])


Found = tuple[frozenset[str], int, list[tuple] | None]


def _anchor_in(items: list[tuple]) -> Found | None:
    """(literals, lead, items before) for a parsed sequence: one literal is in every match,
    `lead` at most in, after those items (None: they are not known)."""
    best: Found | None = None
    before = 0  # the most characters the items before the current one can match
    for i, (op, av) in enumerate(items):
        found: Found | None = None
        if op is C.LITERAL:
            run = ""
            for op2, av2 in items[i:]:
                if op2 is not C.LITERAL:
                    break
                run += chr(av2)
            found = (frozenset([run]), 0, None)
        elif op is C.SUBPATTERN:
            found = _anchor_in(list(av[-1].data))
        elif op is C.BRANCH:
            alts = [_anchor_in(list(a.data)) for a in av[1]]
            if alts and all(a is not None for a in alts):
                found = (
                    frozenset().union(*(a[0] for a in alts if a)),
                    max(a[1] for a in alts if a),
                    None,
                )
        if found is not None:
            lits, lead = found[0], found[1] + before
            key = (min(map(len, lits)), -lead)
            # a longer literal too far in is no anchor at all (`…lob…(live|test)_`, 84 in)
            usable = lead <= MAX_LEAD
            if usable and (best is None or key > (min(map(len, best[0])), -best[1])):
                best = (lits, lead, items[:i] if found[1] == 0 else None)
        width = _width((op, av))
        if width >= C.MAXREPEAT:
            break
        before += width
    return best


_CATEGORIES = {
    C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D", C.CATEGORY_SPACE: r"\s",
    C.CATEGORY_NOT_SPACE: r"\S", C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W",
}  # fmt: skip
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT))


def _run_of(before: list[tuple] | None, flags: int) -> tuple[str, int] | None:
    """`[class]*\\Z` for items that are one character class, repeated (or zero-width)."""
    parts: list[str] = []
    for op, av in before or ():
        if op is C.AT:
            continue  # `\b`, `^`: zero-width, they only narrow where a match starts
        if op in _REPEATS and len(av[2].data) == 1:
            op, av = av[2].data[0]
        if op is C.LITERAL:
            parts.append(re.escape(chr(av)))
        elif op is C.IN:
            for op2, av2 in av:
                if op2 is C.LITERAL:
                    parts.append(re.escape(chr(av2)))
                elif op2 is C.RANGE:
                    parts.append(re.escape(chr(av2[0])) + "-" + re.escape(chr(av2[1])))
                elif op2 is C.CATEGORY and av2 in _CATEGORIES:
                    parts.append(_CATEGORIES[av2])
                else:
                    return None  # a negated set or anything rarer: no run
        else:
            return None
    if not parts:
        return None
    # the pattern's own case and ASCII flags, so the class means what it means there
    keep = flags & (re.IGNORECASE | re.ASCII)
    return "[" + "".join(parts) + "]*\\Z", int(keep)


def anchor(pattern: re.Pattern[str]) -> Anchor | None:
    """The literal every match of pattern holds near its start, if it has a useful one."""
    try:
        parsed = P.parse(pattern.pattern, pattern.flags)
        found = _anchor_in(list(parsed.data))
    except (re.error, TypeError, ValueError, RecursionError):
        return None
    if found is None or min(map(len, found[0])) < MIN_LITERAL or found[1] > MAX_LEAD:
        return None
    lits = tuple(sorted(found[0], key=lambda x: (-len(x), x)))
    ascii_lits = tuple(x.lower() for x in lits) if all(x.isascii() for x in lits) else ()
    run = _run_of(found[2], pattern.flags)
    return Anchor(lits, found[1], ascii_lits, *(run or (None, 0)))


# The characters beyond ASCII that case-insensitive matching takes for an ASCII letter, or
# whose lower case is ASCII or two characters long (found over all of Unicode; a test
# holds the list to it). A text without them has an ASCII literal match case-insensitively
# exactly where the literal's lower case is in text.lower(), at the same positions.
FOLDS_TO_ASCII = "\u0130\u0131\u017f\u212a"  # İ ı ſ K (Kelvin)


def literal_low(text: str, low: str) -> str | None:
    """low (text.lower()) when ASCII literals may be found in it with str.find, else None."""
    if text.isascii():
        return low
    # Code read by an agent is rarely pure ASCII (`  12→` line numbers, quotes, accents),
    # and the case-insensitive regex search for literals costs several times str.find.
    return None if any(c in text for c in FOLDS_TO_ASCII) else low


def _starts(anchor: Anchor, text: str, low: str | None) -> Iterator[tuple[int, int]]:
    """(first, last) start positions to try, in order, for each literal occurrence."""
    if low is not None and anchor.literals:
        # A literal can match only where its lower case is in low (literal_low), and
        # str.find is many times faster than a case-insensitive regex search.
        found: set[int] = set()
        for lit in anchor.literals:
            j = low.find(lit)
            while j >= 0:
                found.add(j)
                j = low.find(lit, j + 1)
        run = anchor.run
        for j in sorted(found):
            first = max(0, j - anchor.lead)
            if run is not None:
                # the run of the class that ends at j: a match starts nowhere before it
                first = run.search(text, first, j).start()  # type: ignore[union-attr]
            yield first, j
        return
    for occ in anchor.finder.finditer(text):
        # a literal starting inside this occurrence (overlapping it) is covered too
        yield occ.start() - anchor.lead, occ.end() - 1


def finditer(
    pattern: re.Pattern[str], text: str, anchor: Anchor | None, low: str | None = None
) -> Iterator[re.Match[str]]:
    """The matches pattern.finditer(text) yields, found by trying only near anchors.

    low: literal_low(text, text.lower()), for a faster literal search (None: the regex).
    """
    if anchor is None:
        yield from pattern.finditer(text)
        return
    pos = 0  # finditer's position: no match may start before it
    for first, last in _starts(anchor, text, low):
        p = max(pos, first)
        while p <= last:
            m = pattern.match(text, p)
            if m is None:
                p += 1
                continue
            yield m
            p = m.end() if m.end() > m.start() else m.end() + 1
            pos = p
        pos = max(pos, last + 1)


class Runs(NamedTuple):
    """Every match lies inside one match of `run` and starts at its start or after `after`.

    For a rule with no literal to anchor on whose matches are made of one character
    class (`prefix_<24+ of [A-Za-z0-9_-]>`): such runs are rare in ordinary text, and
    where a match can start within one (a word boundary) is known from the characters.
    """

    run: re.Pattern[str]
    after: str  # a match can also start right after this character inside a run


def in_runs(pattern: re.Pattern[str], text: str, runs: Runs) -> Iterator[re.Match[str]]:
    """The matches pattern.finditer(text) yields, tried only where runs allows them."""
    pos = 0
    for run in runs.run.finditer(text):
        a, b = run.span()
        starts = [a]
        j = text.find(runs.after, a, b)
        while j >= 0:
            starts.append(j + 1)
            j = text.find(runs.after, j + 1, b)
        for p in starts:
            if p < pos:
                continue
            m = pattern.match(text, p)
            if m is not None:
                yield m
                pos = m.end() if m.end() > m.start() else m.end() + 1


# Where each of the scrubber's rules can match, worked out by `anchor` ahead of time
# (python -m memwiki.memorize.scrub_build): parsing a regex again to find its anchor cost
# ~0.5 ms a rule, three times its compilation. A pattern not in the file (a rule edited
# since) is worked out here: the file only saves time, never decides a match.
ANCHORS_FILE = Path(__file__).with_name("rules") / "anchors.json"


def anchor_key(pattern: re.Pattern[str]) -> str:
    """The key of pattern in ANCHORS_FILE: its flags and its text."""
    return f"{pattern.flags}:{pattern.pattern}"


def anchor_spec(found: Anchor | None) -> list[Any] | None:
    """An anchor as ANCHORS_FILE holds it."""
    if found is None:
        return None
    return [list(found.lits), found.lead, list(found.literals), found.run_source, found.run_flags]


@cache
def _known() -> dict[str, Any]:
    try:
        data = json.loads(ANCHORS_FILE.read_bytes())
    except (OSError, ValueError):
        return {}
    table = data.get("anchors") if isinstance(data, dict) else None
    return table if isinstance(table, dict) else {}


@cache
def cached_anchor(pattern: re.Pattern[str]) -> Anchor | None:
    """anchor(pattern), read from ANCHORS_FILE when it is there."""
    key = anchor_key(pattern)
    known = _known()
    if key in known:
        spec = known[key]
        if spec is None:
            return None
        try:
            lits, lead, literals, run_source, run_flags = spec
            return Anchor(tuple(lits), int(lead), tuple(literals), run_source, int(run_flags))
        except (TypeError, ValueError):
            pass  # a damaged entry: worked out again
    return anchor(pattern)


T = TypeVar("T")


class ByKeyword(Generic[T]):
    """Rules in order, and which of them can match a text that holds given keywords."""

    def __init__(self, rules: Iterable[T], keys: Callable[[T], tuple[str, ...]]):
        self.rules = list(rules)
        of: dict[str, list[int]] = {}
        for i, rule in enumerate(self.rules):
            for k in keys(rule):
                of.setdefault(k, []).append(i)
        self._of = {k: tuple(v) for k, v in of.items()}
        self._always = frozenset(i for i, rule in enumerate(self.rules) if not keys(rule))
        self._chosen: dict[frozenset[str], list[T]] = {}

    def select(self, present: set[str] | None) -> list[T]:
        """The rules one of whose keywords is present (or that have none); all without present."""
        if present is None:
            return self.rules
        # Asking each of ~270 rules per text whether a keyword of its is present cost more
        # than the regexes on a short string; the same few keyword sets come back.
        key = frozenset(present)
        chosen = self._chosen.get(key)
        if chosen is None:
            indices = set(self._always)
            for k in key:
                indices.update(self._of.get(k, ()))
            chosen = [self.rules[i] for i in sorted(indices)]
            if len(self._chosen) >= 4096:
                self._chosen.clear()
            self._chosen[key] = chosen
        return chosen


def keyed(
    pattern: re.Pattern[str],
    keys: Iterable[str],
    text: str,
    low: str | None,
    present: set[str] | None,
    ascii_low: str | None = None,
    runs: Runs | None = None,
) -> Iterator[re.Match[str]]:
    """pattern's matches in text, or none when it has keywords and none is in text.

    present: the keywords in text (scrub_keywords), for the fast path, which tries the
    regex only near its anchors; without it, each keyword is looked up in low (text
    lower-cased) and the regex runs over all of text: the reference path the fast one is
    tested against. ascii_low: literal_low(text, low), for a faster anchor search.
    runs: where the fast path may try a pattern that has no anchor (Runs).
    """
    if present is None:
        if keys and not any(k in low for k in keys):  # type: ignore[operator]
            return iter(())
        return pattern.finditer(text)
    if keys and present.isdisjoint(keys):
        return iter(())
    if runs is not None:
        return in_runs(pattern, text, runs)
    return finditer(pattern, text, cached_anchor(pattern), ascii_low)
