"""Provider token formats from the gitleaks rule set, vendored as data (rules/gitleaks.toml).

Why gitleaks as data rather than a dependency such as Yelp's detect-secrets: gitleaks
keeps ~220 provider rules (detect-secrets has 27 plugins), each with keywords that let a
scanner skip a rule without running its regex, and the file is plain TOML that Python
reads with tomllib, so there is nothing to install. detect-secrets measured 0.13 s to
import and ~460 µs a line to scan, with thousands of high-entropy findings on ordinary
code. The rules are MIT-licensed; rules/LICENSE-gitleaks carries the notice.

The file is Go RE2 syntax; `_to_python` translates the few constructs Python's `re`
spells differently. `python -m memwiki.memorize.scrub_build` writes that translation to
rules/gitleaks.json, which loads in ~1 ms where parsing the TOML took ~10; it carries the
TOML's sha256, and a TOML edited since is read instead. A rule's regex, and an allowlist's,
is compiled the first time it is needed: when one of the rule's keywords is in a text.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from . import scan

RULES_FILE = Path(__file__).with_name("rules") / "gitleaks.toml"
DATA_FILE = RULES_FILE.with_suffix(".json")  # built from RULES_FILE: see the docstring
# Rules left out, with the reason: they are about files rather than text, or better
# served by the class rules in scrub_rules (which know about code and placeholders).
SKIPPED = {
    "pkcs12-file",  # a path rule, no regex
    "generic-api-key",  # replaced by the key/value rules of scrub_rules
    "private-key",  # scrub_rules.private_key_blocks handles every framing, escaped too
}


class _Allow:
    # plain classes, not dataclasses: ~0.4 ms less each to import
    __slots__ = ("sources", "stopwords", "target", "all_of", "_compiled")

    def __init__(
        self, sources: tuple[str, ...], stopwords: tuple[str, ...], target: str, all_of: bool
    ):
        self.sources = sources  # regexes, in Python's syntax
        self.stopwords = stopwords
        self.target = target  # "secret", "match" or "line"
        self.all_of = all_of  # condition AND: every given check must hold
        self._compiled: list[re.Pattern[str]] | None = None

    @property
    def regexes(self) -> list[re.Pattern[str]]:
        """The compiled regexes (asked only of a rule that matched)."""
        if self._compiled is None:
            self._compiled = [_compile(r) for r in self.sources]
        return self._compiled


class Rule:
    """One gitleaks rule, compiled on first use."""

    __slots__ = ("id", "source", "keywords", "entropy", "group", "allows", "_compiled")

    def __init__(
        self,
        id: str,
        source: str,
        keywords: tuple[str, ...],
        entropy: float,
        group: int,
        allows: list[_Allow],
    ):
        self.id, self.source, self.keywords = id, source, keywords  # source: Python's syntax
        self.entropy, self.group, self.allows = entropy, group, allows
        self._compiled: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled regex."""
        if self._compiled is None:
            self._compiled = _compile(self.source)
        return self._compiled


