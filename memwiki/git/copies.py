"""Conflict copies anywhere in a wiki's work tree: memwiki's own (conflicts.py makes them)
and the ones other sync tools make beside a file two devices changed (Dropbox, Syncthing,
iCloud; recallfile.SYNC_COPIES is the one definition of their names), which no commit
of hand edits takes."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

import pygit2

from .. import markdown
from ..recallfile import COPY_RE
from ..recallfile.model import (
    maybe_sync_copy,
    numbered_copy_stem,
    sync_copy_named,
    sync_copy_of,
)


def walk(root: Path) -> Iterator[tuple[Path, str]]:
    """(folder, file name) for every file of a wiki's work tree but .git and .memwiki."""
    top = True
    for folder, dirs, names in os.walk(root):
        if top:  # os.walk gives root first
            dirs[:] = [d for d in dirs if d not in (".git", ".memwiki")]
            top = False
        # One Path a folder, not one a file: sync walks every file at its end (20,000
        # files: 40 ms, 9 ms this way).
        here = Path(folder)
        for name in names:
            yield here, name


def _frontmatter_name(path: Path) -> object:
    """The `name:` of a markdown file's frontmatter, or None when it has none readable."""
    from ..recallfile import InvalidRecallFile, load_frontmatter

    try:
        with path.open("rb") as f:
            text = f.read(1 << 16).decode("utf-8")
        parts = markdown.split_frontmatter(text)
        data = load_frontmatter(parts.text, path.name) if parts is not None else None
    except (OSError, UnicodeDecodeError, InvalidRecallFile):
        return None
    return data.get("name") if isinstance(data, dict) else None


def other_tools_copy(root: Path, rel: str) -> tuple[str, str] | None:
    """(the original's path, what the file is) when the file at rel is a conflict copy
    another sync tool made (recallfile.SYNC_COPIES: Dropbox, Syncthing, iCloud); else None.

    A numbered name ("x 2.md") counts only for a markdown file whose `name:` is x, as lint
    and the index judge it; the other tools' names count for any file, anywhere.
    """
    if not maybe_sync_copy(rel.rsplit("/", 1)[-1]):
        return None
    p = PurePosixPath(rel)
    # Syncthing marks a file without an extension at the end of its name.
    for stem, ext in ((p.stem, p.suffix), (p.name, "")):
        found = sync_copy_named(stem)
        if found is not None:
            original = str(p.with_name(found[0] + ext))
            return original, found[1].format(original)
    numbered = numbered_copy_stem(p.stem)
    if p.suffix != ".md" or numbered is None:
        return None
    name = _frontmatter_name(Path(root) / rel)
    what = sync_copy_of(p.stem, name) if isinstance(name, str) else None
    if what is None:
        return None
    original = str(p.with_name(numbered + p.suffix))
    return original, what.format(original)


#: What git lists as `folder/` and never its files: a repository cloned into the wiki.
#: Bug it prevents: `memwiki commit` and `memwiki sync` failed for good with "git failed:
#: invalid path: 'Projects/code/'" (exit 5) in a vault holding a code clone.
NESTED_REPOSITORY = "a git repository inside the wiki"
#: A name that is not UTF-8 (Latin-1 bytes from an old disk or an archive): macOS cannot
#: check such a file out, so one commit would break every Mac that syncs. Bug it prevents:
#: `memwiki commit` was an internal error (its message could not be encoded) that left the
#: file staged.
NOT_UTF8 = "a file name that is not UTF-8"


def never_staged(rel: str) -> str | None:
    """What a new path is when no memwiki commit may take it, whoever asks (else None)."""
    if rel.endswith("/"):  # git lists a nested repository, never its files
        return NESTED_REPOSITORY
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:  # git's bytes, decoded with surrogateescape
        return NOT_UTF8
    return None


def new_tool_copies(
    repo: pygit2.Repository, status: dict[str, int] | None = None
) -> dict[str, str]:
    """{path: what it is} for the untracked files (not ignored, not staged by a person)
    that another sync tool made as conflict copies, and the repositories cloned into the
    wiki: what no commit of hand edits takes. status: the caller's read of repo.status()
    (read here when None)."""
    found = {}
    for rel, flags in (repo.status() if status is None else status).items():
        if flags & pygit2.GIT_STATUS_WT_NEW and not flags & pygit2.GIT_STATUS_IGNORED:
            if (never := never_staged(rel)) is not None:
                found[rel] = never
                continue
            copy = other_tools_copy(Path(repo.workdir), rel)
            if copy is not None:
                found[rel] = copy[1]
    return dict(sorted(found.items()))


def copies_in(root: Path, files: Iterable[tuple[Path, str]] | None = None) -> dict[str, str]:
    """{copy: the original's path} for every conflict copy in a wiki's work tree, memwiki's
    own and other sync tools' (relative posix paths, sorted). files: walk(root)'s pairs,
    when the caller has listed the tree already (lint)."""
    root = Path(root)
    found: dict[str, str] = {}
    for folder, name in walk(root) if files is None else files:
        # The other names are passed over at the cost of a substring test or two: 20,000
        # files named as Obsidian users name them ("Meeting notes about x.md") cost 300 ms
        # a sync when each name with a space was matched against every pattern.
        if ".conflict-" not in name and not maybe_sync_copy(name):
            continue
        rel = (folder / name).relative_to(root).as_posix()
        m = COPY_RE.match(name) if ".conflict-" in name else None
        original: str | None = None
        if m is not None:
            original = str(PurePosixPath(rel).with_name(m["stem"] + (m["ext"] or "")))
        elif (other := other_tools_copy(root, rel)) is not None:
            original = other[0]
        if original is not None and (folder / name).is_file():
            found[rel] = original
    return dict(sorted(found.items()))


def held_back(repo: pygit2.Repository, status: dict[str, int] | None = None) -> list[dict]:
    """new_tool_copies as sync reports them: [{path, problem}], the problem saying what to do.

    Bug it prevents: sync held back only such a copy inside a track (as an invalid
    RecallFile); one elsewhere (`README (conflicted copy).md`, an attachment) was committed
    as a new file and pushed to every device.
    """
    return described(new_tool_copies(repo, status))


def described(copies: dict[str, str]) -> list[dict]:
    """{path: what it is} of other tools' copies as [{path, problem}], saying what to do."""
    return [
        {
            "path": rel,
            "problem": f"{what}: move it out of the wiki, or add {rel} to .gitignore"
            if what == NESTED_REPOSITORY
            else f"{what}: rename it (macOS cannot check such a name out)"
            if what == NOT_UTF8
            else f"{what}: merge what you want to keep into that file, then delete "
            "this one (or rename it, if it is a file of its own)",
        }
        for rel, what in copies.items()
    ]
