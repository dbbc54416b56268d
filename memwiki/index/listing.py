"""What `memwiki list` takes from the index manifest instead of parsing every file again.

The indexer stores each file's (name, description, tags, updated) in its manifest entry;
a file whose size and mtime still match that entry, and that was not written within the
racy window before the manifest, lists from it; an Obsidian plugin's own note the index
read (a drawing, a board) is left out the same way, unread. Every other file is parsed as
before, so a stale or missing index only costs speed, never correctness.
"""

from __future__ import annotations

from pathlib import Path

from .. import recallfile as rfmod
from ..layout import CONFLICT_HEAD_BYTES as HEAD_BYTES
from ..layout import RACY_NS
from ..recallfile import Problem
from . import manifest

Meta = tuple[str, str, tuple[str, ...], str | None]
Fields = tuple[str, str, list[str], str | None]  # name, description, tags, updated


class ListingCache:
    """The manifest's listing metadata, loaded once per state.pkl version."""

    def __init__(self, index_dir: Path, frozen: bool = False):
        """frozen: load the manifest once (one command's run) instead of checking it per call."""
        self.path = index_dir / "state.pkl"
        self.frozen = frozen
        self._pinned = False
        self._key: tuple[int, int] | None = None
        self._files: dict[str, manifest.FileEntry] = {}
        self._racy = 0  # the manifest's racy window starts here

    def files(self) -> dict[str, manifest.FileEntry]:
        """rel -> manifest entry, for entries that can stand in for the file ({} if none)."""
        if (self.frozen or self._pinned) and self._key is not None:
            return self._files
        try:
            info = self.path.stat()
        except OSError:
            return {}
        key = (info.st_size, info.st_mtime_ns)
        if key == self._key:
            return self._files
        try:
            state = manifest.load(self.path)
        except (manifest.DamagedIndex, OSError):
            state = None
        files: dict[str, manifest.FileEntry] = {}
        racy = 0
        if state is not None:
            racy = state.written_ns - RACY_NS
            files = {
                rel: e
                for rel, e in state.files.items()
                if (e.meta is not None or e.plugin is not None)
                and e.problem is None
                and e.mtime_ns < racy
            }
        self._key, self._files, self._racy = key, files, racy
        return files

    def pin(self) -> None:
        """Check the manifest once now and not again until unpin (one listing page)."""
        self._pinned = False
        self.files()
        self._pinned = True

    def unpin(self) -> None:
        """Check the manifest on every call again (a long-lived Wiki sees later updates)."""
        self._pinned = False

    def entry(self, rel: str, path: Path) -> manifest.FileEntry | None:
        """The manifest's entry of one file when it still describes the file on disk."""
        entry = self.files().get(rel)
        if entry is None:
            return None
        try:
            info = path.stat()
        except OSError:
            return None
        same = (info.st_size, info.st_mtime_ns) == (entry.size, entry.mtime_ns)
        # A change since the manifest with size and mtime put back (`cp -p`, `touch -r`, a
        # sync tool restoring times) shows only in the ctime: listed stale until the next
        # index update otherwise, as the index's own scan knows (index/walk.py).
        return entry if same and info.st_ctime_ns < self._racy else None

    def meta(self, rel: str, path: Path) -> Meta | None:
        """The listing metadata of one file when the manifest still describes it."""
        entry = self.entry(rel, path)
        return entry.meta if entry is not None else None

    def describe(self, track: str, rel: str, path: Path) -> tuple[Fields | None, list[Problem]]:
        """(name, description, tags, updated) of a RecallFile, or None and its problems
        (none for a plugin's own note: left out in silence, as try_read leaves it)."""
        entry = self.entry(rel, path)
        if entry is not None and entry.plugin is not None:
            return None, []
        meta = entry.meta if entry is not None else None
        if meta is not None:
            return (meta[0], meta[1], list(meta[2]), meta[3]), []
        rf, problems = rfmod.try_read(path, track, rel)
        if rf is None:
            return None, problems
        return (rf.name, rf.description, rf.tags, rf.updated), []

    def known_valid(self, rel: str, path: Path) -> bool:
        """True when the index parsed this file's current bytes as a valid RecallFile.

        A file naming itself a conflict copy (`conflict_of:`) is never taken on trust:
        lint reports those from the parsed frontmatter.
        """
        if self.meta(rel, path) is None:
            return False
        try:
            with path.open("rb") as fh:
                head = fh.read(HEAD_BYTES)
        except OSError:
            return False
        return b"conflict_of" not in head
