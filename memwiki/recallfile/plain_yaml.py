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
no tab, carriage return or character PyYAML would reject; a plain scalar resolves as
PyYAML 1.1's implicit resolvers resolve it (the regular expressions below are PyYAML's),
and only to a string, null or a timestamp (anything else, e.g. `yes` or `3`, goes to
PyYAML). tests/test_plain_yaml.py holds it to `yaml.safe_load` on generated nasty input.
"""

from __future__ import annotations

import datetime as dt
import re

OTHER = object()  # not plain frontmatter: ask PyYAML


class _Lazy:
    """A regular expression compiled when first used: most files need only a few of them,
    and compiling all at import took 1.6 ms of a cold process."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern | None = None

    def match(self, text: str) -> re.Match | None:
        """re.Pattern.match, compiling first."""
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return self._compiled.match(text)


_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]{0,127}):(?: (.*))?$")
_ITEM_LINE = re.compile(r"( *)- (.*)$")
# A plain scalar may not start with an indicator (PyYAML's check_plain, made stricter:
# "-x", "?x" and ":x" are plain there, but are left to PyYAML here).
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@` ")
_FLOW_FORBIDDEN = re.compile(r"[\[\]{}#'\"?]")

# PyYAML's implicit resolvers (yaml/resolver.py), keyed by a scalar's first character,
# in its order. The first that matches decides the tag; none: a string.
_BOOL = _Lazy(
    r"""^(?:yes|Yes|YES|no|No|NO
    |true|True|TRUE|false|False|FALSE
    |on|On|ON|off|Off|OFF)$""",
    re.X,
)
_FLOAT = _Lazy(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_INT = _Lazy(
    r"""^(?:[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+
    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$""",
    re.X,
)
_MERGE = _Lazy(r"^(?:<<)$")
_NULL = _Lazy(r"^(?: ~ |null|Null|NULL | )$", re.X)
_TIMESTAMP = _Lazy(
    r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
    |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
     (?:[Tt]|[ \t]+)[0-9][0-9]?
     :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
     (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""",
    re.X,
)
_VALUE = _Lazy(r"^(?:=)$")
_YAML = _Lazy(r"^(?:!|&|\*)$")
_RESOLVERS: dict[str, list[tuple[str, _Lazy]]] = {}
for _tag, _regex, _first in (
    ("bool", _BOOL, "yYnNtTfFoO"),
    ("float", _FLOAT, "-+0123456789."),
    ("int", _INT, "-+0123456789"),
    ("merge", _MERGE, "<"),
    ("null", _NULL, ["~", "n", "N", ""]),
    ("timestamp", _TIMESTAMP, "0123456789"),
    ("value", _VALUE, "="),
    ("yaml", _YAML, "!&*"),
):
    for _ch in _first:
        _RESOLVERS.setdefault(_ch, []).append((_tag, _regex))

# PyYAML's constructor for a timestamp (yaml/constructor.py, construct_yaml_timestamp).
_TIMESTAMP_PARTS = _Lazy(
    r"""^(?P<year>[0-9][0-9][0-9][0-9])
    -(?P<month>[0-9][0-9]?)
    -(?P<day>[0-9][0-9]?)
    (?:(?:[Tt]|[ \t]+)
    (?P<hour>[0-9][0-9]?)
    :(?P<minute>[0-9][0-9])
    :(?P<second>[0-9][0-9])
    (?:\.(?P<fraction>[0-9]*))?
    (?:[ \t]*(?P<tz>Z|(?P<tz_sign>[-+])(?P<tz_hour>[0-9][0-9]?)
    (?::(?P<tz_minute>[0-9][0-9]))?))?)?$""",
    re.X,
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
    """A plain scalar as PyYAML resolves and constructs it: str, None, a date; else OTHER."""
    for tag, regex in _RESOLVERS.get(scalar[:1], ()):
        if regex.match(scalar):
            if tag == "null":
                return None
            if tag == "timestamp":
                return _timestamp(scalar)
            return OTHER
    return scalar


def _timestamp(scalar: str):
    """construct_yaml_timestamp's date or datetime, or OTHER where it would raise."""
    m = _TIMESTAMP_PARTS.match(scalar)
    if m is None:
        return OTHER
    v = m.groupdict()
    try:
        if not v["hour"]:
            return dt.date(int(v["year"]), int(v["month"]), int(v["day"]))
        fraction = int(v["fraction"][:6].ljust(6, "0")) if v["fraction"] else 0
        tzinfo = None
        if v["tz_sign"]:
            delta = dt.timedelta(hours=int(v["tz_hour"]), minutes=int(v["tz_minute"] or 0))
            tzinfo = dt.timezone(-delta if v["tz_sign"] == "-" else delta)
        elif v["tz"]:
            tzinfo = dt.UTC
        return dt.datetime(
            int(v["year"]),
            int(v["month"]),
            int(v["day"]),
            int(v["hour"]),
            int(v["minute"]),
            int(v["second"]),
            fraction,
            tzinfo=tzinfo,
        )
    except (ValueError, OverflowError):
        return OTHER
