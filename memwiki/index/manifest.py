"""The index state (manifest, rows) and the freshness scan that compares it with the wiki.

`state.pkl` is the index's commit point: it names the Whoosh directory and the
vector file that belong together, so a reader that loads it sees one complete index.
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..fsutil import file_sha256

FORMAT = 10  # bump when chunking or analysis changes: old indexes are rebuilt (9: FileEntry.meta; 10: CJK analysis)
# A file modified this close to the moment the manifest was written may change again
# within the same mtime tick without changing size: hash it again next time.
RACY_NS = 2_000_000_000


class Row(NamedTuple):
    """One item as the index stores it: everything but its text (the file on disk has that).

    A NamedTuple rather than a dataclass: unpickling ten thousand of them is the largest
    fixed cost of a cold retrieve, and tuples load about twice as fast.
    """

    path: str
    track: str
    name: str
    description: str
    tags: tuple[str, ...]
    heading: str
    start_line: int
    end_line: int
    sha: str
    projects: tuple[str, ...] = ()  # the file's `project:`/`projects:`; empty = global memory

    @property
    def id(self) -> str:
        """Same id as chunker.Item.id."""
        return f"{self.path}:{self.start_line}-{self.end_line}"


@dataclass
class FileEntry:
    """What the manifest knows of one file."""

    size: int
    mtime_ns: int
    sha256: str
    problem: str | None = None  # set when the file could not be indexed
    # (name, description, tags, updated) as `memwiki list` shows them: listing with a
    # fresh index reads no file whose stat matches (Wiki.list_recall_files)
    meta: tuple[str, str, tuple[str, ...], str | None] | None = None


@dataclass
class State:
    """A complete index: manifest, rows, and the names of its Whoosh dir and vector file."""

    generation: int = 0
    bm25_dir: str = ""
    whoosh_generation: int = -1
    bm25_deleted: int = (
        0  # documents Whoosh still counts in its statistics (see bm25.should_optimize)
    )
    vectors_file: str | None = None
    embedder: dict | None = None  # {provider, model, dim} of the vectors
    unembedded: set[int] = field(default_factory=set)  # rows whose vector is still zero
    files: dict[str, FileEntry] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    written_ns: int = 0
    format: int = FORMAT


class DamagedIndex(Exception):
    """The sidecar index cannot be used as it is; the message says why."""


def load(path: Path) -> State | None:
    """Load state.pkl; None when there is none; DamagedIndex when it is unreadable."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        state = pickle.loads(data)
    except Exception as exc:  # a truncated or garbage file
        raise DamagedIndex(f"unreadable manifest ({type(exc).__name__})") from None
    if not isinstance(state, State) or getattr(state, "format", None) != FORMAT:
        raise DamagedIndex("manifest from another memwiki version")
    return state


def save(path: Path, state: State) -> None:
    """Write state.pkl atomically."""
    from ..fsutil import atomic_write_bytes

    state.written_ns = time.time_ns()
    atomic_write_bytes(path, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))


def walk(root: Path) -> dict[str, os.stat_result]:
    """Every indexable markdown file under the wiki's track folders, with its stat."""
    found: dict[str, os.stat_result] = {}
    try:
        tops = [e for e in os.scandir(root) if not e.name.startswith(".")]
    except FileNotFoundError:
        return found
    stack = [(e.path, e.name) for e in tops if e.is_dir(follow_symlinks=False)]
    root_real = os.path.realpath(root)
    while stack:
        directory, rel = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            child = f"{rel}/{entry.name}"
            if entry.is_symlink():
                real = os.path.realpath(entry.path)
                if not real.startswith(root_real + os.sep):
                    continue  # a link leading outside the wiki is never followed
            if entry.is_dir():
                stack.append((entry.path, child))
            elif entry.name.endswith(".md") and entry.is_file():
                try:
                    found[child] = entry.stat()
                except OSError:
                    continue
    return found


@dataclass
class ScanChanges:
    """What differs between the wiki on disk and the manifest."""

    changed: list[str] = field(default_factory=list)  # added or modified: (re)index these
    deleted: list[str] = field(default_factory=list)
    touched: dict[str, FileEntry] = field(default_factory=dict)  # same bytes, new stat
    hashes: dict[str, str] = field(default_factory=dict)  # sha256 computed for changed files

    def __bool__(self) -> bool:
        return bool(self.changed or self.deleted or self.touched)


def scan(root: Path, state: State | None) -> tuple[ScanChanges, dict[str, os.stat_result]]:
    """Compare the wiki with the manifest: stat every file, hash only those whose stat changed."""
    stats = walk(root)
    known = state.files if state else {}
    changes = ScanChanges()
    racy_before = (state.written_ns if state else 0) - RACY_NS
    for rel, st in stats.items():
        entry = known.get(rel)
        same_stat = entry is not None and (entry.size, entry.mtime_ns) == (
            st.st_size,
            st.st_mtime_ns,
        )
        if same_stat and st.st_mtime_ns < racy_before:
            continue
        try:
            sha = file_sha256(root / rel)
        except OSError:
            continue
        if entry is not None and entry.sha256 == sha:
            if entry.size != st.st_size or entry.mtime_ns != st.st_mtime_ns:
                changes.touched[rel] = FileEntry(
                    st.st_size, st.st_mtime_ns, sha, entry.problem, entry.meta
                )
            continue
        changes.changed.append(rel)
        changes.hashes[rel] = sha
    changes.deleted = sorted(set(known) - set(stats))
    changes.changed.sort()
    return changes, stats
