"""The Resources section of a project file (`project/<slug>.md`): where it is, and the lines
memorize could not read back (`memwiki lint`). The project of a directory is project.py's.
"""

from __future__ import annotations

import re

RESOURCES = "Resources"
# One resource line: "- `path/relative/to/the/repo` — one-line description". The
# description (group 3) keeps its trailing spaces, which every reader strips: a lazy group
# before a final `\s*$` backtracks quadratically on a long line of spaces in a pulled file.
RESOURCE_ENTRY = re.compile(r"^(\s*[-*]\s+)`([^`\n]+)`(?:\s*(?:—|--|-|:)\s*(.*))?\s*$")
# A bullet meant as a resource line: it opens with a backtick, or with a path-like word
# (a `/` or a `.` in it) and a separator. Other bullets are a person's prose, left alone.
# The word is taken whole (possessive) after a look-ahead for its `/` or `.`: written as
# `[^\s`]*[/.][^\s`]*` it was quadratic in the word's length (seconds for 20 KB of dots).
_MEANT_AS_ENTRY = re.compile(r"^\s*[-*+]\s+(?:`|(?=[^\s`]*[/.])[^\s`]*+\s+(?:—|--|-|:)(?:\s|$))")


def resources_span(lines: list[str]) -> tuple[int, int] | None:
    """(first line after the first `## Resources` heading, end of its section), 0-based, or None."""
    from . import markdown

    start: int | None = None
    level = 0
    for i, h in enumerate(markdown.headings(lines)):
        if h is None:
            continue
        if start is None:
            if h[1].strip().lower() == RESOURCES.lower():
                start, level = i + 1, h[0]
        elif h[0] <= level:
            return start, i
    return (start, len(lines)) if start is not None else None


def resource_problems(text: str) -> list[tuple[int, str]]:
    """What memorize cannot read in a project file's Resources section, as (line, message).

    Lines are 1-based lines of the whole file. Nothing here stops the file from being
    indexed or merged: a line memorize cannot read is kept as it is, never rewritten, which
    is why a person should hear about it.
    """
    from . import markdown

    body, first = markdown.body_of(text)
    lines = body.splitlines()
    span = resources_span(lines)
    if span is None:
        return []
    start, end = span
    problems: list[tuple[int, str]] = []
    code = markdown.code_lines(lines)
    seen: dict[str, int] = {}
    for i in range(start, end):
        at = i + first
        m = RESOURCE_ENTRY.match(lines[i])
        if code[i] or (m is None and not _MEANT_AS_ENTRY.match(lines[i])):
            continue
        if m is None:
            problems.append((at, "not a resource line: write - `path/in/the/repo` — description"))
            continue
        path = m.group(2).strip()
        if path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:[\\/]", path):
            problems.append((at, f"resource {path!r}: paths are relative to the repository root"))
        elif ".." in path.replace("\\", "/").split("/"):
            problems.append((at, f"resource {path!r}: '..' leaves the repository"))
        if path in seen:
            problems.append((at, f"resource {path!r} is listed twice (also line {seen[path]})"))
        seen.setdefault(path, at)
    heads = markdown.headings(lines)
    for i in range(end, len(lines)):
        h = heads[i]
        if h is not None and h[1].strip().lower() == RESOURCES.lower():
            problems.append((i + first, "a second Resources section: memorize updates the first"))
    return problems
