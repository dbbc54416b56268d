"""Plain frontmatter without PyYAML: exactly what `yaml.safe_load` gives, for a small subset.

Importing PyYAML costs 10-20 ms (its reader and resolver compile large regular
expressions), paid by every cold `memwiki retrieve` that finds an edited file: most of
what chunking the file costs (docs/retrieval.md, "One-file edits: the update itself").
RecallFile frontmatter is nearly always the plain kind memwiki writes:

    name: some-slug
    description: one line of text
    tags: [a, b]          (or a block list: "tags:" then "- a" lines)
    created: 2026-11-02T10:14:00Z

`load` reads exactly that and returns OTHER for anything else, and the caller asks
PyYAML (which also reports the errors). It accepts only what it can prove it reads as
PyYAML does, and refuses at the first doubt: every line is a top-level `key: value`,
a flush-left comment, an empty line, or (after a key with no value) a `- item` of a
block list; values are single-line plain or quoted scalars or a one-line `[a, b]` list;
no tab, carriage return or character PyYAML would reject; a plain scalar is read only
when it is certainly a string, a null or a timestamp of the two forms memwiki writes
(anything that may be another YAML 1.1 type, e.g. `yes`, `3` or `1:20`, goes to
PyYAML). tests/test_plain_yaml.py holds it to `yaml.safe_load` on generated nasty input.
"""

from __future__ import annotations

import datetime as dt
import re

OTHER = object()  # not plain frontmatter: ask PyYAML


