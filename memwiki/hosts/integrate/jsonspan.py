"""Where the members and elements of a JSON text sit, so that edits can be surgical."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .textfile import newline_of

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Child:
    """One object member (key set) or array element (key None) and its text span."""

    key: str | None
    start: int  # the key's opening quote for members, the value's first char for elements
    value_start: int
    end: int  # just after the value


@dataclass(frozen=True)
class Container:
    """An object or array: its bracket positions and children."""

    open: int
    close: int
    children: list[Child]


def skip_ws(text: str, pos: int) -> int:
    """The first non-whitespace position at or after pos."""
    return _WS.match(text, pos).end()  # type: ignore[union-attr]  # \s* always matches


def scan(text: str, pos: int) -> Container:
    """The object or array whose opening bracket is at pos."""
    opener = text[pos]
    closer = {"{": "}", "[": "]"}[opener]
    children: list[Child] = []
    i = skip_ws(text, pos + 1)
    if text[i] == closer:
        return Container(pos, i, children)
    while True:
        key = None
        start = i
        if opener == "{":
            key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
            i = skip_ws(text, i)
            if text[i] != ":":
                raise ValueError(f"expected ':' at {i}")
            i = skip_ws(text, i + 1)
        value_start = i
        _, i = _DECODER.raw_decode(text, i)
        children.append(Child(key, start, value_start, i))
        i = skip_ws(text, i)
        if text[i] == closer:
            return Container(pos, i, children)
        if text[i] != ",":
            raise ValueError(f"expected ',' or {closer!r} at {i}")
        i = skip_ws(text, i + 1)


def root(text: str) -> Container:
    """The top-level object of a JSON document."""
    return scan(text, skip_ws(text, 0))


def member(container: Container, key: str) -> Child | None:
    """The last member with that key (JSON parsers keep the last duplicate)."""
    found = [c for c in container.children if c.key == key]
    return found[-1] if found else None


def line_indent(text: str, pos: int) -> str:
    """The leading whitespace of the line holding pos."""
    line_start = text.rfind("\n", 0, pos) + 1
    return text[line_start : skip_ws_inline(text, line_start)]


def skip_ws_inline(text: str, pos: int) -> int:
    """The first position at or after pos that is not a space or a tab."""
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    return pos


def indent_unit(text: str) -> str:
    """The file's indentation step (the first indented line's leading whitespace), else 2 spaces."""
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else "  "


def insert_child(text: str, container: Container, entry: str) -> str:
    """text with entry (a member 'key: value' or an element) appended to the container."""
    base = line_indent(text, container.open)
    inner = base + indent_unit(text)
    nl = newline_of(text)  # the file's own: a CRLF file gets CRLF lines, not a mix
    entry = entry.replace("\n", nl + inner)
    if container.children:
        at = container.children[-1].end
        return text[:at] + "," + nl + inner + entry + text[at:]
    return text[: container.open + 1] + nl + inner + entry + nl + base + text[container.close :]


def remove_child(text: str, container: Container, index: int) -> str:
    """text without the child at index: the exact inverse of insert_child for the last one."""
    children = container.children
    child = children[index]
    if index > 0:
        return text[: children[index - 1].end] + text[child.end :]
    if len(children) > 1:
        return text[: child.start] + text[children[1].start :]
    return text[: container.open + 1] + text[container.close :]


def dumps_entry(value: object, unit: str, key: str | None = None) -> str:
    """A value (or 'key: value' member) formatted with the file's indentation step."""
    body = json.dumps(value, indent=unit, ensure_ascii=False)
    return f"{json.dumps(key, ensure_ascii=False)}: {body}" if key is not None else body
