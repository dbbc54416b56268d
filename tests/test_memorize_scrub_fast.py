"""The scrubber's fast path finds exactly the spans of the straightforward reference path."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import scrub_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwiki.memorize import gitleaks, scan, scrub, scrub_rules
from memwiki.memorize.scrub import find_spans

sys.path.insert(0, str(Path(__file__).parent / "bench"))
import scrub_corpus_gen  # noqa: E402

SAMPLES = scrub_corpus.secret_samples(per_format=1)
BENIGN = scrub_corpus.benign_lines()
KEYWORDS = sorted(scrub._keywords().words)
ALL_PATTERNS = (
    [r.pattern for r in scrub._TOKEN_RULES]
    + [r.pattern for r in scrub_rules._CLASS_RULES + scrub_rules._BLOCK_RULES]
    + [r.pattern for r in gitleaks.rules()[0]]
)


def _same(text: str) -> None:
    assert find_spans(text) == find_spans(text, fast=False), text[:200]


def test_the_corpora_give_the_same_spans_both_ways():
    for _, text, _ in SAMPLES:
        _same(text)
    for line in BENIGN:
        _same(line)
    _same("\n".join(BENIGN + [t for _, t, _ in SAMPLES]))  # several windows


def test_a_large_generated_session_gives_the_same_spans_both_ways():
    strings = scrub_corpus_gen.session_strings(0.4, seed=11)
    found = 0
    for text in strings:
        fast = find_spans(text)
        assert fast == find_spans(text, fast=False)
        found += len(fast)
    assert found >= 5  # the planted secrets are there to be found


# Pieces that sit near what the rules look for: secrets, their keywords and literals,
# near-misses (a key and a short value), code, unicode that lower() changes, escapes.
_PIECES = st.one_of(
    st.sampled_from([t for _, t, _ in SAMPLES]),
    st.sampled_from(BENIGN),
    st.sampled_from(KEYWORDS),
    st.sampled_from(
        ["password", "PASSWORD=", "token: ", "Bearer ", "-----BEGIN ", "api_key", "kind: Secret",
         "data:", "=", ":", '"', "'", "\\n", "\\\\", "\n", " ", "\t", "İ", "ſ", "K", "Σ",
         "sk-", "ghp_", "eyJ", "://", "@", "AKIA", "xox", "-p", "--token ", "$2b$"]
    ),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    st.text(alphabet="abcdefABCDEF0123456789_-+/=.", min_size=8, max_size=48),
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=24))
def test_generated_text_gives_the_same_spans_both_ways(pieces):
    _same("".join(pieces))


@settings(max_examples=200, deadline=None)
@given(st.lists(_PIECES, max_size=16))
def test_keywords_found_in_one_pass_are_the_keywords_in_the_text(pieces):
    low = "".join(pieces).lower()
    assert scrub._keywords().present(low) == {k for k in KEYWORDS if k in low}


def test_anchored_scanning_yields_what_finditer_yields_for_every_rule():
    rng = random.Random(5)
    texts = [t for _, t, _ in SAMPLES] + ["\n".join(rng.sample(BENIGN, 40)) for _ in range(3)]
    anchored = 0
    for pattern in ALL_PATTERNS:
        anchor = scan.anchor(pattern)
        anchored += anchor is not None
        for text in texts:
            low = text.lower() if text.isascii() else None
            want = [(m.span(), m.groups()) for m in pattern.finditer(text)]
            got = [(m.span(), m.groups()) for m in scan.finditer(pattern, text, anchor, low)]
            assert got == want, (pattern.pattern, text[:120])
    assert anchored >= 200  # most rules have a literal to anchor on


def test_an_anchor_is_the_literal_every_match_holds_within_its_lead():
    a = scan.anchor(re.compile(r"(?i)[\w.-]{0,50}?(?:administrator_login_password|password)x"))
    assert a is not None and a.lead == 50 and "password" in a.literals
    assert scan.anchor(re.compile(r"\w+password")) is None  # unbounded lead: no anchor
    assert scan.anchor(re.compile(r"ab|cd")) is None  # literals too short to help
    rx = re.compile(r"\b(?:token|secret)[:=]\s*(\w+)")
    text = "x token=abc secrettoken:q tokenizer secret= v"
    assert [m.span() for m in scan.finditer(rx, text, scan.anchor(rx), text)] == [
        m.span() for m in rx.finditer(text)
    ]


def test_the_characters_that_fold_to_ascii_are_all_known():
    # literal_low trusts str.find in text.lower() unless one of these is in the text
    letter = re.compile("[a-z]", re.IGNORECASE)
    found = ""
    for cp in range(0x80, sys.maxunicode + 1):
        c = chr(cp)
        if 0xD800 <= cp <= 0xDFFF:
            continue
        low = c.lower()
        if len(low) != 1 or low.isascii() or letter.match(c):
            found += c
    assert found == scan.FOLDS_TO_ASCII


def test_anchored_scanning_of_text_beyond_ascii_yields_what_finditer_yields():
    rng = random.Random(9)
    lines = [t for _, t, _ in SAMPLES] + BENIGN
    texts = []
    for extra in ("→", "é", "ſ", "İ", "\u212a", "ı", "Σ"):
        # the odd character where it can stand for a letter of a literal (`paſsword`)
        odd = f" pa{extra}sword is Sun#2024x, to{extra}en is Qw8zLm2#x; {extra}dentified by 'Qw8zL'"
        picked = [*rng.sample(lines, 12), "password=Zx9kLm2Qp kind: Secret", odd]
        # numbered like a file an agent read
        texts.append("\n".join(f"{i:6}{extra}{ln}" for i, ln in enumerate(picked)))
    anchored = [p for p in ALL_PATTERNS if (a := scan.anchor(p)) is not None and a.literals]
    matched = 0
    for pattern in anchored:
        anchor = scan.anchor(pattern)
        for text in texts:
            low = scan.literal_low(text, text.lower())
            want = [(m.span(), m.groups()) for m in pattern.finditer(text)]
            got = [(m.span(), m.groups()) for m in scan.finditer(pattern, text, anchor, low)]
            assert got == want, (pattern.pattern, text[:120])
            matched += len(want)
    assert matched >= 10


def test_a_rule_tried_only_inside_runs_yields_what_finditer_yields():
    rule = next(r for r in scrub_rules._CLASS_RULES if r.runs is not None)
    body = "Zx9kLm2QpR7vT4wYb8Nc3Dd5Ee6Ff"
    texts = [t for _, t, _ in SAMPLES] + [
        f"whsec_{body} x-{body}-ab_{body} é{body}_q{body} ab_{body}é sk_live_{body}",
        f"-{body}--{body} a-b-c-{body} {body[:26]} sha1_{body} pre-{body}-{body}",
        "\n".join(BENIGN),
    ]
    for text in texts:
        want = [(m.span(), m.groups()) for m in rule.pattern.finditer(text)]
        got = [(m.span(), m.groups()) for m in scan.in_runs(rule.pattern, text, rule.runs)]
        assert got == want, text[:120]
    assert sum(len(list(rule.pattern.finditer(t))) for t in texts) >= 5


def test_the_long_flag_rule_spelled_to_start_with_a_literal_matches_as_before():
    long_flag = re.compile(scrub_rules._LONG_FLAG)
    before = re.compile(r"(?<![\w-])" + long_flag.pattern.replace(
        r"(?i:-(?<![\w-]-)-?", r"(?i:--?", 1))  # fmt: skip
    assert before.pattern != long_flag.pattern
    texts = (
        [t for _, t, _ in SAMPLES]
        + BENIGN
        + [
            "--password x a--password y -token=z x-token w --db-password v\n-pwd u",
            "---password q --x_api-key r ab-secret s\t--Auth-Token t",
        ]
    )
    for text in texts:
        want = [(m.span(), m.groups()) for m in before.finditer(text)]
        assert [(m.span(), m.groups()) for m in long_flag.finditer(text)] == want


def test_a_lead_of_one_character_class_narrows_where_a_match_can_start():
    rx = re.compile(r"(?i)[\w.-]{0,50}?(?:password)[ \t]*[:=][ \t]*(\w{6,})", re.ASCII)
    a = scan.anchor(rx)
    assert a is not None and a.run is not None and a.lead == 50
    text = "x = 1; db.main-password = abcdef12 and é_password: q1w2e3r4 (password=zzzzzz)"
    low = text.lower()
    # the run of [\w.-] ending at each `password`: `db.main-`, `_` (é is no ASCII \w), none
    starts = [first for first, _ in scan._starts(a, text, low)]
    assert starts == [text.index("db.main"), text.index("_password"), text.index("(") + 1]
    got = [(m.span(), m.groups()) for m in scan.finditer(rx, text, a, low)]
    assert got == [(m.span(), m.groups()) for m in rx.finditer(text)] and len(got) == 3
    assert scan.anchor(re.compile(r"[^x]{0,9}password")).run is None  # a negated set


def test_rules_chosen_by_keyword_keep_their_order_and_the_rules_without_one():
    rules = [("a", ("pass",)), ("b", ()), ("c", ("token", "pass")), ("d", ("key",))]
    by = scan.ByKeyword(rules, lambda r: r[1])
    assert [r[0] for r in by.select({"token", "pass"})] == ["a", "b", "c"]
    assert [r[0] for r in by.select({"key", "other"})] == ["b", "d"]
    assert [r[0] for r in by.select(set())] == ["b"]
    assert by.select(None) == rules  # the reference path runs every rule


def test_the_assignment_rule_with_possessive_repeats_matches_as_before():
    before = re.compile(scrub_rules._ASSIGNMENT.pattern.replace("*+", "*"))
    assert before.pattern != scrub_rules._ASSIGNMENT.pattern
    texts = [t for _, t, _ in SAMPLES] + BENIGN
    texts += ['a.b-c = "x" \\"k\\": v $env:T = 1 @x := y k ?= z k=>v "q":  \'w\'', "x" * 300]
    for text in texts:
        want = [(m.span(), m.groupdict()) for m in before.finditer(text)]
        got = [(m.span(), m.groupdict()) for m in scrub_rules._ASSIGNMENT.finditer(text)]
        assert got == want, text[:120]


def test_a_short_string_seen_again_gives_the_same_spans():
    text = "export DB_PASSWORD=Zx9kLm2Qp"
    first = find_spans(text)
    assert first and len(text) <= scrub.SHORT
    first.append((0, 1, "changed by the caller"))  # a copy: the kept spans stay as found
    assert find_spans(text) == find_spans(text, fast=False) == first[:-1]
