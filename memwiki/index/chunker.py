"""The chunker: cut a RecallFile into items (sections at headings, long sections in windows).

Line numbers are those of the file on disk (1-based, inclusive), so an agent can
open exactly the lines a result points at. Every body line lies in at least one item.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import markdown

# About 200 model tokens: English prose runs ~1.3 tokens per word.
WINDOW_WORDS = 150
OVERLAP_WORDS = 30


@dataclass(frozen=True)
class Item:
    """One retrieval unit: a section, or a window of a long section."""

    path: str
    track: str
    name: str
    description: str
    tags: tuple[str, ...]
    heading: str  # heading path, " > "-joined
    start_line: int
    end_line: int
    text: str

    @property
    def id(self) -> str:
        """Stable id: the path and the line range."""
        return f"{self.path}:{self.start_line}-{self.end_line}"

    @property
    def sha(self) -> str:
        """sha256 of the text this item is embedded from: the embedding cache key."""
        import hashlib

        return hashlib.sha256(self.embed_text.encode("utf-8")).hexdigest()

    @property
    def embed_text(self) -> str:
        """What the embedder sees: the file's name and description head every item."""
        head = f"{self.name.replace('-', ' ')}: {self.description}"
        if self.heading:
            head += f"\n{self.heading}"
        return f"{head}\n{self.text}"


def sections(lines: list[str]) -> list[tuple[list[str], int, int]]:
    """Split body lines at headings outside code: (heading path, start, end) 0-based."""
    out: list[tuple[list[str], int, int]] = []
    stack: list[tuple[int, str]] = []
    start = 0
    current: list[str] = []
    heads = markdown.headings(lines)
    for i, h in enumerate(heads):
        if h is None:
            continue
        if i > start:
            out.append((current, start, i - 1))
            start = i
        level, text = h
        stack = [(lv, t) for lv, t in stack if lv < level] + [(level, text)]
        current = [t for _, t in stack if t]
    if start < len(lines):
        out.append((current, start, len(lines) - 1))
    return _merge_bare_headings(lines, heads, out)


def _merge_bare_headings(lines: list[str], heads, secs: list[tuple[list[str], int, int]]):
    """A heading with nothing under it but a sub-heading joins the next section."""
    merged: list[tuple[list[str], int, int]] = []
    carry: int | None = None
    for n, (path, s, e) in enumerate(secs):
        bare = not any(lines[i].strip() and heads[i] is None for i in range(s, e + 1))
        if bare and n + 1 < len(secs):
            carry = s if carry is None else carry
            continue
        merged.append((path, s if carry is None else carry, e))
        carry = None
    return merged


def windows(lines: list[str], start: int, end: int, max_words: int, overlap: int):
    """Cut lines[start..end] into windows of about max_words words with overlap; (s, e) pairs."""
    counts = [len(lines[i].split()) for i in range(start, end + 1)]
    if sum(counts) <= max_words:
        yield start, end
        return
    i = 0
    n = len(counts)
    while i < n:
        j, words = i, 0
        while j < n and (words + counts[j] <= max_words or j == i):
            words += counts[j]
            j += 1
        yield start + i, start + j - 1
        if j >= n:
            return
        # step back over about `overlap` words, but always move forward
        k, back = j, 0
        while k - 1 > i and back + counts[k - 1] <= overlap:
            k -= 1
            back += counts[k]
        i = max(k, i + 1)


def chunk(
    body: str,
    body_first_line: int,
    *,
    path: str,
    track: str,
    name: str,
    description: str,
    tags: tuple[str, ...] = (),
    max_words: int = WINDOW_WORDS,
    overlap: int = OVERLAP_WORDS,
) -> list[Item]:
    """Cut a file's body into items; body_first_line is the file line the body starts on."""
    lines = body.splitlines()
    meta: dict = dict(path=path, track=track, name=name, description=description, tags=tuple(tags))
    secs = [s for s in sections(lines) if any(lines[i].strip() for i in range(s[1], s[2] + 1))]
    if not secs:
        last = body_first_line + max(len(lines) - 1, 0)
        return [
            Item(**meta, heading="", start_line=body_first_line, end_line=last, text=body.strip())
        ]
    # Blank lines before the first section and between sections join a neighbour,
    # so that every line of the body lies in some item.
    fixed = []
    for n, (heads, s, e) in enumerate(secs):
        s = 0 if n == 0 else s
        e = len(lines) - 1 if n == len(secs) - 1 else secs[n + 1][1] - 1
        fixed.append((heads, s, e))
    items: list[Item] = []
    for heads, s, e in fixed:
        for ws, we in windows(lines, s, e, max_words, overlap):
            text = "\n".join(lines[ws : we + 1]).strip()
            items.append(
                Item(
                    **meta,
                    heading=" > ".join(heads),
                    start_line=body_first_line + ws,
                    end_line=body_first_line + we,
                    text=text,
                )
            )
    return items