_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]{0,127}):(?: (.*))?$")
_ITEM_LINE = re.compile(r"( *)- (.*)$")
# A plain scalar may not start with an indicator (PyYAML's check_plain, made stricter:
# "-x", "?x" and ":x" are plain there, but are left to PyYAML here).
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@` ")
_FLOW_FORBIDDEN = re.compile(r"[\[\]{}#'\"?]")

# YAML 1.1's implicit types (yaml.org/type: null, bool, int, float, timestamp, merge,
# value), decided conservatively rather than reproduced: a plain scalar is read here only
# as a string, a null, or a date or time of the two forms below. Any scalar that could be
# another type goes to PyYAML: a bool word, one starting like a number (ints, floats,
# sexagesimals and the other timestamp forms all do) and the merge, value and tag forms.
_NULL_WORDS = frozenset({"", "~", "null", "Null", "NULL"})
_BOOL_WORDS = frozenset(
    form for word in ("yes", "no", "true", "false", "on", "off")
    for form in (word, word.capitalize(), word.upper())
)  # fmt: skip
_NOT_A_STRING_START = frozenset("-+.0123456789<=!&*")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DATETIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,9}))?(Z|[-+][0-9]{2}:[0-9]{2})?"
)


def load(text: str):
    """The frontmatter as yaml.safe_load reads it (None when it holds no key), or OTHER."""
    if not _printable(text):
        return OTHER
    data: dict = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line or line.startswith("#"):
            continue
        m = _KEY_LINE.match(line)
        if m is None:
            return OTHER
        key = _plain(m.group(1))
        if not isinstance(key, str):
            return OTHER
        rest = (m.group(2) or "").strip(" ")
        if rest:
            value = _value(rest)
        else:
            value, i = _block_list(lines, i)
        if value is OTHER:
            return OTHER
        data[key] = value
    return data or None


def _printable(text: str) -> bool:
    """No character PyYAML's reader refuses, treats as a line break, or that is a tab/CR."""
    if text.isascii():
        return text.replace("\n", "").isprintable()
    for ch in set(text):
        o = ord(ch)
        if ch == "\n" or 0x20 <= o <= 0x7E:
            continue
        if ch in "\u2028\u2029\ufeff" or not (
            0xA0 <= o <= 0xD7FF or 0xE000 <= o <= 0xFFFD or 0x10000 <= o <= 0x10FFFF
        ):
            return False
    return True


def _value(rest: str):
    """A one-line value after 'key: ': a quoted or plain scalar, or a [flow, list]."""
    first = rest[0]
    if first == "[":
        return _flow_list(rest)
    if first in "'\"":
        return _quoted(rest)
    if first in _INDICATORS or ": " in rest or rest.endswith(":") or " #" in rest:
        return OTHER
    return _plain(rest)


def _quoted(rest: str):
    """'single' ('' is a quote) or "double" without escapes, nothing after it."""
    quote = rest[0]
    if len(rest) < 2 or rest[-1] != quote:
        return OTHER
    inner = rest[1:-1]
    if quote == '"':
        return OTHER if '"' in inner or "\\" in inner else inner
    if inner.replace("''", "").count("'"):
        return OTHER
    return inner.replace("''", "'")


def _flow_list(rest: str):
    """[a, b] of plain strings on one line."""
    if not rest.endswith("]"):
        return OTHER
    inner = rest[1:-1]
    if _FLOW_FORBIDDEN.search(inner):
        return OTHER
    if not inner.strip(" "):
        return []
    items = []
    for part in inner.split(","):
        item = part.strip(" ")
        # ':' only inside a word: "a:b" is one scalar, "a: b" and "a:" are a pair
        if not item or item[0] in _INDICATORS or ": " in item or item.endswith(":"):
            return OTHER
        value = _plain(item)
        if not isinstance(value, str):
            return OTHER
        items.append(value)
    return items


def _block_list(lines: list[str], i: int) -> tuple[object, int]:
    """After 'key:' with nothing on its line: the '- item' lines that follow (one indent),
    or None when the next key (or the end) comes first. Returns (value, next line)."""
    items: list[str] = []
    indent = None
    j = i
    while j < len(lines):
        line = lines[j]
        if not line or line.startswith("#"):
            j += 1
            continue
        m = _ITEM_LINE.match(line)
        if m is None:
            if line[0] == " ":
                return OTHER, j  # an indented line that is not an item: PyYAML's
            break  # the next key
        if indent is None:
            indent = m.group(1)
        elif m.group(1) != indent:
            return OTHER, j
        item = m.group(2).strip(" ")
        value = _value(item) if item else OTHER
        if not isinstance(value, str):
            return OTHER, j
        items.append(value)
        j += 1
    if indent is None:
        return None, i  # no items: the value is null
    return items, j


def _plain(scalar: str):
    """A plain scalar as PyYAML reads it: str, None, a date or datetime; else OTHER."""
    if scalar in _NULL_WORDS:
        return None
    if scalar in _BOOL_WORDS:
        return OTHER
    if scalar[0] in _NOT_A_STRING_START:
        return _timestamp(scalar)
    return scalar


def _timestamp(scalar: str):
    """`2026-11-02` as a date, `2026-11-02T10:14:00[.5][Z|+05:30]` as a datetime, else OTHER.

    A fraction keeps its first six digits (microseconds); Z is UTC, an offset a fixed
    zone, no zone a naive time: what YAML's timestamp type gives. A date that does not
    exist (2026-02-30) is left to PyYAML, which reports it.
    """
    try:
        if m := _DATE.fullmatch(scalar):
            return dt.date(*map(int, m.groups()))
        m = _DATETIME.fullmatch(scalar)
        if m is None:
            return OTHER
        year, month, day, hour, minute, second, fraction, zone = m.groups()
        micro = int(fraction[:6].ljust(6, "0")) if fraction else 0
        tzinfo = None
        if zone == "Z":
            tzinfo = dt.UTC
        elif zone:
            hours, minutes = int(zone[1:3]), int(zone[4:6])
            offset = dt.timedelta(hours=hours, minutes=minutes)
            tzinfo = dt.timezone(-offset if zone[0] == "-" else offset)
        return dt.datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo
        )
    except (ValueError, OverflowError):
        return OTHER
