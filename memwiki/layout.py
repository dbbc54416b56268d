"""Names of a wiki's on-disk layout that several layers need (and must spell the same way)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

SIDECAR = ".memwiki"  # the git-ignored folder of derived state: index, runs, logs, locks
GITIGNORE_LINE = f"/{SIDECAR}/"
LOGS = "logs"  # the sidecar's folder of logs (background builds, deferred writes, runs)
# A file modified this close to the moment a cache (index manifest, link cache) was written
# may change again within the same mtime tick without changing size: read it again next time.
RACY_NS = 2_000_000_000
# Frontmatter sits at the top of a note: this much of it is enough to see a `conflict_of:` key.
CONFLICT_HEAD_BYTES = 16384

# Obsidian's plugins name the folders they own in these files: the core Templates plugin's
# templates and the Daily notes plugin's notes ({"folder": "..."}), and the Templater
# plugin's templates ({"templates_folder": "..."}; the most used templates plugin, whose
# templates hold `<% tp.file.title %>` where a name goes). None holds memory (a template's
# name is a placeholder, a daily note has no frontmatter), so memwiki's walks leave them
# out, as they leave out dot-folders.
APP_FOLDER_FILES = (
    (".obsidian/templates.json", "folder"),
    (".obsidian/daily-notes.json", "folder"),
    (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"),
)
OWN_TRACKS = ("memory", "skill", "project")  # never left out, whatever a plugin says
TRACKS = ("memory", "skill")  # the tracks `memwiki init` creates (every version has)
# What a repository that is_wiki refuses lacks, in the one line that refuses it.
MISSING_MARKS = "no memory/ and skill/ folders, no /.memwiki/ line in .gitignore"


def is_wiki(root: str | os.PathLike) -> bool:
    """Whether root is a memwiki wiki: a git work tree with the layout `memwiki init` writes.

    Any git repository used to be opened as a wiki, so a mistyped `--wiki` got memory/
    files, a `.memwiki/` folder and commits of its own work put into a code project. Every
    version of init wrote both tracks (kept by .gitkeep) and a `/.memwiki/` line in
    .gitignore; both are committed, so a plain `git clone` has them too (the sidecar is
    git-ignored: its absence says nothing, and its presence may be an old mistake's). The
    tracks come first: two stats, the whole cost on the `retrieve` hot path.
    """
    if not os.path.exists(os.path.join(root, ".git")):
        return False
    if all(os.path.isdir(os.path.join(root, track)) for track in TRACKS):
        return True
    try:  # a wiki whose empty skill/ was removed: its .gitignore still says what it is
        with open(os.path.join(root, ".gitignore"), encoding="utf-8", errors="replace") as fh:
            return any(line.strip() == GITIGNORE_LINE for line in fh)
    except OSError:
        return False


def sidecar_for(root: str | os.PathLike, private: Callable[[], os.PathLike]) -> Path:
    """Where a wiki's index is kept for this user: its `.memwiki/`, unless that can be
    neither read nor made (a wiki on a read-only mount or in another user's folder, an
    index a root job made with umask 077); then a folder of this user's own, under
    private() (the user's cache), named by the wiki's path.

    Bug it prevents: `memwiki retrieve` on a wiki the user may only read failed with
    "Permission denied: <wiki>/.memwiki" (exit 5): list, show and lint worked, the one
    command an agent needs did not. Two access() calls on the usual path.
    """
    side = os.path.join(root, SIDECAR)
    index = os.path.join(side, "index")
    if not os.path.isdir(root):  # no wiki (yet): nothing to choose between
        return Path(side)
    if os.path.isdir(index):
        usable = os.access(index, os.R_OK | os.X_OK)
    elif os.path.isdir(side):
        usable = os.path.lexists(index) or os.access(side, os.W_OK | os.X_OK)
    else:  # a file where a folder belongs is kept: its users name it ("move it away")
        usable = os.path.lexists(side) or os.access(root, os.W_OK | os.X_OK)
    if usable:
        return Path(side)
    import hashlib

    real = os.path.realpath(root)
    key = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    return Path(private()) / f"{os.path.basename(real) or 'wiki'}-{key}"


def app_folders(root: str | os.PathLike) -> frozenset[str]:
    """The wiki-relative folders (posix) that Obsidian's template and daily-note plugins use."""
    found = set()
    for name, key in APP_FOLDER_FILES:
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue  # the common case: no import, no read
        import json

        try:
            with open(path, encoding="utf-8") as fh:
                folder = json.load(fh).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        if not isinstance(folder, str):
            continue
        folder = folder.strip().strip("/")
        parts = folder.split("/")
        if folder and parts[0] not in OWN_TRACKS and not any(p in ("", ".", "..") for p in parts):
            found.add(folder)
    return frozenset(found)
