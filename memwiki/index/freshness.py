"""The freshness scan: which files of the wiki differ from the index manifest.

Every file is stat'd; only those whose stat differs from the manifest's, or that were
written within the racy window before the scan the manifest came from (or whose inode
changed since, by the ctime), are hashed (docs/retrieval.md, "Freshness and clocks").
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..fsutil import file_sha256
from ..layout import RACY_NS
from .manifest import FileEntry, State
from .walk import Stat, Watch, set_ahead, stat_as_walked, walk


@dataclass
class ScanChanges:
    """What differs between the wiki on disk and the manifest."""

    changed: list[str] = field(default_factory=list)  # added or modified: (re)index these
    deleted: list[str] = field(default_factory=list)
    touched: dict[str, FileEntry] = field(default_factory=dict)  # same bytes, new stat
    hashes: dict[str, str] = field(default_factory=dict)  # sha256 computed for changed files
    # Before the first stat. The save, seconds later (embedding, a suspended laptop), set
    # the racy window: a same-size edit in the tick of a file read in between was lost.
    started_ns: int = 0
    settles: int = 0  # racy files hashed unchanged that a window from started_ns leaves out

    def racy_from(self, old: State) -> int:
        """written_ns of a state built from old with these changes (0: start unknown)."""
        return self.started_ns or min(old.written_ns, time.time_ns())

    def __bool__(self) -> bool:
        return bool(self.changed or self.deleted or self.touched)


def scan(
    root: Path, state: State | None, on_change: Callable[[str], None] | None = None
) -> tuple[ScanChanges, dict[str, Stat]]:
    """Compare the wiki with the manifest: stat every file, hash only those whose stat changed.

    The stats are compared whole first (one dict comparison, in C): on an unchanged wiki
    only the files written within the racy window before the manifest are hashed.
    on_change: called once, during the walk, with the first file modified since (about)
    the manifest was written whose stat differs from it (a hint for a caller that can
    start on it early; the result is the answer).
    """
    started = time.time_ns()
    known = state.files.stats() if state else {}
    racy_before = (state.written_ns if state else 0) - RACY_NS
    watch = Watch(known, racy_before, on_change) if on_change is not None else None
    ctimes: dict[str, int] = {}  # inodes changed in the window: a restored mtime hides none
    stats = walk(root, watch, ctimes, racy_before)
    changes = ScanChanges(started_ns=started)
    suspects, changes.deleted = _suspects(root, stats, known, racy_before, started, ctimes)
    files = state.files if state else {}
    for rel in suspects:
        entry = files.get(rel)
        try:
            sha = file_sha256(root / rel)
        except OSError as exc:
            if isinstance(exc, FileNotFoundError) and not os.path.lexists(root / rel):
                continue  # gone since the walk: the next scan finds it deleted
            # Unreadable (no permission, a symlink loop or a dangling one, a folder that
            # cannot be listed): indexed as a problem that says why, not silently left out
            # (and, with its stat known, not tried again on every scan; nor said again when
            # only its ctime put it in the racy window).
            if entry is None or entry.problem is None or (entry.size, entry.mtime_ns) != stats[rel]:
                changes.changed.append(rel)
            continue
        if entry is not None and entry.sha256 == sha:
            size, mtime = stats[rel]
            if entry.size != size or entry.mtime_ns != mtime:
                changes.touched[rel] = replace(entry, size=size, mtime_ns=mtime)
            continue
        changes.changed.append(rel)
        changes.hashes[rel] = sha
    changes.changed.sort()
    old_enough = started - RACY_NS
    changes.settles = sum(
        racy_before <= max(stats[r][1], ctimes.get(r, 0)) < old_enough for r in suspects
    )
    return changes, stats


def _suspects(
    root: Path, stats: dict, known: dict, racy_before: int, now: int, ctimes: dict
) -> tuple[list[str], list[str]]:
    """(the files to hash: recent, or their stat differs from known's; the known files gone).

    Nearly always every difference is a recent write (the racy window's files are hashed
    anyway): with their stats put into known (this scan's own dict), one comparison in C
    tells. A loop comparing every file costs 25-35 ms at 50,000 files in the scan child,
    on the critical path of the retrieve after an edit; the comparison 7-10 ms.
    """
    recent = [rel for rel, (_, mtime) in stats.items() if mtime >= racy_before]
    settled = set_ahead(root, [r for r in recent if stats[r][1] > now], racy_before)
    if settled:
        recent = [rel for rel in recent if rel not in settled]
    if ctimes:  # `touch -d`, `cp -p`, an archive: same size and mtime, a new ctime
        recent += ctimes.keys() - set(recent)
    held = {rel: known.get(rel) for rel in recent}
    known.update((rel, stats[rel]) for rel in recent)
    if stats == known:
        return recent, []
    for rel, old in held.items():  # an older file changed too: compare them all
        if old is None:
            del known[rel]
        else:
            known[rel] = old
    racy = set(recent)
    suspects = [r for r, st in stats.items() if known.get(r) != st or r in racy]
    return suspects, sorted(known.keys() - stats.keys())


def scan_paths(root: Path, state: State, rels: list[str]) -> tuple[ScanChanges, dict[str, Stat]]:
    """scan for these files only: stat each as the walk does, hash those that differ."""
    # The other files were not looked at again: the racy window stays where it was.
    changes = ScanChanges(started_ns=min(state.written_ns, time.time_ns()))
    stats: dict[str, Stat] = {}
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
        except OSError as exc:
            if not isinstance(exc, FileNotFoundError) or os.path.lexists(root / rel):
                changes.changed.append(rel)  # indexed as a problem saying why, as in scan
            continue
        if entry is not None and entry.sha256 == sha:
            if (entry.size, entry.mtime_ns) != found:
                changes.touched[rel] = replace(entry, size=found[0], mtime_ns=found[1])
            continue
        changes.changed.append(rel)
        changes.hashes[rel] = sha
    return changes, stats
