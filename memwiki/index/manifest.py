"""The index state (manifest, rows); index/freshness.py compares it with the wiki.

`state.pkl` is the index's commit point: it names the Whoosh directory, the vector
segments and the manifest base that belong together, so a reader that loads it sees one
complete index.

The manifest is stored in two parts so that an edit writes work proportional to what
changed: an immutable base `manifest-<gen>.bin` (every file entry and item row at the
last compaction, as columns a reader decodes only where it looks: index/columns.py)
and, in `state.pkl` itself, only what changed since: file entries added, replaced or
gone, the rows appended after the base's, and the physical row slots that are dead
(tombstones). The item rows a reader sees are the live slots in physical order
(index/views.py), which is also the order of the vector segments (index/vectors.py).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .columns import Base
from .views import FileView, RowView
from .walk import Stat, Watch, walk

__all__ = ["Stat", "Watch", "walk"]  # the walk's names, as the rest of the index knows them

FORMAT = 12  # bump when chunking, analysis or layout changes: old indexes are rebuilt
# (9: FileEntry.meta; 10: CJK analysis; 11: manifest base + delta, vector segments;
# 12: columnar base read lazily)
# Formats whose index differs only in how the manifest is stored: upgraded by rewriting
# the manifest alone (a 50k-file rebuild takes half an hour; Whoosh and vectors are kept).
UPGRADABLE = (11,)


class Row(NamedTuple):
    """One item as the index stores it: everything but its text (the file on disk has that)."""

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
    # What an Obsidian plugin's own note is (markdown.plugin_note): read and left out. Kept
    # so that it is neither counted as indexed nor parsed again by every `list`.
    plugin: str | None = None

    @property
    def indexed(self) -> bool:
        """True for a RecallFile the index holds: read without a problem, no plugin's note."""
        return self.problem is None and self.plugin is None


_TRANSIENT = ("base_data", "upgraded", "recheck_plugins", "_views")  # never in state.pkl


@dataclass
class State:
    """A complete index: manifest, rows, and the names of its Whoosh dir and vector segments.

    `files` and `rows` are read-only views of the whole manifest (base + delta, see the
    module docstring); writers build a new State from the delta fields. The physical
    layout (`extra`, `dead`, `segments`) is maintained by the indexer (index/segments.py).
    """

    generation: int = 0
    bm25_dir: str = ""
    whoosh_generation: int = -1
    bm25_deleted: int = (
        0  # documents Whoosh still counts in its statistics (see bm25.should_optimize)
    )
    embedder: dict | None = None  # {provider, model, dim} of the vectors
    written_ns: int = 0  # the racy window's end: its scan's start, not its save (ScanChanges)
    format: int = FORMAT
    base: str | None = None  # manifest-<gen>.bin: files and rows at the last compaction
    files_delta: dict[str, FileEntry] = field(default_factory=dict)  # added/replaced since
    files_gone: set[str] = field(default_factory=set)  # base files deleted since
    extra: list[Row] = field(default_factory=list)  # physical rows after the base's
    dead: set[int] = field(default_factory=set)  # physical slots no longer in `rows`
    unembedded_slots: set[int] = field(default_factory=set)  # physical slots without a vector
    segments: list[tuple[str, int]] = field(default_factory=list)  # vector files, row counts
    base_data: Base | None = field(default=None, repr=False)  # the loaded base
    upgraded: int | None = field(default=None, repr=False)  # read from this older format
    # A base from before plugin notes were recorded: look once (upgrade.recheck_plugin_notes)
    recheck_plugins: bool = field(default=False, repr=False)
    plugins_checked: bool = False
    _views: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def rows(self) -> RowView:
        """The live item rows, in physical order (decoded on access)."""
        view = self._views.get("rows")
        if view is None:
            view = self._views["rows"] = RowView(self.base_data, self.extra, self.dead)
        return view

    @property
    def files(self) -> FileView:
        """path -> FileEntry of every file the manifest knows."""
        view = self._views.get("files")
        if view is None:
            view = FileView(self.base_data, self.files_delta, self.files_gone)
            self._views["files"] = view
        return view

    @property
    def unembedded(self) -> set[int]:
        """Live rows whose vector is still zero (masked out of vector search)."""
        view = self._views.get("unembedded")
        if view is None:
            rows = self.rows
            live = (rows.live(s) for s in self.unembedded_slots)
            view = self._views["unembedded"] = {n for n in live if n is not None}
        return view

    def changed(self) -> None:
        """Forget the views after the delta fields were changed in place."""
        self._views.clear()

    @property
    def vectors_file(self) -> str | None:
        """The first vector segment, or None when the index has no vectors."""
        return self.segments[0][0] if self.segments else None

    @property
    def physical_rows(self) -> int:
        """Row slots in the vector segments: live rows and tombstones."""
        return (self.base_data.n_rows if self.base_data is not None else 0) + len(self.extra)

    def indexed_files(self) -> int:
        """Files indexed without a problem (a stored count, not a pass over the files)."""
        return self.files.indexed()

    def __getstate__(self) -> dict:
        data = dict(self.__dict__)
        for name in _TRANSIENT:
            data.pop(name, None)
        return data

    def __setstate__(self, data: dict) -> None:
        fresh = State()
        self.__dict__.update(fresh.__dict__)
        self._views = {}
        # A format-11 state kept its delta under other names; load() converts it.
        old = data.get("format") != FORMAT
        legacy = {k: data.pop(k) for k in _LEGACY if k in data} if old else {}
        self.__dict__.update(data)
        if legacy:
            self.__dict__["_legacy"] = legacy


