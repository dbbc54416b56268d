"""Committing a wiki's files for Wiki's writers, and what a commit wrote (CommitResult)."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pygit2


@dataclass
class CommitResult:
    """What a commit wrote, and the files it left out."""

    commit: str | None
    created: list[str]
    updated: list[str]
    deleted: list[str]
    # [{path, problem}]: new conflict copies another sync tool made, which a commit of
    # hand edits never takes (said here so that `memwiki commit` reads git status once).
    not_committed: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON form."""
        return {
            "commit": self.commit,
            "created": self.created,
            "updated": self.updated,
            "deleted": self.deleted,
            "not_committed": self.not_committed,
        }


def refuse_unfinished_git(repo: pygit2.Repository) -> None:
    """Before writing a file that is committed next: not while git is mid-merge or rebase,
    nor while a git command holds the index (a person's `git commit` running its
    pre-commit hooks, which stash and restore unstaged files: a file written then
    could be overwritten by the restore)."""
    from .git.gitlocks import wait_for_git
    from .git.unfinished import refuse_unfinished

    wait_for_git(repo)
    refuse_unfinished(repo)


def commit(
    repo: pygit2.Repository, message: str | None, paths: list[str] | None = None
) -> CommitResult:
    """Commit everything (paths None) or only the given paths: an agent's write must not
    sweep a person's unfinished hand edits into its commit."""
    from .git import repo as gitstore
    from .git.copies import described

    held: dict[str, str] = {}
    if paths is None:
        oid, changes = gitstore.commit_all(repo, message, held=held)
    else:
        oid, changes = gitstore.commit_paths(repo, paths, message)
    # A rename is its old path deleted and its new path created (the message names it).
    created = sorted(changes.created + [new for _, new in changes.renamed])
    deleted = sorted(changes.deleted + [old for old, _ in changes.renamed])
    return CommitResult(oid, created, changes.updated, deleted, described(held))


@contextlib.contextmanager
def deletion(repo: pygit2.Repository, path: Path, rel: str) -> Iterator[None]:
    """path gone for the commit made inside; put back, staged as before, when no commit
    deleted it.

    Set aside under an atomic_write temporary name (which no commit takes) rather than
    unlinked: putting it back needs no disk space. Bug it prevents: `rm` on a full disk
    failed (exit 5, "the files are saved, not committed") with the file deleted, the
    deletion staged and nothing committed.
    """
    try:
        staged: pygit2.IndexEntry | None = repo.index[rel]
    except KeyError:  # not in git's index (rm --force of a new file)
        staged = None
    head = _head(repo)
    aside = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    os.rename(path, aside)
    try:
        yield
    except BaseException:
        if _head(repo) == head or _in_head(repo, rel):
            os.rename(aside, path)
            _restage(repo, rel, staged)
        else:  # the deletion was committed after all (a Ctrl-C just after it)
            aside.unlink(missing_ok=True)
        raise
    aside.unlink(missing_ok=True)


def _head(repo: pygit2.Repository) -> str | None:
    import pygit2

    try:
        return str(repo.head.target)
    except pygit2.GitError:  # no commit yet
        return None


def _in_head(repo: pygit2.Repository, rel: str) -> bool:
    import pygit2

    try:
        repo.head.peel().tree[rel]
    except (KeyError, pygit2.GitError):
        return False
    return True


def _restage(repo: pygit2.Repository, rel: str, staged: pygit2.IndexEntry | None) -> None:
    """The git index entry of rel as it was (the failed commit may have staged its removal)."""
    import pygit2

    try:
        index = repo.index
        index.read(True)  # what is on disk, not the failed commit's changes in memory
        if staged is not None and (rel not in index or index[rel].id != staged.id):
            index.add(staged)
            index.write()
    except (pygit2.GitError, OSError):
        pass  # the file is back; at worst git shows its removal staged


def write_all(files: list[tuple[Path, str]]) -> None:
    """Write every file atomically, or none: the ones written before a failure are put back.

    Bug it prevents: `put` of three files whose third did not fit (a full disk, a file
    size limit) failed with exit 5 and left the first two written, uncommitted.
    """
    from .fsutil import atomic_write_bytes, atomic_write_text

    done: list[tuple[Path, bytes | None]] = []
    try:
        for path, text in files:
            before = path.read_bytes() if path.is_file() else None
            atomic_write_text(path, text)
            done.append((path, before))
    except BaseException:
        for path, before in reversed(done):  # the failed write freed what these need
            with contextlib.suppress(OSError):
                if before is None:
                    path.unlink()
                else:
                    atomic_write_bytes(path, before)
        raise
