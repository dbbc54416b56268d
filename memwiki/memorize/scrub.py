"""Secret scrubbing: every secret-looking span becomes ``[REDACTED:<kind>]``.

Transcripts are scrubbed in memory, before anything reaches the disk (DESIGN §8.6).
Three layers find spans, in this order of precedence for the reported kind: the token
shapes below (the kinds memwiki names itself), the class rules of scrub_rules (where a
value sits: assignments, flags, URLs, key blocks, high entropy), and the provider rules
of gitleaks. Spans are merged and replaced in one go. A session leaves this module only
as a ScrubbedSession, the one type the transcript writers accept.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from . import gitleaks, scan, scrub_keywords, scrub_rules, scrub_values
from .schema import Session
from .scrub_rules import BLOCK_KEYWORDS, Rule
from .scrub_values import CODE_WORDS, MARK, key_strength

__all__ = [
    "CODE_WORDS",
    "MARK",
    "ScrubbedSession",
    "find_spans",
    "key_looks_secret",
    "marker",
    "scrub_session",
    "scrub_text",
    "scrub_value",
]


def marker(kind: str) -> str:
    """The replacement text for one secret of the given kind."""
    return f"{MARK}{kind}]"


# (kind, pattern, group holding the secret (0 = the whole match), keywords: one must be in
# the lower-cased text for the pattern to run). These token shapes name their kinds the
# way memwiki's redaction counts always have; scrub_rules and gitleaks find the rest.
_TOKEN_PATTERNS: list[tuple[str, str, int, tuple[str, ...]]] = [
    ("anthropic-api-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", 0, ("sk-ant-",)),
    ("openai-api-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", 0, ("sk-",)),
    ("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", 0, ("k_live_", "k_test_")),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", 0, ("aiza",)),
    ("google-oauth-token", r"\bya29\.[0-9A-Za-z_\-]{20,}", 0, ("ya29.",)),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}", 0, ("hf_",)),
    ("groq-api-key", r"\bgsk_[A-Za-z0-9]{40,}", 0, ("gsk_",)),
    ("xai-api-key", r"\bxai-[A-Za-z0-9]{40,}", 0, ("xai-",)),
    ("replicate-token", r"\br8_[A-Za-z0-9]{30,}", 0, ("r8_",)),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", 0, ("npm_",)),
    ("pypi-token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", 0, ("pypi-age",)),
    ("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", 0, ("sg.",)),
    (
        "aws-access-key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
        0,
        ("akia", "asia", "abia", "acca", "a3t"),
    ),
    (
        "aws-secret-key",
        r"(?i:aws[A-Za-z0-9_ .\-]{0,24}?(?:secret|sak)[A-Za-z0-9_ .\-]{0,24}?)"
        r"[\"']?\s*(?::=|=>|=|:)\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        1,
        ("aws",),
    ),
    (
        "github-token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b",
        0,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,255}", 0, ("github_pat_",)),
    (
        "gitlab-token",
        r"\bgl(?:pat|ptt|dt|rt|cbt|oas|soat|ft|imt)-[A-Za-z0-9_\-]{20,}",
        0,
        ("gl",),
    ),
    ("slack-token", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}", 0, ("xox",)),
    (
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9]+/[A-Za-z0-9]+/[A-Za-z0-9]+",
        0,
        ("hooks.slack.com",),
    ),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", 0, ("eyj",)),
]
_TOKEN_RULES = [Rule(rx, kind, group, None, keys) for kind, rx, group, keys in _TOKEN_PATTERNS]
_TOKENS = scan.ByKeyword(_TOKEN_RULES, lambda rule: rule.keys)
# Large texts are scanned in windows of about this many characters, cut at line breaks,
# overlapping so that a secret on a window's edge is whole in one of them; keyword
# checks per window keep the cost proportional to where secrets can be.
WINDOW = 8192
OVERLAP = 1024

_MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")


def key_looks_secret(key: str) -> bool:
    """True when a field name says its value is a secret (API_KEY, db_password, apiKey…)."""
    return key_strength(key) == scrub_values.STRONG


_ESCAPE = re.compile(r"\\\\|\\[nrt]")
_BREAKS = {"\\\\": "\\\\", "\\n": " \n", "\\r": " \r", "\\t": "  "}


def _windows(text: str) -> list[tuple[int, str]]:
    if len(text) <= WINDOW + OVERLAP:
        return [(0, text)]
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + WINDOW)
        cut = text.rfind("\n", start + WINDOW // 2, end)
        end = cut + 1 if cut > 0 and end < len(text) else end
        stop = min(len(text), end + OVERLAP)
        out.append((start, text[start:stop]))
        start = end
    return out


def patterns() -> list[re.Pattern[str]]:
    """Every regex of every rule, compiled (the reference path's worth: all of them)."""
    rules = [*_TOKEN_RULES, *scrub_rules.RULES]
    return [r.pattern for r in rules] + [r.pattern for r in gitleaks.rules()[0]]


@cache
def _keywords() -> scrub_keywords.Keywords:
    keys = {k for *_, keys in _TOKEN_PATTERNS for k in keys}
    return scrub_keywords.Keywords(keys | scrub_rules.KEYWORDS | gitleaks.keywords())


def _layers(text: str, fast: bool = True) -> list[tuple[int, int, str]]:
    # The fast path finds every keyword of a window in one pass and runs each regex only
    # near its anchors (scan.py); the reference path (fast=False) is the straightforward
    # one the fast path is tested against: the same rules, windows and order.
    keywords = _keywords() if fast else None
    windows = _windows(text)
    low = text.lower()
    present = None
    if keywords is not None:
        # Split into windows, the whole text is searched only for the block rules' few
        # keywords (find_blocks asks for no other); each window finds its own.
        whole = len(windows) == 1
        present = keywords.present(low) if whole else {k for k in BLOCK_KEYWORDS if k in low}
    found: list[tuple[int, int, str]] = scrub_rules.find_blocks(text, present)
    for offset, chunk in windows:
        if len(windows) > 1:
            low = chunk.lower()
            present = keywords.present(low) if keywords else None
        ascii_low = scan.literal_low(chunk, low)
        spans: list[tuple[int, int, str]] = []
        for rule in _TOKENS.select(present):  # every one has keywords
            matches = scan.keyed(rule.pattern, rule.keys, chunk, low, present, ascii_low)
            spans.extend((m.start(rule.group), m.end(rule.group), rule.kind) for m in matches)
        spans.extend(scrub_rules.find(chunk, low, present))
        spans.extend(gitleaks.find(chunk, low, present))
        found.extend((a + offset, b + offset, kind) for a, b, kind in spans)
    return found


# A session repeats its short strings (every key, `tool_result`, `assistant`, `ok`): their
# spans are kept, bounded (~5 MB at most), rather than found again by ~270 rules.
SHORT = 200


@lru_cache(maxsize=16384)
def _short_spans(text: str) -> tuple[tuple[int, int, str], ...]:
    return tuple(_spans(text, True))


def find_spans(text: str, fast: bool = True) -> list[tuple[int, int, str]]:
    """Merged (start, end, kind) of every secret in text, in order, none inside a marker.

    fast=False takes the slow reference path, which must find exactly the same spans.
    """
    if fast and len(text) <= SHORT:
        return list(_short_spans(text))
    return _spans(text, fast)


def _spans(text: str, fast: bool) -> list[tuple[int, int, str]]:
    # JSON or a log carried as an escaped string: "\nDB_PASSWORD=x" is a line start too.
    # The view has the same length as text, so its spans are spans of text.
    view = _ESCAPE.sub(lambda m: _BREAKS[m.group()], text) if "\\" in text else text
    found = _layers(view, fast)
    taken = [(m.start(), m.end()) for m in _MARKER.finditer(text)]
    # Earlier layers win the kind; an overlapping later span only widens the redaction,
    # so that no tail of a secret survives because two rules saw it differently.
    merged: list[list[Any]] = []
    for rank, (start, end, kind) in enumerate(found):
        if end <= start or (taken and _inside_marker(taken, start, end)):
            continue
        merged.append([start, end, rank, kind])
    merged.sort()
    out: list[tuple[int, int, str]] = []
    best: list[Any] | None = None
    for span in merged:
        if best is not None and span[0] < best[1]:
            best[1] = max(best[1], span[1])
            if span[2] < best[2]:
                best[2], best[3] = span[2], span[3]
            continue
        if best is not None:
            out.append((best[0], best[1], best[3]))
        best = span
    if best is not None:
        out.append((best[0], best[1], best[3]))
    return out


def _inside_marker(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    i = bisect.bisect_right(taken, (end, end)) - 1
    return i >= 0 and taken[i][0] < end and start < taken[i][1]


def _one_pass(text: str, counts: Counter[str]) -> str:
    spans = find_spans(text)
    if not spans:
        return text
    parts, pos = [], 0
    for start, end, kind in spans:
        parts.append(text[pos:start])
        parts.append(marker(kind))
        counts[kind] += 1
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def scrub_text(text: str, counts: Counter[str] | None = None) -> str:
    """Redact every secret in text; add one count per redaction to counts."""
    counts = counts if counts is not None else Counter()
    # A replacement can change the context another rule sees; repeat until nothing
    # changes, so that scrubbing scrubbed text is always a no-op.
    for _ in range(4):
        new = _one_pass(text, counts)
        if new == text:
            break
        text = new
    return text


def scrub_value(value: Any, counts: Counter[str] | None = None) -> Any:
    """Scrub every string inside a JSON value, recursively, keys included."""
    counts = counts if counts is not None else Counter()

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return scrub_text(v, counts)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            out: dict[str, Any] = {}
            for k, x in v.items():
                value = walk(x)
                # {"password": "hunter2"}: the secret-ness lives in the key, not the string.
                if (
                    isinstance(value, str)
                    and isinstance(k, str)
                    and scrub_values.assignment_secret(k, value, bare=False)
                ):
                    counts["secret-assignment"] += 1
                    value = marker("secret-assignment")
                out[scrub_text(k, counts) if isinstance(k, str) else k] = value
            return out
        return v

    return walk(value)


@dataclass(frozen=True)
class ScrubbedSession:
    """A session whose every string went through the scrubber: what transcripts accept.

    Built only by scrub_session; the transcript writers refuse anything else, so no
    code path can write a transcript from an unscrubbed Session.
    """

    session: Session
    _token: object

    def __post_init__(self) -> None:
        if self._token is not _TOKEN:
            raise TypeError("a ScrubbedSession is made by scrub.scrub_session only")


_TOKEN = object()


def scrub_session(session: Session, counts: Counter[str]) -> ScrubbedSession:
    """A copy of session with every string scrubbed (tool arguments and results too)."""
    clean = Session(
        label=scrub_text(session.label, counts),
        source_id=session.source_id,
        sha256=session.sha256,
        items=scrub_value(session.items, counts),
    )
    return ScrubbedSession(clean, _TOKEN)
