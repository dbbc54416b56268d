"""Other git processes in the wiki: waiting for their lock files, and retrying a commit
whose branch a person's `git commit` moved meanwhile."""

from __future__ import annotations

import time
from pathlib import Path

import pygit2

from ..errors import StateError, StorageError

GIT_LOCK_WAIT_S = 10.0  # a person's `git commit` holds index.lock while its hooks run
MOVED = "current tip is not the first parent"  # libgit2: HEAD moved under a commit
COMMIT_TRIES = 5


def _git_locks(repo: pygit2.Repository) -> list[Path]:
    """The lock files git and libgit2 take to write the index and move HEAD's branch."""
    gitdir = Path(repo.path)
    names = ["index.lock", "HEAD.lock"]
    if not repo.head_is_detached:
        names.append(repo.lookup_reference("HEAD").target + ".lock")
    return [gitdir / name for name in names]


def wait_for_git(repo: pygit2.Repository, timeout: float | None = None) -> None:
    """Wait (at most timeout seconds) until no git command holds the index or the branch.

    Bug it prevents: a memwiki write while a person's `git commit` ran its pre-commit
    hooks failed at once ("the index is locked"), and a lock file a killed git left
    behind failed every later write with a message that named neither the file nor the
    fix. Now a live git is waited for, and a leftover lock is one line saying what to do.
    """
    deadline = time.monotonic() + (GIT_LOCK_WAIT_S if timeout is None else timeout)
    while True:
        held = [p for p in _git_locks(repo) if p.exists()]
        if not held:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    raise StateError(
        f"{held[0]} exists: a git command is running in the wiki, or one was killed and "
        "left it behind; if no git command is running, delete it and try again"
    )


class HeadMoved(StorageError):
    """HEAD moved (a person's `git commit`) between reading it and committing on it."""


class GitBusy(StorageError):
    """A git command took index.lock between wait_for_git and memwiki's index write."""


def retry_moved(attempt):
    """attempt() again while another git commit moves HEAD or takes the index (a few tries).

    Bug it prevents: memwiki built its tree from one HEAD and committed it on the HEAD it
    read again afterwards, so a `git commit` by hand landing in between was silently
    undone by memwiki's next commit. Now the tree's own HEAD is the parent, libgit2
    refuses the commit if the branch moved, and the commit is built again on the new HEAD.
    """
    for _ in range(COMMIT_TRIES - 1):
        try:
            return attempt()
        except (HeadMoved, GitBusy):  # staged again from the work tree: nothing of theirs lost
            time.sleep(0.05)
    return attempt()


def remove_stale(repo: pygit2.Repository, since: float) -> list[str]:
    """Delete git lock files a killed process left behind (created after it started, at
    `since`): sync's recovery.

    A lock that goes away within GIT_LOCK_WAIT_S was a live git's, not the killed one's:
    bug it prevents, any lock made since the killed sync began was deleted at once, also
    the index.lock a person's `git commit` holds while its hooks run, or the ref lock of
    a memorize run's branch being created (which then failed).
    """
    gitdir = Path(repo.path)
    candidates = [p for p in gitdir.glob("*.lock") if p.is_file()]
    for sub in ("refs", "logs"):
        candidates += [p for p in (gitdir / sub).rglob("*.lock") if p.is_file()]
    found = []
    for path in candidates:
        try:
            if path.stat().st_mtime >= since - 1:
                found.append(path)
        except OSError:
            continue
    deadline = time.monotonic() + GIT_LOCK_WAIT_S
    while found and time.monotonic() < deadline:
        time.sleep(0.05)
        found = [p for p in found if p.exists()]
    removed = []
    for path in found:
        try:
            path.unlink()
            removed.append(str(path.relative_to(gitdir)))
        except OSError:
            continue
    return removed
