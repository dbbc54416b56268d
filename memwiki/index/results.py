"""What a retrieve returns: files with their best sections, and its JSON and markdown forms."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

# The markdown block's header names the query in at most this many characters: the prompt
# hook's query is the whole prompt, and a pasted log echoed there took the context budget
# the memory was meant to have.
QUERY_SHOWN_CHARS = 100


def shown_query(query: str, limit: int = QUERY_SHOWN_CHARS) -> str:
    """The query as the markdown header shows it: one line, at most limit characters, quoted.

    Whitespace runs (newlines too) become one space, so the query cannot start a line of
    the block (a fake `## memory/...` heading); JSON string escaping, with < and >
    escaped as well, keeps it from closing the HTML comment (`-->`) it stands in.
    """
    text = " ".join(query.split())
    from ..recallfile import mend_surrogates

    text = mend_surrogates(text)  # a lone surrogate cannot be written as UTF-8
    if len(text) > limit:
        cut = text.rfind(" ", 0, limit)
        text = text[: cut if cut > limit // 2 else limit].rstrip() + " …"
    quoted = json.dumps(text, ensure_ascii=False)
    return quoted.replace("<", "\\u003c").replace(">", "\\u003e")


@dataclass
class Section:
    """A part of a result file: its heading path and line range."""

    heading: str
    start_line: int
    end_line: int
    text: str
    score: float

    def to_dict(self) -> dict:
        """JSON form."""
        return {
            "heading": self.heading,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "text": self.text,
            "score": round(self.score, 6),
        }


@dataclass
class FileResult:
    """One retrieved RecallFile with its best sections."""

    path: str
    track: str
    name: str
    description: str
    score: float
    sections: list[Section] = field(default_factory=list)
    projects: tuple[str, ...] = ()  # empty: global memory

    def to_dict(self) -> dict:
        """JSON form."""
        return {
            "path": self.path,
            "track": self.track,
            "name": self.name,
            "description": self.description,
            "score": round(self.score, 6),
            "project": self.projects[0] if self.projects else None,
            "projects": list(self.projects),
            "sections": [s.to_dict() for s in self.sections],
            # On every result, not only on conflict copies: agents read them without a check.
            "conflict": self.conflict_of is not None,
            "conflict_of": self.conflict_of,
        }

    @property
    def conflict_of(self) -> str | None:
        """The original's path when this file is an unresolved conflict copy memwiki wrote."""
        from ..recallfile import conflict_copy_of

        folder, _, base = self.path.rpartition("/")
        stem = conflict_copy_of(base)
        return None if stem is None else f"{folder}/{stem}.md" if folder else f"{stem}.md"


@dataclass
class RetrievalResult:
    """The answer to one query."""

    query: str
    mode: str
    results: list[FileResult]
    index: dict
    # retrieve(defer=True): the edit the answer laid over the index, still to be written;
    # the caller calls it once the answer is out (index/deferred.py). Returns how.
    write_later: Callable[[], str] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """JSON form (schema documented in docs/reference.md)."""
        return {
            "query": self.query,
            "mode": self.mode,
            "results": [r.to_dict() for r in self.results],
            "index": self.index,
        }

    def paths(self) -> list[str]:
        """The result files' paths, best first."""
        return [r.path for r in self.results]

    def files_text(self) -> str:
        """`--files`: one path a line, best first, each shown one line (see printable).

        A pulled folder named `x\n/home/ada/.ssh/id_rsa\n` must not add a line that a
        script or an agent piping the list to `cat` would read as a path of its own.
        """
        from ..recallfile import printable

        return "".join(f"{printable(p)}\n" for p in self.paths())

    def mode_line(self) -> str:
        """Which lists made the answer (and why vectors were left out, if they were)."""
        note = self.index.get("note")
        return f"<!-- memwiki mode: {self.mode}{f' ({note})' if note else ''} -->"

    def to_markdown(self) -> str:
        """A compact block an agent can paste into its context."""
        if not self.results:
            return f"<!-- memwiki: no memory matches {shown_query(self.query)} -->\n"
        n = len(self.results)
        out = [f"<!-- memwiki: {n} file{'' if n == 1 else 's'} for {shown_query(self.query)} -->"]
        out.append(self.mode_line())
        from ..recallfile import printable  # a pulled folder's name must not forge a line

        for r in self.results:
            mark = f" (unresolved conflict copy of {r.conflict_of})" if r.conflict_of else ""
            owner = f" (project: {', '.join(r.projects)})" if r.projects else ""
            title, about = printable(f"{r.path}{mark}"), printable(r.description)
            out.append(f"\n## {title}\n{r.name}: {about}{owner}")
            for s in r.sections:
                where = f"lines {s.start_line}-{s.end_line}"
                heading = printable(s.heading)
                out.append(f"\n### {heading} ({where})" if heading else f"\n### ({where})")
                out.append(s.text)
        return "\n".join(out) + "\n"
