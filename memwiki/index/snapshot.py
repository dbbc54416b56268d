"""A reader's view of the index: one committed state and the files it names, opened early."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import bm25
from . import manifest as st


@dataclass
class Snapshot:
    """One consistent, complete index as a reader sees it.

    `open()` opens every file the state names before any slow work (model load, query
    embedding): on Linux an open file outlives a writer's removal of its name, so a
    reader never finds its generation gone half-way.
    """

    root: Path
    directory: Path
    state: st.State
    embedder: object | None = None
    embedder_note: str = ""
    stale: bool = False
    behind: bool = False  # changes too large to index before answering: a background job's
    updated_files: int = 0
    _matrix: object | None = field(default=None, repr=False)
    _vectors_fh: Any = field(default=None, repr=False)
    _searcher: Any = field(default=None, repr=False)
    strict: bool = True  # a vanished file raises FileNotFoundError (the caller retries)
    # a freshness scan still running (index/forkscan.py): Index.confirm() settles it
    pending_scan: Any = field(default=None, repr=False)
    # an update prepared, not written (index/deferred.py): `state` is the one it will
    # commit; BM25 and vectors read the committed index (`base`) with it laid over
    deferred: Any = field(default=None, repr=False)
    base: Snapshot | None = field(default=None, repr=False)

    @property
    def bm25_dir(self) -> Path:
        """The Whoosh directory of this snapshot."""
        return self.directory / self.state.bm25_dir

    @property
    def pending(self) -> int:
        """Items with no vector yet (all of them when the index has no matrix)."""
        if not self.state.vectors_file:
            return len(self.state.rows)
        return len(self.state.unembedded)

    def open(self, bm25_files: bool = True, vector_file: bool = True) -> Snapshot:
        """Open the Whoosh generation and the vector file now; FileNotFoundError if one is gone."""
        if self.base is not None:  # a deferred update: the committed index's Whoosh files
            # (its vectors are mapped already, by writing.prepare)
            self.base.open(bm25_files, vector_file=False)
            return self
        if (
            vector_file
            and self.state.vectors_file
            and self._matrix is None
            and not self._vectors_fh
        ):
            files = []
            try:
                for name, _ in self.state.segments:  # every vector segment
                    files.append(open(self.directory / name, "rb"))  # noqa: SIM115
                self._vectors_fh = files
            except FileNotFoundError:
                for fh in files:
                    fh.close()
                if self.strict:
                    raise
        if bm25_files and self._searcher is None and self.state.rows:
            try:
                self._searcher = bm25.open_searcher(self.bm25_dir, self.state.whoosh_generation)
            except FileNotFoundError:
                if self.strict:
                    raise
            except Exception:  # damaged: searcher() raises it again, and retrieve repairs
                pass
        return self

    def searcher(self):
        """The Whoosh searcher opened by open() (opened now if it was not)."""
        if self._searcher is None and self.base is not None:
            from .bm25_overlay import OverlaySearcher

            prepared = self.deferred
            self._searcher = OverlaySearcher(self.base.searcher(), prepared.gone, prepared.items)
        if self._searcher is None:
            self._searcher = bm25.open_searcher(self.bm25_dir, self.state.whoosh_generation)
        return self._searcher

    def matrix(self):
        """The item vector matrix (memory-mapped on first use), or None without vectors."""
        if self._matrix is None and self.base is not None:
            vectors = self.deferred.vectors
            if vectors is not None and self.state.vectors_file:
                from .vectors import appended_matrix

                self._matrix = appended_matrix(vectors.old_matrix, self.state, vectors.block)
            return self._matrix
        if self._matrix is None and self.state.vectors_file:
            from .vectors import open_matrix

            self._matrix = open_matrix(self.directory, self.state, self._vectors_fh)
        return self._matrix

    def close(self) -> None:
        """Release the open files (and stop a freshness scan nobody will confirm)."""
        if self.pending_scan is not None:
            self.pending_scan.cancel()
            self.pending_scan = None
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
        if self.base is not None:
            self.base.close()
        for fh in self._vectors_fh or ():
            fh.close()
        self._vectors_fh = None
