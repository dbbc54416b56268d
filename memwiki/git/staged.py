"""RecallFiles a commit of hand edits took although lint rejects them: what a person staged
with `git add` is committed as staged (the staging may be meant: a fix half done, a file
to be repaired on another device), and memwiki says so rather than committing it unsaid.

Bug it prevents: sync validated only the work tree's changes, so a broken note a person
had staged was committed and pushed to every device without a word, and `memwiki commit`
committed any broken note silently.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path, PurePosixPath

import pygit2

from ..recallfile import COPY_RE


def is_note(root: Path, rel: str, apps: Collection[str]) -> bool:
    """Whether the file at rel is checked as a RecallFile when a commit takes it: markdown in
    a track (a top-level folder), not in a dot-folder, an app's folder (Obsidian's templates,
    daily notes) or a memwiki conflict copy."""
    parts = PurePosixPath(rel).parts
    return (
        len(parts) >= 2
        and rel.endswith(".md")
        and not any(p.startswith(".") for p in parts)
        and not any(rel.startswith(f"{folder}/") for folder in apps)
        and not COPY_RE.match(parts[-1])
        and (Path(root) / parts[0]).is_dir()
    )


def rejected(repo: pygit2.Repository, commit_id: str | None, paths: list[str]) -> list[dict]:
    """[{path, problem}] for the RecallFiles among paths that the commit holds as lint would
    reject them (read from the commit, not the work tree, which may differ)."""
    from .. import recallfile as rfmod
    from ..layout import app_folders
    from ..recallfile import InvalidRecallFile, PluginNote

    if commit_id is None or not paths:
        return []
    root = Path(repo.workdir)
    apps = app_folders(root)
    tree = repo[commit_id].peel(pygit2.Commit).tree
    found = []
    for rel in sorted(paths):
        if not is_note(root, rel, apps):
            continue
        try:
            entry = tree[rel]
        except KeyError:
            continue
        blob = repo[entry.id]
        # A symlink's blob is its target's path: lint names the link itself, not this.
        if not isinstance(blob, pygit2.Blob) or entry.filemode == pygit2.GIT_FILEMODE_LINK:
            continue
        parts = PurePosixPath(rel).parts
        try:
            rfmod.parse(blob.data, track=parts[0], stem=PurePosixPath(rel).stem, path=rel)
        except PluginNote:
            continue  # a drawing or a board: not a RecallFile, nothing to fix
        except InvalidRecallFile as exc:
            why = rfmod.problems_text(exc.problems)
            found.append({"path": rel, "problem": why})
    return found


def said(entry: dict, how: str = "", then: str = "`memwiki commit`") -> str:
    """The one line that names such a file, how it came to be committed, and what to do."""
    return (
        f"committed {entry['path']}{how}, though lint rejects it "
        f"({entry['problem']}): fix it and run {then} again"
    )
