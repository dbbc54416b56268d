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

from pathlib import Path, PurePosixPath

import pygit2

from ..errors import StateError
from ..git import repo as gitstore

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
    invalid = _rejected(Path(repo.workdir), pending)
    left = staged | invalid | _renamed_from(repo, pending, invalid)
    return left, [p for p in pending if p not in left]


def _rejected(root: Path, pending: list[str]) -> dict[str, str]:
    """{path: lint's problem} for the changed RecallFiles lint would reject."""
    from .. import recallfile as rfmod
    from ..git.staged import is_note
    from ..layout import app_folders

    apps = app_folders(root)
    found = {}
    for rel in pending:
        path = root / rel
        if not is_note(root, rel, apps) or not path.is_file():
            continue
        _, problems = rfmod.try_read(path, PurePosixPath(rel).parts[0], rel)
        if problems:
            found[rel] = f"lint rejects it ({rfmod.problems_text(problems)})"
    return found


def _renamed_from(
    repo: pygit2.Repository, pending: list[str], invalid: dict[str, str]
) -> dict[str, str]:
    """{deleted path: why} for the deletions a rejected file looks renamed from."""
    head = gitstore.head_commit(repo)
    if not invalid or head is None:
        return {}
    contents = {}
    for rel in invalid:
        try:
            contents[rel] = (Path(repo.workdir) / rel).read_bytes()
        except OSError:
            continue
    out = {}
    for rel in pending:
        if (Path(repo.workdir) / rel).exists() or rel not in head.tree:
            continue
        old = repo[head.tree[rel].id]
        if not isinstance(old, pygit2.Blob):
            continue
        for new, data in contents.items():
            if gitstore.similarity(old, data) >= gitstore.RENAME_SIMILARITY:
                out[rel] = f"deleted, as if renamed to {new}, which lint rejects"
                break
    return out


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
