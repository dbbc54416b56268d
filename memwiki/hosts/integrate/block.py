"""The managed block in an instruction file: pure functions over the file's text.

Layout, chosen so that removal needs no memory of what install saw:
- a file install creates holds exactly  BEGIN…END "\n"  (the block starts at offset 0);
- a file that existed gets  "\n" BEGIN…END "\n"  appended after its original bytes.
Removal takes the block, the newline after it and, when the block does not start the
file, the one newline install put before it; a created file left empty is deleted.
In a file whose lines end in CRLF the block and both newlines are CRLF too, so that an
editor converting the file does not leave a stray "\r" behind on removal.
"""

from __future__ import annotations

from ...errors import InvalidInput
from .textfile import newline_of

BEGIN = "<!-- memwiki:begin -->"
END = "<!-- memwiki:end -->"


def render_block(body: str) -> str:
    """The full managed block, markers included, without a trailing newline."""
    return f"{BEGIN}\n{body.strip(chr(10))}\n{END}"


def find_block(text: str, label: str = "file") -> tuple[int, int] | None:
    """(start, end) of the managed block in text, or None when there is none."""
    start = 0
    while True:
        start = text.find(BEGIN, start)
        if start < 0:
            if END in text:
                raise InvalidInput(f"{label}: {END} without {BEGIN}; fix the file by hand")
            return None
        if start == 0 or text[start - 1] == "\n":
            break
        start += len(BEGIN)  # a marker quoted mid-line is not ours
    end = text.find(END, start)
    if end < 0:
        raise InvalidInput(f"{label}: {BEGIN} without {END}; fix the file by hand")
    return start, end + len(END)


def bodies(text: str, label: str = "file") -> list[str]:
    """The text between the markers of every block in text, with LF line endings."""
    found = []
    for _ in range(text.count(BEGIN)):  # each pass finds one block; a file may hold two
        span = find_block(text, label)
        if span is None:
            break
        inner = text[span[0] + len(BEGIN) : span[1] - len(END)]
        found.append(inner.replace("\r\n", "\n").strip("\n"))
        text = text[span[1] :]
    return found


def _block_newline(text: str, start: int) -> str:
    return "\r\n" if text.startswith("\r\n", start + len(BEGIN)) else "\n"


def apply_block(original: str | None, body: str, label: str = "file") -> str:
    """The file's text with the block added or replaced in place (None = file absent)."""
    span = None if original is None else find_block(original, label)
    # A block already there keeps its own line ending; a new one takes the file's.
    nl = _block_newline(original, span[0]) if original and span else newline_of(original)
    block = render_block(body).replace("\n", nl)
    if original is None:
        return block + nl
    if span is not None:
        # Any further block (two devices' dotfiles merged) goes: the agent reads one.
        rest = remove_block(original[span[1] :], label) or ""
        return original[: span[0]] + block + rest
    return original + nl + block + nl


def remove_block(text: str, label: str = "file") -> str | None:
    """The text without the block(s); None when the file should be deleted (install created
    it)."""
    created = False
    # Every block goes, not just the first: a file can hold two (two devices' dotfiles
    # merged, a paste), and uninstall must leave none behind. Each pass removes one.
    for _ in range(text.count(BEGIN)):
        span = find_block(text, label)
        if span is None:
            break
        created = created or span[0] == 0
        text = _cut(text, *span)
    return None if created and not text else text


def _cut(text: str, start: int, end: int) -> str:
    """text without the block at start:end and the newlines install put around it."""
    # The newlines install put around the block are written like the block's own lines.
    nl = _block_newline(text, start)
    after = text[end:]
    ended = after.startswith(nl)
    after = after[len(nl) :] if ended else after
    if start == 0:
        return after
    before = text[:start]
    # Words typed after the end marker stay on a line of their own: the newline before the
    # block goes only with the one after it.
    if before.endswith(nl) and (ended or not after):
        before = before[: -len(nl)]
    return before + after
