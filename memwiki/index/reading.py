"""Reading one wiki file into index items and its manifest entry (problems recorded, not raised)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from . import manifest as st
from .chunker import Item, chunk


def read_file_items(
    root: Path, rel: str, sha: str | None, stat: tuple[int, int] | None
) -> tuple[list[Item], st.FileEntry, tuple[str, ...]]:
    """Chunk one file; a file that cannot be indexed gets a manifest entry with its problem."""
    from .. import recallfile as rfmod
    from ..project import file_projects

    path = root / rel
    track = rel.split("/", 1)[0]
    problem = None
    items: list[Item] = []
    projects: tuple[str, ...] = ()
    try:
        data = path.read_bytes()
    except OSError as exc:
        data, problem = b"", f"cannot read: {exc.strerror}"
    sha = sha or hashlib.sha256(data).hexdigest()
    entry = st.FileEntry(len(data), stat[1] if stat else 0, sha)
    if problem is None:
        problem = rfmod.size_problem(len(data))  # larger files are reported, not indexed
    if problem is None:
        try:
            rf = rfmod.parse(data, track=track, stem=path.stem, path=rel)
            items = chunk(
                rf.body,
                rf.body_line,
                path=rel,
                track=track,
                name=rf.name,
                description=rf.description,
                tags=tuple(rf.tags),
            )
            projects = file_projects(rf.extra, track, path.stem)
            entry.meta = (rf.name, rf.description, tuple(rf.tags), rf.updated)
        except rfmod.InvalidRecallFile as exc:
            problem = "; ".join(f"line {p.line}: {p.message}" for p in exc.problems)
    entry.problem = problem
    return items, entry, projects


def row_of(item: Item, projects: tuple[str, ...] = ()) -> st.Row:
    return st.Row(
        item.path,
        item.track,
        item.name,
        item.description,
        item.tags,
        item.heading,
        item.start_line,
        item.end_line,
        item.sha,
        projects,
    )