_LEGACY = ("files", "files_gone", "rows", "unembedded", "base_files", "base_rows")


def file_delta(
    old: State, deleted: list[str], entries: dict[str, FileEntry]
) -> tuple[dict[str, FileEntry], set[str]]:
    """(files_delta, files_gone) of an update of old: files deleted, entries added or replaced.

    Proportional to old's delta and the update, never to the files of the base.
    """
    delta = dict(old.files_delta)
    gone = set(old.files_gone)
    base = old.base_data
    for rel in deleted:
        delta.pop(rel, None)
        if base is not None and base.file_index(rel) is not None:
            gone.add(rel)
    for rel, entry in entries.items():
        delta[rel] = entry
        gone.discard(rel)
    return delta, gone


class DamagedIndex(Exception):
    """The sidecar index cannot be used as it is; the message says why."""


class OtherVersionIndex(DamagedIndex):
    """The index was written by another memwiki version: not damage, but rebuilt the same."""


def _other_version(fmt: object) -> OtherVersionIndex:
    # pip install -U with an existing index: "damaged" would send people after no fault
    if not isinstance(fmt, int):
        return OtherVersionIndex("written by another memwiki version")
    age = "an older" if fmt < FORMAT else "a newer"
    return OtherVersionIndex(f"written by {age} memwiki (index format {fmt}, now {FORMAT})")


def load(path: Path) -> State | None:
    """Load state.pkl and its base; None when there is none; DamagedIndex when unreadable.

    A base file that is missing raises FileNotFoundError: a writer may have compacted and
    removed it after this reader read state.pkl (the caller retries on the newer state).
    A state of an UPGRADABLE format comes back converted, with `upgraded` set: the
    writer persists it (Index._update_locked).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        state = unpickle(data)
    except (ModuleNotFoundError, AttributeError):  # a class gone since (format 6's state.py)
        raise _other_version(None) from None
    except Exception as exc:  # a truncated or garbage file
        raise DamagedIndex(f"unreadable manifest ({type(exc).__name__})") from None
    fmt = getattr(state, "format", None)
    if not isinstance(state, State) or (fmt != FORMAT and fmt not in UPGRADABLE):
        raise _other_version(fmt)
    if fmt != FORMAT:
        from .upgrade import upgrade

        return upgrade(path, state)
    if state.base:
        try:
            state.base_data = Base.open(path.parent / state.base)
        except FileNotFoundError:
            raise
        except Exception as exc:  # ValueError for a base cut short, anything for garbage
            raise DamagedIndex(f"unreadable manifest base ({exc})") from None
        if not state.base_data.plugins_known and not state.plugins_checked:
            state.upgraded, state.recheck_plugins = FORMAT, True
    return state


def unpickle(data: bytes):
    """pickle.loads with the cyclic garbage collector paused (a manifest has no cycles).

    A format-11 base (the upgrade path) creates hundreds of thousands of objects, and the
    collections they trigger traverse all of them again and again. Nothing here forms a cycle.
    """
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(data)
    finally:
        if was_enabled:
            gc.enable()


def save(path: Path, state: State, compact: bool = False, write_base: bool = False) -> None:
    """Write state.pkl atomically; compact=True first writes a new base of the whole manifest.

    Without compaction the write is proportional to what changed since the base.
    write_base: write state.base_data as it is (an upgraded manifest: same physical layout).
    """
    from ..fsutil import atomic_write_bytes

    if compact or state.base is None:
        unembedded = sorted(state.unembedded)  # live indices: the slots of a compacted base
        base = Base.build(dict(state.files), list(state.rows))
        state.base, state.base_data = f"manifest-{state.generation}.bin", base
        state.files_delta, state.files_gone = {}, set()
        state.extra, state.dead, state.unembedded_slots = [], set(), set(unembedded)
        state.changed()
        write_base = True
    if write_base:
        assert state.base_data is not None
        state.base_data.write(path.parent / str(state.base))
    atomic_write_bytes(path, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
