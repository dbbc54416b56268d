"""The git side of a run: its branch and its linked worktree, created and removed with pygit2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pygit2

from ..errors import StateError, StorageError
from .runstate import BRANCH_PREFIX, RUN_ID_RE, branch_name


def create(repo: pygit2.Repository, run_id: str, workspace: Path, base: pygit2.Commit) -> None:
    """Create branch memwiki/run/<id> at base and check it out as a worktree at workspace."""
    name = branch_name(run_id)
    if repo.branches.local.get(name) is not None:
        raise StateError(f"branch {name} already exists: a run {run_id!r} is already open")
    if run_id in repo.list_worktrees():
        raise StateError(f"git already has a worktree named {run_id!r}")
    try:
        branch = repo.branches.local.create(name, base)
        workspace.parent.mkdir(parents=True, exist_ok=True)
        repo.add_worktree(run_id, str(workspace), branch)
    except pygit2.GitError as exc:
        raise StorageError(f"cannot create the run's worktree: {exc}") from None


def remove(repo: pygit2.Repository, run_id: str, workspace: Path) -> None:
    """Remove the worktree (files and git's record of it) and the run's branch; idempotent."""
    if workspace.exists() or workspace.is_symlink():
        if workspace.is_symlink() or not workspace.is_dir():
            workspace.unlink()
        else:
            shutil.rmtree(workspace)
    try:
        if run_id in repo.list_worktrees():
            # With its directory gone the worktree is prunable; force covers a stale lock.
            repo.lookup_worktree(run_id).prune(True)
        # One made half-way (a full disk) is not listed, yet its record names the branch,
        # which git then refused to delete: "Cannot delete branch ... current HEAD of a
        # linked repository" hid the full disk, and the branch and record stayed.
        shutil.rmtree(Path(repo.path) / "worktrees" / run_id, ignore_errors=True)
        branch = repo.branches.local.get(branch_name(run_id))
        if branch is not None:
            branch.delete()
    except pygit2.GitError as exc:
        raise StorageError(f"cannot remove the run's branch or worktree: {exc}") from None


def open_workspace(workspace: Path) -> pygit2.Repository:
    """Open the run's worktree as a repository."""
    try:
        return pygit2.Repository(str(workspace))
    except pygit2.GitError as exc:
        raise StorageError(f"{workspace}: the run's worktree is broken ({exc})") from None


def run_ids_with_branches(repo: pygit2.Repository) -> list[str]:
    """Run ids that still have a memwiki/run/* branch."""
    names = [n for n in repo.branches.local if n.startswith(BRANCH_PREFIX)]
    return sorted(
        n[len(BRANCH_PREFIX) :] for n in names if RUN_ID_RE.match(n[len(BRANCH_PREFIX) :])
    )


def is_merged(repo: pygit2.Repository, commit_id: str, into: pygit2.Oid) -> bool:
    """True when commit_id is into or one of its ancestors."""
    try:
        oid = pygit2.Oid(hex=commit_id)
    except ValueError:
        return False
    if oid not in repo:
        return False
    return oid == into or repo.descendant_of(into, oid)
