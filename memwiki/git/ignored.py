"""What the wiki's .gitignore keeps out of git: the lines memwiki wants in it, and committed
files it ignores (untracked in one commit, kept on disk)."""

from __future__ import annotations

from pathlib import Path

import pygit2

from .excludes import ignored_by_the_wiki
from .repo import commit_index, is_private, read_index, write_index


def ensure_gitignore(root: Path) -> bool:
    """Add the lines of templates/wiki/gitignore that root/.gitignore lacks; True if it changed."""
    from importlib.resources import files

    from ..fsutil import atomic_write_text

    wanted = (files("memwiki.templates") / "wiki" / "gitignore").read_text(encoding="utf-8")
    path = Path(root) / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    have = {line.strip() for line in text.splitlines()}
    missing = [ln for ln in wanted.splitlines() if ln.strip() and ln.strip() not in have]
    if not any(not ln.startswith("#") for ln in missing):
        return False
    sep = "" if not text or text.endswith("\n") else "\n"
    atomic_write_text(path, text + sep + "\n".join(missing) + "\n")
    return True


def tracked_but_ignored(repo: pygit2.Repository) -> list[str]:
    """Committed files that the wiki's .gitignore now ignores (per-device state, junk, the
    sidecar); what only the developer's own excludes file ignores stays tracked."""
    index = read_index(repo)
    private = [e.path for e in index if is_private(e.path)]
    candidates = [e.path for e in index if not is_private(e.path) and repo.path_is_ignored(e.path)]
    return sorted(private + ignored_by_the_wiki(repo, candidates))


def untrack_ignored(repo: pygit2.Repository) -> tuple[str | None, list[str]]:
    """Stop tracking those files (they stay on disk) in one commit; (commit, paths)."""
    paths = tracked_but_ignored(repo)
    if not paths:
        return None, []
    index = read_index(repo)
    for path in paths:
        index.remove(path)
    write_index(repo, index)
    names = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    message = f"memwiki: stop tracking ignored files\n\nNo longer tracked (kept on disk): {names}\n"
    return commit_index(repo, message), paths
