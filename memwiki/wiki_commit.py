"""Committing a wiki's files for Wiki's writers, and what a commit wrote (CommitResult)."""

from __future__ import annotations

from dataclasses import dataclass, field
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
    from .git import repo as gitstore
    from .git.gitlocks import wait_for_git

    wait_for_git(repo)
    gitstore.refuse_unfinished(repo)


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
