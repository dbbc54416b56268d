"""The wiki's own edits a run's commit meets: what a person changed while the run was open.

Edits in the work tree (Obsidian saves them; nobody stages them) are committed before the
merge, so the merge sees them. Two kinds are left exactly as they are:

- what a person staged with `git add`: theirs to commit, not memorize's. Bug it prevents:
  the commit swept the whole index, so a staged note, even one lint rejects, went into
  history as "memwiki: created ..." without a word (and a sync then pushed it);
- a work-tree edit lint rejects (a note half written), as sync leaves it, and the deletion
  it was renamed from (committing only that half would drop the note from history).

A run that changes one of those files is refused before anything is written: its merge
could not check the file out without overwriting the person's work.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from ..errors import StateError
from ..git import repo as gitstore
from ..git.hand_edits import invalid_notes, renamed_from

_STAGED = (
    pygit2.GIT_STATUS_INDEX_NEW
    | pygit2.GIT_STATUS_INDEX_MODIFIED
    | pygit2.GIT_STATUS_INDEX_DELETED
    | pygit2.GIT_STATUS_INDEX_RENAMED
    | pygit2.GIT_STATUS_INDEX_TYPECHANGE
)
STAGED = "staged with `git add`"


def left_alone(repo: pygit2.Repository) -> tuple[dict[str, str], list[str]]:
    """({path: why it stays as it is}, the work-tree edits a commit may take)."""
    staged = {p: STAGED for p, f in repo.status().items() if f & _STAGED}
    pending = [p for p in gitstore.pending_paths(repo) if p not in staged]
    found = invalid_notes(Path(repo.workdir), pending)
    invalid = {p: f"lint rejects it ({why})" for p, why in found.items()}
    renamed = {
        old: f"deleted, as if renamed to {new}, which lint rejects"
        for old, new in renamed_from(repo, pending, invalid).items()
    }
    left = staged | invalid | renamed
    return left, [p for p in pending if p not in left]


def refuse_overlap(
    repo: pygit2.Repository, run_id: str, base: str | None, run_commit: str, left: dict[str, str]
) -> None:
    """StateError naming the files the run changes that a person's work holds."""
    if not left:
        return
    theirs = repo[run_commit].peel(pygit2.Commit)
    before = repo[base] if base is not None else theirs.parents[0]
    changed: set[str] = set()
    for delta in repo.diff(before, theirs).deltas:
        changed.update((delta.old_file.path, delta.new_file.path))
    held = sorted(p for p in changed if p in left)
    if held:
        named = "; ".join(f"{p} ({left[p]})" for p in held)
        raise StateError(
            f"run {run_id} changes what you are working on in the wiki: {named}; commit, "
            f"fix or unstage it, then run `memwiki memorize commit {run_id}` again"
        )


def commit(repo: pygit2.Repository, pending: list[str]) -> str | None:
    """Commit these work-tree edits, nothing staged; the commit id, None when nothing changed."""
    from ..git.copies import other_tools_copy

    root = Path(repo.workdir)
    head = gitstore.head_commit(repo)
    tracked = head.tree if head is not None else None

    def copy(rel: str) -> bool:  # a new conflict copy another sync tool made: never taken
        new = tracked is None or rel not in tracked
        return new and (root / rel).is_file() and other_tools_copy(root, rel) is not None

    paths = [p for p in pending if not copy(p)]
    if not paths:
        return None
    oid, _ = gitstore.commit_paths(repo, paths)
    return oid


def warnings(left: dict[str, str]) -> list[str]:
    """One line per work-tree edit left uncommitted (staged files are the person's: unsaid)."""
    return [
        f"left {p} uncommitted: {why}; once fixed, the next commit or sync takes it"
        for p, why in sorted(left.items())
        if why != STAGED
    ]