def _close_of(rx: str, start: int) -> int:
    """Index of the ')' that closes the group enclosing position start (len(rx) if none)."""
    depth, i, in_class = 0, start, False
    while i < len(rx):
        c = rx[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if rx[i + 1 : i + 2] == "]" or rx[i + 1 : i + 3] == "^]":
                i += 2 if rx[i + 1] == "]" else 3
                continue
        elif c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return len(rx)


def _to_python(rx: str) -> str:
    """Go RE2 -> Python re: mid-pattern flags become scoped groups, \\z and POSIX classes."""
    rx = rx.replace(r"\z", r"\Z").replace("[[:alnum:]]", "[A-Za-z0-9]")
    # RE2 lets `(?i)` switch a flag on for the rest of the enclosing group; Python only
    # allows global flags at the start, so wrap the rest of that group in `(?i:...)`.
    while True:
        m = re.search(r"(?<!^)(?<!\\)\(\?([a-z]+)\)", rx)
        if m is None:
            return rx
        close = _close_of(rx, m.end())
        rx = rx[: m.start()] + f"(?{m.group(1)}:" + rx[m.end() : close] + ")" + rx[close:]


def _compile(rx: str) -> re.Pattern[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "possible nested set" in a few rules
        return re.compile(rx, re.ASCII)


def _allow_data(raw: dict) -> dict[str, Any] | None:
    if raw.get("paths") and not raw.get("regexes") and not raw.get("stopwords"):
        return None  # only about file paths: a transcript has none
    return {
        "regexes": [_to_python(r) for r in raw.get("regexes", [])],
        "stopwords": [w.lower() for w in raw.get("stopwords", [])],
        "target": raw.get("regexTarget", "secret"),
        "all_of": raw.get("condition", "OR").upper() == "AND" and not raw.get("paths"),
    }


def build_data(toml: bytes) -> dict[str, Any]:
    """The usable rules of gitleaks.toml, translated to Python, as DATA_FILE holds them."""
    import hashlib
    import tomllib

    doc = tomllib.loads(toml.decode("utf-8"))
    out = []
    for raw in doc["rules"]:
        if raw["id"] in SKIPPED or "regex" not in raw:
            continue
        allows = [_allow_data(a) for a in raw.get("allowlists", [])]
        out.append(
            {
                "id": raw["id"],
                "regex": _to_python(raw["regex"]),
                "keywords": [k.lower() for k in raw.get("keywords", [])],
                "entropy": float(raw.get("entropy", 0.0)),
                "group": int(raw.get("secretGroup", 0)),
                "allows": [a for a in allows if a is not None],
            }
        )
    glob = doc.get("allowlist", {})
    return {
        "source_sha256": hashlib.sha256(toml).hexdigest(),
        "rules": out,
        "allowlist": {
            "regexes": [_to_python(r) for r in glob.get("regexes", [])],
            "stopwords": [w.lower() for w in glob.get("stopwords", [])],
        },
    }


def _data() -> dict[str, Any]:
    import hashlib  # loaded anyway by whoever scrubs a session (schema's digests)

    toml = RULES_FILE.read_bytes()
    try:
        data = json.loads(DATA_FILE.read_bytes())
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or data.get("source_sha256") != hashlib.sha256(toml).hexdigest():
        data = build_data(toml)  # missing, damaged or older than the TOML: read the TOML
    return data


def _allow(raw: dict[str, Any], target: str | None = None, all_of: bool = False) -> _Allow:
    return _Allow(
        sources=tuple(raw["regexes"]),
        stopwords=tuple(raw["stopwords"]),
        target=target or raw["target"],
        all_of=raw["all_of"] if target is None else all_of,
    )


def _rules_of(data: dict[str, Any]) -> tuple[list[Rule], _Allow]:
    out = [
        Rule(
            id=raw["id"],
            source=raw["regex"],
            keywords=tuple(raw["keywords"]),
            entropy=float(raw["entropy"]),
            group=int(raw["group"]),
            allows=[_allow(a) for a in raw["allows"]],
        )
        for raw in data["rules"]
    ]
    return out, _allow(data["allowlist"], target="secret")


@cache
def rules() -> tuple[list[Rule], _Allow]:
    """Every usable rule and the global allowlist, loaded once per process."""
    try:
        return _rules_of(_data())
    except (KeyError, TypeError, ValueError):
        # DATA_FILE edited by hand into another shape: the TOML says the same
        return _rules_of(build_data(RULES_FILE.read_bytes()))


def shannon(value: str) -> float:
    """Shannon entropy of value in bits per character."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _allowed(allow: _Allow, secret: str, match: str, line: str) -> bool:
    target = {"secret": secret, "match": match, "line": line}.get(allow.target, secret)
    checks = []
    if allow.regexes:
        checks.append(any(rx.search(target) for rx in allow.regexes))
    if allow.stopwords:
        low = secret.lower()
        checks.append(any(w in low for w in allow.stopwords))
    if not checks:
        return False
    return all(checks) if allow.all_of else any(checks)


def _line_of(text: str, start: int, end: int) -> str:
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", end)
    return text[a : b if b >= 0 else len(text)]


def keywords() -> set[str]:
    """Every keyword of every rule (lower case)."""
    return {k for rule in rules()[0] for k in rule.keywords}


@cache
def _by_keyword() -> scan.ByKeyword[Rule]:
    return scan.ByKeyword(rules()[0], lambda rule: rule.keywords)


def find(
    text: str, low: str | None = None, present: set[str] | None = None
) -> list[tuple[int, int, str]]:
    """(start, end, rule id) of every provider secret gitleaks' rules find in text.

    present: the keywords in text (scrub_keywords.Keywords), for the fast path; without it each
    keyword is looked up in low and each regex runs over all of text (the reference).
    """
    all_rules, glob = rules()
    low = text.lower() if low is None and present is None else low
    found: list[tuple[int, int, str]] = []
    ascii_low = scan.literal_low(text, low) if present is not None and low is not None else None
    for rule in _by_keyword().select(present):
        for m in scan.keyed(rule.pattern, rule.keywords, text, low, present, ascii_low):
            group = rule.group or next(
                (i for i in range(1, (m.re.groups or 0) + 1) if m.group(i)), 0
            )
            secret = m.group(group)
            if not secret:
                continue
            if rule.entropy and shannon(secret) <= rule.entropy:
                continue
            line = _line_of(text, m.start(), m.end())
            if _allowed(glob, secret, m.group(0), line) or any(
                _allowed(a, secret, m.group(0), line) for a in rule.allows
            ):
                continue
            found.append((m.start(group), m.end(group), rule.id))
    return found
