"""Reading the wiki's history: `memwiki log` of the wiki or of one file, and what restore walks.

A wiki lives for years: tens of thousands of commits from several devices. The work here
grows with what is asked, not with the history:

- commits come newest first from a lazy walk (a heap on commit time, as `git log` orders
  them), so `log -n 20` reads about 20 commits; libgit2's sorted walks parse every commit
  of the history before they return the first one;
- one file's history compares only that file's entry in each commit and its first parent,
  level by level (an unchanged folder's tree id ends the comparison), and diffs whole trees
  (for rename detection) only for the few commits that created or deleted the path;
- it follows renames, like `git log --follow`: after the commit that renamed the file, the
  walk goes on under its old name.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

import pygit2

from .. import timestamps
from .changes import Change, Changes, classify
from .repo import head_commit


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
            "changes": [c.to_dict() for c in self.changes],
        }


def changes_of(repo: pygit2.Repository, commit: pygit2.Commit) -> Changes:
    """What a commit changed against its first parent (renames detected)."""
    if commit.parents:
        return classify(repo.diff(commit.parents[0].tree, commit.tree))
    return classify(commit.tree.diff_to_tree(swap=True))


def newest_first(head: pygit2.Commit) -> Iterator[pygit2.Commit]:
    """Every commit reachable from head once, newest commit time first, read lazily.

    As `git log` without options: a commit comes after at least one of its children (a
    parent is queued only when a child is taken), and equal times keep the order found.
    """
    seen = {head.id}
    queue: list[tuple[int, int, pygit2.Commit]] = [(-head.commit_time, 0, head)]
    order = 0
    while queue:  # bounded: each commit is queued once (seen)
        _, _, commit = heapq.heappop(queue)
        yield commit
        for parent in commit.parents:
            if parent.id not in seen:
                seen.add(parent.id)
                order += 1
                heapq.heappush(queue, (-parent.commit_time, order, parent))


def _child(tree: pygit2.Tree, name: str) -> pygit2.Object | None:
    try:
        return tree[name]
    except KeyError:
        return None


def _entry(tree: pygit2.Tree, parts: list[str]) -> pygit2.Object | None:
    """The object at parts under tree, or None."""
    obj: pygit2.Object | None = tree
    for part in parts:
        if not isinstance(obj, pygit2.Tree):
            return None
        obj = _child(obj, part)
        if obj is None:
            return None
    return obj


class _Trees:
    """The folder trees read last, by id: a commit's trees are its child's parent-side trees.

    libgit2 keeps no tree above 4 KB in its object cache, and a folder of thousands of
    notes is far bigger: without this every such tree was inflated twice.
    """

    LIMIT = 64

    def __init__(self) -> None:
        self.trees: dict[pygit2.Oid, pygit2.Tree] = {}

    def child(self, tree: pygit2.Object | None, name: str) -> pygit2.Object | None:
        """tree's entry name (None when tree is not a folder or has no such entry)."""
        if not isinstance(tree, pygit2.Tree):
            return None
        loaded = self.trees.get(tree.id)
        if loaded is None:
            if len(self.trees) >= self.LIMIT:
                self.trees.clear()
            loaded = self.trees[tree.id] = tree
        return _child(loaded, name)


def _touched(
    new: pygit2.Tree, old: pygit2.Tree, parts: list[str], trees: _Trees
) -> tuple[bool, bool, bool]:
    """(changed, in old, in new) for the path parts between two trees.

    Stops at the first folder whose tree id is the same on both sides: nothing below it
    changed, so the (large) folder trees below are never read.
    """
    a: pygit2.Object | None = old
    b: pygit2.Object | None = new
    for part in parts:
        if a is not None and b is not None and a.id == b.id:
            return False, True, True
        a = trees.child(a, part)
        b = trees.child(b, part)
        if a is None and b is None:
            return False, False, False
    if a is None or b is None:
        return True, a is not None, b is not None
    return a.id != b.id or a.filemode != b.filemode, True, True


def file_history(
    repo: pygit2.Repository, path: str, follow: bool = True
) -> Iterator[tuple[pygit2.Commit, str, list[Change]]]:
    """(commit, the path's name after it, its changes) for each commit that changed path,
    newest first, lazily; with follow, going on under the old name after a rename."""
    head = head_commit(repo)
    if head is None:
        return
    name, parts = path, path.split("/")
    trees = _Trees()
    for commit in newest_first(head):
        parents = commit.parents
        if parents:
            changed, before, after = _touched(commit.tree, parents[0].tree, parts, trees)
        else:
            after = _entry(commit.tree, parts) is not None
            changed, before = after, False
        if not changed:
            continue
        if before and after:
            # A change in place: no rename can involve it (a rename's source is deleted),
            # so the whole-tree diff is not needed.
            changes = [Change("updated", name)]
        else:
            changes = [c for c in changes_of(repo, commit) if name in (c.path, c.old_path)]
            if not changes:
                continue
        yield commit, name, changes
        moved = next((c for c in changes if c.path == name and c.old_path), None)
        if follow and moved is not None and moved.old_path is not None:
            name, parts = moved.old_path, moved.old_path.split("/")


def _entry_of(commit: pygit2.Commit, changes: list[Change]) -> LogEntry:
    when = timestamps.from_epoch(commit.commit_time)
    return LogEntry(str(commit.id), commit.author.name, when, commit.message.strip(), changes)


def log(repo: pygit2.Repository, path: str | None = None, limit: int = 20) -> list[LogEntry]:
    """Commits touching the wiki, or one path (following its renames), newest first."""
    if path is not None:
        found = islice(file_history(repo, path), limit)
        return [_entry_of(commit, changes) for commit, _, changes in found]
    head = head_commit(repo)
    if head is None:
        return []
    return [
        _entry_of(commit, list(changes_of(repo, commit)))
        for commit in islice(newest_first(head), limit)
    ]
