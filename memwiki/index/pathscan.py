"""The freshness scan of named files: a few stats where a walk would stat every file.

Used around the scan child of a large wiki (index/forkscan.py): the child looks at the
files modified last before it walks (recent_change), and the parent indexes the file the
child named from its own stat and hash of it (scan_paths), both as the walk would list
and manifest.scan would compare them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..fsutil import file_sha256
from ..layout import RACY_NS
from . import manifest as st

#: Files the child stats before its walk (FileView.recent).
RECENT_FIRST = 16


def recent_change(root: Path, state: st.State) -> str | None:
    """The first of the files modified last (by the manifest) whose stat differs now, or None.

    The walk meets an edited file at a random point of the directory order; at 50,000
    files the parent has then often searched the stale index to the end and searches
    again. A file edited now is most often one edited shortly before (a note being worked
    on, saved again and again), so a few stats before the walk find it at once.
    """
    since = state.written_ns - RACY_NS  # the walk's rule (walk.Watch): recent writes only
    files = state.files
    for rel in files.recent(RECENT_FIRST):
        found, entry = stat_as_walked(root, rel), files.get(rel)
        if found is None or entry is None or found[1] <= since:
            continue
        if found != (entry.size, entry.mtime_ns):
            return rel
    return None


def scan_paths(
    root: Path, state: st.State, rels: list[str]
) -> tuple[st.ScanChanges, dict[str, st.Stat]]:
    """manifest.scan for these files only: stat each as the walk does, hash those that differ."""
    changes = st.ScanChanges()
    stats: dict[str, st.Stat] = {}
    racy_before = state.written_ns - RACY_NS
    files = state.files
    for rel in rels:
        found = stat_as_walked(root, rel)
        entry = files.get(rel)
        if found is None:
            if entry is not None:
                changes.deleted.append(rel)
            continue
        stats[rel] = found
        if entry is not None and (entry.size, entry.mtime_ns) == found and found[1] < racy_before:
            continue
        try:
            sha = file_sha256(root / rel)
        except OSError:
            continue
        if entry is not None and entry.sha256 == sha:
            if (entry.size, entry.mtime_ns) != found:
                changes.touched[rel] = st.FileEntry(*found, sha, entry.problem, entry.meta)
            continue
        changes.changed.append(rel)
        changes.hashes[rel] = sha
    return changes, stats


def stat_as_walked(root: Path, rel: str) -> st.Stat | None:
    """(size, mtime_ns) of a file as manifest.walk would list it, or None when it would not."""
    path = os.path.join(root, rel)
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            if not os.path.realpath(path).startswith(os.path.realpath(root) + os.sep):
                return None  # a link leading outside the wiki is never followed
            info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or not rel.endswith(".md"):
        return None
    return info.st_size, info.st_mtime_ns
