"""The git store: pygit2 helpers for committing, describing and reading wiki history."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

from .. import timestamps
from ..errors import StorageError

FALLBACK_NAME = "memwiki"
FALLBACK_EMAIL = "memwiki@localhost"


@dataclass(frozen=True)
class Change:
    """One path changed by a commit: status is 'created', 'updated' or 'deleted'."""

    status: str
    path: str


@dataclass(frozen=True)
class LogEntry:
    """One commit in the wiki's history."""

    commit: str
    author: str
    time: str
    message: str
    changes: list[Change]

    def to_dict(self) -> dict:
        """JSON form."""
        return {
            "commit": self.commit,
            "author": self.author,
            "time": self.time,
            "message": self.message,
            "changes": [{"status": c.status, "path": c.path} for c in self.changes],
        }


def signature(repo: pygit2.Repository) -> pygit2.Signature:
    """The user's git identity, or memwiki's own when none is configured."""
    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature(FALLBACK_NAME, FALLBACK_EMAIL)


def open_repo(path: Path) -> pygit2.Repository:
    """Open the repository whose work tree is path."""
    try:
        return pygit2.Repository(str(path))
    except pygit2.GitError as exc:
        raise StorageError(f"{path}: not a git repository ({exc})") from None


def head_commit(repo: pygit2.Repository) -> pygit2.Commit | None:
    """The commit HEAD points at, or None in an empty repository."""
    try:
        if repo.head_is_unborn:
            return None
        return repo.head.peel(pygit2.Commit)
    except pygit2.GitError as exc:
        # A damaged repository is a git failure (exit 5), not a bug in memwiki (exit 70).
        raise StorageError(f"{repo.workdir.rstrip('/')}: cannot read HEAD: {exc}") from None


def _read_index(repo: pygit2.Repository) -> pygit2.Index:
    try:
        index = repo.index
        index.read()
    except pygit2.GitError as exc:
        raise StorageError(
            f"{repo.workdir.rstrip('/')}: cannot read the git index: {exc}"
        ) from None
    return index


def stage_all(repo: pygit2.Repository) -> None:
    """Stage every change in the work tree (new, modified, deleted), respecting .gitignore."""
    index = _read_index(repo)
    for path, flags in repo.status().items():
        if flags & pygit2.GIT_STATUS_IGNORED:
            continue
        if flags & pygit2.GIT_STATUS_WT_DELETED:
            index.remove(path)
        elif flags & (
            pygit2.GIT_STATUS_WT_NEW
            | pygit2.GIT_STATUS_WT_MODIFIED
            | pygit2.GIT_STATUS_WT_TYPECHANGE
        ):
            index.add(path)
    index.write()


def stage_paths(repo: pygit2.Repository, paths: list[str]) -> None:
    """Stage exactly these work-tree paths (added, modified or deleted) and nothing else."""
    index = _read_index(repo)
    workdir = Path(repo.workdir)
    for path in paths:
        if (workdir / path).is_file():
            index.add(path)
        elif path in index:
            index.remove(path)
    index.write()


def staged_changes(repo: pygit2.Repository) -> list[Change]:
    """What the index would commit, relative to HEAD."""
    head = head_commit(repo)
    index = repo.index
    if head is None:
        return [Change("created", e.path) for e in index]
    diff = head.tree.diff_to_index(index)
    diff.find_similar()
    changes: list[Change] = []
    for delta in diff.deltas:
        status = delta.status_char()
        if status == "A":
            changes.append(Change("created", delta.new_file.path))
        elif status == "D":
            changes.append(Change("deleted", delta.old_file.path))
        elif status == "R":
            changes.append(Change("deleted", delta.old_file.path))
            changes.append(Change("created", delta.new_file.path))
        else:
            changes.append(Change("updated", delta.new_file.path))
    return changes


def describe(changes: list[Change]) -> str:
    """A commit message naming the RecallFiles created, updated and deleted."""
    groups: dict[str, list[str]] = {"created": [], "updated": [], "deleted": []}
    for c in changes:
        name = c.path[:-3] if c.path.endswith(".md") else c.path
        groups[c.status].append(name)
    parts = [f"{k} {', '.join(v)}" for k, v in groups.items() if v]
    subject = "memwiki: " + "; ".join(parts)
    if len(subject) <= 72:
        return subject + "\n"
    counts = ", ".join(f"{k} {len(v)}" for k, v in groups.items() if v)
    lines = [f"memwiki: {counts}", ""]
    for k, v in groups.items():
        lines.extend(f"{k.capitalize()}: {p}" for p in v)
    return "\n".join(lines) + "\n"


def commit_index(repo: pygit2.Repository, message: str, parents: list | None = None) -> str:
    """Write the index as a tree and commit it on HEAD; returns the commit id."""
    index = repo.index
    tree = index.write_tree()
    head = head_commit(repo)
    if parents is None:
        parents = [head.id] if head is not None else []
    sig = signature(repo)
    try:
        oid = repo.create_commit("HEAD", sig, sig, message, tree, parents)
    except pygit2.GitError as exc:
        raise StorageError(f"git commit failed: {exc}") from None
    return str(oid)


def commit_all(
    repo: pygit2.Repository, message: str | None = None
) -> tuple[str | None, list[Change]]:
    """Stage and commit everything that changed; (None, []) when there is nothing to commit."""
    stage_all(repo)
    changes = staged_changes(repo)
    if not changes:
        return None, []
    return commit_index(repo, message or describe(changes)), changes


def commit_paths(
    repo: pygit2.Repository, paths: list[str], message: str | None = None
) -> tuple[str | None, list[Change]]:
    """Stage and commit only these paths, leaving other work in progress (hand edits) alone."""
    stage_paths(repo, paths)
    changes = staged_changes(repo)
    if not changes:
        return None, []
    return commit_index(repo, message or describe(changes)), changes


def _changes_between(repo: pygit2.Repository, commit: pygit2.Commit) -> list[Change]:
    if commit.parents:
        diff = repo.diff(commit.parents[0].tree, commit.tree)
    else:
        diff = commit.tree.diff_to_tree(swap=True)
    out = []
    for delta in diff.deltas:
        status = {"A": "created", "D": "deleted"}.get(delta.status_char(), "updated")
        out.append(
            Change(status, delta.new_file.path if status != "deleted" else delta.old_file.path)
        )
    return out


def log(repo: pygit2.Repository, path: str | None = None, limit: int = 20) -> list[LogEntry]:
    """Commits touching the wiki, or one path, newest first."""
    head = head_commit(repo)
    if head is None:
        return []
    entries: list[LogEntry] = []
    for commit in repo.walk(head.id, pygit2.GIT_SORT_TIME | pygit2.GIT_SORT_TOPOLOGICAL):
        changes = _changes_between(repo, commit)
        if path is not None:
            changes = [c for c in changes if c.path == path]
            if not changes:
                continue
        when = timestamps.from_epoch(commit.commit_time)
        entries.append(
            LogEntry(str(commit.id), commit.author.name, when, commit.message.strip(), changes)
        )
        if len(entries) >= limit:
            break
    return entries


def find_enclosing_repo(path: Path) -> Path | None:
    """The work tree of a git repository that contains path, if any."""
    found = pygit2.discover_repository(str(path))
    if not found:
        return None
    repo = pygit2.Repository(found)
    return Path(repo.workdir).resolve() if repo.workdir else None
