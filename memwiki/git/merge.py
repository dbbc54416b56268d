"""Merging a run's commit into the wiki's branch: a real three-way merge, never a fast-forward."""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from ..errors import StateError, StorageError
from . import repo as gitstore
from .conflicts import Conflict, resolve_conflicts
from .history import newest_first
from .unfinished import refuse_unfinished

# How far back `commit` looks for the merge of an already-merged run.
_MERGE_SEARCH_LIMIT = 5000
#: git's own default for `merge.renameLimit` (libgit2 looks much less far without it).
RENAME_LIMIT = 7000


def current_branch_head(repo: pygit2.Repository) -> tuple[str, pygit2.Commit]:
    """(ref name, commit) of the wiki's checked-out branch; refuses unborn and detached HEADs."""
    refuse_unfinished(repo)  # a rebase detaches HEAD: say what is going on
    if repo.head_is_unborn:
        raise StateError("the wiki has no commit yet: run `memwiki commit` first")
    if repo.head_is_detached:
        raise StateError("the wiki's HEAD is detached: check out a branch first")
    return repo.head.name, repo.head.peel(pygit2.Commit)


def make_merge_commit(
    repo: pygit2.Repository,
    ours: pygit2.Commit,
    theirs: pygit2.Commit,
    label: str,
    message: Callable[[list[Conflict]], str],
) -> tuple[pygit2.Oid, list[Conflict]]:
    """Three-way merge theirs into ours; conflicts become copies; the commit is not on a branch."""
    _detect_renames_as_git_does(repo)
    index = repo.merge_commits(ours, theirs)
    if index.conflicts is not None:
        tree, conflicts = resolve_conflicts(repo, index, label)
    else:
        tree, conflicts = index.write_tree(repo), []
    sig = gitstore.signature(repo)
    try:
        oid = repo.create_commit(None, sig, sig, message(conflicts), tree, [ours.id, theirs.id])
    except (pygit2.GitError, OSError) as exc:
        raise StorageError(f"git merge commit failed: {exc}") from None
    if repo.get(oid) is None:  # a full disk: libgit2 may return the id of an unwritten object
        raise StorageError("git merge commit failed: it was not written (is the disk full?)")
    return oid, conflicts


def _detect_renames_as_git_does(repo: pygit2.Repository) -> None:
    """Set `merge.renameLimit` in the wiki's own git config to git's default, if unset anywhere.

    Bug it prevents: libgit2 stops looking for renames far sooner than git (past a few
    hundred added and deleted files), so when one device moved a folder of notes and
    edited them while the other edited one of them, the merge saw a deletion against an
    edit and the note ended up twice (the old path and the new). pygit2 has no option for
    the limit, and a config file cannot be added to a repository's config in memory, so
    it is written once, where `git pull` reads it too; a value the person set wins.
    """
    try:
        if "merge.renameLimit" not in repo.config:
            repo.config["merge.renameLimit"] = RENAME_LIMIT
    except (pygit2.GitError, OSError):  # a config that cannot be written: merge as before
        pass


def find_merge_of(repo: pygit2.Repository, commit_id: str, head: pygit2.Oid) -> str | None:
    """The newest commit reachable from head that has commit_id as a parent."""
    target = pygit2.Oid(hex=commit_id)
    # Lazily, newest first: a topological walk sorts the whole history before the limit
    # applies (half a second at 30,000 commits, for a merge that is usually the newest).
    for n, commit in enumerate(newest_first(repo[head].peel(pygit2.Commit))):
        if target in commit.parent_ids:
            return str(commit.id)
        if n >= _MERGE_SEARCH_LIMIT:
            break
    return None
