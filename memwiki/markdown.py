"""The markdown layer: the only code in memwiki that knows how markdown is built.

Frontmatter (split, top-level key lines, key blocks), CommonMark code (fenced and indented
blocks, inline spans) and ATX headings. RecallFiles, the chunker, wikilinks, conflict copies
and lint all read markdown through these functions, so they agree on what is code and what
is a heading.

Imports nothing heavy: `memwiki retrieve` (a cold process) loads this module.

Why the splitter is not python-frontmatter's: its `YAMLHandler.split` cuts at a regex
boundary (`^-{3,}\\s*$`, so `----` or `--- ` close the block), and `frontmatter.loads`
strips the body and re-serialises the metadata. memwiki promises a rewrite keeps every byte
it does not have to change, and every problem it reports carries a line number; both need
the exact text between the delimiters and the line the body starts on, which is what
`split_frontmatter` returns. The YAML itself is still read by PyYAML, as python-frontmatter
does.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

BOM = "\ufeff"
# A top-level key line; "- x: y" is an entry of a flush-left block sequence, not a key.
KEY_LINE = re.compile(r"^(?!- )([^\s#:][^:]*):(\s|$)")
# ATX heading's opening: up to three spaces, 1-6 '#', then a space, a tab or the end of the
# line. The rest (an optional closing run of '#' after a space is not part of the text) is
# cut with string methods in heading(): a regex with a lazy text group before the optional
# closing run backtracks quadratically on a long line of spaces (minutes for one 20 KB line).
_ATX = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
_LIST_ITEM = re.compile(r"^( *)([-+*]|\d{1,9}[.)])( +|$)")
# Every top-level key line of a frontmatter, as KEY_LINE matches one line.
_KEY_LINES = re.compile(r"^(?!- )([^\s#:][^:\n\r]*):(?:[ \t\r\n]|$)", re.MULTILINE)
_BARE_LF = re.compile(r"(?<!\r)\n")
# A git conflict marker that opens or closes a conflict (7 characters, then a space or the end).
_MARKER = re.compile(r"^(?:<{7}|>{7})(?: |$)")
# Every character str.splitlines() breaks at ("\r\n" counts once).
_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# In a paragraph, what can open or escape a code span; and backtick runs, which close one.
_SPAN_TOKEN = re.compile(r"\\.|`+", re.DOTALL)
_RUN = re.compile(r"`+")


# ---------------------------------------------------------------- frontmatter


class Frontmatter(NamedTuple):
    """A file cut at its frontmatter: (text between the delimiters, body, body's first line)."""

    text: str
    body: str
    body_line: int


def strip_bom(text: str) -> tuple[str, str]:
    """(bom, text without it): editors on Windows write a UTF-8 BOM before the first '---'."""
    return (BOM, text[1:]) if text.startswith(BOM) else ("", text)


def split_frontmatter(text: str) -> Frontmatter | None:
    """Split at the '---' ... '---' (or '...') block that opens the file; None without one.

    A leading byte-order mark is skipped (strip_bom says whether there was one).
    """
    text = strip_bom(text)[1]
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return None
    # Lines as str.splitlines() cuts them (every line number in memwiki counts that way),
    # found one at a time so a huge body is not split to find a short frontmatter.
    start = text.index("\n") + 1
    pos, line_no = start, 2
    for m in _BREAK.finditer(text, start):
        if text[pos : m.start()] in ("---", "...") and m.group() in ("\n", "\r\n", "\r"):
            return Frontmatter(text[start:pos], text[m.end() :], line_no + 1)
        pos, line_no = m.end(), line_no + 1
    if text[pos:] in ("---", "..."):
        return Frontmatter(text[start:pos], "", line_no + 1)
    return None


def with_newline(text: str, newline: str) -> str:
    """text with every bare '\n' written as newline (a '\r\n' already there is kept)."""
    return text if newline == "\n" else _BARE_LF.sub(newline, text)


def body_of(text: str) -> tuple[str, int]:
    """(body, its first line number): the text after the frontmatter, or all of it (no BOM)."""
    parts = split_frontmatter(text)
    return (parts.body, parts.body_line) if parts else (strip_bom(text)[1], 1)


def key_of(line: str) -> str | None:
    """The key a top-level frontmatter line starts, or None (comment, indented, list entry)."""
    m = KEY_LINE.match(line)
    return m.group(1).strip() if m else None


def key_line(fm_text: str, key: str) -> int:
    """The file line (frontmatter starts on line 2) of key's line; 2 when it is absent."""
    for i, line in enumerate(fm_text.splitlines()):
        if key_of(line) == key:
            return i + 2
    return 2


# Obsidian plugins mark the notes they own with a frontmatter key: such a note is the
# plugin's data (a drawing, whose end is a compressed-json block; a board of cards), not
# memory, and memwiki leaves it out everywhere (docs/obsidian.md, "Plugins' own notes").
PLUGIN_NOTES = {"excalidraw-plugin": "an Excalidraw drawing", "kanban-plugin": "a Kanban board"}


def plugin_note(fm_text: str) -> str | None:
    """What an Obsidian plugin's own note is ("a Kanban board"), from its frontmatter text."""
    if "-plugin" not in fm_text:
        return None  # the common case: one substring search
    for m in _KEY_LINES.finditer(fm_text):
        kind = PLUGIN_NOTES.get(m.group(1).strip())
        if kind is not None:
            return kind
    return None


def key_blocks(fm_text: str) -> list[tuple[str | None, str]]:
    """Cut frontmatter into top-level key blocks (key, text), every byte kept.

    Comment and blank lines at the left margin between two keys are blocks of their own
    (key None), so re-rendering a known key never drops a comment written about the next
    one; they join the key above only when an indented line of that key's value follows.
    """
    blocks: list[tuple[str | None, str]] = []
    pending: list[str] = []
    for line in fm_text.splitlines(keepends=True):
        key = key_of(line)
        if key is not None:
            if pending:
                blocks.append((None, "".join(pending)))
                pending = []
            blocks.append((key, line))
        elif line.startswith("#") or not line.strip():
            pending.append(line)
        elif blocks and blocks[-1][0] is not None:
            key, text = blocks[-1]
            blocks[-1] = (key, text + "".join(pending) + line)
            pending = []
        else:
            blocks.append((None, "".join(pending) + line))
            pending = []
    if pending:
        blocks.append((None, "".join(pending)))
    return blocks


def duplicate_key_suspects(fm_text: str) -> bool:
    """True when a top-level key line repeats (one regex pass; the YAML decides for sure)."""
    keys = _KEY_LINES.findall(fm_text)
    return len(keys) != len({k.strip() for k in keys})


# ---------------------------------------------------------------- conflict markers


def conflict_markers(
    text: str, first_line: int = 1, skip_code: bool = True
) -> list[tuple[int, int]]:
    """(first, last) file lines of each git conflict left in text, markers outside code only.

    git writes `<<<<<<< ours`, `=======`, `>>>>>>> theirs`; a lone `=======` is a setext
    heading's underline, so a conflict is found by its `<<<<<<<` or `>>>>>>>` line. An
    unpaired one is a conflict of one line. first_line: the file line text starts on.
    """
    if "<<<<<<<" not in text and ">>>>>>>" not in text:
        return []  # the common case: one scan in C, no split
    lines = text.splitlines()
    code = code_lines(lines) if skip_code else [False] * len(lines)
    found: list[tuple[int, int]] = []
    start: int | None = None
    for i, (line, is_code) in enumerate(zip(lines, code, strict=True)):
        if is_code or not _MARKER.match(line):
            continue
        if line[0] == "<":
            if start is not None:
                found.append((start, start))
            start = i
        else:
            found.append((i if start is None else start, i))
            start = None
    if start is not None:
        found.append((start, start))
    return [(a + first_line, b + first_line) for a, b in found]


# ---------------------------------------------------------------- headings


def heading(line: str) -> tuple[int, str] | None:
    """(level, text) when line is an ATX heading (ignoring whether it lies in code), else None."""
    if "#" not in line[:4]:
        return None
    if line.endswith("\n"):
        line = line[:-1]  # "$" in the heading grammar matches before one final newline
    if "\n" in line:
        return None
    m = _ATX.match(line)
    if not m:
        return None
    rest = line[m.end() :].rstrip(" \t")
    bare = rest.rstrip("#")
    if len(bare) < len(rest) and (not bare or bare[-1] in " \t"):
        rest = bare  # a closing run of '#' after a space or a tab
    return len(m.group(1)), rest.strip()


# ---------------------------------------------------------------- code


def code_lines(lines: list[str]) -> list[bool]:
    """For each line, True when it is code: in a fenced block (fences included) or indented.

    See _scan for the rules.
    """
    return _scan(lines)[0]


def closing_fence(lines: list[str]) -> str | None:
    """The line that would close a fence left open at the end of lines, or None."""
    fence = _scan(lines)[1]
    return None if fence is None else " " * fence[2] + fence[0] * fence[1]


def headings(lines: list[str]) -> list[tuple[int, str] | None]:
    """For each line, (level, text) when it is a heading outside code, else None."""
    code = code_lines(lines)
    return [None if c else heading(line) for line, c in zip(lines, code, strict=True)]


def _scan(lines: list[str]) -> tuple[list[bool], tuple[str, int, int] | None]:
    """Which lines are code, and the fence (char, length, indent) still open at the end.

    CommonMark's rules: a fence is 3+ backticks or tildes after at most three spaces (of the
    enclosing list item's content column); a backtick fence's info string holds no backtick;
    it is closed only by a fence of the same character at least as long, with nothing after
    it, so a shorter fence inside a longer one is content; an unclosed fence runs to the end.
    An indented block starts after a blank line (or a heading) with 4+ spaces past the list
    item's content column.
    """
    out: list[bool] = []
    fence: tuple[str, int, int] | None = None  # (char, length, indent base)
    after_break = True  # an indented line here starts a code block (it cannot continue text)
    in_code = False
    list_col: int | None = None  # content column of the open list item, if any
    for raw in lines:
        text = raw.expandtabs(4) if "\t" in raw else raw
        if fence is not None:
            m = _FENCE_CLOSE.match(text[fence[2] :] if _indent(text) >= fence[2] else text)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1]:
                fence, after_break = None, True
            out.append(True)
            continue
        if not text.strip():
            out.append(False)
            after_break = True
            continue
        indent = _indent(text)
        is_item = _LIST_ITEM.match(text)
        if list_col is not None and after_break and indent < list_col and not is_item:
            list_col = None  # a blank line and an outdented paragraph end the list
        base = list_col if list_col is not None and indent >= list_col else 0
        if indent - base >= 4 and (after_break or in_code):
            in_code = True
            out.append(True)
            continue
        in_code = False
        m = _FENCE_OPEN.match(text[base:])
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = (m.group(1)[0], len(m.group(1)), base)
            out.append(True)
            continue
        if is_item:
            marker = is_item.group(1) + is_item.group(2)
            spaces = len(is_item.group(3))
            list_col = len(marker) + (spaces if 0 < spaces <= 4 else 1)
        # A heading cannot be continued, so an indented line right after one is code.
        after_break = heading(text) is not None
        out.append(False)
    return out, fence


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def mask_spans(text: str) -> str:
    """Blank inline code spans (a backtick run closed by a run of the same length)."""
    if "`" not in text:
        return text
    # Inside a span a backslash is literal, so closing runs are found among all runs.
    runs: dict[int, list[int]] = {}
    for run in _RUN.finditer(text):
        runs.setdefault(run.end() - run.start(), []).append(run.start())
    out: list[str] | None = None
    i = 0
    while True:
        m = _SPAN_TOKEN.search(text, i)
        if m is None:
            break
        if m.group()[0] == "\\":
            i = m.end()  # an escaped backtick opens nothing
            continue
        length = m.end() - m.start()
        starts = runs.get(length, [])
        k = bisect.bisect_left(starts, m.end())
        if k == len(starts):
            i = m.end()  # an unmatched run is literal text
            continue
        close = starts[k] + length
        if out is None:
            out = list(text)
        for p in range(m.start(), close):
            if out[p] != "\n":
                out[p] = " "
        i = close
    return text if out is None else "".join(out)


def mask_code(lines: list[str]) -> list[str]:
    """The lines with every kind of code blanked (line numbers kept): for link scanning."""
    is_code = code_lines(lines)
    out: list[str] = []
    para: list[str] = []
    for line, code in zip([*lines, ""], [*is_code, False], strict=True):
        if code:
            line = ""
        # A code span may run over several lines of one paragraph; a heading ends one.
        if line.strip() and heading(line) is None:
            para.append(line)
            continue
        if para:
            out.extend(mask_spans("\n".join(para)).split("\n"))
            para = []
        out.append(mask_spans(line) if line.strip() else line)
    return out[:-1]
