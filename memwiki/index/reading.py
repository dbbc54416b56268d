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
        data = rfmod.read_note_bytes(path)  # a FIFO is refused, never waited on
    except OSError as exc:
        data, problem = b"", f"cannot read: {exc.strerror}"
    sha = sha or hashlib.sha256(data).hexdigest()
    # An unreadable file keeps the walk's size: with its stat unchanged, the next scan
    # takes it as known and does not try (and report) it again.
    size = stat[0] if problem is not None and stat else len(data)
    entry = st.FileEntry(size, stat[1] if stat else 0, sha)
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
        except rfmod.PluginNote as exc:
            entry.plugin = exc.kind  # a drawing or a board: left out in silence (docs/obsidian.md)
        except rfmod.InvalidRecallFile as exc:
            problem = rfmod.problems_text(exc.problems)
    entry.problem = problem
    return items, entry, projects


def read_many(
    root: Path, rels: list[str], hashes: dict[str, str], stats: dict, notify
) -> tuple[list[Item], dict[str, st.FileEntry], dict[str, tuple[str, ...]], dict[str, str]]:
    """Chunk files: their items, manifest entries, projects, and problems (each reported)."""
    items: list[Item] = []
    files: dict[str, st.FileEntry] = {}
    projects: dict[str, tuple[str, ...]] = {}
    problems: dict[str, str] = {}
    for rel in rels:
        file_items, entry, projects[rel] = read_file_items(
            root, rel, hashes.get(rel), stats.get(rel)
        )
        files[rel] = entry
        if entry.problem:
            problems[rel] = entry.problem
            from ..recallfile import printable  # one line, whatever a pulled folder is called

            notify(printable(f"{rel}: not indexed: {entry.problem}"))
        else:
            items.extend(file_items)
    return items, files, projects, problems


def row_of(item: Item, projects: tuple[str, ...] = ()) -> st.Row:
    """The manifest row of an item (everything but its text)."""
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
