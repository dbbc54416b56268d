"""Where a wiki's notes are: the markdown files of its tracks, and the file of a track/name.

Obsidian users move notes into subfolders of a track, so a note is found by its name in
the track's subfolders too; what is never read (dot-folders, symlinked tracks and
folders, Obsidian's own folders) is left out here as the index walk leaves it out.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from .fsutil import list_folder, markdown_files, safe_join
from .recallfile import check_slug, check_track


def note_path(root: Path, track: str, name: str) -> Path:
    """The file of track/name under root: TRACK/NAME.md, or the note of that name in a
    subfolder of the track (names are unique in a track); never outside root."""
    check_slug(track, "track")
    check_slug(name)
    path = safe_join(root, track, f"{name}.md")
    top = root / track
    try:
        # A folder's link count is 2 plus its subfolders (ext4, xfs, tmpfs; btrfs says
        # 1): with none, a new note's name costs one stat, not a walk of the track
        # (26 ms at 10,000 files, for every file of a `put`).
        if path.is_file() or os.stat(top).st_nlink == 2:
            return path
        subfolders = [e.path for e in os.scandir(top) if _is_subfolder(e)]
    except (NotADirectoryError, FileNotFoundError):
        return path
    wanted = f"{name}.md"
    for folder in sorted(subfolders):
        for found in markdown_files(Path(folder), root):
            if found.name == wanted:
                return found
    return path


def track_files(
    root: Path, track: str | None = None, listdir: Callable[[str], list] = list_folder
) -> Iterator[tuple[str, Path]]:
    """Every markdown file in a track folder of root (or in one track), as (track, path), sorted.

    listdir: the folders as the caller listed them already (fsutil.markdown_files).
    """
    if track is not None:
        check_track(track)
    tops = [track] if track else sorted(p.name for p in root.iterdir() if p.is_dir())
    for top in tops:
        if top.startswith(".") or not (root / top).is_dir():
            continue
        if (root / top).is_symlink():
            # A symlinked track is never read, as the index walk never follows a
            # folder link (index/walk.py): a link to another track would list its
            # files twice, one leading outside the wiki would read outside it.
            continue
        for path in markdown_files(root / top, root, listdir):
            yield top, path


def _is_subfolder(entry: os.DirEntry) -> bool:
    """A folder memwiki reads below a track (not a dot-folder, not a symlink)."""
    return not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
