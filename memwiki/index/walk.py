"""The stat walk of a wiki's track folders: the freshness scan's one pass over the disk.

Kept apart from the manifest (index/manifest.py compares its result with the index).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..fsutil import link_target_ok
from ..layout import app_folders

Stat = tuple[int, int]  # (size, mtime_ns)


def walk(
    root: Path,
    watch: Watch | None = None,
    changed: dict[str, int] | None = None,
    since: int = 0,
) -> dict[str, Stat]:
    """Every indexable markdown file under the wiki's track folders, with its size and mtime_ns.

    One lstat per entry, by name relative to an open descriptor of its directory: the
    stat calls are most of a 50,000-file scan, and this is about as few as a stat walk
    can make (a scandir entry's type checks and a second stat cost 10-15% more).
    watch: told of the first file whose stat differs from the one it knows, as it is found.
    changed: given the files whose inode changed (ctime_ns) at `since` or later, with it.
    """
    found: dict[str, Stat] = {}
    try:
        tops = [e for e in os.scandir(root) if not e.name.startswith(".")]
    except FileNotFoundError:
        return found
    skip = app_folders(root)  # Obsidian's template and daily-note folders (layout.py)
    stack = [
        (e.path, e.name) for e in tops if e.is_dir(follow_symlinks=False) and e.name not in skip
    ]
    root_real = os.path.realpath(root)
    while stack:
        directory, rel = stack.pop()
        try:
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            _unreadable(directory, rel, exc, found)
            continue
        try:
            _walk_dir(fd, directory, rel, root_real, stack, found, watch, skip, changed, since)
            if watch is not None and watch.known is None:
                watch = None  # it has been told: the rest of the walk runs as without it
        finally:
            os.close(fd)
    return found


def _walk_dir(
    fd: int,
    directory: str,
    rel: str,
    root_real: str,
    stack: list,
    found: dict,
    watch,
    skip: frozenset[str] = frozenset(),
    changed: dict[str, int] | None = None,
    csince: int = 0,
) -> None:
    if changed is None:
        changed, csince = {}, 1 << 63  # nothing is that recent: the dict stays empty
    try:
        names = os.listdir(fd)
    except OSError as exc:
        _unreadable(directory, rel, exc, found)
        return
    known = watch.known.get if watch is not None and watch.known is not None else None
    since = watch.since if watch is not None else 0
    for name in names:
        if name.startswith("."):
            continue
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue  # gone since the listing
        kind = stat.S_IFMT(info.st_mode)
        if kind == stat.S_IFLNK:
            if not link_target_ok(os.path.realpath(f"{directory}/{name}"), root_real):
                continue  # a link leading outside the wiki (or into .git/) is never followed
            try:
                info = os.stat(name, dir_fd=fd)
            except OSError:
                # A loop or a dangling link: listed as the link itself, so that reading it
                # fails and says why, as `list` and `lint` do (fsutil.markdown_files).
                kind = stat.S_IFREG
            else:
                kind = stat.S_IFMT(info.st_mode)
                if kind == stat.S_IFDIR:
                    # Never followed, as `list` and `lint` do not: a link to `.` or to
                    # another track would index the same files again under other paths.
                    continue
        if kind == stat.S_IFDIR:
            if not skip or f"{rel}/{name}" not in skip:
                stack.append((f"{directory}/{name}", f"{rel}/{name}"))
        elif kind == stat.S_IFREG and name.endswith(".md"):
            key = f"{rel}/{name}"
            found[key] = value = (info.st_size, info.st_mtime_ns)
            if info.st_ctime_ns >= csince:
                changed[key] = info.st_ctime_ns
            if known is not None and value[1] > since and known(key) != value:
                known = watch.known = None
                watch.on_change(key)


def _unreadable(directory: str, rel: str, exc: OSError, found: dict) -> None:
    """A folder that cannot be listed is kept as an entry of its own, so that the index
    reads it, fails, and says why ('not indexed: cannot read'): its files are not silently
    left out. A folder gone since its parent was listed is simply gone."""
    if isinstance(exc, FileNotFoundError):
        return
    try:
        info = os.stat(directory, follow_symlinks=False)
    except OSError:
        return
    found[rel] = (info.st_size, info.st_mtime_ns)


@dataclass
class Watch:
    """What a walk compares as it goes: known stats, and whom to tell of the first difference.

    Only files modified after `since` (ns: the racy window before the manifest was written,
    as file times lag the clock by up to a tick) are looked up: a lookup per file in a
    large dict would slow the walk by a fifth. A change with an older mtime (a copy that
    keeps its times) goes unannounced, and the scan finds it all the same.
    """

    known: dict[str, Stat] | None
    since: int
    on_change: Callable[[str], None]  # given the file's path


def stat_as_walked(root: Path, rel: str) -> Stat | None:
    """(size, mtime_ns) of a file as walk() would list it, or None when it would not."""
    path = os.path.join(root, rel)
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        if not link_target_ok(os.path.realpath(path), os.path.realpath(root)):
            return None  # a link leading outside the wiki (or into .git/) is never followed
        try:
            info = os.stat(path)
        except OSError:  # a loop or a dangling link: the walk lists the link itself
            return (info.st_size, info.st_mtime_ns) if rel.endswith(".md") else None
    if not stat.S_ISREG(info.st_mode) or not rel.endswith(".md"):
        return None
    return info.st_size, info.st_mtime_ns


def set_ahead(root: Path, rels: list[str], before: int) -> set[str]:
    """Of rels (files whose mtime is later than now), those last changed before `before`.

    An mtime ahead of the clock was set (a copy or an archive from a device whose clock
    runs ahead, `touch -d tomorrow`): the write that set it is older than the racy window
    when the file's ctime, which nobody sets, is. Such a file was hashed on every scan
    until its mtime came (60 ms a retrieve at 2,000 files). A file system whose own clock
    runs ahead (a network share) stamps the ctime ahead too: its files stay in the window.
    """
    settled = set()
    for rel in rels:
        try:
            if os.stat(os.path.join(root, rel)).st_ctime_ns < before:
                settled.add(rel)
        except OSError:
            pass  # read as the scan reads it, and failing there says why
    return settled
