"""The index state (manifest, rows) and the freshness scan that compares it with the wiki.

`state.pkl` is the index's commit point: it names the Whoosh directory, the vector
segments and the manifest base that belong together, so a reader that loads it sees one
complete index.

The manifest is stored in two parts so that an edit writes work proportional to what
changed: an immutable base `rows-<gen>.pkl` (every file entry and item row at the last
compaction) and, in `state.pkl` itself, only what changed since: file entries added,
replaced or gone, the rows appended after the base's, and the physical row slots that
are dead (tombstones). The item rows a reader sees are the live slots in physical order,
which is also the order of the vector segments (index/vectors.py).
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..fsutil import file_sha256
from ..layout import RACY_NS

FORMAT = 11  # bump when chunking, analysis or layout changes: old indexes are rebuilt
# (9: FileEntry.meta; 10: CJK analysis; 11: manifest base + delta, vector segments)


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
    """A complete index: manifest, rows, and the names of its Whoosh dir and vector segments.

    `files` and `rows` are the whole manifest as readers use it; on disk they are the base
    file plus the delta kept in state.pkl (see the module docstring). The physical layout
    (`extra`, `dead`, `segments`) is maintained by the indexer (index/segments.py).
    """

    generation: int = 0
    bm25_dir: str = ""
    whoosh_generation: int = -1
    bm25_deleted: int = (
        0  # documents Whoosh still counts in its statistics (see bm25.should_optimize)
    )
    embedder: dict | None = None  # {provider, model, dim} of the vectors
    unembedded: set[int] = field(default_factory=set)  # rows whose vector is still zero
    files: dict[str, FileEntry] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    written_ns: int = 0
    format: int = FORMAT
    base: str | None = None  # rows-<gen>.pkl: (files, rows) at the last compaction
    extra: list[Row] = field(default_factory=list)  # physical rows after the base's
    dead: set[int] = field(default_factory=set)  # physical slots no longer in `rows`
    segments: list[tuple[str, int]] = field(default_factory=list)  # vector files, row counts
    # the base as loaded or written (never pickled into state.pkl)
    base_files: dict[str, FileEntry] = field(default_factory=dict, repr=False)
    base_rows: list[Row] = field(default_factory=list, repr=False)

    @property
    def vectors_file(self) -> str | None:
        """The first vector segment, or None when the index has no vectors."""
        return self.segments[0][0] if self.segments else None

    @property
    def physical_rows(self) -> int:
        """Row slots in the vector segments: live rows and tombstones."""
        return len(self.base_rows) + len(self.extra)

    def __getstate__(self) -> dict:
        # Only the delta against the base goes into state.pkl: unchanged entries are the
        # very objects loaded from the base, so an identity test finds what changed.
        data = dict(self.__dict__)
        base = self.base_files
        data["files"] = {k: v for k, v in self.files.items() if base.get(k) is not v}
        data["files_gone"] = [k for k in base if k not in self.files]
        data["rows"] = None
        data["base_files"] = None
        data["base_rows"] = None
        return data

    def __setstate__(self, data: dict) -> None:
        self.__dict__.update(data)


def live_rows(state: State) -> list[Row]:
    """The rows a reader sees: live physical slots in order."""
    physical = state.base_rows + state.extra
    if not state.dead:
        return physical
    dead = state.dead
    return [r for i, r in enumerate(physical) if i not in dead]


class DamagedIndex(Exception):
    """The sidecar index cannot be used as it is; the message says why."""


def load(path: Path) -> State | None:
    """Load state.pkl and its base; None when there is none; DamagedIndex when unreadable.

    A base file that is missing raises FileNotFoundError: a writer may have compacted and
    removed it after this reader read state.pkl (the caller retries on the newer state).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        state = _unpickle(data)
    except Exception as exc:  # a truncated or garbage file
        raise DamagedIndex(f"unreadable manifest ({type(exc).__name__})") from None
    if not isinstance(state, State) or getattr(state, "format", None) != FORMAT:
        raise DamagedIndex("manifest from another memwiki version")
    delta, gone = state.files, state.__dict__.pop("files_gone", [])
    if state.base:
        base_data = (path.parent / state.base).read_bytes()
        try:
            state.base_files, state.base_rows = _unpickle(base_data)
        except Exception as exc:
            raise DamagedIndex(f"unreadable manifest base ({type(exc).__name__})") from None
    else:
        state.base_files, state.base_rows = {}, []
    files = dict(state.base_files)
    for rel in gone:
        files.pop(rel, None)
    files.update(delta)
    state.files = files
    state.rows = live_rows(state)
    return state


def _unpickle(data: bytes):
    """pickle.loads with the cyclic garbage collector paused.

    Unpickling a large wiki's manifest creates hundreds of thousands of objects, and the
    collections they trigger traverse all of them again and again: at 10,000 files this
    halves the load (0.51 s instead of 1.00 s on a loaded machine). Nothing here forms a cycle.
    """
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(data)
    finally:
        if was_enabled:
            gc.enable()


def save(path: Path, state: State, compact: bool = False) -> None:
    """Write state.pkl atomically; compact=True first writes a new base of the whole manifest.

    Without compaction the write is proportional to what changed since the base.
    """
    from ..fsutil import atomic_write_bytes

    if compact or state.base is None:
        state.base = f"rows-{state.generation}.pkl"
        state.base_files, state.base_rows = dict(state.files), list(state.rows)
        state.extra, state.dead = [], set()
        blob = pickle.dumps((state.base_files, state.base_rows), protocol=pickle.HIGHEST_PROTOCOL)
        atomic_write_bytes(path.parent / state.base, blob)
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
